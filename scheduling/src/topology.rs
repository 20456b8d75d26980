//! Topology bookkeeping for spread constraints and pod (anti-)affinity: how many matching
//! pods each domain (a zone, a hostname, any label value) holds, updated as placement goes.
//!
//! Every distinct constraint becomes one [`Group`], shared by all pods that carry the same
//! term, so a Deployment's thousand replicas cost one group. Domains are interned to small
//! integers so the per-candidate checks are map lookups on integers.

use std::collections::HashMap;

use crate::fast_hash::FastMap;
use std::hash::{BuildHasherDefault, Hasher};

use crate::labels;
use crate::pod::{AffinityTerm, Namespaces, Pod, PodSelector, TopologySpread};

pub type DomainId = u32;

/// Counts per domain. Placement looks them up for every candidate of every pod; the keys
/// are small integers this module hands out, so a multiplicative hash is enough (and, with
/// no random seed, iteration order would be deterministic too, though nothing iterates).
type PerDomain = HashMap<DomainId, u32, BuildHasherDefault<IdHasher>>;

#[derive(Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }
    fn write_u32(&mut self, n: u32) {
        self.0 = (self.0 ^ u64::from(n)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Kind {
    Spread {
        max_skew: u32,
        min_domains: Option<u32>,
    },
    Affinity,
    AntiAffinity,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct GroupKey {
    kind: Kind,
    key: String,
    selector: PodSelector,
    namespaces: Namespaces,
    honor_node_affinity: bool,
    honor_taints: bool,
}

#[derive(Debug, Clone)]
pub struct Group {
    pub kind: Kind,
    pub key: String,
    pub selector: PodSelector,
    pub namespaces: Namespaces,
    pub honor_node_affinity: bool,
    pub honor_taints: bool,
    /// Pods matching the selector, per domain.
    counts: PerDomain,
    /// Pods matching the selector anywhere.
    total: u32,
    /// For anti-affinity: pods that *carry* this term, per domain (the inverse direction:
    /// a pod matching the selector may not join them).
    owners: PerDomain,
}

impl Group {
    pub fn count(&self, d: DomainId) -> u32 {
        self.counts.get(&d).copied().unwrap_or(0)
    }

    /// The domains holding at least one matching pod, in no particular order.
    pub fn counted_domains(&self) -> impl Iterator<Item = DomainId> + '_ {
        self.counts.iter().filter(|(_, n)| **n > 0).map(|(d, _)| *d)
    }

    pub fn owners_in(&self, d: DomainId) -> u32 {
        self.owners.get(&d).copied().unwrap_or(0)
    }

    pub fn total(&self) -> u32 {
        self.total
    }

    /// Whether the group's key names one node (hostname, NodeClaim): every new node is a
    /// domain of its own.
    pub fn is_per_node(&self) -> bool {
        labels::is_per_node(&self.key)
    }

    pub fn describe(&self) -> String {
        match &self.kind {
            Kind::Spread { max_skew, .. } => {
                format!("topology spread on {} (maxSkew {max_skew})", self.key)
            }
            Kind::Affinity => format!("pod affinity on {} ({})", self.key, self.selector),
            Kind::AntiAffinity => format!("pod anti-affinity on {} ({})", self.key, self.selector),
        }
    }
}

/// A pod's own constraints, as group indices.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PodTerms {
    pub spread_hard: Vec<usize>,
    pub spread_soft: Vec<usize>,
    pub affinity: Vec<usize>,
    pub anti_affinity: Vec<usize>,
    /// (weight, group), heaviest first.
    pub preferred_affinity: Vec<(i32, usize)>,
    pub preferred_anti_affinity: Vec<(i32, usize)>,
}

#[derive(Debug, Default)]
pub struct Topology {
    groups: Vec<Group>,
    index: FastMap<GroupKey, usize>,
    domain_ids: FastMap<String, DomainId>,
    domain_names: Vec<String>,
    /// Built on first use after the last group was added; see [`LabelIndex`].
    label_index: std::cell::RefCell<Option<LabelIndex>>,
}

/// Groups by a label their selector demands (a key with an `In` set, absent not allowed):
/// a pod can match only the groups under its own labels, and the few with no such
/// requirement. Every Deployment brings its own groups, so scanning them all for every pod
/// grows with the square of the workload.
#[derive(Debug, Default)]
struct LabelIndex {
    /// key → value → groups.
    by_label: FastMap<String, FastMap<String, Vec<usize>>>,
    rest: Vec<usize>,
}

impl LabelIndex {
    fn new(groups: &[Group]) -> LabelIndex {
        let mut idx = LabelIndex::default();
        for (g, group) in groups.iter().enumerate() {
            let demanded = group
                .selector
                .iter()
                .find(|r| !r.allows_absent() && r.finite_values().is_some());
            match demanded.and_then(|r| r.finite_values().map(|v| (&r.key, v))) {
                Some((key, values)) => {
                    let by_value = idx.by_label.entry(key.clone()).or_default();
                    for v in values {
                        by_value.entry(v.clone()).or_default().push(g);
                    }
                }
                None => idx.rest.push(g),
            }
        }
        idx
    }
}

impl Topology {
    pub fn group(&self, g: usize) -> &Group {
        &self.groups[g]
    }

    pub fn groups(&self) -> &[Group] {
        &self.groups
    }

    pub fn intern(&mut self, value: &str) -> DomainId {
        if let Some(id) = self.domain_ids.get(value) {
            return *id;
        }
        let id = self.domain_names.len() as DomainId;
        self.domain_names.push(value.to_string());
        self.domain_ids.insert(value.to_string(), id);
        id
    }

    pub fn domain_id(&self, value: &str) -> Option<DomainId> {
        self.domain_ids.get(value).copied()
    }

    pub fn domain_name(&self, id: DomainId) -> &str {
        &self.domain_names[id as usize]
    }

    fn add_group(&mut self, key: GroupKey) -> usize {
        if let Some(g) = self.index.get(&key) {
            return *g;
        }
        let g = self.groups.len();
        *self.label_index.get_mut() = None;
        self.groups.push(Group {
            kind: key.kind.clone(),
            key: key.key.clone(),
            selector: key.selector.clone(),
            namespaces: key.namespaces.clone(),
            honor_node_affinity: key.honor_node_affinity,
            honor_taints: key.honor_taints,
            counts: PerDomain::default(),
            total: 0,
            owners: PerDomain::default(),
        });
        self.index.insert(key, g);
        g
    }

    fn spread_group(&mut self, pod: &Pod, s: &TopologySpread) -> usize {
        self.add_group(GroupKey {
            kind: Kind::Spread {
                max_skew: s.max_skew.max(1),
                min_domains: s.min_domains,
            },
            key: s.topology_key.clone(),
            selector: s.selector.clone(),
            // Spread counts pods of the incoming pod's own namespace only.
            namespaces: Namespaces::Only([pod.namespace.clone()].into()),
            honor_node_affinity: s.honor_node_affinity,
            honor_taints: s.honor_taints,
        })
    }

    fn term_group(&mut self, kind: Kind, t: &AffinityTerm) -> usize {
        self.add_group(GroupKey {
            kind,
            key: t.topology_key.clone(),
            selector: t.selector.clone(),
            namespaces: t.namespaces.clone(),
            honor_node_affinity: false,
            honor_taints: false,
        })
    }

    /// Creates (or finds) the groups for a pod's own constraints.
    pub fn register(&mut self, pod: &Pod) -> PodTerms {
        let mut t = PodTerms::default();
        for s in &pod.spread {
            let g = self.spread_group(pod, s);
            if s.hard {
                t.spread_hard.push(g);
            } else {
                t.spread_soft.push(g);
            }
        }
        for a in &pod.affinity {
            t.affinity.push(self.term_group(Kind::Affinity, a));
        }
        for a in &pod.anti_affinity {
            t.anti_affinity.push(self.term_group(Kind::AntiAffinity, a));
        }
        for w in &pod.preferred_affinity {
            let g = self.term_group(Kind::Affinity, &w.term);
            t.preferred_affinity.push((w.weight, g));
        }
        for w in &pod.preferred_anti_affinity {
            let g = self.term_group(Kind::AntiAffinity, &w.term);
            t.preferred_anti_affinity.push((w.weight, g));
        }
        t.preferred_affinity.sort_by_key(|(w, g)| (-w, *g));
        t.preferred_anti_affinity.sort_by_key(|(w, g)| (-w, *g));
        t
    }

    /// Groups whose selector picks this pod: placing it changes their counts.
    pub fn matching_groups(&self, pod: &Pod) -> Vec<usize> {
        let mut index = self.label_index.borrow_mut();
        let idx = index.get_or_insert_with(|| LabelIndex::new(&self.groups));
        let mut candidates: Vec<usize> = idx.rest.clone();
        for (k, v) in &pod.labels {
            if let Some(gs) = idx.by_label.get(k).and_then(|by_value| by_value.get(v)) {
                candidates.extend_from_slice(gs);
            }
        }
        candidates.sort_unstable();
        candidates.dedup();
        candidates
            .retain(|g| pod.matched_by(&self.groups[*g].selector, &self.groups[*g].namespaces));
        candidates
    }

    /// Records a pod in `domain` for the groups it matches and the anti-affinity groups it
    /// carries.
    pub fn record(
        &mut self,
        matches: &[usize],
        owned_anti: &[usize],
        domain_for: impl Fn(&str) -> Option<DomainId>,
    ) {
        for &g in matches {
            let group = &mut self.groups[g];
            group.total += 1;
            if let Some(d) = domain_for(&group.key) {
                *group.counts.entry(d).or_insert(0) += 1;
            }
        }
        for &g in owned_anti {
            let group = &mut self.groups[g];
            if let Some(d) = domain_for(&group.key) {
                *group.owners.entry(d).or_insert(0) += 1;
            }
        }
    }
}
