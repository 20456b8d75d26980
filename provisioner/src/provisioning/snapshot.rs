//! The cluster as placement sees it, built from the watched objects. Pure: objects in,
//! [`Snapshot`] out, so the rules are unit-tested without a cluster.
//!
//! * Registered nodes come from `Node`s. On a node whose NodeClaim is not yet initialised the
//!   `not-ready` taint and the claim's startup taints are ignored: they are about to go.
//! * In-flight NodeClaims (no Node with their providerID yet) are [`ExistingNode`]s with
//!   `in_flight: true`, shaped by their labels and the catalog type they name.
//! * A pod nominated to a claim that is not initialised yet is a [`BoundPod`] on that claim,
//!   never pending: capacity is not created twice for the same pod.
//! * Pending ([`is_pending`]): no `nodeName`, not owned by a DaemonSet, not terminating, not
//!   in a terminal phase, and either kube-scheduler has said it fits nowhere
//!   (`PodScheduled=False` reason `Unschedulable`, or the extender's `FailedEveryNode` Event
//!   on the pod's UID, which comes sooner) or it is a fresh pod of the default scheduler
//!   ([`awaits_default_scheduler`]): demand from the first watch event, without waiting for
//!   kube-scheduler's verdict.
//! * A leaving node ([`super::leaving`]) is unschedulable, and the pods it displaces are pending
//!   demand — unless a live claim already nominates them, in which case they are bound to it.
//! * Pods carry the zones their persistent volumes tie them to, and the CSI volumes they
//!   attach ([`convert::with_volumes`], the rule `simulate` uses too);
//!   so new capacity and consolidation both respect them. A pending pod whose volumes cannot be
//!   placed yet (claim missing, unbound with immediate binding, zones its own affinity rules out)
//!   is left out, with the reason in [`Built::unschedulable`]. A bound pod whose volumes cannot be
//!   read stays in the snapshot, pinned to its node: moving it anywhere might strand it.
//! * A registered node with a CSINode carries its attach limits ([`convert::csinode_limits`]);
//!   a CSINode that does not convert is a problem and its node is unlimited.
//! * Each NodePool plans from the catalog as its EC2NodeClass shapes it
//!   ([`adze_scheduling::node_class`]) when classes are watched (the AWS provider); a pool whose
//!   class is missing or cannot be read keeps its place but can launch nothing, and says why.
//! * NodeOverlays then adjust each pool's instance types ([`crate::rules::apply_overlays`], the
//!   rule `simulate` uses too); what became of each overlay is in [`Built::overlays`].

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use adze_api::{EC2NodeClass, NodeClaim, NodeOverlay, NodePool, conditions, convert};
use adze_scheduling::plan::Unschedulable;
use adze_scheduling::{
    BoundPod, ExistingNode, InstanceType, Requirement, Requirements, Resources, Snapshot, labels,
};
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{Node, PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::storage::v1::{CSINode, StorageClass};

pub const NOT_READY_TAINT: &str = "node.kubernetes.io/not-ready";

/// Objects as the watches hold them.
#[derive(Default, Clone)]
pub struct Objects {
    pub nodes: Vec<Arc<Node>>,
    pub pods: Vec<Arc<Pod>>,
    pub claims: Vec<Arc<NodeClaim>>,
    pub nodepools: Vec<Arc<NodePool>>,
    pub nodeoverlays: Vec<Arc<NodeOverlay>>,
    pub daemonsets: Vec<Arc<DaemonSet>>,
    pub pvcs: Vec<Arc<PersistentVolumeClaim>>,
    pub pvs: Vec<Arc<PersistentVolume>>,
    pub storage_classes: Vec<Arc<StorageClass>>,
    /// Per-node CSI attach limits, by node name.
    pub csinodes: Vec<Arc<CSINode>>,
    /// None when EC2NodeClasses are not watched (the simulated cloud): pools use the catalog.
    pub nodeclasses: Option<Vec<Arc<EC2NodeClass>>>,
    /// `--karpenter-labels`: new nodes carry Karpenter's well-known labels beside Adze's, so
    /// pods selecting Karpenter's keys are planned as if they selected Adze's.
    pub karpenter_labels: bool,
    /// UIDs (→ namespace) of pods the extender's filter turned away from every node
    /// ([`crate::state::signals`]): pending without waiting for kube-scheduler's condition.
    pub failed_every_node: Arc<HashMap<String, String>>,
    /// `--capacity-buffers`: CapacityBuffers and what they refer to (empty when off).
    pub buffers: BufferObjects,
    /// `--kube-scheduler-config`: kube-scheduler's default topology spread and the objects
    /// its selectors come from (empty when off).
    pub spread: SpreadObjects,
}

/// kube-scheduler's default topology spread ([`adze_scheduling::default_spread`]) and what
/// a pod's selector is derived from: its controlling ReplicaSet, StatefulSet or
/// ReplicationController and the Services that select it.
#[derive(Default, Clone)]
pub struct SpreadObjects {
    /// None or empty: no defaults, and nothing below is read.
    pub defaults: Option<Arc<adze_scheduling::default_spread::DefaultSpread>>,
    pub replicasets: Vec<Arc<k8s_openapi::api::apps::v1::ReplicaSet>>,
    pub statefulsets: Vec<Arc<k8s_openapi::api::apps::v1::StatefulSet>>,
    pub replication_controllers: Vec<Arc<k8s_openapi::api::core::v1::ReplicationController>>,
    pub services: Vec<Arc<k8s_openapi::api::core::v1::Service>>,
}

/// [`SpreadObjects`] indexed for one snapshot: controllers' selectors by (kind, namespace,
/// name), Services' selectors by namespace.
struct SpreadIndex<'o> {
    defaults: &'o adze_scheduling::default_spread::DefaultSpread,
    controllers: HashMap<(&'static str, &'o str, &'o str), adze_scheduling::pod::PodSelector>,
    services: HashMap<&'o str, Vec<&'o BTreeMap<String, String>>>,
}

impl<'o> SpreadIndex<'o> {
    fn new(spread: &'o SpreadObjects, problems: &mut Vec<String>) -> Option<SpreadIndex<'o>> {
        let defaults = spread.defaults.as_deref().filter(|d| !d.is_empty())?;
        let ns = |m: &'o k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta| {
            (
                m.namespace.as_deref().unwrap_or(convert::DEFAULT_NAMESPACE),
                m.name.as_deref().unwrap_or_default(),
            )
        };
        let mut controllers = HashMap::new();
        let mut add = |kind: &'static str,
                       meta: &'o k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
                       sel: Option<
            &k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector,
        >| {
            let Some(sel) = sel else { return };
            match convert::controller_selector(kind, meta, sel) {
                Ok(r) => {
                    let (n, name) = ns(meta);
                    controllers.insert((kind, n, name), r);
                }
                Err(e) => problems.push(e.to_string()),
            }
        };
        for r in &spread.replicasets {
            add(
                "ReplicaSet",
                &r.metadata,
                r.spec.as_ref().map(|s| &s.selector),
            );
        }
        for s in &spread.statefulsets {
            add(
                "StatefulSet",
                &s.metadata,
                s.spec.as_ref().map(|s| &s.selector),
            );
        }
        for rc in &spread.replication_controllers {
            let Some(sel) = rc.spec.as_ref().and_then(|s| s.selector.as_ref()) else {
                continue;
            };
            let (n, name) = ns(&rc.metadata);
            let reqs = sel
                .iter()
                .fold(adze_scheduling::pod::PodSelector::new(), |r, (k, v)| {
                    r.with(Requirement::single(k, v))
                });
            controllers.insert(("ReplicationController", n, name), reqs);
        }
        let mut services: HashMap<&str, Vec<&BTreeMap<String, String>>> = HashMap::new();
        for svc in &spread.services {
            // A Service without a selector selects no pod.
            if let Some(sel) = svc.spec.as_ref().and_then(|s| s.selector.as_ref()) {
                services.entry(ns(&svc.metadata).0).or_default().push(sel);
            }
        }
        Some(SpreadIndex {
            defaults,
            controllers,
            services,
        })
    }

    /// Gives `pod` (converted from `p`) the default constraints, by the one rule.
    fn apply(&self, p: &Pod, pod: &mut adze_scheduling::Pod) {
        let namespace = p
            .metadata
            .namespace
            .as_deref()
            .unwrap_or(convert::DEFAULT_NAMESPACE);
        // Only the controlling owner, and only these kinds, as kube-scheduler.
        let controller = p
            .metadata
            .owner_references
            .iter()
            .flatten()
            .find(|o| o.controller == Some(true))
            .and_then(|o| {
                let kind = match (o.api_version.as_str(), o.kind.as_str()) {
                    ("apps/v1", "ReplicaSet") => "ReplicaSet",
                    ("apps/v1", "StatefulSet") => "StatefulSet",
                    ("v1", "ReplicationController") => "ReplicationController",
                    _ => return None,
                };
                self.controllers.get(&(kind, namespace, o.name.as_str()))
            });
        let services = self.services.get(namespace).into_iter().flatten().copied();
        let selector =
            adze_scheduling::default_spread::owner_selector(&pod.labels, services, controller);
        self.defaults.apply(pod, &selector);
    }
}

/// CapacityBuffers and the objects their refs name, as the watches hold them.
#[derive(Default, Clone)]
pub struct BufferObjects {
    pub capacitybuffers: Vec<Arc<adze_api::CapacityBuffer>>,
    pub podtemplates: Vec<Arc<k8s_openapi::api::core::v1::PodTemplate>>,
    pub deployments: Vec<Arc<k8s_openapi::api::apps::v1::Deployment>>,
    pub replicasets: Vec<Arc<k8s_openapi::api::apps::v1::ReplicaSet>>,
    pub statefulsets: Vec<Arc<k8s_openapi::api::apps::v1::StatefulSet>>,
}

impl BufferObjects {
    /// The buffers' placeholder pods, by [`crate::rules::buffer_pods`].
    pub fn pods(&self) -> crate::rules::BufferPods {
        use crate::rules::ScalableTarget;
        let mut refs = crate::rules::BufferRefs {
            templates: self.podtemplates.iter().map(|t| t.as_ref()).collect(),
            targets: Vec::new(),
        };
        for d in &self.deployments {
            if let Some(spec) = &d.spec {
                refs.targets.push(ScalableTarget {
                    api_group: "apps",
                    kind: "Deployment",
                    metadata: &d.metadata,
                    replicas: spec.replicas.unwrap_or(1),
                    template: &spec.template,
                });
            }
        }
        for r in &self.replicasets {
            if let Some(spec) = &r.spec
                && let Some(template) = &spec.template
            {
                refs.targets.push(ScalableTarget {
                    api_group: "apps",
                    kind: "ReplicaSet",
                    metadata: &r.metadata,
                    replicas: spec.replicas.unwrap_or(1),
                    template,
                });
            }
        }
        for s in &self.statefulsets {
            if let Some(spec) = &s.spec {
                refs.targets.push(ScalableTarget {
                    api_group: "apps",
                    kind: "StatefulSet",
                    metadata: &s.metadata,
                    replicas: spec.replicas.unwrap_or(1),
                    template: &spec.template,
                });
            }
        }
        crate::rules::buffer_pods(self.capacitybuffers.iter().map(|b| b.as_ref()), &refs)
    }
}

#[derive(Debug, Default)]
pub struct Built {
    pub snapshot: Snapshot,
    /// "namespace/name" → uid for every pending pod.
    pub pending_uids: BTreeMap<String, String>,
    /// Existing NodeClaim and Node names, which new claims must not take.
    pub reserved_names: Vec<String>,
    /// Objects that could not be converted, with the reason (logged by the caller).
    pub problems: Vec<String>,
    /// Pending pods left out of the snapshot because their volumes cannot be placed yet, with
    /// the reason (an event on the pod). Their uids are in `pending_uids` too.
    pub unschedulable: Vec<Unschedulable>,
    /// What became of each NodeOverlay, by name (the NodeOverlay status controller writes it).
    pub overlays: BTreeMap<String, crate::rules::OverlayVerdict>,
    /// How many of `snapshot.pending` (the last ones) are CapacityBuffer placeholders.
    pub buffer_pods: usize,
    /// DaemonSet pods counted on nodes and in-flight claims where none is bound yet
    /// ([`adze_scheduling::late_daemons::charge`]).
    pub charged_daemons: Vec<adze_scheduling::late_daemons::Charged>,
}

pub fn owned_by_daemonset(pod: &Pod) -> bool {
    crate::rules::daemonset_owner(&pod.metadata).is_some()
}

/// kube-scheduler's default profile: the scheduler a pod without `spec.schedulerName` gets.
pub const DEFAULT_SCHEDULER: &str = "default-scheduler";

/// Pending in the provisioning sense (see the module docs), nominations aside.
/// `failed_every_node`: UIDs the extender signalled ([`Objects::failed_every_node`]).
pub fn is_pending(pod: &Pod, failed_every_node: &HashMap<String, String>) -> bool {
    crate::rules::wants_node(pod)
        && (scheduler_found_no_room(pod, failed_every_node) || awaits_default_scheduler(pod))
}

/// kube-scheduler tried the pod against every node and none fits: its `PodScheduled=False`
/// reason `Unschedulable` condition, or the extender's `FailedEveryNode` Event naming this
/// pod's UID in the pod's namespace (recorded when its filter turned the pod away from every
/// node; by UID, so a deleted pod's same-named successor does not inherit it). This is all
/// Karpenter waits for, whatever the pod's scheduler.
pub fn scheduler_found_no_room(pod: &Pod, failed_every_node: &HashMap<String, String>) -> bool {
    let unschedulable = pod_scheduled_false_reasons(pod).any(|r| r == Some("Unschedulable"));
    let failed_everywhere = pod
        .metadata
        .uid
        .as_ref()
        .and_then(|u| failed_every_node.get(u))
        .is_some_and(|ns| pod.metadata.namespace.as_ref() == Some(ns));
    unschedulable || failed_everywhere
}

fn pod_scheduled_false_reasons(pod: &Pod) -> impl Iterator<Item = Option<&str>> {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .filter(|c| c.type_ == "PodScheduled" && c.status == "False")
        .map(|c| c.reason.as_deref())
}

/// An unbound pod of the default scheduler that kube-scheduler has not turned down for any
/// other reason: demand as soon as the watch shows it, not 9 s later when kube-scheduler
/// (queued behind a burst, writing at its client's QPS) records `Unschedulable` (issue 17).
///
/// Only `default-scheduler` (or no `schedulerName`): that is the scheduler whose nodes and
/// rules the simulation mirrors. A pod of another scheduler (a batch scheduler, the chart's
/// second scheduler) waits for that scheduler's `Unschedulable` condition or the extender's
/// annotation, as in Karpenter, which provisions on the condition whoever wrote it. Gated
/// pods (`schedulingGates`, or a `PodScheduled=False` condition with another reason such as
/// `SchedulingGated`) are not demand: nothing would schedule them on new capacity either.
///
/// Why this cannot launch capacity twice, and why no minimum pod age is needed: the
/// simulation places every pending pod on room that exists first (registered nodes, then
/// in-flight claims and their spare room), so a fresh pod launches capacity only when the
/// snapshot shows room for it nowhere. kube-scheduler binding it meanwhile can only use room
/// that was in the snapshot, so the batch launches the same total either way: its demand
/// minus the room already there. When the two pick different pods for the same room (the
/// simulation puts A on node N and nominates B to a new claim, kube-scheduler binds B to N),
/// B's nomination lapses once its binding is watched (a bound pod counts on its node, not its
/// claim), and A, once kube-scheduler calls it `Unschedulable`, opens a new window
/// ([`unplaced_demand`]) and is placed on the claim's now spare room: nothing is launched
/// twice. A minimum age for pods that fit nowhere would only add latency, since
/// kube-scheduler sees the same nodes and would not bind such a pod either. What the fast path
/// does give up is kube-scheduler's veto where the two disagree (a pod the simulation finds
/// no room for but a scheduler plugin Adze does not model would place): the node launched
/// for it stays empty and emptiness consolidation removes it.
pub fn awaits_default_scheduler(pod: &Pod) -> bool {
    let Some(spec) = pod.spec.as_ref() else {
        return false;
    };
    let scheduler = spec.scheduler_name.as_deref().unwrap_or_default();
    let gated = spec
        .scheduling_gates
        .as_ref()
        .is_some_and(|g| !g.is_empty());
    (scheduler.is_empty() || scheduler == DEFAULT_SCHEDULER)
        && !gated
        && pod_scheduled_false_reasons(pod).all(|r| r == Some("Unschedulable"))
}

use crate::rules::is_terminal;

pub fn claim_conditions(
    claim: &NodeClaim,
) -> &[k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition] {
    claim
        .status
        .as_ref()
        .map(|s| s.conditions.as_slice())
        .unwrap_or_default()
}

/// The kubelet's `Ready=True` condition: what initialization and disruption both wait for.
pub fn node_ready(node: &Node) -> bool {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .any(|c| c.type_ == "Ready" && c.status == "True")
}

pub fn is_initialized(claim: &NodeClaim) -> bool {
    conditions::is_true(claim_conditions(claim), "Initialized")
}

fn pod_key(p: &Pod) -> String {
    format!(
        "{}/{}",
        p.metadata
            .namespace
            .as_deref()
            .unwrap_or(convert::DEFAULT_NAMESPACE),
        p.metadata.name.as_deref().unwrap_or_default()
    )
}

/// The catalog type a claim names in its instance-type label.
fn claim_type<'a>(
    claim: &NodeClaim,
    catalog: &'a [Arc<InstanceType>],
) -> Option<&'a Arc<InstanceType>> {
    let name = claim.metadata.labels.as_ref()?.get(labels::INSTANCE_TYPE)?;
    catalog.iter().find(|t| &t.name == name)
}

