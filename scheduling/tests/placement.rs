//! Behaviour of the placement core as a user of the plan sees it: which claims are made,
//! of which types, in which zones, and why pods that cannot be placed are refused.
//!
//! Inputs come from `adze_scheduling::fixtures`; every check reads the returned `Plan`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use adze_scheduling::fixtures::{self, GI, MI, ZONES, pod, pool, small_catalog};
use adze_scheduling::instance_type::InstanceType;
use adze_scheduling::labels;
use adze_scheduling::overhead;
use adze_scheduling::plan::NewClaim;
use adze_scheduling::resources::GPU_NVIDIA;
use adze_scheduling::{
    BoundPod, Effect, ExistingNode, NodePool, Operator, Options, Plan, Pod, Requirement,
    Requirements, Resources, Snapshot, Taint, Toleration, schedule,
};

// ---------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------

fn key(name: &str) -> String {
    format!("default/{name}")
}

fn snap(pending: Vec<Pod>, nodepools: Vec<NodePool>) -> Snapshot {
    Snapshot {
        pending,
        nodepools,
        ..Default::default()
    }
}

fn run(s: &Snapshot) -> Plan {
    schedule(s, &Options::default())
}

fn default_pool() -> NodePool {
    pool("default", small_catalog())
}

/// `n` identical pods named `{prefix}-{i}`.
fn pods(
    prefix: &str,
    n: usize,
    f: impl Fn(fixtures::PodBuilder) -> fixtures::PodBuilder,
) -> Vec<Pod> {
    (0..n)
        .map(|i| f(pod(&format!("{prefix}-{i}"))).build())
        .collect()
}

/// The new claim holding `pod`, if it went to one.
fn claim_of<'p>(plan: &'p Plan, pod: &str) -> Option<&'p NewClaim> {
    let k = key(pod);
    plan.new_claims.iter().find(|c| c.pods.contains(&k))
}

/// The node or claim name `pod` went to.
fn where_is<'p>(plan: &'p Plan, pod: &str) -> Option<&'p str> {
    let k = key(pod);
    plan.placements().get(k.as_str()).copied()
}

fn reason_for<'p>(plan: &'p Plan, pod: &str) -> Option<&'p str> {
    let k = key(pod);
    plan.unschedulable
        .iter()
        .find(|u| u.pod == k)
        .map(|u| u.reason.as_str())
}

fn assert_all_placed(plan: &Plan, n: usize) {
    assert!(
        plan.unschedulable.is_empty(),
        "unexpected unschedulable pods: {:#?}",
        plan.unschedulable
    );
    assert_eq!(plan.pods_placed(), n, "{plan:#?}");
}

fn catalog_type(name: &str) -> Arc<InstanceType> {
    small_catalog()
        .into_iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("no type {name} in the small catalog"))
}

/// Cheapest price of a type over all its available offerings.
fn min_price(it: &InstanceType) -> f64 {
    it.offerings
        .iter()
        .filter(|o| o.available)
        .map(|o| o.price)
        .fold(f64::INFINITY, f64::min)
}

/// A registered node with the usual labels (hostname, zone, amd64, linux).
fn node(name: &str, zone: &str, cpu_milli: i64, mem: i64) -> ExistingNode {
    let labels_: BTreeMap<String, String> = BTreeMap::from([
        (labels::HOSTNAME.to_string(), name.to_string()),
        (labels::ZONE.to_string(), zone.to_string()),
        (labels::ARCH.to_string(), "amd64".to_string()),
        (labels::OS.to_string(), "linux".to_string()),
    ]);
    let res = Resources::new(cpu_milli, mem)
        .with_pods(110)
        .with_ephemeral(50 * GI);
    ExistingNode {
        name: name.to_string(),
        requirements: Requirements::from_labels(&labels_),
        taints: Vec::new(),
        allocatable: res.clone(),
        nodepool: None,
        capacity: res,
        in_flight: false,
        unschedulable: false,
        price: None,
        volume_limits: Default::default(),
    }
}

fn bound(node: &str, pod: Pod) -> BoundPod {
    BoundPod {
        node: node.to_string(),
        pod,
        daemon: false,
    }
}

fn req(k: &str, op: Operator, vals: &[&str]) -> Requirement {
    Requirement::new(k, op, vals).unwrap()
}

/// A GPU type shaped like the small catalog's ones, with `gpus` NVIDIA devices.
fn gpu_type(name: &str, cpus: i64, mem_gib: i64, gpus: i64, price: f64) -> Arc<InstanceType> {
    let capacity = Resources::new(cpus * 1000, mem_gib * GI)
        .with_pods(58)
        .with_ephemeral(overhead::DEFAULT_ROOT_VOLUME)
        .with_extended(GPU_NVIDIA, gpus);
    let oh = overhead::default_overhead(cpus as u32, 58, overhead::DEFAULT_ROOT_VOLUME);
    let l = BTreeMap::from([
        (labels::ARCH.to_string(), "amd64".to_string()),
        (labels::OS.to_string(), "linux".to_string()),
        (labels::INSTANCE_FAMILY.to_string(), "g".to_string()),
        (labels::INSTANCE_GPU_COUNT.to_string(), gpus.to_string()),
    ]);
    Arc::new(InstanceType::new(
        name,
        capacity,
        oh,
        l,
        fixtures::offerings(price),
    ))
}

fn zone_counts(plan: &Plan, names: impl IntoIterator<Item = String>) -> BTreeMap<&str, usize> {
    let mut m = BTreeMap::new();
    for n in names {
        let c = plan
            .new_claims
            .iter()
            .find(|c| c.pods.contains(&n))
            .unwrap_or_else(|| panic!("{n} is not on a new claim: {plan:#?}"));
        *m.entry(c.zone.as_str()).or_insert(0) += 1;
    }
    m
}

// ---------------------------------------------------------------------------------------
// Packing and instance-type choice
// ---------------------------------------------------------------------------------------

#[test]
fn generic_pods_pack_onto_few_claims_of_the_cheapest_fitting_type() {
    // 12 × (500m, 1 GiB) = 6 cpu, 12 GiB: one 8-cpu node holds them all.
    let s = snap(
        pods("web", 12, |b| b.cpu(500).mem(GI)),
        vec![default_pool()],
    );
    let plan = run(&s);
    assert_all_placed(&plan, 12);
    assert!(
        plan.new_claims.len() <= 2,
        "12 small pods need at most two claims, got {}",
        plan.new_claims.len()
    );
    let catalog = small_catalog();
    for c in &plan.new_claims {
        // The chosen type is the first (cheapest) option.
        assert_eq!(c.instance_type, c.instance_type_options[0], "{c:#?}");
        // And it is the cheapest type in the whole catalog that holds the claim's pods.
        let fitting: Vec<&Arc<InstanceType>> = catalog
            .iter()
            .filter(|t| c.requests.fits_in(t.allocatable()))
            .collect();
        let cheapest = fitting
            .iter()
            .map(|t| min_price(t))
            .fold(f64::INFINITY, f64::min);
        assert!(
            (c.price_per_hour - cheapest).abs() < 1e-12,
            "claim {} pays {} but {} was possible",
            c.name,
            c.price_per_hour,
            cheapest
        );
        // Options are cheapest first and every one of them holds the pods.
        let prices: Vec<f64> = c
            .instance_type_options
            .iter()
            .map(|n| min_price(&catalog_type(n)))
            .collect();
        assert!(
            prices.windows(2).all(|w| w[0] <= w[1]),
            "options not cheapest first: {:?} {prices:?}",
            c.instance_type_options
        );
        for o in &c.instance_type_options {
            assert!(
                c.requests.fits_in(catalog_type(o).allocatable()),
                "option {o} cannot hold the claim's pods"
            );
        }
        assert!(c.requests.fits_in(&c.allocatable));
    }
    assert!(
        (plan.total_price_per_hour
            - plan
                .new_claims
                .iter()
                .map(|c| c.price_per_hour)
                .sum::<f64>())
        .abs()
            < 1e-12
    );
}

