//! Reading the snapshot from a live cluster: list requests only (get/list, never a write),
//! [`PAGE_SIZE`] objects per request, each page trimmed ([`super`]) before the next is read
//! so memory holds the trimmed objects, not the API's full ones.
//!
//! An API group the cluster does not serve (its discovery or list answers 404) is not an
//! error: that kind is absent. Any other failure is, naming the resource: a 403 says which
//! permission the identity lacks (the read-only ClusterRole shipped with the chart grants
//! exactly these lists).

use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{Node, PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::storage::v1::{CSINode, StorageClass};
use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use kube::{Client, Resource};
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{Autoscaler, Collected, PAGE_SIZE, PoolSource};

#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error(
        "list {resource}: forbidden (403): {message}; the identity needs get/list on it (the chart's read-only ClusterRole, or manifests/rbac/snapshot-reader.yaml, grants exactly what the snapshot reads)"
    )]
    Forbidden { resource: String, message: String },
    #[error(
        "list {resource}: the list expired (410) while being read page by page (the cluster changed faster than it was read); run the snapshot again"
    )]
    Expired { resource: String },
    #[error(
        "--nodepools-from {0}: the cluster serves no {1} NodePool API (its CRDs are not installed)"
    )]
    NoPools(&'static str, &'static str),
    #[error("list {resource}: {source}")]
    Api {
        resource: String,
        #[source]
        source: kube::Error,
    },
}

/// The outcome of one list: read, or absent (the API is not served).
enum Listed {
    Read,
    Absent,
}

fn classify(resource: &str, e: kube::Error) -> Result<Listed, SnapshotError> {
    match &e {
        kube::Error::Api(s) if s.code == 404 => Ok(Listed::Absent),
        kube::Error::Api(s) if s.code == 403 => Err(SnapshotError::Forbidden {
            resource: resource.to_string(),
            message: s.message.clone(),
        }),
        kube::Error::Api(s) if s.code == 410 => Err(SnapshotError::Expired {
            resource: resource.to_string(),
        }),
        _ => Err(SnapshotError::Api {
            resource: resource.to_string(),
            source: e,
        }),
    }
}

/// Every object of `api`, page by page, each handed to `keep` as it arrives.
async fn list_pages<K>(
    api: &Api<K>,
    resource: &str,
    mut keep: impl FnMut(K),
) -> Result<Listed, SnapshotError>
where
    K: Clone + DeserializeOwned + std::fmt::Debug,
{
    let mut token: Option<String> = None;
    loop {
        let mut lp = ListParams::default().limit(PAGE_SIZE);
        if let Some(t) = &token {
            lp = lp.continue_token(t);
        }
        let page = match api.list(&lp).await {
            Ok(p) => p,
            Err(e) => return classify(resource, e),
        };
        token = page.metadata.continue_.filter(|t| !t.is_empty());
        for item in page.items {
            keep(item);
        }
        if token.is_none() {
            return Ok(Listed::Read);
        }
    }
}

/// A typed cluster-wide list, each object passed through `trim`.
async fn list_typed<K>(
    client: &Client,
    resource: &str,
    mut trim: impl FnMut(K),
) -> Result<Listed, SnapshotError>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug,
{
    let api: Api<K> = Api::all(client.clone());
    list_pages(&api, resource, &mut trim).await
}

/// Whether the cluster serves `resource` (a plural) in `group_version`, by discovery, which
/// every authenticated identity may read.
async fn served(client: &Client, group_version: &str, plural: &str) -> bool {
    client
        .list_api_group_resources(group_version)
        .await
        .is_ok_and(|l| l.resources.iter().any(|r| r.name == plural))
}

/// Every object of a custom resource as trimmed JSON; None when the API is not served.
async fn list_dynamic(
    client: &Client,
    group_version: &str,
    kind: &str,
    plural: &str,
) -> Result<Option<Vec<Value>>, SnapshotError> {
    if !served(client, group_version, plural).await {
        return Ok(None);
    }
    let (group, version) = group_version.split_once('/').unwrap_or(("", group_version));
    let ar = ApiResource {
        group: group.into(),
        version: version.into(),
        api_version: group_version.into(),
        kind: kind.into(),
        plural: plural.into(),
    };
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &ar);
    let mut out = Vec::new();
    let resource = format!("{plural}.{group_version}");
    let listed = list_pages(&api, &resource, |o| {
        let mut v = serde_json::to_value(o).unwrap_or(Value::Null);
        v["apiVersion"] = Value::String(group_version.into());
        v["kind"] = Value::String(kind.into());
        out.push(super::autoscaler_object(v));
    })
    .await?;
    Ok(match listed {
        Listed::Read => Some(out),
        Listed::Absent => None,
    })
}

/// The autoscaler objects `from` names; with [`PoolSource::Auto`], Adze's when its NodePool
/// API is served, else Karpenter's v1, else Karpenter's v1beta1, else none.
async fn autoscaler(client: &Client, from: PoolSource) -> Result<Autoscaler, SnapshotError> {
    match from {
        PoolSource::Nodes => return Ok(Autoscaler::None),
        PoolSource::Adze => {
            return match adze(client).await? {
                Some(a) => Ok(a),
                None => Err(SnapshotError::NoPools("adze", "adze.sh/v1")),
            };
        }
        PoolSource::Karpenter => {
            return match karpenter(client).await? {
                Some(a) => Ok(a),
                None => Err(SnapshotError::NoPools(
                    "karpenter",
                    "karpenter.sh v1 or v1beta1",
                )),
            };
        }
        PoolSource::Auto => {}
    }
    if let Some(a) = adze(client).await? {
        return Ok(a);
    }
    Ok(karpenter(client).await?.unwrap_or(Autoscaler::None))
}

