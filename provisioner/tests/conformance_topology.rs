#[path = "support/conformance.rs"]
mod conformance;
use conformance::*;

// Karpenter's `pkg/controllers/provisioning/scheduling/topology_test.go` (topology spread,
// pod affinity and anti-affinity, NodePool taints) restated as `simulate` scenarios. The
// table of cases is docs/conformance/topology.md.
//
// Karpenter provisions in rounds; a plan is one round. Cases whose later round depends on an
// earlier one state the earlier round's outcome as existing `Node`s with bound pods.

use std::collections::BTreeMap;

use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------------
// Scenario building
// ---------------------------------------------------------------------------------------------

const ZONES: [&str; 3] = ["test-zone-1", "test-zone-2", "test-zone-3"];

/// Types for every zone × capacity type × arch pair, each with that single offering (the
/// shape of Karpenter's assorted fake catalog, fewer sizes).
fn assorted_catalog() -> Value {
    let mut types = Vec::new();
    for cpu in [1u32, 2, 4, 8] {
        for mem in [2u32, 4, 8] {
            for zone in ZONES {
                for ct in ["spot", "on-demand"] {
                    for arch in ["amd64", "arm64"] {
                        let price = 0.1 * f64::from(cpu) + 0.1 * f64::from(mem) * 1.073_741_824;
                        types.push(json!({
                            "name": format!("{cpu}-cpu-{mem}-mem-{arch}-{zone}-{ct}"),
                            "cpu": cpu, "memory": format!("{mem}Gi"), "pods": 5, "arch": arch,
                            "offerings": [{"zone": zone, "capacityType": ct, "price": price}],
                        }));
                    }
                }
            }
        }
    }
    json!({"apiVersion": "adze.sh/v1alpha1", "kind": "InstanceCatalog",
           "metadata": {"name": "assorted"}, "instanceTypes": types})
}

fn req(key: &str, op: &str, values: &[&str]) -> Value {
    if values.is_empty() {
        json!({"key": key, "operator": op})
    } else {
        json!({"key": key, "operator": op, "values": values})
    }
}

const CT: &str = "adze.sh/capacity-type";
const ZONE: &str = "topology.kubernetes.io/zone";
const HOST: &str = "kubernetes.io/hostname";
const ARCH: &str = "kubernetes.io/arch";

/// A NodePool; `spec` fields (limits, template labels, taints) are merged in via `extra`.
fn pool_with(
    name: &str,
    reqs: Value,
    template_meta: Value,
    template_spec: Value,
    spec: Value,
) -> Value {
    let mut tspec = json!({
        "nodeClassRef": {"group": "aws.adze.sh", "kind": "EC2NodeClass", "name": "default"},
        "requirements": reqs,
    });
    merge(&mut tspec, template_spec);
    let mut s = json!({"template": {"metadata": template_meta, "spec": tspec}});
    merge(&mut s, spec);
    json!({"apiVersion": "adze.sh/v1", "kind": "NodePool", "metadata": {"name": name}, "spec": s})
}

fn pool(reqs: Value) -> Value {
    pool_with("default", reqs, json!({}), json!({}), json!({}))
}

/// Karpenter's suite default: any capacity type.
fn any_pool() -> Value {
    pool(json!([req(CT, "Exists", &[])]))
}

fn merge(into: &mut Value, from: Value) {
    if let (Some(a), Value::Object(b)) = (into.as_object_mut(), from) {
        for (k, v) in b {
            a.insert(k, v);
        }
    }
}

/// A pending pod (or bound, when `spec` has `nodeName`) in `default`, requesting `cpu` if set.
fn pod(name: &str, labels: Value, cpu: Option<&str>, mut spec: Value) -> Value {
    let requests = cpu.map_or(json!({}), |c| json!({"cpu": c}));
    if !spec.is_object() {
        spec = json!({});
    }
    spec["containers"] =
        json!([{"name": "app", "image": "nginx", "resources": {"requests": requests}}]);
    let ns = spec
        .as_object_mut()
        .and_then(|o| o.remove("namespace"))
        .unwrap_or(json!("default"));
    json!({"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "namespace": ns, "labels": labels}, "spec": spec})
}

/// `n` identical pods named `prefix-0` ...
fn pods(prefix: &str, n: usize, labels: Value, cpu: Option<&str>, spec: Value) -> Vec<Value> {
    (0..n)
        .map(|i| pod(&format!("{prefix}-{i}"), labels.clone(), cpu, spec.clone()))
        .collect()
}

/// A node as a fake type launched by Karpenter would be: 3900m CPU, 5 pods.
fn node(name: &str, labels: Value) -> Value {
    node_sized(name, labels, "3900m", 5)
}

/// A node of the fake 2-CPU type (1900m allocatable): what one 1.1-CPU pod gets.
fn small_node(name: &str, labels: Value) -> Value {
    node_sized(name, labels, "1900m", 5)
}

fn node_sized(name: &str, labels: Value, cpu: &str, max_pods: u32) -> Value {
    let mut l = json!({"kubernetes.io/hostname": name, "adze.sh/nodepool": "default"});
    merge(&mut l, labels);
    json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": l},
           "status": {"allocatable": {"cpu": cpu, "memory": "3Gi", "pods": max_pods.to_string()},
                      "capacity": {"cpu": "4", "memory": "4Gi", "pods": max_pods.to_string()}}})
}

fn spread(key: &str, max_skew: i32, hard: bool, selector: Value) -> Value {
    let mut c = json!({"maxSkew": max_skew, "topologyKey": key,
        "whenUnsatisfiable": if hard { "DoNotSchedule" } else { "ScheduleAnyway" }});
    if !selector.is_null() {
        c["labelSelector"] = selector;
    }
    c
}

fn test_label() -> Value {
    json!({"test": "test"})
}

fn sel_test() -> Value {
    json!({"matchLabels": {"test": "test"}})
}

fn sel_s2() -> Value {
    json!({"matchLabels": {"security": "s2"}})
}

fn s2() -> Value {
    json!({"security": "s2"})
}

fn node_affinity(terms: Value) -> Value {
    json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
        {"nodeSelectorTerms": [{"matchExpressions": terms}]}}})
}

fn pod_term(selector: Value, key: &str) -> Value {
    json!({"labelSelector": selector, "topologyKey": key})
}

fn affinity(kind: &str, required: Value, preferred: Value) -> Value {
    let mut a = json!({});
    if !required.is_null() {
        a["requiredDuringSchedulingIgnoredDuringExecution"] = required;
    }
    if !preferred.is_null() {
        a["preferredDuringSchedulingIgnoredDuringExecution"] = preferred;
    }
    json!({ kind: a })
}

/// One scenario: the catalog (YAML) and the documents after it.
fn yaml_of(catalog: &str, docs: Vec<Value>) -> String {
    std::iter::once(catalog.to_string())
        .chain(docs.iter().map(|d| serde_json::to_string(d).expect("json")))
        .collect::<Vec<_>>()
        .join("\n---\n")
}

/// Plans `docs` against Karpenter's fake instance types (`FAKE_CATALOG`).
fn run(docs: Vec<Value>) -> Planned {
    plan(&yaml_of(FAKE_CATALOG, docs))
}

fn cat(mut a: Vec<Value>, b: Vec<Value>) -> Vec<Value> {
    a.extend(b);
    a
}

// ---------------------------------------------------------------------------------------------
// Questions asked of a plan
// ---------------------------------------------------------------------------------------------

/// Pods in `default` whose labels `matches`, placed or already bound, counted by the value of
/// `key` on their node (new claim or existing node); sorted ascending. Like Karpenter's
/// ExpectSkew: domains without such pods are absent, nodes without the key are skipped.
fn skew(p: &Planned, key: &str, matches: impl Fn(&BTreeMap<String, String>) -> bool) -> Vec<usize> {
    let mut labels_of: BTreeMap<String, &BTreeMap<String, String>> = BTreeMap::new();
    for pd in &p.scenario.snapshot.pending {
        labels_of.insert(pd.key(), &pd.labels);
    }
    for b in &p.scenario.snapshot.bound {
        labels_of.insert(b.pod.key(), &b.pod.labels);
    }
    let counts_pod =
        |k: &str| k.starts_with("default/") && labels_of.get(k).is_some_and(|l| matches(l));
    let mut by: BTreeMap<String, usize> = BTreeMap::new();
    for c in &p.plan.new_claims {
        if let Some(v) = c.labels.get(key) {
            *by.entry(v.clone()).or_default() += c.pods.iter().filter(|k| counts_pod(k)).count();
        }
    }
    let node_value = |name: &str| -> Option<String> {
        p.scenario
            .snapshot
            .nodes
            .iter()
            .find(|n| n.name == name)
            .and_then(|n| n.requirements.get(key))
            .and_then(|r| r.single_value())
            .map(str::to_string)
    };
    for b in &p.scenario.snapshot.bound {
        if counts_pod(&b.pod.key())
            && let Some(v) = node_value(&b.node)
        {
            *by.entry(v).or_default() += 1;
        }
    }
    for e in &p.plan.existing {
        if let Some(v) = node_value(&e.node) {
            *by.entry(v).or_default() += e.pods.iter().filter(|k| counts_pod(k)).count();
        }
    }
    let mut out: Vec<usize> = by.into_values().filter(|&n| n > 0).collect();
    out.sort_unstable();
    out
}

