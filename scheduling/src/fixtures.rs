//! Builders for tests, property tests and benchmarks: small catalogs, pods with
//! constraints, and the generator for the scheduling benchmark's workload. Deterministic:
//! randomness comes from a seeded xorshift, never from the environment.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::instance_type::{InstanceType, Offering};
use crate::labels;
use crate::nodepool::NodePool;
use crate::overhead;
use crate::pod::{AffinityTerm, Namespaces, Pod, TopologySpread};
use crate::requirements::{Requirement, Requirements};
use crate::resources::Resources;

pub const MI: i64 = 1 << 20;
pub const GI: i64 = 1 << 30;
pub const ZONES: [&str; 3] = ["test-1a", "test-1b", "test-1c"];

/// A small, seeded pseudo-random source (xorshift64*).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E3779B97F4A7C15) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545F4914F6CDD1D)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

/// An instance type with the given shape, offered in every test zone on demand and as spot
/// (spot at 40% of the price).
pub fn instance_type(
    name: &str,
    cpus: i64,
    memory_gib: i64,
    pods: i64,
    price: f64,
    arch: &str,
) -> InstanceType {
    let capacity = Resources::new(cpus * 1000, memory_gib * GI)
        .with_pods(pods)
        .with_ephemeral(overhead::DEFAULT_ROOT_VOLUME);
    let oh = overhead::default_overhead(cpus as u32, pods, overhead::DEFAULT_ROOT_VOLUME);
    let family = name.split('.').next().unwrap_or(name).to_string();
    let l = BTreeMap::from([
        (labels::ARCH.to_string(), arch.to_string()),
        (labels::OS.to_string(), "linux".to_string()),
        (labels::INSTANCE_FAMILY.to_string(), family),
        (labels::INSTANCE_CPU.to_string(), cpus.to_string()),
    ]);
    InstanceType::new(name, capacity, oh, l, offerings(price))
}

pub fn offerings(price: f64) -> Vec<Offering> {
    ZONES
        .iter()
        .flat_map(|z| {
            [
                Offering {
                    zone: z.to_string(),
                    zone_id: None,
                    capacity_type: labels::CAPACITY_TYPE_ON_DEMAND.to_string(),
                    price,
                    available: true,
                    reservation: None,
                },
                Offering {
                    zone: z.to_string(),
                    zone_id: None,
                    capacity_type: labels::CAPACITY_TYPE_SPOT.to_string(),
                    price: price * 0.4,
                    available: true,
                    reservation: None,
                },
            ]
        })
        .collect()
}

/// A ladder of general-purpose types in three families and two architectures, priced
/// linearly ($0.05 per vCPU-hour plus $0.005 per GiB-hour).
pub fn small_catalog() -> Vec<Arc<InstanceType>> {
    let mut out = Vec::new();
    for (fam, gib_per_cpu, arch) in [
        ("c", 2, "amd64"),
        ("m", 4, "amd64"),
        ("r", 8, "amd64"),
        ("mg", 4, "arm64"),
    ] {
        for cpus in [2, 4, 8, 16, 32] {
            let mem = cpus * gib_per_cpu;
            let price = 0.05 * cpus as f64 + 0.005 * mem as f64;
            let pods = if cpus <= 4 { 58 } else { 234 };
            out.push(Arc::new(instance_type(
                &format!("{fam}.{cpus}x"),
                cpus,
                mem,
                pods,
                price,
                arch,
            )));
        }
    }
    out
}

/// The benchmark's catalog: `n` types over four memory ratios and sizes from 1 to
/// `n / 4` vCPUs, priced linearly with ±5% deterministic noise, as synthetic catalogs in
/// other autoscalers' scheduling benchmarks are shaped.
pub fn bench_catalog(n: usize) -> Vec<Arc<InstanceType>> {
    let mut rng = Rng::new(7);
    let ratios = [1, 2, 4, 8];
    (0..n)
        .map(|i| {
            let ratio = ratios[i % ratios.len()];
            let cpus = (i / ratios.len() + 1) as i64;
            let mem = cpus * ratio;
            let noise = 0.95 + (rng.below(1000) as f64) / 10_000.0;
            let price = (0.04 * cpus as f64 + 0.005 * mem as f64) * noise;
            let pods = (cpus * 16).clamp(8, 737);
            Arc::new(instance_type(
                &format!("fake-{ratio}-{cpus}"),
                cpus,
                mem,
                pods,
                price,
                "amd64",
            ))
        })
        .collect()
}

