//! Property tests: random small scenarios built from the fixtures, and invariants every plan
//! must keep, checked by an independent checker that reads only the plan and the inputs
//! (it does not call the solver's requirement or resource code).
//!
//! Scenarios: 1–14 pending pods with random cpu/memory (a few larger than any type), an
//! optional arch selector and an optional toleration; three app labels, each with one kind
//! of constraint shared by all its pods (none, zone spread, hostname spread, hostname
//! anti-affinity); 1–2 NodePools over the small catalog with optional taints, cpu limits and
//! a spot-only requirement; 0–3 existing nodes (some cordoned, tainted, in flight or owned by
//! a pool) with random bound pods, some carrying anti-affinity against an app; and an
//! optional DaemonSet.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use adze_scheduling::fixtures::{self, GI, MI, ZONES, pod, pool, small_catalog};
use adze_scheduling::instance_type::InstanceType;
use adze_scheduling::labels;
use adze_scheduling::{
    BoundPod, Effect, ExistingNode, Options, Plan, Pod, Requirement, Requirements, Resources,
    Snapshot, Taint, Toleration, schedule,
};
use proptest::prelude::*;

const APPS: [&str; 3] = ["a", "b", "c"];
const TAINT_KEY: &str = "dedicated";

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Plain,
    /// Hard zone spread with this maxSkew.
    ZoneSpread(u32),
    /// Hard hostname spread with this maxSkew.
    HostSpread(u32),
    /// Required hostname anti-affinity against its own app.
    HostAnti,
    /// Required zone anti-affinity against its own app: at most one per zone.
    ZoneAnti,
}

#[derive(Debug, Clone)]
struct PodSpec {
    cpu: i64,
    mem_mi: i64,
    arch: Option<&'static str>,
    tolerate: bool,
    app: usize,
}

#[derive(Debug, Clone)]
struct PoolSpec {
    weight: i32,
    taint: Option<Effect>,
    cpu_limit: Option<i64>,
    spot_only: bool,
}

#[derive(Debug, Clone)]
struct BoundSpec {
    cpu: i64,
    mem_mi: i64,
    app: Option<usize>,
}

#[derive(Debug, Clone)]
struct NodeSpec {
    cpus: i64,
    zone: usize,
    arch: &'static str,
    pool: Option<usize>,
    taint: bool,
    cordoned: bool,
    in_flight: bool,
    bound: Vec<BoundSpec>,
    /// A bound pod carrying hostname anti-affinity against this app.
    guard: Option<usize>,
}

#[derive(Debug, Clone)]
struct DaemonSpec {
    cpu: i64,
    mem_mi: i64,
    tolerates: bool,
}

#[derive(Debug, Clone)]
struct Scenario {
    kinds: [Kind; 3],
    pods: Vec<PodSpec>,
    pools: Vec<PoolSpec>,
    nodes: Vec<NodeSpec>,
    daemon: Option<DaemonSpec>,
}

// ---------------------------------------------------------------------------------------
// Strategies
// ---------------------------------------------------------------------------------------

fn kind() -> impl Strategy<Value = Kind> {
    prop_oneof![
        3 => Just(Kind::Plain),
        2 => (1u32..=2).prop_map(Kind::ZoneSpread),
        1 => (1u32..=2).prop_map(Kind::HostSpread),
        2 => Just(Kind::HostAnti),
        1 => Just(Kind::ZoneAnti),
    ]
}

fn arch() -> impl Strategy<Value = Option<&'static str>> {
    prop_oneof![3 => Just(None), 1 => Just(Some("amd64")), 1 => Just(Some("arm64"))]
}

fn pod_spec() -> impl Strategy<Value = PodSpec> {
    (
        prop_oneof![10 => 50i64..4000, 1 => 4000i64..40_000],
        prop_oneof![10 => 64i64..8192, 1 => 8192i64..300_000],
        arch(),
        prop::bool::weighted(0.3),
        0usize..3,
    )
        .prop_map(|(cpu, mem_mi, arch, tolerate, app)| PodSpec {
            cpu,
            mem_mi,
            arch,
            tolerate,
            app,
        })
}

fn pool_spec() -> impl Strategy<Value = PoolSpec> {
    (
        0i32..3,
        prop_oneof![
            2 => Just(None),
            1 => Just(Some(Effect::NoSchedule)),
            1 => Just(Some(Effect::PreferNoSchedule)),
        ],
        prop_oneof![2 => Just(None), 1 => (1i64..=24).prop_map(|c| Some(c * 2000))],
        prop::bool::weighted(0.2),
    )
        .prop_map(|(weight, taint, cpu_limit, spot_only)| PoolSpec {
            weight,
            taint,
            cpu_limit,
            spot_only,
        })
}

fn bound_spec() -> impl Strategy<Value = BoundSpec> {
    (
        50i64..2500,
        64i64..6000,
        prop_oneof![1 => Just(None), 2 => (0usize..3).prop_map(Some)],
    )
        .prop_map(|(cpu, mem_mi, app)| BoundSpec { cpu, mem_mi, app })
}

