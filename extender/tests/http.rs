//! The extender's HTTP verbs, driven in-process through the router as kube-scheduler would
//! call them.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, RwLock};

use adze_extender::ledger::{ClaimInfo, Ledger, NodeInfo, PodInfo, PodRef};
use adze_extender::server::{AppState, Binder, Config, router};
use adze_extender::types::{
    ExtenderBindingArgs, ExtenderBindingResult, ExtenderFilterResult, ExtenderPreemptionResult,
    HostPriority,
};
use adze_scheduling::Resources;
use adze_scheduling::preemption::{Policy, PoolView};
use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tower::ServiceExt;

const GI: i64 = 1 << 30;

/// Records bindings; refuses pods named `missing` the way the API server does.
#[derive(Default)]
struct FakeBinder {
    calls: Mutex<Vec<ExtenderBindingArgs>>,
}

impl Binder for FakeBinder {
    fn bind<'a>(
        &'a self,
        args: &'a ExtenderBindingArgs,
    ) -> Pin<Box<dyn Future<Output = Result<(), String>> + Send + 'a>> {
        Box::pin(async move {
            self.calls.lock().unwrap().push(args.clone());
            if args.pod_name == "missing" {
                Err(format!("pods \"{}\" not found", args.pod_name))
            } else {
                Ok(())
            }
        })
    }
}

/// n1 (4 CPU) was launched for a-0..a-3 (1 CPU each); n2 (4 CPU) is plain.
fn cluster() -> (AppState, Arc<FakeBinder>) {
    let mut l = Ledger::new();
    l.upsert_node(
        "n1",
        NodeInfo {
            allocatable: Resources::new(4000, 16 * GI).with_pods(110),
            claim: Some("default-x7k2p".into()),
        },
    );
    l.upsert_node(
        "n2",
        NodeInfo {
            allocatable: Resources::new(4000, 16 * GI).with_pods(110),
            claim: None,
        },
    );
    let mut refs = Vec::new();
    for i in 0..4 {
        let name = format!("a-{i}");
        l.upsert_pod(PodInfo {
            namespace: "default".into(),
            name: name.clone(),
            uid: format!("uid-{name}"),
            requests: Resources::new(1000, GI).with_pods(1),
            node: None,
        });
        refs.push(PodRef::new("default", &name, &format!("uid-{name}")));
    }
    l.upsert_claim(
        "default-x7k2p",
        ClaimInfo {
            node: Some("n1".into()),
            initialized: true,
            nominated: refs,
            created: "2026-11-22T00:00:00Z".into(),
        },
    );
    let binder = Arc::new(FakeBinder::default());
    let state = AppState::new(Arc::new(RwLock::new(l)), binder.clone(), Config::default());
    state.ready.store(true, Ordering::Relaxed);
    (state, binder)
}

fn pod(name: &str, cpu: &str) -> Value {
    json!({
        "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}")},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}]}
    })
}

fn node(name: &str) -> Value {
    json!({
        "metadata": {"name": name},
        "status": {"allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"}}
    })
}

async fn call(state: &AppState, method: &str, path: &str, body: String) -> (StatusCode, Vec<u8>) {
    let req = Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", "application/json")
        .body(Body::from(body))
        .unwrap();
    let resp = router(state.clone()).oneshot(req).await.unwrap();
    let status = resp.status();
    let bytes = resp
        .into_body()
        .collect()
        .await
        .unwrap()
        .to_bytes()
        .to_vec();
    (status, bytes)
}

async fn post<T: serde::de::DeserializeOwned>(state: &AppState, path: &str, body: Value) -> T {
    let (status, bytes) = call(state, "POST", path, body.to_string()).await;
    assert_eq!(
        status,
        StatusCode::OK,
        "{}",
        String::from_utf8_lossy(&bytes)
    );
    serde_json::from_slice(&bytes).unwrap()
}