#[test]
fn instance_type_options_are_truncated_to_max_instance_types() {
    let s = snap(
        pods("web", 3, |b| b.cpu(250).mem(256 * MI)),
        vec![default_pool()],
    );
    let full = run(&s);
    assert!(
        full.new_claims[0].instance_type_options.len() > 3,
        "the small catalog should offer many fitting types: {:?}",
        full.new_claims[0].instance_type_options
    );
    let opts = Options {
        max_instance_types: 3,
        ..Default::default()
    };
    let plan = schedule(&s, &opts);
    assert_all_placed(&plan, 3);
    for c in &plan.new_claims {
        assert!(
            c.instance_type_options.len() <= 3,
            "{:?}",
            c.instance_type_options
        );
        // Truncation keeps the cheapest ones.
        let full_claim = full.new_claims.iter().find(|f| f.pods == c.pods).unwrap();
        assert_eq!(
            c.instance_type_options[..],
            full_claim.instance_type_options[..c.instance_type_options.len()]
        );
        // The NodeClaim's instance-type requirement says the same thing.
        let it = c.requirements.get(labels::INSTANCE_TYPE).unwrap();
        let vals: BTreeSet<&str> = it
            .finite_values()
            .unwrap()
            .iter()
            .map(String::as_str)
            .collect();
        let opts: BTreeSet<&str> = c.instance_type_options.iter().map(String::as_str).collect();
        assert_eq!(vals, opts);
    }
}

// ---------------------------------------------------------------------------------------
// Existing capacity
// ---------------------------------------------------------------------------------------

#[test]
fn existing_node_with_room_is_used_before_any_new_claim() {
    let mut s = snap(pods("web", 3, |b| b.cpu(500).mem(GI)), vec![default_pool()]);
    s.nodes = vec![node("node-1", ZONES[0], 4000, 16 * GI)];
    let plan = run(&s);
    assert_all_placed(&plan, 3);
    assert!(plan.new_claims.is_empty(), "{:#?}", plan.new_claims);
    assert_eq!(plan.existing.len(), 1);
    assert_eq!(plan.existing[0].node, "node-1");
    assert!(!plan.existing[0].in_flight);
    assert_eq!(plan.total_price_per_hour, 0.0);
}

#[test]
fn existing_node_takes_what_fits_and_the_rest_goes_to_a_new_claim() {
    // The node has room for two of the three pods beside what is already bound there.
    let mut s = snap(
        pods("web", 3, |b| b.cpu(1000).mem(GI)),
        vec![default_pool()],
    );
    s.nodes = vec![node("node-1", ZONES[0], 4000, 16 * GI)];
    s.bound = vec![bound("node-1", pod("old").cpu(2000).mem(GI).build())];
    let plan = run(&s);
    assert_all_placed(&plan, 3);
    assert_eq!(plan.existing.len(), 1);
    assert_eq!(plan.existing[0].pods.len(), 2);
    assert_eq!(plan.new_claims.len(), 1);
    assert_eq!(plan.new_claims[0].pods.len(), 1);
}

#[test]
fn cordoned_node_is_not_used() {
    let mut s = snap(pods("web", 3, |b| b.cpu(500).mem(GI)), vec![default_pool()]);
    let mut n = node("node-1", ZONES[0], 4000, 16 * GI);
    n.unschedulable = true;
    s.nodes = vec![n];
    let plan = run(&s);
    assert_all_placed(&plan, 3);
    assert!(plan.existing.is_empty(), "{:#?}", plan.existing);
    assert!(!plan.new_claims.is_empty());
}

#[test]
fn in_flight_node_takes_pods_too() {
    let mut s = snap(pods("web", 3, |b| b.cpu(500).mem(GI)), vec![default_pool()]);
    let mut n = node("default-inflight", ZONES[1], 4000, 16 * GI);
    n.in_flight = true;
    n.nodepool = Some("default".to_string());
    s.nodes = vec![n];
    let plan = run(&s);
    assert_all_placed(&plan, 3);
    assert!(plan.new_claims.is_empty(), "{:#?}", plan.new_claims);
    assert_eq!(plan.existing.len(), 1);
    assert_eq!(plan.existing[0].node, "default-inflight");
    assert!(plan.existing[0].in_flight);
}

#[test]
fn node_without_the_required_label_is_skipped() {
    // The only existing node is amd64; an arm64 pod needs a new claim.
    let mut s = snap(
        vec![
            pod("arm")
                .require(Requirement::single(labels::ARCH, "arm64"))
                .build(),
        ],
        vec![default_pool()],
    );
    s.nodes = vec![node("node-1", ZONES[0], 4000, 16 * GI)];
    let plan = run(&s);
    assert_all_placed(&plan, 1);
    assert!(plan.existing.is_empty());
    assert_eq!(
        claim_of(&plan, "arm").unwrap().labels[labels::ARCH],
        "arm64"
    );
}

// ---------------------------------------------------------------------------------------
// Node selectors and node affinity
// ---------------------------------------------------------------------------------------

fn assert_arm64_claim(c: &NewClaim) {
    assert_eq!(c.labels[labels::ARCH], "arm64", "{c:#?}");
    assert!(!c.instance_type_options.is_empty());
    for o in &c.instance_type_options {
        assert_eq!(
            catalog_type(o).label(labels::ARCH),
            Some("arm64"),
            "option {o} is not arm64"
        );
    }
    assert_eq!(
        catalog_type(&c.instance_type).label(labels::ARCH),
        Some("arm64")
    );
}

#[test]
fn node_selector_on_arm64_gives_only_arm64_types() {
    let s = snap(
        pods("arm", 4, |b| {
            b.cpu(500)
                .mem(GI)
                .require(Requirement::single(labels::ARCH, "arm64"))
        }),
        vec![default_pool()],
    );
    let plan = run(&s);
    assert_all_placed(&plan, 4);
    for c in &plan.new_claims {
        assert_arm64_claim(c);
    }
}

#[test]
fn required_affinity_in_arm64_gives_only_arm64_types() {
    let s = snap(
        vec![
            pod("arm")
                .terms(vec![Requirements::new().with(req(
                    labels::ARCH,
                    Operator::In,
                    &["arm64"],
                ))])
                .build(),
        ],
        vec![default_pool()],
    );
    let plan = run(&s);
    assert_all_placed(&plan, 1);
    assert_arm64_claim(claim_of(&plan, "arm").unwrap());
}

#[test]
fn ored_required_terms_fall_back_to_the_second_when_the_first_is_impossible() {
    let s = snap(
        vec![
            pod("either")
                .terms(vec![
                    // Nothing in the catalog is s390x.
                    Requirements::new().with(req(labels::ARCH, Operator::In, &["s390x"])),
                    Requirements::new().with(req(labels::ARCH, Operator::In, &["arm64"])),
                ])
                .build(),
        ],
        vec![default_pool()],
    );
    let plan = run(&s);
    assert_all_placed(&plan, 1);
    assert_arm64_claim(claim_of(&plan, "either").unwrap());
}

#[test]
fn ored_required_terms_both_possible_the_claim_satisfies_one() {
    // Both terms are satisfiable; whichever is used, the claim satisfies one of them.
    let t1 = Requirements::new().with(req(labels::ZONE, Operator::In, &[ZONES[2]]));
    let t2 = Requirements::new().with(req(labels::ARCH, Operator::In, &["arm64"]));
    let s = snap(
        vec![pod("either").terms(vec![t1.clone(), t2.clone()]).build()],
        vec![default_pool()],
    );
    let plan = run(&s);
    assert_all_placed(&plan, 1);
    let c = claim_of(&plan, "either").unwrap();
    assert!(
        t1.matches_labels(&c.labels) || t2.matches_labels(&c.labels),
        "{:#?}",
        c.labels
    );
}

#[test]
fn pod_requiring_an_impossible_arch_is_unschedulable_with_a_reason() {
    let s = snap(
        vec![
            pod("s390")
                .require(Requirement::single(labels::ARCH, "s390x"))
                .build(),
        ],
        vec![default_pool()],
    );
    let plan = run(&s);
    assert_eq!(plan.pods_placed(), 0);
    let r = reason_for(&plan, "s390").expect("unschedulable");
    assert!(
        r.contains("default") && r.contains(labels::ARCH) && r.contains("s390x"),
        "{r}"
    );
}

#[test]
fn preferred_node_affinity_is_honoured_when_possible() {
    // Without a preference the cheapest zone/arch wins (amd64 "c" family, first zone).
    let plain = run(&snap(vec![pod("p").build()], vec![default_pool()]));
    let c = claim_of(&plain, "p").unwrap();
    assert_eq!(c.labels[labels::ARCH], "amd64");
    assert_eq!(c.zone, ZONES[0]);

    let s = snap(
        vec![
            pod("p")
                .prefer(10, Requirement::single(labels::ZONE, ZONES[2]))
                .prefer(5, Requirement::single(labels::ARCH, "arm64"))
                .build(),
        ],
        vec![default_pool()],
    );
    let plan = run(&s);
    assert_all_placed(&plan, 1);
    let c = claim_of(&plan, "p").unwrap();
    assert_eq!(c.zone, ZONES[2]);
    assert_eq!(c.labels[labels::ZONE], ZONES[2]);
    assert_arm64_claim(c);
}

