//! EBS volume attach limits of instance types when planning new capacity: a new or in-flight
//! NodeClaim holds no more EBS CSI volumes than the EBS CSI driver will let a node of its type
//! attach; registered nodes keep their CSINode counts.

use std::collections::BTreeMap;
use std::sync::Arc;

use adze_scheduling::catalog;
use adze_scheduling::fixtures::{MI, node_of_type, pod, pool};
use adze_scheduling::instance_type::InstanceType;
use adze_scheduling::labels;
use adze_scheduling::plan::NewClaim;
use adze_scheduling::scheduler::explain;
use adze_scheduling::scheduler::explain::Why;
use adze_scheduling::volumes::{AttachedVolume, EBS_CSI_DRIVER};
use adze_scheduling::{BoundPod, NodePool, Options, Plan, Pod, Requirement, Snapshot, schedule};

fn types(names: &[&str]) -> Vec<Arc<InstanceType>> {
    let all = catalog::embedded();
    names
        .iter()
        .map(|n| {
            Arc::clone(
                all.iter()
                    .find(|t| t.name == *n)
                    .unwrap_or_else(|| panic!("{n}")),
            )
        })
        .collect()
}

fn family_pool(family: &str) -> NodePool {
    let mut p = pool("default", catalog::embedded());
    p.requirements
        .add(Requirement::single(labels::INSTANCE_FAMILY, family));
    p
}

/// Pod `name` with small requests that attaches the EBS claims `claims`.
fn db(name: &str, driver: &str, claims: &[String]) -> Pod {
    let mut p = pod(name).cpu(50).mem(64 * MI).build();
    p.volumes = claims
        .iter()
        .map(|c| AttachedVolume {
            driver: driver.to_string(),
            claim: format!("default/{c}"),
        })
        .collect();
    p
}

/// `n` pods, each with its own EBS claim (a StatefulSet's volumeClaimTemplate).
fn statefulset(prefix: &str, n: usize) -> Vec<Pod> {
    (0..n)
        .map(|i| {
            db(
                &format!("{prefix}-{i}"),
                EBS_CSI_DRIVER,
                &[format!("data-{prefix}-{i}")],
            )
        })
        .collect()
}

fn plan(pending: Vec<Pod>, pools: Vec<NodePool>) -> Plan {
    schedule(
        &Snapshot {
            pending,
            nodepools: pools,
            ..Default::default()
        },
        &Options::default(),
    )
}

/// The lowest EBS attach limit among the types `c` may launch as.
fn claim_limit(c: &NewClaim) -> u32 {
    let all = catalog::embedded();
    c.instance_type_options
        .iter()
        .map(|n| {
            all.iter()
                .find(|t| t.name == *n)
                .and_then(|t| t.ebs_attach_limit)
                .unwrap_or_else(|| panic!("{n} has no limit"))
        })
        .min()
        .expect("a claim has options")
}

fn assert_within_limits(p: &Plan) {
    for c in &p.new_claims {
        let limit = claim_limit(c);
        assert!(
            c.pods.len() <= limit as usize,
            "{} holds {} pods with a volume each, but {:?} attach at most {limit}",
            c.name,
            c.pods.len(),
            c.instance_type_options
        );
    }
}

#[test]
fn forty_pods_each_with_an_ebs_volume_get_several_nodes_none_past_its_type_limit() {
    let p = plan(statefulset("db", 40), vec![family_pool("m5")]);
    assert!(p.unschedulable.is_empty(), "{:#?}", p.unschedulable);
    let placed: usize = p.new_claims.iter().map(|c| c.pods.len()).sum();
    assert_eq!(placed, 40);
    assert!(
        p.new_claims.len() >= 2,
        "26 volumes per m5 node at most: {:#?}",
        p.new_claims
    );
    assert_within_limits(&p);
}

#[test]
fn without_volumes_the_same_pods_share_one_node() {
    // The control: the limit, not the requests, is what splits the pods above.
    let pods: Vec<Pod> = (0..40)
        .map(|i| pod(&format!("web-{i}")).cpu(50).mem(64 * MI).build())
        .collect();
    let p = plan(pods, vec![family_pool("m5")]);
    assert_eq!(p.new_claims.len(), 1, "{:#?}", p.new_claims);
}

#[test]
fn a_type_with_more_instance_store_disks_takes_fewer_volumes() {
    // c5.24xlarge: 28 − 1 interface − 1 root = 26; c5d.24xlarge has 4 NVMe disks: 22.
    let ebs_only = plan(
        statefulset("db", 26),
        vec![pool("default", types(&["c5.24xlarge"]))],
    );
    assert_eq!(ebs_only.new_claims.len(), 1, "{:#?}", ebs_only.new_claims);
    let with_store = plan(
        statefulset("db", 26),
        vec![pool("default", types(&["c5d.24xlarge"]))],
    );
    assert!(with_store.unschedulable.is_empty());
    let mut sizes: Vec<usize> = with_store.new_claims.iter().map(|c| c.pods.len()).collect();
    sizes.sort_unstable();
    assert_eq!(sizes, vec![4, 22], "{:#?}", with_store.new_claims);
}

#[test]
fn pods_sharing_one_claim_count_it_once_on_a_new_node() {
    let pods: Vec<Pod> = (0..30)
        .map(|i| db(&format!("web-{i}"), EBS_CSI_DRIVER, &["shared".to_string()]))
        .collect();
    let p = plan(pods, vec![family_pool("m5")]);
    assert_eq!(p.new_claims.len(), 1, "{:#?}", p.new_claims);
}

