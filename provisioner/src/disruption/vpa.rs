//! VPA predictions' adapter (`simulate --disruption --vpa-predictions`, and `run
//! --vpa-predictions` through [`super::vpa_reader`]): reads VerticalPodAutoscalers
//! (`autoscaling.k8s.io/v1`) into the plain [`Vpa`] the rule takes, and gives each bound pod
//! a VPA governs the requests it will have when disruption moves it
//! ([`adze_scheduling::vpa`] is the rule; this only reads objects and converts).
//!
//! Read from a VPA: `metadata` (namespace, name, creationTimestamp), `spec.targetRef`
//! (kind, name), `spec.updatePolicy.updateMode`, `spec.resourcePolicy.containerPolicies[]`
//! (`containerName`, `mode`, `controlledResources`, `controlledValues`, `minAllowed`,
//! `maxAllowed`) and `status.recommendation.containerRecommendations[]` (`containerName`,
//! `target`). Other fields do not change what a recreated pod asks for and are not read.
//! A field read with the wrong type or value is refused at its path.

use std::collections::BTreeMap;
use std::sync::Arc;

use adze_scheduling::quantity;
use adze_scheduling::resources::Resources;
use adze_scheduling::vpa::{
    Amounts, Container, ContainerMode, ContainerPolicy, ControlledValues, UpdateMode, Vpa,
    Workload, governing, predicted,
};
use k8s_openapi::api::core::v1::{Pod, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use serde_json::Value;

/// The VerticalPodAutoscaler API group and version read.
pub const API_VERSION: &str = "autoscaling.k8s.io/v1";

/// Most `containerPolicies` or `containerRecommendations` entries read from one VPA: a pod
/// has at most this many containers ([`crate::simulate::scenario::MAX_CONTAINERS`]).
pub const MAX_ENTRIES: usize = 1_000;

/// The resources a VPA can control.
const RESOURCES: [&str; 2] = ["cpu", "memory"];

fn text<'a>(v: &'a Value, key: &str, path: &str) -> Result<Option<&'a str>, String> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(format!("{path}.{key}: must be a string")),
    }
}

fn list<'a>(v: &'a Value, key: &str, path: &str) -> Result<&'a [Value], String> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(&[]),
        Some(Value::Array(a)) if a.len() > MAX_ENTRIES => {
            Err(format!("{path}.{key}: more than {MAX_ENTRIES} entries"))
        }
        Some(Value::Array(a)) => Ok(a),
        Some(_) => Err(format!("{path}.{key}: must be a list")),
    }
}

fn resource_name(name: &str, path: &str) -> Result<(), String> {
    if RESOURCES.contains(&name) {
        Ok(())
    } else {
        Err(format!(
            "{path}: {name:?} is not a resource a VerticalPodAutoscaler controls (cpu, memory)"
        ))
    }
}

/// A resource list (`minAllowed`, `target`) in the scheduler's units.
fn amounts(v: &Value, key: &str, path: &str) -> Result<Amounts, String> {
    let path = format!("{path}.{key}");
    let map = match v.get(key) {
        None | Some(Value::Null) => return Ok(Amounts::new()),
        Some(Value::Object(m)) => m,
        Some(_) => return Err(format!("{path}: must be a map of resource to quantity")),
    };
    let mut out = Amounts::new();
    for (name, q) in map {
        let at = format!("{path}.{name}");
        resource_name(name, &at)?;
        let s = match q {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            _ => return Err(format!("{at}: must be a quantity")),
        };
        let parsed = if name == "cpu" {
            quantity::parse_milli(&s)
        } else {
            quantity::parse_units(&s)
        }
        .map_err(|e| format!("{at}: {e}"))?;
        if parsed < 0 {
            return Err(format!("{at}: {s:?} is negative"));
        }
        out.insert(name.clone(), parsed);
    }
    Ok(out)
}

/// A VerticalPodAutoscaler's JSON as the rule reads it; an error names the VPA and the field.
pub fn from_json(value: &Value) -> Result<Vpa, String> {
    read(value).map_err(|e| {
        let meta = value.get("metadata");
        let field = |k: &str| {
            meta.and_then(|m| m.get(k))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let ns = Some(field("namespace"))
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| adze_api::convert::DEFAULT_NAMESPACE.to_string());
        format!("VerticalPodAutoscaler {ns}/{}: {e}", field("name"))
    })
}

