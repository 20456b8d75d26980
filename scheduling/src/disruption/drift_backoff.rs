//! Drift backoff per NodePool (issue 39; the churn Karpenter's RFC #3128 describes): when
//! a drift replacement fails (its NodeClaim cannot launch: no capacity, a launch error; or
//! it is not initialized within the replacement timeout), drift starts no new command in
//! that NodePool for a while, so a rollout that cannot make progress does not launch and
//! tear down replacement after replacement. The wait doubles with each consecutive failure
//! in the pool, from [`INITIAL`] up to [`MAX`], and a drift replacement that succeeds in the
//! pool ends it. Other pools, and the other methods (emptiness, consolidation, expiry,
//! repair) in the held pool, are not affected.
//!
//! Why 1 minute to 30 minutes: a first failure is often a passing shortage of one offering
//! (which the unavailable-offerings cache already steers the next plan away from), so the
//! rollout is tried again soon; a pool that keeps failing is retried at most twice an hour,
//! so a rollout still completes unattended once capacity comes back, without launching
//! dozens of doomed instances in between. Six consecutive failures reach the cap.
//!
//! Pure: failure and success times in, "pool held until T" out; the caller passes the clock.

use std::collections::BTreeMap;
use std::time::Duration;

use super::{Input, UnixSeconds};

/// The hold after the first failure in a row.
pub const INITIAL: Duration = Duration::from_secs(60);
/// The longest hold, however many failures in a row.
pub const MAX: Duration = Duration::from_secs(30 * 60);

/// How long drift is held after `consecutive` failures in a row (0: not held): [`INITIAL`]
/// doubled per failure after the first, at most [`MAX`]. Saturating: any count is safe.
pub fn hold_for(consecutive: u32) -> Duration {
    if consecutive == 0 {
        return Duration::ZERO;
    }
    let doublings = (consecutive - 1).min(31);
    INITIAL
        .checked_mul(1u32 << doublings)
        .map_or(MAX, |d| d.min(MAX))
}

/// One pool's run of failed drift replacements.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolBackoff {
    /// Failed drift replacements since the last one that succeeded.
    pub consecutive: u32,
    /// When the last of them failed.
    pub last_failure: UnixSeconds,
    /// Why it failed, for the event and `simulate`.
    pub why: String,
}

impl PoolBackoff {
    /// The end of the hold: the last failure plus [`hold_for`] the run.
    pub fn until(&self) -> UnixSeconds {
        let secs = i64::try_from(hold_for(self.consecutive).as_secs()).unwrap_or(i64::MAX);
        self.last_failure.saturating_add(secs)
    }
}

/// A NodePool whose drift is held at some `now`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DriftHold {
    pub nodepool: String,
    /// Drift starts no command in the pool before this time.
    pub until: UnixSeconds,
    pub consecutive: u32,
    pub why: String,
}

impl DriftHold {
    /// For the `DisruptionBlocked` event on the NodePool and the log line; the same hold
    /// gives the same message, so repeats fold into one Event.
    pub fn message(&self) -> String {
        let secs = hold_for(self.consecutive).as_secs();
        format!(
            "drift held back: {} drift replacement(s) in a row failed (last: {}); no drift replacement in this NodePool for {}s, until {} (unix seconds); a drift replacement that succeeds here ends the backoff",
            self.consecutive, self.why, secs, self.until
        )
    }
}

/// Every pool's run of failures; pools without one are absent.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DriftBackoff {
    pools: BTreeMap<String, PoolBackoff>,
}

impl DriftBackoff {
    /// A drift replacement of a node of `nodepool` failed at `at`: the pool's run grows by
    /// one, and the returned hold starts now. A failure while the pool is held belongs to
    /// the same attempt (drift starts no command in a held pool, so that command started
    /// before the hold: a wave of side-by-side replacements failing together is one
    /// failure, not a jump to [`MAX`]); it leaves the hold as it is.
    pub fn failed(&mut self, nodepool: &str, at: UnixSeconds, why: &str) -> DriftHold {
        let entry = self
            .pools
            .entry(nodepool.to_string())
            .or_insert(PoolBackoff {
                consecutive: 0,
                last_failure: at,
                why: String::new(),
            });
        if entry.consecutive == 0 || at >= entry.until() {
            entry.consecutive = entry.consecutive.saturating_add(1);
            entry.last_failure = at;
            entry.why = why.to_string();
        }
        DriftHold {
            nodepool: nodepool.to_string(),
            until: entry.until(),
            consecutive: entry.consecutive,
            why: entry.why.clone(),
        }
    }

