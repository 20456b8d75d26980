//! The rules `simulate` and `run` share, so that a scenario file and a live cluster are read
//! alike: which pods want a node, which NodePools may launch one, what a DaemonSet's pod
//! asks of every new node, and how NodeOverlays change the instance types pools plan with.

use std::collections::BTreeMap;

use adze_api::{NodeOverlay, NodePool};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// Being deleted: its `deletionTimestamp` is set. A terminating pod is on its way out and is
/// not demand; a terminating NodePool launches nothing more.
pub fn is_terminating(meta: &ObjectMeta) -> bool {
    meta.deletion_timestamp.is_some()
}

/// `Succeeded` or `Failed`: the pod takes no room and will never run again.
pub fn is_terminal(pod: &Pod) -> bool {
    matches!(
        pod.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Succeeded") | Some("Failed")
    )
}

/// The DaemonSet that owns the pod, by name.
pub fn daemonset_owner(meta: &ObjectMeta) -> Option<&str> {
    meta.owner_references
        .iter()
        .flatten()
        .find(|o| o.kind == "DaemonSet")
        .map(|o| o.name.as_str())
}

/// (DaemonSet uid, node name) of every DaemonSet pod bound to a node and not finished:
/// where a DaemonSet already holds its room (a terminating one too: the snapshot keeps it
/// on its node until it is gone, and its successor follows it). A DaemonSet pod that is
/// still pending holds none, so [`adze_scheduling::late_daemons::charge`] counts it.
pub fn bound_daemon_pods(pods: &[std::sync::Arc<Pod>]) -> std::collections::HashSet<(&str, &str)> {
    pods.iter()
        .filter(|p| !is_terminal(p))
        .filter_map(|p| {
            let owner = p
                .metadata
                .owner_references
                .iter()
                .flatten()
                .find(|o| o.kind == "DaemonSet")?;
            let node = p
                .spec
                .as_ref()?
                .node_name
                .as_deref()
                .filter(|n| !n.is_empty())?;
            Some((owner.uid.as_str(), node))
        })
        .collect()
}

/// The kubelet's mirror of a static pod (annotation `kubernetes.io/config.mirror`, owned by
/// its Node): its node's kubelet runs it, and it cannot be evicted.
pub fn is_mirror(pod: &Pod) -> bool {
    pod.metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(MIRROR_ANNOTATION))
        || pod
            .metadata
            .owner_references
            .iter()
            .flatten()
            .any(|o| o.kind == "Node")
}

const MIRROR_ANNOTATION: &str = "kubernetes.io/config.mirror";

/// Owned by a StatefulSet.
pub fn owned_by_statefulset(meta: &ObjectMeta) -> bool {
    meta.owner_references
        .iter()
        .flatten()
        .any(|o| o.kind == "StatefulSet")
}

/// A bound pod that goes with its node instead of needing a new home when the node goes: a
/// DaemonSet's (its controller places it), a mirror pod, or one already terminating, except
/// a StatefulSet's, which its controller recreates under the same name once it is gone (so
/// its new home is needed all the same). Karpenter's "reschedulable" pods are the others:
/// a node holding only such pods is empty, and disruption moves none of them.
pub fn stays_with_node(pod: &Pod) -> bool {
    daemonset_owner(&pod.metadata).is_some()
        || is_mirror(pod)
        || (is_terminating(&pod.metadata) && !owned_by_statefulset(&pod.metadata))
}

/// Held back by `schedulingGates`: no scheduler would place it on new capacity either.
pub fn is_gated(pod: &Pod) -> bool {
    pod.spec
        .as_ref()
        .and_then(|s| s.scheduling_gates.as_ref())
        .is_some_and(|g| !g.is_empty())
}

/// Not bound to a node (no `spec.nodeName`).
pub fn is_unbound(pod: &Pod) -> bool {
    pod.spec
        .as_ref()
        .is_some_and(|s| s.node_name.as_deref().unwrap_or_default().is_empty())
}

/// An unbound pod that needs a node found or made for it: not being deleted, not finished,
/// not a DaemonSet's (the DaemonSet controller places those), not gated. The live
/// provisioner adds only *when* it counts such a pod (once a scheduler has turned it down, or
/// at once for the default scheduler); a scenario's pods count as turned down.
pub fn wants_node(pod: &Pod) -> bool {
    is_unbound(pod)
        && !is_terminating(&pod.metadata)
        && !is_terminal(pod)
        && daemonset_owner(&pod.metadata).is_none()
        && !is_gated(pod)
}

/// Why a pending pod cannot be planned at all, whatever the NodePools, or None when it can.
/// A pod that asks for devices through Dynamic Resource Allocation (`spec.resourceClaims`)
/// needs a device driver's allocation that Adze does not model; planning it on its other
/// requests would launch a node that may hold no such device, so it is left pending with
/// this reason instead (a bound pod with claims is only room taken, and is kept).
pub fn unplannable(pod: &Pod) -> Option<String> {
    let claims = pod.spec.as_ref()?.resource_claims.as_ref()?;
    let first = claims.first()?;
    Some(format!(
        "spec.resourceClaims: the pod asks for devices through Dynamic Resource Allocation \
         ({} claim(s), first {:?}), which Adze does not plan",
        claims.len(),
        first.name
    ))
}

