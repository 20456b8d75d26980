//! Extender latency and throughput: `cargo bench -p adze-extender`.
//!
//! A cluster of 5,000 nodes and 50,000 pods: 46,000 bound (about 9 per node) and 4,000
//! pending, nominated 20 each to 200 NodeClaims whose nodes have registered. Each request
//! is a real JSON body for a pod that is not nominated (the costly case: every node with a
//! claim has its reservation weighed).
//!
//! 1. In-process latency of the `filter` and `prioritize` verbs, body parse to response
//!    serialisation, p50 / p99 over many calls.
//! 2. Requests per second over loopback HTTP/1.1 keep-alive: the server runs in a child
//!    process (this binary re-executed), the load generator here.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use adze_extender::ledger::{ClaimInfo, Ledger, NodeInfo, PodInfo, PodRef};
use adze_extender::server::{AppState, Binder, Config, filter_body, prioritize_body, router};
use adze_extender::types::ExtenderBindingArgs;
use adze_scheduling::Resources;
use serde_json::json;

const NODES: usize = 5_000;
const PODS: usize = 50_000;
const CLAIMS: usize = 200;
const PER_CLAIM: usize = 20;
const GI: i64 = 1 << 30;

struct NoBinder;

impl Binder for NoBinder {
    fn bind<'a>(
        &'a self,
        _: &'a ExtenderBindingArgs,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), String>> + Send + 'a>> {
        Box::pin(async { Ok(()) })
    }
}

fn node_name(i: usize) -> String {
    format!("ip-10-0-{}-{}.ec2.internal", i / 250, i % 250)
}

fn ledger() -> Ledger {
    let mut l = Ledger::new();
    for i in 0..NODES {
        let claim = (i < CLAIMS).then(|| format!("default-{i:05}"));
        l.upsert_node(
            &node_name(i),
            NodeInfo {
                allocatable: Resources::new(15_890, 60 * GI).with_pods(234),
                claim,
            },
        );
    }
    let pending = CLAIMS * PER_CLAIM;
    let sizes = [100, 250, 500, 1000, 1500];
    for p in 0..PODS {
        let cpu = sizes[p % sizes.len()];
        let info = PodInfo {
            namespace: format!("team-{}", p % 40),
            name: format!("pod-{p}"),
            uid: format!("uid-{p}"),
            requests: Resources::new(cpu, ((p as i64 % 32 + 1) * 128) << 20).with_pods(1),
            node: (p >= pending).then(|| node_name(p % NODES)),
        };
        l.upsert_pod(info);
    }
    for c in 0..CLAIMS {
        let nominated = (0..PER_CLAIM)
            .map(|k| {
                let p = c * PER_CLAIM + k;
                PodRef::new(
                    &format!("team-{}", p % 40),
                    &format!("pod-{p}"),
                    &format!("uid-{p}"),
                )
            })
            .collect();
        l.upsert_claim(
            &format!("default-{c:05}"),
            ClaimInfo {
                node: Some(node_name(c)),
                initialized: true,
                nominated,
                created: String::new(),
            },
        );
    }
    l
}

