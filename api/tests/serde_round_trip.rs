//! The YAML users write comes back out unchanged, and omitted fields take Karpenter's defaults.

mod common;

use std::time::Duration;

use adze_api::{
    EC2NodeClass, NodeClaim, NodePool, Operator, conditions,
    ec2nodeclass::{AmiFamily, HttpTokens, Toggle},
    nodepool::{BudgetNodes, ConsolidationPolicy, DisruptionReason},
};
use common::{fixture, fixture_json};
use kube::{CustomResourceExt, core::cel::apply_defaults};
use serde_json::{Value, json};

#[test]
fn karpenter_style_nodepool_round_trips_unchanged() {
    let pool: NodePool = serde_yaml::from_str(&fixture("nodepool.yaml")).unwrap();
    let written = serde_json::to_value(&pool).unwrap();
    assert_eq!(written, fixture_json("nodepool.yaml"));

    let reread: NodePool = serde_yaml::from_str(&serde_yaml::to_string(&pool).unwrap()).unwrap();
    assert_eq!(reread, pool);
}

#[test]
fn nodepool_fields_carry_their_meaning() {
    let pool: NodePool = serde_yaml::from_str(&fixture("nodepool.yaml")).unwrap();
    let template = &pool.spec.template.spec;
    assert_eq!(template.requirements[3].min_values, Some(2));
    assert_eq!(template.requirements[4].operator, Operator::Gt);
    assert_eq!(
        template.expire_after.as_std(),
        Some(Duration::from_secs(720 * 3600))
    );
    assert_eq!(
        template
            .termination_grace_period
            .as_ref()
            .map(|d| d.as_std()),
        Some(Duration::from_secs(48 * 3600))
    );
    assert!(template.node_class_ref.is_ec2());

    let budgets = &pool.spec.disruption.budgets;
    assert_eq!(budgets[0].parsed_nodes(), Ok(BudgetNodes::Percent(10)));
    assert_eq!(budgets[1].parsed_nodes(), Ok(BudgetNodes::Count(0)));
    assert!(budgets[1].applies_to(DisruptionReason::Drifted));
    assert!(!budgets[1].applies_to(DisruptionReason::Empty));
    assert!(budgets[0].applies_to(DisruptionReason::Empty));
    assert_eq!(
        BudgetNodes::Percent(10).allowed(11),
        2,
        "percentages round up"
    );
    assert_eq!(pool.spec.weight, Some(50));
    assert_eq!(pool.spec.limits["memory"].0, "1000Gi");
}

fn minimal_nodepool() -> Value {
    json!({
        "apiVersion": "adze.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": "minimal"},
        "spec": {"template": {"spec": {
            "nodeClassRef": {"group": "aws.adze.sh", "kind": "EC2NodeClass", "name": "default"}
        }}}
    })
}

#[test]
fn omitted_nodepool_fields_take_karpenter_defaults() {
    let pool: NodePool = serde_json::from_value(minimal_nodepool()).unwrap();
    let template = &pool.spec.template.spec;
    assert_eq!(template.expire_after.as_str(), "720h");
    assert!(template.requirements.is_empty());
    assert_eq!(template.termination_grace_period, None);
    let disruption = &pool.spec.disruption;
    assert_eq!(
        disruption.consolidation_policy,
        ConsolidationPolicy::WhenEmptyOrUnderutilized
    );
    assert_eq!(disruption.consolidate_after.as_std(), Some(Duration::ZERO));
    assert_eq!(disruption.budgets.len(), 1);
    assert_eq!(disruption.budgets[0].nodes, "10%");
    assert_eq!(pool.spec.weight, None);
    pool.validate().unwrap();
}

