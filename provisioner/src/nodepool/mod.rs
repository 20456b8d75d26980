//! NodePool status: what the pool's NodeClaims hold (`status.resources`: the sum of their
//! capacity plus a `nodes` count) and the `ValidationSucceeded`, `NodeClassReady` and `Ready`
//! conditions, False while the pool can launch nothing (an invalid spec, its EC2NodeClass
//! missing or unresolved). Written only when it changes.
//! Limits are enforced by provisioning, which counts every claim (launched or not); this
//! status is what people and dashboards read, and so are `adze_nodepool_usage` and
//! `adze_nodepool_limit`, published from the same figures on every pass.

pub mod replicas;

use std::collections::BTreeMap;
use std::time::Duration;

use std::sync::Arc;

use adze_api::{EC2NodeClass, NodeClaim, NodePool, PoolKind};
use adze_scheduling::{InstanceType, Resources, labels};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::api::{Patch, PatchParams};
use kube::{Api, Client};
use serde_json::json;

use crate::events::{Recorder, reference};
use crate::nodeclaim::set_condition;
use crate::state::ClusterState;

/// `status.resources` for a pool: the capacity of its launched, not-deleting claims, summed,
/// and `nodes`: how many there are.
pub fn pool_resources<'a>(
    pool: &str,
    claims: impl IntoIterator<Item = &'a NodeClaim>,
) -> BTreeMap<String, String> {
    let (total, nodes) = pool_usage(pool, claims);
    let mut out = total.to_quantities();
    out.insert("nodes".into(), nodes.to_string());
    out
}

/// The capacity of the pool's launched, not-deleting claims, summed, and how many there are.
pub fn pool_usage<'a>(
    pool: &str,
    claims: impl IntoIterator<Item = &'a NodeClaim>,
) -> (Resources, i64) {
    let mut total = Resources::default();
    let mut nodes = 0;
    for c in claims {
        let in_pool = c
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(labels::NODEPOOL))
            .is_some_and(|p| p == pool);
        if !in_pool || c.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let Some(capacity) = c
            .status
            .as_ref()
            .map(|s| &s.capacity)
            .filter(|m| !m.is_empty())
        else {
            continue;
        };
        if let Ok(r) =
            Resources::from_quantities(capacity.iter().map(|(k, v)| (k.as_str(), v.0.as_str())))
        {
            total.add(&r);
            nodes += 1;
        }
    }
    (total, nodes)
}

/// The pool's `spec.limits` parsed; `None` without limits (or with one that does not parse,
/// which validation refuses).
pub fn pool_limits(pool: &NodePool) -> Option<Resources> {
    if pool.spec.limits.is_empty() {
        return None;
    }
    Resources::from_quantities(
        pool.spec
            .limits
            .iter()
            .map(|(k, v)| (k.as_str(), v.0.as_str())),
    )
    .ok()
}

/// The `ValidationSucceeded=False` reason (and Event reason) of a pool whose `spec.replicas` was
/// added or removed after the controller recorded its kind.
pub const REPLICAS_CHANGED: &str = "ReplicasChanged";

/// One condition the status controller writes.
#[derive(Debug, Clone, PartialEq)]
pub struct PoolCondition {
    pub type_: &'static str,
    pub status: bool,
    pub reason: &'static str,
    pub message: String,
}

impl PoolCondition {
    fn new(type_: &'static str, status: bool, reason: &'static str, message: String) -> Self {
        Self {
            type_,
            status,
            reason,
            message,
        }
    }
}

