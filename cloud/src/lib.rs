//! What Adze needs from a cloud: launch an instance for a NodeClaim, terminate it, look it up,
//! list ours, the instance types it offers, whether an instance drifted from its claim, and
//! what the cloud's own status checks say of an instance's health, and which zones an ARC
//! zonal shift moves the cluster away from.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use adze_api::NodeClaim;
use adze_scheduling::InstanceType;
pub use adze_scheduling::disruption::repair::StatusCheck;
pub use adze_scheduling::zonal_shift::ZonalShift;
use futures::future::BoxFuture;
use thiserror::Error;

pub mod sync;
use sync::MutexExt;

/// A launched instance, as the NodeClaim status records it.
#[derive(Debug, Clone, PartialEq)]
pub struct Instance {
    pub provider_id: String,
    pub instance_type: String,
    pub zone: String,
    pub capacity_type: String,
    pub capacity: BTreeMap<String, String>,
    pub allocatable: BTreeMap<String, String>,
}

#[derive(Debug, Error)]
pub enum CloudError {
    /// The offering (type × zone × capacity type) cannot be launched now; try another.
    #[error("insufficient capacity for {instance_type} in {zone} ({capacity_type}): {message}")]
    InsufficientCapacity {
        instance_type: String,
        zone: String,
        capacity_type: String,
        message: String,
    },
    /// The cloud refused the launch for a reason the next attempt in a few seconds will not
    /// fix (permissions, an image that does not exist, a malformed template). `code` is the
    /// cloud's own error code, shown on the NodeClaim's `Launched` condition.
    #[error("launch refused ({code}): {message}")]
    LaunchFailed { code: String, message: String },
    #[error("{0}")]
    Other(String),
}

impl CloudError {
    /// A short machine-readable reason for conditions, events and metrics.
    pub fn reason(&self) -> &str {
        match self {
            CloudError::InsufficientCapacity { .. } => "InsufficientCapacity",
            CloudError::LaunchFailed { code, .. } => code,
            CloudError::Other(_) => "LaunchError",
        }
    }
}

/// The labels a node of `instance` really carries: its own type's single-valued labels (arch,
/// family, size, ...), its zone and capacity type. The claim's labels came from the plan's
/// cheapest option; the cloud may have launched another of the options it was given, and
/// zonal volumes, topology spread and arch-specific images need the truth.
pub fn instance_labels(
    instance: &Instance,
    catalog: &[Arc<InstanceType>],
) -> BTreeMap<String, String> {
    use adze_scheduling::labels;
    let mut out = BTreeMap::new();
    let t = catalog.iter().find(|t| t.name == instance.instance_type);
    if let Some(t) = t {
        for r in t.requirements.iter() {
            if let Some(v) = r.single_value() {
                out.insert(r.key.clone(), v.to_string());
            }
        }
    }
    out.insert(labels::INSTANCE_TYPE.into(), instance.instance_type.clone());
    out.remove(labels::ZONE_ID);
    if !instance.zone.is_empty() {
        out.insert(labels::ZONE.into(), instance.zone.clone());
        // The zone's ID as the catalog's offering in that zone knows it.
        if let Some(id) = t
            .into_iter()
            .flat_map(|t| &t.offerings)
            .find(|o| o.zone == instance.zone)
            .and_then(|o| o.zone_id.clone())
        {
            out.insert(labels::ZONE_ID.into(), id);
        }
    }
    if !instance.capacity_type.is_empty() {
        out.insert(labels::CAPACITY_TYPE.into(), instance.capacity_type.clone());
    }
    out
}

/// `claim_labels` corrected to the launched instance: every label the *planned* type defined
/// is dropped, then the instance's own labels are set (see [`instance_labels`]).
pub fn relabel_for_instance(
    claim_labels: &BTreeMap<String, String>,
    instance: &Instance,
    catalog: &[Arc<InstanceType>],
) -> BTreeMap<String, String> {
    use adze_scheduling::labels;
    // Karpenter's aliases (`--karpenter-labels`) are dropped and derived again, so they follow
    // the launched instance too.
    let aliased = claim_labels
        .keys()
        .any(|k| labels::adze_key_for_karpenter(k).is_some());
    let mut out: BTreeMap<String, String> = claim_labels
        .iter()
        .filter(|(k, _)| labels::adze_key_for_karpenter(k).is_none())
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if let Some(planned) = claim_labels
        .get(labels::INSTANCE_TYPE)
        .and_then(|n| catalog.iter().find(|t| &t.name == n))
    {
        for r in planned.requirements.iter() {
            if r.single_value().is_some() {
                out.remove(&r.key);
            }
        }
    }
    // The planned offering's zone ID is stale if the cloud launched in another zone.
    out.remove(labels::ZONE_ID);
    out.extend(instance_labels(instance, catalog));
    if aliased {
        out = labels::with_karpenter_aliases(&out);
    }
    out
}

