//! The agent's ValidatingAdmissionPolicy (charts/adze/files/agent-admission-policy.yaml, embedded
//! as it is by charts/adze/templates/agent-admission-policy.yaml), evaluated with the `cel`
//! interpreter against admission requests as a 1.30+ apiserver builds them. Adze's e2e control
//! plane is 1.20, which has no ValidatingAdmissionPolicy: this test is the only place these
//! expressions run (docs/security.md says so).

// The helpers cel_rules.rs uses; this file needs only the JSON-to-CEL conversion.
#[allow(dead_code)]
mod cel_harness;

use std::collections::HashMap;

use cel_harness::to_cel;
use kube::core::cel::{KubeCelExt, cel};
use serde_json::{Value, json};

const NODE_NAME_KEY: &str = "authentication.kubernetes.io/node-name";

fn policy() -> Value {
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let text = std::fs::read_to_string(root.join("charts/adze/files/agent-admission-policy.yaml"))
        .unwrap();
    serde_yaml::from_str(&text).unwrap()
}

/// What the policy answers: None when every validation passes, else the first failing one's
/// message (messageExpression evaluated as the apiserver would).
fn admit(request: &Value, object: &Value, old: &Value) -> Option<String> {
    let policy = policy();
    let mut base = cel::Context::default();
    base.register_all();
    let mut scope = base.new_inner_scope();
    scope.add_variable_from_value("request", to_cel(request));
    scope.add_variable_from_value("object", to_cel(object));
    scope.add_variable_from_value("oldObject", to_cel(old));
    // Variables in order, each seeing the ones before it.
    let mut variables: HashMap<String, cel::Value> = HashMap::new();
    for v in policy["variables"].as_array().unwrap() {
        scope.add_variable_from_value("variables", cel::Value::Map(variables.clone().into()));
        let program = cel::Program::compile(v["expression"].as_str().unwrap()).unwrap();
        let value = program.execute(&scope).unwrap();
        variables.insert(v["name"].as_str().unwrap().to_string(), value);
    }
    scope.add_variable_from_value("variables", cel::Value::Map(variables.into()));
    for v in policy["validations"].as_array().unwrap() {
        let expr = v["expression"].as_str().unwrap();
        let program = cel::Program::compile(expr).unwrap_or_else(|e| panic!("{expr}: {e}"));
        match program.execute(&scope) {
            Ok(cel::Value::Bool(true)) => {}
            Ok(cel::Value::Bool(false)) => {
                assert_eq!(v["reason"], "Forbidden");
                return Some(match v["messageExpression"].as_str() {
                    Some(m) => match cel::Program::compile(m).unwrap().execute(&scope).unwrap() {
                        cel::Value::String(s) => (*s).clone(),
                        other => panic!("messageExpression returned {other:?}"),
                    },
                    None => v["message"].as_str().unwrap().to_string(),
                });
            }
            other => panic!("{expr} returned {other:?}, not a bool"),
        }
    }
    None
}

/// An admission request from the agent's ServiceAccount, its token bound to a pod on `node`
/// (None: a token without the node-name extra, e.g. before 1.30).
fn request(node: Option<&str>, resource: &str, sub: &str) -> Value {
    let mut extra = json!({"authentication.kubernetes.io/pod-name": ["adze-agent-x7k2p"]});
    if let Some(n) = node {
        extra[NODE_NAME_KEY] = json!([n]);
    }
    json!({
        "operation": "UPDATE",
        "resource": {"group": if resource == "nodes" { "" } else { "adze.sh" }, "version": "v1", "resource": resource},
        "subResource": sub,
        "userInfo": {"username": "system:serviceaccount:adze-system:adze-agent",
            "groups": ["system:serviceaccounts", "system:authenticated"], "extra": extra},
    })
}

fn node(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
        "spec": {"taints": [{"key": "adze.sh/interrupted", "effect": "NoSchedule"}]}})
}

