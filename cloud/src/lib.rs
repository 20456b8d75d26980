//! What Adze needs from a cloud: launch an instance for a NodeClaim, terminate it, look it up,
//! list ours, the instance types it offers, and whether an instance drifted from its claim.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use adze_api::NodeClaim;
use adze_scheduling::InstanceType;
use futures::future::BoxFuture;
use thiserror::Error;

/// A launched instance, as the NodeClaim status records it.
#[derive(Debug, Clone, PartialEq)]
pub struct Instance {
    pub provider_id: String,
    pub instance_type: String,
    pub zone: String,
    pub capacity_type: String,
    pub capacity: BTreeMap<String, String>,
    pub allocatable: BTreeMap<String, String>,
}

#[derive(Debug, Error)]
pub enum CloudError {
    /// The offering (type × zone × capacity type) cannot be launched now; try another.
    #[error("insufficient capacity for {instance_type} in {zone} ({capacity_type}): {message}")]
    InsufficientCapacity {
        instance_type: String,
        zone: String,
        capacity_type: String,
        message: String,
    },
    #[error("{0}")]
    Other(String),
}

pub trait CloudProvider: Send + Sync {
    fn name(&self) -> &'static str;
    /// Launches the claim's instance; idempotent per claim name.
    fn create<'a>(&'a self, claim: &'a NodeClaim) -> BoxFuture<'a, Result<Instance, CloudError>>;
    fn delete<'a>(&'a self, claim: &'a NodeClaim) -> BoxFuture<'a, Result<(), CloudError>>;
    fn get<'a>(
        &'a self,
        provider_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<Instance>, CloudError>>;
    fn list(&self) -> BoxFuture<'_, Result<Vec<Instance>, CloudError>>;
    fn instance_types(&self) -> Vec<Arc<InstanceType>>;
    fn is_drifted<'a>(&'a self, claim: &'a NodeClaim) -> BoxFuture<'a, Result<bool, CloudError>>;
}

/// Instance type, zone, capacity type.
type OfferingKey = (String, String, String);

/// Offerings that failed to launch recently, kept out of placement for `ttl` (3 min).
#[derive(Clone)]
pub struct UnavailableOfferings {
    ttl: Duration,
    entries: Arc<Mutex<HashMap<OfferingKey, Instant>>>,
}

impl UnavailableOfferings {
    pub fn new(ttl: Duration) -> Self {
        UnavailableOfferings {
            ttl,
            entries: Arc::default(),
        }
    }

    pub fn mark(&self, instance_type: &str, zone: &str, capacity_type: &str, now: Instant) {
        self.entries.lock().unwrap().insert(
            (instance_type.into(), zone.into(), capacity_type.into()),
            now + self.ttl,
        );
    }

    /// The catalog with offerings still in the cache marked unavailable.
    pub fn apply(&self, catalog: &[Arc<InstanceType>], now: Instant) -> Vec<Arc<InstanceType>> {
        let mut entries = self.entries.lock().unwrap();
        entries.retain(|_, until| *until > now);
        if entries.is_empty() {
            return catalog.to_vec();
        }
        catalog
            .iter()
            .map(|t| {
                let hit = |o: &adze_scheduling::Offering| {
                    entries.contains_key(&(t.name.clone(), o.zone.clone(), o.capacity_type.clone()))
                };
                if !t.offerings.iter().any(hit) {
                    return t.clone();
                }
                let mut t2 = InstanceType::clone(t);
                for o in &mut t2.offerings {
                    if hit(o) {
                        o.available = false;
                    }
                }
                t2.refresh_offering_requirements();
                Arc::new(t2)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failed_offering_is_unavailable_for_three_minutes() {
        let catalog = adze_scheduling::catalog::embedded();
        let t = catalog.iter().find(|t| t.name == "m5.large").unwrap();
        let o = t.offerings.iter().find(|o| o.available).unwrap().clone();
        let cache = UnavailableOfferings::new(Duration::from_secs(180));
        let now = Instant::now();
        cache.mark("m5.large", &o.zone, &o.capacity_type, now);
        let marked = cache.apply(&catalog, now + Duration::from_secs(179));
        let m = marked.iter().find(|t| t.name == "m5.large").unwrap();
        let mo = m
            .offerings
            .iter()
            .find(|x| x.zone == o.zone && x.capacity_type == o.capacity_type)
            .unwrap();
        assert!(!mo.available);
        let later = cache.apply(&catalog, now + Duration::from_secs(181));
        assert!(Arc::ptr_eq(&later[0], &catalog[0]));
    }
}