/// The pool's conditions, as Karpenter v1 sets them: `ValidationSucceeded` (the spec passes
/// [`NodePool::validate`], which clusters without CEL cannot enforce at admission),
/// `NodeClassReady` (its EC2NodeClass exists and has resolved subnets and images; always true
/// on the simulated cloud, which watches no classes) and `Ready`, both together: the pool can
/// launch. Messages say why not, in the words provisioning logs.
pub fn conditions(
    pool: &NodePool,
    classes: Option<&[Arc<EC2NodeClass>]>,
    catalog: &[Arc<InstanceType>],
    nodes: &str,
) -> [PoolCondition; 3] {
    use adze_api::conditions::{READY, nodepool};
    let validation = match pool.kind_change() {
        Some(why) => Err((REPLICAS_CHANGED, why)),
        None => pool
            .validate()
            .map_err(|e| ("ValidationFailed", e.to_string())),
    };
    let validation = match validation {
        Ok(()) => PoolCondition::new(
            nodepool::VALIDATION_SUCCEEDED,
            true,
            "ValidationSucceeded",
            String::new(),
        ),
        Err((reason, message)) => {
            PoolCondition::new(nodepool::VALIDATION_SUCCEEDED, false, reason, message)
        }
    };
    let class = match crate::provisioning::snapshot::class_ready(pool, classes, catalog) {
        Ok(()) => PoolCondition::new(nodepool::NODE_CLASS_READY, true, "Ready", String::new()),
        Err(why) => {
            let wanted = &pool.spec.template.spec.node_class_ref.name;
            let missing = classes.is_some_and(|cs| {
                !cs.iter()
                    .any(|c| c.metadata.name.as_deref() == Some(wanted.as_str()))
            });
            let reason = if missing {
                "NodeClassNotFound"
            } else {
                "NodeClassNotReady"
            };
            PoolCondition::new(nodepool::NODE_CLASS_READY, false, reason, why)
        }
    };
    let ready = match (&validation, &class) {
        (v, c) if v.status && c.status => {
            PoolCondition::new(READY, true, "Ready", format!("{nodes} nodes launched"))
        }
        (v, _) if !v.status => PoolCondition::new(READY, false, v.reason, v.message.clone()),
        (_, c) => PoolCondition::new(READY, false, c.reason, c.message.clone()),
    };
    [validation, class, ready]
}

pub struct Status {
    pub client: Client,
    pub state: ClusterState,
    pub recorder: Recorder,
    /// The catalog a class's kubelet expressions are evaluated over: one without a value
    /// for a type leaves the class not ready.
    pub cloud: Arc<dyn crate::cloud::CloudProvider>,
    pub interval: Duration,
}

