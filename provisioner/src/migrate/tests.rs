use super::*;
use serde::Deserialize;

const GENERAL: &str = include_str!("testdata/karpenter-general.yaml");
const LEGACY: &str = include_str!("testdata/karpenter-legacy.yaml");

fn notes_about<'a>(m: &'a Migration, object: &str, field: &str) -> Vec<&'a Note> {
    m.notes
        .iter()
        .filter(|n| n.object == object && n.field == field)
        .collect()
}

#[test]
fn general_nodepool_converts_groups_and_label_keys() {
    let m = migrate(GENERAL).unwrap();
    assert_eq!(m.objects.len(), 2);
    let pool = &m.objects[0];
    assert_eq!(pool["apiVersion"], "adze.sh/v1");
    assert_eq!(pool["kind"], "NodePool");
    assert_eq!(pool["metadata"]["name"], "general-purpose");
    let reqs = pool["spec"]["template"]["spec"]["requirements"]
        .as_array()
        .unwrap();
    let keys: Vec<&str> = reqs.iter().map(|r| r["key"].as_str().unwrap()).collect();
    assert_eq!(
        keys,
        [
            "kubernetes.io/arch",
            "adze.sh/capacity-type",
            "aws.adze.sh/instance-category",
            "aws.adze.sh/instance-generation",
            "aws.adze.sh/instance-local-nvme",
            "topology.kubernetes.io/zone",
        ]
    );
    assert_eq!(reqs[2]["minValues"], 2, "minValues carried over");
    assert_eq!(
        pool["spec"]["template"]["spec"]["nodeClassRef"]["group"],
        "aws.adze.sh"
    );
    assert_eq!(
        pool["spec"]["disruption"]["budgets"][1]["schedule"],
        "0 9 * * mon-fri"
    );
    assert_eq!(pool["spec"]["limits"]["memory"], "1000Gi");
    assert_eq!(pool["spec"]["weight"], 10);
    assert!(
        pool.get("status").is_none(),
        "status is Karpenter's, not carried"
    );
    let ann = pool["metadata"]["annotations"].as_object().unwrap();
    assert_eq!(
        ann.len(),
        1,
        "only the user's own annotation stays: {ann:?}"
    );
    assert_eq!(ann["team.example.com/owner"], "platform");
}

#[test]
fn converted_objects_parse_and_validate_as_adze_types() {
    let m = migrate(GENERAL).unwrap();
    let pool: NodePool = serde_json::from_value(m.objects[0].clone()).unwrap();
    pool.validate().unwrap();
    let class: EC2NodeClass = serde_json::from_value(m.objects[1].clone()).unwrap();
    class.validate().unwrap();
    assert_eq!(
        class.spec.role.as_deref(),
        Some("KarpenterNodeRole-my-cluster")
    );
    assert_eq!(
        class.spec.block_device_mappings[0]
            .ebs
            .as_ref()
            .unwrap()
            .iops,
        Some(3000)
    );
    // And the YAML printed is the same objects.
    let reparsed = migrate(&m.yaml()).unwrap();
    assert_eq!(
        reparsed.objects, m.objects,
        "Adze objects pass through unchanged"
    );
}

#[test]
fn a_requirement_on_a_label_adze_lacks_is_dropped_with_an_action() {
    let input = GENERAL.replace(
        "karpenter.k8s.aws/instance-local-nvme",
        "karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz",
    );
    let m = migrate(&input).unwrap();
    let n = notes_about(
        &m,
        "NodePool/general-purpose",
        "spec.template.spec.requirements[4]",
    );
    assert_eq!(n.len(), 1);
    assert!(n[0].action);
    assert!(
        n[0].message
            .contains("karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz"),
        "{}",
        n[0].message
    );
}

#[test]
fn local_nvme_requirements_and_the_raid0_policy_carry_over() {
    let m = migrate(GENERAL).unwrap();
    let n = notes_about(
        &m,
        "NodePool/general-purpose",
        "spec.template.spec.requirements[4]",
    );
    assert!(!n[0].action && n[0].message.contains("aws.adze.sh/instance-local-nvme"));
    assert!(notes_about(&m, "EC2NodeClass/default", "spec.instanceStorePolicy").is_empty());
    assert_eq!(m.objects[1]["spec"]["instanceStorePolicy"], "RAID0");
}

#[test]
fn fields_adze_does_not_have_are_reported_not_silently_lost() {
    let input = GENERAL.replace("  instanceStorePolicy: RAID0\n", "  context: my-context\n");
    let m = migrate(&input).unwrap();
    let n = notes_about(&m, "EC2NodeClass/default", "spec.context");
    assert_eq!(n.len(), 1, "{:#?}", m.notes);
    assert!(
        n[0].action && n[0].message.contains("my-context"),
        "{}",
        n[0].message
    );
    assert!(m.objects[1]["spec"].get("context").is_none());
    // Renames are listed as changes, not actions.
    let renamed = notes_about(
        &m,
        "NodePool/general-purpose",
        "spec.template.spec.requirements[1]",
    );
    assert!(!renamed[0].action && renamed[0].message.contains("adze.sh/capacity-type"));
    // Nothing about status: it is expected to go.
    assert!(m.notes.iter().all(|n| !n.field.starts_with("status")));
}

#[test]
fn min_savings_per_disruption_cost_is_carried_and_a_value_adze_refuses_is_flagged() {
    let with = |value: &str| {
        GENERAL.replacen(
            "  disruption:\n",
            &format!("  disruption:\n    minSavingsPerDisruptionCost: \"{value}\"\n"),
            1,
        )
    };
    let m = migrate(&with("0.02")).unwrap();
    assert_eq!(
        m.objects[0]["spec"]["disruption"]["minSavingsPerDisruptionCost"],
        "0.02"
    );
    let field = "spec.disruption.minSavingsPerDisruptionCost";
    assert!(
        notes_about(&m, "NodePool/general-purpose", field).is_empty(),
        "{:#?}",
        m.notes
    );
    // Karpenter reads a negative value as "off"; Adze refuses it, so a person must look.
    let m = migrate(&with("-0.05")).unwrap();
    let n = notes_about(&m, "NodePool/general-purpose", field);
    assert_eq!(n.len(), 1, "{:#?}", m.notes);
    assert!(
        n[0].action && n[0].message.contains("unsigned decimal"),
        "{}",
        n[0].message
    );
}

