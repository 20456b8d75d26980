//! Consolidation waves after a wide scale-down, in the shape of Karpenter's wide-deployments
//! scenario: 30 Deployments spread across zones (a third also spread across hostnames, a
//! sixth with required hostname anti-affinity) packed by the scheduler, then scaled from
//! 1,000 to 700 pods. Each pass is one call of `decide_all` (what the controller does per
//! pass), its decisions then carried out; reported per pass: commands, nodes removed and
//! decision time, and the passes it takes to converge.
//!
//! `cargo bench -p adze-scheduling --bench waves`

use std::collections::HashMap;
use std::time::Instant;

use adze_scheduling::disruption::{Decision, Input, NodeFacts, Options, decide_all};
use adze_scheduling::fixtures::{ClusterBuilder, Rng, bench_catalog, node_from_claim, pod, pool};
use adze_scheduling::{BoundPod, NodePool, Pod, Requirement, Snapshot, labels, schedule};

const MI: i64 = 1024 * 1024;

fn wide_pool() -> NodePool {
    let types = bench_catalog(400)
        .into_iter()
        .filter(|t| t.capacity.cpu <= 4000)
        .collect();
    let mut p = pool("default", types);
    p.requirements.add(Requirement::single(
        labels::CAPACITY_TYPE,
        labels::CAPACITY_TYPE_ON_DEMAND,
    ));
    p
}

/// `replicas` pods of each of the 30 Deployments.
fn deployments(replicas: &[usize]) -> Vec<Pod> {
    let cpus = [100, 250, 500, 750, 1000];
    let mems = [128 * MI, 256 * MI, 512 * MI, 1024 * MI];
    let mut out = Vec::new();
    for (d, &n) in replicas.iter().enumerate() {
        let app = format!("wide-{d:02}");
        for i in 0..n {
            let mut b = pod(&format!("{app}-{i:03}"))
                .cpu(cpus[d % cpus.len()])
                .mem(mems[(d / 5) % mems.len()])
                .label("app", &app)
                .spread(labels::ZONE, 1, true, &app);
            if d % 3 == 1 {
                b = b.spread(labels::HOSTNAME, 1, true, &app);
            }
            if d % 6 == 2 {
                b = b.anti_affinity(labels::HOSTNAME, &app);
            }
            out.push(b.build());
        }
    }
    out
}

/// The cluster after the scale-down: 1,000 pods packed in batches (as they arrive), then
/// 300 removed, spread over the Deployments in proportion.
fn scaled_down(seed: u64) -> Input {
    let np = wide_pool();
    let mut rng = Rng::new(seed);
    let replicas: Vec<usize> = (0..30).map(|d| 30 + (d * 7) % 8).collect();
    let total: usize = replicas.iter().sum();
    let pods = deployments(&replicas);
    let mut input = ClusterBuilder::new(np.clone()).build();
    // In batches of 20, as the pods of a rollout come in, onto the cluster so far.
    let mut order: Vec<usize> = (0..pods.len()).collect();
    for i in (1..order.len()).rev() {
        order.swap(i, rng.below(i as u64 + 1) as usize);
    }
    let by_key: HashMap<String, &Pod> = pods.iter().map(|p| (p.key(), p)).collect();
    for (batch, chunk) in order.chunks(20).enumerate() {
        let snap = Snapshot {
            pending: chunk.iter().map(|&i| pods[i].clone()).collect(),
            nodes: input.snapshot.nodes.clone(),
            bound: input.snapshot.bound.clone(),
            nodepools: vec![np.clone()],
            ..Default::default()
        };
        let plan = schedule(&snap, &Default::default());
        assert!(plan.unschedulable.is_empty(), "{:?}", plan.unschedulable);
        for e in &plan.existing {
            for p in &e.pods {
                input.snapshot.bound.push(BoundPod {
                    node: e.node.clone(),
                    pod: by_key[p].clone(),
                    daemon: false,
                });
            }
        }
        for c in &plan.new_claims {
            // Names are unique within one run only.
            let mut c = c.clone();
            c.name = format!("b{batch:02}-{}", c.name);
            input.snapshot.nodes.push(node_from_claim(&c));
            input.nodes.push(NodeFacts::new(&c.name, 0));
            for p in &c.pods {
                input.snapshot.bound.push(BoundPod {
                    node: c.name.clone(),
                    pod: by_key[p].clone(),
                    daemon: false,
                });
            }
        }
    }
    // Scale every Deployment to 70 %: drop random replicas.
    let keep_total = total * 7 / 10;
    while input.snapshot.bound.len() > keep_total {
        let i = rng.below(input.snapshot.bound.len() as u64) as usize;
        input.snapshot.bound.swap_remove(i);
    }
    input
}

/// Carries a decision out, as the controller does once the command completes.
fn apply(input: &mut Input, d: &Decision) {
    let gone: Vec<&str> = d.node_names();
    input
        .snapshot
        .nodes
        .retain(|n| !gone.contains(&n.name.as_str()));
    input.nodes.retain(|f| !gone.contains(&f.name.as_str()));
    for c in &d.plan.new_claims {
        input.snapshot.nodes.push(node_from_claim(c));
        input.nodes.push(NodeFacts::new(&c.name, 0));
    }
    let to = d.plan.placements();
    for b in &mut input.snapshot.bound {
        if let Some(n) = to.get(b.pod.key().as_str()) {
            b.node = n.to_string();
        }
    }
}

fn cost(input: &Input) -> f64 {
    input.snapshot.nodes.iter().filter_map(|n| n.price).sum()
}

fn main() {
    let options = Options::default();
    let mut input = scaled_down(11);
    let nodes_before = input.snapshot.nodes.len();
    let before = cost(&input);
    println!(
        "{} nodes, {} pods after the scale-down, ${before:.2}/h",
        nodes_before,
        input.snapshot.bound.len()
    );
    println!("| pass | commands | nodes removed | replacements | decision time | nodes after |");
    println!("|---:|---:|---:|---:|---:|---:|");
    let (mut passes, mut total_ms, mut commands) = (0, 0.0, 0);
    loop {
        let t = Instant::now();
        let all = decide_all(&input, &options, true, 100);
        let ms = t.elapsed().as_secs_f64() * 1000.0;
        if all.is_empty() {
            break;
        }
        passes += 1;
        total_ms += ms;
        commands += all.len();
        let removed: usize = all.iter().map(|d| d.nodes.len()).sum();
        let launched: usize = all.iter().map(|d| d.plan.new_claims.len()).sum();
        for d in &all {
            apply(&mut input, d);
        }
        println!(
            "| {passes} | {} | {removed} | {launched} | {ms:.0} ms | {} |",
            all.len(),
            input.snapshot.nodes.len()
        );
        assert!(
            passes < 10 * nodes_before,
            "consolidation does not converge"
        );
    }
    println!(
        "converged in {passes} passes, {commands} commands, {nodes_before} → {} nodes, ${before:.2} → ${:.2}/h, {:.1} s deciding",
        input.snapshot.nodes.len(),
        cost(&input),
        total_ms / 1000.0
    );
}
