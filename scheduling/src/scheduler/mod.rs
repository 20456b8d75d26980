//! Placement of pending pods: onto existing nodes first, then onto in-flight and new
//! NodeClaims, then onto a new NodeClaim from the highest-weight NodePool that allows the
//! pod. Pods go largest first; each NodeClaim keeps every instance type that still fits its
//! pods, so the cloud can pick the cheapest available one at launch.
//!
//! Deterministic: the same snapshot always gives the same plan (no hashing order, no clock,
//! no randomness reaches the output).

mod claim;
mod daemons;
pub mod explain;
mod state;
mod topology_fit;
pub mod variant;

use crate::fast_hash::FastMap;

use crate::node::{BoundPod, ExistingNode};
use crate::nodepool::NodePool;
use crate::plan::{ExistingPlacement, Plan, Unschedulable};
use crate::pod::Pod;
use crate::requirements::Requirements;
use crate::taints::Effect;

pub use explain::explain;
pub use state::Solver;

/// Whether a NodePool with requirements `reqs` may launch `it` (labels it decides, and an
/// available offering in an allowed zone and capacity type).
pub fn instance_type_allowed(it: &crate::InstanceType, reqs: &Requirements) -> bool {
    state::type_compatible(it, reqs, None)
}

/// The DaemonSet overhead a new node of each of `types` from `pool` carries, as placement
/// charges it (per type: a DaemonSet may select by size, family, arch or GPU).
pub fn daemon_overheads(
    pool: &NodePool,
    types: &[&crate::InstanceType],
    daemonsets: &[Pod],
) -> Vec<crate::Resources> {
    let daemons = daemons::Daemons::new(daemonsets);
    let on_pool = daemons.for_pool(pool, &pool.node_requirements());
    types
        .iter()
        .map(|it| daemons.overhead(&on_pool, it))
        .collect()
}

/// Everything placement needs to know, as plain data.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// Pods to place.
    pub pending: Vec<Pod>,
    /// Registered nodes and in-flight NodeClaims.
    pub nodes: Vec<ExistingNode>,
    /// Pods already on `nodes` (running, or nominated to an in-flight claim).
    pub bound: Vec<BoundPod>,
    pub nodepools: Vec<NodePool>,
    /// One pod template per DaemonSet: the overhead every new node must carry.
    pub daemonsets: Vec<Pod>,
    /// Nodes on their way out (a disruption's candidates): they take no pods and count in no
    /// topology domain, but hold their pool's limits until they are gone, so replacements
    /// launched beside them count on top.
    pub leaving: Vec<ExistingNode>,
}

#[derive(Debug, Clone)]
pub struct Options {
    /// Instance types kept per NodeClaim, cheapest first (minValues may keep more).
    pub max_instance_types: usize,
    /// Names new NodeClaims must not take (existing NodeClaims and nodes).
    pub reserved_names: Vec<String>,
    /// Mixed into new NodeClaim names. Adapters pass a fresh random value per run so a
    /// deleted claim's name is not handed to its successor (their events and metrics would
    /// mix); tests keep the default and get the same names every run.
    pub name_seed: u64,
    /// Whether pods' preferences are honoured (and relaxed one by one) or ignored.
    pub preference_policy: PreferencePolicy,
    /// What happens when a NodePool's `minValues` cannot be met.
    pub min_values_policy: MinValuesPolicy,
    /// Cluster-wide limits: resource name (or [`crate::nodepool::NODES_LIMIT`]) → the most
    /// that all NodePool-managed nodes and in-flight claims together may hold, on top of each
    /// pool's own limits. Empty: no cluster-wide cap.
    pub cluster_limits: std::collections::BTreeMap<String, i64>,
}

/// Karpenter's `--preference-policy`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum PreferencePolicy {
    /// Preferred node and pod (anti-)affinity, `ScheduleAnyway` spread and avoiding
    /// PreferNoSchedule taints are honoured as if required, then dropped one at a time.
    #[default]
    Respect,
    /// Only required constraints count: fewer, fuller nodes where preferences would spread.
    Ignore,
}

/// Karpenter's `--min-values-policy`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum MinValuesPolicy {
    /// A pool that cannot keep `minValues` distinct values launches nothing for the pod.
    #[default]
    Strict,
    /// `minValues` is lowered to what can be kept, before any lower-weight pool is tried;
    /// the NodeClaim carries the lowered value.
    BestEffort,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            max_instance_types: 60,
            reserved_names: Vec::new(),
            name_seed: 0,
            preference_policy: PreferencePolicy::Respect,
            min_values_policy: MinValuesPolicy::Strict,
            cluster_limits: std::collections::BTreeMap::new(),
        }
    }
}