impl Status {
    /// Never returns.
    pub async fn run(self) {
        let api: Api<NodePool> = Api::all(self.client.clone());
        loop {
            let claims = self.state.claims.state();
            let classes = self.state.nodeclasses.as_ref().map(|s| s.state());
            let pools = self.state.nodepools.state();
            let catalog = self.cloud.instance_types();
            let figures: Vec<_> = pools
                .iter()
                .map(|pool| {
                    let name = pool.metadata.name.as_deref().unwrap_or_default();
                    let usage = pool_usage(name, claims.iter().map(|c| c.as_ref()));
                    (name, usage, pool_limits(pool))
                })
                .collect();
            crate::metrics::record_nodepools(
                &figures
                    .iter()
                    .map(
                        |(name, (usage, nodes), limits)| crate::metrics::PoolFigures {
                            name,
                            usage,
                            nodes: *nodes,
                            limits: limits.as_ref(),
                        },
                    )
                    .collect::<Vec<_>>(),
            );
            for pool in pools {
                let name = pool.metadata.name.clone().unwrap_or_default();
                let resources = pool_resources(&name, claims.iter().map(|c| c.as_ref()));
                let status = pool.status.clone().unwrap_or_default();
                let current: BTreeMap<String, String> = status
                    .resources
                    .iter()
                    .map(|(k, v)| (k.clone(), v.0.clone()))
                    .collect();
                let nodes = resources.get("nodes").cloned().unwrap_or_default();
                let wanted = conditions(&pool, classes.as_deref(), &catalog, &nodes);
                let unchanged = wanted.iter().all(|w| {
                    status.conditions.iter().any(|c| {
                        c.type_ == w.type_
                            && (c.status == "True") == w.status
                            && c.reason == w.reason
                            // A ready pool's message carries the node count, which
                            // status.resources already shows: not a reason to write.
                            && (w.status || c.message == w.message)
                    })
                });
                let node_count = nodes.parse::<i64>().ok();
                // The kind is recorded once, when first seen, and never rewritten: it is what
                // a later spec.replicas is compared with.
                let kind = status.kind.unwrap_or_else(|| PoolKind::of(&pool.spec));
                if current == resources
                    && unchanged
                    && status.nodes == node_count
                    && status.kind.is_some()
                {
                    continue;
                }
                let refused = wanted
                    .iter()
                    .find(|w| w.reason == REPLICAS_CHANGED)
                    .filter(|_| {
                        !status
                            .conditions
                            .iter()
                            .any(|c| c.reason == REPLICAS_CHANGED)
                    });
                if let Some(w) = refused {
                    tracing::warn!(nodepool = %name, message = %w.message, "nodepool refused: static and dynamic pools do not convert");
                    self.recorder.publish(
                        reference(pool.as_ref()),
                        "Warning",
                        REPLICAS_CHANGED,
                        &w.message,
                    );
                }
                let mut written = status.conditions.clone();
                for w in &wanted {
                    if !w.status && w.type_ == adze_api::conditions::READY {
                        tracing::warn!(nodepool = %name, reason = w.reason, message = %w.message, "nodepool not ready");
                    }
                    written = set_condition(&written, w.type_, w.status, w.reason, &w.message);
                }
                let conditions = written;
                let quantities: BTreeMap<String, Quantity> = resources
                    .into_iter()
                    .map(|(k, v)| (k, Quantity(v)))
                    .collect();
                // `nodes` is what `kubectl scale` reads back (the scale subresource's
                // statusReplicasPath).
                let patch = json!({"status": {"resources": quantities, "conditions": conditions, "nodes": node_count, "kind": kind}});
                if let Err(e) = api
                    .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                {
                    tracing::warn!(nodepool = %name, error = %e, "nodepool status not written");
                }
            }
            tokio::time::sleep(self.interval).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claim(name: &str, pool: &str, capacity: Option<(&str, &str)>, deleting: bool) -> NodeClaim {
        let mut v = json!({
            "apiVersion": "adze.sh/v1", "kind": "NodeClaim",
            "metadata": {"name": name, "labels": {labels::NODEPOOL: pool}},
            "spec": {"nodeClassRef": {"group": "aws.adze.sh", "kind": "EC2NodeClass", "name": "d"}},
        });
        if let Some((cpu, mem)) = capacity {
            v["status"] = json!({"capacity": {"cpu": cpu, "memory": mem}});
        }
        if deleting {
            v["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        }
        serde_json::from_value(v).unwrap()
    }

    fn pool(class: &str) -> NodePool {
        serde_json::from_value(json!({
            "apiVersion": "adze.sh/v1", "kind": "NodePool", "metadata": {"name": "web"},
            "spec": {"template": {"spec": {"nodeClassRef":
                {"group": "aws.adze.sh", "kind": "EC2NodeClass", "name": class}}}},
        }))
        .unwrap()
    }

    fn class(name: &str, resolved: bool) -> Arc<EC2NodeClass> {
        let mut v = json!({
            "apiVersion": "aws.adze.sh/v1", "kind": "EC2NodeClass", "metadata": {"name": name},
            "spec": {"subnetSelectorTerms": [{"id": "subnet-0"}],
                "securityGroupSelectorTerms": [{"id": "sg-1"}],
                "amiSelectorTerms": [{"alias": "al2023@latest"}], "role": "node"},
        });
        if resolved {
            v["status"] = json!({"subnets": [{"id": "subnet-0", "zone": "us-east-1a"}],
                "amis": [{"id": "ami-1", "requirements": [
                    {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]}]});
        }
        Arc::new(serde_json::from_value(v).unwrap())
    }

    fn find<'a>(cs: &'a [PoolCondition], type_: &str) -> &'a PoolCondition {
        cs.iter().find(|c| c.type_ == type_).unwrap()
    }

    #[test]
    fn a_pool_is_ready_only_while_its_ec2nodeclass_exists_and_is_resolved() {
        // The simulated cloud watches no classes: every valid pool can launch.
        let cs = conditions(&pool("default"), None, &[], "3");
        assert!(cs.iter().all(|c| c.status), "{cs:?}");
        assert_eq!(find(&cs, "Ready").message, "3 nodes launched");

        let cs = conditions(&pool("default"), Some(&[class("other", true)]), &[], "0");
        let (class_ready, ready) = (find(&cs, "NodeClassReady"), find(&cs, "Ready"));
        assert!(!class_ready.status && !ready.status);
        assert_eq!(
            (class_ready.reason, ready.reason),
            ("NodeClassNotFound", "NodeClassNotFound")
        );
        assert!(
            ready
                .message
                .contains("EC2NodeClass default does not exist"),
            "{ready:?}"
        );
        assert!(find(&cs, "ValidationSucceeded").status);

        let cs = conditions(&pool("default"), Some(&[class("default", false)]), &[], "0");
        let ready = find(&cs, "Ready");
        assert!(!ready.status);
        assert_eq!(ready.reason, "NodeClassNotReady");
        assert!(
            ready.message.contains("no resolved subnets or images"),
            "{ready:?}"
        );

        let cs = conditions(&pool("default"), Some(&[class("default", true)]), &[], "0");
        assert!(cs.iter().all(|c| c.status), "{cs:?}");
    }

    #[test]
    fn a_kubelet_expression_without_a_value_for_a_type_leaves_the_pool_not_ready() {
        let catalog = adze_scheduling::catalog::embedded();
        let mut c = (*class("default", true)).clone();
        c.spec.kubelet = Some(
            serde_json::from_value(json!({"kubeReserved": {"cpu": "vcpus * 100 - 300"}})).unwrap(),
        );
        let cs = conditions(
            &pool("default"),
            Some(&[Arc::new(c.clone())]),
            &catalog,
            "0",
        );
        let class_ready = find(&cs, "NodeClassReady");
        assert!(!class_ready.status);
        assert_eq!(class_ready.reason, "NodeClassNotReady");
        assert!(
            class_ready
                .message
                .contains("spec.kubelet.kubeReserved[cpu] on ")
                && class_ready.message.contains("may not be negative"),
            "{class_ready:?}"
        );
        c.spec.kubelet = Some(
            serde_json::from_value(json!({"kubeReserved": {"cpu": "max(60, vcpus * 30)"}}))
                .unwrap(),
        );
        let cs = conditions(&pool("default"), Some(&[Arc::new(c)]), &catalog, "0");
        assert!(cs.iter().all(|c| c.status), "{cs:?}");
    }

    /// The status loop's cheap check says what shaping the catalog would say, class by class.
    #[test]
    fn the_readiness_check_agrees_with_shaping_the_catalog() {
        use crate::provisioning::snapshot::{class_catalog, class_ready};
        let catalog = adze_scheduling::catalog::embedded();
        let with = |kubelet: serde_json::Value| {
            let mut c = (*class("default", true)).clone();
            c.spec.kubelet = Some(serde_json::from_value(kubelet).unwrap());
            Arc::new(c)
        };
        let classes = [
            class("default", true),
            class("default", false),
            class("other", true),
            with(json!({"maxPods": 20, "kubeReserved": {"cpu": "300m"}})),
            with(json!({"kubeReserved": {"cpu": "vcpus * 100 - 300"}})),
            with(json!({"maxPods": "min(110, max_pods)"})),
        ];
        for c in classes {
            let cs = [c];
            let ready = class_ready(&pool("default"), Some(&cs), &catalog);
            let shaped = class_catalog(&pool("default"), Some(&cs), &catalog).map(|_| ());
            assert_eq!(ready, shaped, "{:?}", cs[0].spec.kubelet);
        }
    }

    #[test]
    fn an_invalid_pool_is_not_ready_and_says_which_field() {
        let mut p = pool("default");
        p.spec.disruption.budgets = vec![serde_json::from_value(json!({"nodes": "ten"})).unwrap()];
        let cs = conditions(&p, None, &[], "0");
        let (v, ready) = (find(&cs, "ValidationSucceeded"), find(&cs, "Ready"));
        assert!(!v.status && !ready.status, "{cs:?}");
        assert_eq!(
            (v.reason, ready.reason),
            ("ValidationFailed", "ValidationFailed")
        );
        assert!(
            v.message.contains("spec.disruption.budgets[0].nodes"),
            "{v:?}"
        );
        // Provisioning refuses it too, with the same words.
        let err = crate::provisioning::snapshot::pool_catalog(&p, None, &[]).unwrap_err();
        assert!(err.contains("spec.disruption.budgets[0].nodes"), "{err}");
    }

    fn recorded(mut p: NodePool, kind: PoolKind) -> NodePool {
        p.status = Some(adze_api::NodePoolStatus {
            kind: Some(kind),
            ..Default::default()
        });
        p
    }

    #[test]
    fn adding_or_removing_replicas_is_refused_naming_the_field_and_stops_the_new_kind() {
        // Dynamic when first seen, replicas added later (what a 1.20-1.24 apiserver admits).
        let mut now_static = recorded(pool("default"), PoolKind::Dynamic);
        now_static.spec.replicas = Some(3);
        let cs = conditions(&now_static, None, &[], "0");
        let (v, ready) = (find(&cs, "ValidationSucceeded"), find(&cs, "Ready"));
        assert!(!v.status && !ready.status, "{cs:?}");
        assert_eq!(
            (v.reason, ready.reason),
            (REPLICAS_CHANGED, REPLICAS_CHANGED)
        );
        assert!(
            v.message
                .starts_with("spec.replicas: cannot be added to a dynamic NodePool"),
            "{v:?}"
        );
        // Neither provisioning nor disruption treats it as the new kind.
        assert!(crate::rules::nodepool_unusable(&now_static).is_some());

        // Static when first seen, replicas removed later: provisioning must not start
        // launching for pods, and disruption must not start consolidating it.
        let mut now_dynamic = recorded(pool("default"), PoolKind::Static);
        now_dynamic.spec.replicas = None;
        let cs = conditions(&now_dynamic, None, &[], "2");
        let v = find(&cs, "ValidationSucceeded");
        assert!(!v.status, "{cs:?}");
        assert!(
            v.message
                .starts_with("spec.replicas: cannot be removed from a static NodePool"),
            "{v:?}"
        );
        assert_eq!(
            crate::rules::nodepool_unusable(&now_dynamic),
            Some("spec.replicas was added or removed: the pool is refused until it is restored")
        );
        let policy = crate::disruption::input::policy(&now_dynamic).unwrap();
        assert!(
            policy.fixed_size,
            "a refused ex-static pool is not consolidated"
        );

        // Restored: accepted again; unrecorded: the current kind is taken.
        now_dynamic.spec.replicas = Some(2);
        assert!(
            conditions(&now_dynamic, None, &[], "2")
                .iter()
                .all(|c| c.status)
        );
        let mut fresh = pool("default");
        fresh.spec.replicas = Some(1);
        assert!(conditions(&fresh, None, &[], "0").iter().all(|c| c.status));
        assert_eq!(PoolKind::of(&fresh.spec), PoolKind::Static);
    }

    #[test]
    fn pool_resources_sum_launched_claims_of_the_pool_only() {
        let claims = [
            claim("a", "web", Some(("4", "16Gi")), false),
            claim("b", "web", Some(("2", "8Gi")), false),
            claim("c", "web", None, false),
            claim("d", "web", Some(("8", "32Gi")), true),
            claim("e", "batch", Some(("16", "64Gi")), false),
        ];
        let r = pool_resources("web", &claims);
        assert_eq!(r["cpu"], "6");
        assert_eq!(r["memory"], "24Gi");
        assert_eq!(r["nodes"], "2");
        assert_eq!(pool_resources("none", &claims)["nodes"], "0");
    }

    #[test]
    fn pool_limits_parse_cpu_in_millicores_and_are_none_without_limits() {
        assert_eq!(pool_limits(&pool("d")), None);
        let mut limited = pool("d");
        limited.spec.limits = [("cpu", "100"), ("memory", "1Ti")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), Quantity(v.to_string())))
            .collect();
        let l = pool_limits(&limited).unwrap();
        assert_eq!((l.cpu, l.memory), (100_000, 1 << 40));
    }
}