#[test]
fn windows_classes_carry_a_pricing_note_static_pools_and_reservations_are_carried() {
    let m = migrate(LEGACY).unwrap();
    assert_eq!(
        m.objects.len(),
        2,
        "the Machine and the ConfigMap are not output"
    );
    let pool = &m.objects[0];
    assert_eq!(
        pool["spec"]["template"]["spec"]["requirements"],
        serde_json::json!([{"key": "adze.sh/capacity-type", "operator": "In", "values": ["reserved"]}]),
        "reserved capacity is carried (capacity reservations)"
    );
    let reserved = notes_about(
        &m,
        "NodePool/reserved-only",
        "spec.template.spec.requirements[0]",
    );
    assert!(reserved.iter().all(|n| !n.action), "{reserved:#?}");
    // A static pool is carried: Adze keeps its replicas too.
    assert_eq!(pool["spec"]["replicas"], 3);
    assert!(notes_about(&m, "NodePool/reserved-only", "spec.replicas").is_empty());
    // A Windows class converts as it is; one change says how its pools are priced.
    let family = notes_about(&m, "EC2NodeClass/windows", "spec.amiFamily");
    assert_eq!(family.len(), 1, "{family:#?}");
    assert!(!family[0].action, "{family:#?}");
    assert!(family[0].message.contains("Windows2022 carried"));
    assert!(
        family[0]
            .message
            .contains("Windows (License Included) prices")
    );
    assert!(notes_about(&m, "EC2NodeClass/windows", "spec.amiSelectorTerms[0].alias").is_empty());
    assert_eq!(m.objects[1]["spec"]["amiFamily"], "Windows2022");
    assert_eq!(
        m.objects[1]["spec"]["amiSelectorTerms"],
        serde_json::json!([{"alias": "windows2022@latest"}])
    );
    assert!(
        notes_about(
            &m,
            "EC2NodeClass/windows",
            "spec.capacityReservationSelectorTerms"
        )
        .is_empty(),
        "carried as it is"
    );
    assert_eq!(
        m.objects[1]["spec"]["capacityReservationSelectorTerms"],
        serde_json::json!([{"id": "cr-0123456789abcdef0"}])
    );
    let old = notes_about(&m, "Machine/old", "apiVersion");
    assert!(old[0].action && old[0].message.contains("karpenter.sh/v1alpha5 Machine"));
    let skipped = notes_about(&m, "ConfigMap/unrelated", "apiVersion");
    assert!(skipped[0].action && skipped[0].message.contains("not converted"));
    assert_eq!(m.not_converted, ["Machine/old", "ConfigMap/unrelated"]);
    assert!(m.incomplete());
}

#[test]
fn report_lists_actions_before_changes() {
    let m = migrate(LEGACY).unwrap();
    let report = m.report();
    let first_change = report.find("changed:").unwrap_or(usize::MAX);
    let last_action = report.rfind("ACTION:").unwrap();
    assert!(last_action < first_change, "{report}");
    assert!(
        report.starts_with("migrated 2 object(s), 2 not converted;"),
        "{report}"
    );
}

#[test]
fn invalid_yaml_names_the_document() {
    let err = migrate("apiVersion: v1\n---\n: : [\n").unwrap_err();
    assert!(err.to_string().starts_with("document 2:"), "{err}");
}

/// What `kubectl get nodepools.karpenter.sh,ec2nodeclasses.karpenter.k8s.aws -o yaml|json`
/// prints: one `kind: List` whose items carry server-set metadata and status.
fn as_kubectl_list(docs: &str) -> Value {
    let items: Vec<Value> = serde_yaml::Deserializer::from_str(docs)
        .map(|d| Value::deserialize(d).unwrap())
        .filter(|v| !v.is_null())
        .map(|mut v| {
            let meta = v["metadata"].as_object_mut().unwrap();
            meta.insert("uid".into(), "0b6c2c6e-1f7e-4c53-9d1a-4f8e2f0d6a11".into());
            meta.insert("resourceVersion".into(), "48213".into());
            meta.insert("generation".into(), 3.into());
            meta.insert("creationTimestamp".into(), "2026-10-01T08:00:00Z".into());
            meta.insert(
                "managedFields".into(),
                serde_json::json!([{"manager": "kubectl", "operation": "Apply"}]),
            );
            v["status"] = serde_json::json!({"conditions": [{"type": "Ready", "status": "True"}]});
            v
        })
        .collect();
    serde_json::json!({"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": items})
}

#[test]
fn a_kubectl_list_in_yaml_or_json_converts_like_the_separate_documents() {
    let separate = migrate(GENERAL).unwrap();
    let list = as_kubectl_list(GENERAL);
    let from_yaml = migrate(&serde_yaml::to_string(&list).unwrap()).unwrap();
    let from_json = migrate(&serde_json::to_string_pretty(&list).unwrap()).unwrap();
    assert_eq!(separate.objects.len(), 2);
    for m in [&from_yaml, &from_json] {
        assert_eq!(
            m.objects, separate.objects,
            "server-set fields and status are dropped"
        );
        assert_eq!(m.notes.len(), separate.notes.len());
        assert!(m.not_converted.is_empty() && !m.incomplete());
    }
}

#[test]
fn lists_nest_and_mix_with_plain_documents() {
    let inner = as_kubectl_list(GENERAL);
    let outer = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": [inner]});
    let stream = format!("{}---\n{LEGACY}", serde_yaml::to_string(&outer).unwrap());
    let m = migrate(&stream).unwrap();
    let legacy = migrate(LEGACY).unwrap();
    assert_eq!(m.objects.len(), 2 + legacy.objects.len());
    assert_eq!(
        m.actions(),
        migrate(GENERAL).unwrap().actions() + legacy.actions()
    );
}

#[test]
fn nothing_to_convert_is_incomplete() {
    let empty = migrate("apiVersion: v1\nitems: []\nkind: List\n").unwrap();
    assert!(empty.objects.is_empty() && empty.incomplete());
    assert!(empty.report().contains("nothing converted"));
    let general = migrate(GENERAL).unwrap();
    assert_eq!(general.objects.len(), 2);
    assert!(!general.incomplete() && !general.report().contains("nothing converted"));
}

#[test]
fn json_arrays_and_concatenated_json_values_are_flattened() {
    let list = as_kubectl_list(GENERAL);
    let items = list["items"].as_array().unwrap();
    let array = serde_json::to_string(&items).unwrap();
    let concatenated = format!(
        "{}\n{}",
        serde_json::to_string_pretty(&items[0]).unwrap(),
        serde_json::to_string_pretty(&items[1]).unwrap()
    )
    .replace("  ", "\t");
    let separate = migrate(GENERAL).unwrap();
    for input in [array, concatenated] {
        assert_eq!(
            migrate(&input).unwrap().objects,
            separate.objects,
            "{input}"
        );
    }
}

#[test]
fn an_alias_bomb_is_refused_quickly_naming_the_document() {
    let mut bomb = String::from("a: &a [x, x, x, x, x, x, x, x, x, x]\n");
    for level in 1..10u8 {
        let (prev, this) = ((b'a' + level - 1) as char, (b'a' + level) as char);
        bomb += &format!(
            "{this}: &{this} [{}]\n",
            vec![format!("*{prev}"); 10].join(", ")
        );
    }
    let start = cpu_time::ThreadTime::now();
    let err = migrate(&format!("{GENERAL}---\n{bomb}")).unwrap_err();
    assert!(start.elapsed() < std::time::Duration::from_secs(2));
    let docs = GENERAL.matches("\n---\n").count() + 2;
    assert!(
        err.to_string()
            .starts_with(&format!("document {docs}: not valid YAML:")),
        "{err}"
    );
}

#[test]
fn deeply_nested_yaml_or_json_is_refused_quickly() {
    for input in [
        "[".repeat(100_000),
        "{\"a\":".repeat(100_000),
        "- ".repeat(100_000),
    ] {
        let start = cpu_time::ThreadTime::now();
        let err = migrate(&input).unwrap_err();
        assert!(start.elapsed() < std::time::Duration::from_secs(2));
        assert!(
            err.to_string().starts_with("document 1: not valid YAML:"),
            "{err}"
        );
    }
}

#[test]
fn gte_and_lte_requirements_are_carried_as_they_are() {
    let input = r#"
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: bounded}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: karpenter.k8s.aws/instance-cpu, operator: Gte, values: ["4"]}
        - {key: karpenter.k8s.aws/instance-memory, operator: Lte, values: ["65536"]}
  limits: {nodes: "20"}
"#;
    let m = migrate(input).unwrap();
    assert!(m.not_converted.is_empty(), "{:?}", m.notes);
    assert_eq!(m.actions(), 0, "{:?}", m.notes);
    let reqs = m.objects[0]["spec"]["template"]["spec"]["requirements"]
        .as_array()
        .unwrap();
    assert_eq!(reqs[0]["key"], "aws.adze.sh/instance-cpu");
    assert_eq!(reqs[0]["operator"], "Gte");
    assert_eq!(reqs[1]["operator"], "Lte");
    assert_eq!(m.objects[0]["spec"]["limits"]["nodes"], "20");
}

