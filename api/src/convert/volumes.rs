//! The node constraints a pod's persistent volumes add, as kube-scheduler's VolumeBinding and
//! VolumeZone plugins would enforce them. Without these, a pod whose disk lives in one zone
//! gets a node in another and waits forever.
//!
//! Per `persistentVolumeClaim` volume (an `ephemeral` volume's claim is `<pod>-<volume>`):
//!
//! * **Bound** (`spec.volumeName` set): the PersistentVolume's
//!   `spec.nodeAffinity.required.nodeSelectorTerms`; without node affinity, its legacy zone
//!   labels (`topology.kubernetes.io/zone`, `failure-domain.beta.kubernetes.io/zone`, several
//!   zones joined by `__`).
//! * **Unbound, `WaitForFirstConsumer`**: the StorageClass's `allowedTopologies`, if any; the
//!   volume is created wherever the pod lands.
//! * **Unbound, immediate binding**: not placeable until the claim binds.
//! * **Claim, volume or class missing**, claim being deleted, ephemeral claim not the pod's:
//!   not placeable, with kube-scheduler's reason.
//!
//! A claim with no `storageClassName` at all (not `""`) is read as the cluster's default
//! StorageClass (annotated `storageclass.kubernetes.io/is-default-class: "true"`, the newest
//! if several): the class Kubernetes assigns it.
//!
//! Karpenter's exceptions, restated: a PersistentVolume of a `local` or `hostPath` source
//! drops its `kubernetes.io/hostname` terms for a pod that is not on a node yet (the pod is
//! being placed anew; a bound pod keeps them, so disruption never moves it off its disk), and
//! an `ephemeral` volume adds nothing for a pod already on a node (the claim dies with the
//! pod; a replacement gets a new one wherever it lands).
//!
//! [`pod_volumes`] resolves each claim to the CSI driver that attaches it, for the attach
//! limits of [`adze_scheduling::volumes`]: the PersistentVolume's `csi.driver` (or the CSI
//! driver an in-tree source migrated to) when bound, else the StorageClass's provisioner
//! (in-tree names translated). Claims that resolve to nothing (missing, no class, NFS and
//! other non-CSI volumes) count nothing, as in Karpenter.
//!
//! Zone keys the cloud writes under other names (the legacy beta key, the EBS CSI driver's
//! `topology.ebs.csi.aws.com/zone`) are read as `topology.kubernetes.io/zone`: a node's value
//! is the same under each, and new nodes are planned with the standard key only.

use std::collections::HashMap;

use adze_scheduling::volumes::{AttachedVolume, PodVolumes, VolumeLimits};
use adze_scheduling::{Requirement, Requirements, labels, pod as model};
use k8s_openapi::api::core::v1::{
    PersistentVolume, PersistentVolumeClaim, PersistentVolumeClaimSpec, Pod, Volume,
};
use k8s_openapi::api::storage::v1::{CSINode, StorageClass};
use thiserror::Error;

use super::selector::node_selector_term;
use super::{ConvertError, DEFAULT_NAMESPACE, ObjectRef};

const LEGACY_ZONE: &str = "failure-domain.beta.kubernetes.io/zone";
const LEGACY_REGION: &str = "failure-domain.beta.kubernetes.io/region";
const EBS_CSI_ZONE: &str = "topology.ebs.csi.aws.com/zone";
const WAIT_FOR_FIRST_CONSUMER: &str = "WaitForFirstConsumer";
/// The annotation marking a cluster's default StorageClass, and its beta spelling.
pub const DEFAULT_CLASS_ANNOTATION: &str = "storageclass.kubernetes.io/is-default-class";
const DEFAULT_CLASS_ANNOTATION_BETA: &str = "storageclass.beta.kubernetes.io/is-default-class";

/// In-tree volume plugins and the CSI drivers they migrated to (Kubernetes' CSI migration):
/// a class or volume of the in-tree kind attaches through the CSI driver, and counts there.
const IN_TREE_TO_CSI: [(&str, &str); 7] = [
    ("kubernetes.io/aws-ebs", "ebs.csi.aws.com"),
    ("kubernetes.io/gce-pd", "pd.csi.storage.gke.io"),
    ("kubernetes.io/azure-disk", "disk.csi.azure.com"),
    ("kubernetes.io/azure-file", "file.csi.azure.com"),
    ("kubernetes.io/cinder", "cinder.csi.openstack.org"),
    ("kubernetes.io/vsphere-volume", "csi.vsphere.vmware.com"),
    ("kubernetes.io/portworx-volume", "pxd.portworx.com"),
];

