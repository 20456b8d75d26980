//! Karpenter's repair suite (pkg/controllers/disruption/repair_test.go: node repair as a
//! budgeted voluntary disruption, v1.15), restated on the pure decision that `run` and
//! `simulate --disruption --node-repair` share (`adze_scheduling::disruption`: `decide_all`,
//! `repair_held`, `revalidate`), and on how the provisioner reads a Node's health
//! (`disruption::repair::health`) where a case hinges on the Node object. The table is
//! docs/conformance/disruption_repair.md.
//!
//! Karpenter's fake cloud provider repairs condition `BadNode` `False` after 30 minutes. Adze's
//! repair policies are fixed (those Karpenter's AWS provider ships), so its stand-in is
//! `KernelReady` `False`, tolerated for 30 minutes too (`Ready` is avoided: a not-Ready node also
//! counts as disrupting, which the budget cases would have to account for).

use adze_scheduling::disruption::repair::{NodeHealth, RepairMode};
use adze_scheduling::disruption::{
    Action, Budget, BudgetNodes, Decision, Input, Invalidated, Options, PoolPolicy, Reason,
    StaticSize, decide_all, repair_held, revalidate,
};
use adze_scheduling::fixtures::{ClusterBuilder, GI, ZONES, pod, pool, small_catalog};

const NOW: i64 = 1_000_000;
const MIN: i64 = 60;
/// The stand-in for Karpenter's `BadNode` condition (see the module doc).
const BAD: &str = "KernelReady";

fn budgeted() -> Options {
    Options {
        node_repair: Some(RepairMode::Budgeted),
        ..Options::default()
    }
}

/// `count` m.4x nodes n0, n1, … of pool "default" (with Karpenter's default budget,
/// `nodes: 10%`), each with a 500m/1Gi pod when `busy`, every one reporting `BAD` healthy.
fn cluster(count: usize, busy: bool) -> Input {
    let mut b = ClusterBuilder::new(pool("default", small_catalog()));
    for i in 0..count {
        let name = format!("n{i}");
        b = b.node(&name, "m.4x", ZONES[0], false);
        if busy {
            b = b.pod(&name, pod(&format!("p{i}")).cpu(500).mem(GI).build());
        }
    }
    let mut input = b
        .policy(|p| p.budgets = PoolPolicy::new("default").budgets)
        .now(NOW)
        .build();
    input.health = (0..count)
        .map(|i| {
            let name = format!("n{i}");
            NodeHealth::new(&name, &format!("{name}-claim"), "default").with(BAD, "True", Some(0))
        })
        .collect();
    input
}

/// Node `node` reports `condition` `False` since `minutes_ago`.
fn sicken(input: &mut Input, node: &str, condition: &str, minutes_ago: i64) {
    let h = input.health.iter_mut().find(|h| h.node == node).unwrap();
    h.conditions.retain(|c| c.type_ != condition);
    *h = h
        .clone()
        .with(condition, "False", Some(NOW - minutes_ago * MIN));
}

fn budget(input: &mut Input, nodes: &str) {
    input.policies[0].budgets = vec![Budget::nodes(BudgetNodes::parse(nodes).unwrap())];
}

/// The repairs the decision takes in one pass.
fn repairs(input: &Input, options: &Options) -> Vec<Decision> {
    decide_all(input, options, true, 100)
        .into_iter()
        .filter(|d| d.reason == Reason::Unhealthy)
        .collect()
}

fn repaired(input: &Input) -> Vec<String> {
    repairs(input, &budgeted())
        .iter()
        .flat_map(|d| d.node_names())
        .map(str::to_string)
        .collect()
}

/// Repair > should pre-spin a replacement and terminate the unhealthy node only after the replacement is healthy
/// Repair > should use the condition fallback for an unknown reason
#[test]
fn a_busy_unhealthy_node_is_replaced() {
    let mut input = cluster(1, true);
    sicken(&mut input, "n0", BAD, 31);
    let r = repairs(&input, &budgeted());
    assert_eq!(r.len(), 1, "{r:?}");
    assert_eq!(r[0].node_names(), ["n0"]);
    // a replacement for its pod: replace, not a bare delete
    assert_eq!(r[0].plan.new_claims.len(), 1, "{:?}", r[0].plan);
    assert!(r[0].plan.unschedulable.is_empty());
    assert_eq!(r[0].action(), Action::Replace);
    assert!(
        r[0].message
            .contains("node condition KernelReady has been False for 31m (tolerated for 30m)"),
        "{}",
        r[0].message
    );
}

