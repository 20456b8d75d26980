//! Nominations: which pods a NodeClaim was launched for. Written by provisioning as the
//! [`NOMINATED_PODS`](adze_scheduling::labels::NOMINATED_PODS) annotation (a JSON array of
//! `{"namespace","name","uid"}`), read back by provisioning (so capacity is never created
//! twice for a pod) and by the extender.

use std::collections::BTreeMap;

use adze_api::NodeClaim;
use adze_scheduling::labels::NOMINATED_PODS;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Nomination {
    pub namespace: String,
    pub name: String,
    pub uid: String,
}

/// The annotation value for a claim's pods.
pub fn encode(pods: &[Nomination]) -> String {
    serde_json::to_string(pods).expect("nominations serialize")
}

/// Parses an annotation value; a malformed value nominates nothing (and says why).
pub fn decode(value: &str) -> Result<Vec<Nomination>, serde_json::Error> {
    serde_json::from_str(value)
}

/// A claim's nominations; empty when it has none or the annotation does not parse.
pub fn of_claim(claim: &NodeClaim) -> Vec<Nomination> {
    claim
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(NOMINATED_PODS))
        .and_then(|v| decode(v).ok())
        .unwrap_or_default()
}

/// `current` plus those of `add` it lacks (by uid); `None` when nothing is new.
pub fn extend(current: &[Nomination], add: &[Nomination]) -> Option<Vec<Nomination>> {
    let mut out = current.to_vec();
    for n in add {
        if !out.iter().any(|c| c.uid == n.uid) {
            out.push(n.clone());
        }
    }
    (out.len() > current.len()).then_some(out)
}

/// Pod uid → claim name, over the claims whose nominations still hold.
pub fn by_uid<'a>(claims: impl IntoIterator<Item = &'a NodeClaim>) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for c in claims {
        let name = c.metadata.name.clone().unwrap_or_default();
        for n in of_claim(c) {
            out.insert(n.uid, name.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nom(uid: &str) -> Nomination {
        Nomination {
            namespace: "ns".into(),
            name: format!("p-{uid}"),
            uid: uid.into(),
        }
    }

    #[test]
    fn extending_nominations_adds_only_new_pods() {
        let current = [nom("a")];
        assert_eq!(extend(&current, &[nom("a")]), None);
        assert_eq!(
            extend(&current, &[nom("a"), nom("b")]),
            Some(vec![nom("a"), nom("b")])
        );
    }

    #[test]
    fn nominations_round_trip_through_the_annotation() {
        let pods = vec![Nomination {
            namespace: "default".into(),
            name: "web-1".into(),
            uid: "u-1".into(),
        }];
        let text = encode(&pods);
        assert_eq!(
            text,
            r#"[{"namespace":"default","name":"web-1","uid":"u-1"}]"#
        );
        assert_eq!(decode(&text).unwrap(), pods);
    }

    #[test]
    fn malformed_annotation_nominates_nothing() {
        let mut claim = NodeClaim::new("c", serde_json::from_value(serde_json::json!({"nodeClassRef": {"group": "aws.adze.sh", "kind": "EC2NodeClass", "name": "default"}})).unwrap());
        claim.metadata.annotations =
            Some([(NOMINATED_PODS.to_string(), "not json".to_string())].into());
        assert!(of_claim(&claim).is_empty());
        assert!(decode("{").is_err());
    }
}
