//! The scheduling benchmark: Karpenter's benchmark shape (400 instance types, six kinds of
//! pods) at growing pod counts, plus plan quality against the LP lower bound on generic
//! pods. Prints a Markdown table; docs/benchmarks.md quotes it.
//!
//! The last row is a large cluster: 95,000 pods already bound to about 2,000 nodes (packed
//! by the scheduler itself, chunk by chunk, like a cluster that grew), and 5,000 more
//! diverse pods pending.
//!
//! `cargo bench -p adze-scheduling --bench scheduling` (add `-- --quick` for fewer runs,
//! `-- --only diverse:20000` for one row, e.g. under a profiler, `-- --once` for one run a
//! row; `-- --digest` prints a fingerprint of each plan to stderr, to check that a change
//! keeps the plans).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Counts live heap bytes so the table can report the peak one `schedule` call needs.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let now = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

use adze_scheduling::fixtures::{
    self, bench_catalog, bench_pods, generic_pods, node_from_claim, pool, term,
};
use adze_scheduling::{
    BoundPod, Operator, Options, Pod, Requirement, Requirements, Snapshot, labels, schedule,
};

fn snapshot(pods: Vec<adze_scheduling::Pod>) -> Snapshot {
    Snapshot {
        pending: pods,
        nodepools: vec![pool("default", bench_catalog(400))],
        ..Default::default()
    }
}

/// Gives a self-affinity app (hostname or zone) a name of its own per chunk: a later
/// chunk's replicas are another Deployment, not followers of pods on full nodes.
fn own_affinity_apps(pods: &mut [Pod], chunk: &str) {
    for p in pods {
        let Some(app) = p.labels.get("app").cloned() else {
            continue;
        };
        if !(app.starts_with("ha-") || app.starts_with("za-")) {
            continue;
        }
        let app = format!("{app}-{chunk}");
        p.labels.insert("app".to_string(), app.clone());
        for a in &mut p.affinity {
            *a = term(&a.topology_key, &app);
        }
    }
}

