//! Against a real moto server (`aws/ci/moto.sh` starts one and sets ADZE_AWS_ENDPOINT), through
//! our fault proxy. The tests are `#[ignore]`d: `cargo test` reports them as ignored, and
//! `aws/ci/moto.sh` runs them with `--include-ignored` against its server.
//! Each test uses its own cluster name and tags, so they can share one moto.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use adze_api::{EC2NodeClass, NodeClaim};
use adze_aws::fault_proxy::{Allocation, FaultProxy, Unkind};
use adze_aws::instance_profile::Profiles;
use adze_aws::nodeclass::{self, AmiParameters};
use adze_aws::{AwsProvider, Clients, Settings, StaticNodeClasses};
use adze_cloud::{CloudError, CloudProvider, UnavailableOfferings};
use aws_sdk_ec2::types::{Filter, ResourceType, Tag, TagSpecification};
use serde_json::json;

const REGION: &str = "us-east-1";

/// The moto server's address. The tests are `#[ignore]`d so that without a server they are
/// reported as ignored, not as passes; `aws/ci/moto.sh` starts one and runs them.
fn endpoint(test: &str) -> String {
    match std::env::var("ADZE_AWS_ENDPOINT") {
        Ok(e) if !e.is_empty() => e,
        _ => panic!("{test}: ADZE_AWS_ENDPOINT is unset; run aws/ci/moto.sh to test against moto"),
    }
}

struct Env {
    cluster: String,
    proxy: FaultProxy,
    clients: Clients,
    prefix: String,
    subnets: Vec<(String, String)>,
    sg: String,
    ami: String,
}

/// Tags two default-VPC subnets (us-east-1a, us-east-1b) and a new security group for
/// `cluster`, and publishes an AL2023 image id under a test SSM prefix.
async fn env(cluster: &str, moto: &str) -> Env {
    let proxy = FaultProxy::start(moto).await.unwrap();
    let clients = Clients::new(REGION, Some(&proxy.url())).await;
    let ec2 = &clients.ec2;
    let subnets: Vec<(String, String)> = ec2
        .describe_subnets()
        .filters(
            Filter::builder()
                .name("default-for-az")
                .values("true")
                .build(),
        )
        .send()
        .await
        .unwrap()
        .subnets
        .unwrap()
        .into_iter()
        .map(|s| (s.subnet_id.unwrap(), s.availability_zone.unwrap()))
        .filter(|(_, z)| z == "us-east-1a" || z == "us-east-1b")
        .collect();
    assert_eq!(subnets.len(), 2);
    let discovery = format!("adze.test/{cluster}");
    ec2.create_tags()
        .set_resources(Some(subnets.iter().map(|s| s.0.clone()).collect()))
        .tags(Tag::builder().key(&discovery).value("owned").build())
        .send()
        .await
        .unwrap();
    let vpc = ec2
        .describe_vpcs()
        .filters(Filter::builder().name("is-default").values("true").build())
        .send()
        .await
        .unwrap()
        .vpcs
        .unwrap()[0]
        .vpc_id
        .clone()
        .unwrap();
    let sg = ec2
        .create_security_group()
        .group_name(format!("nodes-{cluster}"))
        .description("adze test nodes")
        .vpc_id(vpc)
        .tag_specifications(
            TagSpecification::builder()
                .resource_type(ResourceType::SecurityGroup)
                .tags(Tag::builder().key(&discovery).value("owned").build())
                .build(),
        )
        .send()
        .await
        .unwrap()
        .group_id
        .unwrap();
    let ami = ec2
        .describe_images()
        .filters(
            Filter::builder()
                .name("architecture")
                .values("x86_64")
                .build(),
        )
        .send()
        .await
        .unwrap()
        .images
        .unwrap()[0]
        .image_id
        .clone()
        .unwrap();
    let prefix = format!("/adze-test/{cluster}");
    let params = AmiParameters {
        prefix: prefix.clone(),
        kubernetes_version: "1.30".into(),
    };
    clients
        .ssm
        .put_parameter()
        .name(
            params
                .path(
                    adze_api::ec2nodeclass::AmiFamily::AL2023,
                    "x86_64",
                    "latest",
                )
                .unwrap(),
        )
        .value(&ami)
        .r#type(aws_sdk_ssm::types::ParameterType::String)
        .send()
        .await
        .unwrap();
    // The node role the class names; IAM names are account-wide, so tests sharing one moto
    // find it already there.
    let created = clients
        .iam
        .create_role()
        .role_name("nodes")
        .assume_role_policy_document(
            r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"ec2.amazonaws.com"},"Action":"sts:AssumeRole"}]}"#,
        )
        .send()
        .await;
    if let Err(err) = created {
        let exists = err
            .as_service_error()
            .is_some_and(|s| s.is_entity_already_exists_exception());
        assert!(exists, "CreateRole: {err:?}");
    }
    Env {
        cluster: cluster.into(),
        proxy,
        clients,
        prefix,
        subnets,
        sg,
        ami,
    }
}

impl Env {
    fn class(&self) -> EC2NodeClass {
        let tag = format!("adze.test/{}", self.cluster);
        serde_json::from_value(json!({
            "apiVersion": "aws.adze.sh/v1", "kind": "EC2NodeClass",
            "metadata": {"name": "default"},
            "spec": {
                "subnetSelectorTerms": [{"tags": {tag.clone(): "owned"}}],
                "securityGroupSelectorTerms": [{"tags": {tag: "*"}}],
                "amiSelectorTerms": [{"alias": "al2023@latest"}],
                "role": "nodes",
                "userData": "#!/bin/bash\necho custom",
                "tags": {"team": "adze"},
            }
        }))
        .unwrap()
    }

    /// Resolves `spec` as class `name` against moto, as the EC2NodeClass controller does.
    async fn resolve(
        &self,
        name: &str,
        spec: &adze_api::ec2nodeclass::EC2NodeClassSpec,
    ) -> adze_api::ec2nodeclass::EC2NodeClassStatus {
        let params = AmiParameters {
            prefix: self.prefix.clone(),
            kubernetes_version: "1.30".into(),
        };
        nodeclass::resolve(
            &self.clients.ec2,
            &self.clients.ssm,
            &self.profiles(),
            &params,
            name,
            spec,
            &nodeclass::SecurityGroupCache::uncached(),
        )
        .await
        .unwrap()
    }

    /// This cluster's launch templates in moto (Adze names them `adze-<cluster>-…`).
    async fn launch_templates(&self) -> Vec<aws_sdk_ec2::types::LaunchTemplate> {
        launch_templates_of(&self.clients, &self.cluster).await
    }

    /// What the first version of launch template `t` launches.
    async fn template_data(
        &self,
        t: &aws_sdk_ec2::types::LaunchTemplate,
    ) -> aws_sdk_ec2::types::ResponseLaunchTemplateData {
        self.clients
            .ec2
            .describe_launch_template_versions()
            .launch_template_id(t.launch_template_id.clone().unwrap())
            .send()
            .await
            .unwrap()
            .launch_template_versions
            .unwrap()[0]
            .launch_template_data
            .clone()
            .unwrap()
    }

    fn profiles(&self) -> Profiles {
        Profiles {
            iam: self.clients.iam.clone(),
            cluster: self.cluster.clone(),
            region: REGION.into(),
        }
    }

    fn provider(&self, class: EC2NodeClass) -> (AwsProvider, UnavailableOfferings) {
        let unavailable = UnavailableOfferings::new(Duration::from_secs(180));
        let classes = StaticNodeClasses(BTreeMap::from([("default".to_string(), class)]));
        let provider = AwsProvider::new(
            self.clients.clone(),
            Settings {
                region: REGION.into(),
                cluster_name: self.cluster.clone(),
                cluster_endpoint: "https://10.0.0.1:6443".into(),
                cluster_ca: "Q0EK".into(),
                service_cidr: "10.100.0.0/16".into(),
                ami_parameters: AmiParameters {
                    prefix: self.prefix.clone(),
                    kubernetes_version: "1.30".into(),
                },
                catalog_ttl: Duration::from_secs(300),
                sweep_interval: Settings::DEFAULT_SWEEP_INTERVAL,
            },
            Arc::new(classes),
            unavailable.clone(),
        );
        (provider, unavailable)
    }
}

fn claim(name: &str, types: &[&str], capacity_type: &str) -> NodeClaim {
    serde_json::from_value(json!({
        "apiVersion": "adze.sh/v1", "kind": "NodeClaim",
        "metadata": {"name": name, "labels": {"adze.sh/nodepool": "general", "team": "web"}},
        "spec": {
            "nodeClassRef": {"group": "aws.adze.sh", "kind": "EC2NodeClass", "name": "default"},
            "requirements": [
                {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": types},
                {"key": "adze.sh/capacity-type", "operator": "In", "values": [capacity_type]},
            ],
            "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
            "taints": [{"key": "dedicated", "value": "web", "effect": "NoSchedule"}],
        }
    }))
    .unwrap()
}

fn with_provider_id(mut c: NodeClaim, provider_id: &str) -> NodeClaim {
    c.status = Some(adze_api::NodeClaimStatus {
        provider_id: Some(provider_id.into()),
        ..Default::default()
    });
    c
}

async fn instance(clients: &Clients, id: &str) -> aws_sdk_ec2::types::Instance {
    clients
        .ec2
        .describe_instances()
        .instance_ids(id)
        .send()
        .await
        .unwrap()
        .reservations
        .unwrap()[0]
        .instances
        .clone()
        .unwrap()[0]
        .clone()
}

fn tags_of(i: &aws_sdk_ec2::types::Instance) -> BTreeMap<String, String> {
    i.tags
        .clone()
        .unwrap_or_default()
        .into_iter()
        .map(|t| (t.key.unwrap(), t.value.unwrap()))
        .collect()
}

#[tokio::test]
#[ignore = "needs a moto server: run aws/ci/moto.sh"]
async fn class_resolves_tagged_subnets_groups_and_family_image_through_ssm_prefix() {
    let moto = endpoint("discovery");
    let e = env("discovery", &moto).await;
    let class = e.class();
    let status = e.resolve("default", &class.spec).await;
    let mut zones: Vec<&str> = status.subnets.iter().map(|s| s.zone.as_str()).collect();
    zones.sort();
    assert_eq!(zones, ["us-east-1a", "us-east-1b"]);
    assert_eq!(
        status
            .security_groups
            .iter()
            .map(|g| g.id.as_str())
            .collect::<Vec<_>>(),
        [e.sg.as_str()]
    );
    assert_eq!(status.amis.len(), 1);
    assert_eq!(status.amis[0].id, e.ami);
    assert_eq!(status.amis[0].requirements[0].values, ["amd64"]);
    assert!(adze_api::conditions::is_true(&status.conditions, "Ready"));

    // By name and by id resolve the same group; an unmatched subnet tag leaves the class not Ready.
    let mut spec = class.spec.clone();
    spec.security_group_selector_terms = vec![
        serde_json::from_value(json!({"name": format!("nodes-{}", e.cluster)})).unwrap(),
        serde_json::from_value(json!({"id": e.sg})).unwrap(),
    ];
    spec.subnet_selector_terms =
        vec![serde_json::from_value(json!({"tags": {"adze.test/nobody": "owned"}})).unwrap()];
    let status = e.resolve("default", &spec).await;
    assert_eq!(status.security_groups.len(), 1);
    let ready = adze_api::conditions::find(&status.conditions, "Ready").unwrap();
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_str()),
        ("False", "SubnetsNotFound")
    );
}