/// Why `pool` may not launch nodes for pods now, or None when it may. A static pool
/// (`spec.replicas`) never does: its NodeClaims are kept at a fixed count by
/// [`crate::nodepool::replicas`], whatever the pods (pods still land on its nodes).
pub fn nodepool_unusable(pool: &NodePool) -> Option<&'static str> {
    if is_terminating(&pool.metadata) {
        return Some("it is being deleted");
    }
    if pool.kind_change().is_some() {
        return Some(
            "spec.replicas was added or removed: the pool is refused until it is restored",
        );
    }
    pool.spec
        .is_static()
        .then_some("it is static (spec.replicas): its node count is fixed")
}

/// The replicas a static pool is kept at, or `None` when its scaler leaves it alone: not
/// static, being deleted, refused for gaining or losing `spec.replicas`, or invalid. Its
/// drift takes no node then either (nothing would refill it).
pub fn static_replicas(pool: &NodePool) -> Option<u64> {
    let replicas = pool.spec.replicas?;
    if is_terminating(&pool.metadata) || pool.kind_change().is_some() || pool.validate().is_err() {
        return None;
    }
    Some(u64::try_from(replicas).unwrap_or(0))
}

/// The pool's `limits.nodes`, if set and a whole number.
pub fn node_limit(pool: &NodePool) -> Option<u64> {
    pool.spec
        .limits
        .get(adze_scheduling::nodepool::NODES_LIMIT)
        .and_then(|q| q.0.parse::<u64>().ok())
}

/// The claims of static pool `pool` as its scaler and its drift count them, in name order.
pub fn static_members(
    pool: &str,
    objects: &crate::provisioning::snapshot::Objects,
) -> Vec<adze_scheduling::static_pool::Member> {
    use crate::provisioning::snapshot::{is_initialized, owned_by_daemonset};
    use adze_api::conditions::{self, nodeclaim};
    use adze_scheduling::labels;
    let mut out: Vec<adze_scheduling::static_pool::Member> = objects
        .claims
        .iter()
        .filter(|c| {
            c.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(labels::NODEPOOL))
                .map(String::as_str)
                == Some(pool)
        })
        .map(|c| {
            let node = c.status.as_ref().and_then(|s| s.node_name.as_deref());
            let pods = node.map_or(0, |n| {
                objects
                    .pods
                    .iter()
                    .filter(|p| p.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(n))
                    .filter(|p| !owned_by_daemonset(p) && !is_terminal(p))
                    .count()
            });
            let deleting = c.metadata.deletion_timestamp.is_some();
            adze_scheduling::static_pool::Member {
                name: c.metadata.name.clone().unwrap_or_default(),
                initialized: is_initialized(c),
                deleting,
                disrupting: !deleting
                    && conditions::is_true(
                        crate::provisioning::snapshot::claim_conditions(c),
                        nodeclaim::DISRUPTING,
                    ),
                pods,
                created: c
                    .metadata
                    .creation_timestamp
                    .as_ref()
                    .map_or(0, |t| t.0.as_second()),
            }
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// What a static pool's claims are planned on: the pool as if it launched for pods, its
/// DaemonSets and node classes, and no nodes, so no existing room absorbs the claim.
pub fn static_planning_objects(
    pool: &NodePool,
    objects: &crate::provisioning::snapshot::Objects,
) -> crate::provisioning::snapshot::Objects {
    let mut launchable = pool.clone();
    launchable.spec.replicas = None;
    // Its recorded kind (Static) would make this stand-in read as a pool that lost its
    // replicas, which provisioning refuses ([`NodePool::kind_change`]).
    if let Some(status) = launchable.status.as_mut() {
        status.kind = None;
    }
    // limits.nodes is applied by the scaler, over every claim of the pool.
    launchable.spec.limits.clear();
    crate::provisioning::snapshot::Objects {
        nodepools: vec![std::sync::Arc::new(launchable)],
        daemonsets: objects.daemonsets.clone(),
        nodeclasses: objects.nodeclasses.clone(),
        karpenter_labels: objects.karpenter_labels,
        ..crate::provisioning::snapshot::Objects::default()
    }
}

/// What became of one NodeOverlay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OverlayVerdict {
    /// Applied; it changed this many (NodePool, instance type) pairs (0: it selects nothing).
    Applied { types: usize },
    /// Refused by validation or conversion; not applied. The message names the fields.
    Invalid(String),
    /// It changes a price or resource that another overlay of the same weight changes, and
    /// that one won (Karpenter's tie-break: the name later in the alphabet); not applied.
    Conflict { with: String },
}

impl OverlayVerdict {
    pub fn applied(&self) -> bool {
        matches!(self, Self::Applied { .. })
    }
}

/// Applies NodeOverlays to the pools' instance types before placement, by
/// [`adze_scheduling::overlay::apply`]'s rules. An overlay being deleted is left out; an
/// invalid one is left out and reported, so one bad overlay never stops provisioning
/// (Karpenter fails open the same way). Returns a verdict per overlay, by name.
pub fn apply_overlays<'o>(
    pools: &mut [adze_scheduling::NodePool],
    overlays: impl IntoIterator<Item = &'o NodeOverlay>,
) -> BTreeMap<String, OverlayVerdict> {
    let mut verdicts = BTreeMap::new();
    let mut converted = Vec::new();
    for o in overlays {
        if is_terminating(&o.metadata) {
            continue;
        }
        let name = o.metadata.name.clone().unwrap_or_default();
        let parsed = o
            .validate()
            .map_err(|e| e.to_string())
            .and_then(|()| adze_api::convert::overlay(o).map_err(|e| e.to_string()));
        match parsed {
            Ok(overlay) => converted.push(overlay),
            Err(why) => {
                verdicts.insert(name, OverlayVerdict::Invalid(why));
            }
        }
    }
    let outcome = adze_scheduling::overlay::apply(pools, &converted);
    for (name, types) in outcome.applied {
        verdicts.insert(name, OverlayVerdict::Applied { types });
    }
    for (name, with) in outcome.conflicts {
        verdicts.insert(name, OverlayVerdict::Conflict { with });
    }
    verdicts
}

