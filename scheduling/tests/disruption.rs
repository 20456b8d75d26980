//! Behaviour of the disruption decision on small clusters built with
//! [`adze_scheduling::fixtures::ClusterBuilder`] over the small catalog (`c`, `m`, `r`, `mg`
//! families of 2–32 vCPUs; price $0.05/vCPU-h + $0.005/GiB-h; spot at 40%).

use std::time::Duration;

use adze_scheduling::disruption::{
    Action, Blocker, Budget, BudgetNodes, Input, Invalidated, Options, Reason, blocked, commit,
    decide, decide_all, expiry, hold, revalidate,
};
use adze_scheduling::fixtures::{ClusterBuilder, GI, ZONES, pod, pool, small_catalog};
use adze_scheduling::labels;

const A: &str = ZONES[0];

/// An on-demand-only pool, so savings come from packing rather than from moving to spot.
fn cluster() -> ClusterBuilder {
    let mut np = pool("default", small_catalog());
    np.requirements.add(adze_scheduling::Requirement::single(
        labels::CAPACITY_TYPE,
        labels::CAPACITY_TYPE_ON_DEMAND,
    ));
    ClusterBuilder::new(np)
}

fn opts() -> Options {
    Options::default()
}

fn p(name: &str, cpu: i64) -> adze_scheduling::Pod {
    pod(name).cpu(cpu).mem(GI).build()
}

/// Two busy m.8x nodes whose pods may not share a node (hostname anti-affinity) and need an
/// m.8x's memory, and one nearly idle m.8x: the cheapest move is deleting the idle one.
fn three_nodes() -> ClusterBuilder {
    let web = |name: &str| {
        pod(name)
            .cpu(4000)
            .mem(24 * GI)
            .label("app", "web")
            .anti_affinity(labels::HOSTNAME, "web")
            .build()
    };
    cluster()
        .node("busy-1", "m.8x", A, false)
        .node("busy-2", "m.8x", A, false)
        .node("idle", "m.8x", A, false)
        .pod("busy-1", web("a1"))
        .pod("busy-2", web("a2"))
        .pod("idle", p("b1", 500))
}

#[test]
fn underutilized_node_is_deleted_when_its_pods_fit_elsewhere() {
    let d = decide(&three_nodes().build(), &opts()).expect("a decision");
    assert_eq!(d.reason, Reason::Underutilized);
    assert_eq!(d.action(), Action::Delete, "{}", d.message);
    assert_eq!(d.node_names().len(), 1, "{}", d.message);
    assert!(d.plan.unschedulable.is_empty());
    // Every evicted pod has a place on a node that stays.
    let moved = d.plan.placements();
    for pod in d.pods() {
        let to = moved.get(pod).expect("placed");
        assert!(!d.node_names().contains(to));
    }
    assert!((d.saving() - d.nodes[0].price).abs() < 1e-9);
    assert!(d.message.starts_with("delete node"), "{}", d.message);
    assert!(d.message.contains("saves $"), "{}", d.message);
}

#[test]
fn oversized_node_is_replaced_by_a_cheaper_one() {
    let input = cluster()
        .node("big", "m.16x", A, false)
        .pod("big", p("small", 500))
        .build();
    let d = decide(&input, &opts()).expect("a decision");
    assert_eq!(d.action(), Action::Replace, "{}", d.message);
    assert_eq!(d.plan.new_claims.len(), 1);
    let claim = &d.plan.new_claims[0];
    assert_eq!(claim.pods, vec!["default/small".to_string()]);
    assert!(claim.price_per_hour < d.removed_price);
    assert!(d.saving() > 0.0);
    assert_eq!(
        d.message,
        "replace node big (m.16x, on-demand, $1.1200/h) with one node (c.2x on-demand, $0.1200/h): underutilized: 0 of its 1 pod(s) fit on other nodes, the rest on a cheaper node; saves $1.0000/h"
    );
}

#[test]
fn several_underused_nodes_merge_onto_one_cheaper_node() {
    let mut b = cluster();
    for i in 0..4 {
        let n = format!("n{i}");
        b = b
            .node(&n, "m.4x", A, false)
            .pod(&n, p(&format!("p{i}"), 1000));
    }
    let d = decide(&b.build(), &opts()).expect("a decision");
    assert!(d.nodes.len() >= 3, "{}", d.message);
    assert!(d.plan.new_claims.len() <= 1);
    assert!(d.replacement_price < d.removed_price);
}

#[test]
fn empty_node_waits_for_consolidate_after_then_is_deleted() {
    let base = three_nodes()
        .node("empty", "c.2x", A, false)
        .policy(|p| p.consolidate_after = Some(Duration::from_secs(300)));
    let now = 1_000_000;
    let recent = base
        .clone()
        .facts("empty", |f| f.last_pod_event = now - 100)
        .facts("idle", |f| f.last_pod_event = now - 100)
        .build();
    let d = decide(&recent, &opts());
    assert!(
        d.as_ref()
            .is_none_or(|d| !d.node_names().contains(&"empty")),
        "{d:?}"
    );
    let later = base
        .facts("empty", |f| f.last_pod_event = now - 300)
        .build();
    let d = decide(&later, &opts()).expect("a decision");
    assert_eq!(d.reason, Reason::Empty);
    assert_eq!(d.node_names(), vec!["empty"]);
}