#[test]
fn impossible_preferred_node_affinity_is_relaxed_and_the_pod_placed() {
    let s = snap(
        vec![
            pod("p")
                .prefer(10, Requirement::single(labels::ARCH, "s390x"))
                .build(),
        ],
        vec![default_pool()],
    );
    let plan = run(&s);
    assert_all_placed(&plan, 1);
    assert_ne!(claim_of(&plan, "p").unwrap().labels[labels::ARCH], "s390x");
}

#[test]

fn preferred_node_affinity_is_relaxed_when_impossible() {
    let s = snap(
        vec![
            pod("p")
                .prefer(10, Requirement::single(labels::ARCH, "s390x"))
                .prefer(1, Requirement::single(labels::ZONE, ZONES[1]))
                .build(),
        ],
        vec![default_pool()],
    );
    let plan = run(&s);
    assert_all_placed(&plan, 1);
    let c = claim_of(&plan, "p").unwrap();
    assert_ne!(c.labels[labels::ARCH], "s390x");
    // The impossible preference is dropped, the possible one is still honoured.
    assert_eq!(
        c.zone, ZONES[1],
        "the satisfiable preference should survive"
    );
}

#[test]
fn preferred_node_affinity_uses_an_existing_node_that_matches_before_one_that_does_not() {
    let mut s = snap(
        vec![
            pod("p")
                .prefer(10, Requirement::single(labels::ZONE, ZONES[1]))
                .build(),
        ],
        vec![default_pool()],
    );
    s.nodes = vec![
        node("node-a", ZONES[0], 4000, 16 * GI),
        node("node-b", ZONES[1], 4000, 16 * GI),
    ];
    let plan = run(&s);
    assert_all_placed(&plan, 1);
    assert_eq!(where_is(&plan, "p"), Some("node-b"));
}

// ---------------------------------------------------------------------------------------
// Taints
// ---------------------------------------------------------------------------------------

fn dedicated() -> Taint {
    Taint::new("dedicated", "gpu", Effect::NoSchedule)
}

#[test]
fn nodepool_taint_keeps_non_tolerating_pods_off_it() {
    let mut tainted = pool("tainted", small_catalog());
    tainted.weight = 10;
    tainted.taints = vec![dedicated()];
    // Separate runs: within one run a pod joins a claim already under construction before a
    // new claim from a heavier pool is considered (see the scheduler module docs).
    let s = snap(
        vec![pod("plain").build()],
        vec![tainted.clone(), default_pool()],
    );
    let plan = run(&s);
    assert_all_placed(&plan, 1);
    let plain = claim_of(&plan, "plain").unwrap();
    assert_eq!(plain.nodepool, "default");
    assert!(plain.taints.is_empty());
    let s = snap(
        vec![
            pod("tolerant")
                .tolerate(Toleration::equal(
                    "dedicated",
                    "gpu",
                    Some(Effect::NoSchedule),
                ))
                .build(),
        ],
        vec![tainted, default_pool()],
    );
    let plan = run(&s);
    assert_all_placed(&plan, 1);
    let tolerant = claim_of(&plan, "tolerant").unwrap();
    assert_eq!(
        tolerant.nodepool, "tainted",
        "the heavier pool is tolerated, so it wins"
    );
    assert_eq!(tolerant.taints, vec![dedicated()]);
}

#[test]
fn nodepool_taint_makes_non_tolerating_pod_unschedulable_with_a_reason_naming_it() {
    let mut tainted = pool("tainted", small_catalog());
    tainted.taints = vec![dedicated()];
    let s = snap(
        vec![
            pod("plain").build(),
            // Tolerating a different value does not help.
            pod("wrong")
                .tolerate(Toleration::equal("dedicated", "other", None))
                .build(),
        ],
        vec![tainted],
    );
    let plan = run(&s);
    assert_eq!(plan.pods_placed(), 0);
    for p in ["plain", "wrong"] {
        let r = reason_for(&plan, p).expect("unschedulable");
        assert!(
            r.contains("tainted") && r.contains("dedicated=gpu:NoSchedule"),
            "reason should name the pool and the taint: {r}"
        );
    }
}

#[test]
fn existing_node_taint_keeps_non_tolerating_pods_off_it() {
    let mut s = snap(vec![pod("plain").build()], vec![default_pool()]);
    let mut n = node("node-1", ZONES[0], 4000, 16 * GI);
    n.taints = vec![dedicated()];
    s.nodes = vec![n];
    let plan = run(&s);
    assert_all_placed(&plan, 1);
    assert!(plan.existing.is_empty());

    s.pending = vec![
        pod("tolerant")
            .tolerate(Toleration::exists(Some("dedicated"), None))
            .build(),
    ];
    let plan = run(&s);
    assert_all_placed(&plan, 1);
    assert_eq!(where_is(&plan, "tolerant"), Some("node-1"));
}

#[test]
fn startup_taints_need_no_toleration() {
    let mut p = pool("startup", small_catalog());
    p.startup_taints = vec![Taint::new(
        "node.cilium.io/agent-not-ready",
        "",
        Effect::NoSchedule,
    )];
    let s = snap(vec![pod("plain").build()], vec![p]);
    let plan = run(&s);
    assert_all_placed(&plan, 1);
    let c = claim_of(&plan, "plain").unwrap();
    assert!(c.taints.is_empty());
    assert_eq!(c.startup_taints.len(), 1);
}

#[test]
fn prefer_no_schedule_taints_are_avoided_when_possible() {
    let mut soft = pool("soft", small_catalog());
    soft.weight = 10;
    soft.taints = vec![Taint::new("spot-only", "", Effect::PreferNoSchedule)];
    let s = snap(
        vec![pod("plain").build()],
        vec![soft.clone(), default_pool()],
    );
    let plan = run(&s);
    assert_all_placed(&plan, 1);
    assert_eq!(claim_of(&plan, "plain").unwrap().nodepool, "default");

    // When it is the only pool, the pod still lands there.
    let s = snap(vec![pod("plain").build()], vec![soft]);
    let plan = run(&s);
    assert_all_placed(&plan, 1);
    assert_eq!(claim_of(&plan, "plain").unwrap().nodepool, "soft");
}

#[test]
fn prefer_no_schedule_taint_on_an_existing_node_is_avoided_when_another_node_fits() {
    let mut s = snap(vec![pod("plain").build()], vec![]);
    let mut soft = node("node-a", ZONES[0], 4000, 16 * GI);
    soft.taints = vec![Taint::new("soft", "", Effect::PreferNoSchedule)];
    s.nodes = vec![soft, node("node-b", ZONES[1], 4000, 16 * GI)];
    let plan = run(&s);
    assert_all_placed(&plan, 1);
    assert_eq!(where_is(&plan, "plain"), Some("node-b"));
}

// ---------------------------------------------------------------------------------------
// NodePool weight, limits, labels
// ---------------------------------------------------------------------------------------

#[test]
fn higher_weight_nodepool_wins_when_both_fit() {
    // Names sort the other way, so only the weight can decide.
    let mut a = pool("a-light", small_catalog());
    a.weight = 1;
    let mut z = pool("z-heavy", small_catalog());
    z.weight = 50;
    let s = snap(pods("web", 5, |b| b.cpu(500).mem(GI)), vec![a, z]);
    let plan = run(&s);
    assert_all_placed(&plan, 5);
    for c in &plan.new_claims {
        assert_eq!(c.nodepool, "z-heavy");
        assert_eq!(c.labels[labels::NODEPOOL], "z-heavy");
        assert!(c.name.starts_with("z-heavy-"), "{}", c.name);
    }
}

#[test]
fn lower_weight_nodepool_is_used_when_the_heavier_cannot_hold_the_pod() {
    let mut small = pool(
        "small",
        small_catalog()
            .into_iter()
            .filter(|t| t.capacity.cpu <= 4000)
            .collect(),
    );
    small.weight = 10;
    let pools = vec![small, default_pool()];
    let plan = run(&snap(
        vec![pod("big").cpu(12_000).mem(8 * GI).build()],
        pools.clone(),
    ));
    assert_all_placed(&plan, 1);
    assert_eq!(claim_of(&plan, "big").unwrap().nodepool, "default");
    let plan = run(&snap(vec![pod("little").build()], pools));
    assert_eq!(claim_of(&plan, "little").unwrap().nodepool, "small");
}

