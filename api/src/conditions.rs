//! Status condition types, and small helpers for reading them.
//!
//! Conditions are the standard `meta/v1` shape so `kubectl wait --for=condition=Ready` works.
//! Every kind rolls its conditions up into [`READY`].

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;

/// True when every other condition of the object is true.
pub const READY: &str = "Ready";

/// NodeClaim conditions, in the order a healthy claim gains them.
pub mod nodeclaim {
    /// The cloud provider created an instance for the claim.
    pub const LAUNCHED: &str = "Launched";
    /// A Node object for the instance joined the cluster.
    pub const REGISTERED: &str = "Registered";
    /// The node is ready, its startup taints are gone and its resources are reported.
    pub const INITIALIZED: &str = "Initialized";
    /// The node is no longer what its NodePool and node class would make today: a static
    /// field's hash differs, its labels break the pool's requirements, or its image, subnet or
    /// security groups are no longer the class's, or a DaemonSet created since does not fit
    /// beside its pods. Reason `NodePoolDrifted`, `NodeClassDrifted`, `RequirementsDrifted`
    /// or `DaemonSetsDrifted`; removed once none holds. Set by the
    /// disruption controller, which replaces such nodes within budgets.
    pub const DRIFTED: &str = "Drifted";
    /// No pod has been bound to or left the node for its NodePool's `consolidateAfter`;
    /// removed when one does (or with `consolidateAfter: Never`). Set by the disruption
    /// controller; emptiness and consolidation consider only such nodes.
    pub const CONSOLIDATABLE: &str = "Consolidatable";
    /// Adze has chosen to disrupt the node and is draining it; the reason is in the message.
    pub const DISRUPTING: &str = "Disrupting";
    /// The cloud announced the instance will go away (spot interruption, maintenance). Set
    /// by the AWS interruption queue and by the node agent.
    pub const INTERRUPTED: &str = "Interrupted";
    /// The `Interrupted` reason for an interruptible capacity reservation being reclaimed.
    /// EC2 announces it only through EventBridge (the interruption queue), not to the node,
    /// so the provisioner drains such a node even where a node agent runs.
    pub const REASON_CAPACITY_RESERVATION_INTERRUPTION: &str = "CapacityReservationInterruption";
}

/// NodePool conditions.
pub mod nodepool {
    /// The referenced node class exists and is ready (the provisioner's NodePool status).
    pub const NODE_CLASS_READY: &str = "NodeClassReady";
    /// The spec passed [`crate::validation`] (needed where the apiserver cannot run CEL).
    pub const VALIDATION_SUCCEEDED: &str = "ValidationSucceeded";
}

/// NodeOverlay conditions (Karpenter's): `ValidationSucceeded` is False with reason
/// `RuntimeValidation` (the spec fails [`crate::validation`]) or `Conflict` (another overlay of
/// the same weight changes the same price or resource and wins); the overlay is then not applied.
pub mod nodeoverlay {
    pub const VALIDATION_SUCCEEDED: &str = "ValidationSucceeded";
}

/// EC2NodeClass conditions.
pub mod ec2nodeclass {
    pub const SUBNETS_READY: &str = "SubnetsReady";
    pub const SECURITY_GROUPS_READY: &str = "SecurityGroupsReady";
    pub const AMIS_READY: &str = "AMIsReady";
    pub const INSTANCE_PROFILE_READY: &str = "InstanceProfileReady";
    /// The spec passed [`crate::validation`] (needed where the apiserver cannot run CEL).
    pub const VALIDATION_SUCCEEDED: &str = "ValidationSucceeded";
}

/// The condition of type `type_`, if present.
pub fn find<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    conditions.iter().find(|condition| condition.type_ == type_)
}

/// Whether the condition of type `type_` is present with status "True".
pub fn is_true(conditions: &[Condition], type_: &str) -> bool {
    find(conditions, type_).is_some_and(|condition| condition.status == "True")
}
