//! The watched stores behind [`ClusterState`].

use super::signals;
use std::fmt::Debug;

use adze_api::{EC2NodeClass, NodeClaim, NodeOverlay, NodePool};
use futures::StreamExt;
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{Node, PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::storage::v1::{CSINode, StorageClass};
use kube::runtime::{WatchStreamExt, reflector, reflector::Store, watcher};
use kube::{Api, Client, Resource};
use serde::de::DeserializeOwned;

use crate::provisioning::snapshot::Objects;

#[derive(Clone)]
pub struct ClusterState {
    pub nodes: Store<Node>,
    pub pods: Store<Pod>,
    pub claims: Store<NodeClaim>,
    pub nodepools: Store<NodePool>,
    pub nodeoverlays: Store<NodeOverlay>,
    pub daemonsets: Store<DaemonSet>,
    /// Claims, volumes and classes: the zones a pod's volumes tie it to.
    pub pvcs: Store<PersistentVolumeClaim>,
    pub pvs: Store<PersistentVolume>,
    pub storage_classes: Store<StorageClass>,
    /// Per-node CSI attach limits.
    pub csinodes: Store<CSINode>,
    /// Watched with the AWS provider only: the simulated cloud may run without the CRD.
    pub nodeclasses: Option<Store<EC2NodeClass>>,
    /// `--karpenter-labels`: new nodes carry Karpenter's well-known labels beside Adze's.
    pub karpenter_labels: bool,
    /// Pods the extender found no node for ([`signals`]).
    pub failed_every_node: signals::FailedEveryNode,
    /// `--capacity-buffers` with the CapacityBuffer CRD installed: buffers and what they
    /// refer to.
    pub buffers: Option<BufferStores>,
    /// `--kube-scheduler-config` with default constraints: what pods' selectors for them
    /// are derived from.
    pub spread: Option<SpreadStores>,
}

/// The watches kube-scheduler's default topology spread needs: the controllers and Services
/// a pod's selector is derived from.
#[derive(Clone)]
pub struct SpreadStores {
    pub defaults: std::sync::Arc<adze_scheduling::default_spread::DefaultSpread>,
    pub replicasets: Store<k8s_openapi::api::apps::v1::ReplicaSet>,
    pub statefulsets: Store<k8s_openapi::api::apps::v1::StatefulSet>,
    pub replication_controllers: Store<k8s_openapi::api::core::v1::ReplicationController>,
    pub services: Store<k8s_openapi::api::core::v1::Service>,
}

impl SpreadStores {
    /// Starts the watches; None when there are no default constraints (nothing is read).
    pub async fn start(
        client: &Client,
        defaults: Option<&adze_scheduling::default_spread::DefaultSpread>,
    ) -> anyhow::Result<Option<SpreadStores>> {
        let Some(defaults) = defaults.filter(|d| !d.is_empty()) else {
            return Ok(None);
        };
        let s = SpreadStores {
            defaults: std::sync::Arc::new(defaults.clone()),
            replicasets: watch(Api::all(client.clone())),
            statefulsets: watch(Api::all(client.clone())),
            replication_controllers: watch(Api::all(client.clone())),
            services: watch(Api::all(client.clone())),
        };
        s.replicasets.wait_until_ready().await?;
        s.statefulsets.wait_until_ready().await?;
        s.replication_controllers.wait_until_ready().await?;
        s.services.wait_until_ready().await?;
        Ok(Some(s))
    }

    fn objects(&self) -> crate::provisioning::snapshot::SpreadObjects {
        crate::provisioning::snapshot::SpreadObjects {
            defaults: Some(self.defaults.clone()),
            replicasets: self.replicasets.state(),
            statefulsets: self.statefulsets.state(),
            replication_controllers: self.replication_controllers.state(),
            services: self.services.state(),
        }
    }
}

/// The watches `--capacity-buffers` adds.
#[derive(Clone)]
pub struct BufferStores {
    pub capacitybuffers: Store<adze_api::CapacityBuffer>,
    pub podtemplates: Store<k8s_openapi::api::core::v1::PodTemplate>,
    pub deployments: Store<k8s_openapi::api::apps::v1::Deployment>,
    pub replicasets: Store<k8s_openapi::api::apps::v1::ReplicaSet>,
    pub statefulsets: Store<k8s_openapi::api::apps::v1::StatefulSet>,
}

impl BufferStores {
    /// Starts the watches when the CapacityBuffer CRD is served; without it, a warning and
    /// None (the rest of the provisioner runs as without the flag).
    pub async fn start(client: &Client) -> anyhow::Result<Option<BufferStores>> {
        let api: Api<adze_api::CapacityBuffer> = Api::all(client.clone());
        if let Err(kube::Error::Api(e)) = api.list(&kube::api::ListParams::default().limit(1)).await
            && e.code == 404
        {
            tracing::warn!(
                "--capacity-buffers is set but the CapacityBuffer CRD (capacitybuffers.autoscaling.x-k8s.io, v1alpha1) is not installed: CapacityBuffers are ignored until it is installed and the provisioner restarted (docs/capacitybuffers.md)"
            );
            return Ok(None);
        }
        let s = BufferStores {
            capacitybuffers: watch(api),
            podtemplates: watch(Api::all(client.clone())),
            deployments: watch(Api::all(client.clone())),
            replicasets: watch(Api::all(client.clone())),
            statefulsets: watch(Api::all(client.clone())),
        };
        s.capacitybuffers.wait_until_ready().await?;
        s.podtemplates.wait_until_ready().await?;
        s.deployments.wait_until_ready().await?;
        s.replicasets.wait_until_ready().await?;
        s.statefulsets.wait_until_ready().await?;
        Ok(Some(s))
    }

    fn objects(&self) -> crate::provisioning::snapshot::BufferObjects {
        crate::provisioning::snapshot::BufferObjects {
            capacitybuffers: self.capacitybuffers.state(),
            podtemplates: self.podtemplates.state(),
            deployments: self.deployments.state(),
            replicasets: self.replicasets.state(),
            statefulsets: self.statefulsets.state(),
        }
    }
}

fn watch<K>(api: Api<K>) -> Store<K>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    K::DynamicType: Default + Eq + std::hash::Hash + Clone,
{
    let (reader, writer) = reflector::store();
    let stream = reflector(
        writer,
        watcher(api, watcher::Config::default()).default_backoff(),
    );
    tokio::spawn(async move {
        stream
            .for_each(|ev| async move {
                if let Err(e) = ev {
                    tracing::warn!(error = %e, "watch error");
                }
            })
            .await;
    });
    reader
}

/// Fails with the way out when the NodeOverlay CRD is missing (Helm installs `crds/` on first
/// install only, so an upgraded release lacks it until the upgrade guide's CRD step), instead
/// of waiting forever for a watch that cannot start.
async fn require_nodeoverlay_crd(client: &Client) -> anyhow::Result<()> {
    let api: Api<NodeOverlay> = Api::all(client.clone());
    match api.list(&kube::api::ListParams::default().limit(1)).await {
        Err(kube::Error::Api(e)) if e.code == 404 => anyhow::bail!(
            "the NodeOverlay CRD (nodeoverlays.adze.sh, v1alpha1) is not installed: apply the CRDs of this release first (docs/upgrade.md)"
        ),
        // Anything else (a 403, the apiserver unreachable) surfaces through the watches.
        _ => Ok(()),
    }
}

impl ClusterState {
    /// Starts the watches and waits until each store has its first list. `nodeclasses`: also
    /// watch EC2NodeClasses, so each pool plans with what its class can launch.
    /// `capacity_buffers`: also watch CapacityBuffers (`--capacity-buffers`).
    pub async fn start(
        client: Client,
        nodeclasses: bool,
        capacity_buffers: bool,
        default_spread: Option<&adze_scheduling::default_spread::DefaultSpread>,
    ) -> anyhow::Result<ClusterState> {
        require_nodeoverlay_crd(&client).await?;
        let spread = SpreadStores::start(&client, default_spread).await?;
        let buffers = if capacity_buffers {
            BufferStores::start(&client).await?
        } else {
            None
        };
        let s = ClusterState {
            nodes: watch(Api::all(client.clone())),
            pods: watch(Api::all(client.clone())),
            claims: watch(Api::all(client.clone())),
            nodepools: watch(Api::all(client.clone())),
            nodeoverlays: watch(Api::all(client.clone())),
            daemonsets: watch(Api::all(client.clone())),
            pvcs: watch(Api::all(client.clone())),
            pvs: watch(Api::all(client.clone())),
            storage_classes: watch(Api::all(client.clone())),
            csinodes: watch(Api::all(client.clone())),
            nodeclasses: nodeclasses.then(|| watch(Api::all(client.clone()))),
            karpenter_labels: false,
            failed_every_node: signals::FailedEveryNode::start(client),
            buffers,
            spread,
        };
        if let Some(classes) = &s.nodeclasses {
            classes.wait_until_ready().await?;
        }
        s.nodes.wait_until_ready().await?;
        s.pods.wait_until_ready().await?;
        s.claims.wait_until_ready().await?;
        s.nodepools.wait_until_ready().await?;
        s.nodeoverlays.wait_until_ready().await?;
        s.daemonsets.wait_until_ready().await?;
        s.pvcs.wait_until_ready().await?;
        s.pvs.wait_until_ready().await?;
        s.storage_classes.wait_until_ready().await?;
        s.csinodes.wait_until_ready().await?;
        Ok(s)
    }

    pub fn objects(&self) -> Objects {
        Objects {
            nodes: self.nodes.state(),
            pods: self.pods.state(),
            claims: self.claims.state(),
            nodepools: self.nodepools.state(),
            nodeoverlays: self.nodeoverlays.state(),
            daemonsets: self.daemonsets.state(),
            pvcs: self.pvcs.state(),
            pvs: self.pvs.state(),
            storage_classes: self.storage_classes.state(),
            csinodes: self.csinodes.state(),
            nodeclasses: self.nodeclasses.as_ref().map(|s| s.state()),
            karpenter_labels: self.karpenter_labels,
            failed_every_node: self.failed_every_node.snapshot(),
            buffers: self
                .buffers
                .as_ref()
                .map(BufferStores::objects)
                .unwrap_or_default(),
            spread: self
                .spread
                .as_ref()
                .map(SpreadStores::objects)
                .unwrap_or_default(),
        }
    }
}
