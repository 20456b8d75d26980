//! A registered Kubernetes Node into an [`ExistingNode`].
//!
//! * Labels become single-value requirements. The kubelet always sets
//!   `kubernetes.io/hostname`; a node written by hand without it gets its name there, so
//!   hostname selectors and topology work on it.
//! * Every taint is kept, `node.kubernetes.io/not-ready` and `unreachable` included: a node
//!   carrying them takes no new pods from kube-scheduler, so counting it as room would
//!   hide pods that really stay pending. (Ignoring those taints on a node that is still
//!   initialising is the cluster state's call, which knows the node's age.)
//! * Allocatable falls back to capacity and capacity to allocatable; a node with neither
//!   is an error rather than a node with no room.
//! * Cordoned (`spec.unschedulable`) or being deleted (`deletionTimestamp`) means
//!   unschedulable.

use adze_scheduling::{ExistingNode, Requirement, Requirements, Taint, labels};
use k8s_openapi::api::core::v1::Node;

use super::resources::resource_list;
use super::{ConvertError, ObjectRef, effect};

pub fn node(n: &Node) -> Result<ExistingNode, ConvertError> {
    let name = n.metadata.name.as_deref().unwrap_or_default();
    let object = ObjectRef::cluster("node", name);
    if name.is_empty() {
        return Err(ConvertError::missing(&object, "metadata.name"));
    }
    let node_labels = n.metadata.labels.clone().unwrap_or_default();
    let mut requirements = Requirements::from_labels(&node_labels);
    // A node labelled only with a deprecated key (old kubelets) carries its GA meaning.
    for (old, ga) in labels::DEPRECATED_ALIASES {
        if let Some(v) = node_labels.get(*old)
            && !node_labels.contains_key(*ga)
        {
            requirements.add(Requirement::single(ga, v));
        }
    }
    if !node_labels.contains_key(labels::HOSTNAME) {
        requirements.add(Requirement::single(labels::HOSTNAME, name));
    }

    let spec = n.spec.as_ref();
    let mut taints = Vec::new();
    for (i, t) in spec
        .and_then(|s| s.taints.as_deref())
        .unwrap_or_default()
        .iter()
        .enumerate()
    {
        let e = effect(&object, &format!("spec.taints[{i}].effect"), &t.effect)?;
        taints.push(Taint::new(
            &t.key,
            t.value.as_deref().unwrap_or_default(),
            e,
        ));
    }

    let status = n.status.as_ref();
    let allocatable = status.and_then(|s| s.allocatable.as_ref());
    let capacity = status.and_then(|s| s.capacity.as_ref());
    let (alloc_field, alloc_list) = match (allocatable, capacity) {
        (Some(a), _) => ("status.allocatable", a),
        (None, Some(c)) => ("status.capacity", c),
        (None, None) => return Err(ConvertError::missing(&object, "status.allocatable")),
    };
    let (cap_field, cap_list) = match capacity {
        Some(c) => ("status.capacity", c),
        None => (alloc_field, alloc_list),
    };
    let allocatable = resource_list(&object, alloc_field, Some(alloc_list))?;
    let capacity = resource_list(&object, cap_field, Some(cap_list))?;

    Ok(ExistingNode {
        name: name.to_string(),
        requirements,
        taints,
        allocatable,
        nodepool: node_labels.get(labels::NODEPOOL).cloned(),
        capacity,
        in_flight: false,
        unschedulable: spec.and_then(|s| s.unschedulable).unwrap_or(false)
            || n.metadata.deletion_timestamp.is_some(),
        price: None,
        volume_limits: Default::default(),
    })
}

#[cfg(test)]
mod tests {
    use adze_scheduling::Effect;

    use super::*;

    fn convert(yaml: &str) -> Result<ExistingNode, ConvertError> {
        node(&serde_yaml::from_str(yaml).unwrap())
    }

    #[test]
    fn labels_taints_and_allocatable_are_read() {
        let n = convert(
            r#"
apiVersion: v1
kind: Node
metadata:
  name: ip-10-0-1-2
  labels:
    kubernetes.io/hostname: ip-10-0-1-2.ec2.internal
    topology.kubernetes.io/zone: us-east-1a
    adze.sh/nodepool: default
spec:
  unschedulable: true
  taints:
    - {key: dedicated, value: infra, effect: NoSchedule}
    - {key: node.kubernetes.io/not-ready, effect: NoExecute}
status:
  capacity: {cpu: "4", memory: 16Gi, pods: "58"}
  allocatable: {cpu: 3920m, memory: 15Gi, pods: "58", ephemeral-storage: 18Gi}
"#,
        )
        .unwrap();
        assert_eq!(n.name, "ip-10-0-1-2");
        assert_eq!(
            n.requirements
                .get(labels::ZONE)
                .and_then(|r| r.single_value()),
            Some("us-east-1a")
        );
        assert_eq!(
            n.requirements
                .get(labels::HOSTNAME)
                .and_then(|r| r.single_value()),
            Some("ip-10-0-1-2.ec2.internal"),
            "a hostname label the node has is kept"
        );
        assert_eq!(
            n.taints,
            vec![
                Taint::new("dedicated", "infra", Effect::NoSchedule),
                Taint::new("node.kubernetes.io/not-ready", "", Effect::NoExecute),
            ]
        );
        assert_eq!(n.allocatable.cpu, 3920);
        assert_eq!(n.allocatable.memory, 15 << 30);
        assert_eq!(n.allocatable.pods, 58);
        assert_eq!(n.capacity.cpu, 4000);
        assert_eq!(n.nodepool.as_deref(), Some("default"));
        assert!(n.unschedulable && !n.in_flight);
    }

    #[test]
    fn hostname_defaults_to_the_name_and_capacity_stands_in_for_allocatable() {
        let n = convert(
            r#"
apiVersion: v1
kind: Node
metadata: {name: node-1}
status:
  capacity: {cpu: "2", memory: 4Gi, pods: "10"}
"#,
        )
        .unwrap();
        assert_eq!(
            n.requirements
                .get(labels::HOSTNAME)
                .and_then(|r| r.single_value()),
            Some("node-1")
        );
        assert_eq!(n.allocatable, n.capacity);
        assert_eq!(n.nodepool, None);
        assert!(!n.unschedulable);
    }

    #[test]
    fn problems_name_the_node_and_the_field() {
        let err = convert("{apiVersion: v1, kind: Node, metadata: {name: node-1}}").unwrap_err();
        assert_eq!(
            err.to_string(),
            "node node-1: status.allocatable: required field is missing"
        );
        let err = convert(
            "{apiVersion: v1, kind: Node, metadata: {name: node-1}, status: {allocatable: {memory: lots}}}",
        )
        .unwrap_err();
        assert_eq!(err.field, "status.allocatable.memory");
        let err = convert(
            "{apiVersion: v1, kind: Node, metadata: {name: node-1}, spec: {taints: [{key: a, effect: Sometimes}]}, status: {allocatable: {cpu: '1'}}}",
        )
        .unwrap_err();
        assert_eq!(err.field, "spec.taints[0].effect");
    }
}