/// Label every placeholder pod of a CapacityBuffer carries: the buffer's name. Output and
/// logs use it to tell buffer capacity from capacity for real pods.
pub const BUFFER_LABEL: &str = "autoscaling.x-k8s.io/buffer";

/// The most placeholder pods one buffer may resolve to; more is refused, not cut.
pub const MAX_BUFFER_PODS: i64 = 1000;

/// A workload a `scalableRef` may name: its replica count and pod template.
#[derive(Debug, Clone, Copy)]
pub struct ScalableTarget<'a> {
    /// `apps` for the kinds Adze reads.
    pub api_group: &'a str,
    /// `Deployment`, `ReplicaSet` or `StatefulSet`.
    pub kind: &'a str,
    pub metadata: &'a ObjectMeta,
    /// `spec.replicas` (Kubernetes' default 1 when unset).
    pub replicas: i32,
    pub template: &'a k8s_openapi::api::core::v1::PodTemplateSpec,
}

/// The objects CapacityBuffers refer to.
#[derive(Debug, Clone, Default)]
pub struct BufferRefs<'a> {
    pub templates: Vec<&'a k8s_openapi::api::core::v1::PodTemplate>,
    pub targets: Vec<ScalableTarget<'a>>,
}

/// What became of one CapacityBuffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BufferVerdict {
    /// Its placeholder pods take part in placement: this many.
    Ready { replicas: u32 },
    /// Refused; no placeholder pods. The message names the field by its path.
    Invalid(String),
}

/// The placeholder pods of a set of CapacityBuffers and a verdict per buffer
/// ("namespace/name").
#[derive(Debug, Clone, Default)]
pub struct BufferPods {
    /// Named `<buffer>-buffer-<i>` in the buffer's namespace, labelled [`BUFFER_LABEL`],
    /// at the lowest priority so real pods are placed first. Never created in the cluster.
    pub pods: Vec<adze_scheduling::Pod>,
    pub verdicts: BTreeMap<String, BufferVerdict>,
}

/// Turns CapacityBuffers into the placeholder pods placement plans for (Karpenter's
/// semantics, SIG Autoscaling's API): one pod shape from `podTemplateRef` or `scalableRef`
/// (exactly one), a count from `replicas` and `percentage` of the workload's replicas
/// (rounded up; the larger when both are set), capped by `limits` (total requests per
/// resource; alone, as many pods as fit under them). A buffer being deleted is left out;
/// one with an unsupported `provisioningStrategy` or an inconsistent spec is refused and
/// reported, the others still count.
pub fn buffer_pods<'b>(
    buffers: impl IntoIterator<Item = &'b adze_api::CapacityBuffer>,
    refs: &BufferRefs<'_>,
) -> BufferPods {
    buffer_pods_within(buffers, refs, usize::MAX)
}

/// [`buffer_pods`] making at most `room` pods in all: a buffer whose count would pass it is
/// refused (an `Invalid` verdict naming `spec` and the limit) before any of its pods is made,
/// so many buffers cannot allocate millions of pods before a caller's limit is checked.
pub fn buffer_pods_within<'b>(
    buffers: impl IntoIterator<Item = &'b adze_api::CapacityBuffer>,
    refs: &BufferRefs<'_>,
    room: usize,
) -> BufferPods {
    let mut out = BufferPods::default();
    for b in buffers {
        if is_terminating(&b.metadata) {
            continue;
        }
        let ns = b.metadata.namespace.as_deref().unwrap_or("default");
        let name = b.metadata.name.as_deref().unwrap_or_default();
        let verdict = match buffer_shape_and_count(b, ns, refs) {
            Ok((_, count)) if out.pods.len().saturating_add(count as usize) > room => {
                BufferVerdict::Invalid(format!(
                    "spec: resolves to {count} pods; after the {} placeholder pods before it that passes the limit of {room} pending pods",
                    out.pods.len()
                ))
            }
            Ok((shape, count)) => {
                let count = count as u32;
                for i in 0..count {
                    let mut p = shape.clone();
                    p.namespace = ns.to_string();
                    p.name = format!("{name}-buffer-{i}");
                    p.labels.insert(BUFFER_LABEL.to_string(), name.to_string());
                    p.priority = i32::MIN;
                    out.pods.push(p);
                }
                BufferVerdict::Ready { replicas: count }
            }
            Err(why) => BufferVerdict::Invalid(why),
        };
        out.verdicts.insert(format!("{ns}/{name}"), verdict);
    }
    out
}