pub trait CloudProvider: Send + Sync {
    fn name(&self) -> &'static str;
    /// Launches the claim's instance; idempotent per claim name.
    fn create<'a>(&'a self, claim: &'a NodeClaim) -> BoxFuture<'a, Result<Instance, CloudError>>;
    fn delete<'a>(&'a self, claim: &'a NodeClaim) -> BoxFuture<'a, Result<(), CloudError>>;
    fn get<'a>(
        &'a self,
        provider_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<Instance>, CloudError>>;
    fn list(&self) -> BoxFuture<'_, Result<Vec<Instance>, CloudError>>;
    fn instance_types(&self) -> Vec<Arc<InstanceType>>;
    fn is_drifted<'a>(&'a self, claim: &'a NodeClaim) -> BoxFuture<'a, Result<bool, CloudError>>;
    /// The names of the drifted claims among `claims`, checked in one pass. Disruption asks
    /// this every poll for every claim, so a provider whose per-claim check is an API call
    /// should answer it from one listing (AWS: one instance sweep); the default asks
    /// [`CloudProvider::is_drifted`] per claim. The first error fails the whole check:
    /// "could not tell" must not read as "not drifted".
    fn drifted_claims<'a>(
        &'a self,
        claims: &'a [Arc<NodeClaim>],
    ) -> BoxFuture<'a, Result<BTreeSet<String>, CloudError>> {
        Box::pin(async move {
            let mut out = BTreeSet::new();
            for c in claims {
                if self.is_drifted(c).await? {
                    out.insert(c.metadata.name.clone().unwrap_or_default());
                }
            }
            Ok(out)
        })
    }

    /// The cloud's status checks of the instances `provider_ids` name (EC2: instance and
    /// system status from DescribeInstanceStatus), by providerID. An instance missing from
    /// the answer has no check known; node repair reads a failing one as unhealthy
    /// ([`adze_scheduling::disruption::repair`]). An error is "could not tell", never
    /// "impaired". The default knows nothing, for clouds without such checks.
    fn instance_health<'a>(
        &'a self,
        _provider_ids: &'a [String],
    ) -> BoxFuture<'a, Result<BTreeMap<String, Vec<StatusCheck>>, CloudError>> {
        Box::pin(async { Ok(BTreeMap::new()) })
    }

    /// Reboots the instance `provider_id` names, in place (AWS: RebootInstances): node repair's
    /// first action with `--reboot-for-repair`. Ok means the cloud accepted the request, not
    /// that the node came back healthy; repair judges that from the Node afterwards. The
    /// default refuses, naming the provider, so repair replaces the node instead.
    fn reboot<'a>(&'a self, provider_id: &'a str) -> BoxFuture<'a, Result<(), CloudError>> {
        Box::pin(async move {
            Err(CloudError::Other(format!(
                "the {} cloud provider cannot reboot instances ({provider_id})",
                self.name()
            )))
        })
    }

    /// The zonal shifts on the cluster now (AWS: ARC zonal shift's GetManagedResource on the
    /// EKS cluster), active or not; which count is [`adze_scheduling::zonal_shift`]'s rule.
    /// An error is "could not tell", never "no shift" nor "every zone". The default knows
    /// of none, for clouds without zonal shifts.
    fn zonal_shifts(&self) -> BoxFuture<'_, Result<Vec<ZonalShift>, CloudError>> {
        Box::pin(async { Ok(Vec::new()) })
    }
}

/// Instance type, zone, capacity type.
type OfferingKey = (String, String, String);