#[tokio::test]
#[ignore = "needs a moto server: run aws/ci/moto.sh"]
async fn al2_and_windows_aliases_resolve_their_published_parameters() {
    use adze_api::ec2nodeclass::AmiFamily;
    let moto = endpoint("families");
    let e = env("families", &moto).await;
    let params = AmiParameters {
        prefix: e.prefix.clone(),
        kubernetes_version: "1.30".into(),
    };
    for family in [AmiFamily::AL2, AmiFamily::Windows2022] {
        e.clients
            .ssm
            .put_parameter()
            .name(params.path(family, "x86_64", "latest").unwrap())
            .value(&e.ami)
            .r#type(aws_sdk_ssm::types::ParameterType::String)
            .send()
            .await
            .unwrap();
    }
    let mut spec = e.class().spec;
    spec.ami_selector_terms[0].alias = Some("al2@latest".into());
    let al2 = e.resolve("al2", &spec).await;
    assert_eq!(al2.amis.len(), 1, "{:?}", al2.amis);
    assert_eq!(al2.amis[0].id, e.ami);
    assert!(
        al2.amis[0]
            .requirements
            .iter()
            .all(|r| r.key != "kubernetes.io/os")
    );
    spec.ami_selector_terms[0].alias = Some("windows2022@latest".into());
    let win = e.resolve("windows", &spec).await;
    assert_eq!(win.amis.len(), 1, "{:?}", win.amis);
    let reqs: Vec<(&str, &[String])> = win.amis[0]
        .requirements
        .iter()
        .map(|r| (r.key.as_str(), r.values.as_slice()))
        .collect();
    assert!(reqs.contains(&("kubernetes.io/arch", &["amd64".to_string()][..])));
    assert!(reqs.contains(&("kubernetes.io/os", &["windows".to_string()][..])));
    assert!(reqs.contains(&(
        "node.kubernetes.io/windows-build",
        &["10.0.20348".to_string()][..]
    )));
    // Windows Server 2025 has no image on 1.30: no image, and the class says why.
    spec.ami_selector_terms[0].alias = Some("windows2025@latest".into());
    let w25 = e.resolve("w25", &spec).await;
    assert!(w25.amis.is_empty());
    let ready = adze_api::conditions::find(&w25.conditions, "Ready").unwrap();
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_str()),
        ("False", "ValidationFailed")
    );
    assert!(
        ready.message.contains("spec.amiSelectorTerms[0].alias: EKS publishes Windows Server 2025 images from Kubernetes 1.35"),
        "{}",
        ready.message
    );
}

#[tokio::test]
#[ignore = "needs a moto server: run aws/ci/moto.sh"]
async fn instance_types_come_from_ec2_with_offerings_per_zone_and_eni_max_pods() {
    let moto = endpoint("instance_types");
    let e = env("types", &moto).await;
    let (provider, _) = e.provider(e.class());
    provider.refresh().await.unwrap();
    let types = provider.instance_types();
    assert!(
        types.len() > 500,
        "moto offers ~1400 types, got {}",
        types.len()
    );
    let m5 = types.iter().find(|t| t.name == "m5.large").unwrap();
    assert_eq!(m5.capacity.pods, 29);
    assert_eq!(m5.label("kubernetes.io/arch"), Some("amd64"));
    let od = m5
        .offerings
        .iter()
        .find(|o| o.capacity_type == "on-demand")
        .unwrap();
    assert_eq!(
        od.price, 0.096,
        "embedded catalog price when the Pricing API is unreachable"
    );
    let zones: std::collections::BTreeSet<&str> =
        m5.offerings.iter().map(|o| o.zone.as_str()).collect();
    assert!(
        zones.contains("us-east-1a") && zones.len() >= 3,
        "{zones:?}"
    );
    assert!(m5.offerings.iter().any(|o| o.capacity_type == "spot"));
    // DescribeAvailabilityZones: every offering knows its zone's ID.
    let a = m5
        .offerings
        .iter()
        .find(|o| o.zone == "us-east-1a")
        .unwrap();
    assert!(
        a.zone_id
            .as_deref()
            .is_some_and(|id| id.starts_with("use1-az")),
        "{:?}",
        a.zone_id
    );
    assert!(
        m5.offerings.iter().all(|o| o.zone_id.is_some()),
        "{:?}",
        m5.offerings
    );
}

#[tokio::test]
#[ignore = "needs a moto server: run aws/ci/moto.sh"]
async fn nodeclaim_launches_with_tags_imds_v2_and_merged_user_data() {
    let moto = endpoint("launch");
    let e = env("launch", &moto).await;
    let (provider, _) = e.provider(e.class());
    let c = claim("launch-1", &["m5.large", "c5.large"], "on-demand");
    let got = provider.create(&c).await.unwrap();
    assert_eq!(got.instance_type, "c5.large", "lowest price on demand");
    assert_eq!(got.capacity_type, "on-demand");
    assert!(
        got.provider_id
            .starts_with(&format!("aws:///{}/i-", got.zone)),
        "{}",
        got.provider_id
    );
    assert_eq!(got.capacity.get("pods").map(String::as_str), Some("29"));
    // The node's labels as the provisioner derives them from the launched instance carry its
    // zone's ID (DescribeAvailabilityZones) beside the zone.
    let node_labels = adze_cloud::instance_labels(&got, &provider.instance_types());
    assert_eq!(
        node_labels.get("topology.kubernetes.io/zone"),
        Some(&got.zone)
    );
    assert!(
        node_labels
            .get("topology.k8s.aws/zone-id")
            .is_some_and(|id| id.starts_with("use1-az")),
        "{node_labels:?}"
    );
    let id = adze_aws::interruption::instance_id_of(&got.provider_id).unwrap();
    let i = instance(&e.clients, id).await;
    let tags = tags_of(&i);
    assert_eq!(
        tags.get("adze.sh/nodeclaim").map(String::as_str),
        Some("launch-1")
    );
    assert_eq!(
        tags.get("adze.sh/nodepool").map(String::as_str),
        Some("general")
    );
    assert_eq!(
        tags.get("kubernetes.io/cluster/launch").map(String::as_str),
        Some("owned")
    );
    assert_eq!(tags.get("team").map(String::as_str), Some("adze"));
    assert_eq!(i.image_id.as_deref(), Some(e.ami.as_str()));
    // The tags deploy/aws/adze.yaml's policy requires on each creating request and checks
    // before TerminateInstances/DeleteLaunchTemplate (tests/iam_policy/rules.rs OWNERSHIP):
    // the cluster tag, and Adze's own, which EKS managed node groups and eksctl nodes lack.
    let class_tag = adze_api::ec2nodeclass::EC2NODECLASS_TAG;
    assert_eq!(tags.get(class_tag).map(String::as_str), Some("default"));

    let ours = e.launch_templates().await;
    assert_eq!(ours.len(), 1, "one template for one (image, user data)");
    let v = e.template_data(&ours[0]).await;
    let template_tags: BTreeMap<String, String> = ours[0]
        .tags
        .clone()
        .unwrap_or_default()
        .into_iter()
        .filter_map(|t| Some((t.key?, t.value?)))
        .collect();
    for (k, want) in [
        ("kubernetes.io/cluster/launch", "owned"),
        (class_tag, "default"),
    ] {
        assert_eq!(
            template_tags.get(k).map(String::as_str),
            Some(want),
            "{template_tags:?}"
        );
    }
    // What the template tags at launch (volumes, interfaces, spot requests) carries them too.
    let specs = v.tag_specifications.clone().unwrap_or_default();
    let kinds: Vec<&str> = specs
        .iter()
        .filter_map(|s| s.resource_type.as_ref().map(|r| r.as_str()))
        .collect();
    // (moto also lists the template's own tags here, as a `launch-template` entry.)
    for kind in ["volume", "network-interface", "spot-instances-request"] {
        assert!(
            kinds.contains(&kind),
            "{kind} not tagged at launch: {specs:?}"
        );
    }
    for spec in &specs {
        let keys: BTreeMap<&str, &str> = spec
            .tags
            .iter()
            .flatten()
            .filter_map(|t| Some((t.key.as_deref()?, t.value.as_deref()?)))
            .collect();
        assert_eq!(
            keys.get("kubernetes.io/cluster/launch"),
            Some(&"owned"),
            "{spec:?}"
        );
        assert_eq!(keys.get(class_tag), Some(&"default"), "{spec:?}");
    }
    assert_eq!(
        v.iam_instance_profile.and_then(|p| p.name),
        Some(e.profiles().name_for("default")),
        "launches with the instance profile Adze made for the class's role"
    );
    let md = v.metadata_options.unwrap();
    assert_eq!(md.http_tokens.unwrap().as_str(), "required");
    assert_eq!(md.http_put_response_hop_limit, Some(1));
    use base64::Engine;
    let ud = String::from_utf8(
        base64::engine::general_purpose::STANDARD
            .decode(v.user_data.unwrap())
            .unwrap(),
    )
    .unwrap();
    assert!(
        ud.contains("echo custom") && ud.contains("kind: NodeConfig") && ud.contains("maxPods: 29"),
        "{ud}"
    );
    assert!(ud.contains("--register-with-taints=dedicated=web:NoSchedule"));
    assert!(
        ud.contains("adze.sh/nodepool=general") && !ud.contains("launch-1"),
        "no per-claim labels in shared templates"
    );

    // A second claim of the same pool and shape reuses the template.
    provider
        .create(&claim("launch-2", &["m5.large", "c5.large"], "on-demand"))
        .await
        .unwrap();
    assert_eq!(e.launch_templates().await.len(), 1);
}

#[tokio::test]
#[ignore = "needs a moto server: run aws/ci/moto.sh"]
async fn capacity_error_on_the_cheapest_pool_falls_back_to_the_next() {
    let moto = endpoint("ice");
    let e = env("ice", &moto).await;
    let (provider, unavailable) = e.provider(e.class());
    for (_, zone) in &e.subnets {
        e.proxy.fail("c5.large", zone, "on-demand");
    }
    let got = provider
        .create(&claim("ice-1", &["m5.large", "c5.large"], "on-demand"))
        .await
        .unwrap();
    assert_eq!(got.instance_type, "m5.large");
    assert_eq!(
        e.proxy
            .launched()
            .iter()
            .map(|p| p.0.as_str())
            .collect::<Vec<_>>(),
        ["m5.large"]
    );
    let marked = unavailable.apply(&provider.instance_types(), std::time::Instant::now());
    let c5 = marked.iter().find(|t| t.name == "c5.large").unwrap();
    assert!(
        c5.offerings
            .iter()
            .filter(|o| o.capacity_type == "on-demand"
                && (o.zone == "us-east-1a" || o.zone == "us-east-1b"))
            .all(|o| !o.available)
    );

    // With every allowed pool failing, the launch reports insufficient capacity.
    for (_, zone) in &e.subnets {
        e.proxy.fail("m5.large", zone, "spot");
        e.proxy.fail("c5.large", zone, "spot");
    }
    let err = provider
        .create(&claim("ice-2", &["m5.large", "c5.large"], "spot"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, CloudError::InsufficientCapacity { .. }),
        "{err}"
    );
}

