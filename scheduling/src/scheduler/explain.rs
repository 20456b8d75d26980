//! Why one pending pod goes where it goes, or stays pending: every existing node, every
//! claim planned earlier in the run and every NodePool (with its instance types, grouped by
//! reason) checked against the pod by the predicates placement itself uses, at the moment
//! placement decides the pod. The checks run inside a real placement run ([`explain`]), so
//! the state they see (room left, limits held, topology counts) is the state the decision
//! saw; the outcome is read from that run's plan.

use std::collections::BTreeSet;

use serde::Serialize;

use super::claim::{ClaimMiss, NewTypeMiss};
use super::state::{NodeMiss, PoolTypeMiss, Solver, TypeMiss, pool_type, type_miss};
use super::{Options, Snapshot};
use crate::plan::Plan;
use crate::resources::Resources;

/// What kind of reason refuses a pod somewhere, for grouping and for scripts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Why {
    /// The NodePool may not launch nodes now (being deleted, ...): decided before placement.
    NotUsable,
    /// The node is cordoned or on its way out.
    Cordoned,
    /// A taint the pod does not tolerate.
    Taint,
    /// A requirement (nodeSelector, node affinity, the pool's or the type's labels) conflicts.
    Requirement,
    /// The pod names a node (hostname, NodeClaim) no new node can be.
    Hostname,
    /// No instance type (or offering) matches.
    InstanceTypes,
    /// Not enough cpu, memory, pods or another resource.
    Resources,
    /// A host port is taken.
    HostPort,
    /// Spread, pod affinity or anti-affinity.
    Topology,
    /// The NodePool's limits.
    Limits,
    /// The NodePool's minValues.
    MinValues,
    /// A CSI driver's volume attach limit.
    Volumes,
    /// Joining a planned claim would cost more than a node of the pod's own.
    Price,
}

/// One refusal: its kind and the words.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Refusal {
    pub kind: Why,
    pub message: String,
}

impl Refusal {
    pub fn new(kind: Why, message: String) -> Refusal {
        Refusal { kind, message }
    }
}

/// Where the plan puts the pod.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(
    rename_all = "camelCase",
    rename_all_fields = "camelCase",
    tag = "result"
)]
pub enum Outcome {
    /// On a registered node, or on an in-flight NodeClaim (`inFlight`).
    ExistingNode { node: String, in_flight: bool },
    /// On a NodeClaim this plan launches (possibly shared with other pods).
    NewNodeClaim {
        node_claim: String,
        node_pool: String,
        instance_type: String,
        instance_type_options: Vec<String>,
        zone: String,
        capacity_type: String,
        pods: usize,
    },
    /// Left pending, with the plan's reason.
    Pending { reason: String },
}

/// An existing node (or in-flight claim) checked against the pod.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeVerdict {
    pub node: String,
    pub in_flight: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_pool: Option<String>,
    /// Absent: the node takes the pod.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refusal: Option<Refusal>,
    /// The refusal without this node's numbers: nodes refusing alike share it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
}

/// A NodeClaim planned earlier in the same run, checked against the pod.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClaimVerdict {
    pub node_claim: String,
    pub node_pool: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refusal: Option<Refusal>,
}

/// Instance types of a pool refused for one reason.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TypeGroup {
    pub kind: Why,
    pub reason: String,
    /// Every type refused so, in the pool's order.
    pub instance_types: Vec<String>,
}

/// A NodePool checked against the pod, with its instance types.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PoolVerdict {
    pub node_pool: String,
    pub weight: i32,
    /// Absent: a new NodeClaim of this pool could take the pod.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refusal: Option<Refusal>,
    /// Instance types the pool's node class offers it.
    pub instance_types: usize,
    /// Those that would hold the pod, cheapest first.
    pub compatible: Vec<String>,
    /// The others, by reason (empty when the pool is refused before its types matter).
    pub refused: Vec<TypeGroup>,
}

