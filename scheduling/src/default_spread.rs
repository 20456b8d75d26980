//! kube-scheduler's cluster-level default topology spread: the `PodTopologySpread` plugin
//! gives a pod that lists no `topologySpreadConstraints` of its own the cluster's default
//! constraints, counting the pods picked by a selector derived from the Services,
//! ReplicationController, ReplicaSet or StatefulSet that select the pod. Planning that left
//! them out would open nodes kube-scheduler does not fill as planned.
//!
//! The rule, one definition for `run` and `simulate` (adapters only gather the selectors):
//! * only pods whose spec lists no constraints at all ([`Pod::spread_declared`] false; one
//!   the converter dropped for having no `labelSelector` still counts as listed);
//! * only when a selector can be derived ([`owner_selector`] not empty): bare pods, and Job
//!   or DaemonSet pods no Service selects, get nothing, as in kube-scheduler;
//! * the constraints then act exactly like the pod's own: `DoNotSchedule` is required,
//!   `ScheduleAnyway` is a preference honoured and relaxed like any other (and dropped with
//!   `PreferencePolicy::Ignore`), which is how Karpenter v1.15 plans them.

use std::collections::BTreeMap;

use crate::labels;
use crate::pod::{Pod, PodSelector, TopologySpread};
use crate::requirements::Requirement;

/// One of the cluster's `defaultConstraints` (they carry no selector: it is derived per pod).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DefaultConstraint {
    pub max_skew: u32,
    pub topology_key: String,
    /// `DoNotSchedule`; `ScheduleAnyway` is a preference.
    pub hard: bool,
    /// Only with `DoNotSchedule`, as kube-scheduler validates it.
    pub min_domains: Option<u32>,
}

/// The default constraints in effect. Empty: none (`defaultingType: List` with no list, or
/// not configured).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct DefaultSpread {
    pub constraints: Vec<DefaultConstraint>,
}

/// What went wrong with a configured default constraint, and where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct DefaultSpreadError {
    pub path: String,
    pub message: String,
}

impl DefaultSpread {
    /// kube-scheduler's `defaultingType: System` (its default since 1.20): hostname maxSkew 3
    /// and zone maxSkew 5, both `ScheduleAnyway`.
    pub fn system() -> DefaultSpread {
        let soft = |key: &str, max_skew| DefaultConstraint {
            max_skew,
            topology_key: key.to_string(),
            hard: false,
            min_domains: None,
        };
        DefaultSpread {
            constraints: vec![soft(labels::HOSTNAME, 3), soft(labels::ZONE, 5)],
        }
    }

    /// A configured list, checked as kube-scheduler checks `defaultConstraints` (so a list
    /// Adze accepts is one the scheduler accepts too). `path` names the list in messages.
    pub fn list(
        path: &str,
        constraints: Vec<DefaultConstraint>,
    ) -> Result<DefaultSpread, DefaultSpreadError> {
        let err = |i: usize, field: &str, message: String| DefaultSpreadError {
            path: format!("{path}[{i}].{field}"),
            message,
        };
        for (i, c) in constraints.iter().enumerate() {
            if c.max_skew == 0 {
                return Err(err(i, "maxSkew", "must be at least 1".into()));
            }
            if c.topology_key.is_empty() {
                return Err(err(i, "topologyKey", "must not be empty".into()));
            }
            if let Some(d) = c.min_domains {
                if d == 0 {
                    return Err(err(i, "minDomains", "must be at least 1".into()));
                }
                if !c.hard {
                    return Err(err(
                        i,
                        "minDomains",
                        "only allowed with whenUnsatisfiable: DoNotSchedule".into(),
                    ));
                }
            }
            if let Some(j) = constraints[..i]
                .iter()
                .position(|o| o.topology_key == c.topology_key && o.hard == c.hard)
            {
                return Err(err(
                    i,
                    "topologyKey",
                    format!(
                        "{:?} with the same whenUnsatisfiable as {path}[{j}]: kube-scheduler refuses duplicates",
                        c.topology_key
                    ),
                ));
            }
        }
        Ok(DefaultSpread { constraints })
    }

    pub fn is_empty(&self) -> bool {
        self.constraints.is_empty()
    }