#[tokio::test]
#[ignore = "needs a moto server: run aws/ci/moto.sh"]
async fn relaunch_after_a_crash_finds_the_earlier_instance_by_tag() {
    let moto = endpoint("crash");
    let e = env("crash", &moto).await;
    let c = claim("crash-1", &["m5.large"], "on-demand");
    let first = e.provider(e.class()).0.create(&c).await.unwrap();
    // The process "crashed" before writing status; a fresh provider launches the same claim.
    let (restarted, _) = e.provider(e.class());
    let second = restarted.create(&c).await.unwrap();
    assert_eq!(first.provider_id, second.provider_id);
    assert_eq!(e.proxy.fleet_calls(), 1, "no second CreateFleet");
    let ours = restarted.list().await.unwrap();
    assert_eq!(ours.len(), 1);
}

#[tokio::test]
#[ignore = "needs a moto server: run aws/ci/moto.sh"]
async fn garbage_collection_lists_a_stray_tagged_instance_and_delete_terminates_it() {
    let moto = endpoint("gc");
    let e = env("gc", &moto).await;
    let (provider, _) = e.provider(e.class());
    let stray = e
        .clients
        .ec2
        .run_instances()
        .image_id(&e.ami)
        .instance_type(aws_sdk_ec2::types::InstanceType::M5Large)
        .subnet_id(&e.subnets[0].0)
        .min_count(1)
        .max_count(1)
        .tag_specifications(
            TagSpecification::builder()
                .resource_type(ResourceType::Instance)
                .tags(
                    Tag::builder()
                        .key("kubernetes.io/cluster/gc")
                        .value("owned")
                        .build(),
                )
                .tags(
                    Tag::builder()
                        .key("adze.sh/nodeclaim")
                        .value("stray-1")
                        .build(),
                )
                .build(),
        )
        .send()
        .await
        .unwrap()
        .instances
        .unwrap()[0]
        .instance_id
        .clone()
        .unwrap();
    let listed = provider.list().await.unwrap();
    assert_eq!(listed.len(), 1);
    assert!(listed[0].provider_id.ends_with(&stray));
    let pid = listed[0].provider_id.clone();
    assert!(provider.get(&pid).await.unwrap().is_some());
    // GC deletes through a claim-shaped handle carrying only the providerID.
    provider
        .delete(&with_provider_id(
            claim("stray-1", &["m5.large"], "on-demand"),
            &pid,
        ))
        .await
        .unwrap();
    assert!(provider.get(&pid).await.unwrap().is_none());
    assert!(provider.list().await.unwrap().is_empty());
    let state = instance(&e.clients, &stray)
        .await
        .state
        .unwrap()
        .name
        .unwrap();
    assert!(
        matches!(state.as_str(), "terminated" | "shutting-down"),
        "{state}"
    );
}

#[tokio::test]
#[ignore = "needs a moto server: run aws/ci/moto.sh"]
async fn repair_reboots_the_instance_in_place_and_a_refused_reboot_fails_leaving_it_to_be_replaced()
{
    let moto = endpoint("reboot");
    let e = env("reboot", &moto).await;
    let (provider, _) = e.provider(e.class());
    let c = claim("reboot-1", &["m5.large"], "on-demand");
    let launched = provider.create(&c).await.unwrap();
    let pid = launched.provider_id.clone();
    provider.reboot(&pid).await.unwrap();
    assert_eq!(e.proxy.calls("RebootInstances"), 1);
    // Rebooted in place: the same instance, still running, nothing else launched.
    let running = in_moto(&moto, "reboot-1").await;
    assert_eq!(running.len(), 1);
    assert!(pid.ends_with(running[0].instance_id.as_deref().unwrap()));
    assert_eq!(
        provider.get(&pid).await.unwrap().map(|i| i.provider_id),
        Some(pid.clone())
    );

    // EC2 refuses (a policy without ec2:RebootInstances): an error naming the call and EC2's
    // code, which repair reads as "replace now"; the instance is left as it was, and the
    // replacement's delete terminates it (no instance leaks).
    e.proxy
        .refuse_action("RebootInstances", "UnauthorizedOperation");
    let err = provider.reboot(&pid).await.unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("RebootInstances") && text.contains("UnauthorizedOperation"),
        "{text}"
    );
    assert_eq!(in_moto(&moto, "reboot-1").await.len(), 1);
    provider.delete(&with_provider_id(c, &pid)).await.unwrap();
    assert!(provider.get(&pid).await.unwrap().is_none());
    assert!(in_moto(&moto, "reboot-1").await.is_empty());

    // A providerID that is not EC2's is refused without asking EC2.
    let calls = e.proxy.calls("RebootInstances");
    let err = provider
        .reboot("kind://docker/kind/node-1")
        .await
        .unwrap_err();
    assert!(err.to_string().contains("not an EC2 instance"), "{err}");
    assert_eq!(e.proxy.calls("RebootInstances"), calls);
}

#[tokio::test]
#[ignore = "needs a moto server: run aws/ci/moto.sh"]
async fn drift_is_seen_when_the_image_changes() {
    let moto = endpoint("drift");
    let e = env("drift", &moto).await;
    let (provider, _) = e.provider(e.class());
    let c = claim("drift-1", &["m5.large"], "on-demand");
    let got = provider.create(&c).await.unwrap();
    let c = with_provider_id(c, &got.provider_id);
    assert!(!provider.is_drifted(&c).await.unwrap());

    // A static field of the class (user data) changing is not the provider's call: the
    // provisioner compares the NodeClaim's `adze.sh/ec2nodeclass-hash` stamp.
    let mut changed = e.class();
    changed.spec.user_data = Some("#!/bin/sh\necho changed\n".into());
    assert!(!e.provider(changed).0.is_drifted(&c).await.unwrap());

    // Same spec, but the family's SSM parameter now names a newer image.
    let other = e
        .clients
        .ec2
        .describe_images()
        .filters(
            Filter::builder()
                .name("architecture")
                .values("x86_64")
                .build(),
        )
        .send()
        .await
        .unwrap()
        .images
        .unwrap()
        .into_iter()
        .filter_map(|i| i.image_id)
        .find(|id| *id != e.ami)
        .unwrap();
    let params = AmiParameters {
        prefix: e.prefix.clone(),
        kubernetes_version: "1.30".into(),
    };
    e.clients
        .ssm
        .put_parameter()
        .name(
            params
                .path(
                    adze_api::ec2nodeclass::AmiFamily::AL2023,
                    "x86_64",
                    "latest",
                )
                .unwrap(),
        )
        .value(other)
        .overwrite(true)
        .r#type(aws_sdk_ssm::types::ParameterType::String)
        .send()
        .await
        .unwrap();
    assert!(provider.is_drifted(&c).await.unwrap());
}

