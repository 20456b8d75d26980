//! Topology checks for one pod on one candidate: spread skew, required pod affinity and
//! anti-affinity (both directions). A candidate whose domain is still open (a new claim
//! that could be in several zones) is narrowed: the answer carries the requirement that
//! pins it, chosen to keep spread even.

use std::collections::BTreeSet;

use super::state::{Solver, Target};
use crate::labels;
use crate::node::ExistingNode;
use crate::requirements::{Requirement, Requirements, Undefined};
use crate::taints::first_untolerated;
use crate::topology::{DomainId, Kind, Topology};

/// Hostname domain of a claim not created yet: no pod counts there.
const FRESH: DomainId = DomainId::MAX;

/// Why a candidate failed a topology check. Kept as data: most candidates fail, and only a
/// pod that fits nowhere needs the words ([`Solver::describe_miss`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Miss {
    /// The candidate has no label for the group's key.
    NoLabel(usize),
    SpreadExceeded(usize),
    NoAffinityMatch(usize),
    AntiAffinity(usize),
    /// A bound pod's anti-affinity term selects this pod.
    InverseAntiAffinity(usize),
}

/// Fills `out` with the node's domains for `key`; false when the node has no such label.
fn node_domains(
    topo: &mut Topology,
    node: &ExistingNode,
    hostname: DomainId,
    key: &str,
    out: &mut Vec<DomainId>,
) -> bool {
    if key == labels::HOSTNAME {
        out.push(hostname);
        return true;
    }
    let Some(v) = node.requirements.get(key).and_then(|r| r.single_value()) else {
        return false;
    };
    out.push(topo.intern(v));
    true
}

/// Fills `out` with the domains a claim with `reqs` could be in for `key`; false when it
/// would have no such label.
fn claim_domains(
    topo: &mut Topology,
    hostname: Option<DomainId>,
    reqs: &Requirements,
    key: &str,
    out: &mut Vec<DomainId>,
) -> bool {
    if labels::is_per_node(key) {
        out.push(hostname.unwrap_or(FRESH));
        return true;
    }
    let Some(values) = reqs.get(key).and_then(|r| r.finite_values()) else {
        return false;
    };
    out.extend(values.iter().map(|v| topo.intern(v)));
    true
}

