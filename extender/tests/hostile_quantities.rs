//! Quantities an unauthenticated caller can send the extender: each filter call answers at
//! once with an error naming the pod and the field, and the health endpoint is not held up.

use std::sync::atomic::Ordering;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use adze_extender::ledger::{Ledger, NodeInfo};
use adze_extender::server::{AppState, Binder, Config, router};
use adze_extender::types::ExtenderBindingArgs;
use adze_scheduling::Resources;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tower::ServiceExt;

struct NoBinder;

impl Binder for NoBinder {
    fn bind<'a>(
        &'a self,
        _: &'a ExtenderBindingArgs,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), String>> + Send + 'a>> {
        Box::pin(async { Err("not in this test".to_string()) })
    }
}

fn state() -> AppState {
    let mut l = Ledger::new();
    l.upsert_node(
        "n1",
        NodeInfo {
            allocatable: Resources::new(4000, 16 << 30).with_pods(110),
            claim: None,
        },
    );
    let s = AppState::new(
        Arc::new(RwLock::new(l)),
        Arc::new(NoBinder),
        Config::default(),
    );
    s.ready.store(true, Ordering::Relaxed);
    s
}

async fn call(s: &AppState, method: &str, path: &str, body: String) -> (StatusCode, Vec<u8>) {
    let req = Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", "application/json")
        .body(Body::from(body))
        .unwrap();
    let resp = router(s.clone()).oneshot(req).await.unwrap();
    let status = resp.status();
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    (status, bytes.to_vec())
}

#[tokio::test]
async fn hostile_quantities_are_refused_at_once_naming_the_field() {
    let s = state();
    for (cpu, why) in [
        ("1e-2147483648", "exponent out of range"),
        ("1e2147483647", "exponent out of range"),
        ("9223372036854775807", "out of range"),
        (&*"9".repeat(1_000_000), "too many significant digits"),
    ] {
        let body = json!({
            "Pod": {"metadata": {"name": "p", "namespace": "default", "uid": "u"},
                    "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}},
            "NodeNames": ["n1"]
        });
        let start = Instant::now();
        let (status, bytes) = call(&s, "POST", "/filter", body.to_string()).await;
        assert!(
            start.elapsed() < Duration::from_secs(2),
            "{:?}",
            start.elapsed()
        );
        assert_eq!(status, StatusCode::OK);
        let v: Value = serde_json::from_slice(&bytes).unwrap();
        let err = v["Error"].as_str().unwrap_or_default();
        assert!(
            err.contains("pod default/p: spec.containers[0].resources.requests.cpu")
                && err.contains(why),
            "{}: {err}",
            &cpu[..cpu.len().min(20)]
        );
        assert!(err.len() < 400, "the error quotes the input only in part");
        let (health, _) = call(&s, "GET", "/healthz", String::new()).await;
        assert_eq!(health, StatusCode::OK);
    }
}
