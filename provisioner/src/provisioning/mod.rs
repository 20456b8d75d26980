//! Provisioning: pending pods → a batch ([`batcher`]) → a [`snapshot`] of the cluster → the
//! scheduling core → NodeClaims, a `Nominated` event on each pod placed, and an event with the
//! reason on each pod that cannot be placed.
//!
//! [`snapshot`] and [`leaving`] are pure: `simulate` reads a scenario through them as `run`
//! reads the cluster, so they build without the `controller` feature.

#[cfg(feature = "controller")]
pub mod batcher;
#[cfg(feature = "controller")]
mod controller;
pub mod leaving;
pub mod snapshot;

#[cfg(feature = "controller")]
pub use controller::*;
