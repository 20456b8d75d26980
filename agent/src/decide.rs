//! The agent's decisions, pure: what IMDS said + what the node remembers → what to do. No
//! clients and no clocks here (`now` is an input), so every rule is unit-tested.

use std::collections::BTreeSet;

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

use crate::notice::{MaintenanceState, Observation};

/// What to do on a rebalance recommendation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum RebalanceMode {
    /// Do nothing; the node is handled when (if) the interruption notice comes.
    Ignore,
    /// Taint `adze.sh/rebalance:PreferNoSchedule` so new pods prefer other nodes.
    Taint,
    /// Mark the NodeClaim `Interrupted` (reason RebalanceRecommendation) so the provisioner
    /// launches a replacement now; pods stay until the node is really interrupted.
    Replace,
    /// Treat it like an interruption without a deadline: taint, mark, drain.
    Drain,
}

/// A drain the agent started, kept on the node (annotation) so a restarted agent resumes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DrainRecord {
    /// The event it answers (see `notice::*::key`).
    pub event: String,
    /// `SpotInterruption`, `RebalanceRecommendation` or `ScheduledMaintenance`.
    pub reason: String,
    /// The instance's end: evictions go on until then.
    pub deadline: DateTime<Utc>,
    /// Whether the node carries `adze.sh/interrupted` and its NodeClaim `Interrupted` for this.
    pub interrupted: bool,
}

/// What the node remembers (from its annotations).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Memory {
    /// Events already acted on; never acted on again.
    pub handled: BTreeSet<String>,
    pub drain: Option<DrainRecord>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Taint `adze.sh/interrupted:NoSchedule` (when `interrupted`), mark the NodeClaim, cordon,
    /// and drain by the record's deadline.
    BeginDrain(DrainRecord),
    /// Rebalance in `Taint` mode.
    TaintPreferNoSchedule { event: String },
    /// Rebalance in `Replace` mode.
    AskReplacement { event: String },
    /// The maintenance event was canceled or completed: uncordon, forget the drain.
    EndDrain { event: String },
}

#[derive(Debug, Clone)]
pub struct Policy {
    pub rebalance: RebalanceMode,
    /// Maintenance drains start this long before NotBefore.
    pub maintenance_lead: Duration,
    /// Deadline given to a rebalance drain (which has none of its own).
    pub rebalance_drain_window: Duration,
}

impl Default for Policy {
    fn default() -> Self {
        Self {
            rebalance: RebalanceMode::Ignore,
            maintenance_lead: Duration::minutes(10),
            rebalance_drain_window: Duration::minutes(10),
        }
    }
}

/// Decides the actions for one poll. An event already handled, or already being drained for,
/// yields nothing: acting twice would re-drain a node an operator uncordoned.
pub fn decide(obs: &Observation, mem: &Memory, policy: &Policy, now: DateTime<Utc>) -> Vec<Action> {
    let mut out = Vec::new();
    let draining = mem.drain.as_ref();
    let seen = |key: &str| mem.handled.contains(key) || draining.is_some_and(|d| d.event == key);

    if let Some(spot) = &obs.spot {
        let key = spot.key();
        // A spot notice overrides any softer drain: it has the hard deadline.
        if !seen(&key) && !draining.is_some_and(|d| d.interrupted && d.deadline <= spot.time) {
            out.push(Action::BeginDrain(DrainRecord {
                event: key,
                reason: "SpotInterruption".into(),
                deadline: spot.time,
                interrupted: true,
            }));
            return out;
        }
    }

    if let Some(r) = &obs.rebalance {
        let key = r.key();
        if !seen(&key) {
            match policy.rebalance {
                RebalanceMode::Ignore => {}
                RebalanceMode::Taint => out.push(Action::TaintPreferNoSchedule { event: key }),
                RebalanceMode::Replace => out.push(Action::AskReplacement { event: key }),
                RebalanceMode::Drain if draining.is_none() => {
                    out.push(Action::BeginDrain(DrainRecord {
                        event: key,
                        reason: "RebalanceRecommendation".into(),
                        // A window past the end of time is no deadline at all.
                        deadline: now
                            .checked_add_signed(policy.rebalance_drain_window)
                            .unwrap_or(DateTime::<Utc>::MAX_UTC),
                        interrupted: true,
                    }))
                }
                RebalanceMode::Drain => {}
            }
        }
    }

    for ev in &obs.maintenance {
        let key = ev.key();
        match ev.state {
            MaintenanceState::Active => {
                // A lead reaching back before the earliest representable time has begun.
                let lead_started = ev
                    .not_before
                    .checked_sub_signed(policy.maintenance_lead)
                    .is_none_or(|start| now >= start);
                if !seen(&key) && draining.is_none() && lead_started {
                    out.push(Action::BeginDrain(DrainRecord {
                        event: key,
                        reason: "ScheduledMaintenance".into(),
                        deadline: ev.not_before,
                        interrupted: false,
                    }));
                }
            }
            MaintenanceState::Canceled | MaintenanceState::Completed => {
                if draining.is_some_and(|d| d.event == key) {
                    out.push(Action::EndDrain { event: key });
                }
            }
        }
    }
    out
}

