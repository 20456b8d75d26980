//! Mutating admission webhook (`POST /mutate`, AdmissionReview `admission.k8s.io/v1`) that
//! sends new pods to the Adze scheduler by setting `spec.schedulerName`.
//!
//! Why: managed control planes (EKS) do not let users add an extender to the default
//! scheduler, so Adze ships a second scheduler; this webhook opts whole namespaces into it
//! without editing every workload. Which namespaces is the webhook configuration's
//! `namespaceSelector`; this module only decides the patch. A pod that names any scheduler
//! other than the default one keeps it.

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde::Deserialize;
use serde_json::{Value, json};

/// The scheduler name a pod gets when it asks for none or for the default one.
pub const DEFAULT_SCHEDULER: &str = "default-scheduler";

/// What the webhook does to one pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Set `spec.schedulerName` to this.
    SetScheduler(String),
    /// Admit unchanged, with the reason (for the log).
    Unchanged(&'static str),
}

/// The pure rule: pods on the default scheduler move to `target`; pods already on `target`
/// or on some other scheduler are left alone.
pub fn decide(current: Option<&str>, target: &str) -> Decision {
    match current.filter(|s| !s.is_empty()) {
        None | Some(DEFAULT_SCHEDULER) => Decision::SetScheduler(target.to_string()),
        Some(s) if s == target => Decision::Unchanged("already on the Adze scheduler"),
        Some(_) => Decision::Unchanged("the pod names another scheduler"),
    }
}

#[derive(Debug, Deserialize)]
struct Review {
    #[serde(rename = "apiVersion", default)]
    api_version: String,
    request: Option<Request>,
}

#[derive(Debug, Deserialize)]
struct Request {
    uid: String,
    #[serde(default)]
    kind: GroupVersionKind,
    #[serde(default)]
    operation: String,
    #[serde(default)]
    namespace: String,
    #[serde(default)]
    object: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
struct GroupVersionKind {
    #[serde(default)]
    group: String,
    #[serde(default)]
    kind: String,
}

/// Answers one AdmissionReview body: the response review, or an error message for a body
/// that is not a v1 AdmissionReview with a request (answered 400).
pub fn review(body: &[u8], target: &str) -> Result<Value, String> {
    let review: Review =
        serde_json::from_slice(body).map_err(|e| format!("malformed AdmissionReview: {e}"))?;
    if review.api_version != "admission.k8s.io/v1" {
        return Err(format!(
            "AdmissionReview apiVersion {:?} is not admission.k8s.io/v1 (set admissionReviewVersions: [v1])",
            review.api_version
        ));
    }
    let req = review.request.ok_or("AdmissionReview has no request")?;
    let decision =
        if req.kind.group.is_empty() && req.kind.kind == "Pod" && req.operation == "CREATE" {
            let current = req
                .object
                .as_ref()
                .and_then(|o| o.pointer("/spec/schedulerName"))
                .and_then(Value::as_str);
            decide(current, target)
        } else {
            Decision::Unchanged("not a pod being created")
        };
    let name = req
        .object
        .as_ref()
        .and_then(|o| {
            o.pointer("/metadata/name")
                .or(o.pointer("/metadata/generateName"))
        })
        .and_then(Value::as_str)
        .unwrap_or_default();
    let mut response = json!({"uid": req.uid, "allowed": true});
    match decision {
        Decision::SetScheduler(s) => {
            tracing::debug!(pod = %format!("{}/{}", req.namespace, name), scheduler = %s, "setting schedulerName");
            let patch = json!([{"op": "add", "path": "/spec/schedulerName", "value": s}]);
            response["patchType"] = json!("JSONPatch");
            response["patch"] = json!(base64(patch.to_string().as_bytes()));
        }
        Decision::Unchanged(why) => {
            tracing::debug!(pod = %format!("{}/{}", req.namespace, name), why, "admitted unchanged");
        }
    }
    Ok(json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": response,
    }))
}

/// `POST /mutate`, to be merged into the extender's router.
pub fn router(scheduler_name: String) -> Router {
    Router::new()
        .route("/mutate", post(mutate))
        .with_state(std::sync::Arc::new(scheduler_name))
}

async fn mutate(State(target): State<std::sync::Arc<String>>, body: Bytes) -> Response {
    match review(&body, &target) {
        Ok(v) => ([(header::CONTENT_TYPE, "application/json")], v.to_string()).into_response(),
        Err(e) => {
            tracing::warn!(error = %e, "rejected admission request");
            (StatusCode::BAD_REQUEST, e).into_response()
        }
    }
}

