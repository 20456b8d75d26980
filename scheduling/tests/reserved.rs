//! Capacity reservations (ODCRs and Capacity Blocks) as placement sees them: `reserved`
//! offerings from a node class's reservations, used before on-demand and spot, and never
//! planned past the slots a reservation has left.

use std::collections::BTreeSet;
use std::sync::Arc;

use adze_scheduling::fixtures::{ZONES, pod, pool, small_catalog};
use adze_scheduling::instance_type::InstanceType;
use adze_scheduling::labels;
use adze_scheduling::node_class::{self, NodeClassFacts, ReservationFacts};
use adze_scheduling::{
    ExistingNode, NodePool, Options, Plan, Pod, Requirement, Requirements, Snapshot, schedule,
};

fn reservation(id: &str, kind: &str, remaining: u32) -> ReservationFacts {
    ReservationFacts {
        id: id.into(),
        instance_type: "m.4x".into(),
        zone: ZONES[0].into(),
        kind: kind.into(),
        remaining,
        interruptible: false,
    }
}

/// An interruptible reservation (EC2 may reclaim it with a two-minute warning).
fn interruptible(id: &str, remaining: u32) -> ReservationFacts {
    ReservationFacts {
        interruptible: true,
        ..reservation(id, labels::RESERVATION_TYPE_DEFAULT, remaining)
    }
}

fn pool_with(req: Requirement, types: Vec<Arc<InstanceType>>) -> NodePool {
    let mut p = pool("default", types);
    p.requirements.add(req);
    p
}

/// The small catalog as a class with subnets in every test zone and `reservations` sees it.
fn types(reservations: Vec<ReservationFacts>) -> Vec<Arc<InstanceType>> {
    let class = NodeClassFacts {
        zones: ZONES.iter().map(|z| z.to_string()).collect(),
        images: vec![Requirements::new()],
        reservations,
        ..Default::default()
    };
    node_class::instance_types(&small_catalog(), &class).unwrap()
}

fn pool_allowing(capacity_types: &[&str], types: Vec<Arc<InstanceType>>) -> NodePool {
    let mut p = pool("default", types);
    p.requirements.add(Requirement::any_of(
        labels::CAPACITY_TYPE,
        capacity_types.iter().copied(),
    ));
    p
}

/// `n` pods that each need a node of their own (hostname anti-affinity).
fn one_per_node(n: usize) -> Vec<Pod> {
    (0..n)
        .map(|i| {
            pod(&format!("p{i}"))
                .cpu(1000)
                .label("app", "solo")
                .anti_affinity(labels::HOSTNAME, "solo")
                .build()
        })
        .collect()
}

fn run(pending: Vec<Pod>, pools: Vec<NodePool>, nodes: Vec<ExistingNode>) -> Plan {
    schedule(
        &Snapshot {
            pending,
            nodepools: pools,
            nodes,
            ..Default::default()
        },
        &Options::default(),
    )
}

fn reserved_ids(plan: &Plan) -> Vec<&str> {
    plan.new_claims
        .iter()
        .filter_map(|c| c.labels.get(labels::CAPACITY_RESERVATION_ID))
        .map(String::as_str)
        .collect()
}

#[test]
fn a_pod_requiring_reserved_capacity_plans_into_the_reservation() {
    let types = types(vec![reservation(
        "cr-0a",
        labels::RESERVATION_TYPE_DEFAULT,
        2,
    )]);
    let p = pod("train")
        .cpu(1000)
        .require(Requirement::single(
            labels::CAPACITY_TYPE,
            labels::CAPACITY_TYPE_RESERVED,
        ))
        .build();
    let plan = run(vec![p], vec![pool("default", types)], vec![]);
    assert!(plan.unschedulable.is_empty(), "{:?}", plan.unschedulable);
    let [claim] = &plan.new_claims[..] else {
        panic!("one claim expected: {:?}", plan.new_claims);
    };
    assert_eq!(claim.capacity_type, labels::CAPACITY_TYPE_RESERVED);
    assert_eq!(claim.instance_type, "m.4x");
    assert_eq!(claim.zone, ZONES[0]);
    assert_eq!(claim.instance_type_options, vec!["m.4x".to_string()]);
    assert_eq!(claim.labels[labels::CAPACITY_RESERVATION_ID], "cr-0a");
    assert_eq!(claim.labels[labels::CAPACITY_RESERVATION_TYPE], "default");
    assert_eq!(
        claim
            .requirements
            .get(labels::CAPACITY_RESERVATION_ID)
            .and_then(|r| r.single_value()),
        Some("cr-0a"),
        "the launch is pinned to the reservation"
    );
    assert!(claim.price_per_hour < 0.001, "reserved is priced ~free");
}