/// (field, action) of every note about `object`, in order.
fn fields_of(m: &Migration, object: &str) -> Vec<(String, bool)> {
    m.notes
        .iter()
        .filter(|n| n.object == object)
        .map(|n| (n.field.clone(), n.action))
        .collect()
}

fn owned(list: &[(&str, bool)]) -> Vec<(String, bool)> {
    list.iter().map(|(f, a)| (f.to_string(), *a)).collect()
}

#[test]
fn v1alpha5_inline_provider_becomes_a_pool_and_a_class_named_after_it() {
    let m = migrate(include_str!("testdata/v1alpha5-inline-provider.yaml")).unwrap();
    assert_eq!(m.objects.len(), 2, "{}", m.report());
    let pool = &m.objects[0];
    let spec = &pool["spec"];
    assert_eq!(pool["apiVersion"], "adze.sh/v1");
    assert_eq!(spec["template"]["metadata"]["labels"]["team"], "batch");
    assert_eq!(spec["template"]["spec"]["taints"][0]["key"], "batch");
    assert_eq!(
        spec["template"]["spec"]["startupTaints"][0]["key"],
        "example.com/agent-not-ready"
    );
    assert_eq!(spec["template"]["spec"]["expireAfter"], "86400s");
    assert_eq!(
        spec["disruption"]["consolidationPolicy"],
        "WhenEmptyOrUnderutilized"
    );
    assert_eq!(spec["disruption"]["consolidateAfter"], "0s");
    assert_eq!(spec["limits"]["cpu"], 256);
    assert_eq!(spec["weight"], 5);
    assert_eq!(
        spec["template"]["spec"]["nodeClassRef"],
        serde_json::json!({"group": "aws.adze.sh", "kind": "EC2NodeClass", "name": "batch"})
    );
    let reqs = spec["template"]["spec"]["requirements"].as_array().unwrap();
    let keys: Vec<&str> = reqs.iter().map(|r| r["key"].as_str().unwrap()).collect();
    assert_eq!(
        keys,
        ["adze.sh/capacity-type", "topology.kubernetes.io/zone"]
    );
    let class = &m.objects[1];
    assert_eq!(class["apiVersion"], "aws.adze.sh/v1");
    assert_eq!(class["metadata"]["name"], "batch");
    assert_eq!(
        class["spec"],
        serde_json::json!({
            "amiSelectorTerms": [{"alias": "bottlerocket@latest"}],
            "instanceProfile": "KarpenterNodeInstanceProfile-my-cluster",
            "kubelet": {"maxPods": 50},
            "metadataOptions": {"httpPutResponseHopLimit": 2},
            "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "my-cluster"}}],
            "subnetSelectorTerms": [{"id": "subnet-0aaaaaaaaaaaaaaaa"}, {"id": "subnet-0bbbbbbbbbbbbbbbb"}],
            "tags": {"cost-center": "batch"},
        })
    );
    assert_eq!(
        fields_of(&m, "Provisioner/batch"),
        owned(&[
            ("spec.provider", false),
            ("spec.provider.amiFamily", false),
            ("spec.provider.launchTemplate", true),
            (
                "spec.provider.metadataOptions.httpPutResponseHopLimit",
                false
            ),
            ("spec.kubeletConfiguration", false),
            ("spec.template.spec.requirements[0]", false),
            ("spec.template.spec.requirements[1]", false),
            ("spec.template.spec.requirements[2]", true),
        ])
    );
    assert_eq!(
        fields_of(&m, "EC2NodeClass/batch"),
        owned(&[
            ("metadata.name", false),
            ("spec.kubelet.containerRuntime", true),
        ])
    );
    let pods = notes_about(
        &m,
        "Provisioner/batch",
        "spec.template.spec.requirements[2]",
    );
    assert!(pods[0].message.contains("karpenter.k8s.aws/instance-pods"));
    let class: EC2NodeClass = serde_json::from_value(m.objects[1].clone()).unwrap();
    class.validate().unwrap();
    let pool: NodePool = serde_json::from_value(m.objects[0].clone()).unwrap();
    pool.validate().unwrap();
}

#[test]
fn v1alpha5_provisioners_sharing_a_template_with_the_same_kubelet_fold_it_once() {
    let m = migrate(include_str!("testdata/v1alpha5-awsnodetemplate.yaml")).unwrap();
    assert_eq!(m.actions(), 0, "{}", m.report());
    assert_eq!(m.objects.len(), 3);
    let default = &m.objects[0]["spec"];
    assert_eq!(default["disruption"]["consolidationPolicy"], "WhenEmpty");
    assert_eq!(default["disruption"]["consolidateAfter"], "30s");
    assert_eq!(
        default["template"]["spec"]["expireAfter"], "Never",
        "v1alpha5 without ttlSecondsUntilExpired never expired"
    );
    assert_eq!(
        default["template"]["metadata"]["annotations"]["example.com/owner"],
        "platform"
    );
    let quiet = &m.objects[1]["spec"];
    assert_eq!(quiet["disruption"]["consolidationPolicy"], "WhenEmpty");
    assert_eq!(
        quiet["disruption"]["consolidateAfter"], "Never",
        "no consolidation and no ttlSecondsAfterEmpty: never consolidated"
    );
    let class = &m.objects[2]["spec"];
    assert_eq!(class["amiFamily"], "AL2023");
    assert_eq!(
        class["amiSelectorTerms"],
        serde_json::json!([
            {"name": "my-golden-al2023-*", "owner": "self"},
            {"name": "my-golden-al2023-*", "owner": "123456789012"},
        ])
    );
    assert_eq!(
        class["securityGroupSelectorTerms"],
        serde_json::json!([{"id": "sg-0123456789abcdef0"}])
    );
    assert_eq!(class["kubelet"], serde_json::json!({"maxPods": 110}));
    assert_eq!(class["metadataOptions"]["httpPutResponseHopLimit"], 3);
    assert_eq!(class["detailedMonitoring"], true);
    assert_eq!(class["tags"]["team"], "platform");
    assert_eq!(
        class["blockDeviceMappings"][0]["ebs"]["volumeSize"],
        "100Gi"
    );
    assert!(class["userData"].as_str().unwrap().contains("NodeConfig"));
    assert_eq!(
        fields_of(&m, "Provisioner/quiet"),
        owned(&[
            ("spec.ttlSecondsUntilExpired", false),
            ("spec.consolidation", false),
            ("spec.kubeletConfiguration", false),
        ])
    );
    assert!(fields_of(&m, "AWSNodeTemplate/shared").is_empty());
}

#[test]
fn v1alpha5_pools_with_different_kubelets_on_one_template_are_refused_by_path() {
    let input = include_str!("testdata/v1alpha5-awsnodetemplate.yaml").replacen(
        "maxPods: 110",
        "maxPods: 30",
        1,
    );
    let m = migrate(&input).unwrap();
    for (pool, other) in [("default", "quiet"), ("quiet", "default")] {
        let n = notes_about(
            &m,
            &format!("Provisioner/{pool}"),
            "spec.kubeletConfiguration",
        );
        assert_eq!(n.len(), 1, "{}", m.report());
        assert!(n[0].action);
        assert!(
            n[0].message.contains(&format!("Provisioner/{other}"))
                && n[0].message.contains("EC2NodeClass/shared"),
            "{}",
            n[0].message
        );
    }
    assert!(m.objects[2]["spec"].get("kubelet").is_none());
}

