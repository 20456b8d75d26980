//! The pieces of the instance sweep that do not talk to EC2: a cached, single-flight value
//! ([`Cached`]) and pagination over NextToken ([`paginate`]).
//!
//! Disruption asks for drift every poll (10 s) for every NodeClaim. Answering that with one
//! DescribeInstances per claim is ~100 requests/s at 1,000 nodes, enough to throttle launches
//! (EC2 rate-limits per account and action family); one paginated listing of the cluster's
//! instances, shared by every caller within an interval, is a few requests per interval.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// EC2's largest DescribeInstances page.
pub const PAGE_SIZE: i32 = 1000;

/// A value fetched at most once per `max_age`, whoever asks. Callers that arrive while a fetch
/// runs wait for it and share its answer — its error too, so a failing EC2 is asked once, not
/// once per waiter.
pub struct Cached<T> {
    /// Fetches finished, successful or not.
    attempts: AtomicU64,
    state: tokio::sync::Mutex<State<T>>,
}

struct State<T> {
    /// The last good value and when its fetch started.
    value: Option<(Instant, Arc<T>)>,
    /// The last fetch's error and its attempt number, while it is the latest attempt.
    failed: Option<(u64, String)>,
}

impl<T> Default for Cached<T> {
    fn default() -> Self {
        Cached {
            attempts: AtomicU64::new(0),
            state: tokio::sync::Mutex::new(State {
                value: None,
                failed: None,
            }),
        }
    }
}

impl<T> Cached<T> {
    /// The cached value if its fetch started less than `max_age` before `now`; otherwise
    /// `fetch`es a new one (one caller at a time; the rest share it).
    pub async fn get<F, Fut>(
        &self,
        now: Instant,
        max_age: Duration,
        fetch: F,
    ) -> Result<Arc<T>, String>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<T, String>>,
    {
        let seen = self.attempts.load(Ordering::SeqCst);
        let mut st = self.state.lock().await;
        if let Some((at, v)) = &st.value
            && now.saturating_duration_since(*at) < max_age
        {
            return Ok(v.clone());
        }
        // A fetch finished while we waited for the lock and failed: it was ours too.
        if let Some((n, e)) = &st.failed
            && *n > seen
        {
            return Err(e.clone());
        }
        let result = fetch().await;
        let n = self.attempts.fetch_add(1, Ordering::SeqCst) + 1;
        match result {
            Ok(v) => {
                let v = Arc::new(v);
                st.value = Some((now, v.clone()));
                st.failed = None;
                Ok(v)
            }
            Err(e) => {
                st.failed = Some((n, e.clone()));
                Err(e)
            }
        }
    }
}

impl<T> Cached<T> {
    /// Forgets the value (after the caller changed what it lists), once any fetch in flight is
    /// done, so the next caller fetches anew.
    pub async fn invalidate(&self) {
        self.state.lock().await.value = None;
    }
}