fn node_spec() -> impl Strategy<Value = NodeSpec> {
    (
        prop::sample::select(vec![2i64, 4, 8]),
        0usize..3,
        prop_oneof![3 => Just("amd64"), 1 => Just("arm64")],
        prop_oneof![1 => Just(None), 1 => (0usize..2).prop_map(Some)],
        prop::bool::weighted(0.2),
        prop::bool::weighted(0.15),
        prop::bool::weighted(0.2),
        prop::collection::vec(bound_spec(), 0..4),
        prop_oneof![3 => Just(None), 1 => (0usize..3).prop_map(Some)],
    )
        .prop_map(
            |(cpus, zone, arch, pool, taint, cordoned, in_flight, bound, guard)| NodeSpec {
                cpus,
                zone,
                arch,
                pool,
                taint,
                cordoned,
                in_flight,
                bound,
                guard,
            },
        )
}

fn daemon_spec() -> impl Strategy<Value = Option<DaemonSpec>> {
    prop::option::weighted(
        0.4,
        (50i64..600, 64i64..1024, any::<bool>()).prop_map(|(cpu, mem_mi, tolerates)| DaemonSpec {
            cpu,
            mem_mi,
            tolerates,
        }),
    )
}

fn scenario() -> impl Strategy<Value = Scenario> {
    (
        [kind(), kind(), kind()],
        prop::collection::vec(pod_spec(), 1..15),
        prop::collection::vec(pool_spec(), 1..=2),
        prop::collection::vec(node_spec(), 0..=3),
        daemon_spec(),
    )
        .prop_map(|(kinds, pods, pools, nodes, daemon)| Scenario {
            kinds,
            pods,
            pools,
            nodes,
            daemon,
        })
}

// ---------------------------------------------------------------------------------------
// Building the snapshot
// ---------------------------------------------------------------------------------------

fn pool_name(i: usize) -> String {
    format!("p{i}")
}

fn node_name(i: usize) -> String {
    format!("node-{i}")
}

fn taint(effect: Effect) -> Taint {
    Taint::new(TAINT_KEY, "x", effect)
}

fn with_kind(b: fixtures::PodBuilder, kind: Kind, app: &str) -> fixtures::PodBuilder {
    let b = b.label("app", app);
    match kind {
        Kind::Plain => b,
        Kind::ZoneSpread(s) => b.spread(labels::ZONE, s, true, app),
        Kind::HostSpread(s) => b.spread(labels::HOSTNAME, s, true, app),
        Kind::HostAnti => b.anti_affinity(labels::HOSTNAME, app),
        Kind::ZoneAnti => b.anti_affinity(labels::ZONE, app),
    }
}

fn node_alloc(n: &NodeSpec) -> (i64, i64) {
    (n.cpus * 1000 - 100, n.cpus * 4 * GI - 512 * MI)
}

/// Bound pods that actually go on node `n`: in order, while they fit, at most one per
/// hostname-anti-affine app, none of a zone-anti-affine app (so the start state never
/// violates anti-affinity).
fn bound_on(sc: &Scenario, n: &NodeSpec) -> Vec<BoundSpec> {
    let (mut cpu, mut mem) = node_alloc(n);
    let mut anti_seen = BTreeSet::new();
    let mut out = Vec::new();
    for b in &n.bound {
        if b.cpu > cpu || b.mem_mi * MI > mem {
            continue;
        }
        if let Some(a) = b.app
            && (sc.kinds[a] == Kind::ZoneAnti
                || (sc.kinds[a] == Kind::HostAnti && !anti_seen.insert(a)))
        {
            continue;
        }
        cpu -= b.cpu;
        mem -= b.mem_mi * MI;
        out.push(b.clone());
    }
    out
}

fn node_labels(i: usize, n: &NodeSpec) -> BTreeMap<String, String> {
    let mut l = BTreeMap::from([
        (labels::HOSTNAME.to_string(), node_name(i)),
        (labels::ZONE.to_string(), ZONES[n.zone].to_string()),
        (labels::ARCH.to_string(), n.arch.to_string()),
        (labels::OS.to_string(), "linux".to_string()),
    ]);
    if let Some(p) = n.pool {
        l.insert(labels::NODEPOOL.to_string(), pool_name(p));
    }
    l
}

/// The owning pool of a node, if it names one that exists.
fn node_pool(sc: &Scenario, n: &NodeSpec) -> Option<usize> {
    n.pool.filter(|p| *p < sc.pools.len())
}

