//! Taints a NodePool puts on its nodes, in the Kubernetes `Taint` shape.
//!
//! Our own type rather than k8s-openapi's so the effect is an enum (checked by the CRD schema and
//! matched exhaustively by the scheduler); conversions keep the two interchangeable.

use k8s_openapi::api::core::v1 as core;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::patterns;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum TaintEffect {
    NoSchedule,
    PreferNoSchedule,
    NoExecute,
}

impl TaintEffect {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NoSchedule => "NoSchedule",
            Self::PreferNoSchedule => "PreferNoSchedule",
            Self::NoExecute => "NoExecute",
        }
    }
}

impl std::str::FromStr for TaintEffect {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "NoSchedule" => Ok(Self::NoSchedule),
            "PreferNoSchedule" => Ok(Self::PreferNoSchedule),
            "NoExecute" => Ok(Self::NoExecute),
            other => Err(format!(
                "unknown taint effect {other:?}; expected NoSchedule, PreferNoSchedule or NoExecute"
            )),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub struct Taint {
    #[schemars(length(min = 1, max = patterns::QUALIFIED_NAME_MAX_LEN), pattern(patterns::QUALIFIED_NAME))]
    pub key: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = patterns::LABEL_VALUE_MAX_LEN), pattern(patterns::LABEL_VALUE))]
    pub value: Option<String>,
    pub effect: TaintEffect,
}

impl Taint {
    pub fn new(key: impl Into<String>, value: Option<&str>, effect: TaintEffect) -> Self {
        Self {
            key: key.into(),
            value: value.map(str::to_string),
            effect,
        }
    }
}

impl From<&Taint> for core::Taint {
    fn from(taint: &Taint) -> Self {
        core::Taint {
            key: taint.key.clone(),
            value: taint.value.clone(),
            effect: taint.effect.as_str().to_string(),
            time_added: None,
        }
    }
}

impl TryFrom<&core::Taint> for Taint {
    type Error = String;

    fn try_from(taint: &core::Taint) -> Result<Self, Self::Error> {
        Ok(Taint {
            key: taint.key.clone(),
            value: taint.value.clone(),
            effect: taint.effect.parse()?,
        })
    }
}