#[test]
fn an_empty_node_holding_a_buffers_room_is_kept_and_without_the_buffer_removed() {
    let base = cluster().node("spare", "c.2x", A, false);
    let d = decide(&base.clone().build(), &opts()).expect("a decision");
    assert_eq!(d.reason, Reason::Empty);
    assert_eq!(d.node_names(), vec!["spare"]);

    let buffered = base.buffer_pod(p("web-buffer-0", 1500)).build();
    let d = decide(&buffered, &opts());
    assert!(d.is_none(), "the buffer's room was taken away: {d:?}");
    // A decision taken before the buffer existed no longer holds.
    let before = decide(&cluster().node("spare", "c.2x", A, false).build(), &opts()).unwrap();
    let err = revalidate(&before, &buffered, &opts()).unwrap_err();
    assert!(matches!(err, Invalidated::PodsDoNotFit(_)), "{err}");
}

#[test]
fn of_two_empty_nodes_the_one_the_buffer_needs_stays() {
    let input = cluster()
        .node("spare-1", "c.2x", A, false)
        .node("spare-2", "c.2x", A, false)
        .buffer_pod(p("web-buffer-0", 1500))
        .build();
    let d = decide(&input, &opts()).expect("a decision");
    assert_eq!(d.reason, Reason::Empty);
    assert_eq!(d.node_names().len(), 1, "{}", d.message);
}

#[test]
fn a_buffer_the_cluster_holds_no_room_for_does_not_keep_empty_nodes() {
    // The placeholder needs more than the empty node has: provisioning's job, not a reason
    // to keep the node.
    let input = cluster()
        .node("spare", "c.2x", A, false)
        .buffer_pod(p("big-buffer-0", 6000))
        .build();
    let d = decide(&input, &opts()).expect("a decision");
    assert_eq!(d.node_names(), vec!["spare"]);
}

#[test]
fn node_with_only_daemonset_pods_is_empty() {
    let input = three_nodes()
        .node("ds-only", "c.2x", A, false)
        .daemon_pod("ds-only", p("agent", 100))
        .build();
    let d = decide(&input, &opts()).expect("a decision");
    assert_eq!(d.reason, Reason::Empty);
    assert_eq!(d.node_names(), vec!["ds-only"]);
}

#[test]
fn do_not_disrupt_pod_keeps_its_node() {
    let input = three_nodes().do_not_disrupt_pod("b1").build();
    let d = decide(&input, &opts());
    assert!(
        d.as_ref().is_none_or(|d| !d.node_names().contains(&"idle")),
        "{d:?}"
    );
}

#[test]
fn do_not_disrupt_node_is_never_picked() {
    let input = three_nodes()
        .facts("idle", |f| f.do_not_disrupt = true)
        .build();
    let d = decide(&input, &opts());
    assert!(
        d.as_ref().is_none_or(|d| !d.node_names().contains(&"idle")),
        "{d:?}"
    );
}

#[test]
fn pinned_pod_on_a_consolidatable_node_is_reported_as_the_blocker() {
    let input = three_nodes().do_not_disrupt_pod("b1").build();
    let b = blocked(&input);
    assert_eq!(b.len(), 1, "{b:?}");
    assert_eq!(b[0].node, "idle");
    assert_eq!(b[0].blocker, Blocker::DoNotDisruptPod("default/b1".into()));
    // Empty does not apply: the node has a pod.
    assert_eq!(b[0].methods, vec![Reason::Underutilized]);
    assert_eq!(
        b[0].message(),
        "Cannot disrupt node: pod default/b1 is annotated adze.sh/do-not-disrupt or \
         karpenter.sh/do-not-disrupt (otherwise eligible: Underutilized)"
    );
}

#[test]
fn no_blocker_is_reported_for_a_node_no_method_would_take() {
    // consolidateAfter not yet passed, not drifted: the pin stops nothing now.
    let input = three_nodes()
        .do_not_disrupt_pod("b1")
        .policy(|p| p.consolidate_after = Some(Duration::from_secs(600)))
        .facts("idle", |f| f.last_pod_event = 1_000_000 - 60)
        .build();
    assert_eq!(blocked(&input), vec![]);
    // Consolidation off: the same.
    let never = three_nodes()
        .do_not_disrupt_pod("b1")
        .policy(|p| p.consolidate_after = None)
        .build();
    assert_eq!(blocked(&never), vec![]);
}

#[test]
fn pdb_blocking_a_drifted_node_names_the_budget() {
    let input = three_nodes()
        .policy(|p| p.consolidate_after = None)
        .facts("idle", |f| f.drifted = true)
        .facts("busy-1", |f| f.drifted = true)
        .pdb_pod("b1", "default/b")
        .pdb("default/b", 0)
        .build();
    let b = blocked(&input);
    // busy-1 is drifted but nothing stops it: it is a candidate, not a blocked node.
    assert_eq!(b.len(), 1, "{b:?}");
    assert_eq!(b[0].node, "idle");
    assert_eq!(b[0].methods, vec![Reason::Drifted]);
    assert!(
        b[0].message()
            .contains("PodDisruptionBudget default/b allows no eviction of pod default/b1"),
        "{}",
        b[0].message()
    );
}

