//! Property tests for disruption decisions on random small clusters: 1–7 nodes of random
//! small-catalog types (on demand or spot, random zone) holding random pods, some pods
//! do-not-disrupt or under PDBs that allow 0–2 evictions, some nodes do-not-disrupt,
//! drifted, old, or already disrupting; a random budget (count or percentage, optionally per
//! reason) and consolidateAfter. Every decision is checked by code that reads only the
//! inputs and the decision: each evicted pod has exactly one place, on a node that stays or
//! a replacement, and every node's requests stay within its allocatable; budgets, PDBs and
//! do-not-disrupt are respected; consolidation always saves money.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use adze_scheduling::disruption::{
    Budget, BudgetNodes, Decision, Input, Options, Reason, commit, decide, decide_all, hold,
    revalidate,
};
use adze_scheduling::fixtures::{ClusterBuilder, GI, MI, ZONES, pod, pool, small_catalog};
use adze_scheduling::{Resources, labels};
use proptest::prelude::*;

#[derive(Debug, Clone)]
struct NodeSpec {
    ty: usize,
    zone: usize,
    spot: bool,
    pods: Vec<(i64, i64)>,
    dnd: bool,
    drifted: bool,
    created: i64,
    disrupting: bool,
}

#[derive(Debug, Clone)]
struct Scenario {
    nodes: Vec<NodeSpec>,
    /// Per pod (by global index): do-not-disrupt, PDB index.
    pod_flags: Vec<(bool, Option<usize>)>,
    pdb_allowed: Vec<u32>,
    budget: Option<(bool, u64, Option<Reason>)>,
    consolidate_after: u64,
}

const TYPES: [&str; 8] = [
    "c.2x", "c.4x", "m.2x", "m.4x", "m.8x", "r.2x", "r.4x", "mg.4x",
];

fn node_spec() -> impl Strategy<Value = NodeSpec> {
    (
        0..TYPES.len(),
        0..3usize,
        prop::bool::weighted(0.3),
        prop::collection::vec((1..16i64, 1..16i64), 0..5),
        prop::bool::weighted(0.1),
        prop::bool::weighted(0.15),
        0..900_000i64,
        prop::bool::weighted(0.1),
    )
        .prop_map(
            |(ty, zone, spot, pods, dnd, drifted, created, disrupting)| NodeSpec {
                ty,
                zone,
                spot,
                pods: pods
                    .into_iter()
                    .map(|(c, m)| (c * 100, m * 128 * MI))
                    .collect(),
                dnd,
                drifted,
                created,
                disrupting,
            },
        )
}

fn scenario() -> impl Strategy<Value = Scenario> {
    (
        prop::collection::vec(node_spec(), 1..8),
        prop::collection::vec(
            (
                prop::bool::weighted(0.1),
                prop::option::weighted(0.3, 0..3usize),
            ),
            40,
        ),
        prop::collection::vec(0..3u32, 3),
        prop::option::weighted(
            0.7,
            (
                any::<bool>(),
                0..4u64,
                prop::option::of(prop::sample::select(Reason::ALL.to_vec())),
            ),
        ),
        prop::sample::select(vec![0u64, 60, 3600]),
    )
        .prop_map(
            |(nodes, pod_flags, pdb_allowed, budget, consolidate_after)| Scenario {
                nodes,
                pod_flags,
                pdb_allowed,
                budget,
                consolidate_after,
            },
        )
}

fn build(s: &Scenario) -> Input {
    let catalog = small_catalog();
    let mut b = ClusterBuilder::new(pool("default", catalog.clone()));
    let mut k = 0;
    for (i, n) in s.nodes.iter().enumerate() {
        let name = format!("n{i}");
        b = b.node(&name, TYPES[n.ty], ZONES[n.zone], n.spot);
        let it = catalog.iter().find(|t| t.name == TYPES[n.ty]).unwrap();
        let mut used = Resources::default();
        for (cpu, mem) in &n.pods {
            let p = pod(&format!("p{k}")).cpu(*cpu).mem(*mem).build();
            if !used.plus(&p.requests).fits_in(it.allocatable()) {
                continue;
            }
            used.add(&p.requests);
            let (dnd, pdb) = s.pod_flags[k % s.pod_flags.len()];
            b = b.pod(&name, p);
            if dnd {
                b = b.do_not_disrupt_pod(&format!("p{k}"));
            }
            if let Some(pdb) = pdb {
                b = b.pdb_pod(&format!("p{k}"), &format!("default/pdb{pdb}"));
            }
            k += 1;
        }
        let n = n.clone();
        b = b.facts(&name, move |f| {
            f.do_not_disrupt = n.dnd;
            f.drifted = n.drifted;
            f.created = n.created;
            f.last_pod_event = n.created;
            f.disrupting = n.disrupting;
        });
    }
    for (i, a) in s.pdb_allowed.iter().enumerate() {
        b = b.pdb(&format!("default/pdb{i}"), *a);
    }
    let budget = s.budget;
    let after = s.consolidate_after;
    b = b.policy(move |p| {
        p.consolidate_after = Some(Duration::from_secs(after));
        p.budgets = match budget {
            None => Vec::new(),
            Some((pct, n, reason)) => vec![Budget {
                nodes: if pct {
                    BudgetNodes::Percent((n * 25) as u8)
                } else {
                    BudgetNodes::Count(n)
                },
                window: None,
                reasons: reason.into_iter().collect(),
            }],
        };
    });
    b.build()
}

