//! Drift, Karpenter v1's meaning: a node has drifted when it no longer is what its NodePool
//! and node class would make today. Four independent checks, each a reason on the
//! NodeClaim's `Drifted` condition:
//!
//! - **Static fields** ([`check_hash`]): the NodeClaim carries, from its creation, a hash of
//!   its NodePool's static template fields and one of its node class's static fields, each
//!   with the version of the hashing that made it. A different hash of the same version is
//!   drift; a different *version* (a release changed which fields are hashed or how) is not:
//!   the claim is re-stamped with the current hash, so an upgrade replaces nothing. A claim
//!   already drifted stays drifted.
//! - **Requirements** ([`unmet_requirement`]): the node's labels no longer satisfy the
//!   NodePool's requirements. Widening a requirement drifts nothing; narrowing it to exclude
//!   the node's instance type, zone or capacity type drifts that node.
//! - **Resolved cloud values** (image, subnet, security groups): the cloud provider says
//!   whether the instance still uses values its node class resolves to today.
//! - **DaemonSets** ([`crate::late_daemons::misfits`]): the node's pods and today's
//!   DaemonSets no longer fit on it (a DaemonSet created since has its pod pending there).
//!   Today's plan would launch a bigger node; drift replaces it with one, under the
//!   `Drifted` budget, its pods moved gracefully.
//!
//! Pure: hashes and labels in, a verdict out.

use std::collections::BTreeMap;

use crate::labels;
use crate::requirements::Requirements;

/// Why a NodeClaim is drifted: the `reason` of its `Drifted` condition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DriftReason {
    /// A static field of the NodePool's template changed.
    NodePool,
    /// A static field of the node class changed, or the image, subnet or security groups the
    /// class resolves to no longer include the instance's.
    NodeClass,
    /// The node's labels no longer satisfy the NodePool's requirements.
    Requirements,
    /// Its pods and the DaemonSets that run on it today no longer fit together: a DaemonSet
    /// created after it was planned has its pod pending there
    /// ([`crate::late_daemons::misfits`]; Karpenter #731). Today's plan would size it bigger.
    DaemonSets,
}

impl DriftReason {
    pub fn as_str(self) -> &'static str {
        match self {
            DriftReason::NodePool => "NodePoolDrifted",
            DriftReason::NodeClass => "NodeClassDrifted",
            DriftReason::Requirements => "RequirementsDrifted",
            DriftReason::DaemonSets => "DaemonSetsDrifted",
        }
    }

    pub fn parse(s: &str) -> Option<DriftReason> {
        [
            DriftReason::NodePool,
            DriftReason::NodeClass,
            DriftReason::Requirements,
            DriftReason::DaemonSets,
        ]
        .into_iter()
        .find(|r| r.as_str() == s)
    }
}

impl std::fmt::Display for DriftReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A hash as stamped on a NodeClaim: its value and the hashing version that made it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp<'a> {
    pub hash: &'a str,
    pub version: &'a str,
}

/// What a NodeClaim's stamped hash says against the current one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HashCheck {
    /// Same version, same hash: not drifted.
    Matches,
    /// Same version, another hash: the static fields changed since the claim was made.
    Drifted,
    /// No stamp, or one of another version: nothing comparable. Not drift; the claim should
    /// be stamped with the current hash and version.
    Restamp,
}

/// Compares a claim's stamp (`None` when it has no hash, or no version annotation as with
/// claims made before versions existed: pass `version: ""`) with the current hash.
/// `drifted_already`: the claim's `Drifted` condition is already True for this reason; such a
/// claim keeps its old stamp and stays drifted across a version change.
pub fn check_hash(
    claim: Option<Stamp<'_>>,
    current: Stamp<'_>,
    drifted_already: bool,
) -> HashCheck {
    match claim {
        None => HashCheck::Restamp,
        Some(c) if c.version != current.version => {
            if drifted_already {
                HashCheck::Drifted
            } else {
                HashCheck::Restamp
            }
        }
        Some(c) if c.hash == current.hash => HashCheck::Matches,
        Some(_) => HashCheck::Drifted,
    }
}

/// Whether the instance or the cloud supplies label `key` (rather than the NodePool's
/// template): an older node may lack such a label without having drifted.
fn supplied_by_instance(key: &str) -> bool {
    labels::is_well_known(key)
        || key == labels::INSTANCE_TYPE
        || labels::adze_key_for_karpenter(key).is_some()
        || labels::KARPENTER_ALIASES
            .iter()
            .any(|(_, adze)| *adze == key)
        || key.starts_with("aws.adze.sh/")
        || key.starts_with("karpenter.k8s.aws/")
}