pub fn pool(name: &str, types: Vec<Arc<InstanceType>>) -> NodePool {
    NodePool::new(name, types)
}

/// Pod builder.
#[derive(Debug, Clone)]
pub struct PodBuilder(Pod);

pub fn pod(name: &str) -> PodBuilder {
    PodBuilder(Pod::new("default", name, Resources::new(100, 128 * MI)))
}

impl PodBuilder {
    pub fn ns(mut self, ns: &str) -> Self {
        self.0.namespace = ns.to_string();
        self
    }
    pub fn cpu(mut self, milli: i64) -> Self {
        self.0.requests.cpu = milli;
        self
    }
    pub fn mem(mut self, bytes: i64) -> Self {
        self.0.requests.memory = bytes;
        self
    }
    pub fn gpu(mut self, n: i64) -> Self {
        self.0.requests.set(crate::resources::GPU_NVIDIA, n);
        self
    }
    pub fn label(mut self, k: &str, v: &str) -> Self {
        self.0.labels.insert(k.to_string(), v.to_string());
        self
    }
    pub fn require(mut self, r: Requirement) -> Self {
        for t in &mut self.0.node_requirements {
            t.add(r.clone());
        }
        self
    }
    /// Replaces the required node-affinity terms (ORed).
    pub fn terms(mut self, terms: Vec<Requirements>) -> Self {
        self.0.node_requirements = terms;
        self
    }
    pub fn prefer(mut self, weight: i32, r: Requirement) -> Self {
        self.0.preferred_node.push(crate::pod::Weighted {
            weight,
            term: Requirements::new().with(r),
        });
        self
    }
    pub fn tolerate(mut self, t: crate::taints::Toleration) -> Self {
        self.0.tolerations.push(t);
        self
    }
    pub fn spread(mut self, key: &str, max_skew: u32, hard: bool, app: &str) -> Self {
        self.0.spread.push(TopologySpread {
            max_skew,
            topology_key: key.to_string(),
            hard,
            selector: selector("app", app),
            min_domains: None,
            honor_node_affinity: true,
            honor_taints: false,
        });
        self
    }
    pub fn affinity(mut self, key: &str, app: &str) -> Self {
        self.0.affinity.push(term(key, app));
        self
    }
    pub fn anti_affinity(mut self, key: &str, app: &str) -> Self {
        self.0.anti_affinity.push(term(key, app));
        self
    }
    pub fn host_port(mut self, port: u16) -> Self {
        self.0.host_ports.push(crate::pod::HostPort {
            port,
            protocol: "TCP".to_string(),
            host_ip: String::new(),
        });
        self
    }
    pub fn priority(mut self, p: i32) -> Self {
        self.0.priority = p;
        self
    }
    pub fn build(self) -> Pod {
        self.0
    }
}

pub fn selector(k: &str, v: &str) -> Requirements {
    Requirements::new().with(Requirement::single(k, v))
}

pub fn term(key: &str, app: &str) -> AffinityTerm {
    AffinityTerm {
        selector: selector("app", app),
        namespaces: Namespaces::Only(["default".to_string()].into()),
        topology_key: key.to_string(),
    }
}

