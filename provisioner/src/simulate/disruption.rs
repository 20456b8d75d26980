//! "What would Adze do to my cluster?": the disruption plan for a scenario's existing nodes.
//!
//! One rule with `run`: the scenario's objects become the objects the controller watches
//! ([`live_objects`]), the controller's own [`crate::disruption::input::build`] turns them
//! into the decision's input, and the same steps a controller pass takes are taken here:
//! expired nodes first (forceful; when there are any, that is the whole pass), then nothing
//! while pods the provisioner can place are pending, then
//! [`adze_scheduling::disruption::decide_all`] (consolidation only when no NodeClaim is
//! launching). Every node no command takes is listed with why ([`LeftAlone`]).
//!
//! Where a scenario leaves out what a live cluster always has, the planner fills it in, and
//! the plan's `notes` say so:
//! - a Node labelled with a NodePool of the scenario (`adze.sh/nodepool`, or Karpenter's
//!   `karpenter.sh/nodepool`) that no NodeClaim names gets one, as `run` would have made
//!   it: created with the Node, Initialized, its pool's `expireAfter`, stamped with its
//!   pool's current template (so only a requirement the node no longer meets drifts it);
//! - a NodeClaim and its Node are linked by `status.providerID`; when either lacks one,
//!   by the claim's `status.nodeName`, then by the claim's name equal to the Node's;
//! - a Node whose status lists no conditions is Ready;
//! - a pod without `metadata.uid` gets "namespace/name";
//! - an EC2NodeClass without resolved subnets or images (no `status`) has a subnet in
//!   every zone of the catalog and an image for every instance type, as placement assumes.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use adze_api::NodeClaim;
use adze_scheduling::disruption::{self as pure, Blocker, Invalidated, Reason};
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::jiff::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::Scenario;
use crate::disruption::{input, pdb};
use crate::provisioning::snapshot::Objects;

/// How to plan.
#[derive(Debug, Clone)]
pub struct DisruptionOptions {
    /// The clock: budgets' schedules, `consolidateAfter`, `expireAfter` and do-not-disrupt
    /// durations are read at this time.
    pub now: Timestamp,
    /// Most commands in the plan (the controller takes at most 100 per pass).
    pub max_commands: usize,
    /// Instance-type options kept per replacement, as `run --max-instance-types`.
    pub max_instance_types: usize,
    /// Placement policies replacements are planned with, as `run`'s.
    pub policies: crate::rules::Policies,
    /// As `run --karpenter-labels`: pods selecting Karpenter's well-known keys are planned
    /// as if they selected Adze's.
    pub karpenter_labels: bool,
    /// As `run --node-repair` (and `--legacy-node-repair`): node repair judged from the
    /// scenario's Node conditions (no cloud to read status checks from offline; an
    /// `EC2StatusImpaired` condition on a Node counts as the Node holds it).
    pub node_repair: Option<pure::repair::RepairMode>,
    /// As `run --terminate-first-drift`: capacity-constrained pools delete a drifted or
    /// repaired node first.
    pub terminate_first_drift: bool,
    /// As `run --reboot-for-repair`: a node due for repair is shown rebooted (action
    /// `reboot`), or waiting after its reboot, instead of replaced.
    pub reboot_for_repair: bool,
    /// `simulate --disruption --vpa-predictions`: pods disruption moves are planned with the
    /// requests the scenario's VerticalPodAutoscalers will give them
    /// ([`adze_scheduling::vpa`]; `run --vpa-predictions` lists them live).
    pub vpa_predictions: bool,
}

/// The controller's limit of commands per pass.
pub const MAX_COMMANDS_PER_PASS: usize = 100;

impl DisruptionOptions {
    /// Defaults as `run`'s, at `now`.
    pub fn at(now: Timestamp) -> DisruptionOptions {
        DisruptionOptions {
            now,
            max_commands: MAX_COMMANDS_PER_PASS,
            max_instance_types: 60,
            policies: crate::rules::Policies::default(),
            karpenter_labels: false,
            node_repair: None,
            terminate_first_drift: false,
            reboot_for_repair: false,
            vpa_predictions: false,
        }
    }
}

/// Which method a command comes from (Karpenter's names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Method {
    Expiration,
    Repair,
    Drift,
    Emptiness,
    MultiNodeConsolidation,
    SingleNodeConsolidation,
}

impl From<pure::Method> for Method {
    fn from(m: pure::Method) -> Method {
        match m {
            pure::Method::Expiration => Method::Expiration,
            pure::Method::Repair => Method::Repair,
            pure::Method::Drift => Method::Drift,
            pure::Method::Emptiness => Method::Emptiness,
            pure::Method::MultiNodeConsolidation => Method::MultiNodeConsolidation,
            pure::Method::SingleNodeConsolidation => Method::SingleNodeConsolidation,
        }
    }
}

impl Method {
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Expiration => "Expiration",
            Method::Repair => "Repair",
            Method::Drift => "Drift",
            Method::Emptiness => "Emptiness",
            Method::MultiNodeConsolidation => "MultiNodeConsolidation",
            Method::SingleNodeConsolidation => "SingleNodeConsolidation",
        }
    }
}

impl std::fmt::Display for Method {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Delete the nodes (their pods fit elsewhere), launch replacements first, or (node repair
/// with `--reboot-for-repair`) reboot the node's instance and keep it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    Delete,
    Replace,
    Reboot,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Delete => "delete",
            Action::Replace => "replace",
            Action::Reboot => "reboot",
        }
    }
}

/// Where one evicted pod lands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodMove {
    /// "namespace/name".
    pub pod: String,
    /// The node it leaves.
    pub from: String,
    /// An existing node's name, `new:<claim>` for a replacement, or `pending` when nothing
    /// can hold it (expiry only: it takes the node anyway).
    pub to: String,
}

/// A NodeClaim a command launches.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Replacement {
    pub name: String,
    pub nodepool: String,
    /// The cheapest option, what the price is for.
    pub instance_type: String,
    /// Every type the claim may launch as, cheapest first.
    pub instance_types: Vec<String>,
    pub capacity_type: String,
    pub zone: String,
    /// USD per hour.
    pub price: f64,
}

/// One disruption the controller would carry out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Command {
    pub method: Method,
    /// The budget reason: Drifted, Expired, Empty, Underutilized or Unhealthy (repair).
    pub reason: String,
    pub action: Action,
    pub nodes: Vec<String>,
    pub pods: Vec<PodMove>,
    pub replacements: Vec<Replacement>,
    /// USD per hour of the nodes removed.
    pub price_before: f64,
    /// USD per hour of the replacements.
    pub price_after: f64,
    /// The controller's own sentence for it (its event and log line).
    pub message: String,
}