/// The claims, volumes and classes a pod's volumes may name, looked up by name. Built once
/// per pass from the watched objects.
#[derive(Debug, Default)]
pub struct VolumeObjects<'a> {
    claims: HashMap<(&'a str, &'a str), &'a PersistentVolumeClaim>,
    volumes: HashMap<&'a str, &'a PersistentVolume>,
    classes: HashMap<&'a str, &'a StorageClass>,
    /// The class a claim without `storageClassName` gets.
    default_class: Option<&'a StorageClass>,
}

impl<'a> VolumeObjects<'a> {
    pub fn new(
        claims: impl IntoIterator<Item = &'a PersistentVolumeClaim>,
        volumes: impl IntoIterator<Item = &'a PersistentVolume>,
        classes: impl IntoIterator<Item = &'a StorageClass>,
    ) -> Self {
        let name = |m: &'a k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta| {
            m.name.as_deref().unwrap_or_default()
        };
        let classes: HashMap<&'a str, &'a StorageClass> = classes
            .into_iter()
            .map(|c| (name(&c.metadata), c))
            .collect();
        // Kubernetes picks the newest default class; ties go to the first name.
        let default_class = classes
            .values()
            .filter(|c| is_default_class(c))
            .max_by(|a, b| {
                let at = |c: &StorageClass| c.metadata.creation_timestamp.as_ref().map(|t| t.0);
                at(a)
                    .cmp(&at(b))
                    .then_with(|| name(&b.metadata).cmp(name(&a.metadata)))
            })
            .copied();
        VolumeObjects {
            default_class,
            claims: claims
                .into_iter()
                .map(|c| {
                    let ns = c.metadata.namespace.as_deref().unwrap_or(DEFAULT_NAMESPACE);
                    ((ns, name(&c.metadata)), c)
                })
                .collect(),
            volumes: volumes
                .into_iter()
                .map(|v| (name(&v.metadata), v))
                .collect(),
            classes,
        }
    }
}

/// Why a pod cannot be placed yet because of its volumes. Messages follow kube-scheduler's
/// where it has one, and always name the claim.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum VolumeError {
    #[error("persistentvolumeclaim {namespace}/{claim} not found")]
    ClaimNotFound { namespace: String, claim: String },
    #[error(
        "persistentvolumeclaim {namespace}/{claim} of ephemeral volume {volume} not found: waiting for the ephemeral volume controller to create it"
    )]
    EphemeralClaimNotFound {
        namespace: String,
        claim: String,
        volume: String,
    },
    #[error("persistentvolumeclaim {namespace}/{claim} was not created for the pod")]
    EphemeralClaimNotOwned { namespace: String, claim: String },
    #[error("persistentvolumeclaim {namespace}/{claim} is being deleted")]
    ClaimDeleting { namespace: String, claim: String },
    #[error("persistentvolume {volume} of persistentvolumeclaim {namespace}/{claim} not found")]
    VolumeNotFound {
        namespace: String,
        claim: String,
        volume: String,
    },
    #[error("storageclass {class} of persistentvolumeclaim {namespace}/{claim} not found")]
    ClassNotFound {
        namespace: String,
        claim: String,
        class: String,
    },
    #[error(
        "pod has unbound immediate persistentvolumeclaim {namespace}/{claim}: waiting for it to bind"
    )]
    UnboundImmediate { namespace: String, claim: String },
    #[error(
        "volume {volume} (persistentvolumeclaim {namespace}/{claim}) needs a node with {needs}, which the pod's node selector and affinity rule out"
    )]
    Conflict {
        namespace: String,
        claim: String,
        volume: String,
        /// The volume's terms, ORed: `topology.kubernetes.io/zone In [us-east-1b]`.
        needs: String,
    },
    /// The PersistentVolume's node affinity does not parse.
    #[error("{0}")]
    Invalid(ConvertError),
}

/// One volume's constraint: node-selector terms, ORed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VolumeTopology {
    /// The pod's name for the volume.
    pub volume: String,
    pub claim: String,
    pub terms: Vec<Requirements>,
}

