//! The Eviction subresource, as both drains use it: termination (the provisioner draining a
//! NodeClaim) and the node agent (draining its own node on a spot notice). One request shape
//! and one reading of the answer, so a PodDisruptionBudget refusal means the same thing in both.
//!
//! Only the request and the answer live here; sending it is the caller's (this crate has no
//! client).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::APIResourceList;
use kube::core::{Request, params::PostParams, request::Error};
use serde_json::json;

/// Group/version when discovery does not say: the only one a 1.20 apiserver serves.
pub const DEFAULT_VERSION: &str = "policy/v1beta1";

/// The Eviction group/version the apiserver serves for `pods/eviction`, from the core/v1
/// discovery document (which names the subresource's group and version).
pub fn version(core_v1: &APIResourceList) -> Option<String> {
    let r = core_v1
        .resources
        .iter()
        .find(|r| r.name == "pods/eviction")?;
    Some(format!("{}/{}", r.group.as_deref()?, r.version.as_deref()?))
}

/// A POST of an Eviction for one pod. With `uid`, the apiserver refuses (409) if the name now
/// belongs to a different pod, e.g. a StatefulSet's replacement that is already running
/// elsewhere.
pub fn request(
    version: &str,
    namespace: &str,
    name: &str,
    uid: Option<&str>,
) -> Result<http::Request<Vec<u8>>, Error> {
    let mut body = json!({
        "apiVersion": version, "kind": "Eviction",
        "metadata": {"name": name, "namespace": namespace},
    });
    if let Some(uid) = uid {
        body["deleteOptions"] = json!({"preconditions": {"uid": uid}});
    }
    let body = serde_json::to_vec(&body).map_err(Error::SerializeBody)?;
    Request::new(format!("/api/v1/namespaces/{namespace}/pods")).create_subresource(
        "eviction",
        name,
        &PostParams::default(),
        body,
    )
}

/// What an Eviction's answer means for the drain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Accepted: the pod is terminating.
    Evicted,
    /// 429: a PodDisruptionBudget does not allow it now. Ask again later; never force.
    Blocked,
    /// 404 or 409: the pod (this uid) is gone already. Nothing left to do for it.
    Gone,
    /// Anything else: a real failure, retried like any other.
    Failed,
}

impl Outcome {
    /// Reads an answer: `None` is success, `Some(code)` an API error's HTTP status.
    pub fn from_status(error_code: Option<u16>) -> Outcome {
        match error_code {
            None => Outcome::Evicted,
            Some(429) => Outcome::Blocked,
            Some(404 | 409) => Outcome::Gone,
            Some(_) => Outcome::Failed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::APIResource;

    #[test]
    fn version_comes_from_the_subresource_discovery_entry() {
        let entry = |name: &str, group: Option<&str>, version: Option<&str>| APIResource {
            name: name.into(),
            group: group.map(Into::into),
            version: version.map(Into::into),
            ..Default::default()
        };
        let list = APIResourceList {
            group_version: "v1".into(),
            resources: vec![
                entry("pods", None, None),
                entry("pods/eviction", Some("policy"), Some("v1")),
            ],
        };
        assert_eq!(version(&list).as_deref(), Some("policy/v1"));
        let none = APIResourceList {
            group_version: "v1".into(),
            resources: vec![entry("pods", None, None)],
        };
        assert_eq!(version(&none), None);
    }

    #[test]
    fn request_posts_the_subresource_with_a_uid_precondition() {
        let req = request("policy/v1", "shop", "web-0", Some("u-1")).unwrap();
        assert_eq!(req.method(), http::Method::POST);
        assert_eq!(
            req.uri().path(),
            "/api/v1/namespaces/shop/pods/web-0/eviction"
        );
        let body: serde_json::Value = serde_json::from_slice(req.body()).unwrap();
        assert_eq!(body["apiVersion"], "policy/v1");
        assert_eq!(body["metadata"]["namespace"], "shop");
        assert_eq!(body["deleteOptions"]["preconditions"]["uid"], "u-1");
        let bare = request(DEFAULT_VERSION, "shop", "web-0", None).unwrap();
        let body: serde_json::Value = serde_json::from_slice(bare.body()).unwrap();
        assert!(body.get("deleteOptions").is_none());
    }

    #[test]
    fn a_budget_refusal_is_blocked_and_a_missing_pod_is_gone() {
        assert_eq!(Outcome::from_status(None), Outcome::Evicted);
        assert_eq!(Outcome::from_status(Some(429)), Outcome::Blocked);
        assert_eq!(Outcome::from_status(Some(404)), Outcome::Gone);
        assert_eq!(Outcome::from_status(Some(409)), Outcome::Gone);
        assert_eq!(Outcome::from_status(Some(500)), Outcome::Failed);
        assert_eq!(Outcome::from_status(Some(403)), Outcome::Failed);
    }
}