fn build(sc: &Scenario) -> Snapshot {
    let pending: Vec<Pod> = sc
        .pods
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let mut b = pod(&format!("pod-{i:02}")).cpu(p.cpu).mem(p.mem_mi * MI);
            if let Some(a) = p.arch {
                b = b.require(Requirement::single(labels::ARCH, a));
            }
            if p.tolerate {
                b = b.tolerate(Toleration::exists(Some(TAINT_KEY), None));
            }
            with_kind(b, sc.kinds[p.app], APPS[p.app]).build()
        })
        .collect();
    let nodepools = sc
        .pools
        .iter()
        .enumerate()
        .map(|(i, ps)| {
            let mut p = pool(&pool_name(i), small_catalog());
            p.weight = ps.weight;
            p.taints = ps.taint.map(taint).into_iter().collect();
            if let Some(l) = ps.cpu_limit {
                p.limits.insert("cpu".to_string(), l);
            }
            if ps.spot_only {
                p.requirements = Requirements::new().with(Requirement::single(
                    labels::CAPACITY_TYPE,
                    labels::CAPACITY_TYPE_SPOT,
                ));
            }
            p
        })
        .collect();
    let mut nodes = Vec::new();
    let mut bound = Vec::new();
    for (i, n) in sc.nodes.iter().enumerate() {
        let l = node_labels(i, n);
        let (cpu, mem) = node_alloc(n);
        nodes.push(ExistingNode {
            name: node_name(i),
            requirements: Requirements::from_labels(&l),
            taints: if n.taint {
                vec![taint(Effect::NoSchedule)]
            } else {
                Vec::new()
            },
            allocatable: Resources::new(cpu, mem)
                .with_pods(110)
                .with_ephemeral(50 * GI),
            nodepool: node_pool(sc, n).map(pool_name),
            capacity: Resources::new(n.cpus * 1000, n.cpus * 4 * GI)
                .with_pods(110)
                .with_ephemeral(50 * GI),
            in_flight: n.in_flight,
            unschedulable: n.cordoned,
            price: None,
            volume_limits: Default::default(),
        });
        for (j, b) in bound_on(sc, n).iter().enumerate() {
            let pb = pod(&format!("bound-{i}-{j}")).cpu(b.cpu).mem(b.mem_mi * MI);
            let p = match b.app {
                Some(a) => with_kind(pb, sc.kinds[a], APPS[a]).build(),
                None => pb.label("app", "bound").build(),
            };
            bound.push(BoundPod {
                node: node_name(i),
                pod: p,
                daemon: false,
            });
        }
        if let Some(a) = n.guard {
            bound.push(BoundPod {
                node: node_name(i),
                pod: pod(&format!("guard-{i}"))
                    .cpu(0)
                    .mem(0)
                    .label("app", "guard")
                    .anti_affinity(labels::HOSTNAME, APPS[a])
                    .build(),
                daemon: false,
            });
        }
    }
    let daemonsets = sc
        .daemon
        .iter()
        .map(|d| {
            let b = pod("ds").cpu(d.cpu).mem(d.mem_mi * MI);
            if d.tolerates {
                b.tolerate(Toleration::exists(Some(TAINT_KEY), None))
                    .build()
            } else {
                b.build()
            }
        })
        .collect();
    Snapshot {
        pending,
        nodes,
        bound,
        nodepools,
        daemonsets,
        leaving: Vec::new(),
    }
}

// ---------------------------------------------------------------------------------------
// The independent checker
// ---------------------------------------------------------------------------------------

/// Requests as plain numbers: (milli-cpu, bytes of memory, pod slots).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Req {
    cpu: i64,
    mem: i64,
    pods: i64,
}

impl Req {
    fn add(&mut self, cpu: i64, mem: i64, pods: i64) {
        self.cpu += cpu;
        self.mem += mem;
        self.pods += pods;
    }
    fn fits(&self, cpu: i64, mem: i64, pods: i64) -> bool {
        self.cpu <= cpu && self.mem <= mem && self.pods <= pods
    }
}

fn catalog() -> BTreeMap<String, Arc<InstanceType>> {
    small_catalog()
        .into_iter()
        .map(|t| (t.name.clone(), t))
        .collect()
}

/// (cpu, memory, pods) a type leaves for pods: capacity minus every part of its overhead.
fn type_room(it: &InstanceType) -> (i64, i64, i64) {
    let o = &it.overhead;
    let cpu =
        it.capacity.cpu - o.kube_reserved.cpu - o.system_reserved.cpu - o.eviction_threshold.cpu;
    let mem = it.capacity.memory
        - o.kube_reserved.memory
        - o.system_reserved.memory
        - o.eviction_threshold.memory;
    (cpu, mem, it.capacity.pods)
}

fn type_arch(it: &InstanceType) -> &'static str {
    // The small catalog's only arm64 family is "mg".
    if it.name.starts_with("mg.") {
        "arm64"
    } else {
        "amd64"
    }
}

/// Whether a pool's taint lets `tolerates` through (PreferNoSchedule always does).
fn admits(taint: Option<Effect>, tolerates: bool) -> bool {
    match taint {
        None | Some(Effect::PreferNoSchedule) => true,
        Some(_) => tolerates,
    }
}

/// DaemonSet overhead on a new node of pool `pi`.
fn daemon_overhead(sc: &Scenario, pi: usize) -> (i64, i64) {
    match &sc.daemon {
        Some(d) if admits(sc.pools[pi].taint, d.tolerates) => (d.cpu, d.mem_mi * MI),
        _ => (0, 0),
    }
}