/// The pod as kube-scheduler 1.20 sends it: the whole object, defaulted by the API server,
/// with the owner, managed fields, service-account volume, default tolerations and the
/// `PodScheduled=False` condition of an earlier attempt (about 3 KiB).
fn pod() -> serde_json::Value {
    json!({
        "metadata": {
            "name": "web-7d9f6c5b8d-x2x9k", "generateName": "web-7d9f6c5b8d-", "namespace": "shop",
            "selfLink": "/api/v1/namespaces/shop/pods/web-7d9f6c5b8d-x2x9k",
            "uid": "0b1c3f5e-8a2d-4c7b-9e61-2f4d8a6b1c90", "resourceVersion": "184467",
            "creationTimestamp": "2026-11-23T03:10:00Z",
            "labels": {"app": "web", "pod-template-hash": "7d9f6c5b8d", "tier": "frontend"},
            "annotations": {"kubectl.kubernetes.io/restartedAt": "2026-11-23T03:09:58Z"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-7d9f6c5b8d",
                "uid": "5a8e2c1d-7b3f-4e9a-8c6d-1f2e3a4b5c6d", "controller": true, "blockOwnerDeletion": true}],
            "managedFields": [
                {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1",
                 "time": "2026-11-23T03:10:00Z", "fieldsType": "FieldsV1", "fieldsV1": {
                    "f:metadata": {"f:generateName": {}, "f:labels": {".": {}, "f:app": {}, "f:pod-template-hash": {}, "f:tier": {}},
                        "f:ownerReferences": {".": {}, "k:{\"uid\":\"5a8e2c1d-7b3f-4e9a-8c6d-1f2e3a4b5c6d\"}": {".": {}, "f:apiVersion": {}, "f:blockOwnerDeletion": {}, "f:controller": {}, "f:kind": {}, "f:name": {}, "f:uid": {}}}},
                    "f:spec": {"f:containers": {"k:{\"name\":\"web\"}": {".": {}, "f:image": {}, "f:imagePullPolicy": {}, "f:name": {},
                        "f:ports": {".": {}, "k:{\"containerPort\":8080,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}, "f:protocol": {}}},
                        "f:resources": {".": {}, "f:limits": {".": {}, "f:memory": {}}, "f:requests": {".": {}, "f:cpu": {}, "f:memory": {}}},
                        "f:terminationMessagePath": {}, "f:terminationMessagePolicy": {}}},
                        "f:dnsPolicy": {}, "f:enableServiceLinks": {}, "f:restartPolicy": {}, "f:schedulerName": {}, "f:securityContext": {}, "f:terminationGracePeriodSeconds": {}}}},
                {"manager": "kube-scheduler", "operation": "Update", "apiVersion": "v1",
                 "time": "2026-11-23T03:10:01Z", "fieldsType": "FieldsV1", "fieldsV1": {
                    "f:status": {"f:conditions": {".": {}, "k:{\"type\":\"PodScheduled\"}": {".": {}, "f:lastProbeTime": {}, "f:lastTransitionTime": {}, "f:message": {}, "f:reason": {}, "f:status": {}, "f:type": {}}}}}}
            ]
        },
        "spec": {
            "volumes": [{"name": "default-token-8x7qz", "secret": {"secretName": "default-token-8x7qz", "defaultMode": 420}}],
            "containers": [{
                "name": "web", "image": "registry.example.com/shop/web:1.42.0",
                "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                "env": [{"name": "LOG_LEVEL", "value": "info"}, {"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}}],
                "resources": {"limits": {"memory": "512Mi"}, "requests": {"cpu": "500m", "memory": "512Mi"}},
                "volumeMounts": [{"name": "default-token-8x7qz", "readOnly": true, "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}],
                "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File", "imagePullPolicy": "IfNotPresent"
            }],
            "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default", "serviceAccount": "default", "securityContext": {},
            "schedulerName": "default-scheduler",
            "tolerations": [
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
                {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
            ],
            "priority": 0, "enableServiceLinks": true, "preemptionPolicy": "PreemptLowerPriority"
        },
        "status": {
            "phase": "Pending",
            "conditions": [{"type": "PodScheduled", "status": "False", "lastProbeTime": null,
                "lastTransitionTime": "2026-11-23T03:10:01Z", "reason": "Unschedulable",
                "message": "0/5000 nodes are available: 5000 Insufficient cpu."}],
            "qosClass": "Burstable"
        }
    })
}

fn body(nodes: usize) -> Vec<u8> {
    let names: Vec<String> = (0..nodes).map(node_name).collect();
    json!({
        "Pod": pod(),
        "Nodes": null,
        "NodeNames": names,
    })
    .to_string()
    .into_bytes()
}

fn state() -> AppState {
    let s = AppState::new(
        Arc::new(RwLock::new(ledger())),
        Arc::new(NoBinder),
        Config::default(),
    );
    s.ready.store(true, Ordering::Relaxed);
    s
}

fn percentiles(mut v: Vec<Duration>) -> (f64, f64) {
    v.sort();
    let at = |q: f64| v[((v.len() as f64 * q) as usize).min(v.len() - 1)].as_secs_f64() * 1e3;
    (at(0.50), at(0.99))
}

fn latency(s: &AppState) {
    println!(
        "\nIn-process latency ({NODES} nodes, {PODS} pods, {CLAIMS} claims x {PER_CLAIM} nominated pods)\n"
    );
    println!("| verb | candidate nodes | request | p50 | p99 |");
    println!("|---|---:|---:|---:|---:|");
    for nodes in [NODES, 500, 10] {
        let b = body(nodes);
        for verb in ["filter", "prioritize"] {
            let mut times = Vec::new();
            let iters = if nodes == NODES { 400 } else { 2000 };
            for i in 0..iters + 50 {
                let t = Instant::now();
                let out = if verb == "filter" {
                    let (out, error) = filter_body(s, &b);
                    assert!(!error, "{}", String::from_utf8_lossy(&out));
                    out
                } else {
                    prioritize_body(s, &b).unwrap()
                };
                std::hint::black_box(out);
                if i >= 50 {
                    times.push(t.elapsed());
                }
            }
            let (p50, p99) = percentiles(times);
            println!(
                "| {verb} | {nodes} | {} KiB | {p50:.3} ms | {p99:.3} ms |",
                b.len() / 1024
            );
        }
    }
}