#[test]
fn nodes_passing_through_a_state_are_not_reported_as_blocked() {
    // Not initialized or already disrupting: not a blocker anyone set, whatever its pods.
    let input = three_nodes()
        .do_not_disrupt_pod("b1")
        .facts("idle", |f| f.disrupting = true)
        .facts("busy-1", |f| f.initialized = false)
        .build();
    assert_eq!(blocked(&input), vec![]);
}

#[test]
fn do_not_disrupt_node_lists_every_voluntary_method_it_qualifies_for() {
    // Empty, quiet and 31 days old (expireAfter defaults to 30 days).
    let input = cluster()
        .node("pinned", "c.2x", A, false)
        .facts("pinned", |f| f.do_not_disrupt = true)
        .now(31 * 86_400)
        .build();
    let b = blocked(&input);
    assert_eq!(b.len(), 1, "{b:?}");
    assert_eq!(b[0].blocker, Blocker::DoNotDisruptNode);
    // Expiry is forceful: do-not-disrupt does not block it, so it is not listed here ...
    assert_eq!(b[0].methods, vec![Reason::Empty, Reason::Underutilized]);
    // ... and the node expires anyway.
    let e = expiry::expired(&input);
    assert_eq!(e.len(), 1);
    assert_eq!(e[0].node, "pinned");
}

#[test]
fn pdb_that_allows_no_eviction_keeps_its_pods_node() {
    let blocked = three_nodes()
        .pdb_pod("b1", "default/b")
        .pdb("default/b", 0)
        .build();
    let d = decide(&blocked, &opts());
    assert!(
        d.as_ref().is_none_or(|d| !d.node_names().contains(&"idle")),
        "{d:?}"
    );
    let allowed = three_nodes()
        .pdb_pod("b1", "default/b")
        .pdb("default/b", 1)
        .build();
    let d = decide(&allowed, &opts()).expect("a decision");
    assert!(d.node_names().contains(&"idle"));
}

#[test]
fn multi_node_decision_evicts_no_more_pods_of_a_pdb_than_it_allows() {
    let mut b = cluster();
    for i in 0..4 {
        let n = format!("n{i}");
        let name = format!("p{i}");
        b = b
            .node(&n, "m.4x", A, false)
            .pod(&n, p(&name, 1000))
            .pdb_pod(&name, "default/web");
    }
    let d = decide(&b.pdb("default/web", 1).build(), &opts()).expect("a decision");
    assert_eq!(d.nodes.len(), 1, "{}", d.message);
}

#[test]
fn zero_budget_blocks_every_method() {
    let input = three_nodes()
        .facts("busy-1", |f| f.drifted = true)
        .node("empty", "c.2x", A, false)
        .policy(|p| p.budgets = vec![Budget::nodes(BudgetNodes::Count(0))])
        .build();
    assert_eq!(decide(&input, &opts()), None);
}

#[test]
fn budget_window_blocks_only_while_open() {
    // 1,000,000 s is 1970-01-12 13:46 UTC. A freeze from 13:00 for two hours.
    let freeze = Budget::parse(
        "0",
        Some("0 13 * * *"),
        Some(Duration::from_secs(2 * 3600)),
        vec![],
    )
    .unwrap();
    let during = three_nodes()
        .policy(|p| p.budgets = vec![freeze.clone()])
        .build();
    assert_eq!(decide(&during, &opts()), None);
    let after = three_nodes()
        .policy(|p| p.budgets = vec![freeze])
        .now(1_000_000 + 2 * 3600)
        .build();
    assert!(decide(&after, &opts()).is_some());
}

#[test]
fn nodes_already_disrupting_use_up_the_budget() {
    let input = three_nodes()
        .facts("busy-1", |f| f.disrupting = true)
        .policy(|p| p.budgets = vec![Budget::nodes(BudgetNodes::Count(1))])
        .build();
    assert_eq!(decide(&input, &opts()), None);
}

#[test]
fn budget_for_other_reasons_does_not_block_drift() {
    let input = three_nodes()
        .facts("busy-1", |f| f.drifted = true)
        .policy(|p| {
            p.budgets = vec![Budget::parse("0", None, None, vec![Reason::Underutilized]).unwrap()]
        })
        .build();
    let d = decide(&input, &opts()).expect("a decision");
    assert_eq!(d.reason, Reason::Drifted);
    assert_eq!(d.node_names(), vec!["busy-1"]);
}

#[test]
fn drift_comes_before_consolidation_and_replaces_one_node() {
    let input = three_nodes()
        .facts("busy-2", |f| f.drifted = true)
        .facts("busy-1", |f| f.drifted = true)
        .facts("busy-1", |f| f.created = 10)
        .build();
    let d = decide(&input, &opts()).expect("a decision");
    assert_eq!(d.reason, Reason::Drifted);
    // Oldest first.
    assert_eq!(d.node_names(), vec!["busy-2"]);
    assert!(d.message.contains("drifted"), "{}", d.message);
}

#[test]
fn expired_node_goes_regardless_of_budgets_do_not_disrupt_pdbs_and_unplaceable_pods() {
    let input = three_nodes()
        .facts("busy-1", |f| {
            f.created = 400_000;
            f.expire_after = Some(Duration::from_secs(500_000));
            f.do_not_disrupt = true;
        })
        .do_not_disrupt_pod("a1")
        .pdb_pod("a1", "default/a")
        .pdb("default/a", 0)
        // Its pod cannot go anywhere else (anti-affinity, no room), and no budget is left.
        .policy(|p| p.budgets = vec![Budget::nodes(BudgetNodes::Count(0))])
        .build();
    let e = expiry::expired(&input);
    assert_eq!(e.len(), 1, "{e:?}");
    assert_eq!(e[0].node, "busy-1");
    assert_eq!(e[0].age, 600_000);
    // The voluntary methods still respect all of it.
    assert_eq!(decide(&input, &opts()), None);
}