impl Solver<'_> {
    fn count(&self, g: usize, d: DomainId) -> u32 {
        if d == FRESH {
            0
        } else {
            self.topo.group(g).count(d)
        }
    }

    /// Domains a spread constraint is measured over for this pod: existing nodes' values and
    /// the values NodePools can create, filtered per nodeAffinityPolicy / nodeTaintsPolicy.
    /// Computed once per (group, variant, term) and kept in the variant; see
    /// [`Self::spread_min`] for the reader.
    fn eligible_domains(&mut self, g: usize, vi: usize, s: usize) -> &[DomainId] {
        if !self.groups[g].variants[vi].eligible.contains_key(&s) {
            let ids = self.compute_eligible_domains(g, vi, s);
            self.groups[g].variants[vi].eligible.insert(s, ids);
        }
        &self.groups[g].variants[vi].eligible[&s]
    }

    fn compute_eligible_domains(&mut self, g: usize, vi: usize, s: usize) -> Vec<DomainId> {
        let grp = self.topo.group(s).clone();
        let pod = self.rep_pod(g);
        let v = self.groups[g].variants[vi].variant.clone();
        let mut values: BTreeSet<String> = BTreeSet::new();
        for node in &self.snap.nodes {
            let Some(val) = node
                .requirements
                .get(&grp.key)
                .and_then(|r| r.single_value())
            else {
                continue;
            };
            if grp.honor_node_affinity
                && !node.requirements.compatible(&v.required, Undefined::Absent)
            {
                continue;
            }
            if grp.honor_taints
                && first_untolerated(&node.taints, &pod.tolerations, false).is_some()
            {
                continue;
            }
            values.insert(val.to_string());
        }
        for ps in &self.pools {
            if grp.honor_taints
                && first_untolerated(&ps.pool.taints, &pod.tolerations, false).is_some()
            {
                continue;
            }
            if grp.honor_node_affinity && !ps.reqs.compatible(&v.required, Undefined::WellKnownOpen)
            {
                continue;
            }
            let from_pool: Vec<String> = if grp.key == labels::ZONE {
                ps.zones.iter().cloned().collect()
            } else {
                super::state::producible_values(ps.types.iter().map(|t| &*t.it), &ps.reqs, &grp.key)
                    .into_iter()
                    .collect()
            };
            let wanted = v.required.get(&grp.key);
            values.extend(
                from_pool
                    .into_iter()
                    .filter(|val| !grp.honor_node_affinity || wanted.is_none_or(|w| w.allows(val))),
            );
        }
        values.iter().map(|v| self.topo.intern(v)).collect()
    }

    /// The smallest count among the domains the pod could use; 0 for hostname (a new node
    /// is always a possible, empty domain) and when fewer than minDomains domains exist.
    fn spread_min(&mut self, g: usize, vi: usize, s: usize) -> u32 {
        let grp = self.topo.group(s);
        if grp.is_per_node() {
            return 0;
        }
        let min_domains = match grp.kind {
            Kind::Spread { min_domains, .. } => min_domains.unwrap_or(1) as usize,
            _ => 1,
        };
        if self.eligible_domains(g, vi, s).len() < min_domains {
            return 0;
        }
        // Read in place (not a copy per candidate): the list is kept per variant.
        let grp = self.topo.group(s);
        self.groups[g].variants[vi].eligible[&s]
            .iter()
            .map(|d| grp.count(*d))
            .min()
            .unwrap_or(0)
    }

    /// Checks pod `p` (group `g`, variant `vi`) against `target`. `Ok(Some(reqs))` means the
    /// target fits once narrowed by `reqs`.
    pub(super) fn describe_miss(&self, miss: &Miss) -> String {
        match *miss {
            Miss::NoLabel(t) => {
                let grp = self.topo.group(t);
                format!("{}: the node has no {} label", grp.describe(), grp.key)
            }
            Miss::SpreadExceeded(t) => {
                format!("{} would be exceeded", self.topo.group(t).describe())
            }
            Miss::NoAffinityMatch(t) => {
                let grp = self.topo.group(t);
                format!(
                    "{}: no matching pod in a reachable {}",
                    grp.describe(),
                    grp.key
                )
            }
            Miss::AntiAffinity(t) => format!("{} would be violated", self.topo.group(t).describe()),
            Miss::InverseAntiAffinity(t) => format!(
                "an existing pod's {} excludes this pod",
                self.topo.group(t).describe()
            ),
        }
    }

    pub(super) fn topology_fit(
        &mut self,
        g: usize,
        vi: usize,
        target: Target,
    ) -> Result<Option<Requirements>, Miss> {
        // The keys are lent out for the check (nothing it calls reads them), not copied
        // per candidate.
        let keys = std::mem::take(&mut self.groups[g].keys);
        let mut scratch = std::mem::take(&mut self.scratch_domains);
        let out = self.topology_fit_keys(g, vi, target, &keys, &mut scratch);
        self.groups[g].keys = keys;
        self.scratch_domains = scratch;
        out
    }

    /// Fills `out` with claim `c`'s domains for `key` (see [`super::claim::Claim::domains`]);
    /// false when it has no such label.
    fn claim_domains_cached(&mut self, c: usize, key: &str, out: &mut Vec<DomainId>) -> bool {
        if labels::is_per_node(key) {
            out.push(self.claims[c].hostname);
            return true;
        }
        let claim = &mut self.claims[c];
        let at = match claim.domains.iter().position(|(k, _)| k == key) {
            Some(at) => at,
            None => {
                let mut ids = Vec::new();
                let has = claim_domains(&mut self.topo, None, &claim.reqs, key, &mut ids);
                claim.domains.push((key.to_string(), has.then_some(ids)));
                claim.domains.len() - 1
            }
        };
        match &claim.domains[at].1 {
            Some(ids) => {
                out.extend_from_slice(ids);
                true
            }
            None => false,
        }
    }

    fn topology_fit_keys(
        &mut self,
        g: usize,
        vi: usize,
        target: Target,
        keys: &[String],
        scratch: &mut Vec<DomainId>,
    ) -> Result<Option<Requirements>, Miss> {
        let mut extra = Requirements::new();
        for key in keys {
            let key = key.as_str();
            scratch.clear();
            let has = match target {
                Target::Node(n) => node_domains(
                    &mut self.topo,
                    &self.snap.nodes[n],
                    self.nodes[n].hostname,
                    key,
                    scratch,
                ),
                Target::Claim(c) => self.claim_domains_cached(c, key, scratch),
                Target::NewClaim(reqs) => claim_domains(&mut self.topo, None, reqs, key, scratch),
            };
            // The candidate's domains, narrowed below term by term (one buffer for all
            // keys and candidates: this runs for most claims for every pod).
            let mut allowed: Option<&mut Vec<DomainId>> =
                if has { Some(&mut *scratch) } else { None };
            // How many domains the candidate had before the terms narrowed them.
            let before = allowed.as_ref().map(|d| d.len());
            let mut first_spread: Option<usize> = None;

            for si in 0..self.groups[g].variants[vi].variant.spread.len() {
                let s = self.groups[g].variants[vi].variant.spread[si];
                if self.topo.group(s).key != key {
                    continue;
                }
                let Some(cands) = allowed.as_mut() else {
                    return Err(Miss::NoLabel(s));
                };
                let max_skew = match self.topo.group(s).kind {
                    Kind::Spread { max_skew, .. } => max_skew,
                    _ => unreachable!("spread group"),
                };
                let self_match = u32::from(self.groups[g].matches.contains(&s));
                let min = self.spread_min(g, vi, s);
                cands.retain(|d| {
                    let c = if *d == FRESH {
                        0
                    } else {
                        self.topo.group(s).count(*d)
                    };
                    c + self_match <= min + max_skew
                });
                if cands.is_empty() {
                    return Err(Miss::SpreadExceeded(s));
                }
                first_spread.get_or_insert(s);
            }
            for ai in 0..self.groups[g].variants[vi].variant.affinity.len() {
                let a = self.groups[g].variants[vi].variant.affinity[ai];
                if self.topo.group(a).key != key {
                    continue;
                }
                let grp = self.topo.group(a);
                let Some(cands) = allowed.as_mut() else {
                    return Err(Miss::NoLabel(a));
                };
                let self_match = self.groups[g].matches.contains(&a);
                if grp.total() == 0 && self_match {
                    continue; // the first of a self-affine group may start anywhere
                }
                cands.retain(|d| *d != FRESH && grp.count(*d) > 0);
                if cands.is_empty() {
                    return Err(Miss::NoAffinityMatch(a));
                }
            }
            for ai in 0..self.groups[g].variants[vi].variant.anti_affinity.len() {
                let a = self.groups[g].variants[vi].variant.anti_affinity[ai];
                if self.topo.group(a).key != key {
                    continue;
                }
                if let Some(cands) = allowed.as_mut() {
                    let grp = self.topo.group(a);
                    cands.retain(|d| *d == FRESH || grp.count(*d) == 0);
                    if cands.is_empty() {
                        return Err(Miss::AntiAffinity(a));
                    }
                }
            }
            for &a in &self.groups[g].inverse_anti {
                let grp = self.topo.group(a);
                if grp.key != key {
                    continue;
                }
                if let Some(cands) = allowed.as_mut() {
                    cands.retain(|d| *d == FRESH || grp.owners_in(*d) == 0);
                    if cands.is_empty() {
                        return Err(Miss::InverseAntiAffinity(a));
                    }
                }
            }

            if labels::is_per_node(key) {
                continue;
            }
            if let (Some(cands), Some(before)) = (allowed, before) {
                if cands.len() > 1 {
                    // The pod takes part in this key's counts: its domain must be known.
                    cands.sort_by(|a, b| {
                        let ca = first_spread.map_or(0, |s| self.count(s, *a));
                        let cb = first_spread.map_or(0, |s| self.count(s, *b));
                        ca.cmp(&cb)
                            .then_with(|| self.topo.domain_name(*a).cmp(self.topo.domain_name(*b)))
                    });
                    cands.truncate(1);
                }
                if cands.len() < before {
                    extra.add(Requirement::any_of(
                        key,
                        cands.iter().map(|d| self.topo.domain_name(*d).to_string()),
                    ));
                }
            }
        }
        Ok(if extra.is_empty() { None } else { Some(extra) })
    }
}