fn is_test(l: &BTreeMap<String, String>) -> bool {
    l.get("test").is_some_and(|v| v == "test")
}

fn is_s2(l: &BTreeMap<String, String>) -> bool {
    l.get("security").is_some_and(|v| v == "s2")
}

fn all(_: &BTreeMap<String, String>) -> bool {
    true
}

/// Where `pod` landed: the new claim's labels or the existing node's single-valued labels.
fn label_at(p: &Planned, pod: &str, key: &str) -> Option<String> {
    if let Some(c) = p.claim_of(pod) {
        return c.labels.get(key).cloned();
    }
    let node = p.node_of(pod)?;
    p.scenario
        .snapshot
        .nodes
        .iter()
        .find(|n| n.name == node)?
        .requirements
        .get(key)?
        .single_value()
        .map(str::to_string)
}

fn placed_count(p: &Planned, prefix: &str) -> usize {
    p.plan
        .placements()
        .keys()
        .filter(|k| k.starts_with(&format!("default/{prefix}")))
        .count()
}

/// Asserts `pod` is unschedulable for a reason that mentions `why`.
fn expect_refused(p: &Planned, pod: &str, why: &str) {
    let reason = p.expect_unschedulable(pod);
    assert!(reason.contains(why), "{pod}: {reason}");
}

/// Asserts the `n` pods `prefix-0`... are all unschedulable for a reason mentioning `why`.
fn expect_all_refused(p: &Planned, prefix: &str, n: usize, why: &str) {
    for i in 0..n {
        expect_refused(p, &format!("default/{prefix}-{i}"), why);
    }
}

fn unschedulable_count(p: &Planned) -> usize {
    p.plan.unschedulable.len()
}

// ---------------------------------------------------------------------------------------------
// Topology
// ---------------------------------------------------------------------------------------------

fn spread_pods(prefix: &str, n: usize, cpu: Option<&str>, constraints: Value) -> Vec<Value> {
    pods(
        prefix,
        n,
        test_label(),
        cpu,
        json!({"topologySpreadConstraints": constraints}),
    )
}

fn zone_spread(max_skew: i32) -> Value {
    json!([spread(ZONE, max_skew, true, sel_test())])
}

/// Topology > should ignore unknown topology keys
#[test]
fn topology_unknown_topology_key_is_unschedulable() {
    let p = run(vec![
        any_pool(),
        pod(
            "spread",
            test_label(),
            None,
            json!({"topologySpreadConstraints": [spread("unknown", 1, true, sel_test())]}),
        ),
        pod("plain", json!({}), None, json!({})),
    ]);
    expect_refused(&p, "default/spread", "unknown");
    p.expect_placed("default/plain");
}

/// Topology > Zonal > should balance pods across zones (match labels)
#[test]
fn zonal_balance_match_labels() {
    let p = run(cat(
        vec![any_pool()],
        spread_pods("p", 4, None, zone_spread(1)),
    ));
    assert_eq!(skew(&p, ZONE, is_test), vec![1, 1, 2]);
}

/// Topology > Zonal > should balance pods across zones (match expressions)
#[test]
fn zonal_balance_match_expressions() {
    let sel = json!({"matchExpressions": [{"key": "test", "operator": "In", "values": ["test"]}]});
    let p = run(cat(
        vec![any_pool()],
        spread_pods("p", 4, None, json!([spread(ZONE, 1, true, sel)])),
    ));
    assert_eq!(skew(&p, ZONE, is_test), vec![1, 1, 2]);
}

/// Topology > Zonal > should respect NodePool zonal constraints
#[test]
fn zonal_nodepool_zones() {
    let np = pool(json!([req(ZONE, "In", &ZONES)]));
    let p = run(cat(vec![np], spread_pods("p", 4, None, zone_spread(1))));
    assert_eq!(skew(&p, ZONE, is_test), vec![1, 1, 2]);
}

/// Topology > Zonal > should respect NodePool zonal constraints (subset) with requirements
#[test]
fn zonal_nodepool_zone_subset_requirements() {
    let np = pool(json!([req(ZONE, "In", &["test-zone-1", "test-zone-2"])]));
    let p = run(cat(vec![np], spread_pods("p", 4, None, zone_spread(1))));
    assert_eq!(skew(&p, ZONE, is_test), vec![2, 2]);
}

/// Topology > Zonal > should respect NodePool zonal constraints (subset) with labels
#[test]
fn zonal_nodepool_zone_subset_labels() {
    let np = pool_with(
        "default",
        json!([req(CT, "Exists", &[])]),
        json!({"labels": {ZONE: "test-zone-1"}}),
        json!({}),
        json!({}),
    );
    let p = run(cat(vec![np], spread_pods("p", 4, None, zone_spread(1))));
    assert_eq!(skew(&p, ZONE, is_test), vec![4]);
}

/// Topology > Zonal > should respect NodePool zonal constraints (subset) with requirements and labels
#[test]
fn zonal_nodepool_zone_subset_requirements_and_labels() {
    let np = pool_with(
        "default",
        json!([req(ZONE, "In", &["test-zone-1", "test-zone-2"])]),
        json!({"labels": {ZONE: "test-zone-1"}}),
        json!({}),
        json!({}),
    );
    let p = run(cat(vec![np], spread_pods("p", 4, None, zone_spread(1))));
    assert_eq!(skew(&p, ZONE, is_test), vec![4]);
}

/// Topology > Zonal > should respect NodePool zonal constraints (subset) with labels across NodePools
#[test]
fn zonal_nodepool_zone_subset_labels_across_nodepools() {
    let a = pool_with(
        "default",
        json!([req(ZONE, "In", &["test-zone-1", "test-zone-2"])]),
        json!({"labels": {ZONE: "test-zone-1"}}),
        json!({}),
        json!({}),
    );
    let b = pool_with(
        "second",
        json!([]),
        json!({"labels": {ZONE: "test-zone-2"}}),
        json!({}),
        json!({}),
    );
    let p = run(cat(vec![a, b], spread_pods("p", 4, None, zone_spread(1))));
    assert_eq!(skew(&p, ZONE, is_test), vec![2, 2]);
}

/// Topology > Zonal > should respect NodePool zonal constraints (existing pod)
#[test]
fn zonal_nodepool_zones_with_existing_pod() {
    // Round one put a 1.1-CPU pod on a node in test-zone-3; the pool now offers zones 1 and 2.
    let np = pool(json!([req(ZONE, "In", &["test-zone-1", "test-zone-2"])]));
    let p = run(cat(
        vec![
            np,
            small_node("z3", json!({ZONE: "test-zone-3", CT: "on-demand"})),
            pod(
                "first",
                test_label(),
                Some("1.1"),
                json!({"nodeName": "z3"}),
            ),
        ],
        spread_pods("p", 6, Some("1.1"), zone_spread(1)),
    ));
    assert_eq!(skew(&p, ZONE, is_test), vec![1, 2, 2]);
    assert_eq!(unschedulable_count(&p), 2);
}

/// Topology > Zonal > should schedule to the non-minimum domain if its all that's available
#[test]
fn zonal_non_minimum_domain_when_only_one_available() {
    let np = pool(json!([req(ZONE, "In", &["test-zone-3"])]));
    let p = run(cat(
        vec![
            np,
            small_node("z1", json!({ZONE: "test-zone-1", CT: "on-demand"})),
            small_node("z2", json!({ZONE: "test-zone-2", CT: "on-demand"})),
            pod(
                "a",
                test_label(),
                Some("1.1"),
                json!({"nodeName": "z1", "topologySpreadConstraints": zone_spread(5)}),
            ),
            pod(
                "b",
                test_label(),
                Some("1.1"),
                json!({"nodeName": "z2", "topologySpreadConstraints": zone_spread(5)}),
            ),
        ],
        spread_pods("p", 10, Some("1.1"), zone_spread(5)),
    ));
    assert_eq!(skew(&p, ZONE, is_test), vec![1, 1, 6]);
    assert_eq!(unschedulable_count(&p), 4);
}

/// Topology > Zonal > should only schedule to minimum domains if already violating max skew
#[test]
fn zonal_only_minimum_domains_when_violating() {
    // After round one (3/3/3) the pods outside test-zone-1 were deleted; their nodes remain.
    let mut docs = vec![
        any_pool(),
        node("z1", json!({ZONE: "test-zone-1", CT: "on-demand"})),
        node("z2", json!({ZONE: "test-zone-2", CT: "on-demand"})),
        node("z3", json!({ZONE: "test-zone-3", CT: "on-demand"})),
    ];
    for i in 0..3 {
        docs.push(pod(
            &format!("old-{i}"),
            test_label(),
            Some("1.1"),
            json!({"nodeName": "z1", "topologySpreadConstraints": zone_spread(1)}),
        ));
    }
    let p = run(cat(docs, spread_pods("p", 3, Some("1.1"), zone_spread(1))));
    assert_eq!(skew(&p, ZONE, is_test), vec![1, 2, 3]);
}

