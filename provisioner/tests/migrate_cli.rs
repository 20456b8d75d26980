//! `adze-provisioner migrate` as a user runs it: kubectl's output piped in, the exit status
//! gating `kubectl apply`.

use std::io::Write;
use std::process::{Command, Output, Stdio};

const GENERAL: &str = include_str!("../src/migrate/testdata/karpenter-general.yaml");
const LEGACY: &str = include_str!("../src/migrate/testdata/karpenter-legacy.yaml");
/// `kubectl get nodepools.karpenter.sh,ec2nodeclasses.karpenter.k8s.aws -o yaml` verbatim in
/// shape: `kind: List`, items with defaults, server-set metadata, finalizers and status.
const KUBECTL_LIST: &str = include_str!("../src/migrate/testdata/kubectl-get-list.yaml");

fn migrate(stdin: &str, extra: &[&str]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_adze-provisioner"))
        .arg("migrate")
        .args(extra)
        .arg("-")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A usage error exits before reading stdin; the broken pipe that leaves is not the test's
    // concern, the exit status and output are.
    match child.stdin.take().unwrap().write_all(stdin.as_bytes()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        r => r.unwrap(),
    }
    child.wait_with_output().unwrap()
}

/// One NodePool in a `kind: List`, as `kubectl get nodepools.karpenter.sh -o json` prints it.
const CLEAN_LIST_JSON: &str = r#"{
  "apiVersion": "v1",
  "kind": "List",
  "items": [
    {
      "apiVersion": "karpenter.sh/v1",
      "kind": "NodePool",
      "metadata": {"name": "default", "uid": "5e0d", "resourceVersion": "7",
                   "creationTimestamp": "2026-10-01T08:00:00Z"},
      "spec": {"template": {"spec": {
        "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
        "requirements": [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}]
      }}},
      "status": {"conditions": [{"type": "Ready", "status": "True"}]}
    }
  ],
  "metadata": {"resourceVersion": ""}
}"#;

#[test]
fn a_clean_kubectl_list_converts_and_exits_zero() {
    let out = migrate(CLEAN_LIST_JSON, &[]);
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stdout.contains("apiVersion: adze.sh/v1"), "{stdout}");
    assert!(stdout.contains("adze.sh/capacity-type"), "{stdout}");
    assert!(!stdout.contains("resourceVersion"), "{stdout}");
    assert!(
        stderr.contains("migrated 1 object(s), 0 not converted; 0 item(s) need action"),
        "{stderr}"
    );
}

#[test]
fn items_needing_action_exit_two_unless_allowed() {
    let input = format!("{GENERAL}---\n{LEGACY}");
    let out = migrate(&input, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("ACTION:") && stderr.contains("--allow-actions"),
        "{stderr}"
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("kind: NodePool"),
        "the conversion is printed even when it needs action"
    );
    let allowed = migrate(&input, &["--allow-actions"]);
    assert_eq!(allowed.status.code(), Some(0));
    assert_eq!(allowed.stdout, out.stdout);
}

