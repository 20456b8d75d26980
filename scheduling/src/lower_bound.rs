//! A lower bound on what any plan must pay for the capacity it launches, so a plan's cost
//! can be reported as "within X% of optimal".
//!
//! The bound is the fractional (LP) relaxation of the launch problem: buy fractional
//! amounts `x_t ≥ 0` of instance types so that, summed, they cover the pods' total demand in
//! every resource (cpu, memory, pods, and each extended resource):
//! `min Σ price_t·x_t  s.t.  Σ room_t,r·x_t ≥ demand_r`. `room_t` is allocatable minus the
//! DaemonSet overhead of the type's NodePool, and `price_t` its cheapest offering the pool
//! allows. Any real plan is a feasible integral point, so the optimum is ≤ its cost.
//! Pod-to-type compatibility is ignored (which keeps it a valid bound, only looser when pods
//! are picky). Solved through the LP dual, `max demand·y  s.t.  room_t·y ≤ price_t, y ≥ 0`,
//! with a dense simplex: there are only as many dual variables as resources.

use crate::plan::Plan;
use crate::resources::Resources;
use crate::scheduler::Snapshot;

/// The bound for the pods a plan puts on new claims.
pub fn for_plan(snapshot: &Snapshot, plan: &Plan) -> f64 {
    let launched: crate::fast_hash::FastSet<&str> = plan
        .new_claims
        .iter()
        .flat_map(|c| c.pods.iter().map(String::as_str))
        .collect();
    if launched.is_empty() {
        return 0.0;
    }
    let mut demand = Resources::default();
    // One buffer for every pod's key: a String per pod was a tenth of this function.
    let mut key = String::new();
    for p in &snapshot.pending {
        key.clear();
        key.push_str(&p.namespace);
        key.push('/');
        key.push_str(&p.name);
        if launched.contains(key.as_str()) {
            demand.add(&p.requests);
        }
    }
    let mut types: Vec<(Resources, f64)> = Vec::new();
    // A type another pool already offers at the same room and price adds nothing to the
    // bound: kept once, so thousands of pools over one catalog make a problem of the
    // catalog's size, not pools × types (the tableau is quadratic in its columns). The
    // first pool's list is kept as it is.
    let mut seen: crate::fast_hash::FastSet<(Resources, u64)> = Default::default();
    for pool in &snapshot.nodepools {
        let first = types.is_empty();
        let reqs = pool.node_requirements();
        let offered: Vec<(&crate::InstanceType, f64)> = pool
            .instance_types
            .iter()
            .filter(|it| crate::scheduler::instance_type_allowed(it, &reqs))
            .filter_map(|it| it.cheapest_offering(&reqs).map(|o| (&**it, o.price)))
            .collect();
        let its: Vec<&crate::InstanceType> = offered.iter().map(|(it, _)| *it).collect();
        let daemons = crate::scheduler::daemon_overheads(pool, &its, &snapshot.daemonsets);
        for ((it, price), daemon) in offered.iter().zip(daemons) {
            let room = it.allocatable().minus(&daemon);
            if seen.insert((room.clone(), price.to_bits())) || first {
                types.push((room, *price));
            }
        }
    }
    lp_bound(&demand, &types)
}

/// `min Σ price·x  s.t.  Σ room·x ≥ demand, x ≥ 0`, via its dual. Returns 0 when nothing is
/// demanded and infinity when some demanded resource no type provides.
pub fn lp_bound(demand: &Resources, types: &[(Resources, f64)]) -> f64 {
    solve(demand, types).cost
}

/// The LP optimum and its shadow prices.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LpSolution {
    pub cost: f64,
    /// USD per hour per unit of each resource (millicore, byte, pod, device) at the optimum:
    /// what a pod's requests are "worth" when capacity is bought as efficiently as possible.
    pub shadow_prices: Vec<(String, f64)>,
    /// How much of each type (by index into the input) the fractional optimum buys.
    pub purchase: Vec<f64>,
}

impl LpSolution {
    /// The fair price of `r` at the shadow prices.
    pub fn value_of(&self, r: &Resources) -> f64 {
        self.shadow_prices
            .iter()
            .map(|(n, y)| y * r.get(n) as f64)
            .sum()
    }
}

