//! core/v1 Events about any object (NodeClaims, Nodes, Pods), recorded in the background so a
//! controller never waits on them. Cluster-scoped objects get their events in `default`, as
//! kubectl looks for them there.

use k8s_openapi::api::core::v1::{Event, ObjectReference};
use kube::api::PostParams;
use kube::{Api, Client, Resource, ResourceExt};
use serde_json::json;

use crate::provisioning::FIELD_MANAGER;

/// The object an event is about.
pub fn reference<K: Resource<DynamicType = ()>>(obj: &K) -> ObjectReference {
    ObjectReference {
        api_version: Some(K::api_version(&()).into_owned()),
        kind: Some(K::kind(&()).into_owned()),
        name: Some(obj.name_any()),
        namespace: obj.namespace(),
        uid: obj.uid(),
        resource_version: None,
        field_path: None,
    }
}

/// An Event of `type_` ("Normal" or "Warning") about `about`.
pub fn event(about: ObjectReference, type_: &str, reason: &str, message: &str) -> Event {
    let ns = about.namespace.clone().unwrap_or_else(|| "default".into());
    let name = about.name.clone().unwrap_or_default();
    let ts = crate::cloud::simulated::now();
    serde_json::from_value(json!({
        "metadata": {"generateName": format!("{name}."), "namespace": ns},
        "involvedObject": about,
        "reason": reason, "message": message, "type": type_,
        "source": {"component": FIELD_MANAGER},
        "firstTimestamp": ts, "lastTimestamp": ts, "count": 1,
        "reportingComponent": FIELD_MANAGER, "reportingInstance": FIELD_MANAGER,
    }))
    .expect("event object")
}

/// Records events without blocking the caller; a failure is logged, never retried.
#[derive(Clone)]
pub struct Recorder {
    pub client: Client,
}

impl Recorder {
    pub fn publish(&self, about: ObjectReference, type_: &str, reason: &str, message: &str) {
        let ev = event(about, type_, reason, message);
        let client = self.client.clone();
        tokio::spawn(async move {
            let ns = ev.metadata.namespace.clone().unwrap_or_default();
            let api: Api<Event> = Api::namespaced(client, &ns);
            if let Err(e) = api.create(&PostParams::default(), &ev).await {
                tracing::warn!(error = %e, "event not recorded");
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use adze_api::NodeClaim;

    #[test]
    fn cluster_scoped_object_events_land_in_default_namespace() {
        let claim: NodeClaim = serde_json::from_value(json!({
            "apiVersion": "adze.sh/v1", "kind": "NodeClaim",
            "metadata": {"name": "c1", "uid": "u1"},
            "spec": {"nodeClassRef": {"group": "aws.adze.sh", "kind": "EC2NodeClass", "name": "default"}},
        }))
        .unwrap();
        let ev = event(reference(&claim), "Normal", "Draining", "node n1");
        assert_eq!(ev.metadata.namespace.as_deref(), Some("default"));
        assert_eq!(ev.involved_object.kind.as_deref(), Some("NodeClaim"));
        assert_eq!(
            ev.involved_object.api_version.as_deref(),
            Some("adze.sh/v1")
        );
        assert_eq!(ev.involved_object.uid.as_deref(), Some("u1"));
        assert_eq!(ev.message.as_deref(), Some("node n1"));
    }
}
