//! Shared by the conformance suites (`conformance_*.rs`): a scenario in, the plan out, and the
//! few questions every case asks of it. Each case restates one test of Karpenter's scheduling
//! suite as an Adze scenario (see docs/conformance.md for the table).
#![allow(dead_code)]

use adze_provisioner::simulate::{self, Scenario};
use adze_scheduling::Plan;
use adze_scheduling::plan::NewClaim;

/// A planned scenario.
pub struct Planned {
    pub scenario: Scenario,
    pub plan: Plan,
}

/// Parses and plans `yaml` as `adze-provisioner simulate` does (60 types kept per claim).
/// Panics with the scenario error: a case whose scenario does not parse is a broken case.
pub fn plan(yaml: &str) -> Planned {
    let scenario = Scenario::parse(yaml).unwrap_or_else(|e| panic!("scenario: {e}"));
    let plan = simulate::run(&scenario, 60).plan;
    Planned { scenario, plan }
}

/// The scenario's error, for cases whose input must be refused.
pub fn refused(yaml: &str) -> String {
    match Scenario::parse(yaml) {
        Ok(_) => panic!("scenario was accepted"),
        Err(e) => e.to_string(),
    }
}

impl Planned {
    /// The new claim `pod` ("namespace/name") was placed on, if any.
    pub fn claim_of(&self, pod: &str) -> Option<&NewClaim> {
        self.plan
            .new_claims
            .iter()
            .find(|c| c.pods.iter().any(|p| p == pod))
    }

    /// The existing node (or in-flight claim) `pod` was placed on, if any.
    pub fn node_of(&self, pod: &str) -> Option<&str> {
        self.plan
            .existing
            .iter()
            .find(|e| e.pods.iter().any(|p| p == pod))
            .map(|e| e.node.as_str())
    }

    /// Where `pod` went: a new claim's name or an existing node's.
    pub fn placed(&self, pod: &str) -> Option<&str> {
        self.claim_of(pod)
            .map(|c| c.name.as_str())
            .or_else(|| self.node_of(pod))
    }

    /// The reason `pod` could not be placed, if it could not.
    pub fn unschedulable(&self, pod: &str) -> Option<&str> {
        self.plan
            .unschedulable
            .iter()
            .find(|u| u.pod == pod)
            .map(|u| u.reason.as_str())
    }

    /// Asserts `pod` was placed somewhere and returns where.
    pub fn expect_placed(&self, pod: &str) -> &str {
        match self.placed(pod) {
            Some(at) => at,
            None => panic!(
                "{pod} was not placed: {:?}",
                self.unschedulable(pod).unwrap_or("(not in the plan at all)")
            ),
        }
    }

    /// Asserts `pod` was left unschedulable and returns the reason.
    pub fn expect_unschedulable(&self, pod: &str) -> &str {
        match self.unschedulable(pod) {
            Some(r) => r,
            None => panic!("{pod} was placed on {:?}", self.placed(pod)),
        }
    }

    /// The label `key` of the new claim `pod` landed on.
    pub fn claim_label(&self, pod: &str, key: &str) -> Option<&str> {
        self.claim_of(pod)
            .and_then(|c| c.labels.get(key))
            .map(String::as_str)
    }

    /// Pods of the scenario's pending set, by the value of `key` on the claim each landed on
    /// (pods on existing nodes and unplaced pods are not counted).
    pub fn count_by_label(&self, key: &str) -> std::collections::BTreeMap<String, usize> {
        let mut out = std::collections::BTreeMap::new();
        for c in &self.plan.new_claims {
            if let Some(v) = c.labels.get(key) {
                *out.entry(v.clone()).or_insert(0) += c.pods.len();
            }
        }
        out
    }
}