pub fn solve(demand: &Resources, types: &[(Resources, f64)]) -> LpSolution {
    let names: Vec<&str> = demand.names().filter(|n| demand.get(n) > 0).collect();
    if names.is_empty() || types.is_empty() {
        return LpSolution::default();
    }
    // Scale each resource so the numbers are near 1: keeps the pivots well conditioned.
    let scale: Vec<f64> = names.iter().map(|n| demand.get(n) as f64).collect();
    let m = names.len();
    let n = types.len();
    // Dual in standard form: max b·y  s.t.  A y ≤ c, y ≥ 0, with A (n×m) = room/scale,
    // b = 1, c = price. Tableau rows: n constraints + objective; columns: m + n slacks + rhs.
    let cols = m + n + 1;
    let mut t = vec![0.0f64; (n + 1) * cols];
    for (i, (room, price)) in types.iter().enumerate() {
        for (j, name) in names.iter().enumerate() {
            t[i * cols + j] = (room.get(name) as f64).max(0.0) / scale[j];
        }
        t[i * cols + m + i] = 1.0;
        t[i * cols + cols - 1] = price.max(0.0);
    }
    for j in 0..m {
        t[n * cols + j] = -1.0;
    }
    let mut basis: Vec<usize> = (m..m + n).collect();
    for _ in 0..(50 * (n + m)) {
        // Entering column: most negative reduced cost (Bland's rule on ties).
        let Some(e) = (0..cols - 1)
            .filter(|&j| t[n * cols + j] < -1e-12)
            .min_by(|&a, &b| t[n * cols + a].total_cmp(&t[n * cols + b]).then(a.cmp(&b)))
        else {
            break;
        };
        let leave = (0..n)
            .filter(|&i| t[i * cols + e] > 1e-12)
            .min_by(|&a, &b| {
                let ra = t[a * cols + cols - 1] / t[a * cols + e];
                let rb = t[b * cols + cols - 1] / t[b * cols + e];
                ra.total_cmp(&rb).then(basis[a].cmp(&basis[b]))
            });
        let Some(r) = leave else {
            // Unbounded dual: some demanded resource no type offers.
            return LpSolution {
                cost: f64::INFINITY,
                ..Default::default()
            };
        };
        let pivot = t[r * cols + e];
        for j in 0..cols {
            t[r * cols + j] /= pivot;
        }
        for i in 0..=n {
            if i == r {
                continue;
            }
            let f = t[i * cols + e];
            if f.abs() > 1e-15 {
                for j in 0..cols {
                    t[i * cols + j] -= f * t[r * cols + j];
                }
            }
        }
        basis[r] = e;
    }
    let mut shadow_prices: Vec<(String, f64)> =
        names.iter().map(|n| (n.to_string(), 0.0)).collect();
    for (row, &b) in basis.iter().enumerate() {
        if b < m {
            shadow_prices[b].1 = t[row * cols + cols - 1] / scale[b];
        }
    }
    // The primal solution is the objective row's reduced costs on the slack columns.
    let purchase = (0..n).map(|i| t[n * cols + m + i].max(0.0)).collect();
    LpSolution {
        cost: t[n * cols + cols - 1],
        shadow_prices,
        purchase,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GI: i64 = 1 << 30;

    #[test]
    fn single_type_bound_is_proportional() {
        // 10 cpu of demand, a 4-cpu type at $1: bound is 2.5.
        let b = lp_bound(
            &Resources::new(10_000, 0),
            &[(Resources::new(4000, 16 * GI), 1.0)],
        );
        assert!((b - 2.5).abs() < 1e-9, "{b}");
    }

    #[test]
    fn mixes_types_for_two_resources() {
        // Demand 8 cpu + 64 GiB. c: 8cpu/16GiB $1, r: 2cpu/64GiB $1.
        // x_c + x_r/4 ≥ 1 (cpu), x_c/4 + x_r ≥ 1 (mem) → x_c = x_r = 0.8 → $1.6.
        let b = lp_bound(
            &Resources::new(8000, 64 * GI),
            &[
                (Resources::new(8000, 16 * GI), 1.0),
                (Resources::new(2000, 64 * GI), 1.0),
            ],
        );
        assert!((b - 1.6).abs() < 1e-9, "{b}");
    }

    #[test]
    fn shadow_prices_value_the_demand_at_the_optimum() {
        let demand = Resources::new(8000, 64 * GI);
        let sol = solve(
            &demand,
            &[
                (Resources::new(8000, 16 * GI), 1.0),
                (Resources::new(2000, 64 * GI), 1.0),
            ],
        );
        // Strong duality: the demand's value at the shadow prices is the optimum.
        assert!((sol.value_of(&demand) - sol.cost).abs() < 1e-9);
        // And the purchase covers the demand at that cost.
        assert!((sol.purchase[0] - 0.8).abs() < 1e-9 && (sol.purchase[1] - 0.8).abs() < 1e-9);
        assert!(sol.shadow_prices.iter().all(|(_, y)| *y > 0.0));
    }

    #[test]
    fn missing_resource_is_infinite() {
        let b = lp_bound(
            &Resources::new(1000, 0).with_extended("nvidia.com/gpu", 1),
            &[(Resources::new(4000, GI), 1.0)],
        );
        assert!(b.is_infinite());
    }
}
