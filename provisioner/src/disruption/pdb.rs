//! PodDisruptionBudgets as disruption needs them: which pods each selects and how many
//! evictions it allows now. Read as plain JSON because the 1.20 apiserver serves them as
//! policy/v1beta1, which k8s-openapi (built for 1.33) has no type for.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use serde_json::Value;

#[derive(Debug, Clone, PartialEq)]
pub struct Budget {
    pub namespace: String,
    pub name: String,
    pub selector: LabelSelector,
    pub disruptions_allowed: u32,
    /// `spec.unhealthyPodEvictionPolicy: AlwaysAllow`: a running pod that is not Ready may be
    /// evicted whatever the budget allows, so the budget does not hold such a pod's node.
    pub unhealthy_always_allowed: bool,
}

impl Budget {
    /// From a PodDisruptionBudget object (either version). A missing status allows nothing:
    /// the disruption controller has not computed it yet.
    pub fn from_json(v: &Value) -> Option<Budget> {
        let meta = v.get("metadata")?;
        Some(Budget {
            namespace: meta.get("namespace")?.as_str()?.to_string(),
            name: meta.get("name")?.as_str()?.to_string(),
            selector: v
                .pointer("/spec/selector")
                .and_then(|s| serde_json::from_value(s.clone()).ok())
                .unwrap_or_default(),
            disruptions_allowed: v
                .pointer("/status/disruptionsAllowed")
                .and_then(Value::as_u64)
                .unwrap_or(0) as u32,
            unhealthy_always_allowed: v
                .pointer("/spec/unhealthyPodEvictionPolicy")
                .and_then(Value::as_str)
                == Some("AlwaysAllow"),
        })
    }

    /// Whether the budget is asked before evicting `pod`: not for a running pod that is not
    /// Ready when the budget's `unhealthyPodEvictionPolicy` is `AlwaysAllow` (the eviction API
    /// lets it go).
    pub fn guards(&self, pod: &k8s_openapi::api::core::v1::Pod) -> bool {
        !(self.unhealthy_always_allowed && running_unready(pod))
    }

    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    /// Whether the budget selects a pod of `namespace` with `labels`. An empty selector
    /// selects nothing in policy/v1beta1 and everything in policy/v1.
    pub fn selects(
        &self,
        namespace: &str,
        labels: &BTreeMap<String, String>,
        empty_selects_all: bool,
    ) -> bool {
        if namespace != self.namespace {
            return false;
        }
        let s = &self.selector;
        let exprs = s.match_expressions.as_deref().unwrap_or_default();
        if s.match_labels.as_ref().is_none_or(|m| m.is_empty()) && exprs.is_empty() {
            return empty_selects_all;
        }
        let labels_ok = s
            .match_labels
            .iter()
            .flatten()
            .all(|(k, v)| labels.get(k) == Some(v));
        labels_ok
            && exprs.iter().all(|e| {
                let values = e.values.as_deref().unwrap_or_default();
                let got = labels.get(&e.key);
                match e.operator.as_str() {
                    "In" => got.is_some_and(|g| values.contains(g)),
                    "NotIn" => got.is_none_or(|g| !values.contains(g)),
                    "Exists" => got.is_some(),
                    "DoesNotExist" => got.is_none(),
                    _ => false,
                }
            })
    }
}

/// Running (`status.phase`) but without its Ready condition True: the eviction API's unhealthy
/// pod.
fn running_unready(pod: &k8s_openapi::api::core::v1::Pod) -> bool {
    let Some(status) = pod.status.as_ref() else {
        return false;
    };
    status.phase.as_deref() == Some("Running")
        && !status
            .conditions
            .iter()
            .flatten()
            .any(|c| c.type_ == "Ready" && c.status == "True")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn v1beta1_budget_parses_with_its_status() {
        let b = Budget::from_json(&json!({
            "apiVersion": "policy/v1beta1", "kind": "PodDisruptionBudget",
            "metadata": {"name": "web", "namespace": "shop"},
            "spec": {"minAvailable": 4, "selector": {"matchLabels": {"app": "web"}}},
            "status": {"disruptionsAllowed": 1, "currentHealthy": 5, "desiredHealthy": 4,
                       "expectedPods": 5, "observedGeneration": 1},
        }))
        .unwrap();
        assert_eq!(b.key(), "shop/web");
        assert_eq!(b.disruptions_allowed, 1);
        assert!(b.selects("shop", &labels(&[("app", "web")]), false));
        assert!(!b.selects("other", &labels(&[("app", "web")]), false));
        assert!(!b.selects("shop", &labels(&[("app", "db")]), false));
    }

    #[test]
    fn always_allow_guards_no_running_pod_that_is_not_ready() {
        let pod = |phase: &str, ready: &str| -> k8s_openapi::api::core::v1::Pod {
            serde_json::from_value(json!({"metadata": {"name": "p"},
                "status": {"phase": phase, "conditions": [{"type": "Ready", "status": ready}]}}))
            .unwrap()
        };
        let budget = |policy: Option<&str>| {
            let mut v = json!({"metadata": {"name": "x", "namespace": "n"}, "spec": {}});
            if let Some(p) = policy {
                v["spec"]["unhealthyPodEvictionPolicy"] = json!(p);
            }
            Budget::from_json(&v).unwrap()
        };
        let always = budget(Some("AlwaysAllow"));
        assert!(!always.guards(&pod("Running", "False")));
        assert!(always.guards(&pod("Running", "True")));
        assert!(always.guards(&pod("Pending", "False")));
        for b in [budget(None), budget(Some("IfHealthyBudget"))] {
            assert!(b.guards(&pod("Running", "False")));
        }
    }

    #[test]
    fn budget_without_status_allows_nothing() {
        let b = Budget::from_json(&json!({"metadata": {"name": "x", "namespace": "n"}})).unwrap();
        assert_eq!(b.disruptions_allowed, 0);
    }

    #[test]
    fn expressions_are_anded_and_empty_selector_depends_on_version() {
        let b = Budget::from_json(&json!({"metadata": {"name": "x", "namespace": "n"},
            "spec": {"selector": {"matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["a", "b"]},
                {"key": "canary", "operator": "DoesNotExist"}]}}}))
        .unwrap();
        assert!(b.selects("n", &labels(&[("tier", "a")]), false));
        assert!(!b.selects("n", &labels(&[("tier", "a"), ("canary", "1")]), false));
        assert!(!b.selects("n", &labels(&[("tier", "c")]), false));
        let empty =
            Budget::from_json(&json!({"metadata": {"name": "x", "namespace": "n"}, "spec": {}}))
                .unwrap();
        assert!(!empty.selects("n", &labels(&[]), false));
        assert!(empty.selects("n", &labels(&[]), true));
    }
}