/// The first of `requirements` (a NodePool's `spec.template.spec.requirements`) that a node
/// labelled `node_labels` does not satisfy, described for the condition's message; `None`
/// when the node is compatible. A requirement on a Karpenter key reads the node's Adze
/// equivalent when the node lacks Karpenter's. A label the node lacks satisfies a requirement
/// that allows its absence (`NotIn`, `DoesNotExist`) and any requirement on a key the
/// instance or cloud supplies (well-known and instance-type keys: an older node may not carry
/// every one); a missing custom label breaks an `In` or `Exists`, as the NodePool would give
/// it to a node made today.
pub fn unmet_requirement(
    requirements: &Requirements,
    node_labels: &BTreeMap<String, String>,
) -> Option<String> {
    requirements.iter().find_map(|r| {
        let value = node_labels
            .get(&r.key)
            .or_else(|| labels::adze_key_for_karpenter(&r.key).and_then(|k| node_labels.get(k)))
            .map(String::as_str);
        let ok = match value {
            Some(v) => r.allows(v),
            None => r.allows_absent() || supplied_by_instance(&r.key),
        };
        (!ok).then(|| match value {
            Some(v) => format!("label {}={v} no longer satisfies requirement {r}", r.key),
            None => format!("node has no label {} required by {r}", r.key),
        })
    })
}

