//! Least-privilege rules for the controller policy, judged from the policy's JSON alone (no
//! IAM here to evaluate it). What they prevent: tagging a resource that is not the cluster's
//! (and then deleting it as if it were), deleting or changing what is not tagged as the
//! cluster's, launching without the cluster tag, and passing any role but named ones.

use serde_json::Value;

/// Actions that create the resources a launch makes; each needs the cluster tag on the request.
const CREATING: &[&str] = &[
    "ec2:CreateFleet",
    "ec2:RunInstances",
    "ec2:CreateLaunchTemplate",
];
/// Actions that destroy or change existing resources; each needs the cluster tag on the resource.
const DESTRUCTIVE: &[&str] = &[
    "ec2:TerminateInstances",
    "ec2:DeleteLaunchTemplate",
    "iam:AddRoleToInstanceProfile",
    "iam:RemoveRoleFromInstanceProfile",
    "iam:DeleteInstanceProfile",
];
/// Resource types a launch uses but does not create: no request tag applies to them.
const USED_NOT_CREATED: &[&str] = &["image/", "snapshot/", "subnet/", "security-group/"];
/// The creating calls tags may be set in (values of `ec2:CreateAction`).
const CREATE_ACTIONS: &[&str] = &["CreateFleet", "RunInstances", "CreateLaunchTemplate"];

/// One policy statement, with the accessors the rules need.
pub struct Statement<'a> {
    pub json: &'a Value,
}

impl<'a> Statement<'a> {
    pub fn all(policy: &'a Value) -> Vec<Statement<'a>> {
        policy["Statement"]
            .as_array()
            .expect("Statement is a list")
            .iter()
            .map(|json| Statement { json })
            .collect()
    }

    pub fn sid(&self) -> String {
        self.json["Sid"].as_str().unwrap_or("(no Sid)").to_string()
    }

    pub fn allows(&self) -> bool {
        self.json["Effect"] == "Allow"
    }

    pub fn actions(&self) -> Vec<&'a str> {
        strings(&self.json["Action"])
    }

    pub fn resources(&self) -> Vec<&'a str> {
        strings(&self.json["Resource"])
    }

    /// Whether this statement names `action` (exactly or through a `*` pattern).
    pub fn covers(&self, action: &str) -> bool {
        self.allows() && self.actions().iter().any(|a| glob(a, action))
    }

    /// The values of condition `key` under `operator` (`StringEquals`, ...), if present.
    fn condition(&self, operator: &str, key: &str) -> Option<Vec<&'a str>> {
        self.json["Condition"][operator]
            .get(key)
            .map(|v| strings(v))
    }

    /// `aws:RequestTag/<cluster tag>` (or `aws:ResourceTag/`, `ec2:ResourceTag/`) = owned.
    fn cluster_tag(&self, kind: &str, cluster: &str) -> bool {
        let key = format!("{kind}/kubernetes.io/cluster/{cluster}");
        let prefixes: &[&str] = if kind == "RequestTag" {
            &["aws:"]
        } else {
            &["aws:", "ec2:"]
        };
        prefixes.iter().any(|p| {
            self.condition("StringEquals", &format!("{p}{key}"))
                .is_some_and(|v| v == ["owned"])
        })
    }

    /// `ForAllValues:StringEquals` on `aws:TagKeys` with a fixed list of keys (no wildcard).
    fn tag_keys_limited(&self) -> bool {
        self.condition("ForAllValues:StringEquals", "aws:TagKeys")
            .is_some_and(|keys| !keys.is_empty() && keys.iter().all(|k| !k.contains('*')))
    }

    /// `ec2:CreateAction` limited to the creating calls.
    fn create_action_only(&self) -> bool {
        self.condition("StringEquals", "ec2:CreateAction")
            .is_some_and(|v| !v.is_empty() && v.iter().all(|a| CREATE_ACTIONS.contains(a)))
    }

    /// The narrow form of retagging: only resources already the cluster's, only listed keys.
    pub fn retags_owned_only(&self, cluster: &str) -> bool {
        self.condition("StringEquals", "ec2:CreateAction").is_none()
            && self.cluster_tag("ResourceTag", cluster)
            && self.tag_keys_limited()
    }
}