#[test]
fn without_a_reservation_a_reserved_only_pod_stays_pending_with_a_reason() {
    let p = pod("train")
        .require(Requirement::single(
            labels::CAPACITY_TYPE,
            labels::CAPACITY_TYPE_RESERVED,
        ))
        .build();
    let plan = run(vec![p], vec![pool("default", types(vec![]))], vec![]);
    assert!(plan.new_claims.is_empty());
    assert_eq!(plan.unschedulable.len(), 1);
}

#[test]
fn reserved_capacity_is_used_before_spot_and_on_demand() {
    let types = types(vec![reservation(
        "cr-0a",
        labels::RESERVATION_TYPE_DEFAULT,
        5,
    )]);
    let plan = run(
        vec![pod("web").cpu(1000).build()],
        vec![pool("default", types)],
        vec![],
    );
    assert_eq!(reserved_ids(&plan), vec!["cr-0a"]);
}

#[test]
fn two_slots_and_three_pods_needing_a_node_each_give_two_reserved_and_one_on_demand() {
    let types = types(vec![reservation(
        "cr-0a",
        labels::RESERVATION_TYPE_DEFAULT,
        2,
    )]);
    let pools = vec![pool_allowing(
        &[
            labels::CAPACITY_TYPE_RESERVED,
            labels::CAPACITY_TYPE_ON_DEMAND,
        ],
        types,
    )];
    let plan = run(one_per_node(3), pools, vec![]);
    assert!(plan.unschedulable.is_empty(), "{:?}", plan.unschedulable);
    let kinds: Vec<&str> = plan
        .new_claims
        .iter()
        .map(|c| c.capacity_type.as_str())
        .collect();
    assert_eq!(kinds.len(), 3);
    assert_eq!(
        kinds.iter().filter(|k| **k == "reserved").count(),
        2,
        "{kinds:?}"
    );
    assert_eq!(
        kinds.iter().filter(|k| **k == "on-demand").count(),
        1,
        "{kinds:?}"
    );
    let fallback = plan
        .new_claims
        .iter()
        .find(|c| c.capacity_type == "on-demand")
        .unwrap();
    assert!(
        !fallback
            .labels
            .contains_key(labels::CAPACITY_RESERVATION_ID)
    );
    let ct = fallback.requirements.get(labels::CAPACITY_TYPE).unwrap();
    assert!(
        !ct.allows(labels::CAPACITY_TYPE_RESERVED) && ct.allows("on-demand"),
        "the fallback launch may not take a slot planned for another claim"
    );
}

#[test]
fn a_reserved_only_pool_never_plans_past_the_slots_left() {
    let types = types(vec![reservation(
        "cr-0a",
        labels::RESERVATION_TYPE_DEFAULT,
        2,
    )]);
    let pools = vec![pool_allowing(&[labels::CAPACITY_TYPE_RESERVED], types)];
    let plan = run(one_per_node(3), pools, vec![]);
    assert_eq!(reserved_ids(&plan), vec!["cr-0a", "cr-0a"]);
    assert_eq!(plan.unschedulable.len(), 1);
    assert!(
        plan.unschedulable[0].reason.contains("planned full"),
        "{}",
        plan.unschedulable[0].reason
    );
}

