//! Taints and tolerations, with Kubernetes' matching rules.

use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Effect {
    NoSchedule,
    PreferNoSchedule,
    NoExecute,
}

impl Effect {
    pub fn parse(s: &str) -> Option<Effect> {
        Some(match s {
            "NoSchedule" => Effect::NoSchedule,
            "PreferNoSchedule" => Effect::PreferNoSchedule,
            "NoExecute" => Effect::NoExecute,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Effect::NoSchedule => "NoSchedule",
            Effect::PreferNoSchedule => "PreferNoSchedule",
            Effect::NoExecute => "NoExecute",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Taint {
    pub key: String,
    pub value: String,
    pub effect: Effect,
}

impl Taint {
    pub fn new(key: &str, value: &str, effect: Effect) -> Self {
        Taint {
            key: key.to_string(),
            value: value.to_string(),
            effect,
        }
    }
}

impl fmt::Display for Taint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.value.is_empty() {
            write!(f, "{}:{}", self.key, self.effect.as_str())
        } else {
            write!(f, "{}={}:{}", self.key, self.value, self.effect.as_str())
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Toleration {
    /// None with operator Exists tolerates every taint.
    pub key: Option<String>,
    /// true for `Exists`, false for `Equal`.
    pub exists: bool,
    pub value: String,
    /// None matches every effect.
    pub effect: Option<Effect>,
}

impl Toleration {
    pub fn equal(key: &str, value: &str, effect: Option<Effect>) -> Self {
        Toleration {
            key: Some(key.to_string()),
            exists: false,
            value: value.to_string(),
            effect,
        }
    }

    pub fn exists(key: Option<&str>, effect: Option<Effect>) -> Self {
        Toleration {
            key: key.map(str::to_string),
            exists: true,
            value: String::new(),
            effect,
        }
    }

    pub fn tolerates(&self, taint: &Taint) -> bool {
        if self.effect.is_some_and(|e| e != taint.effect) {
            return false;
        }
        match &self.key {
            None => self.exists,
            Some(k) if k != &taint.key => false,
            Some(_) => self.exists || self.value == taint.value,
        }
    }
}

/// The first taint the tolerations do not cover. PreferNoSchedule taints count only when
/// `strict`: they are preferences, which placement honours first and relaxes later.
pub fn first_untolerated<'a>(
    taints: &'a [Taint],
    tolerations: &[Toleration],
    strict: bool,
) -> Option<&'a Taint> {
    taints.iter().find(|t| {
        (strict || t.effect != Effect::PreferNoSchedule)
            && !tolerations.iter().any(|tol| tol.tolerates(t))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_needs_matching_value_and_effect() {
        let t = Taint::new("gpu", "true", Effect::NoSchedule);
        assert!(Toleration::equal("gpu", "true", None).tolerates(&t));
        assert!(!Toleration::equal("gpu", "false", None).tolerates(&t));
        assert!(!Toleration::equal("gpu", "true", Some(Effect::NoExecute)).tolerates(&t));
        assert!(Toleration::exists(Some("gpu"), None).tolerates(&t));
        assert!(
            Toleration::exists(None, None).tolerates(&t),
            "empty key + Exists tolerates all"
        );
    }

    #[test]
    fn prefer_no_schedule_only_blocks_when_strict() {
        let taints = [Taint::new("spot", "", Effect::PreferNoSchedule)];
        assert!(first_untolerated(&taints, &[], true).is_some());
        assert!(first_untolerated(&taints, &[], false).is_none());
    }
}
