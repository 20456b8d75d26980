//! The controller policy in deploy/aws/adze.yaml (the one users deploy; docs/install.md points
//! to it) must allow every AWS API call this crate makes, no action it does not make, and
//! nothing that lets the role touch what Adze did not create or leave the stack's region. AWS
//! is not reachable here (moto does not enforce IAM), so the checks are static: collect the SDK
//! operations called in `src/`, add those IAM checks on their behalf ([`IMPLIED`]), and compare
//! with the policy's actions both ways; judge every statement's conditions with `rules` (whose
//! own tests feed it bad policies). A new call without a policy line fails here instead of as
//! `UnauthorizedOperation` on a user's cluster; a dropped call leaves no permission behind.

#[path = "iam_policy/rules.rs"]
mod rules;
#[path = "iam_policy/template.rs"]
mod template;

use std::collections::BTreeSet;
use std::path::Path;

/// SDK client field/variable names → IAM service prefix.
const CLIENTS: &[(&str, &str)] = &[
    ("ec2", "ec2"),
    ("ssm", "ssm"),
    ("sqs", "sqs"),
    ("iam", "iam"),
    ("pricing", "pricing"),
    ("eks", "eks"),
    ("arc", "arczonalshift"),
];

/// The IAM prefix of an SDK crate's service where the two differ.
fn iam_prefix(service: &str) -> &str {
    match service {
        "arczonalshift" => "arc-zonal-shift",
        other => other,
    }
}

/// Methods on a client that are not API operations.
const NOT_OPERATIONS: &[&str] = &["clone", "config"];

/// `describe_instance_type_offerings` → `DescribeInstanceTypeOfferings`.
fn pascal(snake: &str) -> String {
    snake
        .split('_')
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect()
}

/// IAM actions (`ec2:CreateFleet`) for calls shaped `<client>.<operation>()` in `source`, where
/// the call may be split over lines (`.ec2\n    .create_fleet()`).
fn operations_in(source: &str) -> BTreeSet<String> {
    // Join method chains split over lines, keeping word boundaries elsewhere.
    let squashed = source
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace(" .", ".")
        .replace(". ", ".");
    let bytes = squashed.as_bytes();
    // Besides the usual names, any binding typed as an SDK client (`client: &aws_sdk_pricing::Client`).
    let mut clients: Vec<(String, String)> = CLIENTS
        .iter()
        .map(|(c, s)| (c.to_string(), s.to_string()))
        .collect();
    for (at, _) in squashed.match_indices("aws_sdk_") {
        let service: String = squashed[at + "aws_sdk_".len()..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect();
        if !squashed[at..].starts_with(&format!("aws_sdk_{service}::Client")) {
            continue;
        }
        assert!(
            CLIENTS.iter().any(|(_, s)| *s == service),
            "a client of {service}, which CLIENTS does not list"
        );
        let before = squashed[..at].trim_end_matches('&').trim_end();
        let Some(head) = before.strip_suffix(':') else {
            continue;
        };
        let name: String = head
            .chars()
            .rev()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        if !name.is_empty() {
            clients.push((name, service));
        }
    }
    let mut found = BTreeSet::new();
    for (client, service) in &clients {
        let needle = format!("{client}.");
        let service = service.as_str();
        for (at, _) in squashed.match_indices(&needle) {
            let before = at.checked_sub(1).map(|i| bytes[i]);
            if before.is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_') {
                continue; // e.g. `my_ec2.` or `aws_sdk_ec2.`
            }
            let rest = &squashed[at + needle.len()..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_')
                .collect();
            if name.is_empty()
                || !rest[name.len()..].starts_with("()")
                || NOT_OPERATIONS.contains(&name.as_str())
            {
                continue;
            }
            found.insert(format!("{}:{}", iam_prefix(service), pascal(&name)));
        }
    }
    found
}

fn sources(dir: &Path, out: &mut Vec<(String, String)>) {
    for entry in std::fs::read_dir(dir).expect("read src dir") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).expect("read source");
            out.push((path.display().to_string(), text));
        }
    }
}

