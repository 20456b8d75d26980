//! The reservation ledger: which capacity is spoken for by pods that a NodeClaim was launched
//! for but that are not bound yet, and the filter / prioritize / bind / preempt decisions
//! that keep it for them.
//!
//! Pure and synchronous: the watchers in [`crate::cluster`] feed it, the HTTP handlers in
//! [`crate::server`] ask it. Guarantees:
//!
//! * **Room.** A node's room for a pod is its allocatable, minus the requests of pods bound
//!   to it, minus the requests of *other* pods nominated to a NodeClaim whose node it is and
//!   not yet bound anywhere.
//! * **Expiry is derived, never stored.** A nomination reserves capacity only while its
//!   claim is in the ledger, its pod is in the ledger with the same UID, and that pod is
//!   unbound. A pod bound elsewhere, a deleted pod, or a deleted (or failed) claim therefore
//!   stops reserving at the moment the ledger learns of it; nothing needs sweeping.
//! * **Bind is idempotent.** Binding a pod to the node it is already bound to changes
//!   nothing; a pod's node, once set, is never unset by a later (stale) update, as in
//!   Kubernetes where `spec.nodeName` is immutable.
//! * **Rebuildable.** Everything here is derived from nodes, pods and NodeClaims, so a
//!   restarted extender, or a second replica, reaches the same answers from the same cache.

use std::collections::BTreeMap;

/// Node names and pod keys are hashed on every `filter` call (one lookup per candidate node):
/// foldhash is several times cheaper than SipHash for them, and the keys come from the API
/// server, not from whoever calls the extender.
type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
use std::fmt::Write as _;

use adze_scheduling::Resources;
use serde::{Deserialize, Serialize};

use crate::types::{HostPriority, MAX_EXTENDER_PRIORITY, MIN_EXTENDER_PRIORITY};

/// One entry of the `adze.sh/nominated-pods` annotation on a NodeClaim.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PodRef {
    pub namespace: String,
    pub name: String,
    #[serde(default)]
    pub uid: String,
}

impl PodRef {
    pub fn new(namespace: &str, name: &str, uid: &str) -> Self {
        PodRef {
            namespace: namespace.to_string(),
            name: name.to_string(),
            uid: uid.to_string(),
        }
    }

    fn key(&self) -> String {
        pod_key(&self.namespace, &self.name)
    }
}

/// "namespace/name".
pub fn pod_key(namespace: &str, name: &str) -> String {
    format!("{namespace}/{name}")
}

/// A node as the ledger needs it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NodeInfo {
    pub allocatable: Resources,
    /// The `adze.sh/nodeclaim` label: the claim this node was launched for.
    pub claim: Option<String>,
}

/// A pod as the ledger needs it: effective requests and, once bound, its node.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PodInfo {
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub requests: Resources,
    pub node: Option<String>,
}

/// A NodeClaim as the ledger needs it: its node once registered (`status.nodeName`), and the
/// pods it was launched for.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClaimInfo {
    pub node: Option<String>,
    pub nominated: Vec<PodRef>,
    /// `metadata.creationTimestamp` (RFC 3339, so it sorts as text). When two claims list
    /// the same pod, the newer one holds its nomination (ties go to the greater name), so
    /// every replica picks the same claim whatever order it saw them in.
    pub created: String,
    /// The claim's `Initialized` condition is True: its node is Ready, its startup taints
    /// are gone and its resources registered. Until then a node kube-scheduler does not yet
    /// offer is booting, not refused, so its pods wait for it (see [`Ledger::filter`]).
    pub initialized: bool,
}

/// One node kube-scheduler offers: its name and, when the request carried the Node object,
/// its allocatable (which then wins over the cache).
#[derive(Debug, Clone, Copy)]
pub struct Candidate<'a> {
    pub name: &'a str,
    pub allocatable: Option<&'a Resources>,
}

impl<'a> Candidate<'a> {
    pub fn named(name: &'a str) -> Self {
        Candidate {
            name,
            allocatable: None,
        }
    }
}

/// The answer to `filter`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FilterOutcome {
    /// Indexes into the candidates, in their order.
    pub passed: Vec<usize>,
    /// Node name → reason.
    pub failed: BTreeMap<String, String>,
}

/// What `assume` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Assumed {
    /// The pod is now bound to the node in the ledger.
    Bound,
    /// It already was (a retried bind).
    AlreadyBound,
    /// The ledger has it bound to another node; nothing changed.
    BoundElsewhere(String),
    /// The ledger did not know the pod (its watch event is still to come): recorded bound,
    /// and removed whole by [`Ledger::forget`] if the binding fails, so a bind for a pod that
    /// does not exist leaves no trace.
    BoundUnknown,
}

#[derive(Debug, Clone, Default)]
struct ClaimState {
    info: ClaimInfo,
    /// The node this claim is indexed under in `claims_by_node`.
    indexed_node: Option<String>,
    /// What its nominations reserve right now (kept current on every change to the claim
    /// or to one of its nominated pods, so filter never walks the pods).
    reserved: Resources,
    reserved_pods: usize,
}

/// The ledger. See the module documentation for its guarantees.
#[derive(Debug, Default)]
pub struct Ledger {
    nodes: HashMap<String, NodeInfo>,
    pods: HashMap<String, PodInfo>,
    claims: HashMap<String, ClaimState>,
    /// Sum of bound pods' requests per node name (kept apart from `nodes` so pods bound to a
    /// node the cache has not seen yet still count once it arrives).
    bound: HashMap<String, Resources>,
    /// Claims whose node is this node (by `status.nodeName` or the node's claim label).
    claims_by_node: HashMap<String, Vec<String>>,
    /// Node name by claim label, for claims whose status does not name their node yet.
    node_by_claim_label: HashMap<String, String>,
    /// Pod key → the claim nominating it: of the claims listing the pod, the newest.
    nomination: HashMap<String, String>,
    /// Pod key → every claim listing it.
    listed_by: HashMap<String, Vec<String>>,
}