/// Why one pod goes where it goes, or stays pending.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Explanation {
    pub pod: String,
    pub outcome: Outcome,
    /// Preferences (preferred affinity, ScheduleAnyway spread, PreferNoSchedule taints)
    /// dropped in the attempt shown: the one that placed the pod, or the last one tried.
    pub relaxed_preferences: usize,
    pub nodes: Vec<NodeVerdict>,
    pub node_claims: Vec<ClaimVerdict>,
    /// In the order placement tries them (weight, then name).
    pub node_pools: Vec<PoolVerdict>,
}

/// What the checks found for one attempt, before the outcome is known.
pub(super) struct Considered {
    relaxed: usize,
    nodes: Vec<NodeVerdict>,
    claims: Vec<ClaimVerdict>,
    pools: Vec<PoolVerdict>,
}

/// Places `snapshot` as [`super::schedule`] does and explains pod `pod` ("namespace/name")
/// of its pending pods; `None` when no pending pod has that key. The plan is the run's own.
pub fn explain(snapshot: &Snapshot, options: &Options, pod: &str) -> Option<(Plan, Explanation)> {
    let p = snapshot.pending.iter().position(|x| x.key() == pod)?;
    let mut solver = Solver::new(snapshot, options);
    solver.explain_for = Some(p);
    let plan = super::plan_with(&mut solver, snapshot);
    let considered = solver.considered.take();
    let outcome = outcome_of(&plan, pod);
    let c = considered.unwrap_or(Considered {
        relaxed: 0,
        nodes: Vec::new(),
        claims: Vec::new(),
        pools: Vec::new(),
    });
    Some((
        plan,
        Explanation {
            pod: pod.to_string(),
            outcome,
            relaxed_preferences: c.relaxed,
            nodes: c.nodes,
            node_claims: c.claims,
            node_pools: c.pools,
        },
    ))
}

fn outcome_of(plan: &Plan, pod: &str) -> Outcome {
    if let Some(c) = plan
        .new_claims
        .iter()
        .find(|c| c.pods.iter().any(|p| p == pod))
    {
        return Outcome::NewNodeClaim {
            node_claim: c.name.clone(),
            node_pool: c.nodepool.clone(),
            instance_type: c.instance_type.clone(),
            instance_type_options: c.instance_type_options.clone(),
            zone: c.zone.clone(),
            capacity_type: c.capacity_type.clone(),
            pods: c.pods.len(),
        };
    }
    if let Some(e) = plan
        .existing
        .iter()
        .find(|e| e.pods.iter().any(|p| p == pod))
    {
        return Outcome::ExistingNode {
            node: e.node.clone(),
            in_flight: e.in_flight,
        };
    }
    Outcome::Pending {
        reason: plan
            .unschedulable
            .iter()
            .find(|u| u.pod == pod)
            .map_or_else(String::new, |u| u.reason.clone()),
    }
}

/// Adds `name` to the group of `(kind, reason)`, keeping groups in first-seen order.
fn group(groups: &mut Vec<TypeGroup>, kind: Why, reason: String, name: &str) {
    match groups
        .iter_mut()
        .find(|g| g.kind == kind && g.reason == reason)
    {
        Some(g) => g.instance_types.push(name.to_string()),
        None => groups.push(TypeGroup {
            kind,
            reason,
            instance_types: vec![name.to_string()],
        }),
    }
}

