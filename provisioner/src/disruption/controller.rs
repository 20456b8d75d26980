//! The disruption controller proper (the `controller` feature); see [`super`].

use super::drift::DRIFT_REPLACEMENT_FAILED;
use super::{deletion_cost, drift, input, pdb, repair, vpa_reader};

use adze_cloud::sync::MutexExt;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use adze_api::NodeClaim;
use adze_api::conditions::{self, nodeclaim as cond};
use adze_scheduling::disruption::{self as pure, Action, Decision, commit, decide_all, revalidate};
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::{
    ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams,
};
use kube::{Api, Client, ResourceExt};
use serde_json::json;

use crate::cloud::{CloudProvider, UnavailableOfferings};
use crate::events::{Recorder, reference};
use crate::nodeclaim::{nodepool_of, set_condition};
use crate::provisioning::claim_object;
use crate::provisioning::snapshot::{claim_conditions, is_initialized};
use crate::state::ClusterState;
use crate::termination::writes;
use input::{Built, ClaimStatus, Extra, PodActivity};

#[derive(Debug, Clone)]
pub struct Settings {
    /// How often a decision is looked for.
    pub poll: Duration,
    /// Between deciding and acting; the decision must still hold after it.
    pub validation: Duration,
    /// Log and record decisions without acting on them.
    pub dry_run: bool,
    /// Replacements not Initialized within this are given up (and the old nodes kept).
    pub replacement_timeout: Duration,
    pub max_instance_types: usize,
    /// Placement policies, as provisioning uses them: replacements are planned alike.
    pub policies: crate::rules::Policies,
    /// Node repair (`--node-repair`, Karpenter's `NodeRepair` feature gate): replace nodes
    /// whose conditions stay unhealthy past their toleration. `None`: off. Budgeted (the
    /// default once on, Karpenter v1.15): the decision's first method, within the pools'
    /// budgets for `Unhealthy`. Legacy (`--legacy-node-repair`): forceful, before any
    /// decision ([`Self::repair`]). See [`super::repair::mode`].
    pub repair: Option<pure::repair::RepairMode>,
    /// `--reboot-for-repair` (Karpenter's `RebootForRepair` gate), with budgeted repair: a
    /// node due for repair has its instance rebooted first ([`Self::reboot_unhealthy`]) and is
    /// replaced only if still unhealthy after the wait. See [`super::repair::reboot_first`].
    pub reboot_for_repair: bool,
    /// `--terminate-first-drift` (Karpenter's `TerminateFirstDrift` gate): a drifted or
    /// repaired node of a capacity-constrained pool (static at its `limits.nodes`, confined to
    /// full reservations, or whose pods fit only once it stops counting against `limits`) is
    /// deleted first and the freed room refilled.
    pub terminate_first_drift: bool,
    /// `--pod-deletion-cost` (Karpenter's `PodDeletionCostManagement` gate): keep
    /// `controller.kubernetes.io/pod-deletion-cost` on ReplicaSet pods in step with the
    /// disruption ranking ([`super::deletion_cost`]).
    pub pod_deletion_cost: bool,
    /// `--vpa-predictions` (Karpenter's `PredictionEnabled` gate): the cluster's
    /// VerticalPodAutoscalers are listed ([`vpa_reader`]) and the pods disruption moves are
    /// planned with their recommendation ([`adze_scheduling::vpa`]).
    pub vpa_predictions: bool,
}

pub struct Disruption {
    client: Client,
    state: ClusterState,
    cloud: Arc<dyn CloudProvider>,
    unavailable: UnavailableOfferings,
    recorder: Recorder,
    settings: Settings,
    activity: Mutex<PodActivity>,
    pdbs: ApiResource,
    /// NodeClaims (the disrupted ones and their replacements) of commands still running.
    commands: Mutex<BTreeSet<String>>,
    /// The last drift check that succeeded: kept when the cloud cannot be read, so Drifted
    /// conditions are not cleared by an EC2 outage.
    cloud_drifted: Mutex<BTreeSet<String>>,
    /// Node repair's reading of the instances' status checks (read only with `repair` on).
    status_checks: tokio::sync::Mutex<repair::StatusChecks>,
    /// The reboots for repair this replica recorded, by NodeClaim, until the watch shows the
    /// NodeClaim's annotation: a pass that reads the claim before its own write arrives does
    /// not reboot the node again.
    reboots_sent: Mutex<BTreeMap<String, pure::repair::RebootRecord>>,
    /// Set by a pass that was held back: the [`Hold`] then, and how many pending pods it
    /// found no place for ([`hold_lifted`]).
    held: Mutex<Option<(Hold, usize)>>,
    /// When pod deletion costs were last written (`--pod-deletion-cost`).
    deletion_cost_at: Mutex<Option<Instant>>,
    /// Failed drift replacements per NodePool ([`pure::drift_backoff`]); `None` until the
    /// first pass rebuilds it from the NodeClaims ([`drift::backoff_from_claims`]).
    drift_backoff: Mutex<Option<pure::drift_backoff::DriftBackoff>>,
    /// `--vpa-predictions`: the latest VPAs read, and the reader (taken by [`Self::run`]).
    vpas: Option<vpa_reader::VpaFeed>,
    vpa_reader: Option<vpa_reader::VpaReader>,
}

/// At most this many decisions are taken in one pass (budgets usually bound it first).
const MAX_DECISIONS_PER_PASS: usize = 100;

/// What a pass came to; it sets when the next one starts ([`next_pass_in`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pass {
    /// Nothing to disrupt and nothing in the way (or a failed pass, or a dry run).
    Idle,
    /// Disruptions were started, or expired or unhealthy nodes deleted.
    Acted,
    /// The cluster is moving: pods the provisioner can place are pending (the pods of the
    /// nodes just disrupted, among others), NodeClaims are launching or commands running,
    /// so nothing (or no consolidation) could be decided; or every decision was dropped at
    /// validation.
    Waiting,
}

/// The first look after a pass that acted, and the shortest wait between two passes.
pub const RECHECK: Duration = Duration::from_secs(1);

/// How long to wait after a pass that came to `outcome`, the wait before it having been
/// `last`. Idle: the poll period. Acted: [`RECHECK`], so the next wave is decided as soon as
/// the last one's pods have landed rather than a poll period later (waves of a wide
/// scale-down were a poll plus a validation period apart). Waiting: twice `last`, from
/// [`RECHECK`] up to the poll period, so a cluster that settles within seconds is decided on
/// soon after, and one that stays unsettled is not observed more often than it was.
pub fn next_pass_in(outcome: Pass, last: Duration, poll: Duration) -> Duration {
    match outcome {
        Pass::Idle => poll,
        Pass::Acted => RECHECK.min(poll),
        Pass::Waiting => last.saturating_mul(2).clamp(RECHECK.min(poll), poll),
    }
}

/// What holds a pass back, read cheaply from the watches (no placement): disruption commands
/// running, NodeClaims launching (not initialised, not being deleted), and pending pods no
/// claim is nominated for ([`crate::provisioning::snapshot::unplaced_demand`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Hold {
    pub commands: usize,
    pub launching: usize,
    pub pending: usize,
}

/// Whether a pass that waited on `at_pass` may run before its backoff ([`next_pass_in`])
/// ends: what held it is gone `now` (no command, no launch, and no more pending pods than the
/// pass found no place for: `unplaceable`). Only a hold that was there at the pass can lift:
/// if the cheap reading already looked clear then (the pass waited for another reason, or
/// every decision was dropped at validation), the backoff stands, so a disagreement between
/// the two readings cannot make a pass a second. The backoff alone put the next wave up to
/// 10 s after the last one's pods had landed.
pub fn hold_lifted(at_pass: Hold, now: Hold, unplaceable: usize) -> bool {
    let clear = |h: Hold| h.commands == 0 && h.launching == 0 && h.pending <= unplaceable;
    !clear(at_pass) && clear(now)
}

/// policy/v1 when the apiserver serves PodDisruptionBudgets there, else policy/v1beta1.
async fn pdb_resource(client: &Client) -> ApiResource {
    let v1 = client
        .list_api_group_resources("policy/v1")
        .await
        .is_ok_and(|l| l.resources.iter().any(|r| r.name == "poddisruptionbudgets"));
    let version = if v1 { "v1" } else { "v1beta1" };
    ApiResource {
        group: "policy".into(),
        version: version.into(),
        api_version: format!("policy/{version}"),
        kind: "PodDisruptionBudget".into(),
        plural: "poddisruptionbudgets".into(),
    }
}

fn action_label(d: &Decision) -> &'static str {
    match d.action() {
        Action::Delete => "delete",
        Action::Replace => "replace",
    }
}

/// The metric labels of one node a decision removes: its pool and, as
/// [`crate::metrics::PodsDisruptedLabels`] spells them, its consolidation policy and
/// termination mode.
fn node_labels(
    reason: &str,
    nodepool: &str,
    policies: &[pure::PoolPolicy],
    claim: &NodeClaim,
    repair: bool,
) -> crate::metrics::PodsDisruptedLabels {
    let policy = policies
        .iter()
        .find(|p| p.nodepool == nodepool)
        .map(|p| p.consolidation);
    let grace = claim
        .spec
        .termination_grace_period
        .as_ref()
        .map(|g| g.as_std());
    crate::metrics::PodsDisruptedLabels {
        reason: reason.into(),
        nodepool: nodepool.into(),
        consolidation_policy: crate::metrics::consolidation_policy(reason, policy).into(),
        termination_mode: crate::metrics::termination_mode(grace, repair).into(),
    }
}