/// Independent check of one decision against its input.
fn check(input: &Input, d: &Decision) -> Result<(), String> {
    let removed: Vec<&str> = d.node_names();
    let facts: HashMap<&str, _> = input.nodes.iter().map(|f| (f.name.as_str(), f)).collect();
    let pod_facts: HashMap<&str, _> = input.pods.iter().map(|p| (p.pod.as_str(), p)).collect();
    let pdb: HashMap<&str, u32> = input
        .pdbs
        .iter()
        .map(|p| (p.name.as_str(), p.disruptions_allowed))
        .collect();
    // Do-not-disrupt and PDBs.
    let mut evicted_per_pdb: BTreeMap<&str, u32> = BTreeMap::new();
    for name in &removed {
        let f = facts[name];
        if f.do_not_disrupt || f.disrupting || !f.initialized {
            return Err(format!("picked protected or disrupting node {name}"));
        }
        for b in input.snapshot.bound.iter().filter(|b| b.node == *name) {
            let key = b.pod.key();
            if let Some(pf) = pod_facts.get(key.as_str()) {
                if pf.do_not_disrupt {
                    return Err(format!("evicts do-not-disrupt pod {key}"));
                }
                for p in &pf.pdbs {
                    if pdb.get(p.as_str()).copied().unwrap_or(0) == 0 {
                        return Err(format!("evicts {key} though PDB {p} allows nothing"));
                    }
                    *evicted_per_pdb.entry(p.as_str()).or_default() += 1;
                }
            }
        }
    }
    if removed.len() > 1 {
        for (p, n) in &evicted_per_pdb {
            if *n > pdb[p] {
                return Err(format!(
                    "evicts {n} pods of PDB {p} which allows {}",
                    pdb[p]
                ));
            }
        }
    }
    // Budgets: nodes already disrupting plus these never exceed the tightest active budget.
    let policy = &input.policies[0];
    let pool_nodes = input.nodes.iter().filter(|f| f.initialized).count() as u64;
    let busy = input.nodes.iter().filter(|f| f.disrupting).count() as u64;
    let cap = policy
        .budgets
        .iter()
        .filter(|b| b.applies_to(d.reason) && b.is_active(input.now))
        .map(|b| b.nodes.allowed(pool_nodes))
        .min()
        .unwrap_or(u64::MAX);
    if busy + removed.len() as u64 > cap {
        return Err(format!(
            "{} nodes disrupting plus {} more exceeds the budget of {cap}",
            busy,
            removed.len()
        ));
    }
    // Every evicted pod has exactly one place, not on a removed node, and nothing overflows.
    if !d.plan.unschedulable.is_empty() {
        return Err(format!("unschedulable: {:?}", d.plan.unschedulable));
    }
    let mut placed: HashMap<&str, usize> = HashMap::new();
    for c in &d.plan.new_claims {
        let mut req = Resources::default();
        for p in &c.pods {
            *placed.entry(p.as_str()).or_default() += 1;
            let b = input
                .snapshot
                .bound
                .iter()
                .find(|b| b.pod.key() == *p)
                .unwrap();
            req.add(&b.pod.requests);
        }
        if !req.fits_in(&c.allocatable) {
            return Err(format!("claim {} overflows", c.name));
        }
    }
    let mut load: HashMap<&str, Resources> = HashMap::new();
    for b in &input.snapshot.bound {
        load.entry(b.node.as_str())
            .or_default()
            .add(&b.pod.requests);
    }
    for e in &d.plan.existing {
        if removed.contains(&e.node.as_str()) {
            return Err(format!("pods placed on removed node {}", e.node));
        }
        for p in &e.pods {
            *placed.entry(p.as_str()).or_default() += 1;
            let b = input
                .snapshot
                .bound
                .iter()
                .find(|b| b.pod.key() == *p)
                .unwrap();
            load.entry(e.node.as_str())
                .or_default()
                .add(&b.pod.requests);
        }
        let node = input
            .snapshot
            .nodes
            .iter()
            .find(|n| n.name == e.node)
            .unwrap();
        if !load
            .get(e.node.as_str())
            .is_some_and(|l| l.fits_in(&node.allocatable))
        {
            return Err(format!("node {} overflows", e.node));
        }
    }
    for p in d.pods() {
        if placed.get(p) != Some(&1) {
            return Err(format!("evicted pod {p} placed {:?} times", placed.get(p)));
        }
    }
    if placed.len() != d.pods().count() {
        return Err("the plan places pods that are not evicted".into());
    }
    // Consolidation saves money, whichever option launches.
    if d.reason == Reason::Underutilized {
        if d.plan.new_claims.len() > 1 || d.replacement_price >= d.removed_price {
            return Err(format!("consolidation does not save: {}", d.message));
        }
        let catalog = small_catalog();
        for c in &d.plan.new_claims {
            for t in &c.instance_type_options {
                let it = catalog.iter().find(|i| &i.name == t).unwrap();
                let price = it.cheapest_offering(&c.requirements).unwrap().price;
                if price >= d.removed_price {
                    return Err(format!("option {t} at {price} is not cheaper"));
                }
            }
            let spot = |ct: &str| ct == labels::CAPACITY_TYPE_SPOT;
            if spot(&c.capacity_type)
                && d.nodes.iter().any(|n| spot(&n.capacity_type))
                && c.instance_type_options.len() < 15
            {
                return Err("spot-to-spot with fewer than 15 options".into());
            }
        }
    }
    if d.reason == Reason::Empty && d.pods().next().is_some() {
        return Err("an empty-node decision evicts pods".into());
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn decisions_keep_every_pod_placed_and_every_protection(s in scenario()) {
        let input = build(&s);
        let options = Options::default();
        if let Some(d) = decide(&input, &options) {
            if let Err(e) = check(&input, &d) {
                prop_assert!(false, "{e}\n{}", d.message);
            }
            // Same input, same decision; and it re-validates against the unchanged cluster.
            let twice = decide(&input, &options);
            prop_assert_eq!(Some(&d), twice.as_ref());
            let again = revalidate(&d, &input, &options);
            prop_assert!(again.is_ok(), "{:?}", again);
            let again = again.unwrap();
            prop_assert_eq!(again.node_names(), d.node_names());
        }
    }

    #[test]
    fn side_by_side_decisions_each_hold_on_the_cluster_the_ones_before_leave(s in scenario()) {
        let input = build(&s);
        let options = Options::default();
        let all = decide_all(&input, &options, true, 50);
        // The first is exactly what `decide` takes.
        let first = decide(&input, &options);
        prop_assert_eq!(all.first(), first.as_ref());
        let mut now = input.clone();
        let mut seen = std::collections::BTreeSet::new();
        let mut onto = std::collections::BTreeSet::new();
        for d in &all {
            // A node an earlier consolidation moves pods onto is not consolidated after it.
            if d.reason == Reason::Underutilized {
                for n in d.node_names() {
                    prop_assert!(!onto.contains(n), "{n} receives pods and is consolidated");
                }
                onto.extend(d.plan.existing.iter().map(|e| e.node.clone()));
            }
            // Each decision passes every check on the cluster as the earlier ones leave it:
            // budgets counted with them, PDB allowance shrunk by them, room they took gone.
            if let Err(e) = check(&now, d) {
                prop_assert!(false, "{e}\n{}", d.message);
            }
            for n in d.node_names() {
                prop_assert!(seen.insert(n.to_string()), "{n} disrupted twice");
            }
            let again = revalidate(d, &now, &options);
            prop_assert!(again.is_ok(), "{:?}", again);
            commit(&mut now, d);
            if d.reason == Reason::Underutilized {
                hold(&mut now, d);
            }
        }
        prop_assert!(
            all.iter().filter(|d| d.reason == Reason::Underutilized).count()
                <= options.consolidations_per_pass
        );
        prop_assert_eq!(&all, &decide_all(&input, &options, true, 50));
    }

    #[test]
    fn zero_budget_means_no_decision(s in scenario()) {
        let mut input = build(&s);
        input.policies[0].budgets = vec![Budget::nodes(BudgetNodes::Count(0))];
        prop_assert_eq!(decide(&input, &Options::default()), None);
    }
}

#[test]
fn memory_units_are_what_the_scenarios_assume() {
    // Guards the generator: 16 × 128 MiB is 2 GiB.
    assert_eq!(16 * 128 * MI, 2 * GI);
}