#[tokio::test]
#[ignore = "needs a moto server: run aws/ci/moto.sh"]
async fn interruption_queue_yields_notices_and_drops_malformed_messages() {
    let moto = endpoint("sqs");
    let clients = Clients::new(REGION, Some(&moto)).await;
    let url = clients
        .sqs
        .create_queue()
        .queue_name("adze-interruptions-test")
        .send()
        .await
        .unwrap()
        .queue_url
        .unwrap();
    let spot = r#"{"version":"0","id":"1","detail-type":"EC2 Spot Instance Interruption Warning","source":"aws.ec2","account":"123456789012","time":"2026-11-22T23:00:00Z","region":"us-east-1","resources":[],"detail":{"instance-id":"i-0123456789abcdef0","instance-action":"terminate"}}"#;
    // The same event from another account and from another region: dropped, counted apart.
    let other_account = spot.replace("123456789012", "210987654321");
    let other_region = spot.replace(r#""region":"us-east-1""#, r#""region":"eu-west-1""#);
    for body in [spot, "{not json", &other_account, &other_region] {
        clients
            .sqs
            .send_message()
            .queue_url(&url)
            .message_body(body)
            .send()
            .await
            .unwrap();
    }
    let mut queue =
        adze_aws::interruption::Queue::new(clients.sqs.clone(), url.clone(), REGION).unwrap();
    assert_eq!(
        queue.origin.account, "123456789012",
        "moto's account, from {url}"
    );
    queue.wait = Duration::from_secs(1);
    let mut notices = Vec::new();
    let count = |c: &std::sync::atomic::AtomicU64| c.load(std::sync::atomic::Ordering::Relaxed);
    for _ in 0..8 {
        for r in queue.receive().await.unwrap() {
            notices.push(r.notice.clone().unwrap());
            queue.delete(&r.receipt_handle).await.unwrap();
        }
        if notices.len() == 1
            && count(&queue.stats.malformed) == 1
            && count(&queue.stats.foreign) == 2
        {
            break;
        }
    }
    assert_eq!(count(&queue.stats.foreign), 2);
    assert_eq!(notices.len(), 1);
    assert_eq!(notices[0].instance_ids, ["i-0123456789abcdef0"]);
    assert_eq!(notices[0].deadline.as_deref(), Some("2026-11-22T23:02:00Z"));
    assert_eq!(
        queue
            .stats
            .malformed
            .load(std::sync::atomic::Ordering::Relaxed),
        1
    );
    let left = clients
        .sqs
        .get_queue_attributes()
        .queue_url(&url)
        .attribute_names(aws_sdk_sqs::types::QueueAttributeName::ApproximateNumberOfMessages)
        .send()
        .await
        .unwrap()
        .attributes
        .unwrap();
    assert_eq!(
        left.get(&aws_sdk_sqs::types::QueueAttributeName::ApproximateNumberOfMessages)
            .map(String::as_str),
        Some("0")
    );
}

/// The launch templates of `cluster` in moto, selected by name on the server: moto answers
/// an unfiltered DescribeLaunchTemplates with its first 15 templates and no NextToken, and the
/// tests sharing one server make more than that.
async fn launch_templates_of(
    clients: &Clients,
    cluster: &str,
) -> Vec<aws_sdk_ec2::types::LaunchTemplate> {
    let prefix = format!("adze-{cluster}-");
    clients
        .ec2
        .describe_launch_templates()
        .filters(
            Filter::builder()
                .name("launch-template-name")
                .values(format!("{prefix}*"))
                .build(),
        )
        .max_results(200)
        .send()
        .await
        .unwrap()
        .launch_templates
        .unwrap_or_default()
        .into_iter()
        .filter(|t| {
            t.launch_template_name
                .as_deref()
                .is_some_and(|n| n.starts_with(&prefix))
        })
        .collect()
}

/// Names of the launch templates of `cluster` in moto.
async fn template_names(clients: &Clients, cluster: &str) -> Vec<String> {
    let mut names: Vec<String> = launch_templates_of(clients, cluster)
        .await
        .into_iter()
        .filter_map(|t| t.launch_template_name)
        .collect();
    names.sort();
    names
}

#[tokio::test]
#[ignore = "needs a moto server: run aws/ci/moto.sh"]
async fn launch_templates_of_an_old_class_spec_or_image_or_a_deleted_class_are_cleaned_up() {
    let moto = endpoint("ltclean");
    let e = env("ltclean", &moto).await;
    let old = e.class();
    e.provider(old.clone())
        .0
        .create(&claim("ltclean-1", &["m5.large"], "on-demand"))
        .await
        .unwrap();
    let first = template_names(&e.clients, "ltclean").await;
    assert_eq!(first.len(), 1);
    // The class is edited: the next launch makes a second template.
    let mut edited = e.class();
    edited.spec.tags.insert("cost-center".into(), "42".into());
    let (provider, _) = e.provider(edited.clone());
    provider
        .create(&claim("ltclean-2", &["m5.large"], "on-demand"))
        .await
        .unwrap();
    let both = template_names(&e.clients, "ltclean").await;
    assert_eq!(both.len(), 2);
    let current: Vec<String> = both
        .iter()
        .filter(|n| !first.contains(n))
        .cloned()
        .collect();

    let deleted = provider
        .cleanup_templates(std::slice::from_ref(&edited))
        .await
        .unwrap();
    assert_eq!(deleted, first, "the old spec's template goes");
    assert_eq!(template_names(&e.clients, "ltclean").await, current);
    assert!(
        provider
            .cleanup_templates(std::slice::from_ref(&edited))
            .await
            .unwrap()
            .is_empty(),
        "the template the class launches with now stays"
    );

    // A new image release: the class now resolves to another image.
    let mut released = edited.clone();
    released.status = Some(adze_api::ec2nodeclass::EC2NodeClassStatus {
        amis: vec![
            serde_json::from_value(json!({"id": "ami-0newrelease", "name": "al2023-next"}))
                .unwrap(),
        ],
        ..Default::default()
    });
    assert_eq!(
        provider.cleanup_templates(&[released]).await.unwrap(),
        current,
        "a template of an image the class no longer resolves goes"
    );
    // Launching again recreates the template (the cache forgot it).
    provider
        .create(&claim("ltclean-3", &["m5.large"], "on-demand"))
        .await
        .unwrap();
    assert_eq!(template_names(&e.clients, "ltclean").await, current);
    assert_eq!(
        provider.cleanup_templates(&[]).await.unwrap(),
        current,
        "every template of a deleted class goes"
    );
    assert!(template_names(&e.clients, "ltclean").await.is_empty());
}

#[tokio::test]
#[ignore = "needs a moto server: run aws/ci/moto.sh"]
async fn instance_profile_is_made_for_the_role_follows_a_role_change_and_goes_with_its_class() {
    let moto = endpoint("instance_profile");
    let e = env("profiles", &moto).await;
    let profiles = e.profiles();
    let roles_of = |name: String| {
        let iam = e.clients.iam.clone();
        async move {
            iam.get_instance_profile()
                .instance_profile_name(name)
                .send()
                .await
                .map(|o| {
                    o.instance_profile
                        .unwrap()
                        .roles
                        .into_iter()
                        .map(|r| r.role_name)
                        .collect::<Vec<_>>()
                })
        }
    };
    let name = profiles.ensure("default", "nodes").await.unwrap();
    assert_eq!(name, profiles.name_for("default"));
    assert_eq!(roles_of(name.clone()).await.unwrap(), ["nodes"]);
    // Again (every resolve does this): same profile, still one role.
    assert_eq!(profiles.ensure("default", "nodes").await.unwrap(), name);
    assert_eq!(profiles.list().await.unwrap(), vec![name.clone()]);

    // The class now names another role, by ARN: the profile holds that one only.
    e.clients
        .iam
        .create_role()
        .role_name("nodes-v2")
        .assume_role_policy_document("{}")
        .send()
        .await
        .unwrap();
    profiles
        .ensure("default", "arn:aws:iam::123456789012:role/nodes-v2")
        .await
        .unwrap();
    assert_eq!(roles_of(name.clone()).await.unwrap(), ["nodes-v2"]);

    // A role IAM does not know: an error naming the call, and resolve keeps the class not Ready.
    let err = profiles.ensure("other", "no-such-role").await.unwrap_err();
    assert!(
        err.to_string().contains("AddRoleToInstanceProfile"),
        "{err}"
    );
    let mut spec = e.class().spec;
    spec.role = Some("no-such-role".into());
    let status = e.resolve("broken", &spec).await;
    assert_eq!(status.instance_profile, None);
    let ready = adze_api::conditions::find(&status.conditions, "Ready").unwrap();
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_str()),
        ("False", "InstanceProfileNotReady")
    );

    // Garbage collection keeps what a class (or a NodeClaim's class) needs, deletes the rest.
    let kept = BTreeSet::from(["default".to_string()]);
    let mut gone = profiles.collect_garbage(&kept).await.unwrap();
    gone.sort();
    let mut expected = vec![profiles.name_for("other"), profiles.name_for("broken")];
    expected.sort();
    assert_eq!(gone, expected);
    assert_eq!(profiles.list().await.unwrap(), vec![name.clone()]);
    assert_eq!(
        profiles.collect_garbage(&BTreeSet::new()).await.unwrap(),
        vec![name.clone()]
    );
    assert!(roles_of(name).await.is_err(), "deleted");

    // Another cluster's profiles are never ours to list or delete.
    let neighbour = Profiles {
        cluster: "profiles-neighbour".into(),
        ..profiles.clone()
    };
    let theirs = neighbour.ensure("default", "nodes").await.unwrap();
    assert!(profiles.list().await.unwrap().is_empty());
    assert!(
        profiles
            .collect_garbage(&BTreeSet::new())
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(roles_of(theirs).await.unwrap(), ["nodes"]);
}

#[tokio::test]
#[ignore = "needs a moto server: run aws/ci/moto.sh"]
async fn on_demand_prices_come_from_the_price_list_api_when_it_answers() {
    let moto = endpoint("pricing");
    let e = env("pricing", &moto).await;
    // Without a price list the API refuses; callers fall back to the catalog.
    assert!(
        adze_aws::pricing::fetch(&e.clients.pricing, REGION, adze_aws::pricing::LINUX)
            .await
            .is_err()
    );
    // 150 products: two real types and made-up ones, so the answer spans two pages.
    let mut table = BTreeMap::from([
        ("c5.large".to_string(), 0.0851),
        ("m5.large".to_string(), 0.1234),
    ]);
    for i in 0..148 {
        table.insert(format!("zz{i}.large"), 1.0 + f64::from(i));
    }
    e.proxy.serve_prices(table);
    let prices = adze_aws::pricing::fetch(&e.clients.pricing, REGION, adze_aws::pricing::LINUX)
        .await
        .unwrap();
    assert_eq!(prices.get("m5.large"), Some(&0.1234));
    assert_eq!(prices.len(), 150);
    assert_eq!(e.proxy.price_pages(), 2, "followed NextToken");

    let (provider, _) = e.provider(e.class());
    provider.refresh().await.unwrap();
    let od = |name: &str| {
        provider
            .instance_types()
            .iter()
            .find(|t| t.name == name)
            .unwrap()
            .offerings
            .iter()
            .find(|o| o.capacity_type == "on-demand")
            .unwrap()
            .price
    };
    assert_eq!(od("m5.large"), 0.1234, "the Price List API's price");
    assert_eq!(od("c5.large"), 0.0851);
    assert_eq!(
        od("m5.xlarge"),
        0.192,
        "a type it did not price: the catalog's"
    );

    // Windows: the Price List's Windows price once it has one, asked for with the Linux
    // prices (a new provider: the first one's answers are kept for hours).
    let windows_od = |types: &[std::sync::Arc<adze_scheduling::InstanceType>], name: &str| {
        let t = types.iter().find(|t| t.name == name)?;
        adze_scheduling::node_class::as_windows(t, "10.0.20348")?
            .offerings
            .iter()
            .find(|o| o.capacity_type == "on-demand")
            .map(|o| o.price)
    };
    assert_eq!(
        windows_od(&provider.instance_types(), "m5.large"),
        Some(0.2154),
        "no Windows answer yet: the live Linux price plus the table's licence"
    );
    e.proxy.serve_windows_prices(BTreeMap::from([
        ("m5.large".to_string(), 0.2299),
        ("c5.large".to_string(), 0.1771),
    ]));
    let windows = adze_aws::pricing::fetch(&e.clients.pricing, REGION, adze_aws::pricing::WINDOWS)
        .await
        .unwrap();
    assert_eq!(windows.len(), 2, "only the Windows products");
    let (provider, _) = e.provider(e.class());
    provider.refresh().await.unwrap();
    let types = provider.instance_types();
    assert_eq!(windows_od(&types, "m5.large"), Some(0.2299));
    assert_eq!(windows_od(&types, "c5.large"), Some(0.1771));
}

/// Instances in moto itself (not through the proxy, which may hide lagging ones) tagged for
/// `claim`.
async fn in_moto(moto: &str, claim: &str) -> Vec<aws_sdk_ec2::types::Instance> {
    let direct = Clients::new(REGION, Some(moto)).await;
    direct
        .ec2
        .describe_instances()
        .filters(
            Filter::builder()
                .name("tag:adze.sh/nodeclaim")
                .values(claim)
                .build(),
        )
        .filters(
            Filter::builder()
                .name("instance-state-name")
                .values("pending")
                .values("running")
                .build(),
        )
        .send()
        .await
        .unwrap()
        .reservations
        .unwrap_or_default()
        .into_iter()
        .flat_map(|r| r.instances.unwrap_or_default())
        .collect()
}

#[tokio::test]
#[ignore = "needs a moto server: run aws/ci/moto.sh"]
async fn launch_under_a_lagging_list_and_a_fleet_that_skips_the_cheapest_pool() {
    let moto = endpoint("unkind");
    let e = env("unkind", &moto).await;
    e.proxy.set_unkind(Unkind {
        allocation: Allocation::NotCheapest,
        describe_lag: Duration::from_secs(60),
        throttle: None,
    });
    let mut c = claim(
        "unkind-1",
        &["c5.large", "m5.large", "m5.xlarge"],
        "on-demand",
    );
    c.metadata.uid = Some("0b7c-unkind-1".into());
    let (provider, _) = e.provider(e.class());
    let got = provider.create(&c).await.unwrap();
    // What the claim is told is what EC2 launched, not the cheapest option it was offered,
    // and it is known without DescribeInstances (which does not show the instance yet).
    assert_ne!(
        got.instance_type, "c5.large",
        "the fleet took another override"
    );
    let real = in_moto(&moto, "unkind-1").await;
    assert_eq!(real.len(), 1);
    let id = adze_aws::interruption::instance_id_of(&got.provider_id).unwrap();
    assert_eq!(real[0].instance_id.as_deref(), Some(id));
    assert_eq!(
        real[0].instance_type.as_ref().unwrap().as_str(),
        got.instance_type
    );
    assert_eq!(
        real[0]
            .placement
            .as_ref()
            .unwrap()
            .availability_zone
            .as_deref(),
        Some(got.zone.as_str())
    );
    let cpu = if got.instance_type == "m5.xlarge" {
        "4"
    } else {
        "2"
    };
    assert_eq!(got.capacity.get("cpu").map(String::as_str), Some(cpu));

    // A restart while the list still lags: the tag lookup finds nothing, and the repeated
    // CreateFleet (same client token) gets the first answer, not a second instance.
    let (restarted, _) = e.provider(e.class());
    assert!(
        restarted.find_by_claim("unkind-1").await.unwrap().is_none(),
        "the list should still lag"
    );
    let again = restarted.create(&c).await.unwrap();
    assert_eq!(again.provider_id, got.provider_id);
    assert_eq!(e.proxy.replayed(), 1);
    assert!(
        e.proxy.lagged_answers() >= 2,
        "{}",
        e.proxy.lagged_answers()
    );
    assert_eq!(
        in_moto(&moto, "unkind-1").await.len(),
        1,
        "no duplicate instance"
    );
}

