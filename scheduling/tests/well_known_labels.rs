//! NodePool requirements and pod selectors on the instance attributes Karpenter users select
//! on (CPU manufacturer, network and EBS bandwidth, zone ID) choose the types that have them,
//! and the planned claim carries the labels.

use std::collections::BTreeMap;
use std::sync::Arc;

use adze_scheduling::catalog;
use adze_scheduling::fixtures::{GI, pod, pool};
use adze_scheduling::instance_type::{InstanceType, Offering};
use adze_scheduling::labels;
use adze_scheduling::overhead;
use adze_scheduling::{
    NodePool, Operator, Options, Plan, Requirement, Requirements, Resources, Snapshot, schedule,
};

const ZONE_IDS: [(&str, &str); 3] = [
    ("us-east-1a", "use1-az4"),
    ("us-east-1b", "use1-az6"),
    ("us-east-1c", "use1-az1"),
];

/// A 4-vCPU type with the given labels, offered on demand in every zone of [`ZONE_IDS`] at
/// `price` (the zone's ID on each offering).
fn typed(name: &str, price: f64, own: &[(&str, &str)]) -> Arc<InstanceType> {
    let capacity = Resources::new(4000, 16 * GI)
        .with_pods(58)
        .with_ephemeral(overhead::DEFAULT_ROOT_VOLUME);
    let oh = overhead::default_overhead(4, 58, overhead::DEFAULT_ROOT_VOLUME);
    let l: BTreeMap<String, String> = own
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .chain([(labels::ARCH.to_string(), "amd64".to_string())])
        .collect();
    let offerings = ZONE_IDS
        .iter()
        .map(|(z, id)| Offering {
            zone: z.to_string(),
            zone_id: Some(id.to_string()),
            capacity_type: labels::CAPACITY_TYPE_ON_DEMAND.to_string(),
            price,
            available: true,
            reservation: None,
        })
        .collect();
    Arc::new(InstanceType::new(name, capacity, oh, l, offerings))
}

/// Cheapest first: a slow-network Intel type, a 12.5 Gbps AMD type, a 25 Gbps Graviton type
/// with fast EBS, and one EC2 reported no bandwidth for.
fn io_catalog() -> Vec<Arc<InstanceType>> {
    vec![
        typed(
            "slow.xlarge",
            0.10,
            &[
                (labels::INSTANCE_CPU_MANUFACTURER, "intel"),
                (labels::INSTANCE_NETWORK_BANDWIDTH, "1250"),
                (labels::INSTANCE_EBS_BANDWIDTH, "1150"),
            ],
        ),
        typed("unknown.xlarge", 0.11, &[]),
        typed(
            "amd.xlarge",
            0.12,
            &[
                (labels::INSTANCE_CPU_MANUFACTURER, "amd"),
                (labels::INSTANCE_NETWORK_BANDWIDTH, "12500"),
                (labels::INSTANCE_EBS_BANDWIDTH, "3170"),
            ],
        ),
        typed(
            "fast.xlarge",
            0.20,
            &[
                (labels::INSTANCE_CPU_MANUFACTURER, "aws"),
                (labels::INSTANCE_NETWORK_BANDWIDTH, "25000"),
                (labels::INSTANCE_EBS_BANDWIDTH, "10000"),
            ],
        ),
    ]
}

fn pool_requiring(types: Vec<Arc<InstanceType>>, r: Requirement) -> NodePool {
    let mut p = pool("default", types);
    p.requirements = Requirements::new().with(r);
    p
}

fn req(k: &str, op: Operator, vals: &[&str]) -> Requirement {
    Requirement::new(k, op, vals).unwrap()
}

fn plan_one(p: NodePool, pod_req: Option<Requirement>) -> Plan {
    let mut b = pod("app").cpu(1000).mem(GI);
    if let Some(r) = pod_req {
        b = b.require(r);
    }
    schedule(
        &Snapshot {
            pending: vec![b.build()],
            nodepools: vec![p],
            ..Default::default()
        },
        &Options::default(),
    )
}

/// The single claim's chosen type and every type it may launch.
fn chosen(plan: &Plan) -> (&str, Vec<&str>) {
    assert!(plan.unschedulable.is_empty(), "{:#?}", plan.unschedulable);
    assert_eq!(plan.new_claims.len(), 1, "{plan:#?}");
    let c = &plan.new_claims[0];
    (
        c.instance_type.as_str(),
        c.instance_type_options.iter().map(String::as_str).collect(),
    )
}