#[test]
fn the_scanner_finds_calls_split_over_lines_and_skips_non_operations() {
    let src = "let r = self\n    .clients\n    .ec2\n    .create_fleet()\n    .send();\n\
               ec2.describe_subnets(); clients.sqs.clone(); aws_sdk_ec2.x(); match ssm.get_parameter().name(n)\n\
               fn f(prices: &aws_sdk_pricing::Client) { prices\n  .get_products().send() }";
    let found: Vec<String> = operations_in(src).into_iter().collect();
    assert_eq!(
        found,
        [
            "ec2:CreateFleet",
            "ec2:DescribeSubnets",
            "pricing:GetProducts",
            "ssm:GetParameter"
        ]
    );
}

/// `(action, file)` for every AWS call in `src/` but the fault proxy.
fn calls_in_src() -> BTreeSet<(String, String)> {
    let mut files = Vec::new();
    sources(
        Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/src")),
        &mut files,
    );
    let mut called = BTreeSet::new();
    for (file, text) in &files {
        // The fault proxy forwards test traffic to moto; it is not the provider calling AWS.
        if file.ends_with("fault_proxy.rs") {
            continue;
        }
        for op in operations_in(text) {
            called.insert((op, file.clone()));
        }
    }
    called
}

#[test]
fn the_policy_allows_every_aws_call_the_provider_makes() {
    let called = calls_in_src();
    let names: BTreeSet<&str> = called.iter().map(|(op, _)| op.as_str()).collect();
    // Guard against the scanner silently finding nothing after a refactor.
    for must in [
        "ec2:CreateFleet",
        "ec2:CreateLaunchTemplate",
        "ec2:TerminateInstances",
        "ec2:DescribeInstanceTypes",
        "iam:CreateInstanceProfile",
        "ssm:GetParameter",
        "sqs:ReceiveMessage",
        "eks:DescribeCluster",
        "pricing:GetProducts",
        "arc-zonal-shift:GetManagedResource",
    ] {
        assert!(
            names.contains(must),
            "scanner no longer sees {must}; found {names:?}"
        );
    }
    let policy = template::controller_policy(&template::load());
    let statements = rules::Statement::all(&policy);
    let mut missing: Vec<String> = called
        .iter()
        .filter(|(op, _)| !statements.iter().any(|s| s.covers(op)))
        .map(|(op, file)| format!("{op} (called in {file})"))
        .collect();
    // A direct CreateTags call tags an existing resource: only the narrow retagging form
    // (resources already the cluster's, listed keys) may allow it, not tag-on-create.
    if names.contains("ec2:CreateTags")
        && !statements
            .iter()
            .any(|s| s.covers("ec2:CreateTags") && s.retags_owned_only(template::CLUSTER))
    {
        missing.push("ec2:CreateTags on existing resources (called directly)".into());
    }
    // Launches set tags in the creating call, which IAM authorizes as ec2:CreateTags with
    // ec2:CreateAction naming that call.
    for creating in ["CreateFleet", "CreateLaunchTemplate"] {
        let tags_on_create = statements.iter().any(|s| {
            s.covers("ec2:CreateTags")
                && s.json["Condition"]["StringEquals"]["ec2:CreateAction"]
                    .as_array()
                    .is_some_and(|a| a.iter().any(|v| v == creating))
        });
        if names.contains(format!("ec2:{creating}").as_str()) && !tags_on_create {
            missing.push(format!("ec2:CreateTags with ec2:CreateAction {creating}"));
        }
    }
    assert!(
        missing.is_empty(),
        "deploy/aws/adze.yaml's ControllerPolicy does not allow: {missing:?}"
    );
}

/// Actions IAM checks that the code does not call by name: `(action, the call that needs it,
/// why)`. Each row must still be needed (its call is made), so a row cannot outlive its reason.
const IMPLIED: &[(&str, &str, &str)] = &[
    (
        "ec2:RunInstances",
        "ec2:CreateFleet",
        "an instant fleet launches its instances as RunInstances, authorized as the caller",
    ),
    (
        "ec2:CreateTags",
        "ec2:CreateFleet",
        "TagSpecifications are authorized as CreateTags with ec2:CreateAction",
    ),
    (
        "ec2:CreateTags",
        "ec2:CreateLaunchTemplate",
        "TagSpecifications are authorized as CreateTags with ec2:CreateAction",
    ),
    (
        "iam:PassRole",
        "ec2:CreateFleet",
        "the launch template names an instance profile: its role is passed to EC2",
    ),
    (
        "iam:TagInstanceProfile",
        "iam:CreateInstanceProfile",
        "tags given to CreateInstanceProfile are authorized as TagInstanceProfile",
    ),
];