/// Whether a pod is a CapacityBuffer's placeholder (by [`BUFFER_LABEL`]).
pub fn is_buffer_pod(pod: &adze_scheduling::Pod) -> bool {
    pod.labels.contains_key(BUFFER_LABEL)
}

fn buffer_shape_and_count(
    b: &adze_api::CapacityBuffer,
    ns: &str,
    refs: &BufferRefs<'_>,
) -> Result<(adze_scheduling::Pod, i64), String> {
    let spec = &b.spec;
    if let Some(s) = spec.provisioning_strategy.as_deref()
        && s != adze_api::capacitybuffer::ACTIVE_CAPACITY
    {
        return Err(format!(
            "spec.provisioningStrategy: {s:?} is not supported (only {:?})",
            adze_api::capacitybuffer::ACTIVE_CAPACITY
        ));
    }
    for (field, v) in [
        ("spec.replicas", spec.replicas),
        ("spec.percentage", spec.percentage),
    ] {
        if v.is_some_and(|v| v < 0) {
            return Err(format!("{field}: must not be negative"));
        }
    }
    let (shape, target_replicas) = match (&spec.pod_template_ref, &spec.scalable_ref) {
        (Some(_), Some(_)) => {
            return Err(
                "spec: set exactly one of podTemplateRef and scalableRef, not both".to_string(),
            );
        }
        (None, None) => {
            return Err("spec: set one of podTemplateRef and scalableRef".to_string());
        }
        (Some(t), None) => {
            if spec.percentage.is_some() {
                return Err(
                    "spec.percentage: a percentage is of a scalableRef's replicas; with podTemplateRef use spec.replicas"
                        .to_string(),
                );
            }
            let found = refs.templates.iter().find(|p| {
                p.metadata.name.as_deref() == Some(t.name.as_str())
                    && p.metadata.namespace.as_deref().unwrap_or("default") == ns
            });
            let Some(pt) = found else {
                return Err(format!(
                    "spec.podTemplateRef.name: PodTemplate {ns}/{} not found",
                    t.name
                ));
            };
            let Some(template) = pt.template.as_ref() else {
                return Err(format!(
                    "spec.podTemplateRef.name: PodTemplate {ns}/{} has no template",
                    t.name
                ));
            };
            let pod = adze_api::convert::workload_pod("podtemplate", &pt.metadata, template)
                .map_err(|e| format!("spec.podTemplateRef.name: {e}"))?;
            (pod, None)
        }
        (None, Some(r)) => {
            let found = refs.targets.iter().find(|t| {
                t.kind == r.kind
                    && t.api_group == r.api_group
                    && t.metadata.name.as_deref() == Some(r.name.as_str())
                    && t.metadata.namespace.as_deref().unwrap_or("default") == ns
            });
            let Some(t) = found else {
                let known = ["Deployment", "ReplicaSet", "StatefulSet"];
                if r.api_group != "apps" || !known.contains(&r.kind.as_str()) {
                    return Err(format!(
                        "spec.scalableRef: {}/{} is not supported (apps Deployment, ReplicaSet or StatefulSet)",
                        r.api_group, r.kind
                    ));
                }
                return Err(format!(
                    "spec.scalableRef.name: {} {ns}/{} not found",
                    r.kind, r.name
                ));
            };
            let kind: &'static str = match t.kind {
                "Deployment" => "deployment",
                "ReplicaSet" => "replicaset",
                _ => "statefulset",
            };
            let pod = adze_api::convert::workload_pod(kind, t.metadata, t.template)
                .map_err(|e| format!("spec.scalableRef: {e}"))?;
            (pod, Some(i64::from(t.replicas.max(0))))
        }
    };
    let from_replicas = spec.replicas.map(i64::from);
    let from_percentage = match (spec.percentage, target_replicas) {
        (Some(p), Some(n)) => {
            // ceil(p * n / 100); both are at most i32::MAX, so the product fits.
            let product = i64::from(p)
                .checked_mul(n)
                .ok_or("spec.percentage: too large")?;
            Some((product + 99) / 100)
        }
        _ => None,
    };
    let wanted = match (from_replicas, from_percentage) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    };
    let mut cap: Option<i64> = None;
    if let Some(limits) = &spec.limits {
        for (resource, q) in limits {
            let limit =
                adze_scheduling::Resources::from_quantities([(resource.as_str(), q.0.as_str())])
                    .map_err(|e| format!("spec.limits[{resource}]: {e}"))?
                    .get(resource);
            let each = shape.requests.get(resource);
            if each <= 0 {
                continue;
            }
            let n = limit.max(0) / each;
            cap = Some(cap.map_or(n, |c: i64| c.min(n)));
        }
        if cap.is_none() && wanted.is_none() {
            return Err(
                "spec.limits: the pod template requests none of the resources it names, so it sets no count"
                    .to_string(),
            );
        }
    }
    let count = match (wanted, cap) {
        (Some(w), Some(c)) => w.min(c),
        (Some(w), None) => w,
        (None, Some(c)) => c,
        (None, None) => {
            return Err("spec: set replicas, percentage or limits".to_string());
        }
    };
    if count > MAX_BUFFER_PODS {
        return Err(format!(
            "spec: resolves to {count} pods, more than the {MAX_BUFFER_PODS} Adze plans per buffer"
        ));
    }
    Ok((shape, count))
}