#[tokio::test]
#[ignore = "needs a moto server: run aws/ci/moto.sh"]
async fn refused_launches_carry_ec2s_code_and_quota_errors_rule_their_pools_out() {
    let moto = endpoint("refuse");
    let e = env("refuse", &moto).await;
    let (provider, unavailable) = e.provider(e.class());
    e.proxy.refuse("t3.large", "UnauthorizedOperation");
    let err = provider
        .create(&claim("refuse-1", &["t3.large"], "on-demand"))
        .await
        .unwrap_err();
    match &err {
        CloudError::LaunchFailed { code, message } => {
            assert_eq!(code, "UnauthorizedOperation");
            assert!(message.contains("not authorized"), "{message}");
        }
        other => panic!("expected LaunchFailed, got {other}"),
    }
    assert!(
        in_moto(&moto, "refuse-1").await.is_empty(),
        "nothing launched"
    );

    // A vCPU quota is no reason to retry the same pools: they are kept out like an
    // exhausted pool, and the claim gives up with insufficient capacity.
    e.proxy.refuse("r5.large", "VcpuLimitExceeded");
    let err = provider
        .create(&claim("refuse-2", &["r5.large"], "on-demand"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, CloudError::InsufficientCapacity { .. }),
        "{err}"
    );
    let marked = unavailable.apply(&provider.instance_types(), std::time::Instant::now());
    let r5 = marked.iter().find(|t| t.name == "r5.large").unwrap();
    assert!(
        r5.offerings
            .iter()
            .filter(|o| o.capacity_type == "on-demand"
                && (o.zone == "us-east-1a" || o.zone == "us-east-1b"))
            .all(|o| !o.available)
    );
}

#[tokio::test]
#[ignore = "needs a moto server: run aws/ci/moto.sh"]
async fn throttled_ec2_calls_are_retried_and_the_launch_goes_through() {
    let moto = endpoint("throttle");
    let e = env("throttle", &moto).await;
    let (provider, _) = e.provider(e.class());
    // Warm the instance-type list first (dozens of pages) so the throttle hits the launch.
    provider
        .create(&claim("throttle-0", &["m5.large"], "on-demand"))
        .await
        .unwrap();
    e.proxy.set_unkind(Unkind {
        throttle: Some((1.0, 1.0)),
        ..Default::default()
    });
    let got = provider
        .create(&claim("throttle-1", &["m5.large"], "on-demand"))
        .await
        .unwrap();
    assert_eq!(got.instance_type, "m5.large");
    assert!(e.proxy.throttled() > 0, "the throttle never engaged");
    assert_eq!(in_moto(&moto, "throttle-1").await.len(), 1);
}

#[tokio::test]
#[ignore = "needs a moto server: run aws/ci/moto.sh"]
async fn accelerated_types_are_described_and_a_gpu_claim_boots_the_nvidia_image_with_the_classs_kubelet()
 {
    let moto = endpoint("accelerators");
    let e = env("accel", &moto).await;
    // A second x86_64 image stands in for the NVIDIA build of the family image.
    let images = e
        .clients
        .ec2
        .describe_images()
        .filters(
            Filter::builder()
                .name("architecture")
                .values("x86_64")
                .build(),
        )
        .send()
        .await
        .unwrap()
        .images
        .unwrap();
    let nvidia_ami = images
        .iter()
        .filter_map(|i| i.image_id.clone())
        .find(|id| id != &e.ami)
        .unwrap();
    let params = AmiParameters {
        prefix: e.prefix.clone(),
        kubernetes_version: "1.30".into(),
    };
    let path = params
        .variant_path(
            adze_api::ec2nodeclass::AmiFamily::AL2023,
            "x86_64",
            nodeclass::ImageVariant::Nvidia,
            "latest",
        )
        .unwrap();
    e.clients
        .ssm
        .put_parameter()
        .name(path)
        .value(&nvidia_ami)
        .r#type(aws_sdk_ssm::types::ParameterType::String)
        .send()
        .await
        .unwrap();
    let mut class = e.class();
    class.spec.kubelet = Some(
        serde_json::from_value(json!({
            "maxPods": 20, "kubeReserved": {"cpu": "300m"}, "clusterDNS": ["10.100.0.10"],
            "evictionHard": {"memory.available": "500Mi"},
        }))
        .unwrap(),
    );
    class.spec.associate_public_ip_address = Some(false);
    let (provider, _) = e.provider(class);

    provider.refresh().await.unwrap();
    let types = provider.instance_types();
    let get = |n: &str| types.iter().find(|t| t.name == n).unwrap().clone();
    let inf2 = get("inf2.xlarge");
    assert_eq!(inf2.capacity.get("aws.amazon.com/neuron"), 1);
    assert_eq!(inf2.capacity.get("aws.amazon.com/neuroncore"), 2);
    assert_eq!(
        inf2.label("aws.adze.sh/instance-accelerator-name"),
        Some("inferentia2")
    );
    assert_eq!(
        get("c6in.32xlarge").capacity.get("vpc.amazonaws.com/efa"),
        2
    );
    assert_eq!(get("g5.xlarge").capacity.get("nvidia.com/gpu"), 1);
    assert_eq!(
        get("m5d.large").label("aws.adze.sh/instance-local-nvme"),
        Some("75"),
        "InstanceStorageInfo.TotalSizeInGB"
    );

    let got = provider
        .create(&claim("accel-1", &["g5.xlarge", "m5.large"], "on-demand"))
        .await
        .unwrap();
    let id = adze_aws::interruption::instance_id_of(&got.provider_id).unwrap();
    let i = instance(&e.clients, id).await;
    let expected = if got.instance_type == "g5.xlarge" {
        &nvidia_ami
    } else {
        &e.ami
    };
    assert_eq!(
        i.image_id.as_deref(),
        Some(expected.as_str()),
        "{}",
        got.instance_type
    );
    assert_eq!(
        got.capacity.get("pods").map(String::as_str),
        Some("20"),
        "maxPods"
    );

    // The GPU type alone must take the NVIDIA image.
    let got = provider
        .create(&claim("accel-2", &["g5.xlarge"], "on-demand"))
        .await
        .unwrap();
    let id = adze_aws::interruption::instance_id_of(&got.provider_id).unwrap();
    assert_eq!(
        instance(&e.clients, id).await.image_id.as_deref(),
        Some(nvidia_ami.as_str())
    );

    let ours = e.launch_templates().await;
    assert!(!ours.is_empty());
    for t in ours {
        let v = e.template_data(&t).await;
        assert!(
            v.security_group_ids.unwrap_or_default().is_empty(),
            "groups move onto the interface"
        );
        let nic = &v.network_interfaces.unwrap()[0];
        assert_eq!(nic.device_index, Some(0));
        assert_eq!(nic.associate_public_ip_address, Some(false));
        assert_eq!(nic.groups.as_deref(), Some(std::slice::from_ref(&e.sg)));
        use base64::Engine;
        let ud = String::from_utf8(
            base64::engine::general_purpose::STANDARD
                .decode(v.user_data.unwrap())
                .unwrap(),
        )
        .unwrap();
        assert!(ud.contains("maxPods: 20"), "{ud}");
        assert!(ud.contains("clusterDNS: [\"10.100.0.10\"]"), "{ud}");
        assert!(ud.contains("kubeReserved: {\"cpu\": \"300m\"}"), "{ud}");
    }
}

/// Kubelet settings written as expressions reach each type's user data evaluated for that type:
/// one CreateFleet request over m5.large (3 ENIs of 10 addresses, 2 vCPUs) and m5.xlarge (4 of
/// 15, 4 vCPUs) carries one launch template per resolved configuration.
#[tokio::test]
#[ignore = "needs moto: run aws/ci/moto.sh"]
async fn kubelet_expressions_reach_each_types_user_data_evaluated() {
    let moto = endpoint("kubeletexpr");
    let e = env("kubeletexpr", &moto).await;
    let mut class = e.class();
    class.spec.kubelet = Some(
        serde_json::from_value(json!({
            "maxPods": "min(110, default_enis * (ips_per_eni - 1))",
            "kubeReserved": {"cpu": "max(60, vcpus * 30)", "memory": "11 * max_pods + 255"},
            "systemReserved": {"memory": "100Mi"},
        }))
        .unwrap(),
    );
    let (provider, _) = e.provider(class);
    provider.refresh().await.unwrap();
    let got = provider
        .create(&claim("expr-1", &["m5.large", "m5.xlarge"], "on-demand"))
        .await
        .unwrap();
    let pods = if got.instance_type == "m5.large" {
        "27"
    } else {
        "56"
    };
    assert_eq!(
        got.capacity.get("pods").map(String::as_str),
        Some(pods),
        "{}",
        got.instance_type
    );
    let mut seen = Vec::new();
    for t in e.launch_templates().await {
        let v = e.template_data(&t).await;
        use base64::Engine;
        let ud = String::from_utf8(
            base64::engine::general_purpose::STANDARD
                .decode(v.user_data.unwrap())
                .unwrap(),
        )
        .unwrap();
        assert!(!ud.contains("vcpus"), "no expression reaches a node: {ud}");
        assert!(
            ud.contains("systemReserved: {\"memory\": \"100Mi\"}"),
            "{ud}"
        );
        if ud.contains("maxPods: 27") {
            assert!(
                ud.contains("\"cpu\": \"60m\", \"memory\": \"552Mi\""),
                "{ud}"
            );
            seen.push("m5.large");
        } else if ud.contains("maxPods: 56") {
            assert!(
                ud.contains("\"cpu\": \"120m\", \"memory\": \"871Mi\""),
                "{ud}"
            );
            seen.push("m5.xlarge");
        }
    }
    seen.sort();
    assert_eq!(
        seen,
        ["m5.large", "m5.xlarge"],
        "one template per resolved configuration"
    );
}