/// Topology > Zonal > should not violate max-skew when unsat = do not schedule
#[test]
fn zonal_do_not_schedule_keeps_max_skew() {
    let np = pool(json!([req(ZONE, "In", &["test-zone-2", "test-zone-3"])]));
    let p = run(cat(
        vec![
            np,
            small_node("z1", json!({ZONE: "test-zone-1", CT: "on-demand"})),
            pod(
                "first",
                test_label(),
                Some("1.1"),
                json!({"nodeName": "z1", "topologySpreadConstraints": zone_spread(1)}),
            ),
        ],
        spread_pods("p", 10, Some("1.1"), zone_spread(1)),
    ));
    assert_eq!(skew(&p, ZONE, is_test), vec![1, 2, 2]);
}

/// Topology > Zonal > should not violate max-skew when unsat = do not schedule (discover domains)
#[test]
fn zonal_do_not_schedule_discovers_domain_from_existing_pod() {
    let np = pool(json!([req(ZONE, "In", &["test-zone-2", "test-zone-3"])]));
    let p = run(cat(
        vec![
            np,
            small_node("z1", json!({ZONE: "test-zone-1", CT: "on-demand"})),
            pod(
                "first",
                test_label(),
                Some("1.1"),
                json!({"nodeName": "z1"}),
            ),
        ],
        spread_pods("p", 10, Some("1.1"), zone_spread(1)),
    ));
    assert_eq!(skew(&p, ZONE, is_test), vec![1, 2, 2]);
}

/// Pods the spread must not count: unlabelled, in another namespace, on a node without the
/// domain key, finished, or terminating.
fn ignored_pods(first: &str, third: &str) -> Vec<Value> {
    vec![
        pod("unlabelled", json!({}), None, json!({"nodeName": first})),
        pod("no-domain", test_label(), None, json!({"nodeName": third})),
        pod(
            "other-ns",
            test_label(),
            None,
            json!({"nodeName": first, "namespace": "elsewhere"}),
        ),
        {
            let mut t = pod("terminating", test_label(), None, json!({}));
            t["metadata"]["deletionTimestamp"] = json!("2030-01-01T00:00:00Z");
            t
        },
        {
            let mut f = pod("failed", test_label(), None, json!({"nodeName": first}));
            f["status"] = json!({"phase": "Failed"});
            f
        },
        {
            let mut s = pod("succeeded", test_label(), None, json!({"nodeName": first}));
            s["status"] = json!({"phase": "Succeeded"});
            s
        },
        pod("run-1", test_label(), None, json!({"nodeName": first})),
        pod("run-2", test_label(), None, json!({"nodeName": first})),
    ]
}

/// Topology > Zonal > should only count running/scheduled pods with matching labels scheduled to nodes with a corresponding domain
#[test]
fn zonal_counts_only_running_matching_pods_with_domain() {
    let mut docs = vec![
        any_pool(),
        node_sized("first", json!({ZONE: "test-zone-1"}), "3900m", 10),
        node_sized("second", json!({ZONE: "test-zone-2"}), "3900m", 10),
        node_sized("third", json!({}), "3900m", 10),
    ];
    docs.extend(ignored_pods("first", "third"));
    docs.push(pod(
        "run-3",
        test_label(),
        None,
        json!({"nodeName": "second"}),
    ));
    docs.extend(spread_pods("p", 2, None, zone_spread(1)));
    let p = run(docs);
    p.expect_placed("default/p-0");
    p.expect_placed("default/p-1");
    assert!(
        p.placed("default/terminating").is_none()
            && p.unschedulable("default/terminating").is_none(),
        "a terminating pod is not planned"
    );
    // "no-domain" sits on a node without a zone, so it is not in any zone's count.
    assert_eq!(skew(&p, ZONE, is_test), vec![1, 2, 2]);
}

/// Topology > Zonal > should match all pods when labelSelector is not specified
#[test]
fn zonal_no_label_selector_matches_all() {
    let p = run(vec![
        any_pool(),
        pod(
            "p",
            json!({}),
            None,
            json!({"topologySpreadConstraints": [spread(ZONE, 1, true, Value::Null)]}),
        ),
    ]);
    p.expect_placed("default/p");
    assert_eq!(skew(&p, ZONE, all), vec![1]);
}

/// Topology > Zonal > should handle interdependent selectors
#[test]
fn zonal_interdependent_selectors_pack_one_node() {
    let p = run(cat(
        vec![any_pool()],
        pods(
            "p",
            5,
            json!({}),
            None,
            json!({"topologySpreadConstraints": [spread(HOST, 1, true, sel_test())]}),
        ),
    ));
    let nodes: std::collections::BTreeSet<&str> = (0..5)
        .map(|i| p.expect_placed(&format!("default/p-{i}")))
        .collect();
    assert_eq!(nodes.len(), 1, "{nodes:?}");
}

fn min_domains(n: i32) -> Value {
    let mut c = spread(ZONE, 1, true, sel_test());
    c["minDomains"] = json!(n);
    json!([c])
}

/// Topology > Zonal > should respect minDomains constraints
#[test]
fn zonal_min_domains_caps_each_domain() {
    let np = pool(json!([req(ZONE, "In", &["test-zone-1", "test-zone-2"])]));
    let p = run(cat(vec![np], spread_pods("p", 3, None, min_domains(3))));
    assert_eq!(skew(&p, ZONE, is_test), vec![1, 1]);
}

/// Topology > Zonal > satisfied minDomains constraints (equal) should allow expected pod scheduling
#[test]
fn zonal_min_domains_equal_satisfied() {
    let np = pool(json!([req(ZONE, "In", &ZONES)]));
    let p = run(cat(vec![np], spread_pods("p", 11, None, min_domains(3))));
    assert_eq!(skew(&p, ZONE, is_test), vec![3, 4, 4]);
}

/// Topology > Zonal > satisfied minDomains constraints (greater than minimum) should allow expected pod scheduling
#[test]
fn zonal_min_domains_greater_satisfied() {
    let np = pool(json!([req(ZONE, "In", &ZONES)]));
    let p = run(cat(vec![np], spread_pods("p", 11, None, min_domains(2))));
    assert_eq!(skew(&p, ZONE, is_test), vec![3, 4, 4]);
}

/// Topology > Hostname > should balance pods across nodes
#[test]
fn hostname_balance_across_nodes() {
    let p = run(cat(
        vec![any_pool()],
        spread_pods("p", 4, None, json!([spread(HOST, 1, true, sel_test())])),
    ));
    assert_eq!(skew(&p, HOST, is_test), vec![1, 1, 1, 1]);
}

/// Topology > Hostname > should balance pods on the same hostname up to maxskew
#[test]
fn hostname_same_node_up_to_max_skew() {
    let p = run(cat(
        vec![any_pool()],
        spread_pods("p", 4, None, json!([spread(HOST, 4, true, sel_test())])),
    ));
    assert_eq!(skew(&p, HOST, is_test), vec![4]);
}

fn app_spread(key: &str, app: &str, n: usize, arch: Option<&str>) -> Vec<Value> {
    let mut spec = json!({"topologySpreadConstraints":
        [spread(key, 1, true, json!({"matchLabels": {"app": app}}))]});
    if let Some(a) = arch {
        spec["affinity"] = node_affinity(json!([req(ARCH, "In", &[a])]));
    }
    pods(app, n, json!({"app": app}), None, spec)
}

fn claims_used(p: &Planned) -> usize {
    p.plan
        .new_claims
        .iter()
        .filter(|c| !c.pods.is_empty())
        .count()
}

/// Topology > Hostname > balance multiple deployments with hostname topology spread
#[test]
fn hostname_two_deployments_share_two_nodes() {
    let p = run(cat(
        cat(vec![any_pool()], app_spread(HOST, "app1", 2, None)),
        app_spread(HOST, "app2", 2, None),
    ));
    assert_eq!(p.plan.placements().len(), 4);
    assert_eq!(claims_used(&p), 2);
}

/// Topology > Hostname > balance multiple deployments with hostname topology spread & varying arch
#[test]
fn hostname_two_deployments_two_arches_four_nodes() {
    let p = run(cat(
        cat(vec![any_pool()], app_spread(HOST, "app1", 2, Some("amd64"))),
        app_spread(HOST, "app2", 2, Some("arm64")),
    ));
    assert_eq!(p.plan.placements().len(), 4);
    assert_eq!(claims_used(&p), 4);
}

const NODECLAIM: &str = "adze.sh/nodeclaim";

/// Topology > NodeClaim Name > should balance pods across nodes
#[test]
fn nodeclaim_balance_across_nodes() {
    let p = run(cat(
        vec![any_pool()],
        spread_pods(
            "p",
            4,
            None,
            json!([spread(NODECLAIM, 1, true, sel_test())]),
        ),
    ));
    assert_eq!(skew(&p, NODECLAIM, is_test), vec![1, 1, 1, 1]);
}

/// Topology > NodeClaim Name > should balance pods on the same NodeClaim up to maxskew
#[test]
fn nodeclaim_same_claim_up_to_max_skew() {
    let p = run(cat(
        vec![any_pool()],
        spread_pods(
            "p",
            4,
            None,
            json!([spread(NODECLAIM, 4, true, sel_test())]),
        ),
    ));
    assert_eq!(skew(&p, NODECLAIM, is_test), vec![4]);
}

/// Topology > NodeClaim Name > balance multiple deployments with NodeClaim topology spread
#[test]
fn nodeclaim_two_deployments_share_two_nodes() {
    let p = run(cat(
        cat(vec![any_pool()], app_spread(NODECLAIM, "app1", 2, None)),
        app_spread(NODECLAIM, "app2", 2, None),
    ));
    assert_eq!(p.plan.placements().len(), 4);
    assert_eq!(claims_used(&p), 2);
}

