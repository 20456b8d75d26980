//! The generated CRDs carry the validation we promise, are structural, and use nothing a
//! Kubernetes 1.20 apiserver does not know apart from `x-kubernetes-validations` (whose rules
//! `cel_rules.rs` compiles, costs and evaluates one by one).

mod common;

use adze_api::{EC2NodeClass, NodeClaim, NodePool, crds, labels};
use common::{cel_failures, check_value, fixture_json, schema_of, set};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;
use serde_json::{Map, Value, json};

/// Visits every schema node with its path (`.spec.template`, `[]`, `{}` for map values).
fn walk(schema: &Value, path: &str, visit: &mut dyn FnMut(&str, &Map<String, Value>)) {
    let Some(node) = schema.as_object() else {
        return;
    };
    visit(path, node);
    if let Some(properties) = node.get("properties").and_then(Value::as_object) {
        for (name, child) in properties {
            walk(child, &format!("{path}.{name}"), visit);
        }
    }
    if let Some(items) = node.get("items") {
        walk(items, &format!("{path}[]"), visit);
    }
    if let Some(additional) = node.get("additionalProperties") {
        walk(additional, &format!("{path}{{}}"), visit);
    }
}

/// The schema node at a dotted path such as `.spec.template.spec.requirements[]`.
fn node_at<'a>(crd: &'a Value, path: &str) -> &'a Value {
    let mut node = crd;
    for part in path.trim_start_matches('.').split('.') {
        let (name, items) = match part.strip_suffix("[]") {
            Some(name) => (name, true),
            None => (part, false),
        };
        node = &node["properties"][name];
        if items {
            node = &node["items"];
        }
    }
    assert!(!node.is_null(), "no schema at {path}");
    node
}