/// Reservations other pods hold on one node.
#[derive(Debug, Default)]
struct Reservation<'a> {
    requests: Resources,
    /// (claim, number of pending pods it reserves for), by claim name.
    by_claim: Vec<(&'a str, usize)>,
}

impl Reservation<'_> {
    fn is_empty(&self) -> bool {
        self.by_claim.is_empty()
    }

    fn describe(&self) -> String {
        let mut out = String::with_capacity(160);
        out.push_str("capacity reserved for ");
        for (i, (claim, n)) in self.by_claim.iter().enumerate() {
            if i > 0 {
                out.push_str(" and ");
            }
            let pods = if *n == 1 { "pod" } else { "pods" };
            let _ = write!(out, "{n} {pods} nominated to nodeclaim {claim}");
        }
        out
    }
}

impl Ledger {
    pub fn new() -> Self {
        Ledger::default()
    }

    // ---- feeding the ledger -------------------------------------------------------------

    pub fn upsert_node(&mut self, name: &str, info: NodeInfo) {
        let old_claim = self.nodes.get(name).and_then(|n| n.claim.clone());
        if let Some(c) = &old_claim
            && info.claim.as_ref() != Some(c)
        {
            self.node_by_claim_label.remove(c);
            self.reindex_claim(c);
        }
        let new_claim = info.claim.clone();
        self.nodes.insert(name.to_string(), info);
        if let Some(c) = new_claim {
            self.node_by_claim_label.insert(c.clone(), name.to_string());
            self.reindex_claim(&c);
        }
    }

    pub fn remove_node(&mut self, name: &str) {
        if let Some(info) = self.nodes.remove(name)
            && let Some(c) = info.claim
        {
            self.node_by_claim_label.remove(&c);
            self.reindex_claim(&c);
        }
    }

    /// Adds or updates a pod. Terminal pods (Succeeded, Failed) should be removed instead:
    /// they hold no resources. A pod's node, once known, is kept even if a stale update
    /// arrives without it.
    pub fn upsert_pod(&mut self, mut info: PodInfo) {
        let key = pod_key(&info.namespace, &info.name);
        if let Some(old) = self.pods.get(&key) {
            if old.uid == info.uid && info.node.is_none() {
                info.node = old.node.clone();
            }
            let old = old.clone();
            self.unbind_contribution(&old);
        }
        if let Some(n) = &info.node {
            self.bound.entry(n.clone()).or_default().add(&info.requests);
        }
        self.pods.insert(key.clone(), info);
        self.refresh_nominating(&key);
    }

    pub fn remove_pod(&mut self, namespace: &str, name: &str) {
        let key = pod_key(namespace, name);
        if let Some(old) = self.pods.remove(&key) {
            self.unbind_contribution(&old);
            self.refresh_nominating(&key);
        }
    }

    pub fn upsert_claim(&mut self, name: &str, info: ClaimInfo) {
        let old_keys: Vec<String> = self
            .claims
            .get(name)
            .map(|c| c.info.nominated.iter().map(PodRef::key).collect())
            .unwrap_or_default();
        let new_keys: Vec<String> = info.nominated.iter().map(PodRef::key).collect();
        let state = self.claims.entry(name.to_string()).or_default();
        state.info = info;
        for k in &old_keys {
            if let Some(list) = self.listed_by.get_mut(k) {
                list.retain(|c| c != name);
            }
        }
        for k in &new_keys {
            self.listed_by
                .entry(k.clone())
                .or_default()
                .push(name.to_string());
        }
        self.reindex_claim(name);
        let mut touched = vec![name.to_string()];
        for k in old_keys.iter().chain(&new_keys) {
            self.renominate(k, &mut touched);
        }
        touched.sort();
        touched.dedup();
        for c in touched {
            self.refresh_claim(&c);
        }
    }

    /// A deleted, or failed, claim: its nominations expire (a pod another claim also lists
    /// falls back to that claim).
    pub fn remove_claim(&mut self, name: &str) {
        if let Some(old) = self.claims.remove(name) {
            if let Some(n) = &old.indexed_node {
                self.unindex(name, n);
            }
            let mut touched = Vec::new();
            for p in &old.info.nominated {
                let k = p.key();
                if let Some(list) = self.listed_by.get_mut(&k) {
                    list.retain(|c| c != name);
                }
                self.renominate(&k, &mut touched);
            }
            touched.sort();
            touched.dedup();
            for c in touched {
                self.refresh_claim(&c);
            }
        }
    }

    /// Re-derives which claim nominates the pod `key`, noting claims whose reservation may
    /// have changed.
    fn renominate(&mut self, key: &str, touched: &mut Vec<String>) {
        let best = self.listed_by.get(key).and_then(|list| {
            list.iter()
                .filter_map(|c| self.claims.get(c).map(|s| (&s.info.created, c)))
                .max()
                .map(|(_, c)| c.clone())
        });
        let prev = match &best {
            Some(b) => self.nomination.insert(key.to_string(), b.clone()),
            None => {
                self.listed_by.remove(key);
                self.nomination.remove(key)
            }
        };
        if prev != best {
            touched.extend(prev);
            touched.extend(best);
        }
    }

    /// Replaces every node at once (a watcher's relist).
    pub fn replace_nodes(&mut self, nodes: Vec<(String, NodeInfo)>) {
        let names: Vec<String> = self.nodes.keys().cloned().collect();
        for n in names {
            self.remove_node(&n);
        }
        for (n, info) in nodes {
            self.upsert_node(&n, info);
        }
    }

    /// Replaces every pod at once (a watcher's relist). Bindings the ledger assumed but the
    /// list does not show yet are kept when the list has the same pod unbound.
    pub fn replace_pods(&mut self, pods: Vec<PodInfo>) {
        let mut old = std::mem::take(&mut self.pods);
        self.bound.clear();
        let claims: Vec<String> = self.claims.keys().cloned().collect();
        for c in &claims {
            self.refresh_claim(c);
        }
        for mut p in pods {
            if p.node.is_none()
                && let Some(prev) = old.remove(&pod_key(&p.namespace, &p.name))
                && prev.uid == p.uid
            {
                p.node = prev.node;
            }
            self.upsert_pod(p);
        }
    }

