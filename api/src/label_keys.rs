//! Which label keys a NodePool may set in its template or constrain in its requirements.
//!
//! Some label domains belong to the kubelet or to Adze itself (see [`labels::RESTRICTED_PREFIXES`]);
//! a NodePool setting them would either be overwritten or, worse, lie to the scheduler. The same
//! rules are enforced twice, from the same constants: by CEL rules in the CRDs (so the apiserver
//! refuses such objects) and by [`crate::validation`] (so `simulate` and the controllers, which may
//! run against clusters too old for CEL, refuse them too).
//!
//! One exception: the *syntax* of template label keys is checked only here. A regular expression
//! over every map key weighs heavily in the apiserver's CEL cost estimate, and the node would refuse
//! such a label anyway. (Requirement keys are single strings; their CRD `pattern` checks syntax.)
//!
//! A key is in domain `d` when its prefix is `d` or a subdomain of `d`: `topology.kubernetes.io/zone`
//! is in `kubernetes.io`. Because label names cannot contain '/', that is the same as the key
//! starting with `d/` or containing `.d/`, which CEL can test without regular expressions.

use kube::core::Rule;
use schemars::Schema;

use crate::{labels, patterns};

fn domain_of_prefix(prefix: &'static str) -> &'static str {
    prefix.trim_end_matches('/')
}

fn in_domain(key: &str, domain: &str) -> bool {
    key.starts_with(&format!("{domain}/")) || key.contains(&format!(".{domain}/"))
}

/// Keys (or, for entries ending in '/', whole domains) a template may set despite their domain.
fn is_exception(key: &str) -> bool {
    labels::ALLOWED_IN_RESTRICTED
        .iter()
        .any(|allowed| match allowed.strip_suffix('/') {
            Some(domain) => in_domain(key, domain),
            None => key == *allowed,
        })
}

/// The restricted domain `key` falls in, unless it is one of the allowed exceptions.
pub fn restricted_domain(key: &str) -> Option<&'static str> {
    if is_exception(key) {
        return None;
    }
    labels::RESTRICTED_PREFIXES
        .iter()
        .map(|prefix| domain_of_prefix(prefix))
        .find(|domain| in_domain(key, domain))
}

/// Why `key` may not be a label in a NodePool template, if it may not.
pub fn template_label_problem(key: &str) -> Option<String> {
    if !patterns::is_qualified_name(key) {
        return Some(format!("label key {key:?} {KEY_SYNTAX_MESSAGE}"));
    }
    restricted_domain(key).map(|domain| format!("label domain {domain:?} is restricted"))
}

/// Why `key` may not be constrained by a requirement, if it may not. Well-known keys are fine
/// (the instance type or cloud supplies them) except the hostname, which no template can predict.
/// `also_forbidden` lets a NodePool refuse keys a NodeClaim may carry, such as its own name label.
pub fn requirement_key_problem(key: &str, also_forbidden: &[&str]) -> Option<String> {
    if key == labels::HOSTNAME || also_forbidden.contains(&key) {
        return Some(format!("label {key:?} is restricted"));
    }
    if labels::is_well_known(key) {
        return None;
    }
    restricted_domain(key).map(|domain| format!("label domain {domain:?} is restricted"))
}

const KEY_SYNTAX_MESSAGE: &str = "must be a qualified name: an optional DNS-subdomain prefix and '/', then at most 63 alphanumerics, '-', '_' or '.'";

fn cel_string_list(items: &[&str]) -> String {
    let quoted: Vec<String> = items.iter().map(|item| format!("'{item}'")).collect();
    format!("[{}]", quoted.join(", "))
}

fn cel_in_domain(var: &str, domain: &str) -> String {
    format!("{var}.startsWith('{domain}/') || {var}.contains('.{domain}/')")
}

/// CEL for "`var` is in `domain` but allowed anyway": `allowed_keys` that fall in the domain,
/// or a sub-domain exception from [`labels::ALLOWED_IN_RESTRICTED`].
fn cel_allowed_in(var: &str, domain: &str, allowed_keys: &[&str]) -> Vec<String> {
    let exact: Vec<&str> = allowed_keys
        .iter()
        .copied()
        .filter(|key| in_domain(key, domain))
        .collect();
    let mut tests = Vec::new();
    if !exact.is_empty() {
        tests.push(format!("{var} in {}", cel_string_list(&exact)));
    }
    for sub_domain in labels::ALLOWED_IN_RESTRICTED
        .iter()
        .filter_map(|allowed| allowed.strip_suffix('/'))
        .filter(|sub| *sub == domain || sub.ends_with(&format!(".{domain}")))
    {
        tests.push(cel_in_domain(var, sub_domain));
    }
    tests
}

/// One rule per restricted domain (cheaper for the apiserver's cost estimate than one big rule,
/// and the message names the domain, as [`template_label_problem`] does).
fn domain_rules(var: &str, allowed_keys: &[&str], wrap: impl Fn(String) -> String) -> Vec<Rule> {
    labels::RESTRICTED_PREFIXES
        .iter()
        .map(|prefix| {
            let domain = domain_of_prefix(prefix);
            let mut tests = cel_allowed_in(var, domain, allowed_keys);
            tests.push(format!("!({})", cel_in_domain(var, domain)));
            Rule::new(wrap(tests.join(" || ")))
                .message(format!("label domain {domain:?} is restricted").as_str())
        })
        .collect()
}

