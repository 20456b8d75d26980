//! What a replica does with the Lease it just read: plain data in, a [`Decision`] out.
//!
//! Expiry is judged on this replica's own clock, from when it first saw the current lease
//! record (holder + renew time) — not from the renew time written by the holder — so clock
//! skew between replicas cannot make a live leader look expired.

use std::time::{Duration, Instant};

/// The fields of a Lease's spec that decide leadership.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Record {
    pub holder: String,
    /// As written by the holder; compared only for change.
    pub renew_time: String,
    pub lease_duration: Duration,
    pub transitions: i32,
}

/// Remembers when the current record was first seen here.
#[derive(Debug, Default)]
pub struct Observer {
    seen: Option<(Record, Instant)>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// No Lease yet: create it with us as holder.
    Create,
    /// We hold it: write a new renew time.
    Renew,
    /// Free or expired: take it (transitions + 1).
    Acquire,
    /// Someone else holds a live lease.
    Follow {
        holder: String,
        expires_in: Duration,
    },
}

impl Observer {
    pub fn decide(&mut self, me: &str, lease: Option<&Record>, now: Instant) -> Decision {
        let Some(record) = lease else {
            self.seen = None;
            return Decision::Create;
        };
        if record.holder == me {
            return Decision::Renew;
        }
        if record.holder.is_empty() {
            return Decision::Acquire;
        }
        let since = match &self.seen {
            Some((r, at)) if r == record => *at,
            _ => {
                self.seen = Some((record.clone(), now));
                now
            }
        };
        let expires = since + record.lease_duration;
        if now >= expires {
            Decision::Acquire
        } else {
            Decision::Follow {
                holder: record.holder.clone(),
                expires_in: expires - now,
            }
        }
    }
}

/// A leader that has not renewed successfully within `renew_deadline` must stop acting:
/// another replica may take the lease once it expires.
pub fn must_step_down(last_renewed: Instant, now: Instant, renew_deadline: Duration) -> bool {
    now.duration_since(last_renewed) > renew_deadline
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(holder: &str, renew: &str) -> Record {
        Record {
            holder: holder.into(),
            renew_time: renew.into(),
            lease_duration: Duration::from_secs(15),
            transitions: 0,
        }
    }

    #[test]
    fn missing_lease_is_created() {
        let mut o = Observer::default();
        assert_eq!(o.decide("a", None, Instant::now()), Decision::Create);
    }

    #[test]
    fn holder_renews_its_own_lease() {
        let mut o = Observer::default();
        assert_eq!(
            o.decide("a", Some(&rec("a", "t1")), Instant::now()),
            Decision::Renew
        );
    }

    #[test]
    fn released_lease_is_acquired_at_once() {
        let mut o = Observer::default();
        assert_eq!(
            o.decide("b", Some(&rec("", "t1")), Instant::now()),
            Decision::Acquire
        );
    }

    #[test]
    fn live_lease_of_another_is_followed_until_it_stops_changing_for_a_lease_duration() {
        let mut o = Observer::default();
        let t0 = Instant::now();
        let d = o.decide("b", Some(&rec("a", "t1")), t0);
        assert_eq!(
            d,
            Decision::Follow {
                holder: "a".into(),
                expires_in: Duration::from_secs(15)
            }
        );
        // Renewed at +10 s: the clock restarts from when we saw the new record.
        let t10 = t0 + Duration::from_secs(10);
        assert!(matches!(
            o.decide("b", Some(&rec("a", "t2")), t10),
            Decision::Follow { .. }
        ));
        let t20 = t0 + Duration::from_secs(20);
        assert!(matches!(
            o.decide("b", Some(&rec("a", "t2")), t20),
            Decision::Follow { .. }
        ));
        // No renewal for 15 s after t10: expired, take over.
        let t25 = t0 + Duration::from_secs(25);
        assert_eq!(o.decide("b", Some(&rec("a", "t2")), t25), Decision::Acquire);
    }

    #[test]
    fn a_lease_first_seen_is_never_taken_immediately_even_if_its_renew_time_looks_old() {
        // A restarted follower has no history: it waits a full lease duration.
        let mut o = Observer::default();
        let t0 = Instant::now();
        assert!(matches!(
            o.decide("b", Some(&rec("a", "1970-01-01T00:00:00Z")), t0),
            Decision::Follow { .. }
        ));
        assert_eq!(
            o.decide(
                "b",
                Some(&rec("a", "1970-01-01T00:00:00Z")),
                t0 + Duration::from_secs(15)
            ),
            Decision::Acquire
        );
    }

    #[test]
    fn leader_steps_down_after_the_renew_deadline_without_a_renewal() {
        let t0 = Instant::now();
        let deadline = Duration::from_secs(10);
        assert!(!must_step_down(t0, t0 + Duration::from_secs(9), deadline));
        assert!(must_step_down(t0, t0 + Duration::from_secs(11), deadline));
    }
}
