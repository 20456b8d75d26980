//! `simulate --explain-pod NAMESPACE/NAME`: why one pending pod goes where it goes, or stays
//! pending. The checks are the placement core's own ([`adze_scheduling::scheduler::explain`]),
//! run inside the same placement the plan comes from; this module adds the NodePools `run`
//! would not plan with at all ([`crate::rules::nodepool_unusable`]) and prints the result.

use adze_scheduling::Options;
use adze_scheduling::scheduler::explain::{
    Explanation, NodeVerdict, Outcome, PoolVerdict, Refusal, Why,
};
use serde::Serialize;

use super::output::plural;
use super::scenario::Scenario;

/// Why `--explain-pod` cannot explain a pod.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ExplainError {
    #[error(
        "the scenario has no Pod {0} (pods are named NAMESPACE/NAME; a Deployment's replicas are NAME-0, NAME-1, ...)"
    )]
    Unknown(String),
    #[error("Pod {pod} is bound to node {node} already; only pending pods are planned")]
    Bound { pod: String, node: String },
    #[error("Pod {pod} is not pending: {why}")]
    NotPending { pod: String, why: &'static str },
}

/// The explanation `--explain-pod` prints (`-o json|yaml`: this, for scripts).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodExplanation {
    #[serde(flatten)]
    pub explanation: Explanation,
    /// True when the pod never reached placement (its volumes cannot be placed): the
    /// outcome's reason says why, and nothing was checked.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub left_out_before_placement: bool,
}

/// `NAME` alone is in the `default` namespace, as kubectl reads it.
pub fn pod_key(arg: &str) -> String {
    if arg.contains('/') {
        arg.to_string()
    } else {
        format!("default/{arg}")
    }
}

/// Explains pod `key` ("namespace/name") of `scenario`, placed under `options` as
/// [`super::run_with`] places it.
pub fn explain_pod(
    scenario: &Scenario,
    options: &Options,
    key: &str,
) -> Result<PodExplanation, ExplainError> {
    if let Some(u) = scenario.unschedulable.iter().find(|u| u.pod == key) {
        return Ok(PodExplanation {
            explanation: Explanation {
                pod: key.to_string(),
                outcome: Outcome::Pending {
                    reason: u.reason.clone(),
                },
                relaxed_preferences: 0,
                nodes: Vec::new(),
                node_claims: Vec::new(),
                node_pools: Vec::new(),
            },
            left_out_before_placement: true,
        });
    }
    let Some((_, mut explanation)) =
        adze_scheduling::scheduler::explain(&scenario.snapshot, options, key)
    else {
        return Err(not_pending(scenario, key));
    };
    // Pools `run` leaves out before placement, by the rule it uses.
    for np in &scenario.objects.nodepools {
        if let Some(why) = crate::rules::nodepool_unusable(np) {
            let name = np.metadata.name.clone().unwrap_or_default();
            explanation.node_pools.push(PoolVerdict {
                refusal: Some(Refusal::new(
                    Why::NotUsable,
                    format!("NodePool {name}: {why}"),
                )),
                node_pool: name,
                weight: np.spec.weight.unwrap_or(0),
                instance_types: 0,
                compatible: Vec::new(),
                refused: Vec::new(),
            });
        }
    }
    Ok(PodExplanation {
        explanation,
        left_out_before_placement: false,
    })
}

/// Why a pod that is not among the pending ones is not explained.
fn not_pending(scenario: &Scenario, key: &str) -> ExplainError {
    if let Some(b) = scenario.snapshot.bound.iter().find(|b| b.pod.key() == key) {
        return ExplainError::Bound {
            pod: key.to_string(),
            node: b.node.clone(),
        };
    }
    let listed = scenario.objects.pods.iter().find(|p| {
        let ns = p.metadata.namespace.as_deref().unwrap_or("default");
        format!("{ns}/{}", p.metadata.name.as_deref().unwrap_or_default()) == key
    });
    let Some(p) = listed else {
        return ExplainError::Unknown(key.to_string());
    };
    use crate::rules;
    let why = if !rules::is_unbound(p) {
        "it names a node (spec.nodeName)"
    } else if rules::is_terminating(&p.metadata) {
        "it is being deleted"
    } else if rules::is_terminal(p) {
        "it has finished (Succeeded or Failed)"
    } else if rules::daemonset_owner(&p.metadata).is_some() {
        "a DaemonSet's pod is placed by the DaemonSet controller"
    } else if rules::is_gated(p) {
        "it is held by schedulingGates"
    } else {
        "it is not among the pods placement plans for"
    };
    ExplainError::NotPending {
        pod: key.to_string(),
        why,
    }
}

/// At most this many names follow a group's count in the table; JSON has them all.
const EXAMPLES: usize = 3;

fn examples(names: &[String]) -> String {
    let shown: Vec<&str> = names.iter().take(EXAMPLES).map(String::as_str).collect();
    if names.len() > EXAMPLES {
        format!("{}, ...", shown.join(", "))
    } else {
        shown.join(", ")
    }
}

