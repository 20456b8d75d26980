//! The CRDs' CEL rules as a Kubernetes 1.25+ apiserver sees them (Adze's e2e control plane is
//! 1.20 and installs the CRDs without them, so these tests are the only place they run):
//!
//! - every rule of the committed CRD files parses, type-checks against the schema at its
//!   location and yields a bool, with valid messageExpression/reason/fieldPath, and uses
//!   `oldSelf` only where the apiserver can correlate old and new values;
//! - each rule's estimated cost, times how often it can run, fits the apiserver's per-rule and
//!   per-CRD limits, and everything a rule iterates or scans has a schema bound;
//! - evaluated one by one against valid and invalid objects, every rule passes on the valid
//!   ones and each invalid object fails exactly the rules expected, with their messages; every
//!   rule is seen both passing and failing.
//!
//! Parsing and evaluation: kube-cel (the `cel` crate with the Kubernetes extension functions);
//! type checking and cost estimation: `cel_harness::check`, ported from cel-go and the apiserver.

mod cel_harness;
mod common;

use std::collections::{BTreeMap, BTreeSet};

use cel_harness::{
    Container, Coverage, Evaluator, Outcome, RuleSite, all_rules,
    check::{self, PER_CALL_LIMIT, PER_CRD_LIMIT, PER_RULE_LIMIT},
    committed_crds, kind_of, schema_of,
};
use common::{fixture_json, remove, set};
use serde_json::{Value, json};

/// Reasons the apiserver accepts on a validation rule.
const REASONS: [&str; 4] = [
    "FieldValueRequired",
    "FieldValueForbidden",
    "FieldValueInvalid",
    "FieldValueDuplicate",
];

#[test]
fn chart_and_manifests_carry_the_same_crds() {
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    for (file, _) in committed_crds() {
        let chart = std::fs::read_to_string(root.join("charts/adze/crds").join(&file)).unwrap();
        let manifest =
            std::fs::read_to_string(root.join("manifests/crds").join(&file)).unwrap_or_default();
        assert_eq!(
            chart, manifest,
            "charts/adze/crds/{file} differs from manifests/crds/{file}"
        );
    }
}

fn compile_problems(site: &RuleSite) -> Vec<String> {
    let mut problems = Vec::new();
    match check::check(&site.rule, &site.schema) {
        Err(e) => problems.push(format!("does not compile: {e}")),
        Ok(report) if report.result_type != "bool" => problems.push(format!(
            "cel expression must evaluate to a bool, not {}",
            report.result_type
        )),
        Ok(report) => {
            if report.uses_old_self
                && let Some(c) = site.containers.iter().find(|c| {
                    matches!(
                        c,
                        Container::List {
                            map_list: false,
                            ..
                        }
                    )
                })
            {
                problems.push(format!(
                    "oldSelf cannot be used on the uncorrelatable portion of the schema ({c:?})"
                ));
            }
        }
    }
    if let Some(expr) = &site.message_expression {
        match check::check(expr, &site.schema) {
            Err(e) => problems.push(format!("messageExpression does not compile: {e}")),
            Ok(r) if r.result_type != "string" => problems.push(format!(
                "messageExpression must be a string, not {}",
                r.result_type
            )),
            Ok(_) => {}
        }
    }
    if let Some(message) = &site.message
        && (message.trim().is_empty() || message.contains('\n'))
    {
        problems.push("message must be non-empty and on one line".into());
    }
    if let Some(reason) = &site.reason
        && !REASONS.contains(&reason.as_str())
    {
        problems.push(format!("reason {reason:?} is not one of {REASONS:?}"));
    }
    if let Some(field_path) = &site.field_path {
        let mut node = &site.schema;
        for part in field_path.trim_start_matches('.').split('.') {
            match node.get("properties").and_then(|p| p.get(part)) {
                Some(child) => node = child,
                None => problems.push(format!("fieldPath {field_path} is not in the schema")),
            }
        }
    }
    problems
}

#[test]
fn every_rule_compiles_against_its_schema() {
    let sites = all_rules();
    let mut problems = Vec::new();
    for site in &sites {
        for problem in compile_problems(site) {
            problems.push(format!(
                "{} ({}) rule {:?}: {problem}",
                site.id(),
                site.file,
                site.rule
            ));
        }
    }
    assert!(sites.len() >= 50, "found only {} rules", sites.len());
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}

/// How many times a rule can run in one object: the product of the bounds of the lists and
/// maps above it (the apiserver's MaxCardinality); unbounded falls back to the request size.
fn cardinality(site: &RuleSite) -> u64 {
    let mut product: Option<u64> = Some(1);
    for c in &site.containers {
        let bound = match c {
            Container::List { max_items, .. } => *max_items,
            Container::Map { max_properties } => *max_properties,
        };
        product = product.zip(bound).map(|(p, b)| p.saturating_mul(b));
    }
    product.unwrap_or_else(|| {
        check::MAX_REQUEST_SIZE_BYTES / (check::min_serialized_size(&site.schema) + 1)
    })
}

/// Per-rule estimated cost times cardinality, and the CRD totals, against the apiserver limits.
fn cost_problems(sites: &[RuleSite]) -> (Vec<String>, BTreeMap<String, u64>, Vec<String>) {
    let mut problems = Vec::new();
    let mut totals: BTreeMap<String, u64> = BTreeMap::new();
    let mut table = Vec::new();
    for site in sites {
        let Ok(report) = check::check(&site.rule, &site.schema) else {
            continue; // reported by the compile test
        };
        let times = cardinality(site);
        let cost = report.max_cost.saturating_mul(times);
        table.push(format!(
            "{:>9} = {:>6} x {:>4}  {}",
            cost,
            report.max_cost,
            times,
            site.id()
        ));
        let total = totals.entry(site.crd.clone()).or_default();
        *total = total.saturating_add(cost);
        if let Some(expr) = &site.message_expression
            && let Ok(r) = check::check(expr, &site.schema)
        {
            *total = total.saturating_add(r.max_cost);
        }
        if report.max_cost > PER_CALL_LIMIT {
            problems.push(format!(
                "{}: estimated cost {} of one evaluation exceeds the runtime per-call limit {PER_CALL_LIMIT}: {}",
                site.id(),
                report.max_cost,
                site.rule
            ));
        }
        if cost > PER_RULE_LIMIT {
            problems.push(format!(
                "{}: estimated cost {cost} ({} per evaluation x {times}) exceeds the per-rule limit {PER_RULE_LIMIT}: {}",
                site.id(),
                report.max_cost,
                site.rule
            ));
        }
        for what in report.unbounded {
            problems.push(format!(
                "{}: {what} has no maxItems/maxProperties/maxLength in the schema: {}",
                site.id(),
                site.rule
            ));
        }
        if site.containers.iter().any(|c| {
            matches!(
                c,
                Container::List {
                    max_items: None,
                    ..
                } | Container::Map {
                    max_properties: None
                }
            )
        }) {
            problems.push(format!(
                "{}: sits below a list or map without maxItems/maxProperties (cardinality {times})",
                site.id()
            ));
        }
    }
    for (crd, total) in &totals {
        if *total > PER_CRD_LIMIT {
            problems.push(format!(
                "{crd}: total estimated cost {total} exceeds the per-CRD limit {PER_CRD_LIMIT}"
            ));
        }
    }
    (problems, totals, table)
}

