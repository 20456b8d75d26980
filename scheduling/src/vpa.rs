//! VPA predictions (Karpenter v1.15's `PredictionEnabled` gate; `simulate --disruption
//! --vpa-predictions` and `run --vpa-predictions` in Adze): the requests a pod will have once it
//! is recreated, so disruption sizes the replacement for the pods it moves as they will be,
//! not as they are.
//!
//! Why only moved pods: a pod that disruption evicts is recreated by its controller, and the
//! VerticalPodAutoscaler's admission webhook then writes its recommendation into the new
//! pod's requests. Pods that stay where they are keep what they hold, and pending pods were
//! already admitted with the recommendation, so neither is touched.
//!
//! The rule, per container of the pod (as the VPA admission webhook applies it):
//! - the VPA must govern the pod ([`governing`]): same namespace, `spec.targetRef` naming the
//!   pod's top-level controller ([`Workload`]); when several do, the oldest wins, then the
//!   smallest name (the VPA's own tie-break), VPAs in `updatePolicy.updateMode: Off` being
//!   passed over first (the webhook never applies them, so they leave pods to the others);
//!   every other mode (`Initial`, `Recreate`, `Auto`, `InPlaceOrRecreate`) applies at pod
//!   creation;
//! - the container's policy is the `containerPolicies` entry naming it, else the `"*"`
//!   entry, else the defaults; `mode: Off` leaves the container as it is;
//! - a container without a recommendation keeps its requests;
//! - each resource in `controlledResources` (default cpu and memory) that the
//!   recommendation's `target` gives is set to it, raised to `minAllowed` and then lowered
//!   to `maxAllowed` (the larger bound wins if they cross); with `controlledValues:
//!   RequestsOnly` it is also capped at the container's limit (a request above its limit is
//!   invalid, and the limit is not scaled in that mode);
//! - resources the VPA does not control, and other containers' requests, are unchanged.
//!
//! Only `target` is read: `lowerBound`/`upperBound` are the updater's eviction thresholds
//! and `uncappedTarget` ignores the policy; neither is what a new pod gets.
//!
//! Plain data in and out, deterministic; the adapters read VerticalPodAutoscalers and pods
//! and put the result into [`crate::disruption::Input::moved_requests`].

use std::collections::BTreeMap;

/// Resource name → amount in the scheduler's units (cpu in millicores, memory in bytes).
pub type Amounts = BTreeMap<String, i64>;

/// The resources a VPA controls when its policy names none.
pub const DEFAULT_CONTROLLED: [&str; 2] = ["cpu", "memory"];

/// `spec.updatePolicy.updateMode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UpdateMode {
    Off,
    Initial,
    Recreate,
    InPlaceOrRecreate,
    #[default]
    Auto,
}

impl UpdateMode {
    /// Whether the webhook writes the recommendation into a pod being created.
    pub fn applies_at_creation(self) -> bool {
        self != UpdateMode::Off
    }
}

/// `containerPolicies[].mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ContainerMode {
    #[default]
    Auto,
    Off,
}

/// `containerPolicies[].controlledValues`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ControlledValues {
    #[default]
    RequestsAndLimits,
    RequestsOnly,
}

/// One `spec.resourcePolicy.containerPolicies[]` entry.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ContainerPolicy {
    /// A container's name, or `"*"` for every container no entry names.
    pub container: String,
    pub mode: ContainerMode,
    /// `None`: [`DEFAULT_CONTROLLED`].
    pub controlled_resources: Option<Vec<String>>,
    pub controlled_values: ControlledValues,
    pub min_allowed: Amounts,
    pub max_allowed: Amounts,
}

/// A pod's top-level controller, what a VPA's `spec.targetRef` names.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Workload {
    pub kind: String,
    pub name: String,
}