#[test]
fn expiry_is_not_a_voluntary_method() {
    // Every node far past the default 30 days: decide() never answers Expired.
    let input = three_nodes().now(100 * 86_400).build();
    let d = decide(&input, &opts()).expect("a decision");
    assert_ne!(d.reason, Reason::Expired);
    assert_eq!(expiry::expired(&input).len(), 3);
}

#[test]
fn consolidate_after_never_turns_consolidation_off() {
    let input = three_nodes()
        .policy(|p| p.consolidate_after = None)
        .node("empty", "c.2x", A, false)
        .build();
    assert_eq!(decide(&input, &opts()), None);
}

#[test]
fn when_empty_policy_leaves_underutilized_nodes() {
    let input = three_nodes()
        .policy(|p| p.consolidation = adze_scheduling::disruption::ConsolidationPolicy::WhenEmpty)
        .build();
    assert_eq!(decide(&input, &opts()), None);
}

#[test]
fn spot_node_is_replaced_by_spot_only_with_enough_cheaper_types() {
    let input = ClusterBuilder::new(pool("default", small_catalog()))
        .node("spot", "m.8x", A, true)
        .pod("spot", p("s", 500))
        .build();
    // The small catalog has fewer than 15 types cheaper than a spot m.8x that hold the pod.
    let d = decide(&input, &opts());
    assert!(d.is_none(), "{d:?}");
    let lenient = Options {
        spot_to_spot_min_types: 3,
        ..Options::default()
    };
    let d = decide(&input, &lenient).expect("a decision");
    assert_eq!(d.action(), Action::Replace);
    assert!(d.plan.new_claims[0].instance_type_options.len() >= 3);
}

#[test]
fn replacement_options_are_all_cheaper_than_the_removed_node() {
    let input = cluster()
        .node("big", "m.16x", A, false)
        .pod("big", p("small", 500))
        .build();
    let d = decide(&input, &opts()).expect("a decision");
    let claim = &d.plan.new_claims[0];
    let catalog = small_catalog();
    for t in &claim.instance_type_options {
        let it = catalog.iter().find(|i| &i.name == t).unwrap();
        let cheapest = it.cheapest_offering(&claim.requirements).unwrap().price;
        assert!(cheapest < d.removed_price, "{t} at {cheapest}");
    }
}

#[test]
fn revalidation_keeps_a_decision_that_still_holds() {
    let input = three_nodes().build();
    let d = decide(&input, &opts()).unwrap();
    let again = revalidate(&d, &input, &opts()).expect("still valid");
    assert_eq!(again.node_names(), d.node_names());
}

#[test]
fn revalidation_refuses_when_a_pod_became_do_not_disrupt() {
    let input = three_nodes().build();
    let d = decide(&input, &opts()).unwrap();
    let later: Input = three_nodes().do_not_disrupt_pod("b1").build();
    assert!(matches!(
        revalidate(&d, &later, &opts()),
        Err(Invalidated::Blocked { .. })
    ));
}

#[test]
fn revalidation_refuses_when_the_pods_no_longer_fit() {
    let input = three_nodes().build();
    let d = decide(&input, &opts()).unwrap();
    // The other nodes filled up meanwhile.
    let later = three_nodes()
        .pod("busy-1", pod("f1").cpu(3900).mem(6 * GI).build())
        .pod("busy-2", pod("f2").cpu(3900).mem(6 * GI).build())
        .build();
    let r = revalidate(&d, &later, &opts());
    assert!(
        r.is_err() || r.as_ref().unwrap().action() == Action::Replace,
        "{r:?}"
    );
    if let Ok(again) = r {
        assert!(again.replacement_price < again.removed_price);
    }
}

#[test]
fn revalidation_refuses_a_node_that_is_gone() {
    let input = three_nodes().build();
    let d = decide(&input, &opts()).unwrap();
    let later = cluster()
        .node("busy-1", "m.8x", A, false)
        .pod("busy-1", p("a1", 4000))
        .build();
    assert!(matches!(
        revalidate(&d, &later, &opts()),
        Err(Invalidated::NodeGone(_))
    ));
}

#[test]
fn same_input_gives_the_same_decision() {
    let input = three_nodes().build();
    assert_eq!(decide(&input, &opts()), decide(&input, &opts()));
}

#[test]
fn on_demand_node_may_be_replaced_by_spot_when_the_pool_allows_it() {
    let input = ClusterBuilder::new(pool("default", small_catalog()))
        .node("od", "m.4x", A, false)
        .pod("od", p("x", 3000))
        .build();
    let d = decide(&input, &opts()).expect("a decision");
    assert_eq!(d.action(), Action::Replace);
    assert_eq!(
        d.plan.new_claims[0].capacity_type,
        labels::CAPACITY_TYPE_SPOT
    );
    assert!(d.saving() > 0.0);
}

