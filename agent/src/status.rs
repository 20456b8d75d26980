//! What the agent tells the kubelet and Prometheus about itself: `/healthz` for a liveness
//! probe (fails once the loop has stopped turning, so a hung agent is restarted instead of
//! leaving a stale `AdzeAgentReady` behind) and `/metrics` in the Prometheus text format.

use std::convert::Infallible;
use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http_body_util::Full;
use hyper::{Request, Response, StatusCode};

/// Counters the loop bumps; read by the HTTP handlers.
#[derive(Debug, Default)]
pub struct Stats {
    pub polls: AtomicU64,
    pub poll_failures: AtomicU64,
    pub actions: AtomicU64,
    pub action_failures: AtomicU64,
    pub drain_rounds: AtomicU64,
    pub ready: AtomicBool,
    /// Unix milliseconds of the loop's last turn; 0 before the first.
    pub last_turn_ms: AtomicU64,
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

impl Stats {
    /// The loop turned: liveness is measured from here.
    pub fn turn(&self) {
        self.last_turn_ms.store(now_ms(), Ordering::Relaxed);
    }

    /// Alive when the loop turned within `stale_after` of `now_ms` (or has not started yet,
    /// which the probe's initial delay covers).
    pub fn alive(&self, now_ms: u64, stale_after: Duration) -> bool {
        let last = self.last_turn_ms.load(Ordering::Relaxed);
        last == 0 || now_ms.saturating_sub(last) <= stale_after.as_millis() as u64
    }

    pub fn render(&self) -> String {
        let mut out = String::new();
        for (name, help, v) in [
            (
                "adze_agent_imds_polls_total",
                "IMDS polls made.",
                &self.polls,
            ),
            (
                "adze_agent_imds_poll_failures_total",
                "IMDS polls that failed.",
                &self.poll_failures,
            ),
            (
                "adze_agent_actions_total",
                "Actions taken on the node (taint, cordon, drain start, ...).",
                &self.actions,
            ),
            (
                "adze_agent_action_failures_total",
                "Actions that failed (retried on the next poll).",
                &self.action_failures,
            ),
            (
                "adze_agent_drain_rounds_total",
                "Drain rounds run.",
                &self.drain_rounds,
            ),
        ] {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} counter\n{name} {}",
                v.load(Ordering::Relaxed)
            );
        }
        let _ = writeln!(
            out,
            "# HELP adze_agent_ready 1 when the agent's checks pass (the AdzeAgentReady condition).\n# TYPE adze_agent_ready gauge\nadze_agent_ready {}",
            u8::from(self.ready.load(Ordering::Relaxed))
        );
        let _ = writeln!(
            out,
            "# HELP adze_agent_last_turn_seconds Unix time of the loop's last turn.\n# TYPE adze_agent_last_turn_seconds gauge\nadze_agent_last_turn_seconds {}",
            self.last_turn_ms.load(Ordering::Relaxed) / 1000
        );
        out
    }
}

fn answer(stats: &Stats, stale_after: Duration, path: &str) -> Response<Full<Bytes>> {
    let (status, body) = match path {
        "/healthz" if stats.alive(now_ms(), stale_after) => (StatusCode::OK, "ok".to_string()),
        "/healthz" => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "the agent loop has not turned for more than {}s",
                stale_after.as_secs()
            ),
        ),
        "/metrics" => (StatusCode::OK, stats.render()),
        _ => (StatusCode::NOT_FOUND, "not found".to_string()),
    };
    let mut r = Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() = status;
    r
}

/// Serves `/healthz` and `/metrics` on `listener` until the process ends.
pub async fn serve(listener: tokio::net::TcpListener, stats: Arc<Stats>, stale_after: Duration) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let stats = stats.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
                let r = answer(&stats, stale_after, req.uri().path());
                async move { Ok::<_, Infallible>(r) }
            });
            let io = hyper_util::rt::TokioIo::new(stream);
            if let Err(e) = hyper::server::conn::http1::Builder::new()
                .serve_connection(io, service)
                .await
            {
                tracing::debug!(error = %e, "status connection");
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alive_until_the_loop_stops_turning() {
        let s = Stats::default();
        assert!(
            s.alive(1_000_000, Duration::from_secs(30)),
            "not started yet"
        );
        s.last_turn_ms.store(1_000_000, Ordering::Relaxed);
        assert!(s.alive(1_030_000, Duration::from_secs(30)));
        assert!(!s.alive(1_030_001, Duration::from_secs(30)));
    }

    #[test]
    fn healthz_and_metrics_answers() {
        let s = Stats::default();
        s.polls.store(7, Ordering::Relaxed);
        s.ready.store(true, Ordering::Relaxed);
        assert_eq!(
            answer(&s, Duration::from_secs(30), "/healthz").status(),
            200
        );
        s.last_turn_ms.store(1, Ordering::Relaxed);
        assert_eq!(
            answer(&s, Duration::from_secs(30), "/healthz").status(),
            503
        );
        let text = s.render();
        assert!(text.contains("adze_agent_imds_polls_total 7"), "{text}");
        assert!(text.contains("adze_agent_ready 1"), "{text}");
        assert_eq!(answer(&s, Duration::from_secs(30), "/nope").status(), 404);
    }
}