impl Solver<'_> {
    /// The checks for pod `p` (group `g`) under variant `vi`, in the state placement is in.
    /// Read-only but for the solver's caches of pure answers.
    pub(super) fn consider(&mut self, p: usize, g: usize, vi: usize) -> Considered {
        let relaxed = self.groups[g].variants[vi].variant.relaxed;
        let host_terms = self.host_terms(g, vi);
        let mut nodes = Vec::with_capacity(self.nodes.len());
        for n in 0..self.nodes.len() {
            let miss = self
                .node_static_miss(g, vi, n)
                .or_else(|| self.node_miss(p, g, vi, n, &host_terms));
            let (refusal, summary) = match miss {
                None => (None, None),
                Some(m) => {
                    let (r, s) = self.describe_node_miss(p, g, vi, n, m);
                    (Some(r), Some(s))
                }
            };
            let node = &self.snap.nodes[n];
            nodes.push(NodeVerdict {
                node: node.name.clone(),
                in_flight: node.in_flight,
                node_pool: node.nodepool.clone(),
                refusal,
                summary,
            });
        }
        let mut claims = Vec::with_capacity(self.claims.len());
        for c in 0..self.claims.len() {
            let refusal = match self.claim_takes(p, g, vi, c) {
                Ok(_) => None,
                Err(m) => Some(self.describe_claim_miss(g, vi, c, m)),
            };
            let claim = &self.claims[c];
            claims.push(ClaimVerdict {
                node_claim: claim.name.clone(),
                node_pool: self.pools[claim.pool].pool.name.clone(),
                refusal,
            });
        }
        let pools = (0..self.pools.len())
            .map(|pi| self.consider_pool(p, g, vi, pi))
            .collect();
        Considered {
            relaxed,
            nodes,
            claims,
            pools,
        }
    }

    /// A pool's verdict ([`Self::claim_from_pool`]'s stages) and its types by reason.
    fn consider_pool(&mut self, p: usize, g: usize, vi: usize, pi: usize) -> PoolVerdict {
        let mut refused: Vec<TypeGroup> = Vec::new();
        let mut compatible = Vec::new();
        // Types the pool leaves out whatever the pod.
        let ps = &self.pools[pi];
        let kept: BTreeSet<&str> = ps.types.iter().map(|t| t.it.name.as_str()).collect();
        let daemons = super::daemons::Daemons::new(&self.snap.daemonsets);
        let on_pool = daemons.for_pool(ps.pool, &ps.reqs);
        for it in ps
            .pool
            .instance_types
            .iter()
            .filter(|it| !kept.contains(it.name.as_str()))
        {
            let (kind, reason) = match pool_type(it, &ps.reqs, &daemons, &on_pool) {
                Err(PoolTypeMiss::Type(TypeMiss::Label(r))) => {
                    (Why::Requirement, format!("the NodePool requires {r}"))
                }
                Err(PoolTypeMiss::Type(TypeMiss::Offering)) => (
                    Why::InstanceTypes,
                    "no available offering the NodePool allows".to_string(),
                ),
                Err(PoolTypeMiss::Daemons) => (
                    Why::Resources,
                    "the NodePool's DaemonSets do not fit".to_string(),
                ),
                Ok(_) => (
                    Why::InstanceTypes,
                    "left out by the NodePool (duplicate name)".to_string(),
                ),
            };
            group(&mut refused, kind, reason, &it.name);
        }
        let total = ps.pool.instance_types.len();
        let (name, weight) = (ps.pool.name.clone(), ps.pool.weight);
        let verdict = |refusal: Option<Refusal>,
                       compatible: Vec<String>,
                       refused: Vec<TypeGroup>| PoolVerdict {
            node_pool: name.clone(),
            weight,
            refusal,
            instance_types: total,
            compatible,
            refused,
        };
        let fit_ok = self.pool_fit(g, vi, pi);
        let fit_refusal = self.pool_fit_result(g, vi, pi).as_ref().err().cloned();
        // Types the pod's requirements (and DaemonSets' host ports) leave out: only when the
        // pool was refused for its types, or not at all.
        let typed = fit_refusal
            .as_ref()
            .is_none_or(|r| matches!(r.kind, Why::InstanceTypes | Why::HostPort));
        if !typed {
            return verdict(fit_refusal, compatible, Vec::new());
        }
        let ps = &self.pools[pi];
        let pod = &self.snap.pending[p];
        let v = &self.groups[g].variants[vi].variant;
        let mut full = ps.reqs.clone();
        full.add_all(&v.requirements);
        let fit_types: BTreeSet<u32> = match self.pool_fit_result(g, vi, pi) {
            Ok(fit) => fit.types.iter().copied().collect(),
            Err(_) => BTreeSet::new(),
        };
        let ports = ps.daemon_ports && !pod.host_ports.is_empty();
        for (o, t) in ps.types.iter().enumerate() {
            if fit_types.contains(&(o as u32)) {
                continue;
            }
            let (kind, reason) = match type_miss(&t.it, &full, None) {
                Some(TypeMiss::Label(r)) => (Why::Requirement, format!("the pod requires {r}")),
                Some(TypeMiss::Offering) => (
                    Why::InstanceTypes,
                    "no available offering in an allowed zone and capacity type".to_string(),
                ),
                None if ports && t.ports_taken(&pod.host_ports) => (
                    Why::HostPort,
                    "a DaemonSet holds one of the pod's host ports".to_string(),
                ),
                None => (
                    Why::InstanceTypes,
                    "left out by the NodePool fit".to_string(),
                ),
            };
            group(&mut refused, kind, reason, &t.it.name);
        }
        if !fit_ok {
            return verdict(fit_refusal, compatible, refused);
        }
        let stage = match self.new_claim_stage(p, g, vi, pi) {
            Ok(s) => s,
            Err(r) => return verdict(Some(r), compatible, refused),
        };
        let ps = &self.pools[pi];
        let need = self.need(p).clone();
        // Too small, by the first resource each type lacks, with the largest such type.
        let mut small: Vec<(String, i64, Vec<String>)> = Vec::new();
        for &(o, m) in &stage.misses {
            let t = &ps.types[o as usize];
            match m {
                NewTypeMiss::TooSmall => {
                    let r = need
                        .exceeding(&t.usable)
                        .first()
                        .map_or_else(|| "resources".to_string(), |r| r.to_string());
                    let have = t.usable.get(&r);
                    match small.iter_mut().find(|(k, _, _)| *k == r) {
                        Some((_, max, names)) => {
                            *max = (*max).max(have);
                            names.push(t.it.name.clone());
                        }
                        None => small.push((r, have, vec![t.it.name.clone()])),
                    }
                }
                NewTypeMiss::Limits => group(
                    &mut refused,
                    Why::Limits,
                    "launching one would pass the NodePool's limits".to_string(),
                    &t.it.name,
                ),
                NewTypeMiss::Volumes => group(
                    &mut refused,
                    Why::Volumes,
                    format!(
                        "cannot attach the pod's volumes of CSI driver {} (volume attach limit)",
                        crate::volumes::EBS_CSI_DRIVER
                    ),
                    &t.it.name,
                ),
                NewTypeMiss::Topology => group(
                    &mut refused,
                    Why::Topology,
                    "not offered where the pod's topology constraints allow".to_string(),
                    &t.it.name,
                ),
            }
        }
        for (r, max, names) in small {
            refused.push(TypeGroup {
                kind: Why::Resources,
                reason: format!(
                    "too small for {} (the largest has {} after DaemonSets)",
                    Resources::describe(&r, need.get(&r)),
                    Resources::describe(&r, max)
                ),
                instance_types: names,
            });
        }
        compatible.extend(
            stage
                .options
                .iter()
                .map(|&o| ps.types[o as usize].it.name.clone()),
        );
        let refusal = self.new_claim_refusal(p, pi, &stage);
        debug_assert_eq!(
            compatible.len()
                + refused
                    .iter()
                    .map(|g| g.instance_types.len())
                    .sum::<usize>(),
            total,
            "every instance type of the pool is accounted for once"
        );
        verdict(refusal, compatible, refused)
    }

    /// A node refusal in words, and its summary without the node's own numbers.
    fn describe_node_miss(
        &mut self,
        p: usize,
        g: usize,
        vi: usize,
        n: usize,
        miss: NodeMiss<'_>,
    ) -> (Refusal, String) {
        match miss {
            NodeMiss::Cordoned => {
                let s = "cordoned or on its way out".to_string();
                (Refusal::new(Why::Cordoned, s.clone()), s)
            }
            NodeMiss::Label(c) => (
                Refusal::new(Why::Requirement, format!("pod {c}")),
                format!("pod requires {}", c.wanted),
            ),
            NodeMiss::Taint(t) => {
                let s = format!("taint {t} is not tolerated");
                (Refusal::new(Why::Taint, s.clone()), s)
            }
            NodeMiss::Static => {
                let s = "labels, taints or cordon".to_string();
                (Refusal::new(Why::Requirement, s.clone()), s)
            }
            NodeMiss::Room => {
                let need = self.need(p).clone();
                let left = &self.nodes[n].remaining;
                let r = need
                    .exceeding(left)
                    .first()
                    .map_or_else(|| "resources".to_string(), |r| r.to_string());
                (
                    Refusal::new(
                        Why::Resources,
                        format!(
                            "needs {}, {} left",
                            Resources::describe(&r, need.get(&r)),
                            Resources::describe(&r, left.get(&r).max(0))
                        ),
                    ),
                    format!("not enough {r} left"),
                )
            }
            NodeMiss::HostTerm | NodeMiss::Topology(_) => {
                let m = match miss {
                    NodeMiss::Topology(m) => Some(m),
                    _ => self
                        .topology_fit(g, vi, super::state::Target::Node(n))
                        .err(),
                };
                let s = m.map_or_else(
                    || "a hostname topology term".to_string(),
                    |m| self.describe_miss(&m),
                );
                (Refusal::new(Why::Topology, s.clone()), s)
            }
            NodeMiss::HostPort(hp) => {
                let s = format!("host port {}/{} is taken", hp.port, hp.protocol);
                (Refusal::new(Why::HostPort, s.clone()), s)
            }
            NodeMiss::Volumes(e) => (
                Refusal::new(Why::Volumes, e.to_string()),
                format!("CSI driver {} is at its volume attach limit", e.driver),
            ),
        }
    }

    fn describe_claim_miss(&self, g: usize, vi: usize, c: usize, miss: ClaimMiss) -> Refusal {
        let pool = self.claims[c].pool;
        match miss {
            ClaimMiss::Room => Refusal::new(
                Why::Resources,
                "no instance type it may grow to holds its pods and this one".to_string(),
            ),
            ClaimMiss::HostPort => Refusal::new(
                Why::HostPort,
                "a pod planned on it holds one of the pod's host ports".to_string(),
            ),
            ClaimMiss::Pool => self
                .pool_fit_result(g, vi, pool)
                .as_ref()
                .err()
                .cloned()
                .unwrap_or_else(|| Refusal::new(Why::Requirement, "its NodePool".to_string())),
            ClaimMiss::Requirements => Refusal::new(
                Why::Requirement,
                "its requirements (zone, instance types, ...) conflict with the pod's".to_string(),
            ),
            ClaimMiss::Topology(m) => Refusal::new(Why::Topology, self.describe_miss(&m)),
            ClaimMiss::Types => Refusal::new(
                Why::InstanceTypes,
                "no instance type it may launch as holds it within requirements, limits and host ports"
                    .to_string(),
            ),
            ClaimMiss::Price => Refusal::new(
                Why::Price,
                "joining would raise its price by more than twice a node of the pod's own"
                    .to_string(),
            ),
            ClaimMiss::Volumes => Refusal::new(
                Why::Volumes,
                format!(
                    "no instance type it may grow to can attach its volumes of CSI driver {} and this pod's (volume attach limit)",
                    crate::volumes::EBS_CSI_DRIVER
                ),
            ),
            ClaimMiss::MinValues => Refusal::new(
                Why::MinValues,
                "too few values would remain for its NodePool's minValues".to_string(),
            ),
        }
    }
}