fn quantities(
    map: &BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>,
) -> Option<Resources> {
    if map.is_empty() {
        return None;
    }
    Resources::from_quantities(map.iter().map(|(k, v)| (k.as_str(), v.0.as_str()))).ok()
}

/// An in-flight claim as capacity on its way.
pub fn in_flight_node(claim: &NodeClaim, catalog: &[Arc<InstanceType>]) -> ExistingNode {
    let name = claim.metadata.name.clone().unwrap_or_default();
    let claim_labels = claim.metadata.labels.clone().unwrap_or_default();
    let mut requirements = Requirements::from_labels(&claim_labels);
    requirements.add(Requirement::single(labels::HOSTNAME, &name));
    let it = claim_type(claim, catalog);
    let status = claim.status.clone().unwrap_or_default();
    let capacity = quantities(&status.capacity)
        .or_else(|| it.map(|t| t.capacity.clone()))
        .unwrap_or_default();
    let allocatable = quantities(&status.allocatable)
        .or_else(|| it.map(|t| t.allocatable().clone()))
        .unwrap_or_default();
    let taints = claim
        .spec
        .taints
        .iter()
        .map(|t| {
            adze_scheduling::Taint::new(
                &t.key,
                t.value.as_deref().unwrap_or_default(),
                adze_scheduling::Effect::parse(t.effect.as_str()).expect("api effects parse"),
            )
        })
        .collect();
    ExistingNode {
        name,
        requirements,
        taints,
        allocatable,
        nodepool: claim_labels.get(labels::NODEPOOL).cloned(),
        capacity,
        in_flight: true,
        unschedulable: claim.metadata.deletion_timestamp.is_some(),
        price: None,
        volume_limits: Default::default(),
    }
}

/// What `pool` can launch: the catalog as its EC2NodeClass shapes it, or the whole catalog
/// when classes are not watched. Err says why the pool can launch nothing.
pub fn pool_catalog(
    pool: &NodePool,
    classes: Option<&[Arc<EC2NodeClass>]>,
    catalog: &[Arc<InstanceType>],
) -> Result<Vec<Arc<InstanceType>>, String> {
    // Clusters without CEL (before 1.25) admit pools whose fields contradict each other:
    // such a pool launches nothing, and says which field.
    if let Err(e) = pool.validate() {
        return Err(format!("{e}; the pool launches nothing"));
    }
    class_catalog(pool, classes, catalog)
}

