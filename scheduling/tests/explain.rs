//! `explain` agrees with the plan: for every pending pod of a mixed snapshot (taints, limits,
//! weights, existing nodes, topology, pods too big or selecting a missing label), the plan
//! the explaining run makes is the plan `schedule` makes, and the explanation's first
//! accepting option is where the plan put the pod (none when it stays pending).

use adze_scheduling::fixtures::{self, GI, pod};
use adze_scheduling::requirements::Operator;
use adze_scheduling::scheduler::explain::{Explanation, Outcome, Why};
use adze_scheduling::taints::{Effect, Taint, Toleration};
use adze_scheduling::{BoundPod, Options, Requirement, Snapshot, labels, schedule};

fn snapshot() -> Snapshot {
    let catalog = fixtures::small_catalog();
    let mut gpu = fixtures::pool("gpu", catalog.clone());
    gpu.weight = 10;
    gpu.taints = vec![Taint::new("dedicated", "gpu", Effect::NoSchedule)];
    let mut limited = fixtures::pool("limited", catalog.clone());
    limited.weight = 5;
    limited.limits.insert("cpu".to_string(), 16_000);
    let mut general = fixtures::pool("general", catalog.clone());
    general
        .requirements
        .add(Requirement::single(labels::ARCH, "amd64"));
    let c4 = catalog.iter().find(|t| t.name == "c.4x").unwrap();
    let mut tainted = fixtures::node_of_type("tainted", c4, "general", "test-1a", "on-demand");
    tainted.taints = vec![Taint::new("maintenance", "", Effect::NoSchedule)];
    let busy = fixtures::node_of_type("busy", c4, "general", "test-1b", "on-demand");
    let roomy = fixtures::node_of_type("roomy", c4, "general", "test-1c", "on-demand");
    let mut pending = fixtures::bench_pods(48, 3);
    pending.push(pod("huge").cpu(100_000).build());
    pending.push(
        pod("selects-missing")
            .require(Requirement::single("team", "blue"))
            .build(),
    );
    pending.push(
        pod("gpu-job")
            .cpu(2_000)
            .tolerate(Toleration::equal("dedicated", "gpu", None))
            .build(),
    );
    pending.push(
        pod("arm")
            .cpu(6_000)
            .require(Requirement::single(labels::ARCH, "arm64"))
            .build(),
    );
    pending.push(
        pod("not-c")
            .require(
                Requirement::new(labels::INSTANCE_FAMILY, Operator::NotIn, &["c", "m", "r"])
                    .unwrap(),
            )
            .mem(GI)
            .build(),
    );
    Snapshot {
        pending,
        bound: vec![BoundPod {
            node: "busy".to_string(),
            pod: pod("resident").cpu(3_500).build(),
            daemon: false,
        }],
        nodes: vec![tainted, busy, roomy],
        nodepools: vec![general, limited, gpu],
        ..Snapshot::default()
    }
}

/// The explanation's first accepting option is the plan's placement.
fn assert_agrees(e: &Explanation) {
    let node = e.nodes.iter().find(|n| n.refusal.is_none());
    let claims: Vec<&str> = e
        .node_claims
        .iter()
        .filter(|c| c.refusal.is_none())
        .map(|c| c.node_claim.as_str())
        .collect();
    let pool = e.node_pools.iter().find(|p| p.refusal.is_none());
    match &e.outcome {
        Outcome::ExistingNode { node: n, .. } => {
            assert_eq!(node.map(|x| x.node.as_str()), Some(n.as_str()), "{e:#?}")
        }
        Outcome::NewNodeClaim {
            node_claim,
            node_pool,
            ..
        } => {
            assert!(node.is_none(), "a node takes it first: {e:#?}");
            if claims.is_empty() {
                let pool = pool.unwrap_or_else(|| panic!("no pool takes it: {e:#?}"));
                assert_eq!(&pool.node_pool, node_pool, "{e:#?}");
                assert!(!pool.compatible.is_empty(), "{e:#?}");
            } else {
                assert!(claims.contains(&node_claim.as_str()), "{e:#?}");
            }
        }
        Outcome::Pending { reason } => {
            assert!(!reason.is_empty());
            assert!(node.is_none(), "{e:#?}");
            assert!(claims.is_empty(), "{e:#?}");
            assert!(pool.is_none(), "{e:#?}");
        }
    }
}

#[test]
fn explain_agrees_with_the_plan_for_every_pod() {
    let snap = snapshot();
    let opts = Options::default();
    let plan = schedule(&snap, &opts);
    assert!(plan.pods_placed() > 40, "{plan:#?}");
    assert!(!plan.unschedulable.is_empty());
    let mut seen = [false; 3];
    for p in &snap.pending {
        let (explained_plan, e) =
            adze_scheduling::scheduler::explain(&snap, &opts, &p.key()).unwrap();
        assert_eq!(
            explained_plan,
            plan,
            "explaining {} changed the plan",
            p.key()
        );
        assert_agrees(&e);
        seen[match e.outcome {
            Outcome::ExistingNode { .. } => 0,
            Outcome::NewNodeClaim { .. } => 1,
            Outcome::Pending { .. } => 2,
        }] = true;
    }
    assert_eq!(seen, [true; 3], "every kind of outcome is exercised");
}