#[tokio::test]
async fn filter_with_node_names_keeps_the_reserved_node_for_its_pods() {
    let (s, _) = cluster();
    let stranger: ExtenderFilterResult = post(
        &s,
        "/filter",
        json!({"Pod": pod("b-0", "1"), "NodeNames": ["n1", "n2"]}),
    )
    .await;
    assert_eq!(stranger.node_names.unwrap(), ["n2"]);
    let reason = &stranger.failed_nodes.unwrap()["n1"];
    assert!(
        reason.starts_with("capacity reserved for 4 pods nominated to nodeclaim default-x7k2p"),
        "{reason}"
    );
    assert_eq!(stranger.error, "");

    let owner: ExtenderFilterResult = post(
        &s,
        "/filter",
        json!({"Pod": pod("a-0", "1"), "NodeNames": ["n1", "n2"]}),
    )
    .await;
    // Its own node only: filter, not a prioritize score, places it there.
    assert_eq!(owner.node_names.unwrap(), ["n1"]);
    assert_eq!(
        owner.failed_nodes.unwrap()["n2"],
        "node n1 was launched for this pod"
    );
}

#[tokio::test]
async fn filter_with_full_nodes_returns_node_objects() {
    let (s, _) = cluster();
    let (status, bytes) = call(
        &s,
        "POST",
        "/filter",
        json!({"Pod": pod("b-0", "1"), "Nodes": {"items": [node("n1"), node("n2")]}}).to_string(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let v: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(v["Nodes"]["items"][0]["metadata"]["name"], "n2");
    assert_eq!(v["Nodes"]["items"].as_array().unwrap().len(), 1);
    assert!(v["NodeNames"].is_null());
    assert!(v["FailedNodes"]["n1"].is_string());
}

#[tokio::test]
async fn node_missing_from_the_cache_is_reported_not_a_panic() {
    let (s, _) = cluster();
    {
        let mut l = s.ledger.write().unwrap();
        l.remove_node("n1");
    }
    let r: ExtenderFilterResult = post(
        &s,
        "/filter",
        json!({"Pod": pod("b-0", "1"), "NodeNames": ["n1", "n2", "n3"]}),
    )
    .await;
    // n1 still has a claim with nominations pointing at it; n3 was never heard of.
    assert_eq!(r.node_names.unwrap(), ["n2", "n3"]);
    assert!(
        r.failed_nodes.unwrap()["n1"].contains("not in the extender's cache"),
        "reason names the cache"
    );
}

#[tokio::test]
async fn prioritize_gives_the_nominated_node_the_top_score() {
    let (s, _) = cluster();
    let scores: Vec<HostPriority> = post(
        &s,
        "/prioritize",
        json!({"Pod": pod("a-1", "1"), "NodeNames": ["n2", "n1"]}),
    )
    .await;
    assert_eq!(scores[1].host, "n1");
    assert_eq!(scores[1].score, 10);
    assert!(scores[0].score < 10);
    let (status, bytes) = call(
        &s,
        "POST",
        "/prioritize",
        json!({"Pod": pod("b", "1"), "NodeNames": ["n2", "n1"]}).to_string(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert!(String::from_utf8_lossy(&bytes).contains(r#""Host":"n2","Score""#));
}

#[tokio::test]
async fn bind_updates_the_ledger_at_once_and_retries_are_harmless() {
    let (s, binder) = cluster();
    let args =
        json!({"PodName": "a-0", "PodNamespace": "default", "PodUID": "uid-a-0", "Node": "n1"});
    let r: ExtenderBindingResult = post(&s, "/bind", args.clone()).await;
    assert_eq!(r.error, "");
    let r: ExtenderBindingResult = post(&s, "/bind", args).await;
    assert_eq!(r.error, "");
    assert_eq!(binder.calls.lock().unwrap().len(), 2);
    assert_eq!(
        s.ledger
            .read()
            .unwrap()
            .pod("default", "a-0")
            .unwrap()
            .node
            .as_deref(),
        Some("n1")
    );
    let after: ExtenderFilterResult = post(
        &s,
        "/filter",
        json!({"Pod": pod("b-0", "1"), "NodeNames": ["n1"]}),
    )
    .await;
    assert!(
        after.failed_nodes.unwrap()["n1"].starts_with("capacity reserved for 3 pods"),
        "the next filter sees the binding"
    );
}

#[tokio::test]
async fn bind_of_an_unknown_pod_answers_the_api_error_and_leaves_no_trace() {
    let (s, _) = cluster();
    let r: ExtenderBindingResult = post(
        &s,
        "/bind",
        json!({"PodName": "missing", "PodNamespace": "default", "PodUID": "u", "Node": "n2"}),
    )
    .await;
    assert!(r.error.contains("not found"), "{}", r.error);
    assert!(
        s.ledger.read().unwrap().pod("default", "missing").is_none(),
        "the assumed binding was rolled back and the unknown pod forgotten"
    );
    let r: ExtenderBindingResult = post(&s, "/bind", json!({"PodName": "x"})).await;
    assert_eq!(r.error, "ExtenderBindingArgs.PodNamespace is empty");
}

#[tokio::test]
async fn preempt_answers_no_victims_while_the_pods_capacity_is_in_flight() {
    let (s, _) = cluster();
    let victims = json!({"n2": {"Pods": [{"UID": "v1"}], "NumPDBViolations": 0}});
    let held: ExtenderPreemptionResult = post(
        &s,
        "/preempt",
        json!({"Pod": pod("a-2", "1"), "NodeNameToMetaVictims": victims}),
    )
    .await;
    assert_eq!(held.node_name_to_meta_victims.unwrap().len(), 0);
    let passed: ExtenderPreemptionResult = post(
        &s,
        "/preempt",
        json!({"Pod": pod("b", "1"), "NodeNameToMetaVictims": victims}),
    )
    .await;
    assert_eq!(
        passed.node_name_to_meta_victims.unwrap()["n2"]
            .pods
            .as_ref()
            .unwrap()[0]
            .uid,
        "v1"
    );
    let full: ExtenderPreemptionResult = post(
        &s,
        "/preempt",
        json!({"Pod": pod("b", "1"), "NodeNameToVictims": {"n2": {"Pods": [{"metadata": {"name": "v", "uid": "v2"}}], "NumPDBViolations": 1}}}),
    )
    .await;
    let m = full.node_name_to_meta_victims.unwrap();
    assert_eq!(m["n2"].pods.as_ref().unwrap()[0].uid, "v2");
    assert_eq!(m["n2"].num_pdb_violations, 1);
}

#[tokio::test]
async fn preempt_passes_candidates_through_when_holding_is_off() {
    let (mut s, _) = cluster();
    s.config.preemption = Policy::Allow;
    let r: ExtenderPreemptionResult = post(
        &s,
        "/preempt",
        json!({"Pod": pod("a-2", "1"), "NodeNameToMetaVictims": {"n2": {"Pods": [], "NumPDBViolations": 0}}}),
    )
    .await;
    assert!(r.node_name_to_meta_victims.unwrap().contains_key("n2"));
}

/// A pod no claim was launched for yet, in its first scheduling cycle: held when a NodePool
/// can serve it, passed through when the pool cannot (a label it does not set), and the hold
/// shows in /metrics.
#[tokio::test]
async fn preempt_holds_from_the_first_cycle_for_pods_a_nodepool_can_serve() {
    let (s, _) = cluster();
    s.pools.write().unwrap().insert(
        "default".into(),
        PoolView {
            pool: adze_scheduling::NodePool::new("default", vec![]),
            in_use: Resources::default(),
        },
    );
    let victims = json!({"n2": {"Pods": [{"UID": "v1"}], "NumPDBViolations": 0}});
    let held: ExtenderPreemptionResult = post(
        &s,
        "/preempt",
        json!({"Pod": pod("fresh", "1"), "NodeNameToMetaVictims": victims}),
    )
    .await;
    assert_eq!(held.node_name_to_meta_victims.unwrap().len(), 0);
    let mut picky = pod("picky", "1");
    picky["spec"]["nodeSelector"] = json!({"team": "a"});
    let passed: ExtenderPreemptionResult = post(
        &s,
        "/preempt",
        json!({"Pod": picky, "NodeNameToMetaVictims": victims}),
    )
    .await;
    assert!(passed.node_name_to_meta_victims.unwrap().contains_key("n2"));
    let (_, body) = call(&s, "GET", "/metrics", String::new()).await;
    let text = String::from_utf8(body).unwrap();
    assert!(
        text.contains("adze_extender_preemptions_held_total 1"),
        "{text}"
    );
}

/// A body beyond what a real (nodeCacheCapable) request needs is refused, not buffered.
#[tokio::test]
async fn oversized_bodies_are_refused_with_413() {
    let (s, _) = cluster();
    let big = format!(
        "{{\"Pod\": {}, \"NodeNames\": [\"{}\"]}}",
        pod("a-2", "1"),
        "n".repeat(adze_extender::server::MAX_BODY_BYTES)
    );
    let (status, _) = call(&s, "POST", "/filter", big).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    let names: Vec<String> = (0..5000)
        .map(|i| format!("ip-10-0-{i}.ec2.internal"))
        .collect();
    let (status, _) = call(
        &s,
        "POST",
        "/filter",
        json!({"Pod": pod("a-2", "1"), "NodeNames": names}).to_string(),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "5,000 node names fit");
}

#[tokio::test]
async fn bad_input_gets_a_clear_error_never_a_panic() {
    let (s, _) = cluster();
    for (path, body, needle) in [
        ("/filter", "{not json", "malformed ExtenderArgs"),
        (
            "/filter",
            r#"{"NodeNames": ["n1"]}"#,
            "the request has no Pod",
        ),
        (
            "/filter",
            r#"{"Pod": {"metadata": {"name": "p"}, "spec": {"containers": []}}}"#,
            "neither NodeNames nor Nodes",
        ),
        (
            "/filter",
            r#"{"Pod": {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "lots"}}}]}}, "NodeNames": []}"#,
            "pod default/p: spec.containers[0].resources.requests.cpu",
        ),
        ("/filter", "", "malformed ExtenderArgs"),
        ("/bind", "[1,2", "malformed ExtenderBindingArgs"),
    ] {
        let (status, bytes) = call(&s, "POST", path, body.to_string()).await;
        assert_eq!(status, StatusCode::OK, "{path} {body}");
        let v: Value = serde_json::from_slice(&bytes).unwrap();
        let err = v["Error"].as_str().unwrap();
        assert!(err.contains(needle), "{path} {body}: {err}");
    }
    for path in ["/prioritize", "/preempt"] {
        let (status, bytes) = call(&s, "POST", path, "{oops".into()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert!(String::from_utf8_lossy(&bytes).starts_with("malformed"));
    }
}

#[tokio::test]
async fn health_readiness_and_metrics() {
    let (s, _) = cluster();
    let (status, _) = call(&s, "GET", "/healthz", String::new()).await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = call(&s, "GET", "/readyz", String::new()).await;
    assert_eq!(status, StatusCode::OK);
    s.ready.store(false, Ordering::Relaxed);
    let (status, _) = call(&s, "GET", "/readyz", String::new()).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    let _: ExtenderFilterResult = post(
        &s,
        "/filter",
        json!({"Pod": pod("b", "1"), "NodeNames": ["n1"]}),
    )
    .await;
    let (status, bytes) = call(&s, "GET", "/metrics", String::new()).await;
    assert_eq!(status, StatusCode::OK);
    let text = String::from_utf8(bytes).unwrap();
    assert!(
        text.contains("adze_extender_requests_total{verb=\"filter\"} 1"),
        "{text}"
    );
    assert!(
        text.contains("adze_extender_cached_objects{kind=\"pod\"} 4"),
        "{text}"
    );
}

#[tokio::test]
async fn a_follower_is_not_ready_but_still_answers_from_its_own_ledger() {
    let (s, _) = cluster();
    let (_, bytes) = call(&s, "GET", "/metrics", String::new()).await;
    assert!(
        String::from_utf8(bytes)
            .unwrap()
            .contains("adze_extender_leader 1")
    );
    s.leading.store(false, Ordering::Relaxed);
    let (status, bytes) = call(&s, "GET", "/readyz", String::new()).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(String::from_utf8_lossy(&bytes).contains("leader lease"));
    let (_, bytes) = call(&s, "GET", "/metrics", String::new()).await;
    assert!(
        String::from_utf8(bytes)
            .unwrap()
            .contains("adze_extender_leader 0")
    );
    // Reached during a handover, it keeps the reservations it knows of rather than failing.
    let r: ExtenderFilterResult = post(
        &s,
        "/filter",
        json!({"Pod": pod("b", "1"), "NodeNames": ["n1"]}),
    )
    .await;
    assert!(r.error.is_empty(), "{}", r.error);
    // Synced comes first in what /readyz reports.
    s.ready.store(false, Ordering::Relaxed);
    let (_, bytes) = call(&s, "GET", "/readyz", String::new()).await;
    assert!(String::from_utf8_lossy(&bytes).contains("not synced"));
}

#[tokio::test]
async fn pod_failing_on_every_node_is_signalled_once_others_are_not() {
    let (s, _) = cluster();
    let (signal, mut rx) = adze_extender::signal::Signal::new();
    let s = s.with_signal(signal);
    // b-0 fits on n2: nothing to say.
    let _: ExtenderFilterResult = post(
        &s,
        "/filter",
        json!({"Pod": pod("b-0", "1"), "NodeNames": ["n1", "n2"]}),
    )
    .await;
    assert!(
        rx.try_recv().is_err(),
        "a pod that passes somewhere is not signalled"
    );
    // b-1 is offered only the reserved node and fails there.
    let r: ExtenderFilterResult = post(
        &s,
        "/filter",
        json!({"Pod": pod("b-1", "1"), "NodeNames": ["n1"]}),
    )
    .await;
    assert_eq!(r.node_names.unwrap(), Vec::<String>::new());
    let got = rx.try_recv().expect("signalled");
    assert_eq!(
        (got.namespace.as_str(), got.name.as_str(), got.uid.as_str()),
        ("default", "b-1", "uid-b-1")
    );
    let event = adze_extender::signal::event_for(&got, "2026-11-22T23:50:00Z");
    let event = serde_json::to_value(&event).unwrap();
    assert_eq!(event["metadata"]["name"], "b-1.uid-b-1");
    assert_eq!(event["metadata"]["namespace"], "default");
    assert_eq!(
        event["involvedObject"],
        json!({"apiVersion": "v1", "kind": "Pod", "namespace": "default", "name": "b-1", "uid": "uid-b-1"})
    );
    assert_eq!(event["reason"], "FailedEveryNode");
    assert_eq!(event["source"]["component"], "adze-extender");
    assert_eq!(event["firstTimestamp"], "2026-11-22T23:50:00Z");
}

#[test]
fn event_names_are_one_per_pod_uid_and_always_valid() {
    use adze_extender::signal::{Unschedulable, event_name};
    let pod = |name: &str, uid: &str| Unschedulable {
        namespace: "default".into(),
        name: name.into(),
        uid: uid.into(),
    };
    // A same-named successor (new UID) gets its own Event, never its predecessor's.
    assert_ne!(event_name(&pod("web", "u1")), event_name(&pod("web", "u2")));
    // The longest pod name Kubernetes allows, cut where it would leave "-." or "..".
    let uid = "0123abcd-0000-4000-8000-0123456789ab";
    for name in [
        "a".repeat(253),
        format!("{}-{}", "a".repeat(199), "b".repeat(53)),
        format!("{}.{}", "a".repeat(199), "b".repeat(53)),
    ] {
        let n = event_name(&pod(&name, uid));
        assert!(n.len() <= 253, "{} characters", n.len());
        assert!(
            adze_extender::names::dns1123_subdomain(&n).is_ok(),
            "{n:?} is not a DNS subdomain"
        );
        assert!(n.ends_with(uid));
    }
}

/// Names that would change the API path (kube-rs does not escape them) or that Kubernetes
/// would never give an object, and an empty UID (the binding's precondition would be
/// dropped), are refused naming the field; neither the binder nor the ledger sees them.
#[tokio::test]
async fn bind_refuses_an_empty_uid_and_invalid_names_before_any_api_call() {
    let (s, binder) = cluster();
    let long = "a".repeat(254);
    let good =
        json!({"PodName": "a-0", "PodNamespace": "default", "PodUID": "uid-a-0", "Node": "n1"});
    let cases: [(&str, &str, &str); 9] = [
        ("PodUID", "", "ExtenderBindingArgs.PodUID is empty"),
        (
            "PodName",
            "x?dryRun=All",
            "ExtenderBindingArgs.PodName \"x?dryRun=All\" is not a DNS-1123 subdomain",
        ),
        (
            "PodName",
            "../x",
            "ExtenderBindingArgs.PodName \"../x\" is not a DNS-1123 subdomain",
        ),
        (
            "PodName",
            "A-0",
            "ExtenderBindingArgs.PodName \"A-0\" is not a DNS-1123 subdomain",
        ),
        (
            "PodName",
            &long,
            "is 254 characters long; at most 253 are allowed",
        ),
        (
            "PodNamespace",
            "x?dryRun=All",
            "ExtenderBindingArgs.PodNamespace \"x?dryRun=All\" is not a DNS-1123 label",
        ),
        (
            "PodNamespace",
            "a.b",
            "ExtenderBindingArgs.PodNamespace \"a.b\" is not a DNS-1123 label",
        ),
        (
            "Node",
            "../x",
            "ExtenderBindingArgs.Node \"../x\" is not a DNS-1123 subdomain",
        ),
        ("Node", &long, "ExtenderBindingArgs.Node \"aaaa"),
    ];
    for (field, value, needle) in cases {
        let mut args = good.clone();
        args[field] = json!(value);
        let (status, bytes) = call(&s, "POST", "/bind", args.to_string()).await;
        assert_eq!(status, StatusCode::OK, "{field}={value}");
        let r: ExtenderBindingResult = serde_json::from_slice(&bytes).unwrap();
        assert!(r.error.contains(needle), "{field}={value}: {}", r.error);
        assert!(r.error.contains(field), "{field}={value}: {}", r.error);
        assert!(r.error.len() < 400, "the value is cut short: {}", r.error);
    }
    assert!(
        binder.calls.lock().unwrap().is_empty(),
        "no binding request reached the API"
    );
    assert_eq!(
        s.ledger.read().unwrap().pod("default", "a-0").unwrap().node,
        None,
        "nothing was assumed"
    );
    let r: ExtenderBindingResult = post(&s, "/bind", good).await;
    assert_eq!(r.error, "", "a valid bind still goes through");
    assert_eq!(binder.calls.lock().unwrap().len(), 1);
}

/// A filter request whose pod has a name Kubernetes would not accept is refused with an
/// error naming the field (the shared pod validation), and not reported for the
/// unschedulable annotation (whose API path it would become).
#[tokio::test]
async fn a_pod_with_an_invalid_name_is_refused_and_not_signalled() {
    let (s, _) = cluster();
    let (signal, mut rx) = adze_extender::signal::Signal::new();
    let s = s.with_signal(signal);
    for (args, field) in [
        (
            json!({"Pod": pod("x?dryRun=All", "1"), "NodeNames": ["n1"]}),
            "metadata.name",
        ),
        (
            json!({"Pod": pod("x?dryRun=All", "1"), "Nodes": {"items": [node("n1")]}}),
            "metadata.name",
        ),
        (
            json!({"Pod": {"metadata": {"name": "p", "namespace": "a.b", "uid": "u"},
                "spec": {"containers": [{"name": "c"}]}}, "NodeNames": ["n1"]}),
            "metadata.namespace",
        ),
        (
            json!({"Pod": {"metadata": {"name": "p", "namespace": "default", "uid": "u"},
                "spec": {"initContainers": [{"name": "c"}], "containers": [{"name": "c"}]}},
                "NodeNames": ["n1"]}),
            "spec.containers[0].name",
        ),
    ] {
        let r: ExtenderFilterResult = post(&s, "/filter", args).await;
        assert!(
            r.error.contains(&format!(": {field}: ")),
            "{field}: {}",
            r.error
        );
        assert!(r.node_names.is_none_or(|n| n.is_empty()));
    }
    assert!(rx.try_recv().is_err());
    let _: ExtenderFilterResult = post(
        &s,
        "/filter",
        json!({"Pod": pod("b-1", "1"), "NodeNames": ["n1"]}),
    )
    .await;
    assert_eq!(rx.try_recv().unwrap().name, "b-1", "a valid one still is");
}