#[test]
fn v1beta1_pool_and_class_become_v1_meanings() {
    let m = migrate(include_str!("testdata/v1beta1.yaml")).unwrap();
    assert_eq!(m.objects.len(), 2, "{}", m.report());
    let pool = &m.objects[0]["spec"];
    assert_eq!(
        pool["disruption"],
        serde_json::json!({"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "0s"})
    );
    assert_eq!(pool["template"]["spec"]["expireAfter"], "168h");
    assert!(pool["template"]["spec"].get("kubelet").is_none());
    assert_eq!(
        pool["template"]["spec"]["nodeClassRef"],
        serde_json::json!({"group": "aws.adze.sh", "kind": "EC2NodeClass", "name": "bottlerocket"})
    );
    assert_eq!(pool["limits"]["cpu"], 1000);
    let class = &m.objects[1]["spec"];
    assert_eq!(
        class["amiSelectorTerms"],
        serde_json::json!([{"alias": "bottlerocket@latest"}])
    );
    assert!(class.get("amiFamily").is_none());
    assert_eq!(
        class["kubelet"],
        serde_json::json!({"maxPods": 58, "systemReserved": {"cpu": "100m"}, "cpuCFSQuota": true}),
        "cpuCFSQuota is carried with the rest"
    );
    assert_eq!(class["metadataOptions"]["httpPutResponseHopLimit"], 2);
    assert_eq!(
        fields_of(&m, "NodePool/general"),
        owned(&[
            ("spec.disruption.consolidationPolicy", false),
            ("spec.disruption.expireAfter", false),
            ("spec.template.spec.kubelet", false),
            ("spec.template.spec.requirements[0]", false),
        ])
    );
    assert_eq!(
        fields_of(&m, "EC2NodeClass/bottlerocket"),
        owned(&[
            ("spec.amiFamily", false),
            ("spec.metadataOptions.httpPutResponseHopLimit", false),
        ])
    );
}

#[test]
fn v1_kubelet_compatibility_annotation_moves_to_the_node_class() {
    let input = include_str!("testdata/v1-kubelet-annotation.yaml");
    let m = migrate(input).unwrap();
    assert_eq!(m.objects.len(), 2);
    assert!(
        m.objects[0]["metadata"].get("annotations").is_none(),
        "both compatibility annotations are Karpenter's: {}",
        m.objects[0]
    );
    assert_eq!(
        m.objects[1]["spec"]["kubelet"],
        serde_json::json!({"maxPods": 42, "evictionMaxPodGracePeriod": 60})
    );
    assert_eq!(
        fields_of(&m, "NodePool/converted"),
        owned(&[
            (
                "metadata.annotations.compatibility.karpenter.sh/v1beta1-kubelet-conversion",
                false
            ),
            (
                "metadata.annotations.compatibility.karpenter.sh/v1beta1-nodeclass-reference",
                false
            ),
        ])
    );
    assert_eq!(
        fields_of(&m, "EC2NodeClass/default"),
        owned(&[]),
        "evictionMaxPodGracePeriod is carried, not refused"
    );

    // Without the class in the input the settings have nowhere to go: an action, by path.
    let pool_only = input.split("---").next().unwrap();
    let m = migrate(pool_only).unwrap();
    let n = notes_about(
        &m,
        "NodePool/converted",
        "metadata.annotations.compatibility.karpenter.sh/v1beta1-kubelet-conversion",
    );
    assert!(
        n[0].action
            && n[0]
                .message
                .contains("EC2NodeClass/default is not in the input"),
        "{}",
        n[0].message
    );

    // A second pool on the same class without kubelet settings would inherit them: refused.
    let second = "---\napiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: plain}\nspec:\n  template:\n    spec:\n      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}\n";
    let m = migrate(&format!("{input}{second}")).unwrap();
    let n = notes_about(
        &m,
        "NodePool/converted",
        "metadata.annotations.compatibility.karpenter.sh/v1beta1-kubelet-conversion",
    );
    assert!(
        n[0].action
            && n[0]
                .message
                .contains("NodePool/plain (no kubelet settings)"),
        "{}",
        n[0].message
    );
    assert!(m.objects[1]["spec"].get("kubelet").is_none());
}

#[test]
fn eks_auto_mode_keys_are_renamed_and_every_error_has_its_own_path() {
    let m = migrate(include_str!("testdata/eks-automode.yaml")).unwrap();
    assert_eq!(m.not_converted, ["NodeClass/default"]);
    let spec = &m.objects[0]["spec"];
    let reqs = spec["template"]["spec"]["requirements"].as_array().unwrap();
    let keys: Vec<(&str, &str)> = reqs
        .iter()
        .map(|r| (r["key"].as_str().unwrap(), r["operator"].as_str().unwrap()))
        .collect();
    assert_eq!(
        keys,
        [
            ("aws.adze.sh/instance-category", "In"),
            ("aws.adze.sh/instance-generation", "Gte"),
            ("adze.sh/capacity-type", "Exists"),
        ]
    );
    // Karpenter's Balanced is carried as is: Adze scores moves the same way.
    assert_eq!(spec["disruption"]["consolidationPolicy"], "Balanced");
    assert_eq!(spec["template"]["spec"]["expireAfter"], "336h");
    assert_eq!(
        fields_of(&m, "NodePool/general-purpose"),
        owned(&[
            ("spec.template.spec.requirements[0]", false),
            ("spec.template.spec.requirements[1]", false),
            ("spec.template.spec.requirements[2]", true),
            ("spec.template.spec.requirements[3]", false),
            ("spec.template.spec.nodeClassRef.group", true),
            ("spec.template.spec.requirements[4]", true),
        ])
    );
    assert!(
        notes_about(
            &m,
            "NodePool/general-purpose",
            "spec.disruption.consolidationPolicy"
        )
        .is_empty()
    );
    let near = notes_about(
        &m,
        "NodePool/general-purpose",
        "spec.template.spec.requirements[4]",
    );
    assert!(near[0].message.contains("operator: unknown variant `Near`"));
    let compute = notes_about(
        &m,
        "NodePool/general-purpose",
        "spec.template.spec.requirements[2]",
    );
    assert!(
        compute[0]
            .message
            .contains("eks.amazonaws.com/compute-type")
    );
}

#[test]
fn v1alpha5_edge_cases_are_refused_by_path_not_dropped() {
    // Both empty-node TTL and consolidation (Karpenter refused the pair), a negative TTL, an
    // unknown field, ids mixed with tags, no amiFamily and no instance profile.
    let input = r#"
apiVersion: karpenter.sh/v1alpha5
kind: Provisioner
metadata: {name: odd}
spec:
  ttlSecondsAfterEmpty: 30
  consolidation: {enabled: true}
  ttlSecondsUntilExpired: -5
  surprise: 1
  provider:
    subnetSelector: {aws-ids: subnet-0aaaaaaaaaaaaaaaa, team: a}
    securityGroupSelector: {aws::mystery: x, team: a}
"#;
    let m = migrate(input).unwrap();
    assert_eq!(
        fields_of(&m, "Provisioner/odd"),
        owned(&[
            ("spec.ttlSecondsUntilExpired", true),
            ("spec.ttlSecondsAfterEmpty", true),
            ("spec.provider", false),
            ("spec.provider.subnetSelector", true),
            ("spec.provider.securityGroupSelector.aws::mystery", true),
            ("spec.provider.amiFamily", false),
            ("spec.provider.amiFamily", false),
            ("spec.provider.instanceProfile", true),
            (
                "spec.provider.metadataOptions.httpPutResponseHopLimit",
                false
            ),
            ("spec.surprise", true),
        ]),
        "{}",
        m.report()
    );
    let pool = &m.objects[0]["spec"];
    assert_eq!(
        pool["disruption"]["consolidationPolicy"],
        "WhenEmptyOrUnderutilized"
    );
    assert!(pool["template"]["spec"].get("expireAfter").is_none());
    // The class has neither role nor instance profile, which Adze refuses: left out of the
    // output, until --node-role gives it the stack's role.
    assert_eq!(m.objects.len(), 1, "{}", m.report());
    assert_eq!(m.not_converted, ["EC2NodeClass/odd"], "{}", m.report());
    assert!(m.incomplete());
    let options = Options {
        node_role: Some("AdzeNode-demo".into()),
    };
    let m = migrate_with(input, &options).unwrap();
    assert_eq!(m.objects.len(), 2, "{}", m.report());
    assert_eq!(m.objects[1]["spec"]["role"], "AdzeNode-demo");
    let class = &m.objects[1]["spec"];
    assert_eq!(
        class["subnetSelectorTerms"],
        serde_json::json!([{"id": "subnet-0aaaaaaaaaaaaaaaa"}])
    );
    assert_eq!(
        class["amiSelectorTerms"],
        serde_json::json!([{"alias": "al2@latest"}]),
        "an unset v1alpha5 family was AL2, and AL2 is carried"
    );
    assert!(m.incomplete());
}

#[test]
fn al2_and_windows_classes_of_every_generation_convert() {
    let input = r#"
apiVersion: karpenter.k8s.aws/v1alpha1
kind: AWSNodeTemplate
metadata: {name: old-windows}
spec:
  amiFamily: Windows2019
  instanceProfile: KarpenterNodeInstanceProfile
  subnetSelector: {karpenter.sh/discovery: c}
  securityGroupSelector: {karpenter.sh/discovery: c}
  userData: |
    <powershell>
    Write-Host "hello"
    </powershell>
---
apiVersion: karpenter.k8s.aws/v1beta1
kind: EC2NodeClass
metadata: {name: beta-al2}
spec:
  amiFamily: AL2
  role: KarpenterNodeRole
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: c}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: c}}]
  userData: |
    #!/bin/bash
    echo hi
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: v1-windows}
spec:
  role: KarpenterNodeRole
  amiSelectorTerms: [{alias: windows2022@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: c}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: c}}]
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: v1-al2}
spec:
  role: KarpenterNodeRole
  amiFamily: AL2
  amiSelectorTerms: [{alias: al2@v20240807}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: c}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: c}}]
