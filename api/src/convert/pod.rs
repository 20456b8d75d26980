//! Pods, and the pods a workload's template would create, into [`model::Pod`].
//!
//! What Kubernetes would have defaulted or derived is done here, since a simulated pod may
//! never have met an apiserver:
//!
//! * **Requests**: per container, a resource with a limit but no request is requested at its
//!   limit. Init containers with `restartPolicy: Always` are sidecars. The pod's request is
//!   [`effective_pod_requests`] plus `spec.overhead`; pod-level `spec.resources` (cpu,
//!   memory, hugepages) replace the containers' sum for the resources they name.
//! * **Node affinity**: `nodeSelector` is merged into every required node-selector term (the
//!   terms are ORed); a term with no expressions and no fields matches no node and is
//!   dropped, and when every term is dropped the pod gets one term no node satisfies.
//! * **Pod selectors**: a nil `labelSelector` matches no pod. A topology spread constraint or
//!   a (preferred) anti-affinity term with one has no effect and is skipped; a *required*
//!   affinity term with one can never be met, as in kube-scheduler, and is kept with a
//!   selector that matches nothing. `matchLabelKeys` (and `mismatchLabelKeys` on affinity
//!   terms) add `key In/NotIn [the pod's own value]`; keys the pod lacks are ignored.
//! * **Namespaces of affinity terms**: no `namespaces` and no `namespaceSelector` means the
//!   pod's own namespace; `namespaceSelector: {}` means every namespace. A non-empty
//!   `namespaceSelector` needs Namespace objects to evaluate, which conversion does not
//!   have: it is approximated by the `namespaces` list plus the pod's own namespace.
//! * **Host ports**: from app and sidecar containers' `hostPort`s (protocol TCP unless
//!   given); with `hostNetwork: true`, every container port is a host port. One protocol,
//!   host IP and host port declared twice among the app containers, or twice in one init
//!   container, is refused as the apiserver refuses it.
//! * **In-place resize**: a running pod's container statuses count as kube-scheduler counts
//!   them: per resource the larger of the spec, the applied and the admitted requests
//!   ([`Resize`]).
//! * **Priority**: `spec.priority`, 0 when unset (`priorityClassName` is not resolved).

use std::collections::{BTreeMap, BTreeSet};

