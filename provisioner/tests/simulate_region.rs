//! `adze-provisioner simulate --region`: planning against another region's embedded catalog,
//! run as a user runs it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use adze_provisioner::simulate::Report;
use adze_scheduling::catalog::regions;

fn simulate(path: &Path, extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_adze-provisioner"))
        .arg("simulate")
        .arg(path)
        .args(extra)
        .output()
        .expect("the binary runs")
}

#[path = "support/scratch.rs"]
mod support_scratch;

/// Writes a scenario to a temporary file named after the test.
fn scratch(name: &str, yaml: &str) -> PathBuf {
    support_scratch::scratch("simulate-region", name, yaml)
}

fn inflate() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/inflate.yaml")
}

/// A pool of on-demand m5.large only, pinned to `zones`, and three one-CPU pods.
fn pinned(zones: &[&str]) -> String {
    let zones = zones
        .iter()
        .map(|z| format!("{z:?}"))
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        r#"apiVersion: adze.sh/v1
kind: NodePool
metadata:
  name: west
spec:
  template:
    spec:
      nodeClassRef: {{group: aws.adze.sh, kind: EC2NodeClass, name: default}}
      requirements:
        - {{key: topology.kubernetes.io/zone, operator: In, values: [{zones}]}}
        - {{key: node.kubernetes.io/instance-type, operator: In, values: ["m5.large"]}}
        - {{key: adze.sh/capacity-type, operator: In, values: ["on-demand"]}}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec:
      containers:
        - name: web
          image: pause
          resources: {{requests: {{cpu: 500m}}}}
"#
    )
}

fn json(out: &Output) -> Report {
    support_scratch::report(out)
}

fn stderr(out: &Output) -> String {
    String::from_utf8(out.stderr.clone()).unwrap()
}