#[test]
fn a_claim_under_construction_is_filled_before_a_heavier_pool_is_tried() {
    // Documented order: existing nodes, then claims made in this run, then new claims by
    // weight. The small pod joins the big pod's claim in the lighter pool.
    let mut small = pool(
        "small",
        small_catalog()
            .into_iter()
            .filter(|t| t.capacity.cpu <= 4000)
            .collect(),
    );
    small.weight = 10;
    let plan = run(&snap(
        vec![
            pod("big").cpu(12_000).mem(8 * GI).build(),
            pod("little").build(),
        ],
        vec![small, default_pool()],
    ));
    assert_all_placed(&plan, 2);
    assert_eq!(plan.new_claims.len(), 1);
    assert_eq!(claim_of(&plan, "little").unwrap().nodepool, "default");
}

#[test]
fn nodepool_cpu_limit_is_never_exceeded_and_the_rest_are_unschedulable() {
    let mut p = default_pool();
    p.limits = BTreeMap::from([("cpu".to_string(), 8000)]);
    let s = snap(pods("web", 12, |b| b.cpu(1000).mem(GI)), vec![p]);
    let plan = run(&s);
    assert!(plan.pods_placed() > 0, "some pods fit under the limit");
    assert!(
        !plan.unschedulable.is_empty(),
        "12 cpu of pods cannot fit in 8 cpu"
    );
    let cat = small_catalog();
    let cap = |n: &str| cat.iter().find(|t| t.name == n).unwrap().capacity.cpu;
    let chosen: i64 = plan.new_claims.iter().map(|c| cap(&c.instance_type)).sum();
    assert!(
        chosen <= 8000,
        "chosen types' capacity {chosen} > limit 8000"
    );
    for u in &plan.unschedulable {
        assert!(u.reason.contains("limit"), "{}", u.reason);
        assert!(u.reason.contains("default"), "{}", u.reason);
    }
    assert_eq!(plan.pods_placed() + plan.unschedulable.len(), 12);
}

#[test]
fn nodepool_cpu_limit_holds_whichever_option_the_cloud_launches() {
    // The cloud may launch any instance-type option of a claim (the cheapest may be out of
    // capacity). Launching the largest option of every claim must still respect the limit.
    let mut p = default_pool();
    p.limits = BTreeMap::from([("cpu".to_string(), 8000)]);
    let s = snap(pods("web", 12, |b| b.cpu(1000).mem(GI)), vec![p]);
    let plan = run(&s);
    let cat = small_catalog();
    let cap = |n: &str| cat.iter().find(|t| t.name == n).unwrap().capacity.cpu;
    let worst: i64 = plan
        .new_claims
        .iter()
        .map(|c| {
            c.instance_type_options
                .iter()
                .map(|o| cap(o))
                .max()
                .unwrap()
        })
        .sum();
    assert!(
        worst <= 8000,
        "largest options sum to {worst} cpu > limit 8000: {:?}",
        plan.new_claims
            .iter()
            .map(|c| (&c.instance_type, &c.instance_type_options))
            .collect::<Vec<_>>()
    );
}

#[test]

fn nodepool_limit_is_not_used_up_by_one_claims_largest_option() {
    // n 1-cpu pods that must not share a node launch n c.2x (2 cpu each), far below the
    // limit, yet pods are refused because every claim still lists options up to the limit
    // and holds their capacity against it.
    for (limit, n) in [(16_000, 2), (64_000, 3), (100_000, 5)] {
        let mut p = default_pool();
        p.limits = BTreeMap::from([("cpu".to_string(), limit)]);
        let s = snap(
            pods("db", n, |b| {
                b.cpu(1000)
                    .mem(GI)
                    .label("app", "db")
                    .anti_affinity(labels::HOSTNAME, "db")
            }),
            vec![p],
        );
        let plan = run(&s);
        assert!(
            plan.unschedulable.is_empty(),
            "limit {limit} cpu, {n} pods: {:#?}\nclaims: {:?}",
            plan.unschedulable,
            plan.new_claims
                .iter()
                .map(|c| (&c.instance_type, &c.instance_type_options))
                .collect::<Vec<_>>()
        );
        assert_eq!(plan.new_claims.len(), n);
    }
}

#[test]

fn nodepool_cpu_limit_holds_whichever_option_separate_claims_launch() {
    // Two tiny pods that must not share a node, limit 48 cpu. Each claim ends up listing
    // every type up to r.32x: launched at their largest options they are 64 cpu.
    let mut p = default_pool();
    p.limits = BTreeMap::from([("cpu".to_string(), 48_000)]);
    let s = snap(
        vec![
            pod("a")
                .cpu(100)
                .mem(64 * MI)
                .label("app", "x")
                .anti_affinity(labels::HOSTNAME, "x")
                .build(),
            pod("b")
                .cpu(100)
                .mem(GI)
                .label("app", "x")
                .anti_affinity(labels::HOSTNAME, "x")
                .build(),
        ],
        vec![p],
    );
    let plan = run(&s);
    assert_all_placed(&plan, 2);
    let cat = small_catalog();
    let cap = |n: &str| cat.iter().find(|t| t.name == n).unwrap().capacity.cpu;
    let worst: i64 = plan
        .new_claims
        .iter()
        .map(|c| {
            c.instance_type_options
                .iter()
                .map(|o| cap(o))
                .max()
                .unwrap()
        })
        .sum();
    assert!(
        worst <= 48_000,
        "largest options sum to {worst} cpu > limit 48000: {:?}",
        plan.new_claims
            .iter()
            .map(|c| (&c.instance_type, &c.instance_type_options))
            .collect::<Vec<_>>()
    );
}

#[test]
fn nodepool_limit_counts_existing_nodes_of_the_pool() {
    let mut p = default_pool();
    p.limits = BTreeMap::from([("cpu".to_string(), 8000)]);
    let mut full = node("default-old", ZONES[0], 8000, 32 * GI);
    full.nodepool = Some("default".to_string());
    full.allocatable = Resources::new(0, 0).with_pods(110); // no room left on it
    let mut s = snap(vec![pod("web").build()], vec![p]);
    s.nodes = vec![full];
    let plan = run(&s);
    assert!(plan.new_claims.is_empty(), "{:#?}", plan.new_claims);
    let r = reason_for(&plan, "web").expect("unschedulable");
    assert!(r.contains("limit"), "{r}");
}

#[test]
fn custom_label_requirement_only_lands_on_a_pool_that_defines_it() {
    let mut team_a = pool("team-a", small_catalog());
    team_a.labels = BTreeMap::from([("team".to_string(), "a".to_string())]);
    let mut heavy = default_pool();
    heavy.weight = 100;
    let pools = vec![heavy, team_a];
    let s = snap(
        vec![
            pod("a").require(Requirement::single("team", "a")).build(),
            pod("c").require(Requirement::single("team", "c")).build(),
        ],
        pools.clone(),
    );
    let plan = run(&s);
    let a = claim_of(&plan, "a").expect("team=a pod placed");
    assert_eq!(a.nodepool, "team-a");
    assert_eq!(a.labels["team"], "a");
    let r = reason_for(&plan, "c").expect("team=c is defined nowhere");
    assert!(r.contains("team"), "{r}");
    // A pod without the requirement goes to the heavier pool, whose nodes lack the label.
    let plan = run(&snap(vec![pod("plain").build()], pools));
    let plain = claim_of(&plan, "plain").unwrap();
    assert_eq!(plain.nodepool, "default");
    assert!(!plain.labels.contains_key("team"));
}

// ---------------------------------------------------------------------------------------
// Topology spread
// ---------------------------------------------------------------------------------------

#[test]
fn zone_spread_max_skew_1_puts_3_pods_in_each_of_3_zones() {
    let s = snap(
        pods("web", 9, |b| {
            b.cpu(500)
                .mem(GI)
                .label("app", "web")
                .spread(labels::ZONE, 1, true, "web")
        }),
        vec![default_pool()],
    );
    let plan = run(&s);
    assert_all_placed(&plan, 9);
    let counts = zone_counts(&plan, (0..9).map(|i| key(&format!("web-{i}"))));
    assert_eq!(counts.len(), 3, "{counts:?}");
    assert!(counts.values().all(|&n| n == 3), "{counts:?}");
    for c in &plan.new_claims {
        assert_eq!(c.labels[labels::ZONE], c.zone);
    }
}