use adze_scheduling::pod::{
    AffinityTerm, HostPort, Namespaces, PodSelector, TopologySpread, Weighted,
};
use adze_scheduling::resources::{ContainerRequests, effective_pod_requests};
use adze_scheduling::{Requirement, Requirements, Resources, Toleration, labels, pod as model};
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{
    Container, ContainerStatus, Pod, PodAffinityTerm, PodSpec, PodStatus, PodTemplateSpec,
    TopologySpreadConstraint, WeightedPodAffinityTerm,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::resources::{pod_resource_list, requests_with_limits};
use super::selector::{is_empty_selector, label_selector, node_selector_term};
use super::{ConvertError, ObjectRef, effect};

/// The namespace Kubernetes puts an object in when none is given.
pub const DEFAULT_NAMESPACE: &str = "default";

/// The port protocols Kubernetes knows, spelled as it requires.
const PROTOCOLS: [&str; 3] = ["TCP", "UDP", "SCTP"];

/// Label key of the selector that stands for a nil `labelSelector` in a required affinity
/// term: no pod carries it, so nothing matches.
const NIL_SELECTOR_KEY: &str = "adze.sh/nil-label-selector";

/// Converts a pod. Its node name, phase and owner are the caller's business; this gives the
/// pod as placement sees it.
pub fn pod(p: &Pod) -> Result<model::Pod, ConvertError> {
    let namespace = p.metadata.namespace.as_deref().unwrap_or(DEFAULT_NAMESPACE);
    let name = p.metadata.name.as_deref().unwrap_or_default();
    let object = ObjectRef::namespaced("pod", namespace, name);
    if name.is_empty() {
        return Err(ConvertError::missing(&object, "metadata.name"));
    }
    object_names(&object, namespace, name)?;
    let spec = p
        .spec
        .as_ref()
        .ok_or_else(|| ConvertError::missing(&object, "spec"))?;
    let labels = p.metadata.labels.clone().unwrap_or_default();
    from_spec(
        &object,
        "spec",
        namespace,
        name,
        labels,
        spec,
        p.status.as_ref(),
    )
}

/// A pod's or workload's name (a DNS-1123 subdomain) and namespace (a DNS-1123 label), as
/// the apiserver requires: both become API paths (`x?dryRun=All` would turn into a query
/// string) and label values.
fn object_names(object: &ObjectRef, namespace: &str, name: &str) -> Result<(), ConvertError> {
    let shown = crate::validation::shown;
    if let Some(why) = crate::patterns::dns1123_subdomain_error(name) {
        return Err(ConvertError::invalid(
            object,
            "metadata.name",
            format!("invalid value {}: {why}", shown(name)),
        ));
    }
    if let Some(why) = crate::patterns::dns1123_label_error(namespace) {
        return Err(ConvertError::invalid(
            object,
            "metadata.namespace",
            format!("invalid value {}: {why}", shown(namespace)),
        ));
    }
    Ok(())
}

/// Container names (DNS-1123 labels, unique across init and app containers) and port
/// numbers (containerPort 1-65535, hostPort 0-65535) of every container, init ones too, as
/// the apiserver checks them: a port out of range would otherwise be read as some other
/// port, or wrap, when host ports are reserved.
fn containers(object: &ObjectRef, base: &str, spec: &PodSpec) -> Result<(), ConvertError> {
    let shown = crate::validation::shown;
    let init = spec
        .init_containers
        .iter()
        .flatten()
        .enumerate()
        .map(|(i, c)| (format!("{base}.initContainers[{i}]"), c));
    let app = spec
        .containers
        .iter()
        .enumerate()
        .map(|(i, c)| (format!("{base}.containers[{i}]"), c));
    let mut names: BTreeMap<&str, String> = BTreeMap::new();
    for (f, c) in init.chain(app) {
        let field = format!("{f}.name");
        if c.name.is_empty() {
            return Err(ConvertError::missing(object, &field));
        }
        if let Some(why) = crate::patterns::dns1123_label_error(&c.name) {
            return Err(ConvertError::invalid(
                object,
                &field,
                format!("invalid value {}: {why}", shown(&c.name)),
            ));
        }
        if let Some(first) = names.insert(&c.name, f.clone()) {
            return Err(ConvertError::invalid(
                object,
                &field,
                format!(
                    "duplicate value {}: {first} has this name already",
                    shown(&c.name)
                ),
            ));
        }
        for (pi, p) in c.ports.iter().flatten().enumerate() {
            if !(1..=65535).contains(&p.container_port) {
                return Err(ConvertError::invalid(
                    object,
                    &format!("{f}.ports[{pi}].containerPort"),
                    format!(
                        "must be between 1 and 65535, inclusive, got {}",
                        p.container_port
                    ),
                ));
            }
            if let Some(host) = p.host_port
                && !(0..=65535).contains(&host)
            {
                return Err(ConvertError::invalid(
                    object,
                    &format!("{f}.ports[{pi}].hostPort"),
                    format!("must be between 0 and 65535, inclusive, got {host}"),
                ));
            }
        }
    }
    Ok(())
}

/// Deprecated node label keys read as their GA names (see
/// [`model::Pod::normalize_deprecated_keys`]).
fn normalized(mut pod: model::Pod) -> model::Pod {
    pod.normalize_deprecated_keys();
    pod
}

/// The pod a workload's template describes, named after the workload (callers rename the
/// copies they make) and placed in the workload's namespace. `kind` is the lower-case kind
/// for messages ("deployment", "replicaset", ...); field paths start at
/// `spec.template`.
pub fn workload_pod(
    kind: &'static str,
    metadata: &ObjectMeta,
    template: &PodTemplateSpec,
) -> Result<model::Pod, ConvertError> {
    let namespace = metadata.namespace.as_deref().unwrap_or(DEFAULT_NAMESPACE);
    let name = metadata.name.as_deref().unwrap_or_default();
    let object = ObjectRef::namespaced(kind, namespace, name);
    if name.is_empty() {
        return Err(ConvertError::missing(&object, "metadata.name"));
    }
    object_names(&object, namespace, name)?;
    let spec = template
        .spec
        .as_ref()
        .ok_or_else(|| ConvertError::missing(&object, "spec.template.spec"))?;
    let labels = template
        .metadata
        .as_ref()
        .and_then(|m| m.labels.clone())
        .unwrap_or_default();
    from_spec(
        &object,
        "spec.template.spec",
        namespace,
        name,
        labels,
        spec,
        None,
    )
}

/// A controller's `spec.selector` (ReplicaSet, StatefulSet, Deployment) as the pod selector
/// kube-scheduler's default spread counts by ([`adze_scheduling::default_spread`]).
pub fn controller_selector(
    kind: &'static str,
    metadata: &ObjectMeta,
    selector: &k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector,
) -> Result<adze_scheduling::pod::PodSelector, ConvertError> {
    let namespace = metadata.namespace.as_deref().unwrap_or(DEFAULT_NAMESPACE);
    let name = metadata.name.as_deref().unwrap_or_default();
    let object = ObjectRef::namespaced(kind, namespace, name);
    super::selector::label_selector(&object, "spec.selector", selector)
}

/// The pod a DaemonSet runs on every node it selects, for overhead. Carries the tolerations
/// the DaemonSet controller adds to every daemon pod (not-ready, unreachable, pressure,
/// unschedulable; network-unavailable with host networking).
pub fn daemonset_pod(ds: &DaemonSet) -> Result<model::Pod, ConvertError> {
    let namespace = ds
        .metadata
        .namespace
        .as_deref()
        .unwrap_or(DEFAULT_NAMESPACE);
    let name = ds.metadata.name.as_deref().unwrap_or_default();
    let spec = ds.spec.as_ref().ok_or_else(|| {
        ConvertError::missing(&ObjectRef::namespaced("daemonset", namespace, name), "spec")
    })?;
    let mut pod = workload_pod("daemonset", &ds.metadata, &spec.template)?;
    let host_network = spec
        .template
        .spec
        .as_ref()
        .is_some_and(|s| s.host_network == Some(true));
    pod.tolerations.extend(daemon_tolerations(host_network));
    Ok(pod)
}

fn daemon_tolerations(host_network: bool) -> Vec<Toleration> {
    use adze_scheduling::Effect::{NoExecute, NoSchedule};
    let mut out = vec![
        Toleration::exists(Some("node.kubernetes.io/not-ready"), Some(NoExecute)),
        Toleration::exists(Some("node.kubernetes.io/unreachable"), Some(NoExecute)),
        Toleration::exists(Some("node.kubernetes.io/disk-pressure"), Some(NoSchedule)),
        Toleration::exists(Some("node.kubernetes.io/memory-pressure"), Some(NoSchedule)),
        Toleration::exists(Some("node.kubernetes.io/pid-pressure"), Some(NoSchedule)),
        Toleration::exists(Some("node.kubernetes.io/unschedulable"), Some(NoSchedule)),
    ];
    if host_network {
        out.push(Toleration::exists(
            Some("node.kubernetes.io/network-unavailable"),
            Some(NoSchedule),
        ));
    }
    out
}

/// Converts a pod spec; `base` is its field path ("spec" or "spec.template.spec"). `status`
/// is a running pod's, read for in-place resizes ([`Resize`]); a template has none.
fn from_spec(
    object: &ObjectRef,
    base: &str,
    namespace: &str,
    name: &str,
    labels: BTreeMap<String, String>,
    spec: &PodSpec,
    status: Option<&PodStatus>,
) -> Result<model::Pod, ConvertError> {
    api_rules(object, base, &labels, spec)?;
    let requests = requests(object, base, spec, status)?;
    let node_requirements = node_requirements(object, base, spec)?;
    let preferred_node = preferred_node(object, base, spec)?;
    let tolerations = tolerations(object, base, spec)?;
    let spread = spread(object, base, &labels, spec)?;
    let host_ports = host_ports(object, base, spec)?;

    let mut pod = model::Pod {
        namespace: namespace.to_string(),
        name: name.to_string(),
        requests,
        node_requirements,
        preferred_node,
        tolerations,
        spread,
        spread_declared: spec
            .topology_spread_constraints
            .as_ref()
            .is_some_and(|c| !c.is_empty()),
        host_ports,
        priority: spec.priority.unwrap_or(0),
        ..Default::default()
    };
    let affinity = spec.affinity.as_ref();
    let pa = affinity.and_then(|a| a.pod_affinity.as_ref());
    let paa = affinity.and_then(|a| a.pod_anti_affinity.as_ref());
    let terms = Terms {
        object,
        namespace,
        labels: &labels,
    };
    let f = format!("{base}.affinity.podAffinity");
    pod.affinity = terms.required(
        &f,
        pa.and_then(|a| {
            a.required_during_scheduling_ignored_during_execution
                .as_deref()
        }),
        true,
    )?;
    pod.preferred_affinity = terms.preferred(
        &f,
        pa.and_then(|a| {
            a.preferred_during_scheduling_ignored_during_execution
                .as_deref()
        }),
    )?;
    let f = format!("{base}.affinity.podAntiAffinity");
    pod.anti_affinity = terms.required(
        &f,
        paa.and_then(|a| {
            a.required_during_scheduling_ignored_during_execution
                .as_deref()
        }),
        false,
    )?;
    pod.preferred_anti_affinity = terms.preferred(
        &f,
        paa.and_then(|a| {
            a.preferred_during_scheduling_ignored_during_execution
                .as_deref()
        }),
    )?;
    pod.labels = labels;
    Ok(normalized(pod))
}

fn requests(
    object: &ObjectRef,
    base: &str,
    spec: &PodSpec,
    status: Option<&PodStatus>,
) -> Result<Resources, ConvertError> {
    let resize = Resize::of(status);
    let containers = spec
        .containers
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let own = requests_with_limits(
                object,
                &format!("{base}.containers[{i}].resources"),
                c.resources.as_ref(),
            )?;
            resize.requests(object, &c.name, own)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let inits = spec
        .init_containers
        .iter()
        .flatten()
        .enumerate()
        .map(|(i, c)| {
            let own = requests_with_limits(
                object,
                &format!("{base}.initContainers[{i}].resources"),
                c.resources.as_ref(),
            )?;
            let sidecar = is_sidecar(c);
            // Only a sidecar keeps running, so only its resize holds room on the node.
            let requests = if sidecar {
                resize.requests(object, &c.name, own)?
            } else {
                own
            };
            Ok(ContainerRequests { requests, sidecar })
        })
        .collect::<Result<Vec<_>, ConvertError>>()?;
    let mut total = effective_pod_requests(&containers, &inits, None);
    if let Some(pod_level) = &spec.resources {
        let parsed = requests_with_limits(object, &format!("{base}.resources"), Some(pod_level))?;
        let named: BTreeSet<&String> = pod_level
            .requests
            .iter()
            .chain(&pod_level.limits)
            .flat_map(|m| m.keys())
            .collect();
        for n in named {
            total.set(n, parsed.get(n));
        }
    }
    total.add(&pod_resource_list(
        object,
        &format!("{base}.overhead"),
        spec.overhead.as_ref(),
    )?);
    total.pods = 1;
    Ok(total)
}

/// In-place pod resize (`InPlacePodVerticalScaling`, beta and on by default from Kubernetes
/// 1.33): a running pod's `spec` holds what was asked for, its container statuses what the
/// kubelet admitted (`allocatedResources`) and what the runtime applied
/// (`resources.requests`). While a resize is pending or under way the node holds the larger of
/// them, so kube-scheduler charges a container whose status reports `resources` the greatest
/// of the three per resource, and leaves the spec out once the kubelet has found the resize
/// infeasible (it will never be admitted). Planning charges the same, so a node never looks
/// roomier to Adze than to kube-scheduler.
struct Resize<'a> {
    /// By container name: the index in its status list, that list's path, the status.
    statuses: BTreeMap<&'a str, (usize, &'static str, &'a ContainerStatus)>,
    infeasible: bool,
}

impl<'a> Resize<'a> {
    fn of(status: Option<&'a PodStatus>) -> Self {
        let mut statuses = BTreeMap::new();
        let Some(status) = status else {
            return Self {
                statuses,
                infeasible: false,
            };
        };
        for (field, list) in [
            ("status.containerStatuses", &status.container_statuses),
            (
                "status.initContainerStatuses",
                &status.init_container_statuses,
            ),
        ] {
            for (i, cs) in list.iter().flatten().enumerate() {
                statuses.entry(cs.name.as_str()).or_insert((i, field, cs));
            }
        }
        // Kubernetes 1.33 reports it as a condition; 1.27 to 1.32 in `status.resize`.
        let infeasible =
            status.conditions.iter().flatten().any(|c| {
                c.type_ == "PodResizePending" && c.reason.as_deref() == Some("Infeasible")
            }) || status.resize.as_deref() == Some("Infeasible");
        Self {
            statuses,
            infeasible,
        }
    }