/// Why a node is left alone: a short machine-readable kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LeftAloneReason {
    /// No NodeClaim of a NodePool with a disruption policy owns it.
    NotManaged,
    NotInitialized,
    /// Its capacity type, zone or instance type is missing or unknown, so it has no price.
    Unresolvable,
    /// Its NodeClaim is still launching.
    Launching,
    /// Already being deleted, tainted for disruption, or not Ready.
    Disrupting,
    DoNotDisrupt,
    Pdb,
    ZonalShift,
    /// A static pool (`spec.replicas`): only drift replaces its nodes, and only within its
    /// replicas and `limits.nodes`.
    StaticPool,
    /// `consolidateAfter: Never`.
    ConsolidationDisabled,
    /// Its pods changed less than `consolidateAfter` ago.
    ConsolidateAfter,
    /// `consolidationPolicy: WhenEmpty` and it has pods.
    WhenEmpty,
    /// The NodePool's disruption budget has no room left.
    Budget,
    /// Drifted, but its NodePool's drift is held back after failed drift replacements
    /// (the NodeClaims say so: `Disrupting` False, reason `DriftReplacementFailed`).
    DriftBackoff,
    /// Pods the provisioner can place are pending: the controller decides nothing until
    /// they are placed.
    PendingPods,
    /// NodeClaims are launching: consolidation waits for them.
    WaitingForLaunches,
    /// Expired nodes go first; voluntary methods are decided on the next pass.
    ExpiryFirst,
    /// Legacy (forceful) node repair deleted unhealthy nodes this pass; voluntary methods are
    /// decided on the next pass.
    RepairFirst,
    /// Due for node repair, but held: more than 20 % of its NodePool is unhealthy, or (budgeted
    /// repair) its NodePool's disruption budget for Unhealthy has no room; or, with
    /// `--reboot-for-repair`, rebooted and given time to come back healthy.
    RepairBlocked,
    /// Its pods cannot all be placed elsewhere (on the other nodes plus at most one new one).
    PodsCannotMove,
    /// What could replace it would not be cheaper (or, in a Balanced pool, would not save
    /// enough for the disruption).
    NoCheaperFit,
    /// A cheaper replacement exists, but it saves less per unit of disruption cost than the
    /// NodePool's `minSavingsPerDisruptionCost`.
    SavingsThreshold,
    /// It could be consolidated alone, but not in this pass: a consolidation of the pass moves
    /// pods onto it or counts on it, or the pass took its most consolidations. It is decided
    /// again on the next pass.
    LaterPass,
    /// The plan reached `max_commands`.
    CommandLimit,
    /// Nothing stops it, and consolidation's search chose other nodes.
    NotChosen,
}

impl LeftAloneReason {
    pub fn as_str(self) -> &'static str {
        match self {
            LeftAloneReason::NotManaged => "not-managed",
            LeftAloneReason::NotInitialized => "not-initialized",
            LeftAloneReason::Unresolvable => "unresolvable",
            LeftAloneReason::Launching => "launching",
            LeftAloneReason::Disrupting => "disrupting",
            LeftAloneReason::DoNotDisrupt => "do-not-disrupt",
            LeftAloneReason::Pdb => "pdb",
            LeftAloneReason::ZonalShift => "zonal-shift",
            LeftAloneReason::StaticPool => "static-pool",
            LeftAloneReason::ConsolidationDisabled => "consolidation-disabled",
            LeftAloneReason::ConsolidateAfter => "consolidate-after",
            LeftAloneReason::WhenEmpty => "when-empty",
            LeftAloneReason::Budget => "budget",
            LeftAloneReason::DriftBackoff => "drift-backoff",
            LeftAloneReason::PendingPods => "pending-pods",
            LeftAloneReason::WaitingForLaunches => "waiting-for-launches",
            LeftAloneReason::ExpiryFirst => "expiry-first",
            LeftAloneReason::RepairFirst => "repair-first",
            LeftAloneReason::RepairBlocked => "repair-blocked",
            LeftAloneReason::PodsCannotMove => "pods-cannot-move",
            LeftAloneReason::NoCheaperFit => "no-cheaper-fit",
            LeftAloneReason::SavingsThreshold => "savings-threshold",
            LeftAloneReason::LaterPass => "later-pass",
            LeftAloneReason::CommandLimit => "command-limit",
            LeftAloneReason::NotChosen => "not-chosen",
        }
    }
}

impl std::fmt::Display for LeftAloneReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A node no command takes, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LeftAlone {
    pub node: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodepool: Option<String>,
    pub reason: LeftAloneReason,
    pub message: String,
}

/// A NodePool's cost per hour now and once the plan is carried out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PoolCost {
    pub nodepool: String,
    pub nodes_before: usize,
    pub nodes_after: usize,
    /// USD per hour.
    pub before: f64,
    pub after: f64,
}

/// The disruption plan for a scenario at a time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DisruptionPlan {
    /// The clock the plan was made at (RFC 3339).
    pub now: String,
    pub commands: Vec<Command>,
    pub left_alone: Vec<LeftAlone>,
    /// Per NodePool with nodes or replacements, by name.
    pub cost: Vec<PoolCost>,
    /// What the planner filled in that the scenario left out (see the module docs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Objects the controller's input leaves out, with why (as `run` logs them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
}

impl DisruptionPlan {
    /// Sum over pools, USD per hour: (before, after).
    pub fn total_cost(&self) -> (f64, f64) {
        self.cost
            .iter()
            .fold((0.0, 0.0), |(b, a), c| (b + c.before, a + c.after))
    }

    /// The entry for `node` among the nodes left alone.
    pub fn left_alone(&self, node: &str) -> Option<&LeftAlone> {
        self.left_alone.iter().find(|l| l.node == node)
    }

    /// The command that takes `node`.
    pub fn command_for(&self, node: &str) -> Option<&Command> {
        self.commands
            .iter()
            .find(|c| c.nodes.iter().any(|n| n == node))
    }
}

/// Everything a plan is made from: the controller's input, as `run` would build it.
pub struct Prepared {
    pub built: input::Built,
    pub options: pure::Options,
    pub notes: Vec<String>,
}

