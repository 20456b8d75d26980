//! The HTTP endpoints: `/metrics` (the [`registry`](super::render)), `/healthz` (the process
//! answers) and `/readyz` (the watches have synced). Readiness does not depend on holding
//! the leader lease: a follower is ready to take over.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;

/// Set once the cluster-state watches have their first list.
#[derive(Clone, Default)]
pub struct Readiness(Arc<AtomicBool>);

impl Readiness {
    pub fn set_ready(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    pub fn is_ready(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

pub fn router(ready: Readiness) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .with_state(ready)
}

async fn metrics() -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, adze_metrics::CONTENT_TYPE)],
        super::render(),
    )
}

async fn readyz(State(ready): State<Readiness>) -> impl IntoResponse {
    if ready.is_ready() {
        (StatusCode::OK, "ok")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "watches not synced")
    }
}

/// Binds `addr` and serves in the background; returns the bound address (port 0 → a free one).
pub async fn serve(addr: SocketAddr, ready: Readiness) -> anyhow::Result<SocketAddr> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| anyhow::anyhow!("--metrics-addr {addr}: {e}"))?;
    let bound = listener.local_addr()?;
    tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, router(ready)).await {
            tracing::error!(error = %e, "metrics server stopped");
        }
    });
    Ok(bound)
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn get(addr: SocketAddr, path: &str) -> (u16, String) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        s.write_all(
            format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .await
        .unwrap();
        let mut buf = String::new();
        s.read_to_string(&mut buf).await.unwrap();
        let code = buf[9..12].parse().unwrap();
        (code, buf)
    }

    #[tokio::test]
    async fn readyz_fails_until_synced_and_metrics_serves_the_registry() {
        let ready = Readiness::default();
        let addr = serve("127.0.0.1:0".parse().unwrap(), ready.clone())
            .await
            .unwrap();
        assert_eq!(get(addr, "/healthz").await.0, 200);
        assert_eq!(get(addr, "/readyz").await.0, 503);
        ready.set_ready();
        assert_eq!(get(addr, "/readyz").await.0, 200);
        crate::metrics::provisioner().leader.set(1);
        let (code, body) = get(addr, "/metrics").await;
        assert_eq!(code, 200);
        assert!(body.contains("\nadze_leader 1\n"), "{body}");
        assert!(
            body.contains(
                "content-type: application/openmetrics-text; version=1.0.0; charset=utf-8"
            ),
            "{body}"
        );
        assert!(body.contains("# EOF"), "{body}");
        assert!(
            body.contains("# TYPE adze_scheduling_duration_seconds histogram"),
            "{body}"
        );
    }
}
