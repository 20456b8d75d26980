//! Placement while an ARC zonal shift moves the cluster away from a zone: the catalog goes
//! through [`UnavailableOfferings`] exactly as provisioning reads it, then the real scheduler.

use std::time::{Duration, Instant};

use adze_cloud::{UnavailableOfferings, ZonalShift};
use adze_scheduling::fixtures::{GI, ZONES, pod, pool, small_catalog};
use adze_scheduling::{Options, Requirement, Snapshot, labels, schedule};

fn shifted_away_from(zone: &str) -> UnavailableOfferings {
    let cache = UnavailableOfferings::new(Duration::from_secs(180));
    cache.set_zonal_shifts(
        vec![ZonalShift {
            away_from: zone.into(),
            expires_at: i64::MAX,
            applied: true,
            kind: "ZONAL_SHIFT".into(),
        }],
        adze_cloud::unix_now(),
    );
    cache
}

fn web(i: usize) -> adze_scheduling::Pod {
    pod(&format!("web-{i}"))
        .cpu(1500)
        .mem(GI)
        .label("app", "web")
        .anti_affinity(labels::HOSTNAME, "web")
        .build()
}

fn plan(cache: &UnavailableOfferings, pinned: Option<&str>) -> adze_scheduling::Plan {
    let mut np = pool("default", cache.apply(&small_catalog(), Instant::now()));
    if let Some(zone) = pinned {
        np.requirements.add(Requirement::single(labels::ZONE, zone));
    }
    let snap = Snapshot {
        pending: (0..6).map(web).collect(),
        nodepools: vec![np],
        ..Default::default()
    };
    schedule(&snap, &Options::default())
}

#[test]
fn pods_of_a_three_zone_pool_land_only_in_the_zones_not_shifted_away() {
    let free = plan(&UnavailableOfferings::new(Duration::from_secs(180)), None);
    assert!(
        free.new_claims.iter().any(|c| c.zone == ZONES[0]),
        "without the shift the first zone is used: {:?}",
        free.new_claims.iter().map(|c| &c.zone).collect::<Vec<_>>()
    );
    let p = plan(&shifted_away_from(ZONES[0]), None);
    assert!(p.unschedulable.is_empty(), "{:?}", p.unschedulable);
    assert_eq!(p.new_claims.len(), 6);
    for c in &p.new_claims {
        assert!(
            c.zone == ZONES[1] || c.zone == ZONES[2],
            "{} planned in {}",
            c.name,
            c.zone
        );
        assert_eq!(c.labels.get(labels::ZONE), Some(&c.zone));
    }
}

#[test]
fn a_pool_pinned_to_the_shifted_zone_leaves_its_pods_pending_with_a_reason() {
    let p = plan(&shifted_away_from(ZONES[0]), Some(ZONES[0]));
    assert!(p.new_claims.is_empty(), "{:?}", p.new_claims);
    assert_eq!(p.unschedulable.len(), 6);
    for u in &p.unschedulable {
        // The scheduler's reason names the pool and that nothing it offers fits; the zone is
        // named by the zonal-shift reading's warning (provisioner/src/cloud/zonal_shift.rs).
        assert!(
            u.reason.contains("NodePool default")
                && u.reason.contains("meets the NodePool's requirements"),
            "{}: {}",
            u.pod,
            u.reason
        );
    }
}