/// `bound` pods already placed (chunks of 5,000 diverse pods, each packed by the scheduler
/// onto new nodes that then count as registered) and `pending` diverse pods.
fn cluster(bound: usize, pending: usize) -> Snapshot {
    let mut snap = snapshot(Vec::new());
    let chunk = 5000;
    for k in 0..bound.div_ceil(chunk) {
        let n = chunk.min(bound - k * chunk);
        let mut pods = bench_pods(n, 1000 + k as u64);
        for p in &mut pods {
            p.name = format!("b{k:02}-{}", p.name);
        }
        own_affinity_apps(&mut pods, &format!("b{k:02}"));
        let plan = schedule(
            &snapshot(pods.clone()),
            &Options {
                name_seed: k as u64,
                reserved_names: snap.nodes.iter().map(|n| n.name.clone()).collect(),
                ..Options::default()
            },
        );
        assert!(plan.unschedulable.is_empty());
        let by_key: std::collections::HashMap<String, &Pod> =
            pods.iter().map(|p| (p.key(), p)).collect();
        for c in &plan.new_claims {
            snap.nodes.push(node_from_claim(c));
            snap.bound.extend(c.pods.iter().map(|p| BoundPod {
                node: c.name.clone(),
                pod: by_key[p].clone(),
                daemon: false,
            }));
        }
    }
    let mut pods = bench_pods(pending, 42);
    own_affinity_apps(&mut pods, "new");
    snap.pending = pods;
    snap
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    // `--once`: one run a row (under a profiler).
    let once = args.iter().any(|a| a == "--once");
    // `--only kind:n` runs one row.
    let only = args
        .iter()
        .position(|a| a == "--only")
        .and_then(|i| args.get(i + 1))
        .cloned();
    let opts = Options::default();
    println!(
        "| pods | kind | median time | pods/s | nodeclaims | unschedulable | $/h | lower bound | cost / bound | peak heap |"
    );
    println!("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mut rows: Vec<(&str, usize)> = Vec::new();
    for kind in ["diverse", "generic"] {
        for n in [1usize, 100, 1000, 5000, 20000] {
            rows.push((kind, n));
        }
    }
    rows.push(("cluster", 100_000));
    rows.push(("generic", 200_000));
    rows.push(("pools", 20_000));
    rows.push(("identical", 30_000));
    rows.push(("limited", 300_000));
    rows.push(("anti", 8_000));
    rows.push(("terms", 20_000));
    rows.push(("hostport", 1_300));
    rows.push(("gpu", 900));
    // `--only kind:n` with a count of its own (say, to see how a kind's time grows).
    let extra = only.as_deref().and_then(|o| {
        let (kind, n) = o.split_once(':')?;
        let kind = [
            "diverse",
            "generic",
            "pools",
            "identical",
            "limited",
            "anti",
            "terms",
            "hostport",
            "gpu",
        ]
        .into_iter()
        .find(|k| *k == kind)?;
        Some((kind, n.parse::<usize>().ok()?))
    });
    if let Some(row) = extra.filter(|r| !rows.contains(r)) {
        rows.push(row);
    }
    for (kind, n) in rows {
        if only.as_ref().is_some_and(|o| *o != format!("{kind}:{n}")) {
            continue;
        }
        let (snap, pending, label) = match kind {
            "diverse" => (snapshot(bench_pods(n, 42)), n, kind.to_string()),
            "generic" => (snapshot(generic_pods(n, 42)), n, kind.to_string()),
            "pools" => {
                // 2,000 NodePools of the same 400 types, one per team, each pod
                // selecting its team's pool: a table sized pods × pools would be
                // 40 million entries.
                let catalog = bench_catalog(400);
                let mut snap = snapshot(generic_pods(n, 42));
                snap.nodepools = (0..2000)
                    .map(|i| {
                        let mut p = pool(&format!("team-{i:04}"), catalog.clone());
                        p.labels.insert("team".into(), format!("t{i:04}"));
                        p
                    })
                    .collect();
                for (i, p) in snap.pending.iter_mut().enumerate() {
                    let team = format!("t{:04}", i % 2000);
                    let r = Requirement::new("team", Operator::In, &[team]).expect("valid");
                    p.node_requirements = vec![Requirements::new().with(r)];
                }
                (
                    snap,
                    n,
                    "generic, 2,000 NodePools (one per team)".to_string(),
                )
            }
            "identical" => {
                // 3,000 interchangeable NodePools (same types, every pod fits every pool),
                // each limited to 1,000 CPUs: pools fill one after another, and nothing may
                // be sized pods × pools.
                let catalog = bench_catalog(400);
                let mut snap = snapshot(generic_pods(n, 42));
                snap.nodepools = (0..3000)
                    .map(|i| {
                        let mut p = pool(&format!("p{i:04}"), catalog.clone());
                        p.limits.insert("cpu".into(), 1_000_000);
                        p
                    })
                    .collect();
                (
                    snap,
                    n,
                    "generic, 3,000 identical NodePools of 1,000 CPUs each".to_string(),
                )
            }
            "limited" => {
                // Far more pods than the pool's limits hold (1,000 CPUs): most are left
                // pending, and each of those must not cost a scan of every claim.
                let mut snap = snapshot(generic_pods(n, 42));
                for p in &mut snap.nodepools {
                    p.limits.insert("cpu".into(), 1_000_000);
                }
                (
                    snap,
                    n,
                    "generic, one NodePool limited to 1,000 CPUs".to_string(),
                )
            }
            "anti" => {
                // One Deployment whose pods exclude each other by hostname: a node each.
                let mut snap = snapshot(generic_pods(n, 42));
                for p in &mut snap.pending {
                    p.labels.insert("app".into(), "lonely".into());
                    p.anti_affinity = vec![term(labels::HOSTNAME, "lonely")];
                }
                (
                    snap,
                    n,
                    "generic, one Deployment with required hostname anti-affinity".to_string(),
                )
            }
            "terms" => {
                // Two required node-selector terms (ORed): zone a, or spot capacity.
                let mut snap = snapshot(generic_pods(n, 42));
                let zone =
                    Requirement::new(labels::ZONE, Operator::In, &["test-1a"]).expect("valid");
                let spot = Requirement::new(
                    labels::CAPACITY_TYPE,
                    Operator::In,
                    &[labels::CAPACITY_TYPE_SPOT],
                )
                .expect("valid");
                for p in &mut snap.pending {
                    p.node_requirements = vec![
                        Requirements::new().with(zone.clone()),
                        Requirements::new().with(spot.clone()),
                    ];
                }
                (
                    snap,
                    n,
                    "generic, two required node-selector terms".to_string(),
                )
            }
            "hostport" => {
                // Every pod holds the same host port: a node each, like hostNetwork agents.
                let mut snap = snapshot(generic_pods(n, 42));
                for p in &mut snap.pending {
                    p.host_ports.push(adze_scheduling::pod::HostPort {
                        port: 9100,
                        protocol: "TCP".to_string(),
                        host_ip: String::new(),
                    });
                }
                (
                    snap,
                    n,
                    "generic, each holding host port 9100 (a node each)".to_string(),
                )
            }
            "gpu" => {
                // Pods of 4 GPUs on the embedded catalog's GPU types: a node each.
                let pods = (0..n)
                    .map(|i| {
                        fixtures::pod(&format!("gpu-{i:05}"))
                            .cpu(4600)
                            .mem(8 << 30)
                            .gpu(4)
                            .build()
                    })
                    .collect();
                let mut snap = snapshot(pods);
                snap.nodepools = vec![pool("default", adze_scheduling::catalog::embedded())];
                (
                    snap,
                    n,
                    "4 GPUs each, embedded catalog (a node each)".to_string(),
                )
            }
            _ => {
                let snap = cluster(n - 5000, 5000);
                let label = format!(
                    "cluster: {} bound on {} nodes, {} diverse pending",
                    snap.bound.len(),
                    snap.nodes.len(),
                    snap.pending.len()
                );
                (snap, 5000, label)
            }
        };
        let runs = if n > 100_000 || once {
            1
        } else if quick || n >= 20000 {
            3
        } else if n >= 5000 {
            5
        } else {
            15
        };
        let mut times = Vec::new();
        let mut plan = None;
        let base = LIVE.load(Ordering::Relaxed);
        PEAK.store(base, Ordering::Relaxed);
        for _ in 0..runs {
            let t = Instant::now();
            let p = schedule(&snap, &opts);
            times.push(t.elapsed());
            plan = Some(p);
        }
        if args.iter().any(|a| a == "--digest") {
            // A fingerprint of the whole plan, to compare builds: same input, same plan?
            let text = format!("{:?}", plan.as_ref().expect("ran at least once"));
            let h = text.bytes().fold(0xcbf29ce484222325u64, |h, b| {
                (h ^ u64::from(b)).wrapping_mul(0x100000001b3)
            });
            eprintln!("{kind}:{n} plan digest {h:016x}");
        }
        let peak_mib = (PEAK.load(Ordering::Relaxed) - base) as f64 / (1u64 << 20) as f64;
        let plan = plan.expect("ran at least once");
        let t = median(times);
        println!(
            "| {n} | {label} | {:.1} ms | {:.0} | {} | {} | {:.2} | {:.2} | {:.3} | {peak_mib:.1} MiB |",
            t.as_secs_f64() * 1000.0,
            pending as f64 / t.as_secs_f64(),
            plan.new_claims.len(),
            plan.unschedulable.len(),
            plan.total_price_per_hour,
            plan.cost_lower_bound,
            plan.total_price_per_hour / plan.cost_lower_bound.max(1e-9),
        );
    }
}
