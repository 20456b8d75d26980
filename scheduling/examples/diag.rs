//! Runs one scheduling benchmark case, for profiling: `cargo run --release --example diag -- 20000`.
use adze_scheduling::fixtures::{bench_catalog, bench_pods, generic_pods, pool};
use adze_scheduling::{Options, Snapshot, schedule};

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(20000);
    let snap = Snapshot {
        pending: if std::env::args().any(|a| a == "generic") {
            generic_pods(n, 42)
        } else {
            bench_pods(n, 42)
        },
        nodepools: vec![pool("default", bench_catalog(400))],
        ..Default::default()
    };
    let t = std::time::Instant::now();
    let plan = schedule(&snap, &Options::default());
    println!(
        "{n} pods: {} claims, {} unschedulable, {:?}",
        plan.new_claims.len(),
        plan.unschedulable.len(),
        t.elapsed()
    );
}
