//! Capacity that already exists or is already on its way: registered nodes and in-flight
//! NodeClaims, and the pods bound (or nominated) to them.

use crate::labels;
use crate::pod::Pod;
use crate::requirements::Requirements;
use crate::resources::Resources;
use crate::taints::Taint;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct ExistingNode {
    pub name: String,
    /// A registered node's labels as single-value requirements; an in-flight NodeClaim's
    /// requirements. Keys not listed are absent on the node.
    pub requirements: Requirements,
    /// Taints that block scheduling (startup taints of initialising nodes already removed).
    pub taints: Vec<Taint>,
    pub allocatable: Resources,
    /// NodePool that owns it, if any, so its capacity counts against that pool's limits.
    pub nodepool: Option<String>,
    /// Capacity, for NodePool limits.
    pub capacity: Resources,
    /// An in-flight NodeClaim rather than a registered node.
    pub in_flight: bool,
    /// Cordoned or being deleted: nothing new goes there.
    pub unschedulable: bool,
    /// Price per hour, when known (for consolidation).
    pub price: Option<f64>,
    /// Per CSI driver, how many volumes the node may attach (its CSINode); empty when the
    /// node has none, as new and in-flight capacity does: then nothing is limited.
    pub volume_limits: crate::volumes::VolumeLimits,
}

impl ExistingNode {
    /// The in-flight node a plan's new claim will be, labelled as planned (type, capacity
    /// type, zone, hostname, pool): what later decisions in the same pass see of it.
    pub fn planned(claim: &crate::plan::NewClaim) -> ExistingNode {
        let mut l = claim.labels.clone();
        for (k, v) in [
            (labels::INSTANCE_TYPE, &claim.instance_type),
            (labels::CAPACITY_TYPE, &claim.capacity_type),
            (labels::ZONE, &claim.zone),
            (labels::HOSTNAME, &claim.name),
            (labels::NODEPOOL, &claim.nodepool),
        ] {
            l.insert(k.to_string(), v.clone());
        }
        ExistingNode {
            name: claim.name.clone(),
            requirements: Requirements::from_labels(&l),
            taints: claim.taints.clone(),
            allocatable: claim.allocatable.clone(),
            nodepool: Some(claim.nodepool.clone()),
            capacity: claim.allocatable.clone(),
            in_flight: true,
            unschedulable: false,
            price: Some(claim.price_per_hour),
            volume_limits: Default::default(),
        }
    }
}

/// A pod already placed: running on a node or nominated to an in-flight NodeClaim.
#[derive(Debug, Clone, PartialEq)]
pub struct BoundPod {
    pub node: String,
    pub pod: Pod,
    /// Goes with its node: disruption neither moves it nor counts it against the node being
    /// empty. DaemonSet pods, and (as callers read pods) mirror pods and pods already
    /// terminating other than a StatefulSet's, which nothing needs to place again.
    pub daemon: bool,
}