/// The labels of each node `d` removes, in its order; `claims` are the nodes' NodeClaims in
/// the same order.
fn decision_node_labels(
    d: &Decision,
    policies: &[pure::PoolPolicy],
    claims: &[Arc<NodeClaim>],
) -> Vec<crate::metrics::PodsDisruptedLabels> {
    d.nodes
        .iter()
        .zip(claims)
        .map(|(n, c)| {
            node_labels(
                d.reason.as_str(),
                &n.nodepool,
                policies,
                c,
                // Repair's drain has no grace period (termination reads the reason).
                d.reason == pure::Reason::Unhealthy,
            )
        })
        .collect()
}

/// One value for a label the nodes of a decision each have: theirs when they agree, `mixed`
/// when they do not (a consolidation across NodePools).
fn one_value<'a>(mut values: impl Iterator<Item = &'a str>, none: &str) -> String {
    let Some(first) = values.next() else {
        return none.to_string();
    };
    if values.all(|v| v == first) {
        first.to_string()
    } else {
        "mixed".to_string()
    }
}

/// `adze_disruption_decisions_total`: one disruption carried out, with `nodes` the labels of
/// the nodes it removes ([`decision_node_labels`]).
fn record_decision(d: &Decision, nodes: &[crate::metrics::PodsDisruptedLabels]) {
    crate::metrics::provisioner()
        .disruption_decisions
        .get_or_create(&crate::metrics::DecisionLabels {
            decision: action_label(d).into(),
            reason: d.reason.as_str().into(),
            consolidation_policy: one_value(
                nodes.iter().map(|n| n.consolidation_policy.as_str()),
                crate::metrics::NO_POLICY,
            ),
            termination_mode: one_value(
                nodes.iter().map(|n| n.termination_mode.as_str()),
                crate::metrics::GRACEFUL,
            ),
        })
        .inc();
}

/// `adze_disruption_commands_total{stage}`: a command proposed by a method, or approved.
fn record_command(d: &Decision, stage: &str) {
    crate::metrics::provisioner()
        .disruption_commands
        .get_or_create(&crate::metrics::CommandLabels {
            stage: stage.into(),
            decision: action_label(d).into(),
            reason: d.reason.as_str().into(),
        })
        .inc();
}

/// `adze_pods_disrupted_total`: the `pods` non-DaemonSet pods of a node whose NodeClaim a
/// disruption just deleted (termination drains them from here).
fn record_pods(labels: &crate::metrics::PodsDisruptedLabels, pods: usize) {
    crate::metrics::provisioner()
        .pods_disrupted
        .get_or_create(labels)
        .inc_by(pods as u64);
}

/// Non-DaemonSet pods bound to `node` in `built`'s snapshot: those its deletion displaces.
fn pods_on(built: &Built, node: &str) -> usize {
    (built.input.snapshot.bound.iter())
        .filter(|b| b.node == node && !b.daemon)
        .count()
}

/// `adze_disruption_decisions_total{decision="delete"}` for a forceful method's deletion of
/// one node (`reason` Expired, or Unhealthy: node repair): no command, so no validation and
/// no budgets, and not in `adze_disruption_commands_total`.
fn record_forceful(labels: &crate::metrics::PodsDisruptedLabels) {
    crate::metrics::provisioner()
        .disruption_decisions
        .get_or_create(&crate::metrics::DecisionLabels {
            decision: "delete".into(),
            reason: labels.reason.clone(),
            consolidation_policy: labels.consolidation_policy.clone(),
            termination_mode: labels.termination_mode.clone(),
        })
        .inc();
}

/// `adze_disruption_blocked_nodes{reason}`: this pass's blocked nodes by blocker; every
/// announced blocker (a user's, a zonal shift) is written, at 0 when no node has it now.
/// Drifted nodes kept back by their pool's drift backoff are counted as `DriftBackoff`.
fn record_blocked(blocked: &[pure::BlockedNode], drift_held: &[pure::drift_backoff::HeldDrift]) {
    let gauge = &crate::metrics::provisioner().disruption_blocked;
    let mut counts: BTreeMap<&str, i64> = crate::metrics::ANNOUNCED_BLOCKERS
        .into_iter()
        .map(|b| (b, 0))
        .collect();
    for b in blocked {
        *counts.entry(b.blocker.reason()).or_default() += 1;
    }
    let held: usize = drift_held.iter().map(|h| h.nodes.len()).sum();
    *counts.entry(crate::metrics::DRIFT_BACKOFF).or_default() +=
        i64::try_from(held).unwrap_or(i64::MAX);
    for (blocker, n) in counts {
        gauge.get_or_create(&crate::metrics::reason(blocker)).set(n);
    }
}

/// `current` with `Drifted` and `Consolidatable` as `status` says (True with its reason and
/// message, or removed), or `None` when that changes nothing.
pub fn status_conditions(current: &[Condition], status: &ClaimStatus) -> Option<Vec<Condition>> {
    let without = |list: Vec<Condition>, type_: &str| -> Vec<Condition> {
        list.into_iter().filter(|c| c.type_ != type_).collect()
    };
    let out = current.to_vec();
    let out = match status.drift.reasons.first() {
        Some(r) => set_condition(&out, cond::DRIFTED, true, r.as_str(), &status.drift.message),
        None => without(out, cond::DRIFTED),
    };
    let out = match &status.consolidatable {
        Some(m) => set_condition(&out, cond::CONSOLIDATABLE, true, "Consolidatable", m),
        None => without(out, cond::CONSOLIDATABLE),
    };
    let same = out.len() == current.len()
        && out.iter().all(|a| {
            current.iter().any(|b| {
                a.type_ == b.type_
                    && a.status == b.status
                    && a.reason == b.reason
                    && a.message == b.message
            })
        });
    (!same).then_some(out)
}

fn now_unix() -> i64 {
    k8s_openapi::jiff::Timestamp::now().as_second()
}

/// Takes a decision's names out of the running commands when dropped (see `start`).
struct Release<'a> {
    disruption: &'a Disruption,
    names: &'a [String],
}

impl Drop for Release<'_> {
    fn drop(&mut self) {
        self.disruption.finish(self.names);
    }
}

impl Disruption {
    pub async fn new(
        client: Client,
        state: ClusterState,
        cloud: Arc<dyn CloudProvider>,
        unavailable: UnavailableOfferings,
        settings: Settings,
        recorder: Recorder,
    ) -> Disruption {
        let pdbs = pdb_resource(&client).await;
        let (vpa_reader, vpas) = match settings.vpa_predictions {
            true => {
                let (reader, feed) = vpa_reader::reader(client.clone());
                (Some(reader), Some(feed))
            }
            false => (None, None),
        };
        tracing::info!(
            pdb = %pdbs.api_version, poll_s = settings.poll.as_secs_f64(),
            validation_s = settings.validation.as_secs_f64(), dry_run = settings.dry_run,
            vpa_predictions = settings.vpa_predictions,
            "disruption controller configured"
        );
        Disruption {
            recorder,
            client,
            state,
            cloud,
            unavailable,
            settings,
            activity: Mutex::default(),
            pdbs,
            commands: Mutex::default(),
            cloud_drifted: Mutex::default(),
            status_checks: tokio::sync::Mutex::default(),
            reboots_sent: Mutex::default(),
            held: Mutex::default(),
            deletion_cost_at: Mutex::default(),
            drift_backoff: Mutex::default(),
            vpas,
            vpa_reader,
        }
    }

    /// The passes, and with `--vpa-predictions` the VPA reader beside them (so it runs
    /// only where disruption does: on the leader).
    pub async fn run(mut self) {
        let reader = self.vpa_reader.take();
        let reading = async move {
            match reader {
                Some(r) => r.run().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = reading => {}
            _ = self.passes() => {}
        }
    }

    async fn passes(self) {
        if let Some(feed) = &self.vpas {
            // The first pass plans with the VPAs, not before they were read.
            let _ = feed.clone().wait_for(Option::is_some).await;
        }
        let me = Arc::new(self);
        let mut wait = me.settings.poll;
        loop {
            me.sleep_unless_lifted(wait).await;
            let outcome = match me.pass().await {
                Ok(o) => o,
                Err(e) => {
                    tracing::warn!(error = %format!("{e:#}"), "disruption pass failed; retrying");
                    Pass::Idle
                }
            };
            wait = next_pass_in(outcome, wait, me.settings.poll);
        }
    }

    /// Sleeps `wait`, or less when the last pass was held back and the hold lifts first
    /// (looked at every [`RECHECK`]).
    async fn sleep_unless_lifted(&self, wait: Duration) {
        let held = *self.held.lock_or_recover();
        let Some((at_pass, unplaceable)) = held else {
            tokio::time::sleep(wait).await;
            return;
        };
        let deadline = Instant::now() + wait;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            tokio::time::sleep(left.min(RECHECK)).await;
            let now = self.hold_now();
            if hold_lifted(at_pass, now, unplaceable) {
                tracing::debug!(
                    ?at_pass,
                    early_ms = deadline
                        .saturating_duration_since(Instant::now())
                        .as_millis() as u64,
                    "disruption hold lifted; passing before the backoff ends"
                );
                return;
            }
        }
    }

    /// The [`Hold`] as the watches show it now.
    fn hold_now(&self) -> Hold {
        let objects = self.state.objects();
        Hold {
            commands: self.commands.lock_or_recover().len(),
            launching: objects
                .claims
                .iter()
                .filter(|c| c.metadata.deletion_timestamp.is_none() && !is_initialized(c))
                .count(),
            pending: crate::provisioning::snapshot::unplaced_demand(&objects).len(),
        }
    }