#[test]
fn crd_defaults_match_serde_defaults() {
    // What the apiserver stores after defaulting must read back as what serde fills in, or a
    // controller and a `simulate` run could see different pools.
    for (crd, object) in [
        (NodePool::crd(), minimal_nodepool()),
        (
            EC2NodeClass::crd(),
            json!({
                "apiVersion": "aws.adze.sh/v1", "kind": "EC2NodeClass", "metadata": {"name": "m"},
                "spec": {
                    "role": "r",
                    "amiSelectorTerms": [{"alias": "bottlerocket@latest"}],
                    "subnetSelectorTerms": [{"id": "subnet-1"}],
                    "securityGroupSelectorTerms": [{"id": "sg-1"}],
                }
            }),
        ),
    ] {
        let schema = common::schema_of(&crd);
        let defaulted = apply_defaults(&schema, &object);
        let kind = object["kind"].as_str().unwrap().to_string();
        let via_serde = match kind.as_str() {
            "NodePool" => serde_json::to_value(serde_json::from_value::<NodePool>(object).unwrap()),
            _ => serde_json::to_value(serde_json::from_value::<EC2NodeClass>(object).unwrap()),
        }
        .unwrap();
        assert_eq!(defaulted["spec"], via_serde["spec"], "{kind}");
    }
}

#[test]
fn omitted_ec2nodeclass_metadata_options_are_locked_down() {
    let class: EC2NodeClass = serde_json::from_value(json!({
        "apiVersion": "aws.adze.sh/v1", "kind": "EC2NodeClass", "metadata": {"name": "m"},
        "spec": {
            "role": "r",
            "amiSelectorTerms": [{"alias": "bottlerocket@latest"}],
            "subnetSelectorTerms": [{"id": "subnet-1"}],
            "securityGroupSelectorTerms": [{"id": "sg-1"}],
        }
    }))
    .unwrap();
    let imds = &class.spec.metadata_options;
    assert_eq!(imds.http_tokens, HttpTokens::Required);
    assert_eq!(imds.http_put_response_hop_limit, 1);
    assert_eq!(imds.http_endpoint, Toggle::Enabled);
    assert_eq!(imds.http_protocol_ipv6, Toggle::Disabled);
    assert_eq!(
        class.spec.effective_ami_family(),
        Some(AmiFamily::Bottlerocket)
    );
    class.validate().unwrap();
}

#[test]
fn ec2nodeclass_and_nodeclaim_round_trip_unchanged() {
    let class: EC2NodeClass = serde_yaml::from_str(&fixture("ec2nodeclass.yaml")).unwrap();
    assert_eq!(
        serde_json::to_value(&class).unwrap(),
        fixture_json("ec2nodeclass.yaml")
    );
    assert_eq!(
        class.spec.block_device_mappings[0]
            .ebs
            .as_ref()
            .unwrap()
            .volume_size_bytes(),
        Some(100 << 30)
    );

    let claim: NodeClaim = serde_yaml::from_str(&fixture("nodeclaim.yaml")).unwrap();
    assert_eq!(
        serde_json::to_value(&claim).unwrap(),
        fixture_json("nodeclaim.yaml")
    );
    let status = claim.status.as_ref().unwrap();
    assert_eq!(
        status.provider_id.as_deref(),
        Some("aws:///us-west-2a/i-0123456789abcdef0")
    );
    assert!(conditions::is_true(
        &status.conditions,
        conditions::nodeclaim::LAUNCHED
    ));
    assert!(!conditions::is_true(&status.conditions, conditions::READY));
}

#[test]
fn malformed_fields_fail_to_parse_with_the_reason() {
    let mut object = minimal_nodepool();
    common::set(&mut object, "/spec/template/spec/expireAfter", json!("30d"));
    let err = serde_json::from_value::<NodePool>(object)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("invalid duration \"30d\": unknown unit \"d\""),
        "{err}"
    );

    let mut object = minimal_nodepool();
    common::set(
        &mut object,
        "/spec/template/spec/requirements",
        json!([{"key": "kubernetes.io/arch", "operator": "Equals", "values": ["amd64"]}]),
    );
    let err = serde_json::from_value::<NodePool>(object)
        .unwrap_err()
        .to_string();
    assert!(err.contains("unknown variant `Equals`"), "{err}");
}
