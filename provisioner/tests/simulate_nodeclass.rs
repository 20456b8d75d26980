//! `simulate` plans a pool with the instance types its EC2NodeClass shapes, by the rule `run`
//! uses: the class's kubelet settings and its ephemeral-storage backing change what a node
//! holds, so the same pods need another plan.

use std::path::PathBuf;
use std::process::{Command, Output};

use adze_provisioner::simulate::Report;

#[path = "support/scratch.rs"]
mod support_scratch;

/// Writes a scenario to a temporary file named after the test.
fn scratch(name: &str, yaml: &str) -> PathBuf {
    support_scratch::scratch("simulate-nodeclass", name, yaml)
}

/// The plan (exit status 0) or the unschedulable report (exit status 2), as JSON.
fn simulate(name: &str, yaml: &str) -> (Output, Report) {
    let path = scratch(name, yaml);
    let out = Command::new(env!("CARGO_BIN_EXE_adze-provisioner"))
        .arg("simulate")
        .arg(&path)
        .args(["--output", "json", "--allow-unschedulable"])
        .output()
        .expect("the binary runs");
    let _ = std::fs::remove_file(&path);
    let report = support_scratch::report(&out);
    (out, report)
}

/// A pool on `types` whose EC2NodeClass has `class_spec` (YAML under `spec:`), and `replicas`
/// pods asking `requests`.
fn scenario(types: &str, class_spec: &str, replicas: u32, requests: &str) -> String {
    format!(
        r#"apiVersion: adze.sh/v1
kind: NodePool
metadata: {{name: default}}
spec:
  template:
    spec:
      nodeClassRef: {{group: aws.adze.sh, kind: EC2NodeClass, name: default}}
      requirements:
        - {{key: node.kubernetes.io/instance-type, operator: In, values: [{types}]}}
        - {{key: adze.sh/capacity-type, operator: In, values: [on-demand]}}
---
apiVersion: aws.adze.sh/v1
kind: EC2NodeClass
metadata: {{name: default}}
spec:
  amiSelectorTerms: [{{alias: al2023@latest}}]
  role: KarpenterNodeRole
  subnetSelectorTerms: [{{tags: {{karpenter.sh/discovery: demo}}}}]
  securityGroupSelectorTerms: [{{tags: {{karpenter.sh/discovery: demo}}}}]
{class_spec}
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: web}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec:
      containers:
        - name: web
          image: pause
          resources: {{requests: {requests}}}
"#
    )
}

#[test]
fn the_class_kubelet_max_pods_caps_each_node() {
    let pods = |class_spec: &str| {
        let (out, report) = simulate(
            "maxpods",
            &scenario("m5.xlarge", class_spec, 6, "{cpu: 100m, memory: 64Mi}"),
        );
        assert!(out.status.success());
        assert!(report.unschedulable.is_empty());
        report
            .node_claims
            .iter()
            .map(|c| c.pods.len())
            .collect::<Vec<_>>()
    };
    // m5.xlarge holds 58 pods by its ENIs: one node for six small pods.
    assert_eq!(pods(""), vec![6]);
    // The class's kubelet allows 3 a node: two nodes, three pods each.
    assert_eq!(pods("  kubelet: {maxPods: 3}"), vec![3, 3]);
}

/// A class with Nitro Enclaves enabled plans only types that can run them, as `run` launches:
/// the cheapest type the pool allows (m5.large, 2 vCPUs) cannot, so the pod goes to m5.xlarge.
#[test]
fn nitro_enclaves_plan_only_types_that_can_run_them() {
    let planned = |class_spec: &str| {
        let (out, report) = simulate(
            "enclaves",
            &scenario(
                "m5.large, m5.xlarge",
                class_spec,
                1,
                "{cpu: 100m, memory: 64Mi}",
            ),
        );
        assert!(out.status.success());
        assert!(
            report.unschedulable.is_empty(),
            "{:?}",
            report.unschedulable
        );
        report.node_claims[0].instance_type.clone()
    };
    assert_eq!(planned(""), "m5.large");
    assert_eq!(planned("  enclaveOptions: {enabled: true}"), "m5.xlarge");
    assert_eq!(planned("  enclaveOptions: {enabled: false}"), "m5.large");
}