#[test]
fn the_policy_allows_exactly_the_calls_the_code_makes() {
    let called: BTreeSet<String> = calls_in_src().into_iter().map(|(op, _)| op).collect();
    let mut needed = called.clone();
    for (action, by, why) in IMPLIED {
        assert!(
            called.contains(*by),
            "IMPLIED row {action} ({why}) names {by}, which the code no longer calls"
        );
        needed.insert(action.to_string());
    }
    let policy = template::controller_policy(&template::load());
    let statements = rules::Statement::all(&policy);
    let mut allowed = BTreeSet::new();
    for s in &statements {
        for a in s.actions() {
            assert!(
                !a.contains('*'),
                "{}: action pattern {a}: list the calls instead",
                s.sid()
            );
            allowed.insert(a.to_string());
        }
    }
    let extra: Vec<&String> = allowed.difference(&needed).collect();
    let missing: Vec<&String> = needed.difference(&allowed).collect();
    assert!(
        extra.is_empty() && missing.is_empty(),
        "deploy/aws/adze.yaml's ControllerPolicy allows actions nothing calls: {extra:?}; \
         and misses: {missing:?}"
    );
}

#[test]
fn the_price_list_statement_allows_the_region_every_stack_region_asks() {
    let policy = template::controller_policy(&template::load());
    let statements = rules::Statement::all(&policy);
    let prices = statements
        .iter()
        .find(|s| s.covers("pricing:GetProducts"))
        .expect("a statement allows pricing:GetProducts");
    let allowed: BTreeSet<&str> = prices.regions().unwrap_or_default().into_iter().collect();
    // One region of every prefix AWS uses, and some it may use next.
    let asked: BTreeSet<&str> = [
        "us-east-1",
        "us-west-2",
        "us-gov-west-1",
        "ca-central-1",
        "sa-east-1",
        "mx-central-1",
        "eu-west-1",
        "eu-south-2",
        "il-central-1",
        "ap-northeast-1",
        "ap-southeast-5",
        "me-central-1",
        "af-south-1",
        "cn-north-1",
        "cn-northwest-1",
    ]
    .into_iter()
    .map(adze_aws::pricing::pricing_region)
    .collect();
    assert_eq!(
        allowed, asked,
        "Prices' aws:RequestedRegion vs pricing_region()"
    );
    let rule_set: BTreeSet<&str> = rules::PRICE_LIST_REGIONS.iter().copied().collect();
    assert_eq!(
        rule_set, asked,
        "rules::PRICE_LIST_REGIONS vs pricing_region()"
    );
}

#[test]
fn the_tags_the_policy_requires_are_the_ones_the_code_sets() {
    // The policy's Null conditions name Adze's tags through rules::OWNERSHIP; the launch code
    // must set each on the resource types that row covers, in the creating call. (tests/moto.rs
    // reads them back from what moto created.)
    let source =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/src/provider.rs")).unwrap();
    let squashed: String = source.split_whitespace().collect();
    for needle in [
        "tag(EC2NODECLASS_TAG,",
        "tag(labels::NODEPOOL,",
        "tag(labels::NODECLAIM,",
    ] {
        assert!(
            squashed.contains(needle),
            "provider.rs no longer sets {needle}"
        );
    }
    for kind in [
        "ResourceType::Instance",
        "ResourceType::Fleet",
        "ResourceType::Volume",
        "ResourceType::NetworkInterface",
        "ResourceType::SpotInstancesRequest",
        "ResourceType::LaunchTemplate",
    ] {
        assert!(
            squashed.contains(&format!(".resource_type({kind})"))
                || squashed.contains(&format!("{kind},")),
            "provider.rs no longer tags {kind} at creation"
        );
    }
    assert_eq!(rules::CLASS_TAG, "aws.adze.sh/ec2nodeclass");
    assert_eq!(rules::NODEPOOL_TAG, "adze.sh/nodepool");
    assert_eq!(rules::NODECLAIM_TAG, "adze.sh/nodeclaim");
}