#[test]
fn empty_nodes_are_deleted_up_to_the_percentage_budget() {
    let mut b = three_nodes();
    for i in 0..7 {
        b = b.node(&format!("e{i}"), "c.2x", A, false);
    }
    // 10 nodes, 20% → 2 at once.
    let input = b
        .policy(|p| p.budgets = vec![Budget::nodes(BudgetNodes::Percent(20))])
        .build();
    let d = decide(&input, &opts()).expect("a decision");
    assert_eq!(d.reason, Reason::Empty);
    assert_eq!(d.nodes.len(), 2, "{}", d.message);
    assert!(d.node_names().iter().all(|n| n.starts_with('e')));
}

#[test]
fn drifted_node_whose_pods_fit_elsewhere_is_deleted_without_replacement() {
    let input = three_nodes().facts("idle", |f| f.drifted = true).build();
    let d = decide(&input, &opts()).expect("a decision");
    assert_eq!(d.reason, Reason::Drifted);
    assert_eq!(d.action(), Action::Delete);
    let again = revalidate(&d, &input, &opts()).expect("still valid");
    assert_eq!(again.node_names(), vec!["idle"]);
    // Once it is no longer drifted (the template was reverted), the decision lapses.
    let reverted = three_nodes().build();
    assert!(matches!(
        revalidate(&d, &reverted, &opts()),
        Err(Invalidated::NoLongerEligible { .. })
    ));
}

/// `n` drifted m.8x nodes, each holding one pod that needs most of an m.8x and may not share
/// a node with another (hostname anti-affinity): every replacement is a node of its own.
fn drifted_fleet(n: usize, budget: BudgetNodes) -> ClusterBuilder {
    let mut b = cluster().policy(|p| p.budgets = vec![Budget::nodes(budget)]);
    for i in 0..n {
        let node = format!("old-{i:02}");
        let pod_name = format!("w{i:02}");
        b = b
            .node(&node, "m.8x", A, false)
            .pod(
                &node,
                pod(&pod_name)
                    .cpu(6000)
                    .mem(24 * GI)
                    .label("app", "w")
                    .anti_affinity(labels::HOSTNAME, "w")
                    .build(),
            )
            .facts(&node, |f| {
                f.drifted = true;
                f.created = i as i64;
            });
    }
    b
}

#[test]
fn drift_rollout_takes_as_many_nodes_at_once_as_the_budget_allows() {
    // 50 drifted nodes under a 20 % budget: 10 replacements side by side, not 1.
    let input = drifted_fleet(50, BudgetNodes::Percent(20)).build();
    let all = decide_all(&input, &opts(), true, 100);
    assert_eq!(
        all.len(),
        10,
        "{:?}",
        all.iter().map(|d| d.node_names()).collect::<Vec<_>>()
    );
    let mut nodes = std::collections::BTreeSet::new();
    let mut claims = std::collections::BTreeSet::new();
    for d in &all {
        assert_eq!(d.reason, Reason::Drifted);
        assert_eq!(d.plan.new_claims.len(), 1, "{}", d.message);
        nodes.extend(d.node_names().into_iter().map(String::from));
        claims.extend(d.plan.new_claims.iter().map(|c| c.name.clone()));
    }
    // Ten different nodes, oldest first, and ten different replacements: no two decisions
    // count on the same room.
    assert_eq!(nodes.len(), 10);
    assert_eq!(claims.len(), 10);
    assert!(
        nodes.contains("old-00") && nodes.contains("old-09"),
        "{nodes:?}"
    );
    // Once they are carried out, the budget is used up until they are gone.
    let mut after = input.clone();
    for d in &all {
        commit(&mut after, d);
    }
    assert_eq!(decide(&after, &opts()), None);
    // A count budget bounds it the same way; `max` bounds one call.
    let three = drifted_fleet(8, BudgetNodes::Count(3)).build();
    assert_eq!(decide_all(&three, &opts(), true, 100).len(), 3);
    assert_eq!(decide_all(&three, &opts(), true, 2).len(), 2);
}

#[test]
fn later_decisions_do_not_count_on_room_an_earlier_one_took() {
    // Two drifted nodes whose pods fit, one at a time, on a spare node: the first decision
    // moves its pod there, so the second must launch a replacement.
    let input = cluster()
        .node("old-a", "m.8x", A, false)
        .node("old-b", "m.8x", A, false)
        .node("spare", "m.8x", A, false)
        .pod("old-a", p("a", 6000))
        .pod("old-b", p("b", 6000))
        .facts("old-a", |f| f.drifted = true)
        .facts("old-b", |f| f.drifted = true)
        .facts("spare", |f| f.do_not_disrupt = true)
        .policy(|p| p.budgets = vec![Budget::nodes(BudgetNodes::Count(2))])
        .build();
    let all = decide_all(&input, &opts(), false, 10);
    assert_eq!(all.len(), 2);
    assert!(all[0].plan.new_claims.is_empty(), "{}", all[0].message);
    assert_eq!(all[0].plan.existing[0].node, "spare");
    assert_eq!(all[1].plan.new_claims.len(), 1, "{}", all[1].message);
}

#[test]
fn side_by_side_decisions_share_a_pdbs_allowance() {
    // Each drifted node's pod is under one PDB allowing a single eviction: one at a time.
    let mut b = drifted_fleet(4, BudgetNodes::Count(4));
    for i in 0..4 {
        b = b.pdb_pod(&format!("w{i:02}"), "default/w");
    }
    let input = b.pdb("default/w", 1).build();
    assert_eq!(decide_all(&input, &opts(), true, 10).len(), 1);
}

