//! Adze's kube-scheduler extender: keeps capacity launched for particular pods (their
//! *nominations*) for those pods while the rest of the cluster schedules around it.
//!
//! Read in this order: [`types`] (the extender protocol's JSON), [`ledger`] (the pure
//! reservation logic), [`server`] (the HTTP verbs over the ledger), [`cluster`] (the watches
//! that feed the ledger and the binding call); [`webhook`] is the optional admission webhook
//! that sends pods to the Adze scheduler; [`names`] checks names from requests before they
//! reach an API path.

pub mod cluster;
pub mod ledger;
pub mod names;
pub mod server;
pub mod signal;
pub mod types;
pub mod webhook;