    /// Claims marked Disrupting but not deleted and not in a running command: left by a
    /// process that stopped before deleting them, or by an abort whose un-marking failed.
    /// Each such claim is read again first: the watched copy may not show yet the deletion
    /// that a command just finished with (or that expiry or repair just made), and a claim
    /// being deleted is termination's, not left unfinished.
    async fn recover(&self) -> anyhow::Result<()> {
        let running = self.commands.lock_or_recover().clone();
        let unfinished = |c: &NodeClaim| {
            c.metadata.deletion_timestamp.is_none()
                && !running.contains(&c.name_any())
                && conditions::is_true(claim_conditions(c), cond::DISRUPTING)
        };
        let api: Api<NodeClaim> = Api::all(self.client.clone());
        for c in self.state.claims.state() {
            if !unfinished(&c) {
                continue;
            }
            let Some(fresh) = api.get_opt(&c.name_any()).await? else {
                continue;
            };
            if unfinished(&fresh) {
                tracing::info!(nodeclaim = %c.name_any(), "disruption left unfinished; undoing it");
                self.unmark(
                    &fresh,
                    "Aborted",
                    "left unfinished (restart or failed abort)",
                )
                .await?;
            }
        }
        Ok(())
    }

    async fn observe(&self) -> anyhow::Result<Built> {
        let list = Api::<DynamicObject>::all_with(self.client.clone(), &self.pdbs)
            .list(&ListParams::default())
            .await?;
        let pdbs: Vec<pdb::Budget> = list
            .items
            .iter()
            .filter_map(|o| pdb::Budget::from_json(&serde_json::to_value(o).ok()?))
            .collect();
        let objects = self.state.objects();
        // One batch call per pass (AWS: one shared instance sweep, not a call per claim).
        let live: Vec<Arc<NodeClaim>> = (objects.claims.iter())
            .filter(|c| c.metadata.deletion_timestamp.is_none() && is_initialized(c))
            .cloned()
            .collect();
        let cloud_drifted = match self.cloud.drifted_claims(&live).await {
            Ok(set) => {
                *self.cloud_drifted.lock_or_recover() = set.clone();
                set
            }
            Err(e) => {
                tracing::warn!(error = %e, "drift check failed; keeping the last pass's drifted nodeclaims");
                self.cloud_drifted.lock_or_recover().clone()
            }
        };
        let catalog = self
            .unavailable
            .apply(&self.cloud.instance_types(), Instant::now());
        let vpas = self
            .vpas
            .as_ref()
            .map(|feed| feed.borrow().clone().unwrap_or_default());
        let extra = Extra {
            pdbs: &pdbs,
            pdb_empty_selects_all: self.pdbs.version == "v1",
            cloud_drifted: &cloud_drifted,
            now: now_unix(),
            vpas: vpas.as_deref().map(Vec::as_slice),
        };
        let mut built = input::build(
            &objects,
            &catalog,
            &extra,
            &mut self.activity.lock_or_recover(),
        );
        built.input.zones_away = self.unavailable.zones_away(extra.now);
        built.input.drift_holds = self.drift_holds(&objects.claims, extra.now);
        if self.settings.repair == Some(pure::repair::RepairMode::Budgeted) {
            built.input.health = self.read_health(extra.now).await;
            self.overlay_reboots(&mut built.input.health);
        }
        for p in &built.problems {
            tracing::debug!(problem = %p, "left out of disruption");
        }
        Ok(built)
    }

    fn options(&self, built: &Built) -> pure::Options {
        let mut options = input::decision_options(
            built,
            self.settings.max_instance_types,
            &self.settings.policies,
            crate::provisioning::fresh_name_seed(),
        );
        options.terminate_first_drift = self.settings.terminate_first_drift;
        options.node_repair = self.settings.repair;
        options.reboot_for_repair = self.settings.reboot_for_repair;
        options
    }

    /// Whether anything may be decided now, and whether consolidation may be too; says why
    /// not at debug level. Pending pods the provisioner can place make everything wait
    /// (capacity is on its way); pods no node and no NodePool could take do not, or one such
    /// pod would stop every disruption. Consolidation also waits for launches and commands.
    /// When it says not, the hold is recorded for [`Self::sleep_unless_lifted`].
    fn readiness(&self, built: &Built) -> (bool, bool) {
        let waiting = input::waiting_for(built, &self.options(built));
        let (any, consolidate) = self.readiness_with(built, waiting);
        let held = (!(any && consolidate))
            .then(|| (self.hold_now(), built.pending.saturating_sub(waiting)));
        *self.held.lock_or_recover() = held;
        (any, consolidate)
    }

    fn readiness_with(&self, built: &Built, waiting: usize) -> (bool, bool) {
        if waiting > 0 {
            tracing::debug!(
                pending = built.pending,
                placeable = waiting,
                "disruption waits: pods pending that the provisioner can place"
            );
            return (false, false);
        }
        if built.pending > 0 {
            tracing::debug!(
                pending = built.pending,
                "pending pods no NodePool can place; deciding without waiting for them"
            );
        }
        let running = self.commands.lock_or_recover().clone();
        let launching = built
            .in_flight
            .iter()
            .filter(|n| !running.contains(*n))
            .count();
        let consolidate = launching == 0 && running.is_empty();
        if !consolidate {
            tracing::debug!(
                launching,
                commands = running.len(),
                "consolidation waits: nodeclaims launching or disruptions running"
            );
        }
        (true, consolidate)
    }

    pub async fn pass(self: &Arc<Self>) -> anyhow::Result<Pass> {
        let pass_start = Instant::now();
        self.recover().await?;
        let mut built = self.observe().await?;
        let observe_ms = pass_start.elapsed().as_millis() as u64;
        self.record_activity(&built.activity_writes).await;
        self.record_status(&built.statuses).await;
        if self.settings.pod_deletion_cost {
            self.write_deletion_costs(&built).await;
        }
        if self.expire(&built).await? > 0 {
            // The expired nodes now count as disrupting; decide on the next pass.
            return Ok(Pass::Acted);
        }
        if self.settings.repair == Some(pure::repair::RepairMode::Legacy)
            && self.repair(&built).await? > 0
        {
            return Ok(Pass::Acted);
        }
        if self.settings.reboot_for_repair {
            // Reboots move no pod: they do not wait for pending pods as the decision does.
            self.reboot_unhealthy(&mut built).await;
        }
        let (any, consolidate) = self.readiness(&built);
        if !any {
            return Ok(Pass::Waiting);
        }
        let started = Instant::now();
        // Off the async workers: deciding on a large cluster takes CPU time.
        let (input, options) = (built.input.clone(), self.options(&built));
        let (decisions, blocked, held, drift_held) = tokio::task::spawn_blocking(move || {
            let decisions = decide_all(&input, &options, consolidate, MAX_DECISIONS_PER_PASS);
            let held = pure::repair_held(&input, &options, &decisions);
            let drift_held = pure::drift_backoff::held(&input);
            (decisions, pure::blocked(&input), held, drift_held)
        })
        .await?;
        self.announce_blocked(&built, &blocked, &drift_held);
        self.announce_repair_held(&built, &held);
        let decide_ms = started.elapsed().as_millis() as u64;
        tracing::debug!(
            observe_ms,
            decide_ms,
            decisions = decisions.len(),
            consolidate,
            "disruption pass timing: observe (watches, PDBs, input), decision"
        );
        if decisions.is_empty() {
            return Ok(if consolidate {
                Pass::Idle
            } else {
                Pass::Waiting
            });
        }
        for d in &decisions {
            if !self.settings.dry_run {
                record_command(d, crate::metrics::COMMANDED);
            }
            tracing::info!(
                reason = %d.reason, nodes = ?d.node_names(),
                saving_per_hour = format!("{:.4}", d.saving()),
                decide_ms = started.elapsed().as_millis() as u64,
                validation_s = self.settings.validation.as_secs_f64(),
                "disruption proposed: {}; validating", d.message
            );
        }
        tokio::time::sleep(self.settings.validation).await;
        let revalidate_start = Instant::now();
        let again = self.observe().await?;
        let (any, consolidate) = self.readiness(&again);
        if !any {
            tracing::info!(
                decisions = decisions.len(),
                "disruptions dropped: pods the provisioner can place became pending"
            );
            return Ok(Pass::Waiting);
        }
        // Each decision is checked on the cluster as the ones kept before it will leave it.
        let (input, options) = (again.input.clone(), self.options(&again));
        let checked = tokio::task::spawn_blocking(move || {
            let mut now = input;
            let mut out = Vec::new();
            for d in decisions {
                if d.reason == pure::Reason::Underutilized && !consolidate {
                    out.push((
                        d,
                        Err("nodeclaims are launching or disruptions running".to_string()),
                    ));
                    continue;
                }
                let r = revalidate(&d, &now, &options);
                if let Ok(kept) = &r {
                    commit(&mut now, kept);
                    if kept.reason == pure::Reason::Underutilized {
                        pure::hold(&mut now, kept);
                    }
                }
                out.push((d, r.map_err(|e| e.to_string())));
            }
            out
        })
        .await?;
        let revalidate_ms = revalidate_start.elapsed().as_millis() as u64;
        let start_start = Instant::now();
        let mut started = 0;
        for (proposed, r) in checked {
            match r {
                Ok(d) => {
                    self.start(d, &again).await?;
                    started += 1;
                }
                Err(why) => {
                    tracing::info!(reason = %proposed.reason, nodes = ?proposed.node_names(), "disruption dropped after validation: {why}");
                }
            }
        }
        tracing::debug!(
            observe_ms,
            decide_ms,
            validation_ms = self.settings.validation.as_millis() as u64,
            revalidate_ms,
            start_ms = start_start.elapsed().as_millis() as u64,
            started,
            total_ms = pass_start.elapsed().as_millis() as u64,
            "disruption pass timing: observe, decision, validation wait, revalidation, start \
             (marks; replacements and deletions go on in the background)"
        );
        if self.settings.dry_run {
            return Ok(Pass::Idle);
        }
        if started == 0 {
            return Ok(Pass::Waiting);
        }
        let running = self.commands.lock_or_recover().len();
        tracing::info!(
            started,
            claims_in_commands = running,
            "disruption wave: {started} command(s) started"
        );
        Ok(Pass::Acted)
    }

