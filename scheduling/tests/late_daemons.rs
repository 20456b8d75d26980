//! DaemonSets created after a node was planned (Karpenter #731): counted where they will
//! run, by provisioning and by every disruption trial.

use std::collections::HashMap;

use adze_scheduling::disruption::{Action, Options, decide};
use adze_scheduling::fixtures::{ClusterBuilder, GI, ZONES, pod, pool, small_catalog};
use adze_scheduling::late_daemons::{Charged, charge, misfits, runs_on};
use adze_scheduling::taints::{Effect, Taint, Toleration};
use adze_scheduling::{Requirement, labels};

const A: &str = ZONES[0];

fn cluster() -> ClusterBuilder {
    let mut np = pool("default", small_catalog());
    np.requirements.add(Requirement::single(
        labels::CAPACITY_TYPE,
        labels::CAPACITY_TYPE_ON_DEMAND,
    ));
    ClusterBuilder::new(np)
}

fn p(name: &str, cpu: i64) -> adze_scheduling::Pod {
    pod(name).cpu(cpu).mem(GI).build()
}

fn agent(cpu: i64) -> adze_scheduling::Pod {
    pod("agent").ns("monitoring").cpu(cpu).mem(GI / 4).build()
}

/// Two c.4x nodes (3.92 vCPU allocatable): "keep" runs 2.5 vCPU, "idle" 1 vCPU.
fn two_nodes() -> ClusterBuilder {
    cluster()
        .node("keep", "c.4x", A, false)
        .node("idle", "c.4x", A, false)
        .pod("keep", p("k", 2500))
        .pod("idle", p("b1", 1000))
}

#[test]
fn charge_adds_the_missing_daemonset_pod_on_each_node_it_selects() {
    let mut input = two_nodes().daemonset(agent(600)).build();
    let before = input.snapshot.bound.len();
    // The DaemonSet already has its pod on "keep": only "idle" is charged.
    let added = charge(
        &mut input.snapshot,
        |d, n| d == 0 && n == "keep",
        &HashMap::new(),
    );
    assert_eq!(
        added,
        vec![Charged {
            daemon: 0,
            node: "idle".into()
        }]
    );
    assert_eq!(input.snapshot.bound.len(), before + 1);
    let b = input.snapshot.bound.last().unwrap();
    assert!(b.daemon);
    assert_eq!(b.node, "idle");
    assert_eq!(b.pod.key(), "monitoring/agent@idle");
    assert_eq!(b.pod.requests.cpu, 600);
}

#[test]
fn a_daemonset_runs_only_where_it_tolerates_and_selects() {
    let input = two_nodes().build();
    let mut tainted = input.snapshot.nodes[0].clone();
    tainted.taints = vec![Taint::new("gpu", "true", Effect::NoSchedule)];
    assert!(!runs_on(&agent(100), &tainted));
    let mut tolerant = agent(100);
    tolerant.tolerations = vec![Toleration::exists(Some("gpu"), None)];
    assert!(runs_on(&tolerant, &tainted));
    let arm = pod("arm-agent")
        .cpu(100)
        .require(Requirement::single(labels::ARCH, "arm64"))
        .build();
    assert!(!runs_on(&arm, &input.snapshot.nodes[0]));
    // A DaemonSet that waits for initialised nodes runs on an in-flight claim once it is
    // up, and is counted there; on a registered node without the label it does not run.
    let init = pod("init-agent")
        .cpu(100)
        .require(Requirement::single(labels::INITIALIZED, "true"))
        .build();
    assert!(!runs_on(&init, &input.snapshot.nodes[0]));
    let mut np = pool("default", small_catalog());
    np.requirements = Default::default();
    let plan = adze_scheduling::schedule(
        &adze_scheduling::Snapshot {
            pending: vec![p("x", 500)],
            nodepools: vec![np],
            ..Default::default()
        },
        &Default::default(),
    );
    let claim = adze_scheduling::ExistingNode::planned(&plan.new_claims[0]);
    assert!(claim.in_flight);
    assert!(runs_on(&init, &claim));
}

#[test]
fn pods_are_not_moved_into_room_a_late_daemonset_will_take() {
    // Without the DaemonSet, b1 fits beside k: "idle" is deleted.
    let d = decide(&two_nodes().build(), &Options::default()).expect("a decision");
    assert_eq!(d.action(), Action::Delete, "{}", d.message);
    assert_eq!(d.node_names(), ["idle"]);
    assert_eq!(d.plan.placements().get("default/b1").copied(), Some("keep"));

    // A 600m DaemonSet created since: "keep" holds 3.1 vCPU once its pod runs, so b1 no
    // longer fits there; the move must launch a node sized for b1 and the DaemonSet.
    let mut input = two_nodes().daemonset(agent(600)).build();
    let added = charge(&mut input.snapshot, |_, _| false, &HashMap::new());
    assert_eq!(added.len(), 2);
    let d = decide(&input, &Options::default()).expect("a decision");
    let placements = d.plan.placements();
    assert_ne!(
        placements.get("default/b1").copied(),
        Some("keep"),
        "{}",
        d.message
    );
    assert_eq!(d.action(), Action::Replace, "{}", d.message);
    let claim = &d.plan.new_claims[0];
    assert!(
        claim.allocatable.cpu >= 1000 + 600,
        "the replacement has room for b1 and the DaemonSet: {:?}",
        claim.allocatable
    );
    assert!(claim.instance_type.starts_with("c.2x"), "{}", d.message);
}