#[test]
fn zone_spread_counts_pods_already_running() {
    // Two web pods already run in the first zone: the next three go to the other zones
    // first.
    let mut s = snap(
        pods("web", 4, |b| {
            b.label("app", "web").spread(labels::ZONE, 1, true, "web")
        }),
        vec![default_pool()],
    );
    let mut n = node("node-a", ZONES[0], 2000, 4 * GI);
    n.allocatable = Resources::new(0, 0).with_pods(110); // full
    s.nodes = vec![n];
    s.bound = vec![
        bound("node-a", pod("old-0").label("app", "web").build()),
        bound("node-a", pod("old-1").label("app", "web").build()),
    ];
    let plan = run(&s);
    assert_all_placed(&plan, 4);
    let counts = zone_counts(&plan, (0..4).map(|i| key(&format!("web-{i}"))));
    // Final: zone a 2 (+x), b, c: 4 new pods over 3 zones with 2 already in a.
    assert_eq!(counts.get(ZONES[1]), Some(&2), "{counts:?}");
    assert_eq!(counts.get(ZONES[2]), Some(&2), "{counts:?}");
    assert_eq!(counts.get(ZONES[0]), None, "{counts:?}");
}

#[test]
fn hostname_spread_max_skew_1_puts_one_pod_per_node() {
    let s = snap(
        pods("web", 4, |b| {
            b.label("app", "web")
                .spread(labels::HOSTNAME, 1, true, "web")
        }),
        vec![default_pool()],
    );
    let plan = run(&s);
    assert_all_placed(&plan, 4);
    assert_eq!(plan.new_claims.len(), 4);
    assert!(plan.new_claims.iter().all(|c| c.pods.len() == 1));
}

#[test]
fn schedule_anyway_spread_does_not_block_placement_when_impossible() {
    // No node will ever carry this key, so the spread cannot be honoured.
    let hard = snap(
        vec![
            pod("p")
                .label("app", "web")
                .spread("example.com/rack", 1, true, "web")
                .build(),
        ],
        vec![default_pool()],
    );
    let plan = run(&hard);
    assert_eq!(
        plan.pods_placed(),
        0,
        "DoNotSchedule on a missing key blocks"
    );
    let r = reason_for(&plan, "p").unwrap();
    assert!(r.contains("example.com/rack"), "{r}");

    let soft = snap(
        pods("p", 3, |b| {
            b.label("app", "web")
                .spread("example.com/rack", 1, false, "web")
        }),
        vec![default_pool()],
    );
    let plan = run(&soft);
    assert_all_placed(&plan, 3);
}

#[test]
fn schedule_anyway_zone_spread_is_honoured_when_possible() {
    let s = snap(
        pods("web", 6, |b| {
            b.cpu(500)
                .mem(GI)
                .label("app", "web")
                .spread(labels::ZONE, 1, false, "web")
        }),
        vec![default_pool()],
    );
    let plan = run(&s);
    assert_all_placed(&plan, 6);
    let counts = zone_counts(&plan, (0..6).map(|i| key(&format!("web-{i}"))));
    assert!(
        counts.len() == 3 && counts.values().all(|&n| n == 2),
        "{counts:?}"
    );
}

// ---------------------------------------------------------------------------------------
// Pod (anti-)affinity
// ---------------------------------------------------------------------------------------

#[test]
fn hostname_anti_affinity_puts_pods_on_distinct_nodes() {
    let s = snap(
        pods("db", 4, |b| {
            b.label("app", "db").anti_affinity(labels::HOSTNAME, "db")
        }),
        vec![default_pool()],
    );
    let plan = run(&s);
    assert_all_placed(&plan, 4);
    let nodes: BTreeSet<&str> = (0..4)
        .map(|i| where_is(&plan, &format!("db-{i}")).unwrap())
        .collect();
    assert_eq!(nodes.len(), 4);
}

#[test]
fn zone_anti_affinity_with_4_pods_and_3_zones_leaves_one_unschedulable() {
    let s = snap(
        pods("db", 4, |b| {
            b.label("app", "db").anti_affinity(labels::ZONE, "db")
        }),
        vec![default_pool()],
    );
    let plan = run(&s);
    assert_eq!(plan.pods_placed(), 3);
    assert_eq!(plan.unschedulable.len(), 1);
    let r = &plan.unschedulable[0].reason;
    assert!(
        r.contains("anti-affinity") && r.contains(labels::ZONE),
        "{r}"
    );
    let zones: BTreeSet<&str> = plan.new_claims.iter().map(|c| c.zone.as_str()).collect();
    assert_eq!(zones.len(), 3);
    assert!(plan.new_claims.iter().all(|c| c.pods.len() == 1));
}

#[test]
fn existing_pods_anti_affinity_keeps_a_matching_new_pod_off_its_node() {
    let mut s = snap(
        vec![
            pod("web").label("app", "web").build(),
            pod("other").label("app", "other").build(),
        ],
        vec![default_pool()],
    );
    s.nodes = vec![node("node-1", ZONES[0], 4000, 16 * GI)];
    s.bound = vec![bound(
        "node-1",
        pod("guard")
            .label("app", "guard")
            .anti_affinity(labels::HOSTNAME, "web")
            .build(),
    )];
    let plan = run(&s);
    assert_all_placed(&plan, 2);
    assert_eq!(
        where_is(&plan, "other"),
        Some("node-1"),
        "non-matching pod uses the node"
    );
    assert!(
        claim_of(&plan, "web").is_some(),
        "matching pod goes elsewhere"
    );
}

#[test]
fn existing_pod_anti_affinity_on_zone_keeps_matching_pods_out_of_that_zone() {
    let mut s = snap(
        pods("web", 2, |b| b.label("app", "web")),
        vec![default_pool()],
    );
    s.nodes = vec![node("node-1", ZONES[0], 4000, 16 * GI)];
    s.bound = vec![bound(
        "node-1",
        pod("guard")
            .label("app", "guard")
            .anti_affinity(labels::ZONE, "web")
            .build(),
    )];
    let plan = run(&s);
    assert_all_placed(&plan, 2);
    assert!(plan.existing.is_empty());
    for c in &plan.new_claims {
        assert_ne!(c.zone, ZONES[0]);
    }
}

#[test]
fn hostname_self_affinity_group_of_5_lands_on_one_claim() {
    let s = snap(
        pods("grp", 5, |b| {
            b.cpu(1000)
                .mem(2 * GI)
                .label("app", "grp")
                .affinity(labels::HOSTNAME, "grp")
        }),
        vec![default_pool()],
    );
    let plan = run(&s);
    assert_all_placed(&plan, 5);
    assert_eq!(plan.new_claims.len(), 1, "{:#?}", plan.new_claims);
    assert_eq!(plan.new_claims[0].pods.len(), 5);
}

#[test]
fn hostname_self_affinity_group_larger_than_any_node_runs_as_many_as_one_node_holds() {
    // As kube-scheduler would: the first pod goes anywhere, the others only beside it; the
    // ones that do not fit stay pending instead of the whole group.
    let s = snap(
        pods("grp", 60, |b| {
            b.cpu(4000)
                .mem(4 * GI)
                .label("app", "grp")
                .affinity(labels::HOSTNAME, "grp")
        }),
        vec![default_pool()],
    );
    let plan = run(&s);
    assert_eq!(plan.new_claims.len(), 1, "{:#?}", plan.new_claims);
    let placed = plan.new_claims[0].pods.len();
    assert!(placed >= 2, "only {placed} placed");
    assert_eq!(plan.unschedulable.len(), 60 - placed);
    let one_more = Resources::new((placed as i64 + 1) * 4000, (placed as i64 + 1) * 4 * GI)
        .with_pods(placed as i64 + 1);
    assert!(
        !small_catalog()
            .iter()
            .any(|t| one_more.fits_in(t.allocatable())),
        "{placed} placed, but one more would fit a type of the catalog"
    );
}

#[test]
fn zone_affinity_to_an_existing_pod_puts_pods_in_its_zone() {
    let mut s = snap(
        pods("web", 3, |b| {
            b.cpu(1000).mem(GI).affinity(labels::ZONE, "cache")
        }),
        vec![default_pool()],
    );
    let mut n = node("cache-node", ZONES[1], 2000, 4 * GI);
    n.allocatable = Resources::new(100, 128 * MI).with_pods(110); // only the cache fits
    s.nodes = vec![n];
    s.bound = vec![bound(
        "cache-node",
        pod("cache").label("app", "cache").build(),
    )];
    let plan = run(&s);
    assert_all_placed(&plan, 3);
    for i in 0..3 {
        let c = claim_of(&plan, &format!("web-{i}")).unwrap();
        assert_eq!(c.zone, ZONES[1]);
    }
}