/// A class's interfaces (an ENA primary and an EFA-only one), connection-tracking timeouts and
/// a snapshot volume's initialization rate reach the launch template EC2 launches from.
#[tokio::test]
#[ignore = "needs moto: run aws/ci/moto.sh"]
async fn interfaces_conntrack_and_volume_initialization_rate_reach_the_launch_template() {
    let moto = endpoint("hpcnet");
    let e = env("hpcnet", &moto).await;
    let zone = e.subnets[0].1.clone();
    let volume = e
        .clients
        .ec2
        .create_volume()
        .availability_zone(&zone)
        .size(20)
        .send()
        .await
        .unwrap()
        .volume_id
        .unwrap();
    let snapshot = e
        .clients
        .ec2
        .create_snapshot()
        .volume_id(volume)
        .send()
        .await
        .unwrap()
        .snapshot_id
        .unwrap();
    let mut class = e.class();
    class.spec = serde_json::from_value({
        let mut spec = serde_json::to_value(&class.spec).unwrap();
        spec["connectionTracking"] =
            json!({"tcpEstablishedTimeout": 300, "udpStreamTimeout": 120, "udpTimeout": 45});
        spec["networkInterfaces"] = json!([
            {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"},
            {"networkCardIndex": 0, "deviceIndex": 1, "interfaceType": "efa-only"},
        ]);
        spec["blockDeviceMappings"] = json!([{"deviceName": "/dev/xvda", "rootVolume": true, "ebs": {
            "volumeSize": "40Gi", "volumeType": "gp3", "snapshotID": snapshot, "volumeInitializationRate": 200,
        }}]);
        spec
    })
    .unwrap();
    class.validate().unwrap();
    let (provider, _) = e.provider(class);
    // An EFA-only interface needs a type with EFA: c5.large has none, so nothing launches.
    assert!(
        provider
            .create(&claim("hpcnet-0", &["c5.large"], "on-demand"))
            .await
            .is_err(),
        "a type without EFA is not launched with an EFA-only interface"
    );
    provider
        .create(&claim("hpcnet-1", &["c6i.32xlarge"], "on-demand"))
        .await
        .unwrap();
    let ours = e.launch_templates().await;
    assert_eq!(ours.len(), 1);
    let v = e.template_data(&ours[0]).await;
    assert!(
        v.security_group_ids.unwrap_or_default().is_empty(),
        "groups move onto the interfaces"
    );
    let nics = v.network_interfaces.unwrap();
    let shape: Vec<_> = nics
        .iter()
        .map(|n| {
            (
                n.network_card_index,
                n.device_index,
                n.interface_type.clone(),
                n.groups.clone(),
            )
        })
        .collect();
    assert_eq!(
        shape,
        [
            (
                Some(0),
                Some(0),
                Some("interface".into()),
                Some(vec![e.sg.clone()])
            ),
            (
                Some(0),
                Some(1),
                Some("efa-only".into()),
                Some(vec![e.sg.clone()])
            ),
        ]
    );
    let ct = nics[0].connection_tracking_specification.clone().unwrap();
    assert_eq!(
        (
            ct.tcp_established_timeout,
            ct.udp_stream_timeout,
            ct.udp_timeout
        ),
        (Some(300), Some(120), Some(45))
    );
    assert!(nics[1].connection_tracking_specification.is_none());
    let ebs = v.block_device_mappings.unwrap()[0].ebs.clone().unwrap();
    assert_eq!(ebs.snapshot_id.as_deref(), Some(snapshot.as_str()));
    assert_eq!(ebs.volume_initialization_rate, Some(200));
}

#[tokio::test]
#[ignore = "needs a moto server: aws/ci/moto.sh"]
async fn nitro_enclaves_reach_the_launch_template_and_types_without_them_are_not_launched() {
    let moto = endpoint("enclave");
    let e = env("enclave", &moto).await;
    let mut class = e.class();
    class.spec = serde_json::from_value({
        let mut spec = serde_json::to_value(&class.spec).unwrap();
        spec["enclaveOptions"] = json!({"enabled": true});
        spec
    })
    .unwrap();
    class.validate().unwrap();
    let (provider, _) = e.provider(class);
    // m5.large has 2 vCPUs: EC2 runs no enclave on an Intel type below 4.
    assert!(
        provider
            .create(&claim("enclave-0", &["m5.large"], "on-demand"))
            .await
            .is_err(),
        "a type that cannot run enclaves is not launched with them"
    );
    provider
        .create(&claim("enclave-1", &["m5.xlarge"], "on-demand"))
        .await
        .unwrap();
    let ours = e.launch_templates().await;
    assert_eq!(ours.len(), 1);
    let v = e.template_data(&ours[0]).await;
    assert_eq!(v.enclave_options.and_then(|o| o.enabled), Some(true));
}

/// Runs one instance (its own reservation, as a CreateFleet launch is) tagged as `cluster`'s
/// NodeClaim `claim`, in `subnet` with `sg` and `image`; answers its providerID.
pub async fn run_claim_instance(
    clients: &Clients,
    cluster: &str,
    claim: &str,
    image: &str,
    subnet: &str,
    sg: &str,
) -> String {
    let i = clients
        .ec2
        .run_instances()
        .image_id(image)
        .instance_type(aws_sdk_ec2::types::InstanceType::M5Large)
        .subnet_id(subnet)
        .security_group_ids(sg)
        .min_count(1)
        .max_count(1)
        .tag_specifications(
            TagSpecification::builder()
                .resource_type(ResourceType::Instance)
                .tags(
                    Tag::builder()
                        .key(format!("kubernetes.io/cluster/{cluster}"))
                        .value("owned")
                        .build(),
                )
                .tags(Tag::builder().key("adze.sh/nodeclaim").value(claim).build())
                .build(),
        )
        .send()
        .await
        .unwrap()
        .instances
        .unwrap()
        .remove(0);
    let zone = i.placement.unwrap().availability_zone.unwrap();
    format!("aws:///{zone}/{}", i.instance_id.unwrap())
}

#[tokio::test]
#[ignore = "needs a moto server: run aws/ci/moto.sh"]
async fn drift_of_many_claims_is_one_shared_describe_instances_sweep() {
    let moto = endpoint("sweep");
    let e = env("sweep", &moto).await;
    // Resolved, as the EC2NodeClass controller leaves it: drift reads no EC2 for the class.
    let mut class = e.class();
    class.status = Some(e.resolve("default", &class.spec).await);
    let (provider, _) = e.provider(class.clone());
    let other_ami = e
        .clients
        .ec2
        .describe_images()
        .send()
        .await
        .unwrap()
        .images
        .unwrap()
        .into_iter()
        .filter_map(|i| i.image_id)
        .find(|id| *id != e.ami)
        .unwrap();
    // 120 claims, every tenth on an image the class no longer resolves to.
    let n: usize = 120;
    let launches = (0..n).map(|k| {
        let (e, other) = (&e, &other_ami);
        async move {
            let name = format!("sweep-{k}");
            let image = if k.is_multiple_of(10) { other } else { &e.ami };
            let pid = run_claim_instance(
                &e.clients,
                "sweep",
                &name,
                image,
                &e.subnets[k % 2].0,
                &e.sg,
            )
            .await;
            Arc::new(with_provider_id(
                claim(&name, &["m5.large"], "on-demand"),
                &pid,
            ))
        }
    });
    let mut claims: Vec<Arc<NodeClaim>> = futures::future::join_all(launches).await;
    // A claim whose instance is not in the sweep (launching) is not drifted.
    claims.push(Arc::new(with_provider_id(
        claim("sweep-new", &["m5.large"], "on-demand"),
        "aws:///us-east-1a/i-0123456789abcdef0",
    )));
    let want: BTreeSet<String> = (0..n)
        .filter(|k| k.is_multiple_of(10))
        .map(|k| format!("sweep-{k}"))
        .collect();

    // Three concurrent callers (disruption's pass, garbage collection, another pass) share
    // one sweep: one DescribeInstances page for 121 claims.
    let before = e.proxy.calls("DescribeInstances");
    let (a, b, listed) = tokio::join!(
        provider.drifted_claims(&claims),
        provider.drifted_claims(&claims),
        provider.list()
    );
    assert_eq!(a.unwrap(), want);
    assert_eq!(b.unwrap(), want);
    assert_eq!(listed.unwrap().len(), n);
    assert_eq!(e.proxy.calls("DescribeInstances") - before, 1);
    // Within the interval, another pass asks EC2 nothing.
    assert_eq!(provider.drifted_claims(&claims).await.unwrap(), want);
    assert_eq!(e.proxy.calls("DescribeInstances") - before, 1);
    // The per-claim path, for comparison: one call per claim.
    let before = e.proxy.calls("DescribeInstances");
    for c in &claims[..10] {
        provider.is_drifted(c).await.unwrap();
    }
    assert_eq!(e.proxy.calls("DescribeInstances") - before, 10);

    // EC2 refusing DescribeInstances fails the check instead of reading as "nothing drifted".
    e.proxy
        .refuse_action("DescribeInstances", "UnauthorizedOperation");
    let (fresh, _) = e.provider(class);
    let err = fresh.drifted_claims(&claims).await.unwrap_err();
    assert!(err.to_string().contains("UnauthorizedOperation"), "{err}");
    assert!(fresh.list().await.is_err());
}

#[tokio::test]
#[ignore = "needs a moto server: run aws/ci/moto.sh"]
async fn status_checks_read_a_running_instance_as_passing_and_an_impaired_one_as_failing() {
    use adze_scheduling::disruption::repair::{CheckKind, CheckStatus};
    let moto = endpoint("statuscheck");
    let e = env("statuscheck", &moto).await;
    let (provider, _) = e.provider(e.class());
    let mut pids = Vec::new();
    for name in ["statuscheck-a", "statuscheck-b"] {
        pids.push(
            run_claim_instance(
                &e.clients,
                "statuscheck",
                name,
                &e.ami,
                &e.subnets[0].0,
                &e.sg,
            )
            .await,
        );
    }
    // Not an instance's providerID: left out, not an error.
    let mut asked = pids.clone();
    asked.push("kwok://node-1".into());
    let before = e.proxy.calls("DescribeInstanceStatus");
    let health = provider.instance_health(&asked).await.unwrap();
    assert_eq!(e.proxy.calls("DescribeInstanceStatus") - before, 1);
    assert_eq!(health.keys().cloned().collect::<Vec<_>>(), {
        let mut p = pids.clone();
        p.sort();
        p
    });
    for pid in &pids {
        let checks = &health[pid];
        // moto reports every running instance's instance and system reachability passed.
        for kind in [CheckKind::Instance, CheckKind::System] {
            let c = checks.iter().find(|c| c.kind == kind).unwrap();
            assert_eq!(c.name, "reachability");
            assert_eq!(c.status, CheckStatus::Passed, "{pid} {kind:?}");
        }
        assert!(!checks.iter().any(|c| c.is_failing()), "{checks:?}");
    }

    // The host under b fails: its system check is impaired since 2026-01-01.
    let b = adze_aws::interruption::instance_id_of(&pids[1])
        .unwrap()
        .to_string();
    e.proxy
        .impair(&b, "systemStatus", "2026-01-01T00:00:00.000Z");
    let health = provider.instance_health(&pids).await.unwrap();
    let failing: Vec<_> = health[&pids[1]].iter().filter(|c| c.is_failing()).collect();
    assert_eq!(failing.len(), 1, "{:?}", health[&pids[1]]);
    assert_eq!(failing[0].kind, CheckKind::System);
    assert_eq!(failing[0].impaired_since, Some(1_767_225_600));
    assert!(!health[&pids[0]].iter().any(|c| c.is_failing()));

    // An id EC2 does not know is dropped from its batch; the rest are still read.
    let mut with_gone = pids.clone();
    with_gone.push("aws:///us-east-1a/i-0123456789abcdef0".into());
    let before = e.proxy.calls("DescribeInstanceStatus");
    let health = provider.instance_health(&with_gone).await.unwrap();
    assert_eq!(health.len(), 2, "{health:?}");
    // moto, as EC2, refuses the batch naming the unknown id; it is asked again without it.
    assert_eq!(e.proxy.calls("DescribeInstanceStatus") - before, 2);
    assert!(health[&pids[1]].iter().any(|c| c.is_failing()));

    // EC2 refusing the call is an error (node repair reads it as nothing known).
    e.proxy
        .refuse_action("DescribeInstanceStatus", "UnauthorizedOperation");
    let err = provider.instance_health(&pids).await.unwrap_err();
    assert!(err.to_string().contains("UnauthorizedOperation"), "{err}");
}

// ---- Capacity reservations, against the stand-in aws/ci/capacity_reservations.py ----------

/// One of the stand-in's test levers (`AdzeTest…`, see aws/ci/capacity_reservations.py), sent
/// to moto directly; returns the reservation id it answers with.
async fn adze_test(moto: &str, action: &str, params: &[(&str, &str)]) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut body = format!("Action={action}&Version=2016-11-15");
    for (k, v) in params {
        let v: String = v
            .bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' => {
                    (b as char).to_string()
                }
                _ => format!("%{b:02X}"),
            })
            .collect();
        body += &format!("&{k}={v}");
    }
    let host = moto.trim_start_matches("http://").trim_end_matches('/');
    let mut conn = tokio::net::TcpStream::connect(host).await.unwrap();
    let req = format!(
        "POST / HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/x-www-form-urlencoded\r\nAuthorization: AWS4-HMAC-SHA256 Credential=testing/20260101/{REGION}/ec2/aws4_request, SignedHeaders=host, Signature=x\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    conn.write_all(req.as_bytes()).await.unwrap();
    let mut resp = String::new();
    conn.read_to_string(&mut resp).await.unwrap();
    assert!(resp.starts_with("HTTP/1.1 200"), "{action}: {resp}");
    let open = "<capacityReservationId>";
    let start = resp.find(open).expect(&resp) + open.len();
    let end = resp[start..].find('<').unwrap() + start;
    resp[start..end].to_string()
}

