//! Drift from the NodePool: every NodeClaim records a hash of its pool's `spec.template`
//! when it is created (annotation [`NODEPOOL_HASH`]); a claim whose hash differs from the
//! pool's current one was made from an older template and is replaced. The hash is FNV-1a
//! over the template's JSON (struct fields in declaration order, maps sorted), so it is the
//! same in every process and every release that keeps the template's shape.

use adze_api::{NodeClaim, NodePool};

pub const NODEPOOL_HASH: &str = "adze.sh/nodepool-hash";

/// The hash of `pool`'s template, as the annotation value.
pub fn template_hash(pool: &NodePool) -> String {
    let text = serde_json::to_string(&pool.spec.template).expect("template serializes");
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// Whether `claim` was made from another version of `pool`'s template. A claim without the
/// annotation (made before it existed) is not called drifted: there is nothing to compare.
pub fn drifted(claim: &NodeClaim, pool: &NodePool) -> bool {
    claim
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(NODEPOOL_HASH))
        .is_some_and(|h| *h != template_hash(pool))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pool(label: &str) -> NodePool {
        serde_json::from_value(json!({
            "apiVersion": "adze.sh/v1", "kind": "NodePool", "metadata": {"name": "p"},
            "spec": {"template": {"metadata": {"labels": {"v": label}}, "spec": {"nodeClassRef":
                {"group": "aws.adze.sh", "kind": "EC2NodeClass", "name": "default"}}}},
        }))
        .unwrap()
    }

    fn claim(hash: Option<String>) -> NodeClaim {
        let mut c: NodeClaim = serde_json::from_value(json!({
            "apiVersion": "adze.sh/v1", "kind": "NodeClaim", "metadata": {"name": "c"},
            "spec": {"nodeClassRef": {"group": "aws.adze.sh", "kind": "EC2NodeClass", "name": "default"}},
        }))
        .unwrap();
        c.metadata.annotations = hash.map(|h| [(NODEPOOL_HASH.to_string(), h)].into());
        c
    }

    #[test]
    fn template_change_drifts_claims_made_from_the_old_one() {
        let v1 = pool("1");
        let v2 = pool("2");
        assert_eq!(template_hash(&v1), template_hash(&pool("1")));
        assert_ne!(template_hash(&v1), template_hash(&v2));
        let c = claim(Some(template_hash(&v1)));
        assert!(!drifted(&c, &v1));
        assert!(drifted(&c, &v2));
        assert!(!drifted(&claim(None), &v2));
    }

    #[test]
    fn limits_and_disruption_settings_do_not_drift_nodes() {
        let a = pool("1");
        let mut b = a.clone();
        b.spec.limits.insert(
            "cpu".into(),
            k8s_openapi::apimachinery::pkg::api::resource::Quantity("5".into()),
        );
        assert_eq!(template_hash(&a), template_hash(&b));
    }
}
