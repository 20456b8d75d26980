//! A node requirement: Kubernetes' `NodeSelectorRequirement` plus Karpenter's `minValues`.
//!
//! Shared by NodePool templates, NodeClaims and resolved AMIs, so the scheduler reads one shape.

use kube::KubeSchema;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{label_keys, patterns};

/// How a requirement's values constrain the label.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum Operator {
    In,
    NotIn,
    Exists,
    DoesNotExist,
    Gt,
    Lt,
    /// At least the value (Karpenter v1's inclusive bound; NodePool requirements only).
    Gte,
    /// At most the value.
    Lte,
}

impl Operator {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::In => "In",
            Self::NotIn => "NotIn",
            Self::Exists => "Exists",
            Self::DoesNotExist => "DoesNotExist",
            Self::Gt => "Gt",
            Self::Lt => "Lt",
            Self::Gte => "Gte",
            Self::Lte => "Lte",
        }
    }
}

impl std::fmt::Display for Operator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A constraint on one node label. `minValues` asks the scheduler to keep at least that many
/// distinct values of the key available (e.g. instance types) so spot launches have room to choose.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, KubeSchema)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = Rule::new("self.operator in ['In', 'NotIn'] ? has(self.values) && size(self.values) > 0 : true").message("operators In and NotIn need at least one value"))]
#[x_kube(validation = Rule::new("self.operator in ['Exists', 'DoesNotExist'] ? !has(self.values) || size(self.values) == 0 : true").message("operators Exists and DoesNotExist take no values"))]
#[x_kube(validation = Rule::new(format!("self.operator in ['Gt', 'Lt', 'Gte', 'Lte'] ? has(self.values) && size(self.values) == 1 && self.values[0].matches('{}') : true", patterns::INTEGER_VALUE)).message("operators Gt, Lt, Gte and Lte need exactly one non-negative integer value"))]
#[x_kube(validation = Rule::new("self.operator == 'In' && has(self.minValues) ? has(self.values) && size(self.values) >= self.minValues : true").message("minValues may not exceed the number of values of an In requirement"))]
pub struct Requirement {
    #[schemars(length(min = 1, max = patterns::QUALIFIED_NAME_MAX_LEN), pattern(patterns::QUALIFIED_NAME))]
    #[schemars(transform = label_keys::add_requirement_key_rules)]
    pub key: String,
    pub operator: Operator,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 100), inner(length(max = patterns::LABEL_VALUE_MAX_LEN), pattern(patterns::LABEL_VALUE)))]
    pub values: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    // The apiserver knows int32/int64 formats only and warns about uint32 on every apply
    // (Kubernetes 1.36 does); 1..=50 fits either way.
    #[schemars(range(min = 1, max = 50), extend("format" = "int32"))]
    pub min_values: Option<u32>,
}

impl Requirement {
    pub fn new(key: impl Into<String>, operator: Operator, values: &[&str]) -> Self {
        Self {
            key: key.into(),
            operator,
            values: values.iter().map(|v| v.to_string()).collect(),
            min_values: None,
        }
    }

    pub fn with_min_values(mut self, min_values: u32) -> Self {
        self.min_values = Some(min_values);
        self
    }
}