/// Adze's objects, None when its NodePool API is not served.
async fn adze(client: &Client) -> Result<Option<Autoscaler>, SnapshotError> {
    if let Some(nodepools) = list_dynamic(client, "adze.sh/v1", "NodePool", "nodepools").await? {
        return Ok(Some(Autoscaler::Adze {
            nodepools,
            ec2nodeclasses: list_dynamic(
                client,
                "aws.adze.sh/v1",
                "EC2NodeClass",
                "ec2nodeclasses",
            )
            .await?
            .unwrap_or_default(),
            nodeclaims: list_dynamic(client, "adze.sh/v1", "NodeClaim", "nodeclaims")
                .await?
                .unwrap_or_default(),
            nodeoverlays: list_dynamic(client, "adze.sh/v1alpha1", "NodeOverlay", "nodeoverlays")
                .await?
                .unwrap_or_default(),
        }));
    }
    Ok(None)
}

/// Karpenter's objects (v1, else v1beta1), None when neither NodePool API is served.
async fn karpenter(client: &Client) -> Result<Option<Autoscaler>, SnapshotError> {
    for v in ["v1", "v1beta1"] {
        let sh = format!("karpenter.sh/{v}");
        if let Some(nodepools) = list_dynamic(client, &sh, "NodePool", "nodepools").await? {
            let aws = format!("karpenter.k8s.aws/{v}");
            return Ok(Some(Autoscaler::Karpenter {
                api_version: sh.clone(),
                nodepools,
                ec2nodeclasses: list_dynamic(client, &aws, "EC2NodeClass", "ec2nodeclasses")
                    .await?
                    .unwrap_or_default(),
                nodeclaims: list_dynamic(client, &sh, "NodeClaim", "nodeclaims")
                    .await?
                    .unwrap_or_default(),
            }));
        }
    }
    Ok(None)
}

/// Reads the cluster (the autoscaler objects `from` names): Nodes, Pods, PodDisruptionBudgets (policy/v1, else v1beta1),
/// DaemonSets, volumes, the autoscaler objects and, with `vpas`, the VerticalPodAutoscalers
/// (none, with a note, when the cluster does not serve their API).
pub async fn read(
    client: &Client,
    from: PoolSource,
    vpas: bool,
) -> Result<Collected, SnapshotError> {
    let mut c = Collected {
        autoscaler: autoscaler(client, from).await?,
        ..Default::default()
    };
    // Nodes before pods: a pod bound to a node created after the node list is left out
    // (`assemble`), rather than a node with no pods of its own.
    list_typed::<Node>(client, "nodes", |n| c.nodes.push(super::node(n))).await?;
    let mut terminal = 0;
    list_typed::<Pod>(client, "pods", |p| match super::pod(p) {
        Some(p) => c.pods.push(p),
        None => terminal += 1,
    })
    .await?;
    c.terminal_pods = terminal;
    list_typed::<DaemonSet>(client, "daemonsets.apps", |d| {
        c.daemonsets.push(super::daemonset(d))
    })
    .await?;
    list_typed::<PersistentVolumeClaim>(client, "persistentvolumeclaims", |x| {
        c.pvcs.push(super::pvc(x))
    })
    .await?;
    list_typed::<PersistentVolume>(client, "persistentvolumes", |x| c.pvs.push(super::pv(x)))
        .await?;
    list_typed::<StorageClass>(client, "storageclasses.storage.k8s.io", |x| {
        c.storage_classes.push(super::storage_class(x))
    })
    .await?;
    list_typed::<CSINode>(client, "csinodes.storage.k8s.io", |x| {
        c.csinodes.push(super::csinode(x))
    })
    .await?;
    let version = if served(client, "policy/v1", "poddisruptionbudgets").await {
        "policy/v1"
    } else {
        "policy/v1beta1"
    };
    let pdbs = list_dynamic(
        client,
        version,
        "PodDisruptionBudget",
        "poddisruptionbudgets",
    )
    .await?
    .unwrap_or_default();
    for p in pdbs {
        match super::pdb(p) {
            Ok(v) => c.pdbs.push(v),
            Err(note) => c.notes.push(note),
        }
    }
    if vpas {
        let api = crate::disruption::vpa::API_VERSION;
        match list_dynamic(client, api, "VerticalPodAutoscaler", "verticalpodautoscalers").await? {
            Some(items) => {
                for v in items {
                    match super::vpa(v) {
                        Ok(v) => c.vpas.push(v),
                        Err(why) => c.notes.push(format!("{why}: left out")),
                    }
                }
            }
            None => c.notes.push(format!(
                "the cluster serves no {api} VerticalPodAutoscaler API: no VPA read, moved pods are planned with their requests as they are"
            )),
        }
    }
    Ok(c)
}
