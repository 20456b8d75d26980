//! An [`EC2NodeClass`] into the [`NodeClassFacts`] placement needs: subnet zones, the
//! requirements of its resolved images (architecture, accelerator), kubelet settings in model units and the size of
//! the volume behind ephemeral storage.
//!
//! A class whose status is not resolved yet has no zones or images, so a pool using it plans
//! nothing until it is.

use std::collections::BTreeMap;

use adze_scheduling::kubelet_expr;
use adze_scheduling::node_class::{NodeClassFacts, ReservationFacts};
use adze_scheduling::overhead::{KubeletSettings, Threshold};
use adze_scheduling::{Requirement, Requirements, quantity};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::resources::amount;
use super::{ConvertError, ObjectRef};
use crate::ec2nodeclass::{AmiFamily, EC2NodeClass, EC2NodeClassSpec, KubeletConfiguration};

pub fn nodeclass(class: &EC2NodeClass) -> Result<NodeClassFacts, ConvertError> {
    let object = ObjectRef::cluster(
        "ec2nodeclass",
        class.metadata.name.as_deref().unwrap_or_default(),
    );
    let status = class.status.clone().unwrap_or_default();
    let mut images = Vec::new();
    for (i, ami) in status.amis.iter().enumerate() {
        let mut reqs = Requirements::new();
        for (j, r) in ami.requirements.iter().enumerate() {
            let req = Requirement::new(&r.key, super::nodepool::operator(r.operator), &r.values)
                .map_err(|e| {
                    ConvertError::requirement(
                        &object,
                        &format!("status.amis[{i}].requirements[{j}]"),
                        e,
                    )
                })?;
            reqs.add(req);
        }
        images.push(reqs);
    }
    let kubelet = match &class.spec.kubelet {
        Some(k) => kubelet(&object, k)?,
        None => KubeletSettings::default(),
    };
    Ok(NodeClassFacts {
        zones: status.subnets.iter().map(|s| s.zone.clone()).collect(),
        zone_ids: status
            .subnets
            .iter()
            .filter_map(|s| Some((s.zone.clone(), s.zone_id.clone()?)))
            .collect(),
        images,
        kubelet,
        root_volume: root_volume_bytes(&class.spec).and_then(|b| i64::try_from(b).ok()),
        instance_store_raid0: class.spec.instance_store_policy.is_some(),
        reservations: status
            .capacity_reservations
            .iter()
            .map(|r| ReservationFacts {
                id: r.id.clone(),
                instance_type: r.instance_type.clone(),
                zone: r.availability_zone.clone(),
                kind: r.reservation_type.as_str().to_string(),
                // A count outside u32 is not EC2's; none below zero, at most u32::MAX above.
                remaining: u32::try_from(r.available_instance_count.max(0)).unwrap_or(u32::MAX),
                interruptible: r.interruptible,
            })
            .collect(),
        windows_build: class
            .spec
            .effective_ami_family()
            .and_then(AmiFamily::windows_build)
            .map(str::to_string),
        efa_only_interfaces: u32::try_from(class.spec.efa_only_interfaces()).unwrap_or(u32::MAX),
        nitro_enclaves: class.spec.enclaves_enabled(),
    })
}

/// The device each family keeps container images and pod data on, when no mapping is marked
/// `rootVolume`: the Amazon Linux root device, Bottlerocket's data volume, Windows' C: drive
/// (`/dev/sda1` on the EKS Windows images).
pub fn root_device(family: AmiFamily) -> Option<&'static str> {
    match family {
        AmiFamily::AL2 | AmiFamily::AL2023 => Some("/dev/xvda"),
        AmiFamily::Bottlerocket => Some("/dev/xvdb"),
        AmiFamily::Windows2019 | AmiFamily::Windows2022 | AmiFamily::Windows2025 => {
            Some("/dev/sda1")
        }
        AmiFamily::Custom => None,
    }
}

