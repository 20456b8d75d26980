//! Node repair, Karpenter's meaning (v1.1+, behind its `NodeRepair` feature gate): a node
//! that has reported an unhealthy condition for longer than that condition's toleration is
//! replaced. Two modes ([`RepairMode`]): by default (Karpenter v1.15) it is a voluntary
//! disruption, the first method of the decision, held by the NodePool's disruption budgets
//! for `Unhealthy` ([`super::repair_method`]); in its legacy mode (Karpenter before v1.15)
//! it is forceful like expiry, budgets not consulted. In both, `do-not-disrupt` and
//! PodDisruptionBudgets are not consulted (the node is presumed unable to serve or drain its
//! pods) and the controller gives the drain no grace period. One guard holds it back: when more than 20 % of a NodePool's nodes (rounded up,
//! as a PodDisruptionBudget's percentage) report an unhealthy condition at all, however
//! briefly, none of that pool is repaired, since a fault that wide is more likely the
//! cluster's (network, control plane) than the nodes', and replacing them would not help.
//!
//! Besides the Node's own conditions, the cloud's view of the instance counts: EC2's status
//! checks ([`StatusCheck`], from DescribeInstanceStatus) are folded into one Node condition,
//! [`EC2_STATUS_CONDITION`], as Karpenter's AWS provider publishes it
//! ([`NodeHealth::publish_status_condition`]: `True` while an instance or system reachability
//! check fails, its clock EC2's earliest `impairedSince`; `False` once a reading reports none
//! failing; untouched when the cloud could not be read). The controller writes that condition
//! on the Node, and the decision reads it through the same policy list as every other
//! condition, so a Node marked `EC2StatusImpaired=True` by anyone is repaired the same way:
//! after 2 minutes, under the same guard. Checks still initializing or without data, and the
//! attached-EBS check (a failing volume may be a pod's, not the node's), do not count.
//! Pure: node conditions, status checks, policies and `now` in, verdicts out.

use std::collections::BTreeMap;
use std::time::Duration;

use super::UnixSeconds;

/// The reason repair gives in events, conditions and metrics (Karpenter's `Unhealthy`).
pub const REASON: &str = "Unhealthy";

/// The `Disrupting` condition's reason on a NodeClaim deleted by legacy (forceful) repair,
/// so a reader tells it from a budgeted one; events and metrics still say [`REASON`].
pub const REASON_FORCEFUL: &str = "UnhealthyForceful";

/// How node repair is carried out once enabled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RepairMode {
    /// Karpenter v1.15's: a voluntary disruption, first in the decision's order (repair,
    /// drift, emptiness, consolidation), within the pool's budgets for `Unhealthy`.
    Budgeted,
    /// `--legacy-node-repair`: forceful, outside budgets, before any decision is made.
    Legacy,
}

/// The share of a pool's nodes that may be unhealthy for repair to go on in that pool.
pub const MAX_UNHEALTHY_PERCENT: u64 = 20;

/// The condition a failing EC2 status check stands for (Karpenter's AWS provider's name for
/// it): `True` while an instance or system check fails, since the earliest `impairedSince`.
pub const EC2_STATUS_CONDITION: &str = "EC2StatusImpaired";

/// [`EC2_STATUS_CONDITION`]'s reason while `True` (Karpenter's).
pub const EC2_REASON_FAILED: &str = "ReachabilityFailed";

/// [`EC2_STATUS_CONDITION`]'s reason while `False` (Karpenter's): a reading reported no
/// instance or system reachability check failing, which is not a claim that they passed.
pub const EC2_REASON_NONE: &str = "NoImpairmentReported";

/// How long a failing EC2 status check is tolerated (Karpenter's policy for
/// [`EC2_STATUS_CONDITION`]).
pub const EC2_STATUS_TOLERATION: Duration = Duration::from_secs(2 * 60);

/// One condition a node is repaired for: `condition` with `status` for `toleration`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepairPolicy {
    pub condition: String,
    /// "False", "Unknown" or "True", as the Node reports it.
    pub status: String,
    pub toleration: Duration,
}

impl RepairPolicy {
    fn new(condition: &str, status: &str, minutes: u64) -> RepairPolicy {
        RepairPolicy {
            condition: condition.into(),
            status: status.into(),
            toleration: Duration::from_secs(minutes * 60),
        }
    }
}

/// The policies Karpenter's AWS provider ships: the kubelet's `Ready` False or Unknown for
/// 30 minutes, the EKS node monitoring agent's conditions False (accelerators 10 minutes,
/// storage, networking, kernel and container runtime 30), and a failing EC2 status check
/// ([`EC2_STATUS_CONDITION`] True) for 2 minutes.
pub fn default_policies() -> Vec<RepairPolicy> {
    vec![
        RepairPolicy {
            condition: EC2_STATUS_CONDITION.into(),
            status: "True".into(),
            toleration: EC2_STATUS_TOLERATION,
        },
        RepairPolicy::new("Ready", "False", 30),
        RepairPolicy::new("Ready", "Unknown", 30),
        RepairPolicy::new("AcceleratedHardwareReady", "False", 10),
        RepairPolicy::new("StorageReady", "False", 30),
        RepairPolicy::new("NetworkingReady", "False", 30),
        RepairPolicy::new("KernelReady", "False", 30),
        RepairPolicy::new("ContainerRuntimeReady", "False", 30),
    ]
}

