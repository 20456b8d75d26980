//! Every Event reason the provisioner emits, with what it means, for users' `kubectl get
//! events` and alerting. docs/reference/metrics.md is generated from [`ALL`]; a test scans the
//! emitters so a new reason cannot be emitted without an entry here.

/// One Event reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reason {
    pub name: &'static str,
    /// `Normal` or `Warning`.
    pub type_: &'static str,
    /// The kinds of object the Event is about.
    pub on: &'static str,
    pub meaning: &'static str,
}

const fn reason(
    name: &'static str,
    type_: &'static str,
    on: &'static str,
    meaning: &'static str,
) -> Reason {
    Reason {
        name,
        type_,
        on,
        meaning,
    }
}

/// Every reason, in no particular order (the reference page sorts them).
pub const ALL: &[Reason] = &[
    reason(
        "FailedScheduling",
        "Warning",
        "Pod",
        "No NodePool can launch a node this pending pod fits on (the message says why); retried on every provisioning pass.",
    ),
    reason(
        "Nominated",
        "Normal",
        "Pod",
        "A NodeClaim was planned for this pending pod; the message names it.",
    ),
    reason(
        "LaunchFailed",
        "Warning",
        "NodeClaim, Pod",
        "The cloud provider refused to launch the NodeClaim's instance (permissions, image, quota); retried with backoff up to the launch timeout.",
    ),
    reason(
        "InsufficientCapacity",
        "Warning",
        "NodeClaim, Pod",
        "The cloud had no capacity for the NodeClaim's offering (instance type, zone, capacity type; the message names it): the NodeClaim is deleted, the offering avoided for 3 minutes, and the pods it was for are planned again.",
    ),
    reason(
        "LaunchTimedOut",
        "Warning",
        "NodeClaim, Pod",
        "The NodeClaim could not be launched within the launch timeout and is deleted, so its pods are planned again.",
    ),
    reason(
        "ReplicasChanged",
        "Warning",
        "NodePool",
        "spec.replicas was added to or removed from an existing NodePool; a pool does not convert between static and dynamic, so the change is refused.",
    ),
    reason(
        "Drifted",
        "Normal",
        "NodeClaim",
        "The node no longer matches its NodePool or node class (the message says what changed) and will be replaced.",
    ),
    reason(
        "Expired",
        "Normal",
        "Node, NodeClaim",
        "The node reached its NodePool's expireAfter and is deleted.",
    ),
    reason(
        "Disrupting",
        "Normal",
        "Node, NodeClaim",
        "Disruption (drift, emptiness, consolidation) chose this node; it is tainted and will be drained and removed.",
    ),
    reason(
        "DisruptionAborted",
        "Warning",
        "NodeClaim",
        "A disruption that had started was called off (for example its replacement did not come up, or a restart left it unfinished); the node is kept and takes pods again.",
    ),
    reason(
        "DisruptionBlocked",
        "Normal",
        "Node, NodeClaim, NodePool",
        "A disruption method would act on this node but for a blocker: a do-not-disrupt annotation, a PodDisruptionBudget or a zonal shift. On a NodePool: drift there waits after failed drift replacements (how many in a row, the last reason, the wait and when it ends).",
    ),
    reason(
        "DisruptionDryRun",
        "Normal",
        "NodeClaim",
        "What disruption would have done to this node, in dry-run mode; nothing was acted on.",
    ),
    reason(
        "Unhealthy",
        "Warning",
        "Node, NodeClaim",
        "Node repair: the node's Ready or a monitoring condition stayed bad past its toleration; the node is replaced.",
    ),
    reason(
        "RepairBlocked",
        "Warning",
        "Node, NodeClaim",
        "Node repair would replace this unhealthy node but holds off because too much of its NodePool is unhealthy at once.",
    ),
    reason(
        "Rebooted",
        "Normal",
        "Node, NodeClaim",
        "Node repair with --reboot-for-repair: the unhealthy node's instance was rebooted instead of replaced; it is replaced if still unhealthy 20 minutes later.",
    ),
    reason(
        "RebootFailed",
        "Warning",
        "Node, NodeClaim",
        "Node repair with --reboot-for-repair: the cloud refused to reboot the unhealthy node's instance; the node is replaced instead.",
    ),
    reason(
        "Draining",
        "Normal",
        "Node, NodeClaim",
        "The node is being drained before its instance is terminated.",
    ),
    reason(
        "Evicted",
        "Normal",
        "Pod",
        "The pod was evicted because its node is terminating.",
    ),
    reason(
        "EvictionBlocked",
        "Warning",
        "Pod",
        "A PodDisruptionBudget does not allow evicting the pod yet; the drain waits and retries.",
    ),
    reason(
        "ForceDeleted",
        "Warning",
        "Pod",
        "The node's termination grace period ran out: the pod was deleted without waiting for its disruption budget.",
    ),
    reason(
        "StuckTerminatingPods",
        "Warning",
        "NodeClaim",
        "Pods on the draining node stay terminating well past their deletion time (their kubelet is not finishing them); the drain goes on without them.",
    ),
    reason(
        "TerminatingInstance",
        "Normal",
        "NodeClaim",
        "The node is drained; its instance is being terminated.",
    ),
    reason(
        "Terminated",
        "Normal",
        "NodeClaim",
        "The instance is terminated and the Node removed; the message says how long it took.",
    ),
];