    /// A container's requests, given its spec's (`own`, after defaulting).
    fn requests(
        &self,
        object: &ObjectRef,
        container: &str,
        own: Resources,
    ) -> Result<Resources, ConvertError> {
        let Some(&(i, field, cs)) = self.statuses.get(container) else {
            return Ok(own);
        };
        let Some(applied) = &cs.resources else {
            return Ok(own);
        };
        let mut out = if self.infeasible {
            Resources::default()
        } else {
            own
        };
        out.max_with(&pod_resource_list(
            object,
            &format!("{field}[{i}].resources.requests"),
            applied.requests.as_ref(),
        )?);
        out.max_with(&pod_resource_list(
            object,
            &format!("{field}[{i}].allocatedResources"),
            cs.allocated_resources.as_ref(),
        )?);
        Ok(out)
    }
}

/// The apiserver's rules for the pod fields the planner reads that have no other check: label
/// keys and values (its own and its `nodeSelector`), an init container's `restartPolicy`,
/// preferred term weights and an `Exists` toleration's value. A pod breaking one would never
/// exist in a cluster, so a scenario holding it is refused at its path, not planned.
fn api_rules(
    object: &ObjectRef,
    base: &str,
    labels: &BTreeMap<String, String>,
    spec: &PodSpec,
) -> Result<(), ConvertError> {
    let meta = format!("{}metadata.labels", base.strip_suffix("spec").unwrap_or(""));
    for (field, map) in [
        (meta, Some(labels)),
        (format!("{base}.nodeSelector"), spec.node_selector.as_ref()),
    ] {
        for (k, v) in map.into_iter().flatten() {
            label_pair(object, &field, k, v)?;
        }
    }
    containers(object, base, spec)?;
    for (i, c) in spec.init_containers.iter().flatten().enumerate() {
        if let Some(policy) = c.restart_policy.as_deref().filter(|p| *p != "Always") {
            return Err(ConvertError::invalid(
                object,
                &format!("{base}.initContainers[{i}].restartPolicy"),
                format!(
                    "unsupported value {}: supported values: \"Always\"",
                    crate::validation::shown(policy)
                ),
            ));
        }
    }
    let affinity = spec.affinity.as_ref();
    let node = affinity
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|n| {
            n.preferred_during_scheduling_ignored_during_execution
                .as_deref()
        })
        .unwrap_or_default()
        .iter()
        .map(|p| ("nodeAffinity", p.weight));
    let pods = |name: &'static str, terms: Option<&Vec<WeightedPodAffinityTerm>>| {
        terms
            .into_iter()
            .flatten()
            .map(|w| (name, w.weight))
            .collect::<Vec<_>>()
    };
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    let weights = node
        .chain(pods(
            "podAffinity",
            affinity
                .and_then(|a| a.pod_affinity.as_ref())
                .and_then(|a| {
                    a.preferred_during_scheduling_ignored_during_execution
                        .as_ref()
                }),
        ))
        .chain(pods(
            "podAntiAffinity",
            affinity
                .and_then(|a| a.pod_anti_affinity.as_ref())
                .and_then(|a| {
                    a.preferred_during_scheduling_ignored_during_execution
                        .as_ref()
                }),
        ));
    for (name, weight) in weights {
        let i = seen.entry(name).or_default();
        if !(1..=100).contains(&weight) {
            return Err(ConvertError::invalid(
                object,
                &format!(
                    "{base}.affinity.{name}.preferredDuringSchedulingIgnoredDuringExecution[{i}].weight"
                ),
                format!("must be between 1 and 100, got {weight}"),
            ));
        }
        *i += 1;
    }
    for (i, t) in spec.tolerations.iter().flatten().enumerate() {
        if t.operator.as_deref() == Some("Exists")
            && t.value.as_deref().is_some_and(|v| !v.is_empty())
        {
            return Err(ConvertError::invalid(
                object,
                &format!("{base}.tolerations[{i}].value"),
                "must be empty when operator is Exists",
            ));
        }
    }
    Ok(())
}

/// One label: a qualified-name key and a label value, as the apiserver requires.
fn label_pair(object: &ObjectRef, field: &str, key: &str, value: &str) -> Result<(), ConvertError> {
    if !crate::patterns::is_qualified_name(key) {
        return Err(ConvertError::invalid(
            object,
            field,
            format!(
                "key {} must be a label key: an optional DNS-subdomain prefix and '/', then a name of at most 63 characters",
                crate::validation::shown(key)
            ),
        ));
    }
    if !crate::patterns::is_label_value(value) {
        return Err(ConvertError::invalid(
            object,
            &format!("{field}.{key}"),
            format!(
                "{} must be a label value: at most 63 characters, alphanumerics, '-', '_' or '.', beginning and ending with an alphanumeric",
                crate::validation::shown(value)
            ),
        ));
    }
    Ok(())
}

fn is_sidecar(c: &Container) -> bool {
    c.restart_policy.as_deref() == Some("Always")
}

fn node_requirements(
    object: &ObjectRef,
    base: &str,
    spec: &PodSpec,
) -> Result<Vec<Requirements>, ConvertError> {
    let selector = Requirements::from_labels(spec.node_selector.iter().flatten());
    let required = spec
        .affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|n| {
            n.required_during_scheduling_ignored_during_execution
                .as_ref()
        });
    let Some(required) = required else {
        return Ok(vec![selector]);
    };
    let mut terms = Vec::new();
    for (i, t) in required.node_selector_terms.iter().enumerate() {
        let f = format!(
            "{base}.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[{i}]"
        );
        if let Some(mut r) = node_selector_term(object, &f, t)? {
            r.add_all(&selector);
            terms.push(r);
        }
    }
    if terms.is_empty() {
        // Only empty terms: Kubernetes matches no node. No node has a hostname in an empty set.
        let mut r = selector;
        r.add(Requirement::any_of(labels::HOSTNAME, Vec::<String>::new()));
        terms.push(r);
    }
    Ok(terms)
}

fn preferred_node(
    object: &ObjectRef,
    base: &str,
    spec: &PodSpec,
) -> Result<Vec<Weighted<Requirements>>, ConvertError> {
    let preferred = spec
        .affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|n| {
            n.preferred_during_scheduling_ignored_during_execution
                .as_deref()
        })
        .unwrap_or_default();
    let mut out = Vec::new();
    for (i, p) in preferred.iter().enumerate() {
        let f = format!(
            "{base}.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[{i}].preference"
        );
        // An empty preference is a no-op in Kubernetes.
        if let Some(term) = node_selector_term(object, &f, &p.preference)? {
            out.push(Weighted {
                weight: p.weight,
                term,
            });
        }
    }
    Ok(out)
}

fn tolerations(
    object: &ObjectRef,
    base: &str,
    spec: &PodSpec,
) -> Result<Vec<Toleration>, ConvertError> {
    let mut out = Vec::new();
    for (i, t) in spec.tolerations.iter().flatten().enumerate() {
        let f = format!("{base}.tolerations[{i}]");
        let eff = match t.effect.as_deref() {
            None | Some("") => None,
            Some(e) => Some(effect(object, &format!("{f}.effect"), e)?),
        };
        let key = t.key.as_deref().filter(|k| !k.is_empty());
        let tol = match t.operator.as_deref().unwrap_or("Equal") {
            "Exists" => Toleration::exists(key, eff),
            "Equal" | "" => {
                let key = key.ok_or_else(|| {
                    ConvertError::invalid(
                        object,
                        &format!("{f}.key"),
                        "operator Equal needs a key (an empty key needs operator Exists)",
                    )
                })?;
                Toleration::equal(key, t.value.as_deref().unwrap_or_default(), eff)
            }
            other => {
                return Err(ConvertError::invalid(
                    object,
                    &format!("{f}.operator"),
                    format!("unknown toleration operator {other:?}; expected Equal or Exists"),
                ));
            }
        };
        out.push(tol);
    }
    Ok(out)
}

