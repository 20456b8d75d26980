//! Adze's node agent: each node looks after itself. It polls the instance metadata service
//! (IMDSv2) for spot interruption, rebalance and scheduled maintenance notices; on a spot notice
//! it taints and cordons its node, marks its NodeClaim `Interrupted` (so the provisioner launches
//! the replacement at once) and drains within the deadline; and it reports a readiness
//! condition from local checks. See docs/agent.md.

pub mod agent;
pub mod decide;
pub mod drain;
pub mod health;
pub mod imds;
pub mod node;
pub mod notice;
pub mod status;