/// [`pool_catalog`] without the pool's own validation: what its EC2NodeClass allows.
pub fn class_catalog(
    pool: &NodePool,
    classes: Option<&[Arc<EC2NodeClass>]>,
    catalog: &[Arc<InstanceType>],
) -> Result<Vec<Arc<InstanceType>>, String> {
    let Some(classes) = classes else {
        return Ok(catalog.to_vec());
    };
    let (facts, context) = class_facts(pool, classes)?;
    shaped(catalog, &facts, &context)
}

/// Whether [`class_catalog`] would succeed, without shaping the catalog unless a kubelet
/// expression could fail for some type: the NodePool status loop asks every pool every few
/// seconds, and nearly no class has expressions.
pub fn class_ready(
    pool: &NodePool,
    classes: Option<&[Arc<EC2NodeClass>]>,
    catalog: &[Arc<InstanceType>],
) -> Result<(), String> {
    let Some(classes) = classes else {
        return Ok(());
    };
    let (facts, context) = class_facts(pool, classes)?;
    if !facts.kubelet.has_expressions() {
        return Ok(());
    }
    shaped(catalog, &facts, &context).map(|_| ())
}

/// The pool's class as planning facts, with "nodepool <pool>: EC2NodeClass <class>" for
/// errors; an error when the class is missing, invalid or not resolved yet.
fn class_facts(
    pool: &NodePool,
    classes: &[Arc<EC2NodeClass>],
) -> Result<(adze_scheduling::node_class::NodeClassFacts, String), String> {
    let pool_name = pool.metadata.name.as_deref().unwrap_or_default();
    let wanted = &pool.spec.template.spec.node_class_ref.name;
    let class = classes
        .iter()
        .find(|c| c.metadata.name.as_deref() == Some(wanted.as_str()))
        .ok_or_else(|| {
            format!("nodepool {pool_name}: EC2NodeClass {wanted} does not exist; the pool launches nothing")
        })?;
    let facts = convert::nodeclass(class).map_err(|e| format!("nodepool {pool_name}: {e}"))?;
    if facts.zones.is_empty() || facts.images.is_empty() {
        return Err(format!(
            "nodepool {pool_name}: EC2NodeClass {wanted} has no resolved subnets or images yet; the pool launches nothing"
        ));
    }
    Ok((
        facts,
        format!("nodepool {pool_name}: EC2NodeClass {wanted}"),
    ))
}

fn shaped(
    catalog: &[Arc<InstanceType>],
    facts: &adze_scheduling::node_class::NodeClassFacts,
    context: &str,
) -> Result<Vec<Arc<InstanceType>>, String> {
    adze_scheduling::node_class::instance_types(catalog, facts)
        .map_err(|e| format!("{context}: {e}; the pool launches nothing"))
}

/// Instance types by NodePool name.
pub type PoolTypes = HashMap<String, Vec<Arc<InstanceType>>>;

/// Each pool's instance types by pool name: the catalog as its node class shapes it
/// ([`pool_catalog`]), then as the NodeOverlays adjust it ([`crate::rules::apply_overlays`]),
/// with what became of each overlay. In-flight claims are sized from these too, so a type an
/// overlay gives an extended resource has it before its node reports it.
pub fn pool_types(
    objects: &Objects,
    catalog: &[Arc<InstanceType>],
    problems: &mut Vec<String>,
) -> (PoolTypes, BTreeMap<String, crate::rules::OverlayVerdict>) {
    let mut out = HashMap::new();
    let mut pools = Vec::new();
    for np in &objects.nodepools {
        let types =
            pool_catalog(np, objects.nodeclasses.as_deref(), catalog).unwrap_or_else(|why| {
                problems.push(why);
                Vec::new()
            });
        // A pool that does not convert is reported when the snapshot converts it again.
        match convert::nodepool(np, types.clone()) {
            Ok(pool) => pools.push(pool),
            Err(_) => {
                out.insert(np.metadata.name.clone().unwrap_or_default(), types);
            }
        }
    }
    let verdicts =
        crate::rules::apply_overlays(&mut pools, objects.nodeoverlays.iter().map(|o| o.as_ref()));
    for pool in pools {
        out.insert(pool.name, pool.instance_types);
    }
    (out, verdicts)
}

/// Builds the snapshot. `catalog` is what the region offers, with offerings known to be
/// unavailable already marked so; each pool sees it through its node class ([`pool_catalog`]).
pub fn build(objects: &Objects, catalog: &[Arc<InstanceType>]) -> Built {
    let mut built = Built::default();
    let (mut pool_types, overlays) = pool_types(objects, catalog, &mut built.problems);
    built.overlays = overlays;
    let snap = &mut built.snapshot;

    // Claims by providerID, and which of them have registered.
    let node_by_provider: HashMap<&str, &Node> = objects
        .nodes
        .iter()
        .filter_map(|n| Some((n.spec.as_ref()?.provider_id.as_deref()?, n.as_ref())))
        .collect();
    let mut claim_of_node: HashMap<String, &NodeClaim> = HashMap::new();
    let mut claim_node_name: HashMap<String, String> = HashMap::new();
    for c in &objects.claims {
        let name = c.metadata.name.clone().unwrap_or_default();
        built.reserved_names.push(name.clone());
        let registered = c
            .status
            .as_ref()
            .and_then(|s| s.provider_id.as_deref())
            .and_then(|p| node_by_provider.get(p));
        match registered {
            Some(n) => {
                let node_name = n.metadata.name.clone().unwrap_or_default();
                claim_of_node.insert(node_name.clone(), c);
                claim_node_name.insert(name, node_name);
            }
            None => {
                // The pool's view sizes the claim as its kubelet will report.
                let pool = c
                    .metadata
                    .labels
                    .as_ref()
                    .and_then(|l| l.get(labels::NODEPOOL));
                let types = pool
                    .and_then(|p| pool_types.get(p))
                    .map_or(catalog, |t| t.as_slice());
                snap.nodes.push(in_flight_node(c, types));
                claim_node_name.insert(name.clone(), name);
            }
        }
    }

    let leaving = super::leaving::leaving_nodes(objects);
    let spread = SpreadIndex::new(&objects.spread, &mut built.problems);
    let csinodes: HashMap<&str, &CSINode> = objects
        .csinodes
        .iter()
        .filter_map(|c| Some((c.metadata.name.as_deref()?, c.as_ref())))
        .collect();
    for n in &objects.nodes {
        let name = n.metadata.name.clone().unwrap_or_default();
        built.reserved_names.push(name.clone());
        match convert::node(n) {
            Ok(mut node) => {
                if let Some(c) = csinodes.get(name.as_str()) {
                    match convert::csinode_limits(c) {
                        Ok(limits) => node.volume_limits = limits,
                        Err(e) => built.problems.push(e.to_string()),
                    }
                }
                if leaving.contains(&name) {
                    node.unschedulable = true;
                }
                if let Some(c) = claim_of_node.get(&name) {
                    if !is_initialized(c) {
                        let startup: BTreeSet<&str> = c
                            .spec
                            .startup_taints
                            .iter()
                            .map(|t| t.key.as_str())
                            .collect();
                        node.taints.retain(|t| {
                            t.key != NOT_READY_TAINT && !startup.contains(t.key.as_str())
                        });
                    }
                    node.nodepool = c
                        .metadata
                        .labels
                        .as_ref()
                        .and_then(|l| l.get(labels::NODEPOOL))
                        .cloned();
                }
                snap.nodes.push(node)
            }
            Err(e) => built.problems.push(e.to_string()),
        }
    }

    let nominated = nominations(objects, &claim_node_name);
    // Pods placed on a claim by its nomination, not by a binding (see `reserved_room`).
    let mut held_by_nomination: HashSet<String> = HashSet::new();
    let volumes = convert::VolumeObjects::new(
        objects.pvcs.iter().map(AsRef::as_ref),
        objects.pvs.iter().map(AsRef::as_ref),
        objects.storage_classes.iter().map(AsRef::as_ref),
    );

    for p in &objects.pods {
        if is_terminal(p)
            || owned_by_daemonset(p) && p.spec.as_ref().and_then(|s| s.node_name.as_ref()).is_none()
        {
            continue;
        }
        let bound_to = p
            .spec
            .as_ref()
            .and_then(|s| s.node_name.clone())
            .filter(|n| !n.is_empty());
        let uid = p.metadata.uid.clone().unwrap_or_default();
        let displaced = super::leaving::is_displaced(p, &leaving);
        let target = if displaced {
            nominated
                .get(&uid)
                .filter(|n| !leaving.contains(*n))
                .cloned()
        } else {
            bound_to.clone().or_else(|| {
                if is_pending(p, &objects.failed_every_node) {
                    nominated.get(&uid).cloned()
                } else {
                    None
                }
            })
        };
        if target.is_none() && !is_pending(p, &objects.failed_every_node) && !displaced {
            continue;
        }
        let mut pod = match convert::pod(p) {
            Ok(pod) => pod,
            Err(e) => {
                built.problems.push(e.to_string());
                continue;
            }
        };
        if let Some(index) = &spread {
            index.apply(p, &mut pod);
        }
        if objects.karpenter_labels {
            pod.alias_karpenter_keys();
        }
        if let (Some(reason), None) = (crate::rules::unplannable(p), &target) {
            built.pending_uids.insert(pod_key(p), uid);
            built.unschedulable.push(Unschedulable {
                pod: pod.key(),
                reason,
            });
            continue;
        }
        let pod = match (convert::with_volumes(p, pod.clone(), &volumes), &target) {
            (Ok(placed), _) => placed,
            (Err(_), Some(node)) => {
                let mut pod = pinned(pod, node);
                pod.volumes = convert::pod_volumes(p, &volumes);
                pod
            }
            (Err(e), None) => {
                built.pending_uids.insert(pod_key(p), uid);
                built.unschedulable.push(Unschedulable {
                    pod: pod.key(),
                    reason: e.to_string(),
                });
                continue;
            }
        };
        match target {
            Some(node) => {
                if bound_to.is_none() {
                    held_by_nomination.insert(uid.clone());
                }
                snap.bound.push(BoundPod {
                    node,
                    pod,
                    daemon: crate::rules::stays_with_node(p),
                })
            }
            None => {
                built.pending_uids.insert(pod_key(p), uid);
                snap.pending.push(pod);
            }
        }
    }

    for np in &objects.nodepools {
        if crate::rules::nodepool_unusable(np).is_some() {
            continue;
        }
        let name = np.metadata.name.clone().unwrap_or_default();
        match convert::nodepool(np, pool_types.remove(&name).unwrap_or_default()) {
            Ok(pool) => snap.nodepools.push(pool),
            Err(e) => built.problems.push(e.to_string()),
        }
    }
    // Live DaemonSet pods, one per (DaemonSet, revision): pods of one revision were made
    // from the same template, so one of each says what the revision really asks for.
    let mut live: HashMap<(&str, &str), BTreeMap<&str, &Pod>> = HashMap::new();
    for p in &objects.pods {
        if is_terminal(p) || crate::rules::is_terminating(&p.metadata) {
            continue;
        }
        let Some(owner) = p
            .metadata
            .owner_references
            .iter()
            .flatten()
            .find(|o| o.kind == "DaemonSet")
        else {
            continue;
        };
        let revision = p
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("controller-revision-hash"))
            .map_or("", String::as_str);
        live.entry((owner.uid.as_str(), owner.name.as_str()))
            .or_default()
            .entry(revision)
            .or_insert(p);
    }
    // Per entry of `snap.daemonsets`: its DaemonSet's (uid, name), to find its bound pods.
    let mut daemon_keys: Vec<(&str, &str)> = Vec::with_capacity(objects.daemonsets.len());
    for ds in &objects.daemonsets {
        match convert::daemonset_pod(ds) {
            Ok(mut p) => {
                let key = (
                    ds.metadata.uid.as_deref().unwrap_or_default(),
                    ds.metadata.name.as_deref().unwrap_or_default(),
                );
                daemon_keys.push(key);
                let pods: Vec<adze_scheduling::Pod> = live
                    .get(&key)
                    .into_iter()
                    .flat_map(|by_rev| by_rev.values())
                    .filter_map(|lp| convert::pod(lp).ok())
                    .collect();
                crate::rules::daemon_pod_from_live(&mut p, &pods);
                snap.daemonsets.push(p)
            }
            Err(e) => built.problems.push(e.to_string()),
        }
    }
    // Today's DaemonSets where their pods will run but none is bound yet: a DaemonSet
    // created after a node was planned (its pod pending there, or not made yet), and every
    // DaemonSet of an in-flight claim. The rule is `adze_scheduling::late_daemons`, which
    // `simulate` scenarios go through too.
    let bound_daemon_pods = crate::rules::bound_daemon_pods(&objects.pods);
    let reserved = reserved_room(objects, &claim_node_name, &held_by_nomination);
    built.charged_daemons = adze_scheduling::late_daemons::charge(
        snap,
        |d, node| bound_daemon_pods.contains(&(daemon_keys[d].0, node)),
        &reserved,
    );
    // CapacityBuffers' placeholder pods: pending on every pass after the real pods (lowest
    // priority), never created, nominated or given events (they have no uid).
    if !objects.buffers.capacitybuffers.is_empty() {
        let buffer = objects.buffers.pods();
        for (key, verdict) in &buffer.verdicts {
            if let crate::rules::BufferVerdict::Invalid(why) = verdict {
                built.problems.push(format!("capacitybuffer {key}: {why}"));
            }
        }
        built.buffer_pods = buffer.pods.len();
        for mut pod in buffer.pods {
            if objects.karpenter_labels {
                pod.alias_karpenter_keys();
            }
            snap.pending.push(pod);
        }
    }
    built
}