/// Runs placement and returns the plan. The cost lower bound is filled in too.
pub fn schedule(snapshot: &Snapshot, options: &Options) -> Plan {
    let mut solver = Solver::new(snapshot, options);
    plan_with(&mut solver, snapshot)
}

/// [`schedule`] on a solver already made (one [`explain::explain`] watches).
fn plan_with(solver: &mut Solver, snapshot: &Snapshot) -> Plan {
    let mut failures = solver.place_all();
    let (new_claims, unlaunched) = solver.finish_claims();
    failures.extend(unlaunched);
    let mut plan = Plan {
        new_claims,
        ..Default::default()
    };
    plan.existing = solver
        .existing_placements()
        .into_iter()
        .map(|(node, in_flight, pods)| ExistingPlacement {
            node,
            in_flight,
            pods,
        })
        .collect();
    plan.unschedulable = failures
        .into_iter()
        .map(|(pod, reason)| Unschedulable { pod, reason })
        .collect();
    plan.total_price_per_hour = plan
        .new_claims
        .iter()
        .fold(0.0, |acc, c| acc + c.price_per_hour);
    plan.cost_lower_bound = crate::lower_bound::for_plan(snapshot, &plan);
    plan
}

/// Whether any taint anywhere is PreferNoSchedule: only then is tolerating them a rung of
/// the relaxation ladder.
fn any_prefer_no_schedule(snapshot: &Snapshot) -> bool {
    snapshot
        .nodepools
        .iter()
        .flat_map(|p| p.taints.iter())
        .chain(snapshot.nodes.iter().flat_map(|n| n.taints.iter()))
        .any(|t| t.effect == Effect::PreferNoSchedule)
}

/// Pods that share every scheduling-relevant field share one group, so per-constraint work
/// (variants, pool compatibility, topology terms) happens once per group. A pod's signature
/// is every field but name, requests and priority, borrowed (not a copy of each pod).
#[derive(PartialEq, Eq, Hash)]
struct Signature<'p> {
    namespace: &'p str,
    labels: &'p std::collections::BTreeMap<String, String>,
    node_requirements: &'p [Requirements],
    preferred_node: &'p [crate::pod::Weighted<Requirements>],
    tolerations: &'p [crate::taints::Toleration],
    spread: &'p [crate::pod::TopologySpread],
    affinity: &'p [crate::pod::AffinityTerm],
    anti_affinity: &'p [crate::pod::AffinityTerm],
    preferred_affinity: &'p [crate::pod::Weighted<crate::pod::AffinityTerm>],
    preferred_anti_affinity: &'p [crate::pod::Weighted<crate::pod::AffinityTerm>],
    host_ports: &'p [crate::pod::HostPort],
}

fn signature(pod: &Pod) -> Signature<'_> {
    // Destructured in full, so a new field of Pod has to be placed here or left out here.
    let Pod {
        namespace,
        name: _,
        labels,
        requests: _,
        node_requirements,
        preferred_node,
        tolerations,
        spread,
        // Only decides whether defaults were added to `spread`, which is compared.
        spread_declared: _,
        affinity,
        anti_affinity,
        preferred_affinity,
        preferred_anti_affinity,
        host_ports,
        priority: _,
        // Checked per pod and node, like requests: pods sharing everything else share a group.
        volumes: _,
    } = pod;
    Signature {
        namespace,
        labels,
        node_requirements,
        preferred_node,
        tolerations,
        spread,
        affinity,
        anti_affinity,
        preferred_affinity,
        preferred_anti_affinity,
        host_ports,
    }
}

fn group_pods(pods: &[Pod]) -> (Vec<usize>, Vec<usize>) {
    let mut index: FastMap<Signature, usize> = FastMap::default();
    let mut reps = Vec::new();
    let group_of = pods
        .iter()
        .enumerate()
        .map(|(i, p)| {
            *index.entry(signature(p)).or_insert_with(|| {
                reps.push(i);
                reps.len() - 1
            })
        })
        .collect();
    (group_of, reps)
}