/// Every item of a paginated listing: `page(token)` answers one page and the next token
/// (None or empty: the last page).
pub async fn paginate<T, E, F, Fut>(mut page: F) -> Result<Vec<T>, E>
where
    F: FnMut(Option<String>) -> Fut,
    Fut: Future<Output = Result<(Vec<T>, Option<String>), E>>,
{
    let mut out = Vec::new();
    let mut next = None;
    loop {
        let (items, token) = page(next).await?;
        out.extend(items);
        next = token.filter(|t| !t.is_empty());
        if next.is_none() {
            return Ok(out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    /// A fake DescribeInstances over `n` instances: pages of at most [`PAGE_SIZE`], counting
    /// the calls.
    async fn pages(
        n: usize,
        calls: &AtomicUsize,
        token: Option<String>,
    ) -> Result<(Vec<usize>, Option<String>), String> {
        calls.fetch_add(1, Ordering::SeqCst);
        let from: usize = token.map_or(0, |t| t.parse().unwrap());
        let to = (from + PAGE_SIZE as usize).min(n);
        let next = (to < n).then(|| to.to_string());
        Ok(((from..to).collect(), next))
    }

    #[tokio::test]
    async fn a_listing_takes_one_call_per_thousand_instances() {
        for (n, want) in [(0, 1), (999, 1), (1000, 1), (1001, 2), (5000, 5), (5001, 6)] {
            let calls = AtomicUsize::new(0);
            let all = paginate(|t| pages(n, &calls, t)).await.unwrap();
            assert_eq!(all.len(), n);
            assert_eq!(all.last().copied(), n.checked_sub(1));
            assert_eq!(calls.load(Ordering::SeqCst), want, "{n} instances");
        }
    }

    #[tokio::test]
    async fn a_failing_page_fails_the_listing() {
        let calls = AtomicUsize::new(0);
        let r: Result<Vec<usize>, String> = paginate(|t| {
            let second = t.is_some();
            let calls = &calls;
            async move {
                if second {
                    return Err("RequestLimitExceeded".to_string());
                }
                pages(2500, calls, None).await
            }
        })
        .await;
        assert_eq!(r.unwrap_err(), "RequestLimitExceeded");
    }

    #[tokio::test]
    async fn many_concurrent_callers_share_one_fetch() {
        let cached: Cached<usize> = Cached::default();
        let fetches = AtomicUsize::new(0);
        let now = Instant::now();
        let callers = (0..1000).map(|_| {
            cached.get(now, Duration::from_secs(10), || async {
                fetches.fetch_add(1, Ordering::SeqCst);
                // Long enough that the other callers queue behind this fetch.
                tokio::time::sleep(Duration::from_millis(20)).await;
                Ok(7)
            })
        });
        let got = futures::future::join_all(callers).await;
        assert!(got.iter().all(|v| **v.as_ref().unwrap() == 7));
        assert_eq!(fetches.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn refreshes_at_most_once_per_interval() {
        let cached: Cached<u32> = Cached::default();
        let fetches = AtomicUsize::new(0);
        let interval = Duration::from_secs(10);
        let t0 = Instant::now();
        let fetch = || async { Ok(fetches.fetch_add(1, Ordering::SeqCst) as u32) };
        // One caller every second for a minute: six fetches (t = 0, 10, ..., 50 s).
        for s in 0..60 {
            let v = cached
                .get(t0 + Duration::from_secs(s), interval, fetch)
                .await
                .unwrap();
            assert_eq!(*v as u64, s / 10, "at {s} s");
        }
        assert_eq!(fetches.load(Ordering::SeqCst), 6);
        // A shorter max age (a caller that needs fresher data) refreshes sooner.
        cached
            .get(t0 + Duration::from_secs(61), Duration::from_secs(1), fetch)
            .await
            .unwrap();
        assert_eq!(fetches.load(Ordering::SeqCst), 7);
        // After an invalidation the next caller fetches, however fresh the value was.
        cached.invalidate().await;
        cached
            .get(t0 + Duration::from_secs(61), interval, fetch)
            .await
            .unwrap();
        assert_eq!(fetches.load(Ordering::SeqCst), 8);
    }

    #[tokio::test]
    async fn errors_surface_are_shared_by_waiters_and_are_not_cached_as_values() {
        let cached: Cached<u32> = Cached::default();
        let fetches = AtomicUsize::new(0);
        let now = Instant::now();
        let failing = || async {
            fetches.fetch_add(1, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(20)).await;
            Err::<u32, _>("DescribeInstances: RequestLimitExceeded".to_string())
        };
        let got = futures::future::join_all(
            (0..10).map(|_| cached.get(now, Duration::from_secs(10), failing)),
        )
        .await;
        assert!(
            got.iter()
                .all(|r| r.as_ref().unwrap_err().contains("RequestLimitExceeded"))
        );
        assert_eq!(
            fetches.load(Ordering::SeqCst),
            1,
            "waiters share the failed fetch"
        );
        // The next caller tries again (the failure is not a value), and a success is kept.
        let v = cached
            .get(now, Duration::from_secs(10), || async { Ok(3) })
            .await
            .unwrap();
        assert_eq!(*v, 3);
        let v = cached
            .get(now, Duration::from_secs(10), failing)
            .await
            .unwrap();
        assert_eq!(*v, 3);
        assert_eq!(fetches.load(Ordering::SeqCst), 1);
    }
}