/// As [`from_json`], the error naming only the field (for callers that name the object).
pub fn read(value: &Value) -> Result<Vpa, String> {
    let meta = value.get("metadata").unwrap_or(&Value::Null);
    let namespace = text(meta, "namespace", "metadata")?
        .unwrap_or(adze_api::convert::DEFAULT_NAMESPACE)
        .to_string();
    let name = text(meta, "name", "metadata")?
        .unwrap_or_default()
        .to_string();
    {
        if name.is_empty() {
            return Err("metadata.name: required".to_string());
        }
        match text(value, "apiVersion", "")? {
            Some(API_VERSION) => {}
            other => {
                return Err(format!(
                    "apiVersion: must be {API_VERSION}, got {:?}",
                    other.unwrap_or_default()
                ));
            }
        }
        let created = match text(meta, "creationTimestamp", "metadata")? {
            None => 0,
            Some(t) => t
                .parse::<k8s_openapi::jiff::Timestamp>()
                .map_err(|_| format!("metadata.creationTimestamp: {t:?} is not an RFC 3339 time"))?
                .as_second(),
        };
        let spec = value.get("spec").unwrap_or(&Value::Null);
        let target = match spec.get("targetRef") {
            None | Some(Value::Null) => None,
            Some(t) => {
                let kind = text(t, "kind", "spec.targetRef")?.unwrap_or_default();
                let name = text(t, "name", "spec.targetRef")?.unwrap_or_default();
                if kind.is_empty() || name.is_empty() {
                    return Err("spec.targetRef: kind and name are required".to_string());
                }
                Some(Workload {
                    kind: kind.to_string(),
                    name: name.to_string(),
                })
            }
        };
        let update_path = "spec.updatePolicy";
        let update_mode = match spec
            .get("updatePolicy")
            .map(|u| text(u, "updateMode", update_path))
            .transpose()?
            .flatten()
        {
            None | Some("Auto") => UpdateMode::Auto,
            Some("Off") => UpdateMode::Off,
            Some("Initial") => UpdateMode::Initial,
            Some("Recreate") => UpdateMode::Recreate,
            Some("InPlaceOrRecreate") => UpdateMode::InPlaceOrRecreate,
            Some(other) => {
                return Err(format!(
                    "{update_path}.updateMode: {other:?} is not Off, Initial, Recreate, InPlaceOrRecreate or Auto"
                ));
            }
        };
        let mut policies = Vec::new();
        let resource_policy = spec.get("resourcePolicy").unwrap_or(&Value::Null);
        for (i, p) in list(resource_policy, "containerPolicies", "spec.resourcePolicy")?
            .iter()
            .enumerate()
        {
            let path = format!("spec.resourcePolicy.containerPolicies[{i}]");
            let container = text(p, "containerName", &path)?
                .ok_or_else(|| format!("{path}.containerName: required"))?
                .to_string();
            let mode = match text(p, "mode", &path)? {
                None | Some("Auto") => ContainerMode::Auto,
                Some("Off") => ContainerMode::Off,
                Some(other) => return Err(format!("{path}.mode: {other:?} is not Auto or Off")),
            };
            let controlled_values = match text(p, "controlledValues", &path)? {
                None | Some("RequestsAndLimits") => ControlledValues::RequestsAndLimits,
                Some("RequestsOnly") => ControlledValues::RequestsOnly,
                Some(other) => {
                    return Err(format!(
                        "{path}.controlledValues: {other:?} is not RequestsAndLimits or RequestsOnly"
                    ));
                }
            };
            let controlled_resources = match p.get("controlledResources") {
                None | Some(Value::Null) => None,
                Some(_) => {
                    let mut names = Vec::new();
                    for (j, r) in list(p, "controlledResources", &path)?.iter().enumerate() {
                        let at = format!("{path}.controlledResources[{j}]");
                        let r = r
                            .as_str()
                            .ok_or_else(|| format!("{at}: must be a string"))?;
                        resource_name(r, &at)?;
                        names.push(r.to_string());
                    }
                    Some(names)
                }
            };
            policies.push(ContainerPolicy {
                container,
                mode,
                controlled_resources,
                controlled_values,
                min_allowed: amounts(p, "minAllowed", &path)?,
                max_allowed: amounts(p, "maxAllowed", &path)?,
            });
        }
        let mut targets = BTreeMap::new();
        let recommendation = (value.get("status"))
            .and_then(|s| s.get("recommendation"))
            .unwrap_or(&Value::Null);
        for (i, r) in list(
            recommendation,
            "containerRecommendations",
            "status.recommendation",
        )?
        .iter()
        .enumerate()
        {
            let path = format!("status.recommendation.containerRecommendations[{i}]");
            let container = text(r, "containerName", &path)?
                .ok_or_else(|| format!("{path}.containerName: required"))?;
            targets.insert(container.to_string(), amounts(r, "target", &path)?);
        }
        Ok(Vpa {
            namespace: namespace.clone(),
            name: name.clone(),
            created,
            target,
            update_mode,
            policies,
            targets,
        })
    }
}