#[test]
fn unreadable_input_exits_one() {
    let out = migrate("apiVersion: [unclosed", &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not valid YAML"));
}

fn yaml_docs(stdout: &[u8]) -> Vec<serde_json::Value> {
    use serde::Deserialize;
    serde_yaml::Deserializer::from_slice(stdout)
        .map(|d| serde_json::Value::deserialize(d).unwrap())
        .filter(|v| !v.is_null())
        .collect()
}

fn kubectl_list_json() -> serde_json::Value {
    serde_yaml::from_str(KUBECTL_LIST).unwrap()
}

#[test]
fn kubectls_yaml_list_converts_every_item_and_drops_what_the_server_set() {
    let out = migrate(KUBECTL_LIST, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("migrated 2 object(s), 0 not converted; 0 item(s) need action"),
        "{stderr}"
    );
    let docs = yaml_docs(&out.stdout);
    let kinds: Vec<(&str, &str, &str)> = docs
        .iter()
        .map(|d| {
            (
                d["apiVersion"].as_str().unwrap(),
                d["kind"].as_str().unwrap(),
                d["metadata"]["name"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("adze.sh/v1", "NodePool", "default"),
            ("aws.adze.sh/v1", "EC2NodeClass", "default"),
        ]
    );
    for d in &docs {
        let meta: Vec<&String> = d["metadata"].as_object().unwrap().keys().collect();
        assert_eq!(meta, ["name"], "only the name survives here: {d}");
        assert!(d.get("status").is_none(), "{d}");
    }
    let text = String::from_utf8_lossy(&out.stdout);
    for server_set in [
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "managedFields",
        "finalizers",
        "status",
        "last-applied-configuration",
    ] {
        assert!(!text.contains(server_set), "{server_set} in\n{text}");
    }
    let pool = &docs[0]["spec"];
    assert_eq!(
        pool["template"]["spec"]["requirements"][0]["key"],
        "adze.sh/capacity-type"
    );
    assert_eq!(
        pool["template"]["spec"]["nodeClassRef"]["group"],
        "aws.adze.sh"
    );
    assert_eq!(pool["disruption"]["budgets"][0]["nodes"], "10%");
    assert_eq!(
        docs[1]["spec"]["amiSelectorTerms"][0]["alias"],
        "al2023@latest"
    );
}

#[test]
fn kubectls_json_list_and_concatenated_objects_convert_like_the_yaml_list() {
    let yaml = migrate(KUBECTL_LIST, &[]);
    assert_eq!(yaml.status.code(), Some(0));
    let list = kubectl_list_json();
    let as_list = migrate(&serde_json::to_string_pretty(&list).unwrap(), &[]);
    assert_eq!(
        as_list.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&as_list.stderr)
    );
    assert_eq!(as_list.stdout, yaml.stdout);
    // `kubectl get nodepool default -o json; kubectl get ec2nodeclass default -o json`.
    let one_by_one: String = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| serde_json::to_string_pretty(i).unwrap() + "\n")
        .collect();
    let concatenated = migrate(&one_by_one, &[]);
    assert_eq!(
        concatenated.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&concatenated.stderr)
    );
    assert_eq!(concatenated.stdout, yaml.stdout);
}

#[test]
fn an_item_that_is_not_converted_exits_two_unless_allowed() {
    let mut list = kubectl_list_json();
    list["items"].as_array_mut().unwrap().push(serde_json::json!({
        "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
        "metadata": {"name": "default-x7k2p", "uid": "9f1c", "resourceVersion": "48301"},
        "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}},
    }));
    let input = serde_yaml::to_string(&list).unwrap();
    let out = migrate(&input, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("migrated 2 object(s), 1 not converted")
            && stderr.contains("ACTION: NodeClaim/default-x7k2p"),
        "{stderr}"
    );
    assert_eq!(yaml_docs(&out.stdout).len(), 2, "the rest is still printed");
    let allowed = migrate(&input, &["--allow-actions"]);
    assert_eq!(allowed.status.code(), Some(0));
    assert_eq!(allowed.stdout, out.stdout);
    assert!(String::from_utf8_lossy(&allowed.stderr).contains("ACTION: NodeClaim/default-x7k2p"));
}

#[test]
fn an_empty_kubectl_list_converts_nothing_and_exits_two() {
    let empty = "apiVersion: v1\nitems: []\nkind: List\nmetadata:\n  resourceVersion: \"\"\n";
    let out = migrate(empty, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("nothing converted"), "{stderr}");
    assert!(out.stdout.is_empty());
    assert_eq!(migrate(empty, &["--allow-actions"]).status.code(), Some(0));
}