/// The reasons a NodeClaim is drifted, from each check's outcome; empty when it is not.
/// The first is the one its `Drifted` condition names (the others go in the message).
pub fn reasons(
    nodepool: HashCheck,
    nodeclass: HashCheck,
    cloud_nodeclass: bool,
    requirements: Option<&str>,
    daemonsets: Option<&str>,
) -> Vec<DriftReason> {
    let mut out = Vec::new();
    if nodepool == HashCheck::Drifted {
        out.push(DriftReason::NodePool);
    }
    if nodeclass == HashCheck::Drifted || cloud_nodeclass {
        out.push(DriftReason::NodeClass);
    }
    if requirements.is_some() {
        out.push(DriftReason::Requirements);
    }
    if daemonsets.is_some() {
        out.push(DriftReason::DaemonSets);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::requirements::{Operator, Requirement};
    use proptest::prelude::*;

    fn stamp<'a>(hash: &'a str, version: &'a str) -> Stamp<'a> {
        Stamp { hash, version }
    }

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn reqs(list: &[(&str, Operator, &[&str])]) -> Requirements {
        let mut r = Requirements::new();
        for (k, op, vals) in list {
            r.add(Requirement::new(k, *op, vals).unwrap());
        }
        r
    }

    #[test]
    fn same_version_compares_hashes() {
        let now = stamp("aaaa", "v2");
        assert_eq!(
            check_hash(Some(stamp("aaaa", "v2")), now, false),
            HashCheck::Matches
        );
        assert_eq!(
            check_hash(Some(stamp("bbbb", "v2")), now, false),
            HashCheck::Drifted
        );
    }

    #[test]
    fn version_change_restamps_instead_of_drifting() {
        let now = stamp("aaaa", "v2");
        // A claim from a release that hashed other fields: different hash, other version.
        assert_eq!(
            check_hash(Some(stamp("zzzz", "v1")), now, false),
            HashCheck::Restamp
        );
        // Claims from before versions existed carry no version annotation.
        assert_eq!(
            check_hash(Some(stamp("zzzz", "")), now, false),
            HashCheck::Restamp
        );
        assert_eq!(check_hash(None, now, false), HashCheck::Restamp);
    }

    #[test]
    fn drifted_claim_stays_drifted_across_a_version_change() {
        let now = stamp("aaaa", "v2");
        assert_eq!(
            check_hash(Some(stamp("zzzz", "v1")), now, true),
            HashCheck::Drifted
        );
    }

    #[test]
    fn widening_a_requirement_drifts_nothing() {
        let node = labels(&[
            (labels::INSTANCE_TYPE, "m5.large"),
            (labels::ZONE, "us-west-2a"),
        ]);
        let before = reqs(&[(labels::INSTANCE_TYPE, Operator::In, &["m5.large"])]);
        let after = reqs(&[(
            labels::INSTANCE_TYPE,
            Operator::In,
            &["m5.large", "m5.2xlarge"],
        )]);
        assert_eq!(unmet_requirement(&before, &node), None);
        assert_eq!(unmet_requirement(&after, &node), None);
    }

    #[test]
    fn narrowing_past_the_nodes_type_zone_or_capacity_drifts_it() {
        let node = labels(&[
            (labels::INSTANCE_TYPE, "m5.large"),
            (labels::ZONE, "us-west-2a"),
            (labels::CAPACITY_TYPE, "spot"),
        ]);
        for (key, keep) in [
            (labels::INSTANCE_TYPE, "m5.2xlarge"),
            (labels::ZONE, "us-west-2b"),
            (labels::CAPACITY_TYPE, "on-demand"),
        ] {
            let r = reqs(&[(key, Operator::In, &[keep])]);
            let why = unmet_requirement(&r, &node).expect("drifted");
            assert!(why.contains(key), "{why}");
        }
        let not_in = reqs(&[(labels::ZONE, Operator::NotIn, &["us-west-2a"])]);
        assert!(unmet_requirement(&not_in, &node).is_some());
    }

    #[test]
    fn missing_labels_drift_only_custom_keys() {
        let node = labels(&[(labels::INSTANCE_TYPE, "m5.large")]);
        // An older node may lack a well-known label the pool now names: not drift.
        let wk = reqs(&[(labels::INSTANCE_GPU_NAME, Operator::In, &["a10g"])]);
        assert_eq!(unmet_requirement(&wk, &node), None);
        let it = reqs(&[(labels::INSTANCE_CATEGORY, Operator::In, &["c", "m"])]);
        assert_eq!(unmet_requirement(&it, &node), None);
        // Karpenter's key reads the node's Adze label.
        let spot = labels(&[(labels::CAPACITY_TYPE, "spot")]);
        let k = reqs(&[("karpenter.sh/capacity-type", Operator::In, &["on-demand"])]);
        assert!(unmet_requirement(&k, &spot).is_some());
        let k = reqs(&[("karpenter.sh/capacity-type", Operator::In, &["spot"])]);
        assert_eq!(unmet_requirement(&k, &spot), None);
        // A custom label the pool now requires, which every new node would carry: drift.
        let custom = reqs(&[("team", Operator::In, &["a"])]);
        assert!(unmet_requirement(&custom, &node).is_some());
        let absent = reqs(&[("team", Operator::DoesNotExist, &[])]);
        assert_eq!(unmet_requirement(&absent, &node), None);
    }

    #[test]
    fn reasons_in_condition_order() {
        assert!(reasons(HashCheck::Matches, HashCheck::Restamp, false, None, None).is_empty());
        assert_eq!(
            reasons(
                HashCheck::Matches,
                HashCheck::Matches,
                false,
                None,
                Some("y")
            ),
            vec![DriftReason::DaemonSets]
        );
        assert_eq!(
            DriftReason::parse("DaemonSetsDrifted"),
            Some(DriftReason::DaemonSets)
        );
        assert_eq!(
            reasons(
                HashCheck::Drifted,
                HashCheck::Matches,
                true,
                Some("x"),
                None
            ),
            vec![
                DriftReason::NodePool,
                DriftReason::NodeClass,
                DriftReason::Requirements
            ]
        );
        assert_eq!(
            DriftReason::parse("RequirementsDrifted"),
            Some(DriftReason::Requirements)
        );
    }

    proptest! {
        /// Adding values to an `In` requirement never drifts a node it did not drift; taking
        /// the node's own value away always does.
        #[test]
        fn widening_never_drifts_and_excluding_the_value_always_does(
            values in prop::collection::btree_set("[a-e]", 1..5),
            extra in prop::collection::btree_set("[a-h]", 0..5),
            node_value in "[a-e]",
        ) {
            let node = labels(&[(labels::ZONE, node_value.as_str())]);
            let narrow: Vec<&str> = values.iter().map(String::as_str).collect();
            let wide: Vec<&str> = values.union(&extra).map(String::as_str).collect();
            let before = reqs(&[(labels::ZONE, Operator::In, &narrow)]);
            let after = reqs(&[(labels::ZONE, Operator::In, &wide)]);
            if unmet_requirement(&before, &node).is_none() {
                prop_assert!(unmet_requirement(&after, &node).is_none());
            }
            let without: Vec<&str> = wide.iter().copied().filter(|v| *v != node_value).collect();
            if !without.is_empty() {
                let excluded = reqs(&[(labels::ZONE, Operator::In, &without)]);
                prop_assert!(unmet_requirement(&excluded, &node).is_some());
            }
        }
    }
}