#[test]
fn required_affinity_to_a_pod_that_exists_nowhere_is_unschedulable() {
    let s = snap(
        vec![pod("web").affinity(labels::ZONE, "ghost").build()],
        vec![default_pool()],
    );
    let plan = run(&s);
    assert_eq!(plan.pods_placed(), 0);
    let r = reason_for(&plan, "web").unwrap();
    assert!(r.contains("affinity"), "{r}");
}

#[test]
fn affinity_to_a_pending_pod_follows_it() {
    // "web" pods require the zone of the "cache" pod, which is also pending. Names put the
    // web pods first in placement order where sizes tie.
    let mut pending = pods("a-web", 2, |b| b.affinity(labels::ZONE, "cache"));
    pending.push(
        pod("z-cache")
            .label("app", "cache")
            .prefer(1, Requirement::single(labels::ZONE, ZONES[2]))
            .build(),
    );
    let s = snap(pending, vec![default_pool()]);
    let plan = run(&s);
    assert_all_placed(&plan, 3);
    let cache_zone = &claim_of(&plan, "z-cache").unwrap().zone;
    for i in 0..2 {
        assert_eq!(
            &claim_of(&plan, &format!("a-web-{i}")).unwrap().zone,
            cache_zone
        );
    }
}

// ---------------------------------------------------------------------------------------
// Host ports, DaemonSets, extended resources, impossible requests
// ---------------------------------------------------------------------------------------

#[test]
fn host_port_conflict_puts_pods_on_different_nodes() {
    let s = snap(pods("hp", 3, |b| b.host_port(8080)), vec![default_pool()]);
    let plan = run(&s);
    assert_all_placed(&plan, 3);
    let nodes: BTreeSet<&str> = (0..3)
        .map(|i| where_is(&plan, &format!("hp-{i}")).unwrap())
        .collect();
    assert_eq!(nodes.len(), 3);
}

#[test]
fn host_port_of_a_bound_pod_keeps_a_new_pod_off_that_node() {
    let mut s = snap(
        vec![pod("hp").host_port(9100).build()],
        vec![default_pool()],
    );
    s.nodes = vec![node("node-1", ZONES[0], 4000, 16 * GI)];
    s.bound = vec![bound("node-1", pod("exporter").host_port(9100).build())];
    let plan = run(&s);
    assert_all_placed(&plan, 1);
    assert!(claim_of(&plan, "hp").is_some());
    // Different port: the node is fine.
    s.pending = vec![pod("hp2").host_port(9200).build()];
    let plan = run(&s);
    assert_eq!(where_is(&plan, "hp2"), Some("node-1"));
}

#[test]
fn daemonset_overhead_is_charged_on_new_claims() {
    // c.2x allocatable is 1930m: a 1500m pod fits alone, but not beside a 1-cpu DaemonSet.
    let p = || vec![pod("p").cpu(1500).mem(GI).build()];
    let without = run(&snap(p(), vec![default_pool()]));
    let c0 = claim_of(&without, "p").unwrap();
    assert_eq!(c0.instance_type, "c.2x");

    let mut s = snap(p(), vec![default_pool()]);
    s.daemonsets = vec![pod("ds").cpu(1000).mem(256 * MI).build()];
    let with = run(&s);
    assert_all_placed(&with, 1);
    let c = claim_of(&with, "p").unwrap();
    assert_ne!(
        c.instance_type, "c.2x",
        "the DaemonSet does not fit beside the pod on c.2x"
    );
    assert_eq!(c.requests.cpu, 2500, "claim requests include the DaemonSet");
    assert!(c.requests.fits_in(&c.allocatable));
    for o in &c.instance_type_options {
        assert!(c.requests.fits_in(catalog_type(o).allocatable()), "{o}");
    }
    assert!(with.total_price_per_hour > without.total_price_per_hour);
}

#[test]
fn daemonset_that_does_not_tolerate_the_pool_taint_is_not_charged() {
    let mut tainted = default_pool();
    tainted.taints = vec![dedicated()];
    let mut s = snap(
        vec![
            pod("p")
                .cpu(1500)
                .mem(GI)
                .tolerate(Toleration::exists(Some("dedicated"), None))
                .build(),
        ],
        vec![tainted],
    );
    s.daemonsets = vec![pod("ds").cpu(1000).mem(256 * MI).build()];
    let plan = run(&s);
    let c = claim_of(&plan, "p").unwrap();
    assert_eq!(c.instance_type, "c.2x");
    assert_eq!(c.requests.cpu, 1500);
}

/// A new node's name is made at launch and is never an integer: a pod bounding the hostname
/// with Gt/Lt gets no new node (Kubernetes would never bind it there), and says why.
#[test]
fn integer_bound_on_the_hostname_gets_no_new_node() {
    for op in [Operator::Lt, Operator::Gt] {
        let p = pod("p")
            .cpu(250)
            .mem(128 * MI)
            .require(Requirement::new(labels::HOSTNAME, op, &["7"]).unwrap())
            .build();
        let plan = run(&snap(vec![p], vec![default_pool()]));
        assert!(plan.new_claims.is_empty(), "{op:?}: {:?}", plan.new_claims);
        let why = reason_for(&plan, "p").expect("unschedulable");
        assert!(why.contains("no new node can have"), "{why}");
    }
}

/// A DaemonSet that selects only the 16- and 32-vCPU types holds its host port on those
/// types alone: a pod needing the same port goes on a small type (where the DaemonSet never
/// runs), and is refused only when every type it could use runs the DaemonSet.
#[test]
fn daemonset_host_port_is_held_only_on_the_types_it_runs_on() {
    let large: Vec<String> = ["c", "m", "r", "mg"]
        .iter()
        .flat_map(|f| [format!("{f}.16x"), format!("{f}.32x")])
        .collect();
    let ds = pod("ds")
        .cpu(100)
        .mem(128 * MI)
        .host_port(8080)
        .require(Requirement::any_of(labels::INSTANCE_TYPE, large.clone()))
        .build();
    let small = pod("small").cpu(500).mem(GI).host_port(8080).build();
    // Needs more than an 8-vCPU type holds: only the large types, where the DaemonSet runs.
    let big = pod("big").cpu(12_000).mem(GI).host_port(8080).build();
    // Same size without the port: the large types take it, DaemonSet overhead and all.
    let big_no_port = pod("big-free").cpu(12_000).mem(GI).build();
    let mut s = snap(vec![small, big, big_no_port], vec![default_pool()]);
    s.daemonsets = vec![ds];
    let plan = run(&s);

    let c = claim_of(&plan, "small").expect("the small pod gets a node");
    assert!(
        c.instance_type_options.iter().all(|t| !large.contains(t)),
        "offered a type whose DaemonSet holds the port: {:?}",
        c.instance_type_options
    );
    assert!(!c.pods.contains(&key("big")));

    let why = reason_for(&plan, "big").expect("no type both fits and leaves the port free");
    assert!(why.contains("host port"), "{why}");

    let free = claim_of(&plan, "big-free").expect("the port-free pod fits a large type");
    assert!(
        large.contains(&free.instance_type),
        "{}",
        free.instance_type
    );
    assert_eq!(
        free.requests.cpu, 12_100,
        "the DaemonSet runs there and is charged"
    );
}

/// A pod that needs the port may not join a claim that could still grow into a type the
/// DaemonSet runs on: the claim's types narrow to those where the port is free.
#[test]
fn daemonset_host_port_narrows_a_shared_claim() {
    let ds = pod("ds")
        .cpu(100)
        .mem(128 * MI)
        .host_port(9100)
        .require(Requirement::single(labels::ARCH, "arm64"))
        .build();
    let mut s = snap(
        vec![
            pod("a").cpu(500).mem(GI).build(),
            pod("b").cpu(500).mem(GI).host_port(9100).build(),
        ],
        vec![default_pool()],
    );
    s.daemonsets = vec![ds];
    let plan = run(&s);
    assert_all_placed(&plan, 2);
    for c in &plan.new_claims {
        if c.pods.contains(&key("b")) {
            assert!(
                c.instance_type_options
                    .iter()
                    .all(|t| !t.starts_with("mg.")),
                "{:?}",
                c.instance_type_options
            );
        }
    }
}