/// A pod on the node as the drain sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DrainPod {
    pub namespace: String,
    pub name: String,
    pub uid: String,
    /// DaemonSet-owned or a mirror (static) pod: stays on the node.
    pub stays: bool,
    pub terminating: bool,
    /// Succeeded or Failed.
    pub finished: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PodStep {
    /// Ask the Eviction API (honours PDBs; 429 → try again next round).
    Evict,
    /// Nothing to do (stays, finished, or already terminating).
    Leave,
}

/// One drain round's step for `pod`: evict until it is gone, up to the instance's end. The
/// agent never deletes a pod past its PodDisruptionBudget, however near the deadline: that
/// would need `delete` on every pod in the cluster for every node's agent (RBAC cannot narrow
/// it to the agent's node), and a central component doing it on a node's word would hand that
/// power to the node by proxy. A pod a budget still holds at the deadline stops with its
/// instance, as with aws-node-termination-handler (see docs/agent.md).
pub fn pod_step(pod: &DrainPod) -> PodStep {
    if pod.stays || pod.finished || pod.terminating {
        PodStep::Leave
    } else {
        PodStep::Evict
    }
}

/// The drain is complete when every pod that must leave has left.
pub fn drained(pods: &[DrainPod]) -> bool {
    pods.iter().all(|p| p.stays || p.finished)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::notice::{MaintenanceEvent, RebalanceNotice, SpotNotice};

    fn t(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    fn spot(time: &str) -> Observation {
        Observation {
            spot: Some(SpotNotice {
                action: "terminate".into(),
                time: t(time),
            }),
            ..Observation::default()
        }
    }

    #[test]
    fn spot_notice_starts_an_interruption_drain_to_its_deadline() {
        let now = t("2026-01-01T00:00:00Z");
        let actions = decide(
            &spot("2026-01-01T00:02:00Z"),
            &Memory::default(),
            &Policy::default(),
            now,
        );
        assert_eq!(
            actions,
            vec![Action::BeginDrain(DrainRecord {
                event: "spot/2026-01-01T00:02:00Z".into(),
                reason: "SpotInterruption".into(),
                deadline: t("2026-01-01T00:02:00Z"),
                interrupted: true,
            })]
        );
    }

    #[test]
    fn spot_notice_is_acted_on_once() {
        let now = t("2026-01-01T00:00:00Z");
        let obs = spot("2026-01-01T00:02:00Z");
        let Action::BeginDrain(rec) =
            decide(&obs, &Memory::default(), &Policy::default(), now).remove(0)
        else {
            panic!("expected a drain");
        };
        let draining = Memory {
            handled: BTreeSet::new(),
            drain: Some(rec),
        };
        assert!(decide(&obs, &draining, &Policy::default(), now).is_empty());
        let done = Memory {
            handled: ["spot/2026-01-01T00:02:00Z".to_string()].into(),
            drain: None,
        };
        assert!(decide(&obs, &done, &Policy::default(), now).is_empty());
    }

    #[test]
    fn spot_notice_overrides_a_maintenance_drain() {
        let now = t("2026-01-01T00:00:00Z");
        let mem = Memory {
            handled: BTreeSet::new(),
            drain: Some(DrainRecord {
                event: "maintenance/e1".into(),
                reason: "ScheduledMaintenance".into(),
                deadline: t("2026-01-01T00:09:00Z"),
                interrupted: false,
            }),
        };
        let a = decide(&spot("2026-01-01T00:02:00Z"), &mem, &Policy::default(), now);
        assert!(matches!(&a[..], [Action::BeginDrain(r)] if r.interrupted));
    }

    #[test]
    fn rebalance_follows_the_configured_mode() {
        let now = t("2026-01-01T00:00:00Z");
        let obs = Observation {
            rebalance: Some(RebalanceNotice { notice_time: now }),
            ..Observation::default()
        };
        let with = |mode| {
            decide(
                &obs,
                &Memory::default(),
                &Policy {
                    rebalance: mode,
                    ..Policy::default()
                },
                now,
            )
        };
        assert!(with(RebalanceMode::Ignore).is_empty());
        assert!(matches!(
            &with(RebalanceMode::Taint)[..],
            [Action::TaintPreferNoSchedule { .. }]
        ));
        assert!(matches!(
            &with(RebalanceMode::Replace)[..],
            [Action::AskReplacement { .. }]
        ));
        assert!(
            matches!(&with(RebalanceMode::Drain)[..], [Action::BeginDrain(r)] if r.deadline == now + Duration::minutes(10))
        );
    }

    #[test]
    fn maintenance_drains_within_the_lead_and_uncordons_when_canceled() {
        let now = t("2026-01-01T00:00:00Z");
        let ev = |nb: &str, state| MaintenanceEvent {
            id: "e1".into(),
            code: "system-reboot".into(),
            not_before: t(nb),
            state,
        };
        let far = Observation {
            maintenance: vec![ev("2026-01-01T01:00:00Z", MaintenanceState::Active)],
            ..Observation::default()
        };
        assert!(decide(&far, &Memory::default(), &Policy::default(), now).is_empty());
        let near = Observation {
            maintenance: vec![ev("2026-01-01T00:05:00Z", MaintenanceState::Active)],
            ..Observation::default()
        };
        let a = decide(&near, &Memory::default(), &Policy::default(), now);
        let [Action::BeginDrain(rec)] = &a[..] else {
            panic!("expected a drain: {a:?}")
        };
        assert!(!rec.interrupted);
        let mem = Memory {
            handled: BTreeSet::new(),
            drain: Some(rec.clone()),
        };
        let canceled = Observation {
            maintenance: vec![ev("2026-01-01T00:05:00Z", MaintenanceState::Canceled)],
            ..Observation::default()
        };
        assert_eq!(
            decide(&canceled, &mem, &Policy::default(), now),
            vec![Action::EndDrain {
                event: "maintenance/e1".into()
            }]
        );
        assert!(decide(&canceled, &Memory::default(), &Policy::default(), now).is_empty());
    }

    #[test]
    fn maintenance_at_the_ends_of_time_never_panics() {
        let now = t("2026-01-01T00:00:00Z");
        let ev = |not_before| Observation {
            maintenance: vec![MaintenanceEvent {
                id: "e1".into(),
                code: "system-reboot".into(),
                not_before,
                state: MaintenanceState::Active,
            }],
            ..Observation::default()
        };
        let huge_lead = Policy {
            maintenance_lead: Duration::MAX,
            ..Policy::default()
        };
        // Year 9999 is far: nothing to do, whatever the lead up to the ends of time.
        let far = ev(t("9999-12-31T23:59:59Z"));
        assert!(decide(&far, &Memory::default(), &Policy::default(), now).is_empty());
        // A lead reaching before the earliest time has begun: drain toward NotBefore.
        let a = decide(&far, &Memory::default(), &huge_lead, now);
        assert!(
            matches!(&a[..], [Action::BeginDrain(r)] if r.deadline == t("9999-12-31T23:59:59Z"))
        );
        let a = decide(
            &ev(DateTime::<Utc>::MIN_UTC),
            &Memory::default(),
            &huge_lead,
            now,
        );
        assert!(
            matches!(&a[..], [Action::BeginDrain(r)] if r.deadline == DateTime::<Utc>::MIN_UTC)
        );
        let a = decide(
            &ev(DateTime::<Utc>::MAX_UTC),
            &Memory::default(),
            &Policy::default(),
            now,
        );
        assert!(a.is_empty());
    }

    #[test]
    fn spot_notices_at_extreme_times_drain_toward_them() {
        for time in ["9999-12-31T23:59:59Z", "0000-01-01T00:00:00Z"] {
            let a = decide(
                &spot(time),
                &Memory::default(),
                &Policy::default(),
                t("2026-01-01T00:00:00Z"),
            );
            assert!(
                matches!(&a[..], [Action::BeginDrain(r)] if r.deadline == t(time) && r.interrupted),
                "{time}: {a:?}"
            );
        }
    }

    #[test]
    fn a_rebalance_window_past_the_end_of_time_is_capped() {
        let now = t("2026-01-01T00:00:00Z");
        let obs = Observation {
            rebalance: Some(RebalanceNotice { notice_time: now }),
            ..Observation::default()
        };
        let policy = Policy {
            rebalance: RebalanceMode::Drain,
            rebalance_drain_window: Duration::MAX,
            ..Policy::default()
        };
        let a = decide(&obs, &Memory::default(), &policy, now);
        assert!(
            matches!(&a[..], [Action::BeginDrain(r)] if r.deadline == DateTime::<Utc>::MAX_UTC)
        );
    }

    #[test]
    fn pods_are_evicted_until_gone_never_deleted() {
        let pod = DrainPod {
            namespace: "d".into(),
            name: "p".into(),
            uid: "u".into(),
            stays: false,
            terminating: false,
            finished: false,
        };
        assert_eq!(pod_step(&pod), PodStep::Evict);
        let ds = DrainPod {
            stays: true,
            ..pod.clone()
        };
        assert_eq!(pod_step(&ds), PodStep::Leave);
        let leaving = DrainPod {
            terminating: true,
            ..pod.clone()
        };
        assert_eq!(pod_step(&leaving), PodStep::Leave);
        let done = DrainPod {
            finished: true,
            ..pod.clone()
        };
        assert_eq!(pod_step(&done), PodStep::Leave);
        assert!(drained(&[ds, done]));
        assert!(!drained(&[pod]));
    }
}