/// The node constraints of each of the pod's claim-backed volumes that has any.
pub fn volume_topology(
    pod: &Pod,
    objects: &VolumeObjects<'_>,
) -> Result<Vec<VolumeTopology>, VolumeError> {
    let namespace = pod
        .metadata
        .namespace
        .as_deref()
        .unwrap_or(DEFAULT_NAMESPACE);
    let pod_name = pod.metadata.name.as_deref().unwrap_or_default();
    let bound = pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .is_some_and(|n| !n.is_empty());
    let mut out = Vec::new();
    for v in pod.spec.iter().flat_map(|s| s.volumes.iter().flatten()) {
        let Some((claim_name, ephemeral)) = claim_of(pod_name, v) else {
            continue;
        };
        if ephemeral && bound {
            // Its claim goes with the pod: wherever a replacement lands, it gets a new one.
            continue;
        }
        let ids = || (namespace.to_string(), claim_name.clone());
        let Some(claim) = objects.claims.get(&(namespace, claim_name.as_str())) else {
            let (namespace, claim) = ids();
            return Err(if ephemeral {
                VolumeError::EphemeralClaimNotFound {
                    namespace,
                    claim,
                    volume: v.name.clone(),
                }
            } else {
                VolumeError::ClaimNotFound { namespace, claim }
            });
        };
        if claim.metadata.deletion_timestamp.is_some() {
            let (namespace, claim) = ids();
            return Err(VolumeError::ClaimDeleting { namespace, claim });
        }
        if ephemeral && !controlled_by(claim, pod) {
            let (namespace, claim) = ids();
            return Err(VolumeError::EphemeralClaimNotOwned { namespace, claim });
        }
        let spec = claim.spec.as_ref();
        let terms = match spec.and_then(|s| s.volume_name.as_deref()) {
            Some(pv) if !pv.is_empty() => {
                let Some(volume) = objects.volumes.get(pv) else {
                    let (namespace, claim) = ids();
                    return Err(VolumeError::VolumeNotFound {
                        namespace,
                        claim,
                        volume: pv.to_string(),
                    });
                };
                volume_terms(volume, bound)?
            }
            _ => {
                // No class ("", or none and no default) binds like an immediate class: to a
                // matching PV, or never.
                let class = match objects.claim_class(spec) {
                    Ok(c) => c,
                    Err(c) => {
                        let (namespace, claim) = ids();
                        return Err(VolumeError::ClassNotFound {
                            namespace,
                            claim,
                            class: c.to_string(),
                        });
                    }
                };
                match class {
                    Some(c)
                        if c.volume_binding_mode.as_deref() == Some(WAIT_FOR_FIRST_CONSUMER) =>
                    {
                        class_terms(c)
                    }
                    _ => {
                        let (namespace, claim) = ids();
                        return Err(VolumeError::UnboundImmediate { namespace, claim });
                    }
                }
            }
        };
        if !terms.is_empty() {
            out.push(VolumeTopology {
                volume: v.name.clone(),
                claim: claim_name,
                terms,
            });
        }
    }
    Ok(out)
}

/// Converts a pod for placement with its volumes' constraints ANDed into its required node
/// affinity (see [`model::Pod::and_node_terms`]). A volume whose zones the pod's own affinity
/// excludes is an error naming the volume, rather than a pod no node fits for no stated reason.
pub fn with_volume_topology(
    pod: &Pod,
    mut placed: model::Pod,
    objects: &VolumeObjects<'_>,
) -> Result<model::Pod, VolumeError> {
    for v in volume_topology(pod, objects)? {
        // A pod whose own affinity already matches no node is reported for that, not the volume.
        if !placed.and_node_terms(&v.terms) && placed.has_satisfiable_node_terms() {
            let needs: Vec<String> = v.terms.iter().map(|t| t.to_string()).collect();
            return Err(VolumeError::Conflict {
                namespace: placed.namespace.clone(),
                claim: v.claim,
                volume: v.volume,
                needs: needs.join(" or "),
            });
        }
    }
    Ok(placed)
}

fn controlled_by(claim: &PersistentVolumeClaim, pod: &Pod) -> bool {
    let Some(uid) = pod.metadata.uid.as_deref() else {
        // A simulated pod has no uid to compare; take the name as proof enough.
        return true;
    };
    claim
        .metadata
        .owner_references
        .iter()
        .flatten()
        .any(|o| o.controller == Some(true) && o.uid == uid)
}

/// The standard key for a zone or region key the cloud also writes under another name.
fn standard_key(key: &str) -> &str {
    match key {
        LEGACY_ZONE | EBS_CSI_ZONE => labels::ZONE,
        LEGACY_REGION => labels::REGION,
        k => k,
    }
}

fn standardised(r: Requirements) -> Requirements {
    r.iter()
        .map(|req| {
            let mut req = req.clone();
            req.key = standard_key(&req.key).to_string();
            req
        })
        .collect()
}