fn pod_index(key: &str) -> usize {
    key.strip_prefix("default/pod-")
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("unexpected pod key {key}"))
}

/// One place pods end up: an existing node or a new claim, with the app labels of every
/// pod on it (bound and placed) and which of those were placed by this plan.
struct Place {
    name: String,
    zone: String,
    /// Apps of bound pods (index), and of placed pods.
    bound_apps: Vec<usize>,
    placed: Vec<usize>,
    guard: Option<usize>,
}

fn places(sc: &Scenario, plan: &Plan) -> Vec<Place> {
    let mut out = Vec::new();
    for (i, n) in sc.nodes.iter().enumerate() {
        let placed = plan
            .existing
            .iter()
            .filter(|e| e.node == node_name(i))
            .flat_map(|e| e.pods.iter().map(|k| pod_index(k)))
            .collect();
        out.push(Place {
            name: node_name(i),
            zone: ZONES[n.zone].to_string(),
            bound_apps: bound_on(sc, n).iter().filter_map(|b| b.app).collect(),
            placed,
            guard: n.guard,
        });
    }
    for c in &plan.new_claims {
        out.push(Place {
            name: c.name.clone(),
            zone: c.zone.clone(),
            bound_apps: Vec::new(),
            placed: c.pods.iter().map(|k| pod_index(k)).collect(),
            guard: None,
        });
    }
    out
}

/// Invariant 1: nothing is over-committed.
fn check_capacity(sc: &Scenario, plan: &Plan) -> Result<(), TestCaseError> {
    let cat = catalog();
    for c in &plan.new_claims {
        let pi = sc
            .pools
            .iter()
            .enumerate()
            .position(|(i, _)| pool_name(i) == c.nodepool)
            .ok_or_else(|| TestCaseError::fail(format!("claim {} in unknown pool", c.name)))?;
        let mut sum = Req::default();
        for k in &c.pods {
            let p = &sc.pods[pod_index(k)];
            sum.add(p.cpu, p.mem_mi * MI, 1);
        }
        let (dc, dm) = daemon_overhead(sc, pi);
        sum.add(dc, dm, 0);
        prop_assert_eq!(
            (c.requests.cpu, c.requests.memory),
            (sum.cpu, sum.mem),
            "claim {} reports requests that are not its pods plus DaemonSets",
            &c.name
        );
        let chosen = cat
            .get(&c.instance_type)
            .ok_or_else(|| TestCaseError::fail(format!("unknown type {}", c.instance_type)))?;
        let (rc, rm, rp) = type_room(chosen);
        prop_assert!(
            sum.fits(rc, rm, rp),
            "claim {} over-commits its type {}: {:?} > ({rc}, {rm}, {rp})",
            &c.name,
            &c.instance_type,
            sum
        );
        prop_assert_eq!((c.allocatable.cpu, c.allocatable.memory), (rc, rm));
        prop_assert_eq!(&c.instance_type_options[0], &c.instance_type);
        for o in &c.instance_type_options {
            let (rc, rm, rp) = type_room(&cat[o]);
            prop_assert!(
                sum.fits(rc, rm, rp),
                "claim {} lists option {o} that cannot hold {:?}",
                &c.name,
                sum
            );
        }
    }
    for (i, n) in sc.nodes.iter().enumerate() {
        let placed: Vec<usize> = plan
            .existing
            .iter()
            .filter(|e| e.node == node_name(i))
            .flat_map(|e| e.pods.iter().map(|k| pod_index(k)))
            .collect();
        if placed.is_empty() {
            continue;
        }
        let mut sum = Req::default();
        for b in bound_on(sc, n) {
            sum.add(b.cpu, b.mem_mi * MI, 1);
        }
        if n.guard.is_some() {
            sum.add(0, 0, 1);
        }
        for &p in &placed {
            sum.add(sc.pods[p].cpu, sc.pods[p].mem_mi * MI, 1);
        }
        let (ac, am) = node_alloc(n);
        prop_assert!(
            sum.fits(ac, am, 110),
            "{} over-committed: {:?} > ({ac}, {am})",
            node_name(i),
            sum
        );
    }
    Ok(())
}