fn spread(
    object: &ObjectRef,
    base: &str,
    labels: &BTreeMap<String, String>,
    spec: &PodSpec,
) -> Result<Vec<TopologySpread>, ConvertError> {
    let mut out = Vec::new();
    for (i, c) in spec
        .topology_spread_constraints
        .iter()
        .flatten()
        .enumerate()
    {
        let f = format!("{base}.topologySpreadConstraints[{i}]");
        if let Some(s) = spread_constraint(object, &f, labels, c)? {
            out.push(s);
        }
    }
    Ok(out)
}

fn spread_constraint(
    object: &ObjectRef,
    f: &str,
    labels: &BTreeMap<String, String>,
    c: &TopologySpreadConstraint,
) -> Result<Option<TopologySpread>, ConvertError> {
    let invalid = |field: &str, message: String| {
        ConvertError::invalid(object, &format!("{f}.{field}"), message)
    };
    // Checked before anything is skipped: the apiserver refuses the pod whatever its selector.
    topology_key(object, &format!("{f}.topologyKey"), &c.topology_key)?;
    let Some(sel) = &c.label_selector else {
        return Ok(None);
    };
    let mut selector = label_selector(object, &format!("{f}.labelSelector"), sel)?;
    add_own_values(&mut selector, labels, c.match_label_keys.as_deref(), false);
    let hard = match c.when_unsatisfiable.as_str() {
        "DoNotSchedule" => true,
        "ScheduleAnyway" => false,
        other => {
            return Err(invalid(
                "whenUnsatisfiable",
                format!("expected DoNotSchedule or ScheduleAnyway, got {other:?}"),
            ));
        }
    };
    let max_skew = u32::try_from(c.max_skew)
        .ok()
        .filter(|s| *s > 0)
        .ok_or_else(|| invalid("maxSkew", format!("must be at least 1, got {}", c.max_skew)))?;
    let min_domains = match c.min_domains {
        None => None,
        Some(d) => Some(
            u32::try_from(d)
                .ok()
                .filter(|d| *d > 0)
                .ok_or_else(|| invalid("minDomains", format!("must be at least 1, got {d}")))?,
        ),
    };
    let policy = |field: &str, value: Option<&str>, default: bool| match value {
        None => Ok(default),
        Some("Honor") => Ok(true),
        Some("Ignore") => Ok(false),
        Some(other) => Err(invalid(
            field,
            format!("expected Honor or Ignore, got {other:?}"),
        )),
    };
    Ok(Some(TopologySpread {
        max_skew,
        topology_key: c.topology_key.clone(),
        hard,
        selector,
        min_domains,
        honor_node_affinity: policy(
            "nodeAffinityPolicy",
            c.node_affinity_policy.as_deref(),
            true,
        )?,
        honor_taints: policy("nodeTaintsPolicy", c.node_taints_policy.as_deref(), false)?,
    }))
}

/// A topology key of an affinity term or a spread constraint: a label key, never empty (the
/// apiserver's rule; an empty key would group every node under no domain at all).
fn topology_key(object: &ObjectRef, field: &str, key: &str) -> Result<(), ConvertError> {
    if key.is_empty() {
        return Err(ConvertError::invalid(object, field, "must not be empty"));
    }
    if !crate::patterns::is_qualified_name(key) {
        return Err(ConvertError::invalid(
            object,
            field,
            format!(
                "{} must be a label key: an optional DNS-subdomain prefix and '/', then a name of at most 63 characters",
                crate::validation::shown(key)
            ),
        ));
    }
    Ok(())
}

/// `matchLabelKeys` (`mismatch == false`) or `mismatchLabelKeys`: the pod's own value of
/// each key, as `In` or `NotIn`. Keys the pod does not carry are ignored, as in Kubernetes.
fn add_own_values(
    selector: &mut PodSelector,
    labels: &BTreeMap<String, String>,
    keys: Option<&[String]>,
    mismatch: bool,
) {
    for key in keys.unwrap_or_default() {
        let Some(v) = labels.get(key) else { continue };
        if mismatch {
            let r = Requirement::new(key, adze_scheduling::Operator::NotIn, &[v])
                .expect("NotIn with one value is valid");
            selector.add(r);
        } else {
            selector.add(Requirement::single(key, v));
        }
    }
}

/// Context for a pod's affinity terms.
struct Terms<'a> {
    object: &'a ObjectRef,
    namespace: &'a str,
    labels: &'a BTreeMap<String, String>,
}

impl Terms<'_> {
    fn required(
        &self,
        field: &str,
        terms: Option<&[PodAffinityTerm]>,
        affinity: bool,
    ) -> Result<Vec<AffinityTerm>, ConvertError> {
        let f = format!("{field}.requiredDuringSchedulingIgnoredDuringExecution");
        let mut out = Vec::new();
        for (i, t) in terms.unwrap_or_default().iter().enumerate() {
            match self.term(&format!("{f}[{i}]"), t)? {
                Some(term) => out.push(term),
                // A nil selector matches no pod: required affinity to nothing never holds;
                // anti-affinity to nothing never bites.
                None if affinity => out.push(AffinityTerm {
                    selector: Requirements::new()
                        .with(Requirement::any_of(NIL_SELECTOR_KEY, Vec::<String>::new())),
                    namespaces: self.namespaces(t)?,
                    topology_key: t.topology_key.clone(),
                }),
                None => {}
            }
        }
        Ok(out)
    }

    fn preferred(
        &self,
        field: &str,
        terms: Option<&[WeightedPodAffinityTerm]>,
    ) -> Result<Vec<Weighted<AffinityTerm>>, ConvertError> {
        let f = format!("{field}.preferredDuringSchedulingIgnoredDuringExecution");
        let mut out = Vec::new();
        for (i, w) in terms.unwrap_or_default().iter().enumerate() {
            if let Some(term) =
                self.term(&format!("{f}[{i}].podAffinityTerm"), &w.pod_affinity_term)?
            {
                out.push(Weighted {
                    weight: w.weight,
                    term,
                });
            }
        }
        Ok(out)
    }

    /// One term; None when its label selector is nil.
    fn term(&self, f: &str, t: &PodAffinityTerm) -> Result<Option<AffinityTerm>, ConvertError> {
        topology_key(self.object, &format!("{f}.topologyKey"), &t.topology_key)?;
        let Some(sel) = &t.label_selector else {
            return Ok(None);
        };
        let mut selector = label_selector(self.object, &format!("{f}.labelSelector"), sel)?;
        add_own_values(
            &mut selector,
            self.labels,
            t.match_label_keys.as_deref(),
            false,
        );
        add_own_values(
            &mut selector,
            self.labels,
            t.mismatch_label_keys.as_deref(),
            true,
        );
        Ok(Some(AffinityTerm {
            selector,
            namespaces: self.namespaces(t)?,
            topology_key: t.topology_key.clone(),
        }))
    }

    fn namespaces(&self, t: &PodAffinityTerm) -> Result<Namespaces, ConvertError> {
        let mut listed: BTreeSet<String> = t.namespaces.iter().flatten().cloned().collect();
        Ok(match &t.namespace_selector {
            Some(s) if is_empty_selector(s) => Namespaces::All,
            // Needs Namespace objects to evaluate; approximated (see the module docs).
            Some(_) => {
                listed.insert(self.namespace.to_string());
                Namespaces::Only(listed)
            }
            None if listed.is_empty() => Namespaces::Only([self.namespace.to_string()].into()),
            None => Namespaces::Only(listed),
        })
    }
}

