//! Shared by the offline disruption planner's suites (`simulate_disruption`,
//! `disruption_agreement`): a fixed clock, a three-type catalog, and the Nodes, NodeClaims and
//! Pods of a small cluster as scenario YAML.
#![allow(dead_code)]

/// The clock every plan is made at.
pub const NOW: &str = "2026-06-01T12:00:00Z";

/// A day before [`NOW`]: when nodes and pods were created unless a case says otherwise.
pub const DAY_BEFORE: &str = "2026-05-31T12:00:00Z";

/// Three on-demand types in one zone: small (2 CPU, $0.10/h), medium (4, $0.19/h),
/// large (8, $0.38/h).
pub const CATALOG: &str = r#"
apiVersion: adze.sh/v1alpha1
kind: InstanceCatalog
metadata: {name: lab}
instanceTypes:
  - {name: small, cpu: 2, memory: 8Gi, pods: 29, arch: amd64,
     offerings: [{zone: test-1a, capacityType: on-demand, price: 0.10}]}
  - {name: medium, cpu: 4, memory: 16Gi, pods: 58, arch: amd64,
     offerings: [{zone: test-1a, capacityType: on-demand, price: 0.19}]}
  - {name: large, cpu: 8, memory: 32Gi, pods: 110, arch: amd64,
     offerings: [{zone: test-1a, capacityType: on-demand, price: 0.38}]}
"#;

fn cpu_of(size: &str) -> u32 {
    match size {
        "small" => 2,
        "medium" => 4,
        _ => 8,
    }
}

/// A Ready Node of `pool` and `size` (small, medium, large) in test-1a, created at `created`,
/// with `annotations` (flow-style YAML map entries) and the providerID its claim names.
pub fn node(name: &str, pool: &str, size: &str, created: &str, annotations: &str) -> String {
    let cpu = cpu_of(size);
    format!(
        r#"
apiVersion: v1
kind: Node
metadata:
  name: {name}
  creationTimestamp: "{created}"
  labels:
    adze.sh/nodepool: {pool}
    node.kubernetes.io/instance-type: {size}
    topology.kubernetes.io/zone: test-1a
    adze.sh/capacity-type: on-demand
    kubernetes.io/arch: amd64
    kubernetes.io/os: linux
    kubernetes.io/hostname: {name}
  annotations: {{{annotations}}}
spec: {{providerID: "aws:///test-1a/i-{name}"}}
status:
  allocatable: {{cpu: "{cpu}", memory: "{mem}Gi", pods: "29"}}
  capacity: {{cpu: "{cpu}", memory: "{mem}Gi", pods: "29"}}
  conditions: [{{type: Ready, status: "True"}}]
"#,
        mem = cpu * 4
    )
}

/// The initialized NodeClaim of [`node`]`(name, ...)`, linked to it by providerID and
/// `status.nodeName`.
pub fn claim(name: &str, pool: &str, size: &str, created: &str) -> String {
    format!(
        r#"
apiVersion: adze.sh/v1
kind: NodeClaim
metadata:
  name: {name}
  creationTimestamp: "{created}"
  labels: {{adze.sh/nodepool: {pool}, node.kubernetes.io/instance-type: {size}}}
spec:
  nodeClassRef: {{group: aws.adze.sh, kind: EC2NodeClass, name: default}}
  expireAfter: 720h
status:
  providerID: "aws:///test-1a/i-{name}"
  nodeName: {name}
  conditions:
    - {{type: Initialized, status: "True", reason: Initialized, message: "", lastTransitionTime: "{created}"}}
"#
    )
}

/// A Running pod in namespace `shop` on `node`, asking for `cpu` and 1Gi, created a day
/// before [`NOW`]; `labels` and `annotations` are flow-style map entries.
pub fn pod(name: &str, node: &str, cpu: &str, labels: &str, annotations: &str) -> String {
    format!(
        r#"
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: shop
  uid: uid-{name}
  creationTimestamp: "{DAY_BEFORE}"
  labels: {{{labels}}}
  annotations: {{{annotations}}}
spec:
  nodeName: {node}
  containers: [{{name: c, image: app, resources: {{requests: {{cpu: "{cpu}", memory: 1Gi}}}}}}]
status: {{phase: Running, startTime: "{DAY_BEFORE}"}}
"#
    )
}