/// One condition as the Node reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeCondition {
    pub type_: String,
    pub status: String,
    /// `lastTransitionTime`; None when the Node does not say.
    pub since: Option<UnixSeconds>,
    /// `message`; None when the Node gives none.
    pub message: Option<String>,
}

/// Which of EC2's status checks (DescribeInstanceStatus' `instanceStatus`, `systemStatus`,
/// `attachedEbsStatus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CheckKind {
    /// The instance's own software and network configuration (reachability of its ENI).
    Instance,
    /// The host under it: power, network, hardware.
    System,
    /// The EBS volumes attached to it. Reported, never a repair signal: a failing volume may
    /// be a pod's, and replacing the node would not mend it.
    AttachedEbs,
}

impl CheckKind {
    /// As messages name it: `instance status`, `system status`, `attached EBS status`.
    pub fn describe(self) -> &'static str {
        match self {
            CheckKind::Instance => "instance status",
            CheckKind::System => "system status",
            CheckKind::AttachedEbs => "attached EBS status",
        }
    }

    /// Whether a failure of this check is a repair signal.
    pub fn counts(self) -> bool {
        matches!(self, CheckKind::Instance | CheckKind::System)
    }
}

/// One check's result, in EC2's words (`passed | failed | insufficient-data | initializing`;
/// EBS checks also `not-applicable`). Parsed once where the cloud's answer is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CheckStatus {
    Passed,
    Failed,
    InsufficientData,
    Initializing,
    NotApplicable,
    /// A value EC2 did not document when this was written; never a failure.
    Other(String),
}

impl CheckStatus {
    pub fn parse(s: &str) -> CheckStatus {
        match s {
            "passed" => CheckStatus::Passed,
            "failed" => CheckStatus::Failed,
            "insufficient-data" => CheckStatus::InsufficientData,
            "initializing" => CheckStatus::Initializing,
            "not-applicable" => CheckStatus::NotApplicable,
            other => CheckStatus::Other(other.into()),
        }
    }
}

/// One EC2 status check of an instance (e.g. instance status, `reachability`, `failed`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusCheck {
    pub kind: CheckKind,
    /// The check's name: `reachability` is the only one EC2 reports today.
    pub name: String,
    pub status: CheckStatus,
    /// EC2's `impairedSince`: when the check started failing (for an instance impaired from
    /// launch, its launch time). None when EC2 does not say; see [`remember_first_failures`].
    pub impaired_since: Option<UnixSeconds>,
}

impl StatusCheck {
    /// A failure that is a repair signal: an instance or system check, `failed`.
    pub fn is_failing(&self) -> bool {
        self.kind.counts() && self.status == CheckStatus::Failed
    }

    /// `instance status reachability`.
    pub fn describe(&self) -> String {
        format!("{} {}", self.kind.describe(), self.name)
    }
}

/// What repair needs to know of one node with a NodeClaim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeHealth {
    pub node: String,
    pub nodeclaim: String,
    /// The NodeClaim's pool; None for a NodeClaim of no pool (guarded over every node).
    pub nodepool: Option<String>,
    /// The instance's providerID (to ask the cloud for its status checks); None before launch.
    pub provider_id: Option<String>,
    pub conditions: Vec<NodeCondition>,
    /// The instance's status checks as the cloud last reported them; empty when nothing is
    /// known (status checks not read, the read failed, or the cloud has none).
    pub status_checks: Vec<StatusCheck>,
    /// A reading that succeeded asked the cloud about this instance: [`Self::status_checks`]
    /// is then the whole answer, and none failing is news of health (the condition goes
    /// `False`). False when the reading failed or did not ask about it: nothing is known.
    pub checks_read: bool,
    /// The NodeClaim or Node is already being deleted.
    pub deleting: bool,
    /// The Node is annotated `adze.sh/do-not-repair` (or Karpenter's `karpenter.sh/do-not-repair`)
    /// with the value `"true"`: its owner vetoes repair (Karpenter v1.15). do-not-disrupt does not.
    pub do_not_repair: bool,
    /// The last reboot repair gave its instance, as its NodeClaim records it
    /// ([`REBOOTED_AT_ANNOTATION`]); None when it was never rebooted for repair.
    pub reboot: Option<RebootRecord>,
}

impl NodeHealth {
    pub fn new(node: &str, nodeclaim: &str, nodepool: &str) -> NodeHealth {
        NodeHealth {
            node: node.into(),
            nodeclaim: nodeclaim.into(),
            nodepool: Some(nodepool.into()),
            provider_id: None,
            conditions: Vec::new(),
            status_checks: Vec::new(),
            checks_read: false,
            deleting: false,
            do_not_repair: false,
            reboot: None,
        }
    }

    /// Adds a status check (builder for callers and tests).
    pub fn with_check(
        mut self,
        kind: CheckKind,
        status: &str,
        impaired_since: Option<UnixSeconds>,
    ) -> NodeHealth {
        self.status_checks.push(StatusCheck {
            kind,
            name: "reachability".into(),
            status: CheckStatus::parse(status),
            impaired_since,
        });
        self.checks_read = true;
        self
    }

    /// The failing checks that count, named (`instance status reachability and system status
    /// reachability`); None when none fails.
    pub fn failing_checks(&self) -> Option<String> {
        let named: Vec<String> = self
            .status_checks
            .iter()
            .filter(|c| c.is_failing())
            .map(StatusCheck::describe)
            .collect();
        (!named.is_empty()).then(|| named.join(" and "))
    }