/// `n` oversized m.16x nodes, each holding one pod of a Deployment with required hostname
/// anti-affinity: no two pods may share a node, so each node is its own consolidation (a
/// cheaper replacement), independent of the others.
fn oversized_apart(n: usize) -> Input {
    let mut b = cluster().policy(|p| p.budgets = vec![Budget::nodes(BudgetNodes::Percent(100))]);
    for i in 0..n {
        let node = format!("big-{i}");
        b = b.node(&node, "m.16x", A, false).pod(
            &node,
            pod(&format!("w{i}"))
                .cpu(500)
                .mem(GI)
                .label("app", "w")
                .anti_affinity(labels::HOSTNAME, "w")
                .build(),
        );
    }
    b.build()
}

#[test]
fn independent_consolidations_are_taken_side_by_side_up_to_the_cap() {
    let input = oversized_apart(5);
    let all = decide_all(&input, &opts(), true, 100);
    assert_eq!(
        all.len(),
        5,
        "{:?}",
        all.iter().map(|d| &d.message).collect::<Vec<_>>()
    );
    let mut nodes = std::collections::BTreeSet::new();
    for d in &all {
        assert_eq!(d.reason, Reason::Underutilized);
        assert_eq!(d.action(), Action::Replace, "{}", d.message);
        assert_eq!(d.plan.new_claims.len(), 1, "{}", d.message);
        // Each pod goes to its own replacement, never to an earlier decision's.
        assert!(d.plan.existing.is_empty(), "{}", d.message);
        nodes.extend(d.node_names().into_iter().map(String::from));
    }
    assert_eq!(nodes.len(), 5);
    // The cap bounds one call; the rest is decided on the next.
    let capped = Options {
        consolidations_per_pass: 2,
        ..opts()
    };
    assert_eq!(decide_all(&input, &capped, true, 100).len(), 2);
    let one = Options {
        consolidations_per_pass: 1,
        ..opts()
    };
    assert_eq!(decide_all(&input, &one, true, 100).len(), 1);
    // And the budget bounds it: 40 % of 5 nodes is 2.
    let mut tight = input.clone();
    tight.policies[0].budgets = vec![Budget::nodes(BudgetNodes::Percent(40))];
    assert_eq!(decide_all(&tight, &opts(), true, 100).len(), 2);
}

#[test]
fn a_node_receiving_pods_is_not_consolidated_in_the_same_call() {
    // idle's pod moves onto busy-1 or busy-2 (three_nodes); that node must not then be
    // drained by a later decision of the same call, whose pods would include one not there yet.
    let input = three_nodes()
        .policy(|p| p.budgets = vec![Budget::nodes(BudgetNodes::Percent(100))])
        .build();
    let all = decide_all(&input, &opts(), true, 100);
    assert!(!all.is_empty());
    let mut onto = std::collections::BTreeSet::new();
    for d in &all {
        for n in d.node_names() {
            assert!(
                !onto.contains(n),
                "{n} receives pods and is disrupted: {}",
                d.message
            );
        }
        onto.extend(d.plan.existing.iter().map(|e| e.node.clone()));
    }
    assert!(!all[0].plan.existing.is_empty(), "{}", all[0].message);
    let mut held = input.clone();
    commit(&mut held, &all[0]);
    hold(&mut held, &all[0]);
    for e in &all[0].plan.existing {
        let f = held.nodes.iter().find(|f| f.name == e.node).expect("facts");
        assert!(f.do_not_disrupt, "{}", e.node);
    }
}

#[test]
fn consolidation_is_decided_only_when_asked() {
    let input = three_nodes().build();
    let all = decide_all(&input, &opts(), true, 10);
    assert_eq!(all.len(), 1);
    assert_eq!(all[0].reason, Reason::Underutilized);
    assert!(decide_all(&input, &opts(), false, 10).is_empty());
    // Drift still goes ahead when consolidation may not.
    let drifted = three_nodes().facts("busy-1", |f| f.drifted = true).build();
    let only = decide_all(&drifted, &opts(), false, 10);
    assert_eq!(only.len(), 1);
    assert_eq!(only[0].reason, Reason::Drifted);
}

#[test]
fn do_not_disrupt_duration_keeps_the_node_only_until_it_runs_out() {
    let now = 1_000_000;
    let pinned = three_nodes()
        .now(now)
        .do_not_disrupt_pod_until("b1", now + 1)
        .build();
    let d = decide(&pinned, &opts());
    assert!(
        d.as_ref().is_none_or(|d| !d.node_names().contains(&"idle")),
        "{d:?}"
    );
    assert_eq!(
        blocked(&pinned)[0].blocker,
        Blocker::DoNotDisruptPod("default/b1".into())
    );
    // At the instant it runs out the pin is gone: the idle node is taken as without it.
    let lapsed = three_nodes()
        .now(now)
        .do_not_disrupt_pod_until("b1", now)
        .build();
    let d = decide(&lapsed, &opts()).expect("a decision");
    assert_eq!(d.node_names(), vec!["idle"], "{}", d.message);
    assert_eq!(blocked(&lapsed), vec![]);
}