    /// `--pod-deletion-cost`: ranks the nodes as disruption would take them and patches the
    /// ReplicaSet pods whose annotation differs, at most once per
    /// [`deletion_cost::MIN_INTERVAL`]. A dry run logs what it would write and sends nothing.
    async fn write_deletion_costs(&self, built: &Built) {
        {
            let mut at = self.deletion_cost_at.lock_or_recover();
            if at.is_some_and(|t| t.elapsed() < deletion_cost::MIN_INTERVAL) {
                return;
            }
            *at = Some(Instant::now());
        }
        let objects = self.state.objects();
        let refs = deletion_cost::pod_refs(&objects.pods);
        let nominated = deletion_cost::nominated(&built.claim_of_node, &objects.pods);
        let ranking = pure::deletion_cost::rank(&built.input, &refs, &nominated);
        let w =
            pure::deletion_cost::writes(&ranking, &refs, pure::deletion_cost::MAX_NODES_PER_PASS);
        let m = crate::metrics::provisioner();
        m.pod_deletion_cost_deferred.set(w.deferred_nodes as i64);
        let count = |result: &str, n: u64| {
            m.pod_deletion_cost_writes
                .get_or_create(&crate::metrics::ResultLabel {
                    result: result.into(),
                })
                .inc_by(n);
        };
        count("skipped_unchanged", w.unchanged as u64);
        if self.settings.dry_run {
            tracing::info!(
                writes = w.writes.len(),
                deferred_nodes = w.deferred_nodes,
                "pod-deletion-cost (dry run): not written"
            );
            return;
        }
        let t = deletion_cost::apply(
            &self.client,
            &w.writes,
            &deletion_cost::versions(&objects.pods),
        )
        .await;
        count("updated", t.updated);
        count("skipped_notfound", t.not_found);
        count("skipped_conflict", t.conflict);
        count("error", t.error);
        tracing::debug!(
            updated = t.updated,
            conflict = t.conflict,
            unchanged = w.unchanged,
            deferred_nodes = w.deferred_nodes,
            "pod-deletion-cost pass"
        );
    }

    /// A `DisruptionBlocked` event on each node (and its NodeClaim) that a method would
    /// consider but for do-not-disrupt, a PodDisruptionBudget or a zonal shift. Sent every pass; the
    /// recorder folds the repeats into one Event per node and blocker with a growing count.
    /// `adze_disruption_blocked_nodes` counts them by blocker.
    fn announce_blocked(
        &self,
        built: &Built,
        blocked: &[pure::BlockedNode],
        drift_held: &[pure::drift_backoff::HeldDrift],
    ) {
        record_blocked(blocked, drift_held);
        self.announce_drift_held(drift_held);
        if blocked.is_empty() {
            return;
        }
        let nodes = self.state.nodes.state();
        for b in blocked {
            let message = b.message();
            tracing::debug!(node = %b.node, "{message}");
            if let Some(node) = nodes.iter().find(|n| n.name_any() == b.node) {
                self.recorder.publish(
                    reference(node.as_ref()),
                    "Normal",
                    "DisruptionBlocked",
                    &message,
                );
            }
            if let Some(claim) = built.claim_of_node.get(&b.node) {
                self.recorder.publish(
                    reference(claim.as_ref()),
                    "Normal",
                    "DisruptionBlocked",
                    &message,
                );
            }
        }
    }

    /// A `DisruptionBlocked` event on each NodePool in drift backoff, naming the hold and
    /// when it ends; sent every pass, folded by the recorder (one message per hold).
    fn announce_drift_held(&self, drift_held: &[pure::drift_backoff::HeldDrift]) {
        if drift_held.is_empty() {
            return;
        }
        let pools = self.state.nodepools.state();
        for h in drift_held {
            let message = h.hold.message();
            tracing::debug!(nodepool = %h.hold.nodepool, held_nodes = ?h.nodes, "{message}");
            if let Some(pool) = pools.iter().find(|p| p.name_any() == h.hold.nodepool) {
                self.recorder.publish(
                    reference(pool.as_ref()),
                    "Normal",
                    "DisruptionBlocked",
                    &message,
                );
            }
        }
    }

    /// The pools held now; on the first call, the backoff is rebuilt from `claims`.
    fn drift_holds(
        &self,
        claims: &[Arc<NodeClaim>],
        now: i64,
    ) -> Vec<pure::drift_backoff::DriftHold> {
        let mut backoff = self.drift_backoff.lock_or_recover();
        let b = backoff.get_or_insert_with(|| {
            let b = drift::backoff_from_claims(claims.iter().map(|c| c.as_ref()), now);
            for h in b.holds(now) {
                tracing::info!(nodepool = %h.nodepool, until = h.until, consecutive = h.consecutive, "drift backoff rebuilt from the nodeclaims: {}", h.message());
            }
            b
        });
        b.holds(now)
    }

    /// Records how a drift replacement ended for the pools of `d`'s nodes: `failed` with why,
    /// or succeeded (`None`). A failure starts or lengthens the pool's hold and says so on the
    /// NodePool (`DisruptionBlocked`); a success ends it. Other reasons: nothing.
    fn drift_outcome(&self, d: &Decision, failed: Option<&str>) {
        if d.reason != pure::Reason::Drifted {
            return;
        }
        let pools: BTreeSet<&str> = d.nodes.iter().map(|n| n.nodepool.as_str()).collect();
        let now = now_unix();
        let mut backoff = self.drift_backoff.lock_or_recover();
        let b = backoff.get_or_insert_with(Default::default);
        for pool in pools {
            match failed {
                Some(why) => {
                    let h = b.failed(pool, now, why);
                    let message = h.message();
                    tracing::warn!(
                        nodepool = pool,
                        until = h.until,
                        consecutive = h.consecutive,
                        "{message}"
                    );
                    if let Some(np) =
                        (self.state.nodepools.state().iter()).find(|p| p.name_any() == pool)
                    {
                        self.recorder.publish(
                            reference(np.as_ref()),
                            "Normal",
                            "DisruptionBlocked",
                            &message,
                        );
                    }
                }
                None => {
                    if b.succeeded(pool) {
                        tracing::info!(
                            nodepool = pool,
                            "drift replacement succeeded; drift backoff ended"
                        );
                    }
                }
            }
        }
    }

    /// A `RepairBlocked` event (Warning) on each node due for budgeted repair that is held
    /// this pass, and its NodeClaim: the 20 % guard, or its pool's budget for `Unhealthy`
    /// ([`pure::repair_held`]). The recorder folds the repeats of each pass into one Event.
    fn announce_repair_held(&self, built: &Built, held: &[pure::RepairHold]) {
        if held.is_empty() {
            return;
        }
        let nodes = self.state.nodes.state();
        for h in held {
            tracing::warn!(node = %h.node, nodeclaim = %h.nodeclaim, nodepool = ?h.nodepool, "{}", h.message);
            if let Some(node) = nodes.iter().find(|n| n.name_any() == h.node) {
                self.recorder.publish(
                    reference(node.as_ref()),
                    "Warning",
                    "RepairBlocked",
                    &h.message,
                );
            }
            if let Some(claim) = built.claim_of_node.get(&h.node) {
                self.recorder.publish(
                    reference(claim.as_ref()),
                    "Warning",
                    "RepairBlocked",
                    &h.message,
                );
            }
        }
    }

    /// Gives each NodeClaim this replica rebooted and whose annotation the watch does not show
    /// yet its record; forgets the records the NodeClaims now hold (or that are gone).
    fn overlay_reboots(&self, health: &mut [pure::repair::NodeHealth]) {
        let mut sent = self.reboots_sent.lock_or_recover();
        sent.retain(|claim, _| {
            health
                .iter()
                .any(|h| h.nodeclaim == *claim && h.reboot.is_none())
        });
        for h in health.iter_mut().filter(|h| h.reboot.is_none()) {
            h.reboot = sent.get(&h.nodeclaim).copied();
        }
    }

