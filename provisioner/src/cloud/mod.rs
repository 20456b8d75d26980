//! Cloud providers. The contract ([`CloudProvider`]) and the unavailable-offerings cache live
//! in the `adze-cloud` crate so that each provider can be its own crate; the simulated one,
//! which creates Node objects through this process's client, lives here, and so does
//! [`metered::Metered`], which records the calls of whichever provider runs.

pub mod instance_record;
pub mod metered;
pub mod simulated;
pub mod zonal_shift;

pub use adze_cloud::*;
