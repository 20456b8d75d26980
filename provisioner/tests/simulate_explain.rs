//! `simulate --explain-pod`: the binary run as a user runs it, on a scenario with a pod for
//! each recognisable reason (a taint, a selector on a label nothing has, too big for every
//! instance type, a pool at its limits), in table and JSON form.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

#[path = "support/scratch.rs"]
#[allow(dead_code)] // `report` is for the plan, not the explanation
mod support_scratch;

const SCENARIO: &str = r#"
apiVersion: adze.sh/v1
kind: NodePool
metadata:
  name: default
spec:
  template:
    spec:
      nodeClassRef: {group: aws.adze.sh, kind: EC2NodeClass, name: default}
      requirements:
        - {key: kubernetes.io/arch, operator: In, values: ["amd64"]}
        - {key: aws.adze.sh/instance-category, operator: In, values: ["c", "m", "r"]}
  limits:
    cpu: 1000
---
apiVersion: adze.sh/v1
kind: NodePool
metadata:
  name: gpu
spec:
  weight: 10
  template:
    spec:
      nodeClassRef: {group: aws.adze.sh, kind: EC2NodeClass, name: default}
      requirements:
        - {key: aws.adze.sh/instance-category, operator: In, values: ["g"]}
      taints:
        - {key: nvidia.com/gpu, value: "true", effect: NoSchedule}
---
apiVersion: adze.sh/v1
kind: NodePool
metadata:
  name: tiny
spec:
  template:
    metadata:
      labels: {pool: tiny}
    spec:
      nodeClassRef: {group: aws.adze.sh, kind: EC2NodeClass, name: default}
      requirements:
        - {key: aws.adze.sh/instance-category, operator: In, values: ["c", "m"]}
  limits:
    cpu: 2
---
apiVersion: adze.sh/v1
kind: NodePool
metadata:
  name: old
  deletionTimestamp: "2026-06-01T12:00:00Z"
  finalizers: [adze.sh/termination]
spec:
  weight: 50
  template:
    spec:
      nodeClassRef: {group: aws.adze.sh, kind: EC2NodeClass, name: default}
---
apiVersion: aws.adze.sh/v1
kind: EC2NodeClass
metadata:
  name: default
