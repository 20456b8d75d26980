//! The disruption benchmark: a fragmented cluster, and how fast and how well consolidation
//! cleans it up.
//!
//! A cluster is packed by the scheduler itself (generic pods onto an on-demand pool of the
//! benchmark catalog's types up to 8 vCPUs, so there are many nodes), then each pod is
//! removed with probability 1/2 (a random scale-down). Reported:
//! * the time of one `decide` call on the fragmented cluster (every node a candidate);
//! * consolidating repeatedly (1,000 nodes), applying each decision, until there is none: decisions,
//!   nodes and $/h before and after, and the final cost against the LP lower bound for the
//!   remaining pods (`lower_bound::lp_bound` over the pool's types).
//!
//! `cargo bench -p adze-scheduling --bench disruption` (add `-- --quick` for 1,000 nodes
//! only).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use adze_scheduling::disruption::{Input, Options, decide};
use adze_scheduling::fixtures::{
    ClusterBuilder, Rng, bench_catalog, generic_pods, node_from_claim, pool,
};
use adze_scheduling::lower_bound::lp_bound;
use adze_scheduling::{BoundPod, NodePool, Requirement, Resources, Snapshot, labels, schedule};

fn bench_pool() -> NodePool {
    let types = bench_catalog(400)
        .into_iter()
        .filter(|t| t.capacity.cpu <= 8000)
        .collect();
    let mut p = pool("default", types);
    p.requirements.add(Requirement::single(
        labels::CAPACITY_TYPE,
        labels::CAPACITY_TYPE_ON_DEMAND,
    ));
    p
}

/// A packed cluster of about `nodes` nodes with half its pods removed.
fn fragmented(nodes: usize, seed: u64) -> Input {
    let np = bench_pool();
    // About 5.6 generic pods per node, as the scheduler packs them onto these types.
    let pods = generic_pods(nodes * 28 / 5, seed);
    let plan = schedule(
        &Snapshot {
            pending: pods.clone(),
            nodepools: vec![np.clone()],
            ..Default::default()
        },
        &Default::default(),
    );
    assert!(plan.unschedulable.is_empty());
    let by_key: HashMap<String, &adze_scheduling::Pod> =
        pods.iter().map(|p| (p.key(), p)).collect();
    let mut input = ClusterBuilder::new(np).build();
    let mut rng = Rng::new(seed ^ 0xfeed);
    for c in &plan.new_claims {
        input.snapshot.nodes.push(node_from_claim(c));
        input
            .nodes
            .push(adze_scheduling::disruption::NodeFacts::new(&c.name, 0));
        for p in &c.pods {
            if rng.below(2) == 0 {
                input.snapshot.bound.push(BoundPod {
                    node: c.name.clone(),
                    pod: by_key[p].clone(),
                    daemon: false,
                });
            }
        }
    }
    input
}

fn cost(input: &Input) -> f64 {
    input.snapshot.nodes.iter().filter_map(|n| n.price).sum()
}

fn bound(input: &Input) -> f64 {
    let np = &input.snapshot.nodepools[0];
    let reqs = np.node_requirements();
    let types: Vec<(Resources, f64)> = np
        .instance_types
        .iter()
        .filter_map(|t| {
            t.cheapest_offering(&reqs)
                .map(|o| (t.allocatable().clone(), o.price))
        })
        .collect();
    let demand = input
        .snapshot
        .bound
        .iter()
        .fold(Resources::default(), |acc, b| acc.plus(&b.pod.requests));
    lp_bound(&demand, &types)
}

/// Carries a decision out on the input, as the controller would once it completes.
fn apply(input: &mut Input, d: &adze_scheduling::disruption::Decision) {
    let gone: Vec<&str> = d.node_names();
    input
        .snapshot
        .nodes
        .retain(|n| !gone.contains(&n.name.as_str()));
    input.nodes.retain(|f| !gone.contains(&f.name.as_str()));
    for c in &d.plan.new_claims {
        input.snapshot.nodes.push(node_from_claim(c));
        input
            .nodes
            .push(adze_scheduling::disruption::NodeFacts::new(&c.name, 0));
    }
    let to = d.plan.placements();
    for b in &mut input.snapshot.bound {
        if let Some(n) = to.get(b.pod.key().as_str()) {
            b.node = n.to_string();
        }
    }
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let options = Options::default();
    let sizes: &[usize] = if quick { &[1000] } else { &[1000, 5000] };
    println!(
        "| nodes | pods left | candidates | consolidation decision | nodes it removes | decisions to converge | total time | $/h before | $/h after | LP bound | after / bound |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for &n in sizes {
        let mut input = fragmented(n, 42);
        let nodes_before = input.snapshot.nodes.len();
        let pods = input.snapshot.bound.len();
        let before = cost(&input);
        // Nodes the scale-down left empty go first (one cheap decision); the figure that
        // matters is the consolidation decision after that.
        let mut decisions = 0;
        if let Some(d) = decide(&input, &options)
            && d.reason == adze_scheduling::disruption::Reason::Empty
        {
            apply(&mut input, &d);
            decisions += 1;
        }
        let candidates = input.snapshot.nodes.len();
        let runs = if n >= 5000 || quick { 1 } else { 3 };
        let mut times = Vec::new();
        let mut first = None;
        for _ in 0..runs {
            let t = Instant::now();
            first = decide(&input, &options);
            times.push(t.elapsed());
        }
        times.sort();
        let first_time = times[times.len() / 2];
        let first_nodes = first.as_ref().map_or(0, |d| d.nodes.len());
        if n > 1000 {
            // Converging a 5,000-node cluster takes minutes of repeated decisions; the
            // decision time is the figure at this size.
            println!(
                "| {nodes_before} | {pods} | {candidates} | {:.0} ms | {first_nodes} | – | – | {before:.2} | – | – | – |",
                first_time.as_secs_f64() * 1000.0,
            );
            continue;
        }
        let mut total = Duration::ZERO;
        let mut next = first;
        while let Some(d) = next {
            apply(&mut input, &d);
            if std::env::var_os("DISRUPTION_BENCH_TRACE").is_some() {
                eprintln!("{} nodes: {}", input.snapshot.nodes.len(), d.message);
            }
            decisions += 1;
            if decisions > 10 * nodes_before {
                panic!("consolidation does not converge");
            }
            let t = Instant::now();
            next = decide(&input, &options);
            total += t.elapsed();
        }
        let after = cost(&input);
        let lb = bound(&input);
        println!(
            "| {nodes_before} | {pods} | {candidates} | {:.0} ms | {first_nodes} | {decisions} (→ {} nodes) | {:.1} s | {before:.2} | {after:.2} | {lb:.2} | {:.3} |",
            first_time.as_secs_f64() * 1000.0,
            input.snapshot.nodes.len(),
            (total + first_time).as_secs_f64(),
            after / lb,
        );
    }
}