/// Refuses a pod whose containers declare one host port twice, as the apiserver does: a
/// port is its protocol (TCP when unset), host IP (as written: "" and "0.0.0.0" differ) and
/// host port, which with `hostNetwork` defaults to the container port. The app containers
/// share one set, since they run together; each init container, sidecar or not, is checked
/// on its own, since the apiserver does not compare init containers with each other (they
/// run one after another) nor with the app containers.
fn unique_host_ports(object: &ObjectRef, base: &str, spec: &PodSpec) -> Result<(), ConvertError> {
    let host_network = spec.host_network == Some(true);
    // One set of ports: the containers named, each with its field path.
    let check = |containers: &mut dyn Iterator<Item = (String, &Container)>| {
        let mut seen: BTreeMap<(&str, &str, i32), String> = BTreeMap::new();
        for (f, c) in containers {
            for (pi, p) in c.ports.iter().flatten().enumerate() {
                let port = match p.host_port {
                    Some(hp) if hp != 0 => hp,
                    _ if host_network => p.container_port,
                    _ => continue,
                };
                let protocol = p.protocol.as_deref().unwrap_or("TCP");
                let ip = p.host_ip.as_deref().unwrap_or_default();
                let here = format!("{f}.ports[{pi}]");
                if let Some(first) = seen.get(&(protocol, ip, port)) {
                    return Err(ConvertError::invalid(
                        object,
                        &format!("{here}.hostPort"),
                        format!(
                            "duplicate value {}: {first} already declares this protocol, \
                             hostIP and hostPort",
                            crate::validation::shown(&format!("{protocol}/{ip}/{port}"))
                        ),
                    ));
                }
                seen.insert((protocol, ip, port), here);
            }
        }
        Ok(())
    };
    check(
        &mut spec
            .containers
            .iter()
            .enumerate()
            .map(|(i, c)| (format!("{base}.containers[{i}]"), c)),
    )?;
    for (i, c) in spec.init_containers.iter().flatten().enumerate() {
        check(&mut std::iter::once((
            format!("{base}.initContainers[{i}]"),
            c,
        )))?;
    }
    Ok(())
}