/// The controller's input for `scenario` at `options.now`, by `run`'s rule.
pub fn prepare(scenario: &Scenario, options: &DisruptionOptions) -> Prepared {
    let (mut objects, notes) = live_objects(scenario);
    objects.karpenter_labels = options.karpenter_labels;
    let pdbs: Vec<pdb::Budget> = scenario
        .objects
        .pdbs
        .iter()
        .filter_map(pdb::Budget::from_json)
        .collect();
    let cloud_drifted = BTreeSet::new();
    let extra = input::Extra {
        pdbs: &pdbs,
        // Scenarios hold policy/v1 budgets, where an empty selector selects every pod.
        pdb_empty_selects_all: true,
        cloud_drifted: &cloud_drifted,
        now: options.now.as_second(),
        vpas: options
            .vpa_predictions
            .then_some(scenario.objects.vpas.as_slice()),
    };
    let mut built = input::build(
        &objects,
        &scenario.instance_types,
        &extra,
        &mut input::PodActivity::default(),
    );
    if options.node_repair.is_some() {
        built.input.health = crate::disruption::repair::health(&objects);
    }
    // As the controller's first pass after a restart: the drift backoff from the NodeClaims
    // kept after failed drift replacements.
    built.input.drift_holds = crate::disruption::drift::backoff_from_claims(
        objects.claims.iter().map(|c| c.as_ref()),
        extra.now,
    )
    .holds(extra.now);
    // A fixed seed: the same scenario gives the same replacement names.
    let mut pure_options =
        input::decision_options(&built, options.max_instance_types, &options.policies, 0);
    pure_options.node_repair = options.node_repair;
    pure_options.terminate_first_drift = options.terminate_first_drift;
    pure_options.reboot_for_repair = options.reboot_for_repair;
    Prepared {
        built,
        options: pure_options,
        notes,
    }
}

/// The disruption plan for `scenario`: what one pass of the controller would do at
/// `options.now`, and why every other node is left alone.
pub fn plan_disruption(scenario: &Scenario, options: &DisruptionOptions) -> DisruptionPlan {
    let prepared = prepare(scenario, options);
    plan_prepared(&prepared, options)
}

/// [`plan_disruption`] on an input already built.
pub fn plan_prepared(prepared: &Prepared, options: &DisruptionOptions) -> DisruptionPlan {
    let built = &prepared.built;
    let input0 = &built.input;
    let opts = &prepared.options;
    let mut commands = Vec::new();
    let mut after = input0.clone();
    let mut general: Option<(LeftAloneReason, String)> = None;
    let mut consolidate = true;
    let mut decided: Vec<pure::Decision> = Vec::new();
    // Nodes due for repair and held, by node: the guard, or the budget (budgeted repair).
    let mut held: BTreeMap<String, String> = BTreeMap::new();
    let legacy = options.node_repair == Some(pure::repair::RepairMode::Legacy);
    let outcomes = if legacy {
        pure::repair::decide(
            &input0.health,
            &pure::repair::default_policies(),
            input0.now,
        )
    } else {
        Vec::new()
    };
    for o in &outcomes {
        if matches!(
            o.verdict,
            pure::repair::Verdict::Guarded { .. } | pure::repair::Verdict::DoNotRepair
        ) {
            held.insert(o.node.clone(), o.message());
        }
    }
    let forceful: Vec<&pure::repair::Outcome> = (outcomes.iter())
        .filter(|o| o.verdict == pure::repair::Verdict::Repair)
        .filter(|o| built.claim_of_node.contains_key(&o.node))
        .collect();

    let expiring = input::expiring(built);
    if !expiring.is_empty() {
        let names: Vec<&str> = expiring.iter().map(|e| e.node.as_str()).collect();
        let plan = pure::displaced_plan(input0, opts, &names);
        for e in expiring.iter().take(options.max_commands) {
            commands.push(expiry_command(input0, e, &plan));
            mark_disrupting(&mut after, &e.node);
        }
        general = Some((
            LeftAloneReason::ExpiryFirst,
            "expired nodes are deleted first; the voluntary methods are decided on the next pass, once their pods are placed".to_string(),
        ));
    } else if !forceful.is_empty() {
        // The controller's legacy repair: forceful, outside budgets, before any decision.
        let names: Vec<&str> = forceful.iter().map(|o| o.node.as_str()).collect();
        let plan = pure::displaced_plan(input0, opts, &names);
        for o in forceful.iter().take(options.max_commands) {
            commands.push(forceful_repair_command(input0, o, &plan));
            mark_disrupting(&mut after, &o.node);
        }
        general = Some((
            LeftAloneReason::RepairFirst,
            "unhealthy nodes are repaired first (legacy, forceful repair); the voluntary methods are decided on the next pass, once their pods are placed".to_string(),
        ));
    } else {
        // Reboots for repair come before the decision and move no pod (as in the controller).
        for p in pure::reboots(input0, opts) {
            match (&p.blocked, p.step) {
                (None, pure::repair::RebootStep::Reboot) => {
                    commands.push(reboot_command(input0, &p));
                }
                _ => {
                    held.insert(p.node.clone(), p.message.clone());
                }
            }
        }
        let waiting = input::waiting_for(built, opts);
        if waiting > 0 {
            general = Some((
                LeftAloneReason::PendingPods,
                format!(
                    "{waiting} pending pod(s) the provisioner can place: nothing is disrupted until they are placed"
                ),
            ));
        } else {
            consolidate = built.in_flight.is_empty();
            decided = pure::decide_all(input0, opts, consolidate, options.max_commands);
            for h in pure::repair_held(input0, opts, &decided) {
                held.insert(h.node, h.message);
            }
            for d in &decided {
                pure::commit(&mut after, d);
                commands.push(command(d));
            }
        }
    }

    let taken: BTreeSet<&str> = commands
        .iter()
        .flat_map(|c| c.nodes.iter().map(String::as_str))
        .collect();
    let ctx = Why {
        after: &after,
        options: opts,
        general: general.as_ref(),
        consolidate,
        consolidated: decided.iter().any(|d| d.reason == Reason::Underutilized),
        at_limit: commands.len() >= options.max_commands,
        blocked_before: blocked_by_node(input0),
        blocked_after: blocked_by_node(&after),
        allowance: pure::Allowance::compute(&after),
        busy: after
            .snapshot
            .bound
            .iter()
            .filter(|b| !b.daemon)
            .map(|b| b.node.as_str())
            .collect(),
    };
    let mut left_alone = Vec::new();
    for n in &input0.snapshot.nodes {
        if taken.contains(n.name.as_str()) || n.in_flight {
            continue;
        }
        let (reason, message) = match held.get(&n.name) {
            Some(m) => (LeftAloneReason::RepairBlocked, m.clone()),
            None => ctx.why(&n.name),
        };
        left_alone.push(LeftAlone {
            node: n.name.clone(),
            nodepool: n.nodepool.clone(),
            reason,
            message,
        });
    }
    let cost = cost(input0, &commands);
    DisruptionPlan {
        now: options.now.to_string(),
        commands,
        left_alone,
        cost,
        notes: prepared.notes.clone(),
        problems: built.problems.clone(),
    }
}

