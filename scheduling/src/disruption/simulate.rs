//! "What if these nodes were gone?": the cluster without them, their pods (and the
//! CapacityBuffer placeholders the cluster holds room for) pending, run through the real
//! scheduler. Built once per decision and reused for every trial. Nodes in a zone a zonal
//! shift moves away from take no displaced pod ([`super::Input::zones_away`]).

use crate::node::{BoundPod, ExistingNode};
use crate::plan::Plan;
use crate::scheduler::{Options, Snapshot, schedule};

use super::Input;

pub(super) struct Simulator<'a> {
    input: &'a Input,
    /// Node indices, fullest first: the scheduler fills existing nodes first-fit in this
    /// order, so displaced pods pack onto busy nodes and leave the emptier ones free to go
    /// next.
    order: Vec<usize>,
    /// Per node index: indices into `input.snapshot.bound`.
    pods_on: Vec<Vec<usize>>,
    /// The scheduling options, every node's name reserved.
    pub options: Options,
    /// Per node index: has facts saying it is not initialized, so it takes no displaced pod.
    not_ready: Vec<bool>,
    /// The buffer's placeholder pods the cluster holds room for now (see
    /// [`super::Input::buffer`]): pending in every trial, beside the displaced pods.
    pub held_buffer: Vec<crate::pod::Pod>,
}

impl<'a> Simulator<'a> {
    pub fn new(input: &'a Input, options: &Options) -> Simulator<'a> {
        let nodes = &input.snapshot.nodes;
        let index: std::collections::HashMap<&str, usize> = nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.name.as_str(), i))
            .collect();
        let mut pods_on = vec![Vec::new(); nodes.len()];
        let mut used = vec![crate::resources::Resources::default(); nodes.len()];
        for (bi, b) in input.snapshot.bound.iter().enumerate() {
            if let Some(&ni) = index.get(b.node.as_str()) {
                pods_on[ni].push(bi);
                used[ni].add(&b.pod.requests);
            }
        }
        let fill: Vec<f64> = nodes
            .iter()
            .zip(&used)
            .map(|(n, u)| {
                let f = |a: i64, b: i64| if b > 0 { a as f64 / b as f64 } else { 1.0 };
                f(u.cpu, n.allocatable.cpu).max(f(u.memory, n.allocatable.memory))
            })
            .collect();
        let mut order: Vec<usize> = (0..nodes.len()).collect();
        order.sort_by(|&a, &b| {
            fill[b]
                .total_cmp(&fill[a])
                .then_with(|| nodes[a].name.cmp(&nodes[b].name))
        });
        let mut options = options.clone();
        options
            .reserved_names
            .extend(nodes.iter().map(|n| n.name.clone()));
        // A registered node that is not initialized yet may never become ready: displaced
        // pods are not counted on it (Karpenter refuses such moves too).
        let facts = input.facts_by_node();
        let not_ready: Vec<bool> = nodes
            .iter()
            .map(|n| facts.get(n.name.as_str()).is_some_and(|f| !f.initialized))
            .collect();
        let mut sim = Simulator {
            not_ready,
            input,
            order,
            pods_on,
            options,
            held_buffer: Vec::new(),
        };
        if !input.buffer.is_empty() {
            // Where the placeholders go with nothing removed: those landing on existing
            // nodes are held by the cluster's spare room.
            let mut snap = sim.snapshot_without(&[]);
            snap.pending = input.buffer.clone();
            let plan = schedule(&snap, &sim.options);
            let held: std::collections::HashSet<&str> = plan
                .existing
                .iter()
                .flat_map(|e| e.pods.iter().map(String::as_str))
                .collect();
            sim.held_buffer = (input.buffer.iter())
                .filter(|p| held.contains(p.key().as_str()))
                .cloned()
                .collect();
        }
        sim
    }

    /// Whether removing `removed` leaves room for the held buffer pods on the nodes that
    /// stay, without launching anything.
    pub fn buffer_stays(&self, removed: &[usize]) -> bool {
        if self.held_buffer.is_empty() {
            return true;
        }
        let plan = self.run(removed);
        plan.unschedulable.is_empty() && plan.new_claims.is_empty()
    }

    /// The snapshot with `removed` (node indices) gone and their non-DaemonSet pods pending.
    pub fn snapshot_without(&self, removed: &[usize]) -> Snapshot {
        let snap = &self.input.snapshot;
        let mut gone = vec![false; snap.nodes.len()];
        for &r in removed {
            gone[r] = true;
        }
        let mut nodes: Vec<ExistingNode> = Vec::with_capacity(snap.nodes.len());
        let mut bound: Vec<BoundPod> = Vec::with_capacity(snap.bound.len());
        for &ni in &self.order {
            if gone[ni] {
                continue;
            }
            let mut node = snap.nodes[ni].clone();
            // A node in a zone a zonal shift moves away from keeps its pods but takes no
            // displaced ones: disruption elsewhere must not lean on the shifted zone.
            if self.not_ready[ni]
                || super::candidates::shifted_zone(&self.input.zones_away, &node).is_some()
            {
                node.unschedulable = true;
            }
            nodes.push(node);
            bound.extend(self.pods_on[ni].iter().map(|&bi| snap.bound[bi].clone()));
        }
        let pending = removed
            .iter()
            .flat_map(|&r| self.pods_on[r].iter())
            .map(|&bi| &snap.bound[bi])
            .filter(|b| !b.daemon)
            .map(|b| self.moved(&b.pod))
            .chain(self.held_buffer.iter().cloned())
            .collect();
        let leaving = removed.iter().map(|&r| snap.nodes[r].clone()).collect();
        Snapshot {
            pending,
            nodes,
            bound,
            nodepools: snap.nodepools.clone(),
            daemonsets: snap.daemonsets.clone(),
            leaving,
        }
    }

    /// A displaced pod as it will be recreated: with its predicted requests
    /// ([`super::Input::moved_requests`]) when it has some.
    fn moved(&self, pod: &crate::pod::Pod) -> crate::pod::Pod {
        let mut pod = pod.clone();
        if !self.input.moved_requests.is_empty()
            && let Some(r) = self.input.moved_requests.get(&pod.key())
        {
            pod.requests = r.clone();
        }
        pod
    }

    /// The scheduler's plan for the removed nodes' pods.
    pub fn run(&self, removed: &[usize]) -> Plan {
        schedule(&self.snapshot_without(removed), &self.options)
    }
}
