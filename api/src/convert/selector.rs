//! Label selectors (over pods) and node-selector terms (over nodes) into [`Requirements`]:
//! `In`, `NotIn`, `Exists` and `DoesNotExist` mean the same thing in both, so one algebra
//! serves.

use adze_scheduling::labels;
use adze_scheduling::{Operator, Requirement, Requirements};
use k8s_openapi::api::core::v1::{NodeSelectorRequirement, NodeSelectorTerm};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use super::{ConvertError, ObjectRef};

fn requirement(
    object: &ObjectRef,
    field: &str,
    key: &str,
    operator: &str,
    values: &[String],
) -> Result<Requirement, ConvertError> {
    // Gte and Lte are Karpenter's, for NodePools; Kubernetes selectors do not know them.
    let op = Operator::parse(operator)
        .filter(|op| !matches!(op, Operator::Gte | Operator::Lte))
        .ok_or_else(|| {
            ConvertError::invalid(
                object,
                &format!("{field}.operator"),
                format!("unknown operator {operator:?}"),
            )
        })?;
    Requirement::new(key, op, values)
        .map_err(|error| ConvertError::requirement(object, field, error))
}

/// A pod label selector (`matchLabels` and `matchExpressions`, ANDed). Label selectors know
/// no `Gt`/`Lt`; those are refused.
pub(crate) fn label_selector(
    object: &ObjectRef,
    field: &str,
    selector: &LabelSelector,
) -> Result<Requirements, ConvertError> {
    let mut out = Requirements::new();
    for (k, v) in selector.match_labels.iter().flatten() {
        out.add(Requirement::single(k, v));
    }
    for (i, e) in selector.match_expressions.iter().flatten().enumerate() {
        let f = format!("{field}.matchExpressions[{i}]");
        if !matches!(
            e.operator.as_str(),
            "In" | "NotIn" | "Exists" | "DoesNotExist"
        ) {
            return Err(ConvertError::invalid(
                object,
                &format!("{f}.operator"),
                format!(
                    "label selectors take In, NotIn, Exists or DoesNotExist, not {:?}",
                    e.operator
                ),
            ));
        }
        let values = e.values.as_deref().unwrap_or_default();
        out.add(requirement(object, &f, &e.key, &e.operator, values)?);
    }
    Ok(out)
}

/// Whether a label selector is `{}`: it matches everything.
pub(crate) fn is_empty_selector(selector: &LabelSelector) -> bool {
    selector.match_labels.as_ref().is_none_or(|m| m.is_empty())
        && selector
            .match_expressions
            .as_ref()
            .is_none_or(|e| e.is_empty())
}

fn node_requirement(
    object: &ObjectRef,
    field: &str,
    r: &NodeSelectorRequirement,
    key: &str,
) -> Result<Requirement, ConvertError> {
    requirement(
        object,
        field,
        key,
        &r.operator,
        r.values.as_deref().unwrap_or_default(),
    )
}

/// One node-selector term (`matchExpressions` and `matchFields`, ANDed). A term with
/// neither matches no node in Kubernetes: that is `None`. `matchFields` on `metadata.name`
/// becomes a requirement on `kubernetes.io/hostname`, which carries the node name.
pub(crate) fn node_selector_term(
    object: &ObjectRef,
    field: &str,
    term: &NodeSelectorTerm,
) -> Result<Option<Requirements>, ConvertError> {
    let exprs = term.match_expressions.as_deref().unwrap_or_default();
    let fields = term.match_fields.as_deref().unwrap_or_default();
    if exprs.is_empty() && fields.is_empty() {
        return Ok(None);
    }
    let mut out = Requirements::new();
    for (i, e) in exprs.iter().enumerate() {
        let f = format!("{field}.matchExpressions[{i}]");
        out.add(node_requirement(object, &f, e, &e.key)?);
    }
    for (i, e) in fields.iter().enumerate() {
        let f = format!("{field}.matchFields[{i}]");
        if e.key != "metadata.name" {
            return Err(ConvertError::invalid(
                object,
                &format!("{f}.key"),
                format!("only metadata.name is supported, not {:?}", e.key),
            ));
        }
        out.add(node_requirement(object, &f, e, labels::HOSTNAME)?);
    }
    Ok(Some(out))
}
