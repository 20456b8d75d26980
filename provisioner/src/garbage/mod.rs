//! Garbage collection between the cloud and the NodeClaims:
//! - an instance tagged as ours (in [`CloudProvider::list`]) that no NodeClaim's
//!   `status.providerID` names is terminated once it has stayed unclaimed for a grace period
//!   (a launch writes the providerID a moment after the instance exists, and our watch lags);
//! - a NodeClaim that registered and whose instance has been gone from the list for the same
//!   grace period is deleted, so its pods are provisioned again instead of waiting on capacity
//!   that will never come. (EC2's list is eventually consistent: a new instance can be missing
//!   from DescribeInstances for a while after it launched, and a node may register first.)
//!
//! [`Collector::decide`] is the pure decision; [`Garbage::run`] the thin loop around it.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use adze_api::NodeClaim;
use adze_api::conditions::{self, nodeclaim as cond};
use kube::api::DeleteParams;
use kube::{Api, Client};
use serde_json::json;

use crate::cloud::CloudProvider;
use crate::state::ClusterState;

/// What the collector needs to know about a NodeClaim.
#[derive(Debug, Clone)]
pub struct ClaimView {
    pub name: String,
    pub provider_id: Option<String>,
    pub registered: bool,
    pub deleting: bool,
}

impl ClaimView {
    pub fn of(claim: &NodeClaim) -> ClaimView {
        let conds = crate::provisioning::snapshot::claim_conditions(claim);
        ClaimView {
            name: claim.metadata.name.clone().unwrap_or_default(),
            provider_id: claim
                .status
                .as_ref()
                .and_then(|s| s.provider_id.clone())
                .filter(|p| !p.is_empty()),
            registered: conditions::is_true(conds, cond::REGISTERED),
            deleting: claim.metadata.deletion_timestamp.is_some(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// No NodeClaim has owned this instance for the whole grace period.
    TerminateInstance { provider_id: String },
    /// The claim registered, but its instance has been missing from the list for the whole
    /// grace period. Carried out only after a fresh lookup of `provider_id` also misses it:
    /// the list can be a sweep taken before a new instance became visible (EC2 lags), and
    /// deleting the claim of a running node would evict its pods for nothing.
    DeleteClaim { name: String, provider_id: String },
}

/// Remembers since when each unclaimed instance has been seen unclaimed, and each registered
/// claim's instance missing.
#[derive(Debug, Default)]
pub struct Collector {
    unclaimed_since: HashMap<String, Instant>,
    missing_since: HashMap<String, Instant>,
}

impl Collector {
    pub fn decide(
        &mut self,
        instances: &[String],
        claims: &[ClaimView],
        now: Instant,
        grace: Duration,
    ) -> Vec<Action> {
        let claimed: BTreeSet<&str> = claims
            .iter()
            .filter_map(|c| c.provider_id.as_deref())
            .collect();
        let present: BTreeSet<&str> = instances.iter().map(String::as_str).collect();
        let mut actions = Vec::new();
        let unclaimed: BTreeSet<&str> = present.difference(&claimed).copied().collect();
        self.unclaimed_since
            .retain(|pid, _| unclaimed.contains(pid.as_str()));
        for pid in unclaimed {
            let since = *self.unclaimed_since.entry(pid.to_string()).or_insert(now);
            if now.duration_since(since) >= grace {
                actions.push(Action::TerminateInstance {
                    provider_id: pid.to_string(),
                });
            }
        }
        let missing: BTreeMap<&str, &str> = claims
            .iter()
            .filter(|c| c.registered && !c.deleting)
            .filter_map(|c| {
                let pid = c.provider_id.as_deref()?;
                (!present.contains(pid)).then_some((c.name.as_str(), pid))
            })
            .collect();
        self.missing_since
            .retain(|name, _| missing.contains_key(name.as_str()));
        for (name, pid) in missing {
            let since = *self.missing_since.entry(name.to_string()).or_insert(now);
            if now.duration_since(since) >= grace {
                actions.push(Action::DeleteClaim {
                    name: name.to_string(),
                    provider_id: pid.to_string(),
                });
            }
        }
        actions
    }

    /// A fresh lookup found the instance of claim `name` after all: the list was stale, so its
    /// missing clock starts again.
    pub fn seen(&mut self, name: &str) {
        self.missing_since.remove(name);
    }
}

/// [`CloudProvider::delete`] takes a NodeClaim; for an instance no claim owns we hand it one
/// that carries only the providerID (and, as its name, the id's last path segment, which is
/// how the simulated cloud names nodes).
pub fn orphan_claim(provider_id: &str) -> NodeClaim {
    let name = provider_id.rsplit('/').next().unwrap_or(provider_id);
    serde_json::from_value(json!({
        "apiVersion": "adze.sh/v1", "kind": "NodeClaim",
        "metadata": {"name": name},
        "spec": {"nodeClassRef": {"group": "", "kind": "", "name": ""}},
        "status": {"providerID": provider_id},
    }))
    .expect("orphan nodeclaim")
}

pub struct Garbage {
    pub client: Client,
    pub state: ClusterState,
    pub cloud: Arc<dyn CloudProvider>,
    /// How long an instance may stay unclaimed before it is terminated.
    pub grace: Duration,
    pub interval: Duration,
}

impl Garbage {
    /// Never returns.
    pub async fn run(self) {
        let mut collector = Collector::default();
        let metrics = crate::metrics::provisioner();
        loop {
            tokio::time::sleep(self.interval).await;
            let instances = match self.cloud.list().await {
                Ok(list) => list.into_iter().map(|i| i.provider_id).collect::<Vec<_>>(),
                Err(e) => {
                    tracing::warn!(error = %e, "listing instances failed; garbage collection skipped");
                    continue;
                }
            };
            let claims: Vec<ClaimView> = self
                .state
                .claims
                .state()
                .iter()
                .map(|c| ClaimView::of(c))
                .collect();
            for action in collector.decide(&instances, &claims, Instant::now(), self.grace) {
                match action {
                    Action::TerminateInstance { provider_id } => {
                        tracing::info!(provider_id = %provider_id, grace = ?self.grace, "terminating an instance no NodeClaim owns");
                        if let Err(e) = self.cloud.delete(&orphan_claim(&provider_id)).await {
                            tracing::warn!(provider_id = %provider_id, error = %e, "terminating orphan failed");
                        }
                    }
                    Action::DeleteClaim { name, provider_id } => {
                        match self.cloud.get(&provider_id).await {
                            Ok(None) => {}
                            Ok(Some(_)) => {
                                tracing::info!(nodeclaim = %name, provider_id = %provider_id, "instance missing from the list but found by a fresh lookup; keeping its nodeclaim");
                                collector.seen(&name);
                                continue;
                            }
                            Err(e) => {
                                tracing::warn!(nodeclaim = %name, provider_id = %provider_id, error = %e, "could not confirm the instance is gone; keeping its nodeclaim for now");
                                continue;
                            }
                        }
                        tracing::info!(nodeclaim = %name, "instance is gone; deleting its nodeclaim");
                        let api: Api<NodeClaim> = Api::all(self.client.clone());
                        match api.delete(&name, &DeleteParams::default()).await {
                            Ok(_) => {
                                metrics
                                    .nodeclaims_terminated
                                    .get_or_create(&crate::metrics::reason("instance_gone"))
                                    .inc();
                            }
                            Err(kube::Error::Api(e)) if e.code == 404 => {}
                            Err(e) => {
                                tracing::warn!(nodeclaim = %name, error = %e, "deleting nodeclaim failed")
                            }
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claim(name: &str, pid: Option<&str>, registered: bool) -> ClaimView {
        ClaimView {
            name: name.into(),
            provider_id: pid.map(Into::into),
            registered,
            deleting: false,
        }
    }

    const GRACE: Duration = Duration::from_secs(60);

    #[test]
    fn unclaimed_instance_is_terminated_only_after_the_grace_period() {
        let mut c = Collector::default();
        let t0 = Instant::now();
        let instances = vec!["sim://a".to_string(), "sim://stray".to_string()];
        let claims = [claim("a", Some("sim://a"), true)];
        assert!(c.decide(&instances, &claims, t0, GRACE).is_empty());
        assert!(
            c.decide(&instances, &claims, t0 + Duration::from_secs(59), GRACE)
                .is_empty()
        );
        assert_eq!(
            c.decide(&instances, &claims, t0 + GRACE, GRACE),
            vec![Action::TerminateInstance {
                provider_id: "sim://stray".into()
            }]
        );
    }

    #[test]
    fn instance_claimed_during_the_grace_period_is_kept_and_its_clock_reset() {
        let mut c = Collector::default();
        let t0 = Instant::now();
        let instances = vec!["sim://b".to_string()];
        assert!(c.decide(&instances, &[], t0, GRACE).is_empty());
        // The launch wrote the providerID: claimed.
        let claims = [claim("b", Some("sim://b"), false)];
        assert!(c.decide(&instances, &claims, t0 + GRACE, GRACE).is_empty());
        // Unclaimed again later: a fresh grace period starts.
        let t1 = t0 + 2 * GRACE;
        assert!(c.decide(&instances, &[], t1, GRACE).is_empty());
        assert_eq!(c.decide(&instances, &[], t1 + GRACE, GRACE).len(), 1);
    }

    #[test]
    fn registered_claim_whose_instance_stays_gone_is_deleted() {
        let mut c = Collector::default();
        let claims = [
            claim("gone", Some("sim://gone"), true),
            claim("booting", Some("sim://booting"), false),
            claim("new", None, false),
        ];
        let t0 = Instant::now();
        // Missing from one list is not gone: EC2's list lags behind a launch.
        assert!(c.decide(&[], &claims, t0, GRACE).is_empty());
        assert_eq!(
            c.decide(&[], &claims, t0 + GRACE, GRACE),
            vec![Action::DeleteClaim {
                name: "gone".into(),
                provider_id: "sim://gone".into(),
            }]
        );
    }

    #[test]
    fn instance_found_by_a_fresh_lookup_restarts_the_grace_period() {
        let mut c = Collector::default();
        let claims = [claim("stale", Some("sim://stale"), true)];
        let t0 = Instant::now();
        assert!(c.decide(&[], &claims, t0, GRACE).is_empty());
        assert_eq!(c.decide(&[], &claims, t0 + GRACE, GRACE).len(), 1);
        // The run loop's lookup found it: the list was a stale sweep.
        c.seen("stale");
        assert!(c.decide(&[], &claims, t0 + GRACE, GRACE).is_empty());
        assert!(c.decide(&[], &claims, t0 + 3 * GRACE / 2, GRACE).is_empty());
        assert_eq!(c.decide(&[], &claims, t0 + 2 * GRACE, GRACE).len(), 1);
    }

    #[test]
    fn instance_that_shows_up_late_keeps_its_claim() {
        let mut c = Collector::default();
        let claims = [claim("late", Some("sim://late"), true)];
        let t0 = Instant::now();
        assert!(c.decide(&[], &claims, t0, GRACE).is_empty());
        let listed = vec!["sim://late".to_string()];
        assert!(c.decide(&listed, &claims, t0 + GRACE / 2, GRACE).is_empty());
        // Missing again: a fresh grace period.
        assert!(c.decide(&[], &claims, t0 + GRACE, GRACE).is_empty());
        assert_eq!(c.decide(&[], &claims, t0 + 2 * GRACE, GRACE).len(), 1);
    }

    #[test]
    fn claim_already_being_deleted_is_left_to_its_finalizer() {
        let mut c = Collector::default();
        let mut gone = claim("gone", Some("sim://gone"), true);
        gone.deleting = true;
        assert!(c.decide(&[], &[gone], Instant::now(), GRACE).is_empty());
    }

    #[test]
    fn orphan_claim_carries_the_provider_id_and_a_name_from_it() {
        let c = orphan_claim("adze-sim://stray-1");
        assert_eq!(c.metadata.name.as_deref(), Some("stray-1"));
        assert_eq!(
            c.status.unwrap().provider_id.as_deref(),
            Some("adze-sim://stray-1")
        );
    }
}
