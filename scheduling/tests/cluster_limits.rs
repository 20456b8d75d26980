//! Cluster-wide limits across NodePools: one cap on what every NodePool's nodes and
//! in-flight claims hold together, on top of each pool's own limits.

use std::collections::BTreeMap;

use adze_scheduling::fixtures::{ZONES, node_of_type, pod, pool, small_catalog};
use adze_scheduling::labels;
use adze_scheduling::nodepool::NODES_LIMIT;
use adze_scheduling::{NodePool, Options, Requirement, Snapshot, schedule};

/// `n` pods of `milli` cpu that each need a node of their own, held to NodePool `to`.
fn lonely(to: &str, n: usize, milli: i64) -> Vec<adze_scheduling::Pod> {
    (0..n)
        .map(|i| {
            pod(&format!("{to}-{i}"))
                .cpu(milli)
                .label("app", "lonely")
                .anti_affinity(labels::HOSTNAME, "lonely")
                .require(Requirement::single(labels::NODEPOOL, to))
                .build()
        })
        .collect()
}

fn two_pools() -> Vec<NodePool> {
    vec![pool("a", small_catalog()), pool("b", small_catalog())]
}

fn capped(limits: &[(&str, i64)]) -> Options {
    Options {
        cluster_limits: limits
            .iter()
            .map(|(k, v)| (k.to_string(), *v))
            .collect::<BTreeMap<_, _>>(),
        ..Options::default()
    }
}

fn cpus(type_name: &str) -> i64 {
    type_name
        .split('.')
        .nth(1)
        .and_then(|s| s.strip_suffix('x'))
        .and_then(|s| s.parse().ok())
        .unwrap()
}

#[test]
fn a_cpu_cap_holds_across_two_pools_whichever_option_launches() {
    let mut pending = lonely("a", 2, 3_000);
    pending.extend(lonely("b", 2, 3_000));
    let snapshot = Snapshot {
        pending,
        nodepools: two_pools(),
        ..Default::default()
    };
    let free = schedule(&snapshot, &Options::default());
    assert_eq!(free.new_claims.len(), 4, "{free:#?}");
    // Three 3-cpu pods need 4-cpu nodes at least: 12 cpu hold three of the four.
    let plan = schedule(&snapshot, &capped(&[("cpu", 12_000)]));
    assert_eq!(plan.new_claims.len(), 3, "{plan:#?}");
    let pools: std::collections::BTreeSet<&str> = plan
        .new_claims
        .iter()
        .map(|c| c.nodepool.as_str())
        .collect();
    assert_eq!(pools.len(), 2, "both pools launch under the one cap");
    // Whichever option the cloud picks for each claim, the total stays within the cap.
    let widest: i64 = plan
        .new_claims
        .iter()
        .map(|c| {
            c.instance_type_options
                .iter()
                .map(|t| cpus(t))
                .max()
                .unwrap()
        })
        .sum();
    assert!(widest <= 12, "widest options total {widest} cpu");
    assert_eq!(plan.unschedulable.len(), 1);
    let reason = &plan.unschedulable[0].reason;
    assert!(
        reason.contains("cluster-wide limits") && reason.contains("12 cpu limit"),
        "{reason}"
    );
}

#[test]
fn existing_nodes_of_every_pool_count_against_the_cap() {
    let it = small_catalog()
        .into_iter()
        .find(|t| t.name == "m.4x")
        .unwrap();
    // A full node of a pool that is not even in the snapshot still counts: it is managed.
    let mut old = node_of_type("old", &it, "retired", ZONES[0], "on-demand");
    old.unschedulable = true;
    let unmanaged = {
        let mut n = node_of_type("byo", &it, "x", ZONES[0], "on-demand");
        n.nodepool = None;
        n.unschedulable = true;
        n
    };
    let snapshot = Snapshot {
        pending: lonely("a", 3, 3_000),
        nodes: vec![old, unmanaged],
        nodepools: two_pools(),
        ..Default::default()
    };
    let plan = schedule(&snapshot, &capped(&[("cpu", 12_000)]));
    assert_eq!(plan.new_claims.len(), 2, "{plan:#?}");
    assert_eq!(plan.unschedulable.len(), 1);
    assert!(plan.unschedulable[0].reason.contains("cluster-wide limits"));
}

#[test]
fn a_nodes_cap_counts_claims_of_every_pool_and_the_pools_own_limits_still_apply() {
    let mut pending = lonely("a", 3, 100);
    pending.extend(lonely("b", 3, 100));
    let mut pools = two_pools();
    pools[0].limits.insert(NODES_LIMIT.to_string(), 1);
    let plan = schedule(
        &Snapshot {
            pending,
            nodepools: pools,
            ..Default::default()
        },
        &capped(&[(NODES_LIMIT, 3)]),
    );
    let per_pool = |name: &str| {
        plan.new_claims
            .iter()
            .filter(|c| c.nodepool == name)
            .count()
    };
    assert_eq!((per_pool("a"), per_pool("b")), (1, 2), "{plan:#?}");
    let reasons: Vec<&str> = plan
        .unschedulable
        .iter()
        .map(|u| u.reason.as_str())
        .collect();
    assert_eq!(reasons.len(), 3);
    // Pool a's own limit stops its pods first; b's last pod meets the cluster's.
    assert!(
        reasons
            .iter()
            .filter(|r| r.contains("NodePool a has reached its limits"))
            .count()
            == 2,
        "{reasons:#?}"
    );
    assert!(
        reasons
            .iter()
            .any(|r| r.contains("cluster-wide limits")
                && r.contains("3 nodes limit with 0 nodes left")),
        "{reasons:#?}"
    );
}