#[test]
fn the_policy_is_least_privilege() {
    let policy = template::controller_policy(&template::load());
    let v = rules::violations(&policy, template::CLUSTER, template::REGION);
    assert!(v.is_empty(), "ControllerPolicy breaks: {v:#?}");
    // The rules look at these statements; make sure they are there to be looked at.
    for action in [
        "ec2:CreateTags",
        "ec2:TerminateInstances",
        "iam:PassRole",
        "iam:TagInstanceProfile",
    ] {
        assert!(
            rules::Statement::all(&policy)
                .iter()
                .any(|s| s.covers(action)),
            "no statement allows {action}"
        );
    }
}

#[test]
fn the_controller_role_has_the_policy_and_trusts_only_the_provisioner() {
    let t = template::load();
    let role = &template::resource(&t, "ControllerRole")["Properties"];
    let attached = template::json(&role["ManagedPolicyArns"]);
    assert_eq!(attached, serde_json::json!([{"Ref": "ControllerPolicy"}]));
    let choice = &role["AssumeRolePolicyDocument"]["Fn::If"];
    assert_eq!(choice[0].as_str(), Some("UseIrsa"));
    // IRSA: a web identity from the cluster's provider, for the one ServiceAccount, for STS.
    let irsa: serde_json::Value = serde_json::from_str(&template::substitute(
        choice[1]["Fn::Sub"]
            .as_str()
            .expect("IRSA trust is a Fn::Sub string"),
    ))
    .expect("IRSA trust is JSON");
    let [statement] = irsa["Statement"].as_array().unwrap().as_slice() else {
        panic!("one trust statement: {irsa}");
    };
    assert_eq!(statement["Action"], "sts:AssumeRoleWithWebIdentity");
    assert_eq!(
        statement["Principal"]["Federated"],
        "arn:aws:iam::ACCOUNT_ID:oidc-provider/OIDC_PROVIDER"
    );
    assert_eq!(
        statement["Condition"]["StringEquals"],
        serde_json::json!({
            "OIDC_PROVIDER:sub": "system:serviceaccount:NAMESPACE:SERVICE_ACCOUNT",
            "OIDC_PROVIDER:aud": "sts.amazonaws.com"
        })
    );
    // Pod Identity: the EKS agent assumes the role and tags the session.
    let pod = template::json(&choice[2]);
    let [statement] = pod["Statement"].as_array().unwrap().as_slice() else {
        panic!("one trust statement: {pod}");
    };
    assert_eq!(statement["Principal"]["Service"], "pods.eks.amazonaws.com");
    assert_eq!(
        statement["Action"],
        serde_json::json!(["sts:AssumeRole", "sts:TagSession"])
    );
    let assoc = template::resource(&t, "ControllerPodIdentity");
    assert_eq!(assoc["Condition"].as_str(), Some("UsePodIdentity"));
    // The default ServiceAccount is the chart's provisioner for release `adze`.
    let chart = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../charts/adze/templates/provisioner.yaml"
    ))
    .unwrap();
    assert!(chart.contains("serviceAccountName: {{ $fullname }}-provisioner"));
    assert_eq!(
        t["Parameters"]["ServiceAccountName"]["Default"].as_str(),
        Some("adze-provisioner")
    );
}

