//! The IAM policy users copy from docs/install.md must allow every AWS API call this crate makes.
//! AWS is not reachable here (moto does not enforce IAM), so the check is static: collect the
//! SDK operations called in `src/` and look each one up in the documented policy. A new call
//! without a policy line fails here instead of as `UnauthorizedOperation` on a user's cluster.

use std::collections::BTreeSet;
use std::path::Path;

/// SDK client field/variable names → IAM service prefix.
const CLIENTS: &[(&str, &str)] = &[
    ("ec2", "ec2"),
    ("ssm", "ssm"),
    ("sqs", "sqs"),
    ("iam", "iam"),
    ("pricing", "pricing"),
    ("eks", "eks"),
];

/// Methods on a client that are not API operations.
const NOT_OPERATIONS: &[&str] = &["clone", "config"];

/// `describe_instance_type_offerings` → `DescribeInstanceTypeOfferings`.
fn pascal(snake: &str) -> String {
    snake
        .split('_')
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect()
}

/// IAM actions (`ec2:CreateFleet`) for calls shaped `<client>.<operation>()` in `source`, where
/// the call may be split over lines (`.ec2\n    .create_fleet()`).
fn operations_in(source: &str) -> BTreeSet<String> {
    // Join method chains split over lines, keeping word boundaries elsewhere.
    let squashed = source
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace(" .", ".")
        .replace(". ", ".");
    let bytes = squashed.as_bytes();
    let mut found = BTreeSet::new();
    for &(client, service) in CLIENTS {
        let needle = format!("{client}.");
        for (at, _) in squashed.match_indices(&needle) {
            let before = at.checked_sub(1).map(|i| bytes[i]);
            if before.is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_') {
                continue; // e.g. `my_ec2.` or `aws_sdk_ec2.`
            }
            let rest = &squashed[at + needle.len()..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_')
                .collect();
            if name.is_empty()
                || !rest[name.len()..].starts_with("()")
                || NOT_OPERATIONS.contains(&name.as_str())
            {
                continue;
            }
            found.insert(format!("{service}:{}", pascal(&name)));
        }
    }
    found
}

fn sources(dir: &Path, out: &mut Vec<(String, String)>) {
    for entry in std::fs::read_dir(dir).expect("read src dir") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).expect("read source");
            out.push((path.display().to_string(), text));
        }
    }
}

/// The JSON policy document inside docs/install.md (the fenced block with a `Statement`).
fn documented_policy() -> serde_json::Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/install.md");
    let doc = std::fs::read_to_string(path).expect("docs/install.md exists");
    let block = doc
        .split("```json")
        .skip(1)
        .filter_map(|b| b.split("```").next())
        .find(|b| b.contains("\"Statement\""))
        .expect("docs/install.md has a ```json block with the IAM policy");
    serde_json::from_str(block).expect("the documented IAM policy is valid JSON")
}

fn allowed_actions(policy: &serde_json::Value) -> BTreeSet<String> {
    let mut actions = BTreeSet::new();
    for statement in policy["Statement"].as_array().expect("Statement array") {
        assert_eq!(
            statement["Effect"], "Allow",
            "only Allow statements expected"
        );
        match &statement["Action"] {
            serde_json::Value::String(a) => {
                actions.insert(a.clone());
            }
            serde_json::Value::Array(list) => {
                actions.extend(list.iter().filter_map(|a| a.as_str().map(str::to_string)));
            }
            other => panic!("Action must be a string or a list, got {other}"),
        }
    }
    actions
}

#[test]
fn the_scanner_finds_calls_split_over_lines_and_skips_non_operations() {
    let src = "let r = self\n    .clients\n    .ec2\n    .create_fleet()\n    .send();\n\
               ec2.describe_subnets(); clients.sqs.clone(); aws_sdk_ec2.x(); match ssm.get_parameter().name(n)";
    let found: Vec<String> = operations_in(src).into_iter().collect();
    assert_eq!(
        found,
        ["ec2:CreateFleet", "ec2:DescribeSubnets", "ssm:GetParameter"]
    );
}

#[test]
fn documented_iam_policy_allows_every_aws_call_the_provider_makes() {
    let mut files = Vec::new();
    sources(
        Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/src")),
        &mut files,
    );
    let mut called: BTreeSet<(String, String)> = BTreeSet::new();
    for (file, text) in &files {
        // The fault proxy forwards test traffic to moto; it is not the provider calling AWS.
        if file.ends_with("fault_proxy.rs") {
            continue;
        }
        for op in operations_in(text) {
            called.insert((op, file.clone()));
        }
    }
    let names: BTreeSet<&str> = called.iter().map(|(op, _)| op.as_str()).collect();
    // Guard against the scanner silently finding nothing after a refactor.
    for must in [
        "ec2:CreateFleet",
        "ec2:TerminateInstances",
        "ec2:DescribeInstanceTypes",
        "ssm:GetParameter",
        "sqs:ReceiveMessage",
    ] {
        assert!(
            names.contains(must),
            "scanner no longer sees {must}; found {names:?}"
        );
    }
    let allowed = allowed_actions(&documented_policy());
    let missing: Vec<String> = called
        .iter()
        .filter(|(op, _)| !allowed.contains(op))
        .map(|(op, file)| format!("{op} (called in {file})"))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/install.md's IAM policy does not allow: {missing:?}"
    );
}

#[test]
fn documented_launch_statements_require_the_cluster_tag_that_launches_set() {
    // Creating instances, fleets and launch templates is allowed only with the cluster's
    // ownership tag on the request; the provider must therefore tag every resource type a
    // launch creates (checked against moto in tests/moto.rs). Here: the policy really says so.
    let policy = documented_policy();
    let launch = policy["Statement"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["Sid"] == "Launch")
        .expect("a Launch statement");
    let condition = launch["Condition"]["StringEquals"]
        .as_object()
        .expect("Launch has a StringEquals condition");
    assert!(
        condition.contains_key("aws:RequestTag/kubernetes.io/cluster/CLUSTER_NAME"),
        "Launch must be scoped by the cluster tag, got {condition:?}"
    );
}