    /// Replaces every claim at once (a watcher's relist).
    pub fn replace_claims(&mut self, claims: Vec<(String, ClaimInfo)>) {
        let names: Vec<String> = self.claims.keys().cloned().collect();
        for n in names {
            self.remove_claim(&n);
        }
        for (n, info) in claims {
            self.upsert_claim(&n, info);
        }
    }

    // ---- bind -----------------------------------------------------------------------------

    /// Records that the pod is (being) bound to `node`, so the next filter sees it. A pod the
    /// ledger has not seen is recorded with no requests until its watch event arrives.
    pub fn assume(&mut self, namespace: &str, name: &str, uid: &str, node: &str) -> Assumed {
        let key = pod_key(namespace, name);
        let mut known = true;
        let info = match self.pods.get(&key) {
            Some(p) if uid.is_empty() || p.uid.is_empty() || p.uid == uid => {
                match &p.node {
                    Some(n) if n == node => return Assumed::AlreadyBound,
                    Some(n) => return Assumed::BoundElsewhere(n.clone()),
                    None => {}
                }
                let mut p = p.clone();
                p.node = Some(node.to_string());
                p
            }
            _ => {
                known = false;
                PodInfo {
                    namespace: namespace.to_string(),
                    name: name.to_string(),
                    uid: uid.to_string(),
                    requests: Resources::default().with_pods(1),
                    node: Some(node.to_string()),
                }
            }
        };
        self.pods.remove(&key);
        self.upsert_pod(info);
        if known {
            Assumed::Bound
        } else {
            Assumed::BoundUnknown
        }
    }

    /// Undoes [`Ledger::assume`] after the binding call failed, if the pod is still bound to
    /// `node` in the ledger.
    pub fn forget(&mut self, namespace: &str, name: &str, node: &str, assumed: &Assumed) {
        if *assumed == Assumed::BoundUnknown {
            if self.pod(namespace, name).and_then(|p| p.node.as_deref()) == Some(node) {
                self.remove_pod(namespace, name);
            }
            return;
        }
        let key = pod_key(namespace, name);
        if let Some(p) = self.pods.get(&key)
            && p.node.as_deref() == Some(node)
        {
            let mut p = p.clone();
            self.unbind_contribution(&p);
            p.node = None;
            self.pods.insert(key.clone(), p);
            self.refresh_nominating(&key);
        }
    }

    // ---- questions ------------------------------------------------------------------------

    pub fn has_node(&self, name: &str) -> bool {
        self.nodes.contains_key(name)
    }

    pub fn pod(&self, namespace: &str, name: &str) -> Option<&PodInfo> {
        self.pods.get(&pod_key(namespace, name))
    }

    pub fn counts(&self) -> (usize, usize, usize) {
        (self.nodes.len(), self.pods.len(), self.claims.len())
    }

    /// The live claim `pod` is nominated to, if any (UID checked when both sides know it).
    pub fn nominated_claim(&self, pod: &PodInfo) -> Option<&str> {
        let key = pod_key(&pod.namespace, &pod.name);
        let claim = self.nomination.get(&key)?;
        let state = self.claims.get(claim)?;
        let r = state.info.nominated.iter().find(|r| r.key() == key)?;
        if !r.uid.is_empty() && !pod.uid.is_empty() && r.uid != pod.uid {
            return None;
        }
        Some(claim)
    }

    /// The node of the claim `pod` is nominated to, once that node registered.
    pub fn nominated_node(&self, pod: &PodInfo) -> Option<&str> {
        let claim = self.nominated_claim(pod)?;
        self.claim_node(claim)
    }

    /// True when the pod's capacity is in flight: it is nominated to a live claim and not
    /// bound. kube-scheduler should not evict anything for it.
    pub fn capacity_in_flight(&self, pod: &PodInfo) -> bool {
        pod.node.is_none() && self.nominated_claim(pod).is_some()
    }

