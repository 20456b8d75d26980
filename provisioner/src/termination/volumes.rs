//! Which VolumeAttachments a drained node must wait for before its instance goes: detaching
//! a volume from a terminated instance can leave it stuck, so the attach/detach controller
//! gets to finish first. Attachments of volumes that pods staying on the node still use
//! (DaemonSet pods, pods tolerating the taint) never detach; those are not waited for.

use std::collections::BTreeSet;

use k8s_openapi::api::storage::v1::VolumeAttachment;

/// Names of the attachments on `node` still worth waiting for. `kept_volumes` are the
/// PersistentVolume names pods staying on the node use.
pub fn blocking(
    attachments: &[VolumeAttachment],
    node: &str,
    kept_volumes: &BTreeSet<String>,
) -> Vec<String> {
    attachments
        .iter()
        .filter(|va| va.spec.node_name == node)
        .filter(|va| {
            va.spec
                .source
                .persistent_volume_name
                .as_ref()
                .is_none_or(|pv| !kept_volumes.contains(pv))
        })
        .filter_map(|va| va.metadata.name.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn va(name: &str, node: &str, pv: &str) -> VolumeAttachment {
        serde_json::from_value(json!({
            "metadata": {"name": name},
            "spec": {"attacher": "ebs.csi.aws.com", "nodeName": node,
                     "source": {"persistentVolumeName": pv}},
        }))
        .unwrap()
    }

    #[test]
    fn waits_only_for_attachments_on_this_node_not_kept_by_staying_pods() {
        let vas = vec![
            va("a", "n1", "pv-a"),
            va("b", "n2", "pv-b"),
            va("c", "n1", "pv-ds"),
        ];
        let kept = BTreeSet::from(["pv-ds".to_string()]);
        assert_eq!(blocking(&vas, "n1", &kept), vec!["a".to_string()]);
        assert!(blocking(&vas, "n3", &kept).is_empty());
    }
}