/// `ExtraNodeRoleArns` (EC2NodeClasses that keep another `role`, e.g. Karpenter's node role
/// after `migrate`): PassRole on exactly the ARNs given, to EC2 only, in a policy that exists
/// only when some are given, and that `rules` accepts; the parameter refuses wildcards.
#[test]
fn extra_node_roles_may_be_passed_to_ec2_and_nothing_else() {
    let t = template::load();
    let param = &t["Parameters"]["ExtraNodeRoleArns"];
    assert_eq!(param["Type"].as_str(), Some("CommaDelimitedList"));
    assert_eq!(param["Default"].as_str(), Some(""));
    // Each value a whole role ARN (any partition, a 12-digit account, a role path and name of
    // IAM's characters): no `*` can stand for an account or a role.
    assert_eq!(
        param["AllowedPattern"].as_str(),
        Some("^(arn:aws[a-z-]*:iam::[0-9]{12}:role/[A-Za-z0-9+=,.@_/-]{1,512})?$")
    );

    let extra = template::resource(&t, "PassExtraNodeRoles");
    assert_eq!(extra["Condition"].as_str(), Some("HasExtraNodeRoles"));
    assert_eq!(extra["Type"].as_str(), Some("AWS::IAM::Policy"));
    let props = &extra["Properties"];
    assert_eq!(
        template::json(&props["Roles"]),
        serde_json::json!([{"Ref": "ControllerRole"}])
    );
    let doc = template::json(&props["PolicyDocument"]);
    let [statement] = doc["Statement"].as_array().unwrap().as_slice() else {
        panic!("one statement: {doc}");
    };
    assert_eq!(
        statement["Resource"],
        serde_json::json!({"Ref": "ExtraNodeRoleArns"})
    );
    assert_eq!(
        statement["Condition"]["StringEquals"]["iam:PassedToService"],
        serde_json::json!({"Fn::Sub": "ec2.${AWS::URLSuffix}"})
    );
    // The statement with two ARNs put in, judged by the same rules as the ControllerPolicy.
    let mut resolved = statement.clone();
    resolved["Resource"] = serde_json::json!([
        "arn:aws:iam::ACCOUNT_ID:role/KarpenterNodeRole-CLUSTER_NAME",
        "arn:aws:iam::ACCOUNT_ID:role/Other"
    ]);
    resolved["Condition"]["StringEquals"]["iam:PassedToService"] =
        serde_json::json!("ec2.amazonaws.com");
    let policy = serde_json::json!({"Version": "2012-10-17", "Statement": [resolved]});
    let v = rules::violations(&policy, template::CLUSTER, template::REGION);
    assert!(v.is_empty(), "PassExtraNodeRoles breaks: {v:#?}");
    assert_eq!(
        rules::Statement::all(&policy)[0].actions(),
        vec!["iam:PassRole"]
    );
    // Given nothing, the policy is not made.
    let when = template::json(&t["Conditions"]["HasExtraNodeRoles"]);
    assert_eq!(
        when,
        serde_json::json!({"Fn::Not": [{"Fn::Equals": [{"Fn::Join": ["", {"Ref": "ExtraNodeRoleArns"}]}, ""]}]})
    );
}

/// The stack's names stay clear of Karpenter's getting-started stack, which may sit in the same
/// account during a migration (deploy/ci/moto_stack.py deploys the two side by side): its queue
/// is named after the cluster, its node role KarpenterNodeRole-<cluster>.
#[test]
fn the_interruption_queue_is_not_named_after_the_cluster() {
    let t = template::load();
    let queue =
        template::json(&template::resource(&t, "InterruptionQueue")["Properties"]["QueueName"]);
    assert_eq!(
        queue,
        serde_json::json!({"Fn::If": ["DefaultQueueName", {"Fn::Sub": "adze-${ClusterName}"}, {"Ref": "InterruptionQueueName"}]})
    );
    for (name, r) in t["Resources"].as_mapping().unwrap() {
        for key in [
            "RoleName",
            "InstanceProfileName",
            "ManagedPolicyName",
            "PolicyName",
            "Name",
        ] {
            let v = serde_json::to_string(&template::json(&r["Properties"][key])).unwrap();
            assert!(
                !v.contains("Karpenter") && v != r#"{"Ref":"ClusterName"}"#,
                "{name:?}.{key} = {v}"
            );
        }
    }
}