    /// Which candidates keep room for `pod`. See the module documentation for "room".
    ///
    /// * A pod nominated to a live claim whose node has not registered yet passes nowhere:
    ///   it waits for the capacity launched for it.
    /// * A pod nominated to a claim whose node is among the candidates passes there and
    ///   nowhere else: the capacity was launched for it, and saying so in `filter` places it
    ///   without a `prioritize` exchange (one HTTP round trip per pod less on kube-scheduler's
    ///   serial scheduling cycle; the shipped configuration calls no `prioritize`).
    /// * A pod whose claim has a node that is not a candidate waits while the claim is not
    ///   initialized: a node just registered is offered only once Ready and untainted, and
    ///   the nodes of one batch come up seconds apart, so judging the pod like any other
    ///   then would put it in the spare room of a sibling node and strand its own.
    /// * Once the claim is initialized and its node still is not a candidate (kube-scheduler's
    ///   own filters refused it), the rules below apply as for any pod.
    /// * A pod passes where it fits beside every reservation.
    /// * A node holding no reservation for another pod passes: kube-scheduler's own
    ///   resource fit, which runs before extenders, is the judge of unreserved room.
    /// * A node the cache does not know passes unless a claim names it; then it fails, since
    ///   its reservations cannot be weighed against an unknown allocatable.
    pub fn filter(&self, pod: &PodInfo, candidates: &[Candidate<'_>]) -> FilterOutcome {
        let own = self.own_reservation(pod);
        let own_node = self.nominated_node(pod);
        let mut out = FilterOutcome::default();
        if pod.node.is_none()
            && own_node.is_none()
            && let Some(claim) = self.nominated_claim(pod)
        {
            // Its capacity is booting: placing it elsewhere now would strand that capacity
            // (and another pod would take it). The claim's registration timeout bounds the wait.
            let reason = format!(
                "waiting for nodeclaim {claim}, launched for this pod, to register its node"
            );
            for c in candidates {
                out.failed.insert(c.name.to_string(), reason.clone());
            }
            return out;
        }
        if pod.node.is_none()
            && let Some(node) = own_node
            && let Some(mine) = candidates.iter().position(|c| c.name == node)
        {
            let reason = format!("node {node} was launched for this pod");
            for (i, c) in candidates.iter().enumerate() {
                if i == mine {
                    out.passed.push(i);
                } else {
                    out.failed.insert(c.name.to_string(), reason.clone());
                }
            }
            return out;
        }
        if pod.node.is_none()
            && let Some(node) = own_node
            && let Some(claim) = self.nominated_claim(pod)
            && !self.claims.get(claim).is_some_and(|s| s.info.initialized)
        {
            let reason = format!(
                "waiting for node {node} of nodeclaim {claim}, launched for this pod, to be initialized"
            );
            for c in candidates {
                out.failed.insert(c.name.to_string(), reason.clone());
            }
            return out;
        }
        for (i, c) in candidates.iter().enumerate() {
            match self.judge(pod, &own, own_node, c) {
                Ok(()) => out.passed.push(i),
                Err(reason) => {
                    out.failed.insert(c.name.to_string(), reason);
                }
            }
        }
        out
    }

    fn judge(
        &self,
        pod: &PodInfo,
        own: &Own<'_>,
        own_node: Option<&str>,
        c: &Candidate<'_>,
    ) -> Result<(), String> {
        if own_node == Some(c.name) {
            return Ok(());
        }
        let Some(claims) = self.claims_by_node.get(c.name) else {
            return Ok(());
        };
        let reservation = self.reservation(claims, own);
        if reservation.is_empty() {
            return Ok(());
        }
        let Some(allocatable) = c
            .allocatable
            .or_else(|| self.nodes.get(c.name).map(|n| &n.allocatable))
        else {
            return Err(format!(
                "node {} is not in the extender's cache yet; {}",
                c.name,
                reservation.describe()
            ));
        };
        let mut room = allocatable.clone();
        if let Some(b) = self.bound.get(c.name) {
            room.sub(b);
        }
        room.sub(&reservation.requests);
        if pod.requests.fits_in(&room) {
            return Ok(());
        }
        let mut reason = reservation.describe();
        reason.push_str(": the pod requests {");
        show(&mut reason, &pod.requests);
        reason.push_str("} and {");
        show(&mut reason, &room);
        reason.push_str("} is left beside them");
        Err(reason)
    }

    /// Scores in 0..=10. The node of the claim the pod is nominated to scores 10 and every
    /// other node at most 9. Otherwise a node scores by how full it would be (CPU and memory
    /// averaged) after bound pods, reservations and this pod; a node holding other pods'
    /// reservations scores half that, and 0 if the pod would eat into them.
    pub fn prioritize(&self, pod: &PodInfo, candidates: &[Candidate<'_>]) -> Vec<HostPriority> {
        candidates
            .iter()
            .zip(self.scores(pod, candidates))
            .map(|(c, score)| HostPriority {
                host: c.name.to_string(),
                score,
            })
            .collect()
    }

    /// [`Ledger::prioritize`]'s scores alone, in the candidates' order: what the HTTP
    /// handler writes out next to the names it already holds, without a `String` per node.
    pub fn scores(&self, pod: &PodInfo, candidates: &[Candidate<'_>]) -> Vec<i64> {
        let own = self.own_reservation(pod);
        let own_node = self.nominated_node(pod);
        candidates
            .iter()
            .map(|c| {
                if own_node == Some(c.name) {
                    MAX_EXTENDER_PRIORITY
                } else {
                    self.score(pod, &own, c)
                        .clamp(MIN_EXTENDER_PRIORITY, MAX_EXTENDER_PRIORITY - 1)
                }
            })
            .collect()
    }

    fn score(&self, pod: &PodInfo, own: &Own<'_>, c: &Candidate<'_>) -> i64 {
        let Some(allocatable) = c
            .allocatable
            .or_else(|| self.nodes.get(c.name).map(|n| &n.allocatable))
        else {
            return MIN_EXTENDER_PRIORITY;
        };
        let reservation = self
            .claims_by_node
            .get(c.name)
            .map(|claims| self.reservation(claims, own))
            .unwrap_or_default();
        let mut used = pod.requests.clone();
        if let Some(b) = self.bound.get(c.name) {
            used.add(b);
        }
        used.add(&reservation.requests);
        let frac = |u: i64, a: i64| {
            if a <= 0 {
                1.0
            } else {
                (u as f64 / a as f64).clamp(0.0, 1.0)
            }
        };
        let fullness =
            (frac(used.cpu, allocatable.cpu) + frac(used.memory, allocatable.memory)) / 2.0;
        let score = (fullness * MAX_EXTENDER_PRIORITY as f64).round() as i64;
        if reservation.is_empty() {
            score
        } else if used.fits_in(allocatable) {
            score / 2
        } else {
            MIN_EXTENDER_PRIORITY
        }
    }

    // ---- internals ------------------------------------------------------------------------

    fn claim_node(&self, claim: &str) -> Option<&str> {
        let state = self.claims.get(claim)?;
        state
            .info
            .node
            .as_deref()
            .or_else(|| self.node_by_claim_label.get(claim).map(String::as_str))
    }

    fn reindex_claim(&mut self, claim: &str) {
        let Some(state) = self.claims.get(claim) else {
            return;
        };
        let old = state.indexed_node.clone();
        let new = self.claim_node(claim).map(str::to_string);
        if old == new {
            return;
        }
        if let Some(n) = &old {
            self.unindex(claim, n);
        }
        if let Some(n) = &new {
            self.claims_by_node
                .entry(n.clone())
                .or_default()
                .push(claim.to_string());
        }
        if let Some(state) = self.claims.get_mut(claim) {
            state.indexed_node = new;
        }
    }

    fn unindex(&mut self, claim: &str, node: &str) {
        if let Some(list) = self.claims_by_node.get_mut(node) {
            list.retain(|c| c != claim);
            if list.is_empty() {
                self.claims_by_node.remove(node);
            }
        }
    }

    fn unbind_contribution(&mut self, p: &PodInfo) {
        if let Some(n) = &p.node
            && let Some(b) = self.bound.get_mut(n)
        {
            b.sub(&p.requests);
            if b.is_zero() {
                self.bound.remove(n);
            }
        }
    }

    /// What the claims on one node reserve for pods other than the one being placed.
    fn reservation<'s>(&'s self, claims: &'s [String], own: &Own<'_>) -> Reservation<'s> {
        let mut r = Reservation::default();
        for claim in claims {
            let Some(state) = self.claims.get(claim) else {
                continue;
            };
            let mut n = state.reserved_pods;
            if n == 0 {
                continue;
            }
            r.requests.add(&state.reserved);
            if let Some((own_claim, own_requests)) = own
                && *own_claim == claim.as_str()
            {
                r.requests.sub(own_requests);
                n -= 1;
            }
            if n > 0 {
                r.by_claim.push((claim.as_str(), n));
            }
        }
        r
    }

    /// The claim whose cached reservation includes the pod being placed, and what it counts
    /// for it, so that reservation can be left out for the pod itself.
    fn own_reservation(&self, pod: &PodInfo) -> Own<'_> {
        let key = pod_key(&pod.namespace, &pod.name);
        let claim = self.nomination.get(&key)?;
        let state = self.claims.get(claim)?;
        let r = state.info.nominated.iter().find(|r| r.key() == key)?;
        let p = self.pods.get(&key)?;
        self.reserves(r, p).then_some((claim.as_str(), &p.requests))
    }

