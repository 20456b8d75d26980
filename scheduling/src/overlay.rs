//! NodeOverlays: the user's corrections to the catalog, applied to every pool's instance types
//! before placement so that `simulate`, provisioning and consolidation all price and size the
//! same adjusted types.
//!
//! The rules, after Karpenter's NodeOverlay (`karpenter.sh/v1alpha1`):
//! * An overlay selects an instance type of a pool when its requirements are compatible with the
//!   type's labels and the pool's node requirements (so `adze.sh/nodepool` and template labels
//!   select too), and at least one of the type's offerings has a zone, zone ID and capacity type
//!   the requirements allow. Prices change on the selected offerings only; capacity on the whole
//!   type.
//! * `price` replaces an offering's price; `priceAdjustment` adds a signed amount or a signed
//!   percentage of it. A result below zero is zero.
//! * `capacity` sets extended resources (never cpu, memory, ephemeral-storage or pods; the API
//!   refuses those); allocatable follows.
//! * Overlays are taken by weight, highest first (unset is 0); among equal weights the name later
//!   in the alphabet first. For each offering the first overlay that changes its price wins; for
//!   each resource of a type the first overlay that sets it wins. Stacking is never additive.
//! * Two overlays of the *same* weight that both change one offering's price, or both set one
//!   resource of one type, conflict: the one taken later is not applied anywhere (never half),
//!   and is reported, naming the overlay it conflicts with.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::instance_type::InstanceType;
use crate::labels;
use crate::nodepool::NodePool;
use crate::requirements::{Requirements, Undefined};
use crate::resources;

/// How an overlay changes a price.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PriceChange {
    /// `price`: this price, whatever the offering's own.
    Set(f64),
    /// `priceAdjustment: "+0.05"` / `"-0.01"`: the offering's price plus this amount.
    Add(f64),
    /// `priceAdjustment: "-10%"`: the offering's price plus this percentage of itself.
    Percent(f64),
}

/// Why a price string was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PriceError {
    #[error(
        "{0:?} is not a price adjustment: a signed amount (\"+0.5\", \"-0.01\") or a signed percentage from -100% (\"-10%\", \"+5%\")"
    )]
    Adjustment(String),
    #[error("{0:?} is not a price: a non-negative decimal such as \"0.25\"")]
    Price(String),
}

impl PriceChange {
    /// Parses `spec.priceAdjustment`: a sign, then a decimal, optionally a `%`; percentages may
    /// not go below -100%.
    pub fn adjustment(s: &str) -> Result<Self, PriceError> {
        let bad = || PriceError::Adjustment(s.to_string());
        let (negative, rest) = match s.as_bytes().first() {
            Some(b'+') => (false, &s[1..]),
            Some(b'-') => (true, &s[1..]),
            _ => return Err(bad()),
        };
        let (number, percent) = match rest.strip_suffix('%') {
            Some(n) => (n, true),
            None => (rest, false),
        };
        let value = decimal(number).ok_or_else(bad)?;
        let value = if negative { -value } else { value };
        if percent {
            if value < -100.0 {
                return Err(bad());
            }
            Ok(Self::Percent(value))
        } else {
            Ok(Self::Add(value))
        }
    }

    /// Parses `spec.price`: an unsigned decimal.
    pub fn price(s: &str) -> Result<Self, PriceError> {
        decimal(s)
            .map(Self::Set)
            .ok_or_else(|| PriceError::Price(s.to_string()))
    }

    /// The offering's price after this change, never below zero.
    pub fn apply(self, price: f64) -> f64 {
        let new = match self {
            Self::Set(p) => p,
            Self::Add(d) => price + d,
            Self::Percent(pct) => price * (1.0 + pct / 100.0),
        };
        if new.is_finite() { new.max(0.0) } else { price }
    }
}

/// Digits with at most one '.', at least one digit, finite: what both price fields allow after
/// the sign. Exponents, "inf" and "NaN" (which `f64::from_str` takes) are refused.
fn decimal(s: &str) -> Option<f64> {
    let digits = s.bytes().filter(u8::is_ascii_digit).count();
    let dots = s.bytes().filter(|b| *b == b'.').count();
    if digits == 0 || dots > 1 || digits + dots != s.len() || s.ends_with('.') {
        return None;
    }
    s.parse::<f64>().ok().filter(|v| v.is_finite())
}

