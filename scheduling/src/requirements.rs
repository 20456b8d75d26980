//! The requirements algebra over node label keys: what values a key may take on a node,
//! including whether the label may be missing. Pod node selectors and affinity, NodePool
//! requirements, instance-type labels and existing nodes' labels all become [`Requirements`],
//! and placement is intersection plus a satisfiability check.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use thiserror::Error;

use crate::labels;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Operator {
    In,
    NotIn,
    Exists,
    DoesNotExist,
    Gt,
    Lt,
    /// Karpenter v1's inclusive bounds (NodePool requirements only; pod selectors and node
    /// affinity know just Gt and Lt).
    Gte,
    Lte,
}

impl Operator {
    pub fn parse(s: &str) -> Option<Operator> {
        Some(match s {
            "In" => Operator::In,
            "NotIn" => Operator::NotIn,
            "Exists" => Operator::Exists,
            "DoesNotExist" => Operator::DoesNotExist,
            "Gt" => Operator::Gt,
            "Lt" => Operator::Lt,
            "Gte" => Operator::Gte,
            "Lte" => Operator::Lte,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Operator::In => "In",
            Operator::NotIn => "NotIn",
            Operator::Exists => "Exists",
            Operator::DoesNotExist => "DoesNotExist",
            Operator::Gt => "Gt",
            Operator::Lt => "Lt",
            Operator::Gte => "Gte",
            Operator::Lte => "Lte",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum RequirementError {
    #[error("{key}: unknown operator {op:?}")]
    UnknownOperator { key: String, op: String },
    #[error("{key}: operator {op} needs exactly one integer value, got {values:?}")]
    NeedsOneInteger {
        key: String,
        op: &'static str,
        values: Vec<String>,
    },
    #[error("{key}: operator {op} takes no values, got {values:?}")]
    TakesNoValues {
        key: String,
        op: &'static str,
        values: Vec<String>,
    },
    #[error("{key}: operator In needs at least one value")]
    InNeedsValues { key: String },
}

/// The set of values one label key may take on a node.
///
/// Kept as "exactly `values`" or "anything but `values`", optionally bounded by integer
/// `gt`/`lt`, plus whether a node *without* the label qualifies (true for NotIn and
/// DoesNotExist, false for In, Exists, Gt and Lt, as in Kubernetes).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Requirement {
    pub key: String,
    complement: bool,
    values: BTreeSet<String>,
    gt: Option<i64>,
    lt: Option<i64>,
    absent_ok: bool,
    /// At least this many distinct values must remain possible (spread over instance types).
    pub min_values: Option<u32>,
}

impl Requirement {
    pub fn new<S: AsRef<str>>(
        key: &str,
        op: Operator,
        values: &[S],
    ) -> Result<Requirement, RequirementError> {
        let vals: Vec<String> = values.iter().map(|v| v.as_ref().to_string()).collect();
        let one_int = || -> Result<i64, RequirementError> {
            match vals.as_slice() {
                [v] => v
                    .parse::<i64>()
                    .map_err(|_| RequirementError::NeedsOneInteger {
                        key: key.to_string(),
                        op: op.as_str(),
                        values: vals.clone(),
                    }),
                _ => Err(RequirementError::NeedsOneInteger {
                    key: key.to_string(),
                    op: op.as_str(),
                    values: vals.clone(),
                }),
            }
        };
        let no_values = || {
            if vals.is_empty() {
                Ok(())
            } else {
                Err(RequirementError::TakesNoValues {
                    key: key.to_string(),
                    op: op.as_str(),
                    values: vals.clone(),
                })
            }
        };
        let mut r = Requirement {
            key: key.to_string(),
            complement: true,
            values: BTreeSet::new(),
            gt: None,
            lt: None,
            absent_ok: false,
            min_values: None,
        };
        match op {
            Operator::In => {
                if vals.is_empty() {
                    return Err(RequirementError::InNeedsValues {
                        key: key.to_string(),
                    });
                }
                r.complement = false;
                r.values = vals.iter().cloned().collect();
            }
            Operator::NotIn => {
                r.values = vals.iter().cloned().collect();
                r.absent_ok = true;
            }
            Operator::Exists => no_values()?,
            Operator::DoesNotExist => {
                no_values()?;
                r.complement = false;
                r.absent_ok = true;
            }
            Operator::Gt => r.gt = Some(one_int()?),
            Operator::Lt => r.lt = Some(one_int()?),
            // Integers only: `>= n` is `> n-1` and `<= n` is `< n+1`. At the ends of i64 the
            // bound still admits integers only (never a word): `>= i64::MIN` is `> i64::MIN`,
            // the same set of label values, since no label value is negative; `<= i64::MAX`
            // is every integer, `> i64::MIN` again.
            Operator::Gte => r.gt = Some(one_int()?.saturating_sub(1)),
            Operator::Lte => match one_int()?.checked_add(1) {
                Some(l) => r.lt = Some(l),
                None => r.gt = Some(i64::MIN),
            },
        }
        Ok(r)
    }

    /// `key In [value]`: how a concrete label is expressed.
    pub fn single(key: &str, value: &str) -> Requirement {
        Requirement {
            key: key.to_string(),
            complement: false,
            values: BTreeSet::from([value.to_string()]),
            gt: None,
            lt: None,
            absent_ok: false,
            min_values: None,
        }
    }

    pub fn any_of<I: IntoIterator<Item = S>, S: Into<String>>(key: &str, values: I) -> Requirement {
        Requirement {
            key: key.to_string(),
            complement: false,
            values: values.into_iter().map(Into::into).collect(),
            gt: None,
            lt: None,
            absent_ok: false,
            min_values: None,
        }
    }

    pub fn with_min_values(mut self, min: Option<u32>) -> Self {
        self.min_values = min;
        self
    }

    fn in_bounds(&self, v: &str) -> bool {
        if self.gt.is_none() && self.lt.is_none() {
            return true;
        }
        match v.parse::<i64>() {
            Ok(n) => self.gt.is_none_or(|g| n > g) && self.lt.is_none_or(|l| n < l),
            Err(_) => false,
        }
    }

    /// Whether a node whose label `key` has this value satisfies the requirement.
    pub fn allows(&self, value: &str) -> bool {
        self.in_bounds(value) && (self.values.contains(value) != self.complement)
    }

    /// Whether the requirement bounds the value as an integer (Gt/Lt): only a label whose
    /// value is an integer can meet it.
    pub fn integer_bounded(&self) -> bool {
        self.gt.is_some() || self.lt.is_some()
    }

    /// Whether a node without the label satisfies the requirement.
    pub fn allows_absent(&self) -> bool {
        self.absent_ok
    }

    /// Whether a node labelled with `value` (or without the label) satisfies it.
    pub fn allows_label(&self, value: Option<&str>) -> bool {
        match value {
            Some(v) => self.allows(v),
            None => self.absent_ok,
        }
    }

    pub fn intersect(&self, other: &Requirement) -> Requirement {
        let (complement, values) = match (self.complement, other.complement) {
            (false, false) => (
                false,
                self.values.intersection(&other.values).cloned().collect(),
            ),
            (false, true) => (
                false,
                self.values.difference(&other.values).cloned().collect(),
            ),
            (true, false) => (
                false,
                other.values.difference(&self.values).cloned().collect(),
            ),
            (true, true) => (true, self.values.union(&other.values).cloned().collect()),
        };
        let gt = match (self.gt, other.gt) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        let lt = match (self.lt, other.lt) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let mut r = Requirement {
            key: self.key.clone(),
            complement,
            values,
            gt,
            lt,
            absent_ok: self.absent_ok && other.absent_ok,
            min_values: self.min_values.max(other.min_values),
        };
        if !r.complement && (r.gt.is_some() || r.lt.is_some()) {
            let kept: BTreeSet<String> = r
                .values
                .iter()
                .filter(|v| r.in_bounds(v))
                .cloned()
                .collect();
            r.values = kept;
        }
        r
    }

    /// Whether some label value satisfies both, without building the intersection: the
    /// check placement runs for every candidate instance type.
    pub fn overlaps(&self, other: &Requirement) -> bool {
        let bounded =
            self.gt.is_some() || self.lt.is_some() || other.gt.is_some() || other.lt.is_some();
        match (self.complement, other.complement) {
            (false, false) => self.values.iter().any(|v| {
                other.values.contains(v) && (!bounded || (self.in_bounds(v) && other.in_bounds(v)))
            }),
            (false, true) => self
                .values
                .iter()
                .any(|v| other.allows(v) && self.in_bounds(v)),
            (true, false) => other
                .values
                .iter()
                .any(|v| self.allows(v) && other.in_bounds(v)),
            (true, true) => !bounded || !self.intersect(other).has_no_values(),
        }
    }

    /// Whether a node can satisfy both (with a value, or by lacking the label).
    pub fn compatible(&self, other: &Requirement) -> bool {
        (self.absent_ok && other.absent_ok) || self.overlaps(other)
    }

    /// The integers a bounded set admits as label values, `lo..=hi`: a label value cannot
    /// start with '-', so the integers a label can hold are `0..=i64::MAX`. None when the
    /// bounds leave no such integer (`Gt 9223372036854775807`, `Lt 0`), or when unbounded.
    fn integer_range(&self) -> Option<(i64, i64)> {
        if self.gt.is_none() && self.lt.is_none() {
            return None;
        }
        let lo = match self.gt {
            Some(g) => g.checked_add(1)?.max(0),
            None => 0,
        };
        let hi = match self.lt {
            Some(l) => l.checked_sub(1)?,
            None => i64::MAX,
        };
        (lo <= hi).then_some((lo, hi))
    }

    /// True when no label value qualifies (a missing label may still).
    pub fn has_no_values(&self) -> bool {
        if !self.complement {
            return self.values.is_empty();
        }
        if self.gt.is_none() && self.lt.is_none() {
            return false;
        }
        let Some((lo, hi)) = self.integer_range() else {
            return true;
        };
        let excluded: BTreeSet<i64> = self
            .values
            .iter()
            .filter_map(|v| v.parse::<i64>().ok())
            .filter(|n| (lo..=hi).contains(n))
            .collect();
        // `hi - lo + 1` in i128: 0..=i64::MAX has 2^63 integers.
        (i128::from(hi) - i128::from(lo) + 1) <= excluded.len() as i128
    }

    /// True when nothing, not even a missing label, satisfies it.
    pub fn is_unsatisfiable(&self) -> bool {
        !self.absent_ok && self.has_no_values()
    }

    /// The values, when the set is finite ("In"-like).
    pub fn finite_values(&self) -> Option<&BTreeSet<String>> {
        (!self.complement).then_some(&self.values)
    }

    pub fn single_value(&self) -> Option<&str> {
        match self.finite_values() {
            Some(v) if v.len() == 1 => v.iter().next().map(String::as_str),
            _ => None,
        }
    }

    /// A concrete label value to give a node, or None when the node should not carry the
    /// label. Picks the smallest allowed value so the choice is deterministic.
    pub fn pick_value(&self) -> Option<String> {
        if !self.complement {
            return self.values.iter().next().cloned();
        }
        if self.absent_ok {
            return None;
        }
        // The smallest admitted integer that is also a label value (never negative, never
        // past i64::MAX); None only when nothing qualifies, which placement checks first.
        let (lo, hi) = match self.integer_range() {
            Some(range) => range,
            None if self.gt.is_none() && self.lt.is_none() => (0, i64::MAX),
            None => return None,
        };
        let last = lo.saturating_add(self.values.len() as i64).min(hi);
        (lo..=last).map(|n| n.to_string()).find(|v| self.allows(v))
    }

    /// The operator that describes this set best, with its values, for NodeClaim specs
    /// and messages. Bounded sets may need two entries (Gt and Lt).
    pub fn to_terms(&self) -> Vec<(Operator, Vec<String>)> {
        let vals: Vec<String> = self.values.iter().cloned().collect();
        let mut out = Vec::new();
        if !self.complement {
            if vals.is_empty() && self.absent_ok {
                out.push((Operator::DoesNotExist, vec![]));
            } else {
                // An empty In set: nothing satisfies it, and it reads as such.
                out.push((Operator::In, vals));
            }
            return out;
        }
        match self.gt {
            // Below zero the bound admits every label integer: `Gte 0` says so in a value a
            // label (and a NodeClaim requirement) may hold, where `Gt -1` would not.
            Some(g) if g < 0 => out.push((Operator::Gte, vec!["0".to_string()])),
            Some(g) => out.push((Operator::Gt, vec![g.to_string()])),
            None => {}
        }
        if let Some(l) = self.lt {
            out.push((Operator::Lt, vec![l.to_string()]));
        }
        if !vals.is_empty() || self.absent_ok {
            out.push((Operator::NotIn, vals));
        } else if out.is_empty() {
            out.push((Operator::Exists, vec![]));
        }
        out
    }
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self
            .to_terms()
            .into_iter()
            .map(|(op, v)| match op {
                Operator::Exists | Operator::DoesNotExist => {
                    format!("{} {}", self.key, op.as_str())
                }
                Operator::Gt | Operator::Lt | Operator::Gte | Operator::Lte => {
                    format!("{} {} {}", self.key, op.as_str(), v[0])
                }
                _ => format!("{} {} [{}]", self.key, op.as_str(), v.join(", ")),
            })
            .collect();
        f.write_str(&parts.join(" and "))
    }
}

/// How to read a key that the node side does not mention.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Undefined {
    /// The node will not carry the label (existing nodes, custom keys on new nodes).
    Absent,
    /// Well-known keys are still open: the instance type or cloud will decide them.
    WellKnownOpen,
}

/// Why two requirement sets cannot both hold, for a reason message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    pub key: String,
    pub wanted: String,
    pub offered: String,
}

