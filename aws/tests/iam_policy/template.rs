//! Reading deploy/aws/adze.yaml: the controller policy is one `Fn::Sub` JSON string (its
//! condition keys carry the cluster name), resolved here with placeholder values.

use serde_yaml::Value as Yaml;

/// Placeholder values for the template's parameters and pseudo-parameters.
pub const CLUSTER: &str = "CLUSTER_NAME";
pub const REGION: &str = "REGION";
const VARIABLES: &[(&str, &str)] = &[
    ("ClusterName", CLUSTER),
    ("AWS::Partition", "aws"),
    ("AWS::Region", REGION),
    ("AWS::AccountId", "ACCOUNT_ID"),
    ("AWS::URLSuffix", "amazonaws.com"),
    (
        "NodeRole.Arn",
        "arn:aws:iam::ACCOUNT_ID:role/AdzeNode-CLUSTER_NAME",
    ),
    (
        "InterruptionQueue.Arn",
        "arn:aws:sqs:REGION:ACCOUNT_ID:adze-CLUSTER_NAME",
    ),
    ("OidcProvider", "OIDC_PROVIDER"),
    ("ServiceAccountNamespace", "NAMESPACE"),
    ("ServiceAccountName", "SERVICE_ACCOUNT"),
];

pub fn load() -> Yaml {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../deploy/aws/adze.yaml");
    let text = std::fs::read_to_string(path).expect("deploy/aws/adze.yaml exists");
    serde_yaml::from_str(&text).expect("deploy/aws/adze.yaml is YAML (long-form intrinsics)")
}

/// A `Fn::Sub` string with every `${...}` replaced; panics on a variable it does not know,
/// so a new one in the template is noticed here.
pub fn substitute(text: &str) -> String {
    let mut out = text.to_string();
    for (name, value) in VARIABLES {
        out = out.replace(&format!("${{{name}}}"), value);
    }
    if let Some(at) = out.find("${") {
        panic!(
            "unknown Fn::Sub variable at {:?}",
            &out[at..at + 40.min(out.len() - at)]
        );
    }
    out
}

pub fn resource<'a>(template: &'a Yaml, name: &str) -> &'a Yaml {
    let r = &template["Resources"][name];
    assert!(!r.is_null(), "the template has no resource {name}");
    r
}

/// The ControllerPolicy's document, resolved.
pub fn controller_policy(template: &Yaml) -> serde_json::Value {
    let doc = &resource(template, "ControllerPolicy")["Properties"]["PolicyDocument"];
    let text = doc["Fn::Sub"]
        .as_str()
        .expect("ControllerPolicy's PolicyDocument is one Fn::Sub string");
    serde_json::from_str(&substitute(text)).expect("the controller policy is JSON")
}

/// A YAML value as JSON (for documents written as YAML maps).
pub fn json(v: &Yaml) -> serde_json::Value {
    serde_json::to_value(v).expect("YAML maps to JSON")
}