fn host_ports(
    object: &ObjectRef,
    base: &str,
    spec: &PodSpec,
) -> Result<Vec<HostPort>, ConvertError> {
    let host_network = spec.host_network == Some(true);
    let app = spec
        .containers
        .iter()
        .enumerate()
        .map(|(i, c)| (format!("{base}.containers[{i}]"), c));
    let sidecars = spec
        .init_containers
        .iter()
        .flatten()
        .enumerate()
        .filter(|(_, c)| is_sidecar(c))
        .map(|(i, c)| (format!("{base}.initContainers[{i}]"), c));
    let mut out = Vec::new();
    for (f, c) in app.chain(sidecars) {
        for (pi, p) in c.ports.iter().flatten().enumerate() {
            // Exact case, as the apiserver requires: "tcp" is not "TCP", and two ports that
            // differ only in case must not be taken for different protocols.
            let protocol = p.protocol.as_deref().unwrap_or("TCP");
            if !PROTOCOLS.contains(&protocol) {
                return Err(ConvertError::invalid(
                    object,
                    &format!("{f}.ports[{pi}].protocol"),
                    format!(
                        "unsupported value {}: supported values: \"TCP\", \"UDP\", \"SCTP\"",
                        crate::validation::shown(protocol)
                    ),
                ));
            }
            let port = match p.host_port {
                Some(hp) if hp != 0 => hp,
                _ if host_network => p.container_port,
                _ => continue,
            };
            let port = u16::try_from(port).ok().filter(|p| *p > 0).ok_or_else(|| {
                ConvertError::invalid(
                    object,
                    &format!("{f}.ports[{pi}].hostPort"),
                    format!("must be between 1 and 65535, got {port}"),
                )
            })?;
            out.push(HostPort {
                port,
                protocol: protocol.to_string(),
                host_ip: p.host_ip.clone().unwrap_or_default(),
            });
        }
    }
    unique_host_ports(object, base, spec)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use adze_scheduling::{Effect, Operator};

    use super::*;

    const GI: i64 = 1 << 30;

    fn convert(yaml: &str) -> model::Pod {
        pod(&serde_yaml::from_str(yaml).unwrap()).unwrap()
    }

    fn req(key: &str, op: Operator, values: &[&str]) -> Requirement {
        Requirement::new(key, op, values).unwrap()
    }

    #[test]
    fn sidecars_run_beside_app_containers_and_overhead_is_added() {
        let p = convert(
            r#"
apiVersion: v1
kind: Pod
metadata: {name: web-1, namespace: shop}
spec:
  overhead: {cpu: 50m}
  initContainers:
    - name: mesh
      restartPolicy: Always
      resources: {requests: {cpu: 100m, memory: 1Gi}}
    - name: migrate
      resources: {requests: {cpu: "1"}}
  containers:
    - name: app
      resources: {requests: {cpu: 500m, memory: 1Gi}}
"#,
        );
        // max(app 500 + sidecar 100, init 1000 + sidecar 100) + overhead 50.
        assert_eq!(p.requests.cpu, 1150);
        assert_eq!(p.requests.memory, 2 * GI);
        assert_eq!(p.requests.pods, 1);
        assert_eq!(p.key(), "shop/web-1");
    }

    #[test]
    fn limits_stand_in_for_missing_requests_per_resource() {
        let p = convert(
            r#"
apiVersion: v1
kind: Pod
metadata: {name: web-1}
spec:
  containers:
    - name: app
      resources:
        limits: {cpu: "2", memory: 1Gi, nvidia.com/gpu: "1"}
        requests: {memory: 512Mi}
"#,
        );
        assert_eq!(p.namespace, "default");
        assert_eq!(p.requests.cpu, 2000);
        assert_eq!(
            p.requests.memory,
            GI / 2,
            "an explicit request wins over the limit"
        );
        assert_eq!(p.requests.get("nvidia.com/gpu"), 1);
    }

    #[test]
    fn pod_level_resources_replace_the_container_sum() {
        let p = convert(
            r#"
apiVersion: v1
kind: Pod
metadata: {name: web-1}
spec:
  resources: {requests: {cpu: "3"}}
  containers:
    - {name: a, resources: {requests: {cpu: "1", memory: 1Gi}}}
"#,
        );
        assert_eq!(p.requests.cpu, 3000);
        assert_eq!(p.requests.memory, GI);
    }

    /// A running pod resized in place; `status` is spliced into its YAML.
    fn resized(status: &str) -> Result<model::Pod, ConvertError> {
        let yaml = format!(
            r#"
apiVersion: v1
kind: Pod
metadata: {{name: web-1}}
spec:
  initContainers:
    - {{name: init, resources: {{requests: {{cpu: 100m}}}}}}
    - {{name: proxy, restartPolicy: Always, resources: {{requests: {{cpu: 100m}}}}}}
  containers:
    - {{name: app, resources: {{requests: {{cpu: "1", memory: 1Gi}}}}}}
status:
{status}
"#
        );
        pod(&serde_yaml::from_str(&yaml).unwrap())
    }

    #[test]
    fn a_resize_under_way_holds_the_largest_of_asked_admitted_and_applied() {
        // cpu asked down to 1, still admitted at 1.5; memory asked 1Gi, still applied at 2Gi.
        let p = resized(
            r#"
  containerStatuses:
    - name: app
      allocatedResources: {cpu: 1500m, memory: 1Gi}
      resources: {requests: {cpu: 1500m, memory: 2Gi}}
  initContainerStatuses:
    - name: proxy
      allocatedResources: {cpu: 300m}
      resources: {requests: {cpu: 300m}}
    - name: init
      allocatedResources: {cpu: "8"}
      resources: {requests: {cpu: "8"}}
"#,
        )
        .unwrap();
        // The app's 1.5 plus the sidecar's resized 0.3. The finished init container's status
        // (8 cpu) is not read: kube-scheduler reads app and sidecar containers' only.
        assert_eq!(p.requests.cpu, 1800);
        assert_eq!(p.requests.memory, 2 * GI);
    }

    #[test]
    fn a_resize_up_not_yet_admitted_is_charged_at_the_spec() {
        let p = resized(
            r#"
  containerStatuses:
    - name: app
      allocatedResources: {cpu: 500m, memory: 1Gi}
      resources: {requests: {cpu: 500m, memory: 1Gi}}
"#,
        )
        .unwrap();
        assert_eq!(p.requests.cpu, 1100, "the app's spec 1 + the sidecar's 0.1");
        assert_eq!(p.requests.memory, GI);
    }

    #[test]
    fn an_infeasible_resize_is_charged_at_what_the_node_holds() {
        for marker in [
            "  conditions: [{type: PodResizePending, status: \"True\", reason: Infeasible}]",
            "  resize: Infeasible",
        ] {
            let p = resized(&format!(
                r#"
{marker}
  containerStatuses:
    - name: app
      allocatedResources: {{cpu: 250m, memory: 512Mi}}
      resources: {{requests: {{cpu: 250m, memory: 512Mi}}}}
"#
            ))
            .unwrap();
            assert_eq!(p.requests.memory, GI / 2, "{marker}");
        }
        // Without the marker the spec's 1Gi counts.
        let p = resized(
            r#"
  containerStatuses:
    - name: app
      allocatedResources: {cpu: 250m, memory: 512Mi}
      resources: {requests: {cpu: 250m, memory: 512Mi}}
"#,
        )
        .unwrap();
        assert_eq!(p.requests.memory, GI);
    }

    #[test]
    fn a_status_without_applied_resources_is_not_read() {
        // As kube-scheduler: only a container status that reports `resources` counts.
        let p = resized(
            r#"
  containerStatuses:
    - {name: app, allocatedResources: {memory: 8Gi}}
"#,
        )
        .unwrap();
        assert_eq!(p.requests.memory, GI);
    }

    #[test]
    fn a_bad_status_quantity_names_its_path() {
        let e = resized(
            r#"
  containerStatuses:
    - name: app
      allocatedResources: {cpu: "-1"}
      resources: {requests: {cpu: 500m}}
"#,
        )
        .unwrap_err();
        assert!(
            e.to_string()
                .contains("status.containerStatuses[0].allocatedResources.cpu"),
            "{e}"
        );
    }

    #[test]
    fn node_selector_is_merged_into_every_ored_term() {
        let p = convert(
            r#"
apiVersion: v1
kind: Pod
metadata: {name: web-1}
spec:
  nodeSelector: {team: a}
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
          - matchExpressions:
              - {key: kubernetes.io/arch, operator: In, values: [arm64]}
          - matchExpressions:
              - {key: topology.kubernetes.io/zone, operator: NotIn, values: [us-east-1a]}
          - matchFields:
              - {key: metadata.name, operator: In, values: [node-1]}
          - {}
      preferredDuringSchedulingIgnoredDuringExecution:
        - weight: 20
          preference:
            matchExpressions:
              - {key: adze.sh/capacity-type, operator: In, values: [spot]}
        - weight: 5
          preference: {}
  containers: [{name: app}]
"#,
        );
        let team = Requirement::single("team", "a");
        assert_eq!(
            p.node_requirements,
            vec![
                Requirements::new()
                    .with(req(labels::ARCH, Operator::In, &["arm64"]))
                    .with(team.clone()),
                Requirements::new()
                    .with(req(labels::ZONE, Operator::NotIn, &["us-east-1a"]))
                    .with(team.clone()),
                Requirements::new()
                    .with(req(labels::HOSTNAME, Operator::In, &["node-1"]))
                    .with(team),
            ],
            "the empty term matches no node and is dropped"
        );
        assert_eq!(
            p.preferred_node,
            vec![Weighted {
                weight: 20,
                term: Requirements::new().with(req(labels::CAPACITY_TYPE, Operator::In, &["spot"])),
            }]
        );
    }

    #[test]
    fn without_affinity_the_node_selector_is_the_one_term() {
        let p = convert(
            r#"
apiVersion: v1
kind: Pod
metadata: {name: web-1}
spec:
  nodeSelector: {kubernetes.io/arch: amd64}
  containers: [{name: app}]
"#,
        );
        assert_eq!(
            p.node_requirements,
            vec![Requirements::new().with(Requirement::single(labels::ARCH, "amd64"))]
        );
        let bare =
            convert("{apiVersion: v1, kind: Pod, metadata: {name: x}, spec: {containers: []}}");
        assert_eq!(bare.node_requirements, vec![Requirements::new()]);
    }

    #[test]
    fn only_empty_terms_leave_a_term_no_node_satisfies() {
        let p = convert(
            r#"
apiVersion: v1
kind: Pod
metadata: {name: web-1}
spec:
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms: [{}]
  containers: [{name: app}]
"#,
        );
        assert_eq!(p.node_requirements.len(), 1);
        assert!(p.node_requirements[0].unsatisfiable_key().is_some());
    }

    #[test]
    fn tolerations_keep_operator_key_and_effect() {
        let p = convert(
            r#"
apiVersion: v1
kind: Pod
metadata: {name: web-1}
spec:
  tolerations:
    - {key: nvidia.com/gpu, operator: Equal, value: "true", effect: NoSchedule}
    - {key: dedicated, value: infra}
    - {operator: Exists}
    - {key: spot, operator: Exists, effect: PreferNoSchedule, tolerationSeconds: 30}
  containers: [{name: app}]
"#,
        );
        assert_eq!(
            p.tolerations,
            vec![
                Toleration::equal("nvidia.com/gpu", "true", Some(Effect::NoSchedule)),
                Toleration::equal("dedicated", "infra", None),
                Toleration::exists(None, None),
                Toleration::exists(Some("spot"), Some(Effect::PreferNoSchedule)),
            ]
        );
    }

    #[test]
    fn spread_adds_match_label_keys_and_uses_kubernetes_defaults() {
        let p = convert(
            r#"
apiVersion: v1
kind: Pod
metadata: {name: web-1, labels: {app: web, pod-template-hash: abc123}}
spec:
  topologySpreadConstraints:
    - maxSkew: 1
      topologyKey: topology.kubernetes.io/zone
      whenUnsatisfiable: DoNotSchedule
      minDomains: 3
      labelSelector:
        matchLabels: {app: web}
        matchExpressions:
          - {key: tier, operator: NotIn, values: [batch]}
      matchLabelKeys: [pod-template-hash, not-on-this-pod]
    - maxSkew: 2
      topologyKey: kubernetes.io/hostname
      whenUnsatisfiable: ScheduleAnyway
      nodeAffinityPolicy: Ignore
      nodeTaintsPolicy: Honor
      labelSelector: {}
    - maxSkew: 1
      topologyKey: kubernetes.io/hostname
      whenUnsatisfiable: DoNotSchedule
  containers: [{name: app}]
"#,
        );
        assert_eq!(
            p.spread.len(),
            2,
            "a nil labelSelector matches nothing: skipped"
        );
        let zone = &p.spread[0];
        assert!(zone.hard);
        assert_eq!(zone.min_domains, Some(3));
        assert!(zone.honor_node_affinity && !zone.honor_taints);
        assert_eq!(
            zone.selector,
            Requirements::new()
                .with(Requirement::single("app", "web"))
                .with(req("tier", Operator::NotIn, &["batch"]))
                .with(Requirement::single("pod-template-hash", "abc123"))
        );
        let host = &p.spread[1];
        assert!(!host.hard && !host.honor_node_affinity && host.honor_taints);
        assert_eq!(host.max_skew, 2);
        assert!(host.selector.is_empty());
    }

    #[test]
    fn affinity_namespaces_follow_the_kubernetes_rules() {
        let p = convert(
            r#"
apiVersion: v1
kind: Pod
metadata: {name: web-1, namespace: shop, labels: {app: web, version: v2}}
spec:
  affinity:
    podAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        - topologyKey: topology.kubernetes.io/zone
          labelSelector: {matchLabels: {app: cache}}
        - topologyKey: topology.kubernetes.io/zone
          labelSelector: {matchLabels: {app: db}}
          namespaceSelector: {}
          namespaces: [ignored-when-all]
      preferredDuringSchedulingIgnoredDuringExecution:
        - weight: 10
          podAffinityTerm:
            topologyKey: kubernetes.io/hostname
            labelSelector: {matchLabels: {app: logs}}
            namespaces: [infra]
    podAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        - topologyKey: kubernetes.io/hostname
          labelSelector: {matchLabels: {app: web}}
          namespaces: [other]
          namespaceSelector: {matchLabels: {team: a}}
          matchLabelKeys: [version]
        - topologyKey: kubernetes.io/hostname
  containers: [{name: app}]
"#,
        );
        let only = |ns: &[&str]| Namespaces::Only(ns.iter().map(|s| s.to_string()).collect());
        assert_eq!(p.affinity.len(), 2);
        assert_eq!(p.affinity[0].namespaces, only(&["shop"]));
        assert_eq!(p.affinity[1].namespaces, Namespaces::All);
        assert_eq!(p.preferred_affinity[0].weight, 10);
        assert_eq!(p.preferred_affinity[0].term.namespaces, only(&["infra"]));
        assert_eq!(
            p.anti_affinity.len(),
            1,
            "anti-affinity with a nil selector has no effect"
        );
        let anti = &p.anti_affinity[0];
        assert_eq!(
            anti.namespaces,
            only(&["other", "shop"]),
            "a namespaceSelector is approximated by the list plus the own namespace"
        );
        assert_eq!(
            anti.selector,
            Requirements::new()
                .with(Requirement::single("app", "web"))
                .with(Requirement::single("version", "v2"))
        );
    }

    #[test]
    fn required_affinity_with_a_nil_selector_matches_no_pod() {
        let p = convert(
            r#"
apiVersion: v1
kind: Pod
metadata: {name: web-1, labels: {app: web}}
spec:
  affinity:
    podAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        - topologyKey: kubernetes.io/hostname
  containers: [{name: app}]
"#,
        );
        assert_eq!(p.affinity.len(), 1);
        assert!(!p.matched_by(&p.affinity[0].selector, &p.affinity[0].namespaces));
    }

    #[test]
    fn host_ports_default_to_tcp_and_priority_is_read() {
        let p = convert(
            r#"
apiVersion: v1
kind: Pod
metadata: {name: web-1}
spec:
  priority: 1000
  initContainers:
    - {name: proxy, restartPolicy: Always, ports: [{containerPort: 15000, hostPort: 15000}]}
    - {name: init, ports: [{containerPort: 9, hostPort: 9}]}
  containers:
    - name: app
      ports:
        - {containerPort: 80, hostPort: 8080}
        - {containerPort: 53, hostPort: 53, protocol: UDP, hostIP: 10.0.0.1}
        - {containerPort: 9090}
"#,
        );
        assert_eq!(p.priority, 1000);
        let hp = |port, protocol: &str, ip: &str| HostPort {
            port,
            protocol: protocol.to_string(),
            host_ip: ip.to_string(),
        };
        assert_eq!(
            p.host_ports,
            vec![
                hp(8080, "TCP", ""),
                hp(53, "UDP", "10.0.0.1"),
                hp(15000, "TCP", "")
            ]
        );
    }

    #[test]
    fn a_bad_quantity_names_the_pod_and_the_field() {
        let yaml = r#"
apiVersion: v1
kind: Pod
metadata: {name: web-1}
spec:
  containers:
    - name: app
      resources: {requests: {cpu: abc}}
"#;
        let err = pod(&serde_yaml::from_str(yaml).unwrap()).unwrap_err();
        assert_eq!(err.field, "spec.containers[0].resources.requests.cpu");
        assert!(
            err.to_string()
                .starts_with(r#"pod default/web-1: spec.containers[0].resources.requests.cpu: invalid quantity "abc""#),
            "{err}"
        );
    }

    #[test]
    fn a_bad_operator_names_the_expression() {
        let yaml = r#"
apiVersion: v1
kind: Pod
metadata: {name: web-1}
spec:
  topologySpreadConstraints:
    - maxSkew: 1
      topologyKey: kubernetes.io/hostname
      whenUnsatisfiable: DoNotSchedule
      labelSelector:
        matchExpressions: [{key: app, operator: Gt, values: ["1"]}]
  containers: [{name: app}]
"#;
        let err = pod(&serde_yaml::from_str(yaml).unwrap()).unwrap_err();
        assert_eq!(
            err.field,
            "spec.topologySpreadConstraints[0].labelSelector.matchExpressions[0].operator"
        );
    }

    #[test]
    fn daemonset_pod_lives_in_its_namespace_and_tolerates_node_conditions() {
        let ds: DaemonSet = serde_yaml::from_str(
            r#"
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: fluent-bit, namespace: logging}
spec:
  selector: {matchLabels: {app: fluent-bit}}
  template:
    metadata: {labels: {app: fluent-bit}}
    spec:
      nodeSelector: {kubernetes.io/os: linux}
      containers:
        - name: fb
          resources: {requests: {cpu: 100m, memory: 200Mi}}
"#,
        )
        .unwrap();
        let p = daemonset_pod(&ds).unwrap();
        assert_eq!(p.key(), "logging/fluent-bit");
        assert_eq!(p.labels.get("app").map(String::as_str), Some("fluent-bit"));
        assert_eq!(p.requests.cpu, 100);
        assert_eq!(p.requests.memory, 200 << 20);
        let unschedulable =
            adze_scheduling::Taint::new("node.kubernetes.io/unschedulable", "", Effect::NoSchedule);
        assert!(p.tolerations.iter().any(|t| t.tolerates(&unschedulable)));
    }

    #[test]
    fn workload_errors_name_the_template_field() {
        let ds: DaemonSet = serde_yaml::from_str(
            r#"
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    spec:
      containers: [{name: a, resources: {limits: {memory: 12Qi}}}]
"#,
        )
        .unwrap();
        let err = daemonset_pod(&ds).unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"daemonset default/agent: spec.template.spec.containers[0].resources.limits.memory: invalid quantity "12Qi": unknown suffix"#
        );
    }

    fn refused(yaml: &str) -> ConvertError {
        pod(&serde_yaml::from_str(yaml).unwrap()).unwrap_err()
    }

    #[test]
    fn pod_and_namespace_names_are_refused_as_the_apiserver_refuses_them() {
        let err = refused(
            "apiVersion: v1\nkind: Pod\nmetadata: {name: \"x?dryRun=All\"}\nspec: {containers: [{name: a}]}\n",
        );
        assert_eq!(err.field, "metadata.name");
        assert!(err.to_string().contains("RFC 1123 subdomain"), "{err}");
        let err = refused(
            "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: Team.A}\nspec: {containers: [{name: a}]}\n",
        );
        assert_eq!(err.field, "metadata.namespace");
        assert!(err.to_string().contains("RFC 1123 label"), "{err}");
        let long = "x".repeat(254);
        let err = refused(&format!(
            "apiVersion: v1\nkind: Pod\nmetadata: {{name: {long}}}\nspec: {{containers: [{{name: a}}]}}\n"
        ));
        assert!(err.to_string().contains("no more than 253"), "{err}");
        assert!(err.to_string().len() < 400, "the name is cut: {err}");
        // A workload's own name is held to the same rule.
        let template: PodTemplateSpec =
            serde_yaml::from_str("spec: {containers: [{name: a}]}").unwrap();
        let meta = ObjectMeta {
            name: Some("Web".into()),
            ..Default::default()
        };
        let err = workload_pod("deployment", &meta, &template).unwrap_err();
        assert_eq!(err.field, "metadata.name");
    }

    #[test]
    fn container_names_and_ports_are_refused_at_their_path() {
        let spec = |containers: &str| {
            format!("apiVersion: v1\nkind: Pod\nmetadata: {{name: p}}\nspec:\n{containers}")
        };
        for (containers, field, message) in [
            (
                "  containers: [{name: Web}]\n",
                "spec.containers[0].name",
                "RFC 1123 label",
            ),
            (
                "  containers: [{name: \"\"}]\n",
                "spec.containers[0].name",
                "required field is missing",
            ),
            (
                "  initContainers: [{name: a}]\n  containers: [{name: b}, {name: a}]\n",
                "spec.containers[1].name",
                "duplicate value \"a\": spec.initContainers[0] has this name already",
            ),
            (
                "  containers: [{name: a}, {name: b, ports: [{containerPort: 80}, {containerPort: 0}]}]\n",
                "spec.containers[1].ports[1].containerPort",
                "must be between 1 and 65535, inclusive, got 0",
            ),
            (
                "  containers: [{name: a, ports: [{containerPort: 65536}]}]\n",
                "spec.containers[0].ports[0].containerPort",
                "got 65536",
            ),
            (
                "  initContainers: [{name: i, ports: [{containerPort: 80, hostPort: 70000}]}]\n  containers: [{name: a}]\n",
                "spec.initContainers[0].ports[0].hostPort",
                "must be between 0 and 65535, inclusive, got 70000",
            ),
            (
                "  containers: [{name: a, ports: [{containerPort: 80, hostPort: -1}]}]\n",
                "spec.containers[0].ports[0].hostPort",
                "got -1",
            ),
        ] {
            let err = refused(&spec(containers));
            assert_eq!(err.field, field, "{containers}: {err}");
            assert!(err.to_string().contains(message), "{containers}: {err}");
        }
        // hostPort 0 means none; the edges of both ranges are accepted.
        pod(&serde_yaml::from_str(&spec(
            "  containers: [{name: a, ports: [{containerPort: 65535, hostPort: 0}, {containerPort: 1, hostPort: 65535}]}]\n",
        ))
        .unwrap())
        .unwrap();
    }

    #[test]
    fn negative_requests_limits_and_overhead_are_refused_naming_the_field() {
        for (resources, field) in [
            (
                "containers: [{name: a, resources: {requests: {cpu: \"-1\"}}}]",
                "spec.containers[0].resources.requests.cpu",
            ),
            (
                "containers: [{name: a, resources: {limits: {memory: -1Gi}}}]",
                "spec.containers[0].resources.limits.memory",
            ),
            (
                "initContainers: [{name: i, resources: {requests: {cpu: -500m}}}]\n  containers: [{name: a}]",
                "spec.initContainers[0].resources.requests.cpu",
            ),
            (
                "resources: {requests: {cpu: \"-2\"}}\n  containers: [{name: a}]",
                "spec.resources.requests.cpu",
            ),
            (
                "overhead: {cpu: -7}\n  containers: [{name: a}]",
                "spec.overhead.cpu",
            ),
        ] {
            let err = refused(&format!(
                "apiVersion: v1\nkind: Pod\nmetadata: {{name: neg}}\nspec:\n  {resources}\n"
            ));
            assert_eq!(err.field, field, "{err}");
            assert!(
                err.to_string()
                    .contains("must be greater than or equal to 0, got \"-"),
                "{err}"
            );
        }
        // Zero is fine.
        let p = convert(
            "apiVersion: v1\nkind: Pod\nmetadata: {name: z}\nspec:\n  overhead: {cpu: \"0\"}\n  containers: [{name: a, resources: {requests: {cpu: \"0\"}}}]\n",
        );
        assert_eq!(p.requests.cpu, 0);
    }

    #[test]
    fn an_empty_or_invalid_topology_key_is_refused_naming_the_field() {
        let spread = |key: &str, selector: &str| {
            format!(
                "apiVersion: v1\nkind: Pod\nmetadata: {{name: s}}\nspec:\n  topologySpreadConstraints:\n    - {{maxSkew: 1, topologyKey: \"{key}\", whenUnsatisfiable: DoNotSchedule{selector}}}\n  containers: [{{name: a}}]\n"
            )
        };
        // With a selector and without one (a nil selector is otherwise skipped).
        for selector in [", labelSelector: {matchLabels: {app: s}}", ""] {
            let err = refused(&spread("", selector));
            assert_eq!(err.field, "spec.topologySpreadConstraints[0].topologyKey");
            assert_eq!(
                err.to_string(),
                "pod default/s: spec.topologySpreadConstraints[0].topologyKey: must not be empty"
            );
        }
        let err = refused(&spread("not a key", ""));
        assert_eq!(err.field, "spec.topologySpreadConstraints[0].topologyKey");
        for (kind, prefix) in [
            (
                "podAffinity",
                "requiredDuringSchedulingIgnoredDuringExecution[0]",
            ),
            (
                "podAntiAffinity",
                "requiredDuringSchedulingIgnoredDuringExecution[0]",
            ),
            (
                "podAntiAffinity",
                "preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm",
            ),
        ] {
            let term = "{topologyKey: \"\", labelSelector: {matchLabels: {app: s}}}";
            let terms = if prefix.starts_with("preferred") {
                format!(
                    "preferredDuringSchedulingIgnoredDuringExecution: [{{weight: 1, podAffinityTerm: {term}}}]"
                )
            } else {
                format!("requiredDuringSchedulingIgnoredDuringExecution: [{term}]")
            };
            let err = refused(&format!(
                "apiVersion: v1\nkind: Pod\nmetadata: {{name: s}}\nspec:\n  affinity: {{{kind}: {{{terms}}}}}\n  containers: [{{name: a}}]\n"
            ));
            assert_eq!(
                err.field,
                format!("spec.affinity.{kind}.{prefix}.topologyKey"),
                "{err}"
            );
        }
    }

    #[test]
    fn a_port_protocol_in_the_wrong_case_is_refused_naming_the_field() {
        let err = refused(
            "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: a, ports: [{containerPort: 80, hostPort: 80, protocol: TCP}, {containerPort: 81, hostPort: 80, protocol: tcp}]}]\n",
        );
        assert_eq!(
            err.to_string(),
            r#"pod default/p: spec.containers[0].ports[1].protocol: unsupported value "tcp": supported values: "TCP", "UDP", "SCTP""#
        );
        // Without a host port too: the apiserver checks every port.
        let err = refused(
            "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: a, ports: [{containerPort: 80, protocol: Udp}]}]\n",
        );
        assert_eq!(err.field, "spec.containers[0].ports[0].protocol");
        let p = convert(
            "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: a, ports: [{containerPort: 53, hostPort: 53, protocol: UDP}, {containerPort: 80, hostPort: 80}]}]\n",
        );
        let protocols: Vec<&str> = p.host_ports.iter().map(|h| h.protocol.as_str()).collect();
        assert_eq!(protocols, ["UDP", "TCP"]);
    }

    #[test]
    fn a_host_port_declared_twice_is_refused_as_the_apiserver_refuses_it() {
        let pod =
            |spec: &str| format!("apiVersion: v1\nkind: Pod\nmetadata: {{name: p}}\nspec:\n{spec}");
        // Two app containers: the second declaration is named, with the first.
        let err = refused(&pod(
            "  containers:\n  - {name: a, ports: [{containerPort: 80, hostPort: 8080}]}\n  - {name: b, ports: [{containerPort: 81}, {containerPort: 82, hostPort: 8080, protocol: TCP}]}\n",
        ));
        assert_eq!(
            err.to_string(),
            r#"pod default/p: spec.containers[1].ports[1].hostPort: duplicate value "TCP//8080": spec.containers[0].ports[0] already declares this protocol, hostIP and hostPort"#
        );
        // One container twice, with a host IP.
        let err = refused(&pod(
            "  containers: [{name: a, ports: [{containerPort: 53, hostPort: 53, protocol: UDP, hostIP: 10.0.0.1}, {containerPort: 54, hostPort: 53, protocol: UDP, hostIP: 10.0.0.1}]}]\n",
        ));
        assert_eq!(err.field, "spec.containers[0].ports[1].hostPort");
        assert!(err.to_string().contains(r#""UDP/10.0.0.1/53""#), "{err}");
        // With host networking every container port is a host port.
        let err = refused(&pod(
            "  hostNetwork: true\n  containers:\n  - {name: a, ports: [{containerPort: 9100}]}\n  - {name: b, ports: [{containerPort: 9100}]}\n",
        ));
        assert_eq!(err.field, "spec.containers[1].ports[0].hostPort");
        // One init container twice (a sidecar too: each init container is checked alone).
        for restart in ["", ", restartPolicy: Always"] {
            let err = refused(&pod(&format!(
                "  initContainers:\n  - {{name: i0}}\n  - {{name: i1{restart}, ports: [{{containerPort: 1, hostPort: 9}}, {{containerPort: 2, hostPort: 9}}]}}\n  containers: [{{name: a}}]\n",
            )));
            assert_eq!(err.field, "spec.initContainers[1].ports[1].hostPort");
        }
        // In a workload's template the path starts at the template.
        let deployment: k8s_openapi::api::apps::v1::Deployment = serde_yaml::from_str(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  selector: {}\n  template:\n    spec:\n      containers:\n      - {name: a, ports: [{containerPort: 80, hostPort: 80}]}\n      - {name: b, ports: [{containerPort: 80, hostPort: 80}]}\n",
        )
        .unwrap();
        let spec = deployment.spec.unwrap();
        let err = workload_pod("deployment", &deployment.metadata, &spec.template).unwrap_err();
        assert_eq!(
            err.field,
            "spec.template.spec.containers[1].ports[0].hostPort"
        );

        // What the apiserver accepts: another protocol, another host IP (even "" against
        // "0.0.0.0", compared as written), an init container against an app container or
        // another init container, and the same container port without a host port.
        let p = convert(&pod(
            "  initContainers:\n  - {name: i0, ports: [{containerPort: 1, hostPort: 80}]}\n  - {name: i1, restartPolicy: Always, ports: [{containerPort: 1, hostPort: 80}]}\n  containers:\n  - {name: a, ports: [{containerPort: 80, hostPort: 80}, {containerPort: 80, hostPort: 80, protocol: UDP}, {containerPort: 80}]}\n  - {name: b, ports: [{containerPort: 80, hostPort: 80, hostIP: 0.0.0.0}, {containerPort: 80, hostPort: 80, hostIP: 10.0.0.1}, {containerPort: 80}]}\n",
        ));
        assert_eq!(p.host_ports.len(), 5);
    }
}