    /// A drift replacement in `nodepool` succeeded: its run ends and drift goes on at once.
    /// Returns whether the pool had a run.
    pub fn succeeded(&mut self, nodepool: &str) -> bool {
        self.pools.remove(nodepool).is_some()
    }

    /// The pools held at `now`, by name. A pool whose hold has run out is not held, but
    /// keeps its count: its next failure doubles the wait (only a success resets it).
    pub fn holds(&self, now: UnixSeconds) -> Vec<DriftHold> {
        self.pools
            .iter()
            .filter(|(_, b)| now < b.until())
            .map(|(pool, b)| DriftHold {
                nodepool: pool.clone(),
                until: b.until(),
                consecutive: b.consecutive,
                why: b.why.clone(),
            })
            .collect()
    }

    /// A pool's run, if it has one.
    pub fn pool(&self, nodepool: &str) -> Option<&PoolBackoff> {
        self.pools.get(nodepool)
    }

    /// The state rebuilt after a restart from what the cluster still shows: the times at
    /// which drifted nodes' replacements failed (the nodes are kept, their NodeClaims say when
    /// and why), per pool. Failures older than [`MAX`] before `now` are left out (their hold
    /// has run out whatever their count); the rest count as one run, in time order.
    /// Successes leave no trace (the replaced node is gone), so a run the controller had
    /// ended may come back, at most [`MAX`] long: erring towards waiting, never towards churn.
    pub fn rebuild(failures: &[(String, UnixSeconds, String)], now: UnixSeconds) -> DriftBackoff {
        let window = i64::try_from(MAX.as_secs()).unwrap_or(i64::MAX);
        let mut recent: Vec<&(String, UnixSeconds, String)> = failures
            .iter()
            .filter(|(_, at, _)| *at <= now && now.saturating_sub(*at) < window)
            .collect();
        recent.sort_by(|a, b| (a.1, &a.0, &a.2).cmp(&(b.1, &b.0, &b.2)));
        let mut out = DriftBackoff::default();
        for (pool, at, why) in recent {
            out.failed(pool, *at, why);
        }
        out
    }
}

/// A held pool and its drifted nodes that drift would otherwise consider (candidates: not
/// blocked, not already disrupting), by node name; what the `DisruptionBlocked` event on the
/// NodePool and `adze_disruption_blocked_nodes{reason="DriftBackoff"}` report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldDrift {
    pub hold: DriftHold,
    pub nodes: Vec<String>,
}