/// A reboot for repair of `p`'s node: it stays, its pods with it, at its price.
fn reboot_command(input: &pure::Input, p: &pure::RebootPlan) -> Command {
    let node = input.snapshot.nodes.iter().find(|n| n.name == p.node);
    let price = node.map_or(0.0, |n| pure::node_price(input, n));
    Command {
        method: Method::Repair,
        reason: pure::repair::REASON.to_string(),
        action: Action::Reboot,
        nodes: vec![p.node.clone()],
        pods: Vec::new(),
        replacements: Vec::new(),
        price_before: price,
        price_after: price,
        message: p.message.clone(),
    }
}

/// A legacy (forceful) repair of `o`'s node, as the controller carries it out: deleted now,
/// its pods wherever `plan` (every repaired node's pods at once) puts them, or pending.
/// `node` as the commands before the decision leave it: already disrupting.
fn mark_disrupting(input: &mut pure::Input, node: &str) {
    for f in input.nodes.iter_mut().filter(|f| f.name == node) {
        f.disrupting = true;
    }
}

fn forceful_repair_command(
    input: &pure::Input,
    o: &pure::repair::Outcome,
    plan: &adze_scheduling::Plan,
) -> Command {
    let placements = plan.placements();
    let node = input.snapshot.nodes.iter().find(|n| n.name == o.node);
    let price = node.map_or(0.0, |n| pure::node_price(input, n));
    let pods: Vec<PodMove> = (input.snapshot.bound.iter())
        .filter(|b| !b.daemon && b.node == o.node)
        .map(|b| {
            let key = b.pod.key();
            let to = placements
                .get(key.as_str())
                .map_or_else(|| "pending".to_string(), |t| t.to_string());
            PodMove {
                pod: key,
                from: o.node.clone(),
                to,
            }
        })
        .collect();
    Command {
        method: Method::Repair,
        reason: pure::repair::REASON.to_string(),
        action: Action::Delete,
        nodes: vec![o.node.clone()],
        pods,
        replacements: Vec::new(),
        price_before: price,
        price_after: 0.0,
        message: o.message(),
    }
}

fn expiry_command(
    input: &pure::Input,
    e: &pure::expiry::Expired,
    plan: &adze_scheduling::Plan,
) -> Command {
    let placements = plan.placements();
    let node = input.snapshot.nodes.iter().find(|n| n.name == e.node);
    let price = node.map_or(0.0, |n| pure::node_price(input, n));
    let pods: Vec<PodMove> = input
        .snapshot
        .bound
        .iter()
        .filter(|b| !b.daemon && b.node == e.node)
        .map(|b| {
            let key = b.pod.key();
            let to = match placements.get(key.as_str()) {
                Some(to) if plan.new_claims.iter().any(|c| c.name == *to) => format!("new:{to}"),
                Some(to) => to.to_string(),
                None => "pending".to_string(),
            };
            PodMove {
                pod: key,
                from: e.node.clone(),
                to,
            }
        })
        .collect();
    let claims: BTreeSet<&str> = pods
        .iter()
        .filter_map(|p| p.to.strip_prefix("new:"))
        .collect();
    let replacements: Vec<Replacement> = plan
        .new_claims
        .iter()
        .filter(|c| claims.contains(c.name.as_str()))
        .map(replacement)
        .collect();
    let price_after = replacements.iter().map(|r| r.price).sum::<f64>() + 0.0;
    Command {
        method: Method::Expiration,
        reason: Reason::Expired.as_str().to_string(),
        action: if replacements.is_empty() {
            Action::Delete
        } else {
            Action::Replace
        },
        nodes: vec![e.node.clone()],
        pods,
        replacements,
        price_before: price,
        price_after,
        message: e.message(),
    }
}

fn replacement(c: &adze_scheduling::plan::NewClaim) -> Replacement {
    Replacement {
        name: c.name.clone(),
        nodepool: c.nodepool.clone(),
        instance_type: c.instance_type.clone(),
        instance_types: c.instance_type_options.clone(),
        capacity_type: c.capacity_type.clone(),
        zone: c.zone.clone(),
        price: c.price_per_hour,
    }
}

fn command(d: &pure::Decision) -> Command {
    let placements = d.plan.placements();
    let new: BTreeSet<&str> = d.plan.new_claims.iter().map(|c| c.name.as_str()).collect();
    let mut pods = Vec::new();
    for n in &d.nodes {
        for p in &n.pods {
            let to = match placements.get(p.as_str()) {
                Some(to) if new.contains(to) => format!("new:{to}"),
                Some(to) => to.to_string(),
                None => "pending".to_string(),
            };
            pods.push(PodMove {
                pod: p.clone(),
                from: n.name.clone(),
                to,
            });
        }
    }
    Command {
        method: d.method().into(),
        reason: d.reason.as_str().to_string(),
        action: match d.action() {
            pure::Action::Delete => Action::Delete,
            pure::Action::Replace => Action::Replace,
        },
        nodes: d.nodes.iter().map(|n| n.name.clone()).collect(),
        pods,
        replacements: d.plan.new_claims.iter().map(replacement).collect(),
        price_before: d.removed_price + 0.0,
        price_after: d.replacement_price + 0.0,
        message: d.message.clone(),
    }
}

fn cost(input: &pure::Input, commands: &[Command]) -> Vec<PoolCost> {
    let mut out: BTreeMap<String, PoolCost> = BTreeMap::new();
    let entry = |out: &mut BTreeMap<String, PoolCost>, pool: &str| {
        out.entry(pool.to_string())
            .or_insert_with(|| PoolCost {
                nodepool: pool.to_string(),
                nodes_before: 0,
                nodes_after: 0,
                before: 0.0,
                after: 0.0,
            })
            .nodepool
            .clone()
    };
    let removed: BTreeSet<&str> = commands
        .iter()
        .flat_map(|c| c.nodes.iter().map(String::as_str))
        .collect();
    for n in &input.snapshot.nodes {
        let Some(pool) = n.nodepool.as_deref() else {
            continue;
        };
        let price = pure::node_price(input, n);
        entry(&mut out, pool);
        let c = out.get_mut(pool).expect("just inserted");
        c.nodes_before += 1;
        c.before += price;
        if !removed.contains(n.name.as_str()) {
            c.nodes_after += 1;
            c.after += price;
        }
    }
    for r in commands.iter().flat_map(|c| &c.replacements) {
        entry(&mut out, &r.nodepool);
        let c = out.get_mut(&r.nodepool).expect("just inserted");
        c.nodes_after += 1;
        c.after += r.price;
    }
    out.into_values().collect()
}