#[test]
fn in_flight_claims_headed_into_a_reservation_take_its_slots() {
    let types = types(vec![reservation(
        "cr-0a",
        labels::RESERVATION_TYPE_DEFAULT,
        2,
    )]);
    let in_flight = ExistingNode {
        name: "earlier".into(),
        requirements: Requirements::new()
            .with(Requirement::single(
                labels::CAPACITY_RESERVATION_ID,
                "cr-0a",
            ))
            .with(Requirement::single(labels::INSTANCE_TYPE, "m.4x"))
            // Full: it takes no pod of this batch.
            .with(Requirement::single("full", "yes")),
        in_flight: true,
        unschedulable: true,
        ..Default::default()
    };
    let pools = vec![pool_allowing(
        &[
            labels::CAPACITY_TYPE_RESERVED,
            labels::CAPACITY_TYPE_ON_DEMAND,
        ],
        types,
    )];
    let plan = run(one_per_node(2), pools, vec![in_flight]);
    assert_eq!(reserved_ids(&plan), vec!["cr-0a"], "one slot was left");
    assert_eq!(plan.new_claims.len(), 2);
}

#[test]
fn a_full_reservation_is_not_offered() {
    let types = types(vec![reservation(
        "cr-0a",
        labels::RESERVATION_TYPE_DEFAULT,
        0,
    )]);
    let plan = run(
        vec![pod("web").cpu(1000).build()],
        vec![pool("default", types)],
        vec![],
    );
    assert!(reserved_ids(&plan).is_empty());
    assert_eq!(plan.new_claims.len(), 1);
}

#[test]
fn the_reservation_type_label_selects_capacity_blocks() {
    let types = types(vec![
        reservation("cr-0default", labels::RESERVATION_TYPE_DEFAULT, 1),
        reservation("cr-0block", labels::RESERVATION_TYPE_CAPACITY_BLOCK, 1),
    ]);
    let p = pod("train")
        .cpu(1000)
        .require(Requirement::single(
            labels::CAPACITY_RESERVATION_TYPE,
            labels::RESERVATION_TYPE_CAPACITY_BLOCK,
        ))
        .build();
    let plan = run(vec![p], vec![pool("default", types)], vec![]);
    assert_eq!(reserved_ids(&plan), vec!["cr-0block"]);
    assert_eq!(
        plan.new_claims[0].labels[labels::CAPACITY_RESERVATION_TYPE],
        "capacity-block"
    );
}

#[test]
fn reservations_of_other_types_or_zones_outside_the_class_add_nothing() {
    let mut elsewhere = reservation("cr-0a", labels::RESERVATION_TYPE_DEFAULT, 3);
    elsewhere.zone = "other-1z".into();
    let types = types(vec![elsewhere]);
    let reserved: BTreeSet<&str> = types
        .iter()
        .flat_map(|t| &t.offerings)
        .filter(|o| o.capacity_type == labels::CAPACITY_TYPE_RESERVED)
        .map(|o| o.zone.as_str())
        .collect();
    assert!(reserved.is_empty(), "{reserved:?}");
}

#[test]
fn a_reservation_whose_launch_failed_lately_falls_back_to_on_demand() {
    // The provider's unavailable-offerings cache leaves a failed reservation in the catalog
    // as an unavailable reserved offering of the type and zone.
    let catalog: Vec<Arc<InstanceType>> = small_catalog()
        .into_iter()
        .map(|t| {
            if t.name != "m.4x" {
                return t;
            }
            let mut t = (*t).clone();
            t.offerings.push(adze_scheduling::Offering {
                zone: ZONES[0].into(),
                zone_id: None,
                capacity_type: labels::CAPACITY_TYPE_RESERVED.into(),
                price: 0.0,
                available: false,
                reservation: None,
            });
            t.refresh_offering_requirements();
            Arc::new(t)
        })
        .collect();
    let class = NodeClassFacts {
        zones: ZONES.iter().map(|z| z.to_string()).collect(),
        images: vec![Requirements::new()],
        reservations: vec![reservation("cr-0a", labels::RESERVATION_TYPE_DEFAULT, 2)],
        ..Default::default()
    };
    let types = node_class::instance_types(&catalog, &class).unwrap();
    let pools = vec![pool_allowing(
        &[
            labels::CAPACITY_TYPE_RESERVED,
            labels::CAPACITY_TYPE_ON_DEMAND,
        ],
        types,
    )];
    let plan = run(one_per_node(1), pools, vec![]);
    assert!(reserved_ids(&plan).is_empty(), "{:?}", plan.new_claims);
    assert_eq!(plan.new_claims[0].capacity_type, "on-demand");
}