#[test]
fn a_us_west_2_pool_plans_with_region_us_west_2_at_a_us_west_2_price() {
    let path = scratch("west", &pinned(&["us-west-2b"]));
    let out = simulate(&path, &["--output", "json", "--region", "us-west-2"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report = json(&out);
    assert_eq!(report.node_claims.len(), 1);
    let c = &report.node_claims[0];
    assert_eq!(c.instance_type, "m5.large");
    assert_eq!(c.zone, "us-west-2b");
    let want = regions::table()
        .unwrap()
        .price("m5.large", "us-west-2")
        .unwrap();
    assert_eq!(c.price_per_hour, want);
    assert_eq!(
        c.labels
            .get("topology.kubernetes.io/region")
            .map(String::as_str),
        Some("us-west-2")
    );

    // ADZE_REGION is read as --region is.
    let by_env = Command::new(env!("CARGO_BIN_EXE_adze-provisioner"))
        .arg("simulate")
        .arg(&path)
        .args(["--output", "json"])
        .env("ADZE_REGION", "us-west-2")
        .output()
        .expect("the binary runs");
    assert!(by_env.status.success(), "{}", stderr(&by_env));
    assert_eq!(json(&by_env).node_claims[0].zone, "us-west-2b");

    // The same pool in eu-west-1's zones is planned at eu-west-1's price, which differs.
    let eu = scratch("eu", &pinned(&["eu-west-1a"]));
    let out = simulate(&eu, &["--output", "json", "--region", "eu-west-1"]);
    let _ = std::fs::remove_file(&eu);
    assert!(out.status.success(), "{}", stderr(&out));
    let eu_price = json(&out).node_claims[0].price_per_hour;
    assert_eq!(eu_price, 0.107);
    assert_ne!(eu_price, want);

    // Without --region (us-east-1), the pool's zones are named as us-west-2's.
    let out = simulate(&path, &["--output", "json"]);
    let _ = std::fs::remove_file(&path);
    assert!(!out.status.success());
    assert_eq!(out.stdout, b"", "no plan on a refusal");
    let err = stderr(&out);
    for want in [
        "NodePool west",
        "spec.template.spec.requirements[0]",
        "zones us-west-2b are in us-west-2",
        "plans in us-east-1",
        "run simulate --region us-west-2",
    ] {
        assert!(err.contains(want), "{want:?} not in {err}");
    }
}

#[test]
fn the_table_names_a_non_default_region() {
    let out = simulate(&inflate(), &["--region", "eu-central-1"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("embedded EC2 catalog for eu-central-1"),
        "{text}"
    );
    assert!(text.contains("eu-central-1"), "{text}");
    assert!(!text.contains("us-east-1"), "{text}");
}

#[test]
fn region_us_east_1_is_the_default_byte_for_byte() {
    let plain = simulate(&inflate(), &[]);
    let named = simulate(&inflate(), &["--region", "us-east-1"]);
    assert!(plain.status.success(), "{}", stderr(&plain));
    // The table ends with the time placement took, which differs run to run.
    let body = |o: &Output| {
        let text = String::from_utf8(o.stdout.clone()).unwrap();
        text.lines()
            .filter(|l| !l.contains("ms"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(body(&plain), body(&named));
    assert!(body(&plain).contains("embedded EC2 catalog ("));
}

#[test]
fn unknown_and_hostile_regions_are_refused_naming_the_flag() {
    for bad in [
        "mars-1",
        "us-west-2a",
        "US-EAST-1",
        "",
        "us-east-1\u{1b}[2J",
        "../../etc/passwd",
    ] {
        let out = simulate(&inflate(), &["--region", bad]);
        assert!(!out.status.success(), "{bad:?} accepted");
        assert_eq!(out.stdout, b"", "{bad:?}: no plan");
        let err = stderr(&out);
        assert!(err.contains("--region"), "{err}");
        assert!(err.contains("unknown region"), "{err}");
        assert!(
            err.contains("us-east-1, ") && err.contains("us-west-2"),
            "known regions listed: {err}"
        );
        assert!(!err.contains('\u{1b}'), "escape echoed raw: {err:?}");
    }
}

#[test]
fn an_instance_catalog_still_replaces_the_embedded_one_and_refuses_another_region() {
    let yaml = r#"apiVersion: adze.sh/v1alpha1
kind: InstanceCatalog
metadata: {name: mine}
instanceTypes:
  - name: small
    cpu: "2"
    memory: 4Gi
    pods: 20
    arch: amd64
    offerings:
      - {zone: us-west-2a, capacityType: on-demand, price: 0.01}
---
apiVersion: adze.sh/v1
kind: NodePool
metadata: {name: west}
spec:
  template:
    spec:
      nodeClassRef: {group: aws.adze.sh, kind: EC2NodeClass, name: default}
      requirements:
        - {key: topology.kubernetes.io/zone, operator: In, values: ["us-west-2a"]}
---
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
    - name: c
      image: pause
      resources: {requests: {cpu: 500m}}
"#;
    let path = scratch("custom", yaml);
    // The catalog's own zones are used: its us-west-2 zone is no refusal in us-east-1.
    let out = simulate(&path, &["--output", "json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report = json(&out);
    assert_eq!(report.node_claims[0].instance_type, "small");
    assert_eq!(report.node_claims[0].zone, "us-west-2a");
    assert_eq!(report.node_claims[0].price_per_hour, 0.01);
    // Another region besides it would change nothing, so it is refused, not ignored.
    let out = simulate(&path, &["--output", "json", "--region", "us-west-2"]);
    let _ = std::fs::remove_file(&path);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("InstanceCatalog mine"), "{err}");
    assert!(
        err.contains("--region: \"us-west-2\" has no effect with an InstanceCatalog"),
        "{err}"
    );
}

#[test]
fn a_pool_pinned_to_another_region_is_refused_naming_it() {
    let yaml = pinned(&["us-east-1a"]).replace(
        "topology.kubernetes.io/zone, operator: In, values: [\"us-east-1a\"]",
        "topology.kubernetes.io/region, operator: In, values: [\"eu-west-1\"]",
    );
    assert!(yaml.contains("eu-west-1"));
    let path = scratch("region-pin", &yaml);
    let refused = simulate(&path, &["--output", "json"]);
    let planned = simulate(&path, &["--output", "json", "--region", "eu-west-1"]);
    let _ = std::fs::remove_file(&path);
    assert!(!refused.status.success());
    let err = stderr(&refused);
    assert!(
        err.contains("region eu-west-1, but this simulation plans in us-east-1; run simulate --region eu-west-1"),
        "{err}"
    );
    assert!(planned.status.success(), "{}", stderr(&planned));
    assert_eq!(json(&planned).node_claims[0].price_per_hour, 0.107);

    // A zone of the region planned in that the catalog does not offer is not blamed on
    // another region: the plan is made, and leaves the pod unschedulable.
    let path = scratch("home-zone", &pinned(&["us-east-1d"]));
    let out = simulate(&path, &["--output", "json"]);
    let _ = std::fs::remove_file(&path);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(!stderr(&out).contains("run simulate --region"));
    assert_eq!(json(&out).unschedulable.len(), 1);
}
