//! The scheduling benchmark: Karpenter's benchmark shape (400 instance types, six kinds of
//! pods) at growing pod counts, plus plan quality against the LP lower bound on generic
//! pods. Prints a Markdown table; README.md quotes it.
//!
//! `cargo bench -p adze-scheduling --bench scheduling` (add `-- --quick` for fewer runs).

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

use adze_scheduling::fixtures::{bench_catalog, bench_pods, generic_pods, pool};
use adze_scheduling::{Options, Snapshot, schedule};

fn snapshot(pods: Vec<adze_scheduling::Pod>) -> Snapshot {
    Snapshot {
        pending: pods,
        nodepools: vec![pool("default", bench_catalog(400))],
        ..Default::default()
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let opts = Options::default();
    println!(
        "| pods | kind | median time | pods/s | nodeclaims | unschedulable | $/h | lower bound | cost / bound | peak heap |"
    );
    println!("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (kind, sizes) in [
        ("diverse", [1usize, 100, 1000, 5000, 20000]),
        ("generic", [1, 100, 1000, 5000, 20000]),
    ] {
        for n in sizes {
            let pods = if kind == "diverse" {
                bench_pods(n, 42)
            } else {
                generic_pods(n, 42)
            };
            let snap = snapshot(pods);
            let runs = if quick || n >= 20000 {
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
            let peak_mib = (PEAK.load(Ordering::Relaxed) - base) as f64 / (1u64 << 20) as f64;
            let plan = plan.expect("ran at least once");
            let t = median(times);
            println!(
                "| {n} | {kind} | {:.1} ms | {:.0} | {} | {} | {:.2} | {:.2} | {:.3} | {peak_mib:.1} MiB |",
                t.as_secs_f64() * 1000.0,
                n as f64 / t.as_secs_f64(),
                plan.new_claims.len(),
                plan.unschedulable.len(),
                plan.total_price_per_hour,
                plan.cost_lower_bound,
                plan.total_price_per_hour / plan.cost_lower_bound.max(1e-9),
            );
        }
    }
}
