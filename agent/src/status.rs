//! What the agent tells the kubelet and Prometheus about itself: `/healthz` for a liveness
//! probe (fails once the loop has stopped turning, so a hung agent is restarted instead of
//! leaving a stale `AdzeAgentReady` behind) and `/metrics` in the Prometheus text format.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use adze_metrics::prometheus_client::metrics::counter::Counter;
use adze_metrics::prometheus_client::metrics::gauge::Gauge;
use adze_metrics::prometheus_client::registry::Registry;
use bytes::Bytes;
use http_body_util::Full;
use hyper::{Request, Response, StatusCode};

/// What the loop records, in the agent's registry; read by the HTTP handlers.
#[derive(Debug)]
pub struct Stats {
    pub polls: Counter,
    pub poll_failures: Counter,
    pub actions: Counter,
    pub action_failures: Counter,
    pub drain_rounds: Counter,
    /// 1 when the agent's checks pass.
    pub ready: Gauge,
    /// Unix milliseconds of the loop's last turn; 0 before the first.
    pub last_turn_ms: AtomicU64,
    last_turn_seconds: Gauge,
    registry: Registry,
}

impl Default for Stats {
    fn default() -> Self {
        let mut r = Registry::default();
        adze_metrics::build_info(&mut r);
        let mut counter =
            |name: &str, help: &str| adze_metrics::add(&mut r, name, help, Counter::default());
        let polls = counter("adze_agent_imds_polls_total", "IMDS polls made.");
        let poll_failures = counter(
            "adze_agent_imds_poll_failures_total",
            "IMDS polls that failed.",
        );
        let actions = counter(
            "adze_agent_actions_total",
            "Actions taken on the node (taint, cordon, drain start, ...).",
        );
        let action_failures = counter(
            "adze_agent_action_failures_total",
            "Actions that failed (retried on the next poll).",
        );
        let drain_rounds = counter("adze_agent_drain_rounds_total", "Drain rounds run.");
        let ready = adze_metrics::add(
            &mut r,
            "adze_agent_ready",
            "1 when the agent's checks pass (the AdzeAgentReady condition).",
            Gauge::default(),
        );
        let last_turn_seconds = adze_metrics::add(
            &mut r,
            "adze_agent_last_turn_seconds",
            "Unix time of the loop's last turn.",
            Gauge::default(),
        );
        Stats {
            polls,
            poll_failures,
            actions,
            action_failures,
            drain_rounds,
            ready,
            last_turn_ms: AtomicU64::new(0),
            last_turn_seconds,
            registry: r,
        }
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
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
        // A --stale-after beyond u64 milliseconds is "never stale", not a wrapped value.
        let stale_ms = u64::try_from(stale_after.as_millis()).unwrap_or(u64::MAX);
        last == 0 || now_ms.saturating_sub(last) <= stale_ms
    }

    /// The OpenMetrics text `/metrics` serves.
    pub fn render(&self) -> String {
        let last = self.last_turn_ms.load(Ordering::Relaxed) / 1000;
        self.last_turn_seconds
            .set(i64::try_from(last).unwrap_or(i64::MAX));
        adze_metrics::render(&self.registry)
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
        "/metrics" => {
            let mut r = Response::new(Full::new(Bytes::from(stats.render())));
            r.headers_mut().insert(
                hyper::header::CONTENT_TYPE,
                hyper::header::HeaderValue::from_static(adze_metrics::CONTENT_TYPE),
            );
            return r;
        }
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
    fn a_stale_after_beyond_u64_milliseconds_never_goes_stale() {
        let s = Stats::default();
        s.last_turn_ms.store(1, Ordering::Relaxed);
        // Duration::MAX in milliseconds wraps to a small number if cast.
        assert!(s.alive(u64::MAX, Duration::MAX));
        assert!(s.alive(u64::MAX, Duration::from_secs(u64::MAX / 1000 + 1)));
    }

    #[test]
    fn healthz_and_metrics_answers() {
        let s = Stats::default();
        s.polls.inc_by(7);
        s.ready.set(1);
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
        assert!(text.contains("\nadze_agent_imds_polls_total 7\n"), "{text}");
        assert!(text.contains("\nadze_agent_ready 1\n"), "{text}");
        assert!(
            text.contains("\nadze_agent_last_turn_seconds 0\n"),
            "{text}"
        );
        let metrics = answer(&s, Duration::from_secs(30), "/metrics");
        assert_eq!(metrics.status(), 200);
        assert_eq!(
            metrics.headers()[hyper::header::CONTENT_TYPE],
            adze_metrics::CONTENT_TYPE
        );
        assert_eq!(answer(&s, Duration::from_secs(30), "/nope").status(), 404);
    }

    #[test]
    fn serves_exactly_the_families_of_the_inventory() {
        let served = adze_metrics::families(&Stats::default().render());
        let inventory = include_str!("../../charts/ci/metrics/agent.prom");
        assert_eq!(served, adze_metrics::families(inventory));
        assert_eq!(
            served.keys().map(String::as_str).collect::<Vec<_>>(),
            [
                "adze_agent_action_failures_total",
                "adze_agent_actions_total",
                "adze_agent_drain_rounds_total",
                "adze_agent_imds_poll_failures_total",
                "adze_agent_imds_polls_total",
                "adze_agent_last_turn_seconds",
                "adze_agent_ready",
                "adze_build_info",
            ]
        );
    }
}
