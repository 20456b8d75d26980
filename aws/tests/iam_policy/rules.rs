//! Least-privilege rules for the controller policy, judged from the policy's JSON alone (no
//! IAM here to evaluate it). What they prevent: tagging a resource that is not the cluster's
//! (and then deleting it as if it were), deleting or changing what Adze did not create (the
//! cluster tag alone is not enough: EKS managed node groups and eksctl nodes carry it too),
//! launching without Adze's tags, passing any role but named ones, and calls outside the
//! stack's region.

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
    "ec2:RebootInstances",
    "ec2:DeleteLaunchTemplate",
    "iam:AddRoleToInstanceProfile",
    "iam:RemoveRoleFromInstanceProfile",
    "iam:DeleteInstanceProfile",
];
/// Resource types a launch uses but does not create: no request tag applies to them.
const USED_NOT_CREATED: &[&str] = &[
    "image/",
    "snapshot/",
    "subnet/",
    "security-group/",
    "capacity-reservation/",
    "placement-group/",
];
/// The creating calls tags may be set in (values of `ec2:CreateAction`).
const CREATE_ACTIONS: &[&str] = &["CreateFleet", "RunInstances", "CreateLaunchTemplate"];

/// Adze's own tags, as the code names them: the class tag on everything a launch creates, the
/// NodePool and NodeClaim tags on instances and fleets (provider.rs sets them; tests/moto.rs
/// reads them back from what moto created).
pub const CLASS_TAG: &str = adze_api::ec2nodeclass::EC2NODECLASS_TAG;
pub const NODEPOOL_TAG: &str = adze_scheduling::labels::NODEPOOL;
pub const NODECLAIM_TAG: &str = adze_scheduling::labels::NODECLAIM;

/// Whether a tag condition is about the request (what is being created) or the resource
/// (what exists).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum On {
    Request,
    Resource,
}

/// What every statement allowing an EC2 write needs, by action and resource type (empty: any
/// type): the cluster tag = owned and each listed Adze tag present (`Null: false`), `On` the
/// request or the resource. A statement naming `*` (or an ARN without a type) answers to every
/// row of its actions.
pub const OWNERSHIP: &[(&str, &[&str], On, &[&str])] = &[
    (
        "ec2:CreateFleet",
        &["instance/", "fleet/"],
        On::Request,
        &[CLASS_TAG, NODEPOOL_TAG, NODECLAIM_TAG],
    ),
    (
        "ec2:RunInstances",
        &["instance/", "fleet/"],
        On::Request,
        &[CLASS_TAG, NODEPOOL_TAG, NODECLAIM_TAG],
    ),
    (
        "ec2:CreateFleet",
        &["volume/", "network-interface/", "spot-instances-request/"],
        On::Request,
        &[CLASS_TAG],
    ),
    (
        "ec2:RunInstances",
        &["volume/", "network-interface/", "spot-instances-request/"],
        On::Request,
        &[CLASS_TAG],
    ),
    (
        "ec2:CreateFleet",
        &["launch-template/"],
        On::Resource,
        &[CLASS_TAG],
    ),
    (
        "ec2:RunInstances",
        &["launch-template/"],
        On::Resource,
        &[CLASS_TAG],
    ),
    ("ec2:CreateLaunchTemplate", &[], On::Request, &[CLASS_TAG]),
    (
        "ec2:TerminateInstances",
        &[],
        On::Resource,
        &[NODEPOOL_TAG, NODECLAIM_TAG],
    ),
    (
        "ec2:RebootInstances",
        &[],
        On::Resource,
        &[NODEPOOL_TAG, NODECLAIM_TAG],
    ),
    ("ec2:DeleteLaunchTemplate", &[], On::Resource, &[CLASS_TAG]),
];

