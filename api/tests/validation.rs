//! `validate()` refuses each bad object with the right field path, accepts good ones, and agrees
//! with what the apiserver would do with the generated CRD (schema checks plus CEL rules).

mod common;

use adze_api::{EC2NodeClass, NodeClaim, NodeOverlay, NodePool};
use common::{apiserver_refuses, cel_failures, fixture_json, schema_failures, set};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// A change to a valid fixture that must keep it valid.
type GoodCase = (&'static str, fn(&mut Value));

/// A change to a valid fixture, and the problem `validate()` must report for it.
struct BadCase {
    name: &'static str,
    edit: fn(&mut Value),
    path: &'static str,
    message: &'static str,
}

fn check_bad_cases<T: DeserializeOwned + CustomResourceExt>(
    fixture: &str,
    validate: fn(&T) -> Result<(), adze_api::ValidationError>,
    cases: &[BadCase],
) {
    let crd: CustomResourceDefinition = T::crd();
    let mut failures = Vec::new();
    for case in cases {
        let mut object = fixture_json(fixture);
        (case.edit)(&mut object);
        let parsed: T = match serde_json::from_value(object.clone()) {
            Ok(parsed) => parsed,
            Err(err) => {
                failures.push(format!("{}: did not parse: {err}", case.name));
                continue;
            }
        };
        match validate(&parsed) {
            Ok(()) => failures.push(format!("{}: validate() accepted it", case.name)),
            Err(err) => {
                let found = err
                    .errors
                    .iter()
                    .any(|e| e.path == case.path && e.message.contains(case.message));
                if !found {
                    failures.push(format!(
                        "{}: expected {}: …{}…, got:\n{err}",
                        case.name, case.path, case.message
                    ));
                }
            }
        }
        if !apiserver_refuses(&crd, &object) {
            failures.push(format!("{}: the CRD would accept it", case.name));
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

fn check_good_cases<T: DeserializeOwned + CustomResourceExt>(
    fixture: &str,
    validate: fn(&T) -> Result<(), adze_api::ValidationError>,
    cases: &[GoodCase],
) {
    let crd = T::crd();
    for (name, edit) in cases {
        let mut object = fixture_json(fixture);
        edit(&mut object);
        let parsed: T =
            serde_json::from_value(object.clone()).unwrap_or_else(|e| panic!("{name}: {e}"));
        if let Err(err) = validate(&parsed) {
            panic!("{name}: validate() refused it: {err}");
        }
        assert_eq!(
            schema_failures(&crd, &object),
            Vec::<String>::new(),
            "{name}: schema"
        );
        assert_eq!(
            cel_failures(&crd, &object, None),
            Vec::<String>::new(),
            "{name}: CEL"
        );
    }
}

const REQ: &str = "/spec/template/spec/requirements";

fn requirement(object: &mut Value, value: Value) {
    set(object, &format!("{REQ}/0"), value);
}

#[test]
fn nodepool_bad_cases_are_refused_at_their_field() {
    let cases = [
        BadCase {
            name: "Gt with a word",
            edit: |o| {
                requirement(
                    o,
                    json!({"key": "aws.adze.sh/instance-cpu", "operator": "Gt", "values": ["a"]}),
                )
            },
            path: "spec.template.spec.requirements[0].values",
            message: "operator Gt needs exactly one whole number of 1 to 18 digits, got [\"a\"]",
        },
        BadCase {
            name: "Lt with two values",
            edit: |o| {
                requirement(
                    o,
                    json!({"key": "aws.adze.sh/instance-cpu", "operator": "Lt", "values": ["1", "2"]}),
                )
            },
            path: "spec.template.spec.requirements[0].values",
            message: "operator Lt needs exactly one whole number of 1 to 18 digits",
        },
        BadCase {
            name: "In without values",
            edit: |o| requirement(o, json!({"key": "kubernetes.io/arch", "operator": "In"})),
            path: "spec.template.spec.requirements[0].values",
            message: "operator In needs at least one value",
        },
        BadCase {
            name: "NotIn with empty values",
            edit: |o| {
                requirement(
                    o,
                    json!({"key": "kubernetes.io/arch", "operator": "NotIn", "values": []}),
                )
            },
            path: "spec.template.spec.requirements[0].values",
            message: "operator NotIn needs at least one value",
        },
        BadCase {
            name: "Exists with values",
            edit: |o| {
                requirement(
                    o,
                    json!({"key": "kubernetes.io/arch", "operator": "Exists", "values": ["amd64"]}),
                )
            },
            path: "spec.template.spec.requirements[0].values",
            message: "operator Exists takes no values",
        },
        BadCase {
            name: "minValues above the In values",
            edit: |o| {
                requirement(
                    o,
                    json!({"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"], "minValues": 2}),
                )
            },
            path: "spec.template.spec.requirements[0].minValues",
            message: "minValues 2 exceeds the 1 value(s)",
        },
        BadCase {
            name: "minValues zero",
            edit: |o| {
                requirement(
                    o,
                    json!({"key": "node.kubernetes.io/instance-type", "operator": "Exists", "minValues": 0}),
                )
            },
            path: "spec.template.spec.requirements[0].minValues",
            message: "must be between 1 and 50",
        },
        BadCase {
            name: "requirement on hostname",
            edit: |o| {
                requirement(
                    o,
                    json!({"key": "kubernetes.io/hostname", "operator": "In", "values": ["a"]}),
                )
            },
            path: "spec.template.spec.requirements[0].key",
            message: "label \"kubernetes.io/hostname\" is restricted",
        },
        BadCase {
            name: "requirement on the pool label",
            edit: |o| {
                set(
                    o,
                    &format!("{REQ}/2"),
                    json!({"key": "adze.sh/nodepool", "operator": "In", "values": ["x"]}),
                )
            },
            path: "spec.template.spec.requirements[2].key",
            message: "label \"adze.sh/nodepool\" is restricted",
        },
        BadCase {
            name: "requirement on an internal Adze label",
            edit: |o| requirement(o, json!({"key": "adze.sh/nodeclaim", "operator": "Exists"})),
            path: "spec.template.spec.requirements[0].key",
            message: "label domain \"adze.sh\" is restricted",
        },
        BadCase {
            name: "requirement on an unknown kubernetes.io label",
            edit: |o| {
                requirement(
                    o,
                    json!({"key": "example.kubernetes.io/foo", "operator": "Exists"}),
                )
            },
            path: "spec.template.spec.requirements[0].key",
            message: "label domain \"kubernetes.io\" is restricted",
        },
        BadCase {
            name: "requirement key that is not a label key",
            edit: |o| requirement(o, json!({"key": "not a key", "operator": "Exists"})),
            path: "spec.template.spec.requirements[0].key",
            message: "must be a qualified name",
        },
        BadCase {
            name: "requirement value that is not a label value",
            edit: |o| {
                requirement(
                    o,
                    json!({"key": "example.com/team", "operator": "In", "values": ["-x"]}),
                )
            },
            path: "spec.template.spec.requirements[0].values[0]",
            message: "must be at most 63",
        },
        BadCase {
            name: "template label on hostname",
            edit: |o| {
                set(
                    o,
                    "/spec/template/metadata/labels/kubernetes.io~1hostname",
                    json!("a"),
                )
            },
            path: "spec.template.metadata.labels[kubernetes.io/hostname]",
            message: "label domain \"kubernetes.io\" is restricted",
        },
        BadCase {
            name: "template label on the pool label",
            edit: |o| {
                set(
                    o,
                    "/spec/template/metadata/labels/adze.sh~1nodepool",
                    json!("a"),
                )
            },
            path: "spec.template.metadata.labels[adze.sh/nodepool]",
            message: "label domain \"adze.sh\" is restricted",
        },
        BadCase {
            name: "template label the cloud supplies",
            edit: |o| {
                set(
                    o,
                    "/spec/template/metadata/labels/aws.adze.sh~1instance-family",
                    json!("m5"),
                )
            },
            path: "spec.template.metadata.labels[aws.adze.sh/instance-family]",
            message: "label domain \"adze.sh\" is restricted",
        },
        BadCase {
            // kubelet refuses it in --node-labels and NodeRestriction refuses it from a node
            // (e2e/kubelet.sh): refused here rather than a node that silently lacks it.
            name: "template label kubelet may not set and no exception allows",
            edit: |o| {
                set(
                    o,
                    "/spec/template/metadata/labels/node-role.kubernetes.io~1worker",
                    json!(""),
                )
            },
            path: "spec.template.metadata.labels[node-role.kubernetes.io/worker]",
            message: "label domain \"kubernetes.io\" is restricted",
        },
        BadCase {
            name: "template label in k8s.io",
            edit: |o| {
                set(
                    o,
                    "/spec/template/metadata/labels/sub.k8s.io~1x",
                    json!("a"),
                )
            },
            path: "spec.template.metadata.labels[sub.k8s.io/x]",
            message: "label domain \"k8s.io\" is restricted",
        },
        BadCase {
            name: "template label value syntax",
            edit: |o| set(o, "/spec/template/metadata/labels/team", json!("a b")),
            path: "spec.template.metadata.labels[team]",
            message: "value \"a b\" must be at most 63",
        },
        BadCase {
            name: "minSavingsPerDisruptionCost negative",
            edit: |o| {
                set(
                    o,
                    "/spec/disruption/minSavingsPerDisruptionCost",
                    json!("-0.05"),
                )
            },
            path: "spec.disruption.minSavingsPerDisruptionCost",
            message: "must be an unsigned decimal",
        },
        BadCase {
            name: "minSavingsPerDisruptionCost not a number",
            edit: |o| {
                set(
                    o,
                    "/spec/disruption/minSavingsPerDisruptionCost",
                    json!("a cent"),
                )
            },
            path: "spec.disruption.minSavingsPerDisruptionCost",
            message: "must be an unsigned decimal",
        },
        BadCase {
            name: "minSavingsPerDisruptionCost too long",
            edit: |o| {
                set(
                    o,
                    "/spec/disruption/minSavingsPerDisruptionCost",
                    json!(format!("0.{}", "0".repeat(40))),
                )
            },
            path: "spec.disruption.minSavingsPerDisruptionCost",
            message: "must be an unsigned decimal",
        },
        BadCase {
            name: "budget schedule without duration",
            edit: |o| set(o, "/spec/disruption/budgets/0/schedule", json!("@daily")),
            path: "spec.disruption.budgets[0].duration",
            message: "duration is required when schedule is set",
        },
        BadCase {
            name: "budget duration without schedule",
            edit: |o| set(o, "/spec/disruption/budgets/0/duration", json!("1h")),
            path: "spec.disruption.budgets[0].schedule",
            message: "schedule is required when duration is set",
        },
        BadCase {
            name: "budget above 100%",
            edit: |o| set(o, "/spec/disruption/budgets/0/nodes", json!("110%")),
            path: "spec.disruption.budgets[0].nodes",
            message: "must be a node count or a percentage",
        },
        BadCase {
            name: "budget reason Expired (expiry is forceful, no budget applies)",
            edit: |o| {
                set(
                    o,
                    "/spec/disruption/budgets/0/reasons",
                    json!(["Drifted", "Expired"]),
                )
            },
            path: "spec.disruption.budgets[0].reasons[1]",
            message: "Expired is not a budget reason",
        },
        BadCase {
            name: "budget nodes as words",
            edit: |o| set(o, "/spec/disruption/budgets/0/nodes", json!("ten")),
            path: "spec.disruption.budgets[0].nodes",
            message: "must be a node count or a percentage",
        },
        BadCase {
            name: "budget schedule that is not cron",
            edit: |o| set(o, "/spec/disruption/budgets/1/schedule", json!("weekdays")),
            path: "spec.disruption.budgets[1].schedule",
            message: "must be a cron schedule",
        },
        BadCase {
            name: "weight zero",
            edit: |o| set(o, "/spec/weight", json!(0)),
            path: "spec.weight",
            message: "must be between 1 and 100, got 0",
        },
        BadCase {
            name: "weight above 100",
            edit: |o| set(o, "/spec/weight", json!(101)),
            path: "spec.weight",
            message: "must be between 1 and 100, got 101",
        },
        BadCase {
            name: "static pool with a weight",
            edit: |o| {
                set(o, "/spec/replicas", json!(3));
                common::remove(o, "/spec/limits");
            },
            path: "spec.weight",
            message: "cannot be set on a static NodePool",
        },
        BadCase {
            name: "negative replicas",
            edit: |o| {
                set(o, "/spec/replicas", json!(-1));
                common::remove(o, "/spec/weight");
                common::remove(o, "/spec/limits");
            },
            path: "spec.replicas",
            message: "must be 0 or more, got -1",
        },
        BadCase {
            name: "limit that is not a quantity",
            edit: |o| set(o, "/spec/limits/cpu", json!("lots")),
            path: "spec.limits[cpu]",
            message: "is not a resource quantity",
        },
        BadCase {
            name: "taint key syntax",
            edit: |o| set(o, "/spec/template/spec/taints/0/key", json!("bad key")),
            path: "spec.template.spec.taints[0].key",
            message: "must be a qualified name",
        },
        BadCase {
            name: "startup taint value syntax",
            edit: |o| {
                set(
                    o,
                    "/spec/template/spec/startupTaints/0/value",
                    json!("no spaces"),
                )
            },
            path: "spec.template.spec.startupTaints[0].value",
            message: "must be at most 63",
        },
        BadCase {
            name: "nodeClassRef without a name",
            edit: |o| set(o, "/spec/template/spec/nodeClassRef/name", json!("")),
            path: "spec.template.spec.nodeClassRef.name",
            message: "may not be empty",
        },
        BadCase {
            name: "nodeClassRef group with a version",
            edit: |o| {
                set(
                    o,
                    "/spec/template/spec/nodeClassRef/group",
                    json!("aws.adze.sh/v1"),
                )
            },
            path: "spec.template.spec.nodeClassRef.group",
            message: "is an API group, without a version",
        },
        BadCase {
            name: "nodeClassRef kind longer than a DNS label",
            edit: |o| {
                set(
                    o,
                    "/spec/template/spec/nodeClassRef/kind",
                    json!("K".repeat(64)),
                )
            },
            path: "spec.template.spec.nodeClassRef.kind",
            message: "may be at most 63 characters, got 64",
        },
    ];
    check_bad_cases::<NodePool>("nodepool.yaml", NodePool::validate, &cases);
}

#[test]
fn nodepool_good_cases_pass_everywhere() {
    let cases: [GoodCase; 15] = [
        ("the fixture as written", |_| {}),
        ("Gt on network bandwidth", |o| {
            requirement(
                o,
                json!({"key": "aws.adze.sh/instance-network-bandwidth", "operator": "Gt", "values": ["10000"]}),
            )
        }),
        ("Lt on EBS bandwidth", |o| {
            requirement(
                o,
                json!({"key": "aws.adze.sh/instance-ebs-bandwidth", "operator": "Lt", "values": ["5000"]}),
            )
        }),
        ("In on CPU manufacturer", |o| {
            requirement(
                o,
                json!({"key": "aws.adze.sh/instance-cpu-manufacturer", "operator": "In", "values": ["amd", "aws"]}),
            )
        }),
        ("In on zone ID", |o| {
            requirement(
                o,
                json!({"key": "topology.k8s.aws/zone-id", "operator": "In", "values": ["use1-az1"]}),
            )
        }),
        ("Lt with an integer", |o| {
            requirement(
                o,
                json!({"key": "aws.adze.sh/instance-memory", "operator": "Lt", "values": ["65536"]}),
            )
        }),
        ("Exists with minValues", |o| {
            requirement(
                o,
                json!({"key": "aws.adze.sh/instance-family", "operator": "Exists", "minValues": 5}),
            )
        }),
        ("NotIn with minValues above its values", |o| {
            requirement(
                o,
                json!({"key": "aws.adze.sh/instance-family", "operator": "NotIn", "values": ["t2"], "minValues": 3}),
            )
        }),
        ("custom requirement key", |o| {
            requirement(
                o,
                json!({"key": "example.com/team", "operator": "DoesNotExist"}),
            )
        }),
        ("allowed labels in restricted domains", |o| {
            set(
                o,
                "/spec/template/metadata/labels/topology.kubernetes.io~1zone",
                json!("us-west-2a"),
            );
            set(
                o,
                "/spec/template/metadata/labels/adze.sh~1capacity-type",
                json!("spot"),
            );
            set(
                o,
                "/spec/template/metadata/labels/x.node-restriction.kubernetes.io~1y",
                json!("z"),
            );
        }),
        ("never expire, never consolidate", |o| {
            set(o, "/spec/template/spec/expireAfter", json!("Never"));
            set(o, "/spec/disruption/consolidateAfter", json!("Never"));
        }),
        ("no budgets, integer limits", |o| {
            set(o, "/spec/disruption/budgets", json!([]));
            set(o, "/spec/limits/cpu", json!(64));
        }),
        ("a minimum saving per disruption cost", |o| {
            set(
                o,
                "/spec/disruption/minSavingsPerDisruptionCost",
                json!("0.01"),
            );
        }),
        ("no weight, no limits", |o| {
            common::remove(o, "/spec/weight");
            common::remove(o, "/spec/limits");
        }),
        ("static: replicas, a node limit, no weight", |o| {
            common::remove(o, "/spec/weight");
            set(o, "/spec/replicas", json!(3));
            set(o, "/spec/limits", json!({"nodes": 5}));
        }),
    ];
    check_good_cases::<NodePool>("nodepool.yaml", NodePool::validate, &cases);
}

#[test]
fn template_label_key_syntax_is_checked_by_adze_not_by_cel() {
    // Kept out of the CRD: a regex over every label key weighs too much in CEL's cost estimate.
    let mut object = fixture_json("nodepool.yaml");
    set(
        &mut object,
        "/spec/template/metadata/labels/Bad.Domain~1x",
        json!("a"),
    );
    let pool: NodePool = serde_json::from_value(object.clone()).unwrap();
    let err = pool.validate().unwrap_err();
    assert!(
        err.has_error_at("spec.template.metadata.labels[Bad.Domain/x]"),
        "{err}"
    );
    assert!(
        err.to_string().contains("must be a qualified name"),
        "{err}"
    );
    assert!(!apiserver_refuses(&NodePool::crd(), &object));
}

#[test]
fn kubelet_expressions_are_compiled_by_adze_not_by_the_crd() {
    // The CRD bounds their length; whether they compile is Adze's check, at the field's path.
    for (pointer, value, path, says) in [
        (
            "/spec/kubelet/maxPods",
            json!("vcpus * 0.5"),
            "spec.kubelet.maxPods",
            "convert one with double",
        ),
        (
            "/spec/kubelet/maxPods",
            json!("vcpus > 2"),
            "spec.kubelet.maxPods",
            "gives a bool",
        ),
        (
            "/spec/kubelet/kubeReserved",
            json!({"memory": "11 * pods"}),
            "spec.kubelet.kubeReserved[memory]",
            "unknown variable \"pods\"",
        ),
        (
            "/spec/kubelet/systemReserved",
            json!({"cpu": "max(60, vcpus * 30"}),
            "spec.kubelet.systemReserved[cpu]",
            "is not closed",
        ),
    ] {
        let mut object = fixture_json("ec2nodeclass.yaml");
        set(&mut object, pointer, value);
        let class: EC2NodeClass = serde_json::from_value(object.clone()).unwrap();
        let err = class.validate().unwrap_err();
        assert!(
            err.errors
                .iter()
                .any(|e| e.path == path && e.message.contains(says)),
            "{path}: {err}"
        );
        assert!(!apiserver_refuses(&EC2NodeClass::crd(), &object), "{path}");
    }
    let mut object = fixture_json("ec2nodeclass.yaml");
    set(
        &mut object,
        "/spec/kubelet/maxPods",
        json!("1+".repeat(600)),
    );
    assert!(
        apiserver_refuses(&EC2NodeClass::crd(), &object),
        "the CRD bounds an expression's length"
    );
}

#[test]
fn every_problem_is_reported_at_once() {
    let mut object = fixture_json("nodepool.yaml");
    set(&mut object, "/spec/weight", json!(0));
    set(
        &mut object,
        "/spec/template/metadata/labels/kubernetes.io~1hostname",
        json!("a"),
    );
    set(
        &mut object,
        "/spec/template/spec/requirements/4",
        json!({"key": "aws.adze.sh/instance-generation", "operator": "Gt", "values": ["a"]}),
    );
    let pool: NodePool = serde_json::from_value(object).unwrap();
    let err = pool.validate().unwrap_err();
    assert_eq!(err.errors.len(), 3, "{err}");
    assert_eq!(
        err.to_string(),
        "NodePool \"general-purpose\" is invalid:\n  \
         - spec.template.metadata.labels[kubernetes.io/hostname]: label domain \"kubernetes.io\" is restricted\n  \
         - spec.template.spec.requirements[4].values: operator Gt needs exactly one whole number of 1 to 18 digits, got [\"a\"]\n  \
         - spec.weight: must be between 1 and 100, got 0"
    );
}

#[test]
fn nodeclaim_rules() {
    let cases = [
        BadCase {
            name: "hostname requirement",
            edit: |o| {
                set(
                    o,
                    "/spec/requirements/0",
                    json!({"key": "kubernetes.io/hostname", "operator": "In", "values": ["a"]}),
                )
            },
            path: "spec.requirements[0].key",
            message: "label \"kubernetes.io/hostname\" is restricted",
        },
        BadCase {
            name: "request that is not a quantity",
            edit: |o| set(o, "/spec/resources/requests/cpu", json!("1.5 cores")),
            path: "spec.resources.requests[cpu]",
            message: "is not a resource quantity",
        },
        BadCase {
            name: "Gt with a word",
            edit: |o| {
                set(
                    o,
                    "/spec/requirements/1",
                    json!({"key": "aws.adze.sh/instance-cpu", "operator": "Gt", "values": ["many"]}),
                )
            },
            path: "spec.requirements[1].values",
            message: "operator Gt needs exactly one whole number of 1 to 18 digits, got [\"many\"]",
        },
    ];
    check_bad_cases::<NodeClaim>("nodeclaim.yaml", NodeClaim::validate, &cases);
    // A claim carries its pool's label as a requirement, which a NodePool may not.
    check_good_cases::<NodeClaim>(
        "nodeclaim.yaml",
        NodeClaim::validate,
        &[("the fixture", |_| {})],
    );
}

const AMI: &str = "/spec/amiSelectorTerms";

#[test]
fn ec2nodeclass_bad_cases_are_refused_at_their_field() {
    let cases = [
        BadCase {
            name: "RAID0 with Bottlerocket",
            edit: |o| {
                set(o, &format!("{AMI}/0/alias"), json!("bottlerocket@latest"));
                set(o, "/spec/instanceStorePolicy", json!("RAID0"));
            },
            path: "spec.instanceStorePolicy",
            message: "instanceStorePolicy is not supported with Bottlerocket",
        },
        BadCase {
            name: "both role and instanceProfile",
            edit: |o| set(o, "/spec/instanceProfile", json!("existing-profile")),
            path: "spec",
            message: "must specify exactly one of role or instanceProfile",
        },
        BadCase {
            name: "neither role nor instanceProfile",
            edit: |o| common::remove(o, "/spec/role"),
            path: "spec",
            message: "must specify exactly one of role or instanceProfile",
        },
        BadCase {
            name: "no amiFamily and no alias",
            edit: |o| set(o, AMI, json!([{"id": "ami-0123"}])),
            path: "spec.amiFamily",
            message: "amiFamily is required unless an amiSelectorTerm sets alias",
        },
        BadCase {
            name: "alias next to another term",
            edit: |o| set(o, &format!("{AMI}/1"), json!({"id": "ami-0123"})),
            path: "spec.amiSelectorTerms",
            message: "an amiSelectorTerm with alias must be the only term",
        },
        BadCase {
            name: "alias with id in one term",
            edit: |o| set(o, &format!("{AMI}/0/id"), json!("ami-0123")),
            path: "spec.amiSelectorTerms[0]",
            message: "alias cannot be combined with other fields",
        },
        BadCase {
            name: "alias of an unknown family",
            edit: |o| set(o, &format!("{AMI}/0/alias"), json!("ubuntu@latest")),
            path: "spec.amiSelectorTerms[0].alias",
            message: "alias family must be one of al2, al2023, bottlerocket, windows2019, windows2022, windows2025",
        },
        BadCase {
            name: "a pinned Windows alias",
            edit: |o| set(o, &format!("{AMI}/0/alias"), json!("windows2022@v20250101")),
            path: "spec.amiSelectorTerms[0].alias",
            message: "windows aliases may only use version latest",
        },
        BadCase {
            name: "a Windows 2025 alias pinned too",
            edit: |o| {
                set(
                    o,
                    &format!("{AMI}/0/alias"),
                    json!("windows2025@2025.01.01"),
                )
            },
            path: "spec.amiSelectorTerms[0].alias",
            message: "windows aliases may only use version latest",
        },
        BadCase {
            name: "RAID0 with Windows",
            edit: |o| {
                set(o, &format!("{AMI}/0/alias"), json!("windows2019@latest"));
                set(o, "/spec/instanceStorePolicy", json!("RAID0"));
            },
            path: "spec.instanceStorePolicy",
            message: "instanceStorePolicy is not supported with Windows",
        },
        BadCase {
            name: "amiFamily AL2 with an al2023 alias",
            edit: |o| set(o, "/spec/amiFamily", json!("AL2")),
            path: "spec.amiFamily",
            message: "does not match the family of alias",
        },
        BadCase {
            name: "amiFamily Windows2022 with a windows2019 alias",
            edit: |o| {
                set(o, &format!("{AMI}/0/alias"), json!("windows2019@latest"));
                set(o, "/spec/amiFamily", json!("Windows2022"));
            },
            path: "spec.amiFamily",
            message: "does not match the family of alias",
        },
        BadCase {
            name: "alias without a version",
            edit: |o| set(o, &format!("{AMI}/0/alias"), json!("al2023")),
            path: "spec.amiSelectorTerms[0].alias",
            message: "must look like family@version",
        },
        BadCase {
            name: "amiFamily contradicting the alias",
            edit: |o| set(o, "/spec/amiFamily", json!("Bottlerocket")),
            path: "spec.amiFamily",
            message: "does not match the family of alias",
        },
        BadCase {
            name: "id with owner",
            edit: |o| {
                set(o, "/spec/amiFamily", json!("AL2023"));
                set(o, AMI, json!([{"id": "ami-0123", "owner": "self"}]));
            },
            path: "spec.amiSelectorTerms[0]",
            message: "id cannot be combined with other fields",
        },
        BadCase {
            name: "owner alone",
            edit: |o| {
                set(o, "/spec/amiFamily", json!("Custom"));
                set(o, AMI, json!([{"owner": "self"}]));
            },
            path: "spec.amiSelectorTerms[0]",
            message: "needs alias, tags, id, name or ssmParameter",
        },
        BadCase {
            name: "empty capacity reservation term",
            edit: |o| set(o, "/spec/capacityReservationSelectorTerms", json!([{}])),
            path: "spec.capacityReservationSelectorTerms[0]",
            message: "a capacityReservationSelectorTerm needs tags, id or instanceMatchCriteria",
        },
        BadCase {
            name: "capacity reservation id with match criteria",
            edit: |o| {
                set(
                    o,
                    "/spec/capacityReservationSelectorTerms",
                    json!([{"id": "cr-0123", "instanceMatchCriteria": "open"}]),
                )
            },
            path: "spec.capacityReservationSelectorTerms[0]",
            message: "id cannot be combined with other fields",
        },
        BadCase {
            name: "capacity reservation id with tags",
            edit: |o| {
                set(
                    o,
                    "/spec/capacityReservationSelectorTerms",
                    json!([{"id": "cr-0123", "tags": {"a": "b"}}]),
                )
            },
            path: "spec.capacityReservationSelectorTerms[0]",
            message: "id cannot be combined with other fields",
        },
        BadCase {
            name: "capacity reservation id not like cr-",
            edit: |o| {
                set(
                    o,
                    "/spec/capacityReservationSelectorTerms",
                    json!([{"id": "sg-0123"}]),
                )
            },
            path: "spec.capacityReservationSelectorTerms[0].id",
            message: "is not an ID like",
        },
        BadCase {
            name: "capacity reservation owner not an account",
            edit: |o| {
                set(
                    o,
                    "/spec/capacityReservationSelectorTerms",
                    json!([{"tags": {"a": "b"}, "ownerID": "12"}]),
                )
            },
            path: "spec.capacityReservationSelectorTerms[0].ownerID",
            message: "is not a 12-digit account ID",
        },
        BadCase {
            name: "empty subnet term",
            edit: |o| set(o, "/spec/subnetSelectorTerms/0", json!({})),
            path: "spec.subnetSelectorTerms[0]",
            message: "a subnetSelectorTerm needs tags or id",
        },
        BadCase {
            name: "subnet id with tags",
            edit: |o| set(o, "/spec/subnetSelectorTerms/0/id", json!("subnet-0123")),
            path: "spec.subnetSelectorTerms[0]",
            message: "id cannot be combined with tags",
        },
        BadCase {
            name: "subnet id of the wrong kind",
            edit: |o| set(o, "/spec/subnetSelectorTerms/1/id", json!("sg-0123")),
            path: "spec.subnetSelectorTerms[1].id",
            message: "is not an ID like \"subnet-0123abcd\"",
        },
        BadCase {
            name: "no subnet terms",
            edit: |o| set(o, "/spec/subnetSelectorTerms", json!([])),
            path: "spec.subnetSelectorTerms",
            message: "needs at least 1 entry, got 0",
        },
        BadCase {
            name: "empty tag value in a selector",
            edit: |o| {
                set(
                    o,
                    "/spec/subnetSelectorTerms/0/tags/adze.sh~1discovery",
                    json!(""),
                )
            },
            path: "spec.subnetSelectorTerms[0].tags",
            message: "empty tag keys or values aren't supported",
        },
        BadCase {
            name: "security group name with tags",
            edit: |o| {
                set(
                    o,
                    "/spec/securityGroupSelectorTerms/1/tags",
                    json!({"a": "b"}),
                )
            },
            path: "spec.securityGroupSelectorTerms[1]",
            message: "name cannot be combined with other fields",
        },
        BadCase {
            name: "two root volumes",
            edit: |o| {
                set(
                    o,
                    "/spec/blockDeviceMappings/1",
                    json!({"deviceName": "/dev/xvdb", "rootVolume": true, "ebs": {"volumeSize": "20Gi"}}),
                )
            },
            path: "spec.blockDeviceMappings",
            message: "at most one blockDeviceMapping may be the rootVolume",
        },
        BadCase {
            name: "ebs without size or snapshot",
            edit: |o| {
                set(
                    o,
                    "/spec/blockDeviceMappings/0/ebs",
                    json!({"volumeType": "gp3"}),
                )
            },
            path: "spec.blockDeviceMappings[0].ebs",
            message: "ebs needs volumeSize or snapshotID",
        },
        BadCase {
            name: "iops on gp2",
            edit: |o| {
                set(
                    o,
                    "/spec/blockDeviceMappings/0/ebs/volumeType",
                    json!("gp2"),
                )
            },
            path: "spec.blockDeviceMappings[0].ebs.iops",
            message: "iops needs volumeType io1, io2 or gp3",
        },
        BadCase {
            name: "throughput on io2",
            edit: |o| {
                set(
                    o,
                    "/spec/blockDeviceMappings/0/ebs/volumeType",
                    json!("io2"),
                )
            },
            path: "spec.blockDeviceMappings[0].ebs.throughput",
            message: "throughput needs volumeType gp3",
        },
        BadCase {
            name: "volume size in GB",
            edit: |o| {
                set(
                    o,
                    "/spec/blockDeviceMappings/0/ebs/volumeSize",
                    json!("100GB"),
                )
            },
            path: "spec.blockDeviceMappings[0].ebs.volumeSize",
            message: "must be a whole number of G, Gi, T or Ti",
        },
        BadCase {
            name: "hop limit zero",
            edit: |o| set(o, "/spec/metadataOptions/httpPutResponseHopLimit", json!(0)),
            path: "spec.metadataOptions.httpPutResponseHopLimit",
            message: "must be between 1 and 64, got 0",
        },
        BadCase {
            name: "cluster membership tag",
            edit: |o| set(o, "/spec/tags/kubernetes.io~1cluster~1demo", json!("owned")),
            path: "spec.tags[kubernetes.io/cluster/demo]",
            message: "restricted",
        },
        BadCase {
            name: "ownership tag",
            edit: |o| set(o, "/spec/tags/adze.sh~1nodepool", json!("x")),
            path: "spec.tags[adze.sh/nodepool]",
            message: "restricted",
        },
        BadCase {
            name: "reserving gpus",
            edit: |o| {
                set(
                    o,
                    "/spec/kubelet/systemReserved/nvidia.com~1gpu",
                    json!("1"),
                )
            },
            path: "spec.kubelet.systemReserved[nvidia.com/gpu]",
            message: "valid keys for systemReserved are cpu, memory, ephemeral-storage, pid",
        },
        BadCase {
            name: "unknown eviction signal",
            edit: |o| set(o, "/spec/kubelet/evictionHard/memory.free", json!("5%")),
            path: "spec.kubelet.evictionHard[memory.free]",
            message: "valid keys for evictionHard",
        },
        BadCase {
            name: "eviction threshold above 100%",
            edit: |o| {
                set(
                    o,
                    "/spec/kubelet/evictionHard/memory.available",
                    json!("150%"),
                )
            },
            path: "spec.kubelet.evictionHard[memory.available]",
            message: "must be a percentage",
        },
        BadCase {
            name: "soft eviction without grace period",
            edit: |o| {
                set(
                    o,
                    "/spec/kubelet/evictionSoft/nodefs.available",
                    json!("15%"),
                )
            },
            path: "spec.kubelet.evictionSoft[nodefs.available]",
            message: "every evictionSoft signal needs an evictionSoftGracePeriod",
        },
        BadCase {
            name: "grace period without soft eviction",
            edit: |o| {
                set(
                    o,
                    "/spec/kubelet/evictionSoftGracePeriod/pid.available",
                    json!("30s"),
                )
            },
            path: "spec.kubelet.evictionSoftGracePeriod[pid.available]",
            message: "every evictionSoftGracePeriod signal needs an evictionSoft threshold",
        },
        BadCase {
            name: "negative maxPods",
            edit: |o| set(o, "/spec/kubelet/maxPods", json!(-1)),
            path: "spec.kubelet.maxPods",
            message: "may not be negative",
        },
        BadCase {
            name: "image GC low threshold not below the high one",
            edit: |o| {
                set(o, "/spec/kubelet/imageGCHighThresholdPercent", json!(70));
                set(o, "/spec/kubelet/imageGCLowThresholdPercent", json!(70));
            },
            path: "spec.kubelet.imageGCLowThresholdPercent",
            message: "must be less than imageGCHighThresholdPercent (70), got 70",
        },
        BadCase {
            // Kubelet fills in its default low threshold (80) and refuses to start at 70/80.
            name: "lone image GC high threshold under kubelet's default low one",
            edit: |o| set(o, "/spec/kubelet/imageGCHighThresholdPercent", json!(70)),
            path: "spec.kubelet.imageGCHighThresholdPercent",
            message: "must exceed kubelet's default imageGCLowThresholdPercent (80)",
        },
        BadCase {
            name: "lone image GC low threshold over kubelet's default high one",
            edit: |o| set(o, "/spec/kubelet/imageGCLowThresholdPercent", json!(90)),
            path: "spec.kubelet.imageGCLowThresholdPercent",
            message: "must be below kubelet's default imageGCHighThresholdPercent (85)",
        },
        BadCase {
            name: "image GC threshold above 100",
            edit: |o| {
                set(o, "/spec/kubelet/imageGCHighThresholdPercent", json!(101));
                set(o, "/spec/kubelet/imageGCLowThresholdPercent", json!(50));
            },
            path: "spec.kubelet.imageGCHighThresholdPercent",
            message: "must be between 0 and 100, got 101",
        },
        BadCase {
            name: "podPidsLimit below -1",
            edit: |o| set(o, "/spec/kubelet/podPidsLimit", json!(-2)),
            path: "spec.kubelet.podPidsLimit",
            message: "must be between -1 (no limit) and 4194304, got -2",
        },
        BadCase {
            name: "podPidsLimit above the kernel's ceiling",
            edit: |o| set(o, "/spec/kubelet/podPidsLimit", json!(4_194_305)),
            path: "spec.kubelet.podPidsLimit",
            message: "must be between -1 (no limit) and 4194304, got 4194305",
        },
        BadCase {
            name: "negative kubeAPIQPS",
            edit: |o| set(o, "/spec/kubelet/kubeAPIQPS", json!(-1)),
            path: "spec.kubelet.kubeAPIQPS",
            message: "may not be negative, got -1",
        },
        BadCase {
            name: "negative eventBurst",
            edit: |o| set(o, "/spec/kubelet/eventBurst", json!(-10)),
            path: "spec.kubelet.eventBurst",
            message: "may not be negative, got -10",
        },
        BadCase {
            name: "negative evictionMaxPodGracePeriod",
            edit: |o| set(o, "/spec/kubelet/evictionMaxPodGracePeriod", json!(-5)),
            path: "spec.kubelet.evictionMaxPodGracePeriod",
            message: "may not be negative, got -5",
        },
        BadCase {
            name: "placement group by id and name",
            edit: |o| {
                set(
                    o,
                    "/spec/placementGroupSelector",
                    json!({"id": "pg-0123", "name": "training"}),
                )
            },
            path: "spec.placementGroupSelector",
            message: "placementGroupSelector needs exactly one of id or name",
        },
        BadCase {
            name: "placement group id of another resource",
            edit: |o| set(o, "/spec/placementGroupSelector", json!({"id": "sg-0123"})),
            path: "spec.placementGroupSelector.id",
            message: "pg-0123abcd",
        },
        BadCase {
            name: "volumeInitializationRate above EC2's 300 MiB/s",
            edit: |o| {
                set(
                    o,
                    "/spec/blockDeviceMappings/0/ebs/snapshotID",
                    json!("snap-0123456789abcdef0"),
                );
                set(
                    o,
                    "/spec/blockDeviceMappings/0/ebs/volumeInitializationRate",
                    json!(301),
                );
            },
            path: "spec.blockDeviceMappings[0].ebs.volumeInitializationRate",
            message: "must be between 100 and 300 MiB/s, got 301",
        },
        BadCase {
            name: "volumeInitializationRate without a snapshot",
            edit: |o| {
                set(
                    o,
                    "/spec/blockDeviceMappings/0/ebs/volumeInitializationRate",
                    json!(200),
                )
            },
            path: "spec.blockDeviceMappings[0].ebs.volumeInitializationRate",
            message: "volumeInitializationRate needs snapshotID",
        },
        BadCase {
            name: "TCP conntrack timeout below EC2's minimum",
            edit: |o| {
                set(
                    o,
                    "/spec/connectionTracking",
                    json!({"tcpEstablishedTimeout": 59}),
                )
            },
            path: "spec.connectionTracking.tcpEstablishedTimeout",
            message: "must be between 60 and 432000 seconds, got 59",
        },
        BadCase {
            name: "UDP stream conntrack timeout above EC2's maximum",
            edit: |o| {
                set(
                    o,
                    "/spec/connectionTracking",
                    json!({"udpStreamTimeout": 181}),
                )
            },
            path: "spec.connectionTracking.udpStreamTimeout",
            message: "must be between 60 and 180 seconds, got 181",
        },
        BadCase {
            name: "UDP conntrack timeout above EC2's maximum",
            edit: |o| set(o, "/spec/connectionTracking", json!({"udpTimeout": 61})),
            path: "spec.connectionTracking.udpTimeout",
            message: "must be between 30 and 60 seconds, got 61",
        },
        BadCase {
            name: "an EFA-only primary interface",
            edit: |o| {
                set(
                    o,
                    "/spec/networkInterfaces",
                    json!([{"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "efa-only"}]),
                )
            },
            path: "spec.networkInterfaces",
            message: "must include the primary interface: networkCardIndex 0, deviceIndex 0, interfaceType interface",
        },
        BadCase {
            name: "the same card and device twice",
            edit: |o| {
                set(
                    o,
                    "/spec/networkInterfaces",
                    json!([
                        {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"},
                        {"networkCardIndex": 1, "deviceIndex": 0, "interfaceType": "efa-only"},
                        {"networkCardIndex": 1, "deviceIndex": 0, "interfaceType": "interface"},
                    ]),
                )
            },
            path: "spec.networkInterfaces[2]",
            message: "(1, 0) is repeated",
        },
        BadCase {
            name: "a negative network card",
            edit: |o| {
                set(
                    o,
                    "/spec/networkInterfaces",
                    json!([
                        {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"},
                        {"networkCardIndex": -1, "deviceIndex": 0, "interfaceType": "efa-only"},
                    ]),
                )
            },
            path: "spec.networkInterfaces[1].networkCardIndex",
            message: "may not be negative, got -1",
        },
        BadCase {
            name: "a public IP choice with several interfaces",
            edit: |o| {
                set(o, "/spec/associatePublicIPAddress", json!(false));
                set(
                    o,
                    "/spec/networkInterfaces",
                    json!([
                        {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"},
                        {"networkCardIndex": 0, "deviceIndex": 1, "interfaceType": "efa-only"},
                    ]),
                )
            },
            path: "spec.associatePublicIPAddress",
            message: "cannot be set with more than one networkInterface",
        },
        BadCase {
            name: "cpuCFSQuota with a Windows alias",
            edit: |o| {
                set(o, &format!("{AMI}/0/alias"), json!("windows2022@latest"));
                set(o, "/spec/kubelet/cpuCFSQuota", json!(false));
            },
            path: "spec.kubelet.cpuCFSQuota",
            message: "kubelet.cpuCFSQuota is not supported with Windows",
        },
        BadCase {
            name: "podPidsLimit with a Windows alias",
            edit: |o| {
                set(o, &format!("{AMI}/0/alias"), json!("windows2022@latest"));
                set(o, "/spec/kubelet/podPidsLimit", json!(4096));
            },
            path: "spec.kubelet.podPidsLimit",
            message: "kubelet.podPidsLimit is not supported with Windows",
        },
        BadCase {
            name: "shutdownGracePeriod with an AL2 alias",
            edit: |o| {
                set(o, &format!("{AMI}/0/alias"), json!("al2@latest"));
                set(o, "/spec/kubelet/shutdownGracePeriod", json!("30s"));
            },
            path: "spec.kubelet.shutdownGracePeriod",
            message: "kubelet.shutdownGracePeriod is not supported with AL2 (kubelet has no command-line flag for it",
        },
        BadCase {
            name: "shutdownGracePeriodCriticalPods with a Windows alias",
            edit: |o| {
                set(o, &format!("{AMI}/0/alias"), json!("windows2022@latest"));
                set(o, "/spec/kubelet/shutdownGracePeriod", json!("30s"));
                set(
                    o,
                    "/spec/kubelet/shutdownGracePeriodCriticalPods",
                    json!("10s"),
                );
            },
            path: "spec.kubelet.shutdownGracePeriodCriticalPods",
            message: "kubelet.shutdownGracePeriodCriticalPods is not supported with Windows",
        },
        BadCase {
            name: "streamingConnectionIdleTimeout with a Bottlerocket alias",
            edit: |o| {
                set(o, &format!("{AMI}/0/alias"), json!("bottlerocket@latest"));
                set(
                    o,
                    "/spec/kubelet/streamingConnectionIdleTimeout",
                    json!("5m"),
                );
            },
            path: "spec.kubelet.streamingConnectionIdleTimeout",
            message: "not supported with Bottlerocket (Bottlerocket's settings API has no key for it)",
        },
        BadCase {
            name: "kernelMemcgNotification with a Windows alias",
            edit: |o| {
                set(o, &format!("{AMI}/0/alias"), json!("windows2025@latest"));
                set(o, "/spec/kubelet/kernelMemcgNotification", json!(true));
            },
            path: "spec.kubelet.kernelMemcgNotification",
            message: "kubelet.kernelMemcgNotification is not supported with Windows (a Linux cgroup control)",
        },
        BadCase {
            name: "kubelet tuning with the Custom family",
            edit: |o| {
                set(
                    o,
                    &format!("{AMI}/0"),
                    json!({"id": "ami-0123456789abcdef0"}),
                );
                set(o, "/spec/amiFamily", json!("Custom"));
                set(o, "/spec/kubelet/eventRecordQPS", json!(10));
            },
            path: "spec.kubelet.eventRecordQPS",
            message: "kubelet.eventRecordQPS is not supported with Custom (Adze writes no user data for Custom",
        },
        BadCase {
            name: "critical pods' shutdown grace above the whole",
            edit: |o| {
                set(o, "/spec/kubelet/shutdownGracePeriod", json!("30s"));
                set(
                    o,
                    "/spec/kubelet/shutdownGracePeriodCriticalPods",
                    json!("1m"),
                );
            },
            path: "spec.kubelet.shutdownGracePeriodCriticalPods",
            message: "1m may not exceed shutdownGracePeriod (30s)",
        },
        BadCase {
            name: "critical pods' shutdown grace alone",
            edit: |o| {
                set(
                    o,
                    "/spec/kubelet/shutdownGracePeriodCriticalPods",
                    json!("10s"),
                )
            },
            path: "spec.kubelet.shutdownGracePeriodCriticalPods",
            message: "10s may not exceed shutdownGracePeriod (unset, so 0)",
        },
    ];
    check_bad_cases::<EC2NodeClass>("ec2nodeclass.yaml", EC2NodeClass::validate, &cases);
}

#[test]
fn ec2nodeclass_good_cases_pass_everywhere() {
    let cases: [GoodCase; 26] = [
        ("the fixture as written", |_| {}),
        (
            "shutdown grace, stream timeout and memcg notification on AL2023",
            |o| {
                set(o, "/spec/kubelet/shutdownGracePeriod", json!("2m30s"));
                set(
                    o,
                    "/spec/kubelet/shutdownGracePeriodCriticalPods",
                    json!("2m30s"),
                );
                set(
                    o,
                    "/spec/kubelet/streamingConnectionIdleTimeout",
                    json!("0s"),
                );
                set(o, "/spec/kubelet/kernelMemcgNotification", json!(false));
            },
        ),
        ("Karpenter v1.15's added kubelet fields", |o| {
            set(o, "/spec/kubelet/podPidsLimit", json!(4096));
            set(o, "/spec/kubelet/eventRecordQPS", json!(0));
            set(o, "/spec/kubelet/eventBurst", json!(20));
            set(o, "/spec/kubelet/kubeAPIQPS", json!(30));
            set(o, "/spec/kubelet/kubeAPIBurst", json!(60));
        }),
        ("kubelet settings as expressions", |o| {
            set(
                o,
                "/spec/kubelet/maxPods",
                json!("min(110, default_enis * (ips_per_eni - 1))"),
            );
            set(
                o,
                "/spec/kubelet/kubeReserved",
                json!({"cpu": "max(60, vcpus * 30)", "memory": "11 * max_pods + 255", "pid": "1000"}),
            );
            set(
                o,
                "/spec/kubelet/systemReserved",
                json!({"memory": "double(memory_mib) * 0.01", "ephemeral-storage": "1Gi"}),
            );
        }),
        (
            "every open capacity reservation, and tagged targeted ones",
            |o| {
                set(
                    o,
                    "/spec/capacityReservationSelectorTerms",
                    json!([{"instanceMatchCriteria": "open"}, {"tags": {"team": "ml"}, "instanceMatchCriteria": "targeted"}]),
                )
            },
        ),
        ("HPC kubelet settings", |o| {
            set(o, "/spec/kubelet/evictionMaxPodGracePeriod", json!(60));
            set(o, "/spec/kubelet/imageGCHighThresholdPercent", json!(70));
            set(o, "/spec/kubelet/imageGCLowThresholdPercent", json!(50));
            set(o, "/spec/kubelet/cpuCFSQuota", json!(false));
        }),
        (
            "lone image GC high threshold above kubelet's default low one",
            |o| {
                set(o, "/spec/kubelet/imageGCHighThresholdPercent", json!(90));
            },
        ),
        ("placement group by name", |o| {
            set(
                o,
                "/spec/placementGroupSelector",
                json!({"name": "training"}),
            );
        }),
        ("a snapshot volume initialized at 300 MiB/s", |o| {
            set(
                o,
                "/spec/blockDeviceMappings/0/ebs/snapshotID",
                json!("snap-0123456789abcdef0"),
            );
            set(
                o,
                "/spec/blockDeviceMappings/0/ebs/volumeInitializationRate",
                json!(300),
            );
        }),
        ("connection tracking at EC2's bounds", |o| {
            set(
                o,
                "/spec/connectionTracking",
                json!({"tcpEstablishedTimeout": 432000, "udpStreamTimeout": 60, "udpTimeout": 30}),
            );
        }),
        (
            "P5-style interfaces: ENA primary, EFA-only on every card",
            |o| {
                o["spec"]
                    .as_object_mut()
                    .unwrap()
                    .remove("associatePublicIPAddress");
                set(
                    o,
                    "/spec/networkInterfaces",
                    json!([
                        {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"},
                        {"networkCardIndex": 0, "deviceIndex": 1, "interfaceType": "efa-only"},
                        {"networkCardIndex": 1, "deviceIndex": 0, "interfaceType": "efa-only"},
                        {"networkCardIndex": 2, "deviceIndex": 0, "interfaceType": "efa-only"},
                    ]),
                );
            },
        ),
        ("one interface with a public IP choice", |o| {
            set(o, "/spec/associatePublicIPAddress", json!(true));
            set(
                o,
                "/spec/networkInterfaces",
                json!([{"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"}]),
            );
        }),
        ("placement group by id", |o| {
            set(
                o,
                "/spec/placementGroupSelector",
                json!({"id": "pg-0123abcd"}),
            );
        }),
        ("cpuCFSQuota on Bottlerocket", |o| {
            set(o, &format!("{AMI}/0/alias"), json!("bottlerocket@latest"));
            set(o, "/spec/kubelet/cpuCFSQuota", json!(true));
        }),
        ("RAID0 instance store with AL2023", |o| {
            set(o, "/spec/instanceStorePolicy", json!("RAID0"))
        }),
        ("instance profile instead of role", |o| {
            common::remove(o, "/spec/role");
            set(o, "/spec/instanceProfile", json!("existing-profile"));
        }),
        ("custom images by name and owner", |o| {
            set(o, "/spec/amiFamily", json!("Custom"));
            set(
                o,
                AMI,
                json!([{"name": "my-image-*", "owner": "self"}, {"id": "ami-0123"}, {"ssmParameter": "/my/ami"}]),
            );
            set(o, "/spec/userData", json!("#!/bin/bash\necho hi"));
        }),
        ("alias with matching amiFamily", |o| {
            set(o, "/spec/amiFamily", json!("AL2023"))
        }),
        ("al2 latest", |o| {
            set(o, &format!("{AMI}/0/alias"), json!("al2@latest"))
        }),
        ("al2 pinned, with amiFamily and RAID0", |o| {
            set(o, &format!("{AMI}/0/alias"), json!("al2@v20240625"));
            set(o, "/spec/amiFamily", json!("AL2"));
            set(o, "/spec/instanceStorePolicy", json!("RAID0"));
        }),
        ("windows2019 latest", |o| {
            set(o, &format!("{AMI}/0/alias"), json!("windows2019@latest"))
        }),
        ("windows2022 latest with amiFamily", |o| {
            set(o, &format!("{AMI}/0/alias"), json!("windows2022@latest"));
            set(o, "/spec/amiFamily", json!("Windows2022"));
        }),
        ("windows2025 latest", |o| {
            set(o, &format!("{AMI}/0/alias"), json!("windows2025@latest"))
        }),
        ("Windows2019 family with an image id", |o| {
            set(o, "/spec/amiFamily", json!("Windows2019"));
            set(o, AMI, json!([{"id": "ami-0123"}]));
        }),
        ("bottlerocket pinned", |o| {
            set(o, &format!("{AMI}/0/alias"), json!("bottlerocket@v1.26.0"))
        }),
        ("no kubelet, no disks", |o| {
            common::remove(o, "/spec/kubelet");
            common::remove(o, "/spec/blockDeviceMappings");
        }),
    ];
    check_good_cases::<EC2NodeClass>("ec2nodeclass.yaml", EC2NodeClass::validate, &cases);
}

#[test]
fn nodeoverlay_bad_cases_are_refused_at_their_field() {
    let cases = [
        BadCase {
            name: "both price and priceAdjustment",
            edit: |o| set(o, "/spec/price", json!("0.5")),
            path: "spec",
            message: "cannot set both price and priceAdjustment",
        },
        BadCase {
            name: "unsigned adjustment",
            edit: |o| set(o, "/spec/priceAdjustment", json!("10%")),
            path: "spec.priceAdjustment",
            message: "must be a signed amount",
        },
        BadCase {
            name: "below -100%",
            edit: |o| set(o, "/spec/priceAdjustment", json!("-150%")),
            path: "spec.priceAdjustment",
            message: "no lower than -100%",
        },
        BadCase {
            name: "negative price",
            edit: |o| {
                common::remove(o, "/spec/priceAdjustment");
                set(o, "/spec/price", json!("-1"))
            },
            path: "spec.price",
            message: "must be a non-negative decimal",
        },
        BadCase {
            name: "capacity naming cpu",
            edit: |o| set(o, "/spec/capacity/cpu", json!("2")),
            path: "spec.capacity[cpu]",
            message: "cpu is restricted",
        },
        BadCase {
            name: "capacity naming pods",
            edit: |o| set(o, "/spec/capacity/pods", json!("10")),
            path: "spec.capacity[pods]",
            message: "pods is restricted",
        },
        BadCase {
            name: "capacity that is no quantity",
            edit: |o| set(o, "/spec/capacity/example.com~1license", json!("lots")),
            path: "spec.capacity[example.com/license]",
            message: "is not a resource quantity",
        },
        BadCase {
            name: "In without values",
            edit: |o| {
                set(
                    o,
                    "/spec/requirements/0",
                    json!({"key": "kubernetes.io/arch", "operator": "In"}),
                )
            },
            path: "spec.requirements[0].values",
            message: "operator In needs at least one value",
        },
        BadCase {
            name: "hostname requirement",
            edit: |o| {
                set(
                    o,
                    "/spec/requirements/0",
                    json!({"key": "kubernetes.io/hostname", "operator": "Exists"}),
                )
            },
            path: "spec.requirements[0].key",
            message: "is restricted",
        },
        BadCase {
            name: "minValues",
            edit: |o| set(o, "/spec/requirements/0/minValues", json!(1)),
            path: "spec.requirements[0].minValues",
            message: "minValues is a NodePool field",
        },
        BadCase {
            name: "weight above 10000",
            edit: |o| set(o, "/spec/weight", json!(10001)),
            path: "spec.weight",
            message: "must be between 1 and 10000",
        },
    ];
    check_bad_cases::<NodeOverlay>("nodeoverlay.yaml", NodeOverlay::validate, &cases);
}

#[test]
fn nodeoverlay_good_cases_pass_everywhere() {
    let cases: [GoodCase; 5] = [
        ("the fixture as written", |_| {}),
        ("an absolute discount", |o| {
            set(o, "/spec/priceAdjustment", json!("-0.01"))
        }),
        ("-100%", |o| set(o, "/spec/priceAdjustment", json!("-100%"))),
        ("a price override", |o| {
            common::remove(o, "/spec/priceAdjustment");
            set(o, "/spec/price", json!("5.00"))
        }),
        ("selecting the pool and nothing else", |o| {
            set(
                o,
                "/spec/requirements",
                json!([{"key": "adze.sh/nodepool", "operator": "In", "values": ["default"]}]),
            )
        }),
    ];
    check_good_cases::<NodeOverlay>("nodeoverlay.yaml", NodeOverlay::validate, &cases);
}

#[test]
fn static_pool_resource_limits_are_refused_by_adze_not_by_cel() {
    // Kept out of the CRD: a rule over every limits key needs a bound on the map the schema
    // does not have. A static pool's size is its replicas, so cpu or memory caps would be
    // accepted and do nothing; Adze refuses them, naming each.
    let mut object = fixture_json("nodepool.yaml");
    common::remove(&mut object, "/spec/weight");
    set(&mut object, "/spec/replicas", json!(2));
    set(&mut object, "/spec/limits/nodes", json!(4));
    let pool: NodePool = serde_json::from_value(object.clone()).unwrap();
    let err = pool.validate().unwrap_err();
    assert!(err.has_error_at("spec.limits[cpu]"), "{err}");
    assert!(err.has_error_at("spec.limits[memory]"), "{err}");
    assert!(!err.has_error_at("spec.limits[nodes]"), "{err}");
    assert!(
        err.to_string()
            .contains("a static NodePool (one with replicas) takes only limits.nodes"),
        "{err}"
    );
}

#[test]
fn a_nodepool_name_longer_than_a_label_value_is_refused_at_metadata_name() {
    let mut object = fixture_json("nodepool.yaml");
    let long = "a".repeat(64);
    set(&mut object, "/metadata/name", json!(long));
    let pool: NodePool = serde_json::from_value(object.clone()).unwrap();
    let err = pool.validate().unwrap_err();
    assert!(err.has_error_at("metadata.name"), "{err}");
    assert_eq!(
        err.to_string(),
        format!(
            "NodePool \"{}\" is invalid:\n  \
             - metadata.name: may be at most 63 characters, got 64: it becomes the value of the adze.sh/nodepool label of the pool's nodes",
            "a".repeat(64)
        )
    );

    // A 10,000-character name is not echoed back in full.
    set(&mut object, "/metadata/name", json!("b".repeat(10_000)));
    let pool: NodePool = serde_json::from_value(object.clone()).unwrap();
    let shown = pool.validate().unwrap_err().to_string();
    assert!(shown.len() < 400, "{shown}");
    assert!(shown.contains("(10000 characters)"), "{shown}");

    // Exactly 63 is a label value and passes.
    set(&mut object, "/metadata/name", json!("c".repeat(63)));
    let pool: NodePool = serde_json::from_value(object).unwrap();
    pool.validate().unwrap();
}