/// Size of the volume behind ephemeral storage, if the class sets one.
pub fn root_volume_bytes(spec: &EC2NodeClassSpec) -> Option<u64> {
    let family_device = spec.effective_ami_family().and_then(root_device);
    let mapping = spec
        .block_device_mappings
        .iter()
        .find(|m| m.root_volume)
        .or_else(|| {
            spec.block_device_mappings
                .iter()
                .find(|m| Some(m.device_name.as_str()) == family_device)
        })?;
    mapping.ebs.as_ref()?.volume_size_bytes()
}

fn kubelet(object: &ObjectRef, k: &KubeletConfiguration) -> Result<KubeletSettings, ConvertError> {
    let expression = |path: &str, source: &str| {
        kubelet_expr::Expr::compile(source)
            .map_err(|e| ConvertError::invalid(object, path, format!("expression: {e}")))
    };
    // Quantities become amounts now; expressions are evaluated per instance type
    // (`node_class::kubelet_for`). `pid` expressions are kept so a bad one still fails.
    let reserved = |field: &str, map: &BTreeMap<String, String>| {
        let mut amounts = BTreeMap::new();
        let mut exprs = BTreeMap::new();
        for (name, q) in map {
            let path = format!("spec.kubelet.{field}.{name}");
            if kubelet_expr::is_expression(q) {
                exprs.insert(name.clone(), expression(&path, q)?);
                continue;
            }
            // `pid` limits processes, not anything placement counts.
            if name == "pid" {
                continue;
            }
            let v = amount(name, q).map_err(|e| ConvertError::quantity(object, &path, e))?;
            amounts.insert(name.clone(), v);
        }
        Ok::<_, ConvertError>((amounts, exprs))
    };
    let eviction = |field: &str, map: &BTreeMap<String, String>| {
        map.iter()
            .map(|(signal, value)| {
                let path = format!("spec.kubelet.{field}.{signal}");
                let t = match value.strip_suffix('%') {
                    Some(p) => Threshold::Percent(p.parse::<f64>().map_err(|_| {
                        ConvertError::invalid(
                            object,
                            &path,
                            format!("{value:?} is not a percentage"),
                        )
                    })?),
                    None => Threshold::Bytes(
                        quantity::parse_units(value)
                            .map_err(|e| ConvertError::quantity(object, &path, e))?,
                    ),
                };
                Ok((signal.clone(), t))
            })
            .collect::<Result<Vec<_>, ConvertError>>()
    };
    let (max_pods, max_pods_expr) = match &k.max_pods {
        Some(IntOrString::Int(n)) => (Some(i64::from(*n)), None),
        Some(IntOrString::String(source)) => {
            (None, Some(expression("spec.kubelet.maxPods", source)?))
        }
        None => (None, None),
    };
    let (kube_reserved, kube_reserved_expr) = reserved("kubeReserved", &k.kube_reserved)?;
    let (system_reserved, system_reserved_expr) = reserved("systemReserved", &k.system_reserved)?;
    Ok(KubeletSettings {
        max_pods,
        max_pods_expr,
        kube_reserved_expr,
        system_reserved_expr,
        pods_per_core: k.pods_per_core.map(i64::from),
        kube_reserved,
        system_reserved,
        eviction_hard: eviction("evictionHard", &k.eviction_hard)?,
        eviction_soft: eviction("evictionSoft", &k.eviction_soft)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn class(spec_extra: serde_json::Value, status: serde_json::Value) -> EC2NodeClass {
        let mut spec = json!({
            "subnetSelectorTerms": [{"id": "subnet-1"}],
            "securityGroupSelectorTerms": [{"id": "sg-1"}],
            "amiSelectorTerms": [{"alias": "al2023@latest"}],
            "role": "node",
        });
        spec.as_object_mut()
            .unwrap()
            .extend(spec_extra.as_object().unwrap().clone());
        serde_json::from_value(json!({
            "apiVersion": "aws.adze.sh/v1", "kind": "EC2NodeClass",
            "metadata": {"name": "default"}, "spec": spec, "status": status,
        }))
        .unwrap()
    }

    #[test]
    fn a_windows_class_gives_its_build_from_the_alias_or_the_family_and_al2_none() {
        let status = json!({
            "subnets": [{"id": "subnet-1", "zone": "us-east-1b"}],
            "amis": [{"id": "ami-1", "requirements": [
                {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]}],
        });
        let mut c = class(json!({}), status.clone());
        c.spec.ami_selector_terms[0].alias = Some("windows2022@latest".into());
        let f = nodeclass(&c).unwrap();
        assert_eq!(f.windows_build.as_deref(), Some("10.0.20348"));
        assert_eq!(f.zones.len(), 1);
        c.spec.ami_family = Some(AmiFamily::Windows2019);
        assert_eq!(
            nodeclass(&c).unwrap().windows_build.as_deref(),
            Some("10.0.17763"),
            "amiFamily wins over the alias"
        );
        let mut al2 = class(json!({}), status);
        al2.spec.ami_selector_terms[0].alias = Some("al2@latest".into());
        let f = nodeclass(&al2).unwrap();
        assert_eq!(f.windows_build, None);
        assert_eq!(f.images.len(), 1);
    }

    #[test]
    fn zones_archs_kubelet_and_root_volume_are_read() {
        let c = class(
            json!({
                "kubelet": {"maxPods": 50, "kubeReserved": {"cpu": "200m", "pid": "100"},
                    "evictionHard": {"memory.available": "5%", "nodefs.available": "2Gi"}},
                "blockDeviceMappings": [{"deviceName": "/dev/xvda", "ebs": {"volumeSize": "80Gi"}}],
            }),
            json!({
                "subnets": [{"id": "subnet-1", "zone": "us-east-1b"}],
                "amis": [{"id": "ami-1", "requirements": [
                    {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]}],
            }),
        );
        let f = nodeclass(&c).unwrap();
        assert_eq!(
            f.zones,
            std::collections::BTreeSet::from(["us-east-1b".to_string()])
        );
        assert_eq!(f.images.len(), 1);
        let arch = f.images[0].get("kubernetes.io/arch").unwrap();
        assert!(arch.allows("amd64") && !arch.allows("arm64"));
        assert_eq!(f.kubelet.max_pods, Some(50));
        assert_eq!(
            f.kubelet.kube_reserved,
            BTreeMap::from([("cpu".into(), 200)])
        );
        assert_eq!(
            f.kubelet.eviction_hard,
            vec![
                ("memory.available".into(), Threshold::Percent(5.0)),
                ("nodefs.available".into(), Threshold::Bytes(2 << 30)),
            ]
        );
        assert_eq!(f.root_volume, Some(80 << 30), "AL2023's root device");
    }

    #[test]
    fn bottlerocket_sizes_ephemeral_storage_from_its_data_volume_or_the_marked_root() {
        let mappings = json!([
            {"deviceName": "/dev/xvda", "ebs": {"volumeSize": "4Gi"}},
            {"deviceName": "/dev/xvdb", "ebs": {"volumeSize": "60Gi"}},
        ]);
        let c = class(
            json!({"amiSelectorTerms": [{"alias": "bottlerocket@latest"}], "blockDeviceMappings": mappings}),
            json!({}),
        );
        assert_eq!(nodeclass(&c).unwrap().root_volume, Some(60 << 30));
        let c = class(
            json!({"blockDeviceMappings": [
                {"deviceName": "/dev/xvda", "ebs": {"volumeSize": "4Gi"}},
                {"deviceName": "/dev/sdf", "rootVolume": true, "ebs": {"volumeSize": "1Ti"}}]}),
            json!({}),
        );
        assert_eq!(nodeclass(&c).unwrap().root_volume, Some(1 << 40));
    }

    #[test]
    fn an_unresolved_class_has_no_zones_or_images_and_a_bad_quantity_names_its_field() {
        let f = nodeclass(&class(json!({}), json!({}))).unwrap();
        assert!(f.zones.is_empty() && f.images.is_empty());
        let bad = class(
            json!({"kubelet": {"systemReserved": {"memory": "lots"}}}),
            json!({}),
        );
        let e = nodeclass(&bad).unwrap_err();
        assert_eq!(e.field, "spec.kubelet.systemReserved.memory");
    }
}
