#[path = "support/conformance.rs"]
mod conformance;

use std::time::Duration;

use adze_provisioner::simulate::Scenario;
use adze_provisioner::simulate::disruption::{DisruptionOptions, prepare};
use adze_scheduling::disruption::{
    self, Action, Budget, BudgetNodes, ConsolidationPolicy, Decision, Input, NodeFacts, Options,
    Pdb, PodFacts, PoolPolicy, Reason, StaticSize, expiry,
};

// Karpenter's disruption suites (pkg/controllers/disruption/*_test.go), restated as Adze
// clusters: the Nodes, bound Pods, NodePools and instance types of each case are a scenario
// (Karpenter's assorted fake instance types as an InstanceCatalog); what Karpenter keeps on the NodeClaim
// (its conditions: Drifted, Consolidatable; its creation time and expireAfter) and the
// NodePool's `spec.disruption` are the decision's facts and policies. Each case asks the
// decision the live controller asks (`adze_scheduling::disruption::decide`, `decide_all`,
// `expiry::expired`) and holds it to the outcome Karpenter's test asserts. The tables are
// docs/conformance/disruption_*.md.

const ITYPE: &str = "node.kubernetes.io/instance-type";
const ZONE: &str = "topology.kubernetes.io/zone";
const CT: &str = "adze.sh/capacity-type";

/// The clock of every case: nodes were created an hour before.
const NOW: i64 = 1_800_000_000;
const CREATED: i64 = NOW - 3600;

/// The most expensive on-demand type of the assorted catalog in test-zone-1 (Karpenter's
/// `mostExpensiveInstance`).
const MOST_EXPENSIVE: &str = "64-cpu-128-mem-test-zone-1-on-demand";
/// The cheapest (Karpenter's `leastExpensiveInstance`).
const LEAST_EXPENSIVE: &str = "1-cpu-1-mem-test-zone-1-on-demand";
/// A small type the test pod fits. On [`LEAST_EXPENSIVE`] kubelet's memory reservation and
/// eviction threshold take the whole 1 GiB; Karpenter's fake types carry no such overhead.
const FITS_SMALL: &str = "2-cpu-4-mem-test-zone-1-on-demand";
/// The most expensive spot type in test-zone-1 (Karpenter's `mostExpensiveSpotInstance`).
const MOST_EXPENSIVE_SPOT: &str = "64-cpu-128-mem-test-zone-1-spot";

/// Karpenter's fake price: 0.1 per vCPU and 0.1 per GB of memory.
fn fake_price(cpu: u32, mem_gib: u32) -> f64 {
    let p = 0.1 * f64::from(cpu) + 0.1 * f64::from(mem_gib) * 1.073_741_824;
    (p * 10_000.0).round() / 10_000.0
}

/// Karpenter's `InstanceTypesAssorted`, the disruption suites' cloud: one type per
/// combination of CPUs, memory, zone and capacity type, each with its one offering, named
/// `<cpu>-cpu-<mem>-mem-<zone>-<capacity type>`. Linux on amd64 only (Karpenter's also varies
/// OS and architecture; its test pods ask for neither, and every variant costs the same).
fn assorted() -> String {
    assorted_where(|_, _, _, _| true)
}

fn assorted_where(keep: impl Fn(u32, u32, &str, &str) -> bool) -> String {
    let mut s = String::from(
        "apiVersion: adze.sh/v1alpha1\nkind: InstanceCatalog\nmetadata: {name: assorted}\ninstanceTypes:\n",
    );
    for cpu in [1, 2, 4, 8, 16, 32, 64] {
        for mem in [1, 2, 4, 8, 16, 32, 64, 128] {
            for zone in ["test-zone-1", "test-zone-2", "test-zone-3"] {
                for ct in ["on-demand", "spot"] {
                    if !keep(cpu, mem, zone, ct) {
                        continue;
                    }
                    s.push_str(&format!(
                        "  - name: {cpu}-cpu-{mem}-mem-{zone}-{ct}\n    cpu: {cpu}\n    memory: {mem}Gi\n    pods: 100\n    arch: amd64\n    offerings:\n      - {{zone: {zone}, capacityType: {ct}, price: {}}}\n",
                        fake_price(cpu, mem)
                    ));
                }
            }
        }
    }
    s
}

/// A NodePool `name` that may launch every fake type, spot or on demand. Its disruption
/// settings are the case's [`PoolPolicy`].
fn nodepool(name: &str) -> String {
    format!(
        "apiVersion: adze.sh/v1\nkind: NodePool\nmetadata:\n  name: {name}\nspec:\n  template:\n    spec:\n      nodeClassRef: {{group: aws.adze.sh, kind: EC2NodeClass, name: default}}\n      requirements:\n        - {{key: {CT}, operator: In, values: [spot, on-demand]}}\n"
    )
}

/// A registered, initialized Node of `pool` as `itype` with this allocatable (flow-map body),
/// as Karpenter's `NodeClaimAndNode` builds them: in the zone and capacity type its type's
/// name says (test-zone-1 and on demand for names that say neither).
fn node(name: &str, pool: &str, itype: &str, allocatable: &str) -> String {
    let ct = if itype.ends_with("-spot") {
        "spot"
    } else {
        "on-demand"
    };
    let zone = ["test-zone-1", "test-zone-2", "test-zone-3"]
        .into_iter()
        .find(|z| itype.contains(z))
        .unwrap_or("test-zone-1");
    node_with_labels(
        name,
        &format!("adze.sh/nodepool: {pool}, {ITYPE}: {itype}, {ZONE}: {zone}, {CT}: {ct}"),
        allocatable,
    )
}

/// A registered, initialized Node with these labels (flow-map body) besides the OS, the
/// architecture and Adze's registered/initialized marks.
fn node_with_labels(name: &str, labels: &str, allocatable: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: {name}\n  labels: {{{labels}, kubernetes.io/arch: amd64, kubernetes.io/os: linux, adze.sh/initialized: \"true\", adze.sh/registered: \"true\"}}\nstatus:\n  allocatable: {{{allocatable}}}\n  capacity: {{{allocatable}}}\n"
    )
}

/// Karpenter's usual candidate: 32 CPUs, 100 pods.
const BIG: &str = "cpu: 32, memory: 128Gi, pods: 100";

/// A pod `default/<name>` bound to `node`, requesting `requests` (flow-map body), with labels.
fn bound(name: &str, node: &str, requests: &str, labels: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: default\n  labels: {labels}\nspec:\n  nodeName: {node}\n  containers:\n    - name: app\n      image: nginx\n      resources:\n        requests: {{{requests}}}\n"
    )
}

/// A pod owned by DaemonSet `ds`, bound to `node`.
fn daemon_pod(name: &str, node: &str, ds: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: default\n  labels: {{app: {ds}}}\n  ownerReferences: [{{apiVersion: apps/v1, kind: DaemonSet, name: {ds}, uid: u-{ds}, controller: true}}]\nspec:\n  nodeName: {node}\n  containers:\n    - name: d\n      image: busybox\n      resources:\n        requests: {{cpu: 100m}}\n"
    )
}

fn daemonset(name: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: {name}\n  namespace: default\nspec:\n  selector:\n    matchLabels: {{app: {name}}}\n  template:\n    metadata:\n      labels: {{app: {name}}}\n    spec:\n      containers:\n        - name: d\n          image: busybox\n          resources:\n            requests: {{cpu: 100m}}\n"
    )
}

/// A pod `default/<name>` bound to `node`, owned by a `kind` (ReplicaSet, StatefulSet, ...)
/// named `owner`, already being deleted (`deletionTimestamp` set, as an eviction leaves it
/// until its containers stop); `annotations` and `labels` are flow-map bodies.
fn terminating(
    name: &str,
    node: &str,
    kind: &str,
    owner: &str,
    annotations: &str,
    labels: &str,
) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: default\n  labels: {{{labels}}}\n  annotations: {{{annotations}}}\n  deletionTimestamp: \"2027-01-15T07:59:00Z\"\n  ownerReferences: [{{apiVersion: apps/v1, kind: {kind}, name: {owner}, uid: u-{owner}, controller: true}}]\nspec:\n  nodeName: {node}\n  containers:\n    - name: app\n      image: nginx\n      resources:\n        requests: {{cpu: 100m}}\n"
    )
}

/// The kubelet's mirror of a static pod on `node` (owned by the Node, with the mirror
/// annotation) with these annotations and labels (flow-map bodies).
fn mirror_pod(name: &str, node: &str, annotations: &str, labels: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: default\n  labels: {{{labels}}}\n  annotations: {{kubernetes.io/config.mirror: m-{name}, {annotations}}}\n  ownerReferences: [{{apiVersion: v1, kind: Node, name: {node}, uid: u-{node}, controller: true}}]\nspec:\n  nodeName: {node}\n  containers:\n    - name: static\n      image: nginx\n      resources:\n        requests: {{cpu: 100m}}\n"
    )
}

/// A policy/v1 PodDisruptionBudget `default/<name>` selecting `labels` (flow-map body) whose
/// status allows `allowed` evictions now.
fn pdb_object(name: &str, namespace: &str, labels: &str, allowed: u32) -> String {
    format!(
        "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata:\n  name: {name}\n  namespace: {namespace}\nspec:\n  maxUnavailable: 0\n  selector:\n    matchLabels: {{{labels}}}\nstatus:\n  disruptionsAllowed: {allowed}\n  currentHealthy: 1\n  desiredHealthy: 1\n  expectedPods: 1\n"
    )
}

/// The scenario `docs` (after the assorted catalog) read as `run` reads a cluster: the
/// objects become the decision's facts through the controller's own mapping
/// (`disruption::input::build`, by way of the offline planner's `prepare`), so annotations,
/// owners, deletion timestamps and PodDisruptionBudget objects are read as they are live.
fn from_objects(docs: &[String]) -> Input {
    let catalog = assorted();
    let mut all: Vec<&str> = vec![&catalog];
    all.extend(docs.iter().map(String::as_str));
    let scenario =
        Scenario::parse(&conformance::scenario(&all)).unwrap_or_else(|e| panic!("scenario: {e}"));
    let options = DisruptionOptions::at("2027-01-15T08:00:00Z".parse().unwrap());
    let prepared = prepare(&scenario, &options);
    assert_eq!(prepared.built.input.now, NOW);
    prepared.built.input
}

/// A cluster and the facts disruption reads beside it.
struct Cluster {
    input: Input,
}

impl Cluster {
    /// The scenario `docs` (after the assorted catalog), every node an hour old, undisturbed,
    /// expiring after 30 days; every NodePool under Karpenter's test defaults for the suite
    /// at hand: `consolidateAfter: 0s`, one budget of 100%.
    fn new(docs: &[String]) -> Cluster {
        Self::with_catalog(&assorted(), docs)
    }

    fn with_catalog(catalog: &str, docs: &[String]) -> Cluster {
        let mut all: Vec<&str> = vec![catalog];
        all.extend(docs.iter().map(String::as_str));
        let scenario = Scenario::parse(&conformance::scenario(&all))
            .unwrap_or_else(|e| panic!("scenario: {e}"));
        let snapshot = scenario.snapshot;
        let nodes = snapshot
            .nodes
            .iter()
            .map(|n| NodeFacts::new(&n.name, CREATED))
            .collect();
        let policies = snapshot
            .nodepools
            .iter()
            .map(|p| {
                let mut policy = PoolPolicy::new(&p.name);
                policy.budgets = vec![budget("100%")];
                policy
            })
            .collect();
        Cluster {
            input: Input {
                snapshot,
                nodes,
                policies,
                now: NOW,
                ..Input::default()
            },
        }
    }

    fn facts(&mut self, node: &str) -> &mut NodeFacts {
        self.input
            .nodes
            .iter_mut()
            .find(|f| f.name == node)
            .unwrap_or_else(|| panic!("no node {node}"))
    }

    /// Every NodePool's policy.
    fn policies(&mut self, mut f: impl FnMut(&mut PoolPolicy)) {
        self.input.policies.iter_mut().for_each(&mut f);
    }

    fn pod(&mut self, key: &str) -> &mut PodFacts {
        if let Some(i) = self.input.pods.iter().position(|p| p.pod == key) {
            return &mut self.input.pods[i];
        }
        self.input.pods.push(PodFacts {
            pod: key.to_string(),
            do_not_disrupt: false,
            do_not_disrupt_until: None,
            pdbs: Vec::new(),
        });
        self.input.pods.last_mut().unwrap()
    }

    /// A PodDisruptionBudget allowing `allowed` evictions now, selecting these pods.
    fn pdb(&mut self, name: &str, allowed: u32, pods: &[&str]) {
        self.input.pdbs.push(Pdb {
            name: name.to_string(),
            disruptions_allowed: allowed,
        });
        for p in pods {
            self.pod(p).pdbs.push(name.to_string());
        }
    }

    /// Node `name` of the snapshot.
    fn node(&self, name: &str) -> &adze_scheduling::ExistingNode {
        self.input
            .snapshot
            .nodes
            .iter()
            .find(|n| n.name == name)
            .unwrap_or_else(|| panic!("no node {name}"))
    }

    fn decide(&self) -> Option<Decision> {
        disruption::decide(&self.input, &Options::default())
    }

    /// The decisions of one pass, each taken on the cluster as the earlier ones leave it.
    fn decide_all(&self) -> Vec<Decision> {
        disruption::decide_all(&self.input, &Options::default(), true, 1000)
    }
}

fn budget(nodes: &str) -> Budget {
    Budget::nodes(BudgetNodes::parse(nodes).unwrap())
}

fn reason_budget(nodes: &str, reasons: &[Reason]) -> Budget {
    let mut b = budget(nodes);
    b.reasons = reasons.to_vec();
    b
}

/// The names of the nodes a decision removes, sorted.
fn removed(d: &Decision) -> Vec<String> {
    let mut v: Vec<String> = d.nodes.iter().map(|n| n.name.clone()).collect();
    v.sort();
    v
}

fn names(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}{i}")).collect()
}

// =======================================================================================
// emptiness_test.go
// =======================================================================================

/// Karpenter's emptiness suite: a `WhenEmpty` pool, `consolidateAfter: 0s`, budget 100%.
fn when_empty(c: &mut Cluster) {
    c.policies(|p| {
        p.consolidation = ConsolidationPolicy::WhenEmpty;
        p.consolidate_after = Some(Duration::ZERO);
    });
}

/// `n` empty nodes of the cheapest type in pool `pool`, named `<pool>-<i>`.
fn empty_nodes(pool: &str, n: usize) -> Vec<String> {
    (0..n)
        .map(|i| node(&format!("{pool}-{i}"), pool, LEAST_EXPENSIVE, BIG))
        .collect()
}

fn emptiness_budget_case(budget_nodes: &str) -> Option<Decision> {
    let mut docs = vec![nodepool("default")];
    docs.extend(empty_nodes("default", 10));
    let mut c = Cluster::new(&docs);
    when_empty(&mut c);
    c.policies(|p| p.budgets = vec![budget(budget_nodes)]);
    c.decide()
}

/// Emptiness > Budgets > should allow all empty nodes to be disrupted
#[test]
fn emptiness_budget_100_percent_deletes_all_ten() {
    let d = emptiness_budget_case("100%").expect("a decision");
    assert_eq!(d.reason, Reason::Empty);
    assert_eq!(d.action(), Action::Delete);
    assert_eq!(d.nodes.len(), 10);
}

/// Emptiness > Budgets > should allow no empty nodes to be disrupted
#[test]
fn emptiness_budget_0_percent_deletes_none() {
    assert!(emptiness_budget_case("0%").is_none());
}

/// Emptiness > Budgets > should only allow 3 empty nodes to be disrupted
#[test]
fn emptiness_budget_30_percent_deletes_three() {
    let d = emptiness_budget_case("30%").expect("a decision");
    assert_eq!(d.reason, Reason::Empty);
    assert_eq!(d.nodes.len(), 3);
}

fn ten_pools_of_three(budget_nodes: &str) -> Option<Decision> {
    let mut docs = vec![nodepool("default")];
    for p in 0..10 {
        let pool = format!("pool{p}");
        docs.push(nodepool(&pool));
        docs.extend(empty_nodes(&pool, 3));
    }
    let mut c = Cluster::new(&docs);
    when_empty(&mut c);
    c.policies(|p| {
        p.budgets = vec![budget(budget_nodes)];
        p.consolidate_after = Some(Duration::from_secs(30));
    });
    c.decide()
}

/// Emptiness > Budgets > should allow 2 nodes from each nodePool to be deleted
#[test]
fn emptiness_budget_half_of_three_rounds_up_per_pool() {
    let d = ten_pools_of_three("50%").expect("a decision");
    assert_eq!(d.nodes.len(), 20, "{}", d.message);
    for p in 0..10 {
        let pool = format!("pool{p}");
        assert_eq!(d.nodes.iter().filter(|n| n.nodepool == pool).count(), 2);
    }
}

/// Emptiness > Budgets > should allow all nodes from each nodePool to be deleted
#[test]
fn emptiness_budget_all_nodes_of_every_pool() {
    let d = ten_pools_of_three("100%").expect("a decision");
    assert_eq!(d.nodes.len(), 30);
}

/// One empty node `n0` (and a second, `n1`, when asked) of the cheapest type.
fn one_empty(two: bool) -> Cluster {
    let mut docs = vec![
        nodepool("default"),
        node("n0", "default", LEAST_EXPENSIVE, BIG),
    ];
    if two {
        docs.push(node("n1", "default", LEAST_EXPENSIVE, BIG));
    }
    let mut c = Cluster::new(&docs);
    when_empty(&mut c);
    c
}

/// Emptiness > Emptiness > can delete empty nodes
#[test]
fn emptiness_deletes_an_empty_node() {
    let d = one_empty(false).decide().expect("a decision");
    assert_eq!(d.reason, Reason::Empty);
    assert_eq!(removed(&d), ["n0"]);
    assert!(d.plan.new_claims.is_empty());
}

/// Emptiness > Emptiness > can delete empty and drifted nodes
#[test]
fn emptiness_deletes_an_empty_drifted_node() {
    let mut c = one_empty(false);
    c.facts("n0").drifted = true;
    let d = c.decide().expect("a decision");
    assert_eq!(removed(&d), ["n0"]);
    assert_eq!(d.action(), Action::Delete, "{}", d.message);
    // Drift leaves empty nodes to emptiness.
    assert_eq!(d.reason, Reason::Empty);
}

/// Emptiness > Emptiness > should ignore nodes without the consolidatable status condition
/// (Karpenter's `Consolidatable` condition is `consolidateAfter` elapsed since the last pod
/// event; here a pod left 10 s ago under `consolidateAfter: 30s`).
#[test]
fn emptiness_waits_for_consolidate_after() {
    let mut c = one_empty(false);
    c.policies(|p| p.consolidate_after = Some(Duration::from_secs(30)));
    c.facts("n0").last_pod_event = NOW - 10;
    assert!(c.decide().is_none());
    // and once it has elapsed, the node goes
    c.facts("n0").last_pod_event = NOW - 30;
    assert_eq!(removed(&c.decide().expect("a decision")), ["n0"]);
}

/// Emptiness > Emptiness > should ignore nodes with the consolidatable status condition set to false
/// (`consolidateAfter: Never`: the condition is never set)
#[test]
fn emptiness_never_with_consolidate_after_never() {
    let mut c = one_empty(false);
    c.policies(|p| p.consolidate_after = None);
    assert!(c.decide().is_none());
}

/// Emptiness > Emptiness > should ignore nodes with the karpenter.sh/do-not-disrupt annotation
#[test]
fn emptiness_skips_do_not_disrupt_node() {
    let mut c = one_empty(false);
    c.facts("n0").do_not_disrupt = true;
    assert!(c.decide().is_none());
    let blocked = disruption::blocked(&c.input);
    assert_eq!(blocked.len(), 1);
    assert_eq!(blocked[0].methods, [Reason::Empty]);
}

/// Emptiness > Emptiness > should ignore nodes that have pods
#[test]
fn emptiness_skips_nodes_with_pods() {
    let mut docs = vec![
        nodepool("default"),
        node("n0", "default", LEAST_EXPENSIVE, BIG),
    ];
    docs.push(bound("p", "n0", "cpu: 1", "{}"));
    let mut c = Cluster::new(&docs);
    when_empty(&mut c);
    assert!(c.decide().is_none());
}

/// Emptiness > can delete multiple empty nodes
#[test]
fn emptiness_deletes_several_empty_nodes_in_one_command() {
    let d = one_empty(true).decide().expect("a decision");
    assert_eq!(removed(&d), ["n0", "n1"]);
}

/// Emptiness > will consider a node with a DaemonSet pod as empty
#[test]
fn emptiness_daemonset_pods_do_not_count() {
    let docs = vec![
        nodepool("default"),
        daemonset("ds"),
        node("n0", "default", LEAST_EXPENSIVE, BIG),
        daemon_pod("ds-n0", "n0", "ds"),
    ];
    let mut c = Cluster::new(&docs);
    when_empty(&mut c);
    let d = c.decide().expect("a decision");
    assert_eq!(d.reason, Reason::Empty);
    assert_eq!(removed(&d), ["n0"]);
}

/// Emptiness > will consider a node with terminating Deployment pods as empty
#[test]
fn emptiness_terminating_deployment_pods_do_not_count() {
    let mut docs = vec![
        nodepool("default"),
        node("n0", "default", LEAST_EXPENSIVE, BIG),
    ];
    for i in 0..3 {
        docs.push(terminating(
            &format!("p{i}"),
            "n0",
            "ReplicaSet",
            "rs",
            "",
            "app: test",
        ));
    }
    let mut c = Cluster::new(&docs);
    when_empty(&mut c);
    let d = c.decide().expect("a decision");
    assert_eq!(d.reason, Reason::Empty);
    assert_eq!(removed(&d), ["n0"]);
    // Nothing needs a new home: the pods are on their way out with the node.
    assert_eq!(d.pods().count(), 0, "{}", d.message);
    // The same through the mapping from objects `run` uses.
    let mut input = from_objects(&docs);
    input.policies.iter_mut().for_each(|p| {
        p.consolidation = ConsolidationPolicy::WhenEmpty;
        p.budgets = vec![budget("100%")];
    });
    let d = disruption::decide(&input, &Options::default()).expect("a decision");
    assert_eq!(
        (d.reason, removed(&d)),
        (Reason::Empty, vec!["n0".to_string()])
    );
}