    /// Whether a nomination entry reserves for the ledger's pod of that name.
    fn reserves(&self, r: &PodRef, p: &PodInfo) -> bool {
        p.node.is_none() && (r.uid.is_empty() || r.uid == p.uid)
    }

    /// Recomputes what one claim reserves: its nominated pods that are in the ledger with
    /// the nominated UID, still unbound, and not nominated to another claim since.
    fn refresh_claim(&mut self, claim: &str) {
        let Some(state) = self.claims.get(claim) else {
            return;
        };
        let mut reserved = Resources::default();
        let mut n = 0;
        for r in &state.info.nominated {
            let key = r.key();
            if self.nomination.get(&key).map(String::as_str) != Some(claim) {
                continue;
            }
            let Some(p) = self.pods.get(&key) else {
                continue;
            };
            if self.reserves(r, p) {
                reserved.add(&p.requests);
                n += 1;
            }
        }
        if let Some(state) = self.claims.get_mut(claim) {
            state.reserved = reserved;
            state.reserved_pods = n;
        }
    }

    /// Recomputes the claim nominating this pod, if any.
    fn refresh_nominating(&mut self, key: &str) {
        if let Some(c) = self.nomination.get(key).cloned() {
            self.refresh_claim(&c);
        }
    }
}

/// The pod being placed's own share of a claim's cached reservation: (claim, requests).
type Own<'a> = Option<(&'a str, &'a Resources)>;