impl fmt::Display for Conflict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "requires {}, but {}", self.wanted, self.offered)
    }
}

/// Requirements on several keys, all of which must hold.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Requirements {
    by_key: BTreeMap<String, Requirement>,
}

impl Requirements {
    pub fn new() -> Self {
        Self::default()
    }

    /// Requirements equivalent to a concrete label map: each key In [value].
    pub fn from_labels<'a>(labels: impl IntoIterator<Item = (&'a String, &'a String)>) -> Self {
        let mut r = Requirements::new();
        for (k, v) in labels {
            r.by_key.insert(k.clone(), Requirement::single(k, v));
        }
        r
    }

    /// Adds a requirement, intersecting with any existing one for the same key.
    pub fn add(&mut self, req: Requirement) {
        match self.by_key.get_mut(&req.key) {
            Some(existing) => *existing = existing.intersect(&req),
            None => {
                self.by_key.insert(req.key.clone(), req);
            }
        }
    }

    pub fn add_all(&mut self, other: &Requirements) {
        for r in other.iter() {
            self.add(r.clone());
        }
    }

    pub fn with(mut self, req: Requirement) -> Self {
        self.add(req);
        self
    }

    pub fn get(&self, key: &str) -> Option<&Requirement> {
        self.by_key.get(key)
    }

    pub fn remove(&mut self, key: &str) -> Option<Requirement> {
        self.by_key.remove(key)
    }

    /// The same requirements with keys renamed by `rename` (None keeps a key); a renamed
    /// requirement is intersected with any already on the new key.
    pub fn renamed(&self, rename: impl Fn(&str) -> Option<&'static str>) -> Requirements {
        let mut out = Requirements::new();
        for r in self.iter() {
            let mut r = r.clone();
            if let Some(new) = rename(&r.key) {
                r.key = new.to_string();
            }
            out.add(r);
        }
        out
    }

    pub fn iter(&self) -> impl Iterator<Item = &Requirement> {
        self.by_key.values()
    }

    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.by_key.keys().map(String::as_str)
    }

    pub fn is_empty(&self) -> bool {
        self.by_key.is_empty()
    }

    pub fn len(&self) -> usize {
        self.by_key.len()
    }

    /// The first key whose requirement nothing can satisfy.
    pub fn unsatisfiable_key(&self) -> Option<&Requirement> {
        self.iter().find(|r| r.is_unsatisfiable())
    }

    /// Checks whether a node described by `self` can satisfy every requirement in `wanted`.
    /// Keys `self` does not mention are read per `undefined`.
    pub fn conflict_with(&self, wanted: &Requirements, undefined: Undefined) -> Option<Conflict> {
        for w in wanted.iter() {
            match self.by_key.get(&w.key) {
                Some(mine) => {
                    if !mine.compatible(w) {
                        return Some(Conflict {
                            key: w.key.clone(),
                            wanted: w.to_string(),
                            offered: format!("the node offers {mine}"),
                        });
                    }
                }
                None => {
                    let open =
                        undefined == Undefined::WellKnownOpen && labels::is_well_known(&w.key);
                    if !open && !w.allows_absent() {
                        return Some(Conflict {
                            key: w.key.clone(),
                            wanted: w.to_string(),
                            offered: format!("the node has no label {}", w.key),
                        });
                    }
                }
            }
        }
        None
    }

    pub fn compatible(&self, wanted: &Requirements, undefined: Undefined) -> bool {
        self.conflict_with(wanted, undefined).is_none()
    }

    /// Whether concrete labels satisfy every requirement.
    pub fn matches_labels(&self, labels: &BTreeMap<String, String>) -> bool {
        self.iter()
            .all(|r| r.allows_label(labels.get(&r.key).map(String::as_str)))
    }
}