    /// The Node's own condition of `type_`, if it reports one.
    pub fn condition(&self, type_: &str) -> Option<&NodeCondition> {
        self.conditions.iter().find(|c| c.type_ == type_)
    }

    /// The [`EC2_STATUS_CONDITION`] the status checks call for, given the one the Node holds
    /// now (Karpenter's rules): `True` (`ReachabilityFailed`) while an instance or system check
    /// fails, its `lastTransitionTime` the earliest `impairedSince` of the failing checks (`now`
    /// when none has one) — or the Node's own, when it already says `True`: one clock for an
    /// uninterrupted impairment, whichever checks make it up; `False` (`NoImpairmentReported`)
    /// when a reading asked about the instance and none fails, since `now` (or the Node's own
    /// time when it already says `False`). None when nothing was read: the condition stays as
    /// it is (an unreadable cloud is never news of health or of impairment).
    pub fn status_condition(&self, now: UnixSeconds) -> Option<PublishedCondition> {
        if !self.checks_read {
            return None;
        }
        let current = self.condition(EC2_STATUS_CONDITION);
        let (status, reason, message, fresh_since) = match self.failing_checks() {
            Some(named) => {
                let earliest = self
                    .status_checks
                    .iter()
                    .filter(|c| c.is_failing())
                    .filter_map(|c| c.impaired_since)
                    .min();
                (
                    "True",
                    EC2_REASON_FAILED,
                    format!("EC2 reports {named} failing"),
                    earliest.unwrap_or(now),
                )
            }
            None => (
                "False",
                EC2_REASON_NONE,
                "EC2 reports no instance or system reachability check failing".to_string(),
                now,
            ),
        };
        let since = current
            .filter(|c| c.status == status)
            .and_then(|c| c.since)
            .unwrap_or(fresh_since);
        Some(PublishedCondition {
            status: status.into(),
            reason: reason.into(),
            message,
            since,
        })
    }

    /// Folds the status checks into the Node's conditions as [`Self::status_condition`] says
    /// (replacing its [`EC2_STATUS_CONDITION`] or adding one), and returns the condition when it
    /// differs from what the Node holds (status, transition time or message): what the
    /// controller must write. Idempotent: a second call changes nothing and returns None.
    pub fn publish_status_condition(&mut self, now: UnixSeconds) -> Option<PublishedCondition> {
        let new = self.status_condition(now)?;
        let as_node = NodeCondition {
            type_: EC2_STATUS_CONDITION.into(),
            status: new.status.clone(),
            since: Some(new.since),
            message: Some(new.message.clone()),
        };
        match self
            .conditions
            .iter_mut()
            .find(|c| c.type_ == EC2_STATUS_CONDITION)
        {
            Some(c) if *c == as_node => None,
            Some(c) => {
                *c = as_node;
                Some(new)
            }
            None => {
                self.conditions.push(as_node);
                Some(new)
            }
        }
    }

    /// Adds a condition (builder for callers and tests).
    pub fn with(mut self, type_: &str, status: &str, since: Option<UnixSeconds>) -> NodeHealth {
        self.conditions.push(NodeCondition {
            type_: type_.into(),
            status: status.into(),
            since,
            message: None,
        });
        self
    }
}

/// The [`EC2_STATUS_CONDITION`] to write on a Node: its status (`True`/`False`), reason,
/// message and `lastTransitionTime`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublishedCondition {
    pub status: String,
    pub reason: String,
    pub message: String,
    pub since: UnixSeconds,
}

/// An unhealthy condition matched by a policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub condition: String,
    pub status: String,
    pub toleration: Duration,
    /// When it became unhealthy; None when the Node gives no `lastTransitionTime`.
    pub since: Option<UnixSeconds>,
    /// For [`EC2_STATUS_CONDITION`] read from the cloud: the failing checks, e.g.
    /// `instance status reachability`.
    pub checks: Option<String>,
}

impl Finding {
    /// When the toleration runs out; None without a transition time (never, until it has
    /// one) or when the sum does not fit.
    pub fn due(&self) -> Option<UnixSeconds> {
        let secs = i64::try_from(self.toleration.as_secs()).ok()?;
        self.since?.checked_add(secs)
    }
}

/// What becomes of one node that reports an unhealthy condition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Delete its NodeClaim now.
    Repair,
    /// Unhealthy, but within the toleration (or without a transition time to count from).
    Tolerated,
    /// Past its toleration, but too many of its pool's nodes are unhealthy.
    Guarded {
        unhealthy: usize,
        nodes: usize,
        allowed: usize,
    },
    /// Already being deleted: nothing to do.
    Deleting,
    /// Past its toleration, but the Node is annotated do-not-repair.
    DoNotRepair,
}

/// On a NodeClaim: when repair rebooted its instance (RFC 3339). Written before the reboot is
/// asked for, so a controller restarted mid-way does not reboot the node a second time.
pub const REBOOTED_AT_ANNOTATION: &str = "adze.sh/repair-rebooted-at";

/// On a NodeClaim, beside [`REBOOTED_AT_ANNOTATION`]: the cloud refused the reboot (its
/// error). Repair then replaces the node without waiting.
pub const REBOOT_FAILED_ANNOTATION: &str = "adze.sh/repair-reboot-failed";