/// The workload a pod belongs to: its controlling owner, a ReplicaSet read as its
/// Deployment ([`Workload::of`]).
fn workload(pod: &Pod) -> Option<Workload> {
    let owner = (pod.metadata.owner_references.as_ref()?)
        .iter()
        .find(|o| o.controller == Some(true))?;
    let hash = (pod.metadata.labels.as_ref())
        .and_then(|l| l.get("pod-template-hash"))
        .map(String::as_str);
    Some(Workload::of(&owner.kind, &owner.name, hash))
}

fn container_amounts(r: Option<&BTreeMap<String, Quantity>>) -> Amounts {
    let mut out = Amounts::new();
    for (name, q) in r.into_iter().flatten() {
        let parsed = match name.as_str() {
            "cpu" => quantity::parse_milli(&q.0),
            "memory" => quantity::parse_units(&q.0),
            _ => continue,
        };
        if let Ok(v) = parsed {
            out.insert(name.clone(), v);
        }
    }
    out
}

fn to_quantity(resource: &str, amount: i64) -> Quantity {
    Quantity(if resource == "cpu" {
        format!("{amount}m")
    } else {
        amount.to_string()
    })
}

/// The requests one pod will be planned with when moved, if a VPA changes them: the pod
/// as its controller recreates it (the predicted container requests, no status), through
/// the conversion every pod goes through, so init containers, sidecars, pod-level resources
/// and overhead count as always.
pub fn predicted_requests(pod: &Pod, vpas: &[Vpa]) -> Option<Resources> {
    let workload = workload(pod)?;
    let namespace = pod
        .metadata
        .namespace
        .as_deref()
        .unwrap_or(adze_api::convert::DEFAULT_NAMESPACE);
    let vpa = governing(vpas, namespace, &workload)?;
    let spec = pod.spec.as_ref()?;
    let containers: Vec<Container> = spec
        .containers
        .iter()
        .map(|c| Container {
            name: c.name.clone(),
            requests: container_amounts(c.resources.as_ref().and_then(|r| r.requests.as_ref())),
            limits: container_amounts(c.resources.as_ref().and_then(|r| r.limits.as_ref())),
        })
        .collect();
    let predicted = predicted(&containers, vpa)?;
    let mut recreated = pod.clone();
    recreated.status = None;
    let spec = recreated.spec.as_mut()?;
    for (c, amounts) in spec.containers.iter_mut().zip(predicted) {
        let resources = c
            .resources
            .get_or_insert_with(ResourceRequirements::default);
        let requests = resources.requests.get_or_insert_with(BTreeMap::new);
        for (name, amount) in amounts {
            requests.insert(name.clone(), to_quantity(&name, amount));
        }
    }
    adze_api::convert::pod(&recreated).ok().map(|p| p.requests)
}

/// Predicted requests of every bound pod a VPA changes, by pod key. DaemonSet pods are not
/// moved by disruption and are skipped.
pub fn moved_requests(pods: &[Arc<Pod>], vpas: &[Vpa]) -> BTreeMap<String, Resources> {
    let mut out = BTreeMap::new();
    if vpas.is_empty() {
        return out;
    }
    for p in pods {
        let bound = p.spec.as_ref().and_then(|s| s.node_name.as_ref()).is_some();
        if !bound || crate::rules::daemonset_owner(&p.metadata).is_some() {
            continue;
        }
        if let Some(r) = predicted_requests(p, vpas) {
            let ns = p
                .metadata
                .namespace
                .as_deref()
                .unwrap_or(adze_api::convert::DEFAULT_NAMESPACE);
            let name = p.metadata.name.as_deref().unwrap_or_default();
            out.insert(format!("{ns}/{name}"), r);
        }
    }
    out
}

/// What [`read_list`] remembers between lists: each VPA read, by namespace/name, with the
/// `metadata.resourceVersion` it was read at, so an unchanged object is not read again (and
/// an unreadable one is reported once, not at every list).
#[derive(Debug, Clone, Default)]
pub struct ListCache {
    read: BTreeMap<String, (String, Result<Vpa, String>)>,
}