fn strings(v: &Value) -> Vec<&str> {
    match v {
        Value::String(s) => vec![s.as_str()],
        Value::Array(list) => list.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// IAM's action matching: case-insensitive, `*` matches any run of characters.
pub fn glob(pattern: &str, action: &str) -> bool {
    let (p, a) = (pattern.to_ascii_lowercase(), action.to_ascii_lowercase());
    match p.split_once('*') {
        None => p == a,
        Some((head, tail)) => {
            a.starts_with(head)
                && (0..=a.len() - head.len()).any(|i| glob(tail, &a[head.len() + i..]))
        }
    }
}

/// Every way `policy` breaks the rules, one line each naming the statement; empty is good.
pub fn violations(policy: &Value, cluster: &str) -> Vec<String> {
    let mut out = Vec::new();
    let profile_path = format!(":instance-profile/adze/{cluster}/");
    for s in Statement::all(policy).iter().filter(|s| s.allows()) {
        let sid = s.sid();
        let mut bad = |why: &str| out.push(format!("{sid}: {why}"));
        if s.actions().iter().any(|a| a.contains('*')) {
            bad("an action wildcard grants calls nobody reviewed");
        }
        if s.json.get("NotAction").is_some() || s.json.get("NotResource").is_some() {
            bad("NotAction/NotResource grant everything else");
        }
        let any_of = |list: &[&str]| list.iter().any(|a| s.covers(a));
        if s.covers("ec2:CreateTags")
            && !(s.create_action_only() && s.cluster_tag("RequestTag", cluster))
            && !s.retags_owned_only(cluster)
        {
            bad(
                "ec2:CreateTags must be limited to creating calls (ec2:CreateAction) with the \
                 cluster tag in the request, or to resources already tagged as the cluster's \
                 with aws:TagKeys listed",
            );
        }
        if any_of(CREATING)
            && !s.cluster_tag("RequestTag", cluster)
            && !s.cluster_tag("ResourceTag", cluster)
            && !s
                .resources()
                .iter()
                .all(|r| USED_NOT_CREATED.iter().any(|t| r.contains(t)))
        {
            bad(
                "launches may create only what carries the cluster tag (aws:RequestTag); \
                 untagged statements may name only images, snapshots, subnets, security groups",
            );
        }
        if any_of(DESTRUCTIVE) && !s.cluster_tag("ResourceTag", cluster) {
            bad("deleting or changing needs aws:ResourceTag/<cluster tag> = owned");
        }
        if s.covers("iam:CreateInstanceProfile") && !s.cluster_tag("RequestTag", cluster) {
            bad("instance profiles may be created only with the cluster tag in the request");
        }
        if s.covers("iam:TagInstanceProfile")
            && !(s.cluster_tag("RequestTag", cluster)
                && s.tag_keys_limited()
                && (s.cluster_tag("ResourceTag", cluster)
                    || s.resources().iter().all(|r| r.contains(&profile_path))))
        {
            bad(
                "iam:TagInstanceProfile needs the cluster tag in the request, aws:TagKeys listed, \
                 and either the cluster tag on the profile or Resource under the cluster's path",
            );
        }
        if s.covers("iam:PassRole") {
            if s.resources().iter().any(|r| r.contains('*')) || s.resources().is_empty() {
                bad("iam:PassRole must name its roles, no wildcard");
            }
            if s.condition("StringEquals", "iam:PassedToService").is_none() {
                bad("iam:PassRole needs iam:PassedToService");
            }
        }
        if s.covers("sqs:DeleteMessage") && s.resources().iter().any(|r| r.contains('*')) {
            bad("sqs:DeleteMessage must name the interruption queue");
        }
    }
    out
}

#[cfg(test)]
mod bad_policies {
    //! Each rule, shown failing on a policy that breaks it (and passing on its fixed form).
    use super::*;
    use serde_json::json;

    const C: &str = "demo";

    fn one(statement: Value) -> Vec<String> {
        violations(
            &json!({"Version": "2012-10-17", "Statement": [statement]}),
            C,
        )
    }

    fn rejected(statement: Value, why: &str) {
        let v = one(statement);
        assert!(
            v.iter().any(|m| m.contains(why)),
            "expected a violation about {why:?}, got {v:?}"
        );
    }

    #[test]
    fn unconditioned_create_tags_is_rejected() {
        rejected(
            json!({"Sid": "T", "Effect": "Allow", "Action": "ec2:CreateTags", "Resource": "*"}),
            "ec2:CreateTags",
        );
    }

    #[test]
    fn create_tags_with_only_a_request_tag_is_rejected() {
        // The old documented policy: tag anything, as long as the cluster tag is among the tags.
        rejected(
            json!({"Sid": "T", "Effect": "Allow", "Action": ["ec2:CreateFleet", "ec2:CreateTags"],
                   "Resource": "*",
                   "Condition": {"StringEquals": {"aws:RequestTag/kubernetes.io/cluster/demo": "owned"}}}),
            "ec2:CreateTags",
        );
    }

    #[test]
    fn create_tags_through_an_action_wildcard_is_rejected() {
        let v = one(
            json!({"Sid": "T", "Effect": "Allow", "Action": "ec2:Create*", "Resource": "*",
                           "Condition": {"StringEquals": {"aws:RequestTag/kubernetes.io/cluster/demo": "owned"}}}),
        );
        assert!(v.iter().any(|m| m.contains("wildcard")), "{v:?}");
        assert!(v.iter().any(|m| m.contains("ec2:CreateTags")), "{v:?}");
    }

    #[test]
    fn create_tags_with_create_action_but_without_the_cluster_tag_is_rejected() {
        rejected(
            json!({"Sid": "T", "Effect": "Allow", "Action": "ec2:CreateTags", "Resource": "*",
                   "Condition": {"StringEquals": {"ec2:CreateAction": "RunInstances"}}}),
            "ec2:CreateTags",
        );
        rejected(
            json!({"Sid": "T", "Effect": "Allow", "Action": "ec2:CreateTags", "Resource": "*",
                   "Condition": {"StringEquals": {"ec2:CreateAction": ["RunInstances", "CreateVolume"],
                                                  "aws:RequestTag/kubernetes.io/cluster/demo": "owned"}}}),
            "ec2:CreateTags",
        );
    }

    #[test]
    fn create_tags_on_create_or_on_owned_resources_with_listed_keys_is_accepted() {
        assert_eq!(
            one(
                json!({"Sid": "T", "Effect": "Allow", "Action": "ec2:CreateTags", "Resource": "*",
                       "Condition": {"StringEquals": {
                           "ec2:CreateAction": ["CreateFleet", "RunInstances"],
                           "aws:RequestTag/kubernetes.io/cluster/demo": "owned"}}})
            ),
            Vec::<String>::new()
        );
        assert_eq!(
            one(
                json!({"Sid": "T", "Effect": "Allow", "Action": "ec2:CreateTags", "Resource": "*",
                       "Condition": {"StringEquals": {"aws:ResourceTag/kubernetes.io/cluster/demo": "owned"},
                                     "ForAllValues:StringEquals": {"aws:TagKeys": ["Name"]}}})
            ),
            Vec::<String>::new()
        );
        // Retagging owned resources with any key is not narrow enough.
        rejected(
            json!({"Sid": "T", "Effect": "Allow", "Action": "ec2:CreateTags", "Resource": "*",
                   "Condition": {"StringEquals": {"aws:ResourceTag/kubernetes.io/cluster/demo": "owned"}}}),
            "ec2:CreateTags",
        );
    }

    #[test]
    fn terminate_without_a_resource_tag_is_rejected() {
        rejected(
            json!({"Sid": "D", "Effect": "Allow", "Action": "ec2:TerminateInstances", "Resource": "*"}),
            "aws:ResourceTag",
        );
        // Another cluster's tag does not count, nor does a request tag.
        rejected(
            json!({"Sid": "D", "Effect": "Allow", "Action": "ec2:TerminateInstances", "Resource": "*",
                   "Condition": {"StringEquals": {"aws:ResourceTag/kubernetes.io/cluster/other": "owned"}}}),
            "aws:ResourceTag",
        );
        rejected(
            json!({"Sid": "D", "Effect": "Allow", "Action": "ec2:DeleteLaunchTemplate", "Resource": "*",
                   "Condition": {"StringEquals": {"aws:RequestTag/kubernetes.io/cluster/demo": "owned"}}}),
            "aws:ResourceTag",
        );
        assert!(one(json!({"Sid": "D", "Effect": "Allow", "Action": "ec2:TerminateInstances", "Resource": "*",
                           "Condition": {"StringEquals": {"ec2:ResourceTag/kubernetes.io/cluster/demo": "owned"}}}))
        .is_empty());
    }

    #[test]
    fn pass_role_without_a_named_role_is_rejected() {
        rejected(
            json!({"Sid": "P", "Effect": "Allow", "Action": "iam:PassRole", "Resource": "*",
                   "Condition": {"StringEquals": {"iam:PassedToService": "ec2.amazonaws.com"}}}),
            "no wildcard",
        );
        rejected(
            json!({"Sid": "P", "Effect": "Allow", "Action": "iam:PassRole",
                   "Resource": "arn:aws:iam::1:role/*",
                   "Condition": {"StringEquals": {"iam:PassedToService": "ec2.amazonaws.com"}}}),
            "no wildcard",
        );
        rejected(
            json!({"Sid": "P", "Effect": "Allow", "Action": "iam:PassRole",
                   "Resource": "arn:aws:iam::1:role/Node"}),
            "iam:PassedToService",
        );
    }

    #[test]
    fn launching_without_the_cluster_tag_is_rejected_except_on_shared_inputs() {
        rejected(
            json!({"Sid": "L", "Effect": "Allow", "Action": ["ec2:CreateFleet", "ec2:RunInstances"],
                   "Resource": "*"}),
            "launches",
        );
        assert!(
            one(
                json!({"Sid": "L", "Effect": "Allow", "Action": "ec2:RunInstances",
                           "Resource": ["arn:aws:ec2:r::image/*", "arn:aws:ec2:r:*:subnet/*"]})
            )
            .is_empty()
        );
    }

    #[test]
    fn instance_profile_writes_need_the_cluster_tag_and_tagging_needs_a_limit() {
        rejected(
            json!({"Sid": "I", "Effect": "Allow", "Action": "iam:DeleteInstanceProfile",
                   "Resource": "arn:aws:iam::1:instance-profile/*"}),
            "aws:ResourceTag",
        );
        rejected(
            json!({"Sid": "I", "Effect": "Allow", "Action": "iam:CreateInstanceProfile",
                   "Resource": "arn:aws:iam::1:instance-profile/*"}),
            "created only with the cluster tag",
        );
        // Tagging any profile of the account, even with the right tag, could claim it.
        rejected(
            json!({"Sid": "I", "Effect": "Allow", "Action": "iam:TagInstanceProfile",
                   "Resource": "arn:aws:iam::1:instance-profile/*",
                   "Condition": {"StringEquals": {"aws:RequestTag/kubernetes.io/cluster/demo": "owned"},
                                 "ForAllValues:StringEquals": {"aws:TagKeys": ["kubernetes.io/cluster/demo"]}}}),
            "iam:TagInstanceProfile",
        );
        assert!(one(json!({"Sid": "I", "Effect": "Allow", "Action": "iam:TagInstanceProfile",
                           "Resource": "arn:aws:iam::1:instance-profile/adze/demo/*",
                           "Condition": {"StringEquals": {"aws:RequestTag/kubernetes.io/cluster/demo": "owned"},
                                         "ForAllValues:StringEquals": {"aws:TagKeys": ["kubernetes.io/cluster/demo"]}}}))
        .is_empty());
    }

    #[test]
    fn action_patterns_match_like_iam() {
        assert!(glob("ec2:Describe*", "ec2:DescribeSubnets"));
        assert!(glob("EC2:createtags", "ec2:CreateTags"));
        assert!(glob("*", "iam:PassRole"));
        assert!(!glob("ec2:Describe*", "ec2:CreateTags"));
        assert!(!glob("ec2:CreateTag", "ec2:CreateTags"));
    }
}