/// An RFC 3339 time `secs` from now (negative: in the past).
fn from_now(secs: i64) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    aws_sdk_ec2::primitives::DateTime::from_secs(now + secs)
        .fmt(aws_sdk_ec2::primitives::DateTimeFormat::DateTime)
        .unwrap()
}

impl Env {
    /// A targeted ODCR of `count` m5.large in us-east-1a, tagged for this test's class.
    async fn odcr(&self, count: i32, end: Option<&str>) -> String {
        let mut req = self
            .clients
            .ec2
            .create_capacity_reservation()
            .instance_type("m5.large")
            .instance_platform(aws_sdk_ec2::types::CapacityReservationInstancePlatform::LinuxUnix)
            .availability_zone("us-east-1a")
            .instance_count(count)
            .instance_match_criteria(aws_sdk_ec2::types::InstanceMatchCriteria::Targeted)
            .tag_specifications(
                TagSpecification::builder()
                    .resource_type(ResourceType::CapacityReservation)
                    .tags(
                        Tag::builder()
                            .key(format!("adze.test/{}", self.cluster))
                            .value("owned")
                            .build(),
                    )
                    .build(),
            );
        if let Some(end) = end {
            req = req
                .end_date_type(aws_sdk_ec2::types::EndDateType::Limited)
                .end_date(
                    aws_sdk_ec2::primitives::DateTime::from_str(
                        end,
                        aws_sdk_ec2::primitives::DateTimeFormat::DateTime,
                    )
                    .unwrap(),
                );
        }
        req.send()
            .await
            .unwrap()
            .capacity_reservation
            .unwrap()
            .capacity_reservation_id
            .unwrap()
    }

    /// A reservation of `count` `itype` in `zone` with no end, accepting launches as `criteria`
    /// says, tagged for this test's class.
    async fn tagged_reservation(
        &self,
        itype: &str,
        zone: &str,
        count: i32,
        criteria: aws_sdk_ec2::types::InstanceMatchCriteria,
    ) -> String {
        self.clients
            .ec2
            .create_capacity_reservation()
            .instance_type(itype)
            .instance_platform(aws_sdk_ec2::types::CapacityReservationInstancePlatform::LinuxUnix)
            .availability_zone(zone)
            .instance_count(count)
            .instance_match_criteria(criteria)
            .tag_specifications(
                TagSpecification::builder()
                    .resource_type(ResourceType::CapacityReservation)
                    .tags(
                        Tag::builder()
                            .key(format!("adze.test/{}", self.cluster))
                            .value("owned")
                            .build(),
                    )
                    .build(),
            )
            .send()
            .await
            .unwrap()
            .capacity_reservation
            .unwrap()
            .capacity_reservation_id
            .unwrap()
    }

    /// The class, selecting this test's reservations by tag.
    fn reserving_class(&self) -> EC2NodeClass {
        let mut class = self.class();
        class.spec.capacity_reservation_selector_terms = vec![
            serde_json::from_value(
                json!({"tags": {format!("adze.test/{}", self.cluster): "owned"}}),
            )
            .unwrap(),
        ];
        class
    }

    /// What EC2 says is left in `id`.
    async fn available(&self, id: &str) -> (i32, String) {
        let r = self
            .clients
            .ec2
            .describe_capacity_reservations()
            .capacity_reservation_ids(id)
            .send()
            .await
            .unwrap()
            .capacity_reservations
            .unwrap()
            .remove(0);
        (
            r.available_instance_count.unwrap(),
            r.state.unwrap().as_str().to_string(),
        )
    }
}

