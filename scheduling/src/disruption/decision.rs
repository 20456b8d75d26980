//! The output: which nodes go, what replaces them, where their pods land, what it saves,
//! and a sentence a person can read in an event or a log line.

use crate::plan::Plan;

use super::Reason;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// The pods fit on the remaining nodes: remove without launching anything.
    Delete,
    /// Launch the plan's new claims, wait for them to initialize, then remove.
    Replace,
}

/// Which method took a decision, in Karpenter's terms: what a user reads in a plan or an
/// event, finer than [`Reason`] (consolidation of one node and of several are searched apart).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Method {
    /// Forceful: the NodeClaim outlived its `expireAfter` ([`super::expiry`]).
    Expiration,
    /// Unhealthy node conditions past their toleration ([`super::repair`]): budgeted by
    /// default, forceful in its legacy mode.
    Repair,
    Drift,
    Emptiness,
    MultiNodeConsolidation,
    SingleNodeConsolidation,
}

impl Method {
    /// The method's name as plans, events and metrics spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Expiration => "Expiration",
            Method::Repair => "Repair",
            Method::Drift => "Drift",
            Method::Emptiness => "Emptiness",
            Method::MultiNodeConsolidation => "MultiNodeConsolidation",
            Method::SingleNodeConsolidation => "SingleNodeConsolidation",
        }
    }
}

impl std::fmt::Display for Method {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct RemovedNode {
    pub name: String,
    pub nodepool: String,
    pub instance_type: String,
    pub capacity_type: String,
    pub zone: String,
    /// USD per hour.
    pub price: f64,
    /// Non-DaemonSet pods ("namespace/name") that will be evicted.
    pub pods: Vec<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    pub reason: Reason,
    /// Nodes to remove.
    pub nodes: Vec<RemovedNode>,
    /// The scheduler's plan for the removed nodes' pods on the cluster without them:
    /// `new_claims` are the replacements (with the pods they are for), `existing` the pods
    /// that move to nodes that stay. Never has unschedulable pods, except when a static
    /// pool's drifted node is swapped ([`super::static_drift`]): its pods that fit nowhere
    /// are left to provisioning.
    pub plan: Plan,
    /// Sum of the removed nodes' prices, USD per hour.
    pub removed_price: f64,
    /// Sum of the replacements' prices (their cheapest option), USD per hour.
    pub replacement_price: f64,
    /// What, why and the saving, e.g. "replace node big (m.16x, on-demand, $1.1200/h) with
    /// one node (c.2x on-demand, $0.1200/h): underutilized: 0 of its 1 pod(s) fit on other
    /// nodes, the rest on a cheaper node; saves $1.0000/h".
    pub message: String,
}

impl Decision {
    pub fn action(&self) -> Action {
        if self.plan.new_claims.is_empty() {
            Action::Delete
        } else {
            Action::Replace
        }
    }

    /// The method that took it. Multi-node consolidation only ever takes two or more nodes
    /// and single-node one ([`super::consolidation`]), so the count tells them apart.
    pub fn method(&self) -> Method {
        match self.reason {
            Reason::Drifted => Method::Drift,
            Reason::Expired => Method::Expiration,
            Reason::Empty => Method::Emptiness,
            Reason::Underutilized if self.nodes.len() > 1 => Method::MultiNodeConsolidation,
            Reason::Underutilized => Method::SingleNodeConsolidation,
            Reason::Unhealthy => Method::Repair,
        }
    }

    /// USD per hour saved (negative when a drifted or expired node is replaced by a
    /// pricier one).
    pub fn saving(&self) -> f64 {
        self.removed_price - self.replacement_price
    }

    pub fn node_names(&self) -> Vec<&str> {
        self.nodes.iter().map(|n| n.name.as_str()).collect()
    }

    /// Non-DaemonSet pods evicted by this decision.
    pub fn pods(&self) -> impl Iterator<Item = &str> {
        self.nodes
            .iter()
            .flat_map(|n| n.pods.iter().map(String::as_str))
    }

    pub(super) fn describe(&mut self) {
        let pods: usize = self.nodes.iter().map(|n| n.pods.len()).sum();
        let what_nodes = if self.nodes.len() == 1 {
            let n = &self.nodes[0];
            format!(
                "node {} ({}, {}, ${:.4}/h)",
                n.name, n.instance_type, n.capacity_type, n.price
            )
        } else {
            let names: Vec<&str> = self.node_names();
            format!(
                "{} nodes ({}; ${:.4}/h)",
                self.nodes.len(),
                names.join(", "),
                self.removed_price
            )
        };
        let what = match self.action() {
            Action::Delete => format!("delete {what_nodes}"),
            Action::Replace => {
                let types: Vec<String> = self
                    .plan
                    .new_claims
                    .iter()
                    .map(|c| format!("{} {}", c.instance_type, c.capacity_type))
                    .collect();
                format!(
                    "replace {what_nodes} with {} ({}, ${:.4}/h)",
                    if types.len() == 1 {
                        "one node".to_string()
                    } else {
                        format!("{} nodes", types.len())
                    },
                    types.join(", "),
                    self.replacement_price
                )
            }
        };
        let moved = self
            .plan
            .existing
            .iter()
            .map(|e| e.pods.len())
            .sum::<usize>();
        let its = if self.nodes.len() == 1 {
            "its"
        } else {
            "their"
        };
        let why = match self.reason {
            Reason::Drifted => "drifted from its NodePool, node class or DaemonSets".to_string(),
            Reason::Expired => "older than the NodePool's expireAfter".to_string(),
            Reason::Empty => "no workload pods for consolidateAfter".to_string(),
            Reason::Unhealthy => "unhealthy past its toleration".to_string(),
            Reason::Underutilized => match self.action() {
                Action::Delete => format!("underutilized: {its} {pods} pod(s) fit on other nodes"),
                Action::Replace => format!(
                    "underutilized: {moved} of {its} {pods} pod(s) fit on other nodes, the rest on a cheaper node"
                ),
            },
        };
        let saving = self.saving();
        let money = if saving >= 0.0 {
            format!("saves ${saving:.4}/h")
        } else {
            format!("costs ${:.4}/h more", -saving)
        };
        self.message = format!("{what}: {why}; {money}");
    }
}