/// One list of the cluster's VPAs.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Listed {
    /// Every VPA read, in list order.
    pub vpas: Vec<Vpa>,
    /// VPAs left out because a field could not be read, each named with its path; only
    /// those new or changed since the last list (the others were reported then).
    pub new_problems: Vec<String>,
    /// How many VPAs are left out, reported now or before.
    pub unreadable: usize,
}

/// The VPAs of one list (each item a VerticalPodAutoscaler's JSON, as the API serves it).
/// A VPA that cannot be read is left out, not the list: one bad object must not switch
/// predictions off for every other workload. Items without `apiVersion` (some clients drop
/// it from list items) are read as [`API_VERSION`], the version listed.
pub fn read_list(items: &[Value], cache: &mut ListCache) -> Listed {
    let mut out = Listed::default();
    let mut next = BTreeMap::new();
    for item in items {
        let meta = item.get("metadata");
        let field = |k: &str| {
            meta.and_then(|m| m.get(k))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let key = format!("{}/{}", field("namespace"), field("name"));
        let version = field("resourceVersion");
        let cached = cache
            .read
            .remove(&key)
            .filter(|(v, _)| !version.is_empty() && *v == version);
        let fresh = cached.is_none();
        let result = match cached {
            Some((_, r)) => r,
            None if item.get("apiVersion").is_none() => {
                let mut typed = item.clone();
                if let Value::Object(m) = &mut typed {
                    m.insert("apiVersion".into(), Value::String(API_VERSION.into()));
                }
                from_json(&typed)
            }
            None => from_json(item),
        };
        match &result {
            Ok(v) => out.vpas.push(v.clone()),
            Err(e) => {
                out.unreadable += 1;
                if fresh {
                    out.new_problems.push(e.clone());
                }
            }
        }
        next.insert(key, (version, result));
    }
    cache.read = next;
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn vpa_json(extra_spec: Value) -> Value {
        let mut spec =
            json!({"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}});
        if let (Value::Object(s), Value::Object(e)) = (&mut spec, extra_spec) {
            s.extend(e);
        }
        json!({
            "apiVersion": API_VERSION,
            "kind": "VerticalPodAutoscaler",
            "metadata": {"name": "web", "namespace": "shop", "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": spec,
            "status": {"recommendation": {"containerRecommendations": [
                {"containerName": "app", "target": {"cpu": "250m", "memory": "512Mi"},
                 "lowerBound": {"cpu": "100m"}, "upperBound": {"cpu": "4"}}
            ]}}
        })
    }

    #[test]
    fn a_vpa_is_read_with_its_target_policies_and_mode() {
        let v = from_json(&vpa_json(json!({
            "updatePolicy": {"updateMode": "Initial"},
            "resourcePolicy": {"containerPolicies": [
                {"containerName": "*", "controlledResources": ["memory"], "controlledValues": "RequestsOnly",
                 "minAllowed": {"memory": "256Mi"}, "maxAllowed": {"memory": "2Gi"}}
            ]}
        })))
        .unwrap();
        assert_eq!(v.update_mode, UpdateMode::Initial);
        assert_eq!(v.target.as_ref().unwrap().name, "web");
        assert_eq!(v.targets["app"]["cpu"], 250);
        assert_eq!(v.targets["app"]["memory"], 512 << 20);
        let p = &v.policies[0];
        assert_eq!(p.controlled_resources, Some(vec!["memory".to_string()]));
        assert_eq!(p.controlled_values, ControlledValues::RequestsOnly);
        assert_eq!(p.max_allowed["memory"], 2 << 30);
        assert_eq!(v.created, 1_767_225_600);
    }

    #[test]
    fn bad_fields_are_refused_at_their_path() {
        for (spec, want) in [
            (
                json!({"updatePolicy": {"updateMode": "Sometimes"}}),
                "VerticalPodAutoscaler shop/web: spec.updatePolicy.updateMode: \"Sometimes\"",
            ),
            (
                json!({"resourcePolicy": {"containerPolicies": [{"containerName": "app", "minAllowed": {"cpu": "lots"}}]}}),
                "spec.resourcePolicy.containerPolicies[0].minAllowed.cpu",
            ),
            (
                json!({"resourcePolicy": {"containerPolicies": [{"containerName": "app", "controlledResources": ["nvidia.com/gpu"]}]}}),
                "spec.resourcePolicy.containerPolicies[0].controlledResources[0]: \"nvidia.com/gpu\"",
            ),
            (
                json!({"resourcePolicy": {"containerPolicies": [{"containerName": "app", "maxAllowed": {"memory": "-1Gi"}}]}}),
                "maxAllowed.memory: \"-1Gi\" is negative",
            ),
        ] {
            let e = from_json(&vpa_json(spec)).unwrap_err();
            assert!(e.contains(want), "{e}");
        }
        let mut wrong_version = vpa_json(json!({}));
        wrong_version["apiVersion"] = json!("autoscaling.k8s.io/v1beta2");
        assert!(
            from_json(&wrong_version)
                .unwrap_err()
                .contains("apiVersion")
        );
    }

    fn pod(owner: Value) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": "web-7c9f-x", "namespace": "shop",
                          "labels": {"pod-template-hash": "7c9f"}, "ownerReferences": [owner]},
            "spec": {"nodeName": "n", "containers": [
                {"name": "app", "resources": {"requests": {"cpu": "2", "memory": "4Gi"}}},
                {"name": "log", "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}
            ]}
        }))
        .unwrap()
    }

    #[test]
    fn a_deployment_pod_is_recreated_with_the_target_and_unrecommended_containers_unchanged() {
        let vpas = [from_json(&vpa_json(json!({}))).unwrap()];
        let p = pod(
            json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-7c9f", "uid": "u", "controller": true}),
        );
        let r = predicted_requests(&p, &vpas).expect("predicted");
        assert_eq!(r.cpu, 250 + 100);
        assert_eq!(r.memory, (512 << 20) + (64 << 20));
        assert_eq!(r.pods, 1);
        // Owned by another workload: no VPA governs it.
        let other = pod(
            json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "uid": "u", "controller": true}),
        );
        assert_eq!(predicted_requests(&other, &vpas), None);
    }
    #[test]
    fn a_list_keeps_every_readable_vpa_and_reports_a_bad_one_once() {
        let good = |rv: &str| {
            let mut v = vpa_json(json!({}));
            v["metadata"]["resourceVersion"] = json!(rv);
            v
        };
        let mut bad = vpa_json(json!({"updatePolicy": {"updateMode": "Sometimes"}}));
        bad["metadata"]["name"] = json!("broken");
        bad["metadata"]["resourceVersion"] = json!("7");
        // As some list responses carry it: no apiVersion on the item.
        let mut untyped = vpa_json(json!({}));
        untyped["metadata"]["name"] = json!("api");
        untyped.as_object_mut().unwrap().remove("apiVersion");
        let mut cache = ListCache::default();
        let first = read_list(&[good("1"), bad.clone(), untyped.clone()], &mut cache);
        let names: Vec<&str> = first.vpas.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(names, ["web", "api"]);
        assert_eq!(first.vpas[0].targets["app"]["cpu"], 250);
        assert_eq!(first.unreadable, 1);
        assert_eq!(first.new_problems.len(), 1);
        assert!(
            first.new_problems[0]
                .contains("VerticalPodAutoscaler shop/broken: spec.updatePolicy.updateMode"),
            "{:?}",
            first.new_problems
        );
        // Unchanged: the bad one is still left out but not reported again.
        let again = read_list(&[good("1"), bad.clone()], &mut cache);
        assert_eq!(again.vpas.len(), 1);
        assert_eq!((again.unreadable, again.new_problems.len()), (1, 0));
        // Fixed at a new resourceVersion: read again and kept.
        let mut fixed = vpa_json(json!({}));
        fixed["metadata"]["name"] = json!("broken");
        fixed["metadata"]["resourceVersion"] = json!("8");
        let later = read_list(&[good("1"), fixed], &mut cache);
        assert_eq!(later.vpas.len(), 2);
        assert_eq!(later.unreadable, 0);
        // A VPA gone from the list is gone from the result.
        assert!(read_list(&[], &mut cache).vpas.is_empty());
        assert!(cache.read.is_empty());
    }

    #[test]
    fn an_unchanged_resource_version_reuses_the_earlier_reading() {
        let mut v = vpa_json(json!({}));
        v["metadata"]["resourceVersion"] = json!("3");
        let mut cache = ListCache::default();
        let first = read_list(std::slice::from_ref(&v), &mut cache);
        // Same resourceVersion: what was read then stands (the API never serves a changed
        // object under the same version; this shows the object was not read again).
        v["status"]["recommendation"]["containerRecommendations"][0]["target"]["cpu"] = json!("9");
        let second = read_list(std::slice::from_ref(&v), &mut cache);
        assert_eq!(second.vpas, first.vpas);
        v["metadata"]["resourceVersion"] = json!("4");
        let third = read_list(std::slice::from_ref(&v), &mut cache);
        assert_eq!(third.vpas[0].targets["app"]["cpu"], 9000);
    }
}
