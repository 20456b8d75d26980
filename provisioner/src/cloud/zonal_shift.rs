//! Reads the cluster's ARC zonal shifts (`--enable-zonal-shift`) every
//! [`ZONAL_SHIFT_INTERVAL`] and hands them to [`UnavailableOfferings`], which planning,
//! disruption and launches read the catalog through: offerings in a zone away become
//! unavailable, and disruption leaves that zone's nodes alone
//! ([`adze_scheduling::zonal_shift`] is the rule). Reading only.
//!
//! A reading that fails (throttling, a policy without `arc-zonal-shift:GetManagedResource`,
//! a cluster not registered with zonal shift) is logged and changes nothing: the last
//! reading stays, and each shift in it still ends at its own expiry. Before any reading
//! succeeds no zone is away. This follows Karpenter's AWS provider, which keeps its last
//! statuses when a read fails.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use super::{CloudProvider, UnavailableOfferings};

/// How often the shifts are read: Karpenter's zonal-shift controller polls every 30 s.
pub const ZONAL_SHIFT_INTERVAL: Duration = Duration::from_secs(30);

pub struct ZonalShiftWatch {
    pub cloud: Arc<dyn CloudProvider>,
    pub unavailable: UnavailableOfferings,
    pub interval: Duration,
}

/// What one reading changed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Reading {
    /// Zones away now that were not before.
    pub started: BTreeSet<String>,
    /// Zones no longer away.
    pub ended: BTreeSet<String>,
    /// The read failed; nothing changed.
    pub failed: bool,
}

impl ZonalShiftWatch {
    pub async fn run(self) {
        tracing::info!(
            interval_s = self.interval.as_secs(),
            "zonal shift: reading the cluster's ARC zonal shifts"
        );
        loop {
            self.read(adze_cloud::unix_now()).await;
            tokio::time::sleep(self.interval).await;
        }
    }

    /// Reads the shifts once and logs what changed, at `now` (Unix seconds).
    #[tracing::instrument(skip(self))]
    pub async fn read(&self, now: i64) -> Reading {
        match self.cloud.zonal_shifts().await {
            Ok(shifts) => {
                let active = shifts.iter().filter(|s| s.active(now)).count();
                let kinds: Vec<String> = shifts
                    .iter()
                    .filter(|s| s.active(now))
                    .map(|s| format!("{}:{}@{}", s.kind, s.away_from, s.expires_at))
                    .collect();
                let (before, after) = self.unavailable.set_zonal_shifts(shifts, now);
                let started: BTreeSet<String> = after.difference(&before).cloned().collect();
                let ended: BTreeSet<String> = before.difference(&after).cloned().collect();
                for zone in &started {
                    tracing::warn!(
                        %zone, shifts = ?kinds,
                        "zonal shift: zone is shifted away; no capacity is launched there and its nodes are not voluntarily disrupted until the shift ends"
                    );
                }
                for zone in &ended {
                    tracing::info!(%zone, "zonal shift ended: the zone is used again");
                }
                tracing::debug!(active, away = ?after, "read the cluster's zonal shifts");
                Reading {
                    started,
                    ended,
                    failed: false,
                }
            }
            Err(e) => {
                tracing::warn!(
                    error = %e,
                    away = ?self.unavailable.zones_away(now),
                    "zonal shifts could not be read; keeping the last reading (each shift still ends at its expiry)"
                );
                Reading {
                    failed: true,
                    ..Reading::default()
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use adze_api::NodeClaim;
    use adze_scheduling::InstanceType;
    use futures::future::BoxFuture;

    use super::*;
    use crate::cloud::{CloudError, Instance, ZonalShift};

    /// Answers `zonal_shifts` with whatever is queued (an error when `Err`).
    struct ScriptedArc {
        answers: Mutex<Vec<Result<Vec<ZonalShift>, String>>>,
    }

    impl CloudProvider for ScriptedArc {
        fn name(&self) -> &'static str {
            "arc-test"
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
        fn is_drifted<'a>(&'a self, _: &'a NodeClaim) -> BoxFuture<'a, Result<bool, CloudError>> {
            Box::pin(async { Ok(false) })
        }
        fn zonal_shifts(&self) -> BoxFuture<'_, Result<Vec<ZonalShift>, CloudError>> {
            let next = self.answers.lock().unwrap().remove(0);
            Box::pin(async move { next.map_err(CloudError::Other) })
        }
    }

    fn shift(away: &str, expires_at: i64) -> ZonalShift {
        ZonalShift {
            away_from: away.into(),
            expires_at,
            applied: true,
            kind: "ZONAL_SHIFT".into(),
        }
    }

    #[tokio::test]
    async fn a_failed_read_keeps_the_last_reading_until_its_shifts_expire() {
        let unavailable = UnavailableOfferings::new(Duration::from_secs(180));
        let watch = ZonalShiftWatch {
            cloud: Arc::new(ScriptedArc {
                answers: Mutex::new(vec![
                    Err("AccessDeniedException: not authorized".into()),
                    Ok(vec![shift("use1-az1", 1_000)]),
                    Err("ThrottlingException".into()),
                    Ok(vec![]),
                ]),
            }),
            unavailable: unavailable.clone(),
            interval: ZONAL_SHIFT_INTERVAL,
        };
        // Denied before any reading: no signal, no zone away.
        let r = watch.read(100).await;
        assert!(r.failed);
        assert!(unavailable.zones_away(100).is_empty());
        // A shift starts.
        let r = watch.read(130).await;
        assert_eq!(r.started, BTreeSet::from(["use1-az1".to_string()]));
        assert_eq!(
            unavailable.zones_away(130),
            BTreeSet::from(["use1-az1".to_string()])
        );
        // Throttled: the last reading holds, and still ends at the shift's expiry.
        assert!(watch.read(160).await.failed);
        assert_eq!(unavailable.zones_away(160).len(), 1);
        assert!(unavailable.zones_away(1_000).is_empty());
        // Cancelled: ARC no longer lists it.
        let r = watch.read(190).await;
        assert_eq!(r.ended, BTreeSet::from(["use1-az1".to_string()]));
        assert!(unavailable.zones_away(190).is_empty());
    }
}