async fn serve() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    println!("{}", listener.local_addr().unwrap());
    adze_extender::server::serve_http(
        listener,
        router(state()),
        adze_extender::server::Limits::default(),
        std::future::pending(),
    )
    .await
    .unwrap();
}

async fn load(
    addr: String,
    path: &'static str,
    body: Vec<u8>,
    conns: usize,
    secs: u64,
) -> (u64, f64) {
    use http_body_util::{BodyExt, Full};
    use hyper_util::rt::TokioIo;
    let done = Arc::new(AtomicU64::new(0));
    let deadline = Instant::now() + Duration::from_secs(secs);
    let body = bytes::Bytes::from(body);
    let mut tasks = Vec::new();
    for _ in 0..conns {
        let (addr, done, body) = (addr.clone(), done.clone(), body.clone());
        tasks.push(tokio::spawn(async move {
            let stream = tokio::net::TcpStream::connect(&addr).await.unwrap();
            stream.set_nodelay(true).unwrap();
            let (mut send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
                .await
                .unwrap();
            tokio::spawn(conn);
            while Instant::now() < deadline {
                let req = hyper::Request::post(path)
                    .header("host", "extender")
                    .header("content-type", "application/json")
                    .body(Full::new(body.clone()))
                    .unwrap();
                let resp = send.send_request(req).await.unwrap();
                assert!(resp.status().is_success());
                let _ = resp.into_body().collect().await.unwrap();
                done.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    let start = Instant::now();
    for t in tasks {
        t.await.unwrap();
    }
    let n = done.load(Ordering::Relaxed);
    (n, n as f64 / start.elapsed().as_secs_f64())
}

fn main() {
    if std::env::var_os("ADZE_BENCH_SERVE").is_some() {
        tokio::runtime::Runtime::new().unwrap().block_on(serve());
        return;
    }
    // For instruction counts under callgrind (load-independent): 10 calls of one verb on
    // ADZE_BENCH_NODES candidates (default 5,000), e.g.
    //   ADZE_BENCH_PROFILE=filter valgrind --tool=callgrind \
    //     --toggle-collect='adze_extender::server::filter_body' <bench binary>
    if let Ok(verb) = std::env::var("ADZE_BENCH_PROFILE") {
        let s = state();
        let nodes = std::env::var("ADZE_BENCH_NODES")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(NODES);
        let b = body(nodes);
        for _ in 0..10 {
            if verb == "filter" {
                std::hint::black_box(filter_body(&s, &b));
            } else {
                std::hint::black_box(prioritize_body(&s, &b).unwrap());
            }
        }
        return;
    }
    let build = Instant::now();
    let s = state();
    println!(
        "ledger built in {:.0} ms",
        build.elapsed().as_secs_f64() * 1e3
    );
    latency(&s);
    drop(s);
    // ADZE_BENCH_LATENCY_ONLY=1 stops here: e.g. to time the latency alone under
    // `chrt -f 10` (real-time priority, so other processes on a busy machine do not take the
    // bench's time slices and p99 shows the extender rather than the OS scheduler).
    if std::env::var_os("ADZE_BENCH_LATENCY_ONLY").is_some() {
        return;
    }

    // The server in a second process, the load generator here.
    let mut child = Command::new(std::env::current_exe().unwrap())
        .env("ADZE_BENCH_SERVE", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line.trim().to_string();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    println!(
        "\nLoopback HTTP/1.1 keep-alive, server in a second process, 4 connections, 5 s each\n"
    );
    println!("| verb | candidate nodes | requests | requests/s |");
    println!("|---|---:|---:|---:|");
    for nodes in [NODES, 500, 50] {
        for path in ["/filter", "/prioritize"] {
            let (n, rps) = rt.block_on(load(addr.clone(), path, body(nodes), 4, 5));
            println!("| {} | {nodes} | {n} | {rps:.0} |", &path[1..]);
        }
    }
    let _ = child.kill();
    let _ = child.wait();
}