#[test]
fn the_interruption_queue_takes_events_over_tls_from_the_five_rules() {
    let t = template::load();
    let policy = template::json(
        &template::resource(&t, "InterruptionQueuePolicy")["Properties"]["PolicyDocument"],
    );
    let statements = policy["Statement"].as_array().unwrap();
    // Only EventBridge may send, and only for this stack's own rules.
    let allows: Vec<&serde_json::Value> = statements
        .iter()
        .filter(|s| s["Effect"] == "Allow")
        .collect();
    let [send] = allows.as_slice() else {
        panic!("one Allow statement: {policy}");
    };
    assert_eq!(send["Action"], "sqs:SendMessage");
    assert_eq!(
        send["Principal"],
        serde_json::json!({"Service": "events.amazonaws.com"})
    );
    let mut rules_in_template: BTreeSet<String> = BTreeSet::new();
    for (name, r) in t["Resources"].as_mapping().unwrap() {
        if r["Type"].as_str() == Some("AWS::Events::Rule") {
            rules_in_template.insert(name.as_str().unwrap().to_string());
        }
    }
    let sources: BTreeSet<String> = send["Condition"]["ArnEquals"]["aws:SourceArn"]
        .as_array()
        .expect("aws:SourceArn lists the rules")
        .iter()
        .map(|arn| {
            let att = &arn["Fn::GetAtt"];
            assert_eq!(att[1], "Arn", "{arn}");
            att[0].as_str().unwrap().to_string()
        })
        .collect();
    assert_eq!(sources, rules_in_template);
    assert_eq!(
        send["Condition"].as_object().unwrap().len(),
        1,
        "only the source condition: {send}"
    );
    assert!(statements.iter().any(|s| s["Effect"] == "Deny"
        && s["Principal"] == "*"
        && s["Condition"]["Bool"]["aws:SecureTransport"] == "false"));
    // The events interruption::parse understands, each routed to the queue by a rule.
    let mut routed = BTreeSet::new();
    for (_, r) in t["Resources"].as_mapping().unwrap() {
        if r["Type"].as_str() != Some("AWS::Events::Rule") {
            continue;
        }
        let p = template::json(&r["Properties"]);
        assert_eq!(
            p["Targets"][0]["Arn"],
            serde_json::json!({"Fn::GetAtt": ["InterruptionQueue", "Arn"]})
        );
        routed.insert((
            p["EventPattern"]["source"][0].as_str().unwrap().to_string(),
            p["EventPattern"]["detail-type"][0]
                .as_str()
                .unwrap()
                .to_string(),
        ));
    }
    let expected: BTreeSet<(String, String)> = [
        ("aws.ec2", "EC2 Spot Instance Interruption Warning"),
        (
            "aws.ec2",
            "EC2 Capacity Reservation Instance Interruption Warning",
        ),
        ("aws.ec2", "EC2 Instance Rebalance Recommendation"),
        ("aws.ec2", "EC2 Instance State-change Notification"),
        ("aws.health", "AWS Health Event"),
    ]
    .iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    assert_eq!(routed, expected);
}

#[test]
fn the_instance_profile_tags_the_code_sets_are_the_ones_the_policy_lets_it_set() {
    // CreateOwnedInstanceProfiles lists the allowed tag keys (aws:TagKeys): a tag added in
    // instance_profile.rs without it would make every CreateInstanceProfile AccessDenied.
    let source = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/src/instance_profile.rs"
    ))
    .unwrap();
    let squashed: String = source.split_whitespace().collect();
    let set: BTreeSet<String> = squashed
        .split(".tags(tag(")
        .skip(1)
        .map(|rest| {
            let key = rest.split(',').next().unwrap();
            match key {
                k if k.contains("kubernetes.io/cluster/{}") => {
                    format!("kubernetes.io/cluster/{}", template::CLUSTER)
                }
                k => k.trim_matches('"').to_string(),
            }
        })
        .collect();
    assert!(
        set.len() >= 2,
        "scanner no longer sees instance profile tags: {set:?}"
    );
    let policy = template::controller_policy(&template::load());
    let statement = rules::Statement::all(&policy)
        .into_iter()
        .find(|s| s.covers("iam:CreateInstanceProfile"))
        .expect("a statement allows iam:CreateInstanceProfile");
    let allowed: BTreeSet<String> = serde_json::from_value(
        statement.json["Condition"]["ForAllValues:StringEquals"]["aws:TagKeys"].clone(),
    )
    .expect("aws:TagKeys is a list");
    assert_eq!(set, allowed);
}

#[test]
fn docs_point_to_the_template_and_name_every_statement() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/install.md"))
        .expect("docs/install.md exists");
    assert!(doc.contains("deploy/aws/adze.yaml"));
    // One source of truth: no second copy of the policy to drift.
    assert!(
        !doc.split("```json").skip(1).any(|b| b
            .split("```")
            .next()
            .unwrap_or("")
            .contains("\"Statement\"")),
        "docs/install.md must point to deploy/aws/adze.yaml, not copy the policy"
    );
    let policy = template::controller_policy(&template::load());
    let unnamed: Vec<String> = rules::Statement::all(&policy)
        .iter()
        .map(|s| s.sid())
        .filter(|sid| !doc.contains(&format!("`{sid}`")))
        .collect();
    assert!(
        unnamed.is_empty(),
        "docs/install.md does not explain statements {unnamed:?}"
    );
}