    /// `--reboot-for-repair`: carries out [`pure::reboots`]. For each node whose step is a
    /// reboot: the NodeClaim is annotated with the time first (a restart mid-way does not
    /// reboot again), then the cloud asked to reboot the instance; a `Rebooted` event on the
    /// Node and NodeClaim and `adze_repair_reboots_total` say so. A refusal is recorded on the
    /// NodeClaim too ([`pure::repair::REBOOT_FAILED_ANNOTATION`]), so this very pass's
    /// decision replaces the node. Reboots held by the budget are announced as
    /// `RepairBlocked`. A dry run logs and sends nothing. Returns how many were asked for.
    async fn reboot_unhealthy(&self, built: &mut Built) -> usize {
        let plans = pure::reboots(&built.input, &self.options(built));
        let api: Api<NodeClaim> = Api::all(self.client.clone());
        let now = built.input.now;
        let nodes = self.state.nodes.state();
        let mut asked = 0;
        for p in plans {
            let node = nodes.iter().find(|n| n.name_any() == p.node).cloned();
            let claim = built.claim_of_node.get(&p.node).cloned();
            let announce = |type_: &str, reason: &str, message: &str| {
                if let Some(n) = &node {
                    self.recorder
                        .publish(reference(n.as_ref()), type_, reason, message);
                }
                if let Some(c) = &claim {
                    self.recorder
                        .publish(reference(c.as_ref()), type_, reason, message);
                }
            };
            if p.blocked.is_some() {
                tracing::warn!(node = %p.node, nodeclaim = %p.nodeclaim, "{}", p.message);
                announce("Warning", "RepairBlocked", &p.message);
                continue;
            }
            let (pure::repair::RebootStep::Reboot, Some(provider_id)) = (p.step, &p.provider_id)
            else {
                tracing::debug!(node = %p.node, "{}", p.message);
                continue;
            };
            if self.settings.dry_run {
                tracing::info!(dry_run = true, node = %p.node, nodeclaim = %p.nodeclaim, "would reboot for repair: {}", p.message);
                continue;
            }
            let patch = |refused: Option<&str>| Patch::Merge(repair::reboot_patch(now, refused));
            if let Err(e) = api
                .patch(&p.nodeclaim, &PatchParams::default(), &patch(None))
                .await
            {
                tracing::warn!(nodeclaim = %p.nodeclaim, error = %e, "reboot for repair not recorded, so not asked for; the next pass tries again");
                continue;
            }
            asked += 1;
            let pool = p.nodepool.clone().unwrap_or_default();
            let (record, result) = match self.cloud.reboot(provider_id).await {
                Ok(()) => {
                    tracing::info!(node = %p.node, nodeclaim = %p.nodeclaim, provider_id = %provider_id, "rebooted for repair: {}", p.message);
                    announce("Normal", "Rebooted", &p.message);
                    (
                        pure::repair::RebootRecord {
                            at: now,
                            failed: false,
                        },
                        "accepted",
                    )
                }
                Err(e) => {
                    let why = e.to_string();
                    let message = format!(
                        "reboot for repair refused by the cloud ({why}): the node is replaced instead"
                    );
                    tracing::warn!(node = %p.node, nodeclaim = %p.nodeclaim, provider_id = %provider_id, "{message}");
                    announce("Warning", "RebootFailed", &message);
                    if let Err(e) = api
                        .patch(&p.nodeclaim, &PatchParams::default(), &patch(Some(&why)))
                        .await
                    {
                        tracing::warn!(nodeclaim = %p.nodeclaim, error = %e, "refused reboot not recorded; this replica replaces the node anyway");
                    }
                    (
                        pure::repair::RebootRecord {
                            at: now,
                            failed: true,
                        },
                        "refused",
                    )
                }
            };
            crate::metrics::provisioner()
                .repair_reboots
                .get_or_create(&crate::metrics::RebootLabels {
                    nodepool: pool,
                    result: result.into(),
                })
                .inc();
            self.reboots_sent
                .lock_or_recover()
                .insert(p.nodeclaim.clone(), record);
            if let Some(h) = built.input.health.iter_mut().find(|h| h.node == p.node) {
                h.reboot = Some(record);
            }
        }
        asked
    }

    /// Step 1 now, then steps 2 and 3 in the background (the claims stay in `commands`
    /// until they are done, so [`Self::recover`] leaves their marks alone).
    async fn start(self: &Arc<Self>, d: Decision, built: &Built) -> anyhow::Result<()> {
        let claims: Vec<Arc<NodeClaim>> = d
            .nodes
            .iter()
            .filter_map(|n| built.claim_of_node.get(&n.name).cloned())
            .collect();
        if claims.len() != d.nodes.len() {
            tracing::warn!(nodes = ?d.node_names(), "disruption dropped: a node has no nodeclaim");
            return Ok(());
        }
        let saving = format!("{:.4}", d.saving());
        if self.settings.dry_run {
            tracing::info!(dry_run = true, reason = %d.reason, nodes = ?d.node_names(), saving_per_hour = %saving, "would disrupt: {}", d.message);
            for c in &claims {
                self.recorder.publish(
                    reference(c.as_ref()),
                    "Normal",
                    "DisruptionDryRun",
                    &format!("dry run, not acted on: {}", d.message),
                );
            }
            return Ok(());
        }
        let names: Vec<String> = claims
            .iter()
            .map(|c| c.name_any())
            .chain(d.plan.new_claims.iter().map(|c| c.name.clone()))
            .collect();
        self.commands
            .lock_or_recover()
            .extend(names.iter().cloned());
        tracing::info!(reason = %d.reason, nodes = ?d.node_names(), saving_per_hour = %saving, replacements = d.plan.new_claims.len(), commands = self.commands.lock_or_recover().len(), "disrupting: {}", d.message);
        let node_labels = decision_node_labels(&d, &built.input.policies, &claims);
        record_command(&d, crate::metrics::APPROVED);
        record_decision(&d, &node_labels);
        for c in &claims {
            if let Err(e) = self.mark(c, &d).await {
                // The marks already made are undone by the next pass's recovery.
                self.finish(&names);
                return Err(e);
            }
        }
        let me = Arc::clone(self);
        tokio::spawn(async move {
            // Released on drop, so a panic while carrying out cannot leave these nodes
            // "being disrupted" (and out of every later decision) for the process's life.
            let _release = Release {
                disruption: &me,
                names: &names,
            };
            if let Err(e) = me.carry_out(&d, &claims, &node_labels).await {
                tracing::warn!(reason = %d.reason, nodes = ?d.node_names(), error = %format!("{e:#}"), "disruption failed; the next pass undoes its marks");
            }
        });
        Ok(())
    }

    fn finish(&self, names: &[String]) {
        let mut running = self.commands.lock_or_recover();
        for n in names {
            running.remove(n);
        }
    }

    /// Steps 2 and 3 of a marked decision; `labels` are its nodes' ([`decision_node_labels`]).
    /// Each node's pods are counted once its NodeClaim is deleted: an aborted replacement
    /// disrupts none.
    async fn carry_out(
        &self,
        d: &Decision,
        claims: &[Arc<NodeClaim>],
        labels: &[crate::metrics::PodsDisruptedLabels],
    ) -> anyhow::Result<()> {
        if d.action() == Action::Replace && !self.replace(d, claims).await? {
            return Ok(());
        }
        let claim_api: Api<NodeClaim> = Api::all(self.client.clone());
        for ((c, node), labels) in claims.iter().zip(&d.nodes).zip(labels) {
            match claim_api
                .delete(&c.name_any(), &DeleteParams::default())
                .await
            {
                Ok(_) => record_pods(labels, node.pods.len()),
                Err(kube::Error::Api(e)) if e.code == 404 => {}
                Err(e) => return Err(e.into()),
            }
            tracing::info!(nodeclaim = %c.name_any(), reason = %d.reason, "nodeclaim deleted; termination drains it");
        }
        Ok(())
    }

    /// Writes `status.lastPodEventTime` where the claim's record is behind, so that
    /// `consolidateAfter` counts from the real last pod event after a restart too. A failed
    /// write is retried on the next pass.
    async fn record_activity(&self, writes: &[(String, i64)]) {
        let api = Api::<NodeClaim>::all(self.client.clone());
        for (name, at) in writes {
            let Ok(t) = k8s_openapi::jiff::Timestamp::from_second(*at) else {
                continue;
            };
            let patch = json!({"status": {"lastPodEventTime": t.to_string()}});
            if let Err(e) = api
                .patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
            {
                tracing::debug!(nodeclaim = %name, error = %e, "recording the last pod event failed");
            }
        }
    }

    /// Keeps each claim's `Drifted` and `Consolidatable` conditions as judged this pass and
    /// re-stamps drift hashes of another version. A failed write is retried next pass.
    async fn record_status(&self, statuses: &[ClaimStatus]) {
        let api = Api::<NodeClaim>::all(self.client.clone());
        for s in statuses {
            let name = s.claim.name_any();
            if !s.drift.restamp.is_empty() {
                tracing::info!(nodeclaim = %name, annotations = ?s.drift.restamp, "drift hash of another version: re-stamped, not drifted");
                let patch = json!({"metadata": {"annotations": s.drift.restamp}});
                if let Err(e) = api
                    .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                {
                    tracing::debug!(nodeclaim = %name, error = %e, "re-stamping drift hashes failed");
                }
            }
            let current = claim_conditions(&s.claim);
            let Some(conds) = status_conditions(current, s) else {
                continue;
            };
            let was = conditions::is_true(current, cond::DRIFTED);
            if s.drift.drifted() && !was {
                tracing::info!(nodeclaim = %name, reason = %s.drift.reasons[0], "drifted: {}", s.drift.message);
                self.recorder.publish(
                    reference(s.claim.as_ref()),
                    "Normal",
                    "Drifted",
                    &s.drift.message,
                );
            } else if !s.drift.drifted() && was {
                tracing::info!(nodeclaim = %name, "no longer drifted");
            }
            let patch = json!({"status": {"conditions": conds}});
            if let Err(e) = api
                .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
            {
                tracing::debug!(nodeclaim = %name, error = %e, "writing Drifted/Consolidatable failed");
            }
        }
    }

