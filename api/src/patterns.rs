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

/// Longest DNS-1123 label (a namespace, a container name).
pub const DNS1123_LABEL_MAX_LEN: usize = 63;
/// Longest DNS-1123 subdomain (a pod, a Deployment).
pub const DNS1123_SUBDOMAIN_MAX_LEN: usize = 253;

/// What is wrong with `value` as a DNS-1123 label, in the apiserver's words; `None` when it
/// is one. Kubernetes requires it of namespaces and container names: they become DNS names
/// and API paths, so a scenario or a request that the apiserver would refuse is refused too.
pub fn dns1123_label_error(value: &str) -> Option<String> {
    if value.len() > DNS1123_LABEL_MAX_LEN {
        return Some(format!(
            "must be no more than {DNS1123_LABEL_MAX_LEN} characters, got {}",
            value.len()
        ));
    }
    (!is_dns1123_label(value)).then(|| {
        "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character".to_string()
    })
}

/// What is wrong with `value` as a DNS-1123 subdomain (labels joined by '.'); `None` when
/// it is one. Kubernetes requires it of pod and workload names.
pub fn dns1123_subdomain_error(value: &str) -> Option<String> {
    if value.len() > DNS1123_SUBDOMAIN_MAX_LEN {
        return Some(format!(
            "must be no more than {DNS1123_SUBDOMAIN_MAX_LEN} characters, got {}",
            value.len()
        ));
    }
    (!value.split('.').all(is_dns1123_label)).then(|| {
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character".to_string()
    })
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`, length aside: one rule for every reader of names
/// (scenarios, `run`'s conversion, the extender's request paths).
pub fn is_dns1123_label(value: &str) -> bool {
    let b = value.as_bytes();
    let alnum = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    match (b.first(), b.last()) {
        (Some(first), Some(last)) => {
            alnum(first) && alnum(last) && b.iter().all(|c| alnum(c) || *c == b'-')
        }
        _ => false,
    }
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
    fn dns1123_labels_and_subdomains() {
        for ok in ["a", "web-1", "0", &"x".repeat(63)] {
            assert_eq!(dns1123_label_error(ok), None, "{ok}");
        }
        for bad in ["", "A", "a.b", "-a", "a-", "x?dryRun=All", "../x", "a_b"] {
            assert!(dns1123_label_error(bad).is_some(), "{bad}");
        }
        let long = dns1123_label_error(&"x".repeat(64)).unwrap();
        assert_eq!(long, "must be no more than 63 characters, got 64");
        for ok in [
            "a",
            "web-1.example",
            "a.b.c",
            &format!("{}.{}", "x".repeat(63), "y".repeat(63)),
        ] {
            assert_eq!(dns1123_subdomain_error(ok), None, "{ok}");
        }
        for bad in ["", "a..b", ".a", "a.", "A.b", "x?dryRun=All", "../x", "a/b"] {
            assert!(dns1123_subdomain_error(bad).is_some(), "{bad}");
        }
        assert!(
            dns1123_subdomain_error(&"x".repeat(254))
                .unwrap()
                .contains("253")
        );
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
