//! The wire types of kube-scheduler's HTTP extender protocol, `k8s.io/kube-scheduler/extender/v1`.
//!
//! Upstream declares these Go structs without JSON tags, so Go serialises every field under
//! its Go name (`Pod`, `NodeNames`, `FailedAndUnresolvableNodes`, ...), writes nil pointers
//! and nil maps as `null`, and always writes `Error` (as `""` when empty). We serialise the
//! same way. Go's decoder matches names case-insensitively, so we also accept the
//! lower-camel spellings some hand-written clients send.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ListMeta;
use serde::{Deserialize, Serialize};

/// Lowest score an extender may give (`MinExtenderPriority`).
pub const MIN_EXTENDER_PRIORITY: i64 = 0;
/// Highest score an extender may give (`MaxExtenderPriority`); kube-scheduler scales it to
/// its own 0–100 range and multiplies by the extender's weight.
pub const MAX_EXTENDER_PRIORITY: i64 = 10;

/// `v1.NodeList` as kube-scheduler sends it (k8s-openapi has no list types of its own).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NodeList {
    #[serde(
        rename = "apiVersion",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub api_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default)]
    pub metadata: ListMeta,
    #[serde(default)]
    pub items: Vec<Node>,
}

impl NodeList {
    /// The same list header with no items.
    pub fn clone_empty(&self) -> NodeList {
        NodeList {
            api_version: self.api_version.clone(),
            kind: self.kind.clone(),
            metadata: self.metadata.clone(),
            items: Vec::new(),
        }
    }
}

/// Node name → why the pod cannot go there (`FailedNodesMap`).
pub type FailedNodesMap = BTreeMap<String, String>;

/// Arguments of `filter` and `prioritize` (`ExtenderArgs`). `Pod` is a pointer upstream;
/// `Nodes` is sent when the extender is not `nodeCacheCapable`, `NodeNames` when it is.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ExtenderArgs {
    #[serde(rename = "Pod", alias = "pod", default)]
    pub pod: Option<Pod>,
    #[serde(rename = "Nodes", alias = "nodes", default)]
    pub nodes: Option<NodeList>,
    #[serde(
        rename = "NodeNames",
        alias = "nodeNames",
        alias = "nodenames",
        default
    )]
    pub node_names: Option<Vec<String>>,
}

/// Result of `filter` (`ExtenderFilterResult`). Exactly one of `Nodes` / `NodeNames` is set,
/// matching what the request carried. `FailedAndUnresolvableNodes` takes precedence over
/// `FailedNodes` and tells kube-scheduler that preemption would not help there.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ExtenderFilterResult {
    #[serde(rename = "Nodes", alias = "nodes", default)]
    pub nodes: Option<NodeList>,
    #[serde(
        rename = "NodeNames",
        alias = "nodeNames",
        alias = "nodenames",
        default
    )]
    pub node_names: Option<Vec<String>>,
    #[serde(rename = "FailedNodes", alias = "failedNodes", default)]
    pub failed_nodes: Option<FailedNodesMap>,
    #[serde(
        rename = "FailedAndUnresolvableNodes",
        alias = "failedAndUnresolvableNodes",
        default
    )]
    pub failed_and_unresolvable_nodes: Option<FailedNodesMap>,
    #[serde(rename = "Error", alias = "error", default)]
    pub error: String,
}

/// One node's score from `prioritize` (`HostPriority`), in
/// [`MIN_EXTENDER_PRIORITY`]..=[`MAX_EXTENDER_PRIORITY`]. The response is a bare JSON array
/// of these (`HostPriorityList`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostPriority {
    #[serde(rename = "Host", alias = "host")]
    pub host: String,
    #[serde(rename = "Score", alias = "score")]
    pub score: i64,
}

pub type HostPriorityList = Vec<HostPriority>;

/// Arguments of `bind` (`ExtenderBindingArgs`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExtenderBindingArgs {
    #[serde(rename = "PodName", alias = "podName", default)]
    pub pod_name: String,
    #[serde(rename = "PodNamespace", alias = "podNamespace", default)]
    pub pod_namespace: String,
    #[serde(rename = "PodUID", alias = "podUID", alias = "podUid", default)]
    pub pod_uid: String,
    #[serde(rename = "Node", alias = "node", default)]
    pub node: String,
}

/// Why a bind request is refused before anything is sent to the API server.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidBinding {
    #[error("ExtenderBindingArgs.{0} is empty")]
    Empty(&'static str),
    #[error("ExtenderBindingArgs.{field} {value} {reason}")]
    Name {
        field: &'static str,
        /// Quoted and cut short.
        value: String,
        reason: crate::names::NameError,
    },
}