"#;
    let m = migrate(input).unwrap();
    assert_eq!(m.objects.len(), 4, "{}", m.report());
    assert!(m.not_converted.is_empty());
    let spec = |i: usize| &m.objects[i]["spec"];
    assert_eq!(
        spec(0)["amiSelectorTerms"],
        serde_json::json!([{"alias": "windows2019@latest"}])
    );
    assert!(spec(0)["userData"].as_str().unwrap().contains("Write-Host"));
    assert_eq!(
        spec(1)["amiSelectorTerms"],
        serde_json::json!([{"alias": "al2@latest"}])
    );
    assert!(spec(1)["userData"].as_str().unwrap().contains("echo hi"));
    assert_eq!(
        spec(2)["amiSelectorTerms"],
        serde_json::json!([{"alias": "windows2022@latest"}])
    );
    assert_eq!(spec(3)["amiFamily"], "AL2");
    assert_eq!(
        spec(3)["amiSelectorTerms"],
        serde_json::json!([{"alias": "al2@v20240807"}])
    );
    // Every converted class is valid Adze.
    for o in &m.objects {
        let c: adze_api::EC2NodeClass = serde_json::from_value(o.clone()).unwrap();
        c.validate().unwrap();
    }
    // AL2: carried, with the 1.32 caveat as a change; Windows: how its pools are priced, as a
    // change at the field that names the family.
    let al2 = notes_about(&m, "EC2NodeClass/v1-al2", "spec.amiFamily");
    assert!(!al2[0].action && al2[0].message.contains("up to Kubernetes 1.32"));
    let win = notes_about(
        &m,
        "EC2NodeClass/v1-windows",
        "spec.amiSelectorTerms[0].alias",
    );
    assert!(!win[0].action && win[0].message.contains("Windows2022 carried"));
    let old_windows = notes_about(
        &m,
        "AWSNodeTemplate/old-windows",
        "spec.amiSelectorTerms[0].alias",
    );
    assert!(!old_windows[0].action && old_windows[0].message.contains("Windows2019 carried"));
    assert_eq!(m.actions(), 0, "{}", m.report());
}

