//! `adze-provisioner simulate`: Adze's placement run on a scenario file instead of a live
//! cluster. [`scenario`] reads the objects into a snapshot, [`run`] places the pending pods
//! exactly as the provisioner would, and [`output`] prints the plan.

pub mod output;
pub mod scenario;

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

/// Places the scenario's pending pods, keeping at most `max_instance_types` options per
/// NodeClaim (minValues may keep more).
pub fn run(scenario: &Scenario, max_instance_types: usize) -> Outcome {
    let options = Options {
        max_instance_types,
        ..Options::default()
    };
    let start = Instant::now();
    let plan = schedule(&scenario.snapshot, &options);
    Outcome {
        plan,
        elapsed: start.elapsed(),
    }
}
