//! Regular expressions shared by the CRD schemas (`pattern`) and the Rust-side validation, so the
//! apiserver and `validate()` accept exactly the same strings. They stay inside the syntax Go's
//! RE2 and the `regex` crate read identically: explicit ASCII classes, `[.]` rather than `\.`
//! (so they can also be pasted into CEL string literals), no `\d` or `\s`.

use std::{
    collections::HashMap,
    sync::{LazyLock, Mutex},
};

use regex::Regex;

/// A label value: at most [`LABEL_VALUE_MAX_LEN`] characters, alphanumeric at both ends.
pub const LABEL_VALUE: &str = r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$";
pub const LABEL_VALUE_MAX_LEN: usize = 63;
/// A label or taint key: optional DNS-subdomain prefix and '/', then a name of at most 63 characters.
pub const QUALIFIED_NAME: &str = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$";
/// 253 for the prefix, one for '/', 63 for the name.
pub const QUALIFIED_NAME_MAX_LEN: usize = 317;
/// A Kubernetes resource quantity ("100m", "4Gi", "1.5", "2e3").
pub const QUANTITY: &str = r"^(\+|-)?(([0-9]+([.][0-9]*)?)|([.][0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+([.][0-9]*)?)|([.][0-9]+))))?$";
/// A NodeOverlay `priceAdjustment`: a signed decimal amount, or a signed percentage no lower
/// than -100%.
pub const PRICE_ADJUSTMENT: &str =
    r"^([+-][0-9]*[.]?[0-9]+|[+][0-9]*[.]?[0-9]+%|-([0-9]{1,2}([.][0-9]+)?|100)%)$";
/// A NodeOverlay `price`: an unsigned decimal.
pub const PRICE: &str = r"^[0-9]+([.][0-9]+)?$";
/// An unsigned decimal ("0.01", "2"): a NodePool's `minSavingsPerDisruptionCost`.
pub const DECIMAL: &str = r"^[0-9]+([.][0-9]+)?$";
/// A disruption budget: a node count or a percentage of the pool's nodes.
pub const BUDGET_NODES: &str = r"^((100|[0-9]{1,2})%|[0-9]+)$";
/// A cron macro or five whitespace-separated cron fields; the disruption controller parses the fields.
pub const CRON_SCHEDULE: &str = r"^(@(annually|yearly|monthly|weekly|daily|midnight|hourly)|[^ \t]+[ \t]+[^ \t]+[ \t]+[^ \t]+[ \t]+[^ \t]+[ \t]+[^ \t]+)$";
/// The single value of a Gt/Lt requirement: a non-negative integer that fits an i64.
pub const INTEGER_VALUE: &str = r"^[0-9]{1,18}$";
pub const SUBNET_ID: &str = r"^subnet-[0-9a-z]+$";
pub const SECURITY_GROUP_ID: &str = r"^sg-[0-9a-z]+$";
pub const AMI_ID: &str = r"^ami-[0-9a-z]+$";
pub const CAPACITY_RESERVATION_ID: &str = r"^cr-[0-9a-z]+$";
pub const PLACEMENT_GROUP_ID: &str = r"^pg-[0-9a-z]+$";
/// A 12-digit AWS account ID.
pub const ACCOUNT_ID: &str = r"^[0-9]{12}$";
/// `family@version`, e.g. "al2023@latest" or "bottlerocket@v1.26.0".
pub const AMI_ALIAS: &str = r"^[a-z0-9]+@[A-Za-z0-9._-]+$";
/// EBS sizes are whole gibibytes or tebibytes (or their decimal cousins).
pub const VOLUME_SIZE: &str = r"^[1-9][0-9]*(G|Gi|T|Ti)$";
/// A kubelet eviction threshold: a percentage ("10%", "2.5%") or a quantity ("100Mi").
pub const EVICTION_THRESHOLD: &str = r"^(([0-9]{1,2}([.][0-9]{1,2})?|100([.]0{1,2})?)%|(\+|-)?(([0-9]+([.][0-9]*)?)|([.][0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+([.][0-9]*)?)|([.][0-9]+))))?)$";

/// Whether `value` matches one of the patterns above (compiled once, on first use).
///
/// Each pattern's one `Regex` is shared, never cloned: a clone starts with an empty cache
/// pool, so every match on a clone would build its lazy DFA again (thousands of label keys
/// in a large plan cost seconds that way).
pub fn is_match(pattern: &'static str, value: &str) -> bool {
    // Leaked once per pattern: the patterns are this module's constants, a fixed few.
    static COMPILED: LazyLock<Mutex<HashMap<&'static str, &'static Regex>>> =
        LazyLock::new(Default::default);
    let regex: &'static Regex = {
        let mut compiled = COMPILED
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        compiled.entry(pattern).or_insert_with(|| {
            Box::leak(Box::new(
                Regex::new(pattern).expect("patterns in this module compile"),
            ))
        })
    };
    regex.is_match(value)
}

pub fn is_label_value(value: &str) -> bool {
    value.len() <= LABEL_VALUE_MAX_LEN && is_match(LABEL_VALUE, value)
}

pub fn is_qualified_name(key: &str) -> bool {
    key.len() <= QUALIFIED_NAME_MAX_LEN && is_match(QUALIFIED_NAME, key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_keys_and_values() {
        for ok in [
            "app",
            "kubernetes.io/arch",
            "example.com/team",
            "a.b-c.d/x_y.z",
            "A",
        ] {
            assert!(is_qualified_name(ok), "{ok}");
        }
        for bad in [
            "",
            "/x",
            "Example.com/x",
            "a/b/c",
            "-x",
            "x-",
            "sp ace",
            &"x".repeat(64),
        ] {
            assert!(!is_qualified_name(bad), "{bad}");
        }
        for ok in ["", "amd64", "m5.large", "a_b-c"] {
            assert!(is_label_value(ok), "{ok}");
        }
        for bad in ["-a", "a-", "a b", "a/b", &"x".repeat(64)] {
            assert!(!is_label_value(bad), "{bad}");
        }
    }

    #[test]
    fn quantities_budgets_and_schedules() {
        for ok in ["1", "100m", "4Gi", "1.5", "2e3", "+1k"] {
            assert!(is_match(QUANTITY, ok), "{ok}");
        }
        for bad in ["", "1 Gi", "Gi", "1GB", "abc"] {
            assert!(!is_match(QUANTITY, bad), "{bad}");
        }
        for ok in ["0", "5", "10%", "0%", "100%"] {
            assert!(is_match(BUDGET_NODES, ok), "{ok}");
        }
        for bad in ["101%", "-1", "1.5%", "ten", "%"] {
            assert!(!is_match(BUDGET_NODES, bad), "{bad}");
        }
        for ok in ["@daily", "0 9 * * mon-fri", "*/5 * * * *"] {
            assert!(is_match(CRON_SCHEDULE, ok), "{ok}");
        }
        for bad in ["@often", "* * * *", "daily", " 0 9 * * *"] {
            assert!(!is_match(CRON_SCHEDULE, bad), "{bad}");
        }
        for ok in ["10%", "2.5%", "100Mi", "1Gi"] {
            assert!(is_match(EVICTION_THRESHOLD, ok), "{ok}");
        }
        assert!(!is_match(EVICTION_THRESHOLD, "101%"));
    }
}