/// Emptiness > will not consider a node with a terminating StatefulSet pod as empty
#[test]
fn emptiness_terminating_statefulset_pod_counts() {
    let docs = vec![
        nodepool("default"),
        node("n0", "default", LEAST_EXPENSIVE, BIG),
        terminating("web-0", "n0", "StatefulSet", "web", "", "app: web"),
    ];
    let mut c = Cluster::new(&docs);
    when_empty(&mut c);
    // Its controller recreates it under the same name once it is gone: it needs a place.
    assert!(c.decide().is_none());
}

// =======================================================================================
// drift_test.go
// =======================================================================================

/// Karpenter's drift suite: `consolidateAfter: Never`, budget 100%, the nodes of the most
/// expensive type with 32 CPUs.
fn drift_cluster(docs: &[String]) -> Cluster {
    let mut c = Cluster::new(docs);
    c.policies(|p| p.consolidate_after = None);
    c
}

/// A single drifted node `n0` of the most expensive type holding pod `p` (1 CPU).
fn one_drifted_with_pod() -> Cluster {
    let mut c = drift_cluster(&[
        nodepool("default"),
        node("n0", "default", MOST_EXPENSIVE, BIG),
        bound("p", "n0", "cpu: 1", "{app: test}"),
    ]);
    c.facts("n0").drifted = true;
    c
}

/// Drift > Budgets > should not consider empty nodes for drift budgets
#[test]
fn drift_budget_one_takes_the_node_with_pods_and_keeps_the_empty_one() {
    let mut c = drift_cluster(&[
        nodepool("default"),
        node("n0", "default", MOST_EXPENSIVE, BIG),
        node("n1", "default", MOST_EXPENSIVE, BIG),
        bound("p", "n1", "", "{app: test}"),
    ]);
    c.facts("n0").drifted = true;
    c.facts("n1").drifted = true;
    c.policies(|p| p.budgets = vec![reason_budget("1", &[Reason::Drifted])]);
    let ds = c.decide_all();
    assert_eq!(
        ds.len(),
        1,
        "{:?}",
        ds.iter().map(|d| &d.message).collect::<Vec<_>>()
    );
    assert_eq!(removed(&ds[0]), ["n1"], "{}", ds[0].message);
}

fn ten_drifted(drifted: usize, with_pods: usize) -> Cluster {
    let mut docs = vec![nodepool("default")];
    for n in names("n", 10) {
        docs.push(node(&n, "default", MOST_EXPENSIVE, BIG));
    }
    for i in 0..with_pods {
        docs.push(bound(
            &format!("p{i}"),
            &format!("n{i}"),
            "cpu: 1",
            "{app: test}",
        ));
    }
    let mut c = drift_cluster(&docs);
    for n in names("n", drifted) {
        c.facts(&n).drifted = true;
    }
    c.policies(|p| p.budgets = vec![budget("30%")]);
    c
}

/// Drift > Budgets > should only consider 3 nodes allowed to be disrupted because of budgets
#[test]
fn drift_budget_30_percent_of_ten_allows_three() {
    // Each node holds a pod: drift leaves empty nodes to emptiness.
    let c = ten_drifted(10, 10);
    let allowance = disruption::Allowance::compute(&c.input);
    assert_eq!(allowance.left("default", Reason::Drifted), 3);
    let ds = c.decide_all();
    assert_eq!(ds.len(), 3);
    assert!(ds.iter().all(|d| d.reason == Reason::Drifted));
}

/// Drift > Budgets > should disrupt 3 nodes, taking into account commands in progress
#[test]
fn drift_budget_three_commands_of_one_node_each() {
    let c = ten_drifted(5, 5);
    let ds = c.decide_all();
    assert_eq!(ds.len(), 3);
    for d in &ds {
        assert_eq!(d.nodes.len(), 1);
        assert_eq!(d.reason, Reason::Drifted);
    }
    // A node already disrupting counts against the budget: with one in progress, two more.
    let mut c = ten_drifted(5, 5);
    c.facts("n0").disrupting = true;
    assert_eq!(c.decide_all().len(), 2);
}

/// Drift > Budgets > should respect budgets for multiple nodepools
#[test]
fn drift_budget_one_per_pool_across_ten_pools() {
    let mut docs = vec![nodepool("default")];
    for p in 0..10 {
        let pool = format!("pool{p}");
        docs.push(nodepool(&pool));
        for i in 0..3 {
            docs.push(node(&format!("{pool}-{i}"), &pool, MOST_EXPENSIVE, BIG));
        }
        for i in 0..2 {
            docs.push(bound(
                &format!("{pool}-p{i}"),
                &format!("{pool}-{i}"),
                "cpu: 1",
                "{app: test}",
            ));
        }
    }
    let mut c = drift_cluster(&docs);
    let all: Vec<String> = c.input.nodes.iter().map(|f| f.name.clone()).collect();
    for n in &all {
        c.facts(n).drifted = true;
        c.facts(n).expire_after = None;
    }
    c.policies(|p| p.budgets = vec![budget("1")]);
    let ds = c.decide_all();
    assert_eq!(ds.len(), 10);
    for p in 0..10 {
        let pool = format!("pool{p}");
        assert_eq!(
            ds.iter().filter(|d| d.nodes[0].nodepool == pool).count(),
            1,
            "{pool}"
        );
    }
    assert!(ds.iter().all(|d| d.reason == Reason::Drifted));
}

/// Drift > Drift > should continue to the next drifted node if the first cannot reschedule all pods
#[test]
fn drift_skips_a_node_whose_pods_cannot_move() {
    let mut c = drift_cluster(&[
        nodepool("default"),
        node("n0", "default", MOST_EXPENSIVE, BIG),
        bound("huge", "n0", "cpu: 150", "{}"),
        node(
            "n1",
            "default",
            MOST_EXPENSIVE,
            "cpu: 1, memory: 4Gi, pods: 100",
        ),
        bound("small", "n1", "cpu: 1", "{}"),
    ]);
    c.facts("n0").drifted = true;
    c.facts("n1").drifted = true;
    let d = c.decide().expect("a decision");
    assert_eq!(removed(&d), ["n1"]);
    assert_eq!(d.plan.new_claims.len(), 1);
}

/// Drift > Drift > should ignore nodes without the drifted status condition
/// Drift > Drift > should ignore nodes with the drifted status condition set to false
#[test]
fn drift_ignores_nodes_not_drifted() {
    let mut c = one_drifted_with_pod();
    c.facts("n0").drifted = false;
    assert!(c.decide().is_none());
}

/// Drift > Drift > should ignore nodes with the karpenter.sh/do-not-disrupt annotation
#[test]
fn drift_skips_do_not_disrupt_node() {
    let mut c = one_drifted_with_pod();
    c.facts("n0").do_not_disrupt = true;
    assert!(c.decide().is_none());
    let blocked = disruption::blocked(&c.input);
    assert_eq!(blocked[0].methods, [Reason::Drifted]);
}

/// Drift > Drift > should not create replacements for drifted nodes that have pods with the karpenter.sh/do-not-disrupt annotation
/// Drift > Drift > ... when the NodePool's TerminationGracePeriod is not nil
#[test]
fn drift_skips_node_with_do_not_disrupt_pod() {
    let mut c = one_drifted_with_pod();
    c.pod("default/p").do_not_disrupt = true;
    assert!(c.decide().is_none());
    assert!(c.decide_all().is_empty());
}

/// Drift > Drift > should not create replacements for drifted nodes that have pods with the blocking PDBs when the NodePool's TerminationGracePeriod is not nil
#[test]
fn drift_skips_node_whose_pdb_allows_nothing() {
    let mut c = one_drifted_with_pod();
    c.pdb("default/pdb", 0, &["default/p"]);
    assert!(c.decide().is_none());
}

/// Drift > Drift > should replace drifted nodes
#[test]
fn drift_replaces_a_drifted_node() {
    let d = one_drifted_with_pod().decide().expect("a decision");
    assert_eq!(d.reason, Reason::Drifted);
    assert_eq!(removed(&d), ["n0"]);
    assert_eq!(d.action(), Action::Replace);
    assert_eq!(d.plan.new_claims.len(), 1);
    assert_ne!(d.plan.new_claims[0].name, "n0");
    assert_eq!(d.plan.new_claims[0].pods, ["default/p"]);
}

/// Drift > Drift > should delete drifted nodes
#[test]
fn drift_deletes_a_drifted_node_whose_pods_fit_elsewhere() {
    let mut c = drift_cluster(&[
        nodepool("default"),
        node("n0", "default", MOST_EXPENSIVE, BIG),
        node("n1", "default", MOST_EXPENSIVE, BIG),
        bound("p", "n0", "", "{app: test}"),
    ]);
    c.facts("n0").drifted = true;
    let d = c.decide().expect("a decision");
    assert_eq!(removed(&d), ["n0"]);
    assert_eq!(d.action(), Action::Delete, "{}", d.message);
    assert_eq!(d.plan.existing.len(), 1);
    assert_eq!(d.plan.existing[0].node, "n1");
}

/// Karpenter's two-type cloud of the "multiple nodes" cases: the node's own type is no longer
/// offered, the other has 3 CPUs.
const TWO_TYPES: &str = r#"
apiVersion: adze.sh/v1alpha1
kind: InstanceCatalog
metadata:
  name: two-types
instanceTypes:
  - name: current-on-demand
    cpu: 8
    memory: 16Gi
    pods: 100
    arch: amd64
    offerings:
      - {zone: test-zone-1, capacityType: on-demand, price: 0.5, available: false}
  - name: replacement-on-demand
    cpu: 3
    memory: 16Gi
    pods: 100
    arch: amd64
    offerings:
      - {zone: test-zone-1, capacityType: on-demand, price: 0.3}
"#;

fn three_pods_on_current(c_fn: impl Fn(&mut Cluster)) -> Cluster {
    let mut docs = vec![
        nodepool("default"),
        node(
            "n0",
            "default",
            "current-on-demand",
            "cpu: 8, memory: 16Gi, pods: 100",
        ),
    ];
    for i in 0..3 {
        docs.push(bound(&format!("p{i}"), "n0", "cpu: 2", "{app: test}"));
    }
    let mut c = Cluster::with_catalog(TWO_TYPES, &docs);
    c.policies(|p| p.consolidate_after = None);
    c_fn(&mut c);
    c
}

/// Drift > Drift > can replace drifted nodes with multiple nodes
#[test]
fn drift_replaces_one_node_with_three() {
    let c = three_pods_on_current(|c| c.facts("n0").drifted = true);
    let d = c.decide().expect("a decision");
    assert_eq!(removed(&d), ["n0"]);
    assert_eq!(d.plan.new_claims.len(), 3, "{}", d.message);
    assert!(
        d.plan
            .new_claims
            .iter()
            .all(|n| n.instance_type == "replacement-on-demand")
    );
}

/// Drift > Drift > should drift one non-empty node at a time, starting with the earliest drift
#[test]
fn drift_earliest_drift_first() {
    let mut c = drift_cluster(&[
        nodepool("default"),
        node(
            "n0",
            "default",
            MOST_EXPENSIVE,
            "cpu: 32, memory: 128Gi, pods: 100",
        ),
        node(
            "n1",
            "default",
            MOST_EXPENSIVE,
            "cpu: 32, memory: 128Gi, pods: 100",
        ),
        bound("p0", "n0", "cpu: 30", "{app: test}"),
        bound("p1", "n1", "cpu: 30", "{app: test}"),
    ]);
    // n1 drifted an hour before n0; both NodeClaims were created together.
    c.facts("n0").drifted = true;
    c.facts("n0").drifted_since = Some(NOW - 3600);
    c.facts("n1").drifted = true;
    c.facts("n1").drifted_since = Some(NOW - 7200);
    let d = c.decide().expect("a decision");
    assert_eq!(removed(&d), ["n1"]);
}

// =======================================================================================
// expiration_test.go (the karpenter.sh/v1beta1 version: expiry as a disruption method)
// =======================================================================================

/// Karpenter's expiration suite: `expireAfter: 30s`, the node past it.
fn expiring(docs: &[String]) -> Cluster {
    let mut c = Cluster::new(docs);
    c.policies(|p| p.consolidate_after = None);
    for f in c.input.nodes.iter_mut() {
        f.expire_after = Some(Duration::from_secs(30));
    }
    c
}

fn expired_names(c: &Cluster) -> Vec<String> {
    expiry::expired(&c.input)
        .into_iter()
        .map(|e| e.node)
        .collect()
}

/// Expiration > should ignore nodes without the expired status condition
/// Expiration > should ignore nodes with the expired status condition set to false
#[test]
fn expiry_ignores_nodes_not_yet_expired() {
    let mut c = expiring(&[
        nodepool("default"),
        node("n0", "default", MOST_EXPENSIVE, BIG),
    ]);
    c.facts("n0").expire_after = Some(Duration::from_secs(7200));
    assert!(expired_names(&c).is_empty());
    c.facts("n0").expire_after = None;
    assert!(expired_names(&c).is_empty());
}

/// Expiration > should ignore nodes with the karpenter.sh/do-not-disrupt annotation
/// Expiration > should ignore nodes that have pods with the karpenter.sh/do-not-evict annotation
/// Expiration > should ignore nodes that have pods with the karpenter.sh/do-not-disrupt annotation
#[test]
fn expiry_is_forceful_despite_do_not_disrupt() {
    let mut c = expiring(&[
        nodepool("default"),
        node("n0", "default", MOST_EXPENSIVE, BIG),
        bound("p", "n0", "cpu: 1", "{}"),
    ]);
    c.facts("n0").do_not_disrupt = true;
    c.pod("default/p").do_not_disrupt = true;
    assert_eq!(expired_names(&c), ["n0"]);
    let e = &expiry::expired(&c.input)[0];
    assert!(
        e.message()
            .contains("regardless of budgets and do-not-disrupt")
    );
}

/// Expiration > should continue to the next expired node if the first cannot reschedule all pods
#[test]
fn expiry_takes_every_expired_node_even_if_pods_cannot_move() {
    let c = expiring(&[
        nodepool("default"),
        node("n0", "default", MOST_EXPENSIVE, BIG),
        bound("huge", "n0", "cpu: 150", "{}"),
        node(
            "n1",
            "default",
            MOST_EXPENSIVE,
            "cpu: 1, memory: 4Gi, pods: 100",
        ),
        bound("small", "n1", "cpu: 1", "{}"),
    ]);
    assert_eq!(expired_names(&c), ["n0", "n1"]);
}

/// Expiration > can delete expired nodes
#[test]
fn expiry_lists_an_expired_node() {
    let c = expiring(&[
        nodepool("default"),
        node("n0", "default", MOST_EXPENSIVE, BIG),
    ]);
    let e = expiry::expired(&c.input);
    assert_eq!(e.len(), 1);
    assert_eq!(e[0].node, "n0");
    assert_eq!(e[0].age, 3600);
}

/// Expiration > should disrupt all empty expired nodes in parallel
#[test]
fn expiry_lists_all_hundred_expired_nodes() {
    let mut docs = vec![nodepool("default")];
    for n in names("n", 100) {
        docs.push(node(&n, "default", MOST_EXPENSIVE, BIG));
    }
    let c = expiring(&docs);
    assert_eq!(expired_names(&c).len(), 100);
}

/// Expiration > should expire one non-empty node at a time, starting with most expired
#[test]
fn expiry_oldest_first() {
    let mut c = expiring(&[
        nodepool("default"),
        node("n0", "default", MOST_EXPENSIVE, BIG),
        node("n1", "default", MOST_EXPENSIVE, BIG),
        bound("p0", "n0", "cpu: 30", "{}"),
        bound("p1", "n1", "cpu: 30", "{}"),
    ]);
    c.facts("n1").created = CREATED - 3600;
    assert_eq!(expired_names(&c), ["n1", "n0"]);
}

/// Expiration > can replace node for expiration
#[test]
fn expiry_replacement_for_the_expired_nodes_pods() {
    // The controller deletes an expired node at once and its pods are re-planned as pending:
    // the plan of the cluster without it holds a new node for them.
    let c = expiring(&[
        nodepool("default"),
        node("n0", "default", MOST_EXPENSIVE, BIG),
        bound("p", "n0", "cpu: 1", "{}"),
    ]);
    assert_eq!(expired_names(&c), ["n0"]);
    let mut s = c.input.snapshot.clone();
    let gone = s.nodes.remove(0);
    s.bound.retain(|b| b.node != gone.name);
    s.pending = c
        .input
        .snapshot
        .bound
        .iter()
        .map(|b| b.pod.clone())
        .collect();
    let plan = adze_scheduling::scheduler::schedule(&s, &Default::default());
    assert_eq!(plan.new_claims.len(), 1);
    assert!(plan.unschedulable.is_empty());
}

/// Expiration > can replace node for expiration with multiple nodes
#[test]
fn expiry_replacement_with_three_nodes() {
    let mut c = three_pods_on_current(|_| {});
    for f in c.input.nodes.iter_mut() {
        f.expire_after = Some(Duration::from_secs(30));
    }
    assert_eq!(expired_names(&c), ["n0"]);
    let mut s = c.input.snapshot.clone();
    s.nodes.clear();
    s.pending = s.bound.drain(..).map(|b| b.pod).collect();
    let plan = adze_scheduling::scheduler::schedule(&s, &Default::default());
    assert_eq!(plan.new_claims.len(), 3);
}

// =======================================================================================
// suite_test.go
// =======================================================================================