#[test]
fn a_replacement_is_sized_for_todays_daemonsets() {
    // Without DaemonSets, "idle" (c.4x, 1 vCPU used) is replaced by a c.2x.
    let d = decide(&two_nodes().build(), &Options::default()).unwrap();
    assert_eq!(d.action(), Action::Delete, "{}", d.message);
    let lone = || {
        cluster()
            .node("idle", "c.4x", A, false)
            .pod("idle", p("b1", 1000))
    };
    let d = decide(&lone().build(), &Options::default()).expect("a decision");
    assert_eq!(d.action(), Action::Replace, "{}", d.message);
    assert_eq!(d.plan.new_claims[0].instance_type, "c.2x");
    // A 1.5 vCPU DaemonSet created since the node launched: b1 and it need 2.5 vCPU, more
    // than a c.2x, and nothing cheaper than the c.4x holds them: the node stays.
    let mut input = lone().daemonset(agent(1500)).build();
    charge(&mut input.snapshot, |_, _| false, &HashMap::new());
    let d = decide(&input, &Options::default());
    assert!(d.is_none(), "{:?}", d.map(|d| d.message));
}

#[test]
fn misfits_name_nodes_whose_daemonsets_no_longer_fit() {
    // "keep" (3.92 vCPU) runs 2.5 vCPU; a 1.5 vCPU DaemonSet does not fit beside it.
    let mut input = two_nodes().daemonset(agent(1500)).build();
    let charged = charge(&mut input.snapshot, |_, _| false, &HashMap::new());
    let m = misfits(&input.snapshot, &charged);
    assert_eq!(m.len(), 1, "{m:?}");
    assert_eq!(m[0].node, "keep");
    assert_eq!(m[0].daemons, ["monitoring/agent"]);
    let alloc = input.snapshot.nodes[0].allocatable.cpu;
    assert_eq!(m[0].over.cpu, 2500 + 1500 - alloc);
    assert_eq!(m[0].over.memory, 0);
}

#[test]
fn a_node_whose_daemonsets_all_run_is_no_misfit() {
    // Over-full with its DaemonSet's pod running (requests resized, allocatable lowered):
    // nothing is left out, so nothing to replace for DaemonSets.
    let mut input = cluster()
        .node("n", "c.2x", A, false)
        .pod("n", p("huge", 3000))
        .daemon_pod("n", agent(500))
        .daemonset(agent(500))
        .build();
    let charged = charge(&mut input.snapshot, |_, node| node == "n", &HashMap::new());
    assert!(charged.is_empty());
    assert!(misfits(&input.snapshot, &charged).is_empty());
}

/// The pods a claim was launched for keep their room (the extender's ledger holds it until
/// they are bound): on a node whose claim still waits for them, a late DaemonSet pod is
/// counted only where it fits beside them, and the node is no misfit until they are bound.
#[test]
fn a_late_daemonset_takes_only_room_the_claims_waiting_pods_leave() {
    use adze_scheduling::resources::Resources;
    // "keep" (3.92 vCPU) runs 2.5 vCPU and waits for 1 vCPU more nominated to it.
    let waiting = |cpu: i64| {
        HashMap::from([(
            "keep".to_string(),
            Resources {
                cpu,
                ..Resources::default()
            },
        )])
    };
    // 600m does not fit beside 3.5 vCPU: not counted there (it will wait), only on "idle".
    let mut input = two_nodes().daemonset(agent(600)).build();
    let charged = charge(&mut input.snapshot, |_, _| false, &waiting(1000));
    assert_eq!(
        charged,
        vec![Charged {
            daemon: 0,
            node: "idle".into()
        }]
    );
    assert!(misfits(&input.snapshot, &charged).is_empty());
    // 400m fits beside them: counted.
    let mut input = two_nodes().daemonset(agent(400)).build();
    let charged = charge(&mut input.snapshot, |_, _| false, &waiting(1000));
    assert_eq!(charged.len(), 2, "{charged:?}");
    // Named with nothing waiting, the node's own pods hold it: 1.5 vCPU does not fit beside
    // 2.5, so it is not counted; once the claim waits for nothing (not named), it is, and
    // the node is a misfit.
    let mut input = two_nodes().daemonset(agent(1500)).build();
    let charged = charge(&mut input.snapshot, |_, _| false, &waiting(0));
    assert!(charged.iter().all(|c| c.node != "keep"), "{charged:?}");
    assert!(misfits(&input.snapshot, &charged).is_empty());
    let mut input = two_nodes().daemonset(agent(1500)).build();
    let charged = charge(&mut input.snapshot, |_, _| false, &HashMap::new());
    assert_eq!(misfits(&input.snapshot, &charged).len(), 1);
}