/// Resources for a message ("cpu=1, memory=1Gi, pods=1"), negatives shown as zero.
fn show(out: &mut String, r: &Resources) {
    use adze_scheduling::quantity::{format_bytes, format_milli};
    let _ = write!(
        out,
        "cpu={}, memory={}",
        format_milli(r.cpu.max(0)),
        format_bytes(r.memory.max(0))
    );
    if r.ephemeral_storage != 0 {
        let _ = write!(
            out,
            ", ephemeral-storage={}",
            format_bytes(r.ephemeral_storage.max(0))
        );
    }
    let _ = write!(out, ", pods={}", r.pods.max(0));
    for (name, v) in &r.extended {
        let _ = write!(out, ", {name}={}", (*v).max(0));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GI: i64 = 1 << 30;

    /// Each claim the tests write is newer than the last.
    static CLOCK: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

    fn node(ledger: &mut Ledger, name: &str, cpu: i64, mem_gi: i64, claim: Option<&str>) {
        ledger.upsert_node(
            name,
            NodeInfo {
                allocatable: Resources::new(cpu, mem_gi * GI).with_pods(110),
                claim: claim.map(str::to_string),
            },
        );
    }

    fn pod(name: &str, cpu: i64, mem_gi: i64) -> PodInfo {
        PodInfo {
            namespace: "default".into(),
            name: name.into(),
            uid: format!("uid-{name}"),
            requests: Resources::new(cpu, mem_gi * GI).with_pods(1),
            node: None,
        }
    }

    fn bound(name: &str, cpu: i64, mem_gi: i64, node: &str) -> PodInfo {
        PodInfo {
            node: Some(node.into()),
            ..pod(name, cpu, mem_gi)
        }
    }

    fn claim(ledger: &mut Ledger, name: &str, node: Option<&str>, pods: &[&PodInfo]) {
        ledger.upsert_claim(
            name,
            ClaimInfo {
                node: node.map(str::to_string),
                initialized: node.is_some(),
                nominated: pods
                    .iter()
                    .map(|p| PodRef::new(&p.namespace, &p.name, &p.uid))
                    .collect(),
                created: format!(
                    "2026-11-22T00:00:{:04}Z",
                    CLOCK.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
                ),
            },
        );
    }

    fn passes(ledger: &Ledger, p: &PodInfo, nodes: &[&str]) -> Vec<String> {
        let c: Vec<Candidate> = nodes.iter().map(|n| Candidate::named(n)).collect();
        ledger
            .filter(p, &c)
            .passed
            .iter()
            .map(|&i| nodes[i].to_string())
            .collect()
    }

    fn reason(ledger: &Ledger, p: &PodInfo, n: &str) -> Option<String> {
        ledger.filter(p, &[Candidate::named(n)]).failed.remove(n)
    }

    /// A 4-CPU node launched for four 1-CPU pods, registered, none bound yet.
    fn reserved_node() -> (Ledger, Vec<PodInfo>) {
        let mut l = Ledger::new();
        node(&mut l, "n1", 4000, 16, Some("default-x7k2p"));
        let pods: Vec<PodInfo> = (0..4).map(|i| pod(&format!("a-{i}"), 1000, 2)).collect();
        for p in &pods {
            l.upsert_pod(p.clone());
        }
        claim(
            &mut l,
            "default-x7k2p",
            Some("n1"),
            &pods.iter().collect::<Vec<_>>(),
        );
        (l, pods)
    }

    #[test]
    fn stranger_is_kept_off_capacity_reserved_for_nominated_pods() {
        let (l, _) = reserved_node();
        let b = pod("b-0", 1000, 1);
        assert_eq!(passes(&l, &b, &["n1"]), Vec::<String>::new());
        let r = reason(&l, &b, "n1").unwrap();
        assert!(
            r.starts_with("capacity reserved for 4 pods nominated to nodeclaim default-x7k2p"),
            "{r}"
        );
        assert!(r.contains("cpu=1"), "{r}");
    }

    #[test]
    fn nominated_pod_waits_for_its_booting_node_then_passes_there() {
        let mut l = Ledger::new();
        node(&mut l, "spare", 8000, 32, None);
        let a = pod("a-0", 1000, 1);
        l.upsert_pod(a.clone());
        claim(&mut l, "default-boot", None, &[&a]);
        assert_eq!(passes(&l, &a, &["spare"]), Vec::<String>::new());
        let r = reason(&l, &a, "spare").unwrap();
        assert_eq!(
            r,
            "waiting for nodeclaim default-boot, launched for this pod, to register its node"
        );
        // A pod nominated nowhere still passes on the spare node.
        assert_eq!(passes(&l, &pod("b-0", 1000, 1), &["spare"]), ["spare"]);
        node(&mut l, "n-boot", 4000, 16, Some("default-boot"));
        // Registered: it passes on its own node only, whatever room the others have.
        assert_eq!(passes(&l, &a, &["spare", "n-boot"]), ["n-boot"]);
        let c = [Candidate::named("spare"), Candidate::named("n-boot")];
        assert_eq!(
            l.filter(&a, &c).failed.get("spare").map(String::as_str),
            Some("node n-boot was launched for this pod")
        );
        // Its node not offered yet while the claim is not initialized (a sibling of its
        // batch may be up first, with spare room): it waits for its own.
        assert_eq!(passes(&l, &a, &["spare"]), Vec::<String>::new());
        assert_eq!(
            reason(&l, &a, "spare").as_deref(),
            Some(
                "waiting for node n-boot of nodeclaim default-boot, launched for this pod, to be initialized"
            )
        );
        let mut info = l.claims.get("default-boot").unwrap().info.clone();
        info.initialized = true;
        l.upsert_claim("default-boot", info);
        // Initialized, and its node refused by kube-scheduler's own filters (not a
        // candidate): judged like any pod, so it may go elsewhere rather than wait on a node
        // it cannot use.
        assert_eq!(passes(&l, &a, &["spare"]), ["spare"]);
        // Others still pass on the spare node.
        assert_eq!(passes(&l, &pod("b-0", 1000, 1), &["spare"]), ["spare"]);
    }

    #[test]
    fn nominated_pod_keeps_its_reserved_node() {
        let (l, pods) = reserved_node();
        for p in &pods {
            assert_eq!(passes(&l, p, &["n1"]), ["n1"]);
        }
    }

    #[test]
    fn pod_that_fits_beside_the_reservation_passes() {
        let mut l = Ledger::new();
        node(&mut l, "n1", 8000, 32, Some("c1"));
        let a = pod("a", 4000, 8);
        l.upsert_pod(a.clone());
        claim(&mut l, "c1", Some("n1"), &[&a]);
        assert_eq!(passes(&l, &pod("b", 3000, 8), &["n1"]), ["n1"]);
        assert_eq!(
            passes(&l, &pod("big", 5000, 8), &["n1"]),
            Vec::<String>::new()
        );
    }

    #[test]
    fn bound_pods_take_room_too() {
        let mut l = Ledger::new();
        node(&mut l, "n1", 4000, 16, Some("c1"));
        let a = pod("a", 2000, 2);
        l.upsert_pod(a.clone());
        claim(&mut l, "c1", Some("n1"), &[&a]);
        l.upsert_pod(bound("other", 1500, 1, "n1"));
        assert_eq!(passes(&l, &pod("b", 500, 1), &["n1"]), ["n1"]);
        assert_eq!(
            passes(&l, &pod("c", 1000, 1), &["n1"]),
            Vec::<String>::new()
        );
    }

    #[test]
    fn nodes_without_reservations_are_left_to_kube_scheduler() {
        let (mut l, _) = reserved_node();
        node(&mut l, "plain", 1000, 1, None);
        assert_eq!(passes(&l, &pod("b", 1000, 1), &["n1", "plain"]), ["plain"]);
    }

    #[test]
    fn claim_found_by_node_label_before_status_names_the_node() {
        let (mut l, pods) = reserved_node();
        claim(
            &mut l,
            "default-x7k2p",
            None,
            &pods.iter().collect::<Vec<_>>(),
        );
        assert!(reason(&l, &pod("b", 1000, 1), "n1").is_some());
        assert_eq!(l.nominated_node(&pods[0]), Some("n1"));
    }

    #[test]
    fn binding_consumes_the_reservation_and_is_idempotent() {
        let (mut l, pods) = reserved_node();
        assert_eq!(l.assume("default", "a-0", "uid-a-0", "n1"), Assumed::Bound);
        assert_eq!(
            l.assume("default", "a-0", "uid-a-0", "n1"),
            Assumed::AlreadyBound
        );
        assert_eq!(
            l.assume("default", "a-0", "uid-a-0", "n2"),
            Assumed::BoundElsewhere("n1".into())
        );
        let r = reason(&l, &pod("b", 1000, 1), "n1").unwrap();
        assert!(
            r.starts_with("capacity reserved for 3 pods nominated"),
            "{r}"
        );
        // Room is still all taken: 1 bound + 3 reserved on 4 CPUs.
        for p in &pods[1..] {
            l.assume("default", &p.name, &p.uid, "n1");
        }
        // All bound: no reservation left, kube-scheduler judges the rest.
        assert_eq!(passes(&l, &pod("b", 1000, 1), &["n1"]), ["n1"]);
        assert_eq!(l.bound["n1"].cpu, 4000, "retries did not count twice");
    }

    /// A DaemonSet created after the claim was planned (Karpenter #731): its pod for the
    /// claim's node is a pod like any other to the ledger. While the claim's pods are unbound
    /// it is kept off their room, so they all still land on the node they were launched for;
    /// it passes only where it fits beside them. Once they are bound the ledger holds
    /// nothing and kube-scheduler's own fit decides (here the node is full: the DaemonSet
    /// pod stays pending, the node-level misfit `adze_scheduling::late_daemons` reports).
    #[test]
    fn a_late_daemonset_pod_does_not_take_the_room_reserved_for_the_claims_pods() {
        let (mut l, pods) = reserved_node();
        let mut agent = bound("agent-q4xz", 500, 1, "n1");
        agent.namespace = "monitoring".into();
        agent.node = None;
        l.upsert_pod(agent.clone());
        assert_eq!(passes(&l, &agent, &["n1"]), Vec::<String>::new());
        let r = reason(&l, &agent, "n1").unwrap();
        assert!(
            r.starts_with("capacity reserved for 4 pods nominated to nodeclaim default-x7k2p"),
            "{r}"
        );
        // The claim's pods keep their node, one by one, the DaemonSet pod still waiting.
        for (i, p) in pods.iter().enumerate() {
            assert_eq!(passes(&l, p, &["n1"]), ["n1"], "pod {i}");
            assert_eq!(l.assume("default", &p.name, &p.uid, "n1"), Assumed::Bound);
            if i + 1 < pods.len() {
                assert_eq!(
                    passes(&l, &agent, &["n1"]),
                    Vec::<String>::new(),
                    "after {i}"
                );
            }
        }
        assert_eq!(
            l.bound["n1"].cpu, 4000,
            "every pod the claim was launched for is on it"
        );
        // Nothing reserved any more: the ledger passes it and leaves it to kube-scheduler.
        assert_eq!(passes(&l, &agent, &["n1"]), ["n1"]);

        // On a node the plan left 500m spare on, it passes at once beside the reservation.
        let mut l = Ledger::new();
        node(&mut l, "n2", 4500, 16, Some("c2"));
        let mine: Vec<PodInfo> = (0..4).map(|i| pod(&format!("m-{i}"), 1000, 2)).collect();
        for p in &mine {
            l.upsert_pod(p.clone());
        }
        claim(&mut l, "c2", Some("n2"), &mine.iter().collect::<Vec<_>>());
        assert_eq!(passes(&l, &agent, &["n2"]), ["n2"]);
    }

    #[test]
    fn stale_update_does_not_unbind_and_failed_bind_is_forgotten() {
        let (mut l, pods) = reserved_node();
        l.assume("default", "a-0", "uid-a-0", "n1");
        l.upsert_pod(pods[0].clone());
        assert_eq!(l.pod("default", "a-0").unwrap().node.as_deref(), Some("n1"));
        l.forget("default", "a-0", "n1", &Assumed::Bound);
        assert_eq!(l.pod("default", "a-0").unwrap().node, None);
        assert!(!l.bound.contains_key("n1"));
    }

    #[test]
    fn a_failed_bind_of_an_unknown_pod_leaves_no_trace() {
        let (mut l, _) = reserved_node();
        let before = l.counts();
        let a = l.assume("default", "ghost", "uid-ghost", "n1");
        assert_eq!(a, Assumed::BoundUnknown);
        assert_eq!(
            l.counts().1,
            before.1 + 1,
            "recorded while the bind is in flight"
        );
        l.forget("default", "ghost", "n1", &a);
        assert!(l.pod("default", "ghost").is_none());
        assert_eq!(l.counts(), before);
    }

    #[test]
    fn nominations_expire_when_pod_is_bound_elsewhere_deleted_or_recreated() {
        let (mut l, pods) = reserved_node();
        l.upsert_pod(bound("a-0", 1000, 2, "elsewhere"));
        l.remove_pod("default", "a-1");
        l.upsert_pod(PodInfo {
            uid: "new-uid".into(),
            ..pods[2].clone()
        });
        let r = reason(&l, &pod("b", 4000, 1), "n1").unwrap();
        assert!(
            r.starts_with("capacity reserved for 1 pod nominated to nodeclaim"),
            "{r}"
        );
        assert_eq!(passes(&l, &pod("b", 3000, 1), &["n1"]), ["n1"]);
    }

    #[test]
    fn nominations_expire_when_the_claim_is_deleted() {
        let (mut l, pods) = reserved_node();
        l.remove_claim("default-x7k2p");
        assert_eq!(passes(&l, &pod("b", 4000, 1), &["n1"]), ["n1"]);
        assert!(!l.capacity_in_flight(&pods[0]));
        assert_eq!(l.nominated_node(&pods[0]), None);
    }

    #[test]
    fn renomination_to_a_new_claim_moves_the_reservation() {
        let (mut l, pods) = reserved_node();
        node(&mut l, "n2", 4000, 16, Some("c2"));
        claim(&mut l, "c2", Some("n2"), &[&pods[0]]);
        assert_eq!(l.nominated_node(&pods[0]), Some("n2"));
        let r = reason(&l, &pod("b", 4000, 1), "n1").unwrap();
        assert!(r.starts_with("capacity reserved for 3 pods"), "{r}");
    }

    #[test]
    fn unknown_node_with_reservations_fails_with_a_clear_reason() {
        let mut l = Ledger::new();
        let a = pod("a", 1000, 1);
        l.upsert_pod(a.clone());
        claim(&mut l, "c1", Some("ghost"), &[&a]);
        let r = reason(&l, &pod("b", 100, 1), "ghost").unwrap();
        assert!(r.contains("not in the extender's cache"), "{r}");
        assert_eq!(
            passes(&l, &pod("b", 100, 1), &["never-heard-of"]),
            ["never-heard-of"]
        );
        let alloc = Resources::new(4000, 4 * GI).with_pods(10);
        let c = [Candidate {
            name: "ghost",
            allocatable: Some(&alloc),
        }];
        assert_eq!(l.filter(&pod("b", 100, 1), &c).passed, [0]);
    }

    #[test]
    fn nominated_node_scores_highest() {
        let (mut l, pods) = reserved_node();
        node(&mut l, "packed", 4000, 16, None);
        l.upsert_pod(bound("x", 3000, 14, "packed"));
        let c = [Candidate::named("packed"), Candidate::named("n1")];
        let s = l.prioritize(&pods[0], &c);
        assert_eq!(s[1].score, 10);
        assert!(s[0].score <= 9);
    }

    #[test]
    fn prioritize_prefers_tight_packing_and_whole_reservations() {
        let (mut l, _) = reserved_node();
        node(&mut l, "empty", 4000, 16, None);
        node(&mut l, "half", 4000, 16, None);
        l.upsert_pod(bound("x", 2000, 8, "half"));
        node(&mut l, "roomy", 16000, 64, Some("c2"));
        let a = pod("r", 1000, 4);
        l.upsert_pod(a.clone());
        claim(&mut l, "c2", Some("roomy"), &[&a]);
        let b = pod("b", 1000, 4);
        let names = ["empty", "half", "roomy", "n1"];
        let c: Vec<Candidate> = names.iter().map(|n| Candidate::named(n)).collect();
        let s: BTreeMap<_, _> = l
            .prioritize(&b, &c)
            .into_iter()
            .map(|h| (h.host, h.score))
            .collect();
        assert!(s["half"] > s["empty"], "{s:?}");
        assert!(s["empty"] >= s["roomy"], "{s:?}");
        assert_eq!(s["n1"], 0, "{s:?}");
        assert!(s.values().all(|v| (0..=10).contains(v)));
    }

    #[test]
    fn preempt_is_held_back_only_while_capacity_is_in_flight() {
        let (mut l, pods) = reserved_node();
        assert!(l.capacity_in_flight(&pods[0]));
        assert!(!l.capacity_in_flight(&pod("stranger", 1, 1)));
        l.remove_claim("default-x7k2p");
        assert!(!l.capacity_in_flight(&pods[0]));
    }

    #[test]
    fn relist_rebuilds_the_same_answers() {
        let (l, pods) = reserved_node();
        let mut fresh = Ledger::new();
        fresh.replace_claims(vec![(
            "default-x7k2p".into(),
            ClaimInfo {
                node: Some("n1".into()),
                initialized: true,
                nominated: pods
                    .iter()
                    .map(|p| PodRef::new(&p.namespace, &p.name, &p.uid))
                    .collect(),
                created: String::new(),
            },
        )]);
        fresh.replace_pods(pods.clone());
        fresh.replace_nodes(vec![(
            "n1".into(),
            NodeInfo {
                allocatable: Resources::new(4000, 16 * GI).with_pods(110),
                claim: Some("default-x7k2p".into()),
            },
        )]);
        let b = pod("b", 1000, 1);
        assert_eq!(reason(&l, &b, "n1"), reason(&fresh, &b, "n1"));
        assert_eq!(
            l.prioritize(&pods[0], &[Candidate::named("n1")]),
            fresh.prioritize(&pods[0], &[Candidate::named("n1")])
        );
    }

    #[test]
    fn cached_reservations_match_a_ledger_rebuilt_from_the_same_objects() {
        let (mut l, pods) = reserved_node();
        node(&mut l, "n2", 4000, 16, Some("c2"));
        let extra: Vec<PodInfo> = (0..3).map(|i| pod(&format!("c-{i}"), 500, 1)).collect();
        for p in &extra {
            l.upsert_pod(p.clone());
        }
        claim(
            &mut l,
            "c2",
            Some("n2"),
            &[&extra[0], &extra[1], &extra[2], &pods[3]],
        );
        l.assume("default", "a-0", "uid-a-0", "n1");
        l.assume("default", "c-1", "uid-c-1", "n2");
        l.forget("default", "c-1", "n2", &Assumed::Bound);
        l.remove_pod("default", "c-2");
        l.upsert_pod(PodInfo {
            uid: "again".into(),
            ..pods[1].clone()
        });
        claim(&mut l, "c2", Some("n2"), &[&extra[0], &extra[1], &pods[3]]);

        let mut fresh = Ledger::new();
        fresh.replace_nodes(
            l.nodes
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        );
        fresh.replace_pods(l.pods.values().cloned().collect());
        fresh.replace_claims(
            l.claims
                .iter()
                .map(|(k, v)| (k.clone(), v.info.clone()))
                .collect(),
        );
        for p in pods.iter().chain(&extra).chain([&pod("b", 100, 1)]) {
            for n in ["n1", "n2"] {
                assert_eq!(reason(&l, p, n), reason(&fresh, p, n), "{} on {n}", p.name);
            }
            let c = [Candidate::named("n1"), Candidate::named("n2")];
            assert_eq!(l.prioritize(p, &c), fresh.prioritize(p, &c), "{}", p.name);
        }
        for (name, state) in &l.claims {
            let f = &fresh.claims[name];
            assert_eq!(
                (&state.reserved, state.reserved_pods),
                (&f.reserved, f.reserved_pods),
                "{name}"
            );
        }
    }
}
