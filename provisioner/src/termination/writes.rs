//! The bodies of termination's and disruption's Node and NodeClaim writes, and what a failed
//! write means.
//!
//! Kubelets, the node lifecycle controller and other controllers write the same objects
//! (status heartbeats, labels, their own taints and finalizers), so a write carrying the
//! object's `resourceVersion` fails with 409 whenever anyone else wrote in between. These
//! patches touch only what Adze owns: on a Node (a built-in type) a strategic merge patch
//! adds or removes one taint by its key and one finalizer out of the list, leaving the rest
//! as the apiserver has it; on a NodeClaim (a custom resource, where strategic merge is not
//! served) a JSON patch appends or removes the finalizer guarded by a `test` op on the
//! finalizer list itself, so it fails only when the finalizers changed, not on any other
//! write. A write that still conflicts is [`is_conflict`]: a quiet requeue, as the next
//! tick works from the object as it is then.

use adze_scheduling::labels::TAINT_DISRUPTED;
use serde_json::{Value, json};

use crate::provisioning::TERMINATION_FINALIZER;

/// Strategic merge patch adding `adze.sh/disrupted:NoSchedule` to a Node's taints (merged by
/// taint key: the other taints stay as they are).
pub fn add_disrupted_taint() -> Value {
    json!({"spec": {"taints": [{"key": TAINT_DISRUPTED, "effect": "NoSchedule"}]}})
}

/// Strategic merge patch removing the taint keyed `adze.sh/disrupted` from a Node.
pub fn remove_disrupted_taint() -> Value {
    json!({"spec": {"taints": [{"$patch": "delete", "key": TAINT_DISRUPTED}]}})
}

/// Strategic merge patch adding the termination finalizer to a Node (`finalizers` merges as
/// a set: the others stay).
pub fn add_node_finalizer() -> Value {
    json!({"metadata": {"finalizers": [TERMINATION_FINALIZER]}})
}

/// Strategic merge patch removing the termination finalizer from a Node, and nothing else.
pub fn remove_node_finalizer() -> Value {
    json!({"metadata": {"$deleteFromPrimitiveList/finalizers": [TERMINATION_FINALIZER]}})
}

/// JSON patch adding the termination finalizer to a NodeClaim whose finalizers are `current`
/// (as read): appended after a `test` that the list is still `current`. With no finalizers
/// the list is created, guarded by `resource_version` (JSON patch cannot test that a member
/// is absent).
pub fn add_claim_finalizer(current: &[String], resource_version: &str) -> Value {
    if current.is_empty() {
        json!([
            {"op": "test", "path": "/metadata/resourceVersion", "value": resource_version},
            {"op": "add", "path": "/metadata/finalizers", "value": [TERMINATION_FINALIZER]},
        ])
    } else {
        json!([
            {"op": "test", "path": "/metadata/finalizers", "value": current},
            {"op": "add", "path": "/metadata/finalizers/-", "value": TERMINATION_FINALIZER},
        ])
    }
}

/// JSON patch removing the termination finalizer from a NodeClaim whose finalizers are
/// `current` (as read): a `test` that the entry is still at its index, then its removal.
/// `None` when it is not there.
pub fn remove_claim_finalizer(current: &[String]) -> Option<Value> {
    let i = current.iter().position(|f| f == TERMINATION_FINALIZER)?;
    let path = format!("/metadata/finalizers/{i}");
    Some(json!([
        {"op": "test", "path": path, "value": TERMINATION_FINALIZER},
        {"op": "remove", "path": path},
    ]))
}

/// A JSON patch body as the client takes it.
pub fn json_patch(v: Value) -> anyhow::Result<json_patch::Patch> {
    Ok(serde_json::from_value(v)?)
}

/// Whether `e` is another writer getting there first: 409 Conflict, or 422 from a JSON
/// patch whose `test` op no longer holds. Not a fault: the next tick retries on the object
/// as it is then.
pub fn is_conflict(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<kube::Error>()
            .is_some_and(|k| matches!(k, kube::Error::Api(a) if api_conflict(a.code, &a.message)))
    })
}