/// Invariant 2: every placement honours the pod's constraints.
fn check_constraints(sc: &Scenario, plan: &Plan) -> Result<(), TestCaseError> {
    let cat = catalog();
    // Node requirements and taints, on new claims.
    for c in &plan.new_claims {
        let pi = (0..sc.pools.len())
            .find(|&i| pool_name(i) == c.nodepool)
            .unwrap();
        let ps = &sc.pools[pi];
        prop_assert_eq!(c.labels.get(labels::NODEPOOL), Some(&c.nodepool));
        prop_assert_eq!(c.labels.get(labels::ZONE), Some(&c.zone));
        prop_assert_eq!(c.labels.get(labels::HOSTNAME), Some(&c.name));
        prop_assert_eq!(c.labels.get(labels::INSTANCE_TYPE), Some(&c.instance_type));
        prop_assert!(ZONES.contains(&c.zone.as_str()));
        if ps.spot_only {
            prop_assert_eq!(&c.capacity_type, labels::CAPACITY_TYPE_SPOT);
        }
        let claim_taint = c
            .taints
            .iter()
            .find(|t| t.key == TAINT_KEY)
            .map(|t| t.effect);
        prop_assert_eq!(
            claim_taint,
            ps.taint,
            "claim {} carries its pool's taint",
            &c.name
        );
        for k in &c.pods {
            let p = &sc.pods[pod_index(k)];
            if let Some(a) = p.arch {
                prop_assert_eq!(
                    c.labels.get(labels::ARCH).map(String::as_str),
                    Some(a),
                    "{} wants {} but claim {} is labelled otherwise",
                    k,
                    a,
                    &c.name
                );
                for o in &c.instance_type_options {
                    prop_assert_eq!(
                        type_arch(&cat[o]),
                        a,
                        "{} on {} with option {}",
                        k,
                        &c.name,
                        o
                    );
                }
            }
            prop_assert!(
                admits(claim_taint, p.tolerate),
                "{} does not tolerate claim {}'s taint",
                k,
                &c.name
            );
        }
    }
    // On existing nodes.
    for e in &plan.existing {
        let i: usize = e.node.strip_prefix("node-").unwrap().parse().unwrap();
        let n = &sc.nodes[i];
        prop_assert_eq!(e.in_flight, n.in_flight);
        prop_assert!(!n.cordoned, "pods placed on cordoned {}", &e.node);
        for k in &e.pods {
            let p = &sc.pods[pod_index(k)];
            if let Some(a) = p.arch {
                prop_assert_eq!(n.arch, a, "{} wants {} on {}", k, a, &e.node);
            }
            prop_assert!(
                !n.taint || p.tolerate,
                "{} does not tolerate {}",
                k,
                &e.node
            );
        }
    }
    // Topology.
    let places = places(sc, plan);
    for (a, kind) in sc.kinds.iter().enumerate() {
        let placed_here = |pl: &Place| pl.placed.iter().filter(|&&p| sc.pods[p].app == a).count();
        let total_here =
            |pl: &Place| placed_here(pl) + pl.bound_apps.iter().filter(|&&b| b == a).count();
        for pl in &places {
            if placed_here(pl) == 0 {
                continue;
            }
            prop_assert!(
                pl.guard != Some(a),
                "a pod of app {} was placed on {} against a bound pod's anti-affinity",
                APPS[a],
                &pl.name
            );
            match *kind {
                Kind::HostAnti => prop_assert!(
                    total_here(pl) <= 1,
                    "{} pods of anti-affine app {} on {}",
                    total_here(pl),
                    APPS[a],
                    &pl.name
                ),
                Kind::HostSpread(skew) => prop_assert!(
                    total_here(pl) <= skew as usize,
                    "{} pods of app {} on {} with hostname maxSkew {skew}",
                    total_here(pl),
                    APPS[a],
                    &pl.name
                ),
                _ => {}
            }
        }
        if *kind == Kind::ZoneAnti {
            let mut per_zone: BTreeMap<&str, usize> = BTreeMap::new();
            for pl in &places {
                *per_zone.entry(pl.zone.as_str()).or_default() += total_here(pl);
            }
            prop_assert!(
                per_zone.values().all(|&n| n <= 1),
                "zone-anti-affine app {} has {:?}",
                APPS[a],
                per_zone
            );
        }
        if let Kind::ZoneSpread(skew) = *kind {
            // Each placement may raise the largest zone to at most min + maxSkew, so the
            // final spread is at most max(initial spread, maxSkew).
            let mut before: BTreeMap<&str, usize> = ZONES.iter().map(|z| (*z, 0)).collect();
            let mut after = before.clone();
            for pl in &places {
                let b = pl.bound_apps.iter().filter(|&&x| x == a).count();
                *before.get_mut(pl.zone.as_str()).unwrap() += b;
                *after.get_mut(pl.zone.as_str()).unwrap() += b + placed_here(pl);
            }
            let spread =
                |m: &BTreeMap<&str, usize>| m.values().max().unwrap() - m.values().min().unwrap();
            let allowed = spread(&before).max(skew as usize);
            prop_assert!(
                spread(&after) <= allowed,
                "zone counts of app {} went from {:?} to {:?} with maxSkew {skew}",
                APPS[a],
                before,
                after
            );
        }
    }
    Ok(())
}

fn pool_in_use(sc: &Scenario, pi: usize) -> i64 {
    sc.nodes
        .iter()
        .filter(|n| node_pool(sc, n) == Some(pi))
        .map(|n| n.cpus * 1000)
        .sum()
}

