//! CapacityBuffer status (`--capacity-buffers`): what the provisioner concluded about each
//! buffer, from the same rule provisioning plans with ([`crate::rules::buffer_pods`]).
//! `status.replicas` is the number of placeholder pods planned for; the
//! `ReadyForProvisioning` condition is True (reason `Resolved`) when the buffer is planned
//! for, False when it is refused, the message naming the field. The reasons are those
//! Karpenter v1.14's buffer controller writes: `PodTemplateNotFound` / `ScalableRefNotFound`
//! when the referenced object is missing, `ResolutionFailed` for any other refusal.
//! Written only when it changes. The `Provisioning` condition is not written.

use std::sync::Arc;
use std::time::Duration;

use adze_api::CapacityBuffer;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::{Patch, PatchParams};
use kube::{Api, Client};
use serde_json::json;

use crate::nodeclaim::set_condition;
use crate::rules::BufferVerdict;
use crate::state::ClusterState;

pub const READY_FOR_PROVISIONING: &str = "ReadyForProvisioning";

/// The status `buffer` should carry for `verdict`: (replicas, condition status, reason,
/// message).
pub fn wanted(verdict: &BufferVerdict) -> (i32, bool, &'static str, String) {
    match verdict {
        BufferVerdict::Ready { replicas } => (
            i32::try_from(*replicas).unwrap_or(i32::MAX),
            true,
            "Resolved",
            format!("{replicas} placeholder pod(s) planned for"),
        ),
        BufferVerdict::Invalid(why) => (0, false, refusal_reason(why), why.clone()),
    }
}

/// The condition reason for a refusal (`rules::buffer_pods` messages start with the field
/// path): a missing PodTemplate or workload has its own reason, as in Karpenter.
pub fn refusal_reason(why: &str) -> &'static str {
    let missing = why.ends_with(" not found");
    if missing && why.starts_with("spec.podTemplateRef.name: ") {
        "PodTemplateNotFound"
    } else if missing && why.starts_with("spec.scalableRef.name: ") {
        "ScalableRefNotFound"
    } else {
        "ResolutionFailed"
    }
}

/// Whether the buffer's status already says `w`.
fn unchanged(buffer: &CapacityBuffer, w: &(i32, bool, &str, String)) -> bool {
    let Some(status) = &buffer.status else {
        return false;
    };
    status.replicas == Some(w.0)
        && status.conditions.iter().any(|c| {
            c.type_ == READY_FOR_PROVISIONING
                && (c.status == "True") == w.1
                && c.reason == w.2
                && c.message == w.3
        })
}

/// The merge patch for `buffer`'s status, or None when it already says the verdict.
pub fn patch(buffer: &CapacityBuffer, verdict: &BufferVerdict) -> Option<serde_json::Value> {
    let w = wanted(verdict);
    if unchanged(buffer, &w) {
        return None;
    }
    let current: Vec<Condition> = buffer
        .status
        .as_ref()
        .map(|s| s.conditions.clone())
        .unwrap_or_default();
    let conditions = set_condition(&current, READY_FOR_PROVISIONING, w.1, w.2, &w.3);
    let strategy = buffer
        .spec
        .provisioning_strategy
        .clone()
        .unwrap_or_else(|| adze_api::capacitybuffer::ACTIVE_CAPACITY.to_string());
    let mut status = json!({
        "replicas": w.0,
        "provisioningStrategy": strategy,
        "conditions": conditions,
    });
    if let Some(t) = &buffer.spec.pod_template_ref {
        status["podTemplateRef"] = json!({"name": t.name});
    }
    Some(json!({ "status": status }))
}

pub struct Status {
    pub client: Client,
    pub state: ClusterState,
    pub interval: Duration,
}

impl Status {
    /// Never returns; does nothing without `--capacity-buffers` (or without the CRD).
    pub async fn run(self) {
        if self.state.buffers.is_none() {
            return std::future::pending().await;
        }
        loop {
            let objects = self.state.objects();
            let verdicts = objects.buffers.pods().verdicts;
            write_all(&self.client, &objects.buffers.capacitybuffers, &verdicts).await;
            tokio::time::sleep(self.interval).await;
        }
    }
}