impl fmt::Display for Requirements {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.iter().map(|r| r.to_string()).collect();
        f.write_str(&parts.join(", "))
    }
}

impl FromIterator<Requirement> for Requirements {
    fn from_iter<T: IntoIterator<Item = Requirement>>(iter: T) -> Self {
        let mut r = Requirements::new();
        for req in iter {
            r.add(req);
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(key: &str, op: Operator, vals: &[&str]) -> Requirement {
        Requirement::new(key, op, vals).unwrap()
    }

    #[test]
    fn in_and_not_in_intersect_to_the_difference() {
        let a = req("zone", Operator::In, &["a", "b", "c"]);
        let b = req("zone", Operator::NotIn, &["b"]);
        let r = a.intersect(&b);
        assert!(r.allows("a") && r.allows("c") && !r.allows("b"));
        assert!(!r.allows_absent(), "In still demands the label");
    }

    #[test]
    fn exists_and_does_not_exist_are_disjoint() {
        let r = req("k", Operator::Exists, &[]).intersect(&req("k", Operator::DoesNotExist, &[]));
        assert!(r.is_unsatisfiable());
    }

    #[test]
    fn not_in_allows_a_missing_label() {
        let r = req("k", Operator::NotIn, &["x"]).intersect(&req("k", Operator::DoesNotExist, &[]));
        assert!(!r.is_unsatisfiable());
        assert!(r.has_no_values());
        assert!(r.allows_absent());
    }

    #[test]
    fn gt_and_lt_bound_integers() {
        let r = req("cpu", Operator::Gt, &["4"]).intersect(&req("cpu", Operator::Lt, &["9"]));
        assert!(r.allows("8") && !r.allows("4") && !r.allows("9") && !r.allows("x"));
        let empty = req("cpu", Operator::Gt, &["4"]).intersect(&req("cpu", Operator::Lt, &["5"]));
        assert!(empty.is_unsatisfiable());
        let finite = req("cpu", Operator::In, &["2", "8", "16"]).intersect(&req(
            "cpu",
            Operator::Gt,
            &["4"],
        ));
        assert_eq!(
            finite
                .finite_values()
                .unwrap()
                .iter()
                .cloned()
                .collect::<Vec<_>>(),
            vec!["16".to_string(), "8".to_string()]
        );
    }

    #[test]
    fn gt_needs_one_integer() {
        let e = Requirement::new("cpu", Operator::Gt, &["a"]).unwrap_err();
        assert!(e.to_string().contains("exactly one integer"), "{e}");
        assert!(Requirement::new::<&str>("k", Operator::In, &[]).is_err());
        assert!(Requirement::new("k", Operator::Exists, &["v"]).is_err());
    }

    #[test]
    fn custom_key_undefined_on_node_is_absent_but_well_known_is_open() {
        let node = Requirements::new();
        let wants_team = Requirements::new().with(req("team", Operator::In, &["a"]));
        let wants_arch = Requirements::new().with(req(labels::ARCH, Operator::In, &["arm64"]));
        assert!(!node.compatible(&wants_team, Undefined::WellKnownOpen));
        assert!(node.compatible(&wants_arch, Undefined::WellKnownOpen));
        assert!(!node.compatible(&wants_arch, Undefined::Absent));
        let avoid_team = Requirements::new().with(req("team", Operator::NotIn, &["a"]));
        assert!(node.compatible(&avoid_team, Undefined::Absent));
    }

    #[test]
    fn conflict_names_the_key() {
        let node = Requirements::new().with(Requirement::single(labels::ARCH, "amd64"));
        let pod = Requirements::new().with(req(labels::ARCH, Operator::In, &["arm64"]));
        let c = node.conflict_with(&pod, Undefined::Absent).unwrap();
        assert_eq!(c.key, labels::ARCH);
        assert!(
            c.to_string().contains("arm64") && c.to_string().contains("amd64"),
            "{c}"
        );
    }

    #[test]
    fn an_empty_in_set_is_not_shown_as_does_not_exist() {
        let r = req("k", Operator::In, &["a"]).intersect(&req("k", Operator::In, &["b"]));
        assert!(r.is_unsatisfiable());
        assert_eq!(r.to_string(), "k In []");
        let r = req("k", Operator::NotIn, &["a"]).intersect(&req("k", Operator::DoesNotExist, &[]));
        assert_eq!(r.to_string(), "k DoesNotExist");
    }

    #[test]
    fn pick_value_is_deterministic_and_valid() {
        let r = req("k", Operator::In, &["b", "a"]);
        assert_eq!(r.pick_value().as_deref(), Some("a"));
        let r = req("k", Operator::Gt, &["3"]).intersect(&req("k", Operator::NotIn, &["4"]));
        let v = r.pick_value().unwrap();
        assert!(r.allows(&v), "{v}");
        assert_eq!(req("k", Operator::NotIn, &["x"]).pick_value(), None);
    }

    #[test]
    fn gt_and_lt_at_the_ends_of_i64_admit_no_label_value_and_no_missing_label() {
        let max = i64::MAX.to_string();
        let min = i64::MIN.to_string();
        for r in [
            req("k", Operator::Gt, &[&max]),
            req("k", Operator::Lt, &[&min]),
            req("k", Operator::Lt, &["0"]),
            req("k", Operator::Lt, &["-5"]),
        ] {
            assert!(r.has_no_values(), "{r}");
            assert!(r.is_unsatisfiable(), "{r}");
            assert!(!r.allows_absent(), "{r}");
            assert_eq!(r.pick_value(), None, "{r}");
            // Nothing a node could carry, and no node without the label, is compatible.
            assert!(!r.compatible(&req("k", Operator::Exists, &[])), "{r}");
            assert!(!r.compatible(&req("k", Operator::NotIn, &["1"])), "{r}");
        }
        // The widest bounds still admit integers only, and pick a label value.
        for r in [
            req("k", Operator::Gt, &[&min]),
            req("k", Operator::Lt, &[&max]),
            req("k", Operator::Gte, &[&min]),
            req("k", Operator::Lte, &[&max]),
            req("k", Operator::Gt, &["-1"]),
        ] {
            assert!(!r.has_no_values(), "{r}");
            assert!(r.allows("0") && r.allows("17") && !r.allows("x"), "{r}");
            assert!(!r.allows_absent(), "{r}");
            let v = r.pick_value().unwrap();
            assert_eq!(v, "0", "{r}");
            for (op, values) in r.to_terms() {
                for value in values {
                    assert!(!value.starts_with('-'), "{r}: {op:?} {value}");
                }
            }
        }
        // Just inside the top: one value left, and it is picked without overflowing.
        let below_max = (i64::MAX - 1).to_string();
        let r = req("k", Operator::Gt, &[&below_max]);
        assert!(!r.has_no_values());
        assert_eq!(r.pick_value().as_deref(), Some(max.as_str()));
        let none_left = r.intersect(&req("k", Operator::NotIn, &[&max]));
        assert!(none_left.is_unsatisfiable());
        assert_eq!(none_left.pick_value(), None);
        // A negative lower bound with a small upper one: the label integers 0..=2.
        let r = req("k", Operator::Gt, &["-10"]).intersect(&req("k", Operator::Lt, &["3"]));
        assert_eq!(r.pick_value().as_deref(), Some("0"));
        let r = r.intersect(&req("k", Operator::NotIn, &["0", "1", "2"]));
        assert!(r.is_unsatisfiable());
    }
}
