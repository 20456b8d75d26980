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
fn unsupported_families_capacity_and_static_pools_need_action() {
    let m = migrate(LEGACY).unwrap();
    assert_eq!(
        m.objects.len(),
        2,
        "v1beta1 and the ConfigMap are not output"
    );
    let pool = &m.objects[0];
    assert!(
        pool["spec"]["template"]["spec"]["requirements"]
            .as_array()
            .unwrap()
            .is_empty(),
        "a requirement left without any capacity type is dropped"
    );
    let reserved = notes_about(
        &m,
        "NodePool/reserved-only",
        "spec.template.spec.requirements[0]",
    );
    assert!(
        reserved
            .iter()
            .any(|n| n.action && n.message.contains("reserved"))
    );
    let replicas = notes_about(&m, "NodePool/reserved-only", "spec.replicas");
    assert_eq!(replicas.len(), 1, "one note per field: {replicas:#?}");
    assert!(replicas[0].action && replicas[0].message.contains("here 3"));
    let family = notes_about(&m, "EC2NodeClass/windows", "spec.amiFamily");
    assert!(family[0].action && family[0].message.contains("Windows2022"));
    let alias = notes_about(&m, "EC2NodeClass/windows", "spec.amiSelectorTerms[0].alias");
    assert!(alias[0].message.contains("al2023@"));
    assert!(
        notes_about(
            &m,
            "EC2NodeClass/windows",
            "spec.capacityReservationSelectorTerms"
        )[0]
        .action
    );
    let old = notes_about(&m, "NodePool/old", "apiVersion");
    assert!(old[0].action && old[0].message.contains("v1beta1"));
    let skipped = notes_about(&m, "ConfigMap/unrelated", "apiVersion");
    assert!(skipped[0].action && skipped[0].message.contains("not converted"));
    assert_eq!(m.not_converted, ["NodePool/old", "ConfigMap/unrelated"]);
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