/// Every pool held at `input.now` ([`Input::drift_holds`]), with its drifted candidates
/// (possibly none: the hold is still reported).
pub fn held(input: &Input) -> Vec<HeldDrift> {
    let (candidates, _) = super::candidates::candidates(input);
    let mut out: Vec<HeldDrift> = Vec::new();
    for h in &input.drift_holds {
        if input.drift_hold(&h.nodepool) != Some(h)
            || out.iter().any(|o| o.hold.nodepool == h.nodepool)
        {
            continue;
        }
        let nodes = (candidates.iter())
            .filter(|c| c.nodepool == h.nodepool && c.facts.drifted)
            .map(|c| c.name.clone())
            .collect();
        out.push(HeldDrift {
            hold: h.clone(),
            nodes,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hold_doubles_per_consecutive_failure_up_to_thirty_minutes() {
        let secs: Vec<u64> = (0..9).map(|n| hold_for(n).as_secs()).collect();
        assert_eq!(secs, [0, 60, 120, 240, 480, 960, 1800, 1800, 1800]);
        assert_eq!(hold_for(u32::MAX), MAX, "no overflow at any count");
        assert_eq!(hold_for(33), MAX);
    }

    #[test]
    fn a_failure_holds_its_pool_and_only_its_pool_until_the_hold_ends() {
        let mut b = DriftBackoff::default();
        let h = b.failed("a", 1000, "replacement r1 failed to launch");
        assert_eq!((h.until, h.consecutive), (1060, 1));
        let held: Vec<String> = b.holds(1000).into_iter().map(|h| h.nodepool).collect();
        assert_eq!(held, ["a"], "pool b is never held");
        assert_eq!(b.holds(1059).len(), 1);
        assert!(b.holds(1060).is_empty(), "held until, not including, T");
        // The run is kept past the hold: the next failure waits twice as long.
        let h = b.failed("a", 1200, "timeout");
        assert_eq!((h.until, h.consecutive), (1320, 2));
        assert!(
            h.message()
                .contains("2 drift replacement(s) in a row failed")
        );
        assert!(h.message().contains("until 1320"), "{}", h.message());
        assert!(h.message().contains("120s"), "{}", h.message());
        // Another pool's run is its own.
        let other = b.failed("b", 1200, "no capacity");
        assert_eq!((other.until, other.consecutive), (1260, 1));
        assert_eq!(
            b.holds(1300).len(),
            1,
            "b's minute is over, a's two are not"
        );
    }

    #[test]
    fn failures_in_a_row_reach_the_cap_and_a_success_resets_the_run() {
        let mut b = DriftBackoff::default();
        let mut t = 0;
        let mut waits = Vec::new();
        for _ in 0..8 {
            let h = b.failed("p", t, "x");
            waits.push(h.until - t);
            t = h.until;
        }
        assert_eq!(waits, [60, 120, 240, 480, 960, 1800, 1800, 1800]);
        assert!(b.succeeded("p"));
        assert!(b.holds(t).is_empty());
        assert!(!b.succeeded("p"), "nothing left to reset");
        assert_eq!(
            b.failed("p", t, "x").until - t,
            60,
            "back to the first step"
        );
        // A success elsewhere does not end p's run.
        assert!(!b.succeeded("q"));
        assert_eq!(b.holds(t).len(), 1);
    }

    #[test]
    fn failures_during_a_hold_are_the_same_attempt_and_neither_double_nor_shorten_it() {
        let mut b = DriftBackoff::default();
        b.failed("p", 5000, "x");
        // Side-by-side replacements of one wave failing a few seconds apart: still 1 minute.
        for at in [5001, 5030, 5059] {
            let h = b.failed("p", at, "y");
            assert_eq!((h.until, h.consecutive, &h.why[..]), (5060, 1, "x"));
        }
        // A late report from before the hold cannot shorten it.
        assert_eq!(b.failed("p", 100, "late").until, 5060);
        // Once the hold is over, the next failure is a new attempt: doubled.
        let h = b.failed("p", 5060, "z");
        assert_eq!((h.until, h.consecutive), (5060 + 120, 2));
    }

    #[test]
    fn a_restart_rebuilds_the_recent_failures_per_pool_in_time_order() {
        let f = |p: &str, at, why: &str| (p.to_string(), at, why.to_string());
        let now = 10_000;
        let b = DriftBackoff::rebuild(
            &[
                f("a", 9_900, "second"),
                f("a", 9_000, "first"),
                f(
                    "b",
                    now - 1800,
                    "too old: its hold is over whatever the count",
                ),
                f("c", now + 50, "in the future: a clock skew, ignored"),
            ],
            now,
        );
        let holds = b.holds(now);
        assert_eq!(holds.len(), 1, "{holds:?}");
        assert_eq!(
            (&holds[0].nodepool[..], holds[0].consecutive, holds[0].until),
            ("a", 2, 9_900 + 120)
        );
        assert_eq!(holds[0].why, "second");
        assert!(b.pool("b").is_none() && b.pool("c").is_none());
        // Deterministic: the order failures are listed in does not matter.
        let again = DriftBackoff::rebuild(&[f("a", 9_000, "first"), f("a", 9_900, "second")], now);
        assert_eq!(again, b);
    }
}