/// Topology > NodeClaim Name > balance multiple deployments with NodeClaim topology spread & varying arch
#[test]
fn nodeclaim_two_deployments_two_arches_four_nodes() {
    let p = run(cat(
        cat(
            vec![any_pool()],
            app_spread(NODECLAIM, "app1", 2, Some("amd64")),
        ),
        app_spread(NODECLAIM, "app2", 2, Some("arm64")),
    ));
    assert_eq!(p.plan.placements().len(), 4);
    assert_eq!(claims_used(&p), 4);
}

fn ct_spread(max_skew: i32, hard: bool) -> Value {
    json!([spread(CT, max_skew, hard, sel_test())])
}

/// Topology > CapacityType > should balance pods across capacity types
#[test]
fn capacity_type_balance() {
    let p = run(cat(
        vec![any_pool()],
        spread_pods("p", 4, None, ct_spread(1, true)),
    ));
    assert_eq!(skew(&p, CT, is_test), vec![2, 2]);
}

/// Topology > CapacityType > should respect NodePool capacity type constraints
#[test]
fn capacity_type_nodepool_constraints() {
    let np = pool(json!([req(CT, "In", &["spot", "on-demand"])]));
    let p = run(cat(vec![np], spread_pods("p", 4, None, ct_spread(1, true))));
    assert_eq!(skew(&p, CT, is_test), vec![2, 2]);
}

/// Topology > CapacityType > should not violate max-skew when unsat = do not schedule (capacity type)
#[test]
fn capacity_type_do_not_schedule_keeps_max_skew() {
    let np = pool(json!([req(CT, "In", &["on-demand"])]));
    let p = run(cat(
        vec![
            np,
            small_node("spot", json!({ZONE: "test-zone-1", CT: "spot"})),
            pod(
                "first",
                test_label(),
                Some("1.1"),
                json!({"nodeName": "spot", "topologySpreadConstraints": ct_spread(1, true)}),
            ),
        ],
        spread_pods("p", 5, Some("1.1"), ct_spread(1, true)),
    ));
    assert_eq!(skew(&p, CT, is_test), vec![1, 2]);
}

/// Topology > CapacityType > should violate max-skew when unsat = schedule anyway (capacity type)
#[test]
fn capacity_type_schedule_anyway_may_violate() {
    let np = pool(json!([req(CT, "In", &["on-demand"])]));
    let p = run(cat(
        vec![
            np,
            small_node("spot", json!({ZONE: "test-zone-1", CT: "spot"})),
            pod(
                "first",
                test_label(),
                Some("1.1"),
                json!({"nodeName": "spot", "topologySpreadConstraints": ct_spread(1, false)}),
            ),
        ],
        spread_pods("p", 5, Some("1.1"), ct_spread(1, false)),
    ));
    assert_eq!(skew(&p, CT, is_test), vec![1, 5]);
}

/// Topology > CapacityType > should only count running/scheduled pods with matching labels scheduled to nodes with a corresponding domain
#[test]
fn capacity_type_counts_only_running_matching_pods_with_domain() {
    let mut docs = vec![
        any_pool(),
        node_sized("first", json!({CT: "spot"}), "3900m", 10),
        node_sized("second", json!({CT: "on-demand"}), "3900m", 10),
        node_sized("third", json!({}), "3900m", 10),
    ];
    docs.extend(ignored_pods("first", "third"));
    docs.push(pod(
        "run-3",
        test_label(),
        None,
        json!({"nodeName": "second"}),
    ));
    docs.extend(spread_pods("p", 2, None, ct_spread(1, true)));
    let p = run(docs);
    p.expect_placed("default/p-0");
    p.expect_placed("default/p-1");
    assert!(
        p.placed("default/terminating").is_none()
            && p.unschedulable("default/terminating").is_none(),
        "a terminating pod is not planned"
    );
    assert_eq!(skew(&p, CT, is_test), vec![2, 3]);
}

/// Topology > CapacityType > should match all pods when labelSelector is not specified
#[test]
fn capacity_type_no_label_selector_matches_all() {
    let p = run(vec![
        any_pool(),
        pod(
            "p",
            json!({}),
            None,
            json!({"topologySpreadConstraints": [spread(CT, 1, true, Value::Null)]}),
        ),
    ]);
    p.expect_placed("default/p");
    assert_eq!(skew(&p, CT, all), vec![1]);
}

/// Topology > CapacityType > should handle interdependent selectors
#[test]
fn capacity_type_interdependent_selectors_pack_one_node() {
    let p = run(cat(
        vec![any_pool()],
        pods(
            "p",
            5,
            json!({}),
            None,
            json!({"topologySpreadConstraints": [spread(HOST, 1, true, sel_test())]}),
        ),
    ));
    let nodes: std::collections::BTreeSet<&str> = (0..5)
        .map(|i| p.expect_placed(&format!("default/p-{i}")))
        .collect();
    assert_eq!(nodes.len(), 1, "{nodes:?}");
}

/// Topology > CapacityType > should balance pods across capacity-types (node required affinity constrained)
#[test]
fn capacity_type_required_affinity_excludes_other_domain() {
    let p = run(cat(
        vec![
            any_pool(),
            node("od", json!({ZONE: "test-zone-1", CT: "on-demand"})),
            pod("first", test_label(), None, json!({"nodeName": "od"})),
        ],
        pods(
            "p",
            5,
            test_label(),
            None,
            json!({
                "topologySpreadConstraints": ct_spread(1, true),
                "affinity": node_affinity(json!([req(ZONE, "In", &["test-zone-2"]), req(CT, "In", &["spot"])])),
            }),
        ),
    ));
    assert_eq!(skew(&p, CT, is_test), vec![1, 5]);
}

/// Topology > CapacityType > should balance pods across capacity-types (no constraints)
#[test]
fn capacity_type_existing_domain_limits_spot() {
    let np = pool(json!([req(CT, "In", &["spot"])]));
    let p = run(cat(
        vec![
            np,
            node_sized(
                "od",
                json!({ZONE: "test-zone-1", CT: "on-demand",
            "node.kubernetes.io/instance-type": "single-pod-instance-type"}),
                "3900m",
                1,
            ),
            pod("first", test_label(), Some("2"), json!({"nodeName": "od"})),
        ],
        spread_pods("p", 5, Some("2"), ct_spread(1, true)),
    ));
    assert_eq!(skew(&p, CT, is_test), vec![1, 2]);
}

/// Topology > CapacityType > should balance pods across arch (no constraints)
#[test]
fn arch_existing_domain_limits_arm() {
    let np = pool(json!([req(ARCH, "In", &["arm64"])]));
    let arch_spread = json!([spread(ARCH, 1, true, sel_test())]);
    let p = run(cat(
        vec![
            np,
            node_sized(
                "amd",
                json!({ZONE: "test-zone-1", CT: "on-demand", ARCH: "amd64",
            "node.kubernetes.io/instance-type": "single-pod-instance-type"}),
                "3900m",
                1,
            ),
            pod("first", test_label(), Some("2"), json!({"nodeName": "amd"})),
        ],
        spread_pods("p", 5, Some("2"), arch_spread),
    ));
    assert_eq!(skew(&p, ARCH, is_test), vec![1, 2]);
}

fn spread_of(p: &Planned, key: &str) -> usize {
    let c = skew(p, key, is_test);
    c.iter().max().copied().unwrap_or(0)
}

/// Topology > Combined Hostname and Zonal Topology > should spread pods while respecting both constraints (hostname and zonal)
#[test]
fn hostname_and_zone_spread_together() {
    let both = json!([
        spread(ZONE, 1, true, sel_test()),
        spread(HOST, 3, true, sel_test())
    ]);
    // Round one: two pods.
    let p = run(cat(
        vec![any_pool()],
        spread_pods("p", 2, None, both.clone()),
    ));
    assert_eq!(skew(&p, ZONE, is_test), vec![1, 1]);
    assert!(spread_of(&p, HOST) <= 3);
    // Round two: round one left a pod on a node in zone 1 and one in zone 2; three more.
    let mut docs = vec![
        any_pool(),
        node("z1", json!({ZONE: "test-zone-1", CT: "on-demand"})),
        node("z2", json!({ZONE: "test-zone-2", CT: "on-demand"})),
    ];
    for (i, n) in ["z1", "z2"].iter().enumerate() {
        docs.push(pod(
            &format!("old-{i}"),
            test_label(),
            None,
            json!({"nodeName": n, "topologySpreadConstraints": both}),
        ));
    }
    let p = run(cat(docs, spread_pods("p", 3, None, both.clone())));
    assert_eq!(skew(&p, ZONE, is_test), vec![1, 2, 2]);
    assert!(spread_of(&p, HOST) <= 3);
}