#[test]
fn v1beta1_pool_without_disruption_keeps_v1beta1_defaults() {
    let input = r#"
apiVersion: karpenter.sh/v1beta1
kind: NodePool
metadata: {name: bare}
spec:
  template:
    spec:
      nodeClassRef: {name: default}
"#;
    let m = migrate(input).unwrap();
    let spec = &m.objects[0]["spec"];
    assert_eq!(
        spec["disruption"],
        serde_json::json!({"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "0s"})
    );
    assert_eq!(
        spec["template"]["spec"]["nodeClassRef"],
        serde_json::json!({"group": "aws.adze.sh", "kind": "EC2NodeClass", "name": "default"})
    );
    assert_eq!(m.actions(), 0, "{}", m.report());
}

#[test]
fn paths_count_the_inputs_list_items_after_removals() {
    let removed: Removed = vec![
        ("spec.template.spec.requirements".into(), 1),
        ("spec.template.spec.requirements".into(), 2),
    ];
    assert_eq!(
        remap("spec.template.spec.requirements[1].values", &removed),
        "spec.template.spec.requirements[3].values"
    );
    assert_eq!(
        remap("spec.template.spec.requirements[0]", &removed),
        "spec.template.spec.requirements[0]"
    );
    assert_eq!(remap("spec.taints[1]", &removed), "spec.taints[1]");
}

#[test]
fn hostile_older_generation_fields_are_each_refused_by_path() {
    let m = migrate(include_str!("testdata/hostile-legacy.yaml")).unwrap();
    let actions = |object: &str| -> Vec<String> {
        m.notes
            .iter()
            .filter(|n| n.object == object && n.action)
            .map(|n| n.field.clone())
            .collect()
    };
    assert_eq!(
        actions("Provisioner/hostile"),
        [
            "spec.limits",
            "spec.ttlSecondsUntilExpired",
            "spec.consolidation",
            "spec.providerRef.name",
            "spec.kubeletConfiguration",
            "spec.disruption.consolidateAfter",
            "spec.template.spec.requirements",
            "spec.template.spec.nodeClassRef",
            "spec",
        ]
    );
    assert_eq!(
        actions("EC2NodeClass/h2"),
        ["spec.kubelet.maxPods", "spec.subnetSelectorTerms", "spec"]
    );
    assert_eq!(
        actions("NodePool/h3"),
        [
            "metadata.annotations.compatibility.karpenter.sh/v1beta1-kubelet-conversion",
            "spec",
            "spec"
        ]
    );
    assert_eq!(
        actions("NodePool/h4")[..2],
        [
            "spec.disruption.expireAfter",
            "spec.disruption.consolidationPolicy"
        ]
    );
    assert!(m.incomplete());
}

#[test]
fn an_inline_provider_named_like_an_awsnodetemplate_is_refused() {
    let input = format!(
        "{}---\napiVersion: karpenter.k8s.aws/v1alpha1\nkind: AWSNodeTemplate\nmetadata: {{name: batch}}\nspec: {{instanceProfile: p}}\n",
        include_str!("testdata/v1alpha5-inline-provider.yaml")
    );
    let m = migrate(&input).unwrap();
    let n = notes_about(&m, "AWSNodeTemplate/batch", "metadata.name");
    assert_eq!(n.len(), 1, "{}", m.report());
    assert!(n[0].action && n[0].message.contains("also named batch"));
    assert!(
        notes_about(&m, "EC2NodeClass/batch", "metadata.name")
            .iter()
            .all(|n| !n.action)
    );
}

const OVERLAYS: &str = r#"
apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata: {name: savings-plan}
spec:
  weight: 10
  requirements:
    - {key: karpenter.k8s.aws/instance-family, operator: In, values: [m5]}
    - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
    - {key: karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz, operator: Gt, values: ["3000"]}
  priceAdjustment: "-10%"
  capacity: {example.com/license: "1"}
status:
  conditions: [{type: Ready, status: "True"}]
---
apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata: {name: both}
spec:
  price: "1"
  priceAdjustment: "+1"
"#;

#[test]
fn karpenter_node_overlays_are_carried_with_adze_keys() {
    let m = migrate(OVERLAYS).unwrap();
    // `both` is one Adze would refuse: reported, and left out of the output.
    assert_eq!(m.objects.len(), 1, "{:?}", m.notes);
    assert_eq!(m.not_converted, ["NodeOverlay/both"]);
    assert!(
        notes_about(&m, "NodeOverlay/both", "metadata")
            .iter()
            .any(|n| n.action && n.message.starts_with("left out of the output")),
        "{}",
        m.report()
    );
    let o = &m.objects[0];
    assert_eq!(o["apiVersion"], "adze.sh/v1alpha1");
    assert_eq!(o["kind"], "NodeOverlay");
    assert_eq!(o["spec"]["weight"], 10);
    assert_eq!(o["spec"]["priceAdjustment"], "-10%");
    assert_eq!(o["spec"]["capacity"]["example.com/license"], "1");
    assert!(o.get("status").is_none());
    let keys: Vec<&str> = o["spec"]["requirements"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["key"].as_str().unwrap())
        .collect();
    assert_eq!(
        keys,
        [
            "aws.adze.sh/instance-family",
            "adze.sh/capacity-type",
            "karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz",
        ],
        "a key Adze lacks is kept (it selects nothing), never dropped (that would widen the discount)"
    );
    let kept = notes_about(&m, "NodeOverlay/savings-plan", "spec.requirements[2]");
    assert!(
        kept.iter()
            .any(|n| n.action && n.message.contains("selects nothing")),
        "{kept:?}"
    );
    let parsed: adze_api::NodeOverlay = serde_json::from_value(o.clone()).unwrap();
    parsed.validate().unwrap();
    let both = notes_about(&m, "NodeOverlay/both", "spec");
    assert!(
        both.iter().any(|n| n.action
            && n.message
                .contains("cannot set both price and priceAdjustment")),
        "{:?}",
        m.notes
    );
}

#[test]
fn capacity_reservation_terms_by_match_criteria_carry_over() {
    // Karpenter v1's reference example selects every open reservation with a term that has
    // only `instanceMatchCriteria`; it must neither be refused nor left as an empty term.
    let input = r#"
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata:
  name: odcr
spec:
  role: KarpenterNodeRole
  amiSelectorTerms:
    - alias: al2023@latest
  subnetSelectorTerms:
    - tags: {karpenter.sh/discovery: demo}
  securityGroupSelectorTerms:
    - tags: {karpenter.sh/discovery: demo}
  capacityReservationSelectorTerms:
    - tags: {team: ml}
      ownerID: "012345678901"
      instanceMatchCriteria: targeted
    - instanceMatchCriteria: open
"#;
    let m = migrate(input).unwrap();
    assert!(
        m.notes
            .iter()
            .all(|n| !n.field.starts_with("spec.capacityReservationSelectorTerms")),
        "{:#?}",
        m.notes
    );
    assert_eq!(
        m.objects[0]["spec"]["capacityReservationSelectorTerms"],
        serde_json::json!([
            {"tags": {"team": "ml"}, "ownerID": "012345678901", "instanceMatchCriteria": "targeted"},
            {"instanceMatchCriteria": "open"}
        ])
    );
    assert!(!m.incomplete(), "{}", m.report());
}

/// A v1 class for an EFA fleet (networkInterfaces with EFA-only interfaces, connectionTracking,
/// a snapshot volume's volumeInitializationRate) converts with each field carried as written
/// and nothing to act on; values EC2 refuses stay refused at their paths.
#[test]
fn hpc_network_and_volume_fields_are_carried_and_checked() {
    let input = include_str!("testdata/v1-hpc-nodeclass.yaml");
    let m = migrate(input).unwrap();
    assert_eq!(m.actions(), 0, "{}", m.report());
    let spec = &m.objects[0]["spec"];
    assert_eq!(
        spec["connectionTracking"],
        serde_json::json!({"tcpEstablishedTimeout": 300, "udpStreamTimeout": 120, "udpTimeout": 45}),
        "{}",
        m.report()
    );
    assert_eq!(
        spec["networkInterfaces"],
        serde_json::json!([
            {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"},
            {"networkCardIndex": 0, "deviceIndex": 1, "interfaceType": "efa-only"},
            {"networkCardIndex": 1, "deviceIndex": 0, "interfaceType": "efa-only"},
        ])
    );
    assert_eq!(
        spec["blockDeviceMappings"][0]["ebs"]["volumeInitializationRate"],
        serde_json::json!(300)
    );
    assert_eq!(
        notes_about(&m, "EC2NodeClass/training", "spec.networkInterfaces").len(),
        0,
        "{}",
        m.report()
    );

    let m = migrate(
        &input
            .replace(
                "volumeInitializationRate: 300",
                "volumeInitializationRate: 500",
            )
            .replace("udpTimeout: 45", "udpTimeout: 90")
            .replace(
                "deviceIndex: 0\n      interfaceType: interface",
                "deviceIndex: 0\n      interfaceType: efa-only",
            ),
    )
    .unwrap();
    for (path, message) in [
        (
            "spec.blockDeviceMappings[0].ebs.volumeInitializationRate",
            "must be between 100 and 300 MiB/s, got 500",
        ),
        (
            "spec.connectionTracking.udpTimeout",
            "must be between 30 and 60 seconds, got 90",
        ),
        (
            "spec.networkInterfaces",
            "must include the primary interface",
        ),
    ] {
        let n = notes_about(&m, "EC2NodeClass/training", path);
        assert!(
            n.iter().any(|n| n.action && n.message.contains(message)),
            "{path}: {}",
            m.report()
        );
    }
}

/// A v1 class's placementGroupSelector is carried as written; both id and name (which
/// Karpenter's all-fields example shows) is refused by validation at its path.
#[test]
fn placement_group_selector_is_carried_and_checked() {
    let class = "apiVersion: karpenter.k8s.aws/v1\nkind: EC2NodeClass\nmetadata: {name: hpc}\nspec:\n  role: KarpenterNodeRole-x\n  amiSelectorTerms: [{alias: al2023@latest}]\n  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: x}}]\n  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: x}}]\n";
    let m = migrate(&format!(
        "{class}  placementGroupSelector: {{name: training}}\n"
    ))
    .unwrap();
    assert_eq!(
        m.objects[0]["spec"]["placementGroupSelector"],
        serde_json::json!({"name": "training"}),
        "{}",
        m.report()
    );
    assert_eq!(m.actions(), 0, "{}", m.report());
    let m = migrate(&format!(
        "{class}  placementGroupSelector: {{name: training, id: pg-0123}}\n"
    ))
    .unwrap();
    let n = notes_about(&m, "EC2NodeClass/hpc", "spec.placementGroupSelector");
    assert!(
        n.iter()
            .any(|n| n.action && n.message.contains("exactly one of id or name")),
        "{}",
        m.report()
    );
}

/// The kubelet settings HPC and ML fleets tune (eviction grace, image GC, CFS quota) are carried
/// from every input version: a v1 EC2NodeClass, a v1beta1 pool's kubelet, and a v1alpha5
/// Provisioner's kubeletConfiguration, with no note about them.
#[test]
fn hpc_kubelet_settings_are_carried_from_v1_v1beta1_and_v1alpha5() {
    let tuning = serde_json::json!({
        "evictionMaxPodGracePeriod": 30,
        "imageGCHighThresholdPercent": 90,
        "imageGCLowThresholdPercent": 60,
        "cpuCFSQuota": false,
    });
    let class = "apiVersion: karpenter.k8s.aws/v1\nkind: EC2NodeClass\nmetadata: {name: hpc}\nspec:\n  role: KarpenterNodeRole-x\n  amiSelectorTerms: [{alias: al2023@latest}]\n  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: x}}]\n  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: x}}]\n";
    let block = "{evictionMaxPodGracePeriod: 30, imageGCHighThresholdPercent: 90, imageGCLowThresholdPercent: 60, cpuCFSQuota: false}";
    let v1 = format!("{class}  kubelet: {block}\n");
    let v1beta1 = format!(
        "apiVersion: karpenter.sh/v1beta1\nkind: NodePool\nmetadata: {{name: hpc}}\nspec:\n  template:\n    spec:\n      nodeClassRef: {{name: hpc}}\n      kubelet: {block}\n---\n{class}"
    );
    let v1alpha5 = format!(
        "apiVersion: karpenter.sh/v1alpha5\nkind: Provisioner\nmetadata: {{name: hpc}}\nspec:\n  kubeletConfiguration: {block}\n  providerRef: {{name: hpc}}\n---\n{class}"
    );
    for (version, input) in [("v1", v1), ("v1beta1", v1beta1), ("v1alpha5", v1alpha5)] {
        let m = migrate(&input).unwrap();
        let class = the_class(&m);
        assert_eq!(
            class["spec"]["kubelet"],
            tuning,
            "{version}: {}",
            m.report()
        );
        assert!(
            m.notes.iter().all(|n| !n.field.contains("kubelet.")),
            "{version}: no kubelet field is refused: {}",
            m.report()
        );
    }
}

#[test]
fn a_capacity_buffer_is_carried_unchanged_with_a_note() {
    let input = "apiVersion: autoscaling.x-k8s.io/v1alpha1\nkind: CapacityBuffer\nmetadata:\n  name: web\n  namespace: default\nspec:\n  podTemplateRef:\n    name: web\n  replicas: 2\n";
    let m = migrate(input).unwrap();
    assert!(m.not_converted.is_empty(), "{:?}", m.not_converted);
    assert_eq!(m.objects.len(), 1);
    assert_eq!(m.objects[0]["apiVersion"], "autoscaling.x-k8s.io/v1alpha1");
    assert_eq!(m.objects[0]["spec"]["replicas"], 2);
    let notes = notes_about(&m, "CapacityBuffer/web", "apiVersion");
    assert!(
        notes[0].message.contains("--capacity-buffers"),
        "{:?}",
        notes
    );
}

#[test]
fn the_interruptible_reservation_label_is_renamed_in_requirements() {
    // Karpenter v1.10+'s key (and EKS Auto Mode's) keeps its meaning under Adze's name: a pool
    // that keeps off interruptible reservations still does after the move.
    let input = r#"
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: steady
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: ["reserved", "on-demand"]}
        - {key: karpenter.k8s.aws/capacity-reservation-interruptible, operator: NotIn, values: ["true"]}
        - {key: eks.amazonaws.com/capacity-reservation-interruptible, operator: In, values: ["false"]}
"#;
    let m = migrate(input).unwrap();
    let reqs = m.objects[0]["spec"]["template"]["spec"]["requirements"]
        .as_array()
        .unwrap();
    let got: Vec<(&str, &str, &serde_json::Value)> = reqs
        .iter()
        .map(|r| {
            (
                r["key"].as_str().unwrap(),
                r["operator"].as_str().unwrap(),
                &r["values"],
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (
                "adze.sh/capacity-type",
                "In",
                &serde_json::json!(["reserved", "on-demand"])
            ),
            (
                "aws.adze.sh/capacity-reservation-interruptible",
                "NotIn",
                &serde_json::json!(["true"])
            ),
            (
                "aws.adze.sh/capacity-reservation-interruptible",
                "In",
                &serde_json::json!(["false"])
            ),
        ]
    );
    assert!(!m.incomplete(), "{}", m.report());
}

#[test]
fn fields_adze_s_crd_lacks_are_actions_at_their_path_and_not_printed() {
    let mut pool: Value = serde_yaml::from_str(GENERAL.split("\n---").next().unwrap()).unwrap();
    pool["spec"]["template2"] = serde_json::json!({});
    pool["spec"]["weightt"] = serde_json::json!(5);
    pool["spec"]["template"]["spec"]["requirments"] = serde_json::json!([{"key": "a"}]);
    let m = migrate(&serde_json::to_string(&pool).unwrap()).unwrap();
    let object = "NodePool/general-purpose";
    for field in [
        "spec.template2",
        "spec.weightt",
        "spec.template.spec.requirments",
    ] {
        let notes = notes_about(&m, object, field);
        assert_eq!(notes.len(), 1, "{field}: {}", m.report());
        assert!(notes[0].action);
        assert!(
            notes[0]
                .message
                .starts_with("not carried over: Adze's NodePool has no such field (was "),
            "{}",
            notes[0].message
        );
        assert!(
            m.report().contains(&format!(
                "ACTION: {object} {field}: not carried over: Adze's NodePool has no such field"
            )),
            "{}",
            m.report()
        );
    }
    let out = &m.objects[0];
    assert!(out["spec"].get("template2").is_none() && out["spec"].get("weightt").is_none());
    assert!(adze_api::validation::unknown_fields("NodePool", out).is_empty());
    assert!(m.incomplete());
}

#[test]
fn metadata_fields_object_meta_lacks_are_actions_at_their_path() {
    let mut pool: Value = serde_yaml::from_str(GENERAL.split("\n---").next().unwrap()).unwrap();
    pool["metadata"]["lables"] = serde_json::json!({"team": "a"});
    pool["metadata"]["nmae"] = serde_json::json!("x");
    // Known ObjectMeta fields that migrate does not copy are not actions.
    pool["metadata"]["uid"] = serde_json::json!("1234");
    let m = migrate(&serde_json::to_string(&pool).unwrap()).unwrap();
    let object = "NodePool/general-purpose";
    for field in ["metadata.lables", "metadata.nmae"] {
        let notes = notes_about(&m, object, field);
        assert_eq!(notes.len(), 1, "{field}: {}", m.report());
        assert!(notes[0].action);
        assert!(
            notes[0]
                .message
                .starts_with("not carried over: Kubernetes' ObjectMeta has no such field"),
            "{}",
            notes[0].message
        );
    }
    assert!(notes_about(&m, object, "metadata.uid").is_empty());
    let out = &m.objects[0];
    assert!(out["metadata"].get("lables").is_none());
    assert!(adze_api::validation::unknown_fields("NodePool", out).is_empty());
    assert!(m.incomplete());
}

/// Karpenter's `enclaveOptions` (Nitro Enclaves) is carried as written; a misspelt field in
/// it is reported at its path rather than dropped.
#[test]
fn nitro_enclave_options_are_carried_and_a_misspelt_field_is_reported() {
    let class = |enclave: &str| {
        format!(
            "apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata:
  name: enclaves
spec:
  role: KarpenterNodeRole-x
  amiSelectorTerms:
    - alias: al2023@latest
  subnetSelectorTerms:
    - tags:
        karpenter.sh/discovery: x
  securityGroupSelectorTerms:
    - tags:
        karpenter.sh/discovery: x
  enclaveOptions:
    {enclave}
"
        )
    };
    let m = migrate(&class("enabled: true")).unwrap();
    assert_eq!(m.actions(), 0, "{}", m.report());
    assert_eq!(
        m.objects[0]["spec"]["enclaveOptions"],
        serde_json::json!({"enabled": true})
    );
    let m = migrate(&class("enable: true")).unwrap();
    assert!(
        m.notes
            .iter()
            .any(|n| n.action && n.field.starts_with("spec.enclaveOptions")),
        "{}",
        m.report()
    );
}

#[test]
fn v1_15_kubelet_expressions_are_carried_and_checked() {
    let good = r#"
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: sized}
spec:
  role: KarpenterNodeRole
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]
  kubelet:
    maxPods: "min(110, default_enis * (ips_per_eni - 1))"
    kubeReserved: {cpu: "max(60, vcpus * 30)", memory: "11 * max_pods + 255", ephemeral-storage: 1Gi}
    systemReserved: {memory: "max(100, memory_mib / 64)"}
"#;
    let m = migrate(good).unwrap();
    assert_eq!(m.actions(), 0, "{}", m.report());
    let class: EC2NodeClass = serde_json::from_value(m.objects[0].clone()).unwrap();
    class.validate().unwrap();
    let kubelet = &m.objects[0]["spec"]["kubelet"];
    assert_eq!(
        kubelet["maxPods"],
        "min(110, default_enis * (ips_per_eni - 1))"
    );
    assert_eq!(kubelet["kubeReserved"]["memory"], "11 * max_pods + 255");
    assert_eq!(kubelet["kubeReserved"]["ephemeral-storage"], "1Gi");
    // An expression Adze cannot compile is named at its path, not carried.
    let bad = good
        .replace("11 * max_pods + 255", "11 * pods_max")
        .replace("min(110, default_enis * (ips_per_eni - 1))", "vcpus * 0.5");
    let m = migrate(&bad).unwrap();
    let fields: Vec<String> = m
        .notes
        .iter()
        .filter(|n| n.action)
        .map(|n| format!("{}: {}", n.field, n.message))
        .collect();
    let all = fields.join("\n");
    assert!(all.contains("spec.kubelet.maxPods"), "{all}");
    assert!(all.contains("convert one with double"), "{all}");
    assert!(all.contains("spec.kubelet.kubeReserved[memory]"), "{all}");
    assert!(all.contains("unknown variable \"pods_max\""), "{all}");
}

/// Karpenter v1.15 added kubelet fields to the EC2NodeClass (provider #9461); the ones Adze
/// has are carried as written, and one it does not have is refused by its path.
#[test]
fn v1_15_added_kubelet_fields_are_carried_or_refused_by_path() {
    let input = "apiVersion: karpenter.k8s.aws/v1\nkind: EC2NodeClass\nmetadata: {name: tuned}\nspec:\n  role: KarpenterNodeRole-x\n  amiSelectorTerms: [{alias: al2023@latest}]\n  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: x}}]\n  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: x}}]\n  kubelet: {podPidsLimit: 4096, eventRecordQPS: 10, eventBurst: 20, kubeAPIQPS: 30, kubeAPIBurst: 60}\n";
    let m = migrate(input).unwrap();
    let class = the_class(&m);
    assert_eq!(
        class["spec"]["kubelet"],
        serde_json::json!({"podPidsLimit": 4096, "eventRecordQPS": 10, "eventBurst": 20, "kubeAPIQPS": 30, "kubeAPIBurst": 60}),
        "{}",
        m.report()
    );
    assert!(
        m.notes.iter().all(|n| !n.field.contains("kubelet.")),
        "no kubelet field is refused: {}",
        m.report()
    );
    let m = migrate(&input.replace(
        "podPidsLimit: 4096",
        "shutdownGracePeriod: 2m30s, shutdownGracePeriodCriticalPods: 30s, streamingConnectionIdleTimeout: 5m, kernelMemcgNotification: true",
    ))
    .unwrap();
    let class = the_class(&m);
    assert_eq!(class["spec"]["kubelet"]["shutdownGracePeriod"], "2m30s");
    assert_eq!(
        class["spec"]["kubelet"]["shutdownGracePeriodCriticalPods"],
        "30s"
    );
    assert_eq!(
        class["spec"]["kubelet"]["streamingConnectionIdleTimeout"],
        "5m"
    );
    assert_eq!(class["spec"]["kubelet"]["kernelMemcgNotification"], true);
    // The family decides: AL2 passes kubelet settings only as flags, and kubelet has none for
    // the shutdown grace, so the class is refused at that path rather than dropped.
    let m = migrate(
        &input
            .replace("al2023@latest", "al2@latest")
            .replace("podPidsLimit: 4096", "shutdownGracePeriod: 30s"),
    )
    .unwrap();
    assert!(
        m.notes
            .iter()
            .any(|n| n.field.contains("kubelet.shutdownGracePeriod")
                && n.message.contains("not supported with AL2")),
        "the field is named with the reason: {}",
        m.report()
    );
    // AL2 has no way to write it: removed, the class still converts, the user decides.
    let class = the_class(&m);
    assert!(
        class["spec"]["kubelet"]
            .get("shutdownGracePeriod")
            .is_none()
    );
    // Custom: Karpenter writes no user data, so a tuning setting never reached kubelet there
    // either; removed as a change, the planning settings kept.
    let custom = input
        .replace(
            "amiSelectorTerms: [{alias: al2023@latest}]",
            "amiFamily: Custom\n  amiSelectorTerms: [{id: ami-0123456789abcdef0}]",
        )
        .replace(
            "kubelet: {podPidsLimit: 4096, eventRecordQPS: 10,",
            "kubelet: {maxPods: 32, cpuCFSQuota: false, eventRecordQPS: 10,",
        );
    let m = migrate(&custom).unwrap();
    let class = the_class(&m);
    assert_eq!(
        class["spec"]["kubelet"],
        serde_json::json!({"maxPods": 32}),
        "{}",
        m.report()
    );
    let report = m.report();
    assert!(
        report.contains("spec.kubelet.cpuCFSQuota")
            && report.contains("Karpenter does not apply it with Custom either"),
        "{report}"
    );
    assert_eq!(m.actions(), 0, "nothing changes for the nodes: {report}");
    // A field Adze does not have at all is named by its path.
    let m =
        migrate(&input.replace("podPidsLimit: 4096", "cpuManagerReconcilePeriod: 10s")).unwrap();
    assert!(
        m.notes
            .iter()
            .any(|n| n.field.contains("kubelet.cpuManagerReconcilePeriod")),
        "a field Adze does not have is named: {}",
        m.report()
    );
}

/// The one EC2NodeClass a conversion emitted; the report when there is none.
fn the_class(m: &Migration) -> &serde_json::Value {
    m.objects
        .iter()
        .find(|o| o["kind"] == "EC2NodeClass")
        .unwrap_or_else(|| panic!("no EC2NodeClass converted: {}", m.report()))
}
