//! NodeClaims under construction: which instance types still fit the pods given so far,
//! and how a finished claim becomes a [`NewClaim`] in the plan.

use std::collections::{BTreeMap, BTreeSet};

use crate::fast_hash::FastMap;
use std::rc::Rc;
use std::sync::Arc;

use super::explain::{Refusal, Why};
use super::state::{Solver, Target, ports_clash, type_compatible};
use crate::instance_type::{InstanceType, Offering};
use crate::labels;
use crate::plan::NewClaim;
use crate::pod::{HostPort, Pod};
use crate::requirements::{Requirement, Requirements, Undefined};
use crate::resources::Resources;
use crate::topology::DomainId;
use crate::volumes::EBS_CSI_DRIVER;

/// (pool, a claim's requirements without its names) → per type of the pool: whether it is
/// compatible, and its cheapest allowed offering.
/// Per (pool, claim requirements, reservations planned full so far): each type's compatibility
/// and cheapest usable offering.
type TypeOffers<'s> = FastMap<(usize, Requirements, usize), Vec<(bool, Option<&'s Offering>)>>;

/// Slots left in each capacity reservation while claims are finished one by one, so no more
/// claims are planned into a reservation than it has room for.
struct ReservedSlots {
    left: BTreeMap<String, u32>,
    full: BTreeSet<String>,
}

impl ReservedSlots {
    /// Each reservation's remaining count, less the in-flight claims already headed into it
    /// (a claim launched since the count was read is then counted twice until the count is
    /// read again: placement errs towards on-demand, never towards a full reservation).
    fn new<'t>(
        types: impl Iterator<Item = &'t InstanceType>,
        nodes: &[crate::ExistingNode],
    ) -> Self {
        let mut left = BTreeMap::new();
        for r in types
            .flat_map(|t| &t.offerings)
            .filter_map(|o| o.reservation.as_ref())
        {
            left.entry(r.id.clone()).or_insert(r.remaining);
        }
        for n in nodes.iter().filter(|n| n.in_flight) {
            let id = n
                .requirements
                .get(labels::CAPACITY_RESERVATION_ID)
                .and_then(|r| r.single_value());
            if let Some(l) = id.and_then(|id| left.get_mut(id)) {
                *l = l.saturating_sub(1);
            }
        }
        let full = left
            .iter()
            .filter(|(_, n)| **n == 0)
            .map(|(id, _)| id.clone())
            .collect();
        ReservedSlots { left, full }
    }

    fn usable(&self, o: &Offering) -> bool {
        o.reservation
            .as_ref()
            .is_none_or(|r| !self.full.contains(&r.id))
    }

    fn take(&mut self, id: &str) {
        if let Some(l) = self.left.get_mut(id) {
            *l = l.saturating_sub(1);
            if *l == 0 {
                self.full.insert(id.to_string());
            }
        }
    }
}

/// An instance type as one pool sees it.
pub(super) struct TypeInfo {
    pub it: Arc<InstanceType>,
    /// Allocatable minus the DaemonSet overhead on this type: room left for pending pods.
    pub usable: Resources,
    /// The DaemonSet pods' requests on a node of this type.
    pub daemon: Resources,
    /// Host ports the DaemonSet pods on a node of this type hold.
    pub daemon_ports: Vec<HostPort>,
    /// Cheapest offering the pool allows.
    pub min_price: f64,
    /// Price over the worth of its room at the pool's shadow prices: 1.0 for the types an
    /// ideal fractional plan buys, more for types of the wrong shape or with much overhead.
    pub efficiency: f64,
    /// Position among the pool's types by size, largest first (CPU, then memory, then
    /// index): a claim orders its growth types by it, one integer compared instead of three.
    pub size_rank: u32,
}

impl TypeInfo {
    /// Whether a DaemonSet on a node of this type holds one of `ports`.
    pub(super) fn ports_taken(&self, ports: &[HostPort]) -> bool {
        !self.daemon_ports.is_empty()
            && ports
                .iter()
                .any(|hp| self.daemon_ports.iter().any(|d| d.conflicts(hp)))
    }
}

pub(super) struct Claim {
    pub name: String,
    pub hostname: DomainId,
    pub pool: usize,
    pub reqs: Requirements,
    /// Indices into the pool's types, cheapest first. The options proper are those that fit
    /// `requests` (see [`Claim::options`]): a pod that only adds requests does not filter
    /// this long list, the entries it outgrows are skipped when read.
    pub options: Vec<u32>,
    /// Position in `options` of the first (cheapest) entry that fits `requests`: requests
    /// only grow, so it only moves forward.
    pub first: usize,
    /// The options the claim may still grow within (efficient types of the ideal shape, and
    /// anything cheaper): packing fills a claim only as far as one of these holds it. Like
    /// `options`, only the entries that fit `requests` count.
    pub growth: Vec<u32>,
    /// Requests of the placed pods (DaemonSet overhead is already out of `usable`).
    pub requests: Resources,
    /// Per-resource maximum of the growth types' room: a cheap first rejection test.
    pub max_usable: Resources,
    /// The growth types no other growth type dominates in every resource: a pod fits some
    /// growth type exactly when it fits one of these, and there are only a handful. Kept
    /// while the claim outgrows growth types: a type that no longer fits dominates none
    /// that does.
    pub frontier: Vec<u32>,
    /// Capacity of the claim's cheapest option, and one node: what the claim holds of its
    /// pool's limits.
    pub reserved: Resources,
    pub pods: Vec<usize>,
    /// Host ports of the placed pods. DaemonSets' ports are not here: they depend on the
    /// type, so types whose DaemonSets hold one of these are left out of the options.
    pub host_ports: Vec<HostPort>,
    /// The EBS CSI volumes (claim names, sorted) of the placed pods: the claim launches only
    /// as types that can attach this many ([`InstanceType::ebs_attach_limit`]).
    pub ebs: Vec<String>,
    /// Pods this claim refused since it last changed, for the groups whose answer depends
    /// on nothing else (see [`Solver::memo_ok`]): their next pod of the same requests, on
    /// the same rung, gets the same answer, so it is not asked again. Without it, claims a
    /// kind of pod can no longer join are asked by every such pod, and a plan's cost grows
    /// with pods × claims × types.
    pub refused: Vec<RefusedPod>,
    /// Per topology key asked so far, the domains `reqs` allows (None: no label for the
    /// key), as [`Solver::topology_fit`] reads them for every pod it checks here: a lookup
    /// in `reqs` and an interning per value each time cost more than the check itself.
    /// Emptied whenever `reqs` changes.
    pub domains: Vec<(String, Option<Vec<DomainId>>)>,
}

