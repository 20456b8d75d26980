//! Adze's provisioner: [`simulate`] runs placement on a scenario file; [`run`] runs the
//! controllers against a cluster. A pod's journey: [`provisioning::batcher`] →
//! [`state`] → the scheduling core → [`provisioning`] creates NodeClaims → [`nodeclaim`]
//! walks them through launch, registration and initialisation through a [`cloud`] provider.
//! [`migrate`] converts Karpenter v1 NodePools and EC2NodeClasses into Adze's.

pub mod capacitybuffer;
pub mod cloud;
pub mod disruption;
pub mod events;
pub mod garbage;
pub mod kubelet;
pub mod metrics;
pub mod migrate;
pub mod nodeclaim;
pub mod nodeoverlay;
pub mod nodepool;
pub mod provisioning;
pub mod rules;
pub mod run;
pub mod simulate;
pub mod state;
pub mod termination;