fn claim(name: &str, node: Option<&str>) -> Value {
    let mut c = json!({"apiVersion": "adze.sh/v1", "kind": "NodeClaim", "metadata": {"name": name},
        "status": {"conditions": [{"type": "Interrupted", "status": "True"}]}});
    if let Some(n) = node {
        c["status"]["nodeName"] = json!(n);
    }
    c
}

#[test]
fn the_agent_may_patch_its_own_node_and_no_other() {
    let own = request(Some("ip-10-0-1-5"), "nodes", "");
    assert_eq!(
        admit(&own, &node("ip-10-0-1-5"), &node("ip-10-0-1-5")),
        None
    );
    let status = request(Some("ip-10-0-1-5"), "nodes", "status");
    assert_eq!(
        admit(&status, &node("ip-10-0-1-5"), &node("ip-10-0-1-5")),
        None
    );
    assert_eq!(
        admit(&own, &node("ip-10-0-9-9"), &node("ip-10-0-9-9")).as_deref(),
        Some("the Adze agent on node ip-10-0-1-5 may change only its own Node, not ip-10-0-9-9")
    );
}

#[test]
fn the_agent_may_write_the_status_of_its_own_nodeclaim_only() {
    let req = request(Some("ip-10-0-1-5"), "nodeclaims", "status");
    let mine = claim("default-abc", Some("ip-10-0-1-5"));
    assert_eq!(admit(&req, &mine, &mine), None);
    let theirs = claim("default-xyz", Some("ip-10-0-9-9"));
    let refused = admit(&req, &theirs, &theirs).expect("refused");
    assert!(refused.contains("not default-xyz"), "{refused}");
    // Claiming another node's NodeClaim by rewriting status.nodeName to one's own node.
    assert!(admit(&req, &mine, &theirs).is_some());
    // Moving one's own NodeClaim to another node.
    assert!(admit(&req, &theirs, &mine).is_some());
    // A claim whose node has not registered yet (no status.nodeName): no node's to write.
    let unregistered = claim("default-new", None);
    assert!(admit(&req, &unregistered, &unregistered).is_some());
}

#[test]
fn credentials_without_a_node_name_are_refused_naming_the_way_out() {
    let req = request(None, "nodes", "");
    let refused = admit(&req, &node("ip-10-0-1-5"), &node("ip-10-0-1-5")).expect("refused");
    assert!(refused.contains(NODE_NAME_KEY), "{refused}");
    assert!(
        refused.contains("agent.admissionPolicy=disabled"),
        "{refused}"
    );
    // Two node names (not something the apiserver issues) are not one's own node either.
    let mut two = request(Some("a"), "nodes", "");
    two["userInfo"]["extra"][NODE_NAME_KEY] = json!(["a", "b"]);
    assert!(admit(&two, &node("a"), &node("a")).is_some());
}

#[test]
fn the_template_embeds_the_policy_file_for_the_agents_writes_only() {
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let template =
        std::fs::read_to_string(root.join("charts/adze/templates/agent-admission-policy.yaml"))
            .unwrap();
    assert!(template.contains(r#".Files.Get "files/agent-admission-policy.yaml" | indent 2"#));
    assert!(template.contains(
        "request.userInfo.username == 'system:serviceaccount:{{ .Release.Namespace }}:{{ $fullname }}-agent'"
    ));
    for needle in [
        "resources: [nodes, nodes/status]",
        "resources: [nodeclaims/status]",
        "operations: [UPDATE]",
        "validationActions: [Deny]",
        "failurePolicy: Fail",
        r#".Capabilities.APIVersions.Has "admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy""#,
    ] {
        assert!(template.contains(needle), "template lacks {needle}");
    }
    // The file holds exactly what the template expects under spec: variables and validations.
    let mut keys: Vec<String> = policy().as_object().unwrap().keys().cloned().collect();
    keys.sort();
    assert_eq!(keys, ["validations", "variables"]);
}
