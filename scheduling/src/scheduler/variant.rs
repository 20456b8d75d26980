//! Relaxation: a pod's constraints from strictest to loosest. Preferences are honoured as if
//! required first and dropped one at a time when the pod cannot be placed, the way
//! kube-scheduler eventually places a pod whose preferences cannot all be met. Required
//! node-affinity terms are ORed, so each term is a separate ladder.

use crate::pod::Pod;
use crate::requirements::Requirements;
use crate::topology::PodTerms;

/// One rung of the ladder: what placement must honour in this attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Variant {
    /// What the node must satisfy in this attempt: the required term plus the preferred
    /// node terms this rung still honours.
    pub requirements: Requirements,
    /// The required term alone (nodeSelector and required node affinity): what a spread
    /// constraint's `nodeAffinityPolicy: Honor` filters domains by. Preferences never narrow
    /// the domains a spread counts, as in kube-scheduler.
    pub required: Requirements,
    /// PreferNoSchedule taints block placement (until relaxed).
    pub strict_taints: bool,
    pub spread: Vec<usize>,
    pub affinity: Vec<usize>,
    pub anti_affinity: Vec<usize>,
    /// How many preferences this rung dropped, for messages.
    pub relaxed: usize,
}

#[derive(Debug, Clone, Copy)]
enum Soft {
    PodAffinity(usize),
    PodAntiAffinity(usize),
    NodePreference(usize),
    Spread(usize),
    PreferNoSchedule,
}

/// The ladder, strictest first. Relaxation order: preferred pod (anti-)affinity (lightest
/// first), then preferred node affinity (lightest first), then `ScheduleAnyway` spread, then
/// PreferNoSchedule taints.
///
/// Preferred node terms that no NodePool or node could ever satisfy (`possible` says which)
/// are dropped up front, so they do not push out satisfiable lighter ones.
pub fn ladder(
    pod: &Pod,
    terms: &PodTerms,
    any_prefer_no_schedule: bool,
    ignore_preferences: bool,
    possible: &dyn Fn(&Requirements) -> bool,
) -> Vec<Variant> {
    let mut soft = Vec::new();
    if ignore_preferences {
        // Required terms only, each a rung of its own; PreferNoSchedule taints tolerated.
        return pod
            .node_requirements
            .iter()
            .cloned()
            .chain(pod.node_requirements.is_empty().then(Requirements::new))
            .map(|term| Variant {
                required: term.clone(),
                requirements: term,
                strict_taints: false,
                spread: terms.spread_hard.clone(),
                affinity: terms.affinity.clone(),
                anti_affinity: terms.anti_affinity.clone(),
                relaxed: 0,
            })
            .collect();
    }
    for (_, g) in terms.preferred_affinity.iter().rev() {
        soft.push(Soft::PodAffinity(*g));
    }
    for (_, g) in terms.preferred_anti_affinity.iter().rev() {
        soft.push(Soft::PodAntiAffinity(*g));
    }
    let mut prefs: Vec<usize> = (0..pod.preferred_node.len())
        .filter(|i| possible(&pod.preferred_node[*i].term))
        .collect();
    prefs.sort_by_key(|i| (pod.preferred_node[*i].weight, std::cmp::Reverse(*i)));
    soft.extend(prefs.into_iter().map(Soft::NodePreference));
    soft.extend(terms.spread_soft.iter().map(|g| Soft::Spread(*g)));
    if any_prefer_no_schedule {
        soft.push(Soft::PreferNoSchedule);
    }

    let mut out = Vec::new();
    let required_terms: Vec<Requirements> = if pod.node_requirements.is_empty() {
        vec![Requirements::new()]
    } else {
        pod.node_requirements.clone()
    };
    for term in &required_terms {
        // Built from the loosest rung up, each adding one preference to the one below, so a
        // ladder costs one merge per preference, not one per (rung, preference). Once the
        // accumulated preferences contradict the required term, every stricter rung does too
        // (requirements only narrow): those are skipped without being built.
        let mut rungs = Vec::with_capacity(soft.len() + 1);
        let mut v = Variant {
            requirements: term.clone(),
            required: term.clone(),
            strict_taints: false,
            spread: terms.spread_hard.clone(),
            affinity: terms.affinity.clone(),
            anti_affinity: terms.anti_affinity.clone(),
            relaxed: soft.len(),
        };
        // Soft entries are pushed loosest-last-first here; each rung lists them in soft
        // order, as a rung built on its own would.
        let hard = (v.spread.len(), v.affinity.len(), v.anti_affinity.len());
        let in_order = |v: &Variant| {
            let mut r = v.clone();
            r.spread[hard.0..].reverse();
            r.affinity[hard.1..].reverse();
            r.anti_affinity[hard.2..].reverse();
            r
        };
        rungs.push(v.clone());
        for drop in (0..soft.len()).rev() {
            match soft[drop] {
                Soft::PodAffinity(g) => v.affinity.push(g),
                Soft::PodAntiAffinity(g) => v.anti_affinity.push(g),
                Soft::NodePreference(i) => v.requirements.add_all(&pod.preferred_node[i].term),
                Soft::Spread(g) => v.spread.push(g),
                Soft::PreferNoSchedule => v.strict_taints = true,
            }
            // A preference that contradicts the required term can never hold.
            if v.requirements.unsatisfiable_key().is_some() {
                break;
            }
            v.relaxed = drop;
            rungs.push(in_order(&v));
        }
        out.extend(rungs.into_iter().rev());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::pod;
    use crate::requirements::{Operator, Requirement};

    fn category(c: &str) -> Requirement {
        Requirement::new("aws.adze.sh/instance-category", Operator::In, &[c]).unwrap()
    }

    #[test]
    fn contradicting_preferences_end_the_ladder_at_the_first_contradiction() {
        // 1,000 preferences, no two of which hold together: two rungs (the heaviest alone,
        // then none), not a thousand rungs of ever more merged requirements.
        let mut b = pod("p");
        for i in 0..1000 {
            b = b.prefer(1, category(["c", "m", "r"][i % 3]));
        }
        let p = b.build();
        let ladder = ladder(&p, &PodTerms::default(), false, false, &|_| true);
        assert_eq!(ladder.len(), 2, "{ladder:?}");
        assert_eq!(ladder[0].relaxed, 999);
        assert_eq!(
            ladder[0].requirements.get("aws.adze.sh/instance-category"),
            Some(&category("c"))
        );
        assert_eq!(ladder[1].relaxed, 1000);
        assert!(ladder[1].requirements.is_empty());
    }

    #[test]
    fn compatible_preferences_give_one_rung_each_lightest_dropped_first() {
        let p = pod("p")
            .prefer(5, category("c"))
            .prefer(
                1,
                Requirement::new("kubernetes.io/arch", Operator::In, &["arm64"]).unwrap(),
            )
            .build();
        let ladder = ladder(&p, &PodTerms::default(), false, false, &|_| true);
        assert_eq!(
            ladder.iter().map(|v| v.relaxed).collect::<Vec<_>>(),
            [0, 1, 2]
        );
        assert_eq!(ladder[0].requirements.len(), 2);
        // The weight-1 arch preference goes first; the weight-5 category stays.
        assert!(ladder[1].requirements.get("kubernetes.io/arch").is_none());
        assert!(
            ladder[1]
                .requirements
                .get("aws.adze.sh/instance-category")
                .is_some()
        );
    }
}