#[test]
fn volumes_of_other_drivers_are_not_held_to_the_ebs_limit() {
    let pods: Vec<Pod> = (0..40)
        .map(|i| {
            db(
                &format!("efs-{i}"),
                "efs.csi.aws.com",
                &[format!("share-{i}")],
            )
        })
        .collect();
    let p = plan(pods, vec![family_pool("m5")]);
    assert_eq!(p.new_claims.len(), 1, "{:#?}", p.new_claims);
}

#[test]
fn a_pod_with_more_volumes_than_any_type_attaches_stays_pending_naming_the_limit() {
    let claims: Vec<String> = (0..40).map(|i| format!("v-{i}")).collect();
    let p = plan(
        vec![db("big", EBS_CSI_DRIVER, &claims)],
        vec![family_pool("m5")],
    );
    assert!(p.new_claims.is_empty(), "{:#?}", p.new_claims);
    assert_eq!(p.unschedulable.len(), 1);
    let reason = &p.unschedulable[0].reason;
    assert!(
        reason.contains("volume attach limit") && reason.contains(EBS_CSI_DRIVER),
        "{reason}"
    );
    // m5.metal: no interface taken off, 28 − 1 root = 27.
    assert!(reason.contains("the most is 27"), "{reason}");
}

#[test]
fn a_type_with_a_dedicated_limit_takes_a_pod_no_shared_type_can() {
    // 30 volumes: past every m5 (26), within m7i's dedicated 32 (31 less the root volume).
    let claims: Vec<String> = (0..30).map(|i| format!("v-{i}")).collect();
    let mut both = pool("default", catalog::embedded());
    both.requirements.add(Requirement::any_of(
        labels::INSTANCE_FAMILY,
        ["m5".to_string(), "m7i".to_string()],
    ));
    let p = plan(vec![db("big", EBS_CSI_DRIVER, &claims)], vec![both]);
    assert!(p.unschedulable.is_empty(), "{:#?}", p.unschedulable);
    let c = &p.new_claims[0];
    assert!(
        c.instance_type_options
            .iter()
            .all(|t| t.starts_with("m7i.")),
        "{:?}",
        c.instance_type_options
    );
}

fn bound(node: &str, pod: Pod) -> BoundPod {
    BoundPod {
        node: node.to_string(),
        pod,
        daemon: false,
    }
}

#[test]
fn an_in_flight_claim_is_held_to_its_type_limit() {
    let m5 = &types(&["m5.4xlarge"])[0];
    let mut n = node_of_type("default-abcde", m5, "default", "us-east-1a", "on-demand");
    n.in_flight = true;
    let bound_pods: Vec<BoundPod> = statefulset("old", 20)
        .into_iter()
        .map(|p| bound("default-abcde", p))
        .collect();
    let s = Snapshot {
        pending: statefulset("db", 10),
        nodes: vec![n],
        bound: bound_pods,
        nodepools: vec![family_pool("m5")],
        ..Default::default()
    };
    let p = schedule(&s, &Options::default());
    assert!(p.unschedulable.is_empty(), "{:#?}", p.unschedulable);
    let on_in_flight: usize = p
        .existing
        .iter()
        .filter(|e| e.node == "default-abcde")
        .map(|e| e.pods.len())
        .sum();
    assert_eq!(on_in_flight, 6, "26 − 20 attached: {p:#?}");
    let new: usize = p.new_claims.iter().map(|c| c.pods.len()).sum();
    assert_eq!(new, 4);
}

#[test]
fn a_registered_node_keeps_its_csinode_count() {
    // The CSINode says 40 (a driver started with a higher --volume-attach-limit, say): the
    // node takes 40, not the 26 its type would get before launch.
    let m5 = &types(&["m5.4xlarge"])[0];
    let mut n = node_of_type("node-1", m5, "default", "us-east-1a", "on-demand");
    n.volume_limits = BTreeMap::from([(EBS_CSI_DRIVER.to_string(), 40)]);
    let s = Snapshot {
        pending: statefulset("db", 40),
        nodes: vec![n],
        nodepools: vec![family_pool("m5")],
        ..Default::default()
    };
    let p = schedule(&s, &Options::default());
    assert!(p.new_claims.is_empty(), "{:#?}", p.new_claims);
    assert_eq!(p.existing.iter().map(|e| e.pods.len()).sum::<usize>(), 40);
}

#[test]
fn explain_says_a_full_claim_cannot_attach_another_volume() {
    // 27 pods: the 27th cannot join the first m5 claim (26 volumes) and gets its own.
    let s = Snapshot {
        pending: statefulset("db", 27),
        nodepools: vec![family_pool("m5")],
        ..Default::default()
    };
    let first = schedule(&s, &Options::default());
    let last = first
        .new_claims
        .iter()
        .min_by_key(|c| c.pods.len())
        .expect("claims")
        .pods[0]
        .clone();
    let (p, why) = explain(&s, &Options::default(), &last).expect("a pending pod");
    assert_eq!(p.new_claims.len(), 2, "{:#?}", p.new_claims);
    assert_within_limits(&p);
    let full = why
        .node_claims
        .iter()
        .find_map(|c| c.refusal.as_ref())
        .expect("the first claim refuses it");
    assert_eq!(full.kind, Why::Volumes, "{full:?}");
    assert!(
        full.message.contains("volume attach limit"),
        "{}",
        full.message
    );
}