#[test]
fn an_interruptible_reservation_is_still_used_before_on_demand_and_says_so_on_the_node() {
    let types = types(vec![interruptible("cr-0i", 3)]);
    let plan = run(
        vec![pod("batch").cpu(1000).build()],
        vec![pool("default", types)],
        vec![],
    );
    assert_eq!(reserved_ids(&plan), vec!["cr-0i"]);
    let claim = &plan.new_claims[0];
    assert_eq!(claim.capacity_type, labels::CAPACITY_TYPE_RESERVED);
    assert_eq!(
        claim.labels[labels::CAPACITY_RESERVATION_INTERRUPTIBLE],
        "true"
    );
    assert_eq!(
        claim
            .requirements
            .get(labels::CAPACITY_RESERVATION_INTERRUPTIBLE)
            .and_then(|r| r.single_value()),
        Some("true"),
        "the launch is pinned to what the node will be labelled"
    );
}

#[test]
fn an_ordinary_reservations_nodes_are_labelled_not_interruptible_and_others_not_at_all() {
    let types = types(vec![reservation(
        "cr-0a",
        labels::RESERVATION_TYPE_DEFAULT,
        1,
    )]);
    let plan = run(one_per_node(2), vec![pool("default", types)], vec![]);
    let mut seen: Vec<Option<&str>> = plan
        .new_claims
        .iter()
        .map(|c| {
            c.labels
                .get(labels::CAPACITY_RESERVATION_INTERRUPTIBLE)
                .map(String::as_str)
        })
        .collect();
    seen.sort();
    assert_eq!(seen, vec![None, Some("false")], "{:?}", plan.new_claims);
}

#[test]
fn a_pool_requiring_not_interruptible_never_lands_on_an_interruptible_reservation() {
    // Both kinds have slots; the interruptible one sorts first by ID.
    let types = types(vec![
        interruptible("cr-0a", 5),
        reservation("cr-0b", labels::RESERVATION_TYPE_DEFAULT, 1),
    ]);
    let p = pool_with(
        Requirement::single(labels::CAPACITY_RESERVATION_INTERRUPTIBLE, "false"),
        types,
    );
    let plan = run(one_per_node(3), vec![p], vec![]);
    assert_eq!(
        reserved_ids(&plan),
        vec!["cr-0b"],
        "one slot of the ordinary reservation, never the interruptible one"
    );
    // `In [false]` admits reserved nodes only (the label is absent elsewhere): the other two
    // pods wait rather than land on the interruptible reservation or on-demand.
    assert_eq!(plan.new_claims.len(), 1, "{:?}", plan.new_claims);
    assert_eq!(plan.unschedulable.len(), 2);
}

#[test]
fn not_in_true_keeps_interruptible_reservations_out_but_allows_on_demand() {
    let types = types(vec![interruptible("cr-0i", 5)]);
    let not_interruptible = Requirement::new(
        labels::CAPACITY_RESERVATION_INTERRUPTIBLE,
        adze_scheduling::requirements::Operator::NotIn,
        &["true"],
    )
    .unwrap();
    let plan = run(
        one_per_node(2),
        vec![pool_with(not_interruptible, types)],
        vec![],
    );
    assert!(plan.unschedulable.is_empty(), "{:?}", plan.unschedulable);
    assert_eq!(plan.new_claims.len(), 2);
    assert!(reserved_ids(&plan).is_empty(), "{:?}", plan.new_claims);
    assert!(
        plan.new_claims
            .iter()
            .all(|c| c.capacity_type != labels::CAPACITY_TYPE_RESERVED)
    );
}

#[test]
fn a_pod_can_ask_for_interruptible_reserved_capacity() {
    let types = types(vec![
        reservation("cr-0a", labels::RESERVATION_TYPE_DEFAULT, 1),
        interruptible("cr-0b", 1),
    ]);
    let p = pod("batch")
        .cpu(1000)
        .require(Requirement::single(
            labels::CAPACITY_RESERVATION_INTERRUPTIBLE,
            "true",
        ))
        .build();
    let plan = run(vec![p], vec![pool("default", types)], vec![]);
    assert_eq!(reserved_ids(&plan), vec!["cr-0b"]);
}