/// One remembered refusal (see [`Claim::refused`]).
pub(super) struct RefusedPod {
    pub group: usize,
    /// The rung of relaxation asked.
    pub variant: usize,
    pub need: Resources,
    /// Set when the marginal-cost rule refused, to the price of a node of its own that it
    /// compared with: that price is kept per pod, worked out on the first rung that asks,
    /// so for a group of several rungs another pod's answer is the same only if its price
    /// is the same. Any other refusal depends on the claim, group, rung and requests alone.
    pub alone: Option<f64>,
}

/// While packing, a claim only grows within instance types at most this inefficient (see
/// [`TypeInfo::efficiency`]). Without a bound, first-fit fills a claim until only a type of
/// the wrong shape holds it (a memory-heavy type for a CPU-heavy mix, say) and pays for the
/// idle part. Once packing is done, [`Solver::finish_claims`] offers every type that fits
/// again, so a small claim still launches as a small, cheap type.
const EFFICIENCY_SLACK: f64 = 1.10;

/// A pod may raise its claim's price by at most this many times what a node of its own
/// would cost. Growth in small steps (one size up) stays well inside it; a jump to a type of
/// another kind (a CPU pod pushing a GPU claim onto a 4-GPU type) does not.
const MARGINAL_LIMIT: f64 = 2.0;

/// Why a claim planned in this run refuses a pod ([`Solver::claim_takes`]).
#[derive(Debug, Clone, Copy)]
pub(super) enum ClaimMiss {
    /// None of the types it may grow within holds its pods and this one.
    Room,
    /// One of the pod's host ports is taken by a pod already on it.
    HostPort,
    /// Its NodePool refuses the pod (the pool's own reason says why).
    Pool,
    /// Its requirements (zone, type, ...) conflict with the pod's.
    Requirements,
    Topology(super::topology_fit::Miss),
    /// No instance type it may launch as holds it within limits, requirements and ports.
    Types,
    /// Joining would raise its price by more than a node of the pod's own would cost.
    Price,
    /// Too few distinct values would remain for its pool's `minValues`.
    MinValues,
    /// No type it may grow within can attach its EBS volumes and this pod's.
    Volumes,
}

/// A new claim before it is named ([`Solver::new_claim_stage`]).
pub(super) struct NewStage {
    pub reqs: Requirements,
    /// The pool fit's types the topology narrowing keeps.
    pub offered: Vec<u32>,
    /// Those that hold the pod within the pool's limits, cheapest first.
    pub options: Vec<u32>,
    pub growth: Vec<u32>,
    /// The pool fit's types that are not options, and why.
    pub misses: Vec<(u32, NewTypeMiss)>,
}

/// Why a type the pool fit kept is not an option for a new claim ([`Solver::new_type_miss`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum NewTypeMiss {
    /// The topology narrowing (zone, capacity type) rules it out.
    Topology,
    /// Its room (after DaemonSets) does not hold the pod's requests.
    TooSmall,
    /// Launching it would pass the pool's limits.
    Limits,
    /// It cannot attach the pod's EBS volumes.
    Volumes,
}

/// What accepting a pod changes.
pub(super) struct ClaimUpdate {
    reqs: Option<Requirements>,
    lists: Lists,
}

/// The options and growth types after accepting a pod.
enum Lists {
    /// Filtered anew (requirements narrowed, limits, minValues or a co-located group's
    /// room): the lists themselves.
    Filtered { options: Vec<u32>, growth: Vec<u32> },
    /// Only the pod's requests drop types: the lists stay (their readers skip what the
    /// claim outgrew), and the first fitting option is at this position.
    Lazy { first: usize },
}

impl Claim {
    /// The instance types that still hold the claim's pods, cheapest first.
    pub(super) fn options<'s>(&'s self, types: &'s [TypeInfo]) -> impl Iterator<Item = u32> + 's {
        self.options[self.first..]
            .iter()
            .copied()
            .filter(|&o| self.requests.fits_in(&types[o as usize].usable))
    }

    /// Remembers a refusal (see [`Claim::refused`]) until the claim changes.
    pub(super) fn refuse(&mut self, g: usize, vi: usize, need: &Resources, alone: Option<f64>) {
        let known = |r: &RefusedPod| {
            r.group == g
                && r.variant == vi
                && r.alone.map(f64::to_bits) == alone.map(f64::to_bits)
                && r.need == *need
        };
        if self.refused.iter().any(known) {
            return;
        }
        self.refused.push(RefusedPod {
            group: g,
            variant: vi,
            need: need.clone(),
            alone,
        });
    }

    pub(super) fn apply(&mut self, u: ClaimUpdate, pod: &Pod, p: usize, types: &[TypeInfo]) {
        self.refused.clear();
        self.requests.add(&pod.requests);
        if let Some(r) = u.reqs {
            self.reqs = r;
            self.domains.clear();
        }
        self.pods.push(p);
        self.host_ports.extend(pod.host_ports.iter().cloned());
        if !pod.volumes.is_empty() {
            for v in pod.volumes.claims_of(EBS_CSI_DRIVER) {
                if let Err(at) = self.ebs.binary_search_by(|x| x.as_str().cmp(v)) {
                    self.ebs.insert(at, v.to_string());
                }
            }
        }
        match u.lists {
            Lists::Filtered { options, growth } => {
                let changed =
                    options.len() != self.options.len() || growth.len() != self.growth.len();
                self.options = options;
                self.first = 0;
                self.growth = growth;
                if changed {
                    self.refresh(types);
                }
            }
            Lists::Lazy { first } => {
                // Every growth type that still fits is within a frontier type that does.
                let mut max_usable = Resources::default();
                for &f in &self.frontier {
                    let room = &types[f as usize].usable;
                    if self.requests.fits_in(room) {
                        max_usable.max_with(room);
                    }
                }
                self.max_usable = max_usable;
                if first != self.first {
                    self.first = first;
                    self.reserve(types);
                }
            }
        }
    }

    fn refresh(&mut self, types: &[TypeInfo]) {
        let mut max_usable = Resources::default();
        for &o in &self.growth {
            max_usable.max_with(&types[o as usize].usable);
        }
        self.max_usable = max_usable;
        // Largest first. The ranks are a permutation of the pool's type indices, so placing
        // each growth type at its rank orders them without a sort (this runs per new claim
        // and per change of its lists).
        let mut at_rank = vec![u32::MAX; types.len()];
        for &o in &self.growth {
            let slot = &mut at_rank[types[o as usize].size_rank as usize];
            debug_assert_eq!(*slot, u32::MAX, "size ranks are distinct");
            *slot = o;
        }
        self.frontier.clear();
        for o in at_rank.into_iter().filter(|&o| o != u32::MAX) {
            let room = &types[o as usize].usable;
            if !self
                .frontier
                .iter()
                .any(|&f| room.fits_in(&types[f as usize].usable))
            {
                self.frontier.push(o);
            }
        }
        self.reserve(types);
    }