    /// Gives `pod` the default constraints, selecting by `selector` (see [`owner_selector`]),
    /// when the rule of the module docs says it gets them. Returns whether it did.
    pub fn apply(&self, pod: &mut Pod, selector: &PodSelector) -> bool {
        if self.constraints.is_empty() || pod.spread_declared || selector.is_empty() {
            return false;
        }
        pod.spread = self
            .constraints
            .iter()
            .map(|c| TopologySpread {
                max_skew: c.max_skew,
                topology_key: c.topology_key.clone(),
                hard: c.hard,
                selector: selector.clone(),
                min_domains: c.min_domains,
                // kube-scheduler's defaults for both policies (1.20 had no policies and
                // behaved the same way: node affinity honoured, taints not).
                honor_node_affinity: true,
                honor_taints: false,
            })
            .collect();
        true
    }
}

/// The selector kube-scheduler derives for a pod's default constraints: the selectors of the
/// Services in its namespace that select it, merged, then the requirements of its
/// controlling ReplicationController, ReplicaSet or StatefulSet (another controller kind,
/// or none, adds nothing). Empty when nothing selects the pod: then no defaults apply.
///
/// `services`: the `spec.selector` of each Service in the pod's namespace (a Service with
/// no selector selects nothing and is left out by the caller or passed empty).
pub fn owner_selector<'s>(
    pod_labels: &BTreeMap<String, String>,
    services: impl IntoIterator<Item = &'s BTreeMap<String, String>>,
    controller: Option<&PodSelector>,
) -> PodSelector {
    let mut out = PodSelector::new();
    for selector in services {
        // An empty selector would pick every pod; kube-scheduler skips only nil ones, but an
        // empty one adds no labels either way.
        let selects = selector
            .iter()
            .all(|(k, v)| pod_labels.get(k).is_some_and(|l| l == v));
        if selects {
            for (k, v) in selector {
                out.add(Requirement::single(k, v));
            }
        }
    }
    if let Some(c) = controller {
        out.add_all(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::Resources;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn rs_selector() -> PodSelector {
        PodSelector::new()
            .with(Requirement::single("app", "web"))
            .with(Requirement::single("pod-template-hash", "abc"))
    }

    #[test]
    fn a_pod_with_no_constraints_and_an_owner_gets_the_system_defaults() {
        let mut pod = Pod::new("default", "web-1", Resources::default());
        let sel = rs_selector();
        assert!(DefaultSpread::system().apply(&mut pod, &sel));
        let got: Vec<_> = pod
            .spread
            .iter()
            .map(|s| (s.topology_key.as_str(), s.max_skew, s.hard, &s.selector))
            .collect();
        assert_eq!(
            got,
            vec![
                (labels::HOSTNAME, 3, false, &sel),
                (labels::ZONE, 5, false, &sel)
            ]
        );
    }

    #[test]
    fn own_constraints_even_dropped_ones_or_no_selector_mean_no_defaults() {
        let defaults = DefaultSpread::system();
        let mut declared = Pod::new("default", "a", Resources::default());
        declared.spread_declared = true;
        assert!(!defaults.apply(&mut declared, &rs_selector()));
        assert!(declared.spread.is_empty());

        let mut bare = Pod::new("default", "b", Resources::default());
        assert!(!defaults.apply(&mut bare, &PodSelector::new()));
        assert!(
            bare.spread.is_empty(),
            "a bare pod is not spread by default"
        );

        let mut off = Pod::new("default", "c", Resources::default());
        assert!(!DefaultSpread::default().apply(&mut off, &rs_selector()));
        assert!(off.spread.is_empty());
    }

    #[test]
    fn selector_merges_selecting_services_then_the_controller() {
        let pod_labels = labels(&[
            ("app", "web"),
            ("tier", "front"),
            ("pod-template-hash", "abc"),
        ]);
        let svc_web = labels(&[("app", "web")]);
        let svc_tier = labels(&[("tier", "front")]);
        let svc_other = labels(&[("app", "db")]);
        let sel = owner_selector(
            &pod_labels,
            [&svc_web, &svc_other, &svc_tier],
            Some(&rs_selector()),
        );
        let want = rs_selector().with(Requirement::single("tier", "front"));
        assert_eq!(sel, want, "the db Service does not select the pod");
        assert!(sel.matches_labels(&pod_labels));

        let only_services = owner_selector(&pod_labels, [&svc_tier], None);
        assert_eq!(
            only_services,
            PodSelector::new().with(Requirement::single("tier", "front"))
        );
        assert!(owner_selector(&pod_labels, [&svc_other], None).is_empty());
    }

    /// Six replicas of a Deployment (one CPU each) that set no constraints, planned with
    /// `defaults` applied as an adapter applies them, and the replicas per zone.
    fn plan_six(defaults: &DefaultSpread, policy: crate::PreferencePolicy) -> Vec<(String, usize)> {
        use crate::fixtures;
        let sel = fixtures::selector("app", "web");
        let pending = (0..6)
            .map(|i| {
                let mut p = fixtures::pod(&format!("web-{i}"))
                    .label("app", "web")
                    .cpu(1000)
                    .build();
                defaults.apply(&mut p, &sel);
                p
            })
            .collect();
        let snapshot = crate::Snapshot {
            pending,
            nodepools: vec![fixtures::pool("default", fixtures::small_catalog())],
            ..Default::default()
        };
        let options = crate::Options {
            preference_policy: policy,
            ..Default::default()
        };
        let plan = crate::schedule(&snapshot, &options);
        assert!(plan.unschedulable.is_empty(), "{:?}", plan.unschedulable);
        let mut per_claim: Vec<(String, usize)> = plan
            .new_claims
            .iter()
            .map(|c| (c.zone.clone(), c.pods.len()))
            .collect();
        per_claim.sort();
        per_claim
    }

    fn zones(claims: &[(String, usize)]) -> BTreeMap<&str, usize> {
        let mut out = BTreeMap::new();
        for (z, n) in claims {
            *out.entry(z.as_str()).or_default() += n;
        }
        out
    }

    #[test]
    fn a_deployment_with_no_constraints_spreads_by_zone_under_a_zone_default() {
        use crate::PreferencePolicy::Respect;
        let none = plan_six(&DefaultSpread::default(), Respect);
        assert_eq!(zones(&none).len(), 1, "no defaults, one zone: {none:?}");

        let zone = DefaultSpread::list(
            "defaultConstraints",
            vec![DefaultConstraint {
                max_skew: 1,
                topology_key: labels::ZONE.into(),
                hard: true,
                min_domains: None,
            }],
        )
        .unwrap();
        let spread = plan_six(&zone, Respect);
        assert_eq!(
            zones(&spread).into_values().collect::<Vec<_>>(),
            vec![2, 2, 2],
            "maxSkew 1 over three zones: {spread:?}"
        );
    }

    #[test]
    fn system_defaults_are_preferences_relaxed_or_ignored_like_the_pods_own() {
        use crate::PreferencePolicy::{Ignore, Respect};
        let system = plan_six(&DefaultSpread::system(), Respect);
        assert!(
            system.iter().all(|(_, n)| *n <= 3),
            "hostname maxSkew 3 honoured while it can be: {system:?}"
        );
        assert_eq!(system.iter().map(|(_, n)| n).sum::<usize>(), 6);
        assert_eq!(
            plan_six(&DefaultSpread::system(), Ignore),
            plan_six(&DefaultSpread::default(), Ignore),
            "Ignore drops ScheduleAnyway defaults"
        );
    }

    #[test]
    fn configured_lists_are_checked_with_the_path_of_the_bad_field() {
        let c = |key: &str, skew, hard, min| DefaultConstraint {
            max_skew: skew,
            topology_key: key.into(),
            hard,
            min_domains: min,
        };
        let p = "args.defaultConstraints";
        let e = DefaultSpread::list(p, vec![c(labels::ZONE, 0, true, None)]).unwrap_err();
        assert_eq!(e.path, "args.defaultConstraints[0].maxSkew");
        let e = DefaultSpread::list(
            p,
            vec![c(labels::ZONE, 1, true, None), c("", 1, true, None)],
        )
        .unwrap_err();
        assert_eq!(e.path, "args.defaultConstraints[1].topologyKey");
        let e = DefaultSpread::list(p, vec![c(labels::ZONE, 1, false, Some(2))]).unwrap_err();
        assert_eq!(e.path, "args.defaultConstraints[0].minDomains");
        let e = DefaultSpread::list(
            p,
            vec![
                c(labels::ZONE, 1, true, None),
                c(labels::ZONE, 2, true, None),
            ],
        )
        .unwrap_err();
        assert!(e.to_string().contains("[1].topologyKey"), "{e}");
        let ok = DefaultSpread::list(
            p,
            vec![
                c(labels::ZONE, 1, true, Some(3)),
                c(labels::ZONE, 2, false, None),
            ],
        )
        .unwrap();
        assert_eq!(ok.constraints.len(), 2);
        assert!(DefaultSpread::list(p, vec![]).unwrap().is_empty());
    }
}
