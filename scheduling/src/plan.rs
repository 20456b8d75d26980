//! The result of a scheduling run: new NodeClaims to launch, pods for existing capacity,
//! and pods that cannot be placed, each with a reason a person can act on.

use std::collections::BTreeMap;

use crate::requirements::Requirements;
use crate::resources::Resources;
use crate::taints::Taint;

#[derive(Debug, Clone, PartialEq)]
pub struct NewClaim {
    pub name: String,
    pub nodepool: String,
    /// The cheapest option that fits; what the plan's price assumes.
    pub instance_type: String,
    /// Every type that fits, cheapest first, truncated (minValues kept).
    pub instance_type_options: Vec<String>,
    pub zone: String,
    pub capacity_type: String,
    pub price_per_hour: f64,
    /// Every label the node will carry, hostname and zone included.
    pub labels: BTreeMap<String, String>,
    pub taints: Vec<Taint>,
    pub startup_taints: Vec<Taint>,
    /// The chosen type's allocatable.
    pub allocatable: Resources,
    /// Requests of the pods plus the DaemonSet overhead reserved on the node.
    pub requests: Resources,
    /// What the NodeClaim should demand of the cloud (zone, capacity type, types, ...).
    pub requirements: Requirements,
    /// Pods ("namespace/name"), in placement order.
    pub pods: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExistingPlacement {
    pub node: String,
    pub in_flight: bool,
    pub pods: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unschedulable {
    pub pod: String,
    pub reason: String,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Plan {
    pub new_claims: Vec<NewClaim>,
    pub existing: Vec<ExistingPlacement>,
    pub unschedulable: Vec<Unschedulable>,
    /// Sum of the new claims' prices, USD per hour.
    pub total_price_per_hour: f64,
    /// A lower bound on what any plan must pay for the pods this plan launches capacity
    /// for (see [`crate::lower_bound`]).
    pub cost_lower_bound: f64,
}

impl Plan {
    /// Where each pod went: "namespace/name" → node or claim name.
    pub fn placements(&self) -> BTreeMap<&str, &str> {
        let mut m = BTreeMap::new();
        for c in &self.new_claims {
            for p in &c.pods {
                m.insert(p.as_str(), c.name.as_str());
            }
        }
        for e in &self.existing {
            for p in &e.pods {
                m.insert(p.as_str(), e.node.as_str());
            }
        }
        m
    }

    pub fn pods_placed(&self) -> usize {
        self.new_claims.iter().map(|c| c.pods.len()).sum::<usize>()
            + self.existing.iter().map(|e| e.pods.len()).sum::<usize>()
    }
}
