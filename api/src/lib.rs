//! Adze's Kubernetes API: the NodePool, NodeClaim, EC2NodeClass and NodeOverlay custom resources, their
//! CRDs, and the validation shared by the apiserver (as CEL rules) and Adze itself.
//!
//! The types are plain serde structs; field names follow Karpenter v1 so manifests port over.

pub use adze_scheduling::labels;

pub mod capacitybuffer;
pub mod conditions;
pub mod convert;
pub mod crds;
pub mod duration;
pub mod ec2nodeclass;
pub mod eviction;
pub mod label_keys;
pub mod node_class_ref;
pub mod nodeclaim;
pub mod nodeoverlay;
pub mod nodepool;
pub mod patterns;
pub mod requirement;
mod schema;
pub mod taint;
pub mod validation;

pub use capacitybuffer::{CapacityBuffer, CapacityBufferSpec, CapacityBufferStatus};
pub use duration::{DurationError, DurationOrNever, GoDuration};
pub use ec2nodeclass::{EC2NodeClass, EC2NodeClassSpec, EC2NodeClassStatus};
pub use node_class_ref::NodeClassRef;
pub use nodeclaim::{NodeClaim, NodeClaimSpec, NodeClaimStatus};
pub use nodeoverlay::{NodeOverlay, NodeOverlaySpec, NodeOverlayStatus};
pub use nodepool::{NodePool, NodePoolSpec, NodePoolStatus, PoolKind};
pub use requirement::{Operator, Requirement};
pub use taint::{Taint, TaintEffect};
pub use validation::{FieldError, ValidationError};
