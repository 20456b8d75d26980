//! Adze's provisioner: [`simulate`] runs placement on a scenario file; `run` runs the
//! controllers against a cluster. A pod's journey: `provisioning::batcher` →
//! `state` → the scheduling core → [`provisioning`] creates NodeClaims → `nodeclaim`
//! walks them through launch, registration and initialisation through a `cloud` provider.
//! [`migrate`] converts Karpenter v1 NodePools and EC2NodeClasses into Adze's.
//!
//! The rules `simulate` and `run` share ([`rules`], [`provisioning::snapshot`],
//! [`provisioning::leaving`], [`state::nomination`]) are pure and always built; the
//! controllers and the Kubernetes client, async runtime, HTTP server and metrics they need are
//! behind the default `controller` feature, so `simulate` and `migrate` build without them.

pub mod disruption;
pub mod migrate;
pub mod provisioning;
pub mod rules;
pub mod scheduler_config;
pub mod simulate;
pub mod snapshot;
pub mod state;

#[cfg(feature = "controller")]
pub mod capacitybuffer;
#[cfg(feature = "controller")]
pub mod cloud;
#[cfg(feature = "controller")]
pub mod events;
#[cfg(feature = "controller")]
pub mod garbage;
#[cfg(feature = "controller")]
pub mod kubelet;
#[cfg(feature = "controller")]
pub mod metrics;
#[cfg(feature = "controller")]
pub mod nodeclaim;
#[cfg(feature = "controller")]
pub mod nodeoverlay;
#[cfg(feature = "controller")]
pub mod nodepool;
#[cfg(feature = "controller")]
pub mod run;
#[cfg(feature = "controller")]
pub mod termination;