/// A bound pod held to its node, for when where else it could run is unknown.
fn pinned(mut pod: adze_scheduling::Pod, node: &str) -> adze_scheduling::Pod {
    for t in &mut pod.node_requirements {
        t.add(Requirement::single(labels::HOSTNAME, node));
    }
    pod
}

/// The nodes and in-flight claims whose claim (live) still waits for a pod nominated to it — unbound,
/// not terminating or finished — with the requests of those of its pods the snapshot does
/// not already put there (`held_by_nomination`: placed by the nomination). The extender's
/// ledger holds their room until they are bound, so a DaemonSet created after the claim was
/// planned takes only what is left beside them ([`adze_scheduling::late_daemons::charge`]).
fn reserved_room(
    objects: &Objects,
    claim_node_name: &HashMap<String, String>,
    held_by_nomination: &HashSet<String>,
) -> HashMap<String, adze_scheduling::resources::Resources> {
    let mut out = HashMap::new();
    let waiting: HashMap<&str, &Pod> = objects
        .pods
        .iter()
        .filter(|p| {
            !is_terminal(p)
                && p.metadata.deletion_timestamp.is_none()
                && p.spec
                    .as_ref()
                    .and_then(|s| s.node_name.as_deref())
                    .is_none_or(str::is_empty)
        })
        .filter_map(|p| Some((p.metadata.uid.as_deref()?, p.as_ref())))
        .collect();
    if waiting.is_empty() {
        return out;
    }
    for c in &objects.claims {
        if c.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let name = c.metadata.name.as_deref().unwrap_or_default();
        let Some(node) = claim_node_name.get(name) else {
            continue;
        };
        for n in crate::state::nomination::of_claim(c) {
            let Some(p) = waiting.get(n.uid.as_str()) else {
                continue;
            };
            let room: &mut adze_scheduling::resources::Resources =
                out.entry(node.clone()).or_default();
            if !held_by_nomination.contains(&n.uid)
                && let Ok(pod) = convert::pod(p)
            {
                room.add(&pod.requests);
            }
        }
    }
    out
}

/// Pod uid → the node (or in-flight claim) it is nominated to, over the claims whose
/// nominations still hold: not initialised and not being deleted.
fn nominations(
    objects: &Objects,
    claim_node_name: &HashMap<String, String>,
) -> HashMap<String, String> {
    let mut nominated = HashMap::new();
    for c in &objects.claims {
        if is_initialized(c) || c.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let name = c.metadata.name.clone().unwrap_or_default();
        let node = claim_node_name.get(&name).cloned().unwrap_or(name);
        for n in crate::state::nomination::of_claim(c) {
            nominated.insert(n.uid, node.clone());
        }
    }
    nominated
}

/// What provisioning knows of kube-scheduler's view of one pending pod: whether it has
/// confirmed the pod fits nowhere ([`scheduler_found_no_room`]; displaced pods count as
/// confirmed) and, when that came from its `PodScheduled=False` `Unschedulable` condition,
/// that condition's message and last transition time ([`Refusal`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Verdict {
    pub confirmed: bool,
    pub refusal: Option<Refusal>,
}

/// kube-scheduler's `Unschedulable` condition as last written. kube-scheduler writes a new
/// message when it tries the pod again on a changed cluster and still finds no node (another
/// count of nodes, another reason), so a changed refusal says the cluster moved under a pod a
/// pass left pending.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub message: Option<String>,
    /// RFC 3339, as the API serves it.
    pub last_transition: Option<String>,
}

impl Verdict {
    /// What a batch window already covers: confirmed, and whatever kube-scheduler writes
    /// before the pass runs is no news (the pass plans with what it shows then).
    pub fn absorbed() -> Verdict {
        Verdict {
            confirmed: true,
            refusal: None,
        }
    }
}

/// Whether a pending pod holds news for provisioning, `before` being what the last pass saw
/// of it (None: no pass has decided about it). News: a pod no pass has seen (a fresh pod of
/// the default scheduler, from its first watch event); one the pass saw unconfirmed and
/// kube-scheduler has since turned down (the room the pass saw for it went to another pod);
/// or one the pass saw turned down that kube-scheduler has turned down again with another
/// message or transition time. The last is what a consolidation wave makes: a moved pod that
/// the pass still placed on existing room is refused again once that room changes, and
/// without a new pass it would wait for the periodic retry (30 s) to get a node.
pub fn is_news(now: &Verdict, before: Option<&Verdict>) -> bool {
    let Some(was) = before else {
        return true;
    };
    if !now.confirmed {
        return false;
    }
    if !was.confirmed {
        return true;
    }
    match (&was.refusal, &now.refusal) {
        (Some(a), Some(b)) => a != b,
        // Absorbed into a window, or confirmed by the extender's signal: the pass decided
        // with the pod already refused.
        _ => false,
    }
}

/// kube-scheduler's `Unschedulable` condition on `pod`, if it has one.
pub fn refusal(pod: &Pod) -> Option<Refusal> {
    pod.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| {
            c.type_ == "PodScheduled"
                && c.status == "False"
                && c.reason.as_deref() == Some("Unschedulable")
        })
        .map(|c| Refusal {
            message: c.message.clone(),
            last_transition: c.last_transition_time.as_ref().map(|t| t.0.to_string()),
        })
}