async fn write_all(
    client: &Client,
    buffers: &[Arc<CapacityBuffer>],
    verdicts: &std::collections::BTreeMap<String, BufferVerdict>,
) {
    for b in buffers {
        let ns = b.metadata.namespace.as_deref().unwrap_or("default");
        let name = b.metadata.name.as_deref().unwrap_or_default();
        let Some(verdict) = verdicts.get(&format!("{ns}/{name}")) else {
            continue; // being deleted
        };
        let Some(p) = patch(b, verdict) else {
            continue;
        };
        match verdict {
            BufferVerdict::Invalid(why) => {
                tracing::warn!(capacitybuffer = %format!("{ns}/{name}"), reason = %why, "capacitybuffer refused")
            }
            BufferVerdict::Ready { replicas } => {
                tracing::info!(capacitybuffer = %format!("{ns}/{name}"), replicas, "capacitybuffer planned for")
            }
        }
        let api: Api<CapacityBuffer> = Api::namespaced(client.clone(), ns);
        if let Err(e) = api
            .patch_status(name, &PatchParams::default(), &Patch::Merge(&p))
            .await
        {
            tracing::warn!(capacitybuffer = %format!("{ns}/{name}"), error = %e, "capacitybuffer status not written");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn buffer() -> CapacityBuffer {
        serde_json::from_value(json!({
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"podTemplateRef": {"name": "web"}, "replicas": 3}
        }))
        .unwrap()
    }

    #[test]
    fn a_planned_buffer_reports_its_replicas_and_is_not_rewritten() {
        let mut b = buffer();
        let p = patch(&b, &BufferVerdict::Ready { replicas: 3 }).expect("a first write");
        assert_eq!(p["status"]["replicas"], 3);
        assert_eq!(p["status"]["podTemplateRef"]["name"], "web");
        assert_eq!(
            p["status"]["provisioningStrategy"],
            "buffer.x-k8s.io/active-capacity"
        );
        let c = &p["status"]["conditions"][0];
        assert_eq!(c["type"], READY_FOR_PROVISIONING);
        assert_eq!(c["status"], "True");
        assert_eq!(c["reason"], "Resolved");
        b.status = Some(serde_json::from_value(p["status"].clone()).unwrap());
        assert!(patch(&b, &BufferVerdict::Ready { replicas: 3 }).is_none());
        assert!(patch(&b, &BufferVerdict::Ready { replicas: 2 }).is_some());
    }

    #[test]
    fn a_refused_buffer_says_why_with_the_field() {
        let why = "spec.provisioningStrategy: \"x\" is not supported".to_string();
        let p = patch(&buffer(), &BufferVerdict::Invalid(why.clone())).unwrap();
        let c = &p["status"]["conditions"][0];
        assert_eq!(c["status"], "False");
        assert_eq!(c["reason"], "ResolutionFailed");
        assert_eq!(c["message"], why.as_str());
        assert_eq!(p["status"]["replicas"], 0);
    }

    #[test]
    fn a_missing_reference_has_its_own_reason() {
        let cases = [
            (
                "spec.podTemplateRef.name: PodTemplate default/web not found",
                "PodTemplateNotFound",
            ),
            (
                "spec.scalableRef.name: Deployment default/web not found",
                "ScalableRefNotFound",
            ),
            (
                "spec.podTemplateRef.name: PodTemplate default/web has no template",
                "ResolutionFailed",
            ),
            (
                "spec.scalableRef: v1/Pod is not supported (apps Deployment, ReplicaSet or StatefulSet)",
                "ResolutionFailed",
            ),
        ];
        for (why, reason) in cases {
            let p = patch(&buffer(), &BufferVerdict::Invalid(why.to_string())).unwrap();
            assert_eq!(p["status"]["conditions"][0]["reason"], reason, "{why}");
        }
    }
}