/// Standard base64 with padding (RFC 4648), for the JSON patch; small enough not to need a crate.
fn base64(input: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(input.len().div_ceil(3) * 4);
    for chunk in input.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for (i, shift) in [18, 12, 6, 0].into_iter().enumerate() {
            if i <= chunk.len() {
                out.push(ALPHABET[((n >> shift) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn admission(kind: &str, operation: &str, scheduler: Option<&str>) -> Vec<u8> {
        let mut spec = json!({"containers": [{"name": "app", "image": "nginx"}]});
        if let Some(s) = scheduler {
            spec["schedulerName"] = json!(s);
        }
        json!({
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
                "kind": {"group": "", "version": "v1", "kind": kind},
                "resource": {"group": "", "version": "v1", "resource": "pods"},
                "namespace": "web",
                "operation": operation,
                "object": {"apiVersion": "v1", "kind": kind, "metadata": {"generateName": "web-"}, "spec": spec},
            }
        })
        .to_string()
        .into_bytes()
    }

    /// Asserts the response carries the patch that sets schedulerName to adze-scheduler
    /// (base64 itself is checked against the RFC vectors below).
    fn decoded_patch(out: &Value) -> Value {
        let b64 = out["response"]["patch"].as_str().expect("a patch");
        let expected =
            json!([{"op": "add", "path": "/spec/schedulerName", "value": "adze-scheduler"}]);
        assert_eq!(b64, base64(expected.to_string().as_bytes()));
        expected
    }

    #[test]
    fn pod_without_scheduler_name_is_sent_to_the_adze_scheduler() {
        let out = review(&admission("Pod", "CREATE", None), "adze-scheduler").unwrap();
        assert_eq!(out["apiVersion"], "admission.k8s.io/v1");
        assert_eq!(out["kind"], "AdmissionReview");
        assert_eq!(
            out["response"]["uid"],
            "705ab4f5-6393-11e8-b7cc-42010a800002"
        );
        assert_eq!(out["response"]["allowed"], true);
        assert_eq!(out["response"]["patchType"], "JSONPatch");
        let patch = decoded_patch(&out);
        assert_eq!(patch[0]["value"], "adze-scheduler");
    }

    #[test]
    fn pod_on_the_default_scheduler_is_moved() {
        let out = review(
            &admission("Pod", "CREATE", Some("default-scheduler")),
            "adze-scheduler",
        )
        .unwrap();
        decoded_patch(&out);
    }

    #[test]
    fn pod_naming_another_scheduler_keeps_it() {
        let out = review(
            &admission("Pod", "CREATE", Some("volcano")),
            "adze-scheduler",
        )
        .unwrap();
        assert_eq!(out["response"]["allowed"], true);
        assert!(out["response"].get("patch").is_none());
        assert!(out["response"].get("patchType").is_none());
    }

    #[test]
    fn pod_already_on_the_adze_scheduler_is_not_patched() {
        assert_eq!(
            decide(Some("adze-scheduler"), "adze-scheduler"),
            Decision::Unchanged("already on the Adze scheduler")
        );
        assert_eq!(
            decide(Some(""), "adze-scheduler"),
            Decision::SetScheduler("adze-scheduler".into())
        );
    }

    #[test]
    fn updates_and_other_kinds_are_admitted_unchanged() {
        for body in [
            admission("Pod", "UPDATE", None),
            admission("Deployment", "CREATE", None),
        ] {
            let out = review(&body, "adze-scheduler").unwrap();
            assert_eq!(out["response"]["allowed"], true);
            assert!(out["response"].get("patch").is_none());
        }
    }

    #[test]
    fn malformed_or_v1beta1_reviews_are_refused_with_a_reason() {
        let err = review(b"{not json", "adze-scheduler").unwrap_err();
        assert!(err.contains("malformed AdmissionReview"), "{err}");
        let v1beta1 = json!({"apiVersion": "admission.k8s.io/v1beta1", "request": {"uid": "x"}});
        let err = review(v1beta1.to_string().as_bytes(), "adze-scheduler").unwrap_err();
        assert!(err.contains("admissionReviewVersions: [v1]"), "{err}");
        let empty = json!({"apiVersion": "admission.k8s.io/v1"});
        let err = review(empty.to_string().as_bytes(), "adze-scheduler").unwrap_err();
        assert!(err.contains("no request"), "{err}");
    }

    #[tokio::test]
    async fn http_route_answers_200_with_a_review_and_400_with_the_reason() {
        use http_body_util::BodyExt;
        use tower::ServiceExt;
        let post = |body: Vec<u8>| {
            axum::http::Request::post("/mutate")
                .header("content-type", "application/json")
                .body(axum::body::Body::from(body))
                .unwrap()
        };
        let app = router("adze-scheduler".into());
        let ok = app
            .clone()
            .oneshot(post(admission("Pod", "CREATE", None)))
            .await
            .unwrap();
        assert_eq!(ok.status(), StatusCode::OK);
        let body: Value =
            serde_json::from_slice(&ok.into_body().collect().await.unwrap().to_bytes()).unwrap();
        decoded_patch(&body);
        let bad = app.oneshot(post(b"[]".to_vec())).await.unwrap();
        assert_eq!(bad.status(), StatusCode::BAD_REQUEST);
        let text = bad.into_body().collect().await.unwrap().to_bytes();
        assert!(String::from_utf8_lossy(&text).contains("malformed AdmissionReview"));
    }

    #[test]
    fn base64_matches_rfc4648_vectors() {
        for (input, want) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(input.as_bytes()), want, "{input:?}");
        }
    }
}