/// The order placement considers pods in. Higher priority first; within a priority, large
/// before small, where size is a pod's dominant share (the largest fraction of the batch's
/// total demand it asks for in CPU or memory). CPU-heavy and memory-heavy pods are then
/// interleaved so the running mix stays balanced: claims fill with both kinds and end up
/// the shape of an efficient instance type, instead of one resource filling while the
/// other idles. Ties go by name, so the order is deterministic.
fn placement_order(pods: &[Pod]) -> Vec<usize> {
    let mut total = crate::resources::Resources::default();
    for p in pods {
        total.add(&p.requests);
    }
    let frac = |v: i64, t: i64| if t > 0 { v as f64 / t as f64 } else { 0.0 };
    let shares: Vec<(f64, f64)> = pods
        .iter()
        .map(|p| {
            (
                frac(p.requests.cpu, total.cpu),
                frac(p.requests.memory, total.memory),
            )
        })
        .collect();
    // Largest first: dominant share, then CPU, then memory, each as an integer that orders
    // descending (`!` reverses an i64's order; the share's bits ordered as `f64::total_cmp`
    // orders it), read from one array instead of from each pod.
    let size_key: Vec<[i64; 3]> = pods
        .iter()
        .zip(&shares)
        .map(|(p, s)| {
            [
                !total_order_bits(s.0.max(s.1)),
                !p.requests.cpu,
                !p.requests.memory,
            ]
        })
        .collect();
    // Pods of one size are many (a Deployment's replicas): their ties go by namespace,
    // name and index, ranked once here instead of compared as strings in every tie.
    let mut by_name: Vec<usize> = (0..pods.len()).collect();
    by_name.sort_unstable_by(|&a, &b| {
        (&pods[a].namespace, &pods[a].name, a).cmp(&(&pods[b].namespace, &pods[b].name, b))
    });
    let mut name_rank = vec![0u32; pods.len()];
    for (rank, &i) in by_name.iter().enumerate() {
        name_rank[i] = rank as u32;
    }
    // The extended resources between size and name. The rank last makes every key
    // distinct, so the unstable sort below gives the stable sort's order.
    let by_size = |a: &usize, b: &usize| {
        size_key[*a]
            .cmp(&size_key[*b])
            .then_with(|| pods[*b].requests.extended.cmp(&pods[*a].requests.extended))
            .then(name_rank[*a].cmp(&name_rank[*b]))
    };
    let mut priorities: Vec<i32> = pods.iter().map(|p| p.priority).collect();
    priorities.sort_unstable_by(|a, b| b.cmp(a));
    priorities.dedup();
    let mut order = Vec::with_capacity(pods.len());
    for prio in priorities {
        let (mut cpu_heavy, mut mem_heavy): (Vec<usize>, Vec<usize>) = (0..pods.len())
            .filter(|&i| pods[i].priority == prio)
            .partition(|&i| shares[i].0 >= shares[i].1);
        cpu_heavy.sort_unstable_by(by_size);
        mem_heavy.sort_unstable_by(by_size);
        let (mut a, mut b) = (0, 0);
        let mut lean = 0.0f64; // Σ cpu share − Σ memory share of pods taken so far
        while a < cpu_heavy.len() || b < mem_heavy.len() {
            let take_cpu = b >= mem_heavy.len() || (a < cpu_heavy.len() && lean <= 0.0);
            let i = if take_cpu {
                a += 1;
                cpu_heavy[a - 1]
            } else {
                b += 1;
                mem_heavy[b - 1]
            };
            lean += shares[i].0 - shares[i].1;
            order.push(i);
        }
    }
    order
}

/// `x`'s bits as an integer ordered as [`f64::total_cmp`] orders the floats.
fn total_order_bits(x: f64) -> i64 {
    let bits = x.to_bits() as i64;
    bits ^ ((((bits >> 63) as u64) >> 1) as i64)
}

/// A short suffix for NodeClaim names, like the random ones Kubernetes' generateName makes,
/// but a function of pool, seed and sequence number, so placement stays deterministic.
fn name_suffix(pool: &str, seed: u64, seq: u64) -> String {
    let mut h: u64 = 0xcbf29ce484222325;
    for b in pool
        .bytes()
        .chain(seed.to_le_bytes())
        .chain(seq.to_le_bytes())
    {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x100000001b3);
    }
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    (0..5)
        .map(|i| ALPHABET[((h >> (i * 8)) % ALPHABET.len() as u64) as usize] as char)
        .collect()
}

/// Requirements for a pod on a given node-affinity term, with its node selector already
/// merged (conversion does that); exposed for adapters that check a single node.
pub fn node_fits_pod(node: &Requirements, pod_term: &Requirements) -> bool {
    node.compatible(pod_term, crate::requirements::Undefined::Absent)
}

#[cfg(test)]
mod tests;
