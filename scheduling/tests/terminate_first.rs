//! Terminate-first (Karpenter v1.15) for capacity-constrained NodePools beyond static drift:
//! drift of a dynamic pool whose `limits` leave no room for a replacement, and budgeted repair
//! of static and dynamic pools at their limits. Gate: `Options::terminate_first_drift`.

use adze_scheduling::disruption::repair::{NodeHealth, RepairMode};
use adze_scheduling::disruption::{
    Action, Input, Invalidated, Options, Reason, StaticSize, decide_all, repair_held, revalidate,
};
use adze_scheduling::fixtures::{ClusterBuilder, GI, ZONES, pod, pool, small_catalog};

const NOW: i64 = 1_000_000;

fn opts(gate: bool, repair: Option<RepairMode>) -> Options {
    Options {
        terminate_first_drift: gate,
        node_repair: repair,
        ..Options::default()
    }
}

/// `n` m.4x nodes, each holding one 3-CPU pod (no two fit on one node), in pool `default`
/// with `limits` (key, value); `n0` drifted.
fn drifted(n: usize, limits: &[(&str, i64)]) -> ClusterBuilder {
    let mut p = pool("default", small_catalog());
    for (k, v) in limits {
        p.limits.insert(k.to_string(), *v);
    }
    let mut b = ClusterBuilder::new(p);
    for i in 0..n {
        let name = format!("n{i}");
        b = b
            .node(&name, "m.4x", ZONES[0], false)
            .pod(&name, pod(&format!("p{i}")).cpu(3000).mem(GI).build());
    }
    b.facts("n0", |f| {
        f.drifted = true;
        f.drifted_since = Some(NOW - 3600);
    })
    .now(NOW)
}

fn drift_of(input: &Input, options: &Options) -> Vec<adze_scheduling::disruption::Decision> {
    decide_all(input, options, false, 100)
        .into_iter()
        .filter(|d| d.reason == Reason::Drifted)
        .collect()
}

#[test]
fn drift_of_a_dynamic_pool_at_its_node_limit_deletes_first_only_with_the_gate() {
    let input = drifted(2, &[("nodes", 2)]).build();
    // Off: the replacement would be a third node over `limits.nodes: 2`; drift waits.
    assert!(drift_of(&input, &opts(false, None)).is_empty());
    // On: n0 is deleted first, nothing launched; its pod fits once n0 stops counting.
    let ds = drift_of(&input, &opts(true, None));
    assert_eq!(ds.len(), 1, "{ds:#?}");
    let d = &ds[0];
    assert_eq!(d.node_names(), ["n0"]);
    assert_eq!(d.action(), Action::Delete, "{}", d.message);
    assert!(d.plan.new_claims.is_empty() && d.plan.unschedulable.is_empty());
    assert_eq!(d.replacement_price, 0.0);
    // Revalidated by the same rule; without the gate the same decision no longer holds.
    let again = revalidate(d, &input, &opts(true, None)).expect("still delete-first");
    assert_eq!(again.action(), Action::Delete);
    assert!(matches!(
        revalidate(d, &input, &opts(false, None)),
        Err(Invalidated::PodsDoNotFit(_))
    ));
}

#[test]
fn drift_of_a_dynamic_pool_at_its_cpu_limit_deletes_first_with_the_gate() {
    // 2 × 4 CPUs in use of 10: no room for another 4-CPU node beside n0, room once it goes.
    let input = drifted(2, &[("cpu", 10_000)]).build();
    assert!(drift_of(&input, &opts(false, None)).is_empty());
    let ds = drift_of(&input, &opts(true, None));
    assert_eq!(ds.len(), 1, "{ds:#?}");
    assert_eq!(ds[0].action(), Action::Delete);
}

#[test]
fn below_its_limits_a_dynamic_pool_still_replaces_first() {
    let input = drifted(2, &[("nodes", 3)]).build();
    for gate in [false, true] {
        let ds = drift_of(&input, &opts(gate, None));
        assert_eq!(ds.len(), 1, "gate {gate}: {ds:#?}");
        assert_eq!(ds[0].action(), Action::Replace, "gate {gate}");
        assert_eq!(ds[0].plan.new_claims.len(), 1);
    }
}

#[test]
fn a_pod_the_freed_room_would_not_take_either_keeps_the_node() {
    // n0's pod asks for a GPU no type of the pool has: deleting n0 first would not place it.
    let mut input = drifted(2, &[("nodes", 2)]).build();
    let b = (input.snapshot.bound.iter_mut())
        .find(|b| b.node == "n0")
        .unwrap();
    b.pod = pod("p0").cpu(3000).mem(GI).gpu(1).build();
    assert!(drift_of(&input, &opts(true, None)).is_empty());
    // No limits at all: nothing the node holds would help; replace-first is all there is.
    let unlimited = drifted(2, &[]).build();
    let ds = drift_of(&unlimited, &opts(true, None));
    assert_eq!(ds[0].action(), Action::Replace);
}

