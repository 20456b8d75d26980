//! A pod as placement sees it: requests already summed, selectors already parsed.

use std::collections::{BTreeMap, BTreeSet};

use crate::labels;
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
    /// The pod's spec lists `topologySpreadConstraints` (even ones conversion dropped for
    /// having no selector): kube-scheduler's cluster defaults do not apply
    /// ([`crate::default_spread`]).
    pub spread_declared: bool,
    pub affinity: Vec<AffinityTerm>,
    pub anti_affinity: Vec<AffinityTerm>,
    pub preferred_affinity: Vec<Weighted<AffinityTerm>>,
    pub preferred_anti_affinity: Vec<Weighted<AffinityTerm>>,
    pub host_ports: Vec<HostPort>,
    pub priority: i32,
    /// The CSI volumes the pod attaches (see [`crate::volumes`]); empty for most pods.
    pub volumes: crate::volumes::PodVolumes,
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

    /// Reads requirements and topology keys on Karpenter's well-known labels as the Adze
    /// labels they alias ([`labels::KARPENTER_ALIASES`]): right only where new nodes carry
    /// both keys (`--karpenter-labels`), which is when callers use it.
    pub fn alias_karpenter_keys(&mut self) {
        self.rename_node_keys(labels::adze_key_for_karpenter);
    }

    /// Reads deprecated node label keys (`beta.kubernetes.io/arch`,
    /// `failure-domain.beta.kubernetes.io/zone`, ...) as their GA names, in requirements and
    /// topology keys alike.
    pub fn normalize_deprecated_keys(&mut self) {
        self.rename_node_keys(labels::ga_key_for_deprecated);
    }

    fn rename_node_keys(&mut self, rename: fn(&str) -> Option<&'static str>) {
        for t in &mut self.node_requirements {
            *t = t.renamed(rename);
        }
        for w in &mut self.preferred_node {
            w.term = w.term.renamed(rename);
        }
        let topology_keys = self
            .spread
            .iter_mut()
            .map(|s| &mut s.topology_key)
            .chain(self.affinity.iter_mut().map(|a| &mut a.topology_key))
            .chain(self.anti_affinity.iter_mut().map(|a| &mut a.topology_key))
            .chain(
                self.preferred_affinity
                    .iter_mut()
                    .map(|w| &mut w.term.topology_key),
            )
            .chain(
                self.preferred_anti_affinity
                    .iter_mut()
                    .map(|w| &mut w.term.topology_key),
            );
        for key in topology_keys {
            if let Some(new) = rename(key) {
                *key = new.to_string();
            }
        }
    }

    /// "namespace/name", how pods are named in plans and messages.
    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    /// ANDs one more ORed set of node-selector terms (a volume's topology, say) into the
    /// pod's required node affinity: every pod term is combined with every new term, and
    /// combinations no node can satisfy are dropped. Returns false, leaving the pod as it
    /// was, when no combination survives, so the caller can say which constraint was the
    /// last straw. An empty `terms` adds nothing.
    pub fn and_node_terms(&mut self, terms: &[Requirements]) -> bool {
        if terms.is_empty() {
            return true;
        }
        let mut combined = Vec::new();
        for mine in &self.node_requirements {
            for theirs in terms {
                let mut t = mine.clone();
                t.add_all(theirs);
                if t.unsatisfiable_key().is_none() && !combined.contains(&t) {
                    combined.push(t);
                }
            }
        }
        if combined.is_empty() {
            return false;
        }
        self.node_requirements = combined;
        true
    }

    /// Whether some required node-affinity term can be met by a node at all.
    pub fn has_satisfiable_node_terms(&self) -> bool {
        self.node_requirements
            .iter()
            .any(|t| t.unsatisfiable_key().is_none())
    }

    /// Whether a term's selector and namespaces pick this pod.
    pub fn matched_by(&self, selector: &PodSelector, namespaces: &Namespaces) -> bool {
        namespaces.contains(&self.namespace) && selector.matches_labels(&self.labels)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Requirement;
    use crate::labels::{ARCH, ZONE};

    fn zone(z: &[&str]) -> Requirements {
        Requirements::new().with(Requirement::any_of(ZONE, z.iter().copied()))
    }

    #[test]
    fn node_terms_are_anded_with_each_of_the_pods_terms() {
        let mut pod = Pod::new("default", "p", Resources::default());
        pod.node_requirements = vec![
            zone(&["a", "b"]).with(Requirement::single(ARCH, "arm64")),
            zone(&["c"]),
        ];
        assert!(pod.and_node_terms(&[zone(&["b"]), zone(&["c", "d"])]));
        assert_eq!(
            pod.node_requirements,
            vec![
                zone(&["b"]).with(Requirement::single(ARCH, "arm64")),
                zone(&["c"]),
            ],
            "a∧b and c∧c survive; a∧c, c∧b fall away"
        );
    }

    #[test]
    fn disjoint_node_terms_leave_the_pod_unchanged_and_say_so() {
        let mut pod = Pod::new("default", "p", Resources::default());
        pod.node_requirements = vec![zone(&["a"])];
        assert!(!pod.and_node_terms(&[zone(&["b"])]));
        assert_eq!(pod.node_requirements, vec![zone(&["a"])]);
        assert!(pod.has_satisfiable_node_terms());
        assert!(pod.and_node_terms(&[]), "no terms, no constraint");
    }
}
