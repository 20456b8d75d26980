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

/// Karpenter's placement policy flags, the same for `run` and `simulate`.
#[derive(Debug, Clone, Copy, Default, clap::Args)]
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