#[test]
fn every_rule_fits_the_apiserver_cost_budget() {
    let sites = all_rules();
    let (problems, totals, table) = cost_problems(&sites);
    // The table is the evidence: `cargo test -p adze-api --test cel_rules -- --nocapture`.
    println!(
        "estimated cost = per evaluation x cardinality, rule\n{}",
        table.join("\n")
    );
    println!("per-CRD totals (limit {PER_CRD_LIMIT}): {totals:?}");
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}

// ---- evaluation ------------------------------------------------------------------------------

fn crd(kind: &str) -> Value {
    committed_crds()
        .into_iter()
        .map(|(_, crd)| crd)
        .find(|crd| kind_of(crd) == kind)
        .unwrap_or_else(|| panic!("no CRD of kind {kind}"))
}

/// An object to evaluate, what the rules must say about it, and its name for messages.
struct Case {
    name: String,
    kind: &'static str,
    object: Value,
    old: Option<Value>,
    /// (data path, message) of every rule that must fail; empty for a valid object.
    fails: Vec<(String, &'static str)>,
}

fn case(name: &str, kind: &'static str, object: Value) -> Case {
    Case {
        name: name.into(),
        kind,
        object,
        old: None,
        fails: Vec::new(),
    }
}

impl Case {
    fn fails(mut self, at: &str, message: &'static str) -> Case {
        self.fails.push((at.to_string(), message));
        self
    }