fn catalog_with_gpus() -> Vec<Arc<InstanceType>> {
    let mut cat = small_catalog();
    cat.push(gpu_type("g.4x", 4, 16, 1, 1.5));
    cat.push(gpu_type("g.16x", 16, 64, 4, 5.0));
    cat
}

/// A DaemonSet asking for a GPU cannot run on a type without one: those types are out for
/// the pool (its overhead must fit in full, as in Karpenter), never a node whose requests
/// exceed its allocatable.
#[test]
fn daemonset_asking_for_a_gpu_rules_out_types_without_one() {
    let mut s = snap(
        vec![pod("p").cpu(500).mem(GI).build()],
        vec![pool("default", catalog_with_gpus())],
    );
    s.daemonsets = vec![pod("ds").cpu(100).mem(128 * MI).gpu(1).build()];
    let plan = run(&s);
    let c = claim_of(&plan, "p").expect("a GPU type takes it");
    assert!(c.instance_type.starts_with("g."), "{}", c.instance_type);
    assert!(
        c.requests.fits_in(&c.allocatable),
        "{:?} > {:?}",
        c.requests,
        c.allocatable
    );
}

#[test]
fn gpu_pods_land_only_on_types_with_gpus() {
    let cat = catalog_with_gpus();
    let gpus = |n: &str| {
        cat.iter()
            .find(|t| t.name == n)
            .unwrap()
            .capacity
            .get(GPU_NVIDIA)
    };
    let plan = run(&snap(
        pods("train", 2, |b| b.cpu(1000).mem(4 * GI).gpu(1)),
        vec![pool("default", catalog_with_gpus())],
    ));
    assert_all_placed(&plan, 2);
    for c in &plan.new_claims {
        assert!(gpus(&c.instance_type) >= 1, "{c:#?}");
        assert!(c.instance_type_options.iter().all(|o| gpus(o) >= 1));
        assert!(c.requests.get(GPU_NVIDIA) <= gpus(&c.instance_type));
    }
    // A non-GPU pod alone never pays for a GPU.
    let plan = run(&snap(
        vec![pod("plain").cpu(2000).mem(4 * GI).build()],
        vec![pool("default", catalog_with_gpus())],
    ));
    let plain = claim_of(&plan, "plain").unwrap();
    assert_eq!(gpus(&plain.instance_type), 0, "cheaper non-GPU types exist");
    // Three GPUs need the 4-GPU type.
    let plan = run(&snap(
        vec![pod("big").gpu(3).build()],
        vec![pool("default", catalog_with_gpus())],
    ));
    assert_eq!(claim_of(&plan, "big").unwrap().instance_type, "g.16x");
}

#[test]

fn non_gpu_pod_does_not_push_a_gpu_claim_to_a_pricier_type() {
    // Alone: train → g.4x (spot $0.60), plain → c.4x (spot $0.096): $0.696/h. Packed
    // together they need 4 cpu + 1 GPU, which only g.16x (spot $2.00) has.
    let plan = run(&snap(
        vec![
            pod("train").cpu(2000).mem(4 * GI).gpu(1).build(),
            pod("plain").cpu(2000).mem(4 * GI).build(),
        ],
        vec![pool("default", catalog_with_gpus())],
    ));
    assert_all_placed(&plan, 2);
    assert!(
        plan.total_price_per_hour <= 0.696 + 1e-9,
        "plan costs ${}/h: {:?}",
        plan.total_price_per_hour,
        plan.new_claims
            .iter()
            .map(|c| (&c.instance_type, &c.pods))
            .collect::<Vec<_>>()
    );
}

#[test]
fn gpu_pod_without_gpu_types_is_unschedulable_with_a_reason() {
    let s = snap(vec![pod("train").gpu(1).build()], vec![default_pool()]);
    let plan = run(&s);
    let r = reason_for(&plan, "train").unwrap();
    assert!(r.contains("default") && r.contains(GPU_NVIDIA), "{r}");
}

#[test]
fn pod_larger_than_any_type_is_unschedulable_with_pool_resource_and_amount() {
    let s = snap(
        vec![pod("huge").mem(2000 * GI).build()],
        vec![default_pool()],
    );
    let plan = run(&s);
    assert_eq!(plan.pods_placed(), 0);
    assert!(plan.new_claims.is_empty());
    let r = reason_for(&plan, "huge").unwrap();
    assert!(
        r.contains("no instance type in NodePool default has 2000 GiB memory"),
        "{r}"
    );
    assert!(r.contains("the largest offers"), "{r}");
    assert_eq!(plan.cost_lower_bound, 0.0);
}

#[test]
fn pod_needing_cpu_and_memory_no_single_type_has_together_is_unschedulable() {
    // c.16x has the cpu (16 cpu, 29.1 GiB allocatable) and r.4x the memory (4 cpu, 31 GiB
    // allocatable); 8 cpu with 30 GiB needs both at once.
    let p = pool(
        "default",
        small_catalog()
            .into_iter()
            .filter(|t| t.name == "c.16x" || t.name == "r.4x")
            .collect(),
    );
    let plan = run(&snap(
        vec![pod("odd").cpu(8000).mem(30 * GI).build()],
        vec![p],
    ));
    let r = reason_for(&plan, "odd").expect("no type has both");
    assert!(
        r.contains(
            "no single instance type in NodePool default has 8 cpu and 30 GiB memory together"
        ),
        "{r}"
    );
}

#[test]
fn no_nodepool_and_no_room_is_unschedulable() {
    let plan = run(&snap(vec![pod("p").build()], vec![]));
    assert_eq!(plan.pods_placed(), 0);
    assert!(reason_for(&plan, "p").unwrap().contains("NodePool"));
}

// ---------------------------------------------------------------------------------------
// minValues
// ---------------------------------------------------------------------------------------

fn families(opts: &[String]) -> BTreeSet<String> {
    opts.iter()
        .map(|o| {
            catalog_type(o)
                .label(labels::INSTANCE_FAMILY)
                .unwrap()
                .to_string()
        })
        .collect()
}

#[test]
fn min_values_on_instance_family_survives_truncation() {
    let mut p = default_pool();
    p.requirements = Requirements::new()
        .with(req(labels::INSTANCE_FAMILY, Operator::Exists, &[]).with_min_values(Some(3)));
    let s = snap(pods("web", 4, |b| b.cpu(500).mem(GI)), vec![p]);
    let plan = schedule(
        &s,
        &Options {
            max_instance_types: 1,
            ..Default::default()
        },
    );
    assert_all_placed(&plan, 4);
    for c in &plan.new_claims {
        let fams = families(&c.instance_type_options);
        assert!(
            fams.len() >= 3,
            "{:?} spans {fams:?}",
            c.instance_type_options
        );
        assert_eq!(c.instance_type, c.instance_type_options[0]);
    }
}

#[test]
fn min_values_on_instance_type_survives_truncation() {
    let mut p = default_pool();
    p.requirements = Requirements::new()
        .with(req(labels::INSTANCE_TYPE, Operator::Exists, &[]).with_min_values(Some(5)));
    let s = snap(pods("web", 4, |b| b.cpu(500).mem(GI)), vec![p]);
    let plan = schedule(
        &s,
        &Options {
            max_instance_types: 2,
            ..Default::default()
        },
    );
    assert_all_placed(&plan, 4);
    for c in &plan.new_claims {
        let distinct: BTreeSet<&String> = c.instance_type_options.iter().collect();
        assert!(distinct.len() >= 5, "{:?}", c.instance_type_options);
    }
}

#[test]
fn min_values_that_cannot_be_met_makes_the_pod_unschedulable() {
    let mut p = pool(
        "default",
        small_catalog()
            .into_iter()
            .filter(|t| t.name.starts_with("c."))
            .collect(),
    );
    p.requirements = Requirements::new()
        .with(req(labels::INSTANCE_FAMILY, Operator::Exists, &[]).with_min_values(Some(2)));
    let plan = run(&snap(vec![pod("p").build()], vec![p]));
    assert_eq!(plan.pods_placed(), 0);
    let r = reason_for(&plan, "p").unwrap();
    assert!(
        r.contains("minValues") && r.contains(labels::INSTANCE_FAMILY),
        "{r}"
    );
}

// ---------------------------------------------------------------------------------------
// Determinism
// ---------------------------------------------------------------------------------------

