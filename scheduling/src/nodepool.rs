//! A NodePool as placement sees it: what its nodes would look like and how much room its
//! limits leave.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::instance_type::InstanceType;
use crate::labels;
use crate::requirements::{Requirement, Requirements};
use crate::resources::Resources;
use crate::taints::Taint;

/// The `spec.limits` key that caps how many nodes a pool has rather than a resource: every
/// node and in-flight claim counts one, whatever its size. Usage maps ([`Resources`]) carry
/// it as an extended resource of that name.
pub const NODES_LIMIT: &str = "nodes";

/// What one more node of `capacity` takes of limit `key`.
pub fn limit_need(key: &str, capacity: &Resources) -> i64 {
    if key == NODES_LIMIT {
        1
    } else {
        capacity.get(key)
    }
}

/// Whether one more node of `capacity` stays within `room` (limit minus usage per key).
pub fn within_room(room: &BTreeMap<String, i64>, capacity: &Resources) -> bool {
    room.iter()
        .all(|(k, left)| limit_need(k, capacity) <= *left)
}

/// What a node of `capacity` counts against limits: its capacity and one node.
pub fn limit_usage(capacity: &Resources) -> Resources {
    let mut r = capacity.clone();
    r.set(NODES_LIMIT, r.get(NODES_LIMIT).saturating_add(1));
    r
}

#[derive(Debug, Clone, PartialEq)]
pub struct NodePool {
    pub name: String,
    /// Higher weights are tried first.
    pub weight: i32,
    /// `spec.template.spec.requirements` (with minValues).
    pub requirements: Requirements,
    /// `spec.template.metadata.labels`.
    pub labels: BTreeMap<String, String>,
    pub taints: Vec<Taint>,
    /// Taints the node starts with and loses once initialised; pods need not tolerate them.
    pub startup_taints: Vec<Taint>,
    /// Resource name → maximum total capacity; resources not listed are unlimited.
    pub limits: BTreeMap<String, i64>,
    /// Instance types the pool's node class can launch; filtered by requirements here.
    pub instance_types: Vec<Arc<InstanceType>>,
}

impl NodePool {
    pub fn new(name: &str, instance_types: Vec<Arc<InstanceType>>) -> NodePool {
        NodePool {
            name: name.to_string(),
            weight: 0,
            requirements: Requirements::new(),
            labels: BTreeMap::new(),
            taints: Vec::new(),
            startup_taints: Vec::new(),
            limits: BTreeMap::new(),
            instance_types,
        }
    }

    /// What every node of this pool is constrained to: requirements, template labels and
    /// the nodepool label itself.
    pub fn node_requirements(&self) -> Requirements {
        let mut r = self.requirements.clone();
        for (k, v) in &self.labels {
            r.add(Requirement::single(k, v));
        }
        r.add(Requirement::single(labels::NODEPOOL, &self.name));
        r
    }

    /// Headroom under the limits given what is already in use; None when unlimited.
    pub fn remaining(&self, in_use: &Resources) -> Option<BTreeMap<String, i64>> {
        if self.limits.is_empty() {
            return None;
        }
        Some(
            self.limits
                .iter()
                .map(|(k, v)| (k.clone(), v.saturating_sub(in_use.get(k))))
                .collect(),
        )
    }
}
