//! Windows NodePools beside Linux ones: a Windows pod gets a Windows node at the Windows
//! (License Included) price, a Linux pod never lands on the Windows pool, a Windows node holds
//! as many pods as its primary network interface has addresses for, and DaemonSets that select
//! Linux cost a Windows node nothing.

use std::collections::BTreeSet;
use std::sync::Arc;

use adze_scheduling::catalog;
use adze_scheduling::fixtures::{pod, pool};
use adze_scheduling::instance_type::InstanceType;
use adze_scheduling::labels;
use adze_scheduling::node_class::{self, NodeClassFacts};
use adze_scheduling::{
    Effect, NodePool, Options, Plan, Pod, Requirement, Requirements, Snapshot, Taint, Toleration,
    schedule,
};

const BUILD_2022: &str = "10.0.20348";

fn class(windows_build: Option<&str>) -> NodeClassFacts {
    let mut image = Requirements::new().with(Requirement::single(labels::ARCH, "amd64"));
    if windows_build.is_some() {
        image.add(Requirement::single(labels::OS, "windows"));
    }
    NodeClassFacts {
        zones: BTreeSet::from(["us-east-1a".to_string()]),
        images: vec![image],
        windows_build: windows_build.map(str::to_string),
        ..Default::default()
    }
}

fn types(windows_build: Option<&str>) -> Vec<Arc<InstanceType>> {
    node_class::instance_types(&catalog::embedded(), &class(windows_build)).unwrap()
}

/// An on-demand pool of the m5 family: prices compare like for like.
fn m5_pool(name: &str, types: Vec<Arc<InstanceType>>) -> NodePool {
    let mut p = pool(name, types);
    p.requirements
        .add(Requirement::single(labels::INSTANCE_FAMILY, "m5"));
    p.requirements
        .add(Requirement::single(labels::CAPACITY_TYPE, "on-demand"));
    p
}

fn both_pools() -> Vec<NodePool> {
    vec![
        m5_pool("linux", types(None)),
        m5_pool("windows", types(Some(BUILD_2022))),
    ]
}

fn on(os: &str, name: &str) -> Pod {
    pod(name)
        .cpu(1000)
        .require(Requirement::single(labels::OS, os))
        .build()
}

fn run(pending: Vec<Pod>, nodepools: Vec<NodePool>, daemonsets: Vec<Pod>) -> Plan {
    schedule(
        &Snapshot {
            pending,
            nodepools,
            daemonsets,
            ..Default::default()
        },
        &Options::default(),
    )
}

#[test]
fn a_windows_pod_gets_a_windows_m5_large_at_the_windows_price_and_a_linux_pod_a_linux_one() {
    let plan = run(
        vec![on("windows", "iis"), on("linux", "nginx")],
        both_pools(),
        vec![],
    );
    assert!(plan.unschedulable.is_empty(), "{:?}", plan.unschedulable);
    assert_eq!(plan.new_claims.len(), 2);
    let windows = plan
        .new_claims
        .iter()
        .find(|c| c.nodepool == "windows")
        .unwrap();
    assert_eq!(windows.pods, vec!["default/iis"]);
    assert_eq!(windows.instance_type, "m5.large");
    assert_eq!(
        windows.price_per_hour, 0.188,
        "Windows on-demand, licence included"
    );
    assert_eq!(windows.labels[labels::OS], "windows");
    assert_eq!(windows.labels[labels::WINDOWS_BUILD], BUILD_2022);
    let linux = plan
        .new_claims
        .iter()
        .find(|c| c.nodepool == "linux")
        .unwrap();
    assert_eq!(linux.pods, vec!["default/nginx"]);
    assert_eq!(linux.price_per_hour, 0.096);
    assert_eq!(linux.labels[labels::OS], "linux");
    assert!((plan.total_price_per_hour - 0.284).abs() < 1e-9);
}

#[test]
fn a_linux_pod_never_lands_on_the_windows_pool() {
    let plan = run(
        vec![on("linux", "nginx")],
        vec![m5_pool("windows", types(Some(BUILD_2022)))],
        vec![],
    );
    assert!(plan.new_claims.is_empty());
    assert_eq!(plan.unschedulable.len(), 1);
}

#[test]
fn a_pod_that_names_no_os_goes_to_the_first_pool_by_weight_unless_the_windows_pool_is_tainted() {
    // Pools are tried by weight, then name, whatever the OS: a pod naming none can land on a
    // Windows pool that comes first (as with Karpenter), ...
    let mut pools = both_pools();
    pools[1].weight = 10;
    let plan = run(vec![pod("any").cpu(1000).build()], pools.clone(), vec![]);
    assert_eq!(plan.new_claims[0].nodepool, "windows");
    // ... so a Windows pool is tainted, and only pods that tolerate it land there.
    pools[1]
        .taints
        .push(Taint::new("os", "windows", Effect::NoSchedule));
    let plan = run(vec![pod("any").cpu(1000).build()], pools.clone(), vec![]);
    assert_eq!(plan.new_claims[0].nodepool, "linux");
    let iis = pod("iis")
        .cpu(1000)
        .require(Requirement::single(labels::OS, "windows"))
        .tolerate(Toleration::equal("os", "windows", Some(Effect::NoSchedule)))
        .build();
    let plan = run(vec![iis], pools, vec![]);
    assert_eq!(plan.new_claims[0].nodepool, "windows");
}

#[test]
fn ten_small_windows_pods_need_two_m5_large_nodes_where_linux_packs_them_on_one() {
    // An m5.large runs 9 Windows pods (10 addresses on its one interface, less its own) but
    // 29 Linux ones; both have the CPU and memory for ten of these pods.
    let tiny = |os: &str, i: usize| {
        pod(&format!("{os}-{i}"))
            .cpu(50)
            .mem(32 << 20)
            .require(Requirement::single(labels::OS, os))
            .require(Requirement::single(labels::INSTANCE_TYPE, "m5.large"))
            .build()
    };
    let windows = run(
        (0..10).map(|i| tiny("windows", i)).collect(),
        both_pools(),
        vec![],
    );
    assert!(windows.unschedulable.is_empty());
    assert_eq!(windows.new_claims.len(), 2);
    assert_eq!(windows.new_claims[0].allocatable.pods, 9);
    let linux = run(
        (0..10).map(|i| tiny("linux", i)).collect(),
        both_pools(),
        vec![],
    );
    assert_eq!(linux.new_claims.len(), 1);
}

#[test]
fn daemonsets_that_select_linux_cost_a_windows_node_nothing() {
    let linux_daemon = pod("aws-node")
        .cpu(1500)
        .require(Requirement::single(labels::OS, "linux"))
        .build();
    let windows_daemon = pod("windows-exporter")
        .cpu(300)
        .require(Requirement::single(labels::OS, "windows"))
        .build();
    let daemons = vec![linux_daemon, windows_daemon];
    let plan = run(vec![on("windows", "iis")], both_pools(), daemons.clone());
    let windows = &plan.new_claims[0];
    assert_eq!(windows.nodepool, "windows");
    assert_eq!(
        windows.requests.cpu,
        1000 + 300,
        "the pod and the Windows DaemonSet only"
    );
    assert_eq!(windows.instance_type, "m5.large");
    // On Linux the 1.5-core DaemonSet counts, so a bigger node is needed.
    let plan = run(vec![on("linux", "nginx")], both_pools(), daemons);
    assert_eq!(plan.new_claims[0].requests.cpu, 1000 + 1500);
    assert_eq!(plan.new_claims[0].instance_type, "m5.xlarge");
}