impl Workload {
    /// The workload behind a pod's controlling owner reference. A ReplicaSet whose name is
    /// `<deployment>-<pod-template-hash>` (the pod's label) belongs to that Deployment, which
    /// is what VPAs name; any other owner is its own workload. The Deployment is derived from
    /// the names so neither `run` nor a scenario needs the ReplicaSet object.
    pub fn of(owner_kind: &str, owner_name: &str, pod_template_hash: Option<&str>) -> Workload {
        if owner_kind == "ReplicaSet"
            && let Some(hash) = pod_template_hash.filter(|h| !h.is_empty())
            && let Some(deployment) = owner_name
                .strip_suffix(hash)
                .and_then(|n| n.strip_suffix('-'))
                .filter(|n| !n.is_empty())
        {
            return Workload {
                kind: "Deployment".to_string(),
                name: deployment.to_string(),
            };
        }
        Workload {
            kind: owner_kind.to_string(),
            name: owner_name.to_string(),
        }
    }
}

/// A VerticalPodAutoscaler as the rule reads it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Vpa {
    pub namespace: String,
    pub name: String,
    /// `metadata.creationTimestamp`, seconds since the epoch (0 when unknown).
    pub created: i64,
    /// `spec.targetRef`'s kind and name.
    pub target: Option<Workload>,
    pub update_mode: UpdateMode,
    pub policies: Vec<ContainerPolicy>,
    /// `status.recommendation.containerRecommendations[].target`, by container name.
    pub targets: BTreeMap<String, Amounts>,
}

/// One container of the pod: its requests and limits as its spec states them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Container {
    pub name: String,
    pub requests: Amounts,
    pub limits: Amounts,
}

/// The VPA that governs pods of `workload` in `namespace`, if any: of several, the oldest,
/// then the smallest name. VPAs in `updateMode: Off` are passed over before choosing, as the
/// admission webhook does, so an older Off VPA does not shadow a newer one that applies.
pub fn governing<'a>(vpas: &'a [Vpa], namespace: &str, workload: &Workload) -> Option<&'a Vpa> {
    vpas.iter()
        .filter(|v| v.update_mode.applies_at_creation())
        .filter(|v| v.namespace == namespace && v.target.as_ref() == Some(workload))
        .min_by(|a, b| a.created.cmp(&b.created).then_with(|| a.name.cmp(&b.name)))
}

impl Vpa {
    fn policy(&self, container: &str) -> Option<&ContainerPolicy> {
        (self.policies.iter().find(|p| p.container == container))
            .or_else(|| self.policies.iter().find(|p| p.container == "*"))
    }
}