/// The claim a volume names, and whether it is an ephemeral volume's (`<pod>-<volume>`).
fn claim_of(pod_name: &str, v: &Volume) -> Option<(String, bool)> {
    match (&v.persistent_volume_claim, &v.ephemeral) {
        (Some(src), _) => Some((src.claim_name.clone(), false)),
        (None, Some(_)) => Some((format!("{pod_name}-{}", v.name), true)),
        (None, None) => None,
    }
}

fn is_default_class(c: &StorageClass) -> bool {
    let a = c.metadata.annotations.as_ref();
    [DEFAULT_CLASS_ANNOTATION, DEFAULT_CLASS_ANNOTATION_BETA]
        .iter()
        .any(|k| a.and_then(|a| a.get(*k)).is_some_and(|v| v == "true"))
}

impl<'a> VolumeObjects<'a> {
    /// The class of an unbound claim: `Ok(None)` for no class (`""`, or none and no
    /// default), `Err(name)` for a class that does not exist.
    fn claim_class<'s>(
        &self,
        spec: Option<&'s PersistentVolumeClaimSpec>,
    ) -> Result<Option<&'a StorageClass>, &'s str> {
        match spec.and_then(|s| s.storage_class_name.as_deref()) {
            None => Ok(self.default_class),
            Some("") => Ok(None),
            Some(c) => self.classes.get(c).copied().map(Some).ok_or(c),
        }
    }
}

/// The CSI driver of an in-tree plugin name, or the name itself.
fn csi_name(provisioner: &str) -> &str {
    IN_TREE_TO_CSI
        .iter()
        .find(|(in_tree, _)| *in_tree == provisioner)
        .map_or(provisioner, |(_, csi)| csi)
}

/// The CSI driver that attaches a PersistentVolume, if any.
fn volume_driver(pv: &PersistentVolume) -> Option<&str> {
    let s = pv.spec.as_ref()?;
    if let Some(csi) = &s.csi {
        return Some(csi.driver.as_str());
    }
    let in_tree = if s.aws_elastic_block_store.is_some() {
        "kubernetes.io/aws-ebs"
    } else if s.gce_persistent_disk.is_some() {
        "kubernetes.io/gce-pd"
    } else if s.azure_disk.is_some() {
        "kubernetes.io/azure-disk"
    } else if s.azure_file.is_some() {
        "kubernetes.io/azure-file"
    } else if s.cinder.is_some() {
        "kubernetes.io/cinder"
    } else if s.vsphere_volume.is_some() {
        "kubernetes.io/vsphere-volume"
    } else if s.portworx_volume.is_some() {
        "kubernetes.io/portworx-volume"
    } else {
        return None;
    };
    Some(csi_name(in_tree))
}

/// The CSI volumes a pod attaches: each claim-backed volume whose claim resolves to a CSI
/// driver (see the module docs). Never fails: what cannot be resolved counts nothing.
pub fn pod_volumes(pod: &Pod, objects: &VolumeObjects<'_>) -> PodVolumes {
    let namespace = pod
        .metadata
        .namespace
        .as_deref()
        .unwrap_or(DEFAULT_NAMESPACE);
    let pod_name = pod.metadata.name.as_deref().unwrap_or_default();
    let volumes = pod.spec.iter().flat_map(|s| s.volumes.iter().flatten());
    volumes
        .filter_map(|v| {
            let (claim_name, _) = claim_of(pod_name, v)?;
            let claim = objects.claims.get(&(namespace, claim_name.as_str()))?;
            let spec = claim.spec.as_ref();
            let driver = match spec.and_then(|s| s.volume_name.as_deref()) {
                Some(pv) if !pv.is_empty() => volume_driver(objects.volumes.get(pv)?)?,
                _ => csi_name(&objects.claim_class(spec).ok()??.provisioner),
            };
            (!driver.is_empty()).then(|| AttachedVolume {
                driver: driver.to_string(),
                claim: format!("{namespace}/{claim_name}"),
            })
        })
        .collect()
}

/// [`with_volume_topology`], and the pod's CSI volumes ([`pod_volumes`]) recorded for the
/// attach limits: what placement needs of a pod's volumes, for `run` and `simulate` alike.
pub fn with_volumes(
    pod: &Pod,
    mut placed: model::Pod,
    objects: &VolumeObjects<'_>,
) -> Result<model::Pod, VolumeError> {
    placed.volumes = pod_volumes(pod, objects);
    with_volume_topology(pod, placed, objects)
}