    /// Forceful expiry: every NodeClaim past its own `expireAfter` is marked `Disrupting`
    /// (reason `Expired`) and deleted now, whatever budgets, do-not-disrupt and pending pods
    /// say. Its pods are displaced, so the provisioner launches what they need while
    /// termination drains it (PodDisruptionBudgets honoured until `terminationGracePeriod`).
    /// Returns how many claims it deleted.
    async fn expire(&self, built: &Built) -> anyhow::Result<usize> {
        let api: Api<NodeClaim> = Api::all(self.client.clone());
        let mut deleted = 0;
        for e in input::expiring(built) {
            let Some(claim) = built.claim_of_node.get(&e.node) else {
                continue;
            };
            let message = e.message();
            let name = claim.name_any();
            if self.settings.dry_run {
                tracing::info!(dry_run = true, nodeclaim = %name, node = %e.node, "would expire: {message}");
                self.recorder.publish(
                    reference(claim.as_ref()),
                    "Normal",
                    "DisruptionDryRun",
                    &format!("dry run, not acted on: {message}"),
                );
                continue;
            }
            let conds = set_condition(
                claim_conditions(claim),
                cond::DISRUPTING,
                true,
                pure::Reason::Expired.as_str(),
                &message,
            );
            api.patch_status(
                &name,
                &PatchParams::default(),
                &Patch::Merge(json!({"status": {"conditions": conds}})),
            )
            .await?;
            let labels = node_labels(
                pure::Reason::Expired.as_str(),
                &nodepool_of(claim),
                &built.input.policies,
                claim,
                false,
            );
            match api.delete(&name, &DeleteParams::default()).await {
                Ok(_) => {
                    record_forceful(&labels);
                    record_pods(&labels, pods_on(built, &e.node));
                }
                Err(kube::Error::Api(e)) if e.code == 404 => {}
                Err(e) => return Err(e.into()),
            }
            tracing::info!(nodeclaim = %name, node = %e.node, age_s = e.age, expire_after_s = e.expire_after.as_secs(), "nodeclaim expired and deleted; termination drains it");
            if let Some(node) = self.node_of(claim) {
                self.recorder
                    .publish(reference(node.as_ref()), "Normal", "Expired", &message);
            }
            self.recorder
                .publish(reference(claim.as_ref()), "Normal", "Expired", &message);
            deleted += 1;
        }
        Ok(deleted)
    }

    /// Writes each Node's `EC2StatusImpaired` condition where the status checks just read call
    /// for a change ([`pure::repair::NodeHealth::publish_status_condition`]): a strategic-merge
    /// patch of the Node's status that touches that condition alone, so the kubelet's and
    /// anyone else's conditions stay as they are. A failed write is logged and tried again on
    /// the next pass; the decision goes by the condition as folded in either way.
    async fn publish_status_conditions(&self, health: &mut [pure::repair::NodeHealth], now: i64) {
        let nodes: Api<Node> = Api::all(self.client.clone());
        for h in health.iter_mut() {
            let Some(c) = h.publish_status_condition(now) else {
                continue;
            };
            let patch = repair::condition_patch(&c);
            match nodes
                .patch_status(&h.node, &PatchParams::default(), &Patch::Strategic(patch))
                .await
            {
                Ok(_) => {
                    tracing::info!(node = %h.node, status = %c.status, reason = %c.reason, since = c.since, "{}: {}", pure::repair::EC2_STATUS_CONDITION, c.message)
                }
                Err(kube::Error::Api(e)) if e.code == 404 => {}
                Err(e) => {
                    tracing::warn!(node = %h.node, error = %e, "could not write the node's {} condition; tried again next pass", pure::repair::EC2_STATUS_CONDITION)
                }
            }
        }
    }

    /// What node repair reads: each NodeClaim's Node conditions, with the instances' status
    /// checks (from the cloud at most once a minute) folded in and written on the Nodes as
    /// `EC2StatusImpaired` where they changed.
    async fn read_health(&self, now: i64) -> Vec<pure::repair::NodeHealth> {
        let mut health = repair::health(&self.state.objects());
        self.status_checks
            .lock()
            .await
            .attach(self.cloud.as_ref(), &mut health, now, Instant::now())
            .await;
        self.publish_status_conditions(&mut health, now).await;
        health
    }

    /// Legacy (forceful) node repair, `--legacy-node-repair`: every NodeClaim whose Node has reported an unhealthy condition past that
    /// condition's toleration, or whose instance fails a cloud status check (EC2's instance or
    /// system reachability) past 2 minutes ([`pure::repair`]; the checks are read from the
    /// cloud at most once a minute), is marked `Disrupting` (reason `UnhealthyForceful`,
    /// which termination reads as no grace period: the node is presumed unable to drain)
    /// and deleted now, whatever budgets, do-not-disrupt and PodDisruptionBudgets say;
    /// unless more than 20 % of its pool's nodes are unhealthy, when a `RepairBlocked`
    /// event says so instead. Returns how many claims it deleted.
    async fn repair(&self, built: &Built) -> anyhow::Result<usize> {
        let api: Api<NodeClaim> = Api::all(self.client.clone());
        let health = self.read_health(built.input.now).await;
        let outcomes =
            pure::repair::decide(&health, &pure::repair::default_policies(), built.input.now);
        let mut deleted = 0;
        for o in outcomes {
            let message = o.message();
            let Some(claim) = built.claim_of_node.get(&o.node) else {
                continue;
            };
            let node = self.node_of(claim);
            let span = tracing::info_span!("repair", nodeclaim = %o.nodeclaim, node = %o.node, nodepool = ?o.nodepool, condition = %o.finding.condition, status = %o.finding.status);
            let _g = span.enter();
            match o.verdict {
                pure::repair::Verdict::Tolerated => {
                    tracing::debug!("{message}");
                    continue;
                }
                pure::repair::Verdict::Deleting => continue,
                pure::repair::Verdict::Guarded { .. } | pure::repair::Verdict::DoNotRepair => {
                    tracing::warn!("{message}");
                    if let Some(node) = &node {
                        self.recorder.publish(
                            reference(node.as_ref()),
                            "Warning",
                            "RepairBlocked",
                            &message,
                        );
                    }
                    self.recorder.publish(
                        reference(claim.as_ref()),
                        "Warning",
                        "RepairBlocked",
                        &message,
                    );
                    continue;
                }
                pure::repair::Verdict::Repair => {}
            }
            let name = claim.name_any();
            if self.settings.dry_run {
                tracing::info!(dry_run = true, "would repair: {message}");
                self.recorder.publish(
                    reference(claim.as_ref()),
                    "Normal",
                    "DisruptionDryRun",
                    &format!("dry run, not acted on: {message}"),
                );
                continue;
            }
            let conds = set_condition(
                claim_conditions(claim),
                cond::DISRUPTING,
                true,
                pure::repair::REASON_FORCEFUL,
                &message,
            );
            api.patch_status(
                &name,
                &PatchParams::default(),
                &Patch::Merge(json!({"status": {"conditions": conds}})),
            )
            .await?;
            let labels = node_labels(
                pure::repair::REASON,
                &nodepool_of(claim),
                &built.input.policies,
                claim,
                true,
            );
            match api.delete(&name, &DeleteParams::default()).await {
                Ok(_) => record_pods(&labels, pods_on(built, &o.node)),
                Err(kube::Error::Api(e)) if e.code == 404 => {}
                Err(e) => return Err(e.into()),
            }
            tracing::warn!(
                "unhealthy node repaired: nodeclaim deleted; termination drains it without grace: {message}"
            );
            if let Some(node) = &node {
                self.recorder.publish(
                    reference(node.as_ref()),
                    "Warning",
                    pure::repair::REASON,
                    &message,
                );
            }
            self.recorder.publish(
                reference(claim.as_ref()),
                "Warning",
                pure::repair::REASON,
                &message,
            );
            record_forceful(&labels);
            deleted += 1;
        }
        Ok(deleted)
    }

    /// Step 1 for one claim.
    async fn mark(&self, claim: &NodeClaim, d: &Decision) -> anyhow::Result<()> {
        let name = claim.name_any();
        let conds = set_condition(
            claim_conditions(claim),
            cond::DISRUPTING,
            true,
            d.reason.as_str(),
            &d.message,
        );
        Api::<NodeClaim>::all(self.client.clone())
            .patch_status(
                &name,
                &PatchParams::default(),
                &Patch::Merge(json!({"status": {"conditions": conds}})),
            )
            .await?;
        if let Some(node) = self.node_of(claim) {
            self.patch_node(&node.name_any(), writes::add_disrupted_taint())
                .await?;
            self.recorder
                .publish(reference(node.as_ref()), "Normal", "Disrupting", &d.message);
        }
        self.recorder
            .publish(reference(claim), "Normal", "Disrupting", &d.message);
        Ok(())
    }

    /// Undoes [`Self::mark`]: the claim stays and its node takes pods again.
    /// `reason` is the condition's: `Aborted`, or [`DRIFT_REPLACEMENT_FAILED`] (read back by
    /// [`drift::drift_failures`] after a restart).
    async fn unmark(&self, claim: &NodeClaim, reason: &str, why: &str) -> anyhow::Result<()> {
        let conds = set_condition(
            claim_conditions(claim),
            cond::DISRUPTING,
            false,
            reason,
            why,
        );
        Api::<NodeClaim>::all(self.client.clone())
            .patch_status(
                &claim.name_any(),
                &PatchParams::default(),
                &Patch::Merge(json!({"status": {"conditions": conds}})),
            )
            .await?;
        if let Some(node) = self.node_of(claim) {
            self.patch_node(&node.name_any(), writes::remove_disrupted_taint())
                .await?;
        }
        self.recorder.publish(
            reference(claim),
            "Warning",
            "DisruptionAborted",
            &format!("disruption aborted, node kept: {why}"),
        );
        Ok(())
    }

