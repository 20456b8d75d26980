//! A pod as placement sees it: requests already summed, selectors already parsed.

use std::collections::{BTreeMap, BTreeSet};

use crate::requirements::Requirements;
use crate::resources::Resources;
use crate::taints::Toleration;

/// Which namespaces a pod-affinity term looks at.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Namespaces {
    /// Every namespace (an empty `namespaceSelector`).
    All,
    Only(BTreeSet<String>),
}

impl Namespaces {
    pub fn contains(&self, ns: &str) -> bool {
        match self {
            Namespaces::All => true,
            Namespaces::Only(set) => set.contains(ns),
        }
    }
}

/// A label selector over pods, as requirements on pod labels. A `None` selector in
/// Kubernetes matches nothing; callers represent that by not creating the term.
pub type PodSelector = Requirements;

/// A required or preferred pod (anti-)affinity term.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AffinityTerm {
    pub selector: PodSelector,
    pub namespaces: Namespaces,
    pub topology_key: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TopologySpread {
    pub max_skew: u32,
    pub topology_key: String,
    /// `DoNotSchedule`; `ScheduleAnyway` constraints are preferences.
    pub hard: bool,
    pub selector: PodSelector,
    pub min_domains: Option<u32>,
    /// `nodeAffinityPolicy: Honor` (the default): only domains the pod may use count.
    pub honor_node_affinity: bool,
    /// `nodeTaintsPolicy: Honor`: domains whose nodes the pod does not tolerate do not count.
    pub honor_taints: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HostPort {
    pub port: u16,
    pub protocol: String,
    /// Empty or "0.0.0.0" means every address.
    pub host_ip: String,
}

impl HostPort {
    pub fn conflicts(&self, other: &HostPort) -> bool {
        let wild = |ip: &str| ip.is_empty() || ip == "0.0.0.0";
        self.port == other.port
            && self.protocol == other.protocol
            && (wild(&self.host_ip) || wild(&other.host_ip) || self.host_ip == other.host_ip)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Weighted<T> {
    pub weight: i32,
    pub term: T,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Pod {
    pub namespace: String,
    pub name: String,
    pub labels: BTreeMap<String, String>,
    /// Effective requests (see [`crate::resources::effective_pod_requests`]), with `pods: 1`.
    pub requests: Resources,
    /// `nodeSelector` merged into each required node-affinity term; the terms are ORed.
    /// Never empty: a pod without terms has one empty entry.
    pub node_requirements: Vec<Requirements>,
    pub preferred_node: Vec<Weighted<Requirements>>,
    pub tolerations: Vec<Toleration>,
    pub spread: Vec<TopologySpread>,
    pub affinity: Vec<AffinityTerm>,
    pub anti_affinity: Vec<AffinityTerm>,
    pub preferred_affinity: Vec<Weighted<AffinityTerm>>,
    pub preferred_anti_affinity: Vec<Weighted<AffinityTerm>>,
    pub host_ports: Vec<HostPort>,
    pub priority: i32,
}

impl Pod {
    pub fn new(namespace: &str, name: &str, requests: Resources) -> Pod {
        let mut requests = requests;
        requests.pods = 1;
        Pod {
            namespace: namespace.to_string(),
            name: name.to_string(),
            requests,
            node_requirements: vec![Requirements::new()],
            ..Default::default()
        }
    }

    /// "namespace/name", how pods are named in plans and messages.
    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    /// Whether a term's selector and namespaces pick this pod.
    pub fn matched_by(&self, selector: &PodSelector, namespaces: &Namespaces) -> bool {
        namespaces.contains(&self.namespace) && selector.matches_labels(&self.labels)
    }
}