    fn reserve(&mut self, types: &[TypeInfo]) {
        // Against limits a claim holds what it plans to launch: its cheapest option. Larger
        // options are trimmed to the pool's leftover room when the claim is finished.
        self.reserved = self
            .options
            .get(self.first)
            .map_or_else(Resources::default, |&o| {
                crate::nodepool::limit_usage(&types[o as usize].it.capacity)
            });
    }
}

/// How many EBS CSI volumes a claim holding `held` would hold with `pod`, when the pod adds
/// any (None: it adds none, so no type is ruled out by volumes).
pub(super) fn ebs_after(held: &[String], pod: &Pod) -> Option<usize> {
    if pod.volumes.is_empty() {
        return None;
    }
    let adding = pod
        .volumes
        .claims_of(EBS_CSI_DRIVER)
        .filter(|c| held.binary_search_by(|x| x.as_str().cmp(c)).is_err())
        .count();
    (adding > 0).then(|| held.len().saturating_add(adding))
}

/// Whether a node of type `it` can attach `ebs` EBS CSI volumes (None: no new ones).
pub(super) fn holds_ebs(it: &InstanceType, ebs: Option<usize>) -> bool {
    ebs.is_none_or(|n| {
        it.ebs_attach_limit
            .is_none_or(|l| n <= usize::try_from(l).unwrap_or(usize::MAX))
    })
}

fn room_ok(room: &Option<BTreeMap<String, i64>>, capacity: &Resources) -> bool {
    room.as_ref()
        .is_none_or(|r| crate::nodepool::within_room(r, capacity))
}

/// Distinct values `key` takes over the options (zones and capacity types over offerings).
fn distinct_values(key: &str, options: &[u32], types: &[TypeInfo], reqs: &Requirements) -> usize {
    let mut seen: BTreeSet<&str> = BTreeSet::new();
    for &o in options {
        let it = &types[o as usize].it;
        match key {
            labels::INSTANCE_TYPE => {
                seen.insert(&it.name);
            }
            labels::ZONE | labels::ZONE_ID | labels::CAPACITY_TYPE => {
                for off in it.offerings.iter().filter(|off| off.available) {
                    let v = match key {
                        labels::ZONE => &off.zone,
                        labels::ZONE_ID => match &off.zone_id {
                            Some(id) => id,
                            None => continue,
                        },
                        _ => &off.capacity_type,
                    };
                    if reqs.get(key).is_none_or(|r| r.allows(v)) {
                        seen.insert(v);
                    }
                }
            }
            _ => {
                if let Some(v) = it.label(key) {
                    seen.insert(v);
                }
            }
        }
    }
    seen.len()
}

/// The first requirement whose minValues the options cannot meet.
fn min_values_short<'r>(
    reqs: &'r Requirements,
    options: &[u32],
    types: &[TypeInfo],
) -> Option<(&'r Requirement, usize)> {
    reqs.iter().find_map(|r| {
        let min = r.min_values? as usize;
        let have = distinct_values(&r.key, options, types, reqs);
        (have < min).then_some((r, have))
    })
}

/// Under `minValues: BestEffort`, whether narrowing a claim's options from `before` to
/// `after` loses values it still had: below `minValues`, a claim keeps what it has but may
/// not shrink further (Strict refuses any shortfall).
fn best_effort_short(
    reqs: &Requirements,
    after: &[u32],
    before: &[u32],
    types: &[TypeInfo],
) -> bool {
    reqs.iter().any(|r| {
        let Some(min) = r.min_values else {
            return false;
        };
        let have = distinct_values(&r.key, after, types, reqs);
        have < (min as usize).min(distinct_values(&r.key, before, types, reqs))
    })
}

/// The requirements with each `minValues` lowered to the distinct values `options` offer.
fn relaxed_min_values(reqs: &Requirements, options: &[u32], types: &[TypeInfo]) -> Requirements {
    let mut out = Requirements::new();
    for r in reqs.iter() {
        let mut r = r.clone();
        if let Some(min) = r.min_values {
            let have = distinct_values(&r.key, options, types, reqs) as u32;
            r.min_values = Some(min.min(have.max(1)));
        }
        out.add(r);
    }
    out
}

fn zone_phrase(reqs: &Requirements, all: &BTreeSet<String>) -> String {
    match reqs.get(labels::ZONE).and_then(|r| r.finite_values()) {
        Some(z) if z.len() < all.len() || all.is_empty() => {
            let z: Vec<&str> = z.iter().map(String::as_str).collect();
            if z.is_empty() {
                " in any zone (the zone requirements together allow none)".to_string()
            } else if z.len() == 1 {
                format!(" in zone {}", z[0])
            } else {
                format!(" in zones {}", z.join(", "))
            }
        }
        _ => String::new(),
    }
}