/// Invariant 3: NodePool cpu limits hold for the chosen types.
fn check_limits(sc: &Scenario, plan: &Plan) -> Result<(), TestCaseError> {
    let cat = catalog();
    for (pi, ps) in sc.pools.iter().enumerate() {
        let Some(limit) = ps.cpu_limit else { continue };
        let claims: Vec<_> = plan
            .new_claims
            .iter()
            .filter(|c| c.nodepool == pool_name(pi))
            .collect();
        if claims.is_empty() {
            continue;
        }
        let chosen: i64 = claims
            .iter()
            .map(|c| cat[&c.instance_type].capacity.cpu)
            .sum();
        let used = pool_in_use(sc, pi);
        prop_assert!(
            used + chosen <= limit,
            "pool {} limit {limit}: existing {used} + new {chosen}",
            pool_name(pi)
        );
    }
    Ok(())
}

/// Invariant 3b: the limits hold whichever option of each claim the cloud launches.
fn check_limits_worst_case(sc: &Scenario, plan: &Plan) -> Result<(), TestCaseError> {
    let cat = catalog();
    for (pi, ps) in sc.pools.iter().enumerate() {
        let Some(limit) = ps.cpu_limit else { continue };
        let claims: Vec<_> = plan
            .new_claims
            .iter()
            .filter(|c| c.nodepool == pool_name(pi))
            .collect();
        if claims.is_empty() {
            continue;
        }
        let worst: i64 = claims
            .iter()
            .map(|c| {
                c.instance_type_options
                    .iter()
                    .map(|o| cat[o].capacity.cpu)
                    .max()
                    .unwrap_or(0)
            })
            .sum();
        let used = pool_in_use(sc, pi);
        prop_assert!(
            used + worst <= limit,
            "pool {} limit {limit}: existing {used} + largest options {worst}: {:?}",
            pool_name(pi),
            claims
                .iter()
                .map(|c| (&c.instance_type, &c.instance_type_options))
                .collect::<Vec<_>>()
        );
    }
    Ok(())
}

/// Invariant 3c: see `limit_refusals_leave_no_room_for_the_pod`.
fn check_limit_refusals(sc: &Scenario, plan: &Plan) -> Result<(), TestCaseError> {
    let cat = catalog();
    for u in &plan.unschedulable {
        let p = &sc.pods[pod_index(&u.pod)];
        for (pi, ps) in sc.pools.iter().enumerate() {
            let Some(limit) = ps.cpu_limit else { continue };
            if !u.reason.contains(&format!(
                "NodePool {} has reached its limits",
                pool_name(pi)
            )) {
                continue;
            }
            let least: i64 = plan
                .new_claims
                .iter()
                .filter(|c| c.nodepool == pool_name(pi))
                // What each claim holds of the limit: the type the plan launches.
                .map(|c| cat[&c.instance_type].capacity.cpu)
                .sum();
            let room = limit - pool_in_use(sc, pi) - least;
            let (dc, dm) = daemon_overhead(sc, pi);
            let smallest = cat
                .values()
                .filter(|t| p.arch.is_none_or(|a| type_arch(t) == a))
                .filter(|t| {
                    let (rc, rm, rp) = type_room(t);
                    p.cpu + dc <= rc && p.mem_mi * MI + dm <= rm && rp >= 1
                })
                .map(|t| t.capacity.cpu)
                .min();
            if let Some(smallest) = smallest {
                prop_assert!(
                    room < smallest,
                    "{} refused by pool {} (limit {limit}) though {room} cpu would remain with \
                     every claim at its planned type and a {smallest}-cpu type holds it: {}",
                    &u.pod,
                    pool_name(pi),
                    &u.reason
                );
            }
        }
    }
    Ok(())
}

/// Invariant 5: every pending pod exactly once; the cost bound is a bound.
fn check_accounting(sc: &Scenario, snap: &Snapshot, plan: &Plan) -> Result<(), TestCaseError> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let placed = plan
        .new_claims
        .iter()
        .flat_map(|c| c.pods.iter())
        .chain(plan.existing.iter().flat_map(|e| e.pods.iter()));
    for k in placed.chain(plan.unschedulable.iter().map(|u| &u.pod)) {
        *seen.entry(k.clone()).or_insert(0) += 1;
    }
    let want: BTreeSet<String> = snap.pending.iter().map(|p| p.key()).collect();
    prop_assert_eq!(seen.keys().cloned().collect::<BTreeSet<_>>(), want);
    for (k, n) in &seen {
        prop_assert_eq!(*n, 1, "{} appears {} times", k, n);
    }
    prop_assert_eq!(plan.pods_placed() + plan.unschedulable.len(), sc.pods.len());
    for u in &plan.unschedulable {
        prop_assert!(!u.reason.is_empty(), "{} has no reason", &u.pod);
    }
    for e in &plan.existing {
        prop_assert!(!e.pods.is_empty());
        prop_assert!(snap.nodes.iter().any(|n| n.name == e.node));
    }
    let names: BTreeSet<&str> = plan.new_claims.iter().map(|c| c.name.as_str()).collect();
    prop_assert_eq!(names.len(), plan.new_claims.len(), "claim names are unique");
    for c in &plan.new_claims {
        prop_assert!(!c.pods.is_empty());
        prop_assert!(!snap.nodes.iter().any(|n| n.name == c.name));
    }
    let total: f64 = plan.new_claims.iter().map(|c| c.price_per_hour).sum();
    prop_assert!((plan.total_price_per_hour - total).abs() < 1e-9);
    prop_assert!(
        plan.cost_lower_bound <= plan.total_price_per_hour + 1e-9,
        "bound {} > price {}",
        plan.cost_lower_bound,
        plan.total_price_per_hour
    );
    prop_assert!(plan.cost_lower_bound >= 0.0);
    if plan.new_claims.is_empty() {
        prop_assert_eq!(plan.cost_lower_bound, 0.0);
    }
    Ok(())
}