/// Simulate Scheduling > should allow multiple replace operations to happen successively
#[test]
fn suite_successive_replacements_up_to_the_budget() {
    let mut docs = vec![format!(
        "{}        - {{key: test-partition, operator: Exists}}\n",
        nodepool("default")
    )];
    for i in 0..10 {
        docs.push(node_with_labels(
            &format!("n{i}"),
            &format!(
                "adze.sh/nodepool: default, {ITYPE}: {MOST_EXPENSIVE}, {ZONE}: test-zone-1, {CT}: on-demand, test-partition: \"{i}\""
            ),
            "cpu: 3, memory: 8Gi, pods: 100",
        ));
        docs.push(format!(
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p{i}\n  namespace: default\nspec:\n  nodeName: n{i}\n  nodeSelector: {{test-partition: \"{i}\"}}\n  containers:\n    - name: app\n      image: nginx\n      resources:\n        requests: {{cpu: 100m, memory: 100Mi}}\n"
        ));
    }
    let mut c = drift_cluster(&docs);
    for i in 0..10 {
        c.facts(&format!("n{i}")).drifted = true;
    }
    c.policies(|p| p.budgets = vec![budget("3")]);
    let ds = c.decide_all();
    assert_eq!(ds.len(), 3);
    for d in &ds {
        assert_eq!(d.action(), Action::Replace, "{}", d.message);
        let want = d.nodes[0].name.trim_start_matches('n').to_string();
        assert_eq!(
            d.plan.new_claims[0].labels.get("test-partition"),
            Some(&want)
        );
    }
}

/// Simulate Scheduling > should allow pods on deleting nodes to reschedule to uninitialized nodes
///
/// Ten 3-CPU nodes, nine of them being deleted (tainted and marked disrupting), one 2-CPU pod
/// on the tenth: if the tenth went too, its pod gets a new node (the nodes going away take
/// nothing).
#[test]
fn suite_pods_of_a_candidate_go_to_new_capacity_when_the_rest_is_leaving() {
    let mut docs = vec![nodepool("default")];
    for i in 0..10 {
        let mut n = node(
            &format!("n{i}"),
            "default",
            MOST_EXPENSIVE,
            "cpu: 3, memory: 128Gi, pods: 100",
        );
        if i > 0 {
            n = n.replace(
                "status:\n",
                "spec:\n  taints: [{key: adze.sh/disrupted, effect: NoSchedule}]\nstatus:\n",
            );
        }
        docs.push(n);
    }
    docs.push(bound("p", "n0", "cpu: 2, memory: 100Mi", "{app: test}"));
    let mut c = Cluster::new(&docs);
    for i in 1..10 {
        c.facts(&format!("n{i}")).disrupting = true;
    }
    let (cands, _) = disruption::candidates::candidates(&c.input);
    assert_eq!(
        cands.iter().map(|x| x.name.as_str()).collect::<Vec<_>>(),
        ["n0"]
    );
    let plan = disruption::displaced_plan(&c.input, &Options::default(), &["n0"]);
    assert!(plan.unschedulable.is_empty(), "{:?}", plan.unschedulable);
    assert_eq!(plan.new_claims.len(), 1);
    assert_eq!(plan.new_claims[0].pods, ["default/p"]);
}

/// A StatefulSet pod `default/db-0` on `node` whose claim is bound to a `local` volume pinned
/// (node affinity on the hostname) to that node.
fn local_volume_docs(node: &str) -> Vec<String> {
    vec![
        "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: local-path}\nprovisioner: kubernetes.io/no-provisioner\nvolumeBindingMode: WaitForFirstConsumer\n".to_string(),
        format!("apiVersion: v1\nkind: PersistentVolume\nmetadata: {{name: pv-local}}\nspec:\n  capacity: {{storage: 10Gi}}\n  accessModes: [ReadWriteOnce]\n  storageClassName: local-path\n  local: {{path: /mnt/disk}}\n  nodeAffinity:\n    required:\n      nodeSelectorTerms:\n        - matchExpressions: [{{key: kubernetes.io/hostname, operator: In, values: [{node}]}}]\n"),
        "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: data-db-0, namespace: default}\nspec:\n  storageClassName: local-path\n  volumeName: pv-local\n  accessModes: [ReadWriteOnce]\n  resources: {requests: {storage: 10Gi}}\n".to_string(),
        format!("apiVersion: v1\nkind: Pod\nmetadata:\n  name: db-0\n  namespace: default\n  labels: {{app: test}}\n  ownerReferences: [{{apiVersion: apps/v1, kind: StatefulSet, name: db, uid: u-db, controller: true}}]\nspec:\n  nodeName: {node}\n  containers:\n    - name: db\n      image: postgres\n  volumes:\n    - name: data\n      persistentVolumeClaim: {{claimName: data-db-0}}\n"),
    ]
}

/// Simulate Scheduling > can replace node with a local PV (ignoring hostname affinity)
///
/// Adze keeps a running pod on its local disk: the volume's hostname term binds a pod that
/// is on a node, so consolidation finds it no other home and leaves the node. Without the
/// volume the same node is replaced by a cheaper one.
#[test]
fn suite_local_volume_keeps_its_pod_on_its_node() {
    // Volumes are read as `run` reads them (the live snapshot's volume rules).
    let decide = |docs: &[String]| {
        let mut input = from_objects(docs);
        input
            .policies
            .iter_mut()
            .for_each(|p| p.budgets = vec![budget("100%")]);
        disruption::decide(&input, &Options::default())
    };
    let base = vec![
        nodepool("default"),
        node("n0", "default", MOST_EXPENSIVE, BIG),
    ];
    let mut docs = base.clone();
    docs.extend(local_volume_docs("n0"));
    let d = decide(&docs);
    assert!(d.is_none(), "{:?}", d.map(|d| d.message));
    let input = from_objects(&docs);
    let plan = disruption::displaced_plan(&input, &Options::default(), &["n0"]);
    let reason = &plan.unschedulable[0].reason;
    assert!(
        reason.contains("kubernetes.io/hostname In [n0]"),
        "{reason}"
    );
    let mut without = base;
    without.push(bound("db-0", "n0", "", "{app: test}"));
    let d = decide(&without).expect("a decision");
    assert_eq!(d.action(), Action::Replace);
}

/// Ten nodes of the most expensive type in pool `default` (Karpenter's budget-mapping setup).
/// `count` equal nodes of the default pool, for the budget cases.
fn for_budgets(count: usize) -> Cluster {
    let mut docs = vec![nodepool("default")];
    for n in names("n", count) {
        docs.push(node(&n, "default", MOST_EXPENSIVE, BIG));
    }
    Cluster::new(&docs)
}

fn all_reasons_left(c: &Cluster) -> Vec<u64> {
    let a = disruption::Allowance::compute(&c.input);
    [Reason::Drifted, Reason::Empty, Reason::Underutilized]
        .iter()
        .map(|r| a.left("default", *r))
        .collect()
}

/// BuildDisruptionBudgetMapping > should not consider nodes that are not managed as part of disruption count
#[test]
fn budgets_ignore_unmanaged_nodes() {
    let mut docs = vec![nodepool("default")];
    for n in names("n", 10) {
        docs.push(node(&n, "default", MOST_EXPENSIVE, BIG));
    }
    docs.push(node_with_labels(
        "unmanaged",
        &format!("{ITYPE}: {MOST_EXPENSIVE}, {ZONE}: test-zone-1"),
        BIG,
    ));
    let c = Cluster::new(&docs);
    assert_eq!(all_reasons_left(&c), [10, 10, 10]);
}

/// BuildDisruptionBudgetMapping > should not consider nodes that are not initialized as part of disruption count
#[test]
fn budgets_ignore_uninitialized_nodes() {
    let mut c = for_budgets(11);
    c.facts("n10").initialized = false;
    assert_eq!(all_reasons_left(&c), [10, 10, 10]);
}

/// BuildDisruptionBudgetMapping > should not consider nodes that have the terminating status condition as part of disruption count
#[test]
fn budgets_terminating_node_uses_no_other_nodes_allowance() {
    let mut c = for_budgets(11);
    c.facts("n10").disrupting = true;
    assert_eq!(all_reasons_left(&c), [10, 10, 10]);
}

/// BuildDisruptionBudgetMapping > should not return a negative disruption value
#[test]
fn budgets_never_negative() {
    let mut c = for_budgets(10);
    c.policies(|p| p.budgets = vec![budget("10%")]);
    for n in names("n", 10) {
        c.facts(&n).disrupting = true;
    }
    assert_eq!(all_reasons_left(&c), [0, 0, 0]);
}

/// BuildDisruptionBudgetMapping > should consider nodes with a deletion timestamp set and MarkedForDeletion to the disruption count
/// BuildDisruptionBudgetMapping > should consider not ready nodes to the disruption count
#[test]
fn budgets_count_deleting_and_not_ready_nodes() {
    let mut c = for_budgets(10);
    c.facts("n0").disrupting = true;
    c.facts("n1").disrupting = true;
    assert_eq!(all_reasons_left(&c), [8, 8, 8]);
}

/// Pending pods with these `spec` lines, parsed as a scenario would.
fn pods_from(specs: &[&str]) -> Vec<adze_scheduling::Pod> {
    let mut docs: Vec<String> = vec![nodepool("default")];
    for (i, spec) in specs.iter().enumerate() {
        docs.push(format!(
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p{i}\n  namespace: default\n{spec}\nspec:\n  containers:\n    - name: app\n      image: nginx\n"
        ));
    }
    let c = Cluster::new(&docs);
    let mut pods = c.input.snapshot.pending.clone();
    pods.sort_by_key(|p| p.key());
    pods
}

fn eviction_cost(spec: &str) -> f64 {
    disruption::consolidation::pod_disruption_cost(&pods_from(&[spec])[0])
}

/// Pod Eviction Cost > should have a standard disruptionCost for a pod with no priority or disruptionCost specified
#[test]
fn eviction_cost_standard_is_one() {
    assert_eq!(eviction_cost(""), 1.0);
}

/// Pod Eviction Cost > should have a higher disruptionCost for a pod with a positive deletion disruptionCost
/// Pod Eviction Cost > should have a lower disruptionCost for a pod with a positive deletion disruptionCost
/// Pod Eviction Cost > should have higher costs for higher deletion costs
#[test]
fn eviction_cost_ignores_pod_deletion_cost() {
    for cost in ["100", "-100", "101", "99"] {
        let meta =
            format!("  annotations: {{controller.kubernetes.io/pod-deletion-cost: \"{cost}\"}}");
        assert_eq!(eviction_cost(&meta), 1.0, "{cost}");
    }
}

/// Pod Eviction Cost > should have a higher disruptionCost for a pod with a higher priority
/// Pod Eviction Cost > should have a lower disruptionCost for a pod with a lower priority
#[test]
fn eviction_cost_follows_priority() {
    let with_priority = |p: i32| {
        let pods = pods_from(&[""]);
        let mut pod = pods[0].clone();
        pod.priority = p;
        disruption::consolidation::pod_disruption_cost(&pod)
    };
    assert!(with_priority(1) > 1.0);
    assert!(with_priority(-1) < 1.0);
}

/// A node `n0` of the most expensive type with pod `p` (and `extra` documents): Karpenter's
/// candidate-filtering setup.
fn candidate_case(extra: &[String]) -> Cluster {
    let mut docs = vec![
        nodepool("default"),
        node("n0", "default", MOST_EXPENSIVE, BIG),
    ];
    docs.extend(extra.iter().cloned());
    Cluster::new(&docs)
}

fn blocker(c: &Cluster) -> Option<disruption::Blocker> {
    blocker_of_n0(&c.input)
}

/// n0's blocker in `input` (None: n0 is a candidate; neither fails the test).
fn blocker_of_n0(input: &Input) -> Option<disruption::Blocker> {
    let (cands, blocked) = disruption::candidates::candidates(input);
    match blocked.into_iter().find(|(n, _)| n == "n0") {
        Some((_, b)) => Some(b),
        None => {
            assert!(cands.iter().any(|x| x.name == "n0"), "n0 is neither");
            None
        }
    }
}

/// Candidate Filtering > should not consider candidates that have do-not-disrupt pods scheduled and no terminationGracePeriod
/// Candidate Filtering > should not consider candidates that have do-not-disrupt pods scheduled with a terminationGracePeriod set for graceful disruption
/// Candidate Filtering > should not consider candidates that have do-not-disrupt pods scheduled without a terminationGracePeriod set for eventual disruption
/// Candidate Filtering > should not consider candidates that have do-not-disrupt pods without a terminationGracePeriod set for graceful disruption
#[test]
fn candidate_do_not_disrupt_pod_blocks() {
    let mut c = candidate_case(&[bound("p", "n0", "cpu: 1", "{}")]);
    c.pod("default/p").do_not_disrupt = true;
    assert_eq!(
        blocker(&c),
        Some(disruption::Blocker::DoNotDisruptPod("default/p".into()))
    );
    let b = disruption::blocked(&c.input);
    assert!(b[0].message().contains("pod default/p is annotated"));
}

/// Candidate Filtering > should consider candidates that have do-not-disrupt pods scheduled with a terminationGracePeriod set for eventual disruption
/// Candidate Filtering > should consider candidates that have PDB-blocked pods scheduled with a terminationGracePeriod set for eventual disruption
#[test]
fn candidate_blocked_for_drift_even_with_termination_grace_period() {
    let mut c = candidate_case(&[
        bound("p", "n0", "cpu: 1", "{}"),
        bound("q", "n0", "cpu: 1", "{}"),
    ]);
    c.facts("n0").drifted = true;
    c.pod("default/p").do_not_disrupt = true;
    assert!(matches!(
        blocker(&c),
        Some(disruption::Blocker::DoNotDisruptPod(_))
    ));
    assert!(c.decide().is_none());
    c.pod("default/p").do_not_disrupt = false;
    c.pdb("default/pdb", 0, &["default/q"]);
    assert!(matches!(
        blocker(&c),
        Some(disruption::Blocker::PdbForbids { .. })
    ));
    assert!(c.decide().is_none());
}

/// Candidate Filtering > should not consider candidates that have do-not-disrupt daemonset pods scheduled
#[test]
fn candidate_do_not_disrupt_daemonset_pod_blocks() {
    let mut c = candidate_case(&[daemonset("ds"), daemon_pod("ds-n0", "n0", "ds")]);
    c.pod("default/ds-n0").do_not_disrupt = true;
    assert!(matches!(
        blocker(&c),
        Some(disruption::Blocker::DoNotDisruptPod(_))
    ));
}

/// Candidate Filtering > should not consider candidates that have fully blocking PDBs on daemonset pods
#[test]
fn candidate_pdb_on_daemonset_pod_blocks() {
    let mut c = candidate_case(&[daemonset("ds"), daemon_pod("ds-n0", "n0", "ds")]);
    c.pdb("default/pdb", 0, &["default/ds-n0"]);
    assert!(matches!(
        blocker(&c),
        Some(disruption::Blocker::PdbForbids { .. })
    ));
}

/// Candidate Filtering > should consider candidates that have do-not-disrupt terminal pods
/// Candidate Filtering > should consider candidates that have fully blocking PDBs on terminal pods
#[test]
fn candidate_terminal_pods_do_not_block() {
    let finished = |name: &str, phase: &str| {
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: default\nspec:\n  nodeName: n0\n  containers:\n    - name: app\n      image: nginx\nstatus:\n  phase: {phase}\n"
        )
    };
    let mut c = candidate_case(&[finished("ok", "Succeeded"), finished("bad", "Failed")]);
    c.pod("default/ok").do_not_disrupt = true;
    c.pdb("default/pdb", 0, &["default/bad"]);
    assert_eq!(blocker(&c), None);
}

/// Candidate Filtering > should not consider candidates that have do-not-disrupt on nodes
#[test]
fn candidate_do_not_disrupt_node_blocks() {
    let mut c = candidate_case(&[]);
    c.facts("n0").do_not_disrupt = true;
    assert_eq!(blocker(&c), Some(disruption::Blocker::DoNotDisruptNode));
}

/// Candidate Filtering > should not consider candidates that have fully blocking PDBs
/// Candidate Filtering > should not consider candidates that have PDB-blocked pods scheduled with a terminationGracePeriod set for graceful disruption
/// Candidate Filtering > should not consider candidates that have PDB-blocked pods scheduled without a terminationGracePeriod set for eventual disruption
/// Candidate Filtering > should not consider candidates that have fully blocking PDBs without a terminationGracePeriod set for graceful disruption
#[test]
fn candidate_blocking_pdb_blocks() {
    let mut c = candidate_case(&[bound("p", "n0", "cpu: 1", "{test: value}")]);
    c.pdb("default/pdb", 0, &["default/p"]);
    assert_eq!(
        blocker(&c),
        Some(disruption::Blocker::PdbForbids {
            pod: "default/p".into(),
            pdb: "default/pdb".into()
        })
    );
}

/// Candidate Filtering > should not consider candidates that has just a Node representation
#[test]
fn candidate_node_without_nodeclaim_is_not_one() {
    let mut c = candidate_case(&[]);
    c.input.nodes.clear();
    let (cands, _) = disruption::candidates::candidates(&c.input);
    assert!(cands.is_empty());
    assert!(c.decide().is_none());
}

/// Candidate Filtering > should not consider candidate that has just a NodeClaim representation
#[test]
fn candidate_in_flight_claim_is_not_one() {
    let mut c = candidate_case(&[]);
    c.input.snapshot.nodes[0].in_flight = true;
    assert_eq!(blocker(&c), Some(disruption::Blocker::InFlight));
}

/// Candidate Filtering > should not consider candidates that are deleting
/// Candidate Filtering > should not consider candidates that are MarkedForDeletion
/// Candidate Filtering > should not consider candidates that are actively being processed in the queue
#[test]
fn candidate_disrupting_node_is_not_one() {
    let mut c = candidate_case(&[]);
    c.facts("n0").disrupting = true;
    assert_eq!(blocker(&c), Some(disruption::Blocker::Disrupting));
}

/// Candidate Filtering > should not consider candidates that aren't yet initialized
#[test]
fn candidate_uninitialized_node_is_not_one() {
    let mut c = candidate_case(&[]);
    c.facts("n0").initialized = false;
    assert_eq!(blocker(&c), Some(disruption::Blocker::NotInitialized));
}

/// Candidate Filtering > should not consider candidates that are not owned by a NodePool (no karpenter.sh/nodepool label)
#[test]
fn candidate_without_nodepool_is_not_one() {
    let c = Cluster::new(&[
        nodepool("default"),
        node_with_labels(
            "n0",
            &format!("{ITYPE}: {MOST_EXPENSIVE}, {ZONE}: test-zone-1, {CT}: on-demand"),
            BIG,
        ),
    ]);
    assert_eq!(blocker(&c), Some(disruption::Blocker::Unmanaged));
}

/// Candidate Filtering > should not consider candidates that are have a non-existent NodePool
#[test]
fn candidate_of_missing_nodepool_is_not_one() {
    let mut c = candidate_case(&[]);
    c.input.policies.clear();
    assert_eq!(blocker(&c), Some(disruption::Blocker::Unmanaged));
}

/// Candidate Filtering > should not consider candidates that do not have the karpenter.sh/capacity-type label
/// Candidate Filtering > should not consider candidates that do not have the topology.kubernetes.io/zone label
/// Candidate Filtering > should not consider candidates that do not have the node.kubernetes.io/instance-type label
/// Candidate Filtering > should not consider candidates that have an instance type that cannot be resolved
#[test]
fn candidate_without_type_zone_or_capacity_type_is_not_one() {
    for labels in [
        format!("adze.sh/nodepool: default, {ITYPE}: {MOST_EXPENSIVE}, {ZONE}: test-zone-1"),
        format!("adze.sh/nodepool: default, {ITYPE}: {MOST_EXPENSIVE}, {CT}: on-demand"),
        format!("adze.sh/nodepool: default, {ZONE}: test-zone-1, {CT}: on-demand"),
        format!(
            "adze.sh/nodepool: default, {ITYPE}: no-such-type, {ZONE}: test-zone-1, {CT}: on-demand"
        ),
    ] {
        let c = Cluster::new(&[nodepool("default"), node_with_labels("n0", &labels, BIG)]);
        assert!(blocker(&c).is_some(), "{labels}");
    }
}

/// The blocker of n0 (None: a candidate) when `extra` is read from objects as `run` reads them.
fn blocker_from_objects(extra: &[String]) -> Option<disruption::Blocker> {
    let mut docs = vec![
        nodepool("default"),
        node("n0", "default", MOST_EXPENSIVE, BIG),
    ];
    docs.extend(extra.iter().cloned());
    blocker_of_n0(&from_objects(&docs))
}

/// Candidate Filtering > should not consider candidates that have do-not-disrupt mirror pods scheduled
#[test]
fn candidate_do_not_disrupt_mirror_pod_blocks() {
    let b = blocker_from_objects(&[mirror_pod(
        "static-n0",
        "n0",
        "karpenter.sh/do-not-disrupt: \"true\"",
        "",
    )]);
    assert_eq!(
        b,
        Some(disruption::Blocker::DoNotDisruptPod(
            "default/static-n0".into()
        ))
    );
}

/// Candidate Filtering > should consider candidates that have fully blocking PDBs on mirror pods
#[test]
fn candidate_pdb_on_mirror_pod_does_not_block() {
    // A mirror pod cannot be evicted, so its PDB is not asked.
    let b = blocker_from_objects(&[
        mirror_pod("static-n0", "n0", "", "test: value"),
        pdb_object("pdb", "default", "test: value", 0),
    ]);
    assert_eq!(b, None);
    // The same PDB over an ordinary pod does block: the PDB object is read.
    let b = blocker_from_objects(&[
        bound("p", "n0", "cpu: 100m", "{test: value}"),
        pdb_object("pdb", "default", "test: value", 0),
    ]);
    assert!(
        matches!(b, Some(disruption::Blocker::PdbForbids { .. })),
        "{b:?}"
    );
}

/// Candidate Filtering > should consider candidates that have do-not-disrupt terminating pods
/// Candidate Filtering > should consider candidates that have fully blocking PDBs on terminating pods
#[test]
fn candidate_terminating_pods_do_not_block() {
    let b = blocker_from_objects(&[terminating(
        "leaving",
        "n0",
        "ReplicaSet",
        "rs",
        "karpenter.sh/do-not-disrupt: \"true\"",
        "",
    )]);
    assert_eq!(b, None);
    let b = blocker_from_objects(&[
        terminating("leaving", "n0", "ReplicaSet", "rs", "", "test: value"),
        pdb_object("pdb", "default", "test: value", 0),
    ]);
    assert_eq!(b, None);
    // Running, the same pod blocks.
    let mut running = bound("p", "n0", "cpu: 100m", "{test: value}");
    running = running.replace(
        "  labels: {test: value}\n",
        "  labels: {test: value}\n  annotations: {karpenter.sh/do-not-disrupt: \"true\"}\n",
    );
    assert!(matches!(
        blocker_from_objects(&[running]),
        Some(disruption::Blocker::DoNotDisruptPod(_))
    ));
}

// =======================================================================================
// consolidation_test.go
// =======================================================================================

/// Karpenter's consolidation suite: `WhenEmptyOrUnderutilized`, `consolidateAfter: 0s`,
/// budget 100% (the cluster defaults).
fn ten_expensive(pod_cpu: Option<&str>) -> Cluster {
    let mut docs = vec![nodepool("default")];
    for n in names("n", 10) {
        docs.push(node(&n, "default", MOST_EXPENSIVE, BIG));
    }
    if let Some(cpu) = pod_cpu {
        for i in 0..10 {
            docs.push(bound(
                &format!("p{i}"),
                &format!("n{i}"),
                &format!("cpu: {cpu}"),
                "{app: test}",
            ));
        }
    }
    Cluster::new(&docs)
}

/// Consolidation > Budgets > should only allow 3 empty nodes to be disrupted
#[test]
fn consolidation_budget_30_percent_three_empty() {
    let mut c = ten_expensive(None);
    c.policies(|p| p.budgets = vec![budget("30%")]);
    let d = c.decide().expect("a decision");
    assert_eq!(d.reason, Reason::Empty);
    assert_eq!(d.nodes.len(), 3);
}

/// Consolidation > Budgets > should allow all empty nodes to be disrupted
#[test]
fn consolidation_budget_100_percent_all_empty() {
    let d = ten_expensive(None).decide().expect("a decision");
    assert_eq!(d.nodes.len(), 10);
}

/// Consolidation > Budgets > should allow no empty nodes to be disrupted
/// Consolidation > Budgets > should not mark empty node consolidated if the candidates can't be disrupted due to budgets with one nodepool
/// Consolidation > Budgets > should not mark multi node consolidated if the candidates can't be disrupted due to budgets with one nodepool
/// Consolidation > Budgets > should not mark single node consolidated if the candidates can't be disrupted due to budgets with one nodepool
#[test]
fn consolidation_budget_zero_no_command() {
    for pods in [None, Some("100m"), Some("15")] {
        let mut c = ten_expensive(pods);
        c.policies(|p| p.budgets = vec![budget("0%")]);
        assert!(c.decide().is_none(), "{pods:?}");
    }
}

/// Consolidation > Budgets > should only allow 3 nodes to be deleted in multi node consolidation delete
#[test]
fn consolidation_budget_multi_node_delete_three() {
    let mut c = ten_expensive(Some("100m"));
    c.policies(|p| p.budgets = vec![budget("30%")]);
    let d = c.decide().expect("a decision");
    assert_eq!(d.reason, Reason::Underutilized);
    assert_eq!(d.action(), Action::Delete, "{}", d.message);
    assert_eq!(d.nodes.len(), 3);
}

/// Consolidation > Budgets > should only allow 3 nodes to be deleted in single node consolidation delete
#[test]
fn consolidation_budget_single_node_deletes_three_in_all() {
    let mut c = ten_expensive(Some("15"));
    c.policies(|p| p.budgets = vec![budget("30%")]);
    let ds = c.decide_all();
    let removed: usize = ds.iter().map(|d| d.nodes.len()).sum();
    assert_eq!(removed, 3);
    assert!(ds.iter().all(|d| d.action() == Action::Delete));
}

fn ten_pools_of_three_expensive(budget_nodes: &str) -> Cluster {
    let mut docs = vec![nodepool("default")];
    for p in 0..10 {
        let pool = format!("pool{p}");
        docs.push(nodepool(&pool));
        for i in 0..3 {
            docs.push(node(&format!("{pool}-{i}"), &pool, MOST_EXPENSIVE, BIG));
        }
    }
    let mut c = Cluster::new(&docs);
    c.policies(|p| p.budgets = vec![budget(budget_nodes)]);
    c
}

/// Consolidation > Budgets > should allow 2 nodes from each nodePool to be deleted
#[test]
fn consolidation_budget_two_per_pool() {
    let d = ten_pools_of_three_expensive("50%")
        .decide()
        .expect("a decision");
    assert_eq!(d.nodes.len(), 20);
}

/// Consolidation > Budgets > should allow all nodes from each nodePool to be deleted
#[test]
fn consolidation_budget_all_per_pool() {
    let d = ten_pools_of_three_expensive("100%")
        .decide()
        .expect("a decision");
    assert_eq!(d.nodes.len(), 30);
}

/// Consolidation > Budgets > should allow no nodes from each nodePool to be deleted
/// Consolidation > Budgets > should not mark empty node consolidated if all candidates can't be disrupted due to budgets with many nodepools
/// Consolidation > Budgets > should not mark multi node consolidated if all candidates can't be disrupted due to budgets with many nodepools
/// Consolidation > Budgets > should not mark single node consolidated if all candidates can't be disrupted due to budgets with many nodepools
#[test]
fn consolidation_budget_zero_in_every_pool() {
    let c = ten_pools_of_three_expensive("0%");
    assert!(c.decide().is_none());
    assert!(c.decide_all().is_empty());
}

/// One node of `itype` holding one pod without requests.
fn one_with_a_pod(itype: &str) -> Cluster {
    Cluster::new(&[
        nodepool("default"),
        node("n0", "default", itype, BIG),
        bound("p", "n0", "", "{app: test}"),
    ])
}

/// Consolidation > Replace > can replace node (if the candidate is on-demand node)
#[test]
fn consolidation_replaces_on_demand_node_with_cheaper() {
    let d = one_with_a_pod(MOST_EXPENSIVE).decide().expect("a decision");
    assert_eq!(d.reason, Reason::Underutilized);
    assert_eq!(d.action(), Action::Replace);
    let claim = &d.plan.new_claims[0];
    assert!(
        !claim
            .instance_type_options
            .iter()
            .any(|t| t == MOST_EXPENSIVE)
    );
    assert!(d.replacement_price < d.removed_price);
}

/// Consolidation > Replace > can replace node (if the candidate is spot node)
/// Consolidation > Replace > cannot replace spot with spot if the spotToSpotConsolidation is disabled
#[test]
fn consolidation_replaces_spot_node_with_cheaper_spot() {
    let d = one_with_a_pod(MOST_EXPENSIVE_SPOT)
        .decide()
        .expect("a decision");
    assert_eq!(d.action(), Action::Replace);
    let claim = &d.plan.new_claims[0];
    assert!(
        !claim
            .instance_type_options
            .iter()
            .any(|t| t == MOST_EXPENSIVE_SPOT)
    );
    assert!(d.replacement_price < d.removed_price, "{}", d.message);
}

/// `n` spot types `s<i>` (2 CPUs, 4Gi) in test-zone-1 at 1.0 + 0.1 i, type `s<cheap>` at
/// 0.001, and an on-demand type dearer than all of them.
fn spot_ladder(n: usize, cheap: Option<usize>) -> String {
    let mut s = String::from(
        "apiVersion: adze.sh/v1alpha1\nkind: InstanceCatalog\nmetadata: {name: ladder}\ninstanceTypes:\n",
    );
    for i in 0..n {
        let price = if Some(i) == cheap {
            0.001
        } else {
            1.0 + 0.1 * i as f64
        };
        s.push_str(&format!(
            "  - name: s{i}\n    cpu: 2\n    memory: 4Gi\n    pods: 100\n    arch: amd64\n    offerings:\n      - {{zone: test-zone-1, capacityType: spot, price: {price}}}\n"
        ));
    }
    s.push_str("  - name: od\n    cpu: 2\n    memory: 4Gi\n    pods: 100\n    arch: amd64\n    offerings:\n      - {zone: test-zone-1, capacityType: on-demand, price: 100}\n");
    s
}

fn spot_node_on(catalog: &str, itype: &str, pool: &str) -> Cluster {
    Cluster::with_catalog(
        catalog,
        &[
            pool.to_string(),
            node_with_labels(
                "n0",
                &format!(
                    "adze.sh/nodepool: default, {ITYPE}: {itype}, {ZONE}: test-zone-1, {CT}: spot"
                ),
                "cpu: 2, memory: 4Gi, pods: 100",
            ),
            bound("p", "n0", "", "{app: test}"),
        ],
    )
}

/// Consolidation > Replace > cannot replace spot with spot if less than minimum InstanceTypes flexibility
#[test]
fn consolidation_spot_to_spot_needs_fifteen_cheaper_types() {
    // five types, one of them cheaper than the node
    let c = spot_node_on(&spot_ladder(4, Some(0)), "s3", &nodepool("default"));
    assert!(c.decide().is_none());
}

/// Consolidation > Replace > cannot replace spot with spot if it is part of the 15 cheapest instance types.
#[test]
fn consolidation_spot_to_spot_not_from_among_the_cheapest() {
    // the node is the second cheapest of twenty spot types
    let c = spot_node_on(&spot_ladder(20, Some(0)), "s1", &nodepool("default"));
    assert!(c.decide().is_none());
}

/// Consolidation > Replace > spot to spot consolidation should order the instance types by price before enforcing minimum flexibility.
/// Consolidation > Replace > spot to spot consolidation should consider the default for truncation if minimum number of instanceTypeOptions from minValues in requirement is less than 15.
/// Consolidation > Replace > spot to spot consolidation should consider the max of default and minimum number of instanceTypeOptions from minValues in requirement for truncation if minimum number of instanceTypeOptions from minValues in requirement is greater than 15.
#[test]
fn consolidation_spot_to_spot_offers_every_cheaper_type() {
    for min_values in [None, Some(10), Some(16)] {
        let pool = match min_values {
            None => nodepool("default"),
            Some(m) => format!(
                "{}        - {{key: {ITYPE}, operator: Exists, minValues: {m}}}\n",
                nodepool("default")
            ),
        };
        let c = spot_node_on(&spot_ladder(18, Some(16)), "s17", &pool);
        let d = c.decide().expect("a decision");
        let options = &d.plan.new_claims[0].instance_type_options;
        assert!(options.iter().any(|t| t == "s16"), "{options:?}");
        assert!(!options.iter().any(|t| t == "s17"));
        // Karpenter keeps the 15 (or minValues) cheapest; Adze keeps every cheaper one.
        assert_eq!(options.len(), 17, "{min_values:?}: {options:?}");
    }
}

/// Consolidation > Replace > Consolidation should fail if filterByPrice breaks the minimum requirement from the NodePools. (if the candidate is on-demand node; if the candidate is spot node)
#[test]
fn consolidation_min_values_above_cheaper_types_blocks_replacement() {
    let pool = format!(
        "{}        - {{key: {ITYPE}, operator: Exists, minValues: 16}}\n",
        nodepool("default")
    );
    for ct in ["on-demand", "spot"] {
        // fifteen types are cheaper than the node
        let catalog =
            spot_ladder(18, None).replace("capacityType: spot", &format!("capacityType: {ct}"));
        let mut c = spot_node_on(&catalog, "s15", &pool);
        if ct == "on-demand" {
            c = Cluster::with_catalog(
                &catalog,
                &[
                    pool.clone(),
                    node("n0", "default", "s15", "cpu: 2, memory: 4Gi, pods: 100"),
                    bound("p", "n0", "", "{app: test}"),
                ],
            );
        }
        let d = c.decide();
        assert!(
            d.is_none(),
            "{ct}: {:?}",
            d.map(|d| (
                d.message,
                d.plan.new_claims[0].instance_type_options.clone()
            ))
        );
    }
}

/// Consolidation > Replace > can replace nodes if another nodePool returns no instance types (if the candidate is on-demand node; if the candidate is spot node)
#[test]
fn consolidation_replaces_although_another_pool_has_no_types() {
    for itype in [MOST_EXPENSIVE, MOST_EXPENSIVE_SPOT] {
        let empty_pool = format!(
            "{}        - {{key: {ITYPE}, operator: In, values: [no-such-type]}}\n",
            nodepool("empty")
        );
        let c = Cluster::new(&[
            nodepool("default"),
            empty_pool,
            node("n0", "default", itype, BIG),
            bound("p", "n0", "", "{app: test}"),
        ]);
        let d = c.decide().expect("a decision");
        assert_eq!(removed(&d), ["n0"]);
        assert_eq!(d.action(), Action::Replace, "{itype}");
        assert_eq!(d.plan.new_claims[0].nodepool, "default");
    }
}

/// Consolidation > Replace > can replace nodes, considers PDB (if the candidate is on-demand node; if the candidate is spot node)
#[test]
fn consolidation_no_replacement_when_a_pdb_allows_nothing() {
    for itype in [MOST_EXPENSIVE, MOST_EXPENSIVE_SPOT] {
        let mut c = Cluster::new(&[
            nodepool("default"),
            node("n0", "default", itype, BIG),
            bound("p0", "n0", "", "{app: test}"),
            bound("p1", "n0", "", "{app: test}"),
            bound("p2", "n0", "", "{app: test}"),
        ]);
        c.pdb(
            "default/pdb",
            0,
            &["default/p0", "default/p1", "default/p2"],
        );
        assert!(c.decide().is_none(), "{itype}");
    }
}

/// Two nodes: `n0` (the candidate, of `itype`, 32 CPUs) with two 2-CPU pods, and `n1` (5
/// CPUs, the same type) with one.
fn two_with_protected(itype: &str) -> Cluster {
    Cluster::new(&[
        nodepool("default"),
        node("n0", "default", itype, BIG),
        node("n1", "default", itype, "cpu: 5, memory: 16Gi, pods: 100"),
        bound("p0", "n0", "cpu: 2", "{app: test}"),
        bound("p1", "n0", "cpu: 2", "{app: test}"),
        bound("p2", "n1", "cpu: 2", "{app: test}"),
    ])
}

/// Consolidation > Replace > can replace nodes, considers karpenter.sh/do-not-disrupt on nodes (if the candidate is on-demand node; if the candidate is spot node)
#[test]
fn consolidation_replaces_around_a_do_not_disrupt_node() {
    for itype in [MOST_EXPENSIVE, MOST_EXPENSIVE_SPOT] {
        let mut c = two_with_protected(itype);
        c.facts("n1").do_not_disrupt = true;
        let d = c.decide().expect("a decision");
        assert_eq!(removed(&d), ["n0"], "{itype}: {}", d.message);
        assert!(d.replacement_price < d.removed_price);
    }
}

/// Consolidation > Replace > can replace nodes, considers karpenter.sh/do-not-disrupt on pods (if the candidate is on-demand node; if the candidate is spot node)
#[test]
fn consolidation_replaces_around_a_do_not_disrupt_pod() {
    for itype in [MOST_EXPENSIVE, MOST_EXPENSIVE_SPOT] {
        let mut c = two_with_protected(itype);
        c.pod("default/p2").do_not_disrupt = true;
        let d = c.decide().expect("a decision");
        assert_eq!(removed(&d), ["n0"], "{itype}: {}", d.message);
    }
}

/// The node's type (on demand at 0.5, no longer offered) and one other type with these
/// offerings (zone, capacity type, price).
fn current_and_replacement(offerings: &[(&str, &str, f64)]) -> String {
    let mut s = String::from(
        "apiVersion: adze.sh/v1alpha1\nkind: InstanceCatalog\nmetadata: {name: two}\ninstanceTypes:\n  - name: current-on-demand\n    cpu: 32\n    memory: 64Gi\n    pods: 100\n    arch: amd64\n    offerings:\n      - {zone: test-zone-1, capacityType: on-demand, price: 0.5, available: false}\n  - name: replacement\n    cpu: 32\n    memory: 64Gi\n    pods: 100\n    arch: amd64\n    offerings:\n",
    );
    for (z, ct, p) in offerings {
        s.push_str(&format!(
            "      - {{zone: {z}, capacityType: {ct}, price: {p}}}\n"
        ));
    }
    s
}

/// Consolidation > Replace > won't replace node if any spot replacement is more expensive
#[test]
fn consolidation_replacement_price_is_its_zones_not_the_dearest() {
    let catalog = current_and_replacement(&[
        ("test-zone-1", "spot", 1.0),
        ("test-zone-2", "spot", 0.2),
        ("test-zone-3", "spot", 0.4),
    ]);
    let c = Cluster::with_catalog(
        &catalog,
        &[
            nodepool("default"),
            node(
                "n0",
                "default",
                "current-on-demand",
                "cpu: 32, memory: 64Gi, pods: 100",
            ),
            bound("p", "n0", "", "{app: test}"),
        ],
    );
    // Adze fixes the replacement's zone while planning, so it launches at that zone's price:
    // the 0.2 offering, cheaper than the node.
    let d = c.decide().expect("a decision");
    let claim = &d.plan.new_claims[0];
    assert_eq!(
        (claim.zone.as_str(), claim.capacity_type.as_str()),
        ("test-zone-2", "spot")
    );
    assert!((claim.price_per_hour - 0.2).abs() < 1e-9);
}

/// Consolidation > Replace > won't replace on-demand node if on-demand replacement is more expensive
#[test]
fn consolidation_no_dearer_on_demand_replacement() {
    let catalog = current_and_replacement(&[
        ("test-zone-1", "on-demand", 0.6),
        ("test-zone-2", "on-demand", 0.6),
        ("test-zone-2", "spot", 0.2),
        ("test-zone-3", "spot", 0.3),
    ]);
    let on_demand_pool =
        nodepool("default").replace("values: [spot, on-demand]", "values: [on-demand]");
    let c = Cluster::with_catalog(
        &catalog,
        &[
            on_demand_pool,
            node(
                "n0",
                "default",
                "current-on-demand",
                "cpu: 32, memory: 64Gi, pods: 100",
            ),
            bound("p", "n0", "", "{app: test}"),
        ],
    );
    assert!(c.decide().is_none());
}

/// Karpenter's *Delete* setup: two nodes of the cheapest type with 32 CPUs, pods `p0`, `p1` on
/// `n0` and `p2` on `n1`.
fn two_cheap() -> Cluster {
    Cluster::new(&two_cheap_docs())
}

fn two_cheap_docs() -> Vec<String> {
    vec![
        nodepool("default"),
        node("n0", "default", LEAST_EXPENSIVE, BIG),
        node("n1", "default", LEAST_EXPENSIVE, BIG),
        bound("p0", "n0", "", "{app: test}"),
        bound("p1", "n0", "", "{app: test}"),
        bound("p2", "n1", "", "{app: test}"),
    ]
}

/// Consolidation > Delete > can delete nodes
/// Consolidation > Delete > can delete nodes, evicts pods without an ownerRef
#[test]
fn consolidation_deletes_the_node_with_fewer_pods() {
    let d = two_cheap().decide().expect("a decision");
    assert_eq!(removed(&d), ["n1"], "{}", d.message);
    assert_eq!(d.action(), Action::Delete);
}

/// Consolidation > Delete > can delete nodes, when non-Karpenter capacity can fit pods
#[test]
fn consolidation_deletes_onto_unmanaged_capacity() {
    let c = Cluster::new(&[
        nodepool("default"),
        node("n0", "default", LEAST_EXPENSIVE, BIG),
        node_with_labels("unmanaged", &format!("{ZONE}: test-zone-1"), BIG),
        bound("p0", "n0", "", "{app: test}"),
        bound("p1", "n0", "", "{app: test}"),
        bound("p2", "n0", "", "{app: test}"),
    ]);
    let d = c.decide().expect("a decision");
    assert_eq!(removed(&d), ["n0"]);
    assert_eq!(d.action(), Action::Delete);
    assert_eq!(d.plan.existing[0].node, "unmanaged");
}

/// Consolidation > Delete > can delete nodes, considers PDB
#[test]
fn consolidation_deletes_the_node_a_pdb_does_not_hold() {
    let mut c = two_cheap();
    c.pdb("default/pdb", 0, &["default/p2"]);
    let d = c.decide().expect("a decision");
    assert_eq!(removed(&d), ["n0"]);
}

/// Consolidation > Delete > can delete nodes, considers karpenter.sh/do-not-disrupt on nodes
#[test]
fn consolidation_deletes_the_node_without_do_not_disrupt() {
    let mut c = two_cheap();
    c.facts("n1").do_not_disrupt = true;
    let d = c.decide().expect("a decision");
    assert_eq!(removed(&d), ["n0"]);
}

/// Consolidation > Delete > can delete nodes, considers karpenter.sh/do-not-disrupt on pods
#[test]
fn consolidation_deletes_the_node_without_do_not_disrupt_pods() {
    let mut c = two_cheap();
    c.pod("default/p2").do_not_disrupt = true;
    let d = c.decide().expect("a decision");
    assert_eq!(removed(&d), ["n0"]);
}

/// Consolidation > Delete > does not consolidate nodes with karpenter.sh/do-not-disrupt on pods when the NodePool's TerminationGracePeriod is not nil
#[test]
fn consolidation_none_when_every_pod_is_do_not_disrupt() {
    let mut c = two_cheap();
    for p in ["default/p0", "default/p1", "default/p2"] {
        c.pod(p).do_not_disrupt = true;
    }
    assert!(c.decide().is_none());
}

/// Consolidation > Delete > does not consolidate nodes with pods with blocking PDBs when the NodePool's TerminationGracePeriod is not nil
#[test]
fn consolidation_none_when_a_pdb_holds_every_pod() {
    let mut c = two_cheap();
    c.pdb(
        "default/pdb",
        0,
        &["default/p0", "default/p1", "default/p2"],
    );
    assert!(c.decide().is_none());
}

/// Consolidation > Delete > won't delete node if it would require pods to schedule on an uninitialized node
#[test]
fn consolidation_not_onto_an_uninitialized_node() {
    let mut docs = two_cheap_docs();
    docs[1] = docs[1].replace(", adze.sh/initialized: \"true\"", "");
    let mut c = Cluster::new(&docs);
    c.facts("n0").initialized = false;
    let d = c.decide();
    assert!(d.is_none(), "{:?}", d.map(|d| d.message));
}

/// Consolidation > Delete > can delete nodes with a permanently pending pod
#[test]
fn consolidation_ignores_a_pod_that_can_never_schedule() {
    let mut docs = two_cheap_docs();
    docs.push(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: pending\n  namespace: default\nspec:\n  nodeSelector: {non-existent: node-label}\n  containers:\n    - name: app\n      image: nginx\n"
            .to_string(),
    );
    let c = Cluster::new(&docs);
    let d = c.decide().expect("a decision");
    assert_eq!(removed(&d), ["n1"]);
    assert!(!d.pods().any(|p| p == "default/pending"));
}

/// Consolidation > Delete > won't delete nodes if it would make a non-pending pod go pending
#[test]
fn consolidation_keeps_nodes_pods_are_pinned_to() {
    let c = Cluster::new(&[
        nodepool("default"),
        node_with_labels(
            "n0",
            &format!(
                "adze.sh/nodepool: default, {ITYPE}: {LEAST_EXPENSIVE}, {ZONE}: test-zone-1, {CT}: on-demand, foo: \"1\""
            ),
            BIG,
        ),
        node_with_labels(
            "n1",
            &format!(
                "adze.sh/nodepool: default, {ITYPE}: {LEAST_EXPENSIVE}, {ZONE}: test-zone-1, {CT}: on-demand, foo: \"2\""
            ),
            BIG,
        ),
        pinned("p0", "n0", "1"),
        pinned("p1", "n0", "1"),
        pinned("p2", "n1", "2"),
    ]);
    let d = c.decide();
    assert!(d.is_none(), "{:?}", d.map(|d| d.message));
}

/// A pod bound to `node` that selects `foo: <value>`.
fn pinned(name: &str, node: &str, value: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: default\nspec:\n  nodeName: {node}\n  nodeSelector: {{foo: \"{value}\"}}\n  containers:\n    - name: app\n      image: nginx\n"
    )
}

/// Consolidation > Delete > can delete nodes while an invalid node pool exists
#[test]
fn consolidation_deletes_although_another_pool_is_unusable() {
    let mut docs = two_cheap_docs();
    docs.push(format!(
        "{}        - {{key: {ITYPE}, operator: In, values: [no-such-type]}}\n",
        nodepool("bad-nodepool")
    ));
    let d = Cluster::new(&docs).decide().expect("a decision");
    assert_eq!(removed(&d), ["n1"]);
}

/// Consolidation > TTL > should not consolidate if the action becomes invalid during the node TTL wait
/// Consolidation > TTL > should not consolidate if the action picks different instance types after the node TTL wait
#[test]
fn consolidation_revalidate_refuses_a_node_that_gained_a_pod() {
    let c = Cluster::new(&[
        nodepool("default"),
        node("n0", "default", MOST_EXPENSIVE, BIG),
    ]);
    let d = c.decide().expect("a decision");
    assert_eq!(d.reason, Reason::Empty);
    // during the wait a pod is bound to it
    let mut later = Cluster::new(&[
        nodepool("default"),
        node("n0", "default", MOST_EXPENSIVE, BIG),
        bound("p", "n0", "cpu: 1", "{app: test}"),
    ]);
    later.facts("n0").last_pod_event = NOW;
    later.pod("default/p").do_not_disrupt = true;
    let err = disruption::revalidate(&d, &later.input, &Options::default()).unwrap_err();
    assert!(
        matches!(
            err,
            disruption::Invalidated::Blocked { .. }
                | disruption::Invalidated::NoLongerEligible { .. }
        ),
        "{err}"
    );
}

/// Consolidation > TTL > should not replace node if a pod schedules with karpenter.sh/do-not-disrupt during the TTL wait
/// Consolidation > TTL > should not replace node if a pod schedules with a blocking PDB during the TTL wait
#[test]
fn consolidation_revalidate_refuses_a_replacement_that_became_protected() {
    let before = one_with_a_pod(MOST_EXPENSIVE);
    let d = before.decide().expect("a decision");
    assert_eq!(d.action(), Action::Replace);
    let with_pod = || {
        Cluster::new(&[
            nodepool("default"),
            node("n0", "default", MOST_EXPENSIVE, BIG),
            bound("p", "n0", "", "{app: test}"),
            bound("late", "n0", "", "{app: test}"),
        ])
    };
    let mut dnd = with_pod();
    dnd.pod("default/late").do_not_disrupt = true;
    assert!(matches!(
        disruption::revalidate(&d, &dnd.input, &Options::default()),
        Err(disruption::Invalidated::Blocked { .. })
    ));
    let mut pdb = with_pod();
    pdb.pdb("default/pdb", 0, &["default/late"]);
    assert!(matches!(
        disruption::revalidate(&d, &pdb.input, &Options::default()),
        Err(disruption::Invalidated::Blocked { .. })
    ));
}

/// Consolidation > TTL > should not delete node if pods schedule with karpenter.sh/do-not-disrupt during the TTL wait
/// Consolidation > TTL > should not delete node if pods schedule with a blocking PDB during the TTL wait
#[test]
fn consolidation_revalidate_refuses_a_delete_that_became_protected() {
    let docs = |late: bool| {
        let mut d = vec![
            nodepool("default"),
            node("n0", "default", MOST_EXPENSIVE, BIG),
            node("n1", "default", MOST_EXPENSIVE, BIG),
            bound("p0", "n0", "", "{app: test}"),
            bound("p1", "n1", "", "{app: test}"),
        ];
        if late {
            d.push(bound("late0", "n0", "", "{app: test}"));
            d.push(bound("late1", "n1", "", "{app: test}"));
        }
        d
    };
    let d = Cluster::new(&docs(false)).decide().expect("a decision");
    assert_eq!(d.reason, Reason::Underutilized);
    let mut dnd = Cluster::new(&docs(true));
    dnd.pod("default/late0").do_not_disrupt = true;
    dnd.pod("default/late1").do_not_disrupt = true;
    assert!(disruption::revalidate(&d, &dnd.input, &Options::default()).is_err());
    let mut pdb = Cluster::new(&docs(true));
    pdb.pdb("default/pdb", 0, &["default/late0", "default/late1"]);
    assert!(disruption::revalidate(&d, &pdb.input, &Options::default()).is_err());
}

/// Three nodes of `types` with one pod each.
fn three_with_a_pod_each(types: [&str; 3]) -> Cluster {
    let mut docs = vec![nodepool("default")];
    for (i, t) in types.iter().enumerate() {
        docs.push(node(&format!("n{i}"), "default", t, BIG));
        docs.push(bound(&format!("p{i}"), &format!("n{i}"), "", "{app: test}"));
    }
    Cluster::new(&docs)
}

/// Consolidation > Multi-NodeClaim > can merge 3 nodes into 1 (if the candidate is on-demand node; if the candidate is spot node)
/// Consolidation > Multi-NodeClaim > can merge 3 nodes into 1 if the candidates have both spot and on-demand
#[test]
fn consolidation_merges_three_nodes_into_one() {
    for types in [
        [MOST_EXPENSIVE; 3],
        [MOST_EXPENSIVE_SPOT; 3],
        [MOST_EXPENSIVE, MOST_EXPENSIVE, MOST_EXPENSIVE_SPOT],
    ] {
        let d = three_with_a_pod_each(types).decide().expect("a decision");
        assert_eq!(removed(&d), ["n0", "n1", "n2"], "{types:?}: {}", d.message);
        assert_eq!(d.plan.new_claims.len(), 1);
    }
}

/// Consolidation > Multi-NodeClaim > won't merge 2 nodes into 1 of the same type (if the candidate is on-demand node; if the candidate is spot node)
#[test]
fn consolidation_wont_merge_two_cheapest_into_one() {
    for t in [LEAST_EXPENSIVE, "1-cpu-1-mem-test-zone-1-spot"] {
        let c = Cluster::new(&[
            nodepool("default"),
            node("n0", "default", t, BIG),
            node("n1", "default", t, BIG),
            bound("p0", "n0", "", "{app: test}"),
            bound("p1", "n1", "", "{app: test}"),
            bound("p2", "n1", "", "{app: test}"),
        ]);
        let d = c.decide().expect("a decision");
        assert_eq!(removed(&d), ["n0"], "{t}: {}", d.message);
        assert_eq!(d.action(), Action::Delete);
    }
}

/// Consolidation > Node Lifetime Consideration > should consider node lifetime remaining when calculating disruption cost
#[test]
fn consolidation_prefers_the_node_closer_to_expiry() {
    let mut c = two_cheap();
    // n0 (two pods) has one second left of its 3 s lifetime, n1 (one pod) three.
    c.facts("n0").created = NOW - 2;
    c.facts("n0").last_pod_event = NOW - 2;
    c.facts("n1").created = NOW;
    c.facts("n1").last_pod_event = NOW;
    for f in c.input.nodes.iter_mut() {
        f.expire_after = Some(Duration::from_secs(3));
    }
    let d = c.decide().expect("a decision");
    assert_eq!(removed(&d), ["n0"], "{}", d.message);
}

/// Consolidation > Topology Consideration > can replace node maintaining zonal topology spread
#[test]
fn consolidation_replacement_keeps_the_zone_spread() {
    let spread = "  labels: {app: zonal}\nspec:\n  topologySpreadConstraints:\n    - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: zonal}}}\n";
    let pod = |name: &str, node: &str| {
        bound(name, node, "cpu: 1", "{app: zonal}")
            .replace("  labels: {app: zonal}\nspec:\n", spread)
    };
    let c = Cluster::new(&[
        nodepool("default"),
        node(
            "z1",
            "default",
            "1-cpu-1-mem-test-zone-1-on-demand",
            "cpu: 1, memory: 1Gi, pods: 100",
        ),
        node(
            "z2",
            "default",
            "64-cpu-128-mem-test-zone-2-on-demand",
            "cpu: 1, memory: 1Gi, pods: 100",
        ),
        node(
            "z3",
            "default",
            "1-cpu-1-mem-test-zone-3-on-demand",
            "cpu: 1, memory: 1Gi, pods: 100",
        ),
        pod("p1", "z1"),
        pod("p2", "z2"),
        pod("p3", "z3"),
    ]);
    let d = c.decide().expect("a decision");
    assert_eq!(removed(&d), ["z2"], "{}", d.message);
    assert_eq!(d.plan.new_claims.len(), 1);
    assert_eq!(d.plan.new_claims[0].zone, "test-zone-2");
}

/// Consolidation > Topology Consideration > won't delete node if it would violate pod anti-affinity
#[test]
fn consolidation_respects_hostname_anti_affinity() {
    let anti = "spec:\n  affinity:\n    podAntiAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n        - {topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {app: test}}}\n";
    let pod = |name: &str, node: &str| {
        bound(name, node, "cpu: 1", "{app: test}").replace("spec:\n", anti)
    };
    let c = Cluster::new(&[
        nodepool("default"),
        node(
            "n1",
            "default",
            "1-cpu-1-mem-test-zone-1-on-demand",
            "cpu: 1, memory: 1Gi, pods: 100",
        ),
        node(
            "n2",
            "default",
            "1-cpu-1-mem-test-zone-2-on-demand",
            "cpu: 1, memory: 1Gi, pods: 100",
        ),
        node(
            "n3",
            "default",
            "1-cpu-1-mem-test-zone-3-on-demand",
            "cpu: 1, memory: 1Gi, pods: 100",
        ),
        pod("p1", "n1"),
        pod("p2", "n2"),
        pod("p3", "n3"),
    ]);
    let d = c.decide();
    assert!(d.is_none(), "{:?}", d.map(|d| d.message));
}

fn with_policy(preference: adze_scheduling::scheduler::PreferencePolicy) -> Options {
    let mut o = Options::default();
    o.scheduling.preference_policy = preference;
    o
}

/// Consolidation > Preferences > should consolidate a node through deletion when ignoring preferences
#[test]
fn consolidation_deletes_when_ignoring_preferred_anti_affinity() {
    let anti = "spec:\n  affinity:\n    podAntiAffinity:\n      preferredDuringSchedulingIgnoredDuringExecution:\n        - weight: 1\n          podAffinityTerm: {topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {app: foo}}}\n";
    let pod = |name: &str, node: &str| bound(name, node, "", "{app: foo}").replace("spec:\n", anti);
    let c = Cluster::new(&[
        nodepool("default"),
        node(
            "n0",
            "default",
            LEAST_EXPENSIVE,
            "cpu: 5, memory: 16Gi, pods: 100",
        ),
        node(
            "n1",
            "default",
            LEAST_EXPENSIVE,
            "cpu: 5, memory: 16Gi, pods: 100",
        ),
        pod("p0", "n0"),
        pod("p1", "n0"),
        pod("p2", "n1"),
    ]);
    let ignore = with_policy(adze_scheduling::scheduler::PreferencePolicy::Ignore);
    let d = disruption::decide(&c.input, &ignore).expect("a decision");
    assert_eq!(removed(&d), ["n1"], "{}", d.message);
    assert_eq!(d.action(), Action::Delete);
}

/// Consolidation > Preferences > should consolidate a node through replacement when ignoring preferences
#[test]
fn consolidation_replaces_when_ignoring_a_preferred_type() {
    let prefer = format!(
        "spec:\n  affinity:\n    nodeAffinity:\n      preferredDuringSchedulingIgnoredDuringExecution:\n        - weight: 1\n          preference: {{matchExpressions: [{{key: {ITYPE}, operator: In, values: [{MOST_EXPENSIVE}]}}]}}\n"
    );
    let c = Cluster::new(&[
        nodepool("default"),
        node("n0", "default", MOST_EXPENSIVE, BIG),
        bound("p", "n0", "", "{app: foo}").replace("spec:\n", &prefer),
    ]);
    let ignore = with_policy(adze_scheduling::scheduler::PreferencePolicy::Ignore);
    let d = disruption::decide(&c.input, &ignore).expect("a decision");
    assert_eq!(d.action(), Action::Replace);
    assert!(
        !d.plan.new_claims[0]
            .instance_type_options
            .iter()
            .any(|t| t == MOST_EXPENSIVE)
    );
}

/// Consolidation > MinValuesPolicy > should not consolidate a node by relaxing min values when policy is set to BestEffort
#[test]
fn consolidation_does_not_relax_min_values() {
    let pool = format!(
        "{}        - {{key: {ITYPE}, operator: In, values: [{LEAST_EXPENSIVE}, {MOST_EXPENSIVE}, 2-cpu-2-mem-test-zone-1-on-demand], minValues: 3}}\n",
        nodepool("default")
    );
    // only two of the three types exist
    let catalog = assorted_where(|cpu, mem, zone, ct| {
        zone == "test-zone-1"
            && ct == "on-demand"
            && ((cpu, mem) == (1, 1) || (cpu, mem) == (64, 128))
    });
    let c = Cluster::with_catalog(
        &catalog,
        &[
            pool,
            node(
                "n0",
                "default",
                MOST_EXPENSIVE,
                "cpu: 5, memory: 16Gi, pods: 100",
            ),
            bound("p", "n0", "", "{app: test}"),
        ],
    );
    let mut best_effort = Options::default();
    best_effort.scheduling.min_values_policy =
        adze_scheduling::scheduler::MinValuesPolicy::BestEffort;
    let d = disruption::decide(&c.input, &best_effort);
    assert!(d.is_none(), "{:?}", d.map(|d| d.message));
}

/// Consolidation > Metrics > should correctly report invalidated commands for emptiness disruption (when a candidate is blocked by budgets)
/// Consolidation > Metrics > should correctly report invalidated commands for multi node disruption (when candidates are blocked by budgets)
/// Consolidation > Metrics > should correctly report invalidated commands for single node disruption (when a candidate is blocked by budgets)
#[test]
fn validation_budget_closed_during_the_wait_drops_the_command() {
    let empty = Cluster::new(&[
        nodepool("default"),
        node("n0", "default", MOST_EXPENSIVE, BIG),
    ]);
    let multi = ten_expensive(Some("100m"));
    let single = one_with_a_pod(MOST_EXPENSIVE);
    for (what, mut c, reason) in [
        ("empty", empty, Reason::Empty),
        ("multi", multi, Reason::Underutilized),
        ("single", single, Reason::Underutilized),
    ] {
        let d = c.decide().expect("a decision");
        assert_eq!(d.reason, reason, "{what}");
        c.policies(|p| p.budgets = vec![budget("0%")]);
        assert_eq!(
            disruption::revalidate(&d, &c.input, &Options::default()).unwrap_err(),
            disruption::Invalidated::Budget("default".into()),
            "{what}"
        );
    }
}

// =======================================================================================
// balanced_test.go (Karpenter's scoring function, restated on Adze's BalancedScore)
// =======================================================================================

/// Consolidation > Replace > can replace nodes, PDB namespace must match (if the candidate is on-demand node)
/// Consolidation > Replace > can replace nodes, PDB namespace must match (if the candidate is spot node)
#[test]
fn consolidation_pdb_of_another_namespace_does_not_hold() {
    for itype in [MOST_EXPENSIVE, MOST_EXPENSIVE_SPOT] {
        let docs = vec![
            nodepool("default"),
            node("n0", "default", itype, BIG),
            bound("p", "n0", "", "{app: test}"),
            pdb_object("pdb", "other", "app: test", 0),
        ];
        let mut input = from_objects(&docs);
        input
            .policies
            .iter_mut()
            .for_each(|p| p.budgets = vec![budget("100%")]);
        let d = disruption::decide(&input, &Options::default()).expect("a decision");
        assert_eq!(d.action(), Action::Replace, "{itype}: {}", d.message);
        // In the pod's own namespace the PDB holds it.
        let mut docs = docs;
        docs[3] = pdb_object("pdb", "default", "app: test", 0);
        let mut input = from_objects(&docs);
        input
            .policies
            .iter_mut()
            .for_each(|p| p.budgets = vec![budget("100%")]);
        assert!(
            disruption::decide(&input, &Options::default()).is_none(),
            "{itype}"
        );
    }
}

/// Consolidation > Replace > can replace nodes, considers PDB policy (if the candidate is on-demand node)
/// Consolidation > Replace > can replace nodes, considers PDB policy (if the candidate is spot node)
///
/// A PDB allowing no eviction, with `unhealthyPodEvictionPolicy: AlwaysAllow`, over three
/// running pods that are not Ready: the eviction API lets unhealthy pods go, so the node is
/// replaced. Ready, the same pods hold it.
#[test]
fn consolidation_pdb_always_allow_lets_unready_pods_go() {
    let pod = |name: &str, ready: &str| {
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: default\n  labels: {{app: test}}\nspec:\n  nodeName: n0\n  containers:\n    - name: app\n      image: nginx\nstatus:\n  phase: Running\n  conditions: [{{type: Ready, status: \"{ready}\"}}]\n"
        )
    };
    let pdb = pdb_object("pdb", "default", "app: test", 0).replace(
        "  maxUnavailable: 0\n",
        "  maxUnavailable: 0\n  unhealthyPodEvictionPolicy: AlwaysAllow\n",
    );
    for itype in [MOST_EXPENSIVE, MOST_EXPENSIVE_SPOT] {
        for (ready, replaced) in [("False", true), ("True", false)] {
            let mut docs = vec![
                nodepool("default"),
                node("n0", "default", itype, BIG),
                pdb.clone(),
            ];
            docs.extend((0..3).map(|i| pod(&format!("p{i}"), ready)));
            let mut input = from_objects(&docs);
            input
                .policies
                .iter_mut()
                .for_each(|p| p.budgets = vec![budget("100%")]);
            let d = disruption::decide(&input, &Options::default());
            assert_eq!(
                d.as_ref().map(|d| d.action()),
                replaced.then_some(Action::Replace),
                "{itype}, Ready={ready}"
            );
        }
    }
}

/// Consolidation > Delete > does not delete nodes with pod churn, deletes nodes without pod churn
///
/// Two empty nodes are to go; during the wait a pod lands on one. Karpenter's validation
/// narrows the command to the other; Adze's `revalidate` refuses the command, and the next
/// decision takes the other node alone.
#[test]
fn consolidation_churn_refuses_the_command_and_the_next_takes_the_quiet_node() {
    let docs = vec![
        nodepool("default"),
        node("n0", "default", LEAST_EXPENSIVE, BIG),
        node("n1", "default", LEAST_EXPENSIVE, BIG),
    ];
    let d = Cluster::new(&docs).decide().expect("a decision");
    assert_eq!(
        (d.reason, removed(&d)),
        (Reason::Empty, vec!["n0".to_string(), "n1".to_string()])
    );
    let mut churned = docs.clone();
    churned.push(bound("p", "n0", "cpu: 1", "{app: test}"));
    let mut later = Cluster::new(&churned);
    later.facts("n0").last_pod_event = NOW;
    let err = disruption::revalidate(&d, &later.input, &Options::default()).unwrap_err();
    assert!(
        matches!(err, disruption::Invalidated::NoLongerEligible { ref node, .. } if node == "n0"),
        "{err}"
    );
    let next = later.decide().expect("a decision");
    assert_eq!(
        (next.reason, removed(&next)),
        (Reason::Empty, vec!["n1".to_string()])
    );
}

/// Consolidation > Delete > should consider initialized nodes before uninitialized nodes
///
/// Thirty 3-CPU nodes each hold a 2-CPU pod, only one of them initialized; a 1-CPU node holds
/// a 1-CPU pod. The small node goes, its pod onto the initialized node (Karpenter's case has
/// a hundred such nodes; thirty keep the case cheap).
#[test]
fn consolidation_moves_pods_onto_the_initialized_node_only() {
    let catalog = "apiVersion: adze.sh/v1alpha1\nkind: InstanceCatalog\nmetadata: {name: two}\ninstanceTypes:\n  - {name: default-type, cpu: 3, memory: 3Gi, pods: 110, arch: amd64, offerings: [{zone: test-zone-1, capacityType: on-demand, price: 0.6221}]}\n  - {name: small-type, cpu: 1, memory: 1Gi, pods: 10, arch: amd64, offerings: [{zone: test-zone-1, capacityType: on-demand, price: 0.2074}]}\n";
    let mut docs = vec![nodepool("default")];
    for i in 0..30 {
        let mut n = node(
            &format!("n{i}"),
            "default",
            "default-type",
            "cpu: 3, memory: 3Gi, pods: 100",
        );
        if i != 17 {
            n = n.replace(", adze.sh/initialized: \"true\"", "");
        }
        docs.push(n);
        docs.push(bound(
            &format!("p{i}"),
            &format!("n{i}"),
            "cpu: 2, memory: 2Gi",
            "{app: test}",
        ));
    }
    docs.push(node(
        "small",
        "default",
        "small-type",
        "cpu: 1, memory: 1Gi, pods: 100",
    ));
    docs.push(bound("q", "small", "cpu: 1, memory: 1Gi", "{app: test}"));
    let mut c = Cluster::with_catalog(catalog, &docs);
    for i in (0..30).filter(|&i| i != 17) {
        c.facts(&format!("n{i}")).initialized = false;
    }
    let d = c.decide().expect("a decision");
    assert_eq!(removed(&d), ["small"], "{}", d.message);
    assert_eq!(d.action(), Action::Delete);
    assert_eq!(d.plan.existing.len(), 1);
    assert_eq!(d.plan.existing[0].node, "n17");
}

/// A move saving `savings` per day with disruption cost `cost`, in a pool whose nodes cost
/// `pool_cost` per day and whose disruption cost totals `pool_disruption`, scored as
/// `balanced_score` scores it (the fractions of the pool's totals; 0 where a total is 0).
fn balanced(
    savings: f64,
    cost: f64,
    pool_cost: f64,
    pool_disruption: f64,
) -> disruption::consolidation::BalancedScore {
    let frac = |x: f64, total: f64| if total > 0.0 { x / total } else { 0.0 };
    disruption::consolidation::BalancedScore {
        nodepool: "default".into(),
        savings,
        savings_fraction: frac(savings, pool_cost),
        disruption_fraction: frac(cost, pool_disruption),
    }
}

fn close(a: f64, b: f64, eps: f64) -> bool {
    (a - b).abs() < eps
}

/// TestScoreMove_OversizedNode_Approved
/// TestScoreMove_ScaleInvariance
#[test]
fn balanced_oversized_node_scores_2_81() {
    let s = balanced(7.26, 4.0, 58.08, 90.0);
    assert!(s.passes());
    assert!(close(s.score(), 2.81, 0.02), "{}", s.score());
    assert!(close(s.savings_fraction, 0.125, 0.001));
    assert!(close(s.disruption_fraction, 0.0444, 0.001));
    let ten_times = balanced(7.26, 4.0, 580.8, 900.0);
    assert!(close(s.score(), ten_times.score(), 0.01));
}

/// TestScoreMove_SpareCapacityDelete_Approved
/// TestScoreMove_MarginalMove_Rejected
/// TestScoreMove_WellPackedNode_Rejected
/// TestScoreMove_UniformPoolReplace_Approved
#[test]
fn balanced_scores_and_threshold_of_one_half() {
    let spare = balanced(4.84, 5.0, 58.08, 90.0);
    assert!(spare.passes() && close(spare.score(), 1.50, 0.02));
    let marginal = balanced(2.42, 9.0, 58.08, 90.0);
    assert!(!marginal.passes() && close(marginal.score(), 0.42, 0.01));
    let packed = balanced(0.0, 11.0, 58.08, 90.0);
    assert!(!packed.passes() && packed.score() == 0.0);
    let uniform = balanced(2.42, 9.0, 48.40, 90.0);
    assert!(uniform.passes(), "{}", uniform.score());
    assert!(close(uniform.score(), 0.50, 0.01));
    assert_eq!(disruption::consolidation::BALANCED_K, 2.0);
}

/// TestScoreMove_HeterogeneousDisruption
#[test]
fn balanced_heterogeneous_disruption() {
    let a = balanced(4.84, 5.0, 58.08, 117.0);
    assert!(a.passes() && close(a.score(), 1.95, 0.02));
    let b = balanced(4.84, 32.0, 58.08, 117.0);
    assert!(!b.passes() && close(b.score(), 0.30, 0.01));
}

/// TestScoreMove_ZeroNodePoolCost
#[test]
fn balanced_zero_pool_cost_rejects() {
    assert!(!balanced(4.84, 5.0, 0.0, 90.0).passes());
}

/// TestScoreMove_ZeroDisruptionCost_Approved
/// TestScoreMove_ZeroTotalDisruptionCost
/// TestScoreMove_DivisionByZero_MoveDisruption
/// TestScoreMove_DivisionByZero_PoolDisruption
/// Balanced Scoring > ScoreMove (SavingsRatio) > should compute correct scores (zero disruption cost)
#[test]
fn balanced_zero_disruption_scores_zero() {
    // Every node counts 1 towards disruption in Adze, so neither a move nor a pool can have
    // none; the formula scores such a move 0 rather than infinity.
    assert!(!balanced(4.84, 0.0, 58.08, 90.0).passes());
    assert!(!balanced(4.84, 5.0, 58.08, 0.0).passes());
    assert!(!balanced(0.0, 0.0, 58.08, 90.0).passes());
    // ScoreMove's table: 10 saved of 100, no disruption of 100.
    let none = balanced(10.0, 0.0, 100.0, 100.0);
    assert!(none.score() == 0.0 && !none.passes());
}

/// TestScoreMove_CrossNodePool
#[test]
fn balanced_cross_pool_scores_alike() {
    let od = balanced(4.84, 4.0, 48.40, 90.0);
    let spot = balanced(1.45, 4.0, 14.50, 90.0);
    assert!(close(od.score(), spot.score(), 0.01));
    assert!(od.passes() && spot.passes());
}

// =======================================================================================
// staticdrift_test.go
// =======================================================================================

/// A static NodePool `name` with `spec` lines (e.g. `limits:`) and `n` drifted empty nodes of
/// the most expensive type, named `<name>-<i>`. A scenario refuses `spec.replicas` (static pools
/// launch nothing for pods), so the pool is written without it; [`static_cluster`] makes it
/// static in the decision's input as `run` does: its policy is `fixed_size` with its
/// [`StaticSize`] (replicas, `limits.nodes` and its nodes counted), and the pool leaves the
/// launchable pools for [`Input::static_pools`], what its replacements are planned from.
fn static_pool(name: &str, spec: &str, n: usize) -> Vec<String> {
    let mut pool =
        nodepool(name).replace("spec:\n  template:", &format!("spec:\n{spec}  template:"));
    pool.push('\n');
    let mut docs = vec![pool];
    for i in 0..n {
        docs.push(node(&format!("{name}-{i}"), name, MOST_EXPENSIVE, BIG));
    }
    docs
}

/// `docs` with every node drifted, and each pool of `pools` (name, replicas, `limits.nodes`,
/// Drifted budget) static.
fn static_cluster(docs: &[String], pools: &[(&str, u64, Option<u64>, &str)]) -> Cluster {
    let mut c = Cluster::new(docs);
    let all: Vec<String> = c.input.nodes.iter().map(|f| f.name.clone()).collect();
    for n in &all {
        c.facts(n).drifted = true;
    }
    for (pool, replicas, limit, nodes) in pools {
        let active = c
            .input
            .snapshot
            .nodes
            .iter()
            .filter(|n| n.nodepool.as_deref() == Some(*pool))
            .count() as u64;
        let p = c
            .input
            .policies
            .iter_mut()
            .find(|p| p.nodepool == *pool)
            .unwrap();
        p.fixed_size = true;
        p.consolidate_after = None;
        p.budgets = vec![reason_budget(nodes, &[Reason::Drifted])];
        p.static_size = Some(StaticSize {
            replicas: *replicas,
            node_limit: *limit,
            active,
            leaving: 0,
        });
        let i = (c.input.snapshot.nodepools.iter())
            .position(|np| np.name == *pool)
            .unwrap();
        let mut np = c.input.snapshot.nodepools.remove(i);
        np.limits.clear();
        c.input.static_pools.push(np);
    }
    c
}

fn drifts_per_pool(c: &Cluster) -> std::collections::BTreeMap<String, usize> {
    drifts_per_pool_with(c, &Options::default())
}

fn drifts_per_pool_with(
    c: &Cluster,
    options: &Options,
) -> std::collections::BTreeMap<String, usize> {
    let mut out = std::collections::BTreeMap::new();
    for d in disruption::decide_all(&c.input, options, true, 1000) {
        assert_eq!(d.reason, Reason::Drifted);
        *out.entry(d.nodes[0].nodepool.clone()).or_insert(0) += d.nodes.len();
    }
    out
}

/// Karpenter's `TerminateFirstDrift` gate on.
fn terminate_first() -> Options {
    Options {
        terminate_first_drift: true,
        ..Options::default()
    }
}

/// StaticDrift > Budgets > should respect disruption budgets (Nodes Count) for static drift
/// StaticDrift > Budgets > should respect disruption budgets (Nodes Percentage) for static drift
#[test]
fn static_drift_within_the_budget() {
    let c = static_cluster(&static_pool("static", "", 5), &[("static", 5, None, "2")]);
    assert_eq!(drifts_per_pool(&c)["static"], 2);
    let c = static_cluster(&static_pool("static", "", 5), &[("static", 5, None, "20%")]);
    assert_eq!(drifts_per_pool(&c)["static"], 1);
}

/// StaticDrift > Budgets > should respect budgets for multiple static nodepools
#[test]
fn static_drift_budgets_per_pool() {
    let mut docs = static_pool("static-1", "", 2);
    docs.extend(static_pool("static-2", "", 2));
    docs.extend(static_pool("static-3", "", 2));
    let c = static_cluster(
        &docs,
        &[
            ("static-1", 4, None, "1"),
            ("static-2", 3, None, "2"),
            ("static-3", 2, None, "100%"),
        ],
    );
    let per_pool = drifts_per_pool(&c);
    assert_eq!(
        per_pool.values().copied().collect::<Vec<_>>(),
        [1, 2, 2],
        "{per_pool:?}"
    );
}

/// StaticDrift > Limits and Scaling > should drift nodes when we can acquire limits
/// StaticDrift > Edge Cases > should handle missing node limits gracefully
#[test]
fn static_drift_with_room_under_the_limit() {
    let c = static_cluster(
        &static_pool("static", "  limits: {nodes: 5}\n", 2),
        &[("static", 5, Some(5), "100%")],
    );
    assert_eq!(drifts_per_pool(&c)["static"], 2);
    let c = static_cluster(
        &static_pool("static", "", 5),
        &[("static", 5, None, "100%")],
    );
    let ds = c.decide_all();
    assert_eq!(ds.len(), 5);
    // Each launches one node of the pool first.
    assert!(ds.iter().all(|d| d.action() == Action::Replace
        && d.plan.new_claims.len() == 1
        && d.plan.new_claims[0].nodepool == "static"));
}

/// StaticDrift > Limits and Scaling > should not drift nodes when we cannot acquire limits
/// StaticDrift > Limits and Scaling > should drift partially when we can acquire some limits
/// StaticDrift > Limits and Scaling > should keep drifting partially when we can acquire some limits for each reconcile
#[test]
fn static_drift_replaces_first_within_the_limit() {
    let at_limit = static_cluster(
        &static_pool("static", "  limits: {nodes: 5}\n", 5),
        &[("static", 5, Some(5), "100%")],
    );
    assert!(at_limit.decide_all().is_empty());
    let two_spare = static_cluster(
        &static_pool("static", "  limits: {nodes: 7}\n", 5),
        &[("static", 5, Some(7), "100%")],
    );
    assert_eq!(drifts_per_pool(&two_spare)["static"], 2);
    // One spare: one node per pass, the pool never over its limit; once a replacement is
    // up and the old node gone, the next pass takes the next one.
    let mut one_spare = static_cluster(
        &static_pool("static", "  limits: {nodes: 6}\n", 5),
        &[("static", 5, Some(6), "100%")],
    );
    let mut taken = std::collections::BTreeSet::new();
    for pass in 0..5 {
        let ds = one_spare.decide_all();
        assert_eq!(ds.len(), 1, "pass {pass}");
        assert_eq!(ds[0].action(), Action::Replace);
        let gone = ds[0].nodes[0].name.clone();
        assert!(taken.insert(gone.clone()), "{gone} taken twice");
        // Carried out: in the node's place an undrifted one, the pool at 5 again.
        one_spare.facts(&gone).drifted = false;
    }
    assert!(one_spare.decide_all().is_empty());
}

/// StaticDrift > Limits and Scaling > should wait until nodes are deprovisioned when we are overscaled
/// StaticDrift > Edge Cases > should handle zero replicas
#[test]
fn static_drift_waits_while_overscaled() {
    let mut docs = static_pool("static", "", 2);
    docs.push(bound("busy", "static-0", "cpu: 1", "{app: test}"));
    let mut overscaled = static_cluster(&docs, &[("static", 1, None, "100%")]);
    assert!(overscaled.decide_all().is_empty());
    // The scaler removed the extra (the empty node): the other is drifted now.
    overscaled.facts("static-1").disrupting = true;
    overscaled.input.policies[0].static_size = Some(StaticSize {
        replicas: 1,
        node_limit: None,
        active: 1,
        leaving: 1,
    });
    let ds = overscaled.decide_all();
    assert_eq!(ds.len(), 1);
    assert_eq!(ds[0].node_names(), ["static-0"]);
    assert_eq!(ds[0].action(), Action::Replace);
    let zero = static_cluster(
        &static_pool("static", "", 1),
        &[("static", 0, None, "100%")],
    );
    assert!(zero.decide_all().is_empty());
}

/// StaticDrift > Multiple NodePools > should handle drift for multiple static NodePools independently
#[test]
fn static_drift_pools_independently() {
    let mut docs = static_pool("nodepool-1", "", 2);
    docs.extend(static_pool("nodepool-2", "  limits: {nodes: 2}\n", 2));
    docs.extend(static_pool("nodepool-3", "", 2));
    let c = static_cluster(
        &docs,
        &[
            ("nodepool-1", 3, None, "100%"),
            ("nodepool-2", 2, Some(2), "100%"),
            ("nodepool-3", 2, None, "100%"),
        ],
    );
    let per_pool = drifts_per_pool(&c);
    assert_eq!(per_pool.get("nodepool-1"), Some(&2), "{per_pool:?}");
    assert_eq!(per_pool.get("nodepool-2"), None, "{per_pool:?}");
    assert_eq!(per_pool.get("nodepool-3"), Some(&2), "{per_pool:?}");
}

/// StaticDrift > Edge Cases > should ignore nodes without the drifted status condition
/// StaticDrift > Edge Cases > should ignore nodes with the drifted status condition set to false
/// StaticDrift > Edge Cases > should ignore nodes with the karpenter.sh/do-not-disrupt annotation
#[test]
fn static_drift_ignores_undrifted_and_protected_nodes() {
    let mut c = static_cluster(
        &static_pool("static", "", 1),
        &[("static", 1, None, "100%")],
    );
    c.facts("static-0").drifted = false;
    assert!(c.decide_all().is_empty());
    c.facts("static-0").drifted = true;
    c.facts("static-0").do_not_disrupt = true;
    assert!(c.decide_all().is_empty());
}

// =======================================================================================
// terminatefirst_test.go
// =======================================================================================

/// TerminateFirstDrift > StaticDrift > issues a delete-only command for a static NodePool at its node limit when TerminateFirstDrift is enabled
#[test]
fn terminate_first_at_the_limit_deletes_only() {
    let c = static_cluster(
        &static_pool("static", "  limits: {nodes: 1}\n", 1),
        &[("static", 1, Some(1), "100%")],
    );
    let ds = disruption::decide_all(&c.input, &terminate_first(), true, 1000);
    assert_eq!(ds.len(), 1);
    assert_eq!(ds[0].action(), Action::Delete);
    assert!(ds[0].plan.new_claims.is_empty());
    // Without the gate it waits for room.
    assert!(c.decide_all().is_empty());
}

/// TerminateFirstDrift > StaticDrift > replaces-first for a static NodePool below its node limit even when TerminateFirstDrift is enabled
/// TerminateFirstDrift > StaticDrift > replaces-first for a static NodePool when TerminateFirstDrift is disabled
#[test]
fn terminate_first_replaces_first_below_the_limit() {
    let c = static_cluster(
        &static_pool("static", "  limits: {nodes: 2}\n", 1),
        &[("static", 1, Some(2), "100%")],
    );
    for options in [terminate_first(), Options::default()] {
        let ds = disruption::decide_all(&c.input, &options, true, 1000);
        assert_eq!(ds.len(), 1);
        assert_eq!(ds[0].action(), Action::Replace);
        assert_eq!(ds[0].plan.new_claims.len(), 1);
    }
    let unlimited = static_cluster(
        &static_pool("static", "", 1),
        &[("static", 1, None, "100%")],
    );
    let ds = unlimited.decide_all();
    assert_eq!((ds.len(), ds[0].action()), (1, Action::Replace));
}

// Capacity reservations (terminatefirst_test.go's *Capacity Reservations* and *Drift/Reserved*).
// Karpenter's fake adds a reserved offering to its most expensive type; here the class's
// status lists the reservation, which Adze turns into that `reserved` offering, priced from
// the type's on-demand price and unavailable once it has no slot left.

/// The reservation every case puts the drifted node in.
const RESERVATION: &str = "r-most";
const RESERVATION_ID: &str = "aws.adze.sh/capacity-reservation-id";

/// The `default` EC2NodeClass, its status listing these reservations (id, type, slots left),
/// all in test-zone-1.
fn class_with(reservations: &[(&str, &str, i64)]) -> String {
    let mut s = String::from(
        "apiVersion: aws.adze.sh/v1\nkind: EC2NodeClass\nmetadata: {name: default}\nspec:\n  amiSelectorTerms: [{alias: al2023@latest}]\n  role: NodeRole\n  subnetSelectorTerms: [{tags: {discovery: test}}]\n  securityGroupSelectorTerms: [{tags: {discovery: test}}]\nstatus:\n  capacityReservations:\n",
    );
    for (id, itype, left) in reservations {
        s.push_str(&format!(
            "    - {{id: {id}, instanceType: {itype}, availabilityZone: test-zone-1, availableInstanceCount: {left}, reservationType: default}}\n"
        ));
    }
    s
}

/// The reservation of the most expensive type with `left` slots.
fn reservation_class(left: i64) -> String {
    class_with(&[(RESERVATION, MOST_EXPENSIVE, left)])
}

/// A NodePool limited to the most expensive type in these capacity types (`spec` before the
/// template, as in [`static_pool`]).
fn reserved_pool(name: &str, spec: &str, capacity_types: &str) -> String {
    let mut pool = format!(
        "apiVersion: adze.sh/v1\nkind: NodePool\nmetadata:\n  name: {name}\nspec:\n{spec}  template:\n    spec:\n      nodeClassRef: {{group: aws.adze.sh, kind: EC2NodeClass, name: default}}\n      requirements:\n        - {{key: {ITYPE}, operator: In, values: [{MOST_EXPENSIVE}]}}\n        - {{key: {CT}, operator: In, values: [{capacity_types}]}}\n"
    );
    pool.push('\n');
    pool
}

/// A node of `pool` on the most expensive type in test-zone-1, of capacity type `ct`, with
/// reservation label `reservation` if any.
fn reserved_node(name: &str, pool: &str, ct: &str, reservation: Option<&str>) -> String {
    let id = reservation.map_or(String::new(), |r| format!(", {RESERVATION_ID}: {r}"));
    node_with_labels(
        name,
        &format!(
            "adze.sh/nodepool: {pool}, {ITYPE}: {MOST_EXPENSIVE}, {ZONE}: test-zone-1, {CT}: {ct}{id}"
        ),
        BIG,
    )
}

/// Karpenter's *Capacity Reservations* setup: a static pool of `replicas` with `limits.nodes`
/// `limit`, reserved capacity only, the drifted reserved node `reserved-0` in
/// [`RESERVATION`] with `left` slots, and `more` further nodes.
fn reserved_static(left: i64, replicas: u64, limit: u64, budget: &str, more: &[String]) -> Cluster {
    let mut docs = vec![
        reservation_class(left),
        reserved_pool(
            "static",
            &format!("  limits: {{nodes: {limit}}}\n"),
            "reserved",
        ),
        reserved_node("reserved-0", "static", "reserved", Some(RESERVATION)),
    ];
    docs.extend(more.iter().cloned());
    static_cluster(&docs, &[("static", replicas, Some(limit), budget)])
}

fn drift_decisions(c: &Cluster, options: &Options) -> Vec<Decision> {
    disruption::decide_all(&c.input, options, false, 1000)
}

/// Every offering of the most expensive type not `reserved`, in every pool, made unavailable.
fn on_demand_unavailable(c: &mut Cluster) {
    let pools = c
        .input
        .snapshot
        .nodepools
        .iter_mut()
        .chain(c.input.static_pools.iter_mut());
    for p in pools {
        for t in p
            .instance_types
            .iter_mut()
            .filter(|t| t.name == MOST_EXPENSIVE)
        {
            let t = std::sync::Arc::make_mut(t);
            for o in t
                .offerings
                .iter_mut()
                .filter(|o| o.capacity_type != "reserved")
            {
                o.available = false;
            }
            t.refresh_offering_requirements();
        }
    }
}

/// A launch into the most expensive type's reservations in test-zone-1 failed lately (as the
/// catalog records it: an unavailable `reserved` offering without a reservation), so the
/// reservation is unavailable for more than being full.
fn reservation_failing(c: &mut Cluster) {
    for p in c.input.snapshot.nodepools.iter_mut() {
        for t in p
            .instance_types
            .iter_mut()
            .filter(|t| t.name == MOST_EXPENSIVE)
        {
            let t = std::sync::Arc::make_mut(t);
            let mut marker = t
                .offerings
                .iter()
                .find(|o| o.reservation.is_some())
                .expect("the reserved offering")
                .clone();
            marker.reservation = None;
            marker.available = false;
            t.offerings.push(marker);
            t.refresh_offering_requirements();
        }
    }
}

/// TerminateFirstDrift > StaticDrift > Capacity Reservations > issues a delete-only command when the reservation is full
/// TerminateFirstDrift > StaticDrift > Capacity Reservations > treats the reservations as full when only an instance type outside the template has capacity
#[test]
fn terminate_first_full_reservation_deletes_only() {
    let c = reserved_static(0, 1, 2, "100%", &[]);
    let ds = drift_decisions(&c, &terminate_first());
    assert_eq!(ds.len(), 1);
    assert_eq!(ds[0].action(), Action::Delete, "{}", ds[0].message);
    assert_eq!(ds[0].node_names(), ["reserved-0"]);
    // Another type's reservation with room is no slot for this template.
    let mut docs = vec![
        class_with(&[
            (RESERVATION, MOST_EXPENSIVE, 0),
            ("r-other", LEAST_EXPENSIVE, 1),
        ]),
        reserved_pool("static", "  limits: {nodes: 2}\n", "reserved"),
        reserved_node("reserved-0", "static", "reserved", Some(RESERVATION)),
    ];
    let c = static_cluster(&docs, &[("static", 1, Some(2), "100%")]);
    let ds = drift_decisions(&c, &terminate_first());
    assert_eq!((ds.len(), ds[0].action()), (1, Action::Delete));
    // The same with a slot left in its own reservation replaces first.
    docs[0] = class_with(&[
        (RESERVATION, MOST_EXPENSIVE, 1),
        ("r-other", LEAST_EXPENSIVE, 1),
    ]);
    let c = static_cluster(&docs, &[("static", 1, Some(2), "100%")]);
    assert_eq!(
        drift_decisions(&c, &terminate_first())[0].action(),
        Action::Replace
    );
}

/// TerminateFirstDrift > StaticDrift > Capacity Reservations > replaces-first when the template's on-demand offerings are unavailable
#[test]
fn terminate_first_waits_for_an_unavailable_on_demand_fallback() {
    let mut c = {
        let docs = vec![
            reservation_class(0),
            reserved_pool("static", "  limits: {nodes: 2}\n", "reserved, on-demand"),
            reserved_node("reserved-0", "static", "reserved", Some(RESERVATION)),
        ];
        static_cluster(&docs, &[("static", 1, Some(2), "100%")])
    };
    // With the fallback available the replacement is on demand, launched first.
    let ds = drift_decisions(&c, &terminate_first());
    assert_eq!((ds.len(), ds[0].action()), (1, Action::Replace));
    assert_eq!(ds[0].plan.new_claims[0].capacity_type, "on-demand");
    // Unavailable for now: Karpenter launches a claim anyway (replace-first); Adze plans no
    // claim that nothing could launch and waits, and never deletes first while a fallback
    // exists.
    on_demand_unavailable(&mut c);
    assert!(drift_decisions(&c, &terminate_first()).is_empty());
}

/// TerminateFirstDrift > StaticDrift > Capacity Reservations > terminates first the candidate holding an offered reservation slot ahead of those that don't
#[test]
fn terminate_first_takes_the_node_holding_an_offered_slot() {
    // Twenty nodes of a reservation the class no longer lists, named to sort first.
    let canceled: Vec<String> = (0..20)
        .map(|i| {
            reserved_node(
                &format!("canceled-{i:02}"),
                "static",
                "reserved",
                Some("r-canceled"),
            )
        })
        .collect();
    let mut c = reserved_static(0, 21, 22, "1", &canceled);
    c.facts("reserved-0").created = CREATED + 60;
    let ds = drift_decisions(&c, &terminate_first());
    assert_eq!(ds.len(), 1);
    assert_eq!(ds[0].action(), Action::Delete);
    assert_eq!(ds[0].node_names(), ["reserved-0"]);
}

/// TerminateFirstDrift > StaticDrift > Capacity Reservations > blocks a non-reserved node carrying a stale reservation label when the reservations are full
/// TerminateFirstDrift > StaticDrift > Capacity Reservations > blocks a node whose reservation is no longer offered when the reservations are full
#[test]
fn terminate_first_blocks_a_node_that_frees_no_offered_slot() {
    for (ct, id) in [("on-demand", RESERVATION), ("reserved", "r-canceled")] {
        let docs = vec![
            reservation_class(0),
            reserved_pool("static", "  limits: {nodes: 2}\n", "reserved"),
            reserved_node("reserved-0", "static", ct, Some(id)),
        ];
        let c = static_cluster(&docs, &[("static", 1, Some(2), "100%")]);
        assert!(
            drift_decisions(&c, &terminate_first()).is_empty(),
            "{ct} {id}"
        );
    }
}

/// TerminateFirstDrift > StaticDrift > Capacity Reservations > replaces-first when the reservation has capacity
#[test]
fn terminate_first_replaces_first_into_a_reservation_with_room() {
    let c = reserved_static(1, 1, 2, "100%", &[]);
    let ds = drift_decisions(&c, &terminate_first());
    assert_eq!((ds.len(), ds[0].action()), (1, Action::Replace));
    assert_eq!(ds[0].plan.new_claims.len(), 1);
    assert_eq!(ds[0].plan.new_claims[0].capacity_type, "reserved");
}

/// TerminateFirstDrift > StaticDrift > Capacity Reservations > replaces-first regardless of the reservation when TerminateFirstDrift is disabled
#[test]
fn terminate_first_off_waits_on_a_full_reservation() {
    // Karpenter launches a claim into the full reservation first; Adze plans none (nothing
    // could launch it) and the node waits.
    let c = reserved_static(0, 1, 2, "100%", &[]);
    assert!(drift_decisions(&c, &Options::default()).is_empty());
}

/// TerminateFirstDrift > StaticDrift > Capacity Reservations > only terminates reserved candidates first when the reservation is full
#[test]
fn terminate_first_deletes_only_the_reserved_node() {
    let od = reserved_node("on-demand-0", "static", "on-demand", None);
    let c = reserved_static(0, 2, 3, "100%", &[od]);
    let ds = drift_decisions(&c, &terminate_first());
    assert_eq!(ds.len(), 1);
    assert_eq!(ds[0].action(), Action::Delete);
    assert_eq!(ds[0].node_names(), ["reserved-0"]);
}

/// Karpenter's *Drift/Reserved* setup: an ordinary pool of the most expensive type in these
/// capacity types, the drifted reserved node `reserved-0` in [`RESERVATION`] with `left`
/// slots, holding the pods `pods` (documents), and `more` documents.
fn reserved_drift(left: i64, capacity_types: &str, pods: &[String], more: &[String]) -> Cluster {
    let mut docs = vec![
        reservation_class(left),
        reserved_pool("reserved", "", capacity_types),
        reserved_node("reserved-0", "reserved", "reserved", Some(RESERVATION)),
    ];
    docs.extend(pods.iter().cloned());
    docs.extend(more.iter().cloned());
    let mut c = Cluster::new(&docs);
    c.facts("reserved-0").drifted = true;
    c
}

fn one_pod() -> Vec<String> {
    vec![bound("p", "reserved-0", "cpu: 1", "{app: test}")]
}

/// TerminateFirstDrift > Drift/Reserved > issues a delete-only command when the reservation is full and there is no fallback
/// TerminateFirstDrift > Drift/Reserved > does NOT drift when TerminateFirstDrift is disabled and the reservation is full with no fallback (Blocked)
#[test]
fn reserved_drift_full_without_fallback_deletes_first() {
    let c = reserved_drift(0, "reserved", &one_pod(), &[]);
    let ds = drift_decisions(&c, &terminate_first());
    assert_eq!(ds.len(), 1);
    assert_eq!(ds[0].action(), Action::Delete, "{}", ds[0].message);
    assert_eq!(ds[0].node_names(), ["reserved-0"]);
    assert!(!ds[0].plan.placements().contains_key("default/p"));
    // Gate off: blocked.
    assert!(drift_decisions(&c, &Options::default()).is_empty());
}

/// TerminateFirstDrift > Drift/Reserved > does NOT terminate-first when more reschedulable pods need the reservation than the freed slot can hold
#[test]
fn reserved_drift_not_when_the_pods_need_more_than_the_freed_slot() {
    let apart = |name: &str| {
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: default\n  labels: {{spread: x}}\nspec:\n  nodeName: reserved-0\n  affinity:\n    podAntiAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n        - topologyKey: kubernetes.io/hostname\n          labelSelector: {{matchLabels: {{spread: x}}}}\n  containers:\n    - name: app\n      image: nginx\n      resources:\n        requests: {{cpu: 1}}\n"
        )
    };
    let c = reserved_drift(0, "reserved", &[apart("a"), apart("b")], &[]);
    assert!(drift_decisions(&c, &terminate_first()).is_empty());
    // One such pod fits the freed slot.
    let c = reserved_drift(0, "reserved", &[apart("a")], &[]);
    assert_eq!(drift_decisions(&c, &terminate_first()).len(), 1);
}

/// TerminateFirstDrift > Drift/Reserved > does NOT terminate-first when the reservation is full AND otherwise unavailable (something else wrong)
#[test]
fn reserved_drift_not_when_the_reservation_is_failing() {
    let mut c = reserved_drift(0, "reserved", &one_pod(), &[]);
    reservation_failing(&mut c);
    assert!(drift_decisions(&c, &terminate_first()).is_empty());
}

/// TerminateFirstDrift > Drift/Reserved > replaces-first when the reservation is full but an on-demand fallback exists
/// TerminateFirstDrift > Drift/Reserved > replaces-first when the reservation still has a spare slot
#[test]
fn reserved_drift_replaces_first_with_a_fallback_or_a_slot() {
    let c = reserved_drift(0, "reserved, on-demand", &one_pod(), &[]);
    let ds = drift_decisions(&c, &terminate_first());
    assert_eq!((ds.len(), ds[0].action()), (1, Action::Replace));
    assert_eq!(ds[0].plan.new_claims[0].capacity_type, "on-demand");
    let c = reserved_drift(5, "reserved", &one_pod(), &[]);
    let ds = drift_decisions(&c, &terminate_first());
    assert_eq!((ds.len(), ds[0].action()), (1, Action::Replace));
    assert_eq!(ds[0].plan.new_claims[0].capacity_type, "reserved");
}

/// TerminateFirstDrift > Drift/Reserved > weighted: a full-but-healthy reserved NodePool replaces-first onto a lower-weight on-demand NodePool (does NOT terminate-first)
/// TerminateFirstDrift > Drift/Reserved > weighted: an unavailable reserved NodePool replaces-first onto a lower-weight on-demand NodePool
#[test]
fn reserved_drift_falls_through_to_a_lower_weight_on_demand_pool() {
    let od = nodepool("on-demand")
        .replace("values: [spot, on-demand]", "values: [on-demand]")
        .replace("spec:\n  template:", "spec:\n  weight: 1\n  template:");
    for failing in [false, true] {
        let mut c = reserved_drift(0, "reserved", &one_pod(), std::slice::from_ref(&od));
        c.input
            .snapshot
            .nodepools
            .iter_mut()
            .filter(|p| p.name == "reserved")
            .for_each(|p| p.weight = 100);
        if failing {
            reservation_failing(&mut c);
        }
        let ds = drift_decisions(&c, &terminate_first());
        assert_eq!(
            (ds.len(), ds[0].action()),
            (1, Action::Replace),
            "{failing}"
        );
        assert_eq!(ds[0].plan.new_claims[0].capacity_type, "on-demand");
        assert_eq!(ds[0].plan.new_claims[0].nodepool, "on-demand");
    }
}

/// Consolidation's *Reserved Capacity* setup: a NodePool that may use reservations, spot
/// and on demand; node `n0` of the most expensive type in test-zone-1 as capacity type `ct`
/// (in [`RESERVATION`] when `reserved`), holding a pod that asks for nothing; the class lists
/// `reservations`.
fn reserved_consolidation(ct: &str, reservations: &[(&str, &str, i64)]) -> Cluster {
    let pool = nodepool("default").replace(
        "values: [spot, on-demand]",
        "values: [reserved, spot, on-demand]",
    );
    let reservation = (ct == "reserved").then_some(RESERVATION);
    let itype = if ct == "spot" {
        MOST_EXPENSIVE_SPOT
    } else {
        MOST_EXPENSIVE
    };
    let labels = format!(
        "adze.sh/nodepool: default, {ITYPE}: {itype}, {ZONE}: test-zone-1, {CT}: {ct}{}",
        reservation.map_or(String::new(), |r| format!(", {RESERVATION_ID}: {r}"))
    );
    Cluster::new(&[
        class_with(reservations),
        pool,
        node_with_labels("n0", &labels, BIG),
        bound("p", "n0", "", "{app: test}"),
    ])
}

/// Consolidation > Reserved Capacity > can consolidate from one reserved offering to another
#[test]
fn consolidation_from_one_reservation_to_a_cheaper_one() {
    let c = reserved_consolidation(
        "reserved",
        &[(RESERVATION, MOST_EXPENSIVE, 0), ("r-least", FITS_SMALL, 1)],
    );
    let d = c.decide().expect("a cheaper reservation has a slot");
    assert_eq!(d.action(), Action::Replace, "{}", d.message);
    let claim = &d.plan.new_claims[0];
    assert_eq!(claim.capacity_type, "reserved");
    assert_eq!(claim.instance_type, FITS_SMALL);
    assert_eq!(
        claim.labels.get(RESERVATION_ID).map(String::as_str),
        Some("r-least"),
        "{:?}",
        claim.labels
    );
    assert!(d.replacement_price < d.removed_price);
}

/// Consolidation > Reserved Capacity > can consolidate into reserved capacity for the same instance pool (from on-demand)
/// Consolidation > Reserved Capacity > can consolidate into reserved capacity for the same instance pool (from spot)
#[test]
fn consolidation_into_a_reservation_of_the_same_type() {
    for (ct, itype) in [("on-demand", MOST_EXPENSIVE), ("spot", MOST_EXPENSIVE_SPOT)] {
        // The reservation is for the node's own instance type in its zone.
        let c = reserved_consolidation(ct, &[(RESERVATION, itype, 1)]);
        let d = c.decide().expect("the reservation is cheaper");
        assert_eq!(d.action(), Action::Replace, "{ct}: {}", d.message);
        let claim = &d.plan.new_claims[0];
        assert_eq!(
            (claim.capacity_type.as_str(), claim.instance_type.as_str()),
            ("reserved", itype),
            "{ct}"
        );
        assert_eq!(claim.zone, "test-zone-1");
    }
}

// =======================================================================================
// balanced_scoring_test.go (pool totals and per-pool scores, on `balanced_score`)
// =======================================================================================

/// `n` nodes of pool `pool` (the 4-CPU type), each with one pod, named `<pool>-<i>`.
fn pool_of(pool: &str, n: usize) -> Vec<String> {
    let mut docs = vec![nodepool(pool)];
    for i in 0..n {
        let name = format!("{pool}-{i}");
        docs.push(node(&name, pool, "4-cpu-16-mem-test-zone-1-on-demand", BIG));
        docs.push(bound(&format!("{name}-p"), &name, "", "{app: test}"));
    }
    docs
}

/// The score for `pool` of deleting `nodes` (no replacement).
fn score_of_deleting(
    c: &Cluster,
    pool: &str,
    nodes: &[&str],
) -> disruption::consolidation::BalancedScore {
    let (cands, _) = disruption::candidates::candidates(&c.input);
    let set: Vec<&disruption::Candidate> = cands
        .iter()
        .filter(|x| nodes.contains(&x.name.as_str()))
        .collect();
    assert_eq!(set.len(), nodes.len());
    disruption::consolidation::balanced_score(&c.input, pool, &set, 0.0)
}

/// Balanced Scoring > computeNodePoolTotals > should produce totals from ALL candidates, not just a filtered subset
/// Balanced Scoring > EvaluateBalancedMove > should approve a delete command for a single Balanced NodePool
#[test]
fn balanced_totals_cover_the_whole_pool() {
    let c = Cluster::new(&pool_of("a", 5));
    let s = score_of_deleting(&c, "a", &["a-0"]);
    // one of five nodes: a fifth of the cost, and 2 (node + pod) of 10 disruption
    assert!(close(s.savings_fraction, 0.2, 1e-9));
    assert!(close(s.disruption_fraction, 0.2, 1e-9));
    let ten = Cluster::new(&pool_of("a", 10));
    let s = score_of_deleting(&ten, "a", &["a-0"]);
    assert!(close(s.score(), 1.0, 0.05) && s.passes());
}

/// Balanced Scoring > computeNodePoolTotals > should accumulate disruption from zero-priced candidates
/// Balanced Scoring > sumCandidatePrices > should return 0 for nil instanceType
/// Balanced Scoring > sumCandidatePrices > should return the offering price for a valid instanceType
#[test]
fn balanced_totals_count_unpriced_nodes_for_disruption() {
    let mut docs = pool_of("b", 2);
    docs.push(node_with_labels(
        "b-unknown",
        &format!(
            "adze.sh/nodepool: b, {ITYPE}: no-such-type, {ZONE}: test-zone-1, {CT}: on-demand"
        ),
        BIG,
    ));
    docs.push(bound("b-unknown-p", "b-unknown", "", "{app: test}"));
    let c = Cluster::new(&docs);
    let (cands, blocked) = disruption::candidates::candidates(&c.input);
    let price = |n: &str| cands.iter().find(|x| x.name == n).unwrap().price;
    // The unknown type prices the node at 0: no candidate, but still in the pool's totals.
    assert!(matches!(
        blocked.iter().find(|(n, _)| n == "b-unknown"),
        Some((_, disruption::Blocker::Unresolvable(_)))
    ));
    assert!(close(price("b-0"), fake_price(4, 16), 1e-9));
    // deleting a priced node: half the priced cost, 2 of 6 disruption
    let s = score_of_deleting(&c, "b", &["b-0"]);
    assert!(close(s.savings_fraction, 0.5, 1e-9));
    assert!(close(s.disruption_fraction, 2.0 / 6.0, 1e-9));
}

/// Balanced Scoring > EvaluateBalancedMove > should attribute savings proportionally in cross-NodePool scenarios
#[test]
fn balanced_cross_pool_savings_are_shared_by_price() {
    let mut docs = pool_of("balanced", 5);
    docs.extend(pool_of("other", 5));
    let c = Cluster::new(&docs);
    let s = score_of_deleting(&c, "balanced", &["balanced-0", "other-0"]);
    assert!(close(s.score(), 1.0, 0.05), "{}", s.score());
    assert!(s.passes());
}

/// Balanced Scoring > ScoreMove (SavingsRatio) > should compute correct scores: a move
/// against pool totals of 100 (cost) and 100 (disruption), k = 2, for each table entry
/// whose move has some disruption (the zero-disruption entry is
/// `balanced_zero_disruption_scores_zero`).
#[test]
fn balanced_score_move_table() {
    // (savings, disruption) → (score, passes)
    let entries = [
        ((20.0, 5.0), (4.0, true)),   // high savings, low disruption
        ((10.0, 10.0), (1.0, true)),  // equal fractions
        ((5.0, 50.0), (0.10, false)), // low savings, high disruption
        ((0.0, 10.0), (0.0, false)),  // zero savings
        ((-5.0, 10.0), (0.0, false)), // negative savings
    ];
    for ((savings, cost), (score, passes)) in entries {
        let s = balanced(savings, cost, 100.0, 100.0);
        assert!(
            close(s.score(), score, 0.01),
            "{savings}/{cost}: {}",
            s.score()
        );
        assert_eq!(s.passes(), passes, "{savings}/{cost}");
    }
}

/// Balanced Scoring > ShouldDisrupt > should accept Balanced candidates
/// Balanced Scoring > ShouldDisrupt > should accept WhenEmptyOrUnderutilized candidates
#[test]
fn balanced_and_underutilized_pools_both_consolidate() {
    for policy in [
        ConsolidationPolicy::Balanced,
        ConsolidationPolicy::WhenEmptyOrUnderutilized,
    ] {
        let mut c = one_with_a_pod(MOST_EXPENSIVE);
        c.policies(|p| p.consolidation = policy);
        let (cands, blocked) = disruption::candidates::candidates(&c.input);
        assert!(blocked.is_empty(), "{policy:?}: {blocked:?}");
        assert!(disruption::consolidatable(
            &c.input.policies[0],
            &cands[0].facts,
            NOW
        ));
        let d = c.decide().expect("a decision");
        assert_eq!(d.reason, Reason::Underutilized, "{policy:?}");
        assert_eq!(removed(&d), ["n0"]);
    }
    // WhenEmpty takes no node with pods.
    let mut c = one_with_a_pod(MOST_EXPENSIVE);
    c.policies(|p| p.consolidation = ConsolidationPolicy::WhenEmpty);
    assert!(c.decide().is_none());
}

/// Balanced Scoring > Candidate.SavingsRatio > should compute expected ratios for different configurations
/// Balanced Scoring > sortCandidates > should sort Balanced candidates by savings ratio (highest first)
/// Balanced Scoring > sortCandidates > should sort non-Balanced candidates by savings ratio descending
/// Balanced Scoring > sortCandidates > should sort all candidates by savings ratio when any uses Balanced
///
/// Karpenter orders candidates by price over disruption cost (1 + the pods' eviction costs),
/// highest first; Adze orders them emptiest first. `cheap` (a 32-CPU/32Gi node, 0.3% used,
/// one pod: ratio 6.6/2) and `dear` (the 64-CPU type, 6.25% used, two pods: ratio 20.1/3):
/// with a budget of one node, Karpenter's order tries `dear` first, Adze's `cheap` (either
/// move also passes the Balanced score).
#[test]
fn consolidation_order_is_emptiest_first_not_by_savings_ratio() {
    for policy in [
        ConsolidationPolicy::Balanced,
        ConsolidationPolicy::WhenEmptyOrUnderutilized,
    ] {
        let mut c = Cluster::new(&[
            nodepool("default"),
            node_with_labels("room", &format!("{ZONE}: test-zone-1"), BIG),
            node(
                "cheap",
                "default",
                "32-cpu-32-mem-test-zone-1-on-demand",
                "cpu: 32, memory: 32Gi, pods: 100",
            ),
            node("dear", "default", MOST_EXPENSIVE, BIG),
            bound("c0", "cheap", "cpu: 100m", "{app: test}"),
            bound("d0", "dear", "cpu: 1", "{app: test}"),
            bound("d1", "dear", "cpu: 1", "{app: test}"),
        ]);
        c.policies(|p| {
            p.consolidation = policy;
            p.budgets = vec![budget("1")];
        });
        let (cands, _) = disruption::candidates::candidates(&c.input);
        let ratio = |n: &str| {
            let x = cands.iter().find(|x| x.name == n).unwrap();
            x.price / (1.0 + x.pods.len() as f64)
        };
        assert!(ratio("dear") > ratio("cheap"));
        let d = c.decide().expect("a decision");
        assert_eq!(removed(&d), ["cheap"], "{policy:?}: {}", d.message);
    }
}

// =======================================================================================
// savings_threshold_test.go (a NodePool's minSavingsPerDisruptionCost, restated on Adze's
// `disruption::savings` and the consolidation decision that applies it)
// =======================================================================================

/// Savings Threshold > CheckSavingsThreshold > should correctly evaluate threshold
#[test]
fn savings_threshold_check_cases() {
    use disruption::savings::SavingsCheck;
    // (case, price of the removed node, replacement price, disruption cost, threshold,
    // held back)
    let cases = [
        (
            "threshold disabled (0) always passes",
            1.00,
            0.99,
            10.0,
            0.0,
            false,
        ),
        (
            "negative threshold treated as disabled",
            1.00,
            0.99,
            10.0,
            -0.05,
            false,
        ),
        (
            "high savings with low disruption cost passes",
            1.00,
            0.50,
            1.0,
            0.01,
            false,
        ),
        (
            "low savings with high disruption cost fails",
            1.00,
            0.99,
            100.0,
            0.01,
            true,
        ),
        (
            "marginal savings with moderate disruption fails",
            0.10,
            0.099,
            10.0,
            0.01,
            true,
        ),
        (
            "zero disruption cost with good savings passes",
            1.00,
            0.50,
            0.0,
            0.01,
            false,
        ),
        (
            "zero disruption cost with marginal savings fails",
            1.00,
            0.999,
            0.0,
            0.01,
            true,
        ),
        (
            "slightly above threshold passes",
            1.00,
            0.89,
            10.0,
            0.01,
            false,
        ),
        (
            "slightly below threshold fails",
            1.00,
            0.92,
            10.0,
            0.01,
            true,
        ),
        (
            "no savings (equal prices) passes",
            1.00,
            1.00,
            10.0,
            0.01,
            false,
        ),
        ("negative savings passes", 1.00, 1.10, 10.0, 0.01, false),
    ];
    for (case, removed, replacement, cost, threshold, held) in cases {
        let check = SavingsCheck::new(threshold, removed, replacement, cost);
        assert_eq!(!check.passes(), held, "{case}: {check}");
    }
}

/// The check inside the decision: a replacement saving less per unit of disruption cost than
/// the pool's threshold is not taken (and single-node consolidation says why); one saving
/// more is; a move that only deletes is never held back.
#[test]
fn savings_threshold_gates_replacements_in_decide() {
    let free = one_with_a_pod(MOST_EXPENSIVE).decide().expect("a decision");
    assert_eq!(free.action(), Action::Replace);
    // One pod an hour into a 30-day life: disruption cost just under 1, charged as 1.
    let ratio = free.removed_price - free.replacement_price;
    let with = |threshold: f64| {
        let mut c = one_with_a_pod(MOST_EXPENSIVE);
        c.policies(|p| p.min_savings_per_disruption_cost = threshold);
        c
    };
    let held = with(ratio * 1.01);
    assert!(held.decide().is_none());
    match disruption::try_consolidating(&held.input, &Options::default(), "n0") {
        Some(Err(disruption::Invalidated::BelowSavingsThreshold(check))) => {
            assert!(close(check.savings, ratio, 1e-9), "{check}");
            assert_eq!(
                check.disruption_cost,
                disruption::savings::MIN_DISRUPTION_COST
            );
            assert!(!check.passes());
        }
        other => panic!("expected the threshold to hold it back, got {other:?}"),
    }
    let taken = with(ratio * 0.99).decide().expect("a decision");
    assert_eq!(taken.action(), Action::Replace);
    assert!(
        taken.message.contains(">= minSavingsPerDisruptionCost"),
        "{}",
        taken.message
    );
    // Deleting n1 (its pod fits on n0) saves its whole price: no threshold applies.
    let mut c = Cluster::new(&[
        nodepool("default"),
        node("n0", "default", MOST_EXPENSIVE, BIG),
        node("n1", "default", MOST_EXPENSIVE, BIG),
        bound("p", "n0", "", "{app: test}"),
        bound("q", "n1", "", "{app: test}"),
    ]);
    c.policies(|p| p.min_savings_per_disruption_cost = 1_000_000.0);
    let d = c.decide().expect("a decision");
    assert_eq!(d.action(), Action::Delete, "{}", d.message);
}

/// Savings Threshold > GetTotalDisruptionCost > should sum costs for single candidate
/// Savings Threshold > GetTotalDisruptionCost > should sum costs for multiple candidates
/// Savings Threshold > GetTotalDisruptionCost > should return zero for empty candidates
/// Savings Threshold > GetTotalDisruptionCost > should handle zero cost candidates
#[test]
fn savings_threshold_total_disruption_cost() {
    use disruption::savings::total_disruption_cost;
    assert_eq!(total_disruption_cost([5.0]), 5.0);
    assert_eq!(total_disruption_cost([1.0, 2.0, 3.0]), 6.0);
    assert_eq!(total_disruption_cost([]), 0.0);
    assert_eq!(total_disruption_cost([0.0, 0.0]), 0.0);
}

/// Savings Threshold > MinDisruptionCost constant > should be positive
/// Savings Threshold > MinDisruptionCost constant > should equal 1.0 (equivalent to one default pod)
#[test]
fn savings_threshold_min_disruption_cost_is_one_pod() {
    let min = disruption::savings::MIN_DISRUPTION_COST;
    assert!(min > 0.0);
    assert_eq!(min, 1.0);
    // As much as evicting one pod of default priority.
    let pod = adze_scheduling::Pod::new("default", "p", Default::default());
    assert_eq!(disruption::consolidation::pod_disruption_cost(&pod), min);
}

/// An on-demand type in test-zone-1.. with one offering per (price, available).
fn priced_type(name: &str, offerings: &[(f64, bool)]) -> adze_scheduling::InstanceType {
    let offerings = offerings
        .iter()
        .enumerate()
        .map(|(i, &(price, available))| adze_scheduling::Offering {
            zone: format!("test-zone-{}", i + 1),
            zone_id: None,
            capacity_type: "on-demand".to_string(),
            price,
            available,
            reservation: None,
        })
        .collect();
    adze_scheduling::InstanceType::new(
        name,
        adze_scheduling::Resources::new(1000, 1 << 30),
        Default::default(),
        Default::default(),
        offerings,
    )
}

/// Savings Threshold > GetCheapestReplacementPrice > should return cheapest price from first instance type
/// Savings Threshold > GetCheapestReplacementPrice > should return cheapest offering from first type when multiple offerings exist
/// Savings Threshold > GetCheapestReplacementPrice > should return MaxFloat64 for empty instance types
/// Savings Threshold > GetCheapestReplacementPrice > should return MaxFloat64 when no offerings are available
#[test]
fn savings_threshold_cheapest_replacement_price() {
    use disruption::savings::cheapest_replacement_price;
    let any = adze_scheduling::Requirements::default();
    let cheap = priced_type("cheap", &[(0.10, true), (0.15, true)]);
    let expensive = priced_type("expensive", &[(0.50, true)]);
    assert_eq!(
        cheapest_replacement_price(&[&cheap, &expensive], &any),
        Some(0.10)
    );
    // Only the first type is read: the options are ordered cheapest first.
    let first = priced_type("first", &[(0.20, true), (0.10, true), (0.15, true)]);
    let second = priced_type("second", &[(0.05, true)]);
    assert_eq!(
        cheapest_replacement_price(&[&first, &second], &any),
        Some(0.10)
    );
    // Karpenter's MaxFloat64 ("no price"; savings then negative) is None here.
    assert_eq!(cheapest_replacement_price(&[], &any), None);
    let unavailable = priced_type("unavailable", &[(0.10, false)]);
    assert_eq!(cheapest_replacement_price(&[&unavailable], &any), None);
}

/// A NodePool's disruption policy as `run` converts it, with this
/// `minSavingsPerDisruptionCost` (None: unset).
fn pool_with_threshold(name: &str, threshold: Option<&str>) -> Result<PoolPolicy, String> {
    let field = threshold.map_or(String::new(), |t| {
        format!("\n  disruption: {{minSavingsPerDisruptionCost: \"{t}\"}}")
    });
    let pool: adze_api::NodePool = serde_yaml::from_str(&format!(
        "apiVersion: adze.sh/v1\nkind: NodePool\nmetadata: {{name: {name}}}\nspec:\n  template:\n    spec:\n      nodeClassRef: {{group: aws.adze.sh, kind: EC2NodeClass, name: default}}{field}\n"
    ))
    .unwrap();
    adze_api::convert::pool_policy(&pool).map_err(|e| e.to_string())
}

/// The threshold of a move whose nodes belong to these pools.
fn threshold_of(pools: &[Option<&str>]) -> f64 {
    disruption::savings::threshold(pools.iter().enumerate().map(|(i, t)| {
        pool_with_threshold(&format!("p{i}"), *t)
            .unwrap()
            .min_savings_per_disruption_cost
    }))
}

/// Savings Threshold > GetMinSavingsPerDisruptionCost > should return controller default when no candidates
/// Savings Threshold > GetMinSavingsPerDisruptionCost > should return controller default when candidates have nil NodePool
/// Savings Threshold > GetMinSavingsPerDisruptionCost > should return controller default when NodePool has no threshold set
/// Savings Threshold > GetMinSavingsPerDisruptionCost > should return NodePool threshold for single candidate
/// Savings Threshold > GetMinSavingsPerDisruptionCost > should return max threshold for multi-node with same NodePool
/// Savings Threshold > GetMinSavingsPerDisruptionCost > should return max threshold for multi-node with different NodePools
/// Savings Threshold > GetMinSavingsPerDisruptionCost > should use controller default when it's higher than NodePool thresholds
/// Savings Threshold > GetMinSavingsPerDisruptionCost > should handle mixed candidates (some with threshold, some without)
/// Savings Threshold > GetMinSavingsPerDisruptionCost > should handle threshold of 0 (disabled)
#[test]
fn savings_threshold_resolution_across_pools() {
    // No nodes (a node without a NodePool is never a candidate, so it adds nothing either):
    // the default, 0.
    assert_eq!(threshold_of(&[]), 0.0);
    assert_eq!(threshold_of(&[None]), 0.0);
    assert_eq!(threshold_of(&[Some("0.02")]), 0.02);
    assert_eq!(threshold_of(&[Some("0.03"), Some("0.03")]), 0.03);
    assert_eq!(threshold_of(&[Some("0.01"), Some("0.05")]), 0.05);
    // Adze has no controller-wide default to raise it: the floor is 0.
    assert_eq!(threshold_of(&[Some("0.01")]), 0.01);
    assert_eq!(threshold_of(&[Some("0.04"), None]), 0.04);
    assert_eq!(threshold_of(&[Some("0"), Some("0.01")]), 0.01);
}

/// Savings Threshold > GetMinSavingsPerDisruptionCost > should handle invalid threshold strings gracefully
#[test]
fn savings_threshold_invalid_value_is_refused() {
    // Karpenter skips a value it cannot parse; Adze refuses the NodePool, naming the field,
    // so a typo does not silently turn the minimum off.
    for bad in ["not-a-number", "-0.05", "1e-3"] {
        let err = pool_with_threshold("invalid", Some(bad)).unwrap_err();
        assert!(
            err.contains("spec.disruption.minSavingsPerDisruptionCost"),
            "{bad}: {err}"
        );
    }
    assert!(pool_with_threshold("valid", Some("0.02")).is_ok());
}

// =======================================================================================
// balanced_integration_test.go and balanced_adversarial_test.go (pool totals, per-pool
// scores and prices, on `balanced_score` and the consolidation decision, with Karpenter's
// prices: $4.84 and $1.00 types)
// =======================================================================================

/// The catalog of these cases: `m7i.xlarge` at 4.84, `tiny` at 1.00, `nan-instance` (whose
/// price a case turns into NaN after parsing: a scenario refuses one) and `source-type`,
/// whose test-zone-1 offering (1.00) is out of capacity and whose test-zone-2 one costs 5.00.
const PRICED_CATALOG: &str = "apiVersion: adze.sh/v1alpha1\nkind: InstanceCatalog\nmetadata: {name: priced}\ninstanceTypes:\n  - {name: m7i.xlarge, cpu: 4, memory: 16Gi, pods: 110, arch: amd64, offerings: [{zone: test-zone-1, capacityType: on-demand, price: 4.84}]}\n  - {name: tiny, cpu: 4, memory: 16Gi, pods: 110, arch: amd64, offerings: [{zone: test-zone-1, capacityType: on-demand, price: 1.0}]}\n  - {name: nan-instance, cpu: 4, memory: 16Gi, pods: 110, arch: amd64, offerings: [{zone: test-zone-1, capacityType: on-demand, price: 4.84}]}\n  - {name: source-type, cpu: 4, memory: 16Gi, pods: 110, arch: amd64, offerings: [{zone: test-zone-1, capacityType: on-demand, price: 1.0, available: false}, {zone: test-zone-2, capacityType: on-demand, price: 5.0}]}\n";

/// `n` nodes `<pool>-<i>` of `itype` in `pool` (a NodePool document included), each holding
/// `pods` pods that request nothing.
fn priced_pool(pool: &str, itype: &str, n: usize, pods: usize) -> Vec<String> {
    let mut docs = vec![nodepool(pool)];
    for i in 0..n {
        docs.extend(priced_node(&format!("{pool}-{i}"), pool, itype, pods));
    }
    docs
}

/// One node `name` of `itype` in `pool` with `pods` pods that request nothing.
fn priced_node(name: &str, pool: &str, itype: &str, pods: usize) -> Vec<String> {
    let mut docs = vec![node(name, pool, itype, BIG)];
    docs.extend((0..pods).map(|p| bound(&format!("{name}-p{p}"), name, "", "{app: test}")));
    docs
}

/// TestComputeNodePoolTotals_UnfilteredCandidates
///
/// Five $4.84 nodes with a pod each, two of them held by do-not-disrupt (no candidates): the
/// pool's totals still count all five, 24.20 of cost and 10 of disruption (1 per node and 1
/// per pod).
#[test]
fn balanced_totals_count_nodes_that_are_not_candidates() {
    let mut c = Cluster::with_catalog(PRICED_CATALOG, &priced_pool("a", "m7i.xlarge", 5, 1));
    c.facts("a-3").do_not_disrupt = true;
    c.facts("a-4").do_not_disrupt = true;
    let (cands, _) = disruption::candidates::candidates(&c.input);
    assert_eq!(cands.len(), 3);
    let s = score_of_deleting(&c, "a", &["a-0"]);
    assert!(close(s.savings, 4.84, 1e-9));
    assert!(close(s.savings / s.savings_fraction, 5.0 * 4.84, 1e-6));
    // the move disrupts 2 (the node and its pod) of the pool's total
    assert!(close(2.0 / s.disruption_fraction, 10.0, 1e-6));
}

/// TestComputeNodePoolTotals_SkipsZeroPriceCandidates
/// TestCandidatePrice_NilInstanceType
/// Adversarial > should sum candidate costs correctly with nil instanceType
///
/// Two $4.84 nodes and one whose type Adze does not know (Karpenter's nil instance type),
/// each with a pod: the unknown one is priced 0, so the pool costs 9.68. Karpenter's
/// integration case (commit 06a011d) leaves that node out of the disruption total too (4);
/// its later scoring case, which Adze follows (`balanced_totals_count_unpriced_nodes_for_disruption`),
/// counts it: 6.
#[test]
fn balanced_unknown_type_costs_nothing_but_disrupts() {
    let mut docs = priced_pool("b", "m7i.xlarge", 2, 1);
    docs.push(node_with_labels(
        "b-nil",
        &format!(
            "adze.sh/nodepool: b, {ITYPE}: no-such-type, {ZONE}: test-zone-1, {CT}: on-demand"
        ),
        BIG,
    ));
    docs.push(bound("b-nil-p", "b-nil", "", "{app: test}"));
    let c = Cluster::with_catalog(PRICED_CATALOG, &docs);
    let price = |n: &str| disruption::node_price(&c.input, c.node(n));
    assert_eq!(price("b-nil"), 0.0);
    assert!(close(price("b-0"), 4.84, 1e-9));
    let s = score_of_deleting(&c, "b", &["b-0"]);
    assert!(close(s.savings / s.savings_fraction, 9.68, 1e-6));
    assert!(close(2.0 / s.disruption_fraction, 6.0, 1e-6));
}

/// TestEvaluateBalancedMove_SinglePool
///
/// Ten $4.84 nodes with a pod each; deleting one saves a tenth of the cost for a tenth of
/// the disruption: score 1.0, approved (at least 1/2).
#[test]
fn balanced_single_pool_delete_scores_one() {
    let c = Cluster::with_catalog(PRICED_CATALOG, &priced_pool("single", "m7i.xlarge", 10, 1));
    let s = score_of_deleting(&c, "single", &["single-0"]);
    assert!(close(s.savings_fraction, 0.1, 1e-9));
    assert!(close(s.disruption_fraction, 0.1, 1e-9));
    assert!(close(s.score(), 1.0, 0.05) && s.passes());
}

/// TestEvaluateBalancedMove_CrossNodePool
///
/// Five $4.84 nodes in a Balanced pool and five in a WhenEmptyOrUnderutilized one; a delete
/// of one node of each saves 9.68, of which the Balanced pool's share by price is 4.84: a
/// fifth of its cost for a fifth of its disruption, score 1.0.
#[test]
fn balanced_cross_pool_delete_shares_savings_by_price() {
    let mut docs = priced_pool("balanced", "m7i.xlarge", 5, 1);
    docs.extend(priced_pool("other", "m7i.xlarge", 5, 1));
    let mut c = Cluster::with_catalog(PRICED_CATALOG, &docs);
    c.policies(|p| {
        p.consolidation = if p.nodepool == "balanced" {
            ConsolidationPolicy::Balanced
        } else {
            ConsolidationPolicy::WhenEmptyOrUnderutilized
        }
    });
    let s = score_of_deleting(&c, "balanced", &["balanced-0", "other-0"]);
    assert!(close(s.savings, 4.84, 1e-9));
    assert!(close(s.savings_fraction, 0.2, 1e-9));
    assert!(close(s.disruption_fraction, 0.2, 1e-9));
    assert!(close(s.score(), 1.0, 0.05) && s.passes());
}

/// TestEvaluateBalancedMove_AllPoolsMustApprove
///
/// Karpenter's numbers: pool `a` (ten $4.84 nodes with 8 pods each) and a strict pool (two
/// $1.00 nodes, with 8 pods and 1); deleting `a-0` and `strict-0` scores 1.0 for `a` and
/// 0.61 for the strict pool, which Karpenter's k = 1 rejects and Adze's fixed k = 2 passes.
/// That one Balanced pool failing refuses the whole move holds at k = 2 with a third $1.00
/// node in the strict pool (score 0.40): the two-pool delete is refused and only `a-0` goes;
/// with the strict pool WhenEmptyOrUnderutilized, both go.
#[test]
fn balanced_every_pool_of_a_move_must_pass() {
    let mut docs = priced_pool("a", "m7i.xlarge", 10, 8);
    docs.push(nodepool("strict"));
    docs.extend(priced_node("strict-0", "strict", "tiny", 8));
    docs.extend(priced_node("strict-1", "strict", "tiny", 1));
    let mut c = Cluster::with_catalog(PRICED_CATALOG, &docs);
    c.policies(|p| p.consolidation = ConsolidationPolicy::Balanced);
    let a = score_of_deleting(&c, "a", &["a-0", "strict-0"]);
    assert!(close(a.score(), 1.0, 0.05) && a.passes(), "{a}");
    let strict = score_of_deleting(&c, "strict", &["a-0", "strict-0"]);
    assert!(close(strict.savings, 1.0, 1e-9));
    assert!(close(strict.savings_fraction, 0.5, 1e-9));
    assert!(close(strict.disruption_fraction, 9.0 / 11.0, 1e-9));
    assert!(close(strict.score(), 0.611, 0.005), "{strict}");
    assert!(strict.passes(), "k = 2: 0.61 >= 0.5");

    // The strict pool with a third node: strict-0 (20 pods, nothing requested) first in its
    // pool's order, the other two busier (one 8-CPU pod each).
    let mut docs = priced_pool("a", "m7i.xlarge", 10, 8);
    docs.push(nodepool("strict"));
    docs.extend(priced_node("strict-0", "strict", "tiny", 20));
    for n in ["strict-1", "strict-2"] {
        docs.push(node(n, "strict", "tiny", BIG));
        docs.push(bound(&format!("{n}-busy"), n, "cpu: 8", "{app: test}"));
    }
    let cluster = |strict_policy: ConsolidationPolicy| {
        let mut c = Cluster::with_catalog(PRICED_CATALOG, &docs);
        c.policies(|p| {
            p.budgets = vec![budget("1")];
            p.consolidation = if p.nodepool == "strict" {
                strict_policy
            } else {
                ConsolidationPolicy::Balanced
            };
        });
        c
    };
    let c = cluster(ConsolidationPolicy::Balanced);
    let first_a = {
        let d = cluster(ConsolidationPolicy::WhenEmptyOrUnderutilized)
            .decide()
            .expect("a decision");
        let r = removed(&d);
        assert_eq!(r.len(), 2, "{}", d.message);
        assert!(r.contains(&"strict-0".to_string()), "{}", d.message);
        r.into_iter().find(|n| n.starts_with("a-")).unwrap()
    };
    let strict = score_of_deleting(&c, "strict", &[first_a.as_str(), "strict-0"]);
    assert!(
        close(strict.score(), (1.0 / 3.0) / (21.0 / 25.0), 0.01),
        "{strict}"
    );
    assert!(!strict.passes(), "{strict}");
    let d = c.decide().expect("a decision");
    assert_eq!(removed(&d), [first_a], "{}", d.message);
}

/// Adversarial > should not allow NaN price to poison NodePool totals
///
/// A scenario refuses a NaN price (the YAML reader takes no non-finite number). Set after parsing (as a bad price feed
/// could), the NaN-priced node counts as unpriced: the pool's cost is 9.68, not NaN, and a
/// move deleting a $4.84 node scores a number (0.5 / (2/6) = 1.5).
#[test]
fn balanced_nan_price_does_not_poison_the_pool() {
    let bad = PRICED_CATALOG.replace(
        "{name: nan-instance, cpu: 4, memory: 16Gi, pods: 110, arch: amd64, offerings: [{zone: test-zone-1, capacityType: on-demand, price: 4.84}]}",
        "{name: nan-instance, cpu: 4, memory: 16Gi, pods: 110, arch: amd64, offerings: [{zone: test-zone-1, capacityType: on-demand, price: .nan}]}",
    );
    assert_ne!(bad, PRICED_CATALOG);
    let Err(err) = Scenario::parse(&conformance::scenario(&[&bad, &nodepool("nan")])) else {
        panic!("a NaN price is refused");
    };
    assert!(err.to_string().contains("non-finite float"), "{err}");

    let mut docs = vec![nodepool("nan")];
    docs.extend(priced_node("good-1", "nan", "m7i.xlarge", 1));
    docs.extend(priced_node("nan-node", "nan", "nan-instance", 1));
    docs.extend(priced_node("good-2", "nan", "m7i.xlarge", 1));
    let mut c = Cluster::with_catalog(PRICED_CATALOG, &docs);
    for p in &mut c.input.snapshot.nodepools {
        for t in p
            .instance_types
            .iter_mut()
            .filter(|t| t.name == "nan-instance")
        {
            std::sync::Arc::make_mut(t).offerings[0].price = f64::NAN;
        }
    }
    assert_eq!(disruption::node_price(&c.input, c.node("nan-node")), 0.0);
    // A node's own price (a claim's) that is NaN falls back to its type's.
    c.input
        .snapshot
        .nodes
        .iter_mut()
        .find(|n| n.name == "good-2")
        .unwrap()
        .price = Some(f64::NAN);
    assert!(close(
        disruption::node_price(&c.input, c.node("good-2")),
        4.84,
        1e-9
    ));
    let s = score_of_deleting(&c, "nan", &["good-1"]);
    assert!(!s.savings_fraction.is_nan() && !s.score().is_nan(), "{s}");
    assert!(close(s.savings / s.savings_fraction, 9.68, 1e-6));
    assert!(close(s.score(), 1.5, 0.01) && s.passes(), "{s}");
}

/// Adversarial > should use source pricing that ignores availability
///
/// A node of `source-type` in test-zone-1, where that offering ($1.00) is out of capacity:
/// it still costs $1.00, not the $5.00 of the zone where one could launch now.
#[test]
fn balanced_node_price_ignores_availability() {
    let mut docs = vec![nodepool("avail")];
    docs.extend(priced_node("src", "avail", "source-type", 1));
    let c = Cluster::with_catalog(PRICED_CATALOG, &docs);
    assert_eq!(disruption::node_price(&c.input, c.node("src")), 1.0);
    let (cands, _) = disruption::candidates::candidates(&c.input);
    assert_eq!(cands[0].price, 1.0);
}

/// Adversarial > should approve single-node pool DELETE with expected scoring
///
/// The only node of its pool deleted: all of the cost saved for all of the disruption,
/// score 1.0, approved (budgets and `consolidateAfter` are what keep it from repeating).
#[test]
fn balanced_single_node_pool_delete_scores_one() {
    let c = Cluster::with_catalog(PRICED_CATALOG, &priced_pool("single", "m7i.xlarge", 1, 1));
    let s = score_of_deleting(&c, "single", &["single-0"]);
    assert!(close(s.savings_fraction, 1.0, 1e-9));
    assert!(close(s.disruption_fraction, 1.0, 1e-9));
    assert!(close(s.score(), 1.0, 1e-9) && s.passes());
}

/// TestSortCandidates_NonBalancedSortsByDisruptionCost
///
/// Karpenter orders WhenEmptyOrUnderutilized candidates by disruption cost, lowest first;
/// Adze orders them emptiest first and uses the disruption cost only between equally full
/// nodes. `light` (three 100m pods, disruption cost 3) and `heavy` (one 8-CPU pod, 1), alike
/// otherwise: with a budget of one node, Karpenter's order tries `heavy` first, Adze's `light`.
#[test]
fn consolidation_order_is_emptiest_first_not_by_disruption_cost() {
    let mut c = Cluster::new(&[
        nodepool("default"),
        node_with_labels("room", &format!("{ZONE}: test-zone-1"), BIG),
        node("light", "default", MOST_EXPENSIVE, BIG),
        node("heavy", "default", MOST_EXPENSIVE, BIG),
        bound("l0", "light", "cpu: 100m", "{app: test}"),
        bound("l1", "light", "cpu: 100m", "{app: test}"),
        bound("l2", "light", "cpu: 100m", "{app: test}"),
        bound("h0", "heavy", "cpu: 8", "{app: test}"),
    ]);
    c.policies(|p| {
        p.consolidation = ConsolidationPolicy::WhenEmptyOrUnderutilized;
        p.budgets = vec![budget("1")];
    });
    let (cands, _) = disruption::candidates::candidates(&c.input);
    let pods = |n: &str| cands.iter().find(|x| x.name == n).unwrap().pods.len();
    assert!(pods("light") > pods("heavy"));
    let d = c.decide().expect("a decision");
    assert_eq!(removed(&d), ["light"], "{}", d.message);
}
