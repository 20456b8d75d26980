//! Node repair as a budgeted voluntary disruption (Karpenter v1.15), against its legacy,
//! forceful mode: the order of methods, the `Unhealthy` budget (which not-Ready nodes do not
//! use up), the 20 % guard, held repairs and revalidation.

use adze_scheduling::disruption::repair::{NodeHealth, RepairMode, Verdict, decide as judge};
use adze_scheduling::disruption::{
    Budget, BudgetNodes, Input, Invalidated, Options, Reason, commit, decide, decide_all, repair,
    repair_held, revalidate,
};
use adze_scheduling::fixtures::{ClusterBuilder, GI, ZONES, pod, pool, small_catalog};

const NOW: i64 = 1_000_000;
const MIN: i64 = 60;

fn opts(mode: Option<RepairMode>) -> Options {
    Options {
        node_repair: mode,
        ..Options::default()
    }
}

/// Ten m.4x nodes with a pod each; `sick` of them report Ready False since 40 − i minutes
/// ago (so sick-0 is due first) and are not Ready (disrupting for that alone); node n9 is
/// drifted. The pool's only budget is `unhealthy` nodes for reason Unhealthy.
fn cluster(sick: usize, unhealthy: &str) -> Input {
    let mut b = ClusterBuilder::new(pool("default", small_catalog()));
    let mut health = Vec::new();
    for i in 0..10 {
        let name = if i < sick {
            format!("sick-{i}")
        } else {
            format!("n{i}")
        };
        b = b
            .node(&name, "m.4x", ZONES[0], false)
            .pod(&name, pod(&format!("p{i}")).cpu(500).mem(GI).build());
        let mut h = NodeHealth::new(&name, &format!("{name}-claim"), "default");
        if i < sick {
            h = h.with("Ready", "False", Some(NOW - (40 - i as i64) * MIN));
            b = b.facts(&name, |f| {
                f.disrupting = true;
                f.disrupting_as_not_ready = true;
            });
        } else {
            h = h.with("Ready", "True", Some(0));
        }
        health.push(h);
    }
    let mut input = b
        .facts("n9", |f| {
            f.drifted = true;
            f.drifted_since = Some(NOW - 3600);
        })
        .policy(|p| {
            p.budgets = vec![Budget {
                reasons: vec![Reason::Unhealthy],
                ..Budget::nodes(BudgetNodes::parse(unhealthy).unwrap())
            }]
        })
        .now(NOW)
        .build();
    input.health = health;
    input
}

#[test]
fn budgeted_repair_goes_first_and_its_budget_holds_the_rest() {
    let input = cluster(2, "1");
    let options = opts(Some(RepairMode::Budgeted));
    let all = decide_all(&input, &options, true, 100);
    // Repair before drift; one repair only: the budget for Unhealthy is one node, and the two
    // not-Ready nodes do not use it up (were they counted, 1 − 2 would leave none).
    assert_eq!(all[0].reason, Reason::Unhealthy, "{}", all[0].message);
    assert_eq!(all[0].node_names(), ["sick-0"], "earliest due first");
    assert_eq!(all[0].method().as_str(), "Repair");
    assert!(
        all[0].message.contains(
            "node condition Ready has been False for 40m (tolerated for 30m); repaired within the NodePool's disruption budget for Unhealthy"
        ),
        "{}",
        all[0].message
    );
    assert_eq!(
        all.iter().filter(|d| d.reason == Reason::Unhealthy).count(),
        1
    );
    assert!(all.iter().any(|d| d.reason == Reason::Drifted));
    // Its pod is planned elsewhere.
    assert!(all[0].plan.unschedulable.is_empty());
    assert_eq!(all[0].pods().collect::<Vec<_>>(), ["default/p0"]);
    let held = repair_held(&input, &options, &all);
    assert_eq!(held.len(), 1, "{held:?}");
    assert_eq!(held[0].node, "sick-1");
    assert!(
        held[0].message.starts_with("repair blocked: node condition Ready has been False for 39m")
            && held[0].message.ends_with(
                "but the disruption budget of nodepool default allows no more Unhealthy disruptions now"
            ),
        "{}",
        held[0].message
    );
}

#[test]
fn a_zero_budget_holds_budgeted_repair_but_not_legacy_repair() {
    let input = cluster(1, "0");
    let budgeted = opts(Some(RepairMode::Budgeted));
    let d = decide(&input, &budgeted);
    assert!(
        d.as_ref().is_none_or(|d| d.reason != Reason::Unhealthy),
        "{d:?}"
    );
    assert_eq!(repair_held(&input, &budgeted, &[]).len(), 1);
    // Legacy: the decision leaves repair to the controller's forceful path, which does not
    // read budgets at all; the node is due there.
    let legacy = opts(Some(RepairMode::Legacy));
    let all = decide_all(&input, &legacy, true, 100);
    assert!(all.iter().all(|d| d.reason != Reason::Unhealthy), "{all:?}");
    assert!(repair_held(&input, &legacy, &all).is_empty());
    let forceful = judge(&input.health, &repair::default_policies(), NOW);
    assert_eq!(forceful.len(), 1);
    assert_eq!(forceful[0].verdict, Verdict::Repair);
    assert!(
        forceful[0]
            .message()
            .ends_with("repaired regardless of budgets, do-not-disrupt and PodDisruptionBudgets")
    );
    // Off: nothing.
    let off = decide_all(&input, &opts(None), true, 100);
    assert!(off.iter().all(|d| d.reason != Reason::Unhealthy));
}

#[test]
fn the_twenty_percent_guard_still_holds_budgeted_repair() {
    // 3 of 10 unhealthy: more than 20 % (2), so none is repaired, whatever the budget.
    let input = cluster(3, "10");
    let options = opts(Some(RepairMode::Budgeted));
    let all = decide_all(&input, &options, true, 100);
    assert!(all.iter().all(|d| d.reason != Reason::Unhealthy), "{all:?}");
    let held = repair_held(&input, &options, &all);
    assert_eq!(held.len(), 3);
    assert!(
        held.iter().all(|h| h.message.contains(
            "more than 20% of the nodes of nodepool default are unhealthy (3 of 10; at most 2 may be)"
        )),
        "{held:?}"
    );
}

#[test]
fn a_repair_is_revalidated_on_the_cluster_as_it_is_then() {
    let input = cluster(2, "2");
    let options = opts(Some(RepairMode::Budgeted));
    let d = decide(&input, &options).unwrap();
    assert_eq!(d.reason, Reason::Unhealthy);
    assert_eq!(
        revalidate(&d, &input, &options).unwrap().node_names(),
        ["sick-0"]
    );
    // Healed meanwhile: dropped.
    let mut healed = input.clone();
    healed.health[0] =
        NodeHealth::new("sick-0", "sick-0-claim", "default").with("Ready", "True", Some(NOW - 10));
    assert!(matches!(
        revalidate(&d, &healed, &options),
        Err(Invalidated::NoLongerEligible {
            reason: Reason::Unhealthy,
            ..
        })
    ));
    // With the first repair under way, a budget of two leaves room for the second; cut to
    // one before it is validated, the budget refuses it.
    let mut after = input.clone();
    commit(&mut after, &d);
    let second = decide(&after, &options).unwrap();
    assert_eq!(second.node_names(), ["sick-1"]);
    assert!(revalidate(&second, &after, &options).is_ok());
    after.policies[0].budgets[0].nodes = BudgetNodes::Count(1);
    assert_eq!(
        revalidate(&second, &after, &options),
        Err(Invalidated::Budget("default".into()))
    );
}
