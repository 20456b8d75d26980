//! The cluster as the controllers see it: one reflector store per kind, fed by watches, and
//! the nominations NodeClaims carry. Stores are eventually consistent with the apiserver;
//! every reader works level-based from whatever they hold.
//!
//! [`nomination`] is pure (the snapshot `simulate` shares with `run` reads it); the stores
//! need the `controller` feature.

#[cfg(feature = "controller")]
mod cluster;
pub mod nomination;
#[cfg(feature = "controller")]
pub mod signals;

#[cfg(feature = "controller")]
pub use cluster::*;
