//! The cluster as the controllers see it: one reflector store per kind, fed by watches, and
//! the nominations NodeClaims carry. Stores are eventually consistent with the apiserver;
//! every reader works level-based from whatever they hold.

pub mod nomination;
pub mod signals;

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
    pub async fn start(client: Client, nodeclasses: bool) -> anyhow::Result<ClusterState> {
        require_nodeoverlay_crd(&client).await?;
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
        }
    }
}