fn plan_for(sc: &Scenario) -> (Snapshot, Plan) {
    let snap = build(sc);
    let plan = schedule(&snap, &Options::default());
    (snap, plan)
}

fn normalised(mut plan: Plan) -> String {
    plan.unschedulable.sort_by(|a, b| a.pod.cmp(&b.pod));
    format!("{plan:?}")
}

proptest! {
    #![proptest_config(ProptestConfig {
        // PROPTEST_CASES=5000 for a deeper run.
        cases: std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(192),
        max_shrink_iters: 2000,
        // Minimal failing inputs are quoted in the tests and the report; no
        // regressions file is written next to the sources.
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// 1. New claims hold their pods plus DaemonSet overhead in the chosen type (and in
    ///    every listed option); existing nodes hold bound plus placed pods.
    #[test]
    fn no_node_or_claim_is_overcommitted(sc in scenario()) {
        let (_, plan) = plan_for(&sc);
        check_capacity(&sc, &plan)?;
    }

    /// 2. Arch selectors, taints, hostname anti-affinity (both directions), hostname
    ///    spread and zone spread hold for every placement.
    #[test]
    fn every_placement_satisfies_the_pods_constraints(sc in scenario()) {
        let (_, plan) = plan_for(&sc);
        check_constraints(&sc, &plan)?;
    }

    /// 3. A pool's existing capacity plus its new claims' chosen types stay within its cpu
    ///    limit.
    #[test]
    fn nodepool_cpu_limits_are_never_exceeded(sc in scenario()) {
        let (_, plan) = plan_for(&sc);
        check_limits(&sc, &plan)?;
    }

    /// 3b. ... and so do the largest options of each claim, which the cloud may launch
    ///     when the cheaper ones are out of capacity. Rare in random scenarios (about one
    ///     in a thousand); minimal case: limit 48 cpu, two 100m pods with hostname
    ///     anti-affinity, both claims list up to r.32x (64 cpu together).
    #[test]

    fn nodepool_cpu_limits_hold_for_any_launched_option(sc in scenario()) {
        let (_, plan) = plan_for(&sc);
        check_limits_worst_case(&sc, &plan)?;
    }

    /// 3c. A pod refused because a pool reached its limits really had no room there: even
    ///     with every claim of the pool cut down to its smallest option, the smallest type
    ///     that holds the pod would not fit under the limit.
    #[test]

    fn limit_refusals_leave_no_room_for_the_pod(sc in scenario()) {
        let (_, plan) = plan_for(&sc);
        check_limit_refusals(&sc, &plan)?;
    }

    /// 4. The same snapshot gives the same plan.
    #[test]
    fn scheduling_is_deterministic(sc in scenario()) {
        let (snap, plan) = plan_for(&sc);
        let again = schedule(&snap.clone(), &Options::default());
        prop_assert_eq!(format!("{plan:?}"), format!("{again:?}"));
    }

    /// 4b. The order pending pods are given in changes nothing but the order of the
    ///     unschedulable list.
    #[test]
    fn pending_order_does_not_change_the_plan(sc in scenario()) {
        let (snap, plan) = plan_for(&sc);
        let mut reversed = snap.clone();
        reversed.pending.reverse();
        let other = schedule(&reversed, &Options::default());
        prop_assert_eq!(normalised(plan), normalised(other));
    }

    /// 5. Every pending pod is placed once or reported once with a reason; prices add up
    ///    and the lower bound is below the price.
    #[test]
    fn every_pending_pod_is_accounted_for_once_and_the_cost_bound_holds(sc in scenario()) {
        let (snap, plan) = plan_for(&sc);
        check_accounting(&sc, &snap, &plan)?;
    }
}

// ---------------------------------------------------------------------------------------
// The checker and the generator themselves
// ---------------------------------------------------------------------------------------

fn plain_pool() -> PoolSpec {
    PoolSpec {
        weight: 0,
        taint: None,
        cpu_limit: None,
        spot_only: false,
    }
}

fn pod_of(app: usize, cpu: i64) -> PodSpec {
    PodSpec {
        cpu,
        mem_mi: 512,
        arch: None,
        tolerate: false,
        app,
    }
}