/// Two m.8x nodes, each with eight 750m pods: neither can take the other's pods, and each
/// (or both together) can move to a cheaper c-family node, saving 14% of what is removed
/// while evicting every pod of the pool or half of them.
fn two_busy_nodes() -> ClusterBuilder {
    let mut b = cluster()
        .node("a", "m.8x", A, false)
        .node("b", "m.8x", A, false);
    for i in 0..8 {
        b = b
            .pod("a", p(&format!("a{i}"), 750))
            .pod("b", p(&format!("b{i}"), 750));
    }
    b
}

#[test]
fn balanced_refuses_a_marginal_replacement_that_disrupts_many_pods() {
    use adze_scheduling::disruption::ConsolidationPolicy;
    // Under WhenEmptyOrUnderutilized any saving is taken.
    let d = decide(&two_busy_nodes().build(), &opts()).expect("a decision");
    assert_eq!(d.action(), Action::Replace, "{}", d.message);
    // Balanced: the best move saves at most 14% of the pool's cost for at least 50% of its
    // disruption, a score of about 0.14 against the 0.5 needed.
    let balanced = two_busy_nodes()
        .policy(|p| p.consolidation = ConsolidationPolicy::Balanced)
        .build();
    let d = decide(&balanced, &opts());
    assert!(d.is_none(), "{d:?}");
}

#[test]
fn balanced_takes_a_delete_whose_savings_match_its_disruption() {
    use adze_scheduling::disruption::ConsolidationPolicy;
    // Deleting the idle node saves a third of the pool's cost and causes a third of its
    // disruption (per node 1 + 1 per pod, 2 of 6): score 1.0.
    let input = three_nodes()
        .policy(|p| p.consolidation = ConsolidationPolicy::Balanced)
        .build();
    let d = decide(&input, &opts()).expect("a decision");
    assert_eq!(d.node_names(), vec!["idle"], "{}", d.message);
    assert!(
        d.message
            .contains("Balanced NodePool default: score 1.00 >= 0.50 (saves 33.3% of the pool's cost, disrupts 33.3%"),
        "{}",
        d.message
    );
}

#[test]
fn pod_priority_raises_its_disruption_cost_within_bounds() {
    use adze_scheduling::disruption::consolidation::pod_disruption_cost;
    let mut pod = p("x", 100);
    assert_eq!(pod_disruption_cost(&pod), 1.0);
    pod.priority = 1 << 25;
    assert_eq!(pod_disruption_cost(&pod), 2.0);
    pod.priority = i32::MAX;
    assert_eq!(pod_disruption_cost(&pod), 10.0);
    pod.priority = i32::MIN;
    assert_eq!(pod_disruption_cost(&pod), 0.0);
}

#[test]
fn a_static_pool_keeps_its_replicas_through_consolidation() {
    // The idle node would be deleted (see the first test), and an empty one too; in a
    // static pool neither emptiness nor consolidation touches them.
    let input = three_nodes()
        .node("empty", "m.8x", A, false)
        .policy(|p| p.fixed_size = true)
        .build();
    assert!(decide(&input, &opts()).is_none());
    assert!(decide_all(&input, &opts(), true, 10).is_empty());
    // Drift still replaces a static pool's node, launching one of the pool's first ...
    let mut drifted = three_nodes()
        .policy(|p| {
            p.fixed_size = true;
            p.static_size = Some(adze_scheduling::disruption::StaticSize {
                replicas: 3,
                node_limit: None,
                active: 3,
                leaving: 0,
            })
        })
        .facts("idle", |f| f.drifted = true)
        .build();
    drifted.static_pools = drifted.snapshot.nodepools.clone();
    let d = decide(&drifted, &opts()).expect("a decision");
    assert_eq!(d.reason, Reason::Drifted);
    assert_eq!(d.node_names(), vec!["idle"]);
    assert_eq!(d.plan.new_claims.len(), 1);
    assert_eq!(d.plan.new_claims[0].nodepool, drifted.policies[0].nodepool);
    // ... but takes none while the pool is not scaled (refused, invalid, being deleted).
    drifted.policies[0].static_size = None;
    assert!(decide(&drifted, &opts()).is_none());
}

/// An empty node and a drifted node in zone A, an empty node in zone B.
fn shifted_cluster() -> ClusterBuilder {
    cluster()
        .node("empty-a", "c.2x", A, false)
        .node("drifted-a", "m.2x", A, false)
        .node("empty-b", "c.2x", ZONES[1], false)
        .pod("drifted-a", p("w", 500))
        .facts("drifted-a", |f| f.drifted = true)
        .zone_away(A)
}

#[test]
fn nodes_in_a_shifted_zone_are_not_voluntarily_disrupted_while_the_shift_lasts() {
    let input = shifted_cluster().build();
    let decisions = decide_all(&input, &opts(), true, 100);
    let touched: Vec<&str> = decisions.iter().flat_map(|d| d.node_names()).collect();
    // Zone B is not under the shift: its empty node still goes.
    assert_eq!(touched, vec!["empty-b"], "{decisions:?}");
    // The nodes in A are reported, with the methods they wait for.
    let b = blocked(&input);
    let names: Vec<(&str, &[Reason])> = b
        .iter()
        .map(|b| (b.node.as_str(), &b.methods[..]))
        .collect();
    assert_eq!(
        names,
        vec![
            ("empty-a", &[Reason::Empty, Reason::Underutilized][..]),
            ("drifted-a", &[Reason::Drifted, Reason::Underutilized][..]),
        ]
    );
    assert_eq!(b[0].blocker, Blocker::ZonalShift(A.into()));
    assert!(
        b[0].message()
            .contains("zonal shift moves the cluster away from zone test-1a"),
        "{}",
        b[0].message()
    );
}