/// What `simulate` and the CRD would refuse is an ACTION at its path, never a clean exit.
#[test]
fn values_adze_would_refuse_are_actions_at_their_path_and_long_names_are_cut() {
    let pool = |name: &str, extra: &str| {
        format!(
            "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {{name: {name}}}\nspec:\n  template:\n    spec:\n      nodeClassRef: {{group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}}\n{extra}"
        )
    };
    for (extra, expected) in [
        (
            "  limits: {cpu: \"1e100000\"}\n",
            "ACTION: NodePool/huge spec.limits[cpu]: invalid quantity \"1e100000\"",
        ),
        (
            "  disruption:\n    budgets: [{nodes: \"1\", schedule: \"*/0 * * * *\", duration: 1h}]\n",
            "ACTION: NodePool/huge spec.disruption.budgets[0].schedule: cron schedule \"*/0 * * * *\"",
        ),
    ] {
        let out = migrate(&pool("huge", extra), &[]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(expected), "{expected:?} not in {stderr}");
    }

    let long = "x".repeat(10_000);
    let out = migrate(&pool(&long, ""), &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "ACTION: NodePool/{}... (10000 characters) metadata.name: may be at most 63 characters, got 10000",
            "x".repeat(64)
        )),
        "{stderr}"
    );
    assert!(
        stderr.len() < 2_000,
        "the name is echoed back: {} bytes",
        stderr.len()
    );
}

/// A Karpenter v1 EC2NodeClass that keeps Karpenter's node role, as most do.
const KARPENTER_CLASS: &str = "apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  role: KarpenterNodeRole-demo
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]
";

#[test]
fn a_kept_karpenter_node_role_is_reported_with_the_stack_parameter_and_the_flag() {
    let out = migrate(KARPENTER_CLASS, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let docs = yaml_docs(&out.stdout);
    assert_eq!(docs[0]["spec"]["role"], "KarpenterNodeRole-demo");
    assert!(
        stderr.contains(
            "note: EC2NodeClass/default spec.role KarpenterNodeRole-demo kept: Adze's stack"
        ) && stderr.contains("ExtraNodeRoleArns")
            && stderr.contains("--node-role AdzeNode-<cluster>"),
        "{stderr}"
    );
}

#[test]
fn node_role_rewrites_every_role_and_names_the_path_and_the_old_value() {
    let input = format!(
        "{KARPENTER_CLASS}---\n{}",
        KARPENTER_CLASS
            .replace("name: default", "name: gpu")
            .replace("KarpenterNodeRole-demo", "GpuNodes")
    );
    let out = migrate(&input, &["--node-role", "AdzeNode-demo"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let docs = yaml_docs(&out.stdout);
    assert_eq!(docs.len(), 2);
    for d in &docs {
        assert_eq!(d["spec"]["role"], "AdzeNode-demo", "{d}");
    }
    for (class, old) in [("default", "KarpenterNodeRole-demo"), ("gpu", "GpuNodes")] {
        assert!(
            stderr.contains(&format!(
                "changed: EC2NodeClass/{class} spec.role: AdzeNode-demo (--node-role), was {old}"
            )),
            "{stderr}"
        );
    }
    assert!(!stderr.contains("kept"), "{stderr}");
    // A class naming an instance profile has no role to rewrite.
    let profile = KARPENTER_CLASS.replace(
        "role: KarpenterNodeRole-demo",
        "instanceProfile: KarpenterNodeInstanceProfile-demo",
    );
    let out = migrate(&profile, &["--node-role", "AdzeNode-demo"]);
    let docs = yaml_docs(&out.stdout);
    assert!(docs[0]["spec"].get("role").is_none(), "{}", docs[0]);
    assert_eq!(
        docs[0]["spec"]["instanceProfile"],
        "KarpenterNodeInstanceProfile-demo"
    );
    // An ARN is refused, naming the flag.
    let out = migrate(
        KARPENTER_CLASS,
        &[
            "--node-role",
            "arn:aws:iam::111122223333:role/AdzeNode-demo",
        ],
    );
    assert_eq!(out.status.code(), Some(2), "clap's usage error");
    assert!(String::from_utf8_lossy(&out.stderr).contains("--node-role"));
}

#[test]
fn every_conversion_says_how_pods_selecting_karpenter_labels_keep_working() {
    let out = migrate(CLEAN_LIST_JSON, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("provisioner.karpenterLabels is true (--karpenter-labels)")
            && stderr
                .contains("kubectl get pods -A -o yaml | grep -E 'karpenter\\.(sh|k8s\\.aws)/'"),
        "{stderr}"
    );
    // Nothing converted: nothing to say about workloads.
    let empty = migrate(r#"{"apiVersion": "v1", "kind": "List", "items": []}"#, &[]);
    assert!(!String::from_utf8_lossy(&empty.stderr).contains("karpenterLabels"));
}
