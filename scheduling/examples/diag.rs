use adze_scheduling::fixtures::{bench_catalog, bench_pods, pool};
use adze_scheduling::{Options, Snapshot, schedule};
fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .map(|s| s.parse().unwrap())
        .unwrap_or(1000);
    let snap = Snapshot {
        pending: bench_pods(n, 42),
        nodepools: vec![pool("default", bench_catalog(400))],
        ..Default::default()
    };
    let plan = schedule(&snap, &Options::default());
    let mut reasons = std::collections::BTreeMap::new();
    for u in &plan.unschedulable {
        let kind = snap
            .pending
            .iter()
            .find(|p| p.key() == u.pod)
            .unwrap()
            .labels["app"]
            .clone();
        *reasons
            .entry((
                kind.split('-').next().unwrap().to_string(),
                u.reason.clone(),
            ))
            .or_insert(0) += 1;
    }
    for (k, v) in reasons.iter().take(20) {
        println!("{v} {k:?}");
    }
    for c in plan.new_claims.iter().take(5) {
        println!(
            "{} {} {} pods={} opts={}",
            c.name,
            c.instance_type,
            c.zone,
            c.pods.len(),
            c.instance_type_options.len()
        );
    }
}
