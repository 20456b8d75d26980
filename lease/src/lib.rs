//! Leader election on a `coordination.k8s.io/v1` Lease, so that of several replicas exactly
//! one acts: the provisioner runs its controllers only while leading; the extender answers
//! kube-scheduler (reports ready) only while leading, so every verb meets one ledger. Every
//! replica keeps its watches so a follower can take over within a lease duration. The
//! decisions are in [`decision`]; this crate only reads and writes the Lease, with the
//! resourceVersion guarding every write so two replicas can never both succeed in taking it.

pub mod cli;
pub mod decision;

use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::api::{ObjectMeta, PostParams};
use kube::{Api, Client};
use tokio::sync::watch;

use decision::{Decision, Observer, Record, must_step_down};

#[derive(Debug, Clone)]
pub struct Settings {
    pub namespace: String,
    pub name: String,
    pub identity: String,
    /// How long a lease lives without renewal before another replica may take it.
    pub lease_duration: Duration,
    /// A leader that could not renew for this long stops acting.
    pub renew_deadline: Duration,
    /// Every replica reads (and the leader renews) the lease this often.
    pub retry_period: Duration,
}

impl Settings {
    /// Retry period < renew deadline < lease duration, or a leader could lose its lease
    /// before it notices, and two replicas would act at once.
    pub fn check(&self) -> Result<(), String> {
        if self.retry_period < self.renew_deadline && self.renew_deadline < self.lease_duration {
            Ok(())
        } else {
            Err(format!(
                "--leader-election-retry-period ({:?}) < --leader-election-renew-deadline ({:?}) < --leader-election-lease-duration ({:?}) must hold",
                self.retry_period, self.renew_deadline, self.lease_duration
            ))
        }
    }
}

/// `POD_NAME` (or the hostname, else `fallback`) and the process id: unique per process,
/// readable in the Lease.
pub fn default_identity(fallback: &str) -> String {
    let host = std::env::var("POD_NAME")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .or_else(|| std::fs::read_to_string("/proc/sys/kernel/hostname").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| fallback.into());
    format!("{host}_{}", std::process::id())
}

/// `POD_NAMESPACE`, else `default`.
pub fn default_namespace() -> String {
    std::env::var("POD_NAMESPACE").unwrap_or_else(|_| "default".into())
}

fn record_of(lease: &Lease) -> Record {
    let spec = lease.spec.clone().unwrap_or_default();
    Record {
        holder: spec.holder_identity.unwrap_or_default(),
        renew_time: spec.renew_time.map(|t| t.0.to_string()).unwrap_or_default(),
        lease_duration: Duration::from_secs(spec.lease_duration_seconds.unwrap_or(0).max(0) as u64),
        transitions: spec.lease_transitions.unwrap_or(0),
    }
}

/// What [`start`] reports. `terms` counts the times this replica became leader, so a
/// loss followed at once by a new term is not missed by a receiver that saw neither change.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Leadership {
    pub leading: bool,
    pub terms: u32,
}

/// Runs the election in the background. `leading` turns `true` when this replica becomes
/// leader and `false` when it loses the lease or cannot renew it within the renew deadline;
/// the elector then goes on as a follower and may lead again later (a new term). A caller
/// that cannot safely resume (the provisioner) exits when its term ends.
pub fn start(client: Client, settings: Settings) -> watch::Receiver<Leadership> {
    let (tx, rx) = watch::channel(Leadership::default());
    let mut terms = 0;
    let api: Api<Lease> = Api::namespaced(client, &settings.namespace);
    tokio::spawn(async move {
        let mut observer = Observer::default();
        let mut last_renewed: Option<Instant> = None;
        let mut last_follow: Option<String> = None;
        loop {
            let now = Instant::now();
            match try_once(&api, &settings, &mut observer, now).await {
                Ok(Outcome::Holding) => {
                    if last_renewed.is_none() {
                        tracing::info!(identity = %settings.identity, lease = %settings.name, "became leader");
                        last_follow = None;
                        terms += 1;
                        let _ = tx.send(Leadership {
                            leading: true,
                            terms,
                        });
                    }
                    last_renewed = Some(now);
                }
                Ok(Outcome::Following(holder)) => {
                    if last_renewed.take().is_some() {
                        tracing::error!(holder = %holder, "leader lease taken by another replica");
                        let _ = tx.send(Leadership {
                            leading: false,
                            terms,
                        });
                    }
                    if last_follow.as_ref() != Some(&holder) {
                        tracing::info!(holder = %holder, "following the current leader");
                        last_follow = Some(holder);
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, lease = %settings.name, "leader lease not read or written; retrying")
                }
            }
            if let Some(t) = last_renewed
                && must_step_down(t, Instant::now(), settings.renew_deadline)
            {
                tracing::error!(deadline = ?settings.renew_deadline, "leader lease not renewed in time");
                last_renewed = None;
                let _ = tx.send(Leadership {
                    leading: false,
                    terms,
                });
            }
            // Every receiver gone: stop at once, so a released lease is not taken back.
            tokio::select! {
                _ = tx.closed() => break,
                _ = tokio::time::sleep(settings.retry_period) => {}
            }
        }
    });
    rx
}

