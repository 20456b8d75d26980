//! DaemonSet pods a new node must make room for. Which DaemonSets run on a node depends on
//! the node's instance type (a DaemonSet may select by size, family, arch or GPU), so the
//! overhead is worked out per (pool, type), once per placement run.

use crate::instance_type::InstanceType;
use crate::labels;
use crate::nodepool::NodePool;
use crate::pod::{HostPort, Pod};
use crate::requirements::{Operator, Requirement, Requirements, Undefined};
use crate::resources::Resources;
use crate::taints::first_untolerated;

use super::state::type_compatible;

/// Karpenter's lifecycle labels, read as Adze's: a DaemonSet written for Karpenter nodes
/// selects them, and Adze's nodes carry the equivalent.
const LIFECYCLE_ALIASES: &[(&str, &str)] = &[
    ("karpenter.sh/initialized", labels::INITIALIZED),
    ("karpenter.sh/registered", labels::REGISTERED),
];

/// The DaemonSets of a snapshot, their node terms read with Karpenter's keys as Adze's.
pub(crate) struct Daemons<'a> {
    pods: &'a [Pod],
    terms: Vec<Vec<Requirements>>,
}

/// The DaemonSets that may run on some node of one pool.
pub(crate) struct PoolDaemons {
    /// (daemon index, indices of its terms a node of the pool can satisfy).
    candidates: Vec<(usize, Vec<usize>)>,
}

fn rename(key: &str) -> Option<&'static str> {
    labels::adze_key_for_karpenter(key).or_else(|| {
        LIFECYCLE_ALIASES
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, a)| *a)
    })
}

impl<'a> Daemons<'a> {
    pub fn new(pods: &'a [Pod]) -> Daemons<'a> {
        let terms = pods
            .iter()
            .map(|d| {
                d.node_requirements
                    .iter()
                    .map(|t| t.renamed(rename))
                    .collect()
            })
            .collect();
        Daemons { pods, terms }
    }

    /// What every node of `pool` carries once it is up, as the DaemonSet controller sees
    /// it: the pool's requirements and labels, and the labels Adze adds at registration and
    /// initialisation.
    fn node_requirements(reqs: &Requirements) -> Requirements {
        let mut r = reqs.clone();
        r.add(Requirement::single(labels::REGISTERED, "true"));
        r.add(Requirement::single(labels::INITIALIZED, "true"));
        if let Ok(exists) = Requirement::new::<&str>(labels::NODECLAIM, Operator::Exists, &[]) {
            r.add(exists);
        }
        r
    }

    /// The DaemonSets whose pods may run on some node of `pool` (requirements `reqs`): they
    /// tolerate its taints and one of their terms fits its labels.
    pub fn for_pool(&self, pool: &NodePool, reqs: &Requirements) -> PoolDaemons {
        let node = Self::node_requirements(reqs);
        let mut candidates = Vec::new();
        for (i, d) in self.pods.iter().enumerate() {
            if first_untolerated(&pool.taints, &d.tolerations, false).is_some() {
                continue;
            }
            let terms: Vec<usize> = (0..self.terms[i].len())
                .filter(|&t| node.compatible(&self.terms[i][t], Undefined::WellKnownOpen))
                .collect();
            if !terms.is_empty() {
                candidates.push((i, terms));
            }
        }
        PoolDaemons { candidates }
    }

    /// The candidates of a pool that also run on a node of type `it`: their terms the
    /// type's own labels and offerings also meet.
    fn on_type<'s>(
        &'s self,
        pool: &'s PoolDaemons,
        it: &'s InstanceType,
    ) -> impl Iterator<Item = &'s Pod> + 's {
        pool.candidates
            .iter()
            .filter(move |(i, terms)| {
                terms
                    .iter()
                    .any(|&t| type_compatible(it, &self.terms[*i][t], None))
            })
            .map(|(i, _)| &self.pods[*i])
    }

    /// The DaemonSet overhead on a node of type `it` in a pool: the requests of every
    /// DaemonSet that runs on that type.
    pub fn overhead(&self, pool: &PoolDaemons, it: &InstanceType) -> Resources {
        let mut total = Resources::default();
        for d in self.on_type(pool, it) {
            total.add(&d.requests);
        }
        total
    }

    /// The host ports DaemonSet pods hold on a node of type `it` in a pool. Worked out per
    /// type like the overhead: a DaemonSet that selects only large types holds its port on
    /// large nodes alone, and a pod needing that port may still go on a small one.
    pub fn host_ports(&self, pool: &PoolDaemons, it: &InstanceType) -> Vec<HostPort> {
        self.on_type(pool, it)
            .flat_map(|d| d.host_ports.iter().cloned())
            .collect()
    }
}