/// The checker is not vacuous: each invariant rejects a plan broken the way it guards
/// against.
#[test]
fn checker_rejects_broken_plans() {
    let sc = Scenario {
        kinds: [Kind::HostAnti, Kind::ZoneSpread(1), Kind::Plain],
        pods: vec![
            pod_of(0, 1000),
            pod_of(0, 1000),
            pod_of(1, 500),
            pod_of(1, 500),
            pod_of(1, 500),
            pod_of(2, 1500),
        ],
        pools: vec![plain_pool()],
        nodes: vec![],
        daemon: None,
    };
    let (snap, plan) = plan_for(&sc);
    assert!(plan.unschedulable.is_empty(), "{:#?}", plan.unschedulable);
    assert!(plan.new_claims.len() >= 3, "zone spread needs three claims");
    check_capacity(&sc, &plan).unwrap();
    check_constraints(&sc, &plan).unwrap();
    check_accounting(&sc, &snap, &plan).unwrap();
    // A limit exactly as large as what the plan launches (as if the pool had it).
    let cat = catalog();
    let launched: i64 = plan
        .new_claims
        .iter()
        .map(|c| cat[&c.instance_type].capacity.cpu)
        .sum();
    let mut limited = sc.clone();
    limited.pools[0].cpu_limit = Some(launched);
    check_limits(&limited, &plan).unwrap();

    // Over-commit: every claim shrunk to the smallest type.
    let mut bad = plan.clone();
    let all: Vec<String> = bad.new_claims.iter().flat_map(|c| c.pods.clone()).collect();
    bad.new_claims.truncate(1);
    bad.new_claims[0].pods = all;
    bad.new_claims[0].instance_type = "c.2x".to_string();
    assert!(check_capacity(&sc, &bad).is_err());

    // Anti-affinity: the two app-a pods on one claim.
    let mut bad = plan.clone();
    let a_pods: Vec<String> = ["default/pod-00", "default/pod-01"]
        .map(String::from)
        .to_vec();
    for c in &mut bad.new_claims {
        c.pods.retain(|p| !a_pods.contains(p));
    }
    bad.new_claims[0].pods.extend(a_pods);
    assert!(check_constraints(&sc, &bad).is_err());

    // Zone spread: all three app-b pods in one zone.
    let mut bad = plan.clone();
    for c in &mut bad.new_claims {
        if c.pods
            .iter()
            .any(|p| p.starts_with("default/pod-0") && sc.pods[pod_index(p)].app == 1)
        {
            c.zone = ZONES[0].to_string();
            c.labels
                .insert(labels::ZONE.to_string(), ZONES[0].to_string());
        }
    }
    assert!(check_constraints(&sc, &bad).is_err());

    // Limits: a claim launched as the 32-cpu type.
    let mut bad = plan.clone();
    bad.new_claims[0].instance_type = "c.32x".to_string();
    assert!(check_limits(&limited, &bad).is_err());
    let mut bad = plan.clone();
    bad.new_claims[0]
        .instance_type_options
        .push("c.32x".to_string());
    assert!(check_limits_worst_case(&limited, &bad).is_err());

    // Accounting: a pod both placed and unschedulable, and a bound above the price.
    let mut bad = plan.clone();
    bad.unschedulable
        .push(adze_scheduling::plan::Unschedulable {
            pod: "default/pod-05".to_string(),
            reason: "x".to_string(),
        });
    assert!(check_accounting(&sc, &snap, &bad).is_err());
    let mut bad = plan.clone();
    bad.cost_lower_bound = bad.total_price_per_hour + 1.0;
    assert!(check_accounting(&sc, &snap, &bad).is_err());
}

/// The generator reaches the interesting cases: unschedulable pods for each kind of
/// reason, existing and in-flight nodes taking pods, limits biting.
#[test]
fn generated_scenarios_exercise_every_feature() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let mut seen = BTreeMap::<&str, usize>::new();
    for _ in 0..300 {
        let sc = scenario().new_tree(&mut runner).unwrap().current();
        let (_, plan) = plan_for(&sc);
        let mut hit = |k: &'static str, yes: bool| {
            if yes {
                *seen.entry(k).or_default() += 1;
            }
        };
        let reason = |s: &str| plan.unschedulable.iter().any(|u| u.reason.contains(s));
        hit("new claims", !plan.new_claims.is_empty());
        hit(
            "existing nodes used",
            plan.existing.iter().any(|e| !e.in_flight),
        );
        hit(
            "in-flight nodes used",
            plan.existing.iter().any(|e| e.in_flight),
        );
        hit("limit reached", reason("limit"));
        hit("taint refused", reason("taint"));
        hit("too large", reason("no instance type in NodePool"));
        hit("anti-affinity refused", reason("anti-affinity"));
        hit("two pools used", {
            let pools: BTreeSet<&str> = plan
                .new_claims
                .iter()
                .map(|c| c.nodepool.as_str())
                .collect();
            pools.len() == 2
        });
    }
    for k in [
        "new claims",
        "existing nodes used",
        "in-flight nodes used",
        "limit reached",
        "taint refused",
        "too large",
        "anti-affinity refused",
        "two pools used",
    ] {
        assert!(
            seen.get(k).copied().unwrap_or(0) >= 3,
            "rarely {k}: {seen:?}"
        );
    }
}