/// A DaemonSet's pod as placement charges it on new nodes: the template, with the requests
/// of the pods the DaemonSet actually runs when there are any (a LimitRange, a mutating
/// webhook or a rollout in progress can make them differ from the template). Several live
/// pods (a rollout) give the per-resource maximum, so every node has room whichever runs.
pub fn daemon_pod_from_live<'p>(
    template: &mut adze_scheduling::Pod,
    live: impl IntoIterator<Item = &'p adze_scheduling::Pod>,
) {
    let mut seen = false;
    let mut requests = adze_scheduling::Resources::default();
    for p in live {
        seen = true;
        requests.max_with(&p.requests);
    }
    if seen {
        template.requests = requests;
    }
}

/// Karpenter's placement policy flags and the cluster-wide limits, the same for `run` and
/// `simulate`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct Policies {
    /// `Respect`: preferred node and pod (anti-)affinity, ScheduleAnyway spread and avoiding
    /// PreferNoSchedule taints are honoured, then relaxed one by one; `Ignore`: only required
    /// constraints count (Karpenter's --preference-policy).
    #[arg(long, env = "ADZE_PREFERENCE_POLICY", value_enum, default_value_t = PreferencePolicy::Respect)]
    pub preference_policy: PreferencePolicy,
    /// `Strict`: a NodePool whose minValues cannot be met launches nothing for the pod;
    /// `BestEffort`: minValues is lowered to what can be met, and the NodeClaim says so
    /// (Karpenter's --min-values-policy).
    #[arg(long, env = "ADZE_MIN_VALUES_POLICY", value_enum, default_value_t = MinValuesPolicy::Strict)]
    pub min_values_policy: MinValuesPolicy,
    /// A cap on what all NodePools' nodes and in-flight NodeClaims hold together, on top of
    /// each NodePool's own spec.limits: comma-separated RESOURCE=QUANTITY pairs in
    /// Kubernetes quantity syntax, e.g. `cpu=1000,memory=4Ti,nvidia.com/gpu=64,nodes=200`
    /// (`nodes` counts nodes). Capacity that would pass it is not launched; its pods stay
    /// pending saying so. Empty: no cluster-wide cap.
    #[arg(
        long,
        env = "ADZE_CLUSTER_LIMITS",
        value_name = "RESOURCE=QUANTITY,...",
        value_parser = cluster_limits,
        default_value = ""
    )]
    pub cluster_limits: ClusterLimits,
    /// The KubeSchedulerConfiguration file the cluster's kube-scheduler reads: pods that set
    /// no topologySpreadConstraints are planned with its PodTopologySpread default
    /// constraints (defaultingType System, kube-scheduler's default: hostname maxSkew 3 and
    /// zone maxSkew 5, ScheduleAnyway; List: its defaultConstraints, none if empty), counting
    /// the pods of the ReplicaSet, StatefulSet, ReplicationController or Services selecting
    /// the pod. Not set: no default constraints (as Karpenter without --scheduler-config).
    #[arg(
        long,
        env = "ADZE_KUBE_SCHEDULER_CONFIG",
        value_name = "FILE",
        value_parser = crate::scheduler_config::read
    )]
    pub kube_scheduler_config: Option<adze_scheduling::default_spread::DefaultSpread>,
}

/// `--cluster-limits` parsed: resource name → amount in the units limits are kept in
/// (millicores for cpu, bytes for memory and storage, a count otherwise).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClusterLimits(pub BTreeMap<String, i64>);

/// Most entries `--cluster-limits` takes: a resource list, not a data set.
const MAX_CLUSTER_LIMITS: usize = 64;