/// Works out why a node is left alone, on the cluster as the plan leaves it.
struct Why<'a> {
    after: &'a pure::Input,
    options: &'a pure::Options,
    general: Option<&'a (LeftAloneReason, String)>,
    consolidate: bool,
    consolidated: bool,
    at_limit: bool,
    /// What is asked per node but depends on the whole cluster, worked out once: asking it
    /// per node made a 2,000-node snapshot take minutes (nodes × pods).
    blocked_before: HashMap<String, Blocker>,
    blocked_after: HashMap<String, Blocker>,
    allowance: pure::Allowance,
    /// Nodes of `after` that hold a pod other than a DaemonSet's.
    busy: BTreeSet<&'a str>,
}

/// The first blocker of each blocked node.
fn blocked_by_node(input: &pure::Input) -> HashMap<String, Blocker> {
    let mut out = HashMap::new();
    for (n, b) in pure::candidates(input).1 {
        out.entry(n).or_insert(b);
    }
    out
}

impl Why<'_> {
    fn why(&self, node: &str) -> (LeftAloneReason, String) {
        let input = self.after;
        let Some(f) = input.nodes.iter().find(|f| f.name == node) else {
            return (
                LeftAloneReason::NotManaged,
                "no NodeClaim owns it: Adze never disrupts it".to_string(),
            );
        };
        if let Some(b) = self.blocked_before.get(node) {
            return (blocker_reason(b), b.to_string());
        }
        if let Some((r, m)) = self.general {
            return (*r, m.clone());
        }
        if let Some(b) = self.blocked_after.get(node) {
            let mut m = b.to_string();
            if matches!(b, Blocker::PdbForbids { .. }) {
                m.push_str(" (its allowance is used by the commands above)");
            }
            return (blocker_reason(b), m);
        }
        let sn = input.snapshot.nodes.iter().find(|n| n.name == node);
        let pool = sn.and_then(|n| n.nodepool.clone()).unwrap_or_default();
        let Some(policy) = input.policies.iter().find(|p| p.nodepool == pool) else {
            return (
                LeftAloneReason::NotManaged,
                format!("NodePool {pool:?} has no disruption policy"),
            );
        };
        let allowance = &self.allowance;
        if f.drifted {
            if let Some(h) = input.drift_hold(&pool) {
                return (LeftAloneReason::DriftBackoff, h.message());
            }
            if allowance.left(&pool, Reason::Drifted) == 0 {
                return (
                    LeftAloneReason::Budget,
                    format!(
                        "drifted, but NodePool {pool}'s budget allows no more Drifted disruptions now"
                    ),
                );
            }
            if self.at_limit {
                return (
                    LeftAloneReason::CommandLimit,
                    "drifted; the plan reached its command limit".to_string(),
                );
            }
            if policy.fixed_size {
                let verdict = pure::static_drift::verdict(
                    policy.static_size.as_ref(),
                    self.options.terminate_first_drift,
                );
                if let pure::static_drift::Verdict::Wait(hold) = verdict {
                    return (LeftAloneReason::StaticPool, format!("drifted, but {hold}"));
                }
                return (
                    LeftAloneReason::StaticPool,
                    format!(
                        "drifted, but no replacement can be planned for static NodePool {pool}"
                    ),
                );
            }
            return (
                LeftAloneReason::PodsCannotMove,
                "drifted, but its pods cannot all be placed elsewhere (on the other nodes plus new ones)".to_string(),
            );
        }
        if policy.fixed_size {
            return (
                LeftAloneReason::StaticPool,
                format!("NodePool {pool} is static (spec.replicas): only drift replaces its nodes"),
            );
        }
        let Some(after) = policy.consolidate_after else {
            return (
                LeftAloneReason::ConsolidationDisabled,
                format!("NodePool {pool} has consolidateAfter: Never"),
            );
        };
        if !pure::consolidatable(policy, f, input.now) {
            let remaining = f.last_pod_event + after.as_secs() as i64 - input.now;
            return (
                LeftAloneReason::ConsolidateAfter,
                format!(
                    "its pods last changed {}s ago; NodePool {pool}'s consolidateAfter is {}s ({remaining}s to go)",
                    input.now - f.last_pod_event,
                    after.as_secs()
                ),
            );
        }
        let empty = !self.busy.contains(node);
        let reason = if empty {
            Reason::Empty
        } else if policy.consolidation == pure::ConsolidationPolicy::WhenEmpty {
            return (
                LeftAloneReason::WhenEmpty,
                format!("NodePool {pool}'s consolidationPolicy is WhenEmpty and the node has pods"),
            );
        } else {
            Reason::Underutilized
        };
        if allowance.left(&pool, reason) == 0 {
            return (
                LeftAloneReason::Budget,
                format!(
                    "NodePool {pool}'s budget allows no more {reason} disruptions now (the commands above included)"
                ),
            );
        }
        if self.at_limit {
            return (
                LeftAloneReason::CommandLimit,
                "the plan reached its command limit".to_string(),
            );
        }
        if empty {
            return (
                LeftAloneReason::PodsCannotMove,
                "empty, but a CapacityBuffer's placeholder pods need its room".to_string(),
            );
        }
        if !self.consolidate {
            return (
                LeftAloneReason::WaitingForLaunches,
                "NodeClaims are launching: consolidation waits until they are done".to_string(),
            );
        }
        match pure::try_consolidating(input, self.options, node) {
            None => (
                LeftAloneReason::NotChosen,
                "not a consolidation candidate".to_string(),
            ),
            Some(Ok(d)) if self.consolidated => (
                LeftAloneReason::LaterPass,
                format!(
                    "decided again on the next pass (this pass's consolidations count on it, or took their most); on its own: {}",
                    d.message
                ),
            ),
            Some(Ok(d)) => (
                LeftAloneReason::NotChosen,
                format!(
                    "consolidation's search chose otherwise; on its own: {}",
                    d.message
                ),
            ),
            Some(Err(e)) => (invalidated_reason(&e), e.to_string()),
        }
    }
}