/// Uids of the pending and displaced pods no claim is nominated for — what opens a batch
/// window, so a node that starts leaving wakes provisioning at once; cheap (no conversion), so
/// it runs on every tick — each with kube-scheduler's [`Verdict`] on it. Whether a pass must
/// run for them is [`is_news`].
pub fn unplaced_demand(objects: &Objects) -> BTreeMap<String, Verdict> {
    let nominated = nominations(objects, &HashMap::new());
    let leaving = super::leaving::leaving_nodes(objects);
    objects
        .pods
        .iter()
        .filter_map(|p| {
            let displaced = super::leaving::is_displaced(p, &leaving);
            if !(displaced || is_pending(p, &objects.failed_every_node)) {
                return None;
            }
            let uid = p.metadata.uid.clone()?;
            Some((
                uid,
                Verdict {
                    confirmed: displaced || scheduler_found_no_room(p, &objects.failed_every_node),
                    refusal: refusal(p),
                },
            ))
        })
        .filter(|(u, _)| !nominated.contains_key(u))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pending_pod(name: &str, uid: &str) -> Arc<Pod> {
        Arc::new(
            serde_json::from_value(json!({
                "metadata": {"name": name, "namespace": "default", "uid": uid},
                "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]},
                "status": {"phase": "Pending", "conditions": [
                    {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]},
            }))
            .unwrap(),
        )
    }

    fn claim(name: &str, nominated: &str) -> Arc<NodeClaim> {
        Arc::new(
            serde_json::from_value(json!({
                "apiVersion": "adze.sh/v1", "kind": "NodeClaim",
                "metadata": {"name": name, "labels": {
                    labels::NODEPOOL: "default", labels::INSTANCE_TYPE: "m5.large",
                    labels::ZONE: "us-east-1a", labels::CAPACITY_TYPE: "on-demand"},
                    "annotations": {labels::NOMINATED_PODS: nominated}},
                "spec": {"nodeClassRef": {"group": "aws.adze.sh", "kind": "EC2NodeClass", "name": "default"}},
            }))
            .unwrap(),
        )
    }

    #[test]
    fn nominated_pod_is_bound_to_its_in_flight_claim_not_pending() {
        let objects = Objects {
            pods: vec![pending_pod("a", "u-a"), pending_pod("b", "u-b")],
            claims: vec![claim(
                "default-abc",
                r#"[{"namespace":"default","name":"a","uid":"u-a"}]"#,
            )],
            ..Objects::default()
        };
        let catalog = adze_scheduling::catalog::embedded();
        let built = build(&objects, &catalog);
        let pending: Vec<_> = built.snapshot.pending.iter().map(|p| p.key()).collect();
        assert_eq!(pending, vec!["default/b"]);
        assert_eq!(built.snapshot.bound.len(), 1);
        assert_eq!(built.snapshot.bound[0].node, "default-abc");
        let n = &built.snapshot.nodes[0];
        assert!(n.in_flight);
        assert_eq!(n.nodepool.as_deref(), Some("default"));
        assert_eq!(n.capacity.get("cpu"), 2000, "m5.large from the catalog");
        assert!(built.reserved_names.contains(&"default-abc".to_string()));
        assert_eq!(
            unplaced_pending(&objects),
            BTreeSet::from(["u-b".to_string()])
        );
    }

    fn pool_of_class(class: &str) -> Arc<NodePool> {
        Arc::new(
            serde_json::from_value(json!({
                "apiVersion": "adze.sh/v1", "kind": "NodePool", "metadata": {"name": "default"},
                "spec": {"template": {"spec": {"nodeClassRef":
                    {"group": "aws.adze.sh", "kind": "EC2NodeClass", "name": class}}}},
            }))
            .unwrap(),
        )
    }

    fn class_in(zones: &[&str]) -> Arc<EC2NodeClass> {
        let subnets: Vec<_> = zones
            .iter()
            .enumerate()
            .map(|(i, z)| json!({"id": format!("subnet-{i}"), "zone": z}))
            .collect();
        Arc::new(
            serde_json::from_value(json!({
                "apiVersion": "aws.adze.sh/v1", "kind": "EC2NodeClass", "metadata": {"name": "gpu"},
                "spec": {"subnetSelectorTerms": [{"id": "subnet-0"}],
                    "securityGroupSelectorTerms": [{"id": "sg-1"}],
                    "amiSelectorTerms": [{"alias": "al2023@latest"}], "role": "node"},
                "status": {"subnets": subnets, "amis": [{"id": "ami-1", "requirements": [
                    {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]}]},
            }))
            .unwrap(),
        )
    }

    fn plan(objects: &Objects) -> (Built, adze_scheduling::Plan) {
        let built = build(objects, &adze_scheduling::catalog::embedded());
        let plan = adze_scheduling::schedule(&built.snapshot, &adze_scheduling::Options::default());
        (built, plan)
    }

    /// [`unplaced_demand`] with whether kube-scheduler confirmed each.
    fn confirmations(objects: &Objects) -> BTreeMap<String, bool> {
        unplaced_demand(objects)
            .into_iter()
            .map(|(u, v)| (u, v.confirmed))
            .collect()
    }

    /// The uids [`unplaced_demand`] holds.
    fn unplaced_pending(objects: &Objects) -> BTreeSet<String> {
        unplaced_demand(objects).into_keys().collect()
    }

    /// The pods `plan` puts on existing node (or in-flight claim) `node`.
    fn placed_on<'a>(plan: &'a adze_scheduling::Plan, node: &str) -> Vec<&'a str> {
        plan.existing
            .iter()
            .filter(|e| e.node == node)
            .flat_map(|e| e.pods.iter().map(String::as_str))
            .collect()
    }

    #[test]
    fn a_pool_whose_class_has_subnets_only_in_one_zone_gets_claims_only_there() {
        let objects = Objects {
            pods: (0..6)
                .map(|i| pending_pod(&format!("p{i}"), &format!("u{i}")))
                .collect(),
            nodepools: vec![pool_of_class("gpu")],
            nodeclasses: Some(vec![class_in(&["us-east-1b"])]),
            ..Objects::default()
        };
        let (built, plan) = plan(&objects);
        assert!(built.problems.is_empty(), "{:?}", built.problems);
        assert!(!plan.new_claims.is_empty());
        assert!(plan.unschedulable.is_empty());
        for c in &plan.new_claims {
            assert_eq!(c.zone, "us-east-1b");
            assert_eq!(
                c.labels.get(labels::ARCH).map(String::as_str),
                Some("amd64")
            );
        }
    }

    #[test]
    fn a_windows_class_plans_windows_nodes_at_windows_prices_and_an_al2_class_linux_nodes() {
        let with_alias = |alias: &str| {
            let mut c = (*class_in(&["us-east-1b"])).clone();
            c.spec.ami_selector_terms[0].alias = Some(alias.into());
            Arc::new(c)
        };
        let on = |os: &str| {
            let mut p = (*pending_pod(os, &format!("u-{os}"))).clone();
            p.spec.as_mut().unwrap().node_selector =
                Some([(labels::OS.to_string(), os.to_string())].into());
            Arc::new(p)
        };
        let objects = Objects {
            pods: vec![on("windows"), on("linux")],
            nodepools: vec![pool_of_class("gpu")],
            nodeclasses: Some(vec![with_alias("windows2022@latest")]),
            ..Objects::default()
        };
        let (built, windows) = plan(&objects);
        assert!(built.problems.is_empty(), "{:?}", built.problems);
        assert_eq!(windows.new_claims.len(), 1);
        let claim = &windows.new_claims[0];
        assert_eq!(claim.pods, vec!["default/windows"]);
        assert_eq!(claim.labels[labels::OS], "windows");
        assert_eq!(claim.labels[labels::WINDOWS_BUILD], "10.0.20348");
        let linux_price = adze_scheduling::catalog::ec2_data::TYPES
            .iter()
            .find(|t| t.name == claim.instance_type)
            .unwrap()
            .on_demand_usd;
        assert!(
            claim.price_per_hour > linux_price,
            "{} at {} is not above Linux {linux_price}",
            claim.instance_type,
            claim.price_per_hour
        );
        assert_eq!(
            windows.unschedulable.len(),
            1,
            "the Linux pod has no Linux pool"
        );
        assert_eq!(windows.unschedulable[0].pod, "default/linux");
        let objects = Objects {
            nodeclasses: Some(vec![with_alias("al2@latest")]),
            ..objects
        };
        let (built, al2) = plan(&objects);
        assert!(built.problems.is_empty(), "{:?}", built.problems);
        assert_eq!(al2.new_claims.len(), 1);
        assert_eq!(al2.new_claims[0].pods, vec!["default/linux"]);
        assert_eq!(
            al2.new_claims[0].labels.get(labels::OS).map(String::as_str),
            Some("linux")
        );
    }

    #[test]
    fn a_pool_whose_class_does_not_exist_plans_nothing_and_says_why() {
        let objects = Objects {
            pods: vec![pending_pod("a", "u-a")],
            nodepools: vec![pool_of_class("missing")],
            nodeclasses: Some(vec![class_in(&["us-east-1b"])]),
            ..Objects::default()
        };
        let (built, plan) = plan(&objects);
        assert!(plan.new_claims.is_empty());
        assert_eq!(plan.unschedulable.len(), 1);
        assert!(
            built
                .problems
                .iter()
                .any(|p| p.contains("EC2NodeClass missing does not exist")),
            "{:?}",
            built.problems
        );
        let unwatched = Objects {
            nodeclasses: None,
            ..objects
        };
        assert_eq!(
            plan_claims(&unwatched),
            1,
            "without class watches the catalog is used"
        );
    }

    fn plan_claims(objects: &Objects) -> usize {
        plan(objects).1.new_claims.len()
    }

    /// Passes are serialised, so "concurrent batches" means: the next batch starts while the
    /// previous batch's claims are still in flight. Their capacity must count against the
    /// NodePool's limits, or two batches together would overshoot.
    #[test]
    fn in_flight_claims_of_an_earlier_batch_count_against_the_limit_of_the_next() {
        let pool: Arc<NodePool> = Arc::new(
            serde_json::from_value(json!({
                "apiVersion": "adze.sh/v1", "kind": "NodePool", "metadata": {"name": "default"},
                "spec": {"limits": {"cpu": "4"}, "template": {"spec": {"nodeClassRef":
                    {"group": "aws.adze.sh", "kind": "EC2NodeClass", "name": "default"}}}},
            }))
            .unwrap(),
        );
        let mut pods = vec![pending_pod("a", "u-a")];
        pods.extend((0..10).map(|i| pending_pod(&format!("b{i}"), &format!("u-b{i}"))));
        let objects = Objects {
            pods,
            claims: vec![claim(
                "default-first",
                r#"[{"namespace":"default","name":"a","uid":"u-a"}]"#,
            )],
            nodepools: vec![pool],
            ..Objects::default()
        };
        let catalog = adze_scheduling::catalog::embedded();
        let built = build(&objects, &catalog);
        assert!(built.problems.is_empty(), "{:?}", built.problems);
        let plan = adze_scheduling::schedule(
            &built.snapshot,
            &adze_scheduling::Options {
                max_instance_types: 20,
                reserved_names: built.reserved_names.clone(),
                ..Default::default()
            },
        );
        // Every option a new claim may launch must fit in the 2 cpu the in-flight m5.large
        // (2 cpu) leaves under the 4-cpu limit.
        let largest_option_cpu: i64 = plan
            .new_claims
            .iter()
            .map(|c| {
                c.instance_type_options
                    .iter()
                    .map(|t| {
                        let it = catalog.iter().find(|i| &i.name == t).expect("catalog type");
                        it.capacity.get("cpu")
                    })
                    .max()
                    .unwrap_or(0)
            })
            .sum();
        assert!(!plan.new_claims.is_empty(), "room for one more small node");
        assert!(
            largest_option_cpu <= 2000,
            "new claims could launch {largest_option_cpu}m cpu on top of the in-flight 2000m"
        );
        assert!(
            plan.unschedulable
                .iter()
                .any(|u| u.reason.contains("limits")),
            "pods left out say the limit is why: {:?}",
            plan.unschedulable
        );
    }

    #[test]
    fn bound_daemonset_and_terminating_pods_are_not_pending() {
        let mut bound = (*pending_pod("a", "u-a")).clone();
        bound.spec.as_mut().unwrap().node_name = Some("n1".into());
        let mut ds = (*pending_pod("d", "u-d")).clone();
        ds.metadata.owner_references = Some(vec![
            serde_json::from_value(json!({
            "apiVersion": "apps/v1", "kind": "DaemonSet", "name": "x", "uid": "u"}))
            .unwrap(),
        ]);
        let mut gone = (*pending_pod("g", "u-g")).clone();
        gone.metadata.deletion_timestamp =
            Some(serde_json::from_value(json!("2026-01-01T00:00:00Z")).unwrap());
        for p in [&bound, &ds, &gone] {
            assert!(!is_pending(p, &HashMap::new()));
        }
        assert!(is_pending(&pending_pod("p", "u-p"), &HashMap::new()));
    }

    fn node(name: &str, provider_id: &str, taints: serde_json::Value) -> Arc<Node> {
        Arc::new(
            serde_json::from_value(json!({
                "metadata": {"name": name, "labels": {
                    labels::INSTANCE_TYPE: "m5.large", labels::ZONE: "us-east-1a",
                    labels::CAPACITY_TYPE: "spot", labels::NODEPOOL: "default"}},
                "spec": {"providerID": provider_id, "taints": taints},
                "status": {"allocatable": {"cpu": "2", "memory": "8Gi", "pods": "110"},
                           "capacity": {"cpu": "2", "memory": "8Gi", "pods": "110"}},
            }))
            .unwrap(),
        )
    }

    fn running_on(name: &str, uid: &str, node: &str) -> Arc<Pod> {
        let mut p = (*pending_pod(name, uid)).clone();
        p.spec.as_mut().unwrap().node_name = Some(node.into());
        p.status = serde_json::from_value(json!({"phase": "Running"})).unwrap();
        Arc::new(p)
    }

    fn registered_claim(name: &str, provider_id: &str, interrupted: bool) -> Arc<NodeClaim> {
        let mut c = (*claim(name, "[]")).clone();
        let mut conds = vec![
            json!({"type": "Initialized", "status": "True", "reason": "I",
            "message": "m", "lastTransitionTime": "2026-01-01T00:00:00Z"}),
        ];
        if interrupted {
            conds.push(
                json!({"type": "Interrupted", "status": "True", "reason": "SpotInterruption",
                "message": "m", "lastTransitionTime": "2026-01-01T00:00:00Z"}),
            );
        }
        c.status = serde_json::from_value(json!({"providerID": provider_id, "conditions": conds}))
            .unwrap();
        Arc::new(c)
    }

    #[test]
    fn interrupted_node_offers_no_capacity_and_its_pods_become_demand() {
        let mut ds = (*running_on("ds", "u-ds", "n1")).clone();
        ds.metadata.owner_references = Some(vec![
            serde_json::from_value(json!({
            "apiVersion": "apps/v1", "kind": "DaemonSet", "name": "x", "uid": "u"}))
            .unwrap(),
        ]);
        let mut going = (*running_on("gone", "u-gone", "n1")).clone();
        going.metadata.deletion_timestamp =
            Some(serde_json::from_value(json!("2026-01-01T00:00:00Z")).unwrap());
        let objects = Objects {
            nodes: vec![
                node(
                    "n1",
                    "adze-sim://n1",
                    json!([{"key": labels::TAINT_INTERRUPTED, "effect": "NoSchedule"}]),
                ),
                node("n2", "adze-sim://n2", json!([])),
            ],
            pods: vec![
                running_on("web", "u-web", "n1"),
                Arc::new(ds),
                Arc::new(going),
                running_on("db", "u-db", "n2"),
            ],
            ..Objects::default()
        };
        let built = build(&objects, &adze_scheduling::catalog::embedded());
        let n1 = built
            .snapshot
            .nodes
            .iter()
            .find(|n| n.name == "n1")
            .unwrap();
        assert!(n1.unschedulable);
        assert!(
            !built
                .snapshot
                .nodes
                .iter()
                .find(|n| n.name == "n2")
                .unwrap()
                .unschedulable
        );
        let pending: Vec<_> = built.snapshot.pending.iter().map(|p| p.key()).collect();
        assert_eq!(pending, vec!["default/web"]);
        assert_eq!(built.pending_uids["default/web"], "u-web");
        assert_eq!(
            unplaced_pending(&objects),
            BTreeSet::from(["u-web".to_string()])
        );
    }

    #[test]
    fn interrupted_nodeclaim_condition_makes_its_node_leave_without_a_taint() {
        let objects = Objects {
            nodes: vec![node("n1", "adze-sim://n1", json!([]))],
            pods: vec![running_on("web", "u-web", "n1")],
            claims: vec![registered_claim("default-n1", "adze-sim://n1", true)],
            ..Objects::default()
        };
        assert_eq!(
            unplaced_pending(&objects),
            BTreeSet::from(["u-web".to_string()])
        );
        let calm = Objects {
            claims: vec![registered_claim("default-n1", "adze-sim://n1", false)],
            ..objects
        };
        assert!(unplaced_pending(&calm).is_empty());
        assert!(
            build(&calm, &adze_scheduling::catalog::embedded())
                .snapshot
                .pending
                .is_empty()
        );
    }

    #[test]
    fn displaced_pod_already_nominated_to_a_replacement_is_not_demand_again() {
        let objects = Objects {
            nodes: vec![node(
                "n1",
                "adze-sim://n1",
                json!([{"key": labels::TAINT_DISRUPTED, "effect": "NoSchedule"}]),
            )],
            pods: vec![
                running_on("web", "u-web", "n1"),
                running_on("api", "u-api", "n1"),
            ],
            claims: vec![claim(
                "default-new",
                r#"[{"namespace":"default","name":"web","uid":"u-web"}]"#,
            )],
            ..Objects::default()
        };
        let built = build(&objects, &adze_scheduling::catalog::embedded());
        let pending: Vec<_> = built.snapshot.pending.iter().map(|p| p.key()).collect();
        assert_eq!(pending, vec!["default/api"]);
        let web = built
            .snapshot
            .bound
            .iter()
            .find(|b| b.pod.key() == "default/web")
            .unwrap();
        assert_eq!(web.node, "default-new");
        assert_eq!(
            unplaced_pending(&objects),
            BTreeSet::from(["u-api".to_string()])
        );
    }

    #[test]
    fn pod_the_extender_signalled_is_pending_before_the_condition_by_uid_only() {
        // The chart's second scheduler: its pods wait for a verdict, and the extender's
        // Event is the earliest one.
        let mut p = (*pending_pod("x", "u-x")).clone();
        p.status = None;
        p.spec.as_mut().unwrap().scheduler_name = Some("adze-scheduler".into());
        let none = HashMap::new();
        let signalled = HashMap::from([("u-x".to_string(), "default".to_string())]);
        assert!(!is_pending(&p, &none));
        assert!(is_pending(&p, &signalled));
        // A deleted pod's same-named successor: a new UID, no signal.
        let mut successor = p.clone();
        successor.metadata.uid = Some("u-x2".into());
        assert!(!is_pending(&successor, &signalled));
        // An Event of another namespace naming this pod's UID: not this pod's signal.
        let elsewhere = HashMap::from([("u-x".to_string(), "other".to_string())]);
        assert!(!is_pending(&p, &elsewhere));
        p.spec.as_mut().unwrap().node_name = Some("n1".into());
        assert!(
            !is_pending(&p, &signalled),
            "a bound pod is not pending whatever was signalled"
        );
        // Through the snapshot, as the provisioning loop sees it.
        let mut q = (*pending_pod("q", "u-q")).clone();
        q.status = None;
        q.spec.as_mut().unwrap().scheduler_name = Some("adze-scheduler".into());
        let mut objects = Objects {
            pods: vec![Arc::new(q)],
            ..Objects::default()
        };
        assert!(unplaced_demand(&objects).is_empty());
        objects.failed_every_node =
            Arc::new(HashMap::from([("u-q".to_string(), "default".to_string())]));
        assert_eq!(
            confirmations(&objects),
            BTreeMap::from([("u-q".to_string(), true)])
        );
    }

    /// A pod as the ReplicaSet controller creates it: no status yet, kube-scheduler has not
    /// looked at it.
    /// A pending pod with labels and, optionally, a controlling owner.
    fn owned_pod(
        name: &str,
        labels: serde_json::Value,
        owner: Option<(&str, &str, &str)>,
    ) -> Arc<Pod> {
        let mut p = (*pending_pod(name, &format!("u-{name}"))).clone();
        p.metadata.labels = serde_json::from_value(labels).unwrap();
        if let Some((api_version, kind, owner)) = owner {
            p.metadata.owner_references = serde_json::from_value(json!([{
                "apiVersion": api_version, "kind": kind, "name": owner, "uid": "o", "controller": true
            }]))
            .unwrap();
        }
        Arc::new(p)
    }

    #[test]
    fn default_spread_selects_by_the_controlling_replicaset_and_services_only() {
        use adze_scheduling::default_spread::DefaultSpread;
        let rs: k8s_openapi::api::apps::v1::ReplicaSet = serde_json::from_value(json!({
            "metadata": {"name": "web-abc", "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"app": "web", "pod-template-hash": "abc"}}},
        }))
        .unwrap();
        let svc: k8s_openapi::api::core::v1::Service = serde_json::from_value(json!({
            "metadata": {"name": "api", "namespace": "default"},
            "spec": {"selector": {"tier": "api"}},
        }))
        .unwrap();
        let web = json!({"app": "web", "pod-template-hash": "abc"});
        let mut declared = (*owned_pod(
            "own",
            web.clone(),
            Some(("apps/v1", "ReplicaSet", "web-abc")),
        ))
        .clone();
        declared.spec.as_mut().unwrap().topology_spread_constraints = serde_json::from_value(json!([
            {"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway"}
        ]))
        .unwrap();
        let objects = Objects {
            pods: vec![
                owned_pod(
                    "web-1",
                    web.clone(),
                    Some(("apps/v1", "ReplicaSet", "web-abc")),
                ),
                owned_pod(
                    "api-1",
                    json!({"tier": "api"}),
                    Some(("batch/v1", "Job", "api")),
                ),
                owned_pod("bare", web, None),
                Arc::new(declared),
            ],
            nodepools: vec![default_pool()],
            spread: SpreadObjects {
                defaults: Some(Arc::new(DefaultSpread::system())),
                replicasets: vec![Arc::new(rs)],
                services: vec![Arc::new(svc)],
                ..Default::default()
            },
            ..Objects::default()
        };
        let built = build(&objects, &adze_scheduling::catalog::embedded());
        let spread: BTreeMap<&str, Vec<String>> = built
            .snapshot
            .pending
            .iter()
            .map(|p| {
                let keys = p
                    .spread
                    .iter()
                    .map(|s| format!("{}:{}:{}", s.topology_key, s.max_skew, s.selector))
                    .collect();
                (p.name.as_str(), keys)
            })
            .collect();
        let web_sel = Requirements::new()
            .with(Requirement::single("app", "web"))
            .with(Requirement::single("pod-template-hash", "abc"));
        assert_eq!(
            spread["web-1"],
            vec![
                format!("{}:3:{web_sel}", labels::HOSTNAME),
                format!("{}:5:{web_sel}", labels::ZONE)
            ]
        );
        let api_sel = Requirements::new().with(Requirement::single("tier", "api"));
        assert_eq!(spread["api-1"].len(), 2, "a Job's pod a Service selects");
        assert!(spread["api-1"][0].ends_with(&api_sel.to_string()));
        assert!(spread["bare"].is_empty(), "nothing selects a bare pod");
        assert!(
            spread["own"].is_empty(),
            "its own constraint (dropped for having no selector) keeps the defaults off"
        );
        // Without defaults nothing changes.
        let off = Objects {
            spread: SpreadObjects::default(),
            ..objects
        };
        let built = build(&off, &adze_scheduling::catalog::embedded());
        assert!(built.snapshot.pending.iter().all(|p| p.spread.is_empty()));
    }

    fn fresh_pod(name: &str, uid: &str) -> Arc<Pod> {
        let mut p = (*pending_pod(name, uid)).clone();
        p.status = None;
        Arc::new(p)
    }

    fn with_scheduled_false(pod: &Pod, reason: &str) -> Pod {
        let mut p = pod.clone();
        p.status = serde_json::from_value(json!({"phase": "Pending", "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": reason}]}))
        .unwrap();
        p
    }

    fn refused(pod: &Pod, message: &str, at: &str) -> Arc<Pod> {
        let mut p = pod.clone();
        p.status = serde_json::from_value(json!({"phase": "Pending", "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
             "message": message, "lastTransitionTime": at}]}))
        .unwrap();
        Arc::new(p)
    }

    /// A consolidation wave: the pass left a moved pod pending (it found room on an existing
    /// node that kube-scheduler had already refused), then kube-scheduler tried the pod again
    /// on the changed cluster and refused it with another message. That is news: a pass plans
    /// it again now, instead of the periodic retry 30 s later.
    #[test]
    fn a_pod_refused_anew_is_news_for_provisioning_the_same_refusal_is_not() {
        let fresh = fresh_pod("a", "u-a");
        let first = refused(
            &fresh,
            "0/40 nodes are available: 40 Insufficient cpu.",
            "2026-12-03T06:00:00Z",
        );
        let objects = |p: &Arc<Pod>| Objects {
            pods: vec![p.clone()],
            ..Objects::default()
        };
        // What the pass saw and left pending.
        let handled = unplaced_demand(&objects(&first));
        let seen = handled["u-a"].clone();
        assert!(seen.confirmed);
        assert_eq!(
            seen.refusal.as_ref().and_then(|r| r.message.as_deref()),
            Some("0/40 nodes are available: 40 Insufficient cpu.")
        );
        let news = |p: &Arc<Pod>| is_news(&unplaced_demand(&objects(p))["u-a"], Some(&seen));
        assert!(!news(&first), "nothing changed");
        assert!(
            news(&refused(
                &fresh,
                "0/39 nodes are available: 1 node(s) had taint {adze.sh/disruption}, 38 Insufficient cpu.",
                "2026-12-03T06:00:00Z",
            )),
            "refused again with another message"
        );
        assert!(
            news(&refused(
                &fresh,
                "0/40 nodes are available: 40 Insufficient cpu.",
                "2026-12-03T06:00:31Z",
            )),
            "refused again at another transition time"
        );
        // While a window is open every pending pod is absorbed: kube-scheduler's rewrites
        // during a burst do not hold the window open.
        let changed = refused(&fresh, "0/41 nodes are available.", "2026-12-03T06:00:05Z");
        assert!(!is_news(
            &unplaced_demand(&objects(&changed))["u-a"],
            Some(&Verdict::absorbed())
        ));
        // Unconfirmed pods are not news until kube-scheduler refuses them; a pod no pass saw is.
        let unconfirmed = unplaced_demand(&objects(&fresh))["u-a"].clone();
        assert!(!unconfirmed.confirmed && unconfirmed.refusal.is_none());
        assert!(!is_news(&unconfirmed, Some(&unconfirmed)));
        assert!(is_news(&seen, Some(&unconfirmed)));
        assert!(is_news(&unconfirmed, None));
    }

    #[test]
    fn fresh_unbound_pod_of_the_default_scheduler_is_demand_without_the_condition() {
        let fresh = fresh_pod("a", "u-a");
        assert!(
            is_pending(&fresh, &HashMap::new()),
            "no schedulerName: the default scheduler"
        );
        assert!(!scheduler_found_no_room(&fresh, &HashMap::new()));
        let mut named = (*fresh).clone();
        named.spec.as_mut().unwrap().scheduler_name = Some(DEFAULT_SCHEDULER.into());
        assert!(is_pending(&named, &HashMap::new()));
        // kube-scheduler has looked and written nothing yet, or has said Unschedulable.
        assert!(is_pending(
            &with_scheduled_false(&fresh, "Unschedulable"),
            &HashMap::new()
        ));

        // Another scheduler's pod waits for its verdict, as in Karpenter.
        let mut other = (*fresh).clone();
        other.spec.as_mut().unwrap().scheduler_name = Some("volcano".into());
        assert!(!is_pending(&other, &HashMap::new()));
        assert!(is_pending(
            &with_scheduled_false(&other, "Unschedulable"),
            &HashMap::new()
        ));

        // Gated pods, and pods kube-scheduler holds back for another reason, are not demand.
        let mut gated = (*fresh).clone();
        gated.spec.as_mut().unwrap().scheduling_gates = Some(vec![
            serde_json::from_value(json!({"name": "example.com/wait"})).unwrap(),
        ]);
        assert!(!is_pending(&gated, &HashMap::new()));
        assert!(!is_pending(
            &with_scheduled_false(&fresh, "SchedulingGated"),
            &HashMap::new()
        ));

        // Unbound but finished (a pod that failed admission, say): not demand.
        let mut failed = (*fresh).clone();
        failed.status = serde_json::from_value(json!({"phase": "Failed"})).unwrap();
        assert!(!is_pending(&failed, &HashMap::new()));
        let mut gone = (*fresh).clone();
        gone.metadata.deletion_timestamp =
            Some(serde_json::from_value(json!("2026-01-01T00:00:00Z")).unwrap());
        assert!(!is_pending(&gone, &HashMap::new()));

        let objects = Objects {
            pods: vec![fresh.clone(), pending_pod("b", "u-b")],
            ..Objects::default()
        };
        assert_eq!(
            confirmations(&objects),
            BTreeMap::from([("u-a".to_string(), false), ("u-b".to_string(), true)]),
            "fresh demand is unconfirmed until kube-scheduler says Unschedulable"
        );
    }

    #[test]
    fn fresh_pod_that_fits_an_existing_node_launches_nothing() {
        let objects = Objects {
            nodes: vec![node("n1", "adze-sim://n1", json!([]))],
            pods: vec![running_on("db", "u-db", "n1"), fresh_pod("web", "u-web")],
            nodepools: vec![default_pool()],
            ..Objects::default()
        };
        let (built, plan) = plan(&objects);
        assert_eq!(built.pending_uids["default/web"], "u-web");
        assert!(plan.new_claims.is_empty(), "{:?}", plan.new_claims);
        assert!(plan.unschedulable.is_empty());
        assert_eq!(placed_on(&plan, "n1"), vec!["default/web"]);
    }

    #[test]
    fn fresh_pod_that_fits_nowhere_gets_a_claim_in_the_same_batch() {
        // n1 (2 cpu) has room for one more 1-cpu pod; of the two fresh pods one goes there,
        // the other gets a new claim in this very batch.
        let objects = Objects {
            nodes: vec![node("n1", "adze-sim://n1", json!([]))],
            pods: vec![
                running_on("db", "u-db", "n1"),
                fresh_pod("a", "u-a"),
                fresh_pod("b", "u-b"),
            ],
            nodepools: vec![default_pool()],
            ..Objects::default()
        };
        let (_, plan) = plan(&objects);
        assert!(plan.unschedulable.is_empty());
        assert_eq!(plan.new_claims.len(), 1, "{:?}", plan.new_claims);
        assert_eq!(plan.new_claims[0].pods.len(), 1);
        assert_eq!(placed_on(&plan, "n1").len(), 1);
    }

    /// The race of the fast path: the last pass put fresh pod A on n1's last room and
    /// nominated B to a new claim; kube-scheduler bound B to n1 instead and then called A
    /// Unschedulable. The next pass gives A the claim's room B no longer needs: no second
    /// launch.
    #[test]
    fn pod_that_lost_existing_room_to_another_takes_the_claim_that_one_left() {
        let mut b_bound = (*running_on("b", "u-b", "n1")).clone();
        b_bound.status = serde_json::from_value(json!({"phase": "Pending"})).unwrap();
        let objects = Objects {
            nodes: vec![node("n1", "adze-sim://n1", json!([]))],
            pods: vec![
                running_on("db", "u-db", "n1"),
                Arc::new(b_bound),
                pending_pod("a", "u-a"),
            ],
            claims: vec![claim(
                "default-c",
                r#"[{"namespace":"default","name":"b","uid":"u-b"}]"#,
            )],
            nodepools: vec![default_pool()],
            ..Objects::default()
        };
        assert_eq!(
            confirmations(&objects),
            BTreeMap::from([("u-a".to_string(), true)]),
            "A is confirmed now, so it opens a window again"
        );
        let (_, plan) = plan(&objects);
        assert!(plan.new_claims.is_empty(), "{:?}", plan.new_claims);
        assert_eq!(placed_on(&plan, "default-c"), vec!["default/a"]);
    }

    fn with_claim(pod: Arc<Pod>, claim: &str) -> Arc<Pod> {
        let mut p = (*pod).clone();
        p.spec.as_mut().unwrap().volumes = Some(vec![
            serde_json::from_value(
                json!({"name": "data", "persistentVolumeClaim": {"claimName": claim}}),
            )
            .unwrap(),
        ]);
        Arc::new(p)
    }

    fn zonal_volume(claim: &str, pv: &str, zone: &str) -> Objects {
        Objects {
            pvcs: vec![Arc::new(
                serde_json::from_value(json!({
                    "metadata": {"name": claim, "namespace": "default"},
                    "spec": {"volumeName": pv}}))
                .unwrap(),
            )],
            pvs: vec![Arc::new(
                serde_json::from_value(json!({
                    "metadata": {"name": pv},
                    "spec": {"nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                        {"key": labels::ZONE, "operator": "In", "values": [zone]}]}]}}}}))
                .unwrap(),
            )],
            ..Objects::default()
        }
    }

    fn default_pool() -> Arc<NodePool> {
        Arc::new(
            serde_json::from_value(json!({
                "apiVersion": "adze.sh/v1", "kind": "NodePool", "metadata": {"name": "default"},
                "spec": {"template": {"spec": {"nodeClassRef":
                    {"group": "aws.adze.sh", "kind": "EC2NodeClass", "name": "default"}}}},
            }))
            .unwrap(),
        )
    }

    #[test]
    fn pod_with_a_bound_zonal_volume_gets_a_nodeclaim_in_the_volumes_zone() {
        let objects = Objects {
            pods: vec![with_claim(pending_pod("db", "u-db"), "data-db")],
            nodepools: vec![default_pool()],
            ..zonal_volume("data-db", "pv-1", "us-east-1b")
        };
        let catalog = adze_scheduling::catalog::embedded();
        let built = build(&objects, &catalog);
        assert!(built.unschedulable.is_empty(), "{:?}", built.unschedulable);
        let plan = adze_scheduling::schedule(&built.snapshot, &Default::default());
        assert_eq!(plan.new_claims.len(), 1, "{plan:?}");
        let claim = &plan.new_claims[0];
        assert_eq!(claim.zone, "us-east-1b");
        assert_eq!(claim.labels[labels::ZONE], "us-east-1b");
        assert_eq!(
            claim
                .requirements
                .get(labels::ZONE)
                .and_then(|r| r.single_value()),
            Some("us-east-1b"),
            "the NodeClaim itself demands the zone of the cloud"
        );
    }

    #[test]
    fn pending_pod_with_a_missing_claim_is_left_out_with_the_reason() {
        let objects = Objects {
            pods: vec![with_claim(pending_pod("db", "u-db"), "nope")],
            nodepools: vec![default_pool()],
            ..Objects::default()
        };
        let built = build(&objects, &adze_scheduling::catalog::embedded());
        assert!(built.snapshot.pending.is_empty());
        assert_eq!(
            built.unschedulable,
            vec![Unschedulable {
                pod: "default/db".into(),
                reason: "persistentvolumeclaim default/nope not found".into(),
            }]
        );
        assert_eq!(
            built.pending_uids["default/db"], "u-db",
            "still counted as seen, so it does not reopen a batch every tick"
        );
    }

    #[test]
    fn pending_dra_pod_is_left_out_naming_resource_claims() {
        let mut pod = (*pending_pod("gpu", "u-gpu")).clone();
        pod.spec.as_mut().unwrap().resource_claims = Some(vec![
            serde_json::from_value(json!({"name": "gpu", "resourceClaimTemplateName": "one-gpu"}))
                .unwrap(),
        ]);
        let objects = Objects {
            pods: vec![Arc::new(pod), pending_pod("plain", "u-plain")],
            nodepools: vec![default_pool()],
            ..Objects::default()
        };
        let built = build(&objects, &adze_scheduling::catalog::embedded());
        assert_eq!(built.snapshot.pending.len(), 1, "only the plain pod");
        assert_eq!(built.unschedulable.len(), 1);
        assert_eq!(built.unschedulable[0].pod, "default/gpu");
        assert!(
            built.unschedulable[0]
                .reason
                .contains("spec.resourceClaims"),
            "{:?}",
            built.unschedulable
        );
        assert_eq!(built.pending_uids["default/gpu"], "u-gpu");
    }

    #[test]
    fn bound_pods_carry_their_volumes_zone_and_unreadable_volumes_pin_them() {
        let objects = Objects {
            nodes: vec![node("n1", "adze-sim://n1", json!([]))],
            pods: vec![
                with_claim(running_on("db", "u-db", "n1"), "data-db"),
                with_claim(running_on("lost", "u-lost", "n1"), "gone"),
            ],
            ..zonal_volume("data-db", "pv-1", "us-east-1a")
        };
        let built = build(&objects, &adze_scheduling::catalog::embedded());
        let bound = |key: &str| {
            &built
                .snapshot
                .bound
                .iter()
                .find(|b| b.pod.key() == key)
                .unwrap()
                .pod
        };
        let db = &bound("default/db").node_requirements;
        assert_eq!(
            db[0].get(labels::ZONE).and_then(|r| r.single_value()),
            Some("us-east-1a"),
            "disruption re-places bound pods: the volume's zone goes with them"
        );
        let lost = &bound("default/lost").node_requirements;
        assert_eq!(
            lost[0].get(labels::HOSTNAME).and_then(|r| r.single_value()),
            Some("n1")
        );
        assert!(built.unschedulable.is_empty());
    }

    #[test]
    fn a_csinodes_count_keeps_a_pending_pods_new_volume_off_a_full_node() {
        let csi_volume =
            |claim: &str, pv: &str| -> (Arc<PersistentVolumeClaim>, Arc<PersistentVolume>) {
                (
                    Arc::new(
                        serde_json::from_value(json!({
                        "metadata": {"name": claim, "namespace": "default"},
                        "spec": {"volumeName": pv}}))
                        .unwrap(),
                    ),
                    Arc::new(
                        serde_json::from_value(json!({
                        "metadata": {"name": pv},
                        "spec": {"csi": {"driver": "ebs.csi.aws.com", "volumeHandle": pv}}}))
                        .unwrap(),
                    ),
                )
            };
        let (c1, v1) = csi_volume("old", "pv-old");
        let (c2, v2) = csi_volume("new", "pv-new");
        let mut small = (*pending_pod("db", "u-db")).clone();
        small.spec.as_mut().unwrap().containers[0].resources = None;
        let objects = Objects {
            nodes: vec![node("n1", "adze-sim://n1", json!([]))],
            pods: vec![
                with_claim(running_on("old", "u-old", "n1"), "old"),
                with_claim(Arc::new(small), "new"),
            ],
            nodepools: vec![default_pool()],
            pvcs: vec![c1, c2],
            pvs: vec![v1, v2],
            csinodes: vec![Arc::new(
                serde_json::from_value(json!({"metadata": {"name": "n1"}, "spec": {"drivers": [
                    {"name": "ebs.csi.aws.com", "nodeID": "i-1", "allocatable": {"count": 1}}]}}))
                .unwrap(),
            )],
            ..Objects::default()
        };
        let built = build(&objects, &adze_scheduling::catalog::embedded());
        let n1 = built
            .snapshot
            .nodes
            .iter()
            .find(|n| n.name == "n1")
            .unwrap();
        assert_eq!(n1.volume_limits.get("ebs.csi.aws.com"), Some(&1));
        let plan = adze_scheduling::schedule(&built.snapshot, &Default::default());
        assert!(plan.existing.iter().all(|e| e.pods.is_empty()), "{plan:?}");
        assert_eq!(plan.new_claims.len(), 1, "n1's one slot is taken: {plan:?}");

        // Without the CSINode, n1 takes it.
        let unlimited = Objects {
            csinodes: Vec::new(),
            ..objects
        };
        let built = build(&unlimited, &adze_scheduling::catalog::embedded());
        let plan = adze_scheduling::schedule(&built.snapshot, &Default::default());
        assert!(plan.new_claims.is_empty(), "{plan:?}");
    }
}