/// The benchmark workload: `count` pods split evenly into six kinds — generic,
/// zone-spread, hostname-spread, hostname self-affinity, zone self-affinity and hostname
/// self-anti-affinity — with CPU from {100m, 250m, 500m, 1, 1.5} and memory from 100Mi to
/// 4Gi. Constraint groups are sized so that every pod can be placed.
pub fn bench_pods(count: usize, seed: u64) -> Vec<Pod> {
    let mut rng = Rng::new(seed);
    let cpus = [100, 250, 500, 1000, 1500];
    let mems = [100 * MI, 256 * MI, 512 * MI, GI, 2 * GI, 4 * GI];
    let per_kind = count.div_ceil(6).max(1);
    // Affinity groups of about 8 pods, so a hostname-affine group fits on one node.
    let affinity_groups = per_kind.div_ceil(8).max(1) as u64;
    let spread_groups = 7u64;
    (0..count)
        .map(|i| {
            let kind = i % 6;
            let b = pod(&format!("p-{i:06}"))
                .cpu(*rng.pick(&cpus))
                .mem(*rng.pick(&mems));
            let b = match kind {
                0 => b.label("app", "generic"),
                1 => {
                    let app = format!("zs-{}", rng.below(spread_groups));
                    b.label("app", &app).spread(labels::ZONE, 1, true, &app)
                }
                2 => {
                    let app = format!("hs-{}", rng.below(spread_groups));
                    b.label("app", &app).spread(labels::HOSTNAME, 1, true, &app)
                }
                3 => {
                    let app = format!("ha-{}", rng.below(affinity_groups));
                    b.label("app", &app).affinity(labels::HOSTNAME, &app)
                }
                4 => {
                    let app = format!("za-{}", rng.below(affinity_groups));
                    b.label("app", &app).affinity(labels::ZONE, &app)
                }
                _ => {
                    let app = format!("aa-{}", rng.below(spread_groups));
                    b.label("app", &app).anti_affinity(labels::HOSTNAME, &app)
                }
            };
            b.build()
        })
        .collect()
}

/// Generic pods only (the cost-quality case).
pub fn generic_pods(count: usize, seed: u64) -> Vec<Pod> {
    let mut rng = Rng::new(seed);
    let cpus = [100, 250, 500, 1000, 1500];
    let mems = [100 * MI, 256 * MI, 512 * MI, GI, 2 * GI, 4 * GI];
    (0..count)
        .map(|i| {
            pod(&format!("g-{i:06}"))
                .cpu(*rng.pick(&cpus))
                .mem(*rng.pick(&mems))
                .build()
        })
        .collect()
}

/// A registered node made from a plan's new claim (as if it launched as planned), for
/// disruption tests and benchmarks: its labels, allocatable, capacity and price.
pub fn node_from_claim(claim: &crate::plan::NewClaim) -> crate::node::ExistingNode {
    crate::node::ExistingNode {
        in_flight: false,
        ..crate::node::ExistingNode::planned(claim)
    }
}

/// A registered node of instance type `it` in `pool`, for disruption tests.
pub fn node_of_type(
    name: &str,
    it: &InstanceType,
    pool: &str,
    zone: &str,
    capacity_type: &str,
) -> crate::node::ExistingNode {
    let mut l: BTreeMap<String, String> = BTreeMap::new();
    for r in it.requirements.iter() {
        if let Some(v) = r.single_value() {
            l.insert(r.key.clone(), v.to_string());
        }
    }
    l.insert(labels::CAPACITY_TYPE.to_string(), capacity_type.to_string());
    l.insert(labels::ZONE.to_string(), zone.to_string());
    l.insert(labels::HOSTNAME.to_string(), name.to_string());
    l.insert(labels::NODEPOOL.to_string(), pool.to_string());
    let price = it
        .offerings
        .iter()
        .find(|o| o.zone == zone && o.capacity_type == capacity_type)
        .map(|o| o.price);
    crate::node::ExistingNode {
        name: name.to_string(),
        requirements: Requirements::from_labels(&l),
        taints: Vec::new(),
        allocatable: it.allocatable().clone(),
        nodepool: Some(pool.to_string()),
        capacity: it.capacity.clone(),
        in_flight: false,
        unschedulable: false,
        price,
        volume_limits: Default::default(),
    }
}

/// Builds a [`crate::disruption::Input`]: one NodePool over a catalog, nodes by type name,
/// pods bound to them, facts adjusted per node or pod.
#[derive(Debug, Clone)]
pub struct ClusterBuilder {
    input: crate::disruption::Input,
}

impl ClusterBuilder {
    /// A cluster with `pool` and its policy (Karpenter defaults, budgets unlimited), at
    /// `now` = 1,000,000 s with every node created at 0.
    pub fn new(pool: NodePool) -> ClusterBuilder {
        let mut policy = crate::disruption::PoolPolicy::new(&pool.name);
        policy.budgets.clear();
        ClusterBuilder {
            input: crate::disruption::Input {
                snapshot: crate::scheduler::Snapshot {
                    nodepools: vec![pool],
                    ..Default::default()
                },
                policies: vec![policy],
                now: 1_000_000,
                ..Default::default()
            },
        }
    }