impl ExtenderBindingArgs {
    /// Refuses what the API call must not be made with: an empty `PodUID` (the binding's
    /// UID precondition would be dropped, so a same-named successor pod could be bound) and
    /// names Kubernetes would not accept (they go into the request path unescaped).
    pub fn validate(&self) -> Result<(), InvalidBinding> {
        use crate::names::{dns1123_label, dns1123_subdomain, quoted};
        type Check = fn(&str) -> Result<(), crate::names::NameError>;
        let fields: [(&'static str, &String, Check); 4] = [
            ("PodName", &self.pod_name, dns1123_subdomain),
            ("PodNamespace", &self.pod_namespace, dns1123_label),
            ("PodUID", &self.pod_uid, |_| Ok(())),
            ("Node", &self.node, dns1123_subdomain),
        ];
        for (field, value, _) in &fields {
            if value.is_empty() {
                return Err(InvalidBinding::Empty(field));
            }
        }
        for (field, value, check) in fields {
            check(value).map_err(|reason| InvalidBinding::Name {
                field,
                value: quoted(value),
                reason,
            })?;
        }
        Ok(())
    }
}

/// Result of `bind` (`ExtenderBindingResult`): empty `Error` means bound.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExtenderBindingResult {
    #[serde(rename = "Error", alias = "error", default)]
    pub error: String,
}

/// Pods kube-scheduler would evict on one node, as full objects (`Victims`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Victims {
    #[serde(rename = "Pods", alias = "pods", default)]
    pub pods: Option<Vec<Pod>>,
    #[serde(rename = "NumPDBViolations", alias = "numPDBViolations", default)]
    pub num_pdb_violations: i64,
}

/// A victim named by UID only (`MetaPod`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MetaPod {
    #[serde(rename = "UID", alias = "uid", default)]
    pub uid: String,
}

/// Pods kube-scheduler would evict on one node, by UID (`MetaVictims`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MetaVictims {
    #[serde(rename = "Pods", alias = "pods", default)]
    pub pods: Option<Vec<MetaPod>>,
    #[serde(rename = "NumPDBViolations", alias = "numPDBViolations", default)]
    pub num_pdb_violations: i64,
}

/// Arguments of `preempt` (`ExtenderPreemptionArgs`): the preemptor and kube-scheduler's
/// candidate nodes with their victims, as objects (`NodeNameToVictims`, not
/// `nodeCacheCapable`) or as UIDs (`NodeNameToMetaVictims`, `nodeCacheCapable`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ExtenderPreemptionArgs {
    #[serde(rename = "Pod", alias = "pod", default)]
    pub pod: Option<Pod>,
    #[serde(rename = "NodeNameToVictims", alias = "nodeNameToVictims", default)]
    pub node_name_to_victims: Option<BTreeMap<String, Victims>>,
    #[serde(
        rename = "NodeNameToMetaVictims",
        alias = "nodeNameToMetaVictims",
        default
    )]
    pub node_name_to_meta_victims: Option<BTreeMap<String, MetaVictims>>,
}

/// Result of `preempt` (`ExtenderPreemptionResult`): the candidates that remain. An empty
/// map leaves kube-scheduler no node to preempt on.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExtenderPreemptionResult {
    #[serde(
        rename = "NodeNameToMetaVictims",
        alias = "nodeNameToMetaVictims",
        default
    )]
    pub node_name_to_meta_victims: Option<BTreeMap<String, MetaVictims>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_names_are_the_go_names() {
        let r = ExtenderFilterResult {
            node_names: Some(vec!["a".into()]),
            failed_nodes: Some([("b".to_string(), "full".to_string())].into()),
            ..Default::default()
        };
        assert_eq!(
            serde_json::to_string(&r).unwrap(),
            r#"{"Nodes":null,"NodeNames":["a"],"FailedNodes":{"b":"full"},"FailedAndUnresolvableNodes":null,"Error":""}"#
        );
        let p = HostPriority {
            host: "a".into(),
            score: 10,
        };
        assert_eq!(
            serde_json::to_string(&p).unwrap(),
            r#"{"Host":"a","Score":10}"#
        );
        assert_eq!(
            serde_json::to_string(&ExtenderBindingResult::default()).unwrap(),
            r#"{"Error":""}"#
        );
    }

    #[test]
    fn requests_as_kube_scheduler_sends_them_parse() {
        let args: ExtenderArgs = serde_json::from_str(
            r#"{"Pod":{"metadata":{"name":"p","namespace":"default","uid":"u1"},"spec":{"containers":[]}},"Nodes":null,"NodeNames":["n1","n2"]}"#,
        )
        .unwrap();
        assert_eq!(args.node_names.unwrap(), ["n1", "n2"]);
        assert!(args.nodes.is_none());
        let bind: ExtenderBindingArgs = serde_json::from_str(
            r#"{"PodName":"p","PodNamespace":"default","PodUID":"u1","Node":"n1"}"#,
        )
        .unwrap();
        assert_eq!(bind.node, "n1");
        let pre: ExtenderPreemptionArgs = serde_json::from_str(
            r#"{"Pod":null,"NodeNameToVictims":null,"NodeNameToMetaVictims":{"n1":{"Pods":[{"UID":"v1"}],"NumPDBViolations":1}}}"#,
        )
        .unwrap();
        let meta = pre.node_name_to_meta_victims.unwrap();
        assert_eq!(meta["n1"].pods.as_ref().unwrap()[0].uid, "v1");
        assert_eq!(meta["n1"].num_pdb_violations, 1);
    }
}
