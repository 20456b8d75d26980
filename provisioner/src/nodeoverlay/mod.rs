//! NodeOverlay status: `ValidationSucceeded` and `Ready`, True while the overlay is applied,
//! False with reason `RuntimeValidation` (its spec is invalid; the message names the fields) or
//! `Conflict` (another overlay of the same weight changes the same price or resource and wins;
//! the message names it). The verdicts come from the same rule provisioning applies
//! ([`crate::provisioning::snapshot::pool_types`]), so the status says what planning does.
//! Written only when it changes.

use std::collections::BTreeMap;
use std::time::Duration;

use std::sync::Arc;

use adze_api::NodeOverlay;
use adze_api::conditions::{READY, nodeoverlay::VALIDATION_SUCCEEDED};
use kube::api::{Patch, PatchParams};
use kube::{Api, Client};
use serde_json::json;

use crate::cloud::CloudProvider;
use crate::nodeclaim::set_condition;
use crate::rules::OverlayVerdict;
use crate::state::ClusterState;

/// (status, reason, message) for both conditions, from the verdict.
pub fn condition(verdict: &OverlayVerdict) -> (bool, &'static str, String) {
    match verdict {
        OverlayVerdict::Applied { types } => (
            true,
            "Ready",
            format!("applied to {types} NodePool instance types"),
        ),
        OverlayVerdict::Invalid(why) => (false, "RuntimeValidation", why.clone()),
        OverlayVerdict::Conflict { with } => (
            false,
            "Conflict",
            format!(
                "conflicts with NodeOverlay {with:?}: same weight, same price or resource; {with:?} wins and this overlay is not applied"
            ),
        ),
    }
}

/// Whether `conditions` already say `wanted` (the applied count in a ready message is not a
/// reason to write).
fn unchanged(
    conditions: &[k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition],
    wanted: &(bool, &str, String),
) -> bool {
    [VALIDATION_SUCCEEDED, READY].iter().all(|type_| {
        conditions.iter().any(|c| {
            c.type_ == *type_
                && (c.status == "True") == wanted.0
                && c.reason == wanted.1
                && (wanted.0 || c.message == wanted.2)
        })
    })
}

pub struct Status {
    pub client: Client,
    pub state: ClusterState,
    pub cloud: Arc<dyn CloudProvider>,
    pub interval: Duration,
}

impl Status {
    /// Never returns.
    pub async fn run(self) {
        let api: Api<NodeOverlay> = Api::all(self.client.clone());
        loop {
            let objects = self.state.objects();
            let catalog = self.cloud.instance_types();
            let (_, verdicts) =
                crate::provisioning::snapshot::pool_types(&objects, &catalog, &mut Vec::new());
            write_all(&api, &objects.nodeoverlays, &verdicts).await;
            tokio::time::sleep(self.interval).await;
        }
    }
}

async fn write_all(
    api: &Api<NodeOverlay>,
    overlays: &[Arc<NodeOverlay>],
    verdicts: &BTreeMap<String, OverlayVerdict>,
) {
    for overlay in overlays {
        let name = overlay.metadata.name.clone().unwrap_or_default();
        let Some(verdict) = verdicts.get(&name) else {
            continue; // being deleted
        };
        let wanted = condition(verdict);
        let current = overlay
            .status
            .as_ref()
            .map(|s| s.conditions.clone())
            .unwrap_or_default();
        if unchanged(&current, &wanted) {
            continue;
        }
        let (status, reason, message) = &wanted;
        if !status {
            tracing::warn!(nodeoverlay = %name, reason, message = %message, "nodeoverlay not applied");
        } else {
            tracing::info!(nodeoverlay = %name, message = %message, "nodeoverlay applied");
        }
        let mut written = set_condition(&current, VALIDATION_SUCCEEDED, *status, reason, message);
        written = set_condition(&written, READY, *status, reason, message);
        let patch = json!({"status": {"conditions": written}});
        if let Err(e) = api
            .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            tracing::warn!(nodeoverlay = %name, error = %e, "nodeoverlay status not written");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditions_say_why_an_overlay_is_not_applied() {
        let (ok, reason, _) = condition(&OverlayVerdict::Applied { types: 3 });
        assert!(ok && reason == "Ready");
        let (ok, reason, message) = condition(&OverlayVerdict::Conflict {
            with: "beta".into(),
        });
        assert!(!ok);
        assert_eq!(reason, "Conflict");
        assert!(message.contains("\"beta\""), "{message}");
        let (ok, reason, message) = condition(&OverlayVerdict::Invalid("spec.price: bad".into()));
        assert!(!ok && reason == "RuntimeValidation" && message == "spec.price: bad");
    }

    #[test]
    fn a_ready_overlay_is_not_rewritten_for_its_count_but_a_new_verdict_is() {
        let applied = condition(&OverlayVerdict::Applied { types: 3 });
        let mut written = set_condition(&[], VALIDATION_SUCCEEDED, true, "Ready", &applied.2);
        written = set_condition(&written, READY, true, "Ready", &applied.2);
        assert!(unchanged(
            &written,
            &condition(&OverlayVerdict::Applied { types: 9 })
        ));
        let conflict = condition(&OverlayVerdict::Conflict { with: "b".into() });
        assert!(!unchanged(&written, &conflict));
    }
}