    /// Adds a node of the first pool's type `type_name`, on demand unless `spot`.
    pub fn node(mut self, name: &str, type_name: &str, zone: &str, spot: bool) -> Self {
        let pool = &self.input.snapshot.nodepools[0];
        let it = pool
            .instance_types
            .iter()
            .find(|t| t.name == type_name)
            .unwrap_or_else(|| panic!("no instance type {type_name} in the catalog"));
        let ct = if spot {
            labels::CAPACITY_TYPE_SPOT
        } else {
            labels::CAPACITY_TYPE_ON_DEMAND
        };
        let node = node_of_type(name, it, &pool.name, zone, ct);
        self.input.snapshot.nodes.push(node);
        self.input
            .nodes
            .push(crate::disruption::NodeFacts::new(name, 0));
        self
    }

    pub fn pod(mut self, node: &str, pod: Pod) -> Self {
        self.input.snapshot.bound.push(crate::node::BoundPod {
            node: node.to_string(),
            pod,
            daemon: false,
        });
        self
    }

    pub fn daemon_pod(mut self, node: &str, pod: Pod) -> Self {
        self.input.snapshot.bound.push(crate::node::BoundPod {
            node: node.to_string(),
            pod,
            daemon: true,
        });
        self
    }

    /// Adds a DaemonSet (its pod template) to the cluster: counted on new nodes, and on
    /// existing ones only once [`crate::late_daemons::charge`] puts it there.
    pub fn daemonset(mut self, template: Pod) -> Self {
        self.input.snapshot.daemonsets.push(template);
        self
    }

    pub fn facts(mut self, node: &str, f: impl FnOnce(&mut crate::disruption::NodeFacts)) -> Self {
        let facts = self
            .input
            .nodes
            .iter_mut()
            .find(|n| n.name == node)
            .unwrap_or_else(|| panic!("no node {node}"));
        f(facts);
        self
    }

    pub fn policy(mut self, f: impl FnOnce(&mut crate::disruption::PoolPolicy)) -> Self {
        f(&mut self.input.policies[0]);
        self
    }

    /// Marks pod "default/`name`" do-not-disrupt.
    pub fn do_not_disrupt_pod(mut self, name: &str) -> Self {
        self.pod_facts(name).do_not_disrupt = true;
        self
    }

    /// Marks pod "default/`name`" do-not-disrupt until `until` (the duration form).
    pub fn do_not_disrupt_pod_until(mut self, name: &str, until: i64) -> Self {
        self.pod_facts(name).do_not_disrupt_until = Some(until);
        self
    }

    /// Puts pod "default/`name`" under PDB `pdb`.
    pub fn pdb_pod(mut self, name: &str, pdb: &str) -> Self {
        self.pod_facts(name).pdbs.push(pdb.to_string());
        self
    }

    pub fn pdb(mut self, name: &str, disruptions_allowed: u32) -> Self {
        self.input.pdbs.push(crate::disruption::Pdb {
            name: name.to_string(),
            disruptions_allowed,
        });
        self
    }

    pub fn now(mut self, now: i64) -> Self {
        self.input.now = now;
        self
    }

    /// An ARC zonal shift moves the cluster away from `zone` (see
    /// [`crate::disruption::Input::zones_away`]).
    pub fn zone_away(mut self, zone: &str) -> Self {
        self.input.zones_away.insert(zone.to_string());
        self
    }

    /// Adds a CapacityBuffer placeholder pod (see [`crate::disruption::Input::buffer`]).
    pub fn buffer_pod(mut self, pod: Pod) -> Self {
        self.input.buffer.push(pod);
        self
    }

    fn pod_facts(&mut self, name: &str) -> &mut crate::disruption::PodFacts {
        let key = format!("default/{name}");
        if let Some(i) = self.input.pods.iter().position(|p| p.pod == key) {
            return &mut self.input.pods[i];
        }
        self.input.pods.push(crate::disruption::PodFacts {
            pod: key,
            do_not_disrupt: false,
            do_not_disrupt_until: None,
            pdbs: Vec::new(),
        });
        self.input.pods.last_mut().expect("just pushed")
    }

    pub fn build(self) -> crate::disruption::Input {
        self.input
    }
}