/// A claim pinned to reservation `id` (as placement pins a reserved claim), or with `id` None a
/// claim of a pool that allows reserved and on-demand m5.large.
fn reserved_claim(name: &str, id: Option<&str>) -> NodeClaim {
    let mut reqs = vec![
        json!({"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m5.large"]}),
        json!({"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["us-east-1a"]}),
    ];
    match id {
        Some(id) => {
            reqs.push(json!({"key": "adze.sh/capacity-type", "operator": "In", "values": ["reserved"]}));
            reqs.push(json!({"key": "aws.adze.sh/capacity-reservation-id", "operator": "In", "values": [id]}));
        }
        None => reqs.push(
            json!({"key": "adze.sh/capacity-type", "operator": "In", "values": ["reserved", "on-demand"]}),
        ),
    }
    serde_json::from_value(json!({
        "apiVersion": "adze.sh/v1", "kind": "NodeClaim",
        "metadata": {"name": name, "uid": format!("uid-{name}"), "labels": {"adze.sh/nodepool": "general"}},
        "spec": {
            "nodeClassRef": {"group": "aws.adze.sh", "kind": "EC2NodeClass", "name": "default"},
            "requirements": reqs,
            "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
        }
    }))
    .unwrap()
}

#[tokio::test]
#[ignore = "needs a moto server: run aws/ci/moto.sh"]
async fn a_reserved_claim_takes_its_reservations_slot_and_a_full_one_is_refused_as_ec2_refuses() {
    let moto = endpoint("reserve");
    let e = env("reserve", &moto).await;
    let cr = e.odcr(1, None).await;
    // The class as its controller last wrote it: one free slot.
    let mut class = e.reserving_class();
    let listed = e.resolve("default", &class.spec).await;
    assert_eq!(listed.capacity_reservations.len(), 1, "{listed:?}");
    let r = &listed.capacity_reservations[0];
    assert_eq!(
        (
            r.id.as_str(),
            r.instance_type.as_str(),
            r.availability_zone.as_str()
        ),
        (cr.as_str(), "m5.large", "us-east-1a")
    );
    assert_eq!(r.available_instance_count, 1);
    assert_eq!(r.instance_match_criteria, "targeted");
    assert_eq!(
        r.reservation_type,
        adze_api::ec2nodeclass::ReservationType::Default
    );
    class.status = Some(listed);
    let (provider, unavailable) = e.provider(class);

    let got = provider
        .create(&reserved_claim("reserve-1", Some(&cr)))
        .await
        .unwrap();
    assert_eq!(
        (
            got.capacity_type.as_str(),
            got.instance_type.as_str(),
            got.zone.as_str()
        ),
        ("reserved", "m5.large", "us-east-1a")
    );
    let id = adze_aws::interruption::instance_id_of(&got.provider_id).unwrap();
    let i = instance(&e.clients, id).await;
    assert_eq!(i.capacity_reservation_id.as_deref(), Some(cr.as_str()));
    assert_eq!(e.available(&cr).await, (0, "active".into()));

    // The status still says one slot (it is refreshed every 30 s): the launch goes to EC2,
    // which refuses it; the offering is ruled out and nothing is left running.
    let err = provider
        .create(&reserved_claim("reserve-2", Some(&cr)))
        .await
        .unwrap_err();
    assert!(
        matches!(err, CloudError::InsufficientCapacity { ref capacity_type, .. } if capacity_type == "reserved"),
        "{err}"
    );
    assert!(
        in_moto(&moto, "reserve-2").await.is_empty(),
        "no instance for a refused launch"
    );
    let marked = unavailable.apply(&provider.instance_types(), std::time::Instant::now());
    let m5 = marked.iter().find(|t| t.name == "m5.large").unwrap();
    let reserved: Vec<_> = m5
        .offerings
        .iter()
        .filter(|o| o.capacity_type == "reserved")
        .collect();
    assert!(
        !reserved.is_empty() && reserved.iter().all(|o| !o.available),
        "{reserved:?}"
    );

    // A pool allowing reserved and on-demand falls back to on-demand, outside the reservation.
    let od = provider
        .create(&reserved_claim("reserve-3", None))
        .await
        .unwrap();
    assert_eq!(od.capacity_type, "on-demand");
    let od_id = adze_aws::interruption::instance_id_of(&od.provider_id).unwrap();
    assert_eq!(
        instance(&e.clients, od_id).await.capacity_reservation_id,
        None
    );

    // Terminating the reserved instance gives its slot back.
    provider
        .delete(&with_provider_id(
            reserved_claim("reserve-1", Some(&cr)),
            &got.provider_id,
        ))
        .await
        .unwrap();
    assert_eq!(e.available(&cr).await, (1, "active".into()));
}

#[tokio::test]
#[ignore = "needs a moto server: run aws/ci/moto.sh"]
async fn a_reservation_that_ends_or_is_cancelled_after_the_describe_refuses_the_launch() {
    let moto = endpoint("reserve_end");
    let e = env("reserve-end", &moto).await;
    let ending = e.odcr(2, Some(&from_now(3600))).await;
    let cancelled = e.odcr(2, None).await;
    let mut class = e.reserving_class();
    let listed = e.resolve("default", &class.spec).await;
    assert_eq!(listed.capacity_reservations.len(), 2, "{listed:?}");
    assert!(
        listed
            .capacity_reservations
            .iter()
            .all(|r| r.available_instance_count == 2)
    );
    class.status = Some(listed);
    let (provider, _) = e.provider(class.clone());

    // Between the describe and the launch, one reaches its end and the other is cancelled.
    adze_test(
        &moto,
        "AdzeTestSetCapacityReservationEndDate",
        &[
            ("CapacityReservationId", &ending),
            ("EndDate", &from_now(-1)),
        ],
    )
    .await;
    e.clients
        .ec2
        .cancel_capacity_reservation()
        .capacity_reservation_id(&cancelled)
        .send()
        .await
        .unwrap();
    assert_eq!(e.available(&ending).await, (0, "expired".into()));
    assert_eq!(e.available(&cancelled).await, (0, "cancelled".into()));
    for (name, cr) in [("reserve-end-1", &ending), ("reserve-end-2", &cancelled)] {
        let err = provider
            .create(&reserved_claim(name, Some(cr)))
            .await
            .unwrap_err();
        assert!(
            matches!(err, CloudError::InsufficientCapacity { .. }),
            "{name}: {err}"
        );
        assert!(
            in_moto(&moto, name).await.is_empty(),
            "{name}: nothing launched"
        );
    }
    // The next resolve lists neither (DescribeCapacityReservations state=active).
    let fresh = e.resolve("default", &class.spec).await;
    assert!(fresh.capacity_reservations.is_empty(), "{fresh:?}");
}

#[tokio::test]
#[ignore = "needs a moto server: run aws/ci/moto.sh"]
async fn a_capacity_block_launches_with_its_market_type_and_ec2_takes_it_back_before_the_end() {
    let moto = endpoint("block");
    let e = env("block", &moto).await;
    let tag = format!("adze.test/{}", e.cluster);
    let block = adze_test(
        &moto,
        "AdzeTestCreateCapacityBlock",
        &[
            ("InstanceType", "m5.large"),
            ("AvailabilityZone", "us-east-1a"),
            ("InstanceCount", "1"),
            ("EndDate", &from_now(3 * 3600)),
            ("TagSpecification.1.ResourceType", "capacity-reservation"),
            ("TagSpecification.1.Tag.1.Key", &tag),
            ("TagSpecification.1.Tag.1.Value", "owned"),
        ],
    )
    .await;
    let class = e.reserving_class();
    let listed = e.resolve("default", &class.spec).await;
    let r = &listed.capacity_reservations[0];
    assert_eq!(r.id, block);
    assert_eq!(
        r.reservation_type,
        adze_api::ec2nodeclass::ReservationType::CapacityBlock
    );
    assert!(r.end_time.is_some());
    assert_eq!(r.available_instance_count, 1);
    let (provider, _) = e.provider(class.clone());
    let got = provider
        .create(&reserved_claim("block-1", Some(&block)))
        .await
        .unwrap();
    assert_eq!(got.capacity_type, "reserved");
    let id = adze_aws::interruption::instance_id_of(&got.provider_id)
        .unwrap()
        .to_string();
    assert_eq!(
        instance(&e.clients, &id)
            .await
            .capacity_reservation_id
            .as_deref(),
        Some(block.as_str())
    );

    // 35 minutes before its end: the status lists it with no slot (its nodes are being
    // drained); EC2 has not taken the instance yet.
    adze_test(
        &moto,
        "AdzeTestSetCapacityReservationEndDate",
        &[
            ("CapacityReservationId", &block),
            ("EndDate", &from_now(35 * 60)),
        ],
    )
    .await;
    let listed = e.resolve("default", &class.spec).await;
    assert_eq!(listed.capacity_reservations[0].available_instance_count, 0);
    let state = |i: aws_sdk_ec2::types::Instance| i.state.unwrap().name.unwrap();
    assert_eq!(
        state(instance(&e.clients, &id).await),
        aws_sdk_ec2::types::InstanceStateName::Running
    );
    // 29 minutes before: EC2 terminates it.
    adze_test(
        &moto,
        "AdzeTestSetCapacityReservationEndDate",
        &[
            ("CapacityReservationId", &block),
            ("EndDate", &from_now(29 * 60)),
        ],
    )
    .await;
    let s = state(instance(&e.clients, &id).await);
    assert!(
        matches!(
            s,
            aws_sdk_ec2::types::InstanceStateName::ShuttingDown
                | aws_sdk_ec2::types::InstanceStateName::Terminated
        ),
        "{s:?}"
    );
}

#[tokio::test]
#[ignore = "needs a moto server: run aws/ci/moto.sh"]
async fn an_unreserved_launch_of_a_reserving_class_stays_out_of_an_open_reservation() {
    let moto = endpoint("open_match");
    // An open reservation takes every matching launch in the account, and the other tests
    // share this moto server and launch m5.large in us-east-1a: a type and zone none of them
    // uses keeps them out of it (and it out of them).
    let e = env("open-match", &moto).await;
    let open = e
        .tagged_reservation(
            "c5.xlarge",
            "us-east-1b",
            2,
            aws_sdk_ec2::types::InstanceMatchCriteria::Open,
        )
        .await;
    let on_demand = |name: &str| -> NodeClaim {
        serde_json::from_value(json!({
            "apiVersion": "adze.sh/v1", "kind": "NodeClaim",
            "metadata": {"name": name, "uid": format!("uid-{name}"), "labels": {"adze.sh/nodepool": "general"}},
            "spec": {
                "nodeClassRef": {"group": "aws.adze.sh", "kind": "EC2NodeClass", "name": "default"},
                "requirements": [
                    {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["c5.xlarge"]},
                    {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["us-east-1b"]},
                    {"key": "adze.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
                ],
                "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
            }
        }))
        .unwrap()
    };
    // EC2's open matching, as the stand-in plays it: a class that selects no reservation
    // launches with the default preference, and its instance lands in the open ODCR.
    let (plain, _) = e.provider(e.class());
    let got = plain.create(&on_demand("open-match-1")).await.unwrap();
    let id = adze_aws::interruption::instance_id_of(&got.provider_id).unwrap();
    assert_eq!(
        instance(&e.clients, id)
            .await
            .capacity_reservation_id
            .as_deref(),
        Some(open.as_str())
    );
    assert_eq!(e.available(&open).await.0, 1);
    // A class that selects it keeps its on-demand launches out: the slot is left for the
    // reserved claims placement planned into it.
    let (reserving, _) = e.provider(e.reserving_class());
    let got = reserving.create(&on_demand("open-match-2")).await.unwrap();
    assert_eq!(got.capacity_type, "on-demand");
    let id = adze_aws::interruption::instance_id_of(&got.provider_id).unwrap();
    assert_eq!(instance(&e.clients, id).await.capacity_reservation_id, None);
    assert_eq!(e.available(&open).await.0, 1);
}

#[tokio::test]
#[ignore = "needs a moto server: run aws/ci/moto.sh"]
async fn instance_match_criteria_selects_open_or_targeted_reservations_only() {
    let moto = endpoint("match_criteria");
    let e = env("match-criteria", &moto).await;
    // r6i.large in us-east-1b: no other test launches it, so the open reservation made here
    // takes none of their launches.
    let open = e
        .tagged_reservation(
            "r6i.large",
            "us-east-1b",
            1,
            aws_sdk_ec2::types::InstanceMatchCriteria::Open,
        )
        .await;
    let targeted = e
        .tagged_reservation(
            "r6i.large",
            "us-east-1b",
            1,
            aws_sdk_ec2::types::InstanceMatchCriteria::Targeted,
        )
        .await;
    let selected = |criteria: &str| {
        let mut spec = e.class().spec;
        spec.capacity_reservation_selector_terms = vec![
            serde_json::from_value(json!({
                "tags": {format!("adze.test/{}", e.cluster): "owned"},
                "instanceMatchCriteria": criteria,
            }))
            .unwrap(),
        ];
        spec
    };
    let ids = |status: adze_api::ec2nodeclass::EC2NodeClassStatus| -> Vec<(String, String)> {
        status
            .capacity_reservations
            .into_iter()
            .map(|r| (r.id, r.instance_match_criteria))
            .collect()
    };
    let only_open = ids(e.resolve("open", &selected("open")).await);
    let only_targeted = ids(e.resolve("targeted", &selected("targeted")).await);
    for id in [&open, &targeted] {
        e.clients
            .ec2
            .cancel_capacity_reservation()
            .capacity_reservation_id(id)
            .send()
            .await
            .unwrap();
    }
    assert_eq!(only_open, [(open.clone(), "open".to_string())]);
    assert_eq!(only_targeted, [(targeted.clone(), "targeted".to_string())]);
}

#[tokio::test]
#[ignore = "needs a moto server: run aws/ci/moto.sh"]
async fn interruptible_reservations_are_marked_in_the_status_and_chosen_by_the_label() {
    let moto = endpoint("interruptible");
    let e = env("interruptible", &moto).await;
    let plain = e.odcr(1, None).await;
    let lent = e.odcr(1, None).await;
    adze_test(
        &moto,
        "AdzeTestSetCapacityReservationInterruptible",
        &[("CapacityReservationId", &lent), ("Interruptible", "true")],
    )
    .await;
    let mut class = e.reserving_class();
    let listed = e.resolve("default", &class.spec).await;
    let mut flags: Vec<(String, bool)> = listed
        .capacity_reservations
        .iter()
        .map(|r| (r.id.clone(), r.interruptible))
        .collect();
    flags.sort();
    let mut want = vec![(plain.clone(), false), (lent.clone(), true)];
    want.sort();
    assert_eq!(flags, want);
    // The status as the API server keeps it carries the flag for every reservation.
    let written = serde_json::to_value(&listed).unwrap();
    assert!(
        written["capacityReservations"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["interruptible"].is_boolean()),
        "{written}"
    );
    class.status = Some(listed);
    let (provider, _) = e.provider(class);
    // A claim of a pool that keeps off interruptible capacity: reserved, not interruptible.
    let claim = |name: &str, interruptible: &str| -> NodeClaim {
        let mut c = reserved_claim(name, None);
        c.spec
            .requirements
            .retain(|r| r.key != "adze.sh/capacity-type");
        for r in [
            json!({"key": "adze.sh/capacity-type", "operator": "In", "values": ["reserved"]}),
            json!({"key": "aws.adze.sh/capacity-reservation-interruptible", "operator": "In", "values": [interruptible]}),
        ] {
            c.spec.requirements.push(serde_json::from_value(r).unwrap());
        }
        c
    };
    let steady = provider
        .create(&claim("interruptible-1", "false"))
        .await
        .unwrap();
    let steady_id = adze_aws::interruption::instance_id_of(&steady.provider_id).unwrap();
    let lent_node = provider
        .create(&claim("interruptible-2", "true"))
        .await
        .unwrap();
    let lent_id = adze_aws::interruption::instance_id_of(&lent_node.provider_id).unwrap();
    let (steady_in, lent_in) = (
        instance(&e.clients, steady_id)
            .await
            .capacity_reservation_id,
        instance(&e.clients, lent_id).await.capacity_reservation_id,
    );
    for id in [&plain, &lent] {
        // Cancelled so the other tests' launches never meet them.
        let _ = e
            .clients
            .ec2
            .cancel_capacity_reservation()
            .capacity_reservation_id(id)
            .send()
            .await;
    }
    assert_eq!(steady.capacity_type, "reserved");
    assert_eq!(steady_in.as_deref(), Some(plain.as_str()));
    assert_eq!(lent_in.as_deref(), Some(lent.as_str()));
}