/// How long a rebooted node is given to report healthy before it is replaced (the window
/// Karpenter's reboot design observes: 20 minutes).
pub const REBOOT_WAIT: Duration = Duration::from_secs(20 * 60);

/// A reboot repair gave a node: when, and whether the cloud refused it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RebootRecord {
    pub at: UnixSeconds,
    pub failed: bool,
}

/// What repair does with a node due for it when reboots come first (`--reboot-for-repair`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RebootStep {
    /// Not rebooted in this episode: reboot its instance, do not replace it.
    Reboot,
    /// Rebooted at `since`; left alone until `until` to come back healthy.
    Waiting {
        since: UnixSeconds,
        until: UnixSeconds,
    },
    /// Rebooted and still unhealthy after the wait, or the reboot was refused: replace it.
    Replace,
}

/// The step for a node whose unhealthy `finding` is due, given its last reboot for repair.
/// One reboot per episode: a record counts for the finding unless the condition began after
/// the record's wait had ended (the node was healthy, or changed, after the reboot's
/// window: a new episode, rebooted again). A refused reboot is replaced at once.
pub fn reboot_step(
    finding: &Finding,
    record: Option<RebootRecord>,
    now: UnixSeconds,
) -> RebootStep {
    let Some(r) = record else {
        return RebootStep::Reboot;
    };
    let wait = i64::try_from(REBOOT_WAIT.as_secs()).unwrap_or(i64::MAX);
    let until = r.at.saturating_add(wait);
    if finding.since.is_some_and(|s| s > until) {
        return RebootStep::Reboot;
    }
    if r.failed || now >= until {
        RebootStep::Replace
    } else {
        RebootStep::Waiting { since: r.at, until }
    }
}

/// One unhealthy node and what becomes of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub node: String,
    pub nodeclaim: String,
    pub nodepool: Option<String>,
    /// The condition whose toleration runs out first.
    pub finding: Finding,
    pub verdict: Verdict,
    pub now: UnixSeconds,
}

impl Outcome {
    /// For events and log lines: the condition, for how long, and its toleration (the legacy,
    /// forceful mode's words for a repair).
    pub fn message(&self) -> String {
        self.message_as(RepairMode::Legacy)
    }

    /// [`Self::message`] as `mode` carries a repair out.
    pub fn message_as(&self, mode: RepairMode) -> String {
        let base = self.base();
        match (&self.verdict, mode) {
            (Verdict::Repair, RepairMode::Legacy) => format!(
                "unhealthy: {base}; repaired regardless of budgets, do-not-disrupt and PodDisruptionBudgets"
            ),
            (Verdict::Repair, RepairMode::Budgeted) => format!(
                "unhealthy: {base}; repaired within the NodePool's disruption budget for Unhealthy, regardless of do-not-disrupt and PodDisruptionBudgets"
            ),
            (Verdict::Tolerated, _) => format!("unhealthy, not yet repaired: {base}"),
            (
                Verdict::Guarded {
                    unhealthy,
                    nodes,
                    allowed,
                },
                _,
            ) => format!(
                "repair blocked: {base}, but more than {MAX_UNHEALTHY_PERCENT}% of the nodes of {} are unhealthy ({unhealthy} of {nodes}; at most {allowed} may be)",
                self.nodepool
                    .as_deref()
                    .map_or_else(|| "the cluster".to_string(), |p| format!("nodepool {p}")),
            ),
            (Verdict::Deleting, _) => format!("unhealthy, already being deleted: {base}"),
            (Verdict::DoNotRepair, _) => {
                format!("repair blocked: {base}, but the node is annotated do-not-repair")
            }
        }
    }

    /// The condition (or failing checks), for how long, and its toleration.
    pub fn base(&self) -> String {
        let f = &self.finding;
        let held = f.since.map_or_else(
            || "with no lastTransitionTime".to_string(),
            |s| format!("for {}", human(self.now.saturating_sub(s))),
        );
        let tolerated = human(i64::try_from(f.toleration.as_secs()).unwrap_or(i64::MAX));
        match &f.checks {
            Some(checks) => {
                let held = f.since.map_or_else(
                    || "with no impairedSince".to_string(),
                    |s| format!("for {}", human(self.now.saturating_sub(s))),
                );
                format!(
                    "EC2 status check {checks} has been failing {held} (tolerated for {tolerated})"
                )
            }
            None => format!(
                "node condition {} has been {} {held} (tolerated for {tolerated})",
                f.condition, f.status,
            ),
        }
    }
}

/// `30m`, `1h5m`, `45s`: Go-style, for messages.
pub(crate) fn human(secs: i64) -> String {
    let secs = secs.max(0);
    let (h, m, s) = (secs / 3600, secs % 3600 / 60, secs % 60);
    let mut out = String::new();
    if h > 0 {
        out.push_str(&format!("{h}h"));
    }
    if m > 0 {
        out.push_str(&format!("{m}m"));
    }
    if s > 0 || out.is_empty() {
        out.push_str(&format!("{s}s"));
    }
    out
}

