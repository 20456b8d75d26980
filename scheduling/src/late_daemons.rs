//! DaemonSets counted as they are today, not as they were when a node was planned.
//!
//! A NodeClaim is sized for its pods plus the DaemonSets that existed at planning. A
//! DaemonSet created later adds one pod per node it selects; when that pod does not fit, it
//! stays pending and holds nothing, so a plan that reads only bound pods sees room the
//! DaemonSet will take (Karpenter #731). [`charge`] puts, on every registered node and
//! in-flight claim, the pod of each DaemonSet that will run there and has none there yet, so
//! provisioning and every disruption trial (`run` and `simulate` alike) count it.
//! [`misfits`] names the registered nodes whose pods and DaemonSets no longer fit together.
//!
//! The pods a claim was launched for keep their room (the extender's ledger holds it for
//! them until they are bound): on an in-flight claim, or a node whose claim still waits for
//! some of its nominated pods, a late DaemonSet pod is counted only where it fits beside
//! them. Where it does not, it will wait, and it is counted once they are all bound; only
//! then can the node be a misfit.

use std::collections::HashMap;

use crate::labels;
use crate::node::{BoundPod, ExistingNode};
use crate::pod::Pod;
use crate::requirements::{Operator, Requirement, Requirements, Undefined};
use crate::resources::Resources;
use crate::scheduler::Snapshot;
use crate::taints::first_untolerated;

/// Whether the DaemonSet whose pod template is `daemon` runs a pod on `node`: it tolerates
/// the node's NoSchedule/NoExecute taints and one of its node terms fits the node's labels.
/// An in-flight claim is read as it will be once up (registered and initialised), since
/// that is when the DaemonSet controller places its pod there.
pub fn runs_on(daemon: &Pod, node: &ExistingNode) -> bool {
    if first_untolerated(&node.taints, &daemon.tolerations, false).is_some() {
        return false;
    }
    let mut reqs: std::borrow::Cow<'_, Requirements> =
        std::borrow::Cow::Borrowed(&node.requirements);
    if node.in_flight {
        let r = reqs.to_mut();
        r.add(Requirement::single(labels::REGISTERED, "true"));
        r.add(Requirement::single(labels::INITIALIZED, "true"));
        if let Ok(exists) = Requirement::new::<&str>(labels::NODECLAIM, Operator::Exists, &[]) {
            r.add(exists);
        }
    }
    daemon
        .node_requirements
        .iter()
        .any(|t| reqs.compatible(t, Undefined::Absent))
}

/// One DaemonSet pod [`charge`] added: which DaemonSet (index into `snap.daemonsets`) on
/// which node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Charged {
    pub daemon: usize,
    pub node: String,
}

/// Adds to `snap.bound`, as pods that stay with their node, the pod of every DaemonSet that
/// [`runs_on`] a node of `snap.nodes` when `has_pod(daemon index, node name)` says the
/// cluster holds no pod of it there (none bound; a pending one the DaemonSet controller made
/// for that node counts as none). The added pod is the DaemonSet's template, named
/// `<daemonset>@<node>`. Returns what it added, in node then DaemonSet order.
///
/// `reserved` names the nodes (and in-flight claims) whose claim still holds room for pods
/// nominated to it, with what those pods ask beyond the pods `snap.bound` already puts there. On those
/// nodes and on in-flight claims, a DaemonSet pod is added only if it fits beside the bound
/// pods, the reserved requests and the DaemonSet pods added before it.
pub fn charge(
    snap: &mut Snapshot,
    has_pod: impl Fn(usize, &str) -> bool,
    reserved: &HashMap<String, Resources>,
) -> Vec<Charged> {
    let held = held_room(&snap.nodes, &snap.bound, reserved);
    let mut added = Vec::new();
    for n in &snap.nodes {
        let mut used = held.get(n.name.as_str()).cloned();
        for (di, d) in snap.daemonsets.iter().enumerate() {
            if has_pod(di, &n.name) || !runs_on(d, n) {
                continue;
            }
            if let Some(used) = used.as_mut() {
                let mut with = used.clone();
                with.add(&d.requests);
                if !with.fits_in(&n.allocatable) {
                    continue;
                }
                *used = with;
            }
            let mut pod = d.clone();
            pod.name = format!("{}@{}", d.name, n.name);
            snap.bound.push(BoundPod {
                node: n.name.clone(),
                pod,
                daemon: true,
            });
            added.push(Charged {
                daemon: di,
                node: n.name.clone(),
            });
        }
    }
    added
}

/// What is held on each in-flight claim and each `reserved` node: its bound pods' requests
/// plus the reserved ones. Nodes elsewhere are absent (a DaemonSet pod is charged there
/// whether it fits or not).
fn held_room<'s>(
    nodes: &'s [ExistingNode],
    bound: &[BoundPod],
    reserved: &HashMap<String, Resources>,
) -> HashMap<&'s str, Resources> {
    let mut held: HashMap<&str, Resources> = nodes
        .iter()
        .filter(|n| n.in_flight || reserved.contains_key(&n.name))
        .map(|n| {
            let r = reserved.get(&n.name).cloned().unwrap_or_default();
            (n.name.as_str(), r)
        })
        .collect();
    if held.is_empty() {
        return held;
    }
    for b in bound {
        if let Some(u) = held.get_mut(b.node.as_str()) {
            u.add(&b.pod.requests);
        }
    }
    held
}

/// A registered node whose pods and DaemonSets ask more than it has.
#[derive(Debug, Clone, PartialEq)]
pub struct Misfit {
    pub node: String,
    /// What the pods bound there and the charged DaemonSet pods ask beyond its
    /// allocatable, per resource (only the resources over it are non-zero).
    pub over: Resources,
    /// The DaemonSets ("namespace/name") [`charge`] added there: those not running on it.
    pub daemons: Vec<String>,
}

/// The registered nodes (in-flight claims aside: their pods are not all there yet) where
/// [`charge`] added a DaemonSet pod (`charged`, what it returned) and the requests of the
/// bound pods, charged ones included, do not fit the allocatable: the node cannot run
/// every DaemonSet it should beside its pods. A node whose DaemonSets all run there is
/// never one, however full.
pub fn misfits(snap: &Snapshot, charged: &[Charged]) -> Vec<Misfit> {
    // One pass over the bound pods, for the charged nodes only (a DaemonSet added to a
    // large cluster charges every node: no scan of all pods per node).
    let mut used: HashMap<&str, Resources> = charged
        .iter()
        .map(|c| (c.node.as_str(), Resources::default()))
        .collect();
    for b in &snap.bound {
        if let Some(u) = used.get_mut(b.node.as_str()) {
            u.add(&b.pod.requests);
        }
    }
    let mut out: Vec<Misfit> = Vec::new();
    for n in snap.nodes.iter().filter(|n| !n.in_flight) {
        let Some(used) = used.get(n.name.as_str()) else {
            continue;
        };
        if used.fits_in(&n.allocatable) {
            continue;
        }
        let mut over = Resources::default();
        for name in used.names().map(str::to_string).collect::<Vec<_>>() {
            let excess = used.get(&name).saturating_sub(n.allocatable.get(&name));
            if excess > 0 {
                over.set(&name, excess);
            }
        }
        let daemons = charged
            .iter()
            .filter(|d| d.node == n.name)
            .filter_map(|d| snap.daemonsets.get(d.daemon))
            .map(Pod::key)
            .collect();
        out.push(Misfit {
            node: n.name.clone(),
            over,
            daemons,
        });
    }
    out
}