fn rules_at(schema: &Value, path: &str) -> Vec<String> {
    node_at(schema, path)["x-kubernetes-validations"]
        .as_array()
        .map(|rules| {
            rules
                .iter()
                .map(|r| r["rule"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

fn enum_at(schema: &Value, path: &str) -> Vec<String> {
    node_at(schema, path)["enum"]
        .as_array()
        .unwrap_or_else(|| panic!("no enum at {path}"))
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn nodepool_crd_carries_enums_patterns_and_cel_rules() {
    let crd = NodePool::crd();
    assert_eq!(crd.spec.group, "adze.sh");
    assert_eq!(crd.spec.scope, "Cluster");
    assert!(
        crd.spec.versions[0]
            .subresources
            .as_ref()
            .unwrap()
            .status
            .is_some()
    );
    let schema = schema_of(&crd);

    let requirement = ".spec.template.spec.requirements[]";
    assert_eq!(
        enum_at(&schema, &format!("{requirement}.operator")),
        [
            "In",
            "NotIn",
            "Exists",
            "DoesNotExist",
            "Gt",
            "Lt",
            "Gte",
            "Lte"
        ]
    );
    let rules = rules_at(&schema, requirement).join("\n");
    assert!(
        rules.contains("self.operator in ['Gt', 'Lt', 'Gte', 'Lte']"),
        "{rules}"
    );
    assert!(
        rules.contains("size(self.values) >= self.minValues"),
        "{rules}"
    );
    let key_rules = rules_at(&schema, &format!("{requirement}.key")).join("\n");
    assert!(
        key_rules.contains("self != 'kubernetes.io/hostname'"),
        "{key_rules}"
    );
    assert!(
        rules_at(&schema, ".spec.template.spec.requirements")[0]
            .contains("r.key != 'adze.sh/nodepool'")
    );
    let label_rules = rules_at(&schema, ".spec.template.metadata.labels").join("\n");
    assert!(
        label_rules.contains("k.startsWith('kubernetes.io/')"),
        "{label_rules}"
    );
    assert!(
        label_rules.contains("k.contains('.adze.sh/')"),
        "{label_rules}"
    );

    assert_eq!(
        enum_at(&schema, ".spec.disruption.consolidationPolicy"),
        ["WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced"]
    );
    assert_eq!(
        enum_at(&schema, ".spec.template.spec.taints[].effect"),
        ["NoSchedule", "PreferNoSchedule", "NoExecute"]
    );
    let budget = node_at(&schema, ".spec.disruption.budgets[]");
    assert_eq!(
        budget["properties"]["nodes"]["pattern"],
        "^((100|[0-9]{1,2})%|[0-9]+)$"
    );
    assert_eq!(budget["properties"]["nodes"]["default"], "10%");
    assert_eq!(
        rules_at(&schema, ".spec.disruption.budgets[]"),
        ["has(self.schedule) == has(self.duration)"]
    );
    assert_eq!(
        node_at(&schema, ".spec.disruption.budgets")["default"],
        json!([{"nodes": "10%"}])
    );
    let expire = node_at(&schema, ".spec.template.spec.expireAfter");
    assert_eq!(expire["default"], "720h");
    assert_eq!(expire["pattern"], adze_api::duration::PATTERN_OR_NEVER);
    assert_eq!(
        node_at(&schema, ".spec.disruption.consolidateAfter")["default"],
        "0s"
    );
    let weight = node_at(&schema, ".spec.weight");
    assert_eq!(
        (weight["minimum"].as_f64(), weight["maximum"].as_f64()),
        (Some(1.0), Some(100.0))
    );
    assert_eq!(
        node_at(&schema, ".spec.template.spec.nodeClassRef")["required"],
        json!(["group", "kind", "name"])
    );
}

#[test]
fn ec2nodeclass_crd_carries_enums_and_cel_rules() {
    let crd = EC2NodeClass::crd();
    assert_eq!(crd.spec.group, "aws.adze.sh");
    assert_eq!(crd.spec.names.plural, "ec2nodeclasses");
    let schema = schema_of(&crd);
    assert_eq!(
        enum_at(&schema, ".spec.amiFamily"),
        [
            "AL2",
            "AL2023",
            "Bottlerocket",
            "Windows2019",
            "Windows2022",
            "Windows2025",
            "Custom"
        ]
    );
    assert_eq!(
        enum_at(&schema, ".spec.metadataOptions.httpTokens"),
        ["required", "optional"]
    );
    let rules = rules_at(&schema, ".spec");
    assert!(
        rules.contains(&"has(self.role) != has(self.instanceProfile)".to_string()),
        "{rules:?}"
    );
    assert_eq!(
        node_at(&schema, ".spec.metadataOptions.httpPutResponseHopLimit")["default"],
        json!(1)
    );
    assert_eq!(
        node_at(&schema, ".spec")["required"],
        json!([
            "amiSelectorTerms",
            "securityGroupSelectorTerms",
            "subnetSelectorTerms"
        ])
    );
}

#[test]
fn nodeclaim_printer_columns_read_the_well_known_labels() {
    let crd = NodeClaim::crd();
    let columns = crd.spec.versions[0]
        .additional_printer_columns
        .as_ref()
        .unwrap();
    let path_of = |name: &str| {
        columns
            .iter()
            .find(|c| c.name == name)
            .unwrap_or_else(|| panic!("no column {name}"))
            .json_path
            .clone()
    };
    let escaped = |key: &str| format!(".metadata.labels.{}", key.replace('.', "\\."));
    assert_eq!(path_of("Type"), escaped(labels::INSTANCE_TYPE));
    assert_eq!(path_of("Capacity"), escaped(labels::CAPACITY_TYPE));
    assert_eq!(path_of("Zone"), escaped(labels::ZONE));
    assert_eq!(path_of("NodePool"), escaped(labels::NODEPOOL));
}

/// Every keyword a Kubernetes 1.20 `JSONSchemaProps` knows.
const KNOWN_TO_1_20: &[&str] = &[
    "$schema",
    "id",
    "$ref",
    "description",
    "type",
    "format",
    "title",
    "default",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "uniqueItems",
    "multipleOf",
    "enum",
    "maxProperties",
    "minProperties",
    "required",
    "items",
    "allOf",
    "oneOf",
    "anyOf",
    "not",
    "properties",
    "additionalProperties",
    "patternProperties",
    "dependencies",
    "additionalItems",
    "definitions",
    "externalDocs",
    "example",
    "nullable",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-embedded-resource",
    "x-kubernetes-int-or-string",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-list-type",
    "x-kubernetes-map-type",
];

fn structural_problems(crd: &CustomResourceDefinition) -> Vec<String> {
    let schema = schema_of(crd);
    let mut problems = Vec::new();
    walk(&schema, "", &mut |path, node| {
        let mut fail =
            |message: String| problems.push(format!("{}{path}: {message}", crd.spec.names.kind));
        for key in node.keys() {
            if !KNOWN_TO_1_20.contains(&key.as_str()) && key != "x-kubernetes-validations" {
                fail(format!("keyword {key} is unknown to Kubernetes 1.20"));
            }
        }
        for forbidden in ["$ref", "anyOf", "oneOf", "allOf", "not", "definitions"] {
            if node.contains_key(forbidden) {
                fail(format!("{forbidden} makes the schema non-structural"));
            }
        }
        let int_or_string = node.get("x-kubernetes-int-or-string") == Some(&json!(true));
        if int_or_string && node.contains_key("type") {
            fail("int-or-string must not also set type".into());
        }
        if !int_or_string && !node.contains_key("type") {
            fail("missing type".into());
        }
        if node.contains_key("properties") && node.contains_key("additionalProperties") {
            fail("both properties and additionalProperties".into());
        }
        if let Some(values) = node.get("enum").and_then(Value::as_array)
            && values.iter().any(Value::is_null)
        {
            fail("null in enum".into());
        }
        if let Some(default) = node.get("default") {
            let mut failures = Vec::new();
            check_value(&Value::Object(node.clone()), default, "", &mut failures);
            if !failures.is_empty() {
                fail(format!("default {default} does not validate: {failures:?}"));
            }
        }
        if let Some(keys) = node
            .get("x-kubernetes-list-map-keys")
            .and_then(Value::as_array)
        {
            let required = node["items"]["required"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            for key in keys {
                if !required.contains(key) {
                    fail(format!("list map key {key} is not required in the items"));
                }
            }
        }
    });
    let versions = serde_json::to_value(&crd.spec.versions).unwrap();
    for version in versions.as_array().unwrap() {
        for key in version.as_object().unwrap().keys() {
            let known = [
                "name",
                "served",
                "storage",
                "schema",
                "subresources",
                "additionalPrinterColumns",
                "deprecated",
                "deprecationWarning",
            ];
            if !known.contains(&key.as_str()) {
                problems.push(format!("versions[].{key} is unknown to Kubernetes 1.20"));
            }
        }
    }
    problems
}

#[test]
fn crds_are_structural_and_installable_on_kubernetes_1_20() {
    let problems: Vec<String> = crds::all().iter().flat_map(structural_problems).collect();
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}

#[test]
fn without_cel_leaves_no_validation_rules() {
    for crd in crds::all() {
        let yaml = crds::to_yaml(&crds::without_cel(&crd));
        assert!(
            !yaml.contains("x-kubernetes-validations"),
            "{}",
            crd.spec.names.kind
        );
        assert!(crds::to_yaml(&crd).contains("x-kubernetes-validations"));
    }
}

#[test]
fn transition_rules_protect_identity_fields() {
    // NodeClaim specs never change.
    let crd = NodeClaim::crd();
    let old = fixture_json("nodeclaim.yaml");
    let mut new = old.clone();
    set(&mut new, "/spec/expireAfter", json!("24h"));
    let failures = cel_failures(&crd, &new, Some(&old));
    assert!(
        failures.iter().any(|f| f.contains("spec is immutable")),
        "{failures:?}"
    );
    assert!(cel_failures(&crd, &old, Some(&old)).is_empty());

    // A NodePool may change, but not which kind of node class it points at.
    let crd = NodePool::crd();
    let old = fixture_json("nodepool.yaml");
    let mut new = old.clone();
    set(&mut new, "/spec/weight", json!(10));
    set(
        &mut new,
        "/spec/template/spec/nodeClassRef/name",
        json!("other"),
    );
    assert_eq!(cel_failures(&crd, &new, Some(&old)), Vec::<String>::new());
    set(
        &mut new,
        "/spec/template/spec/nodeClassRef/kind",
        json!("AzureNodeClass"),
    );
    let failures = cel_failures(&crd, &new, Some(&old));
    assert!(
        failures
            .iter()
            .any(|f| f.contains("nodeClassRef.kind is immutable")),
        "{failures:?}"
    );

    // An EC2NodeClass may not switch between role and instance profile in place.
    let crd = EC2NodeClass::crd();
    let old = fixture_json("ec2nodeclass.yaml");
    let mut new = old.clone();
    common::remove(&mut new, "/spec/role");
    set(&mut new, "/spec/instanceProfile", json!("existing"));
    let failures = cel_failures(&crd, &new, Some(&old));
    assert!(
        failures
            .iter()
            .any(|f| f.contains("switching between role and instanceProfile")),
        "{failures:?}"
    );
}

/// The formats Kubernetes' CRD validation knows, by the schema type they belong to (the
/// string ones are kube-openapi's strfmt registry). Any other (`uint32`, say, or
/// `int-or-string`, which only built-in types use) makes 1.36 apiservers warn on every apply.
fn known_format(ty: Option<&str>, format: &str) -> bool {
    const STRING: &[&str] = &[
        "bsonobjectid",
        "uri",
        "email",
        "hostname",
        "ipv4",
        "ipv6",
        "cidr",
        "mac",
        "uuid",
        "uuid3",
        "uuid4",
        "uuid5",
        "isbn",
        "isbn10",
        "isbn13",
        "creditcard",
        "ssn",
        "hexcolor",
        "rgbcolor",
        "byte",
        "password",
        "date",
        "duration",
        "date-time",
        "datetime",
    ];
    match ty {
        Some("integer") => matches!(format, "int32" | "int64"),
        Some("number") => matches!(format, "float" | "double" | "int32" | "int64"),
        Some("string") => STRING.contains(&format),
        _ => false,
    }
}

/// Every schema node, including those under allOf/anyOf/oneOf/not (which `walk` skips).
fn walk_all(schema: &Value, path: &str, visit: &mut dyn FnMut(&str, &Map<String, Value>)) {
    walk(schema, path, &mut |p, node| {
        visit(p, node);
        for key in ["allOf", "anyOf", "oneOf"] {
            for (i, branch) in node
                .get(key)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .enumerate()
            {
                walk_all(branch, &format!("{p}<{key}[{i}]>"), visit);
            }
        }
        if let Some(not) = node.get("not") {
            walk_all(not, &format!("{p}<not>"), visit);
        }
    });
}

fn unknown_formats(crd: &Value) -> Vec<String> {
    let mut unknown = Vec::new();
    for version in crd["spec"]["versions"].as_array().into_iter().flatten() {
        let name = version["name"].as_str().unwrap_or("?");
        let schema = &version["schema"]["openAPIV3Schema"];
        walk_all(schema, "", &mut |path, node| {
            if let Some(f) = node.get("format").and_then(Value::as_str) {
                let ty = node.get("type").and_then(Value::as_str);
                if !known_format(ty, f) {
                    unknown.push(format!("{name}{path}: format {f} on type {ty:?}"));
                }
            }
        });
    }
    unknown
}

#[test]
fn crds_use_only_formats_the_apiserver_knows() {
    for crd in crds::all() {
        let value = serde_json::to_value(&crd).unwrap();
        let unknown = unknown_formats(&value);
        assert!(unknown.is_empty(), "{}: {unknown:?}", crd.spec.names.kind);
    }
}

/// The committed files too (the chart's crds/ and manifests/crds/), so a hand edit cannot
/// bring one back; and the check itself catches what it is for.
#[test]
fn committed_crds_use_only_formats_the_apiserver_knows() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut read = 0;
    for dir in ["charts/adze/crds", "manifests/crds"] {
        for entry in std::fs::read_dir(root.join(dir)).unwrap() {
            let path = entry.unwrap().path();
            let text = std::fs::read_to_string(&path).unwrap();
            let value: Value = serde_yaml::from_str(&text).unwrap();
            let unknown = unknown_formats(&value);
            assert!(unknown.is_empty(), "{}: {unknown:?}", path.display());
            read += 1;
        }
    }
    assert_eq!(
        read,
        2 * crds::all().len(),
        "one file per CRD in each directory"
    );

    let bad = json!({"spec": {"versions": [{"name": "v1", "schema": {"openAPIV3Schema": {
    "type": "object",
    "properties": {
        "minValues": {"type": "integer", "format": "uint32"},
        "size": {"anyOf": [{"type": "integer"}, {"type": "string", "format": "int-or-string"}]},
        "count": {"type": "string", "format": "int64"},
        "created": {"type": "string", "format": "date-time"},
    }}}}]}});
    let mut found = unknown_formats(&bad);
    found.sort();
    assert_eq!(
        found,
        [
            "v1.count: format int64 on type Some(\"string\")",
            "v1.minValues: format uint32 on type Some(\"integer\")",
            "v1.size<anyOf[1]>: format int-or-string on type Some(\"string\")",
        ]
    );
}