fn push_rules(schema: &mut Schema, rules: Vec<Rule>) {
    for rule in rules {
        kube::core::validate(schema, rule).expect("a CEL rule serializes");
    }
}

fn exact_exceptions() -> Vec<&'static str> {
    labels::ALLOWED_IN_RESTRICTED
        .iter()
        .copied()
        .filter(|allowed| !allowed.ends_with('/'))
        .collect()
}

/// Schema transform for a template's label map: one CEL rule per restricted domain.
pub fn add_template_label_rules(schema: &mut Schema) {
    let allowed = exact_exceptions();
    push_rules(
        schema,
        domain_rules("k", &allowed, |test| format!("self.all(k, {test})")),
    );
}

/// Schema transform for a requirement key: not the hostname, and not in a restricted domain
/// unless well known.
pub fn add_requirement_key_rules(schema: &mut Schema) {
    let hostname = Rule::new(format!("self != '{}'", labels::HOSTNAME))
        .message(format!("label {:?} is restricted", labels::HOSTNAME).as_str());
    let mut allowed: Vec<&str> = labels::WELL_KNOWN
        .iter()
        .copied()
        .filter(|key| *key != labels::HOSTNAME)
        .chain(exact_exceptions())
        .collect();
    allowed.sort_unstable();
    allowed.dedup();
    let mut rules = vec![hostname];
    rules.extend(domain_rules("self", &allowed, |test| test));
    push_rules(schema, rules);
}

/// CEL rule for a NodePool's requirement list: Adze sets the pool label itself.
pub fn nodepool_requirements_rule() -> Rule {
    Rule::new(format!("self.all(r, r.key != '{}')", labels::NODEPOOL))
        .message(format!("label {:?} is restricted", labels::NODEPOOL).as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn template_labels_may_not_use_kubelet_or_adze_domains() {
        assert_eq!(
            template_label_problem("kubernetes.io/hostname").as_deref(),
            Some("label domain \"kubernetes.io\" is restricted")
        );
        assert_eq!(
            template_label_problem("adze.sh/nodepool").as_deref(),
            Some("label domain \"adze.sh\" is restricted")
        );
        assert!(template_label_problem("aws.adze.sh/instance-family").is_some());
        assert!(template_label_problem("sub.k8s.io/x").is_some());
        for allowed in [
            labels::ZONE,
            labels::ARCH,
            labels::CAPACITY_TYPE,
            "node-restriction.kubernetes.io/team",
            // Karpenter's domain exceptions, subdomains included.
            "node.kubernetes.io/exclude-from-external-load-balancers",
            "sub.node.kubernetes.io/x",
            "kops.k8s.io/instancegroup",
            "team",
            "example.com/team",
            "notkubernetes.io/x",
        ] {
            assert_eq!(template_label_problem(allowed), None, "{allowed}");
        }
        assert!(
            template_label_problem("bad key")
                .unwrap()
                .contains("qualified name")
        );
    }

    #[test]
    fn requirements_may_use_well_known_keys_but_not_hostname_or_internal_ones() {
        assert_eq!(requirement_key_problem(labels::INSTANCE_FAMILY, &[]), None);
        assert_eq!(requirement_key_problem(labels::NODEPOOL, &[]), None);
        assert_eq!(requirement_key_problem("example.com/team", &[]), None);
        assert_eq!(
            requirement_key_problem(labels::NODEPOOL, &[labels::NODEPOOL]).as_deref(),
            Some("label \"adze.sh/nodepool\" is restricted")
        );
        assert_eq!(
            requirement_key_problem(labels::HOSTNAME, &[]).as_deref(),
            Some("label \"kubernetes.io/hostname\" is restricted")
        );
        assert_eq!(
            requirement_key_problem(labels::NODECLAIM, &[]).as_deref(),
            Some("label domain \"adze.sh\" is restricted")
        );
    }

    /// What kubelet (and NodeRestriction) refuses but a template may set reaches the Node only
    /// through registration, which copies every claim label (e2e/kubelet.sh shows it on a real
    /// kubelet). Everything else kubelet refuses is refused here, so no node lacks a label the
    /// plan counted on.
    #[test]
    fn template_labels_kubelet_refuses_are_only_those_registration_sets() {
        let keys = [
            "team",
            "example.com/team",
            labels::ZONE,
            labels::CAPACITY_TYPE,
            "node.kubernetes.io/lifecycle",
            "node-restriction.kubernetes.io/team",
            "x.node-restriction.kubernetes.io/y",
            "kops.k8s.io/instancegroup",
            "node-role.kubernetes.io/worker",
            "kubernetes.io/role",
            "sub.k8s.io/x",
            "kubelet.kubernetes.io/x",
        ];
        let mut via_registration = Vec::new();
        for key in keys {
            if template_label_problem(key).is_none() && !labels::kubelet_may_set(key) {
                via_registration.push(key);
            }
        }
        assert_eq!(
            via_registration,
            [
                "node-restriction.kubernetes.io/team",
                "x.node-restriction.kubernetes.io/y",
                "kops.k8s.io/instancegroup"
            ]
        );
        for refused in [
            "node-role.kubernetes.io/worker",
            "kubernetes.io/role",
            "sub.k8s.io/x",
        ] {
            assert!(!labels::kubelet_may_set(refused), "{refused}");
            assert!(template_label_problem(refused).is_some(), "{refused}");
        }
    }
}