/// Repair > should delete an empty unhealthy node without pre-spinning a replacement
#[test]
fn an_empty_unhealthy_node_is_deleted_without_replacement() {
    let mut input = cluster(1, false);
    sicken(&mut input, "n0", BAD, 31);
    let r = repairs(&input, &budgeted());
    assert_eq!(r.len(), 1);
    assert!(r[0].plan.new_claims.is_empty());
    assert_eq!(r[0].action(), Action::Delete);
}

/// Repair > should not repair before the toleration duration elapses
/// Repair > uninitialized nodes > should not repair before the toleration duration elapses
#[test]
fn nothing_before_the_toleration_ends() {
    for initialized in [true, false] {
        let mut input = cluster(1, true);
        input.nodes[0].initialized = initialized;
        sicken(&mut input, "n0", BAD, 10);
        assert!(repaired(&input).is_empty());
        sicken(&mut input, "n0", BAD, 29);
        assert!(repaired(&input).is_empty());
        // and nothing is reported held while it is tolerated
        assert!(repair_held(&input, &budgeted(), &[]).is_empty());
        sicken(&mut input, "n0", BAD, 31);
        assert_eq!(repaired(&input), ["n0"]);
    }
}

/// Repair > should not repair a node carrying the do-not-repair annotation
/// Repair > uninitialized nodes > should not repair a node carrying the do-not-repair annotation
#[test]
fn do_not_repair_vetoes_repair_and_says_so() {
    for initialized in [true, false] {
        let mut input = cluster(1, true);
        input.nodes[0].initialized = initialized;
        sicken(&mut input, "n0", BAD, 31);
        input.health[0].do_not_repair = true;
        assert!(repaired(&input).is_empty());
        let held = repair_held(&input, &budgeted(), &[]);
        assert_eq!(held.len(), 1, "{held:?}");
        assert_eq!(held[0].nodeclaim, "n0-claim");
        assert!(
            held[0]
                .message
                .ends_with("but the node is annotated do-not-repair"),
            "{}",
            held[0].message
        );
        // still held on the next pass: the veto stays visible
        assert_eq!(repair_held(&input, &budgeted(), &[]), held);
    }
}

/// Repair > should report the do-not-repair veto ahead of an unbounded drain
#[test]
fn do_not_repair_is_the_reason_given_over_a_blocking_pod() {
    let mut input = ClusterBuilder::new(pool("default", small_catalog()))
        .node("n0", "m.4x", ZONES[0], false)
        .pod("n0", pod("blocking").cpu(500).mem(GI).build())
        .do_not_disrupt_pod("blocking")
        .now(NOW)
        .build();
    input.health =
        vec![NodeHealth::new("n0", "n0-claim", "default").with(BAD, "False", Some(NOW - 31 * MIN))];
    input.health[0].do_not_repair = true;
    assert!(repaired(&input).is_empty());
    let held = repair_held(&input, &budgeted(), &[]);
    assert_eq!(held.len(), 1);
    assert!(held[0].message.contains("do-not-repair"));
    assert!(
        !held[0].message.contains("do-not-disrupt"),
        "{}",
        held[0].message
    );
}

/// Repair > should not report the do-not-repair veto while the node is still within its policy's toleration
#[test]
fn no_veto_reported_while_tolerated() {
    let mut input = cluster(1, true);
    sicken(&mut input, "n0", BAD, 0);
    input.health[0].do_not_repair = true;
    assert!(repaired(&input).is_empty());
    assert!(repair_held(&input, &budgeted(), &[]).is_empty());
}