#[test]
fn network_bandwidth_gt_keeps_only_types_above_it() {
    let plan = plan_one(
        pool_requiring(
            io_catalog(),
            req(labels::INSTANCE_NETWORK_BANDWIDTH, Operator::Gt, &["10000"]),
        ),
        None,
    );
    let (t, options) = chosen(&plan);
    assert_eq!(t, "amd.xlarge");
    assert_eq!(
        options,
        ["amd.xlarge", "fast.xlarge"],
        "no label is not > 10000"
    );
    assert_eq!(
        plan.new_claims[0].labels[labels::INSTANCE_NETWORK_BANDWIDTH],
        "12500"
    );
}

#[test]
fn ebs_bandwidth_lt_from_a_pod_keeps_only_types_below_it() {
    let plan = plan_one(
        pool("default", io_catalog()),
        Some(req(labels::INSTANCE_EBS_BANDWIDTH, Operator::Lt, &["5000"])),
    );
    let (t, options) = chosen(&plan);
    assert_eq!(t, "slow.xlarge");
    assert_eq!(options, ["slow.xlarge", "amd.xlarge"]);
    assert_eq!(
        plan.new_claims[0].labels[labels::INSTANCE_EBS_BANDWIDTH],
        "1150"
    );
}

#[test]
fn cpu_manufacturer_in_selects_that_manufacturers_types() {
    let plan = plan_one(
        pool_requiring(
            io_catalog(),
            req(labels::INSTANCE_CPU_MANUFACTURER, Operator::In, &["aws"]),
        ),
        None,
    );
    assert_eq!(chosen(&plan), ("fast.xlarge", vec!["fast.xlarge"]));
    assert_eq!(
        plan.new_claims[0].labels[labels::INSTANCE_CPU_MANUFACTURER],
        "aws"
    );
}

#[test]
fn cpu_manufacturer_on_the_embedded_catalog_follows_the_family() {
    for (maker, families) in [
        (
            "amd",
            &[
                "c5a", "c6a", "m5a", "m6a", "r5a", "r6a", "t3a", "g5", "g6", "inf2",
            ][..],
        ),
        (
            "aws",
            &[
                "c6g", "c7g", "m6g", "m7g", "r6g", "r7g", "t4g", "c6gd", "c7gd", "m6gd", "m7gd",
                "r6gd", "r7gd",
            ][..],
        ),
    ] {
        let plan = plan_one(
            pool_requiring(
                catalog::embedded(),
                req(labels::INSTANCE_CPU_MANUFACTURER, Operator::In, &[maker]),
            ),
            None,
        );
        let (_, options) = chosen(&plan);
        for t in options {
            let family = t.split_once('.').unwrap().0;
            assert!(families.contains(&family), "{t} is not {maker}");
        }
        assert_eq!(
            plan.new_claims[0].labels[labels::INSTANCE_CPU_MANUFACTURER],
            maker
        );
    }
}

#[test]
fn zone_id_requirement_picks_the_zone_with_that_id_and_labels_the_claim() {
    let plan = plan_one(
        pool_requiring(
            io_catalog(),
            req(labels::ZONE_ID, Operator::In, &["use1-az6"]),
        ),
        None,
    );
    chosen(&plan);
    let c = &plan.new_claims[0];
    assert_eq!(c.zone, "us-east-1b");
    assert_eq!(c.labels[labels::ZONE], "us-east-1b");
    assert_eq!(c.labels[labels::ZONE_ID], "use1-az6");

    // From a pod's selector, NotIn: any zone but the excluded ID's.
    let plan = plan_one(
        pool("default", io_catalog()),
        Some(req(labels::ZONE_ID, Operator::NotIn, &["use1-az4"])),
    );
    chosen(&plan);
    let c = &plan.new_claims[0];
    assert_ne!(c.zone, "us-east-1a");
    let id = ZONE_IDS.iter().find(|(z, _)| *z == c.zone).unwrap().1;
    assert_eq!(c.labels[labels::ZONE_ID], id);
}

#[test]
fn zone_id_requirement_on_a_catalog_without_ids_places_nothing() {
    // The embedded catalog cannot know an account's zone IDs.
    let plan = plan_one(
        pool_requiring(
            catalog::embedded(),
            req(labels::ZONE_ID, Operator::In, &["use1-az6"]),
        ),
        None,
    );
    assert!(plan.new_claims.is_empty());
    assert_eq!(plan.unschedulable.len(), 1);
    // No zone-ID label either when the catalog has none.
    let plan = plan_one(pool("default", catalog::embedded()), None);
    assert!(!plan.new_claims[0].labels.contains_key(labels::ZONE_ID));
}