spec:
  role: AdzeNodeRole-demo
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {adze.sh/discovery: demo}}]
  securityGroupSelectorTerms: [{tags: {adze.sh/discovery: demo}}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
        - {name: web, image: nginx, resources: {requests: {cpu: "1", memory: 2Gi}}}
---
apiVersion: v1
kind: Pod
metadata: {name: needs-ssd, namespace: shop}
spec:
  nodeSelector: {disk: ssd}
  containers:
    - {name: c, image: nginx, resources: {requests: {cpu: "1"}}}
---
apiVersion: v1
kind: Pod
metadata: {name: huge, namespace: shop}
spec:
  containers:
    - {name: c, image: nginx, resources: {requests: {cpu: "1000"}}}
---
apiVersion: v1
kind: Pod
metadata: {name: tiny-job, namespace: shop}
spec:
  nodeSelector: {pool: tiny}
  containers:
    - {name: c, image: nginx, resources: {requests: {cpu: "3"}}}
"#;

fn scenario(name: &str) -> PathBuf {
    support_scratch::scratch("explain", name, SCENARIO)
}

fn explain(path: &Path, pod: &str, extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_adze-provisioner"))
        .args(["simulate", path.to_str().unwrap(), "--explain-pod", pod])
        .args(extra)
        .output()
        .expect("the binary runs")
}

fn text(out: &Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

fn json(path: &Path, pod: &str) -> serde_json::Value {
    serde_json::from_str(&text(&explain(path, pod, &["--output", "json"]))).unwrap()
}

fn pool<'j>(e: &'j serde_json::Value, name: &str) -> &'j serde_json::Value {
    e["nodePools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["nodePool"] == name)
        .unwrap_or_else(|| panic!("no pool {name} in {e:#}"))
}

#[test]
fn a_placed_pod_names_its_pool_and_why_the_others_refuse() {
    let path = scenario("placed");
    let e = json(&path, "shop/web-0");
    assert_eq!(e["pod"], "shop/web-0");
    assert_eq!(e["outcome"]["result"], "newNodeClaim", "{e:#}");
    assert_eq!(e["outcome"]["nodePool"], "default");
    // The gpu pool comes first by weight and is refused for its taint, by name.
    let pools: Vec<&str> = e["nodePools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["nodePool"].as_str().unwrap())
        .collect();
    assert_eq!(pools, ["gpu", "default", "tiny", "old"]);
    // A NodePool being deleted launches nothing, by `run`'s rule, and is listed as such.
    let old = pool(&e, "old");
    assert_eq!(old["refusal"]["kind"], "notUsable", "{old:#}");
    assert!(
        old["refusal"]["message"]
            .as_str()
            .unwrap()
            .contains("being deleted"),
        "{old:#}"
    );
    let gpu = pool(&e, "gpu");
    assert_eq!(gpu["refusal"]["kind"], "taint");
    assert!(
        gpu["refusal"]["message"]
            .as_str()
            .unwrap()
            .contains("nvidia.com/gpu"),
        "{gpu:#}"
    );
    let default = pool(&e, "default");
    assert!(default.get("refusal").is_none(), "{default:#}");
    let compatible = default["compatible"].as_array().unwrap();
    assert!(!compatible.is_empty());
    let option = e["outcome"]["instanceType"].as_str().unwrap();
    assert!(
        compatible.iter().any(|t| t == option),
        "{option} among {compatible:?}"
    );
    // The arm64 types are the pool's own requirement's to refuse; every type is counted once.
    let refused = default["refused"].as_array().unwrap();
    let arch = refused
        .iter()
        .find(|g| g["reason"].as_str().unwrap().contains("kubernetes.io/arch"))
        .unwrap_or_else(|| panic!("{refused:#?}"));
    assert_eq!(arch["kind"], "requirement");
    let counted: usize = compatible.len()
        + refused
            .iter()
            .map(|g| g["instanceTypes"].as_array().unwrap().len())
            .sum::<usize>();
    assert_eq!(counted, default["instanceTypes"].as_u64().unwrap() as usize);

    let table = text(&explain(&path, "shop/web-0", &[]));
    assert!(
        table.starts_with("Pod shop/web-0: placed on new NodeClaim default-"),
        "{table}"
    );
    assert!(table.contains("default (weight 0): takes it"), "{table}");
    assert!(
        table.contains("gpu (weight 10): refused: NodePool gpu: taint nvidia.com/gpu=true:NoSchedule is not tolerated"),
        "{table}"
    );
    let _ = std::fs::remove_file(path);
}

#[test]
fn a_selector_on_a_missing_label_names_the_key_everywhere() {
    let path = scenario("missing-label");
    let e = json(&path, "shop/needs-ssd");
    assert_eq!(e["outcome"]["result"], "pending");
    for name in ["default", "tiny"] {
        let p = pool(&e, name);
        assert_eq!(p["refusal"]["kind"], "requirement", "{p:#}");
        assert!(
            p["refusal"]["message"].as_str().unwrap().contains("disk"),
            "{p:#}"
        );
    }
    let table = text(&explain(&path, "shop/needs-ssd", &[]));
    assert!(
        table.starts_with("Pod shop/needs-ssd: stays pending: "),
        "{table}"
    );
    let _ = std::fs::remove_file(path);
}

#[test]
fn a_pod_too_big_for_every_type_gets_the_types_grouped_with_the_largest() {
    let path = scenario("too-big");
    let e = json(&path, "shop/huge");
    assert_eq!(e["outcome"]["result"], "pending");
    let default = pool(&e, "default");
    assert_eq!(default["refusal"]["kind"], "resources", "{default:#}");
    assert!(default["compatible"].as_array().unwrap().is_empty());
    let small = default["refused"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["kind"] == "resources")
        .unwrap();
    let reason = small["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("too small for 1000 cpu (the largest has "),
        "{reason}"
    );
    assert!(small["instanceTypes"].as_array().unwrap().len() > 50);
    // The table gives the count and a few names, not every type.
    let table = text(&explain(&path, "shop/huge", &[]));
    let line = table
        .lines()
        .find(|l| l.contains("too small for 1000 cpu"))
        .unwrap();
    assert!(
        line.trim_start()
            .split(' ')
            .next()
            .unwrap()
            .parse::<usize>()
            .unwrap()
            > 50
    );
    assert!(line.ends_with(", ..."), "{line}");
    let _ = std::fs::remove_file(path);
}

#[test]
fn a_pool_at_its_limits_says_so_with_the_room_left() {
    let path = scenario("limits");
    let e = json(&path, "shop/tiny-job");
    assert_eq!(e["outcome"]["result"], "pending");
    let tiny = pool(&e, "tiny");
    assert_eq!(tiny["refusal"]["kind"], "limits", "{tiny:#}");
    assert!(
        tiny["refusal"]["message"]
            .as_str()
            .unwrap()
            .contains("limit"),
        "{tiny:#}"
    );
    assert!(
        tiny["refused"]
            .as_array()
            .unwrap()
            .iter()
            .any(|g| g["kind"] == "limits")
    );
    // The other pools lack its label.
    assert_eq!(pool(&e, "default")["refusal"]["kind"], "requirement");
    let _ = std::fs::remove_file(path);
}

#[test]
fn an_unknown_pod_is_an_error_naming_it_and_disruption_is_refused() {
    let path = scenario("unknown");
    let out = explain(&path, "shop/nope", &[]);
    assert!(!out.status.success());
    assert_eq!(out.stdout, b"");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--explain-pod shop/nope"), "{err}");
    assert!(err.contains("no Pod shop/nope"), "{err}");
    // NAME alone is in `default`.
    let err = String::from_utf8(explain(&path, "web-0", &[]).stderr).unwrap();
    assert!(err.contains("no Pod default/web-0"), "{err}");
    let out = explain(&path, "shop/web-0", &["--disruption"]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--disruption"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // YAML carries the same fields.
    let yaml = text(&explain(&path, "shop/huge", &["--output", "yaml"]));
    assert!(
        yaml.contains("nodePools:") && yaml.contains("result: pending"),
        "{yaml}"
    );
    let _ = std::fs::remove_file(path);
}