enum Outcome {
    Holding,
    Following(String),
}

/// The Lease's `leaseDurationSeconds` (an i32): a longer duration is capped, not wrapped to a
/// negative number that other replicas would read as "expired" and take the lease at once.
fn lease_seconds(d: Duration) -> i32 {
    i32::try_from(d.as_secs().max(1)).unwrap_or(i32::MAX)
}

async fn try_once(
    api: &Api<Lease>,
    s: &Settings,
    observer: &mut Observer,
    now: Instant,
) -> Result<Outcome, kube::Error> {
    let lease = api.get_opt(&s.name).await?;
    let record = lease.as_ref().map(record_of);
    let stamp = Some(MicroTime(k8s_openapi::jiff::Timestamp::now()));
    let duration_s = Some(lease_seconds(s.lease_duration));
    let written = match (observer.decide(&s.identity, record.as_ref(), now), lease) {
        (Decision::Follow { holder, .. }, _) => return Ok(Outcome::Following(holder)),
        (Decision::Create, _) | (_, None) => {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(s.name.clone()),
                    namespace: Some(s.namespace.clone()),
                    ..ObjectMeta::default()
                },
                spec: Some(LeaseSpec {
                    holder_identity: Some(s.identity.clone()),
                    lease_duration_seconds: duration_s,
                    acquire_time: stamp.clone(),
                    renew_time: stamp,
                    lease_transitions: Some(0),
                    ..LeaseSpec::default()
                }),
            };
            api.create(&PostParams::default(), &lease).await
        }
        (d, Some(mut lease)) => {
            let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
            if d == Decision::Acquire {
                spec.holder_identity = Some(s.identity.clone());
                spec.acquire_time = stamp.clone();
                spec.lease_transitions = Some(spec.lease_transitions.unwrap_or(0) + 1);
            }
            spec.lease_duration_seconds = duration_s;
            spec.renew_time = stamp;
            // replace carries metadata.resourceVersion: a concurrent writer gets 409.
            api.replace(&s.name, &PostParams::default(), &lease).await
        }
    };
    match written {
        Ok(_) => Ok(Outcome::Holding),
        Err(kube::Error::Api(e)) if e.code == 409 => Ok(Outcome::Following(
            record.map(|r| r.holder).unwrap_or_default(),
        )),
        Err(e) => Err(e),
    }
}

/// Gives the lease up on a clean shutdown so a follower takes over at once instead of after
/// a lease duration. Best effort.
pub async fn release(client: Client, s: &Settings) {
    let api: Api<Lease> = Api::namespaced(client, &s.namespace);
    let Ok(Some(mut lease)) = api.get_opt(&s.name).await else {
        return;
    };
    let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
    if spec.holder_identity.as_deref() != Some(&s.identity) {
        return;
    }
    spec.holder_identity = None;
    spec.lease_duration_seconds = Some(1);
    match api.replace(&s.name, &PostParams::default(), &lease).await {
        Ok(_) => tracing::info!(lease = %s.name, "leader lease released"),
        Err(e) => tracing::warn!(error = %e, "leader lease not released"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lease_duration_beyond_i32_seconds_is_capped_not_wrapped_negative() {
        assert_eq!(lease_seconds(Duration::from_secs(15)), 15);
        assert_eq!(lease_seconds(Duration::ZERO), 1);
        assert_eq!(lease_seconds(Duration::from_secs(1 << 31)), i32::MAX);
        assert_eq!(lease_seconds(Duration::MAX), i32::MAX);
    }
}
