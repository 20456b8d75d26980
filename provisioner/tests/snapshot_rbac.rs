//! The snapshot's read-only ClusterRole (the chart's snapshotReader and
//! manifests/rbac/snapshot-reader.yaml) grants get, list and watch on exactly what the
//! snapshot reads, and no other verb.

use std::collections::BTreeSet;

use adze_provisioner::snapshot::READS;
use serde::Deserialize;
use serde_json::Value;

const READ_VERBS: [&str; 3] = ["get", "list", "watch"];

fn root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The ClusterRole of a multi-document YAML text.
fn cluster_role(text: &str) -> Value {
    serde_yaml::Deserializer::from_str(text)
        .map(|d| Value::deserialize(d).expect("YAML"))
        .find(|d| d["kind"] == "ClusterRole")
        .expect("a ClusterRole")
}

/// (group, resource, verb) of every rule.
fn grants(role: &Value) -> BTreeSet<(String, String, String)> {
    let mut out = BTreeSet::new();
    for r in role["rules"].as_array().expect("rules") {
        assert!(
            r.get("resourceNames").is_none() && r.get("nonResourceURLs").is_none(),
            "{r}"
        );
        for g in r["apiGroups"].as_array().unwrap() {
            for res in r["resources"].as_array().unwrap() {
                for v in r["verbs"].as_array().unwrap() {
                    out.insert((
                        g.as_str().unwrap().to_string(),
                        res.as_str().unwrap().to_string(),
                        v.as_str().unwrap().to_string(),
                    ));
                }
            }
        }
    }
    out
}

fn expected() -> BTreeSet<(String, String, String)> {
    READS
        .iter()
        .flat_map(|(g, r)| READ_VERBS.map(|v| (g.to_string(), r.to_string(), v.to_string())))
        .collect()
}

#[test]
fn the_manifest_role_reads_exactly_what_the_snapshot_lists_and_writes_nothing() {
    let text = std::fs::read_to_string(root().join("manifests/rbac/snapshot-reader.yaml")).unwrap();
    let have = grants(&cluster_role(&text));
    for (g, r, v) in &have {
        assert!(
            READ_VERBS.contains(&v.as_str()),
            "write verb {v} on {g}/{r}"
        );
        assert!(!r.contains('/'), "subresource {r}: none is read");
    }
    assert_eq!(have, expected());
}

#[test]
fn the_chart_role_equals_the_manifest_role() {
    let tpl =
        std::fs::read_to_string(root().join("charts/adze/templates/rbac-snapshot-reader.yaml"))
            .unwrap();
    // The rules hold no template directive: the lines between them are plain YAML.
    let plain: String = tpl
        .lines()
        .filter(|l| !l.trim_start().starts_with("{{"))
        .map(|l| {
            l.split(" {{")
                .next()
                .unwrap_or(l)
                .replace("{{ $fullname }}", "x")
        })
        .collect::<Vec<_>>()
        .join("\n");
    let have = grants(&cluster_role(&plain));
    assert_eq!(have, expected());
    let values = std::fs::read_to_string(root().join("charts/adze/values.yaml")).unwrap();
    assert!(
        values.contains("snapshotReader:\n  # Create the ClusterRole, its ServiceAccount and the binding.\n  enabled: false"),
        "the toggle and its default, as docs/security.md describes them"
    );
}