/// Repair > should still repair a node carrying only the do-not-disrupt annotation
#[test]
fn do_not_disrupt_on_the_node_does_not_stop_repair() {
    let mut input = cluster(1, true);
    input.nodes[0].do_not_disrupt = true;
    sicken(&mut input, "n0", BAD, 31);
    assert_eq!(repaired(&input), ["n0"]);
}

fn node_object(
    annotations: serde_json::Value,
) -> (adze_api::NodeClaim, k8s_openapi::api::core::v1::Node) {
    let claim = serde_json::from_value(serde_json::json!({
        "apiVersion": "adze.sh/v1", "kind": "NodeClaim",
        "metadata": {"name": "n0-claim", "labels": {"adze.sh/nodepool": "default"}},
        "spec": {"nodeClassRef": {"group": "aws.adze.sh", "kind": "EC2NodeClass", "name": "d"}},
        "status": {"nodeName": "n0", "providerID": "aws:///us-west-2a/i-0"},
    }))
    .unwrap();
    let node = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "n0", "annotations": annotations},
        "status": {"conditions": [{"type": BAD, "status": "False", "lastTransitionTime": "2026-01-01T00:00:00Z"}]},
    }))
    .unwrap();
    (claim, node)
}

fn health_of(annotations: serde_json::Value) -> Vec<NodeHealth> {
    let (claim, node) = node_object(annotations);
    let objects = adze_provisioner::provisioning::snapshot::Objects {
        claims: vec![std::sync::Arc::new(claim)],
        nodes: vec![std::sync::Arc::new(node)],
        ..Default::default()
    };
    adze_provisioner::disruption::repair::health(&objects)
}

/// Repair > should still repair a node whose do-not-repair annotation is not "true"
/// (and the veto as the provisioner reads it from the Node: Adze's key and Karpenter's)
#[test]
fn only_the_value_true_vetoes_repair() {
    for (annotations, veto) in [
        (
            serde_json::json!({"karpenter.sh/do-not-repair": "true"}),
            true,
        ),
        (serde_json::json!({"adze.sh/do-not-repair": "true"}), true),
        (
            serde_json::json!({"karpenter.sh/do-not-repair": "false"}),
            false,
        ),
        (
            serde_json::json!({"karpenter.sh/do-not-repair": "yes"}),
            false,
        ),
        (
            serde_json::json!({"karpenter.sh/do-not-disrupt": "true"}),
            false,
        ),
    ] {
        let health = health_of(annotations.clone());
        assert_eq!(health.len(), 1);
        assert_eq!(health[0].do_not_repair, veto, "{annotations}");
        let mut input = cluster(1, true);
        input.health[0].do_not_repair = health[0].do_not_repair;
        sicken(&mut input, "n0", BAD, 31);
        assert_eq!(repaired(&input).is_empty(), veto, "{annotations}");
    }
}

/// Repair > should not repair when the disruption budget is zero
/// Repair > should repair with the full policy decision once a blocking budget lifts
#[test]
fn a_zero_budget_holds_repair_until_it_lifts() {
    let mut input = cluster(1, true);
    budget(&mut input, "0");
    sicken(&mut input, "n0", BAD, 31);
    assert!(repaired(&input).is_empty());
    let held = repair_held(&input, &budgeted(), &[]);
    assert_eq!(held.len(), 1);
    assert!(
        held[0]
            .message
            .contains("allows no more Unhealthy disruptions now"),
        "{}",
        held[0].message
    );
    budget(&mut input, "100%");
    let r = repairs(&input, &budgeted());
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].plan.new_claims.len(), 1, "the same replace decision");
    assert!(revalidate(&r[0], &input, &budgeted()).is_ok());
    // the budget closing again before the command runs drops it
    budget(&mut input, "0");
    assert_eq!(
        revalidate(&r[0], &input, &budgeted()),
        Err(Invalidated::Budget("default".into()))
    );
}