/// Offerings that failed to launch recently, kept out of placement for `ttl` (3 min), and
/// the offerings in zones an ARC zonal shift moves the cluster away from, kept out while the
/// shift lasts. Planning, disruption and launches all read the catalog through
/// [`UnavailableOfferings::apply`], so both take effect everywhere at once.
#[derive(Clone)]
pub struct UnavailableOfferings {
    ttl: Duration,
    entries: Arc<Mutex<HashMap<OfferingKey, Instant>>>,
    /// The last reading of the cluster's zonal shifts (none until one succeeds).
    shifts: Arc<Mutex<Vec<ZonalShift>>>,
}

/// Seconds since the Unix epoch now (0 if the clock is before it).
pub fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

impl UnavailableOfferings {
    pub fn new(ttl: Duration) -> Self {
        UnavailableOfferings {
            ttl,
            entries: Arc::default(),
            shifts: Arc::default(),
        }
    }

    /// Replaces the zonal-shift reading; returns the zones away before and after, at `now`.
    pub fn set_zonal_shifts(
        &self,
        shifts: Vec<ZonalShift>,
        now: i64,
    ) -> (BTreeSet<String>, BTreeSet<String>) {
        let mut held = self.shifts.lock_or_recover();
        let before = adze_scheduling::zonal_shift::zones_away(&held, now);
        let after = adze_scheduling::zonal_shift::zones_away(&shifts, now);
        *held = shifts;
        (before, after)
    }

    /// The zones (IDs or names) active zonal shifts move away from at `now` (Unix seconds).
    pub fn zones_away(&self, now: i64) -> BTreeSet<String> {
        adze_scheduling::zonal_shift::zones_away(&self.shifts.lock_or_recover(), now)
    }

    pub fn mark(&self, instance_type: &str, zone: &str, capacity_type: &str, now: Instant) {
        self.entries.lock_or_recover().insert(
            (instance_type.into(), zone.into(), capacity_type.into()),
            now + self.ttl,
        );
    }

    /// The catalog with offerings still in the cache marked unavailable.
    pub fn apply(&self, catalog: &[Arc<InstanceType>], now: Instant) -> Vec<Arc<InstanceType>> {
        let catalog = self.apply_zonal_shifts(catalog, unix_now());
        let mut entries = self.entries.lock_or_recover();
        entries.retain(|_, until| *until > now);
        if entries.is_empty() {
            return catalog;
        }
        catalog
            .iter()
            .map(|t| {
                let hit = |o: &adze_scheduling::Offering| {
                    entries.contains_key(&(t.name.clone(), o.zone.clone(), o.capacity_type.clone()))
                };
                // Reserved offerings come from a node class, after this: a failed reservation
                // is left here as an unavailable `reserved` offering, which the class's
                // reservations of that type and zone then take their availability from
                // (adze_scheduling::node_class).
                let reserved_failed: Vec<String> = entries
                    .keys()
                    .filter(|(name, _, ct)| {
                        *name == t.name && ct == adze_scheduling::labels::CAPACITY_TYPE_RESERVED
                    })
                    .map(|(_, zone, _)| zone.clone())
                    .filter(|zone| {
                        !t.offerings.iter().any(|o| {
                            &o.zone == zone
                                && o.capacity_type
                                    == adze_scheduling::labels::CAPACITY_TYPE_RESERVED
                        })
                    })
                    .collect();
                if !t.offerings.iter().any(hit) && reserved_failed.is_empty() {
                    return t.clone();
                }
                let mut t2 = InstanceType::clone(t);
                for o in &mut t2.offerings {
                    if hit(o) {
                        o.available = false;
                    }
                }
                for zone in reserved_failed {
                    t2.offerings.push(blocked_reserved(zone, None));
                }
                t2.refresh_offering_requirements();
                Arc::new(t2)
            })
            .collect()
    }

