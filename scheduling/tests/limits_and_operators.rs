//! NodePool `limits.nodes`, counted in planning and against disruption's replacements, and
//! Karpenter's inclusive `Gte`/`Lte` operators.

use adze_scheduling::fixtures::{ZONES, node_of_type, pod, pool, small_catalog};
use adze_scheduling::labels;
use adze_scheduling::nodepool::NODES_LIMIT;
use adze_scheduling::{NodePool, Operator, Options, Requirement, Snapshot, schedule};

/// Three pods that each need a node of their own (hostname anti-affinity).
fn lonely_pods(n: usize) -> Vec<adze_scheduling::Pod> {
    (0..n)
        .map(|i| {
            pod(&format!("p{i}"))
                .label("app", "lonely")
                .anti_affinity(labels::HOSTNAME, "lonely")
                .build()
        })
        .collect()
}

fn limited(nodes: i64) -> NodePool {
    let mut p = pool("default", small_catalog());
    p.limits.insert(NODES_LIMIT.to_string(), nodes);
    p
}

#[test]
fn nodes_limit_caps_how_many_claims_a_plan_makes() {
    let plan = schedule(
        &Snapshot {
            pending: lonely_pods(3),
            nodepools: vec![limited(2)],
            ..Default::default()
        },
        &Options::default(),
    );
    assert_eq!(plan.new_claims.len(), 2, "{plan:#?}");
    assert_eq!(plan.unschedulable.len(), 1);
    assert!(
        plan.unschedulable[0].reason.contains("limits")
            && plan.unschedulable[0].reason.contains("nodes"),
        "{}",
        plan.unschedulable[0].reason
    );
}

#[test]
fn nodes_limit_counts_the_pools_existing_nodes_and_not_other_pools() {
    let it = small_catalog()
        .into_iter()
        .find(|t| t.name == "m.2x")
        .unwrap();
    let mine = node_of_type("old", &it, "default", ZONES[0], "on-demand");
    let theirs = node_of_type("other", &it, "other", ZONES[0], "on-demand");
    let mut mine_full = mine.clone();
    mine_full.unschedulable = true;
    let plan = schedule(
        &Snapshot {
            pending: lonely_pods(3),
            nodes: vec![mine_full, theirs],
            nodepools: vec![limited(2)],
            ..Default::default()
        },
        &Options::default(),
    );
    // "other" takes one pod (it belongs to no limit here), "old" counts one of the two nodes.
    assert_eq!(plan.new_claims.len(), 1, "{plan:#?}");
    assert_eq!(plan.pods_placed(), 2);
}

#[test]
fn replacements_count_on_top_of_the_nodes_they_replace() {
    let it = small_catalog()
        .into_iter()
        .find(|t| t.name == "m.2x")
        .unwrap();
    let leaving = node_of_type("going", &it, "default", ZONES[0], "on-demand");
    let snapshot = |leaving: Vec<adze_scheduling::ExistingNode>| Snapshot {
        pending: lonely_pods(1),
        nodepools: vec![limited(1)],
        leaving,
        ..Default::default()
    };
    let without = schedule(&snapshot(vec![]), &Options::default());
    assert_eq!(without.new_claims.len(), 1);
    let with = schedule(&snapshot(vec![leaving]), &Options::default());
    assert!(
        with.new_claims.is_empty(),
        "a node still running holds the pool's only node: {with:#?}"
    );
    assert_eq!(with.unschedulable.len(), 1);
}

#[test]
fn gte_and_lte_are_inclusive_integer_bounds() {
    let gte = Requirement::new(labels::INSTANCE_CPU, Operator::Gte, &["4"]).unwrap();
    let lte = Requirement::new(labels::INSTANCE_CPU, Operator::Lte, &["8"]).unwrap();
    assert!(!gte.allows("3") && gte.allows("4") && gte.allows("5"));
    assert!(lte.allows("8") && !lte.allows("9"));
    assert!(!gte.allows("four") && !gte.allows_absent());
    let both = gte.intersect(&lte);
    assert!(both.allows("4") && both.allows("8") && !both.allows("9"));
    // At the ends of i64 the bound admits every integer a label can hold (none is negative)
    // instead of overflowing, and still no word.
    let all = Requirement::new("k", Operator::Gte, &[i64::MIN.to_string()]).unwrap();
    assert!(all.allows("0") && all.allows(&i64::MAX.to_string()) && !all.allows("four"));
    let top = Requirement::new("k", Operator::Lte, &[i64::MAX.to_string()]).unwrap();
    assert!(top.allows(&i64::MAX.to_string()) && top.allows("0") && !top.allows("four"));
    assert!(Requirement::new("k", Operator::Gte, &["1", "2"]).is_err());
    assert_eq!(Operator::parse("Gte"), Some(Operator::Gte));
}

#[test]
fn a_pool_bounded_by_gte_and_lte_launches_only_types_inside() {
    let mut p = pool("default", small_catalog());
    p.requirements
        .add(Requirement::new(labels::INSTANCE_CPU, Operator::Gte, &["8"]).unwrap());
    p.requirements
        .add(Requirement::new(labels::INSTANCE_CPU, Operator::Lte, &["16"]).unwrap());
    let plan = schedule(
        &Snapshot {
            pending: vec![pod("p").build()],
            nodepools: vec![p],
            ..Default::default()
        },
        &Options::default(),
    );
    let claim = &plan.new_claims[0];
    for t in &claim.instance_type_options {
        let cpus: i64 = t
            .split('.')
            .nth(1)
            .and_then(|s| s.strip_suffix('x'))
            .unwrap()
            .parse()
            .unwrap();
        assert!((8..=16).contains(&cpus), "{t} outside 8..=16");
    }
    assert!(
        claim
            .instance_type_options
            .iter()
            .any(|t| t.ends_with(".8x"))
    );
    assert!(
        claim
            .instance_type_options
            .iter()
            .any(|t| t.ends_with(".16x"))
    );
}

#[test]
fn a_pool_whose_requirements_leave_no_type_says_which_not_zones() {
    // Karpenter's instance-store example asks for more local NVMe than any catalog type has:
    // the reason must name that requirement, not zone requirements the pool does not have.
    let mut p = pool("default", small_catalog());
    p.requirements
        .add(Requirement::new(labels::INSTANCE_CPU, Operator::Gt, &["100000"]).unwrap());
    let plan = schedule(
        &Snapshot {
            pending: vec![pod("p").build()],
            nodepools: vec![p],
            ..Default::default()
        },
        &Options::default(),
    );
    assert!(plan.new_claims.is_empty());
    let reason = &plan.unschedulable[0].reason;
    assert!(
        reason.contains("no instance type of the catalog meets the NodePool's requirements")
            && reason.contains(labels::INSTANCE_CPU)
            && !reason.contains("zone"),
        "{reason}"
    );
}