/// Repair > should stop repairing a NodePool when more than 20% of its nodes are unhealthy
#[test]
fn the_guard_counts_fresh_faults_too() {
    let mut input = cluster(10, true);
    sicken(&mut input, "n0", BAD, 31);
    sicken(&mut input, "n1", BAD, 0);
    sicken(&mut input, "n2", BAD, 0);
    assert!(repaired(&input).is_empty());
    let held = repair_held(&input, &budgeted(), &[]);
    assert_eq!(held.len(), 1, "{held:?}");
    assert_eq!(
        (held[0].node.as_str(), held[0].nodeclaim.as_str()),
        ("n0", "n0-claim")
    );
    assert!(held[0].message.contains("more than 20% of the nodes of nodepool default are unhealthy (3 of 10; at most 2 may be)"), "{}", held[0].message);
}

/// Repair > should round the repair circuit-breaker threshold up for small NodePools
#[test]
fn one_of_three_may_be_repaired() {
    let mut input = cluster(3, true);
    sicken(&mut input, "n0", BAD, 31);
    assert_eq!(repaired(&input), ["n0"]);
}

/// Repair > should order a node by its most urgent condition, not just its highest-priority one
#[test]
fn the_longest_overdue_node_first() {
    // A's first fault (StorageReady) started 180m ago and a second (KernelReady) 33m ago; B's
    // one fault 120m ago. Every toleration is 30m; the budget (10% of 10) takes one node.
    let mut input = cluster(10, true);
    sicken(&mut input, "n8", "StorageReady", 180);
    sicken(&mut input, "n9", BAD, 120);
    sicken(&mut input, "n8", BAD, 33);
    assert_eq!(repaired(&input), ["n8"]);
    let held = repair_held(&input, &budgeted(), &repairs(&input, &budgeted()));
    assert_eq!(held.len(), 1);
    assert_eq!(held[0].node, "n9");
}

/// Repair > should size replacement capacity for a blocking pod when the drain is bounded
/// Repair > should not bypass a blocking pod without a bounded drain
#[test]
fn a_do_not_disrupt_pod_moves_with_the_repair() {
    let mut input = ClusterBuilder::new(pool("default", small_catalog()))
        .node("n0", "m.4x", ZONES[0], false)
        .pod("n0", pod("blocking").cpu(500).mem(GI).build())
        .do_not_disrupt_pod("blocking")
        .now(NOW)
        .build();
    input.health =
        vec![NodeHealth::new("n0", "n0-claim", "default").with(BAD, "False", Some(NOW - 31 * MIN))];
    let r = repairs(&input, &budgeted());
    // Adze's repair drain is always bounded (at zero: forceful), so the pod does not hold it
    assert_eq!(r.len(), 1, "{r:?}");
    assert_eq!(r[0].plan.new_claims.len(), 1);
    assert!(
        r[0].plan.new_claims[0]
            .pods
            .iter()
            .any(|p| p == "default/blocking"),
        "{:?}",
        r[0].plan.new_claims[0]
    );
}

fn static_cluster(limit: Option<u64>) -> Input {
    let mut input = cluster(5, true);
    input.policies[0].budgets = vec![Budget::nodes(BudgetNodes::Percent(100))];
    input.policies[0].fixed_size = true;
    input.policies[0].static_size = Some(StaticSize {
        replicas: 5,
        node_limit: limit,
        active: 5,
        leaving: 0,
    });
    input.static_pools = input.snapshot.nodepools.clone();
    sicken(&mut input, "n0", BAD, 31);
    input
}

/// Repair > should repair a static NodePool with a one-for-one replacement from the same pool
#[test]
fn a_static_node_is_replaced_from_its_pool() {
    let input = static_cluster(None);
    let r = repairs(&input, &budgeted());
    assert_eq!(r.len(), 1, "{r:?}");
    assert_eq!(r[0].nodes[0].nodepool, "default");
    assert_eq!(r[0].plan.new_claims.len(), 1, "{:?}", r[0].plan);
    assert_eq!(r[0].plan.new_claims[0].nodepool, "default");
}

/// Repair > should honor a static NodePool node limit before reserving replacement capacity
#[test]
fn a_static_pool_at_its_node_limit_waits() {
    let input = static_cluster(Some(5));
    assert!(repaired(&input).is_empty());
    let held = repair_held(&input, &budgeted(), &[]);
    assert_eq!(held.len(), 1);
    assert!(
        held[0].message.contains("at limits.nodes (5)"),
        "{}",
        held[0].message
    );
    // one node of room: swapped
    assert_eq!(repaired(&static_cluster(Some(6))), ["n0"]);
}