    fn updating(mut self, old: Value) -> Case {
        self.old = Some(old);
        self
    }
}

fn with(mut object: Value, edits: &[(&str, Value)]) -> Value {
    for (pointer, value) in edits {
        if value.is_null() {
            remove(&mut object, pointer);
        } else {
            set(&mut object, pointer, value.clone());
        }
    }
    object
}

const IN_NEEDS_VALUES: &str = "operators In and NotIn need at least one value";
const EXISTS_NO_VALUES: &str = "operators Exists and DoesNotExist take no values";
const GT_ONE_INTEGER: &str =
    "operators Gt, Lt, Gte and Lte need exactly one non-negative integer value";
const MIN_VALUES: &str = "minValues may not exceed the number of values of an In requirement";
const HOSTNAME: &str = "label \"kubernetes.io/hostname\" is restricted";
const KUBERNETES_IO: &str = "label domain \"kubernetes.io\" is restricted";
const K8S_IO: &str = "label domain \"k8s.io\" is restricted";
const ADZE_SH: &str = "label domain \"adze.sh\" is restricted";
const EMPTY_TAGS: &str = "empty tag keys or values aren't supported";
const STATIC_FOR_LIFE: &str = "replicas cannot be added to or removed from an existing NodePool (static and dynamic pools do not convert); create a new NodePool";

/// The requirement rules, appended as a new requirement at `list` (a JSON pointer).
fn requirement_cases(kind: &'static str, base: &Value, list: &str, at: &str) -> Vec<Case> {
    let n = base.pointer(list).unwrap().as_array().unwrap().len();
    let add = |name: &str, requirement: Value| {
        case(
            &format!("{kind} {list}: {name}"),
            kind,
            with(base.clone(), &[(&format!("{list}/{n}"), requirement)]),
        )
    };
    let item = format!("{at}[{n}]");
    let key = format!("{item}.key");
    vec![
        add(
            "valid NotIn, Exists, DoesNotExist, Lt",
            json!({"key": "example.com/a", "operator": "NotIn", "values": ["x"]}),
        ),
        add(
            "valid Exists",
            json!({"key": "example.com/b", "operator": "Exists"}),
        ),
        add(
            "valid DoesNotExist with empty values",
            json!({"key": "example.com/c", "operator": "DoesNotExist", "values": []}),
        ),
        add(
            "valid Lt",
            json!({"key": "example.com/d", "operator": "Lt", "values": ["10"]}),
        ),
        add(
            "valid restricted-domain exceptions",
            json!({"key": "node-restriction.kubernetes.io/x", "operator": "Exists"}),
        ),
        add(
            "valid sub-domain exception",
            json!({"key": "a.node-restriction.kubernetes.io/x", "operator": "Exists"}),
        ),
        add(
            "In without values",
            json!({"key": "example.com/a", "operator": "In"}),
        )
        .fails(&item, IN_NEEDS_VALUES),
        add(
            "NotIn with empty values",
            json!({"key": "example.com/a", "operator": "NotIn", "values": []}),
        )
        .fails(&item, IN_NEEDS_VALUES),
        add(
            "Exists with values",
            json!({"key": "example.com/a", "operator": "Exists", "values": ["x"]}),
        )
        .fails(&item, EXISTS_NO_VALUES),
        add(
            "Gt with a word",
            json!({"key": "example.com/a", "operator": "Gt", "values": ["ten"]}),
        )
        .fails(&item, GT_ONE_INTEGER),
        add(
            "Lt with two values",
            json!({"key": "example.com/a", "operator": "Lt", "values": ["1", "2"]}),
        )
        .fails(&item, GT_ONE_INTEGER),
        add(
            "Gt without values",
            json!({"key": "example.com/a", "operator": "Gt"}),
        )
        .fails(&item, GT_ONE_INTEGER),
        add(
            "Gte with a word",
            json!({"key": "example.com/a", "operator": "Gte", "values": ["ten"]}),
        )
        .fails(&item, GT_ONE_INTEGER),
        add(
            "Lte with two values",
            json!({"key": "example.com/a", "operator": "Lte", "values": ["1", "2"]}),
        )
        .fails(&item, GT_ONE_INTEGER),
        add(
            "minValues above the values",
            json!({"key": "example.com/a", "operator": "In", "values": ["x"], "minValues": 2}),
        )
        .fails(&item, MIN_VALUES),
        add(
            "hostname",
            json!({"key": "kubernetes.io/hostname", "operator": "Exists"}),
        )
        .fails(&key, HOSTNAME)
        .fails(&key, KUBERNETES_IO),
        add(
            "kubernetes.io domain",
            json!({"key": "kubernetes.io/custom", "operator": "Exists"}),
        )
        .fails(&key, KUBERNETES_IO),
        add(
            "kubernetes.io sub-domain",
            json!({"key": "team.kubernetes.io/custom", "operator": "Exists"}),
        )
        .fails(&key, KUBERNETES_IO),
        add(
            "k8s.io domain",
            json!({"key": "k8s.io/custom", "operator": "Exists"}),
        )
        .fails(&key, K8S_IO),
        add(
            "k8s.io sub-domain",
            json!({"key": "x.k8s.io/custom", "operator": "Exists"}),
        )
        .fails(&key, K8S_IO),
        add(
            "adze.sh domain",
            json!({"key": "adze.sh/custom", "operator": "Exists"}),
        )
        .fails(&key, ADZE_SH),
        add(
            "aws.adze.sh sub-domain",
            json!({"key": "aws.adze.sh/custom", "operator": "Exists"}),
        )
        .fails(&key, ADZE_SH),
    ]
}

fn nodepool_cases() -> Vec<Case> {
    let k = "NodePool";
    let base = fixture_json("nodepool.yaml");
    let labels = "/spec/template/metadata/labels";
    let at_labels = ".spec.template.metadata.labels";
    let label = |name: &str, key: &str| {
        case(
            &format!("NodePool label {name}"),
            k,
            with(
                base.clone(),
                &[(&format!("{labels}/{}", key.replace('/', "~1")), json!("x"))],
            ),
        )
    };
    let mut cases = vec![
        case("NodePool fixture", k, base.clone()),
        case("NodePool fixture, unchanged update", k, base.clone()).updating(base.clone()),
        case(
            "NodePool update of weight and class name",
            k,
            with(
                base.clone(),
                &[
                    ("/spec/weight", json!(7)),
                    ("/spec/template/spec/nodeClassRef/name", json!("other")),
                ],
            ),
        )
        .updating(base.clone()),
        label("allowed well-known", "topology.kubernetes.io/zone"),
        label("allowed capacity type", "adze.sh/capacity-type"),
        label("kubernetes.io", "kubernetes.io/custom").fails(at_labels, KUBERNETES_IO),
        label("k8s.io", "x.k8s.io/custom").fails(at_labels, K8S_IO),
        label("adze.sh", "adze.sh/nodepool").fails(at_labels, ADZE_SH),
        case(
            "NodePool requirement on its own pool label",
            k,
            with(
                base.clone(),
                &[(
                    "/spec/template/spec/requirements/6",
                    json!({"key": "adze.sh/nodepool", "operator": "In", "values": ["x"]}),
                )],
            ),
        )
        .fails(
            ".spec.template.spec.requirements",
            "label \"adze.sh/nodepool\" is restricted",
        ),
        case(
            "NodePool budget with schedule and no duration",
            k,
            with(
                base.clone(),
                &[("/spec/disruption/budgets/1/duration", Value::Null)],
            ),
        )
        .fails(
            ".spec.disruption.budgets[1]",
            "schedule and duration must be set together",
        ),
        case(
            "NodePool budget with duration and no schedule",
            k,
            with(
                base.clone(),
                &[("/spec/disruption/budgets/0/duration", json!("1h"))],
            ),
        )
        .fails(
            ".spec.disruption.budgets[0]",
            "schedule and duration must be set together",
        ),
        case(
            "NodePool changing the class group",
            k,
            with(
                base.clone(),
                &[(
                    "/spec/template/spec/nodeClassRef/group",
                    json!("other.example.com"),
                )],
            ),
        )
        .updating(base.clone())
        .fails(
            ".spec.template.spec.nodeClassRef",
            "nodeClassRef.group is immutable",
        ),
        case(
            "NodePool changing the class kind",
            k,
            with(
                base.clone(),
                &[(
                    "/spec/template/spec/nodeClassRef/kind",
                    json!("OtherNodeClass"),
                )],
            ),
        )
        .updating(base.clone())
        .fails(
            ".spec.template.spec.nodeClassRef",
            "nodeClassRef.kind is immutable",
        ),
        case(
            "NodePool made static by an update",
            k,
            with(
                base.clone(),
                &[("/spec/replicas", json!(2)), ("/spec/weight", Value::Null)],
            ),
        )
        .updating(with(base.clone(), &[("/spec/weight", Value::Null)]))
        .fails(".spec", STATIC_FOR_LIFE),
        case(
            "NodePool static no more",
            k,
            with(base.clone(), &[("/spec/weight", Value::Null)]),
        )
        .updating(with(
            base.clone(),
            &[("/spec/replicas", json!(2)), ("/spec/weight", Value::Null)],
        ))
        .fails(".spec", STATIC_FOR_LIFE),
        case(
            "NodePool scaled",
            k,
            with(
                base.clone(),
                &[("/spec/replicas", json!(5)), ("/spec/weight", Value::Null)],
            ),
        )
        .updating(with(
            base.clone(),
            &[("/spec/replicas", json!(2)), ("/spec/weight", Value::Null)],
        )),
        case(
            "NodePool static with a weight",
            k,
            with(base.clone(), &[("/spec/replicas", json!(2))]),
        )
        .fails(
            ".spec",
            "weight cannot be set on a static NodePool (one with replicas)",
        ),
    ];
    cases.extend(requirement_cases(
        k,
        &base,
        "/spec/template/spec/requirements",
        ".spec.template.spec.requirements",
    ));
    cases
}

fn nodeclaim_cases() -> Vec<Case> {
    let k = "NodeClaim";
    let base = fixture_json("nodeclaim.yaml");
    let mut cases = vec![
        case("NodeClaim fixture", k, base.clone()),
        case(
            "NodeClaim status update",
            k,
            with(base.clone(), &[("/status/nodeName", json!("other"))]),
        )
        .updating(base.clone()),
        case(
            "NodeClaim spec update",
            k,
            with(base.clone(), &[("/spec/expireAfter", json!("1h"))]),
        )
        .updating(base.clone())
        .fails(".spec", "spec is immutable"),
        case(
            "NodeClaim class group update",
            k,
            with(
                base.clone(),
                &[("/spec/nodeClassRef/group", json!("other.example.com"))],
            ),
        )
        .updating(base.clone())
        .fails(".spec", "spec is immutable")
        .fails(".spec.nodeClassRef", "nodeClassRef.group is immutable"),
        case(
            "NodeClaim class kind update",
            k,
            with(
                base.clone(),
                &[("/spec/nodeClassRef/kind", json!("OtherNodeClass"))],
            ),
        )
        .updating(base.clone())
        .fails(".spec", "spec is immutable")
        .fails(".spec.nodeClassRef", "nodeClassRef.kind is immutable"),
    ];
    cases.extend(requirement_cases(
        k,
        &base,
        "/spec/requirements",
        ".spec.requirements",
    ));
    cases
}

fn ec2nodeclass_cases() -> Vec<Case> {
    let k = "EC2NodeClass";
    let base = fixture_json("ec2nodeclass.yaml");
    // status.amis[].requirements carry no rules (see adze_api::schema::without_cel_rules).
    let edit = |name: &str, edits: &[(&str, Value)]| {
        case(
            &format!("EC2NodeClass {name}"),
            k,
            with(base.clone(), edits),
        )
    };
    let ami = |name: &str, terms: Value, family: Option<&str>| {
        let family = family.map_or(Value::Null, |f| json!(f));
        let mut object = with(base.clone(), &[("/spec/amiSelectorTerms", terms)]);
        if !family.is_null() {
            set(&mut object, "/spec/amiFamily", family);
        }
        case(&format!("EC2NodeClass amiSelectorTerms {name}"), k, object)
    };
    let raid0 = |mut c: Case| {
        set(&mut c.object, "/spec/instanceStorePolicy", json!("RAID0"));
        c
    };
    let cfs_quota = |mut c: Case| {
        set(&mut c.object, "/spec/kubelet/cpuCFSQuota", json!(true));
        c
    };
    let pid_limit = |mut c: Case| {
        set(&mut c.object, "/spec/kubelet/podPidsLimit", json!(4096));
        c
    };
    let set_kubelet = |field: &'static str, value: Value| {
        move |mut c: Case| {
            set(
                &mut c.object,
                &format!("/spec/kubelet/{field}"),
                value.clone(),
            );
            c
        }
    };
    let shutdown = set_kubelet("shutdownGracePeriod", json!("30s"));
    let critical = set_kubelet("shutdownGracePeriodCriticalPods", json!("10s"));
    let stream = set_kubelet("streamingConnectionIdleTimeout", json!("5m"));
    let memcg = set_kubelet("kernelMemcgNotification", json!(true));
    let terms = ".spec.amiSelectorTerms";
    let bdm = ".spec.blockDeviceMappings";
    let kubelet = ".spec.kubelet";
    vec![
        case("EC2NodeClass fixture", k, base.clone()),
        case("EC2NodeClass unchanged update", k, base.clone()).updating(base.clone()),
        ami("by tags with a family", json!([{"tags": {"team": "x"}}, {"name": "my-ami", "owner": "self"}]), Some("AL2023")),
        ami("by id", json!([{"id": "ami-0123456789abcdef0"}]), Some("Custom")),
        ami("by SSM parameter", json!([{"ssmParameter": "/my/ami"}]), Some("AL2023")),
        ami("Bottlerocket alias with its family", json!([{"alias": "bottlerocket@latest"}]), Some("Bottlerocket")),
        edit("instance profile instead of role", &[("/spec/role", Value::Null), ("/spec/instanceProfile", json!("profile"))]),
        edit("RAID0 on AL2023", &[("/spec/instanceStorePolicy", json!("RAID0"))]),
        edit("root volume from a snapshot, io2 with iops", &[
            ("/spec/blockDeviceMappings/0/ebs", json!({"snapshotID": "snap-0123456789abcdef0", "volumeType": "io2", "iops": 4000})),
        ]),
        edit("role and instance profile", &[("/spec/instanceProfile", json!("profile"))])
            .fails(".spec", "must specify exactly one of role or instanceProfile"),
        edit("neither role nor instance profile", &[("/spec/role", Value::Null)])
            .fails(".spec", "must specify exactly one of role or instanceProfile"),
        edit("role replaced by an instance profile", &[("/spec/role", Value::Null), ("/spec/instanceProfile", json!("profile"))])
            .updating(base.clone())
            .fails(".spec", "switching between role and instanceProfile is not supported; delete and recreate the EC2NodeClass"),
        ami("by id without a family", json!([{"id": "ami-0123456789abcdef0"}]), None)
            .fails(".spec", "amiFamily is required unless an amiSelectorTerm sets alias"),
        raid0(ami("Bottlerocket alias with RAID0", json!([{"alias": "bottlerocket@latest"}]), None))
            .fails(".spec", "instanceStorePolicy is not supported with Bottlerocket"),
        raid0(ami("Bottlerocket family with RAID0", json!([{"id": "ami-0123456789abcdef0"}]), Some("Bottlerocket")))
            .fails(".spec", "instanceStorePolicy is not supported with Bottlerocket"),
        ami("AL2 alias with its family", json!([{"alias": "al2@v20240625"}]), Some("AL2")),
        raid0(ami("AL2 alias with RAID0", json!([{"alias": "al2@latest"}]), None)),
        ami("Windows 2019 alias", json!([{"alias": "windows2019@latest"}]), None),
        ami("Windows 2022 alias with its family", json!([{"alias": "windows2022@latest"}]), Some("Windows2022")),
        ami("Windows 2025 alias", json!([{"alias": "windows2025@latest"}]), None),
        raid0(ami("Windows alias with RAID0", json!([{"alias": "windows2022@latest"}]), None))
            .fails(".spec", "instanceStorePolicy is not supported with Windows"),
        raid0(ami("Windows family with RAID0", json!([{"id": "ami-0123456789abcdef0"}]), Some("Windows2025")))
            .fails(".spec", "instanceStorePolicy is not supported with Windows"),
        ami("pinned Windows alias", json!([{"alias": "windows2019@v20250101"}]), None)
            .fails(&format!("{terms}[0].alias"), "windows aliases may only use version latest (windows2019@latest, windows2022@latest, windows2025@latest)"),
        ami("AL2 family with an al2023 alias", json!([{"alias": "al2023@latest"}]), Some("AL2"))
            .fails(".spec", "amiFamily must match the family of the amiSelectorTerms alias"),
        ami("Windows2019 family with a windows2022 alias", json!([{"alias": "windows2022@latest"}]), Some("Windows2019"))
            .fails(".spec", "amiFamily must match the family of the amiSelectorTerms alias"),
        ami("alias of another family", json!([{"alias": "al2023@latest"}]), Some("Bottlerocket"))
            .fails(".spec", "amiFamily must match the family of the amiSelectorTerms alias"),
        ami("alias with another term", json!([{"alias": "al2023@latest"}, {"id": "ami-0123456789abcdef0"}]), None)
            .fails(terms, "an amiSelectorTerm with alias must be the only term"),
        ami("term with only an owner", json!([{"owner": "amazon"}]), Some("AL2023"))
            .fails(&format!("{terms}[0]"), "an amiSelectorTerm needs alias, tags, id, name or ssmParameter"),
        ami("alias with an owner", json!([{"alias": "al2023@latest", "owner": "self"}]), None)
            .fails(&format!("{terms}[0]"), "alias cannot be combined with other fields in an amiSelectorTerm"),
        ami("id with a name", json!([{"id": "ami-0123456789abcdef0", "name": "x"}]), Some("AL2023"))
            .fails(&format!("{terms}[0]"), "id cannot be combined with other fields in an amiSelectorTerm"),
        ami("SSM parameter with an owner", json!([{"ssmParameter": "/my/ami", "owner": "self"}]), Some("AL2023"))
            .fails(&format!("{terms}[0]"), "ssmParameter cannot be combined with other fields in an amiSelectorTerm"),
        ami("alias of an unknown family", json!([{"alias": "ubuntu@latest"}]), None)
            .fails(&format!("{terms}[0].alias"), "alias family must be one of al2, al2023, bottlerocket, windows2019, windows2022, windows2025"),
        ami("tag with an empty value", json!([{"tags": {"team": ""}}]), Some("AL2023"))
            .fails(&format!("{terms}[0].tags"), EMPTY_TAGS),
        edit("two root volumes", &[("/spec/blockDeviceMappings/1", json!({"deviceName": "/dev/xvdb", "rootVolume": true, "ebs": {"volumeSize": "10Gi"}}))])
            .fails(bdm, "at most one blockDeviceMapping may be the rootVolume"),
        edit("ebs without size or snapshot", &[("/spec/blockDeviceMappings/0/ebs", json!({"volumeType": "gp3"}))])
            .fails(&format!("{bdm}[0].ebs"), "ebs needs volumeSize or snapshotID"),
        edit("iops on gp2", &[("/spec/blockDeviceMappings/0/ebs", json!({"volumeSize": "10Gi", "volumeType": "gp2", "iops": 100}))])
            .fails(&format!("{bdm}[0].ebs"), "iops needs volumeType io1, io2 or gp3"),
        edit("throughput on io2", &[("/spec/blockDeviceMappings/0/ebs/volumeType", json!("io2"))])
            .fails(&format!("{bdm}[0].ebs"), "throughput needs volumeType gp3"),
        edit("soft threshold without grace period", &[("/spec/kubelet/evictionSoft/nodefs.available", json!("10%"))])
            .fails(kubelet, "every evictionSoft signal needs an evictionSoftGracePeriod"),
        edit("soft thresholds and no grace periods", &[("/spec/kubelet/evictionSoftGracePeriod", Value::Null)])
            .fails(kubelet, "every evictionSoft signal needs an evictionSoftGracePeriod"),
        edit("grace period without soft threshold", &[("/spec/kubelet/evictionSoftGracePeriod/nodefs.available", json!("1m"))])
            .fails(kubelet, "every evictionSoftGracePeriod signal needs an evictionSoft threshold"),
        edit("unknown hard eviction signal", &[("/spec/kubelet/evictionHard/memory.free", json!("1Gi"))])
            .fails(&format!("{kubelet}.evictionHard"), "valid keys for evictionHard are memory.available, nodefs.available, nodefs.inodesFree, imagefs.available, imagefs.inodesFree, pid.available"),
        edit("unknown soft eviction signal", &[
            ("/spec/kubelet/evictionSoft/memory.free", json!("1Gi")),
            ("/spec/kubelet/evictionSoftGracePeriod/memory.free", json!("1m")),
        ])
            .fails(&format!("{kubelet}.evictionSoft"), "valid keys for evictionSoft are memory.available, nodefs.available, nodefs.inodesFree, imagefs.available, imagefs.inodesFree, pid.available")
            .fails(&format!("{kubelet}.evictionSoftGracePeriod"), "valid keys for evictionSoftGracePeriod are memory.available, nodefs.available, nodefs.inodesFree, imagefs.available, imagefs.inodesFree, pid.available"),
        edit("image GC thresholds in order", &[
            ("/spec/kubelet/imageGCHighThresholdPercent", json!(70)),
            ("/spec/kubelet/imageGCLowThresholdPercent", json!(50)),
        ]),
        edit("image GC thresholds equal", &[
            ("/spec/kubelet/imageGCHighThresholdPercent", json!(70)),
            ("/spec/kubelet/imageGCLowThresholdPercent", json!(70)),
        ])
            .fails(kubelet, "imageGCLowThresholdPercent must be less than imageGCHighThresholdPercent"),
        edit("lone image GC high threshold at kubelet's default low one", &[("/spec/kubelet/imageGCHighThresholdPercent", json!(80))])
            .fails(kubelet, "imageGCHighThresholdPercent alone must exceed kubelet's default imageGCLowThresholdPercent (80)"),
        edit("lone image GC low threshold at kubelet's default high one", &[("/spec/kubelet/imageGCLowThresholdPercent", json!(85))])
            .fails(kubelet, "imageGCLowThresholdPercent alone must be below kubelet's default imageGCHighThresholdPercent (85)"),
        edit("cpuCFSQuota on AL2023", &[("/spec/kubelet/cpuCFSQuota", json!(false))]),
        cfs_quota(ami("Windows alias with cpuCFSQuota", json!([{"alias": "windows2019@latest"}]), None))
            .fails(".spec", "kubelet.cpuCFSQuota is not supported with Windows, Custom"),
        cfs_quota(ami("Windows family with cpuCFSQuota", json!([{"id": "ami-0123456789abcdef0"}]), Some("Windows2022")))
            .fails(".spec", "kubelet.cpuCFSQuota is not supported with Windows, Custom"),
        edit("podPidsLimit on AL2023", &[("/spec/kubelet/podPidsLimit", json!(4096))]),
        pid_limit(ami("Windows alias with podPidsLimit", json!([{"alias": "windows2025@latest"}]), None))
            .fails(".spec", "kubelet.podPidsLimit is not supported with Windows, Custom"),
        {
            // Custom gets no user data from Adze: settings that shape no planning would
            // never reach kubelet.
            let mut c = ami("Custom family with kubelet tuning", json!([{"id": "ami-0123456789abcdef0"}]), Some("Custom"));
            set(&mut c.object, "/spec/kubelet/evictionMaxPodGracePeriod", json!(60));
            set(&mut c.object, "/spec/kubelet/imageGCHighThresholdPercent", json!(90));
            set(&mut c.object, "/spec/kubelet/imageGCLowThresholdPercent", json!(70));
            set(&mut c.object, "/spec/kubelet/eventRecordQPS", json!(10));
            set(&mut c.object, "/spec/kubelet/eventBurst", json!(20));
            set(&mut c.object, "/spec/kubelet/kubeAPIQPS", json!(30));
            set(&mut c.object, "/spec/kubelet/kubeAPIBurst", json!(60));
            c
            .fails(".spec", "kubelet.evictionMaxPodGracePeriod is not supported with Custom")
            .fails(".spec", "kubelet.imageGCHighThresholdPercent is not supported with Custom")
            .fails(".spec", "kubelet.imageGCLowThresholdPercent is not supported with Custom")
            .fails(".spec", "kubelet.eventRecordQPS is not supported with Custom")
            .fails(".spec", "kubelet.eventBurst is not supported with Custom")
            .fails(".spec", "kubelet.kubeAPIQPS is not supported with Custom")
            .fails(".spec", "kubelet.kubeAPIBurst is not supported with Custom")
        },
        ami("Custom family with only planning settings", json!([{"id": "ami-0123456789abcdef0"}]), Some("Custom")),
        edit("the shutdown grace, stream timeout and memcg notification on AL2023", &[
            ("/spec/kubelet/shutdownGracePeriod", json!("2m30s")),
            ("/spec/kubelet/shutdownGracePeriodCriticalPods", json!("30s")),
            ("/spec/kubelet/streamingConnectionIdleTimeout", json!("5m")),
            ("/spec/kubelet/kernelMemcgNotification", json!(true)),
        ]),
        edit("critical pods' shutdown grace above the whole", &[
            ("/spec/kubelet/shutdownGracePeriod", json!("30s")),
            ("/spec/kubelet/shutdownGracePeriodCriticalPods", json!("1m")),
        ])
            .fails(kubelet, "shutdownGracePeriodCriticalPods may not exceed shutdownGracePeriod"),
        edit("critical pods' shutdown grace alone", &[("/spec/kubelet/shutdownGracePeriodCriticalPods", json!("10s"))])
            .fails(kubelet, "shutdownGracePeriodCriticalPods may not exceed shutdownGracePeriod"),
        shutdown(ami("AL2 alias with shutdownGracePeriod", json!([{"alias": "al2@latest"}]), None))
            .fails(".spec", "kubelet.shutdownGracePeriod is not supported with AL2, Windows, Custom"),
        shutdown(ami("Windows family with shutdownGracePeriod", json!([{"id": "ami-0123456789abcdef0"}]), Some("Windows2019")))
            .fails(".spec", "kubelet.shutdownGracePeriod is not supported with AL2, Windows, Custom"),
        critical(shutdown(ami("AL2 alias with shutdownGracePeriodCriticalPods", json!([{"alias": "al2@latest"}]), None)))
            .fails(".spec", "kubelet.shutdownGracePeriod is not supported with AL2, Windows, Custom")
            .fails(".spec", "kubelet.shutdownGracePeriodCriticalPods is not supported with AL2, Windows, Custom"),
        critical(shutdown(ami("Bottlerocket alias with shutdownGracePeriod", json!([{"alias": "bottlerocket@latest"}]), None))),
        stream(ami("Bottlerocket alias with streamingConnectionIdleTimeout", json!([{"alias": "bottlerocket@v1.20.0"}]), None))
            .fails(".spec", "kubelet.streamingConnectionIdleTimeout is not supported with Bottlerocket, Custom"),
        stream(ami("AL2 alias with streamingConnectionIdleTimeout", json!([{"alias": "al2@latest"}]), None)),
        memcg(ami("Windows alias with kernelMemcgNotification", json!([{"alias": "windows2022@latest"}]), None))
            .fails(".spec", "kubelet.kernelMemcgNotification is not supported with Bottlerocket, Windows, Custom"),
        memcg(ami("Bottlerocket family with kernelMemcgNotification", json!([{"id": "ami-0123456789abcdef0"}]), Some("Bottlerocket")))
            .fails(".spec", "kubelet.kernelMemcgNotification is not supported with Bottlerocket, Windows, Custom"),
        edit("snapshot volume with an initialization rate", &[
            ("/spec/blockDeviceMappings/0/ebs/snapshotID", json!("snap-0123456789abcdef0")),
            ("/spec/blockDeviceMappings/0/ebs/volumeInitializationRate", json!(200)),
        ]),
        edit("initialization rate without a snapshot", &[("/spec/blockDeviceMappings/0/ebs/volumeInitializationRate", json!(200))])
            .fails(".spec.blockDeviceMappings[0].ebs", "volumeInitializationRate needs snapshotID"),
        edit("ENA primary and an EFA-only interface", &[("/spec/associatePublicIPAddress", Value::Null), ("/spec/networkInterfaces", json!([
            {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"},
            {"networkCardIndex": 0, "deviceIndex": 1, "interfaceType": "efa-only"},
        ]))]),
        edit("no primary interface", &[("/spec/networkInterfaces", json!([
            {"networkCardIndex": 0, "deviceIndex": 1, "interfaceType": "interface"},
        ]))])
            .fails(".spec.networkInterfaces", "networkInterfaces must include the primary interface: networkCardIndex 0, deviceIndex 0, interfaceType interface"),
        edit("a repeated card and device", &[("/spec/associatePublicIPAddress", Value::Null), ("/spec/networkInterfaces", json!([
            {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"},
            {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"},
        ]))])
            .fails(".spec.networkInterfaces", "each (networkCardIndex, deviceIndex) pair may appear only once in networkInterfaces"),
        edit("public IP choice with one interface", &[
            ("/spec/associatePublicIPAddress", json!(true)),
            ("/spec/networkInterfaces", json!([{"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"}])),
        ]),
        edit("public IP choice with two interfaces", &[
            ("/spec/associatePublicIPAddress", json!(true)),
            ("/spec/networkInterfaces", json!([
                {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"},
                {"networkCardIndex": 1, "deviceIndex": 0, "interfaceType": "efa-only"},
            ])),
        ])
            .fails(".spec", "associatePublicIPAddress cannot be set with more than one networkInterface (EC2 refuses the combination)"),
        edit("placement group by name", &[("/spec/placementGroupSelector", json!({"name": "training"}))]),
        edit("placement group by id and name", &[("/spec/placementGroupSelector", json!({"id": "pg-0123", "name": "training"}))])
            .fails(".spec.placementGroupSelector", "placementGroupSelector needs exactly one of id or name"),
        edit("empty placement group selector", &[("/spec/placementGroupSelector", json!({}))])
            .fails(".spec.placementGroupSelector", "placementGroupSelector needs exactly one of id or name"),
        edit("unknown kubeReserved resource", &[("/spec/kubelet/kubeReserved/gpu", json!("1"))])
            .fails(&format!("{kubelet}.kubeReserved"), "valid keys for kubeReserved are cpu, memory, ephemeral-storage, pid"),
        edit("unknown systemReserved resource", &[("/spec/kubelet/systemReserved/gpu", json!("1"))])
            .fails(&format!("{kubelet}.systemReserved"), "valid keys for systemReserved are cpu, memory, ephemeral-storage, pid"),
        edit("empty security group term", &[("/spec/securityGroupSelectorTerms/1", json!({}))])
            .fails(".spec.securityGroupSelectorTerms[1]", "a securityGroupSelectorTerm needs tags, id or name"),
        edit("security group id with tags", &[("/spec/securityGroupSelectorTerms/1", json!({"id": "sg-0123456789abcdef0", "tags": {"a": "b"}}))])
            .fails(".spec.securityGroupSelectorTerms[1]", "id cannot be combined with other fields in a securityGroupSelectorTerm"),
        edit("security group name with tags", &[("/spec/securityGroupSelectorTerms/1/tags", json!({"a": "b"}))])
            .fails(".spec.securityGroupSelectorTerms[1]", "name cannot be combined with other fields in a securityGroupSelectorTerm"),
        edit("security group tag with an empty key", &[("/spec/securityGroupSelectorTerms/0/tags", json!({"": "x"}))])
            .fails(".spec.securityGroupSelectorTerms[0].tags", EMPTY_TAGS),
        edit("security group by id", &[("/spec/securityGroupSelectorTerms/1", json!({"id": "sg-0123456789abcdef0"}))]),
        edit("capacity reservation by id", &[("/spec/capacityReservationSelectorTerms", json!([{"id": "cr-0123456789abcdef0"}]))]),
        edit("capacity reservation by tags and owner", &[("/spec/capacityReservationSelectorTerms", json!([{"tags": {"team": "ml"}, "ownerID": "012345678901"}]))]),
        edit("empty capacity reservation term", &[("/spec/capacityReservationSelectorTerms", json!([{}]))])
            .fails(".spec.capacityReservationSelectorTerms[0]", "a capacityReservationSelectorTerm needs tags, id or instanceMatchCriteria"),
        edit("capacity reservations by match criteria alone", &[("/spec/capacityReservationSelectorTerms", json!([{"instanceMatchCriteria": "open"}]))]),
        edit("capacity reservations by tags and match criteria", &[("/spec/capacityReservationSelectorTerms", json!([{"tags": {"team": "ml"}, "instanceMatchCriteria": "targeted"}]))]),
        edit("capacity reservation id with match criteria", &[("/spec/capacityReservationSelectorTerms", json!([{"id": "cr-0123", "instanceMatchCriteria": "open"}]))])
            .fails(".spec.capacityReservationSelectorTerms[0]", "id cannot be combined with other fields in a capacityReservationSelectorTerm"),
        edit("capacity reservation tag with an empty value", &[("/spec/capacityReservationSelectorTerms", json!([{"tags": {"a": ""}}]))])
            .fails(".spec.capacityReservationSelectorTerms[0].tags", EMPTY_TAGS),
        edit("capacity reservation id with owner", &[("/spec/capacityReservationSelectorTerms", json!([{"id": "cr-0123", "ownerID": "012345678901"}]))])
            .fails(".spec.capacityReservationSelectorTerms[0]", "id cannot be combined with other fields in a capacityReservationSelectorTerm"),
        edit("empty subnet term", &[("/spec/subnetSelectorTerms/1", json!({}))])
            .fails(".spec.subnetSelectorTerms[1]", "a subnetSelectorTerm needs tags or id"),
        edit("subnet id with tags", &[("/spec/subnetSelectorTerms/1/tags", json!({"a": "b"}))])
            .fails(".spec.subnetSelectorTerms[1]", "id cannot be combined with tags in a subnetSelectorTerm"),
        edit("subnet tag with an empty value", &[("/spec/subnetSelectorTerms/0/tags", json!({"a": ""}))])
            .fails(".spec.subnetSelectorTerms[0].tags", EMPTY_TAGS),
        edit("cluster ownership tag", &[("/spec/tags/kubernetes.io~1cluster~1demo", json!("owned"))])
            .fails(".spec.tags", "tag keys used by Adze and EKS to track ownership are restricted"),
        edit("Adze's own tag", &[("/spec/tags/aws.adze.sh~1ec2nodeclass", json!("x"))])
            .fails(".spec.tags", "tag keys used by Adze and EKS to track ownership are restricted"),
    ]
}

fn nodeoverlay_cases() -> Vec<Case> {
    let k = "NodeOverlay";
    let base = fixture_json("nodeoverlay.yaml");
    let mut cases = vec![
        case("NodeOverlay fixture", k, base.clone()),
        case(
            "NodeOverlay price and priceAdjustment",
            k,
            with(base.clone(), &[("/spec/price", json!("0.5"))]),
        )
        .fails(".spec", "cannot set both price and priceAdjustment"),
        case(
            "NodeOverlay capacity naming memory",
            k,
            with(base.clone(), &[("/spec/capacity/memory", json!("1Gi"))]),
        )
        .fails(
            ".spec.capacity",
            "cpu, memory, ephemeral-storage and pods are restricted: an overlay adds extended resources only",
        ),
    ];
    cases.push(
        case(
            "NodeOverlay requirement with minValues",
            k,
            with(
                base.clone(),
                &[("/spec/requirements/0/minValues", json!(1))],
            ),
        )
        .fails(".spec.requirements", OVERLAY_MIN_VALUES),
    );
    let mut requirements = requirement_cases(k, &base, "/spec/requirements", ".spec.requirements");
    for c in &mut requirements {
        if c.name.ends_with("minValues above the values") {
            c.fails
                .push((".spec.requirements".to_string(), OVERLAY_MIN_VALUES));
        }
    }
    cases.extend(requirements);
    cases
}

const OVERLAY_MIN_VALUES: &str =
    "minValues is a NodePool field; an overlay selects instance types, it asks for no diversity";

fn all_cases() -> Vec<Case> {
    let mut cases = nodepool_cases();
    cases.extend(nodeclaim_cases());
    cases.extend(ec2nodeclass_cases());
    cases.extend(nodeoverlay_cases());
    cases
}

#[test]
fn every_rule_passes_valid_objects_and_fails_the_invalid_one_it_guards() {
    let crds: BTreeMap<&str, (Value, Evaluator)> =
        ["NodePool", "NodeClaim", "EC2NodeClass", "NodeOverlay"]
            .into_iter()
            .map(|k| {
                let crd = crd(k);
                let evaluator = Evaluator::new(&crd);
                (k, (crd, evaluator))
            })
            .collect();
    let mut coverage = Coverage::default();
    let mut problems = Vec::new();
    let cases = all_cases();
    for case in &cases {
        let (crd, evaluator) = &crds[case.kind];
        // The object must get past the OpenAPI checks, or CEL never runs on it.
        let mut schema_failures = Vec::new();
        common::check_value(schema_of(crd), &case.object, "", &mut schema_failures);
        if !schema_failures.is_empty() {
            problems.push(format!(
                "{}: refused by the schema before CEL: {schema_failures:?}",
                case.name
            ));
        }
        let outcomes = evaluator.evaluate(&case.object, case.old.as_ref());
        coverage.record(&outcomes);
        let mut failed = BTreeSet::new();
        for (id, outcome) in &outcomes {
            match outcome {
                Outcome::Pass => {}
                Outcome::Fail { at, message } => {
                    failed.insert((at.clone(), message.clone()));
                }
                Outcome::Error { at, error } => {
                    problems.push(format!("{}: {id} at {at} errored: {error}", case.name))
                }
            }
        }
        let expected: BTreeSet<(String, String)> = case
            .fails
            .iter()
            .map(|(at, m)| (at.clone(), m.to_string()))
            .collect();
        if failed != expected {
            problems.push(format!(
                "{}: expected failures {expected:?}, got {failed:?}",
                case.name
            ));
        }
    }
    for site in all_rules() {
        let id = site.id();
        if !coverage.passed.contains(&id) {
            problems.push(format!("{id} ({}) never passed in any case", site.rule));
        }
        if !coverage.failed.contains(&id) {
            problems.push(format!("{id} ({}) never failed in any case", site.rule));
        }
    }
    println!(
        "{} cases, {} rules seen passing, {} seen failing",
        cases.len(),
        coverage.passed.len(),
        coverage.failed.len()
    );
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}

// ---- the harness itself ----------------------------------------------------------------------

fn requirement_schema() -> Value {
    let crd = crd("NodeClaim");
    schema_of(&crd)["properties"]["spec"]["properties"]["requirements"]["items"].clone()
}

#[test]
fn the_checker_refuses_what_the_apiserver_refuses() {
    let schema = requirement_schema();
    let refused = [
        ("self.operater == 'In'", "undefined field 'operater'"),
        ("self.operator == 1", "no matching overload"),
        (
            "self.values.all(v, v.matches('['))",
            "invalid regular expression",
        ),
        ("self.operator.startsWith(1)", "no matching overload"),
        ("size(self.key) > 0 && self.key(", "syntax error"),
        ("self.values.isSorted()", "not known to the test harness"),
        ("other.key == 'x'", "undeclared reference to 'other'"),
        (
            "self.key in ['a', 1]",
            "expected type 'string' but found 'int'",
        ),
    ];
    for (rule, expected) in refused {
        let err = check::check(rule, &schema).expect_err(rule);
        assert!(err.contains(expected), "{rule}: {err}");
    }
    let report = check::check("self.operator", &schema).unwrap();
    assert_eq!(report.result_type, "string");
    let report = check::check("size(self.values) >= self.minValues", &schema).unwrap();
    assert_eq!(report.result_type, "bool");
}

#[test]
fn the_cost_check_flags_unbounded_lists_and_strings() {
    // requirements[].values without maxItems and its strings without maxLength.
    let mut schema = requirement_schema();
    let values = &mut schema["properties"]["values"];
    values.as_object_mut().unwrap().remove("maxItems");
    values["items"].as_object_mut().unwrap().remove("maxLength");
    let report = check::check(
        "self.values.all(v, v.matches('^[0-9]+$') && v.contains('x'))",
        &schema,
    )
    .unwrap();
    assert_eq!(report.unbounded.len(), 3, "{:?}", report.unbounded);
    assert!(report.max_cost > PER_RULE_LIMIT, "{}", report.max_cost);

    // Bounded, the same rule is cheap.
    let bounded = check::check(
        "self.values.all(v, v.matches('^[0-9]+$') && v.contains('x'))",
        &requirement_schema(),
    )
    .unwrap();
    assert!(bounded.unbounded.is_empty(), "{:?}", bounded.unbounded);
    assert!(bounded.max_cost < 100_000, "{}", bounded.max_cost);

    // A rule under an unbounded list: cardinality from the 3 MiB request size.
    let mut site = all_rules()
        .into_iter()
        .find(|s| s.path.ends_with("requirements[]"))
        .unwrap();
    site.containers = vec![Container::List {
        max_items: None,
        map_list: false,
    }];
    let (problems, _, _) = cost_problems(&[site]);
    assert!(
        problems
            .iter()
            .any(|p| p.contains("without maxItems/maxProperties")),
        "{problems:?}"
    );
}

#[test]
fn evaluation_binds_self_and_old_self_at_the_rule_location() {
    let evaluator = Evaluator::new(&crd("NodeClaim"));
    let old = fixture_json("nodeclaim.yaml");
    let new = with(old.clone(), &[("/spec/expireAfter", json!("1h"))]);
    // On create the transition rules are skipped; on update they compare the spec.
    assert!(
        evaluator
            .evaluate(&new, None)
            .iter()
            .all(|(id, _)| !id.starts_with("NodeClaim .spec #0"))
    );
    let outcomes = evaluator.evaluate(&new, Some(&old));
    assert!(outcomes.contains(&(
        "NodeClaim .spec #0".into(),
        Outcome::Fail {
            at: ".spec".into(),
            message: "spec is immutable".into()
        }
    )));
}