#[test]
fn reasons_name_what_refuses() {
    let snap = snapshot();
    let opts = Options::default();
    let explain = |name: &str| {
        adze_scheduling::scheduler::explain(&snap, &opts, &format!("default/{name}"))
            .unwrap()
            .1
    };
    // Too big for every type: the pools group their types as too small, with the largest.
    let e = explain("huge");
    assert!(matches!(e.outcome, Outcome::Pending { .. }));
    let general = e
        .node_pools
        .iter()
        .find(|p| p.node_pool == "general")
        .unwrap();
    let small = general
        .refused
        .iter()
        .find(|g| g.kind == Why::Resources)
        .unwrap();
    assert!(small.reason.contains("100 cpu"), "{small:?}");
    // general allows amd64 only: the arm64 types are refused by its own requirement.
    let arm = general
        .refused
        .iter()
        .find(|g| g.kind == Why::Requirement)
        .unwrap();
    assert_eq!(arm.instance_types.len(), 5, "{arm:?}");
    assert!(arm.reason.contains(labels::ARCH), "{arm:?}");
    assert_eq!(general.instance_types, 20);
    let gpu = e.node_pools.iter().find(|p| p.node_pool == "gpu").unwrap();
    assert_eq!(gpu.refusal.as_ref().unwrap().kind, Why::Taint);
    assert!(gpu.refused.is_empty());
    // The tainted node and the cordon-free ones are told apart.
    let tainted = e.nodes.iter().find(|n| n.node == "tainted").unwrap();
    assert_eq!(tainted.refusal.as_ref().unwrap().kind, Why::Taint);
    let roomy = e.nodes.iter().find(|n| n.node == "roomy").unwrap();
    assert_eq!(roomy.refusal.as_ref().unwrap().kind, Why::Resources);

    // A selector on a label no pool or node has names the key.
    let e = explain("selects-missing");
    assert!(matches!(e.outcome, Outcome::Pending { .. }));
    for p in e.node_pools.iter().filter(|p| p.node_pool != "gpu") {
        let r = p.refusal.as_ref().unwrap();
        assert_eq!(r.kind, Why::Requirement, "{r:?}");
        assert!(r.message.contains("team"), "{r:?}");
    }
    let busy = e.nodes.iter().find(|n| n.node == "busy").unwrap();
    assert!(
        busy.summary.as_deref().unwrap().contains("team"),
        "{busy:?}"
    );

    // Types lacking a label the pod requires are grouped under that requirement.
    let e = explain("not-c");
    let limited = e
        .node_pools
        .iter()
        .find(|p| p.node_pool == "limited")
        .unwrap();
    let families = limited
        .refused
        .iter()
        .find(|g| g.kind == Why::Requirement)
        .unwrap();
    assert_eq!(families.instance_types.len(), 15, "{families:?}");
    assert!(families.reason.contains(labels::INSTANCE_FAMILY));
    // The five mg types remain: they hold the pod, or the pool's limits (spent by the pods
    // placed before it) refuse them.
    let rest = limited.compatible.len()
        + limited
            .refused
            .iter()
            .filter(|g| g.kind != Why::Requirement)
            .map(|g| g.instance_types.len())
            .sum::<usize>();
    assert_eq!(rest, 5, "{limited:#?}");

    // The tolerating pod may use the gpu pool, tried first by weight (a claim planned
    // before it may still take it first).
    let e = explain("gpu-job");
    assert_eq!(e.node_pools[0].node_pool, "gpu");
    assert!(e.node_pools[0].refusal.is_none(), "{e:#?}");
    assert!(!e.node_pools[0].compatible.is_empty());
}

#[test]
fn a_pool_at_its_limits_says_so() {
    let catalog = fixtures::small_catalog();
    let mut limited = fixtures::pool("limited", catalog);
    limited.limits.insert("cpu".to_string(), 4_000);
    let snap = Snapshot {
        pending: vec![pod("big").cpu(6_000).build()],
        nodepools: vec![limited],
        ..Snapshot::default()
    };
    let (_, e) =
        adze_scheduling::scheduler::explain(&snap, &Options::default(), "default/big").unwrap();
    assert!(matches!(e.outcome, Outcome::Pending { .. }));
    let p = &e.node_pools[0];
    assert_eq!(p.refusal.as_ref().unwrap().kind, Why::Limits, "{p:?}");
    let over = p.refused.iter().find(|g| g.kind == Why::Limits).unwrap();
    assert!(!over.instance_types.is_empty());
    assert!(
        adze_scheduling::scheduler::explain(&snap, &Options::default(), "default/none").is_none()
    );
}
