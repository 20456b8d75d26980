//! The cluster as it will be once a decision is carried out, so that several decisions can
//! be taken (and kept in flight) at once without two of them counting on the same room,
//! the same budget or the same PodDisruptionBudget allowance.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::node::ExistingNode;

use super::decision::Decision;
use super::methods::Context;
use super::{Input, Options, Reason};

/// Applies `d` to `input` as the controller will carry it out: its nodes are disrupting
/// (they count against their pools' budgets and take no pods), its replacements are
/// in-flight nodes holding the pods planned onto them, the pods planned onto existing
/// nodes are bound there, and each PodDisruptionBudget has as many fewer evictions left as
/// `d` takes from it.
pub fn commit(input: &mut Input, d: &Decision) {
    let removed: BTreeSet<&str> = d.nodes.iter().map(|n| n.name.as_str()).collect();
    for f in &mut input.nodes {
        if removed.contains(f.name.as_str()) {
            f.disrupting = true;
            f.disrupting_as_not_ready = false;
        }
    }
    for n in &mut input.snapshot.nodes {
        if removed.contains(n.name.as_str()) {
            n.unschedulable = true;
        }
    }
    for c in &d.plan.new_claims {
        input.snapshot.nodes.push(ExistingNode::planned(c));
    }
    // A static pool's counts: the nodes taken leave it, its replacements join it.
    for p in &mut input.policies {
        let Some(size) = p.static_size.as_mut() else {
            continue;
        };
        let removed = d.nodes.iter().filter(|n| n.nodepool == p.nodepool).count() as u64;
        let launched = (d.plan.new_claims.iter())
            .filter(|c| c.nodepool == p.nodepool)
            .count() as u64;
        super::static_drift::after(size, removed, launched);
    }
    let placements = d.plan.placements();
    let pdbs_of: HashMap<&str, Vec<String>> = input
        .pods
        .iter()
        .map(|p| (p.pod.as_str(), p.pdbs.clone()))
        .collect();
    let mut evicted: BTreeMap<String, u32> = BTreeMap::new();
    for b in &mut input.snapshot.bound {
        if b.daemon || !removed.contains(b.node.as_str()) {
            continue;
        }
        let key = b.pod.key();
        for pdb in pdbs_of.get(key.as_str()).into_iter().flatten() {
            *evicted.entry(pdb.clone()).or_default() += 1;
        }
        if let Some(to) = placements.get(key.as_str()) {
            b.node = (*to).to_string();
            // Recreated there with its predicted requests: later decisions see it so.
            if let Some(r) = input.moved_requests.remove(key.as_str()) {
                b.pod.requests = r;
            }
        }
    }
    for p in &mut input.pdbs {
        if let Some(n) = evicted.get(&p.name) {
            p.disruptions_allowed = p.disruptions_allowed.saturating_sub(*n);
        }
    }
}

/// Every decision that can be carried out side by side now, in the order they were taken:
/// drift and emptiness as often as the budgets allow, then consolidations, each next one
/// decided on the cluster as the ones before will leave it ([`commit`]), up to
/// [`Options::consolidations_per_pass`] of them and only if `consolidate`. `max` bounds how
/// many decisions one call returns.
///
/// A consolidation taken after another one never disrupts a node an earlier decision of the
/// call moves pods onto (those pods are not there yet when its drain starts, and would then
/// find the node tainted), and never counts on room on an earlier consolidation's
/// replacement (its instance-type options were trimmed to what holds its own pods).
/// Decisions are independent of each other in the order the controller carries them out.
pub fn decide_all(
    input: &Input,
    options: &Options,
    consolidate: bool,
    max: usize,
) -> Vec<Decision> {
    let mut out = Vec::new();
    let mut now = input.clone();
    let mut consolidations = 0;
    while out.len() < max {
        let more = consolidate && consolidations < options.consolidations_per_pass;
        let Some(d) = Context::new(&now, options).next(more) else {
            break;
        };
        commit(&mut now, &d);
        if d.reason == Reason::Underutilized {
            consolidations += 1;
            hold(&mut now, &d);
        }
        out.push(d);
    }
    out
}

/// After [`commit`]ting consolidation `d` to `input`: the existing nodes it moves pods onto
/// are kept out of later decisions (marked do-not-disrupt), and its replacements take no
/// further pods.
pub fn hold(input: &mut Input, d: &Decision) {
    let onto: BTreeSet<&str> = d.plan.existing.iter().map(|e| e.node.as_str()).collect();
    for f in &mut input.nodes {
        if onto.contains(f.name.as_str()) {
            f.do_not_disrupt = true;
        }
    }
    let launched: BTreeSet<&str> = d.plan.new_claims.iter().map(|c| c.name.as_str()).collect();
    for n in &mut input.snapshot.nodes {
        if launched.contains(n.name.as_str()) {
            n.unschedulable = true;
        }
    }
}
