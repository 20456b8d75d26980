//! Hostile scenario files: each is refused quickly with a message naming the document and
//! the field, never a wrapped sum, an allocation failure or a stack overflow. And a property
//! test: mutated and arbitrary scenario text either parses or is a `ScenarioError`.

// CPU time of the test's own thread: a loaded machine does not fail the bound.
use cpu_time::ThreadTime as Instant;
use std::time::Duration;

use adze_provisioner::simulate::{self, Scenario, ScenarioError};
use proptest::prelude::*;

const INFLATE: &str = include_str!("../../examples/inflate.yaml");

/// Generous: each of these is refused in milliseconds; the bugs took seconds or forever.
const QUICK: Duration = Duration::from_secs(2);

fn refused(yaml: &str) -> String {
    let start = Instant::now();
    let err = Scenario::parse(yaml).expect_err("the scenario is refused");
    assert!(start.elapsed() < QUICK, "took {:?}", start.elapsed());
    err.to_string()
}

fn pod(name: &str, cpu: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}}}\nspec: {{containers: [{{name: a, resources: {{requests: {{cpu: \"{cpu}\", memory: 1Gi}}}}}}]}}\n"
    )
}

#[test]
fn a_pod_asking_for_i64_max_cpu_is_refused_naming_the_pod_and_the_field() {
    let yaml = [
        INFLATE.to_string(),
        pod("small-a", "500m"),
        pod("greedy", "9223372036854775807"),
        pod("small-b", "500m"),
    ]
    .join("---\n");
    let err = refused(&yaml);
    for part in [
        "pod default/greedy",
        "spec.containers[0].resources.requests.cpu",
        "\"9223372036854775807\"",
        "2^62",
    ] {
        assert!(err.contains(part), "{part:?} not in {err}");
    }
}

#[test]
fn the_largest_accepted_request_is_never_packed_with_other_pods() {
    // Just inside the quantity bound: the plan must leave it unschedulable, not wrap the
    // sum of requests into something that fits the smallest type.
    let yaml = [
        INFLATE.to_string(),
        pod("small-a", "500m"),
        pod("greedy", "4611686018427387"),
        pod("small-b", "500m"),
    ]
    .join("---\n");
    let scenario = Scenario::parse(&yaml).unwrap();
    let plan = simulate::run(&scenario, 60).plan;
    assert!(
        plan.unschedulable.iter().any(|u| u.pod.ends_with("greedy")),
        "{:?}",
        plan.unschedulable
    );
    for claim in &plan.new_claims {
        assert!(
            claim.pods.iter().all(|p| !p.ends_with("greedy")),
            "{claim:?}"
        );
    }
}

#[test]
fn a_quantity_with_a_minimum_i32_exponent_is_refused_fast() {
    let yaml = pod("tiny", "1e-2147483648");
    let err = refused(&yaml);
    assert!(err.contains("pod default/tiny"), "{err}");
    assert!(err.contains("exponent out of range"), "{err}");
}

#[test]
fn a_deployment_with_i32_max_replicas_is_refused_naming_spec_replicas() {
    let yaml = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: {replicas: 2147483647, selector: {}, template: {spec: {containers: []}}}\n";
    let err = refused(yaml);
    assert!(
        err.starts_with("document 1 (Deployment web): spec.replicas:"),
        "{err}"
    );
    assert!(
        err.contains("100000") && err.contains("2147483647"),
        "{err}"
    );
}

#[test]
fn an_alias_bomb_is_refused_quickly() {
    // Ten levels of ten aliases each: 10^10 nodes once expanded, from 600 bytes.
    let mut yaml =
        String::from("apiVersion: v1\nkind: Pod\nmetadata:\n  name: bomb\n  annotations:\n");
    yaml += "    a: &a [x, x, x, x, x, x, x, x, x, x]\n";
    for level in 1..10u8 {
        let (prev, this) = ((b'a' + level - 1) as char, (b'a' + level) as char);
        yaml += &format!(
            "    {this}: &{this} [{}]\n",
            vec![format!("*{prev}"); 10].join(", ")
        );
    }
    let err = refused(&format!("{INFLATE}---\n{yaml}"));
    let bomb_doc = INFLATE.lines().filter(|l| *l == "---").count() + 2;
    assert!(
        err.starts_with(&format!("document {bomb_doc}: not valid YAML: alias")),
        "{err}"
    );
}

#[test]
fn deep_nesting_is_refused_quickly_without_overflowing_the_stack() {
    for yaml in [
        "[".repeat(100_000),
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata: {}",
            "{a: ".repeat(100_000)
        ),
        "- ".repeat(100_000),
    ] {
        let err = refused(&yaml);
        assert!(err.starts_with("document 1: not valid YAML:"), "{err}");
    }
}

#[test]
fn an_oversized_or_document_storm_input_is_refused_as_a_whole() {
    let err = refused(&"---\n".repeat(simulate::yaml::MAX_DOCUMENTS + 1));
    assert!(err.starts_with("the scenario: more than"), "{err}");
    let err = refused(&"# padding\n".repeat(simulate::yaml::MAX_INPUT_BYTES / 10 + 1));
    assert!(err.starts_with("the scenario: the input is"), "{err}");
}

#[test]
fn daemonsets_times_nodes_past_the_limit_are_refused_quickly() {
    let n = simulate::scenario::MAX_DAEMONSET_NODE_PAIRS.isqrt() + 1;
    let mut docs = Vec::new();
    for i in 0..n {
        docs.push(format!(
            "apiVersion: v1\nkind: Node\nmetadata: {{name: n{i}}}\nstatus: {{allocatable: {{cpu: \"1\", memory: 1Gi, pods: \"10\"}}}}\n"
        ));
        docs.push(format!(
            "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {{name: d{i}}}\nspec: {{selector: {{}}, template: {{spec: {{nodeSelector: {{never: \"true\"}}, containers: []}}}}}}\n"
        ));
    }
    let start = Instant::now();
    let err = Scenario::parse(&docs.join("---\n"))
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with(&format!(
            "the scenario: too large: {n} DaemonSets on {n} Nodes"
        )),
        "{err}"
    );
    // Reading 4,500 documents in a debug build; the refused check would take minutes.
    assert!(
        start.elapsed() < Duration::from_secs(20),
        "{:?}",
        start.elapsed()
    );
}

/// Bytes that make YAML interesting: structure, anchors, tags, quotes, markers.
fn yaml_noise() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop::sample::select(vec![
            "[",
            "]",
            "{",
            "}",
            ":",
            ": ",
            "- ",
            "&a ",
            "*a",
            "!!str ",
            "|",
            ">",
            "'",
            "\"",
            "#",
            "\n",
            "  ",
            "---\n",
            "...\n",
            "<<: *a\n",
            "9223372036854775807",
            "1e-2147483648",
            "replicas: 2147483647\n",
            "kind: Pod\n",
            "\t",
            "\u{feff}",
            "%YAML 1.2\n",
            "?",
            ",",
        ]),
        0..12,
    )
    .prop_map(|v| v.concat())
}

/// A valid scenario with a few random cuts and insertions.
fn mutated() -> impl Strategy<Value = String> {
    prop::collection::vec((0..INFLATE.len(), 0usize..40, yaml_noise()), 1..4).prop_map(|edits| {
        let mut text = INFLATE.as_bytes().to_vec();
        for (at, cut, insert) in edits {
            let at = at.min(text.len());
            let end = (at + cut).min(text.len());
            text.splice(at..end, insert.into_bytes());
        }
        String::from_utf8_lossy(&text).into_owned()
    })
}

fn parses_or_errs(yaml: &str) {
    let start = Instant::now();
    match Scenario::parse(yaml) {
        Ok(_) => {}
        Err(ScenarioError { doc, problem }) => {
            assert!(!problem.to_string().is_empty(), "{doc}");
        }
    }
    assert!(start.elapsed() < QUICK, "took {:?}", start.elapsed());
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 256,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn mutated_scenarios_parse_or_fail_with_a_scenario_error(yaml in mutated()) {
        parses_or_errs(&yaml);
    }

    #[test]
    fn arbitrary_text_parses_or_fails_with_a_scenario_error(
        yaml in prop_oneof![any::<String>(), yaml_noise()]
    ) {
        parses_or_errs(&yaml);
    }
}

const CSINODE_N1: &str = "apiVersion: storage.k8s.io/v1\nkind: CSINode\nmetadata: {name: n1}\nspec: {drivers: [{name: ebs.csi.aws.com, nodeID: i-1, allocatable: {count: 1}}]}\n";

#[test]
fn a_csinode_of_a_node_not_in_the_scenario_is_refused() {
    let yaml = [INFLATE.to_string(), CSINODE_N1.to_string()].join("---\n");
    let err = refused(&yaml);
    assert!(err.contains("CSINode n1"), "{err}");
    assert!(err.contains("node \"n1\" is not in the scenario"), "{err}");
}

#[test]
fn a_negative_attach_count_and_a_claim_named_twice_are_refused() {
    let node = "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: \"4\", memory: 8Gi, pods: \"10\"}}\n";
    let negative = CSINODE_N1.replace("count: 1", "count: -5");
    let err = refused(&[INFLATE, node, &negative].join("---\n"));
    assert!(
        err.contains("spec.drivers[0].allocatable.count: must not be negative"),
        "{err}"
    );

    let claim = "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: data}\nspec: {storageClassName: \"\"}\n";
    let err = refused(&[INFLATE, claim, claim].join("---\n"));
    assert!(
        err.contains("PersistentVolumeClaim \"default/data\" is defined twice"),
        "{err}"
    );
}

#[test]
fn a_workloads_ephemeral_volumes_are_each_replicas_own_claims() {
    let deployment = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: db}\nspec:\n  replicas: 2\n  selector: {matchLabels: {app: db}}\n  template:\n    metadata: {labels: {app: db}}\n    spec:\n      containers: [{name: a, resources: {requests: {cpu: 100m}}}]\n      volumes: [{name: scratch, ephemeral: {volumeClaimTemplate: {spec: {storageClassName: \"\"}}}}]\n";
    let claim_pv = |claim: &str, pv: &str, z: &str| {
        format!(
            "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {{name: {claim}}}\nspec: {{storageClassName: \"\", volumeName: {pv}}}\n---\napiVersion: v1\nkind: PersistentVolume\nmetadata: {{name: {pv}}}\nspec: {{csi: {{driver: ebs.csi.aws.com, volumeHandle: h}}, nodeAffinity: {{required: {{nodeSelectorTerms: [{{matchExpressions: [{{key: topology.kubernetes.io/zone, operator: In, values: [{z}]}}]}}]}}}}}}\n"
        )
    };
    let yaml = [
        INFLATE.to_string(),
        deployment.to_string(),
        claim_pv("db-0-scratch", "pv-a", "us-west-2a"),
    ]
    .join("---\n");
    let s = Scenario::parse(&yaml).unwrap();
    let zones: Vec<String> = s
        .snapshot
        .pending
        .iter()
        .filter(|p| p.name.starts_with("db-"))
        .map(|p| p.node_requirements[0].to_string())
        .collect();
    assert_eq!(
        zones.len(),
        1,
        "db-1's claim is missing: {:?}",
        s.unschedulable
    );
    assert!(zones[0].contains("us-west-2a"), "{zones:?}");
    assert_eq!(s.unschedulable.len(), 1);
    assert_eq!(s.unschedulable[0].pod, "default/db-1");
    let plan = simulate::run(&s, 60).plan;
    assert!(plan.unschedulable.iter().any(|u| u.pod == "default/db-1"));
}

#[test]
fn a_negative_overhead_or_pod_level_request_is_refused_not_taken_as_room() {
    // Before: the negative amounts were subtracted, and five pods asking for 6 cpu in all
    // were packed onto one small node.
    for (spec, field) in [
        (
            "overhead: {cpu: \"-5\"}, containers: [{name: a, resources: {requests: {cpu: 1200m}}}]",
            "spec.overhead.cpu",
        ),
        (
            "resources: {requests: {cpu: \"-1\"}}, containers: [{name: a, resources: {requests: {cpu: 1200m}}}]",
            "spec.resources.requests.cpu",
        ),
        (
            "containers: [{name: a, resources: {requests: {cpu: 1200m}, limits: {cpu: -1}}}]",
            "spec.containers[0].resources.limits.cpu",
        ),
    ] {
        let yaml = [
            INFLATE.to_string(),
            format!("apiVersion: v1\nkind: Pod\nmetadata: {{name: sly}}\nspec: {{{spec}}}\n"),
        ]
        .join("---\n");
        let err = refused(&yaml);
        for part in [
            "pod default/sly",
            field,
            "must be greater than or equal to 0",
        ] {
            assert!(err.contains(part), "{part:?} not in {err}");
        }
    }
}

#[test]
fn unknown_enum_values_in_a_nodepool_are_refused_at_their_path() {
    let pool = |extra: &str| {
        format!(
            "apiVersion: adze.sh/v1\nkind: NodePool\nmetadata: {{name: p}}\nspec:\n  template:\n    spec:\n      nodeClassRef: {{group: aws.adze.sh, kind: EC2NodeClass, name: default}}\n{extra}"
        )
    };
    for (extra, path) in [
        (
            "      requirements: [{key: a, operator: In, values: [x]}, {key: b, operator: Bigger, values: [\"1\"]}]\n",
            "spec.template.spec.requirements[1].operator",
        ),
        (
            "      startupTaints: [{key: a, effect: noschedule}]\n",
            "spec.template.spec.startupTaints[0].effect",
        ),
        ("  limits: {memory: [1Gi]}\n", "spec.limits.memory"),
    ] {
        let err = refused(&pool(extra));
        assert!(
            err.starts_with(&format!("document 1 (NodePool p): malformed: {path}: ")),
            "{err}"
        );
    }
}

#[test]
fn gt_and_lt_at_the_edges_of_i64_leave_the_pod_unschedulable_not_on_an_unlabelled_node() {
    // The pool lets the label take any value; the pod asks for one no label value can be.
    let pool = INFLATE.replacen(
        "      requirements:\n",
        "      requirements:\n        - key: example.com/rank\n          operator: Exists\n",
        1,
    );
    assert_ne!(pool, INFLATE);
    let pod = |name: &str, op: &str, value: &str| {
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}}}\nspec:\n  affinity: {{nodeAffinity: {{requiredDuringSchedulingIgnoredDuringExecution: {{nodeSelectorTerms: [{{matchExpressions: [{{key: example.com/rank, operator: {op}, values: [\"{value}\"]}}]}}]}}}}}}\n  containers: [{{name: a, resources: {{requests: {{cpu: 100m}}}}}}]\n"
        )
    };
    let yaml = [
        pool,
        pod("above-max", "Gt", "9223372036854775807"),
        pod("below-min", "Lt", "-9223372036854775808"),
        pod("below-zero", "Lt", "0"),
        pod("fine", "Gt", "9223372036854775806"),
    ]
    .join("---\n");
    let scenario = Scenario::parse(&yaml).unwrap();
    let plan = simulate::run(&scenario, 60).plan;
    for name in ["above-max", "below-min", "below-zero"] {
        assert!(
            plan.unschedulable.iter().any(|u| u.pod.ends_with(name)),
            "{name}: {:?}",
            plan.unschedulable
        );
    }
    // The one satisfiable bound gets a node labelled with the one value left.
    let claim = plan
        .new_claims
        .iter()
        .find(|c| c.pods.iter().any(|p| p.ends_with("fine")))
        .expect("the satisfiable pod is planned");
    assert_eq!(
        claim.labels.get("example.com/rank").map(String::as_str),
        Some("9223372036854775807"),
        "{claim:?}"
    );
}

#[test]
fn a_ten_thousand_character_name_is_not_echoed_back_in_full() {
    let name = "n".repeat(10_000);
    let yaml = format!(
        "apiVersion: adze.sh/v1\nkind: NodePool\nmetadata: {{name: {name}}}\nspec:\n  template:\n    spec:\n      nodeClassRef: {{group: aws.adze.sh, kind: EC2NodeClass, name: default}}\n"
    );
    let err = refused(&yaml);
    assert!(err.len() < 600, "{} bytes: {err}", err.len());
    assert!(
        err.contains("metadata.name: may be at most 63 characters, got 10000"),
        "{err}"
    );
    assert!(err.contains("(10000 characters)"), "{err}");
}

/// The NodePool and EC2NodeClass of `examples/inflate.yaml`, without its Deployment.
fn inflate_pool() -> String {
    INFLATE
        .split("---\napiVersion: apps/v1")
        .next()
        .expect("inflate has a head")
        .to_string()
}

#[test]
fn capacity_buffers_past_the_pending_limit_are_refused_before_their_pods_are_made() {
    use simulate::scenario::MAX_PENDING_PODS;
    let per = adze_provisioner::rules::MAX_BUFFER_PODS as usize;
    let n = MAX_PENDING_PODS / per + 1;
    let mut docs = vec![
        inflate_pool(),
        "apiVersion: v1\nkind: PodTemplate\nmetadata: {name: t}\ntemplate: {spec: {containers: [{name: a, resources: {requests: {cpu: 100m}}}]}}\n".to_string(),
    ];
    for i in 0..n {
        docs.push(format!(
            "apiVersion: autoscaling.x-k8s.io/v1alpha1\nkind: CapacityBuffer\nmetadata: {{name: b{i}}}\nspec: {{podTemplateRef: {{name: t}}, replicas: {per}}}\n"
        ));
    }
    let start = Instant::now();
    let err = Scenario::parse(&docs.join("---\n"))
        .unwrap_err()
        .to_string();
    // The last buffer is the one that passes the limit, named with its field.
    let last = format!("(CapacityBuffer b{}): spec:", n - 1);
    assert!(err.contains(&last), "{err}");
    assert!(
        err.contains(&format!("limit of {MAX_PENDING_PODS} pending pods")),
        "{err}"
    );
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn nodepools_past_the_limit_are_refused_naming_the_limit() {
    use simulate::scenario::MAX_NODEPOOLS;
    let mut docs = vec![inflate_pool()];
    for i in 0..MAX_NODEPOOLS {
        docs.push(format!(
            "{{apiVersion: adze.sh/v1, kind: NodePool, metadata: {{name: p{i}}}, spec: {{template: {{spec: {{nodeClassRef: {{group: aws.adze.sh, kind: EC2NodeClass, name: default}}, requirements: []}}}}}}}}\n"
        ));
    }
    // The count is checked as documents are read: the broken document after the pool past
    // the limit is never reached (it was, converted with all the others, before the check).
    docs.push("{apiVersion: v1, kind: Pod, metadata: {name: late}, spec: 5}\n".to_string());
    let start = Instant::now();
    let err = Scenario::parse(&docs.join("---\n"))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(&format!("(NodePool p{})", MAX_NODEPOOLS - 1)),
        "{err}"
    );
    assert!(
        err.contains(&format!("more than {MAX_NODEPOOLS} NodePools")),
        "{err}"
    );
    // Reading 10,000 documents in a debug build; no pool is converted.
    assert!(
        start.elapsed() < Duration::from_secs(20),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn an_instance_catalog_past_the_limit_is_refused_naming_the_field() {
    use simulate::scenario::MAX_INSTANCE_TYPES;
    let types: Vec<String> = (0..=MAX_INSTANCE_TYPES)
        .map(|i| {
            format!("{{name: t{i}, cpu: 1, memory: 1Gi, pods: 10, arch: amd64, offerings: []}}")
        })
        .collect();
    let yaml = format!(
        "apiVersion: adze.sh/v1alpha1\nkind: InstanceCatalog\ninstanceTypes: [{}]\n",
        types.join(", ")
    );
    let err = refused(&yaml);
    assert!(err.contains("instanceTypes"), "{err}");
    assert!(
        err.contains(&format!("limit of {MAX_INSTANCE_TYPES}")),
        "{err}"
    );
}

/// A pod whose spec has `extra` (YAML lines indented under `spec:`) after one container.
fn pod_with(name: &str, extra: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}}}\nspec:\n  containers: [{{name: a, resources: {{requests: {{cpu: 100m}}}}}}]\n{extra}"
    )
}

fn preferred(n: usize, expression: impl Fn(usize) -> String) -> String {
    let mut s = String::from(
        "  affinity:\n    nodeAffinity:\n      preferredDuringSchedulingIgnoredDuringExecution:\n",
    );
    for i in 0..n {
        s += &format!(
            "        - {{weight: 1, preference: {{matchExpressions: [{}]}}}}\n",
            expression(i)
        );
    }
    s
}

#[test]
fn terms_values_and_containers_past_their_limits_are_refused_naming_the_field() {
    use simulate::scenario::{MAX_CONTAINERS, MAX_REQUIREMENT_VALUES, MAX_TERMS};
    let terms = pod_with(
        "prefs",
        &preferred(MAX_TERMS + 1, |_| {
            "{key: aws.adze.sh/instance-category, operator: In, values: [c]}".into()
        }),
    );
    let values: Vec<String> = (0..=MAX_REQUIREMENT_VALUES)
        .map(|i| format!("v{i}"))
        .collect();
    let values = pod_with(
        "values",
        &preferred(1, |_| {
            format!(
                "{{key: team, operator: In, values: [{}]}}",
                values.join(", ")
            )
        }),
    );
    let containers = format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: many}}\nspec:\n  containers: [{}]\n",
        vec!["{name: a}"; MAX_CONTAINERS + 1].join(", ")
    );
    for (yaml, field, limit) in [
        (
            terms,
            "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution:",
            MAX_TERMS,
        ),
        (
            values,
            "preferredDuringSchedulingIgnoredDuringExecution[0].preference.matchExpressions[0].values:",
            MAX_REQUIREMENT_VALUES,
        ),
        (containers, "spec.containers:", MAX_CONTAINERS),
    ] {
        let err = refused(&format!("{}---\n{yaml}", inflate_pool()));
        assert!(err.contains("(Pod "), "{err}");
        assert!(err.contains(field), "{field} not in {err}");
        assert!(err.contains(&format!("limit of {limit}")), "{err}");
    }
}

#[test]
fn a_pod_with_the_most_preferred_terms_is_planned_quickly() {
    use simulate::scenario::MAX_TERMS;
    // Every preference holds on its own, no two together (each names another category):
    // each rung of relaxation is tried, and the relaxation must not cost terms².
    let categories = ["c", "m", "r"];
    let pod = pod_with(
        "picky",
        &preferred(MAX_TERMS, |i| {
            format!(
                "{{key: aws.adze.sh/instance-category, operator: In, values: [{}]}}",
                categories[i % 3]
            )
        }),
    );
    let start = Instant::now();
    let scenario = Scenario::parse(&format!("{}---\n{pod}", inflate_pool())).unwrap();
    let plan = simulate::run(&scenario, 60).plan;
    assert!(plan.unschedulable.is_empty(), "{:?}", plan.unschedulable);
    assert_eq!(plan.new_claims.len(), 1);
    // The lightest preferences are dropped first; the heaviest (all weight 1, so the
    // first listed) is kept: category c.
    let category = &plan.new_claims[0].labels["aws.adze.sh/instance-category"];
    assert_eq!(category, "c", "{:?}", plan.new_claims[0]);
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn migrate_refuses_a_json_list_past_the_object_limit_naming_the_list() {
    use adze_provisioner::migrate::{MAX_OBJECTS, migrate};
    let item =
        r#"{"apiVersion":"karpenter.sh/v1","kind":"NodePool","metadata":{"name":"p"},"spec":{}}"#;
    let json = format!(
        r#"{{"apiVersion":"v1","kind":"List","items":[{}]}}"#,
        vec![item; MAX_OBJECTS + 1].join(",")
    );
    let start = Instant::now();
    let Err(err) = migrate(&json) else {
        panic!("a list past the limit was converted");
    };
    let err = err.to_string();
    assert!(
        err.starts_with(&format!(
            "JSON value 1.items[{MAX_OBJECTS}]: more than {MAX_OBJECTS} objects"
        )),
        "{err}"
    );
    assert!(start.elapsed() < QUICK, "{:?}", start.elapsed());
}

#[test]
fn pod_fields_the_apiserver_refuses_are_refused_at_their_path() {
    // Before: each was planned with exit 0 (a nodeSelector Kubernetes refuses left the pod
    // pending, a weight of 1000 outweighed every other preference, an unknown restartPolicy
    // made a sidecar an ordinary init container).
    let c = "containers: [{name: a, resources: {requests: {cpu: 100m}}}]";
    for (meta, spec, field, message) in [
        (
            "labels: {a: \"no way!\"}",
            c.to_string(),
            "metadata.labels.a",
            "must be a label value",
        ),
        (
            "",
            format!("nodeSelector: {{\"bad key!\": x}}, {c}"),
            "spec.nodeSelector",
            "must be a label key",
        ),
        (
            "",
            format!("nodeSelector: {{a: \"-x\"}}, {c}"),
            "spec.nodeSelector.a",
            "must be a label value",
        ),
        (
            "",
            format!("initContainers: [{{name: i, restartPolicy: Sometimes}}], {c}"),
            "spec.initContainers[0].restartPolicy",
            "supported values: \"Always\"",
        ),
        (
            "",
            format!(
                "affinity: {{nodeAffinity: {{preferredDuringSchedulingIgnoredDuringExecution: [{{weight: 1, preference: {{matchExpressions: [{{key: a, operator: Exists}}]}}}}, {{weight: 0, preference: {{matchExpressions: [{{key: a, operator: Exists}}]}}}}]}}}}, {c}"
            ),
            "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[1].weight",
            "must be between 1 and 100, got 0",
        ),
        (
            "",
            format!(
                "affinity: {{podAntiAffinity: {{preferredDuringSchedulingIgnoredDuringExecution: [{{weight: 1000, podAffinityTerm: {{topologyKey: zone, labelSelector: {{matchLabels: {{a: b}}}}}}}}]}}}}, {c}"
            ),
            "spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight",
            "must be between 1 and 100, got 1000",
        ),
        (
            "",
            format!("tolerations: [{{key: a, operator: Exists, value: b}}], {c}"),
            "spec.tolerations[0].value",
            "must be empty when operator is Exists",
        ),
    ] {
        let yaml = [
            inflate_pool(),
            format!(
                "apiVersion: v1\nkind: Pod\nmetadata: {{name: sly, {meta}}}\nspec: {{{spec}}}\n"
            ),
        ]
        .join("---\n");
        let err = refused(&yaml);
        for part in ["pod default/sly", &format!("{field}: "), message] {
            assert!(err.contains(part), "{part:?} not in {err}");
        }
    }
    // A workload's template labels are named at the template's path.
    let deployment = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: 2\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web, tier: \"fr ont\"}}\n    spec: {containers: [{name: a}]}\n";
    let err = refused(&[inflate_pool(), deployment.to_string()].join("---\n"));
    assert!(
        err.contains("spec.template.metadata.labels.tier: "),
        "{err}"
    );
}

#[test]
fn a_negative_kubelet_reservation_is_refused_not_added_to_allocatable() {
    // Before: kubeReserved cpu "-3" was planned with exit 0, each node 3 cpu larger than it is.
    for field in ["kubeReserved", "systemReserved"] {
        let yaml = inflate_pool().replacen(
            "  role: AdzeNodeRole-demo\n",
            &format!("  role: AdzeNodeRole-demo\n  kubelet: {{{field}: {{cpu: \"-3\"}}}}\n"),
            1,
        );
        let err = refused(&yaml);
        for part in [
            "EC2NodeClass \"default\"",
            &format!("spec.kubelet.{field}"),
            "may not be negative",
        ] {
            assert!(err.contains(part), "{part:?} not in {err}");
        }
    }
}

#[test]
fn a_field_the_crd_schema_does_not_declare_is_refused_at_its_path() {
    for (from, to, path) in [
        (
            "  limits:\n",
            "  template2: {}\n  limits:\n",
            "spec.template2",
        ),
        (
            "      requirements:\n",
            "      requirments: []\n      requirements:\n",
            "spec.template.spec.requirments",
        ),
        (
            "          operator: Gt\n",
            "          operator: Gt\n          valeus: [\"3\"]\n",
            "spec.template.spec.requirements[4].valeus",
        ),
    ] {
        let yaml = INFLATE.replacen(from, to, 1);
        assert_ne!(yaml, INFLATE);
        let err = refused(&yaml);
        assert!(
            err.starts_with(&format!(
                "document 1 (NodePool default): NodePool \"default\" is invalid:\n  - {path}: unknown field"
            )),
            "{err}"
        );
    }
    // The EC2NodeClass, and the metadata of either, which is Kubernetes' own.
    let yaml = INFLATE.replacen("  role: ", "  rol: x\n  role: ", 1);
    assert!(
        refused(&yaml)
            .contains("EC2NodeClass \"default\" is invalid:\n  - spec.rol: unknown field")
    );
    let overlays = include_str!("../../examples/node-overlay.yaml");
    let yaml = overlays.replacen(
        "  priceAdjustment:",
        "  priceAdjustmnt: x\n  priceAdjustment:",
        1,
    );
    assert!(refused(&yaml).contains(
        "NodeOverlay \"m5-savings-plan\" is invalid:\n  - spec.priceAdjustmnt: unknown field"
    ));
    let buffers = include_str!("../../examples/capacity-buffer.yaml");
    let yaml = buffers.replacen("  replicas: 3\n", "  replicas: 3\n  replica: 3\n", 1);
    assert!(
        refused(&yaml)
            .contains("CapacityBuffer \"web-burst\" is invalid:\n  - spec.replica: unknown field")
    );
    let yaml = INFLATE.replacen(
        "metadata:\n  name: default\n",
        "metadata:\n  name: default\n  somethingElse: 1\n",
        2,
    );
    assert_ne!(yaml, INFLATE);
    // Metadata is checked against Kubernetes' ObjectMeta.
    let err = refused(&yaml);
    assert!(
        err.contains("NodePool \"default\" is invalid:\n  - metadata.somethingElse: unknown field (known here: annotations,"),
        "{err}"
    );
}

#[test]
fn a_field_kubernetes_does_not_have_is_refused_at_its_path_in_its_own_kinds() {
    for (from, to, head) in [
        // The metadata of a Deployment, and of its pod template.
        (
            "metadata:\n  name: inflate\n",
            "metadata:\n  name: inflate\n  lables: {app: x}\n",
            "Deployment \"inflate\" is invalid:\n  - metadata.lables: unknown field (known here:",
        ),
        (
            "    metadata:\n      labels:\n        app: inflate\n",
            "    metadata:\n      lables: {}\n      labels:\n        app: inflate\n",
            "Deployment \"inflate\" is invalid:\n  - spec.template.metadata.lables: unknown field",
        ),
        // A misspelt scheduling field would otherwise plan the pod without it.
        (
            "      terminationGracePeriodSeconds: 0\n",
            "      terminationGracePeriodSeconds: 0\n      nodeSelecter: {zone: a}\n",
            "Deployment \"inflate\" is invalid:\n  - spec.template.spec.nodeSelecter: unknown field",
        ),
        (
            "          resources:\n",
            "          resourcez: {}\n          resources:\n",
            "Deployment \"inflate\" is invalid:\n  - spec.template.spec.containers[0].resourcez: unknown field",
        ),
    ] {
        let yaml = INFLATE.replacen(from, to, 1);
        assert_ne!(yaml, INFLATE, "{from}");
        let err = refused(&yaml);
        assert!(err.contains(head), "{head:?} not in {err}");
    }
    // A Pod and a Node, and a PodDisruptionBudget, the same way; null reads as absent.
    for (doc, path) in [
        (
            "apiVersion: v1\nkind: Pod\nmetadata: {name: p, nmae: q}\nspec: {containers: [{name: a}]}\n",
            "Pod \"p\" is invalid:\n  - metadata.nmae: unknown field",
        ),
        (
            "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: a}], tolerations: [{key: k, operater: Exists}]}\n",
            "Pod \"p\" is invalid:\n  - spec.tolerations[0].operater: unknown field",
        ),
        (
            "apiVersion: v1\nkind: Node\nmetadata: {name: n, labels: {a: b}}\nspec: {taintz: []}\n",
            "Node \"n\" is invalid:\n  - spec.taintz: unknown field",
        ),
        (
            "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: b}\nspec: {maxUnavailable: 1, selecter: {}}\n",
            "PodDisruptionBudget \"b\" is invalid:\n  - spec.selecter: unknown field",
        ),
    ] {
        let err = refused(&format!("{INFLATE}---\n{doc}"));
        assert!(err.contains(path), "{path:?} not in {err}");
    }
    let fine = "apiVersion: v1\nkind: Pod\nmetadata: {name: p, annotations: null, labels: {lables: x}}\nspec: {containers: [{name: a}], nodeSelector: null}\n";
    Scenario::parse(&format!("{INFLATE}---\n{fine}")).expect("null fields and label keys are fine");
}