impl Solver<'_> {
    /// Whether claim `c` can take pod `p` under variant `vi`, and what would change.
    pub(super) fn claim_accepts(
        &mut self,
        p: usize,
        g: usize,
        vi: usize,
        c: usize,
    ) -> Option<ClaimUpdate> {
        self.claim_takes(p, g, vi, c).ok()
    }

    /// [`Self::claim_accepts`] with the reason for a refusal (for `explain`).
    pub(super) fn claim_takes(
        &mut self,
        p: usize,
        g: usize,
        vi: usize,
        c: usize,
    ) -> Result<ClaimUpdate, ClaimMiss> {
        self.marginal_refusal.set(None);
        let pod = &self.snap.pending[p];
        {
            let claim = &self.claims[c];
            let need = self.need(p);
            if !claim.requests.fits_with(need, &claim.max_usable) {
                return Err(ClaimMiss::Room);
            }
            let types = &self.pools[claim.pool].types;
            if !claim
                .frontier
                .iter()
                .any(|&f| claim.requests.fits_with(need, &types[f as usize].usable))
            {
                return Err(ClaimMiss::Room);
            }
            if ports_clash(&pod.host_ports, &claim.host_ports) {
                return Err(ClaimMiss::HostPort);
            }
            let ebs = ebs_after(&claim.ebs, pod);
            if ebs.is_some()
                && !claim.growth.iter().any(|&o| {
                    let t = &types[o as usize];
                    claim.requests.fits_with(need, &t.usable) && holds_ebs(&t.it, ebs)
                })
            {
                return Err(ClaimMiss::Volumes);
            }
        }
        let pool = self.claims[c].pool;
        if !self.pool_fit(g, vi, pool) {
            return Err(ClaimMiss::Pool);
        }
        let v = &self.groups[g].variants[vi].variant;
        let narrowing = !v.requirements.is_empty();
        if narrowing
            && !self.claims[c]
                .reqs
                .compatible(&v.requirements, Undefined::WellKnownOpen)
        {
            return Err(ClaimMiss::Requirements);
        }
        let extra = if self.groups[g].any_topology {
            self.topology_fit(g, vi, Target::Claim(c))
                .map_err(ClaimMiss::Topology)?
        } else {
            None
        };
        let v = &self.groups[g].variants[vi].variant;
        let claim = &self.claims[c];
        let new_reqs = if narrowing || extra.is_some() {
            let mut r = claim.reqs.clone();
            r.add_all(&v.requirements);
            if let Some(e) = &extra {
                r.add_all(e);
            }
            if r.unsatisfiable_key().is_some() {
                return Err(ClaimMiss::Requirements);
            }
            Some(r)
        } else {
            None
        };
        let changed: Vec<&str> = v
            .requirements
            .keys()
            .chain(extra.iter().flat_map(|e| e.keys()))
            .collect();
        let ps = &self.pools[pool];
        let need = self.need(p);
        let room = self.room_for(pool, &claim.reserved);
        let compatible = new_reqs
            .as_ref()
            .map(|r| self.compatible_types(pool, r, &changed));
        // A pod with host ports drops the types whose DaemonSets hold one of them.
        let ports = ps.daemon_ports && !pod.host_ports.is_empty();
        // A pod adding EBS volumes drops the types that cannot attach them all.
        let ebs = ebs_after(&claim.ebs, pod);
        let keeps = |o: u32| {
            let t = &ps.types[o as usize];
            claim.requests.fits_with(need, &t.usable)
                && compatible.as_ref().is_none_or(|c| c[o as usize])
                && room_ok(&room, &t.it.capacity)
                && !(ports && t.ports_taken(&pod.host_ports))
                && holds_ebs(&t.it, ebs)
        };
        // Only requirements, limits, minValues and a co-location leader's room (larger than
        // its own requests) filter by more than the requests the claim will have; without
        // them the lists are not filtered, and the frontier test above showed that a growth
        // type holds the pod.
        let lazy = new_reqs.is_none()
            && room.is_none()
            && !ps.has_min_values
            && self.gang.is_none()
            && !ports
            && ebs.is_none();
        // The growth set is small: most rejections end here, before the full option list is
        // filtered. Only tested here; the list itself is made once the pod is known to fit.
        if !lazy && !claim.growth.iter().any(|&o| keeps(o)) {
            return Err(ClaimMiss::Types);
        }
        // Options are cheapest first: the first one kept is what the claim would cost. The
        // entries before `claim.first` no longer fit the claim, let alone with this pod.
        let first_at = claim.first
            + claim.options[claim.first..]
                .iter()
                .position(|&o| keeps(o))
                .ok_or(ClaimMiss::Types)?;
        let first = claim.options[first_at];
        // Joining must not cost more than a node of its own: a pod that would push the claim
        // to a much dearer type (a CPU pod onto a GPU claim, a memory-heavy pod onto a full
        // CPU-shaped claim) goes elsewhere.
        let before = ps.types[claim.options[claim.first] as usize].min_price;
        let after = ps.types[first as usize].min_price;
        if after > before + 1e-12 {
            let compute = || {
                self.pool_fit_result(g, vi, pool)
                    .as_ref()
                    .ok()
                    .and_then(|fit| {
                        fit.types
                            .iter()
                            .map(|&o| &ps.types[o as usize])
                            .find(|t| need.fits_in(&t.usable))
                            .map(|t| t.min_price)
                    })
            };
            // Cached per pod, except for a co-location leader, whose need is its group's.
            let alone = if self.gang.is_some() {
                compute()
            } else {
                let pools = self.pools.len();
                let cached = self.alone_price.borrow().get(p, pool, pools);
                match cached {
                    Some(price) => price,
                    None => {
                        let price = compute();
                        self.alone_price.borrow_mut().insert(p, pool, pools, price);
                        price
                    }
                }
            };
            if let Some(alone) = alone
                && after - before > MARGINAL_LIMIT * alone + 1e-12
            {
                self.marginal_refusal.set(Some(alone));
                return Err(ClaimMiss::Price);
            }
        }
        if lazy {
            return Ok(ClaimUpdate {
                reqs: None,
                lists: Lists::Lazy { first: first_at },
            });
        }
        let options: Vec<u32> = claim.options[first_at..]
            .iter()
            .copied()
            .filter(|&o| keeps(o))
            .collect();
        let growth: Vec<u32> = claim.growth.iter().copied().filter(|&o| keeps(o)).collect();
        if ps.has_min_values {
            let reqs = new_reqs.as_ref().unwrap_or(&claim.reqs);
            let short = if self.opts.min_values_policy == super::MinValuesPolicy::BestEffort {
                let before: Vec<u32> = claim.options(&ps.types).collect();
                best_effort_short(reqs, &options, &before, &ps.types)
            } else {
                min_values_short(reqs, &options, &ps.types).is_some()
            };
            if short {
                return Err(ClaimMiss::MinValues);
            }
        }
        Ok(ClaimUpdate {
            reqs: new_reqs,
            lists: Lists::Filtered { options, growth },
        })
    }

    /// Per type of pool `pi`: whether it can satisfy `reqs` on the `changed` keys
    /// ([`type_compatible`]). Claims narrowed the same way (to a zone, mostly) share the
    /// answer, so it is worked out once for all of the pool's types and kept.
    fn compatible_types(&self, pi: usize, reqs: &Requirements, changed: &[&str]) -> Rc<Vec<bool>> {
        // What type_compatible reads: the changed keys' requirements, and the offering keys'
        // when one of those changed.
        let offering_keys = labels::OFFERING_KEYS;
        let read = changed.iter().copied().chain(
            changed
                .iter()
                .any(|k| offering_keys.contains(k))
                .then_some(offering_keys)
                .into_iter()
                .flatten(),
        );
        let key = (
            pi,
            read.map(|k| (k.to_string(), reqs.get(k).cloned()))
                .collect::<Vec<_>>(),
        );
        if let Some(hit) = self.compatible.borrow().get(&key) {
            return Rc::clone(hit);
        }
        let types = &self.pools[pi].types;
        let answer: Rc<Vec<bool>> = Rc::new(
            types
                .iter()
                .map(|t| type_compatible(&t.it, reqs, Some(changed)))
                .collect(),
        );
        self.compatible.borrow_mut().insert(key, Rc::clone(&answer));
        answer
    }

    /// A new claim for pod `p` from the first NodePool (by weight) that can hold it, or
    /// every pool's reason for refusing.
    pub(super) fn new_claim(&mut self, p: usize, g: usize, vi: usize) -> Result<Claim, String> {
        if self.pools.is_empty() {
            return Err("no NodePool exists and no existing node fits".to_string());
        }
        // The pools a label index leaves (see [`Solver::candidate_pools`]) first: with
        // thousands of pools, most are ruled out by one label without a fit of their own.
        // The first pool (by weight) that takes the pod is one of them. Only when none does
        // is every pool asked, for its reason.
        if let Some(candidates) = self.candidate_pools(g, vi) {
            for pi in candidates.iter().copied() {
                if let Ok(c) = self.claim_from_pool(p, g, vi, pi) {
                    return Ok(c);
                }
            }
        }
        let mut reasons = Vec::new();
        for pi in 0..self.pools.len() {
            match self.claim_from_pool(p, g, vi, pi) {
                Ok(c) => return Ok(c),
                Err(r) => reasons.push(r.message),
            }
        }
        Err(reasons.join("; "))
    }

    /// The pools, in order, that a new claim for the variant could come from by one of its
    /// `In` requirements: a pool whose requirements (labels included) pin that key to one
    /// value outside the allowed ones conflicts with the variant, so its fit is an error.
    /// Pools whose instance types label the key are kept (the types decide it there).
    /// `None` when no requirement narrows the pools (every pool is a candidate).
    pub(super) fn candidate_pools(&mut self, g: usize, vi: usize) -> Option<Rc<Vec<usize>>> {
        if let Some(c) = &self.groups[g].variants[vi].candidates {
            return c.clone();
        }
        let keys: Vec<String> = self.groups[g].variants[vi]
            .variant
            .requirements
            .iter()
            .filter(|r| r.finite_values().is_some())
            .map(|r| r.key.clone())
            .collect();
        let mut best: Option<Vec<usize>> = None;
        for key in keys {
            let index = self.pool_index(&key);
            if index.other.len() == self.pools.len() {
                continue; // no pool pins the key
            }
            let v = &self.groups[g].variants[vi].variant;
            let Some(allowed) = v.requirements.get(&key).and_then(|r| r.finite_values()) else {
                continue;
            };
            let mut pools = index.other.clone();
            for value in allowed {
                if let Some(at) = index.by_value.get(value) {
                    pools.extend(at);
                }
            }
            if best.as_ref().is_none_or(|b| pools.len() < b.len()) {
                best = Some(pools);
            }
        }
        let out = best.map(|mut b| {
            b.sort_unstable();
            Rc::new(b)
        });
        self.groups[g].variants[vi].candidates = Some(out.clone());
        out
    }

    /// For `key`: the pools whose requirements pin it to one value, by value, and the
    /// others (key open, several values, or labelled by the pool's instance types).
    fn pool_index(&mut self, key: &str) -> Rc<super::state::PoolIndex> {
        if let Some(i) = self.pool_index.get(key) {
            return Rc::clone(i);
        }
        let mut index = super::state::PoolIndex::default();
        for (pi, ps) in self.pools.iter().enumerate() {
            match ps.reqs.get(key).and_then(|r| r.single_value()) {
                Some(v) if !ps.type_keys.contains(key) => {
                    index.by_value.entry(v.to_string()).or_default().push(pi)
                }
                _ => index.other.push(pi),
            }
        }
        let index = Rc::new(index);
        self.pool_index.insert(key.to_string(), Rc::clone(&index));
        index
    }

    fn claim_from_pool(
        &mut self,
        p: usize,
        g: usize,
        vi: usize,
        pi: usize,
    ) -> Result<Claim, Refusal> {
        let pod = &self.snap.pending[p];
        if !self.pool_fit(g, vi, pi) {
            return Err(self
                .pool_fit_result(g, vi, pi)
                .clone()
                .err()
                .expect("pool_fit is an error"));
        }
        let stage = self.new_claim_stage(p, g, vi, pi)?;
        if let Some(why) = self.new_claim_refusal(p, pi, &stage) {
            return Err(why);
        }
        let NewStage {
            mut reqs,
            options,
            growth,
            ..
        } = stage;
        let host_ports = pod.host_ports.clone();
        let name = self.fresh_name(pi);
        let hostname = self.topo.intern(&name);
        reqs.add(Requirement::single(labels::HOSTNAME, &name));
        reqs.add(Requirement::single(labels::NODECLAIM, &name));
        let mut claim = Claim {
            name,
            hostname,
            pool: pi,
            reqs,
            options,
            first: 0,
            growth,
            requests: pod.requests.clone(),
            max_usable: Resources::default(),
            frontier: Vec::new(),
            reserved: Resources::default(),
            pods: vec![p],
            host_ports,
            ebs: pod
                .volumes
                .claims_of(EBS_CSI_DRIVER)
                .map(str::to_string)
                .collect(),
            refused: Vec::new(),
            domains: Vec::new(),
        };
        claim.refresh(&self.pools[pi].types);
        Ok(claim)
    }

    /// A new claim from pool `pi` for pod `p` before it is named: its requirements (the
    /// pool fit's, narrowed by topology) and which of the fit's types hold the pod. Call
    /// [`Self::pool_fit`] first; an error is the topology's refusal.
    pub(super) fn new_claim_stage(
        &mut self,
        p: usize,
        g: usize,
        vi: usize,
        pi: usize,
    ) -> Result<NewStage, Refusal> {
        let Ok(fit) = self.pool_fit_result(g, vi, pi) else {
            unreachable!("pool_fit is ok")
        };
        let mut reqs = fit.reqs.clone();
        let zones = fit.zones.clone();
        reqs.add(Requirement::any_of(labels::ZONE, zones));
        let extra = if self.groups[g].any_topology {
            self.topology_fit(g, vi, Target::NewClaim(&reqs))
                .map_err(|miss| {
                    Refusal::new(
                        Why::Topology,
                        format!(
                            "NodePool {}: {}",
                            self.pools[pi].pool.name,
                            self.describe_miss(&miss)
                        ),
                    )
                })?
        } else {
            None
        };
        if let Some(e) = &extra {
            reqs.add_all(e);
        }
        let changed: Vec<&str> = extra.iter().flat_map(|e| e.keys()).collect();
        let narrowed = extra.is_some().then_some(changed.as_slice());
        let Ok(fit) = self.pool_fit_result(g, vi, pi) else {
            unreachable!("pool_fit is ok")
        };
        let ps = &self.pools[pi];
        let room = self.room_for(pi, &Resources::default());
        let (mut offered, mut fitting, mut misses) = (Vec::new(), Vec::new(), Vec::new());
        for &o in &fit.types {
            match self.new_type_miss(p, pi, o, &reqs, narrowed, &room) {
                None => {
                    offered.push(o);
                    fitting.push(o);
                }
                Some(NewTypeMiss::Topology) => misses.push((o, NewTypeMiss::Topology)),
                Some(m) => {
                    offered.push(o);
                    misses.push((o, m));
                }
            }
        }
        let ideal = &ps.ideal_hull;
        let efficient = |o: u32| {
            let t = &ps.types[o as usize];
            t.efficiency <= EFFICIENCY_SLACK && (ideal.is_zero() || t.usable.fits_in(ideal))
        };
        // Types cheaper than every efficient one may grow too: a lone small pod (or a GPU
        // pod the LP would rather put on a quarter of a 4-GPU type) should get a small node.
        // (The predicate per type, not a search of a list of the efficient ones: that was
        // quadratic in the number of types.)
        let growth: Vec<u32> = match fitting.iter().copied().find(|&o| efficient(o)) {
            None => fitting.clone(),
            Some(cheapest) => {
                let bar = ps.types[cheapest as usize].min_price;
                fitting
                    .iter()
                    .copied()
                    .filter(|&o| ps.types[o as usize].min_price < bar || efficient(o))
                    .collect()
            }
        };
        Ok(NewStage {
            reqs,
            offered,
            options: fitting,
            growth,
            misses,
        })
    }

    /// Why type `o` of pool `pi` cannot hold pod `p` as a new claim with requirements
    /// `reqs` (topology narrowed the keys `narrowed`, if any) within the pool's `room`.
    pub(super) fn new_type_miss(
        &self,
        p: usize,
        pi: usize,
        o: u32,
        reqs: &Requirements,
        narrowed: Option<&[&str]>,
        room: &Option<BTreeMap<String, i64>>,
    ) -> Option<NewTypeMiss> {
        let t = &self.pools[pi].types[o as usize];
        if narrowed.is_some_and(|changed| !type_compatible(&t.it, reqs, Some(changed))) {
            return Some(NewTypeMiss::Topology);
        }
        if !self.need(p).fits_in(&t.usable) {
            return Some(NewTypeMiss::TooSmall);
        }
        if !room_ok(room, &t.it.capacity) {
            return Some(NewTypeMiss::Limits);
        }
        (!holds_ebs(&t.it, ebs_after(&[], &self.snap.pending[p]))).then_some(NewTypeMiss::Volumes)
    }

    /// Why the new claim [`Self::new_claim_stage`] made cannot launch: no type holds the
    /// pod, or `minValues` cannot be met.
    pub(super) fn new_claim_refusal(
        &self,
        p: usize,
        pi: usize,
        stage: &NewStage,
    ) -> Option<Refusal> {
        let pod = &self.snap.pending[p];
        let ps = &self.pools[pi];
        let NewStage {
            reqs,
            offered,
            options,
            ..
        } = stage;
        if options.is_empty() {
            let mut why = self.explain_no_fit(pi, pod, offered, reqs);
            // The pool fit left out the types whose DaemonSets hold the pod's host ports:
            // if one of those would have held it, that is the reason to give.
            if ps.daemon_ports
                && let Some(t) = ps.types.iter().find(|t| {
                    t.ports_taken(&pod.host_ports)
                        && self.need(p).fits_in(&t.usable)
                        && type_compatible(&t.it, reqs, None)
                })
            {
                why.kind = Why::HostPort;
                why.message = format!(
                    "{}; {} would hold it, but a DaemonSet there holds one of its host ports",
                    why.message, t.it.name
                );
            }
            return Some(why);
        }
        if ps.has_min_values
            && self.opts.min_values_policy == super::MinValuesPolicy::Strict
            && let Some((r, have)) = min_values_short(reqs, options, &ps.types)
        {
            return Some(Refusal::new(
                Why::MinValues,
                format!(
                    "NodePool {}: only {have} value(s) of {} remain among instance types that fit, \
                     but minValues is {}",
                    ps.pool.name,
                    r.key,
                    r.min_values.unwrap_or(0)
                ),
            ));
        }
        None
    }

    /// Why no instance type of a pool can hold a pod, in words a person can act on.
    fn explain_no_fit(
        &self,
        pi: usize,
        pod: &Pod,
        offered: &[u32],
        reqs: &Requirements,
    ) -> Refusal {
        let ps = &self.pools[pi];
        let name = &ps.pool.name;
        if ps.types.is_empty() {
            // The pool's own requirements (or its class) leave no type of the catalog: say
            // which requirements, rather than blaming zones no type was left to offer.
            let reqs: Vec<String> = ps
                .pool
                .requirements
                .iter()
                .filter(|r| r.key != labels::ZONE)
                .map(|r| r.to_string())
                .collect();
            return Refusal::new(
                Why::InstanceTypes,
                format!(
                    "NodePool {name}: no instance type of the catalog meets the NodePool's requirements{}",
                    if reqs.is_empty() {
                        " and its node class".to_string()
                    } else {
                        format!(" ({})", reqs.join(", "))
                    }
                ),
            );
        }
        let zones = zone_phrase(reqs, &ps.zones);
        if offered.is_empty() {
            return Refusal::new(
                Why::InstanceTypes,
                format!("NodePool {name}: no matching instance type is offered{zones}"),
            );
        }
        let mut largest = Resources::default();
        for &o in offered {
            largest.max_with(&ps.types[o as usize].usable);
        }
        if let Some(r) = pod.requests.exceeding(&largest).first() {
            let beside = if offered
                .iter()
                .any(|&o| ps.types[o as usize].daemon.get(r) > 0)
            {
                " beside DaemonSet overhead"
            } else {
                ""
            };
            return Refusal::new(
                Why::Resources,
                format!(
                    "no instance type in NodePool {name} has {}{beside}{zones}; the largest offers {}",
                    Resources::describe(r, pod.requests.get(r)),
                    Resources::describe(r, largest.get(r)),
                ),
            );
        }
        let fits_alone = offered
            .iter()
            .any(|&o| pod.requests.fits_in(&ps.types[o as usize].usable));
        if !fits_alone {
            return Refusal::new(
                Why::Resources,
                format!(
                    "no single instance type in NodePool {name} has {} and {} together{zones}",
                    Resources::describe(crate::resources::CPU, pod.requests.cpu),
                    Resources::describe(crate::resources::MEMORY, pod.requests.memory),
                ),
            );
        }
        // Every type that holds the requests is one that cannot attach the pod's EBS volumes.
        if let Some(n) = ebs_after(&[], pod)
            && !offered.iter().any(|&o| {
                let t = &ps.types[o as usize];
                pod.requests.fits_in(&t.usable) && holds_ebs(&t.it, Some(n))
            })
        {
            let most = offered
                .iter()
                .map(|&o| &ps.types[o as usize])
                .filter(|t| pod.requests.fits_in(&t.usable))
                .filter_map(|t| t.it.ebs_attach_limit)
                .max()
                .unwrap_or(0);
            return Refusal::new(
                Why::Volumes,
                format!(
                    "NodePool {name}: the pod attaches {n} volumes of CSI driver {EBS_CSI_DRIVER}, \
                     more than the volume attach limit of any instance type that fits{zones} \
                     (the most is {most})"
                ),
            );
        }
        // Within the pool's own limits some type would fit: the cluster-wide limits stop it.
        let pool_room = ps.room_for(&Resources::default());
        if let Some(cluster) = self.cluster_room(&Resources::default())
            && offered.iter().any(|&o| {
                let t = &ps.types[o as usize];
                pod.requests.fits_in(&t.usable) && room_ok(&pool_room, &t.it.capacity)
            })
        {
            let limited: Vec<String> = cluster
                .iter()
                .map(|(k, left)| {
                    format!(
                        "{} limit with {} left",
                        Resources::describe(
                            k,
                            self.opts.cluster_limits.get(k).copied().unwrap_or(0)
                        ),
                        Resources::describe(k, (*left).max(0))
                    )
                })
                .collect();
            return Refusal::new(
                Why::Limits,
                format!(
                    "the cluster-wide limits across NodePools are reached ({}); no instance type of NodePool {name} that fits stays within them",
                    limited.join(", ")
                ),
            );
        }
        if let Some(room) = pool_room {
            let limited: Vec<String> = room
                .iter()
                .map(|(k, left)| {
                    format!(
                        "{} limit with {} left",
                        Resources::describe(k, ps.pool.limits.get(k).copied().unwrap_or(0)),
                        Resources::describe(k, (*left).max(0))
                    )
                })
                .collect();
            return Refusal::new(
                Why::Limits,
                format!(
                    "NodePool {name} has reached its limits ({}); no instance type that fits stays within them",
                    limited.join(", ")
                ),
            );
        }
        Refusal::new(
            Why::InstanceTypes,
            format!("NodePool {name}: no instance type fits"),
        )
    }

    /// Turns the claims under construction into plan entries.
    ///
    /// Under NodePool limits, packing guaranteed that the claims' cheapest options fit. The
    /// room left over (`slack`) is shared out claim by claim as the options are widened, so
    /// that whichever option the cloud launches for each claim, the pool stays in limits.
    ///
    /// Claims are finished in order and each takes a slot of the reservation it is planned
    /// into; once a reservation is full, later claims fall back to the next cheapest offering
    /// their requirements allow. A claim left with none (it may only be reserved) is not
    /// launched: its pods come back with the reason.
    pub fn finish_claims(&self) -> (Vec<NewClaim>, Vec<(String, String)>) {
        let mut slack: Vec<Option<BTreeMap<String, i64>>> = self
            .pools
            .iter()
            .map(|ps| ps.room_for(&Resources::default()))
            .collect();
        // The cluster-wide room is shared by every pool's claims the same way.
        let mut cluster_slack = self.cluster_room(&Resources::default());
        let mut offers = FastMap::default();
        let mut slots = ReservedSlots::new(
            self.pools
                .iter()
                .flat_map(|ps| ps.types.iter().map(|t| &*t.it)),
            &self.snap.nodes,
        );
        let (mut claims, mut failed) = (Vec::new(), Vec::new());
        for c in &self.claims {
            match self.finish(
                c,
                [&mut slack[c.pool], &mut cluster_slack],
                &mut offers,
                &mut slots,
            ) {
                Some(claim) => claims.push(claim),
                None => failed.extend(c.pods.iter().map(|&p| {
                    (
                        self.snap.pending[p].key(),
                        format!(
                            "every capacity reservation NodePool {} may use for it is planned full, and it may not use other capacity",
                            self.pools[c.pool].pool.name
                        ),
                    )
                })),
            }
        }
        (claims, failed)
    }

    fn finish<'s>(
        &'s self,
        c: &Claim,
        slacks: [&mut Option<BTreeMap<String, i64>>; 2],
        offers: &mut TypeOffers<'s>,
        slots: &mut ReservedSlots,
    ) -> Option<NewClaim> {
        let ps = &self.pools[c.pool];
        // Claims of a pool mostly share their requirements but for their own names, which
        // types do not decide: compatibility and offerings are worked out once for them.
        let mut shared = c.reqs.clone();
        shared.remove(labels::HOSTNAME);
        shared.remove(labels::NODECLAIM);
        let offer: &[(bool, Option<&Offering>)] = offers
            .entry((c.pool, shared, slots.full.len()))
            .or_insert_with(|| {
                ps.types
                    .iter()
                    .map(|t| {
                        (
                            type_compatible(&t.it, &c.reqs, None),
                            t.it.cheapest_offering_where(&c.reqs, |o| slots.usable(o)),
                        )
                    })
                    .collect()
            });
        let base = &c.reserved;
        let within_slack = |cap: &Resources| {
            slacks.iter().all(|slack| {
                slack
                    .as_ref()
                    .is_none_or(|s| s.iter().all(|(k, left)| cap.get(k) - base.get(k) <= *left))
            })
        };
        // Every compatible type that holds the pods, not only the efficient ones packing
        // grew within.
        let mut all: Vec<u32> = (0..ps.types.len() as u32)
            .filter(|&o| {
                let t = &ps.types[o as usize];
                // The stored compatibility first: the cheapest test.
                offer[o as usize].0
                    && c.requests.fits_in(&t.usable)
                    && within_slack(&t.it.capacity)
                    && !t.ports_taken(&c.host_ports)
                    && (c.ebs.is_empty() || holds_ebs(&t.it, Some(c.ebs.len())))
            })
            .collect();
        if all.is_empty()
            || (ps.has_min_values && min_values_short(&c.reqs, &all, &ps.types).is_some())
        {
            all = c
                .options(&ps.types)
                .filter(|&o| within_slack(&ps.types[o as usize].it.capacity))
                .collect();
        }
        let mut priced: Vec<(f64, &str, u32)> = all
            .iter()
            .filter_map(|&o| {
                let it = &ps.types[o as usize].it;
                offer[o as usize]
                    .1
                    .map(|off| (off.price, it.name.as_str(), o))
            })
            .collect();
        priced.sort_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.1.cmp(b.1)));
        if priced.is_empty() {
            return None;
        }
        let chosen = &ps.types[priced[0].2 as usize].it;
        let offering = offer[priced[0].2 as usize]
            .1
            .expect("priced options have an offering");
        let max = self.opts.max_instance_types.max(1);
        // A reserved claim is pinned to its reservation's type and zone; otherwise the cloud
        // picks among the cheapest types.
        let mut kept: Vec<u32> = if offering.reservation.is_some() {
            vec![priced[0].2]
        } else {
            priced.iter().take(max).map(|x| x.2).collect()
        };
        // Truncation must not break minValues: add the next cheapest until it holds (a
        // reserved claim keeps its one type: the reservation decides it).
        for x in priced
            .iter()
            .skip(max)
            .filter(|_| offering.reservation.is_none())
        {
            if min_values_short(&c.reqs, &kept, &ps.types).is_none() {
                break;
            }
            kept.push(x.2);
        }
        for s in slacks.into_iter().filter_map(Option::as_mut) {
            for (k, left) in s.iter_mut() {
                let widest = kept
                    .iter()
                    .map(|&o| ps.types[o as usize].it.capacity.get(k) - base.get(k))
                    .max()
                    .unwrap_or(0);
                // The base itself was counted when packing; only growth beyond it uses slack.
                *left -= widest.max(0);
            }
        }

        let mut labels_out: BTreeMap<String, String> = ps.pool.labels.clone();
        for r in c.reqs.iter() {
            if labels::is_well_known(&r.key) || labels::is_per_node(&r.key) {
                continue;
            }
            if let Some(v) = r.pick_value() {
                labels_out.insert(r.key.clone(), v);
            }
        }
        for r in chosen.requirements.iter() {
            if let Some(v) = r.single_value() {
                labels_out.insert(r.key.clone(), v.to_string());
            }
        }
        labels_out.insert(labels::ZONE.to_string(), offering.zone.clone());
        // The type's zone-ID set spans its offerings; the node gets its own offering's.
        labels_out.remove(labels::ZONE_ID);
        if let Some(id) = &offering.zone_id {
            labels_out.insert(labels::ZONE_ID.to_string(), id.clone());
        }
        labels_out.insert(
            labels::CAPACITY_TYPE.to_string(),
            offering.capacity_type.clone(),
        );
        labels_out.remove(labels::CAPACITY_RESERVATION_ID);
        labels_out.remove(labels::CAPACITY_RESERVATION_TYPE);
        labels_out.remove(labels::CAPACITY_RESERVATION_INTERRUPTIBLE);
        if let Some(r) = &offering.reservation {
            labels_out.insert(labels::CAPACITY_RESERVATION_ID.to_string(), r.id.clone());
            labels_out.insert(
                labels::CAPACITY_RESERVATION_TYPE.to_string(),
                r.kind.clone(),
            );
            labels_out.insert(
                labels::CAPACITY_RESERVATION_INTERRUPTIBLE.to_string(),
                r.interruptible_label().to_string(),
            );
        }
        labels_out.insert(labels::HOSTNAME.to_string(), c.name.clone());
        labels_out.insert(labels::NODECLAIM.to_string(), c.name.clone());
        labels_out.insert(labels::NODEPOOL.to_string(), ps.pool.name.clone());

        let mut requirements = if ps.has_min_values
            && self.opts.min_values_policy == super::MinValuesPolicy::BestEffort
        {
            relaxed_min_values(&c.reqs, &kept, &ps.types)
        } else {
            c.reqs.clone()
        };
        requirements.remove(labels::HOSTNAME);
        requirements.remove(labels::NODECLAIM);
        requirements.add(Requirement::any_of(
            labels::INSTANCE_TYPE,
            kept.iter().map(|&o| ps.types[o as usize].it.name.clone()),
        ));
        if let Some(r) = &offering.reservation {
            // The launch must go into this reservation and nowhere else.
            for (k, v) in [
                (labels::ZONE, offering.zone.as_str()),
                (labels::CAPACITY_TYPE, offering.capacity_type.as_str()),
                (labels::CAPACITY_RESERVATION_ID, r.id.as_str()),
                (labels::CAPACITY_RESERVATION_TYPE, r.kind.as_str()),
                (
                    labels::CAPACITY_RESERVATION_INTERRUPTIBLE,
                    r.interruptible_label(),
                ),
            ] {
                requirements.remove(k);
                requirements.add(Requirement::single(k, v));
            }
            slots.take(&r.id);
        } else if !slots.left.is_empty() {
            // Planned outside every reservation: the launch must not take a slot either (it
            // may be the one a later claim was planned into).
            let not_reserved = Requirement::new(
                labels::CAPACITY_TYPE,
                crate::requirements::Operator::NotIn,
                &[labels::CAPACITY_TYPE_RESERVED],
            )
            .expect("NotIn with a value is valid");
            let narrowed = match requirements.get(labels::CAPACITY_TYPE) {
                Some(r) => r.intersect(&not_reserved),
                None => not_reserved,
            };
            requirements.remove(labels::CAPACITY_TYPE);
            requirements.add(narrowed);
        }
        let mut requests = c.requests.clone();
        requests.add(&ps.types[priced[0].2 as usize].daemon);
        Some(NewClaim {
            name: c.name.clone(),
            nodepool: ps.pool.name.clone(),
            instance_type: chosen.name.clone(),
            instance_type_options: kept
                .iter()
                .map(|&o| ps.types[o as usize].it.name.clone())
                .collect(),
            zone: offering.zone.clone(),
            capacity_type: offering.capacity_type.clone(),
            price_per_hour: offering.price,
            labels: labels_out,
            taints: ps.pool.taints.clone(),
            startup_taints: ps.pool.startup_taints.clone(),
            allocatable: chosen.allocatable().clone(),
            requests,
            requirements,
            pods: c.pods.iter().map(|&p| self.snap.pending[p].key()).collect(),
        })
    }
}