/// Topology > Combined Hostname and Zonal Topology > should balance pods across NodePool requirements
#[test]
fn spread_over_custom_key_across_nodepools() {
    let key = "capacity.spread.4-1";
    let spot = pool_with(
        "spot",
        json!([
            req(CT, "In", &["spot"]),
            req(key, "In", &["2", "3", "4", "5"])
        ]),
        json!({}),
        json!({}),
        json!({}),
    );
    let od = pool_with(
        "on-demand",
        json!([req(CT, "In", &["on-demand"]), req(key, "In", &["1"])]),
        json!({}),
        json!({}),
        json!({}),
    );
    let p = run(cat(
        vec![spot, od],
        spread_pods("p", 20, None, json!([spread(key, 1, true, sel_test())])),
    ));
    assert_eq!(p.plan.placements().len(), 20, "{:?}", p.plan.unschedulable);
    assert_eq!(skew(&p, key, is_test), vec![4, 4, 4, 4, 4]);
    assert_eq!(skew(&p, CT, is_test), vec![4, 16]);
}

/// Topology > Combined Hostname and Zonal Topology > should spread pods while respecting both constraints
/// (the first of two cases so named: zone, hostname schedule-anyway, a zone-3 pool limited to 0 CPU)
#[test]
fn zone_spread_counts_domain_of_pool_at_limit() {
    let both = json!([
        spread(ZONE, 1, true, sel_test()),
        spread(HOST, 1, false, sel_test())
    ]);
    let a = pool(json!([req(ZONE, "In", &["test-zone-1", "test-zone-2"])]));
    let b = pool_with(
        "zone-3",
        json!([req(ZONE, "In", &["test-zone-3"])]),
        json!({}),
        json!({}),
        json!({"limits": {"cpu": "0"}}),
    );
    let p = run(cat(vec![a, b], spread_pods("p", 10, None, both)));
    assert_eq!(skew(&p, ZONE, is_test), vec![1, 1]);
    assert_eq!(skew(&p, HOST, is_test), vec![1, 1]);
}

/// Topology > Combined Hostname and Zonal Topology > should spread pods while respecting both constraints
/// (the second of two cases so named: capacity type and hostname)
#[test]
fn capacity_type_and_hostname_spread_together() {
    let both = json!([
        spread(CT, 1, true, sel_test()),
        spread(HOST, 3, true, sel_test())
    ]);
    let p = run(cat(
        vec![any_pool()],
        spread_pods("p", 2, None, both.clone()),
    ));
    assert_eq!(skew(&p, CT, is_test), vec![1, 1]);
    assert!(spread_of(&p, HOST) <= 3);
    // Round two: one pod on a spot node, one on an on-demand node; three more.
    let mut docs = vec![
        any_pool(),
        node("spot", json!({ZONE: "test-zone-1", CT: "spot"})),
        node("od", json!({ZONE: "test-zone-1", CT: "on-demand"})),
    ];
    for (i, n) in ["spot", "od"].iter().enumerate() {
        docs.push(pod(
            &format!("old-{i}"),
            test_label(),
            None,
            json!({"nodeName": n, "topologySpreadConstraints": both}),
        ));
    }
    let p = run(cat(docs, spread_pods("p", 3, None, both)));
    assert_eq!(skew(&p, CT, is_test), vec![2, 3]);
    assert!(spread_of(&p, HOST) <= 3);
}

/// Topology > Combined Zonal and Capacity Type Topology > should spread pods while respecting both constraints
#[test]
fn zone_and_capacity_type_spread_together() {
    let both = json!([
        spread(CT, 1, true, sel_test()),
        spread(ZONE, 1, true, sel_test())
    ]);
    let p = run(cat(
        vec![any_pool()],
        spread_pods("p", 2, None, both.clone()),
    ));
    assert_eq!(p.plan.placements().len(), 2, "{:?}", p.plan.unschedulable);
    assert!(spread_of(&p, CT) <= 1 && spread_of(&p, ZONE) <= 1);
    // All four of Karpenter's rounds in one batch: the bounds of its last round hold.
    let p = run(cat(vec![any_pool()], spread_pods("p", 19, None, both)));
    // (Karpenter asserts no more than the bounds; some pods may stay pending.)
    assert_eq!(skew(&p, CT, is_test).len(), 2, "{:?}", p.plan.unschedulable);
    assert_eq!(
        skew(&p, ZONE, is_test).len(),
        3,
        "{:?}",
        p.plan.unschedulable
    );
    assert!(spread_of(&p, CT) <= 11, "{:?}", skew(&p, CT, is_test));
    assert!(spread_of(&p, ZONE) <= 7, "{:?}", skew(&p, ZONE, is_test));
}

/// Largest minus smallest count over `domains` (absent ones count 0).
fn max_skew_over(p: &Planned, key: &str, domains: &[&str]) -> usize {
    let mut by: BTreeMap<String, usize> = domains.iter().map(|d| (d.to_string(), 0)).collect();
    for c in &p.plan.new_claims {
        if let Some(v) = c.labels.get(key) {
            *by.entry(v.clone()).or_default() += c.pods.len();
        }
    }
    let v: Vec<usize> = by.into_values().collect();
    v.iter().max().unwrap() - v.iter().min().unwrap()
}

/// Topology > Combined Hostname, Zonal, and Capacity Type Topology > should spread pods while respecting all constraints
#[test]
fn hostname_zone_capacity_type_spread_together() {
    let three = json!([
        spread(CT, 1, true, sel_test()),
        spread(ZONE, 2, true, sel_test()),
        spread(HOST, 3, true, sel_test())
    ]);
    // Karpenter adds batches of 1..14 pods to one cluster; here each batch starts empty.
    for n in 1..15 {
        let mut docs = vec![any_pool()];
        docs.extend(spread_pods("p", n, None, three.clone()));
        let p = plan(&yaml_of(&assorted_catalog().to_string(), docs));
        assert_eq!(
            p.plan.placements().len(),
            n,
            "batch {n}: {:?}",
            p.plan.unschedulable
        );
        assert!(
            max_skew_over(&p, CT, &["spot", "on-demand"]) <= 1,
            "batch {n}"
        );
        assert!(max_skew_over(&p, ZONE, &ZONES) <= 2, "batch {n}");
        let hosts = skew(&p, HOST, is_test);
        assert!(
            hosts.iter().max().unwrap() - hosts.iter().min().unwrap() <= 3,
            "batch {n}"
        );
    }
}

/// Topology > Combined Zonal Topology and Node Affinity > should limit spread options by nodeSelector
#[test]
fn zone_spread_limited_by_node_selector() {
    let p = run(cat(
        cat(
            vec![any_pool()],
            pods(
                "a",
                5,
                test_label(),
                None,
                json!({"topologySpreadConstraints": zone_spread(1),
            "nodeSelector": {ZONE: "test-zone-1"}}),
            ),
        ),
        pods(
            "b",
            10,
            test_label(),
            None,
            json!({"topologySpreadConstraints": zone_spread(1),
            "nodeSelector": {ZONE: "test-zone-2"}}),
        ),
    ));
    assert_eq!(skew(&p, ZONE, is_test), vec![5, 10]);
}

/// Topology > Combined Zonal Topology and Node Affinity > should limit spread options by node requirements
#[test]
fn zone_spread_limited_by_node_requirements() {
    let p = run(cat(
        vec![any_pool()],
        pods(
            "p",
            10,
            test_label(),
            None,
            json!({
                "topologySpreadConstraints": zone_spread(1),
                "affinity": node_affinity(json!([req(ZONE, "In", &["test-zone-1", "test-zone-2"])])),
            }),
        ),
    ));
    assert_eq!(skew(&p, ZONE, is_test), vec![5, 5]);
}

/// Topology > Combined Zonal Topology and Node Affinity > should limit spread options by required node affinity
#[test]
fn zone_spread_limited_by_required_node_affinity() {
    let in_zones = |z: &[&str]| {
        json!({"topologySpreadConstraints": zone_spread(1),
        "affinity": node_affinity(json!([req(ZONE, "In", z)]))})
    };
    let p = run(cat(
        vec![any_pool()],
        pods(
            "p",
            6,
            test_label(),
            None,
            in_zones(&["test-zone-1", "test-zone-2"]),
        ),
    ));
    assert_eq!(skew(&p, ZONE, is_test), vec![3, 3]);

    // Round two: three pods in each of zones 1 and 2; one more that may use zone 2 or 3.
    let np = pool(json!([req(ZONE, "In", &ZONES)]));
    let existing = |extra: Vec<Value>| {
        let mut docs = vec![
            np.clone(),
            node("z1", json!({ZONE: "test-zone-1", CT: "on-demand"})),
            node("z2", json!({ZONE: "test-zone-2", CT: "on-demand"})),
        ];
        for i in 0..3 {
            for z in ["z1", "z2"] {
                docs.push(pod(
                    &format!("{z}-{i}"),
                    test_label(),
                    None,
                    json!({"nodeName": z, "topologySpreadConstraints": zone_spread(1)}),
                ));
            }
        }
        docs.extend(extra);
        docs
    };
    let p = run(existing(vec![pod(
        "one",
        test_label(),
        None,
        in_zones(&["test-zone-2", "test-zone-3"]),
    )]));
    assert_eq!(
        label_at(&p, "default/one", ZONE).as_deref(),
        Some("test-zone-3")
    );
    assert_eq!(skew(&p, ZONE, is_test), vec![1, 3, 3]);

    // Round three: zone 3 holds that pod on a node of its own; five unconstrained pods.
    let mut docs = existing(vec![
        node("z3", json!({ZONE: "test-zone-3", CT: "on-demand"})),
        pod(
            "one",
            test_label(),
            None,
            json!({"nodeName": "z3", "topologySpreadConstraints": zone_spread(1)}),
        ),
    ]);
    docs.extend(spread_pods("p", 5, None, zone_spread(1)));
    let p = run(docs);
    assert_eq!(skew(&p, ZONE, is_test), vec![4, 4, 4]);
}