/// What [`Solver::zone_refuses`] needs, worked out once per pod before its claims are
/// scanned: the minimum count of each of its zone spread terms (counts do not change while
/// a pod's claims are scanned), and the zones already judged.
pub(super) struct ZoneCheck {
    mins: Vec<(usize, u32)>,
    judged: Vec<(DomainId, bool)>,
}

impl Solver<'_> {
    /// A [`ZoneCheck`] for the pod's variant, or None when it has no term on zones.
    pub(super) fn zone_check(&mut self, g: usize, vi: usize) -> Option<ZoneCheck> {
        if !self.groups[g].keys.iter().any(|k| k == labels::ZONE) {
            return None;
        }
        let mut mins = Vec::new();
        for si in 0..self.groups[g].variants[vi].variant.spread.len() {
            let s = self.groups[g].variants[vi].variant.spread[si];
            if self.topo.group(s).key == labels::ZONE {
                let min = self.spread_min(g, vi, s);
                mins.push((s, min));
            }
        }
        Some(ZoneCheck {
            mins,
            judged: Vec::new(),
        })
    }

    /// Whether a claim pinned to zone `zone` fails the pod's zone terms: then
    /// [`Self::topology_fit`] refuses it (it runs the same tests on that one zone), so
    /// choosing among claims need not offer it.
    #[inline]
    pub(super) fn zone_refuses(
        &self,
        g: usize,
        vi: usize,
        zone: DomainId,
        zc: &mut ZoneCheck,
    ) -> bool {
        match zc.judged.iter().find(|(z, _)| *z == zone) {
            Some(&(_, r)) => r,
            None => self.judge_zone(g, vi, zone, zc),
        }
    }

    /// [`Self::zone_refuses`] for a zone not judged yet (a few times per pod).
    #[inline(never)]
    fn judge_zone(&self, g: usize, vi: usize, zone: DomainId, zc: &mut ZoneCheck) -> bool {
        let r = self.domain_refuses(g, vi, labels::ZONE, zone, &zc.mins);
        zc.judged.push((zone, r));
        r
    }
    /// [`Self::topology_fit_keys`]' tests on key `key` for a candidate in domain `d` alone.
    fn domain_refuses(
        &self,
        g: usize,
        vi: usize,
        key: &str,
        d: DomainId,
        mins: &[(usize, u32)],
    ) -> bool {
        let group = &self.groups[g];
        let v = &group.variants[vi].variant;
        let count = |t: &crate::topology::Group| if d == FRESH { 0 } else { t.count(d) };
        for &s in &v.spread {
            let t = self.topo.group(s);
            if t.key != key {
                continue;
            }
            let Kind::Spread { max_skew, .. } = t.kind else {
                continue;
            };
            let Some(&(_, min)) = mins.iter().find(|(m, _)| *m == s) else {
                return false;
            };
            let self_match = u32::from(group.matches.contains(&s));
            if count(t) + self_match > min + max_skew {
                return true;
            }
        }
        for &a in &v.affinity {
            let t = self.topo.group(a);
            if t.key != key || (t.total() == 0 && group.matches.contains(&a)) {
                continue;
            }
            if d == FRESH || t.count(d) == 0 {
                return true;
            }
        }
        for &a in &v.anti_affinity {
            let t = self.topo.group(a);
            if t.key == key && d != FRESH && t.count(d) > 0 {
                return true;
            }
        }
        group.inverse_anti.iter().any(|&a| {
            let t = self.topo.group(a);
            t.key == key && d != FRESH && t.owners_in(d) > 0
        })
    }
}
