//! Disruption budgets: how many of a NodePool's nodes may be disrupting at once, per reason,
//! optionally only while a cron window is open. Semantics follow Karpenter v1: a budget
//! with a `schedule` applies only while its window is open (`nodes: "0"` with a window is
//! how a maintenance freeze is written); the most restrictive budget that applies wins; a
//! pool with no budgets is unlimited. Percentages are of the pool's initialized nodes and
//! round up, so a small pool with a non-zero percentage still makes progress. Nodes already
//! disrupting count against every method's allowance, except that a node disrupting only
//! for being not Ready does not count against `Unhealthy`'s (node repair's).

use std::collections::BTreeMap;
use std::time::Duration;

use super::cron::{CronError, Schedule};
use super::{Input, Reason, UnixSeconds};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BudgetNodes {
    Count(u64),
    /// 0–100.
    Percent(u8),
}

impl BudgetNodes {
    /// `"5"` or `"10%"`.
    pub fn parse(nodes: &str) -> Result<BudgetNodes, BudgetError> {
        let bad = || BudgetError::Nodes(nodes.to_string());
        match nodes.strip_suffix('%') {
            Some(p) => {
                let v: u8 = p.parse().map_err(|_| bad())?;
                if v > 100 || p.starts_with('+') {
                    return Err(bad());
                }
                Ok(BudgetNodes::Percent(v))
            }
            None if nodes.starts_with('+') => Err(bad()),
            None => nodes.parse().map(BudgetNodes::Count).map_err(|_| bad()),
        }
    }