/// A CSINode's attach limits: per driver with `allocatable.count`, that count. The node it
/// describes is the CSINode's name.
pub fn csinode_limits(c: &CSINode) -> Result<VolumeLimits, ConvertError> {
    let name = c.metadata.name.as_deref().unwrap_or_default();
    let object = ObjectRef::cluster("csinode", name);
    let mut limits = VolumeLimits::new();
    for (i, d) in c.spec.drivers.iter().enumerate() {
        let Some(count) = d.allocatable.as_ref().and_then(|a| a.count) else {
            continue;
        };
        let field = format!("spec.drivers[{i}].allocatable.count");
        let count = u32::try_from(count).map_err(|_| {
            ConvertError::new(
                &object,
                &field,
                super::Problem::Invalid(format!("must not be negative, got {count}")),
            )
        })?;
        if limits.insert(d.name.clone(), count).is_some() {
            return Err(ConvertError::new(
                &object,
                &format!("spec.drivers[{i}].name"),
                super::Problem::Invalid(format!("driver {:?} is listed twice", d.name)),
            ));
        }
    }
    Ok(limits)
}

/// A PersistentVolume's node constraint: its node affinity, else its legacy zone labels.
/// For a pod not on a node yet, a `local` or `hostPath` volume's hostname terms are dropped
/// (Karpenter's rule: placing the pod anew cannot keep the old host).
fn volume_terms(pv: &PersistentVolume, bound: bool) -> Result<Vec<Requirements>, VolumeError> {
    let name = pv.metadata.name.as_deref().unwrap_or_default();
    let object = ObjectRef::cluster("persistentvolume", name);
    let required = pv
        .spec
        .as_ref()
        .and_then(|s| s.node_affinity.as_ref())
        .and_then(|a| a.required.as_ref());
    let Some(required) = required else {
        return Ok(legacy_zone_terms(pv));
    };
    let mut terms = Vec::new();
    for (i, t) in required.node_selector_terms.iter().enumerate() {
        let f = format!("spec.nodeAffinity.required.nodeSelectorTerms[{i}]");
        if let Some(r) = node_selector_term(&object, &f, t).map_err(VolumeError::Invalid)? {
            terms.push(standardised(r));
        }
    }
    let on_host = pv
        .spec
        .as_ref()
        .is_some_and(|s| s.local.is_some() || s.host_path.is_some());
    if on_host && !bound && !terms.is_empty() {
        let dropped: Vec<Requirements> = terms
            .iter()
            .map(|t| {
                t.iter()
                    .filter(|r| r.key != labels::HOSTNAME)
                    .cloned()
                    .collect()
            })
            .collect();
        return Ok(dropped);
    }
    if terms.is_empty() {
        // Only empty terms: no node matches, as for a pod. No node has a hostname in an empty set.
        terms.push(
            Requirements::new().with(Requirement::any_of(labels::HOSTNAME, Vec::<String>::new())),
        );
    }
    Ok(terms)
}

fn legacy_zone_terms(pv: &PersistentVolume) -> Vec<Requirements> {
    let mut term = Requirements::new();
    for key in [labels::ZONE, LEGACY_ZONE] {
        if let Some(v) = pv.metadata.labels.as_ref().and_then(|l| l.get(key)) {
            let zones: Vec<&str> = v.split("__").filter(|z| !z.is_empty()).collect();
            if !zones.is_empty() {
                term.add(Requirement::any_of(labels::ZONE, zones));
            }
        }
    }
    if term.is_empty() {
        Vec::new()
    } else {
        vec![term]
    }
}