/// The unhealthy condition of `node` whose toleration runs out first (a condition without a
/// transition time last), or None when every condition is healthy. Reads the Node's
/// conditions only, one rule for all: [`EC2_STATUS_CONDITION`] is among them once
/// [`NodeHealth::publish_status_condition`] has folded the status checks in (as [`decide`]
/// does), and the failing checks only name it in messages.
pub fn finding(node: &NodeHealth, policies: &[RepairPolicy]) -> Option<Finding> {
    policies
        .iter()
        .filter_map(|p| {
            let c = node.condition(&p.condition)?;
            (c.status == p.status).then(|| Finding {
                condition: p.condition.clone(),
                status: p.status.clone(),
                toleration: p.toleration,
                since: c.since,
                checks: (p.condition == EC2_STATUS_CONDITION)
                    .then(|| node.failing_checks())
                    .flatten(),
            })
        })
        .min_by_key(|f| f.due().unwrap_or(UnixSeconds::MAX))
}

/// Keeps failing status checks countable when EC2 gives no `impairedSince`: such a check is
/// counted from the first time it was seen failing (`now` the first time), which `seen`
/// remembers between passes by providerID and check; checks no longer failing are forgotten.
/// Call it only with a reading that succeeded (`reports`: providerID → checks), so an
/// unreadable cloud does not reset the clock.
pub fn remember_first_failures(
    seen: &mut BTreeMap<String, UnixSeconds>,
    reports: &mut BTreeMap<String, Vec<StatusCheck>>,
    now: UnixSeconds,
) {
    let mut failing = std::collections::BTreeSet::new();
    for (provider_id, checks) in reports.iter_mut() {
        for c in checks.iter_mut().filter(|c| c.is_failing()) {
            let key = format!("{provider_id} {}", c.describe());
            let first = *seen.entry(key.clone()).or_insert(now);
            c.impaired_since.get_or_insert(first);
            failing.insert(key);
        }
    }
    seen.retain(|k, _| failing.contains(k));
}

/// How many of `nodes` may be unhealthy for repair to go on: 20 % rounded up.
pub fn allowed_unhealthy(nodes: usize) -> usize {
    let n = nodes as u64;
    usize::try_from(n.saturating_mul(MAX_UNHEALTHY_PERCENT).div_ceil(100)).unwrap_or(usize::MAX)
}