fn api_conflict(code: u16, message: &str) -> bool {
    code == 409 || (code == 422 && message.to_ascii_lowercase().contains("test"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn node_patches_touch_only_our_taint_and_finalizer() {
        assert_eq!(
            add_disrupted_taint(),
            json!({"spec": {"taints": [{"key": "adze.sh/disrupted", "effect": "NoSchedule"}]}})
        );
        assert_eq!(
            remove_disrupted_taint(),
            json!({"spec": {"taints": [{"$patch": "delete", "key": "adze.sh/disrupted"}]}})
        );
        assert_eq!(
            add_node_finalizer(),
            json!({"metadata": {"finalizers": [TERMINATION_FINALIZER]}})
        );
        assert_eq!(
            remove_node_finalizer(),
            json!({"metadata": {"$deleteFromPrimitiveList/finalizers": [TERMINATION_FINALIZER]}})
        );
        // None of them carries a resourceVersion: other writers do not make them fail.
        for p in [
            add_disrupted_taint(),
            remove_disrupted_taint(),
            add_node_finalizer(),
            remove_node_finalizer(),
        ] {
            assert!(!p.to_string().contains("resourceVersion"), "{p}");
        }
    }

    #[test]
    fn claim_finalizer_removal_tests_its_index_then_removes_it() {
        let current = s(&["other.io/keep", TERMINATION_FINALIZER, "x.io/last"]);
        let p = remove_claim_finalizer(&current).expect("a patch");
        assert_eq!(
            p,
            json!([
                {"op": "test", "path": "/metadata/finalizers/1", "value": TERMINATION_FINALIZER},
                {"op": "remove", "path": "/metadata/finalizers/1"},
            ])
        );
        assert!(json_patch(p).is_ok());
        assert_eq!(remove_claim_finalizer(&s(&["other.io/keep"])), None);
        assert_eq!(remove_claim_finalizer(&[]), None);
    }

    #[test]
    fn claim_finalizer_removal_applies_and_fails_when_the_list_moved() {
        let claim = json!({"metadata": {"name": "c", "resourceVersion": "7",
            "finalizers": ["other.io/keep", TERMINATION_FINALIZER]}});
        let patch = json_patch(
            remove_claim_finalizer(&s(&["other.io/keep", TERMINATION_FINALIZER])).unwrap(),
        )
        .unwrap();
        let mut doc = claim.clone();
        json_patch::patch(&mut doc, &patch).expect("applies");
        assert_eq!(doc["metadata"]["finalizers"], json!(["other.io/keep"]));
        // Another controller removed its finalizer in between: ours moved to index 0, the
        // test fails and nothing is removed (the apiserver answers 422; requeued).
        let mut moved = json!({"metadata": {"finalizers": [TERMINATION_FINALIZER]}});
        assert!(json_patch::patch(&mut moved, &patch).is_err());
        assert_eq!(
            moved["metadata"]["finalizers"],
            json!([TERMINATION_FINALIZER])
        );
    }

    #[test]
    fn claim_finalizer_is_appended_after_a_test_of_the_list() {
        let current = s(&["other.io/keep"]);
        let p = json_patch(add_claim_finalizer(&current, "7")).unwrap();
        let mut doc = json!({"metadata": {"resourceVersion": "8", "finalizers": ["other.io/keep"]},
            "status": {"changed": "by someone else"}});
        json_patch::patch(&mut doc, &p).expect("another field's write does not conflict");
        assert_eq!(
            doc["metadata"]["finalizers"],
            json!(["other.io/keep", TERMINATION_FINALIZER])
        );
        let mut changed = json!({"metadata": {"finalizers": ["other.io/new"]}});
        assert!(json_patch::patch(&mut changed, &p).is_err());
        // No finalizers yet: created, guarded by the resourceVersion.
        let p = json_patch(add_claim_finalizer(&[], "7")).unwrap();
        let mut doc = json!({"metadata": {"resourceVersion": "7"}});
        json_patch::patch(&mut doc, &p).unwrap();
        assert_eq!(
            doc["metadata"]["finalizers"],
            json!([TERMINATION_FINALIZER])
        );
        let mut later = json!({"metadata": {"resourceVersion": "9"}});
        assert!(json_patch::patch(&mut later, &p).is_err());
    }

    fn api(code: u16, message: &str) -> anyhow::Error {
        anyhow::Error::new(kube::Error::Api(
            kube::core::Status::failure(message, "")
                .with_code(code)
                .boxed(),
        ))
    }

    #[test]
    fn conflicts_are_told_from_faults() {
        let conflict = api(
            409,
            "Operation cannot be fulfilled on nodes \"n\": the object has been modified",
        );
        assert!(is_conflict(&conflict));
        // Wrapped in context, as the termination steps return it.
        assert!(is_conflict(&conflict.context("removing the finalizer")));
        assert!(is_conflict(&api(
            422,
            "the server rejected our request due to an error in our request: testing value /metadata/finalizers/1 failed"
        )));
        assert!(!is_conflict(&api(
            422,
            "spec.taints[0].effect: Unsupported value"
        )));
        assert!(!is_conflict(&api(403, "forbidden")));
        assert!(!is_conflict(&api(500, "etcdserver: request timed out")));
        assert!(!is_conflict(&anyhow::anyhow!("instance lookup failed")));
    }
}