/// Parses `--cluster-limits`: `name=quantity` pairs, comma-separated. A name that is not a
/// Kubernetes resource name, a repeated name, a quantity that is not one, is negative, or
/// (for `nodes`) is not a whole count is refused, naming the entry.
pub fn cluster_limits(value: &str) -> Result<ClusterLimits, String> {
    let mut out = BTreeMap::new();
    if value.trim().is_empty() {
        return Ok(ClusterLimits(out));
    }
    let entries: Vec<&str> = value.split(',').collect();
    if entries.len() > MAX_CLUSTER_LIMITS {
        return Err(format!(
            "{} entries are more than the {MAX_CLUSTER_LIMITS} allowed",
            entries.len()
        ));
    }
    for entry in entries {
        let entry = entry.trim();
        let Some((name, q)) = entry.split_once('=') else {
            return Err(format!(
                "{entry:?} is not RESOURCE=QUANTITY (e.g. cpu=1000,memory=4Ti,nodes=200)"
            ));
        };
        let (name, q) = (name.trim(), q.trim());
        if !adze_api::patterns::is_qualified_name(name) {
            return Err(format!(
                "{name:?} is not a resource name such as cpu, memory, nvidia.com/gpu or nodes"
            ));
        }
        if !adze_api::patterns::is_match(adze_api::patterns::QUANTITY, q) {
            return Err(format!(
                "{name}={q:?}: not a resource quantity such as \"4\", \"500m\" or \"16Gi\""
            ));
        }
        let amount = if name == adze_scheduling::resources::CPU {
            adze_scheduling::quantity::parse_milli(q)
        } else if name == adze_scheduling::nodepool::NODES_LIMIT {
            match adze_scheduling::quantity::parse_milli(q) {
                Ok(m) if m % 1000 != 0 => {
                    return Err(format!("{name}={q}: a count of nodes is a whole number"));
                }
                r => r.map(|m| m / 1000),
            }
        } else {
            adze_scheduling::quantity::parse_units(q)
        }
        .map_err(|e| format!("{name}={q}: {e}"))?;
        if amount < 0 {
            return Err(format!("{name}={q}: a limit cannot be negative"));
        }
        if out.insert(name.to_string(), amount).is_some() {
            return Err(format!("{name} is given twice"));
        }
    }
    Ok(ClusterLimits(out))
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum PreferencePolicy {
    #[default]
    #[value(name = "Respect")]
    Respect,
    #[value(name = "Ignore")]
    Ignore,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum MinValuesPolicy {
    #[default]
    #[value(name = "Strict")]
    Strict,
    #[value(name = "BestEffort")]
    BestEffort,
}

impl Policies {
    /// Sets the policies on placement options.
    pub fn apply(&self, options: &mut adze_scheduling::Options) {
        use adze_scheduling::scheduler as s;
        options.preference_policy = match self.preference_policy {
            PreferencePolicy::Respect => s::PreferencePolicy::Respect,
            PreferencePolicy::Ignore => s::PreferencePolicy::Ignore,
        };
        options.min_values_policy = match self.min_values_policy {
            MinValuesPolicy::Strict => s::MinValuesPolicy::Strict,
            MinValuesPolicy::BestEffort => s::MinValuesPolicy::BestEffort,
        };
        options.cluster_limits = self.cluster_limits.0.clone();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(v: serde_json::Value) -> Pod {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn cluster_limits_parse_strictly_and_reach_placement_options() {
        let l = cluster_limits("cpu=1000, memory=4Ti,nvidia.com/gpu=64,nodes=200").unwrap();
        assert_eq!(l.0["cpu"], 1_000_000);
        assert_eq!(l.0["memory"], 4 << 40);
        assert_eq!(l.0["nvidia.com/gpu"], 64);
        assert_eq!(l.0["nodes"], 200);
        assert_eq!(cluster_limits("").unwrap(), ClusterLimits::default());
        for (bad, says) in [
            ("cpu", "not RESOURCE=QUANTITY"),
            ("cpu=-1", "negative"),
            ("cpu=lots", "not a resource quantity"),
            ("cpu=1e100000", "cpu=1e100000"),
            ("nodes=1.5", "whole number"),
            ("bad name=1", "not a resource name"),
            ("cpu=1,cpu=2", "given twice"),
            ("cpu=1,,memory=1", "not RESOURCE=QUANTITY"),
        ] {
            let e = cluster_limits(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
        let mut options = adze_scheduling::Options::default();
        Policies {
            cluster_limits: l.clone(),
            ..Policies::default()
        }
        .apply(&mut options);
        assert_eq!(options.cluster_limits, l.0);
    }

    #[test]
    fn daemonset_mirror_and_terminating_pods_go_with_their_node_but_a_statefulsets() {
        let owned = |kind: &str, deleting: bool| {
            let mut v = json!({"metadata": {"name": "p",
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": kind, "name": "o", "uid": "u"}]}});
            if deleting {
                v["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
            }
            pod(v)
        };
        assert!(stays_with_node(&owned("DaemonSet", false)));
        assert!(stays_with_node(&owned("Node", false)));
        assert!(stays_with_node(&owned("ReplicaSet", true)));
        assert!(!stays_with_node(&owned("ReplicaSet", false)));
        assert!(!stays_with_node(&owned("StatefulSet", true)));
        let mirror = pod(json!({"metadata": {"name": "m",
            "annotations": {"kubernetes.io/config.mirror": "x"}}}));
        assert!(is_mirror(&mirror) && stays_with_node(&mirror));
    }

    #[test]
    fn only_unbound_live_ungated_non_daemon_pods_want_a_node() {
        let base = json!({"metadata": {"name": "p"}, "spec": {"containers": []}});
        assert!(wants_node(&pod(base.clone())));
        let mut bound = base.clone();
        bound["spec"]["nodeName"] = json!("n1");
        assert!(!wants_node(&pod(bound)));
        let mut deleting = base.clone();
        deleting["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        assert!(!wants_node(&pod(deleting)));
        let mut done = base.clone();
        done["status"] = json!({"phase": "Succeeded"});
        assert!(!wants_node(&pod(done)));
        let mut gated = base.clone();
        gated["spec"]["schedulingGates"] = json!([{"name": "x"}]);
        assert!(!wants_node(&pod(gated)));
        let mut daemon = base;
        daemon["metadata"]["ownerReferences"] =
            json!([{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "d", "uid": "u"}]);
        assert!(!wants_node(&pod(daemon)));
    }

    fn buffer(v: serde_json::Value) -> adze_api::CapacityBuffer {
        serde_json::from_value(v).unwrap()
    }

    fn template(name: &str, cpu: &str, memory: &str) -> k8s_openapi::api::core::v1::PodTemplate {
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": "default"},
            "template": {"spec": {"containers": [{"name": "pause", "image": "pause",
                "resources": {"requests": {"cpu": cpu, "memory": memory}}}]}}
        }))
        .unwrap()
    }

    fn verdict(out: &BufferPods, key: &str) -> BufferVerdict {
        out.verdicts.get(key).cloned().unwrap()
    }

    #[test]
    fn a_template_buffer_becomes_named_lowest_priority_placeholder_pods() {
        let t = template("web", "2", "4Gi");
        let refs = BufferRefs {
            templates: vec![&t],
            targets: vec![],
        };
        let b = buffer(json!({
            "metadata": {"name": "web-buffer", "namespace": "default"},
            "spec": {"podTemplateRef": {"name": "web"}, "replicas": 3}
        }));
        let out = buffer_pods([&b], &refs);
        assert_eq!(
            verdict(&out, "default/web-buffer"),
            BufferVerdict::Ready { replicas: 3 }
        );
        let names: Vec<String> = out.pods.iter().map(|p| p.key()).collect();
        assert_eq!(
            names,
            [
                "default/web-buffer-buffer-0",
                "default/web-buffer-buffer-1",
                "default/web-buffer-buffer-2"
            ]
        );
        assert!(out.pods.iter().all(is_buffer_pod));
        assert_eq!(out.pods[0].requests.cpu, 2000);
        assert_eq!(out.pods[0].priority, i32::MIN);
    }

    #[test]
    fn limits_cap_the_count_and_alone_set_it() {
        let t = template("web", "2", "4Gi");
        let refs = BufferRefs {
            templates: vec![&t],
            targets: vec![],
        };
        let capped = buffer(json!({
            "metadata": {"name": "capped", "namespace": "default"},
            "spec": {"podTemplateRef": {"name": "web"}, "replicas": 10,
                     "limits": {"cpu": "7", "memory": "40Gi"}}
        }));
        let only = buffer(json!({
            "metadata": {"name": "only", "namespace": "default"},
            "spec": {"podTemplateRef": {"name": "web"}, "limits": {"memory": "16Gi"}}
        }));
        let out = buffer_pods([&capped, &only], &refs);
        assert_eq!(
            verdict(&out, "default/capped"),
            BufferVerdict::Ready { replicas: 3 }
        );
        assert_eq!(
            verdict(&out, "default/only"),
            BufferVerdict::Ready { replicas: 4 }
        );
        assert_eq!(out.pods.len(), 7);
    }

    #[test]
    fn a_percentage_of_a_deployment_rounds_up_and_takes_the_larger_of_replicas() {
        let d: k8s_openapi::api::apps::v1::Deployment = serde_json::from_value(json!({
            "metadata": {"name": "api", "namespace": "default"},
            "spec": {"replicas": 7, "selector": {}, "template": {"spec": {"containers": [
                {"name": "c", "resources": {"requests": {"cpu": "500m"}}}]}}}
        }))
        .unwrap();
        let spec = d.spec.as_ref().unwrap();
        let refs = BufferRefs {
            templates: vec![],
            targets: vec![ScalableTarget {
                api_group: "apps",
                kind: "Deployment",
                metadata: &d.metadata,
                replicas: spec.replicas.unwrap_or(1),
                template: &spec.template,
            }],
        };
        let pct = buffer(json!({"metadata": {"name": "pct", "namespace": "default"},
            "spec": {"scalableRef": {"apiGroup": "apps", "kind": "Deployment", "name": "api"},
                     "percentage": 20}}));
        let both = buffer(json!({"metadata": {"name": "both", "namespace": "default"},
            "spec": {"scalableRef": {"apiGroup": "apps", "kind": "Deployment", "name": "api"},
                     "percentage": 20, "replicas": 5}}));
        let out = buffer_pods([&pct, &both], &refs);
        assert_eq!(
            verdict(&out, "default/pct"),
            BufferVerdict::Ready { replicas: 2 }
        );
        assert_eq!(
            verdict(&out, "default/both"),
            BufferVerdict::Ready { replicas: 5 }
        );
        assert_eq!(out.pods[0].requests.cpu, 500);
    }

    #[test]
    fn inconsistent_buffers_are_refused_at_their_field_and_others_still_count() {
        let t = template("web", "1", "1Gi");
        let refs = BufferRefs {
            templates: vec![&t],
            targets: vec![],
        };
        let cases = [
            (
                json!({"provisioningStrategy": "buffer.gke.io/standby-capacity",
                    "podTemplateRef": {"name": "web"}, "replicas": 1}),
                "spec.provisioningStrategy",
            ),
            (
                json!({"podTemplateRef": {"name": "web"},
                    "scalableRef": {"apiGroup": "apps", "kind": "Deployment", "name": "x"},
                    "replicas": 1}),
                "not both",
            ),
            (
                json!({"replicas": 1}),
                "set one of podTemplateRef and scalableRef",
            ),
            (
                json!({"podTemplateRef": {"name": "web"}, "percentage": 10}),
                "spec.percentage",
            ),
            (
                json!({"podTemplateRef": {"name": "nope"}, "replicas": 1}),
                "spec.podTemplateRef.name",
            ),
            (
                json!({"podTemplateRef": {"name": "web"}}),
                "set replicas, percentage or limits",
            ),
            (
                json!({"podTemplateRef": {"name": "web"}, "replicas": -1}),
                "spec.replicas",
            ),
            (
                json!({"podTemplateRef": {"name": "web"}, "replicas": 5000}),
                "more than the 1000",
            ),
            (
                json!({"scalableRef": {"apiGroup": "batch", "kind": "Job", "name": "j"},
                    "replicas": 1}),
                "spec.scalableRef",
            ),
            (
                json!({"podTemplateRef": {"name": "web"}, "limits": {"nvidia.com/gpu": "1"}}),
                "spec.limits",
            ),
        ];
        for (spec, needle) in cases {
            let b =
                buffer(json!({"metadata": {"name": "b", "namespace": "default"}, "spec": spec}));
            let good = buffer(json!({"metadata": {"name": "good", "namespace": "default"},
                "spec": {"podTemplateRef": {"name": "web"}, "replicas": 1}}));
            let out = buffer_pods([&b, &good], &refs);
            let BufferVerdict::Invalid(why) = verdict(&out, "default/b") else {
                panic!("{spec} was accepted");
            };
            assert!(why.contains(needle), "{spec}: {why}");
            assert_eq!(out.pods.len(), 1, "{spec}: the valid buffer still counts");
        }
    }

    #[test]
    fn real_pods_take_existing_room_before_a_buffers_placeholders() {
        use adze_scheduling::fixtures::{node_of_type, pool, small_catalog};
        let types = small_catalog();
        let c2 = types.iter().find(|t| t.name == "c.2x").unwrap();
        let t = template("web", "1", "1Gi");
        let refs = BufferRefs {
            templates: vec![&t],
            targets: vec![],
        };
        let b = buffer(
            json!({"metadata": {"name": "spare", "namespace": "default"},
            "spec": {"podTemplateRef": {"name": "web"}, "replicas": 1}}),
        );
        let mut real = adze_scheduling::Pod::new(
            "default",
            "real",
            adze_scheduling::Resources::new(1000, 1 << 30),
        );
        real.priority = 0;
        let mut pending = buffer_pods([&b], &refs).pods;
        pending.push(real); // listed last, placed first
        let snapshot = adze_scheduling::Snapshot {
            pending,
            nodes: vec![node_of_type(
                "n1",
                c2,
                "default",
                adze_scheduling::fixtures::ZONES[0],
                adze_scheduling::labels::CAPACITY_TYPE_ON_DEMAND,
            )],
            nodepools: vec![pool("default", types.clone())],
            ..Default::default()
        };
        let plan = adze_scheduling::schedule(&snapshot, &adze_scheduling::Options::default());
        let placed = plan.placements();
        assert_eq!(placed.get("default/real"), Some(&"n1"), "{placed:?}");
        let spare = placed.get("default/spare-buffer-0").expect("placed");
        assert_ne!(*spare, "n1", "the placeholder launches capacity instead");
        assert_eq!(plan.new_claims.len(), 1);
    }

    fn overlay(v: serde_json::Value) -> NodeOverlay {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn invalid_and_deleted_overlays_are_left_out_and_the_rest_applied() {
        let types = adze_scheduling::fixtures::small_catalog();
        let mut pools = vec![adze_scheduling::fixtures::pool("default", types.clone())];
        let good = overlay(json!({
            "metadata": {"name": "discount"},
            "spec": {"priceAdjustment": "-50%"}
        }));
        let bad = overlay(json!({
            "metadata": {"name": "bad"},
            "spec": {"price": "1", "priceAdjustment": "+1", "capacity": {"cpu": "1"}}
        }));
        let deleting = overlay(json!({
            "metadata": {"name": "going", "deletionTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"price": "100"}
        }));
        let verdicts = apply_overlays(&mut pools, [&good, &bad, &deleting]);
        assert_eq!(
            verdicts.get("discount"),
            Some(&OverlayVerdict::Applied { types: types.len() })
        );
        let Some(OverlayVerdict::Invalid(why)) = verdicts.get("bad") else {
            panic!("{verdicts:?}");
        };
        assert!(
            why.contains("spec: cannot set both price and priceAdjustment"),
            "{why}"
        );
        assert!(why.contains("spec.capacity[cpu]"), "{why}");
        assert!(!verdicts.contains_key("going"));
        let before = types[0].offerings[0].price;
        let after = pools[0].instance_types[0].offerings[0].price;
        assert!((after - before / 2.0).abs() < 1e-12, "{before} -> {after}");
    }

    #[test]
    fn live_daemon_pods_set_the_overhead_by_their_largest_requests() {
        use adze_scheduling::{Pod as P, Resources};
        let mut t = P::new("kube-system", "ds", Resources::new(100, 100));
        daemon_pod_from_live(&mut t, []);
        assert_eq!(t.requests.cpu, 100, "no live pod: the template");
        let a = P::new("kube-system", "ds-a", Resources::new(300, 50));
        let b = P::new("kube-system", "ds-b", Resources::new(200, 400));
        daemon_pod_from_live(&mut t, [&a, &b]);
        assert_eq!((t.requests.cpu, t.requests.memory), (300, 400));
    }
}