    /// The catalog with every offering in a zone away (at `now`, Unix seconds) unavailable,
    /// reserved ones included: a shift keeps launches out of the zone whatever capacity is
    /// held there.
    pub fn apply_zonal_shifts(
        &self,
        catalog: &[Arc<InstanceType>],
        now: i64,
    ) -> Vec<Arc<InstanceType>> {
        let away = self.zones_away(now);
        if away.is_empty() {
            return catalog.to_vec();
        }
        let shifted = |o: &adze_scheduling::Offering| {
            adze_scheduling::zonal_shift::is_away(&away, &o.zone, o.zone_id.as_deref())
        };
        catalog
            .iter()
            .map(|t| {
                if !t.offerings.iter().any(|o| o.available && shifted(o)) {
                    return t.clone();
                }
                let mut t2 = InstanceType::clone(t);
                let mut zones: BTreeMap<String, Option<String>> = BTreeMap::new();
                for o in &mut t2.offerings {
                    if shifted(o) {
                        o.available = false;
                        zones.insert(o.zone.clone(), o.zone_id.clone());
                    }
                }
                // Reserved offerings come from a node class, after this (as for a failed
                // reservation above): an unavailable `reserved` offering in the zone makes the
                // class's reservations there unavailable too.
                for (zone, zone_id) in zones {
                    let has_reserved = t2.offerings.iter().any(|o| {
                        o.zone == zone
                            && o.capacity_type == adze_scheduling::labels::CAPACITY_TYPE_RESERVED
                    });
                    if !has_reserved {
                        t2.offerings.push(blocked_reserved(zone, zone_id));
                    }
                }
                t2.refresh_offering_requirements();
                Arc::new(t2)
            })
            .collect()
    }
}

