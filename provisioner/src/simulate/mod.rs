//! `adze-provisioner simulate`: Adze's placement run on a scenario file instead of a live
//! cluster. [`scenario`] reads the objects into a snapshot, [`run`] places the pending pods
//! exactly as the provisioner would, and [`output`] prints the plan.

pub mod disruption;
pub mod explain;
pub mod output;
pub mod scenario;
pub mod yaml;

use std::time::{Duration, Instant};

use adze_scheduling::{Options, Plan, schedule};

pub use output::Report;
pub use scenario::{Problem, Scenario, ScenarioError};

/// A plan and how long placement took to make it.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub plan: Plan,
    pub elapsed: Duration,
}

/// As `run --karpenter-labels` plans: new nodes carry Karpenter's well-known labels beside
/// Adze's, so pending pods selecting Karpenter's keys are planned as if they selected Adze's,
/// and each planned claim's labels include the Karpenter keys.
pub fn with_karpenter_labels(scenario: &mut Scenario) {
    for p in &mut scenario.snapshot.pending {
        p.alias_karpenter_keys();
    }
}

/// As `run --kube-scheduler-config` plans: pending pods that set no topology spread get the
/// cluster's default constraints, selecting by their Deployment's or ReplicaSet's selector
/// (a scenario has no Services; its bare Pods get none, as kube-scheduler gives a pod no
/// controller or Service selects). The rule is [`adze_scheduling::default_spread`].
pub fn with_default_spread(
    scenario: &mut Scenario,
    defaults: &adze_scheduling::default_spread::DefaultSpread,
) -> usize {
    let mut applied = 0;
    for p in &mut scenario.snapshot.pending {
        if let Some(sel) = scenario.owner_selectors.get(&p.key())
            && defaults.apply(p, sel)
        {
            applied += 1;
        }
    }
    applied
}

/// The plan's claims labelled as nodes are with `--karpenter-labels`.
pub fn add_karpenter_labels(plan: &mut Plan) {
    for c in &mut plan.new_claims {
        c.labels = adze_scheduling::labels::with_karpenter_aliases(&c.labels);
    }
}

/// Places the scenario's pending pods, keeping at most `max_instance_types` options per
/// NodeClaim (minValues may keep more).
pub fn run(scenario: &Scenario, max_instance_types: usize) -> Outcome {
    run_with(
        scenario,
        max_instance_types,
        &crate::rules::Policies::default(),
    )
}

/// The placement options [`run_with`] plans with.
pub fn options(max_instance_types: usize, policies: &crate::rules::Policies) -> Options {
    let mut options = Options {
        max_instance_types,
        ..Options::default()
    };
    policies.apply(&mut options);
    options
}

/// [`run`] under the given placement policies (`--preference-policy`,
/// `--min-values-policy`).
pub fn run_with(
    scenario: &Scenario,
    max_instance_types: usize,
    policies: &crate::rules::Policies,
) -> Outcome {
    let options = options(max_instance_types, policies);
    let start = Instant::now();
    let mut plan = schedule(&scenario.snapshot, &options);
    // Pods their volumes kept out of placement, as `run` reports them: unschedulable too.
    plan.unschedulable
        .extend(scenario.unschedulable.iter().cloned());
    Outcome {
        plan,
        elapsed: start.elapsed(),
    }
}