#[test]
fn an_empty_node_is_kept_while_its_zone_is_shifted_away_and_removed_once_the_shift_ends() {
    let mut input = cluster()
        .node("empty-a", "c.2x", A, false)
        .zone_away(A)
        .build();
    assert!(decide(&input, &opts()).is_none());
    input.zones_away.clear();
    let d = decide(&input, &opts()).expect("a decision once the shift ends");
    assert_eq!(d.reason, Reason::Empty);
    assert_eq!(d.node_names(), vec!["empty-a"]);
    assert!(blocked(&input).is_empty());
}

#[test]
fn a_drifted_node_in_a_shifted_zone_is_replaced_once_the_shift_ends() {
    let mut input = shifted_cluster().build();
    input.zones_away.clear();
    let decisions = decide_all(&input, &opts(), true, 100);
    assert_eq!(decisions[0].reason, Reason::Drifted, "{decisions:?}");
    assert_eq!(decisions[0].node_names(), vec!["drifted-a"]);
}

#[test]
fn consolidation_elsewhere_does_not_move_pods_into_the_shifted_zone() {
    // The pod on the B node would fit on the idle A node (consolidation would delete B's
    // node), but A is shifted away: nothing moves there.
    let base = cluster()
        .node("idle-a", "m.2x", A, false)
        .node("small-b", "c.2x", ZONES[1], false)
        .pod("idle-a", p("x", 100))
        .pod("small-b", p("y", 500));
    let free = decide(&base.clone().build(), &opts()).expect("a consolidation without the shift");
    assert_eq!(free.reason, Reason::Underutilized, "{}", free.message);
    let shifted = base.zone_away(A).build();
    let d = decide(&shifted, &opts());
    assert!(
        d.as_ref()
            .is_none_or(|d| d.plan.placements().values().all(|to| *to != "idle-a")),
        "{d:?}"
    );
}

#[test]
fn a_shift_named_by_zone_id_matches_the_node_zone_id_label() {
    let mut input = cluster().node("empty-a", "c.2x", A, false).build();
    let node = &mut input.snapshot.nodes[0];
    node.requirements.add(adze_scheduling::Requirement::single(
        labels::ZONE_ID,
        "tst1-az1",
    ));
    input.zones_away.insert("tst1-az1".into());
    assert!(decide(&input, &opts()).is_none());
    assert_eq!(
        blocked(&input)[0].blocker,
        Blocker::ZonalShift("tst1-az1".into())
    );
}

/// `input` with its pool `pool`'s drift held back until `until` ([`drift_backoff`]).
fn drift_held(mut input: Input, pool: &str, until: i64) -> Input {
    input
        .drift_holds
        .push(adze_scheduling::disruption::drift_backoff::DriftHold {
            nodepool: pool.into(),
            until,
            consecutive: 1,
            why: "replacement failed to launch".into(),
        });
    input
}

#[test]
fn a_pool_in_drift_backoff_starts_no_drift_but_its_other_methods_and_other_pools_go_on() {
    let fleet = drifted_fleet(4, BudgetNodes::Count(2))
        .node("spare", "m.8x", A, false)
        .now(10_000)
        .build();
    assert_eq!(fleet.snapshot.nodes.len(), 5);
    let before = decide_all(&fleet, &opts(), true, 10);
    assert!(
        before.iter().any(|d| d.reason == Reason::Drifted),
        "{before:?}"
    );
    // Held: no drift command, but the empty spare is still deleted (emptiness is not held).
    let held = drift_held(fleet.clone(), "default", 10_060);
    let during = decide_all(&held, &opts(), true, 10);
    assert!(!during.is_empty());
    assert!(
        during.iter().all(|d| d.reason != Reason::Drifted),
        "{:?}",
        during.iter().map(|d| &d.message).collect::<Vec<_>>()
    );
    assert!(
        during.iter().any(|d| d.reason == Reason::Empty),
        "{during:?}"
    );
    // What is reported: the pool, its hold, and the drifted nodes it keeps back.
    let reported = adze_scheduling::disruption::drift_backoff::held(&held);
    assert_eq!(reported.len(), 1);
    assert_eq!(reported[0].hold.until, 10_060);
    assert_eq!(reported[0].nodes, ["old-00", "old-01", "old-02", "old-03"]);
    // A decision taken before the failure is dropped at validation, naming the hold.
    let drift = before.iter().find(|d| d.reason == Reason::Drifted).unwrap();
    match revalidate(drift, &held, &opts()) {
        Err(Invalidated::DriftBackoff { nodepool, until }) => {
            assert_eq!((nodepool.as_str(), until), ("default", 10_060))
        }
        other => panic!("{other:?}"),
    }
    // Another pool's hold does not touch this one; an ended hold holds nothing.
    for not_held in [
        drift_held(fleet.clone(), "other", 10_060),
        drift_held(fleet.clone(), "default", 10_000),
    ] {
        let all = decide_all(&not_held, &opts(), true, 10);
        assert!(all.iter().any(|d| d.reason == Reason::Drifted), "{all:?}");
        assert!(revalidate(drift, &not_held, &opts()).is_ok());
    }
}
