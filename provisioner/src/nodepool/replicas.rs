//! Static NodePools (`spec.replicas`): keeps each such pool at its replicas. A thin adapter
//! over [`adze_scheduling::static_pool`]: it reads the pool's NodeClaims, asks how many to
//! launch or which to remove, creates claims planned by the same scheduler as pod-driven
//! ones (for a pod that asks for nothing), and deletes surplus claims, whose termination
//! drains them through the Eviction API. Provisioning never launches for a static pool
//! ([`crate::rules::nodepool_unusable`]) and disruption never consolidates one, so this is the
//! only thing that sizes it.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use adze_api::{NodeClaim, NodePool};
use adze_scheduling::Options;
use adze_scheduling::static_pool;
use kube::api::{DeleteParams, PostParams};
use kube::{Api, Client, ResourceExt};

use crate::cloud::{CloudProvider, UnavailableOfferings};
use crate::provisioning::snapshot::{self, Objects};
use crate::state::ClusterState;

pub use crate::rules::{
    node_limit, static_members as members, static_planning_objects as planning_objects,
};

pub struct Replicas {
    pub client: Client,
    pub state: ClusterState,
    pub cloud: Arc<dyn CloudProvider>,
    pub unavailable: UnavailableOfferings,
    pub max_instance_types: usize,
    pub interval: Duration,
}

impl Replicas {
    /// Never returns.
    pub async fn run(self) {
        loop {
            self.pass().await;
            tokio::time::sleep(self.interval).await;
        }
    }

    async fn pass(&self) {
        let objects = self.state.objects();
        let api: Api<NodeClaim> = Api::all(self.client.clone());
        for pool in &objects.nodepools {
            let Some(replicas) = pool.spec.replicas else {
                continue;
            };
            let name = pool.name_any();
            // Being deleted, refused (acting on it as static now would silently convert
            // it; the status controller reports the refusal) or invalid.
            let Some(want) = crate::rules::static_replicas(pool) else {
                tracing::debug!(nodepool = %name, "static nodepool not scaled: being deleted, refused or invalid");
                continue;
            };
            let members = members(&name, &objects);
            let scale = static_pool::scale(want, node_limit(pool), &members);
            if scale.held_by_limit > 0 {
                tracing::info!(nodepool = %name, replicas, missing = scale.held_by_limit, "static nodepool held below replicas by limits.nodes");
            }
            if scale.launch > 0 {
                self.launch(pool, &objects, scale.launch, &api).await;
            }
            for claim in &scale.remove {
                tracing::info!(nodepool = %name, nodeclaim = %claim, replicas, claims = members.iter().filter(|m| !m.deleting).count(), "scaling static nodepool down: deleting nodeclaim");
                if let Err(e) = api.delete(claim, &DeleteParams::default()).await {
                    tracing::warn!(nodepool = %name, nodeclaim = %claim, error = %e, "static nodepool: nodeclaim not deleted");
                }
            }
        }
    }

    async fn launch(&self, pool: &NodePool, objects: &Objects, n: u64, api: &Api<NodeClaim>) {
        let name = pool.name_any();
        let catalog = self
            .unavailable
            .apply(&self.cloud.instance_types(), Instant::now());
        let built = snapshot::build(&planning_objects(pool, objects), &catalog);
        let mut reserved: Vec<String> = objects.claims.iter().map(|c| c.name_any()).collect();
        reserved.extend(objects.nodes.iter().map(|n| n.name_any()));
        let options = Options {
            max_instance_types: self.max_instance_types,
            reserved_names: reserved,
            name_seed: crate::provisioning::fresh_name_seed(),
            ..Options::default()
        };
        let (claims, why) = static_pool::plan_claims(&built.snapshot, &name, n, &options);
        if let Some(why) = why {
            tracing::warn!(nodepool = %name, wanted = n, planned = claims.len(), reason = %why, problems = ?built.problems, "static nodepool: cannot plan every claim");
        }
        let class = crate::disruption::drift::class_named(
            &pool.spec.template.spec.node_class_ref,
            objects.nodeclasses.as_deref(),
        );
        for c in &claims {
            let obj = crate::provisioning::claim_object(
                c,
                pool,
                class,
                &BTreeMap::new(),
                objects.karpenter_labels,
            );
            match api.create(&PostParams::default(), &obj).await {
                Ok(_) => tracing::info!(
                    nodeclaim = %c.name, nodepool = %name, instance_type = %c.instance_type,
                    zone = %c.zone, capacity_type = %c.capacity_type,
                    price_per_hour = c.price_per_hour, "created nodeclaim for static nodepool"
                ),
                Err(e) => {
                    tracing::warn!(nodeclaim = %c.name, nodepool = %name, error = %e, "static nodepool: nodeclaim not created")
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use adze_scheduling::labels;
    use serde_json::json;

    fn pool(v: serde_json::Value) -> NodePool {
        serde_json::from_value(v).unwrap()
    }

    fn static_pool(replicas: i64) -> NodePool {
        pool(json!({
            "apiVersion": "adze.sh/v1", "kind": "NodePool", "metadata": {"name": "fixed"},
            "spec": {"replicas": replicas, "limits": {"nodes": "4"},
                "template": {"spec": {
                    "nodeClassRef": {"group": "aws.adze.sh", "kind": "EC2NodeClass", "name": "default"},
                    "taints": [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]}}}
        }))
    }

    #[test]
    fn a_static_pools_claims_are_planned_like_pod_driven_ones_without_pods() {
        let mut p = static_pool(2);
        // As the status controller leaves it after its first pass.
        p.status = Some(adze_api::NodePoolStatus {
            kind: Some(adze_api::PoolKind::Static),
            ..Default::default()
        });
        assert_eq!(node_limit(&p), Some(4));
        let objects = Objects {
            nodepools: vec![Arc::new(p.clone())],
            ..Objects::default()
        };
        // Provisioning does not launch for it ...
        let live = snapshot::build(&objects, &adze_scheduling::catalog::embedded());
        assert!(live.snapshot.nodepools.is_empty());
        // ... the scaler plans for it, despite its taint, and nominates no pod.
        let planning = planning_objects(&p, &objects);
        let built = snapshot::build(&planning, &adze_scheduling::catalog::embedded());
        let (claims, why) =
            static_pool::plan_claims(&built.snapshot, "fixed", 2, &Options::default());
        assert_eq!(why, None);
        assert_eq!(claims.len(), 2);
        assert_ne!(claims[0].name, claims[1].name);
        assert!(
            claims
                .iter()
                .all(|c| c.pods.is_empty() && c.nodepool == "fixed")
        );
        let obj = crate::provisioning::claim_object(&claims[0], &p, None, &BTreeMap::new(), false);
        assert_eq!(obj.labels()[labels::NODEPOOL], "fixed");
        assert_eq!(obj.spec.taints.len(), 1);
    }

    #[test]
    fn simulate_refuses_a_static_pool_naming_spec_replicas() {
        let yaml = "apiVersion: adze.sh/v1\nkind: NodePool\nmetadata: {name: fixed}\nspec:\n  replicas: 2\n  template:\n    spec:\n      nodeClassRef: {group: aws.adze.sh, kind: EC2NodeClass, name: default}\n";
        let err = crate::simulate::Scenario::parse(yaml)
            .expect_err("refused")
            .to_string();
        assert!(
            err.contains("spec.replicas: static NodePools launch nothing for pods"),
            "{err}"
        );
    }
}