/// Every node reporting an unhealthy condition and what becomes of it, in node order.
/// A node counts as unhealthy for the guard as soon as a condition matches, tolerated or
/// not, and whether or not it is being deleted; healthy nodes are left out of the result.
pub fn decide(nodes: &[NodeHealth], policies: &[RepairPolicy], now: UnixSeconds) -> Vec<Outcome> {
    // The status checks as the EC2StatusImpaired condition the controller publishes (already
    // folded in when it has: publishing is idempotent).
    let folded: Vec<NodeHealth> = nodes
        .iter()
        .map(|n| {
            let mut n = n.clone();
            n.publish_status_condition(now);
            n
        })
        .collect();
    let nodes = folded.as_slice();
    let findings: Vec<Option<Finding>> = nodes.iter().map(|n| finding(n, policies)).collect();
    // Per pool (None: the NodeClaims of no pool, guarded over every node): (unhealthy, all).
    let mut pools: BTreeMap<Option<&str>, (usize, usize)> = BTreeMap::new();
    for (n, f) in nodes.iter().zip(&findings) {
        let e = pools.entry(n.nodepool.as_deref()).or_default();
        e.0 += usize::from(f.is_some());
        e.1 += 1;
    }
    let cluster = (findings.iter().filter(|f| f.is_some()).count(), nodes.len());
    let mut out: Vec<Outcome> = nodes
        .iter()
        .zip(findings)
        .filter_map(|(n, f)| {
            let finding = f?;
            let (unhealthy, all) = match n.nodepool.as_deref() {
                Some(p) => pools[&Some(p)],
                None => cluster,
            };
            let allowed = allowed_unhealthy(all);
            let verdict = if n.deleting {
                Verdict::Deleting
            } else if finding.due().is_none_or(|due| now < due) {
                Verdict::Tolerated
            } else if n.do_not_repair {
                Verdict::DoNotRepair
            } else if unhealthy > allowed {
                Verdict::Guarded {
                    unhealthy,
                    nodes: all,
                    allowed,
                }
            } else {
                Verdict::Repair
            };
            Some(Outcome {
                node: n.node.clone(),
                nodeclaim: n.nodeclaim.clone(),
                nodepool: n.nodepool.clone(),
                finding,
                verdict,
                now,
            })
        })
        .collect();
    out.sort_by(|a, b| a.node.cmp(&b.node));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: UnixSeconds = 1_000_000;
    const MIN: i64 = 60;

    fn healthy(name: &str) -> NodeHealth {
        NodeHealth::new(name, &format!("{name}-claim"), "web").with("Ready", "True", Some(0))
    }

    fn not_ready(name: &str, status: &str, for_secs: i64) -> NodeHealth {
        NodeHealth::new(name, &format!("{name}-claim"), "web").with(
            "Ready",
            status,
            Some(NOW - for_secs),
        )
    }

    fn verdicts(nodes: &[NodeHealth]) -> Vec<(String, Verdict)> {
        decide(nodes, &default_policies(), NOW)
            .into_iter()
            .map(|o| (o.node, o.verdict))
            .collect()
    }

    #[test]
    fn ready_false_is_tolerated_just_under_thirty_minutes_and_repaired_at_thirty() {
        let v = verdicts(&[not_ready("a", "False", 30 * MIN - 1)]);
        assert_eq!(v, [("a".to_string(), Verdict::Tolerated)]);
        let out = decide(
            &[not_ready("a", "False", 30 * MIN)],
            &default_policies(),
            NOW,
        );
        assert_eq!(out[0].verdict, Verdict::Repair);
        assert_eq!(out[0].nodeclaim, "a-claim");
        let m = out[0].message();
        assert!(
            m.starts_with(
                "unhealthy: node condition Ready has been False for 30m (tolerated for 30m)"
            ),
            "{m}"
        );
    }

    #[test]
    fn ready_unknown_is_repaired_like_false() {
        let out = decide(
            &[not_ready("a", "Unknown", 31 * MIN)],
            &default_policies(),
            NOW,
        );
        assert_eq!(out[0].verdict, Verdict::Repair);
        assert_eq!(out[0].finding.status, "Unknown");
        assert!(out[0].message().contains("Ready has been Unknown for 31m"));
    }

    #[test]
    fn a_node_monitoring_condition_has_its_own_toleration() {
        let gpu =
            |for_secs| healthy("g").with("AcceleratedHardwareReady", "False", Some(NOW - for_secs));
        assert_eq!(verdicts(&[gpu(10 * MIN - 1)])[0].1, Verdict::Tolerated);
        let out = decide(&[gpu(10 * MIN)], &default_policies(), NOW);
        assert_eq!(out[0].verdict, Verdict::Repair);
        assert_eq!(out[0].finding.condition, "AcceleratedHardwareReady");
        // True is the healthy status of these conditions.
        let fine = healthy("g").with("KernelReady", "True", Some(NOW - 100 * MIN));
        assert!(verdicts(&[fine]).is_empty());
    }

    #[test]
    fn the_condition_due_first_is_the_one_named() {
        // Ready False for 20 of 30 minutes, storage False for 29 of 30: storage is due first.
        let n =
            not_ready("a", "False", 20 * MIN).with("StorageReady", "False", Some(NOW - 29 * MIN));
        let out = decide(&[n], &default_policies(), NOW);
        assert_eq!(out[0].finding.condition, "StorageReady");
        assert_eq!(out[0].verdict, Verdict::Tolerated);
    }

    #[test]
    fn healthy_nodes_are_untouched_and_conditions_without_a_time_are_never_due() {
        assert!(verdicts(&[healthy("a"), healthy("b")]).is_empty());
        let timeless = NodeHealth::new("t", "t-claim", "web").with("Ready", "False", None);
        let out = decide(&[timeless], &default_policies(), NOW);
        assert_eq!(out[0].verdict, Verdict::Tolerated);
        assert!(
            out[0].message().contains("with no lastTransitionTime"),
            "{}",
            out[0].message()
        );
        // A transition time at the far end of the range does not overflow.
        let far = NodeHealth::new("f", "f-claim", "web").with("Ready", "False", Some(i64::MAX));
        assert_eq!(verdicts(&[far])[0].1, Verdict::Tolerated);
    }

    #[test]
    fn one_of_five_unhealthy_is_repaired_two_of_five_are_not() {
        let mut nodes: Vec<NodeHealth> = (0..4).map(|i| healthy(&format!("h{i}"))).collect();
        nodes.push(not_ready("sick1", "False", 40 * MIN));
        assert_eq!(verdicts(&nodes), [("sick1".to_string(), Verdict::Repair)]);

        nodes[0] = not_ready("sick0", "Unknown", 40 * MIN);
        let out = decide(&nodes, &default_policies(), NOW);
        let guarded = Verdict::Guarded {
            unhealthy: 2,
            nodes: 5,
            allowed: 1,
        };
        assert!(out.iter().all(|o| o.verdict == guarded), "{out:?}");
        assert!(
            out[0]
                .message()
                .contains("more than 20% of the nodes of nodepool web are unhealthy (2 of 5; at most 1 may be)"),
            "{}",
            out[0].message()
        );
    }

    #[test]
    fn the_guard_counts_tolerated_and_deleting_nodes_and_rounds_up() {
        // 20 % of 3 rounds up to 1: one of three may be repaired (as Karpenter, 33 %).
        assert_eq!(allowed_unhealthy(3), 1);
        assert_eq!(allowed_unhealthy(10), 2);
        assert_eq!(allowed_unhealthy(11), 3);
        assert_eq!(allowed_unhealthy(0), 0);
        let mut deleting = not_ready("d", "False", 40 * MIN);
        deleting.deleting = true;
        let nodes = [
            not_ready("a", "False", 40 * MIN),
            // Unhealthy for a minute only: not due, but it counts for the guard.
            not_ready("b", "False", MIN),
            healthy("c"),
        ];
        let v = verdicts(&nodes);
        assert!(
            matches!(
                v[0].1,
                Verdict::Guarded {
                    unhealthy: 2,
                    nodes: 3,
                    allowed: 1
                }
            ),
            "{v:?}"
        );
        let v = verdicts(&[not_ready("a", "False", 40 * MIN), deleting, healthy("c")]);
        assert_eq!(v[1], ("d".to_string(), Verdict::Deleting));
        assert!(
            matches!(v[0].1, Verdict::Guarded { unhealthy: 2, .. }),
            "{v:?}"
        );
    }

    #[test]
    fn the_guard_is_per_pool() {
        let mut other = not_ready("x", "False", 40 * MIN);
        other.nodepool = Some("batch".into());
        let nodes = [
            not_ready("a", "False", 40 * MIN),
            not_ready("b", "False", 40 * MIN),
            other,
            healthy("c"),
            healthy("d"),
        ];
        let v = verdicts(&nodes);
        // web: 2 of 4 unhealthy, 1 allowed; batch: its only node, 1 of 1 allowed.
        assert!(matches!(v[0].1, Verdict::Guarded { .. }), "{v:?}");
        assert_eq!(v[2], ("x".to_string(), Verdict::Repair));
    }
    fn impaired(name: &str, kind: CheckKind, for_secs: i64) -> NodeHealth {
        healthy(name).with_check(kind, "failed", Some(NOW - for_secs))
    }

    #[test]
    fn a_failing_instance_status_check_is_repaired_after_two_minutes() {
        let within = impaired("a", CheckKind::Instance, 2 * MIN - 1);
        assert_eq!(verdicts(&[within])[0].1, Verdict::Tolerated);
        let out = decide(
            &[impaired("a", CheckKind::Instance, 2 * MIN)],
            &default_policies(),
            NOW,
        );
        assert_eq!(out[0].verdict, Verdict::Repair);
        assert_eq!(out[0].finding.condition, EC2_STATUS_CONDITION);
        assert_eq!(out[0].finding.status, "True");
        let m = out[0].message();
        assert!(
            m.starts_with(
                "unhealthy: EC2 status check instance status reachability has been failing for 2m (tolerated for 2m)"
            ),
            "{m}"
        );
    }

    #[test]
    fn a_failing_system_status_check_counts_from_the_earliest_impairment() {
        // System failing 3 minutes, instance 1: the earliest counts, and both are named.
        let n = impaired("a", CheckKind::System, 3 * MIN).with_check(
            CheckKind::Instance,
            "failed",
            Some(NOW - MIN),
        );
        let out = decide(&[n], &default_policies(), NOW);
        assert_eq!(out[0].verdict, Verdict::Repair);
        assert_eq!(out[0].finding.since, Some(NOW - 3 * MIN));
        assert!(
            out[0].message().contains(
                "EC2 status check system status reachability and instance status reachability has been failing for 3m"
            ),
            "{}",
            out[0].message()
        );
    }

    #[test]
    fn checks_passed_initializing_without_data_or_of_ebs_are_not_unhealthy() {
        for status in [
            "passed",
            "initializing",
            "insufficient-data",
            "not-applicable",
            "new",
        ] {
            let n = healthy("a").with_check(CheckKind::Instance, status, Some(NOW - 60 * MIN));
            assert!(verdicts(&[n]).is_empty(), "{status}");
        }
        // A failing attached-EBS check may be a pod's volume: not the node's fault.
        let ebs = impaired("a", CheckKind::AttachedEbs, 60 * MIN);
        assert!(verdicts(&[ebs]).is_empty());
        assert!(!CheckStatus::parse("failed").eq(&CheckStatus::parse("passed")));
        assert_eq!(
            CheckStatus::parse("bogus"),
            CheckStatus::Other("bogus".into())
        );
    }

    #[test]
    fn a_failing_check_without_impaired_since_waits_for_a_first_seen_time() {
        let n = healthy("a").with_check(CheckKind::Instance, "failed", None);
        let out = decide(std::slice::from_ref(&n), &default_policies(), NOW);
        assert_eq!(out[0].verdict, Verdict::Tolerated);
        assert!(
            out[0].message().contains("has been failing for 0s"),
            "{}",
            out[0].message()
        );
        // The controller's memory gives it the time it was first seen failing.
        let mut seen = BTreeMap::new();
        let mut reports = BTreeMap::from([("i-1".to_string(), n.status_checks.clone())]);
        remember_first_failures(&mut seen, &mut reports, NOW - 5 * MIN);
        let mut again = BTreeMap::from([("i-1".to_string(), n.status_checks.clone())]);
        remember_first_failures(&mut seen, &mut again, NOW);
        assert_eq!(again["i-1"][0].impaired_since, Some(NOW - 5 * MIN));
        let mut filled = n.clone();
        filled.status_checks = again["i-1"].clone();
        assert_eq!(verdicts(&[filled])[0].1, Verdict::Repair);
        // EC2's own time is kept; a check that stops failing is forgotten.
        let mut own = BTreeMap::from([(
            "i-2".to_string(),
            impaired("b", CheckKind::System, MIN).status_checks,
        )]);
        remember_first_failures(&mut seen, &mut own, NOW);
        assert_eq!(own["i-2"][0].impaired_since, Some(NOW - MIN));
        assert!(!seen.keys().any(|k| k.starts_with("i-1")), "{seen:?}");
    }

    #[test]
    fn a_failing_check_counts_toward_the_guard_and_trips_it_with_a_not_ready_node() {
        let mut nodes: Vec<NodeHealth> = (0..3).map(|i| healthy(&format!("h{i}"))).collect();
        nodes.push(impaired("ec2", CheckKind::System, 10 * MIN));
        nodes.push(healthy("h4"));
        assert_eq!(verdicts(&nodes), [("ec2".to_string(), Verdict::Repair)]);
        // A second unhealthy node, by its Ready condition and only just: 2 of 5, none goes.
        nodes[0] = not_ready("sick", "False", MIN);
        let out = decide(&nodes, &default_policies(), NOW);
        let ec2 = out.iter().find(|o| o.node == "ec2").unwrap();
        assert_eq!(
            ec2.verdict,
            Verdict::Guarded {
                unhealthy: 2,
                nodes: 5,
                allowed: 1
            }
        );
        assert!(
            ec2.message().starts_with(
                "repair blocked: EC2 status check system status reachability has been failing for 10m"
            ),
            "{}",
            ec2.message()
        );
        // A tolerated impairment counts as well: one impaired a minute and one past due.
        let nodes = [
            impaired("a", CheckKind::Instance, MIN),
            impaired("b", CheckKind::Instance, 5 * MIN),
            healthy("c"),
        ];
        let v = verdicts(&nodes);
        assert!(
            matches!(v[1].1, Verdict::Guarded { unhealthy: 2, .. }),
            "{v:?}"
        );
    }

    #[test]
    fn the_condition_published_follows_the_checks_and_keeps_its_clock_while_true() {
        // Not read (the cloud could not be asked, or was not asked about it): nothing to write.
        let mut unread = healthy("a");
        assert_eq!(unread.publish_status_condition(NOW), None);
        assert!(unread.condition(EC2_STATUS_CONDITION).is_none());
        // Read, nothing failing: False since now, NoImpairmentReported; then nothing to write.
        let mut fine = healthy("a");
        fine.checks_read = true;
        let p = fine.publish_status_condition(NOW).unwrap();
        assert_eq!(
            (p.status.as_str(), p.reason.as_str(), p.since),
            ("False", EC2_REASON_NONE, NOW)
        );
        assert_eq!(fine.publish_status_condition(NOW + MIN), None, "idempotent");
        // Failing: True since EC2's impairedSince, the checks named.
        let mut sick = fine.clone();
        sick = sick.with_check(CheckKind::Instance, "failed", Some(NOW - MIN));
        let p = sick.publish_status_condition(NOW + 10).unwrap();
        assert_eq!(
            (p.status.as_str(), p.reason.as_str(), p.since),
            ("True", EC2_REASON_FAILED, NOW - MIN)
        );
        assert_eq!(
            p.message,
            "EC2 reports instance status reachability failing"
        );
        assert_eq!(sick.publish_status_condition(NOW + 20), None);
        // The system check fails too, from later: still True, same clock, message updated.
        sick = sick.with_check(CheckKind::System, "failed", Some(NOW));
        let p = sick.publish_status_condition(NOW + 30).unwrap();
        assert_eq!((p.status.as_str(), p.since), ("True", NOW - MIN));
        assert!(
            p.message.contains("and system status reachability"),
            "{p:?}"
        );
        // The instance check recovers, the system one still fails: the clock is kept.
        sick.status_checks.remove(0);
        let p = sick.publish_status_condition(NOW + 40).unwrap();
        assert_eq!((p.status.as_str(), p.since), ("True", NOW - MIN));
        // A reading with none failing: False from the time it was read.
        sick.status_checks.clear();
        let p = sick.publish_status_condition(NOW + 50).unwrap();
        assert_eq!((p.status.as_str(), p.since), ("False", NOW + 50));
        // An unreadable cloud after that: the condition is left as it is.
        sick.checks_read = false;
        assert_eq!(sick.publish_status_condition(NOW + 60), None);
        assert_eq!(
            sick.condition(EC2_STATUS_CONDITION)
                .map(|c| c.status.as_str()),
            Some("False")
        );
        // A failing check EC2 gives no impairedSince (the controller fills it from when it
        // was first seen): counted from now.
        let mut timeless = healthy("t").with_check(CheckKind::System, "failed", None);
        assert_eq!(timeless.publish_status_condition(NOW).unwrap().since, NOW);
    }

    #[test]
    fn the_decision_reads_the_published_condition_by_the_same_rule_as_any_other() {
        // A Node that has said EC2StatusImpaired True for an hour, the checks still failing
        // (EC2's impairedSince a minute ago, e.g. another check took over): one uninterrupted
        // impairment, its clock kept, so it is due.
        let n = impaired("a", CheckKind::Instance, MIN).with(
            EC2_STATUS_CONDITION,
            "True",
            Some(NOW - 60 * MIN),
        );
        let out = decide(&[n], &default_policies(), NOW);
        assert_eq!(out[0].verdict, Verdict::Repair);
        assert_eq!(out[0].finding.since, Some(NOW - 60 * MIN));
        // The checks read healthy: the Node's stale True is replaced by False, not repaired.
        let mut healed = healthy("b").with(EC2_STATUS_CONDITION, "True", Some(NOW - 60 * MIN));
        healed.checks_read = true;
        assert!(verdicts(&[healed]).is_empty());
        // Nothing read (cloud unreadable, or someone else writes the condition): the Node's own
        // condition counts, as any other condition does.
        let own = healthy("c").with(EC2_STATUS_CONDITION, "True", Some(NOW - 3 * MIN));
        let out = decide(&[own], &default_policies(), NOW);
        assert_eq!(out[0].verdict, Verdict::Repair);
        assert_eq!(out[0].finding.checks, None);
        assert!(
            out[0]
                .message()
                .contains("node condition EC2StatusImpaired has been True for 3m")
        );
        let within = healthy("d").with(EC2_STATUS_CONDITION, "True", Some(NOW - 2 * MIN + 1));
        assert_eq!(verdicts(&[within])[0].1, Verdict::Tolerated);
        // False is healthy.
        let no = healthy("e").with(EC2_STATUS_CONDITION, "False", Some(NOW - 60 * MIN));
        assert!(verdicts(&[no]).is_empty());
    }
}