/// Services whose calls go to the stack's region: their statements need
/// `aws:RequestedRegion` = that region.
pub const REGIONAL: &[&str] = &["ec2", "ssm", "sqs", "eks", "arc-zonal-shift"];
/// Global services: IAM answers in us-east-1 whatever the stack's region, so a region
/// condition would refuse every call elsewhere.
pub const GLOBAL: &[&str] = &["iam"];
/// The Price List API answers only in these regions (`pricing::pricing_region`); its statement
/// is held to them instead of the stack's region.
pub const PRICE_LIST_REGIONS: &[&str] =
    &["us-east-1", "eu-central-1", "ap-south-1", "cn-northwest-1"];

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

    /// `Null: {"<prefix>:<kind>/<key>": "false"}`: the tag is present.
    fn tag_present(&self, on: On, key: &str) -> bool {
        let kind = match on {
            On::Request => "RequestTag",
            On::Resource => "ResourceTag",
        };
        let prefixes: &[&str] = if on == On::Request {
            &["aws:"]
        } else {
            &["aws:", "ec2:"]
        };
        prefixes.iter().any(|p| {
            self.condition("Null", &format!("{p}{kind}/{key}"))
                .is_some_and(|v| v == ["false"])
        })
    }

    /// Any condition on request or resource tags.
    fn has_tag_condition(&self) -> bool {
        self.json["Condition"].as_object().is_some_and(|ops| {
            ops.values().any(|keys| {
                keys.as_object().is_some_and(|k| {
                    k.keys()
                        .any(|k| k.contains("RequestTag/") || k.contains("ResourceTag/"))
                })
            })
        })
    }

    /// The values of `aws:RequestedRegion` under `StringEquals`, if any.
    pub fn regions(&self) -> Option<Vec<&'a str>> {
        self.condition("StringEquals", "aws:RequestedRegion")
    }

    /// The IAM service prefixes of this statement's actions (`ec2`, `iam`, ...).
    pub fn services(&self) -> Vec<&'a str> {
        let mut s: Vec<&str> = self
            .actions()
            .iter()
            .filter_map(|a| a.split_once(':').map(|(p, _)| p))
            .collect();
        s.sort_unstable();
        s.dedup();
        s
    }

    /// Whether the statement's resources include `kind` (`instance/`), counting `*` and typeless
    /// ARNs as every kind.
    fn names_kind(&self, kind: &str) -> bool {
        self.resources()
            .iter()
            .any(|r| !r.contains('/') || r.contains(&format!(":{kind}")))
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

    /// The narrow form of retagging: only resources Adze created (cluster tag and class tag on
    /// them), only listed keys, and none of those keys Adze's or the cluster's own (which would
    /// let it mark more resources as its own).
    pub fn retags_owned_only(&self, cluster: &str) -> bool {
        let cluster_key = format!("kubernetes.io/cluster/{cluster}");
        self.condition("StringEquals", "ec2:CreateAction").is_none()
            && self.cluster_tag("ResourceTag", cluster)
            && self.tag_present(On::Resource, CLASS_TAG)
            && self.tag_keys_limited()
            && self
                .condition("ForAllValues:StringEquals", "aws:TagKeys")
                .is_some_and(|keys| {
                    keys.iter().all(|k| {
                        *k != cluster_key && ![CLASS_TAG, NODEPOOL_TAG, NODECLAIM_TAG].contains(k)
                    })
                })
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

/// Read-only by its name (`Describe*`, `Get*`, `List*`).
fn read_only(action: &str) -> bool {
    let name = action.split_once(':').map_or(action, |(_, n)| n);
    ["Describe", "Get", "List"]
        .iter()
        .any(|p| name.starts_with(p))
}

/// Every way `policy` breaks the rules, one line each naming the statement; empty is good.
/// `region` is the stack's region as the policy spells it.
pub fn violations(policy: &Value, cluster: &str, region: &str) -> Vec<String> {
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
            && !(s.create_action_only()
                && s.cluster_tag("RequestTag", cluster)
                && s.tag_present(On::Request, CLASS_TAG))
            && !s.retags_owned_only(cluster)
        {
            bad(
                "ec2:CreateTags must be limited to creating calls (ec2:CreateAction) with the \
                 cluster and class tags in the request, or to resources already tagged as \
                 Adze's with aws:TagKeys listed and none of them Adze's own",
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
                 untagged statements may name only images, snapshots, subnets, security groups, capacity reservations, placement groups",
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
        for (action, kinds, on, keys) in OWNERSHIP {
            if !s.covers(action) || !(kinds.is_empty() || kinds.iter().any(|k| s.names_kind(k))) {
                continue;
            }
            let kind = match on {
                On::Request => "RequestTag",
                On::Resource => "ResourceTag",
            };
            if !s.cluster_tag(kind, cluster) {
                bad(&format!(
                    "{action} on {kinds:?} needs aws:{kind}/<cluster tag> = owned"
                ));
            }
            for key in *keys {
                if !s.tag_present(*on, key) {
                    bad(&format!(
                        "{action} on {kinds:?} needs Adze's tag: Null aws:{kind}/{key} = false \
                         (the cluster tag alone is also on nodes Adze did not launch)"
                    ));
                }
            }
        }
        if s.resources().contains(&"*")
            && s.actions().iter().any(|a| !read_only(a))
            && !s.has_tag_condition()
        {
            bad("a write on Resource \"*\" needs a tag condition");
        }
        let services = s.services();
        let regional = services.iter().any(|p| REGIONAL.contains(p));
        let global = services.iter().any(|p| GLOBAL.contains(p));
        if regional && global {
            bad("mixes regional and global services; they need different region conditions");
        }
        if regional && s.regions().is_none_or(|r| r != [region]) {
            bad(&format!(
                "a regional statement needs StringEquals aws:RequestedRegion = {region}"
            ));
        }
        if global && s.regions().is_some() {
            bad("IAM is global (answered in us-east-1): aws:RequestedRegion would refuse it");
        }
        if services.contains(&"pricing") {
            match s.regions() {
                Some(r) if !r.is_empty() && r.iter().all(|r| PRICE_LIST_REGIONS.contains(r)) => {}
                _ => bad(&format!(
                    "the Price List statement needs aws:RequestedRegion within {PRICE_LIST_REGIONS:?}"
                )),
            }
        }
        if services
            .iter()
            .any(|p| !REGIONAL.contains(p) && !GLOBAL.contains(p) && *p != "pricing")
        {
            bad("a service the rules do not know: say whether it is regional");
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
    const R: &str = "eu-west-1";

    fn one(statement: Value) -> Vec<String> {
        violations(
            &json!({"Version": "2012-10-17", "Statement": [statement]}),
            C,
            R,
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
                           "aws:RequestedRegion": R,
                           "ec2:CreateAction": ["CreateFleet", "RunInstances"],
                           "aws:RequestTag/kubernetes.io/cluster/demo": "owned"},
                           "Null": {"aws:RequestTag/aws.adze.sh/ec2nodeclass": "false"}}})
            ),
            Vec::<String>::new()
        );
        let retag = json!({"Sid": "T", "Effect": "Allow", "Action": "ec2:CreateTags", "Resource": "*",
                       "Condition": {"StringEquals": {"aws:RequestedRegion": R,
                                                      "aws:ResourceTag/kubernetes.io/cluster/demo": "owned"},
                                     "Null": {"aws:ResourceTag/aws.adze.sh/ec2nodeclass": "false"},
                                     "ForAllValues:StringEquals": {"aws:TagKeys": ["Name"]}}});
        assert_eq!(one(retag.clone()), Vec::<String>::new());
        // Retagging owned resources with any key is not narrow enough.
        rejected(
            json!({"Sid": "T", "Effect": "Allow", "Action": "ec2:CreateTags", "Resource": "*",
                   "Condition": {"StringEquals": {"aws:ResourceTag/kubernetes.io/cluster/demo": "owned"}}}),
            "ec2:CreateTags",
        );
        // Nor is retagging what carries only the cluster tag (an EKS managed node group's).
        let mut cluster_only = retag.clone();
        cluster_only["Condition"]
            .as_object_mut()
            .unwrap()
            .remove("Null");
        rejected(cluster_only, "ec2:CreateTags");
        // Nor adding Adze's own tags, which would make a resource terminable.
        let mut adze_keys = retag;
        adze_keys["Condition"]["ForAllValues:StringEquals"]["aws:TagKeys"] =
            json!(["Name", "adze.sh/nodepool"]);
        rejected(adze_keys, "ec2:CreateTags");
    }

    #[test]
    fn tag_on_create_without_the_class_tag_is_rejected() {
        rejected(
            json!({"Sid": "T", "Effect": "Allow", "Action": "ec2:CreateTags", "Resource": "*",
                   "Condition": {"StringEquals": {
                       "aws:RequestedRegion": R,
                       "ec2:CreateAction": "CreateFleet",
                       "aws:RequestTag/kubernetes.io/cluster/demo": "owned"}}}),
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
        // The cluster tag alone is on EKS managed node groups' and eksctl's nodes too.
        let cluster_only = json!({"Sid": "D", "Effect": "Allow", "Action": "ec2:TerminateInstances", "Resource": "*",
                   "Condition": {"StringEquals": {"aws:RequestedRegion": R,
                                                  "ec2:ResourceTag/kubernetes.io/cluster/demo": "owned"}}});
        rejected(
            cluster_only.clone(),
            "Null aws:ResourceTag/adze.sh/nodepool",
        );
        rejected(
            cluster_only.clone(),
            "Null aws:ResourceTag/adze.sh/nodeclaim",
        );
        let mut ours = cluster_only;
        ours["Condition"]["Null"] = json!({"aws:ResourceTag/adze.sh/nodepool": "false",
                                           "ec2:ResourceTag/adze.sh/nodeclaim": "false"});
        assert_eq!(one(ours.clone()), Vec::<String>::new());
        // A request tag is not the resource's.
        ours["Condition"]["Null"] = json!({"aws:RequestTag/adze.sh/nodepool": "false",
                                           "aws:ResourceTag/adze.sh/nodeclaim": "false"});
        rejected(ours.clone(), "Null aws:ResourceTag/adze.sh/nodepool");
        // "true" means the tag is absent.
        ours["Condition"]["Null"] = json!({"aws:ResourceTag/adze.sh/nodepool": "true",
                                           "aws:ResourceTag/adze.sh/nodeclaim": "false"});
        rejected(ours, "Null aws:ResourceTag/adze.sh/nodepool");
        rejected(
            json!({"Sid": "D", "Effect": "Allow", "Action": "ec2:DeleteLaunchTemplate",
                   "Resource": "arn:aws:ec2:eu-west-1:1:launch-template/*",
                   "Condition": {"StringEquals": {"aws:RequestedRegion": R,
                                                  "aws:ResourceTag/kubernetes.io/cluster/demo": "owned"}}}),
            "Null aws:ResourceTag/aws.adze.sh/ec2nodeclass",
        );
    }

    #[test]
    fn creating_instances_needs_adze_tags_on_the_request_by_resource_type() {
        let launch = |resources: Value, present: Value| {
            json!({"Sid": "L", "Effect": "Allow", "Action": ["ec2:CreateFleet", "ec2:RunInstances"],
                   "Resource": resources,
                   "Condition": {"StringEquals": {"aws:RequestedRegion": R,
                                                  "aws:RequestTag/kubernetes.io/cluster/demo": "owned"},
                                 "Null": present}})
        };
        let class_only = json!({"aws:RequestTag/aws.adze.sh/ec2nodeclass": "false"});
        let all = json!({"aws:RequestTag/aws.adze.sh/ec2nodeclass": "false",
                         "aws:RequestTag/adze.sh/nodepool": "false",
                         "aws:RequestTag/adze.sh/nodeclaim": "false"});
        let volumes = json!([
            "arn:aws:ec2:eu-west-1:1:volume/*",
            "arn:aws:ec2:eu-west-1:1:network-interface/*"
        ]);
        let instances = json!([
            "arn:aws:ec2:eu-west-1:1:instance/*",
            "arn:aws:ec2:eu-west-1:1:fleet/*"
        ]);
        assert_eq!(
            one(launch(volumes.clone(), class_only.clone())),
            Vec::<String>::new()
        );
        assert_eq!(
            one(launch(instances.clone(), all.clone())),
            Vec::<String>::new()
        );
        rejected(
            launch(instances, class_only.clone()),
            "Null aws:RequestTag/adze.sh/nodepool",
        );
        rejected(
            launch(volumes, json!({})),
            "Null aws:RequestTag/aws.adze.sh/ec2nodeclass",
        );
        // `*` answers to every row: the instance rows too.
        rejected(
            launch(json!("*"), class_only),
            "Null aws:RequestTag/adze.sh/nodeclaim",
        );
        // ... and the launch template rows, whose tags are the resource's, not the request's.
        rejected(launch(json!("*"), all), "launch-template");
    }

    #[test]
    fn regional_statements_need_the_stacks_region_and_global_ones_none() {
        let describe = |cond: Value| {
            json!({"Sid": "R", "Effect": "Allow", "Action": "ec2:DescribeSubnets", "Resource": "*",
                   "Condition": cond})
        };
        assert_eq!(
            one(describe(
                json!({"StringEquals": {"aws:RequestedRegion": R}})
            )),
            Vec::<String>::new()
        );
        rejected(describe(json!({})), "aws:RequestedRegion");
        rejected(
            describe(json!({"StringEquals": {"aws:RequestedRegion": [R, "us-east-1"]}})),
            "aws:RequestedRegion",
        );
        rejected(
            json!({"Sid": "R", "Effect": "Allow", "Action": "sqs:ReceiveMessage",
                   "Resource": "arn:aws:sqs:eu-west-1:1:q"}),
            "aws:RequestedRegion",
        );
        rejected(
            json!({"Sid": "G", "Effect": "Allow", "Action": "iam:GetInstanceProfile",
                   "Resource": "arn:aws:iam::1:instance-profile/*",
                   "Condition": {"StringEquals": {"aws:RequestedRegion": R}}}),
            "IAM is global",
        );
        rejected(
            json!({"Sid": "G", "Effect": "Allow", "Action": ["iam:GetInstanceProfile", "ec2:DescribeImages"],
                   "Resource": "*", "Condition": {"StringEquals": {"aws:RequestedRegion": R}}}),
            "mixes regional and global",
        );
        let prices = |cond: Value| {
            json!({"Sid": "P", "Effect": "Allow", "Action": "pricing:GetProducts", "Resource": "*",
                   "Condition": cond})
        };
        assert_eq!(
            one(prices(
                json!({"StringEquals": {"aws:RequestedRegion": ["us-east-1", "ap-south-1"]}})
            )),
            Vec::<String>::new()
        );
        rejected(prices(json!({})), "Price List");
        rejected(
            prices(json!({"StringEquals": {"aws:RequestedRegion": ["us-east-1", R]}})),
            "Price List",
        );
        rejected(
            json!({"Sid": "S", "Effect": "Allow", "Action": "s3:GetObject", "Resource": "*"}),
            "a service the rules do not know",
        );
    }

    #[test]
    fn writes_on_every_resource_need_a_tag_condition() {
        rejected(
            json!({"Sid": "W", "Effect": "Allow", "Action": "ec2:DeleteVolume", "Resource": "*",
                   "Condition": {"StringEquals": {"aws:RequestedRegion": R}}}),
            "Resource \"*\"",
        );
        // Reads on * are fine.
        assert_eq!(
            one(
                json!({"Sid": "W", "Effect": "Allow", "Action": "ec2:DescribeVolumes", "Resource": "*",
                       "Condition": {"StringEquals": {"aws:RequestedRegion": R}}})
            ),
            Vec::<String>::new()
        );
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
        assert_eq!(
            one(
                json!({"Sid": "L", "Effect": "Allow", "Action": "ec2:RunInstances",
                           "Resource": ["arn:aws:ec2:r::image/*", "arn:aws:ec2:r:*:subnet/*"],
                           "Condition": {"StringEquals": {"aws:RequestedRegion": R}}})
            ),
            Vec::<String>::new()
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
