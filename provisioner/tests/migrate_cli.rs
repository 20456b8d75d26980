//! `adze-provisioner migrate` as a user runs it: kubectl's output piped in, the exit status
//! gating `kubectl apply`.

use std::io::Write;
use std::process::{Command, Output, Stdio};

const GENERAL: &str = include_str!("../src/migrate/testdata/karpenter-general.yaml");
const LEGACY: &str = include_str!("../src/migrate/testdata/karpenter-legacy.yaml");

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
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
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
        stderr.contains("migrated 1 object(s); 0 item(s) need action"),
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