/// Topology > Combined Zonal Topology and Node Affinity > should not limit spread options by preferred node affinity
#[test]
fn zone_spread_not_limited_by_preferred_node_affinity() {
    let p = run(cat(
        vec![any_pool()],
        pods(
            "p",
            6,
            test_label(),
            None,
            json!({
                "topologySpreadConstraints": zone_spread(1),
                "affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 1, "preference": {"matchExpressions":
                        [req(ZONE, "In", &["test-zone-1", "test-zone-2"])]}}]}},
            }),
        ),
    ));
    assert_eq!(skew(&p, ZONE, is_test), vec![2, 2, 2]);
}

/// Topology > Combined Capacity Type Topology and Node Affinity > should limit spread options by nodeSelector
#[test]
fn capacity_type_spread_limited_by_node_selector() {
    let with = |ct: &str| {
        json!({"topologySpreadConstraints": ct_spread(1, false),
        "nodeSelector": {CT: ct}})
    };
    let p = run(cat(
        cat(
            vec![any_pool()],
            pods("s", 5, test_label(), None, with("spot")),
        ),
        pods("o", 5, test_label(), None, with("on-demand")),
    ));
    assert_eq!(skew(&p, CT, is_test), vec![5, 5]);
}

/// Topology > Combined Capacity Type Topology and Node Affinity > should limit spread options by node affinity (capacity type)
#[test]
fn capacity_type_spread_limited_by_node_affinity() {
    let with = |cts: &[&str]| {
        json!({"topologySpreadConstraints": ct_spread(1, true),
        "affinity": node_affinity(json!([req(CT, "In", cts)]))})
    };
    let p = run(cat(
        vec![any_pool()],
        pods("p", 3, test_label(), None, with(&["spot"])),
    ));
    assert_eq!(skew(&p, CT, is_test), vec![3]);

    let spot_node = |extra: Vec<Value>| {
        let mut docs = vec![
            any_pool(),
            node("spot", json!({ZONE: "test-zone-1", CT: "spot"})),
        ];
        for i in 0..3 {
            docs.push(pod(
                &format!("old-{i}"),
                test_label(),
                None,
                json!({"nodeName": "spot", "topologySpreadConstraints": ct_spread(1, true)}),
            ));
        }
        docs.extend(extra);
        docs
    };
    let p = run(spot_node(vec![pod(
        "one",
        test_label(),
        None,
        with(&["on-demand", "spot"]),
    )]));
    assert_eq!(
        label_at(&p, "default/one", CT).as_deref(),
        Some("on-demand")
    );
    assert_eq!(skew(&p, CT, is_test), vec![1, 3]);

    let mut docs = spot_node(vec![
        node("od", json!({ZONE: "test-zone-1", CT: "on-demand"})),
        pod(
            "one",
            test_label(),
            None,
            json!({"nodeName": "od", "topologySpreadConstraints": ct_spread(1, true)}),
        ),
    ]);
    docs.extend(spread_pods("p", 5, None, ct_spread(1, true)));
    let p = run(docs);
    assert_eq!(skew(&p, CT, is_test), vec![4, 5]);
}

// ---------------------------------------------------------------------------------------------
// Pod affinity / anti-affinity
// ---------------------------------------------------------------------------------------------

fn host_spread_pods(n: usize) -> Vec<Value> {
    spread_pods(
        "spread",
        n,
        None,
        json!([spread(HOST, 1, true, sel_test())]),
    )
}

fn requires(kind: &str, selector: Value, key: &str) -> Value {
    affinity(kind, json!([pod_term(selector, key)]), Value::Null)
}

fn prefers(kind: &str, weight: i32, selector: Value, key: &str) -> Value {
    affinity(
        kind,
        Value::Null,
        json!([{"weight": weight, "podAffinityTerm": pod_term(selector, key)}]),
    )
}

/// Topology > Pod Affinity/Anti-Affinity > should schedule a pod with empty pod affinity and anti-affinity
#[test]
fn pod_affinity_empty_terms() {
    let p = run(vec![
        any_pool(),
        pod(
            "p",
            json!({}),
            None,
            json!({"affinity": {
        "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": []},
        "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": []}}}),
        ),
    ]);
    p.expect_placed("default/p");
}

/// Topology > Pod Affinity/Anti-Affinity > should respect pod affinity (hostname)
#[test]
fn pod_affinity_hostname() {
    let mut docs = cat(vec![any_pool()], host_spread_pods(10));
    docs.push(pod("target", s2(), None, json!({})));
    docs.push(pod(
        "follower",
        json!({}),
        None,
        json!({"affinity": requires("podAffinity", sel_s2(), HOST)}),
    ));
    let p = run(docs);
    assert_eq!(
        p.expect_placed("default/target"),
        p.expect_placed("default/follower")
    );
}

fn s2_host_spread() -> Value {
    json!([spread(HOST, 1, true, sel_s2())])
}

/// Topology > Pod Affinity/Anti-Affinity > should respect pod affinity (arch)
#[test]
fn pod_affinity_arch() {
    let p = run(vec![
        any_pool(),
        pod(
            "arm",
            s2(),
            Some("2"),
            json!({"topologySpreadConstraints": s2_host_spread(),
            "nodeSelector": {ARCH: "arm64"}}),
        ),
        pod(
            "follower",
            s2(),
            Some("1"),
            json!({"topologySpreadConstraints": s2_host_spread(),
            "affinity": requires("podAffinity", sel_s2(), ARCH)}),
        ),
    ]);
    assert_ne!(
        p.expect_placed("default/arm"),
        p.expect_placed("default/follower")
    );
    assert_eq!(
        label_at(&p, "default/follower", ARCH).as_deref(),
        Some("arm64")
    );
}

fn self_affine(prefix: &str, n: usize, key: &str, mut spec: Value) -> Vec<Value> {
    spec["affinity"] = requires("podAffinity", sel_s2(), key);
    pods(prefix, n, s2(), None, spec)
}

fn distinct_nodes(p: &Planned, prefix: &str, n: usize) -> usize {
    (0..n)
        .map(|i| p.expect_placed(&format!("default/{prefix}-{i}")))
        .collect::<std::collections::BTreeSet<_>>()
        .len()
}

/// Topology > Pod Affinity/Anti-Affinity > should respect self pod affinity (hostname)
#[test]
fn pod_affinity_self_hostname() {
    let p = run(cat(vec![any_pool()], self_affine("p", 3, HOST, json!({}))));
    assert_eq!(distinct_nodes(&p, "p", 3), 1);
}

/// Topology > Pod Affinity/Anti-Affinity > should respect self pod affinity for first empty topology domain only (hostname)
#[test]
fn pod_affinity_self_hostname_first_domain_only() {
    let p = run(cat(vec![any_pool()], self_affine("p", 10, HOST, json!({}))));
    assert_eq!(placed_count(&p, "p-"), 5);
    assert_eq!(unschedulable_count(&p), 5);
    assert_eq!(claims_used(&p), 1);
    // Next batch: the five placed pods fill their node; ten more have nowhere to go.
    let mut docs = vec![
        any_pool(),
        node("full", json!({ZONE: "test-zone-1", CT: "on-demand"})),
    ];
    for i in 0..5 {
        let mut d = self_affine("old", 1, HOST, json!({"nodeName": "full"})).remove(0);
        d["metadata"]["name"] = json!(format!("old-{i}"));
        docs.push(d);
    }
    let p = run(cat(docs, self_affine("p", 10, HOST, json!({}))));
    expect_all_refused(&p, "p", 10, "affinity");
}

/// Topology > Pod Affinity/Anti-Affinity > should respect self pod affinity for first empty topology domain only (hostname/constrained zones)
#[test]
fn pod_affinity_self_hostname_constrained_zones() {
    let mut docs = vec![
        any_pool(),
        node("z1", json!({ZONE: "test-zone-1", CT: "on-demand"})),
    ];
    docs.extend(self_affine(
        "first",
        1,
        HOST,
        json!({"nodeName": "z1", "nodeSelector": {ZONE: "test-zone-1"}}),
    ));
    docs.extend(
        self_affine("p", 10, HOST, json!({}))
            .into_iter()
            .map(|mut d| {
                d["spec"]["affinity"]["nodeAffinity"] = node_affinity(json!([req(
                    ZONE,
                    "In",
                    &["test-zone-2", "test-zone-3"]
                )]))["nodeAffinity"]
                    .clone();
                d
            }),
    );
    let p = run(docs);
    expect_all_refused(&p, "p", 10, "affinity");
}

/// Topology > Pod Affinity/Anti-Affinity > should respect self pod affinity (zone)
#[test]
fn pod_affinity_self_zone() {
    let p = run(cat(vec![any_pool()], self_affine("p", 3, ZONE, json!({}))));
    assert_eq!(distinct_nodes(&p, "p", 3), 1);
}