fn blocker_reason(b: &Blocker) -> LeftAloneReason {
    match b {
        Blocker::NotInitialized => LeftAloneReason::NotInitialized,
        Blocker::InFlight => LeftAloneReason::Launching,
        Blocker::Disrupting => LeftAloneReason::Disrupting,
        Blocker::Unmanaged => LeftAloneReason::NotManaged,
        Blocker::DoNotDisruptNode | Blocker::DoNotDisruptPod(_) => LeftAloneReason::DoNotDisrupt,
        Blocker::PdbForbids { .. } => LeftAloneReason::Pdb,
        Blocker::ZonalShift(_) => LeftAloneReason::ZonalShift,
        Blocker::Unresolvable(_) => LeftAloneReason::Unresolvable,
    }
}

fn invalidated_reason(e: &Invalidated) -> LeftAloneReason {
    match e {
        Invalidated::PodsDoNotFit(_) => LeftAloneReason::PodsCannotMove,
        Invalidated::NotWorthIt(_) => LeftAloneReason::NoCheaperFit,
        Invalidated::BelowSavingsThreshold(_) => LeftAloneReason::SavingsThreshold,
        Invalidated::Pdb(_) => LeftAloneReason::Pdb,
        Invalidated::Budget(_) => LeftAloneReason::Budget,
        Invalidated::DriftBackoff { .. } => LeftAloneReason::DriftBackoff,
        Invalidated::StaticPool(_) => LeftAloneReason::StaticPool,
        Invalidated::Blocked { blocker, .. } => blocker_reason(blocker),
        Invalidated::NodeGone(_) | Invalidated::NoLongerEligible { .. } => {
            LeftAloneReason::NotChosen
        }
    }
}

/// The scenario's objects as the controller would watch them, with what a live cluster
/// always has filled in (see the module docs); the notes say what was filled in.
pub fn live_objects(scenario: &Scenario) -> (Objects, Vec<String>) {
    let o = &scenario.objects;
    let mut notes = Vec::new();
    let mut nodes: Vec<Node> = o.nodes.clone();
    let mut claims: Vec<NodeClaim> = o.nodeclaims.clone();
    for n in &mut nodes {
        let status = n.status.get_or_insert_with(Default::default);
        if status.conditions.as_ref().is_none_or(|c| c.is_empty()) {
            status.conditions = Some(vec![
                serde_json::from_value(json!({"type": "Ready", "status": "True"}))
                    .expect("a condition"),
            ]);
        }
    }
    // Link claims to nodes: providerID, else status.nodeName, else the same name.
    let node_index: HashMap<String, usize> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.metadata.name.clone().unwrap_or_default(), i))
        .collect();
    let mut linked: BTreeSet<String> = BTreeSet::new();
    for c in &mut claims {
        let pid = c.status.as_ref().and_then(|s| s.provider_id.clone());
        if let Some(pid) = &pid
            && let Some(n) = nodes.iter().find(|n| {
                n.spec.as_ref().and_then(|s| s.provider_id.as_deref()) == Some(pid.as_str())
            })
        {
            linked.insert(n.metadata.name.clone().unwrap_or_default());
            continue;
        }
        let by_name = c
            .status
            .as_ref()
            .and_then(|s| s.node_name.clone())
            .or_else(|| c.metadata.name.clone());
        let Some(&i) = by_name.as_ref().and_then(|n| node_index.get(n)) else {
            continue;
        };
        let node = &mut nodes[i];
        let node_name = node.metadata.name.clone().unwrap_or_default();
        let node_pid = node.spec.as_ref().and_then(|s| s.provider_id.clone());
        let pid = match (pid, node_pid) {
            (_, Some(np)) => np,
            (Some(cp), None) => cp,
            (None, None) => format!("simulate:///{node_name}"),
        };
        node.spec.get_or_insert_with(Default::default).provider_id = Some(pid.clone());
        c.status.get_or_insert_with(Default::default).provider_id = Some(pid);
        linked.insert(node_name.clone());
        notes.push(format!(
            "NodeClaim {} linked to Node {node_name} by name (no matching providerID)",
            c.metadata.name.as_deref().unwrap_or_default()
        ));
    }
    // Nodes of a NodePool no claim owns get the claim `run` would have made.
    let pools: HashMap<&str, &adze_api::NodePool> = o
        .nodepools
        .iter()
        .filter_map(|p| Some((p.metadata.name.as_deref()?, p)))
        .collect();
    let classes: Vec<Arc<adze_api::EC2NodeClass>> =
        o.ec2nodeclasses.iter().cloned().map(Arc::new).collect();
    for n in &mut nodes {
        let name = n.metadata.name.clone().unwrap_or_default();
        if linked.contains(&name) {
            continue;
        }
        let labels = n.metadata.labels.clone().unwrap_or_default();
        let Some(pool_name) = labels
            .get(adze_scheduling::labels::NODEPOOL)
            .or_else(|| labels.get("karpenter.sh/nodepool"))
        else {
            continue;
        };
        let Some(pool) = pools.get(pool_name.as_str()) else {
            continue;
        };
        let pid = n
            .spec
            .as_ref()
            .and_then(|s| s.provider_id.clone())
            .unwrap_or_else(|| format!("simulate:///{name}"));
        n.spec.get_or_insert_with(Default::default).provider_id = Some(pid.clone());
        let class = crate::disruption::drift::class_named(
            &pool.spec.template.spec.node_class_ref,
            Some(&classes),
        );
        let stamp = crate::disruption::drift::stamp(pool, class);
        let created = n
            .metadata
            .creation_timestamp
            .as_ref()
            .map(|t| t.0.to_string())
            .unwrap_or_else(|| "1970-01-01T00:00:00Z".to_string());
        let mut claim_labels = labels.clone();
        claim_labels.insert(
            adze_scheduling::labels::NODEPOOL.to_string(),
            pool_name.clone(),
        );
        let tpl = &pool.spec.template.spec;
        let claim: Result<NodeClaim, _> = serde_json::from_value(json!({
            "apiVersion": "adze.sh/v1", "kind": "NodeClaim",
            "metadata": {"name": name, "creationTimestamp": created,
                "labels": claim_labels, "annotations": stamp},
            "spec": {"nodeClassRef": tpl.node_class_ref,
                     "expireAfter": tpl.expire_after,
                     "terminationGracePeriod": tpl.termination_grace_period},
            "status": {"providerID": pid, "nodeName": name, "conditions": [
                {"type": "Launched", "status": "True", "reason": "Launched", "message": "",
                 "lastTransitionTime": created},
                {"type": "Registered", "status": "True", "reason": "Registered", "message": "",
                 "lastTransitionTime": created},
                {"type": "Initialized", "status": "True", "reason": "Initialized", "message": "",
                 "lastTransitionTime": created}]},
        }));
        match claim {
            Ok(c) => {
                claims.push(c);
                notes.push(format!(
                    "Node {name}: NodeClaim made for it in NodePool {pool_name} (the scenario lists none)"
                ));
            }
            Err(e) => notes.push(format!(
                "Node {name}: no NodeClaim could be made for it ({e}); it is not managed"
            )),
        }
    }
    let pods: Vec<Arc<Pod>> = o
        .pods
        .iter()
        .cloned()
        .map(|mut p| {
            if p.metadata.uid.is_none() {
                p.metadata.uid = Some(format!(
                    "{}/{}",
                    p.metadata.namespace.as_deref().unwrap_or("default"),
                    p.metadata.name.as_deref().unwrap_or_default()
                ));
            }
            Arc::new(p)
        })
        .collect();
    let nodeclasses = (!o.ec2nodeclasses.is_empty()).then(|| {
        o.ec2nodeclasses
            .iter()
            .cloned()
            .map(|mut c| {
                resolve_class(&mut c, &scenario.instance_types);
                Arc::new(c)
            })
            .collect()
    });
    let objects = Objects {
        nodes: nodes.into_iter().map(Arc::new).collect(),
        pods,
        claims: claims.into_iter().map(Arc::new).collect(),
        nodepools: o.nodepools.iter().cloned().map(Arc::new).collect(),
        nodeoverlays: o.nodeoverlays.iter().cloned().map(Arc::new).collect(),
        daemonsets: o.daemonsets.iter().cloned().map(Arc::new).collect(),
        pvcs: o.pvcs.iter().cloned().map(Arc::new).collect(),
        pvs: o.pvs.iter().cloned().map(Arc::new).collect(),
        storage_classes: o.storage_classes.iter().cloned().map(Arc::new).collect(),
        csinodes: o.csinodes.iter().cloned().map(Arc::new).collect(),
        nodeclasses,
        karpenter_labels: false,
        failed_every_node: Arc::new(HashMap::new()),
        buffers: Default::default(),
        // A scenario lists no ReplicaSets or Services as objects (its workloads are
        // expanded to pending pods), so no listed pod gets default spread constraints.
        spread: Default::default(),
    };
    (objects, notes)
}