    /// Writes `patch` (a strategic merge patch of what disruption owns: its taint) to the
    /// Node, whatever else others wrote to it meanwhile; a Node already gone is no error.
    async fn patch_node(&self, name: &str, patch: serde_json::Value) -> anyhow::Result<()> {
        let api: Api<Node> = Api::all(self.client.clone());
        match api
            .patch(name, &PatchParams::default(), &Patch::Strategic(patch))
            .await
        {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    fn node_of(&self, claim: &NodeClaim) -> Option<Arc<Node>> {
        let pid = claim.status.as_ref()?.provider_id.as_deref()?;
        self.state
            .nodes
            .state()
            .into_iter()
            .find(|n| n.spec.as_ref().and_then(|s| s.provider_id.as_deref()) == Some(pid))
    }

    /// Step 2. True once every replacement is Initialized; false (old claims un-marked,
    /// replacements deleted) when they do not come up.
    async fn replace(&self, d: &Decision, old: &[Arc<NodeClaim>]) -> anyhow::Result<bool> {
        let objects = self.state.objects();
        let uids: BTreeMap<String, String> = objects
            .pods
            .iter()
            .map(|p| {
                (
                    format!(
                        "{}/{}",
                        p.metadata.namespace.as_deref().unwrap_or("default"),
                        p.metadata.name.as_deref().unwrap_or_default()
                    ),
                    p.metadata.uid.clone().unwrap_or_default(),
                )
            })
            .collect();
        let api: Api<NodeClaim> = Api::all(self.client.clone());
        let mut names = Vec::new();
        let started = Instant::now();
        for nc in &d.plan.new_claims {
            let Some(pool) = objects
                .nodepools
                .iter()
                .find(|p| p.metadata.name.as_deref() == Some(&nc.nodepool))
            else {
                return self
                    .abort(
                        d,
                        old,
                        &names,
                        &format!("NodePool {} is gone", nc.nodepool),
                        false,
                    )
                    .await;
            };
            let created = api
                .create(
                    &PostParams::default(),
                    &claim_object(
                        nc,
                        pool,
                        drift::class_named(
                            &pool.spec.template.spec.node_class_ref,
                            objects.nodeclasses.as_deref(),
                        ),
                        &uids,
                        objects.karpenter_labels,
                    ),
                )
                .await;
            if let Err(e) = created {
                let why = format!("replacement {} could not be created: {e}", nc.name);
                return self.abort(d, old, &names, &why, true).await;
            }
            tracing::info!(
                nodeclaim = %nc.name, instance_type = %nc.instance_type, capacity_type = %nc.capacity_type,
                price_per_hour = nc.price_per_hour, pods = nc.pods.len(), replaces = ?d.node_names(),
                "replacement nodeclaim created"
            );
            names.push(nc.name.clone());
        }
        loop {
            tokio::time::sleep(Duration::from_millis(500)).await;
            let claims = self.state.claims.state();
            let mut ready = 0;
            for n in &names {
                match claims
                    .iter()
                    .find(|c| c.metadata.name.as_deref() == Some(n))
                {
                    Some(c) if c.metadata.deletion_timestamp.is_some() => {
                        return self
                            .abort(
                                d,
                                old,
                                &names,
                                &format!("replacement {n} failed to launch"),
                                true,
                            )
                            .await;
                    }
                    Some(c) if is_initialized(c) => ready += 1,
                    // Not in the watch yet, or launching.
                    _ => {}
                }
            }
            if ready == names.len() {
                tracing::info!(replacements = ?names, seconds = format!("{:.1}", started.elapsed().as_secs_f64()), "replacements initialized; draining the old nodes");
                self.drift_outcome(d, None);
                return Ok(true);
            }
            if started.elapsed() > self.settings.replacement_timeout {
                return self
                    .abort(
                        d,
                        old,
                        &names,
                        &format!(
                            "replacements not initialized within {:?}",
                            self.settings.replacement_timeout
                        ),
                        true,
                    )
                    .await;
            }
        }
    }

    /// Gives `d` up: its replacements not initialized are deleted and the old nodes kept.
    /// `replacement_failed`: a replacement could not be created, launched or initialized in
    /// time (not a NodePool gone): a drift's pool then backs off ([`Self::drift_outcome`]).
    async fn abort(
        &self,
        d: &Decision,
        old: &[Arc<NodeClaim>],
        replacements: &[String],
        why: &str,
        replacement_failed: bool,
    ) -> anyhow::Result<bool> {
        tracing::warn!(nodeclaims = ?old.iter().map(|c| c.name_any()).collect::<Vec<_>>(), "disruption aborted, nodes kept: {why}");
        let drift_failed = replacement_failed && d.reason == pure::Reason::Drifted;
        if drift_failed {
            self.drift_outcome(d, Some(why));
        }
        let reason = if drift_failed {
            DRIFT_REPLACEMENT_FAILED
        } else {
            "Aborted"
        };
        let api: Api<NodeClaim> = Api::all(self.client.clone());
        for n in replacements {
            let initialized = self
                .state
                .claims
                .state()
                .iter()
                .any(|c| c.metadata.name.as_deref() == Some(n) && is_initialized(c));
            if !initialized {
                let _ = api.delete(n, &DeleteParams::default()).await;
            }
        }
        for c in old {
            // The watched copy may be older than the Disrupting mark; read the claim again.
            if let Some(fresh) = api.get_opt(&c.name_any()).await? {
                self.unmark(&fresh, reason, why).await?;
            }
        }
        Ok(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use adze_scheduling::disruption::{Blocker, Reason};

    fn series(line: &str) -> u64 {
        let text = crate::metrics::render();
        text.lines()
            .find_map(|l| l.strip_prefix(line)?.strip_prefix(' '))
            .unwrap_or_else(|| panic!("{line} in {text}"))
            .parse()
            .unwrap()
    }

    /// The series' value, 0 while it does not exist yet.
    fn series_or_zero(line: &str) -> u64 {
        let text = crate::metrics::render();
        text.lines()
            .find_map(|l| l.strip_prefix(line)?.strip_prefix(' '))
            .map_or(0, |v| v.parse().unwrap())
    }

    #[test]
    fn a_held_pass_runs_as_soon_as_its_hold_lifts_not_at_the_end_of_its_backoff() {
        let h = |commands, launching, pending| Hold {
            commands,
            launching,
            pending,
        };
        let clear = h(0, 0, 0);
        // A command running, replacements launching, moved pods pending: each lifts.
        assert!(hold_lifted(h(1, 0, 0), clear, 0));
        assert!(hold_lifted(h(0, 2, 0), clear, 0));
        assert!(hold_lifted(h(0, 0, 5), clear, 0));
        assert!(
            !hold_lifted(h(1, 2, 5), h(0, 0, 1), 0),
            "a pod still pending"
        );
        assert!(
            !hold_lifted(h(1, 0, 0), h(0, 1, 0), 0),
            "a claim still launching"
        );
        // Pods no NodePool can place do not hold disruption, so they do not keep it waiting.
        assert!(hold_lifted(h(0, 0, 3), h(0, 0, 1), 1));
        // The cheap reading looked clear at the pass already: the pass waited for something
        // else (or dropped its decisions at validation), so the backoff stands.
        assert!(!hold_lifted(clear, clear, 0));
        assert!(!hold_lifted(h(0, 0, 1), h(0, 0, 0), 1));
    }

    #[test]
    fn the_next_pass_comes_at_once_after_a_wave_and_backs_off_while_the_cluster_settles() {
        let poll = Duration::from_secs(10);
        let s = Duration::from_secs;
        // Nothing to do: the poll period, whatever came before.
        assert_eq!(next_pass_in(Pass::Idle, s(1), poll), poll);
        // A wave started: look again within a second, however long the last wait was.
        assert_eq!(next_pass_in(Pass::Acted, poll, poll), RECHECK);
        // Its pods are still pending: 1 s, 2 s, 4 s, 8 s, then the poll period, not beyond.
        let mut wait = RECHECK;
        let mut seen = Vec::new();
        for _ in 0..6 {
            wait = next_pass_in(Pass::Waiting, wait, poll);
            seen.push(wait.as_secs());
        }
        assert_eq!(seen, [2, 4, 8, 10, 10, 10]);
        // Waiting after an idle pass starts from the poll period and stays there.
        assert_eq!(next_pass_in(Pass::Waiting, poll, poll), poll);
        // A poll period shorter than the recheck is never exceeded (e2e runs use 2 s).
        let short = Duration::from_millis(500);
        assert_eq!(next_pass_in(Pass::Acted, short, short), short);
        assert_eq!(next_pass_in(Pass::Waiting, short, short), short);
        // A huge last wait does not overflow.
        assert_eq!(next_pass_in(Pass::Waiting, Duration::MAX, poll), poll);
    }

    /// The decisions one pass would take on examples/disruption.yaml (emptiness deletes
    /// `idle`, consolidation deletes `big` and moves its pod to `busy`), its NodePool given a
    /// `terminationGracePeriod` (so the series are this test's own: `eventual`), with the
    /// built input they were taken on.
    fn example_decisions() -> (Vec<Decision>, Built) {
        let yaml = include_str!("../../../examples/disruption.yaml").replacen(
            "      expireAfter: 720h\n",
            "      expireAfter: 720h\n      terminationGracePeriod: 2h\n",
            1,
        );
        assert!(yaml.contains("terminationGracePeriod: 2h"));
        let scenario = crate::simulate::scenario::Scenario::parse(&yaml).unwrap();
        let now = "2026-06-01T12:00:00Z".parse().unwrap();
        let options = crate::simulate::disruption::DisruptionOptions::at(now);
        let prepared = crate::simulate::disruption::prepare(&scenario, &options);
        let decisions = decide_all(&prepared.built.input, &prepared.options, true, 100);
        (decisions, prepared.built)
    }

    #[test]
    fn a_real_decision_is_counted_commanded_then_approved_with_its_policy_mode_and_pods() {
        let (decisions, built) = example_decisions();
        let reasons: Vec<_> = decisions.iter().map(|d| d.reason).collect();
        assert_eq!(
            reasons,
            [Reason::Empty, Reason::Underutilized],
            "{decisions:?}"
        );
        let decided = |reason: &str| {
            series_or_zero(&format!(
                "adze_disruption_decisions_total{{decision=\"delete\",reason=\"{reason}\",consolidation_policy=\"WhenEmptyOrUnderutilized\",termination_mode=\"eventual\"}}"
            ))
        };
        let pods = |reason: &str| {
            series_or_zero(&format!(
                "adze_pods_disrupted_total{{reason=\"{reason}\",nodepool=\"default\",consolidation_policy=\"WhenEmptyOrUnderutilized\",termination_mode=\"eventual\"}}"
            ))
        };
        let command = |stage: &str| {
            series(&format!(
                "adze_disruption_commands_total{{stage=\"{stage}\",decision=\"delete\",reason=\"Underutilized\"}}"
            ))
        };
        let before = (
            decided("Empty"),
            decided("Underutilized"),
            pods("Empty"),
            pods("Underutilized"),
            command("commanded"),
            command("approved"),
        );
        // As a pass does: every decision is commanded; the consolidation is dropped at
        // validation, the emptiness approved, started and carried out.
        for d in &decisions {
            record_command(d, crate::metrics::COMMANDED);
        }
        let d = &decisions[0];
        let claims: Vec<_> = d
            .nodes
            .iter()
            .map(|n| built.claim_of_node[&n.name].clone())
            .collect();
        let labels = decision_node_labels(d, &built.input.policies, &claims);
        record_command(d, crate::metrics::APPROVED);
        record_decision(d, &labels);
        for (n, l) in d.nodes.iter().zip(&labels) {
            record_pods(l, n.pods.len());
        }
        assert_eq!(
            (
                decided("Empty"),
                decided("Underutilized"),
                pods("Empty"),
                pods("Underutilized"),
                command("commanded"),
                command("approved"),
            ),
            (
                before.0 + 1,
                before.1,
                before.2,
                before.3,
                before.4 + 1,
                before.5
            ),
            "idle (no workload pods) deleted; the consolidation of big commanded, not approved"
        );
        // Carried out the consolidation too: big's one pod is counted, once.
        let d = &decisions[1];
        assert_eq!(d.nodes.len(), 1);
        assert_eq!(d.nodes[0].pods.len(), 1, "{:?}", d.nodes);
        let claims = vec![built.claim_of_node[&d.nodes[0].name].clone()];
        let labels = decision_node_labels(d, &built.input.policies, &claims);
        record_command(d, crate::metrics::APPROVED);
        record_decision(d, &labels);
        record_pods(&labels[0], d.nodes[0].pods.len());
        assert_eq!(decided("Underutilized"), before.1 + 1);
        assert_eq!(pods("Underutilized"), before.3 + 1);
        assert_eq!(command("approved"), before.5 + 1);
        assert_eq!(
            pods_on(&built, &d.nodes[0].name),
            1,
            "the same pod, by the snapshot"
        );
    }

    #[test]
    fn a_decision_across_pools_of_different_policies_is_labelled_mixed() {
        let (decisions, built) = example_decisions();
        let d = &decisions[1];
        let claim = built.claim_of_node[&d.nodes[0].name].clone();
        let mut policies = built.input.policies.clone();
        let mut other = policies[0].clone();
        other.nodepool = "other".into();
        other.consolidation = pure::ConsolidationPolicy::Balanced;
        policies.push(other);
        let mut two = d.clone();
        let mut second = two.nodes[0].clone();
        second.nodepool = "other".into();
        two.nodes.push(second);
        let labels = decision_node_labels(&two, &policies, &[claim.clone(), claim]);
        assert_eq!(labels[1].consolidation_policy, "Balanced");
        let line = r#"adze_disruption_decisions_total{decision="delete",reason="Underutilized",consolidation_policy="mixed",termination_mode="eventual"}"#;
        let before = series_or_zero(line);
        record_decision(&two, &labels);
        assert_eq!(series(line), before + 1);
    }

    #[test]
    fn blocked_nodes_are_gauged_by_blocker_and_go_back_to_zero() {
        let blocked = |node: &str, blocker| pure::BlockedNode {
            node: node.into(),
            blocker,
            methods: vec![Reason::Empty],
        };
        record_blocked(
            &[
                blocked("a", Blocker::DoNotDisruptNode),
                blocked("b", Blocker::DoNotDisruptPod("ns/p".into())),
                blocked("c", Blocker::DoNotDisruptPod("ns/q".into())),
                blocked("d", Blocker::ZonalShift("use1-az1".into())),
            ],
            &[pure::drift_backoff::HeldDrift {
                hold: pure::drift_backoff::DriftHold {
                    nodepool: "p".into(),
                    until: 100,
                    consecutive: 1,
                    why: "x".into(),
                },
                nodes: vec!["e".into(), "f".into()],
            }],
        );
        let g = |r: &str| series(&format!("adze_disruption_blocked_nodes{{reason=\"{r}\"}}"));
        assert_eq!(
            (
                g("DoNotDisruptNode"),
                g("DoNotDisruptPod"),
                g("PdbForbids"),
                g("ZonalShift"),
                g("DriftBackoff")
            ),
            (1, 2, 0, 1, 2)
        );
        record_blocked(&[], &[]);
        assert_eq!(
            (
                g("DoNotDisruptNode"),
                g("DoNotDisruptPod"),
                g("ZonalShift"),
                g("DriftBackoff")
            ),
            (0, 0, 0, 0)
        );
    }

    /// A NodeClaim of `pool` whose `Disrupting` condition is False for `reason` since `at`.
    fn unmarked(name: &str, pool: &str, reason: &str, at: &str, deleting: bool) -> NodeClaim {
        let mut meta = json!({"name": name, "labels": {"adze.sh/nodepool": pool}});
        if deleting {
            meta["deletionTimestamp"] = json!("2026-06-01T12:00:00Z");
        }
        serde_json::from_value(json!({
            "apiVersion": "adze.sh/v1", "kind": "NodeClaim", "metadata": meta,
            "spec": {"nodeClassRef": {"group": "aws.adze.sh", "kind": "EC2NodeClass", "name": "d"}},
            "status": {"conditions": [{
                "type": "Disrupting", "status": "False", "reason": reason,
                "message": "replacement r failed to launch", "lastTransitionTime": at,
            }]},
        }))
        .unwrap()
    }

    #[test]
    fn a_restart_rebuilds_the_drift_backoff_from_the_kept_nodeclaims() {
        let claims = [
            unmarked(
                "a1",
                "a",
                DRIFT_REPLACEMENT_FAILED,
                "2026-06-01T12:00:00Z",
                false,
            ),
            unmarked(
                "a2",
                "a",
                DRIFT_REPLACEMENT_FAILED,
                "2026-06-01T12:05:00Z",
                false,
            ),
            // A consolidation's abort, a claim being deleted: no drift failure to count.
            unmarked("b1", "b", "Aborted", "2026-06-01T12:05:00Z", false),
            unmarked(
                "c1",
                "c",
                DRIFT_REPLACEMENT_FAILED,
                "2026-06-01T12:05:00Z",
                true,
            ),
        ];
        let failures = drift::drift_failures(claims.iter());
        let pools: Vec<&str> = failures.iter().map(|(p, _, _)| p.as_str()).collect();
        assert_eq!(pools, ["a", "a"]);
        assert_eq!(failures[0].2, "replacement r failed to launch");
        let five_past: i64 = "2026-06-01T12:05:00Z"
            .parse::<k8s_openapi::jiff::Timestamp>()
            .unwrap()
            .as_second();
        let b = pure::drift_backoff::DriftBackoff::rebuild(&failures, five_past + 30);
        let holds = b.holds(five_past + 30);
        assert_eq!(holds.len(), 1);
        // Two failures in a row: held two minutes from the last one.
        assert_eq!(
            (
                holds[0].nodepool.as_str(),
                holds[0].consecutive,
                holds[0].until
            ),
            ("a", 2, five_past + 120)
        );
    }

    use adze_scheduling::disruption::drift::DriftReason;
    use serde_json::json;

    fn status(reasons: Vec<DriftReason>, consolidatable: Option<&str>) -> ClaimStatus {
        let claim: NodeClaim = serde_json::from_value(json!({
            "apiVersion": "adze.sh/v1", "kind": "NodeClaim", "metadata": {"name": "c"},
            "spec": {"nodeClassRef": {"group": "aws.adze.sh", "kind": "EC2NodeClass", "name": "d"}},
        }))
        .unwrap();
        ClaimStatus {
            claim: Arc::new(claim),
            drift: drift::ClaimDrift {
                message: reasons
                    .iter()
                    .map(|r| format!("{r}: why"))
                    .collect::<Vec<_>>()
                    .join("; "),
                reasons,
                restamp: BTreeMap::new(),
            },
            consolidatable: consolidatable.map(String::from),
        }
    }

    #[test]
    fn drifted_and_consolidatable_are_set_true_and_removed_when_they_stop_holding() {
        let initialized = set_condition(&[], cond::INITIALIZED, true, "Initialized", "ok");
        let both = status(
            vec![DriftReason::Requirements, DriftReason::NodePool],
            Some("quiet"),
        );
        let set = status_conditions(&initialized, &both).expect("a change");
        let drifted = conditions::find(&set, cond::DRIFTED).unwrap();
        assert_eq!(
            (drifted.status.as_str(), drifted.reason.as_str()),
            ("True", "RequirementsDrifted")
        );
        assert!(drifted.message.contains("NodePoolDrifted"));
        assert!(conditions::is_true(&set, cond::CONSOLIDATABLE));
        assert!(conditions::is_true(&set, cond::INITIALIZED));
        // Judged the same again: nothing to write.
        assert_eq!(status_conditions(&set, &both), None);
        // No longer drifted, a pod just arrived: both removed, the rest kept.
        let cleared = status_conditions(&set, &status(vec![], None)).expect("a change");
        assert!(conditions::find(&cleared, cond::DRIFTED).is_none());
        assert!(conditions::find(&cleared, cond::CONSOLIDATABLE).is_none());
        assert!(conditions::is_true(&cleared, cond::INITIALIZED));
        assert_eq!(status_conditions(&cleared, &status(vec![], None)), None);
    }
}