fn mixed_snapshot() -> Snapshot {
    let mut pending = fixtures::bench_pods(120, 7);
    pending.push(pod("huge").mem(2000 * GI).build());
    pending.push(
        pod("arm")
            .require(Requirement::single(labels::ARCH, "arm64"))
            .build(),
    );
    let mut tainted = pool("tainted", small_catalog());
    tainted.weight = 5;
    tainted.taints = vec![dedicated()];
    let mut s = snap(pending, vec![default_pool(), tainted]);
    s.nodes = vec![
        node("node-1", ZONES[0], 4000, 16 * GI),
        node("node-2", ZONES[2], 8000, 32 * GI),
    ];
    s.bound = vec![bound("node-1", pod("old").label("app", "zs-1").build())];
    s.daemonsets = vec![pod("ds").cpu(100).mem(128 * MI).build()];
    s
}

#[test]
fn same_snapshot_gives_an_identical_plan() {
    let s = mixed_snapshot();
    let a = format!("{:?}", run(&s));
    let b = format!("{:?}", run(&s.clone()));
    assert_eq!(a, b);
}

/// The plan with the unschedulable list sorted by pod, which is reported in input order.
fn normalised(mut plan: Plan) -> String {
    plan.unschedulable.sort_by(|a, b| a.pod.cmp(&b.pod));
    format!("{plan:?}")
}

#[test]
fn pending_pod_input_order_does_not_change_the_plan() {
    let s = mixed_snapshot();
    let mut reversed = s.clone();
    reversed.pending.reverse();
    let mut rotated = s.clone();
    rotated.pending.rotate_left(37);
    let base = normalised(run(&s));
    assert_eq!(base, normalised(run(&reversed)), "reversed input order");
    assert_eq!(base, normalised(run(&rotated)), "rotated input order");
}

// ---------------------------------------------------------------------------------------
// The embedded EC2 catalog
// ---------------------------------------------------------------------------------------

#[test]
fn embedded_catalog_places_a_realistic_mix_within_the_cost_bound() {
    let cat = adze_scheduling::catalog::embedded();
    let mut pending = fixtures::bench_pods(60, 3);
    pending.extend(pods("api", 6, |b| {
        b.cpu(500)
            .mem(GI)
            .label("app", "api")
            .spread(labels::ZONE, 1, true, "api")
    }));
    pending.extend(pods("arm", 4, |b| {
        b.cpu(1000)
            .mem(2 * GI)
            .require(Requirement::single(labels::ARCH, "arm64"))
    }));
    pending.extend(pods("mem", 2, |b| b.cpu(1000).mem(48 * GI)));
    pending.push(pod("train").cpu(4000).mem(16 * GI).gpu(1).build());
    let n = pending.len();
    let mut s = snap(pending, vec![pool("default", cat.clone())]);
    s.daemonsets = vec![pod("ds").cpu(100).mem(128 * MI).build()];
    let plan = run(&s);
    assert_all_placed(&plan, n);
    assert!(plan.total_price_per_hour > 0.0);
    assert!(plan.cost_lower_bound > 0.0);
    assert!(
        plan.cost_lower_bound <= plan.total_price_per_hour + 1e-9,
        "bound {} > price {}",
        plan.cost_lower_bound,
        plan.total_price_per_hour
    );
    let by_name: BTreeMap<&str, &Arc<InstanceType>> =
        cat.iter().map(|t| (t.name.as_str(), t)).collect();
    for c in &plan.new_claims {
        let it = by_name[c.instance_type.as_str()];
        assert!(
            c.requests.fits_in(it.allocatable()),
            "{} over-committed",
            c.name
        );
        assert!(c.instance_type_options.len() <= Options::default().max_instance_types);
    }
    let train = claim_of(&plan, "train").unwrap();
    assert!(
        by_name[train.instance_type.as_str()]
            .capacity
            .get(GPU_NVIDIA)
            >= 1
    );
    for i in 0..4 {
        let c = claim_of(&plan, &format!("arm-{i}")).unwrap();
        assert_eq!(
            by_name[c.instance_type.as_str()].label(labels::ARCH),
            Some("arm64")
        );
    }
    let counts = zone_counts(&plan, (0..6).map(|i| key(&format!("api-{i}"))));
    assert!(
        counts.len() == 3 && counts.values().all(|&n| n == 2),
        "{counts:?}"
    );
    eprintln!(
        "embedded catalog: {} pods on {} claims, ${:.4}/h, bound ${:.4}/h ({:.1}% over)",
        n,
        plan.new_claims.len(),
        plan.total_price_per_hour,
        plan.cost_lower_bound,
        100.0 * (plan.total_price_per_hour / plan.cost_lower_bound - 1.0)
    );
}

#[test]
fn claim_names_follow_the_seed_and_skip_reserved_names() {
    // Pods too big to share a node (the largest type has 32 cpu): one claim each.
    let s = snap(
        pods("big", 3, |b| b.cpu(20_000).mem(GI)),
        vec![default_pool()],
    );
    let names = |o: &Options| -> Vec<String> {
        schedule(&s, o)
            .new_claims
            .iter()
            .map(|c| c.name.clone())
            .collect()
    };
    let first = names(&Options::default());
    assert_eq!(first.len(), 3, "{first:?}");
    assert!(
        first
            .iter()
            .all(|n| n.starts_with("default-") && n.len() == "default-".len() + 5)
    );
    assert_eq!(first, names(&Options::default()), "same seed, same names");

    let reseeded = names(&Options {
        name_seed: 7,
        ..Default::default()
    });
    assert!(
        first.iter().all(|n| !reseeded.contains(n)),
        "another seed names claims afresh: {first:?} vs {reseeded:?}"
    );

    let avoiding = names(&Options {
        reserved_names: vec![first[0].clone()],
        ..Default::default()
    });
    assert!(!avoiding.contains(&first[0]), "{avoiding:?}");
}

// ---------------------------------------------------------------------------------------
// CSI volume attach limits
// ---------------------------------------------------------------------------------------

fn with_claims(mut p: Pod, driver: &str, claims: &[&str]) -> Pod {
    use adze_scheduling::volumes::AttachedVolume;
    p.volumes = claims
        .iter()
        .map(|c| AttachedVolume {
            driver: driver.to_string(),
            claim: format!("default/{c}"),
        })
        .collect();
    p
}

fn limited_node(limit: u32) -> ExistingNode {
    let mut n = node("n1", ZONES[0], 8000, 32 * GI);
    n.volume_limits = BTreeMap::from([("ebs.csi.aws.com".to_string(), limit)]);
    n
}

#[test]
fn a_node_whose_csi_driver_is_full_takes_no_pod_adding_a_volume() {
    let bound_pod = with_claims(pod("old").cpu(100).build(), "ebs.csi.aws.com", &["c-old"]);
    let pending: Vec<Pod> = (0..3)
        .map(|i| {
            with_claims(
                pod(&format!("db-{i}")).cpu(100).build(),
                "ebs.csi.aws.com",
                &[&format!("c-{i}")],
            )
        })
        .collect();
    let s = Snapshot {
        nodes: vec![limited_node(3)],
        bound: vec![bound("n1", bound_pod)],
        ..snap(pending, vec![default_pool()])
    };
    let plan = run(&s);
    assert_all_placed(&plan, 3);
    let on_node = (0..3)
        .filter(|i| where_is(&plan, &format!("db-{i}")) == Some("n1"))
        .count();
    assert_eq!(
        on_node, 2,
        "one slot taken by the bound pod, two left: {plan:#?}"
    );
    assert_eq!(plan.new_claims.len(), 1, "the third pod gets new capacity");
}

#[test]
fn pods_sharing_a_claim_attach_it_once() {
    let pending: Vec<Pod> = (0..5)
        .map(|i| {
            with_claims(
                pod(&format!("web-{i}")).cpu(100).build(),
                "ebs.csi.aws.com",
                &["shared"],
            )
        })
        .collect();
    let s = Snapshot {
        nodes: vec![limited_node(1)],
        ..snap(pending, vec![default_pool()])
    };
    let plan = run(&s);
    assert_all_placed(&plan, 5);
    assert!(plan.new_claims.is_empty(), "{plan:#?}");
}

#[test]
fn pods_of_other_drivers_and_without_volumes_ignore_the_limit() {
    let pending = vec![
        with_claims(pod("efs").cpu(100).build(), "efs.csi.aws.com", &["a", "b"]),
        pod("plain").cpu(100).build(),
    ];
    let s = Snapshot {
        nodes: vec![limited_node(0)],
        ..snap(pending, vec![default_pool()])
    };
    let plan = run(&s);
    assert_eq!(where_is(&plan, "efs"), Some("n1"));
    assert_eq!(where_is(&plan, "plain"), Some("n1"));
}