/// An unavailable `reserved` offering in `zone`: reserved offerings come from a node class,
/// after the catalog is marked, and the class's reservations of that type and zone take their
/// availability from it (adze_scheduling::node_class).
fn blocked_reserved(zone: String, zone_id: Option<String>) -> adze_scheduling::Offering {
    adze_scheduling::Offering {
        zone,
        zone_id,
        capacity_type: adze_scheduling::labels::CAPACITY_TYPE_RESERVED.into(),
        price: 0.0,
        available: false,
        reservation: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Drifted when the claim's name starts with `d`; fails for names starting with `x`.
    struct ByName;

    impl CloudProvider for ByName {
        fn name(&self) -> &'static str {
            "by-name"
        }
        fn create<'a>(&'a self, _: &'a NodeClaim) -> BoxFuture<'a, Result<Instance, CloudError>> {
            Box::pin(async { Err(CloudError::Other("no".into())) })
        }
        fn delete<'a>(&'a self, _: &'a NodeClaim) -> BoxFuture<'a, Result<(), CloudError>> {
            Box::pin(async { Ok(()) })
        }
        fn get<'a>(&'a self, _: &'a str) -> BoxFuture<'a, Result<Option<Instance>, CloudError>> {
            Box::pin(async { Ok(None) })
        }
        fn list(&self) -> BoxFuture<'_, Result<Vec<Instance>, CloudError>> {
            Box::pin(async { Ok(Vec::new()) })
        }
        fn instance_types(&self) -> Vec<Arc<InstanceType>> {
            Vec::new()
        }
        fn is_drifted<'a>(
            &'a self,
            claim: &'a NodeClaim,
        ) -> BoxFuture<'a, Result<bool, CloudError>> {
            let name = claim.metadata.name.clone().unwrap_or_default();
            Box::pin(async move {
                if name.starts_with('x') {
                    return Err(CloudError::Other(format!("cannot read {name}")));
                }
                Ok(name.starts_with('d'))
            })
        }
    }

    fn named(name: &str) -> Arc<NodeClaim> {
        Arc::new(
            serde_json::from_value(serde_json::json!({
                "apiVersion": "adze.sh/v1", "kind": "NodeClaim", "metadata": {"name": name},
                "spec": {"nodeClassRef": {"group": "aws.adze.sh", "kind": "EC2NodeClass", "name": "d"}},
            }))
            .unwrap(),
        )
    }

    #[test]
    fn default_batch_drift_asks_each_claim_and_fails_on_the_first_error() {
        let rt = futures::executor::block_on;
        let claims = [named("a"), named("d1"), named("b"), named("d2")];
        let drifted = rt(ByName.drifted_claims(&claims)).unwrap();
        assert_eq!(
            drifted.into_iter().collect::<Vec<_>>(),
            ["d1".to_string(), "d2".to_string()]
        );
        let claims = [named("d1"), named("x1")];
        let err = rt(ByName.drifted_claims(&claims)).unwrap_err();
        assert!(err.to_string().contains("cannot read x1"), "{err}");
    }

    #[test]
    fn a_cloud_that_cannot_reboot_says_so_rather_than_pretending() {
        let err = futures::executor::block_on(ByName.reboot("i-1")).unwrap_err();
        assert!(
            err.to_string()
                .contains("the by-name cloud provider cannot reboot instances (i-1)"),
            "{err}"
        );
    }

    #[test]
    fn a_cloud_without_status_checks_reports_nothing_known() {
        let ids = ["aws:///us-east-1a/i-1".to_string()];
        let health = futures::executor::block_on(ByName.instance_health(&ids)).unwrap();
        assert!(health.is_empty());
    }

    #[test]
    fn failed_offering_is_unavailable_for_three_minutes() {
        let catalog = adze_scheduling::catalog::embedded();
        let t = catalog.iter().find(|t| t.name == "m5.large").unwrap();
        let o = t.offerings.iter().find(|o| o.available).unwrap().clone();
        let cache = UnavailableOfferings::new(Duration::from_secs(180));
        let now = Instant::now();
        cache.mark("m5.large", &o.zone, &o.capacity_type, now);
        let marked = cache.apply(&catalog, now + Duration::from_secs(179));
        let m = marked.iter().find(|t| t.name == "m5.large").unwrap();
        let mo = m
            .offerings
            .iter()
            .find(|x| x.zone == o.zone && x.capacity_type == o.capacity_type)
            .unwrap();
        assert!(!mo.available);
        let later = cache.apply(&catalog, now + Duration::from_secs(181));
        assert!(Arc::ptr_eq(&later[0], &catalog[0]));
    }

    fn shift(away: &str, expires_at: i64) -> ZonalShift {
        ZonalShift {
            away_from: away.into(),
            expires_at,
            applied: true,
            kind: "ZONAL_SHIFT".into(),
        }
    }

    #[test]
    fn a_cloud_without_zonal_shifts_reports_none() {
        assert!(
            futures::executor::block_on(ByName.zonal_shifts())
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn offerings_in_a_shifted_zone_are_unavailable_until_the_shift_expires() {
        let catalog = adze_scheduling::catalog::embedded();
        let t = catalog.iter().find(|t| t.name == "m5.large").unwrap();
        let zone = t.offerings[0].zone.clone();
        let cache = UnavailableOfferings::new(Duration::from_secs(180));
        let (before, after) = cache.set_zonal_shifts(vec![shift(&zone, 1_000)], 10);
        assert!(before.is_empty());
        assert_eq!(after, BTreeSet::from([zone.clone()]));
        let marked = cache.apply_zonal_shifts(&catalog, 999);
        let m = marked.iter().find(|t| t.name == "m5.large").unwrap();
        assert!(m.offerings.iter().any(|o| o.available));
        for o in m.offerings.iter().filter(|o| o.zone == zone) {
            assert!(!o.available, "{o:?} should be unavailable");
        }
        // Reservations there are refused as well: an unavailable reserved offering.
        assert!(m.offerings.iter().any(|o| o.zone == zone
            && o.capacity_type == adze_scheduling::labels::CAPACITY_TYPE_RESERVED
            && !o.available));
        let elsewhere = |t: &InstanceType| -> Vec<(String, String, bool)> {
            (t.offerings.iter())
                .filter(|o| o.zone != zone)
                .map(|o| (o.zone.clone(), o.capacity_type.clone(), o.available))
                .collect()
        };
        assert_eq!(elsewhere(m), elsewhere(t), "other zones are untouched");
        let later = cache.apply_zonal_shifts(&catalog, 1_000);
        assert!(Arc::ptr_eq(&later[0], &catalog[0]));
    }

    #[test]
    fn a_shift_named_by_zone_id_matches_offerings_carrying_that_id() {
        let mut t = InstanceType::clone(&adze_scheduling::catalog::embedded()[0]);
        for o in &mut t.offerings {
            o.zone_id = Some(format!("id-{}", o.zone));
        }
        let zone = t.offerings[0].zone.clone();
        let catalog = vec![Arc::new(t)];
        let cache = UnavailableOfferings::new(Duration::from_secs(180));
        cache.set_zonal_shifts(vec![shift(&format!("id-{zone}"), i64::MAX)], 0);
        let marked = cache.apply(&catalog, Instant::now());
        let offerings = &marked[0].offerings;
        assert!(
            offerings
                .iter()
                .filter(|o| o.zone == zone)
                .all(|o| !o.available)
        );
        assert!(offerings.iter().any(|o| o.zone != zone && o.available));
    }

    fn launched(t: &str, zone: &str) -> Instance {
        Instance {
            provider_id: format!("aws:///{zone}/i-1"),
            instance_type: t.into(),
            zone: zone.into(),
            capacity_type: "spot".into(),
            capacity: BTreeMap::new(),
            allocatable: BTreeMap::new(),
        }
    }

    #[test]
    fn claim_labels_follow_the_launched_instance_not_the_plan() {
        use adze_scheduling::labels;
        let catalog = adze_scheduling::catalog::embedded();
        let planned: BTreeMap<String, String> = [
            (labels::INSTANCE_TYPE, "m5.large"),
            (labels::ZONE, "us-east-1a"),
            (labels::CAPACITY_TYPE, "on-demand"),
            (labels::ARCH, "amd64"),
            (labels::NODEPOOL, "general"),
            ("team", "web"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        // The fleet launched a Graviton type in another zone.
        let out = relabel_for_instance(&planned, &launched("m6g.large", "us-east-1b"), &catalog);
        assert_eq!(out[labels::INSTANCE_TYPE], "m6g.large");
        assert_eq!(out[labels::ZONE], "us-east-1b");
        assert_eq!(out[labels::CAPACITY_TYPE], "spot");
        assert_eq!(out[labels::ARCH], "arm64");
        assert_eq!(out[labels::NODEPOOL], "general");
        assert_eq!(out["team"], "web");
        // Every single-valued label of the launched type is there, none of the planned type's
        // that the launched one lacks.
        let m6g = catalog.iter().find(|t| t.name == "m6g.large").unwrap();
        for r in m6g.requirements.iter() {
            if let Some(v) = r.single_value() {
                assert_eq!(out.get(&r.key).map(String::as_str), Some(v), "{}", r.key);
            }
        }
        assert!(!out.keys().any(|k| k.starts_with("karpenter")));
        // With Karpenter's keys on the claim, they follow the launched instance as well.
        let aliased = labels::with_karpenter_aliases(&planned);
        assert_eq!(aliased["karpenter.sh/capacity-type"], "on-demand");
        let out = relabel_for_instance(&aliased, &launched("m6g.large", "us-east-1b"), &catalog);
        assert_eq!(out["karpenter.sh/capacity-type"], "spot");
        assert_eq!(out["karpenter.k8s.aws/instance-family"], "m6g");
        assert_eq!(out["karpenter.sh/nodepool"], "general");
        assert_eq!(out, labels::with_karpenter_aliases(&out));
        assert_eq!(out["karpenter.k8s.aws/instance-cpu-manufacturer"], "aws");
    }

    #[test]
    fn the_zone_id_follows_the_launched_zone() {
        use adze_scheduling::labels;
        let ids = [("us-east-1a", "use1-az4"), ("us-east-1b", "use1-az6")];
        let catalog: Vec<Arc<InstanceType>> = adze_scheduling::catalog::embedded()
            .iter()
            .map(|t| {
                let mut offerings = t.offerings.clone();
                for o in &mut offerings {
                    o.zone_id = ids
                        .iter()
                        .find(|(z, _)| *z == o.zone)
                        .map(|(_, id)| id.to_string());
                }
                Arc::new(t.reshaped(t.capacity.clone(), t.overhead.clone(), offerings))
            })
            .collect();
        let planned: BTreeMap<String, String> = [
            (labels::INSTANCE_TYPE, "m5.large"),
            (labels::ZONE, "us-east-1a"),
            (labels::ZONE_ID, "use1-az4"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let out = relabel_for_instance(&planned, &launched("m5.large", "us-east-1b"), &catalog);
        assert_eq!(out[labels::ZONE_ID], "use1-az6");
        // A zone the catalog knows no ID for leaves no stale ID behind.
        let out = relabel_for_instance(&planned, &launched("m5.large", "us-east-1c"), &catalog);
        assert_eq!(out.get(labels::ZONE_ID), None);
    }
}