/// A class with no resolved subnets or images gets, as placement assumes, a subnet in
/// every zone of the catalog and one image with no requirements.
fn resolve_class(
    class: &mut adze_api::EC2NodeClass,
    catalog: &[Arc<adze_scheduling::InstanceType>],
) {
    let status = class.status.get_or_insert_with(Default::default);
    if status.subnets.is_empty() {
        let zones: BTreeSet<&str> = catalog
            .iter()
            .flat_map(|t| t.offerings.iter().map(|o| o.zone.as_str()))
            .collect();
        status.subnets = zones
            .into_iter()
            .map(|z| adze_api::ec2nodeclass::Subnet {
                id: format!("subnet-simulate-{z}"),
                zone: z.to_string(),
                zone_id: None,
            })
            .collect();
    }
    if status.amis.is_empty() {
        status.amis = vec![adze_api::ec2nodeclass::Ami {
            id: "ami-simulate".to_string(),
            name: None,
            requirements: Vec::new(),
        }];
    }
}

/// Why one node is or is not disrupted, with what the decision looked at.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeExplanation {
    pub node: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodepool: Option<String>,
    /// The command that takes it, if one does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<Command>,
    /// Why it is left alone, if it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub left_alone: Option<LeftAlone>,
    /// What keeps it from being a candidate at all (the first such thing), if anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocker: Option<String>,
    /// Its workload (non-DaemonSet) pods.
    pub pods: Vec<String>,
    /// USD per hour.
    pub price: f64,
    pub drifted: bool,
    /// Seconds until its NodeClaim expires (negative: expired); absent with
    /// `expireAfter: Never` or without a NodeClaim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_in: Option<i64>,
    /// The NodePool's `consolidateAfter` in seconds; absent for Never or no pool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consolidate_after: Option<u64>,
    /// Seconds since its pods last changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pods_unchanged_for: Option<i64>,
    /// Seconds of `consolidateAfter` still to run (0 once elapsed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consolidate_after_remaining: Option<i64>,
    /// Per budget reason, how many more of its pool's nodes may be disrupted now, before
    /// the plan (absent: no budget limits it).
    pub budgets: Vec<BudgetLeft>,
    /// What single-node consolidation of this node alone would do, or why it is refused
    /// (budgets and `consolidateAfter` aside); absent when it is not a candidate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consolidation: Option<String>,
}

/// Room left in a NodePool's disruption budget for one reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BudgetLeft {
    pub reason: String,
    /// Nodes; absent when no budget limits this reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes: Option<u64>,
}

/// Why `node` is or is not disrupted; `None` when the scenario has no Node of that name.
pub fn explain_node(
    scenario: &Scenario,
    options: &DisruptionOptions,
    node: &str,
) -> Option<NodeExplanation> {
    let prepared = prepare(scenario, options);
    let plan = plan_prepared(&prepared, options);
    explain_prepared(&prepared, &plan, node)
}

/// [`explain_node`] on an input and plan already made.
pub fn explain_prepared(
    prepared: &Prepared,
    plan: &DisruptionPlan,
    node: &str,
) -> Option<NodeExplanation> {
    let input = &prepared.built.input;
    let n = input.snapshot.nodes.iter().find(|n| n.name == node)?;
    let facts = input.nodes.iter().find(|f| f.name == node);
    let pool = n.nodepool.clone();
    let policy = pool
        .as_deref()
        .and_then(|p| input.policies.iter().find(|x| x.nodepool == p));
    let (_, blocked) = pure::candidates(input);
    let blocker = blocked
        .iter()
        .find(|(b, _)| b == node)
        .map(|(_, b)| b.to_string());
    let allowance = pure::Allowance::compute(input);
    let budgets = match &pool {
        Some(p) if policy.is_some() => Reason::ALL
            .into_iter()
            .filter(|r| *r != Reason::Expired)
            .map(|r| BudgetLeft {
                reason: r.as_str().to_string(),
                nodes: Some(allowance.left(p, r)).filter(|&v| v < u64::MAX / 2),
            })
            .collect(),
        _ => Vec::new(),
    };
    let consolidate_after = policy
        .and_then(|p| p.consolidate_after)
        .map(|d| d.as_secs());
    let pods_unchanged_for = facts.map(|f| input.now - f.last_pod_event);
    let consolidation = pure::try_consolidating(input, &prepared.options, node).map(|r| match r {
        Ok(d) => format!("would {}", d.message),
        Err(e) => format!("refused: {e}"),
    });
    Some(NodeExplanation {
        node: node.to_string(),
        nodepool: pool,
        command: plan.command_for(node).cloned(),
        left_alone: plan.left_alone(node).cloned(),
        blocker,
        pods: input
            .snapshot
            .bound
            .iter()
            .filter(|b| !b.daemon && b.node == node)
            .map(|b| b.pod.key())
            .collect(),
        price: pure::node_price(input, n),
        drifted: facts.is_some_and(|f| f.drifted),
        expires_in: facts.and_then(|f| {
            f.expire_after
                .map(|d| f.created + d.as_secs() as i64 - input.now)
        }),
        consolidate_after,
        pods_unchanged_for,
        consolidate_after_remaining: consolidate_after
            .zip(pods_unchanged_for)
            .map(|(a, u)| (a as i64 - u).max(0)),
        budgets,
        consolidation,
    })
}

