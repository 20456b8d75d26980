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
                nominated,
                created: String::new(),
            },
        );
    }
    l
}

fn body(nodes: usize) -> Vec<u8> {
    let names: Vec<String> = (0..nodes).map(node_name).collect();
    json!({
        "Pod": {
            "metadata": {"name": "web-7d9f", "namespace": "shop", "uid": "uid-web"},
            "spec": {"containers": [{"name": "web", "image": "nginx", "resources": {"requests": {"cpu": "500m", "memory": "512Mi"}}}]}
        },
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
    for nodes in [NODES, 500] {
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
                    serde_json::to_vec(&prioritize_body(s, &b).unwrap()).unwrap()
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
    axum::serve(listener, router(state())).await.unwrap();
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
    // For instruction counts under callgrind (load-independent): N calls of one verb, e.g.
    //   ADZE_BENCH_PROFILE=filter valgrind --tool=callgrind \
    //     --toggle-collect='adze_extender::server::filter_body' <bench binary>
    if let Ok(verb) = std::env::var("ADZE_BENCH_PROFILE") {
        let s = state();
        let b = body(NODES);
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
