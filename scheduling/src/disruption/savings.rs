//! The minimum savings per disruption cost of a consolidation (a NodePool's
//! `spec.disruption.minSavingsPerDisruptionCost`, as in Karpenter's tests): a move that
//! launches a replacement goes ahead only when what it saves per hour, divided by the
//! disruption cost of the nodes it removes, reaches the threshold. It keeps consolidation
//! from evicting many pods to save a cent.
//!
//! - **Savings**: the removed nodes' prices less the price of the replacement's cheapest
//!   option ([`cheapest_replacement_price`]).
//! - **Disruption cost**: the sum over the removed nodes ([`total_disruption_cost`]) of each
//!   node's pods' eviction costs weighted by the share of its lifetime left (the cost the
//!   consolidation order already uses), never less than [`MIN_DISRUPTION_COST`].
//! - **Threshold**: the highest of the removed nodes' pools ([`threshold`]); 0 (the default)
//!   turns the check off.
//!
//! A move that only deletes nodes is not held back: its savings are the nodes' whole price.
//! Neither are emptiness, drift and expiry, which do not weigh prices. A move that saves
//! nothing is refused elsewhere (the replacement must be cheaper), not here.

use crate::instance_type::InstanceType;
use crate::requirements::Requirements;

/// The least disruption cost a move is charged, as much as evicting one default pod: a
/// node without pods still costs something to take away, and the ratio never divides by 0.
pub const MIN_DISRUPTION_COST: f64 = 1.0;

/// The disruption cost of a move: the sum of its nodes' costs (0 for none).
pub fn total_disruption_cost(costs: impl IntoIterator<Item = f64>) -> f64 {
    costs.into_iter().sum()
}

/// What the replacement costs per hour at best: the cheapest available offering `reqs`
/// allows of the first of `options`. The options must be ordered cheapest first (a
/// replacement claim's are), so the first type holds the cheapest launch. `None` when there
/// is no option or the first has no such offering.
pub fn cheapest_replacement_price(options: &[&InstanceType], reqs: &Requirements) -> Option<f64> {
    options
        .first()?
        .cheapest_offering(reqs)
        .map(|offering| offering.price)
}

/// The threshold a move must meet: the highest of the thresholds of the pools its nodes
/// belong to (each pool may demand its own bar), at least 0. Values that are not finite
/// numbers are skipped (validation refuses them before they get here).
pub fn threshold(per_pool: impl IntoIterator<Item = f64>) -> f64 {
    per_pool
        .into_iter()
        .filter(|t| t.is_finite())
        .fold(0.0, f64::max)
}

/// One move measured against a threshold.
#[derive(Debug, Clone, PartialEq)]
pub struct SavingsCheck {
    /// USD per hour: the removed nodes' prices less the replacement's.
    pub savings: f64,
    /// The move's disruption cost, raised to [`MIN_DISRUPTION_COST`].
    pub disruption_cost: f64,
    /// The least savings per unit of disruption cost; 0 or less is no minimum.
    pub threshold: f64,
}

impl SavingsCheck {
    /// Removing nodes worth `removed` per hour, with disruption cost `disruption_cost`, for
    /// a replacement worth `replacement` per hour, under `threshold`.
    pub fn new(threshold: f64, removed: f64, replacement: f64, disruption_cost: f64) -> Self {
        SavingsCheck {
            savings: removed - replacement,
            disruption_cost: disruption_cost.max(MIN_DISRUPTION_COST),
            threshold,
        }
    }

    /// Savings per hour for each unit of disruption cost.
    pub fn per_disruption_cost(&self) -> f64 {
        self.savings / self.disruption_cost
    }

    /// Whether the move may go ahead: no threshold, nothing saved (refused elsewhere), or
    /// savings per disruption cost at least the threshold.
    pub fn passes(&self) -> bool {
        self.threshold <= 0.0 || self.savings <= 0.0 || self.per_disruption_cost() >= self.threshold
    }
}

impl std::fmt::Display for SavingsCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "saves ${:.4}/h for a disruption cost of {:.2}: {:.4} per unit {} minSavingsPerDisruptionCost {:.4}",
            self.savings,
            self.disruption_cost,
            self.per_disruption_cost(),
            if self.passes() { ">=" } else { "<" },
            self.threshold
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_threshold_or_no_savings_always_passes() {
        assert!(SavingsCheck::new(0.0, 1.0, 0.99, 100.0).passes());
        assert!(SavingsCheck::new(-1.0, 1.0, 0.99, 100.0).passes());
        assert!(SavingsCheck::new(0.5, 1.0, 1.0, 1.0).passes());
        assert!(SavingsCheck::new(0.5, 1.0, 1.5, 1.0).passes());
    }

    #[test]
    fn the_ratio_is_savings_over_disruption_floored_at_one() {
        let c = SavingsCheck::new(0.1, 1.0, 0.5, 0.2);
        assert_eq!(c.disruption_cost, 1.0);
        assert!((c.per_disruption_cost() - 0.5).abs() < 1e-12);
        assert!(c.passes());
        let blocked = SavingsCheck::new(0.1, 1.0, 0.5, 10.0);
        assert!(!blocked.passes());
        assert!(
            blocked.to_string().contains("0.0500 per unit < "),
            "{blocked}"
        );
    }

    #[test]
    fn the_threshold_is_the_highest_finite_one_at_least_zero() {
        assert_eq!(threshold([]), 0.0);
        assert_eq!(threshold([0.01, 0.05, 0.0]), 0.05);
        assert_eq!(threshold([f64::NAN, 0.02, f64::INFINITY]), 0.02);
        assert_eq!(threshold([-1.0]), 0.0);
    }
}