/// A StorageClass's `allowedTopologies`: terms ORed, each expression `key In values`.
fn class_terms(class: &StorageClass) -> Vec<Requirements> {
    class
        .allowed_topologies
        .iter()
        .flatten()
        .map(|t| {
            t.match_label_expressions
                .iter()
                .flatten()
                .map(|e| Requirement::any_of(standard_key(&e.key), e.values.iter().cloned()))
                .collect::<Requirements>()
        })
        .filter(|r| !r.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn pod(volumes: Value, affinity: Value) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": "db-0", "namespace": "data", "uid": "u-db"},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
                     "volumes": volumes, "affinity": affinity},
        }))
        .unwrap()
    }

    fn claim_volume(name: &str, claim: &str) -> Value {
        json!({"name": name, "persistentVolumeClaim": {"claimName": claim}})
    }

    fn pvc(name: &str, spec: Value) -> PersistentVolumeClaim {
        serde_json::from_value(
            json!({"metadata": {"name": name, "namespace": "data"}, "spec": spec}),
        )
        .unwrap()
    }

    fn pv(name: &str, labels: Value, spec: Value) -> PersistentVolume {
        serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}, "spec": spec}))
            .unwrap()
    }

    fn zonal_pv(name: &str, key: &str, zone: &str) -> PersistentVolume {
        pv(
            name,
            json!({}),
            json!({"nodeAffinity": {"required": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": key, "operator": "In", "values": [zone]}]}]}}}),
        )
    }

    fn class(name: &str, mode: &str, topologies: Value) -> StorageClass {
        serde_json::from_value(
            json!({"metadata": {"name": name}, "provisioner": "ebs.csi.aws.com",
            "volumeBindingMode": mode, "allowedTopologies": topologies}),
        )
        .unwrap()
    }

    fn zones(z: &[&str]) -> Vec<Requirements> {
        vec![Requirements::new().with(Requirement::any_of(labels::ZONE, z.iter().copied()))]
    }

    fn convert(
        p: &Pod,
        claims: &[PersistentVolumeClaim],
        pvs: &[PersistentVolume],
        classes: &[StorageClass],
    ) -> Result<model::Pod, VolumeError> {
        let objects = VolumeObjects::new(claims, pvs, classes);
        with_volume_topology(p, crate::convert::pod(p).unwrap(), &objects)
    }

    #[test]
    fn bound_volume_with_zonal_node_affinity_pins_the_pod_to_that_zone() {
        let p = pod(json!([claim_volume("data", "data-db-0")]), json!(null));
        let claims = [pvc("data-db-0", json!({"volumeName": "pv-1"}))];
        let placed = convert(
            &p,
            &claims,
            &[zonal_pv("pv-1", labels::ZONE, "us-east-1b")],
            &[],
        )
        .unwrap();
        assert_eq!(placed.node_requirements, zones(&["us-east-1b"]));
    }

    #[test]
    fn ebs_csi_and_legacy_zone_keys_read_as_the_standard_zone() {
        let p = pod(json!([claim_volume("data", "c")]), json!(null));
        let claims = [pvc("c", json!({"volumeName": "pv-1"}))];
        let placed = convert(
            &p,
            &claims,
            &[zonal_pv("pv-1", EBS_CSI_ZONE, "us-east-1c")],
            &[],
        )
        .unwrap();
        assert_eq!(placed.node_requirements, zones(&["us-east-1c"]));
        let legacy = pv(
            "pv-1",
            json!({LEGACY_ZONE: "us-east-1a__us-east-1c"}),
            json!({}),
        );
        let placed = convert(&p, &claims, &[legacy], &[]).unwrap();
        assert_eq!(
            placed.node_requirements,
            zones(&["us-east-1a", "us-east-1c"])
        );
    }

    #[test]
    fn pods_own_zone_disjoint_from_the_volumes_is_a_conflict_naming_the_volume() {
        let affinity = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [
                {"key": labels::ZONE, "operator": "In", "values": ["us-east-1a"]}]}]}}});
        let p = pod(json!([claim_volume("data", "data-db-0")]), affinity);
        let claims = [pvc("data-db-0", json!({"volumeName": "pv-1"}))];
        let err = convert(
            &p,
            &claims,
            &[zonal_pv("pv-1", labels::ZONE, "us-east-1b")],
            &[],
        )
        .unwrap_err();
        assert!(matches!(err, VolumeError::Conflict { .. }), "{err:?}");
        assert_eq!(
            err.to_string(),
            "volume data (persistentvolumeclaim data/data-db-0) needs a node with \
             topology.kubernetes.io/zone In [us-east-1b], which the pod's node selector and \
             affinity rule out"
        );
    }

    #[test]
    fn wait_for_first_consumer_class_restricts_to_its_allowed_topologies() {
        let p = pod(json!([claim_volume("data", "c")]), json!(null));
        let claims = [pvc("c", json!({"storageClassName": "zonal"}))];
        let topologies = json!([{"matchLabelExpressions": [
            {"key": labels::ZONE, "values": ["us-east-1a", "us-east-1c"]}]}]);
        let classes = [class("zonal", WAIT_FOR_FIRST_CONSUMER, topologies)];
        let placed = convert(&p, &claims, &[], &classes).unwrap();
        assert_eq!(
            placed.node_requirements,
            zones(&["us-east-1a", "us-east-1c"])
        );

        let anywhere = [class("zonal", WAIT_FOR_FIRST_CONSUMER, json!(null))];
        let placed = convert(&p, &claims, &[], &anywhere).unwrap();
        assert_eq!(placed.node_requirements, vec![Requirements::new()]);
    }

    #[test]
    fn missing_claim_volume_or_class_leaves_the_pod_out_with_the_reason() {
        let p = pod(json!([claim_volume("data", "gone")]), json!(null));
        let err = convert(&p, &[], &[], &[]).unwrap_err();
        assert_eq!(err.to_string(), "persistentvolumeclaim data/gone not found");

        let bound = [pvc("gone", json!({"volumeName": "pv-x"}))];
        let err = convert(&p, &bound, &[], &[]).unwrap_err();
        assert!(matches!(err, VolumeError::VolumeNotFound { .. }), "{err:?}");

        let classed = [pvc("gone", json!({"storageClassName": "nope"}))];
        let err = convert(&p, &classed, &[], &[]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "storageclass nope of persistentvolumeclaim data/gone not found"
        );
    }

    #[test]
    fn unbound_claim_of_an_immediate_class_waits_for_binding() {
        let p = pod(json!([claim_volume("data", "c")]), json!(null));
        let claims = [pvc("c", json!({"storageClassName": "gp3"}))];
        let classes = [class("gp3", "Immediate", json!(null))];
        let err = convert(&p, &claims, &[], &classes).unwrap_err();
        assert!(
            matches!(err, VolumeError::UnboundImmediate { .. }),
            "{err:?}"
        );
        let no_class = [pvc("c", json!({"storageClassName": ""}))];
        let err = convert(&p, &no_class, &[], &[]).unwrap_err();
        assert!(
            matches!(err, VolumeError::UnboundImmediate { .. }),
            "{err:?}"
        );
    }

    #[test]
    fn ephemeral_volume_uses_the_claim_named_after_pod_and_volume() {
        let p = pod(
            json!([{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}]),
            json!(null),
        );
        let err = convert(&p, &[], &[], &[]).unwrap_err();
        assert!(err.to_string().contains("data/db-0-scratch"), "{err}");
        let mut claim = pvc("db-0-scratch", json!({"volumeName": "pv-1"}));
        let err = convert(
            &p,
            &[claim.clone()],
            &[zonal_pv("pv-1", labels::ZONE, "us-east-1b")],
            &[],
        )
        .unwrap_err();
        assert!(
            matches!(err, VolumeError::EphemeralClaimNotOwned { .. }),
            "{err:?}"
        );
        claim.metadata.owner_references = Some(vec![
            serde_json::from_value(json!({"apiVersion": "v1", "kind": "Pod", "name": "db-0",
                "uid": "u-db", "controller": true}))
            .unwrap(),
        ]);
        let placed = convert(
            &p,
            &[claim],
            &[zonal_pv("pv-1", labels::ZONE, "us-east-1b")],
            &[],
        )
        .unwrap();
        assert_eq!(placed.node_requirements, zones(&["us-east-1b"]));
    }

    fn default_class(name: &str, provisioner: &str, created: &str) -> StorageClass {
        serde_json::from_value(
            json!({"metadata": {"name": name, "creationTimestamp": created,
            "annotations": {DEFAULT_CLASS_ANNOTATION: "true"}},
            "provisioner": provisioner, "volumeBindingMode": WAIT_FOR_FIRST_CONSUMER}),
        )
        .unwrap()
    }

    fn drivers(
        p: &Pod,
        claims: &[PersistentVolumeClaim],
        pvs: &[PersistentVolume],
        classes: &[StorageClass],
    ) -> Vec<(String, String)> {
        let objects = VolumeObjects::new(claims, pvs, classes);
        pod_volumes(p, &objects)
            .iter()
            .map(|a| (a.driver.clone(), a.claim.clone()))
            .collect()
    }

    #[test]
    fn a_claim_without_a_class_takes_the_newest_default_class() {
        let p = pod(json!([claim_volume("data", "c")]), json!(null));
        let claims = [pvc("c", json!({}))];
        let classes = [
            default_class("old", "old.csi", "2025-01-01T00:00:00Z"),
            default_class("new", "ebs.csi.aws.com", "2025-06-01T00:00:00Z"),
        ];
        assert_eq!(
            drivers(&p, &claims, &[], &classes),
            vec![("ebs.csi.aws.com".to_string(), "data/c".to_string())]
        );
        // Placeable: the default class binds at first consumer.
        assert!(convert(&p, &claims, &[], &classes).is_ok());
        // "" is no class, whatever the default.
        let empty = [pvc("c", json!({"storageClassName": ""}))];
        assert!(drivers(&p, &empty, &[], &classes).is_empty());
        assert!(matches!(
            convert(&p, &empty, &[], &classes).unwrap_err(),
            VolumeError::UnboundImmediate { .. }
        ));
    }

    #[test]
    fn claims_resolve_to_the_csi_driver_that_attaches_them() {
        let p = pod(
            json!([
                claim_volume("a", "bound"),
                claim_volume("b", "in-tree"),
                claim_volume("c", "nfs"),
                claim_volume("d", "gone")
            ]),
            json!(null),
        );
        let claims = [
            pvc("bound", json!({"volumeName": "pv-csi"})),
            pvc("in-tree", json!({"storageClassName": "gp2"})),
            pvc("nfs", json!({"volumeName": "pv-nfs"})),
        ];
        let pvs = [
            pv(
                "pv-csi",
                json!({}),
                json!({"csi": {"driver": "efs.csi.aws.com", "volumeHandle": "h"}}),
            ),
            pv(
                "pv-nfs",
                json!({}),
                json!({"nfs": {"server": "s", "path": "/"}}),
            ),
        ];
        let mut gp2 = class("gp2", WAIT_FOR_FIRST_CONSUMER, json!(null));
        gp2.provisioner = "kubernetes.io/aws-ebs".into();
        assert_eq!(
            drivers(&p, &claims, &pvs, &[gp2]),
            vec![
                ("ebs.csi.aws.com".to_string(), "data/in-tree".to_string()),
                ("efs.csi.aws.com".to_string(), "data/bound".to_string()),
            ],
            "NFS and a missing claim count nothing; in-tree names are translated"
        );
        let ebs = pv(
            "pv-ebs",
            json!({}),
            json!({"awsElasticBlockStore": {"volumeID": "vol-1"}}),
        );
        assert_eq!(volume_driver(&ebs), Some("ebs.csi.aws.com"));
    }

    #[test]
    fn a_local_volumes_hostname_binds_a_running_pod_but_not_a_pending_one() {
        let local = pv(
            "pv-local",
            json!({}),
            json!({"local": {"path": "/mnt"}, "nodeAffinity": {"required": {"nodeSelectorTerms": [
                {"matchExpressions": [
                    {"key": labels::HOSTNAME, "operator": "In", "values": ["gone"]},
                    {"key": labels::ZONE, "operator": "In", "values": ["us-east-1a"]}]}]}}}),
        );
        let claims = [pvc("c", json!({"volumeName": "pv-local"}))];
        let mut p = pod(json!([claim_volume("data", "c")]), json!(null));
        let placed = convert(&p, &claims, std::slice::from_ref(&local), &[]).unwrap();
        assert_eq!(
            placed.node_requirements,
            zones(&["us-east-1a"]),
            "hostname dropped"
        );
        p.spec.as_mut().unwrap().node_name = Some("gone".into());
        let placed = convert(&p, &claims, &[local], &[]).unwrap();
        assert_eq!(
            placed.node_requirements[0]
                .get(labels::HOSTNAME)
                .and_then(|r| r.single_value()),
            Some("gone"),
            "a running pod stays on its disk"
        );
    }

    #[test]
    fn a_running_pods_ephemeral_volume_constrains_nothing() {
        let mut p = pod(
            json!([{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}]),
            json!(null),
        );
        p.spec.as_mut().unwrap().node_name = Some("n1".into());
        let placed = convert(&p, &[], &[], &[]).unwrap();
        assert_eq!(placed.node_requirements, vec![Requirements::new()]);
    }

    #[test]
    fn csinode_counts_become_limits_and_bad_counts_are_refused() {
        let c: CSINode =
            serde_json::from_value(json!({"metadata": {"name": "n1"}, "spec": {"drivers": [
            {"name": "ebs.csi.aws.com", "nodeID": "i-1", "allocatable": {"count": 25}},
            {"name": "efs.csi.aws.com", "nodeID": "i-1"}]}}))
            .unwrap();
        let limits = csinode_limits(&c).unwrap();
        assert_eq!(
            limits.into_iter().collect::<Vec<_>>(),
            vec![("ebs.csi.aws.com".to_string(), 25)]
        );
        let bad: CSINode =
            serde_json::from_value(json!({"metadata": {"name": "n1"}, "spec": {"drivers": [
            {"name": "d", "nodeID": "i-1", "allocatable": {"count": -1}}]}}))
            .unwrap();
        assert_eq!(
            csinode_limits(&bad).unwrap_err().to_string(),
            "csinode n1: spec.drivers[0].allocatable.count: must not be negative, got -1"
        );
    }

    #[test]
    fn volumes_without_claims_add_nothing() {
        let p = pod(json!([{"name": "tmp", "emptyDir": {}}]), json!(null));
        assert_eq!(
            convert(&p, &[], &[], &[]).unwrap().node_requirements,
            vec![Requirements::new()]
        );
    }
}