/// One NodeOverlay as placement sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Overlay {
    pub name: String,
    /// Unset is 0.
    pub weight: i32,
    pub requirements: Requirements,
    pub price: Option<PriceChange>,
    /// Extended resource → amount in whole units. A zero is kept (it sets the resource to
    /// none), which is why this is a map and not [`Resources`], which drops zeros.
    pub capacity: BTreeMap<String, i64>,
}

/// What [`apply`] did with each overlay.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Outcome {
    /// Overlay name → how many (pool, instance type) pairs it changed.
    pub applied: BTreeMap<String, usize>,
    /// Overlay name → the overlay of the same weight it conflicts with; not applied.
    pub conflicts: BTreeMap<String, String>,
}

/// Offering labels: matched per offering, not against the type's label sets.
const OFFERING_KEYS: [&str; 3] = [labels::ZONE, labels::ZONE_ID, labels::CAPACITY_TYPE];

fn without_offering_keys(reqs: &Requirements) -> Requirements {
    let mut r = reqs.clone();
    for key in OFFERING_KEYS {
        r.remove(key);
    }
    r
}

/// Who last touched a price or resource, for conflict detection (overlays come highest weight
/// first, so that is the lowest weight so far).
#[derive(Clone)]
struct Touch {
    weight: i32,
    overlay: usize,
}

/// The changes accumulated for one (pool, type).
#[derive(Default)]
struct Edit {
    /// Per offering index: the winning change, and who touched it last.
    prices: BTreeMap<usize, (PriceChange, Touch)>,
    /// Per resource: the winning amount, and who touched it last.
    capacity: BTreeMap<String, (i64, Touch)>,
}

/// What one overlay selects in one pool's type: the offering indices its requirements allow.
fn selection(overlay: &Overlay, pool_reqs: &Requirements, it: &InstanceType) -> Vec<usize> {
    let mut node = without_offering_keys(&it.requirements);
    node.add_all(pool_reqs);
    if !node.compatible(
        &without_offering_keys(&overlay.requirements),
        Undefined::Absent,
    ) {
        return Vec::new();
    }
    it.offerings
        .iter()
        .enumerate()
        .filter(|(_, o)| o.allowed_by(&overlay.requirements))
        .map(|(i, _)| i)
        .collect()
}