/// The explanation for a person: the outcome, then nodes, planned claims and NodePools
/// with their refusals grouped.
pub fn text(e: &PodExplanation) -> String {
    let x = &e.explanation;
    let mut out = format!("Pod {}: ", x.pod);
    match &x.outcome {
        Outcome::ExistingNode { node, in_flight } => out.push_str(&format!(
            "placed on {} {node}\n",
            if *in_flight {
                "in-flight NodeClaim"
            } else {
                "existing node"
            }
        )),
        Outcome::NewNodeClaim {
            node_claim,
            node_pool,
            instance_type,
            instance_type_options,
            zone,
            capacity_type,
            pods,
        } => out.push_str(&format!(
            "placed on new NodeClaim {node_claim} (NodePool {node_pool}: {instance_type} {capacity_type} in {zone}, {} in all; {} on it)\n",
            plural(instance_type_options.len(), "instance type option", "instance type options"),
            plural(*pods, "pod", "pods"),
        )),
        Outcome::Pending { reason } => out.push_str(&format!("stays pending: {reason}\n")),
    }
    if e.left_out_before_placement {
        out.push_str("  left out before placement: no node or NodePool was checked\n");
        return out;
    }
    if x.relaxed_preferences > 0 {
        out.push_str(&format!(
            "  checked with {} dropped (the attempt shown)\n",
            plural(x.relaxed_preferences, "preference", "preferences")
        ));
    }
    nodes_text(&mut out, &x.nodes);
    if !x.node_claims.is_empty() {
        out.push_str(&format!(
            "\nNodeClaims planned earlier in this run ({} checked):\n",
            x.node_claims.len()
        ));
        for c in &x.node_claims {
            match &c.refusal {
                None => out.push_str(&format!(
                    "  {} (NodePool {}): takes it\n",
                    c.node_claim, c.node_pool
                )),
                Some(r) => out.push_str(&format!(
                    "  {} (NodePool {}): {}\n",
                    c.node_claim, c.node_pool, r.message
                )),
            }
        }
    }
    pools_text(&mut out, x);
    out
}

fn nodes_text(out: &mut String, nodes: &[NodeVerdict]) {
    if nodes.is_empty() {
        out.push_str("\nExisting nodes: none\n");
        return;
    }
    out.push_str(&format!(
        "\nExisting nodes and in-flight NodeClaims ({} checked):\n",
        nodes.len()
    ));
    let taking: Vec<String> = nodes
        .iter()
        .filter(|n| n.refusal.is_none())
        .map(|n| n.node.clone())
        .collect();
    if !taking.is_empty() {
        out.push_str(&format!(
            "  {} take it: {}\n",
            plural(taking.len(), "node", "nodes"),
            examples(&taking)
        ));
    }
    // Refusals grouped by summary, in first-seen order.
    let mut groups: Vec<(&str, Vec<&NodeVerdict>)> = Vec::new();
    for n in nodes {
        let Some(s) = n.summary.as_deref() else {
            continue;
        };
        match groups.iter_mut().find(|(k, _)| *k == s) {
            Some((_, v)) => v.push(n),
            None => groups.push((s, vec![n])),
        }
    }
    for (summary, members) in groups {
        if let [only] = members.as_slice() {
            let detail = only.refusal.as_ref().map_or("", |r| r.message.as_str());
            let detail = if detail == summary {
                String::new()
            } else {
                format!(" ({detail})")
            };
            out.push_str(&format!("  {}: {summary}{detail}\n", only.node));
        } else {
            let names: Vec<String> = members.iter().map(|n| n.node.clone()).collect();
            out.push_str(&format!(
                "  {}: {summary} ({})\n",
                plural(members.len(), "node", "nodes"),
                examples(&names)
            ));
        }
    }
}

fn pools_text(out: &mut String, x: &Explanation) {
    if x.node_pools.is_empty() {
        out.push_str("\nNodePools: none\n");
        return;
    }
    out.push_str("\nNodePools, in the order placement tries them (weight, then name):\n");
    let chosen = match &x.outcome {
        Outcome::NewNodeClaim { node_pool, .. }
            if !x.node_claims.iter().any(|c| c.refusal.is_none()) =>
        {
            Some(node_pool.as_str())
        }
        _ => None,
    };
    let first_ok = x
        .node_pools
        .iter()
        .find(|p| p.refusal.is_none())
        .map(|p| p.node_pool.as_str());
    let placed_elsewhere = !matches!(x.outcome, Outcome::Pending { .. }) && chosen.is_none();
    for p in &x.node_pools {
        let verdict = match &p.refusal {
            Some(r) => format!("refused: {}", r.message),
            None if Some(p.node_pool.as_str()) == chosen => "takes it (a new NodeClaim)".into(),
            None if placed_elsewhere => {
                "would take it, but a node or planned NodeClaim takes it first".into()
            }
            None if first_ok != Some(p.node_pool.as_str()) => format!(
                "would take it, but NodePool {} comes first",
                first_ok.unwrap_or("-")
            ),
            None => "would take it".into(),
        };
        out.push_str(&format!(
            "  {} (weight {}): {verdict}\n",
            p.node_pool, p.weight
        ));
        if p.instance_types == 0 {
            continue;
        }
        if !p.compatible.is_empty() {
            out.push_str(&format!(
                "    {} of {} hold it, e.g. {}\n",
                p.compatible.len(),
                plural(p.instance_types, "instance type", "instance types"),
                examples(&p.compatible)
            ));
        } else if p.refused.is_empty() {
            out.push_str(&format!(
                "    {} not checked: the NodePool is refused first\n",
                plural(p.instance_types, "instance type", "instance types")
            ));
        }
        for g in &p.refused {
            out.push_str(&format!(
                "    {}: {}; e.g. {}\n",
                plural(g.instance_types.len(), "type", "types"),
                g.reason,
                examples(&g.instance_types)
            ));
        }
    }
}