/// Five m.4x nodes with a 3-CPU pod each, `n0` KernelReady False for 40 minutes (due: 30 m
/// tolerated; 1 of 5 is within the 20 % guard). `static_pool`: spec.replicas 5.
fn sick(limits: &[(&str, i64)], static_pool: bool) -> Input {
    let mut b = drifted(5, limits).facts("n0", |f| f.drifted = false);
    if static_pool {
        let limit = limits
            .iter()
            .find(|(k, _)| *k == "nodes")
            .map(|(_, v)| *v as u64);
        b = b.policy(|p| {
            p.fixed_size = true;
            p.static_size = Some(StaticSize {
                replicas: 5,
                node_limit: limit,
                active: 5,
                leaving: 0,
            });
        });
    }
    let mut input = b.build();
    if static_pool {
        input.static_pools = input.snapshot.nodepools.clone();
    }
    input.health = (0..5)
        .map(|i| {
            let name = format!("n{i}");
            let h = NodeHealth::new(&name, &format!("{name}-claim"), "default");
            if i == 0 {
                h.with("KernelReady", "False", Some(NOW - 40 * 60))
            } else {
                h.with("KernelReady", "True", Some(0))
            }
        })
        .collect();
    input
}

fn repairs(input: &Input, gate: bool) -> Vec<adze_scheduling::disruption::Decision> {
    decide_all(input, &opts(gate, Some(RepairMode::Budgeted)), false, 100)
        .into_iter()
        .filter(|d| d.reason == Reason::Unhealthy)
        .collect()
}

#[test]
fn budgeted_repair_of_a_static_pool_at_its_node_limit_deletes_first_with_the_gate() {
    let input = sick(&[("nodes", 5)], true);
    // Off: the repair waits for room that never comes, and says so.
    assert!(repairs(&input, false).is_empty());
    let options = opts(false, Some(RepairMode::Budgeted));
    let held = repair_held(&input, &options, &[]);
    assert_eq!(held.len(), 1, "{held:?}");
    assert!(
        held[0].message.contains("at limits.nodes (5)")
            && held[0].message.contains("--terminate-first-drift"),
        "{}",
        held[0].message
    );
    // On: deleted first; the pool's scaler refills the slot.
    let ds = repairs(&input, true);
    assert_eq!(ds.len(), 1, "{ds:#?}");
    assert_eq!(ds[0].node_names(), ["n0"]);
    assert_eq!(ds[0].action(), Action::Delete, "{}", ds[0].message);
    let options = opts(true, Some(RepairMode::Budgeted));
    assert!(repair_held(&input, &options, &ds).is_empty());
    let again = revalidate(&ds[0], &input, &options).expect("still delete-first");
    assert_eq!(again.action(), Action::Delete);
    // Below the limit the repair launches its replacement first, gate or not.
    let roomy = sick(&[("nodes", 6)], true);
    for gate in [false, true] {
        let ds = repairs(&roomy, gate);
        assert_eq!(ds.len(), 1, "gate {gate}: {ds:#?}");
        assert_eq!(ds[0].action(), Action::Replace, "gate {gate}");
    }
}

#[test]
fn budgeted_repair_of_a_dynamic_pool_at_its_limits_plans_its_pods_into_the_freed_room() {
    let input = sick(&[("nodes", 5)], false);
    // Off: the repair goes ahead (a broken node is not kept for its pods), but its plan can
    // place the pod nowhere: nothing launches beside the node over the limit.
    let off = repairs(&input, false);
    assert_eq!(off.len(), 1, "{off:#?}");
    assert_eq!(off[0].action(), Action::Delete);
    assert_eq!(off[0].plan.unschedulable.len(), 1);
    // On: deleted first, the pod planned into the room the node frees.
    let on = repairs(&input, true);
    assert_eq!(on.len(), 1, "{on:#?}");
    assert_eq!(on[0].action(), Action::Delete);
    assert!(on[0].plan.unschedulable.is_empty(), "{:?}", on[0].plan);
    // With room under the limits: replaced first either way.
    let roomy = sick(&[("nodes", 6)], false);
    for gate in [false, true] {
        let ds = repairs(&roomy, gate);
        assert_eq!(ds[0].action(), Action::Replace, "gate {gate}");
    }
}