    /// How many of `pool_nodes` may be disrupting at once.
    pub fn allowed(self, pool_nodes: u64) -> u64 {
        match self {
            BudgetNodes::Count(c) => c,
            BudgetNodes::Percent(p) => (pool_nodes * u64::from(p)).div_ceil(100),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BudgetError {
    #[error("budget nodes {0:?} must be a node count or a percentage from 0% to 100%")]
    Nodes(String),
    #[error("budget schedule: {0}")]
    Schedule(#[from] CronError),
    #[error("budget schedule and duration must be set together")]
    WindowHalfSet,
}

/// A cron window: open from each tick of `schedule` for `duration`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Window {
    pub schedule: Schedule,
    pub duration: Duration,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Budget {
    pub nodes: BudgetNodes,
    /// Applies only while this window is open; `None` means always.
    pub window: Option<Window>,
    /// Reasons this budget governs; empty means all.
    pub reasons: Vec<Reason>,
}

impl Budget {
    /// From the NodePool's fields as written (`nodes`, `schedule`, `duration`, `reasons`).
    pub fn parse(
        nodes: &str,
        schedule: Option<&str>,
        duration: Option<Duration>,
        reasons: Vec<Reason>,
    ) -> Result<Budget, BudgetError> {
        let window = match (schedule, duration) {
            (Some(s), Some(d)) => Some(Window {
                schedule: Schedule::parse(s)?,
                duration: d,
            }),
            (None, None) => None,
            _ => return Err(BudgetError::WindowHalfSet),
        };
        Ok(Budget {
            nodes: BudgetNodes::parse(nodes)?,
            window,
            reasons,
        })
    }

    /// An always-active budget of `nodes`.
    pub fn nodes(nodes: BudgetNodes) -> Budget {
        Budget {
            nodes,
            window: None,
            reasons: Vec::new(),
        }
    }

    pub fn applies_to(&self, reason: Reason) -> bool {
        self.reasons.is_empty() || self.reasons.contains(&reason)
    }

    /// Whether the budget is in force at `now`.
    pub fn is_active(&self, now: UnixSeconds) -> bool {
        self.window
            .as_ref()
            .is_none_or(|w| w.schedule.window_open(w.duration, now))
    }
}

/// How many more nodes each (pool, reason) may start disrupting now.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Allowance {
    /// (pool, reason) → nodes that may still be disrupted; missing pools allow nothing.
    left: BTreeMap<(String, Reason), u64>,
}

impl Allowance {
    /// From the pools' budgets, their initialized node counts and the nodes already
    /// disrupting, at `input.now`.
    pub fn compute(input: &Input) -> Allowance {
        let mut total: BTreeMap<&str, u64> = BTreeMap::new();
        let mut disrupting: BTreeMap<&str, u64> = BTreeMap::new();
        // Disrupting nodes bar those disrupting only for being not Ready (Unhealthy's count).
        let mut going: BTreeMap<&str, u64> = BTreeMap::new();
        let facts = input.facts_by_node();
        for n in &input.snapshot.nodes {
            let (Some(pool), Some(f)) = (n.nodepool.as_deref(), facts.get(n.name.as_str())) else {
                continue;
            };
            if !f.initialized {
                continue;
            }
            *total.entry(pool).or_default() += 1;
            if f.disrupting {
                *disrupting.entry(pool).or_default() += 1;
                if !f.disrupting_as_not_ready {
                    *going.entry(pool).or_default() += 1;
                }
            }
        }
        let mut left = BTreeMap::new();
        for p in &input.policies {
            let n = total.get(p.nodepool.as_str()).copied().unwrap_or(0);
            let all_busy = disrupting.get(p.nodepool.as_str()).copied().unwrap_or(0);
            let going_busy = going.get(p.nodepool.as_str()).copied().unwrap_or(0);
            for reason in Reason::ALL {
                let busy = if reason == Reason::Unhealthy {
                    going_busy
                } else {
                    all_busy
                };
                let cap = p
                    .budgets
                    .iter()
                    .filter(|b| b.applies_to(reason) && b.is_active(input.now))
                    .map(|b| b.nodes.allowed(n))
                    .min()
                    .unwrap_or(u64::MAX);
                // A pool in drift backoff starts no drift command, whatever its budgets.
                let cap = if reason == Reason::Drifted && input.drift_hold(&p.nodepool).is_some() {
                    0
                } else {
                    cap
                };
                left.insert((p.nodepool.clone(), reason), cap.saturating_sub(busy));
            }
        }
        Allowance { left }
    }

    /// Nodes of `pool` that may still be disrupted for `reason`.
    pub fn left(&self, pool: &str, reason: Reason) -> u64 {
        self.left
            .get(&(pool.to_string(), reason))
            .copied()
            .unwrap_or(0)
    }

    /// Holds one node of `pool`'s allowance for `reason` alone (a node out of service for that
    /// reason without disrupting, as a node rebooted for repair); nothing when none is left.
    pub fn reserve(&mut self, pool: &str, reason: Reason) {
        if let Some(v) = self.left.get_mut(&(pool.to_string(), reason)) {
            *v = v.saturating_sub(1);
        }
    }

    /// Uses one node of `pool`'s allowance for `reason`; false (and nothing used) when none
    /// is left. A disrupting node counts against every reason's budget of its pool, so all
    /// of them go down.
    pub fn take(&mut self, pool: &str, reason: Reason) -> bool {
        if self.left(pool, reason) == 0 {
            return false;
        }
        for r in Reason::ALL {
            if let Some(v) = self.left.get_mut(&(pool.to_string(), r)) {
                *v = v.saturating_sub(1);
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentages_round_up_and_counts_are_absolute() {
        assert_eq!(BudgetNodes::parse("10%").unwrap().allowed(5), 1);
        assert_eq!(BudgetNodes::parse("10%").unwrap().allowed(0), 0);
        assert_eq!(BudgetNodes::parse("50%").unwrap().allowed(7), 4);
        assert_eq!(BudgetNodes::parse("0%").unwrap().allowed(100), 0);
        assert_eq!(BudgetNodes::parse("3").unwrap().allowed(100), 3);
    }

    #[test]
    fn bad_budget_fields_are_refused_by_name() {
        assert_eq!(
            BudgetNodes::parse("101%"),
            Err(BudgetError::Nodes("101%".into()))
        );
        assert!(BudgetNodes::parse("ten").is_err());
        assert!(BudgetNodes::parse("-1").is_err());
        assert_eq!(
            Budget::parse("1", Some("@daily"), None, vec![]),
            Err(BudgetError::WindowHalfSet)
        );
        let e = Budget::parse(
            "1",
            Some("0 99 * * *"),
            Some(Duration::from_secs(60)),
            vec![],
        )
        .unwrap_err();
        assert!(e.to_string().contains("hour value 99"), "{e}");
    }

    #[test]
    fn windowed_budget_applies_only_while_open() {
        let b = Budget::parse(
            "0",
            Some("0 9 * * *"),
            Some(Duration::from_secs(3600)),
            vec![],
        )
        .unwrap();
        let nine = 1_795_392_000 + 9 * 3600;
        assert!(b.is_active(nine + 10));
        assert!(!b.is_active(nine + 3600));
    }

    #[test]
    fn a_freeze_as_long_as_a_go_duration_is_decided_at_once() {
        // 2562047h is the longest Go duration (~292 years); leap days are the only ticks.
        let longest = Duration::from_secs(2_562_047 * 3600);
        let b = Budget::parse("0", Some("0 0 29 2 *"), Some(longest), vec![]).unwrap();
        let started = std::time::Instant::now();
        assert!(b.is_active(1_795_392_000)); // 2026-11-23, since 2024-02-29
        assert!(b.is_active(i64::MAX));
        let never = Budget::parse("0", Some("0 0 31 4 *"), Some(longest), vec![]).unwrap();
        assert!(!never.is_active(1_795_392_000), "April has no 31st");
        let elapsed = started.elapsed();
        assert!(elapsed < std::time::Duration::from_secs(1), "{elapsed:?}");
    }
}
