//! An Adze [`NodePool`](crate::NodePool)'s disruption settings (`spec.disruption`) into the
//! scheduling core's
//! [`adze_scheduling::disruption::PoolPolicy`]. Budget fields that do not parse are errors
//! naming the field (`spec.disruption.budgets[1].schedule`). `expireAfter` is not here: it
//! is each NodeClaim's own (copied at launch), and expiry is forceful, outside budgets.

use adze_scheduling::disruption::{Budget, BudgetError, ConsolidationPolicy, PoolPolicy, Reason};

use super::{ConvertError, ObjectRef};
use crate::nodepool::{ConsolidationPolicy as ApiPolicy, DisruptionReason};

fn reason(r: DisruptionReason) -> Reason {
    match r {
        DisruptionReason::Drifted => Reason::Drifted,
        DisruptionReason::Expired => Reason::Expired,
        DisruptionReason::Empty => Reason::Empty,
        DisruptionReason::Underutilized => Reason::Underutilized,
        DisruptionReason::Unhealthy => Reason::Unhealthy,
    }
}

pub fn pool_policy(np: &crate::NodePool) -> Result<PoolPolicy, ConvertError> {
    let name = np.metadata.name.as_deref().unwrap_or_default();
    let object = ObjectRef::cluster("nodepool", name);
    if name.is_empty() {
        return Err(ConvertError::missing(&object, "metadata.name"));
    }
    let d = &np.spec.disruption;
    let mut budgets = Vec::new();
    for (i, b) in d.budgets.iter().enumerate() {
        let parsed = Budget::parse(
            &b.nodes,
            b.schedule.as_deref(),
            b.duration.as_ref().map(|g| g.as_std()),
            b.reasons.iter().copied().map(reason).collect(),
        )
        .map_err(|e| {
            let field = match e {
                BudgetError::Nodes(_) => "nodes",
                BudgetError::Schedule(_) => "schedule",
                BudgetError::WindowHalfSet => "duration",
            };
            ConvertError::invalid(
                &object,
                &format!("spec.disruption.budgets[{i}].{field}"),
                e.to_string(),
            )
        })?;
        budgets.push(parsed);
    }
    let min_savings = d.min_savings_per_disruption_cost().map_err(|e| {
        ConvertError::invalid(&object, "spec.disruption.minSavingsPerDisruptionCost", e)
    })?;
    Ok(PoolPolicy {
        nodepool: name.to_string(),
        consolidation: match d.consolidation_policy {
            ApiPolicy::WhenEmpty => ConsolidationPolicy::WhenEmpty,
            ApiPolicy::WhenEmptyOrUnderutilized => ConsolidationPolicy::WhenEmptyOrUnderutilized,
            ApiPolicy::Balanced => ConsolidationPolicy::Balanced,
        },
        consolidate_after: d.consolidate_after.as_std(),
        budgets,
        min_savings_per_disruption_cost: min_savings,
        fixed_size: np.spec.is_static(),
        // Counted from the pool's NodeClaims, which this conversion does not see.
        static_size: None,
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use adze_scheduling::disruption::BudgetNodes;

    use super::*;

    fn parse(yaml: &str) -> crate::NodePool {
        serde_yaml::from_str(yaml).unwrap()
    }

    const POOL: &str = r#"
apiVersion: adze.sh/v1
kind: NodePool
metadata: {name: general}
spec:
  disruption:
    consolidationPolicy: WhenEmpty
    consolidateAfter: 5m
    budgets:
      - nodes: "20%"
      - {nodes: "0", schedule: "0 9 * * mon-fri", duration: 8h, reasons: [Underutilized]}
      - {nodes: "1", reasons: [Unhealthy, Drifted]}
  template:
    spec:
      nodeClassRef: {group: aws.adze.sh, kind: EC2NodeClass, name: default}
      expireAfter: Never
"#;

    #[test]
    fn policy_budgets_and_durations_are_carried() {
        let p = pool_policy(&parse(POOL)).unwrap();
        assert_eq!(p.nodepool, "general");
        assert_eq!(p.consolidation, ConsolidationPolicy::WhenEmpty);
        assert_eq!(p.consolidate_after, Some(Duration::from_secs(300)));
        assert_eq!(p.budgets.len(), 3);
        // Node repair's reason: the budget the default (budgeted) repair is held by.
        assert_eq!(
            p.budgets[2].reasons,
            vec![Reason::Unhealthy, Reason::Drifted]
        );
        assert_eq!(p.budgets[2].nodes, BudgetNodes::Count(1));
        assert_eq!(p.budgets[0].nodes, BudgetNodes::Percent(20));
        let w = p.budgets[1].window.as_ref().unwrap();
        assert_eq!(w.duration, Duration::from_secs(8 * 3600));
        assert_eq!(p.budgets[1].reasons, vec![Reason::Underutilized]);
    }

    #[test]
    fn defaults_are_karpenters() {
        let p = pool_policy(&parse(
            r#"
apiVersion: adze.sh/v1
kind: NodePool
metadata: {name: d}
spec:
  template:
    spec:
      nodeClassRef: {group: aws.adze.sh, kind: EC2NodeClass, name: default}
"#,
        ))
        .unwrap();
        assert_eq!(
            p.consolidation,
            ConsolidationPolicy::WhenEmptyOrUnderutilized
        );
        assert_eq!(p.consolidate_after, Some(Duration::ZERO));
        assert_eq!(p.budgets[0].nodes, BudgetNodes::Percent(10));
    }

    #[test]
    fn bad_schedule_names_the_budget_field() {
        let mut np = parse(POOL);
        np.spec.disruption.budgets[1].schedule = Some("0 99 * * *".into());
        let e = pool_policy(&np).unwrap_err();
        assert_eq!(e.field, "spec.disruption.budgets[1].schedule");
        assert!(e.to_string().contains("hour value 99"), "{e}");
    }
}