/// Repair > should explicitly exclude standalone NodeClaims that have no safe replacement template
#[test]
fn a_node_of_no_pool_is_not_repaired() {
    let mut input = cluster(1, true);
    input.snapshot.nodes[0].nodepool = None;
    input.health[0].nodepool = None;
    sicken(&mut input, "n0", BAD, 31);
    assert!(repaired(&input).is_empty());
    let held = repair_held(&input, &budgeted(), &[]);
    assert_eq!(held.len(), 1);
    assert!(
        held[0].message.contains("belongs to no NodePool"),
        "{}",
        held[0].message
    );
}

/// Repair > should not repair a node whose condition does not match any policy
#[test]
fn a_condition_no_policy_names_is_ignored() {
    let mut input = cluster(1, true);
    sicken(&mut input, "n0", "SomeOtherCondition", 31);
    assert!(repaired(&input).is_empty());
    assert!(repair_held(&input, &budgeted(), &[]).is_empty());
}

/// Repair > should not repair when the NodeRepair feature gate is disabled
/// Repair > should not repair when --legacy-node-repair is set
#[test]
fn the_budgeted_method_is_off_without_node_repair_or_with_legacy() {
    let mut input = cluster(1, true);
    sicken(&mut input, "n0", BAD, 31);
    for mode in [None, Some(RepairMode::Legacy)] {
        let options = Options {
            node_repair: mode,
            ..Options::default()
        };
        assert!(repairs(&input, &options).is_empty(), "{mode:?}");
    }
    assert_eq!(repaired(&input), ["n0"]);
}

/// Repair > uninitialized nodes > should repair an unhealthy node that never initialized
/// Repair > uninitialized nodes > should repair without disruption budget
#[test]
fn a_node_that_never_initialized_is_repaired_whatever_the_budget() {
    let mut input = cluster(1, false);
    input.nodes[0].initialized = false;
    budget(&mut input, "0");
    sicken(&mut input, "n0", BAD, 31);
    let r = repairs(&input, &budgeted());
    assert_eq!(r.len(), 1, "{r:?}");
    assert_eq!(r[0].action(), Action::Delete);
    assert!(revalidate(&r[0], &input, &budgeted()).is_ok());
}

/// Repair > uninitialized nodes > should not consume disruption budget for initialized nodes
#[test]
fn repairing_an_uninitialized_node_leaves_the_budget_to_the_others() {
    let mut input = cluster(6, true);
    budget(&mut input, "1");
    input.nodes[0].initialized = false;
    sicken(&mut input, "n0", BAD, 31);
    sicken(&mut input, "n1", BAD, 31);
    let mut got = repaired(&input);
    got.sort();
    assert_eq!(got, ["n0", "n1"]);
}

/// Repair > uninitialized nodes > should not repair a node that never registered
#[test]
fn a_node_that_never_registered_has_no_health() {
    // Without a registered Node the NodeClaim has no status.nodeName: nothing to judge.
    let (mut claim, node) = node_object(serde_json::json!({}));
    claim.status.as_mut().unwrap().node_name = None;
    let objects = adze_provisioner::provisioning::snapshot::Objects {
        claims: vec![std::sync::Arc::new(claim)],
        nodes: vec![std::sync::Arc::new(node)],
        ..Default::default()
    };
    assert!(adze_provisioner::disruption::repair::health(&objects).is_empty());
    assert_eq!(health_of(serde_json::json!({})).len(), 1);
}

/// Repair > uninitialized nodes > should stop repairing a NodePool when more than 20% of its nodes are unhealthy
#[test]
fn the_guard_holds_uninitialized_nodes_too() {
    let mut input = cluster(3, true);
    for f in input.nodes.iter_mut() {
        f.initialized = false;
    }
    sicken(&mut input, "n0", BAD, 31);
    sicken(&mut input, "n1", BAD, 31);
    assert!(repaired(&input).is_empty());
    assert_eq!(repair_held(&input, &budgeted(), &[]).len(), 2);
}