fn money(v: f64) -> String {
    // + 0.0 turns an empty sum's -0.0 into 0.0.
    format!("{:.4}", v + 0.0)
}

/// The plan for a person: commands with their pods, the nodes left alone, the cost per pool.
pub fn table(plan: &DisruptionPlan) -> String {
    use super::output::{columns, plural};
    let mut out = format!(
        "Disruption plan at {}: {}, {} left alone.\n",
        plan.now,
        plural(plan.commands.len(), "command", "commands"),
        plural(plan.left_alone.len(), "node", "nodes"),
    );
    if !plan.commands.is_empty() {
        let mut rows = vec![
            [
                "#",
                "METHOD",
                "ACTION",
                "NODES",
                "PODS",
                "REPLACEMENTS",
                "$/H BEFORE",
                "$/H AFTER",
            ]
            .map(String::from)
            .to_vec(),
        ];
        for (i, c) in plan.commands.iter().enumerate() {
            let repl: Vec<String> = c
                .replacements
                .iter()
                .map(|r| format!("{} {} {}", r.instance_type, r.capacity_type, r.zone))
                .collect();
            rows.push(vec![
                (i + 1).to_string(),
                c.method.to_string(),
                c.action.as_str().to_string(),
                c.nodes.join(","),
                c.pods.len().to_string(),
                if repl.is_empty() {
                    "-".to_string()
                } else {
                    repl.join(", ")
                },
                money(c.price_before),
                money(c.price_after),
            ]);
        }
        out.push('\n');
        out.push_str(&columns(&rows));
        for (i, c) in plan.commands.iter().enumerate() {
            out.push_str(&format!("\n{}. {}\n", i + 1, c.message));
            for m in &c.pods {
                out.push_str(&format!("   {}: {} -> {}\n", m.pod, m.from, m.to));
            }
        }
    }
    if !plan.left_alone.is_empty() {
        let mut rows = vec![
            ["NODE", "NODEPOOL", "LEFT ALONE", "WHY"]
                .map(String::from)
                .to_vec(),
        ];
        for l in &plan.left_alone {
            rows.push(vec![
                l.node.clone(),
                l.nodepool.clone().unwrap_or_else(|| "-".to_string()),
                l.reason.to_string(),
                l.message.clone(),
            ]);
        }
        out.push('\n');
        out.push_str(&columns(&rows));
    }
    if !plan.cost.is_empty() {
        let mut rows = vec![
            [
                "NODEPOOL",
                "NODES BEFORE",
                "NODES AFTER",
                "$/H BEFORE",
                "$/H AFTER",
            ]
            .map(String::from)
            .to_vec(),
        ];
        for c in &plan.cost {
            rows.push(vec![
                c.nodepool.clone(),
                c.nodes_before.to_string(),
                c.nodes_after.to_string(),
                money(c.before),
                money(c.after),
            ]);
        }
        let (b, a) = plan.total_cost();
        rows.push(vec![
            "total".to_string(),
            plan.cost
                .iter()
                .map(|c| c.nodes_before)
                .sum::<usize>()
                .to_string(),
            plan.cost
                .iter()
                .map(|c| c.nodes_after)
                .sum::<usize>()
                .to_string(),
            money(b),
            money(a),
        ]);
        out.push('\n');
        out.push_str(&columns(&rows));
    }
    for (title, lines) in [("Notes", &plan.notes), ("Left out", &plan.problems)] {
        if !lines.is_empty() {
            out.push_str(&format!("\n{title}:\n"));
            for l in lines {
                out.push_str(&format!("  - {l}\n"));
            }
        }
    }
    out
}

/// One node's explanation for a person.
pub fn explain_text(e: &NodeExplanation) -> String {
    let mut out = format!(
        "Node {} (NodePool {}, ${}/h, {} workload pod(s))\n",
        e.node,
        e.nodepool.as_deref().unwrap_or("none"),
        money(e.price),
        e.pods.len()
    );
    match (&e.command, &e.left_alone) {
        (Some(c), _) => out.push_str(&format!(
            "  disrupted: {} ({}): {}\n",
            c.method,
            c.action.as_str(),
            c.message
        )),
        (None, Some(l)) => out.push_str(&format!("  left alone ({}): {}\n", l.reason, l.message)),
        (None, None) => out.push_str("  launching: not yet a node disruption considers\n"),
    }
    out.push_str(&format!(
        "  candidate: {}\n",
        e.blocker
            .as_deref()
            .map_or("yes".to_string(), |b| format!("no, {b}"))
    ));
    out.push_str(&format!(
        "  drifted: {}\n",
        if e.drifted { "yes" } else { "no" }
    ));
    match e.expires_in {
        Some(s) if s <= 0 => out.push_str(&format!("  expired: {}s ago\n", -s)),
        Some(s) => out.push_str(&format!("  expires in: {s}s\n")),
        None => out.push_str("  expires: never\n"),
    }
    match (e.consolidate_after, e.pods_unchanged_for) {
        (Some(a), Some(u)) => out.push_str(&format!(
            "  consolidateAfter: {a}s; pods unchanged for {u}s; {}s to go\n",
            e.consolidate_after_remaining.unwrap_or(0)
        )),
        (None, _) if e.nodepool.is_some() => out.push_str("  consolidateAfter: Never\n"),
        _ => {}
    }
    if !e.budgets.is_empty() {
        let b: Vec<String> = e
            .budgets
            .iter()
            .map(|b| {
                format!(
                    "{} {}",
                    b.reason,
                    b.nodes.map_or("unlimited".to_string(), |n| n.to_string())
                )
            })
            .collect();
        out.push_str(&format!("  budget left now: {}\n", b.join(", ")));
    }
    if let Some(c) = &e.consolidation {
        out.push_str(&format!(
            "  consolidation of it alone, before the plan: {c}\n"
        ));
    }
    out
}