/// Topology > Pod Affinity/Anti-Affinity > should respect self pod affinity (zone w/ constraint)
#[test]
fn pod_affinity_self_zone_with_constraint() {
    let p = run(cat(
        vec![any_pool()],
        self_affine("p", 3, ZONE, json!({}))
            .into_iter()
            .map(|mut d| {
                d["spec"]["affinity"]["nodeAffinity"] =
                    node_affinity(json!([req(ZONE, "In", &["test-zone-3"])]))["nodeAffinity"]
                        .clone();
                d
            })
            .collect(),
    ));
    assert_eq!(distinct_nodes(&p, "p", 3), 1);
    assert_eq!(
        label_at(&p, "default/p-0", ZONE).as_deref(),
        Some("test-zone-3")
    );
}

/// Topology > Pod Affinity/Anti-Affinity > should allow violation of preferred pod affinity
#[test]
fn pod_affinity_preferred_may_be_violated() {
    let mut docs = cat(vec![any_pool()], host_spread_pods(10));
    docs.push(pod(
        "p",
        json!({}),
        None,
        json!({"affinity": prefers("podAffinity", 50, sel_s2(), HOST)}),
    ));
    run(docs).expect_placed("default/p");
}

/// Topology > Pod Affinity/Anti-Affinity > should allow violation of preferred pod anti-affinity
#[test]
fn pod_anti_affinity_preferred_may_be_violated() {
    let mut docs = cat(
        vec![any_pool()],
        spread_pods("spread", 3, None, zone_spread(1)),
    );
    docs.extend(pods(
        "p",
        10,
        json!({}),
        None,
        json!({"affinity": prefers("podAntiAffinity", 50, sel_test(), ZONE)}),
    ));
    let p = run(docs);
    assert_eq!(placed_count(&p, "p-"), 10, "{:?}", p.plan.unschedulable);
}

/// Topology > Pod Affinity/Anti-Affinity > should separate nodes using simple pod anti-affinity on hostname
#[test]
fn pod_anti_affinity_hostname_separates() {
    for avoider_first in [true, false] {
        let target = pod("target", s2(), None, json!({}));
        let avoider = pod(
            "avoider",
            json!({}),
            None,
            json!({"affinity": requires("podAntiAffinity", sel_s2(), HOST)}),
        );
        let docs = if avoider_first {
            vec![any_pool(), avoider, target]
        } else {
            vec![any_pool(), target, avoider]
        };
        let p = run(docs);
        assert_ne!(
            p.expect_placed("default/target"),
            p.expect_placed("default/avoider")
        );
    }
}

fn zone_pods(spec_extra: impl Fn() -> Value, labels: Value) -> Vec<Value> {
    ZONES
        .iter()
        .enumerate()
        .map(|(i, z)| {
            let mut spec = spec_extra();
            spec["nodeSelector"] = json!({ZONE: z});
            pod(&format!("zone{}", i + 1), labels.clone(), Some("2"), spec)
        })
        .collect()
}

/// Topology > Pod Affinity/Anti-Affinity > should not violate pod anti-affinity on zone
#[test]
fn pod_anti_affinity_zone_every_zone_taken() {
    let mut docs = cat(vec![any_pool()], zone_pods(|| json!({}), s2()));
    docs.push(pod(
        "avoider",
        json!({}),
        None,
        json!({"affinity": requires("podAntiAffinity", sel_s2(), ZONE)}),
    ));
    let p = run(docs);
    for z in ["zone1", "zone2", "zone3"] {
        p.expect_placed(&format!("default/{z}"));
    }
    expect_refused(&p, "default/avoider", "anti-affinity");
}

/// Topology > Pod Affinity/Anti-Affinity > should not violate pod anti-affinity on zone (other schedules first)
#[test]
fn pod_anti_affinity_zone_other_schedules_first() {
    let p = run(vec![
        any_pool(),
        pod("target", s2(), Some("2"), json!({})),
        pod(
            "avoider",
            json!({}),
            None,
            json!({"affinity": requires("podAntiAffinity", sel_s2(), ZONE)}),
        ),
    ]);
    p.expect_placed("default/target");
    // Adze commits each new claim to one zone, so the avoider goes to another zone in the
    // same pass (Karpenter, not knowing the target's zone yet, leaves it for a later batch).
    p.expect_placed("default/avoider");
    assert_ne!(
        label_at(&p, "default/target", ZONE),
        label_at(&p, "default/avoider", ZONE)
    );
}

/// Topology > Pod Affinity/Anti-Affinity > should not violate pod anti-affinity (arch)
#[test]
fn pod_anti_affinity_arch() {
    let p = run(vec![
        any_pool(),
        pod(
            "arm",
            s2(),
            Some("2"),
            json!({"topologySpreadConstraints": s2_host_spread(),
            "nodeSelector": {ARCH: "arm64"}}),
        ),
        pod(
            "avoider",
            s2(),
            Some("1"),
            json!({"topologySpreadConstraints": s2_host_spread(),
            "affinity": requires("podAntiAffinity", sel_s2(), ARCH)}),
        ),
    ]);
    p.expect_placed("default/arm");
    p.expect_placed("default/avoider");
    assert_eq!(
        label_at(&p, "default/avoider", ARCH).as_deref(),
        Some("amd64")
    );
}

/// Topology > Pod Affinity/Anti-Affinity > should violate preferred pod anti-affinity on zone (inverse)
#[test]
fn pod_anti_affinity_preferred_inverse_allows() {
    let mut docs = cat(
        vec![any_pool()],
        zone_pods(
            || json!({"affinity": prefers("podAntiAffinity", 10, sel_s2(), ZONE)}),
            json!({}),
        ),
    );
    docs.push(pod("target", s2(), None, json!({})));
    let p = run(docs);
    for z in ["zone1", "zone2", "zone3"] {
        p.expect_placed(&format!("default/{z}"));
    }
    p.expect_placed("default/target");
}

/// Topology > Pod Affinity/Anti-Affinity > should not violate pod anti-affinity on zone (inverse)
#[test]
fn pod_anti_affinity_required_inverse_blocks() {
    let mut docs = cat(
        vec![any_pool()],
        zone_pods(
            || json!({"affinity": requires("podAntiAffinity", sel_s2(), ZONE)}),
            json!({}),
        ),
    );
    docs.push(pod("target", s2(), None, json!({})));
    let p = run(docs);
    for z in ["zone1", "zone2", "zone3"] {
        p.expect_placed(&format!("default/{z}"));
    }
    expect_refused(&p, "default/target", "anti-affinity");
}

/// Topology > Pod Affinity/Anti-Affinity > should not violate pod anti-affinity on zone (Schrödinger)
#[test]
fn pod_anti_affinity_zone_undecided_zone() {
    let p = run(vec![
        any_pool(),
        pod(
            "anywhere",
            json!({}),
            Some("2"),
            json!({"affinity": requires("podAntiAffinity", sel_s2(), ZONE)}),
        ),
        pod("target", s2(), None, json!({})),
    ]);
    p.expect_placed("default/anywhere");
    // Karpenter refuses the target until the first node has a zone; Adze has decided the zone
    // already, so the target goes to another zone in the same pass (Karpenter's second batch).
    p.expect_placed("default/target");
    assert_ne!(
        label_at(&p, "default/anywhere", ZONE),
        label_at(&p, "default/target", ZONE)
    );
}

fn zone_nodes_with(spec_extra: impl Fn() -> Value) -> Vec<Value> {
    let mut docs = vec![any_pool()];
    for (i, z) in ZONES.iter().enumerate() {
        docs.push(node(
            &format!("n{}", i + 1),
            json!({ZONE: z, CT: "on-demand"}),
        ));
    }
    for (i, z) in ZONES.iter().enumerate() {
        let mut spec = spec_extra();
        spec["nodeSelector"] = json!({ZONE: z});
        spec["nodeName"] = json!(format!("n{}", i + 1));
        docs.push(pod(&format!("zone{}", i + 1), json!({}), Some("2"), spec));
    }
    docs
}

/// Topology > Pod Affinity/Anti-Affinity > should not violate pod anti-affinity on zone (inverse w/existing nodes)
#[test]
fn pod_anti_affinity_required_inverse_existing_nodes() {
    let mut docs =
        zone_nodes_with(|| json!({"affinity": requires("podAntiAffinity", sel_s2(), ZONE)}));
    docs.push(pod("target", s2(), None, json!({})));
    expect_refused(&run(docs), "default/target", "anti-affinity");
}

/// Topology > Pod Affinity/Anti-Affinity > should violate preferred pod anti-affinity on zone (inverse w/existing nodes)
#[test]
fn pod_anti_affinity_preferred_inverse_existing_nodes() {
    let mut docs =
        zone_nodes_with(|| json!({"affinity": prefers("podAntiAffinity", 10, sel_s2(), ZONE)}));
    docs.push(pod("target", s2(), None, json!({})));
    run(docs).expect_placed("default/target");
}

/// Topology > Pod Affinity/Anti-Affinity > should allow violation of a pod affinity preference with a conflicting required constraint
#[test]
fn pod_affinity_preference_yields_to_required_spread() {
    let mut docs = vec![any_pool(), pod("target", s2(), None, json!({}))];
    docs.extend(pods(
        "p",
        3,
        test_label(),
        None,
        json!({
            "topologySpreadConstraints": [spread(HOST, 1, true, sel_test())],
            "affinity": prefers("podAffinity", 50, sel_s2(), HOST),
        }),
    ));
    let p = run(docs);
    p.expect_placed("default/target");
    assert_eq!(placed_count(&p, "p-"), 3);
    assert_eq!(skew(&p, HOST, is_test), vec![1, 1, 1]);
}

