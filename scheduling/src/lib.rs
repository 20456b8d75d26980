//! Adze's scheduling core: plain data in, a placement plan out. No I/O, no clocks, no
//! clients, and the same input always gives the same plan.
//!
//! Read in this order: [`requirements`] (label algebra), [`resources`], [`pod`], [`node`],
//! [`nodepool`] and [`instance_type`] (the inputs), [`overlay`] (NodeOverlays adjusting them),
//! [`topology`] (spread and affinity), [`scheduler`] (placement), [`plan`] (the output) and
//! [`lower_bound`].

pub mod catalog;
pub mod default_spread;
pub mod disruption;
pub(crate) mod fast_hash;
pub mod fixtures;
pub mod instance_type;
pub mod kubelet_expr;
pub mod labels;
pub mod late_daemons;
pub mod lower_bound;
pub mod node;
pub mod node_class;
pub mod nodepool;
pub mod overhead;
pub mod overlay;
pub mod plan;
pub mod pod;
pub mod preemption;
pub mod quantity;
pub mod requirements;
pub mod resources;
pub mod scheduler;
pub mod static_pool;
pub mod taints;
pub mod topology;
pub mod volumes;
pub mod vpa;
pub mod zonal_shift;

pub use instance_type::{InstanceType, Offering};
pub use node::{BoundPod, ExistingNode};
pub use nodepool::NodePool;
pub use plan::Plan;
pub use pod::Pod;
pub use requirements::{Operator, Requirement, Requirements};
pub use resources::Resources;
pub use scheduler::{MinValuesPolicy, Options, PreferencePolicy, Snapshot, schedule};
pub use taints::{Effect, Taint, Toleration};
