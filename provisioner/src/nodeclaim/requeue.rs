//! When each NodeClaim is reconciled next: at once when it changed, else when its requeue
//! time comes. A claim whose reconcile fails backs off exponentially on its own, and a change
//! it made itself (its `Launched=False` condition) does not cut the backoff short, so a launch
//! that cannot succeed costs one cloud call per backoff step, not four a second.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

/// First retry delay; doubles per consecutive failure up to [`MAX_BACKOFF`].
pub const BASE_BACKOFF: Duration = Duration::from_millis(500);
pub const MAX_BACKOFF: Duration = Duration::from_secs(60);

#[derive(Debug, Clone)]
struct Entry {
    version: String,
    next: Instant,
    failures: u32,
}

#[derive(Debug, Default)]
pub struct Requeue {
    entries: HashMap<String, Entry>,
}

/// The delay after `failures` consecutive failures (1 → [`BASE_BACKOFF`]).
pub fn backoff(failures: u32) -> Duration {
    let exp = failures.saturating_sub(1).min(16);
    BASE_BACKOFF.saturating_mul(1 << exp).min(MAX_BACKOFF)
}

impl Requeue {
    /// Whether the claim (`uid` at `version`) should be reconciled at `now`.
    pub fn due(&self, uid: &str, version: &str, now: Instant) -> bool {
        match self.entries.get(uid) {
            None => true,
            Some(e) if e.failures > 0 => now >= e.next,
            Some(e) => e.version != version || now >= e.next,
        }
    }

    /// A successful reconcile: next in `after`, or sooner if the claim changes.
    pub fn succeeded(&mut self, uid: &str, version: &str, now: Instant, after: Duration) {
        self.entries.insert(
            uid.into(),
            Entry {
                version: version.into(),
                next: now + after,
                failures: 0,
            },
        );
    }

    /// A failed reconcile; returns how long the claim now waits.
    pub fn failed(&mut self, uid: &str, version: &str, now: Instant) -> Duration {
        let failures = self.entries.get(uid).map_or(0, |e| e.failures) + 1;
        let wait = backoff(failures);
        self.entries.insert(
            uid.into(),
            Entry {
                version: version.into(),
                next: now + wait,
                failures,
            },
        );
        wait
    }

    /// Consecutive failures so far.
    pub fn failures(&self, uid: &str) -> u32 {
        self.entries.get(uid).map_or(0, |e| e.failures)
    }

    /// Forgets claims that no longer exist.
    pub fn retain(&mut self, live: &HashSet<String>) {
        self.entries.retain(|uid, _| live.contains(uid));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_and_is_capped() {
        assert_eq!(backoff(1), Duration::from_millis(500));
        assert_eq!(backoff(2), Duration::from_secs(1));
        assert_eq!(backoff(5), Duration::from_secs(8));
        assert_eq!(backoff(8), Duration::from_secs(60));
        assert_eq!(backoff(1000), MAX_BACKOFF);
    }

    #[test]
    fn a_changed_claim_is_due_at_once_unless_it_is_backing_off() {
        let t0 = Instant::now();
        let mut q = Requeue::default();
        assert!(q.due("u", "1", t0), "never seen");
        q.succeeded("u", "1", t0, Duration::from_secs(30));
        assert!(!q.due("u", "1", t0 + Duration::from_secs(1)));
        assert!(q.due("u", "2", t0 + Duration::from_secs(1)), "changed");
        assert!(
            q.due("u", "1", t0 + Duration::from_secs(30)),
            "requeue time"
        );

        // Failing: its own status write (a new version) does not make it due early.
        assert_eq!(q.failed("u", "2", t0), Duration::from_millis(500));
        assert_eq!(q.failed("u", "3", t0), Duration::from_secs(1));
        assert!(!q.due("u", "4", t0 + Duration::from_millis(900)));
        assert!(q.due("u", "4", t0 + Duration::from_secs(1)));
        assert_eq!(q.failures("u"), 2);
        q.succeeded("u", "4", t0, Duration::ZERO);
        assert_eq!(q.failures("u"), 0);
    }

    #[test]
    fn a_launch_that_keeps_failing_calls_the_cloud_a_few_times_a_minute_at_most() {
        // Simulate the 250 ms loop for 5 minutes against a claim that always fails.
        let t0 = Instant::now();
        let mut q = Requeue::default();
        let mut calls = 0;
        let mut v = 0;
        for tick in 0..(5 * 60 * 4) {
            let now = t0 + Duration::from_millis(250 * tick);
            if q.due("u", &v.to_string(), now) {
                calls += 1;
                v += 1; // the failure writes a condition
                q.failed("u", &v.to_string(), now);
            }
        }
        // 0.5+1+2+...+32 s ≈ 64 s for 7 calls, then one a minute: ≈ 11 in 5 minutes.
        assert!(calls <= 12, "{calls} calls");
        assert!(calls >= 8, "{calls} calls");
    }

    #[test]
    fn forgotten_claims_are_dropped() {
        let mut q = Requeue::default();
        let t0 = Instant::now();
        q.failed("a", "1", t0);
        q.failed("b", "1", t0);
        q.retain(&HashSet::from(["b".to_string()]));
        assert_eq!(q.failures("a"), 0);
        assert_eq!(q.failures("b"), 1);
    }
}