/// Topology > Pod Affinity/Anti-Affinity > should support pod anti-affinity with a zone topology
#[test]
fn pod_anti_affinity_zone_one_per_zone() {
    let spec = json!({"affinity": requires("podAntiAffinity", sel_s2(), ZONE)});
    // Karpenter needs a batch per zone (it learns a node's zone only once it exists); Adze
    // commits zones while planning, so one batch reaches Karpenter's final state.
    let p = run(cat(
        vec![any_pool()],
        pods("p", 4, s2(), None, spec.clone()),
    ));
    assert_eq!(skew(&p, ZONE, is_s2), vec![1, 1, 1]);
    assert_eq!(unschedulable_count(&p), 1);
    // And with one such pod in every zone already, nothing more schedules.
    let mut docs = vec![any_pool()];
    for (i, z) in ZONES.iter().enumerate() {
        let n = format!("n{i}");
        docs.push(node(&n, json!({ZONE: z, CT: "on-demand"})));
        let mut s = spec.clone();
        s["nodeName"] = json!(n);
        docs.push(pod(&format!("old-{i}"), s2(), None, s));
    }
    let p = run(cat(docs, pods("p", 3, s2(), None, spec)));
    expect_all_refused(&p, "p", 3, "anti-affinity");
}

/// Topology > Pod Affinity/Anti-Affinity > should not schedule pods with affinity to a non-existent pod
#[test]
fn pod_affinity_to_missing_pod_unschedulable() {
    let p = run(cat(
        vec![any_pool()],
        pods(
            "p",
            10,
            json!({}),
            None,
            json!({"affinity": requires("podAffinity", sel_s2(), ZONE)}),
        ),
    ));
    expect_all_refused(&p, "p", 10, "affinity");
}

/// Topology > Pod Affinity/Anti-Affinity > should support pod affinity with zone topology (unconstrained target)
#[test]
fn pod_affinity_zone_unconstrained_target() {
    let mut docs = cat(
        vec![any_pool()],
        pods(
            "p",
            10,
            json!({}),
            None,
            json!({"affinity": requires("podAffinity", sel_s2(), ZONE)}),
        ),
    );
    docs.push(pod("target", s2(), None, json!({})));
    let p = run(docs);
    // Karpenter's final state (after a second batch): all eleven in the target's zone.
    assert_eq!(p.plan.placements().len(), 11, "{:?}", p.plan.unschedulable);
    assert_eq!(skew(&p, ZONE, all), vec![11]);
}

/// Topology > Pod Affinity/Anti-Affinity > should support pod affinity with zone topology (constrained target)
#[test]
fn pod_affinity_zone_constrained_target() {
    let mut docs = cat(
        vec![any_pool()],
        pods(
            "p",
            10,
            json!({}),
            None,
            json!({"affinity": requires("podAffinity", sel_s2(), ZONE)}),
        ),
    );
    docs.push(pod(
        "target",
        s2(),
        None,
        json!({"affinity": node_affinity(json!([req(ZONE, "In", &["test-zone-1"])]))}),
    ));
    let p = run(docs);
    assert_eq!(skew(&p, ZONE, all), vec![11]);
    assert_eq!(
        label_at(&p, "default/p-0", ZONE).as_deref(),
        Some("test-zone-1")
    );
}

/// Topology > Pod Affinity/Anti-Affinity > should handle multiple dependent affinities
#[test]
fn pod_affinity_chain() {
    let l = |t: &str| json!({"type": t, "spread": "spread"});
    let to = |t: &str| {
        json!({"affinity": requires("podAffinity",
        json!({"matchLabels": {"type": t, "spread": "spread"}}), HOST)})
    };
    let p = run(vec![
        any_pool(),
        pod("db", l("db"), None, json!({})),
        pod("web", l("web"), None, to("db")),
        pod("cache", l("cache"), None, to("web")),
        pod("ui", l("ui"), None, to("cache")),
    ]);
    for n in ["db", "web", "cache", "ui"] {
        p.expect_placed(&format!("default/{n}"));
    }
}

/// Topology > Pod Affinity/Anti-Affinity > should fail to schedule pods with unsatisfiable dependencies
#[test]
fn pod_affinity_unsatisfiable_dependency() {
    let p = run(vec![
        any_pool(),
        pod(
            "db",
            json!({"type": "db", "spread": "spread"}),
            None,
            json!({"affinity": requires("podAffinity",
                json!({"matchLabels": {"type": "web", "spread": "spread"}}), HOST)}),
        ),
    ]);
    expect_refused(&p, "default/db", "affinity");
}

fn namespaced_affinity(term_extra: Value, ns: &str) -> Planned {
    let mut docs = cat(vec![any_pool()], host_spread_pods(10));
    docs.push(pod("target", s2(), None, json!({"namespace": ns})));
    let mut term = pod_term(sel_s2(), HOST);
    merge(&mut term, term_extra);
    docs.push(pod("follower", json!({}), None,
        json!({"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}})));
    run(docs)
}

/// Topology > Pod Affinity/Anti-Affinity > should filter pod affinity topologies by namespace, no matching pods
#[test]
fn pod_affinity_other_namespace_not_matched() {
    let p = namespaced_affinity(json!({}), "other-ns-no-match");
    p.expect_placed("other-ns-no-match/target");
    expect_refused(&p, "default/follower", "affinity");
}

/// Topology > Pod Affinity/Anti-Affinity > should filter pod affinity topologies by namespace, matching pods namespace list
#[test]
fn pod_affinity_namespace_list() {
    let p = namespaced_affinity(json!({"namespaces": ["other-ns-list"]}), "other-ns-list");
    assert_eq!(
        p.expect_placed("other-ns-list/target"),
        p.expect_placed("default/follower")
    );
}

/// Topology > Pod Affinity/Anti-Affinity > should filter pod affinity topologies by namespace, empty namespace selector
#[test]
fn pod_affinity_empty_namespace_selector() {
    let p = namespaced_affinity(json!({"namespaceSelector": {}}), "empty-ns-selector");
    assert_eq!(
        p.expect_placed("empty-ns-selector/target"),
        p.expect_placed("default/follower")
    );
}

// ---------------------------------------------------------------------------------------------
// Taints
// ---------------------------------------------------------------------------------------------

fn tainted_pool(taints_field: &str, key: &str, value: &str) -> Value {
    pool_with(
        "default",
        json!([req(CT, "Exists", &[])]),
        json!({}),
        json!({ taints_field: [{"key": key, "value": value, "effect": "NoSchedule"}]}),
        json!({}),
    )
}

/// Taints > should taint nodes with NodePool taints
#[test]
fn taints_nodepool_taints_on_node() {
    let p = run(vec![
        tainted_pool("taints", "test", "bar"),
        pod(
            "p",
            json!({}),
            None,
            json!({"tolerations": [{"effect": "NoSchedule", "operator": "Exists"}]}),
        ),
    ]);
    let c = p.claim_of("default/p").expect("placed on a new claim");
    assert!(
        c.taints.iter().any(|t| t.key == "test" && t.value == "bar"),
        "{:?}",
        c.taints
    );
}

/// Taints > should schedule pods that tolerate NodePool constraints
#[test]
fn taints_only_tolerating_pods_scheduled() {
    let tol = |t: Value| json!({"tolerations": [t]});
    let p = run(vec![
        tainted_pool("taints", "test-key", "test-value"),
        pod(
            "exists",
            json!({}),
            None,
            tol(json!({"key": "test-key", "operator": "Exists", "effect": "NoSchedule"})),
        ),
        pod(
            "equal",
            json!({}),
            None,
            tol(json!({"key": "test-key", "value": "test-value",
            "operator": "Equal", "effect": "NoSchedule"})),
        ),
        pod("none", json!({}), None, json!({})),
        pod(
            "other-key",
            json!({}),
            None,
            tol(json!({"key": "invalid", "operator": "Exists"})),
        ),
        pod(
            "other-value",
            json!({}),
            None,
            tol(json!({"key": "test-key", "operator": "Equal", "effect": "NoSchedule"})),
        ),
    ]);
    p.expect_placed("default/exists");
    p.expect_placed("default/equal");
    expect_refused(&p, "default/none", "taint");
    expect_refused(&p, "default/other-key", "taint");
    expect_refused(&p, "default/other-value", "taint");
}

/// Taints > should provision nodes with taints and schedule pods if the taint is only a startup taint
#[test]
fn taints_startup_taint_needs_no_toleration() {
    let p = run(vec![
        tainted_pool("startupTaints", "ignore-me", "nothing-to-see-here"),
        pod("p", json!({}), None, json!({})),
    ]);
    p.expect_placed("default/p");
}

/// Taints > should not generate taints for OpExists
#[test]
fn taints_toleration_adds_no_taint() {
    let p = run(vec![
        any_pool(),
        pod(
            "p",
            json!({}),
            None,
            json!({"tolerations":
            [{"key": "test-key", "operator": "Exists", "effect": "NoExecute"}]}),
        ),
    ]);
    let c = p.claim_of("default/p").expect("placed on a new claim");
    assert!(c.taints.is_empty(), "{:?}", c.taints);
}