#[test]
fn raid0_instance_store_backs_ephemeral_storage_where_the_root_volume_cannot() {
    let storage = "{cpu: 500m, memory: 1Gi, ephemeral-storage: 150Gi}";
    // The root volume (20 GiB) cannot hold the pod's 150 GiB: it stays unschedulable.
    let (out, report) = simulate(
        "root",
        &scenario(
            "m6id.xlarge",
            "  blockDeviceMappings: [{deviceName: /dev/xvda, ebs: {volumeSize: 20Gi}}]",
            1,
            storage,
        ),
    );
    assert_eq!(out.status.code(), Some(0), "allowed unschedulable");
    assert!(report.node_claims.is_empty(), "{:?}", report.node_claims);
    assert_eq!(report.unschedulable.len(), 1);
    // RAID0 over m6id.xlarge's 237 GB of local NVMe holds it.
    let (out, report) = simulate(
        "raid0",
        &scenario(
            "m6id.xlarge",
            "  blockDeviceMappings: [{deviceName: /dev/xvda, ebs: {volumeSize: 20Gi}}]\n  instanceStorePolicy: RAID0",
            1,
            storage,
        ),
    );
    assert!(out.status.success());
    assert!(
        report.unschedulable.is_empty(),
        "{:?}",
        report.unschedulable
    );
    assert_eq!(report.node_claims.len(), 1);
    assert_eq!(report.node_claims[0].instance_type, "m6id.xlarge");
}

/// Pools of one EC2NodeClass launch the same reshaped catalog: the scenario shapes it once
/// per class and the pools share it, so thousands of pools of one class cost one catalog of
/// memory, not one each (3,000 such pools once exhausted 2 GiB before planning began). A
/// pool of another class still gets the catalog that class shapes.
#[test]
fn pools_of_one_class_share_its_catalog_and_another_class_gets_its_own() {
    let base = scenario("m5.xlarge", "", 1, "{cpu: 100m}");
    let second_pool = base
        .split("\n---\n")
        .next()
        .expect("the pool comes first")
        .replace("metadata: {name: default}", "metadata: {name: second}");
    let other_class = format!(
        "{}\n---\n{}",
        second_pool
            .replace("metadata: {name: second}", "metadata: {name: third}")
            .replace("EC2NodeClass, name: default}", "EC2NodeClass, name: small}"),
        base.split("\n---\n")
            .nth(1)
            .expect("the class comes second")
            .replace("metadata: {name: default}", "metadata: {name: small}")
            + "  kubelet: {maxPods: 3}\n"
    );
    let yaml = format!("{base}\n---\n{second_pool}\n---\n{other_class}");
    let s = adze_provisioner::simulate::Scenario::parse(&yaml).expect("the scenario parses");
    let types = |name: &str| {
        &s.snapshot
            .nodepools
            .iter()
            .find(|p| p.name == name)
            .unwrap_or_else(|| panic!("pool {name}"))
            .instance_types
    };
    let (a, b, c) = (types("default"), types("second"), types("third"));
    assert!(!a.is_empty());
    assert_eq!(a.len(), b.len());
    assert!(
        a.iter().zip(b).all(|(x, y)| std::sync::Arc::ptr_eq(x, y)),
        "pools of one class hold the same types, not copies"
    );
    assert!(!a.iter().zip(c).any(|(x, y)| std::sync::Arc::ptr_eq(x, y)));
    // The other class's kubelet caps pods: its pool's types are its own shaping.
    let pods = |types: &[std::sync::Arc<adze_scheduling::InstanceType>]| {
        types
            .iter()
            .find(|t| t.name == "m5.xlarge")
            .map(|t| t.capacity.pods)
    };
    assert_eq!(pods(a), Some(58));
    assert_eq!(pods(c), Some(3));
}

/// `maxPods` as an expression over the type: m5.xlarge (4 ENIs of 15 addresses) gets
/// `default_enis - 1` = 3 pods a node, so six pods need two nodes; an expression with no value
/// for the type refuses the scenario, naming the field and the type.
#[test]
fn a_max_pods_expression_is_evaluated_per_type() {
    let pods = |class_spec: &str| {
        let (out, report) = simulate(
            "maxpods-expr",
            &scenario("m5.xlarge", class_spec, 6, "{cpu: 100m, memory: 64Mi}"),
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        report
            .node_claims
            .iter()
            .map(|c| c.pods.len())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        pods("  kubelet: {maxPods: \"default_enis - 1\"}"),
        vec![3, 3]
    );
    assert_eq!(
        pods("  kubelet: {maxPods: \"min(110, default_enis * (ips_per_eni - 1))\"}"),
        vec![6]
    );
    let path = scratch(
        "maxpods-expr-bad",
        &scenario(
            "m5.xlarge",
            "  kubelet: {kubeReserved: {memory: \"1000 - memory_mib\"}}",
            1,
            "{cpu: 100m, memory: 64Mi}",
        ),
    );
    let out = Command::new(env!("CARGO_BIN_EXE_adze-provisioner"))
        .arg("simulate")
        .arg(&path)
        .output()
        .expect("the binary runs");
    let _ = std::fs::remove_file(&path);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("spec.kubelet.kubeReserved[memory]")
            && stderr.contains("may not be negative"),
        "{stderr}"
    );
}