/// Applies `overlays` to every pool's instance types (see the module docs for the rules).
/// Pure and deterministic: the order of `overlays` and `pools` does not change the result.
pub fn apply(pools: &mut [NodePool], overlays: &[Overlay]) -> Outcome {
    let mut order: Vec<usize> = (0..overlays.len()).collect();
    order.sort_by(|&a, &b| {
        let (a, b) = (&overlays[a], &overlays[b]);
        b.weight.cmp(&a.weight).then_with(|| b.name.cmp(&a.name))
    });
    let pool_reqs: Vec<Requirements> = pools.iter().map(NodePool::node_requirements).collect();
    // (pool, type) → edit
    let mut edits: BTreeMap<(usize, usize), Edit> = BTreeMap::new();
    let mut outcome = Outcome::default();
    for &o in &order {
        let overlay = &overlays[o];
        let mut selected = Vec::new();
        let mut conflict = None;
        'pools: for (p, pool) in pools.iter().enumerate() {
            for (t, it) in pool.instance_types.iter().enumerate() {
                let offerings = selection(overlay, &pool_reqs[p], it);
                if offerings.is_empty() {
                    continue;
                }
                if let Some(edit) = edits.get(&(p, t)) {
                    let same = |touch: &Touch| touch.weight == overlay.weight;
                    let price_clash = offerings
                        .iter()
                        .filter(|_| overlay.price.is_some())
                        .filter_map(|i| edit.prices.get(i))
                        .map(|(_, touch)| touch)
                        .find(|touch| same(touch));
                    let capacity_clash = overlay
                        .capacity
                        .keys()
                        .filter_map(|r| edit.capacity.get(r))
                        .map(|(_, touch)| touch)
                        .find(|touch| same(touch));
                    if let Some(touch) = price_clash.or(capacity_clash) {
                        conflict = Some(touch.overlay);
                        break 'pools;
                    }
                }
                selected.push((p, t, offerings));
            }
        }
        if let Some(other) = conflict {
            outcome
                .conflicts
                .insert(overlay.name.clone(), overlays[other].name.clone());
            continue;
        }
        let touch = Touch {
            weight: overlay.weight,
            overlay: o,
        };
        let mut changed = 0;
        for (p, t, offerings) in selected {
            let edit = edits.entry((p, t)).or_default();
            let mut any = false;
            if let Some(change) = overlay.price {
                for i in offerings {
                    let slot = edit.prices.entry(i).or_insert_with(|| {
                        any = true;
                        (change, touch.clone())
                    });
                    slot.1 = touch.clone();
                }
            }
            for (name, &amount) in &overlay.capacity {
                let slot = edit.capacity.entry(name.clone()).or_insert_with(|| {
                    any = true;
                    (amount, touch.clone())
                });
                slot.1 = touch.clone();
            }
            changed += usize::from(any);
        }
        outcome.applied.insert(overlay.name.clone(), changed);
    }
    for ((p, t), edit) in edits {
        let pool = &mut pools[p];
        let it = &pool.instance_types[t];
        let mut offerings = it.offerings.clone();
        for (i, (change, _)) in &edit.prices {
            offerings[*i].price = change.apply(offerings[*i].price);
        }
        let mut capacity = it.capacity.clone();
        for (name, (amount, _)) in &edit.capacity {
            if !matches!(
                name.as_str(),
                resources::CPU | resources::MEMORY | resources::EPHEMERAL_STORAGE | resources::PODS
            ) {
                capacity.set(name, *amount);
            }
        }
        let reshaped = it.reshaped(capacity, it.overhead.clone(), offerings);
        pool.instance_types[t] = Arc::new(reshaped);
    }
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures;
    use crate::requirements::{Operator, Requirement};

    fn req(key: &str, op: Operator, values: &[&str]) -> Requirement {
        Requirement::new(key, op, values).unwrap()
    }

    fn overlay(name: &str, weight: i32, reqs: &[Requirement]) -> Overlay {
        let mut requirements = Requirements::new();
        for r in reqs {
            requirements.add(r.clone());
        }
        Overlay {
            name: name.to_string(),
            weight,
            requirements,
            price: None,
            capacity: BTreeMap::new(),
        }
    }

    fn type_named(pool: &NodePool, name: &str) -> Arc<InstanceType> {
        pool.instance_types
            .iter()
            .find(|it| it.name == name)
            .cloned()
            .unwrap()
    }

    fn pool() -> NodePool {
        NodePool::new("default", fixtures::small_catalog())
    }

    fn of_type(name: &str) -> Requirement {
        req(labels::INSTANCE_TYPE, Operator::In, &[name])
    }

    #[test]
    fn adjustments_parse_as_karpenter_documents_them() {
        assert_eq!(
            PriceChange::adjustment("-0.01"),
            Ok(PriceChange::Add(-0.01))
        );
        assert_eq!(PriceChange::adjustment("+5"), Ok(PriceChange::Add(5.0)));
        assert_eq!(
            PriceChange::adjustment("-10%"),
            Ok(PriceChange::Percent(-10.0))
        );
        assert_eq!(
            PriceChange::adjustment("+150%"),
            Ok(PriceChange::Percent(150.0))
        );
        assert_eq!(
            PriceChange::adjustment("-100%"),
            Ok(PriceChange::Percent(-100.0))
        );
        for bad in [
            "10%", "0.5", "-101%", "+", "-%", "+1e3", "+inf", "+NaN", "+1.", "+1..2", "",
        ] {
            assert!(PriceChange::adjustment(bad).is_err(), "{bad:?}");
        }
        assert_eq!(PriceChange::price("5.00"), Ok(PriceChange::Set(5.0)));
        for bad in ["-1", "+1", "1%", "abc", ""] {
            assert!(PriceChange::price(bad).is_err(), "{bad:?}");
        }
        let huge = format!("+{}", "9".repeat(400));
        assert!(
            PriceChange::adjustment(&huge).is_err(),
            "infinite is refused"
        );
    }

    #[test]
    fn prices_change_by_amount_percentage_or_override_and_never_go_negative() {
        assert!((PriceChange::Percent(-10.0).apply(0.2) - 0.18).abs() < 1e-12);
        assert!((PriceChange::Add(0.05).apply(0.2) - 0.25).abs() < 1e-12);
        assert_eq!(PriceChange::Add(-1.0).apply(0.2), 0.0);
        assert_eq!(PriceChange::Percent(-100.0).apply(0.2), 0.0);
        assert_eq!(PriceChange::Set(3.0).apply(0.2), 3.0);
    }

    #[test]
    fn an_overlay_changes_only_what_it_selects() {
        let mut pools = vec![pool()];
        let before = pools[0].clone();
        let target = before.instance_types[0].name.clone();
        let mut o = overlay("discount", 0, &[of_type(&target)]);
        o.price = Some(PriceChange::Percent(-50.0));
        let out = apply(&mut pools, &[o]);
        assert_eq!(out.applied.get("discount"), Some(&1));
        for (old, new) in before.instance_types.iter().zip(&pools[0].instance_types) {
            if old.name == target {
                for (a, b) in old.offerings.iter().zip(&new.offerings) {
                    assert!((b.price - a.price / 2.0).abs() < 1e-12);
                }
            } else {
                assert_eq!(old, new, "{} is not selected", old.name);
            }
        }
    }

    #[test]
    fn an_overlay_selecting_nothing_changes_nothing() {
        let mut pools = vec![pool()];
        let before = pools[0].clone();
        let mut o = overlay("nothing", 0, &[of_type("no-such.type")]);
        o.price = Some(PriceChange::Set(0.0));
        o.capacity.insert("example.com/license".into(), 1);
        let out = apply(&mut pools, &[o]);
        assert_eq!(out.applied.get("nothing"), Some(&0));
        assert_eq!(pools[0], before);
    }

    #[test]
    fn offering_requirements_select_offerings_not_the_whole_type() {
        let mut pools = vec![pool()];
        let before = pools[0].clone();
        let spot = req(labels::CAPACITY_TYPE, Operator::In, &["spot"]);
        let mut o = overlay("spot-premium", 0, &[spot]);
        o.price = Some(PriceChange::Add(1.0));
        apply(&mut pools, &[o]);
        for (old, new) in before.instance_types.iter().zip(&pools[0].instance_types) {
            for (a, b) in old.offerings.iter().zip(&new.offerings) {
                let want = if a.capacity_type == "spot" {
                    a.price + 1.0
                } else {
                    a.price
                };
                assert!(
                    (b.price - want).abs() < 1e-12,
                    "{} {}",
                    old.name,
                    a.capacity_type
                );
            }
        }
    }

    #[test]
    fn the_higher_weight_wins_and_lower_weights_do_not_stack() {
        let mut pools = vec![pool()];
        let name = pools[0].instance_types[0].name.clone();
        let base = pools[0].instance_types[0].offerings[0].price;
        let mut low = overlay("low", 1, &[]);
        low.price = Some(PriceChange::Add(1.0));
        low.capacity.insert("example.com/license".into(), 1);
        let mut high = overlay("high", 5, &[of_type(&name)]);
        high.price = Some(PriceChange::Set(0.001));
        high.capacity.insert("example.com/license".into(), 4);
        // Order of the input does not matter.
        let out = apply(&mut pools, &[low, high]);
        assert!(out.conflicts.is_empty());
        let it = type_named(&pools[0], &name);
        assert_eq!(it.offerings[0].price, 0.001, "not 0.001 + 1");
        assert_eq!(it.capacity.get("example.com/license"), 4);
        assert_eq!(it.allocatable().get("example.com/license"), 4);
        let other = &pools[0].instance_types[1];
        assert_eq!(other.capacity.get("example.com/license"), 1);
        assert!(other.offerings[0].price > 1.0 && base > 0.0);
    }

    #[test]
    fn equal_weights_that_overlap_conflict_and_the_later_name_is_applied() {
        let mut pools = vec![pool()];
        let before = pools[0].clone();
        let mut a = overlay("alpha", 10, &[]);
        a.price = Some(PriceChange::Set(9.0));
        let mut b = overlay("beta", 10, &[]);
        b.price = Some(PriceChange::Set(1.0));
        // Different resources at the same weight do not conflict.
        let mut c = overlay("gamma", 10, &[]);
        c.capacity.insert("example.com/license".into(), 2);
        let out = apply(&mut pools, &[a, b, c]);
        assert_eq!(out.conflicts.get("alpha").map(String::as_str), Some("beta"));
        assert_eq!(out.conflicts.len(), 1);
        for (old, new) in before.instance_types.iter().zip(&pools[0].instance_types) {
            assert!(new.offerings.iter().all(|o| o.price == 1.0), "{}", old.name);
            assert_eq!(new.capacity.get("example.com/license"), 2);
        }
    }

    #[test]
    fn a_discount_makes_another_type_the_cheapest() {
        let mut pools = vec![pool()];
        let reqs = Requirements::new();
        let cheapest = |pool: &NodePool| {
            pool.instance_types
                .iter()
                .filter_map(|it| Some((it.cheapest_offering(&reqs)?.price, it.name.clone())))
                .min_by(|a, b| a.0.total_cmp(&b.0))
                .unwrap()
        };
        let (_, first) = cheapest(&pools[0]);
        let runner_up = pools[0]
            .instance_types
            .iter()
            .find(|it| it.name != first)
            .unwrap()
            .name
            .clone();
        let mut o = overlay("savings-plan", 0, &[of_type(&runner_up)]);
        o.price = Some(PriceChange::Percent(-100.0));
        apply(&mut pools, &[o]);
        assert_eq!(cheapest(&pools[0]).1, runner_up);
    }

    #[test]
    fn pool_labels_select_pools() {
        let mut a = pool();
        a.name = "a".into();
        let mut b = pool();
        b.name = "b".into();
        let mut pools = vec![a, b];
        let mut o = overlay("only-b", 0, &[req(labels::NODEPOOL, Operator::In, &["b"])]);
        o.capacity.insert("example.com/license".into(), 1);
        let out = apply(&mut pools, &[o]);
        assert_eq!(out.applied["only-b"], pools[1].instance_types.len());
        assert!(
            pools[0]
                .instance_types
                .iter()
                .all(|it| it.capacity.get("example.com/license") == 0)
        );
        assert!(
            pools[1]
                .instance_types
                .iter()
                .all(|it| it.capacity.get("example.com/license") == 1)
        );
    }

    #[test]
    fn added_capacity_lets_a_pod_asking_for_a_custom_resource_schedule() {
        use crate::scheduler::{Options, Snapshot, schedule};
        let mut pod = fixtures::pod("licensed").build();
        pod.requests.set("example.com/license", 1);
        let mut snapshot = Snapshot {
            pending: vec![pod],
            nodepools: vec![pool()],
            ..Default::default()
        };
        let options = Options::default();
        let before = schedule(&snapshot, &options);
        assert_eq!(before.unschedulable.len(), 1, "no type has the resource");
        let target = "m.8x";
        let mut o = overlay("license", 0, &[of_type(target)]);
        o.capacity.insert("example.com/license".into(), 2);
        apply(&mut snapshot.nodepools, &[o]);
        let after = schedule(&snapshot, &options);
        assert!(after.unschedulable.is_empty(), "{:?}", after.unschedulable);
        assert_eq!(after.new_claims.len(), 1);
        let claim = &after.new_claims[0];
        assert_eq!(claim.instance_type, target);
        assert_eq!(claim.instance_type_options, vec![target.to_string()]);
        assert_eq!(claim.allocatable.get("example.com/license"), 2);
    }
}