/// The requests each container will have when the pod is recreated under `vpa`, in the
/// order given; `None` when the VPA changes none of them (so callers keep the pod as is).
pub fn predicted(containers: &[Container], vpa: &Vpa) -> Option<Vec<Amounts>> {
    if !vpa.update_mode.applies_at_creation() {
        return None;
    }
    let mut changed = false;
    let out = containers
        .iter()
        .map(|c| {
            let mut requests = c.requests.clone();
            let policy = vpa.policy(&c.name);
            if policy.is_some_and(|p| p.mode == ContainerMode::Off) {
                return requests;
            }
            let Some(target) = vpa.targets.get(&c.name) else {
                return requests;
            };
            let controlled: Vec<&str> = match policy.and_then(|p| p.controlled_resources.as_ref()) {
                Some(list) => list.iter().map(String::as_str).collect(),
                None => DEFAULT_CONTROLLED.to_vec(),
            };
            for resource in controlled {
                let Some(&want) = target.get(resource) else {
                    continue;
                };
                let mut value = want;
                if let Some(p) = policy {
                    if let Some(&min) = p.min_allowed.get(resource) {
                        value = value.max(min);
                    }
                    if let Some(&max) = p.max_allowed.get(resource) {
                        value = value.min(max);
                    }
                    if p.controlled_values == ControlledValues::RequestsOnly
                        && let Some(&limit) = c.limits.get(resource)
                    {
                        value = value.min(limit);
                    }
                }
                if requests.get(resource) != Some(&value) {
                    changed = true;
                    requests.insert(resource.to_string(), value);
                }
            }
            requests
        })
        .collect();
    changed.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GI: i64 = 1 << 30;

    fn amounts(cpu: Option<i64>, memory: Option<i64>) -> Amounts {
        let mut a = Amounts::new();
        if let Some(c) = cpu {
            a.insert("cpu".into(), c);
        }
        if let Some(m) = memory {
            a.insert("memory".into(), m);
        }
        a
    }

    fn container(name: &str, cpu: i64, memory: i64) -> Container {
        Container {
            name: name.into(),
            requests: amounts(Some(cpu), Some(memory)),
            limits: Amounts::new(),
        }
    }

    fn web() -> Workload {
        Workload {
            kind: "Deployment".into(),
            name: "web".into(),
        }
    }

    fn vpa(targets: &[(&str, Amounts)]) -> Vpa {
        Vpa {
            namespace: "shop".into(),
            name: "web".into(),
            created: 100,
            target: Some(web()),
            targets: targets
                .iter()
                .map(|(n, a)| (n.to_string(), a.clone()))
                .collect(),
            ..Vpa::default()
        }
    }

    #[test]
    fn the_target_replaces_cpu_and_memory_requests() {
        let v = vpa(&[("app", amounts(Some(250), Some(GI / 2)))]);
        let got = predicted(&[container("app", 2000, 4 * GI)], &v).expect("changed");
        assert_eq!(got, vec![amounts(Some(250), Some(GI / 2))]);
    }

    #[test]
    fn a_target_equal_to_the_requests_changes_nothing() {
        let v = vpa(&[("app", amounts(Some(2000), Some(4 * GI)))]);
        assert_eq!(predicted(&[container("app", 2000, 4 * GI)], &v), None);
    }

    #[test]
    fn update_mode_off_changes_nothing_and_every_other_mode_applies() {
        let mut v = vpa(&[("app", amounts(Some(250), None))]);
        let pod = [container("app", 2000, GI)];
        v.update_mode = UpdateMode::Off;
        assert_eq!(predicted(&pod, &v), None);
        for mode in [
            UpdateMode::Initial,
            UpdateMode::Recreate,
            UpdateMode::InPlaceOrRecreate,
            UpdateMode::Auto,
        ] {
            v.update_mode = mode;
            let got = predicted(&pod, &v).expect("applies");
            assert_eq!(got[0]["cpu"], 250, "{mode:?}");
        }
    }

    #[test]
    fn min_and_max_allowed_bound_the_target() {
        let mut v = vpa(&[
            ("low", amounts(Some(50), Some(GI / 8))),
            ("high", amounts(Some(8000), Some(64 * GI))),
        ]);
        v.policies = vec![ContainerPolicy {
            container: "*".into(),
            min_allowed: amounts(Some(100), Some(GI / 4)),
            max_allowed: amounts(Some(2000), Some(8 * GI)),
            ..ContainerPolicy::default()
        }];
        let got = predicted(&[container("low", 500, GI), container("high", 500, GI)], &v)
            .expect("changed");
        assert_eq!(got[0], amounts(Some(100), Some(GI / 4)));
        assert_eq!(got[1], amounts(Some(2000), Some(8 * GI)));
    }

    #[test]
    fn crossed_bounds_let_max_allowed_win() {
        let mut v = vpa(&[("app", amounts(Some(50), None))]);
        v.policies = vec![ContainerPolicy {
            container: "app".into(),
            min_allowed: amounts(Some(3000), None),
            max_allowed: amounts(Some(1000), None),
            ..ContainerPolicy::default()
        }];
        let got = predicted(&[container("app", 500, GI)], &v).expect("changed");
        assert_eq!(got[0]["cpu"], 1000);
    }

    #[test]
    fn only_controlled_resources_change() {
        let mut v = vpa(&[("app", amounts(Some(250), Some(GI / 2)))]);
        v.policies = vec![ContainerPolicy {
            container: "app".into(),
            controlled_resources: Some(vec!["memory".into()]),
            ..ContainerPolicy::default()
        }];
        let got = predicted(&[container("app", 2000, 4 * GI)], &v).expect("changed");
        assert_eq!(got[0], amounts(Some(2000), Some(GI / 2)));
    }

    #[test]
    fn requests_only_caps_at_the_limit_and_requests_and_limits_does_not() {
        let mut v = vpa(&[("app", amounts(Some(3000), None))]);
        let mut c = container("app", 500, GI);
        c.limits = amounts(Some(1000), None);
        v.policies = vec![ContainerPolicy {
            container: "*".into(),
            controlled_values: ControlledValues::RequestsOnly,
            ..ContainerPolicy::default()
        }];
        let got = predicted(std::slice::from_ref(&c), &v).expect("changed");
        assert_eq!(got[0]["cpu"], 1000);
        v.policies[0].controlled_values = ControlledValues::RequestsAndLimits;
        let got = predicted(&[c], &v).expect("changed");
        assert_eq!(got[0]["cpu"], 3000);
    }

    #[test]
    fn containers_without_a_recommendation_or_switched_off_keep_their_requests() {
        let mut v = vpa(&[
            ("app", amounts(Some(250), None)),
            ("sidecar", amounts(Some(10), None)),
        ]);
        v.policies = vec![
            ContainerPolicy {
                container: "sidecar".into(),
                mode: ContainerMode::Off,
                ..ContainerPolicy::default()
            },
            ContainerPolicy {
                container: "*".into(),
                max_allowed: amounts(Some(200), None),
                ..ContainerPolicy::default()
            },
        ];
        let pod = [
            container("app", 2000, GI),
            container("sidecar", 100, GI),
            container("logger", 300, GI),
        ];
        let got = predicted(&pod, &v).expect("changed");
        // The named entry wins over "*" for the sidecar; "*" bounds app.
        assert_eq!(got[0]["cpu"], 200);
        assert_eq!(got[1], pod[1].requests);
        assert_eq!(got[2], pod[2].requests);
    }

    #[test]
    fn a_controlled_resource_the_container_did_not_request_is_added() {
        let v = vpa(&[("app", amounts(Some(250), Some(GI)))]);
        let c = Container {
            name: "app".into(),
            requests: amounts(Some(100), None),
            limits: Amounts::new(),
        };
        let got = predicted(&[c], &v).expect("changed");
        assert_eq!(got[0], amounts(Some(250), Some(GI)));
    }

    #[test]
    fn the_governing_vpa_matches_namespace_and_workload_oldest_first() {
        let mut older = vpa(&[]);
        older.name = "z-older".into();
        older.created = 50;
        let newer = vpa(&[]);
        let mut other_ns = vpa(&[]);
        other_ns.namespace = "other".into();
        other_ns.created = 1;
        let mut other_target = vpa(&[]);
        other_target.target = Some(Workload {
            kind: "StatefulSet".into(),
            name: "web".into(),
        });
        other_target.created = 1;
        let all = [newer.clone(), other_ns, other_target, older];
        assert_eq!(governing(&all, "shop", &web()).unwrap().name, "z-older");
        // Same age: the smallest name.
        let mut a = newer.clone();
        a.name = "a".into();
        assert_eq!(governing(&[newer, a], "shop", &web()).unwrap().name, "a");
        assert!(governing(&all, "shop", &Workload::of("StatefulSet", "db", None)).is_none());
    }

    #[test]
    fn an_older_vpa_in_off_mode_does_not_shadow_one_that_applies() {
        let mut off = vpa(&[]);
        off.name = "observe-only".into();
        off.created = 1;
        off.update_mode = UpdateMode::Off;
        let mut applies = vpa(&[]);
        applies.name = "sizing".into();
        applies.created = 99;
        let both = [off.clone(), applies];
        assert_eq!(governing(&both, "shop", &web()).unwrap().name, "sizing");
        // Off alone governs nothing.
        assert!(governing(&[off], "shop", &web()).is_none());
    }

    #[test]
    fn a_replicaset_named_after_its_hash_is_its_deployment() {
        assert_eq!(Workload::of("ReplicaSet", "web-7c9f", Some("7c9f")), web());
        // Without the hash label, or a name that does not end in it: the ReplicaSet itself.
        assert_eq!(
            Workload::of("ReplicaSet", "web-7c9f", None).kind,
            "ReplicaSet"
        );
        assert_eq!(
            Workload::of("ReplicaSet", "web-7c9f", Some("1234")).kind,
            "ReplicaSet"
        );
        assert_eq!(
            Workload::of("ReplicaSet", "-7c9f", Some("7c9f")).kind,
            "ReplicaSet"
        );
        assert_eq!(Workload::of("StatefulSet", "db", Some("x")).name, "db");
    }
}
