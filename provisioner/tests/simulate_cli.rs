//! `adze-provisioner simulate` run as a user runs it, on every scenario in `examples/`.
//! The scenario is also read through the library, so the checks can hold each placement
//! against the pod's own constraints.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use adze_provisioner::simulate::{Report, Scenario};
use adze_scheduling::catalog::ec2_data;
use adze_scheduling::taints::first_untolerated;
use adze_scheduling::{Effect, Pod, Taint, labels};

const TOP_LEVEL_KEYS: [&str; 6] = [
    "nodeClaims",
    "existingNodes",
    "unschedulable",
    "totalPricePerHour",
    "costLowerBound",
    "elapsedMs",
];

const CLAIM_KEYS: [&str; 11] = [
    "name",
    "nodePool",
    "instanceType",
    "instanceTypeOptions",
    "zone",
    "capacityType",
    "pricePerHour",
    "labels",
    "taints",
    "allocatable",
    "pods",
];

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples")
        .join(name)
}

fn adze(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_adze-provisioner"))
        .args(args)
        .output()
        .expect("the binary runs")
}

fn simulate(path: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["simulate", path.to_str().unwrap()];
    args.extend_from_slice(extra);
    adze(&args)
}

fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8(out.stderr.clone()).unwrap()
}

/// The scenario as the library reads it, and the binary's JSON plan for it.
fn plan(name: &str, extra: &[&str]) -> (Scenario, Report) {
    let path = example(name);
    let mut args = vec!["--output", "json"];
    args.extend_from_slice(extra);
    let out = simulate(&path, &args);
    let json: serde_json::Value = serde_json::from_str(&stdout(&out))
        .unwrap_or_else(|e| panic!("{name}: {e}: {}", stderr(&out)));
    assert_exact_keys(&json);
    let report: Report = serde_json::from_value(json).unwrap();
    assert_exit_status(&out, &report);
    let scenario = Scenario::parse(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_every_pod_once(&scenario, &report);
    assert_claims_suit_their_pods(&scenario, &report);
    (scenario, report)
}

/// 0 when every pod is placed, 2 when some are left unschedulable (CI gates on it).
fn assert_exit_status(out: &Output, report: &Report) {
    let want = if report.unschedulable.is_empty() {
        0
    } else {
        2
    };
    assert_eq!(out.status.code(), Some(want), "{}", stderr(out));
}

fn keys(v: &serde_json::Value) -> BTreeSet<&str> {
    v.as_object()
        .expect("an object")
        .keys()
        .map(String::as_str)
        .collect()
}

fn assert_exact_keys(json: &serde_json::Value) {
    let mut top = keys(json);
    // Present only when the scenario has existing nodes (checked in its own test).
    top.remove("cost");
    assert_eq!(top, TOP_LEVEL_KEYS.into_iter().collect());
    for claim in json["nodeClaims"].as_array().unwrap() {
        let mut k = keys(claim);
        k.remove("bufferPods");
        assert_eq!(k, CLAIM_KEYS.into_iter().collect());
        for t in claim["taints"].as_array().unwrap() {
            assert_eq!(keys(t), ["key", "value", "effect"].into_iter().collect());
        }
    }
    for e in json["existingNodes"].as_array().unwrap() {
        let mut k = keys(e);
        k.remove("bufferPods");
        assert_eq!(k, ["name", "pods"].into_iter().collect());
    }
    for u in json["unschedulable"].as_array().unwrap() {
        assert_eq!(keys(u), ["pod", "reason"].into_iter().collect());
    }
}

/// Every pending pod is either placed or unschedulable, exactly once.
fn assert_every_pod_once(scenario: &Scenario, report: &Report) {
    let mut seen: Vec<&str> = report
        .node_claims
        .iter()
        .flat_map(|c| &c.pods)
        .chain(report.existing_nodes.iter().flat_map(|e| &e.pods))
        .map(String::as_str)
        .chain(report.unschedulable.iter().map(|u| u.pod.as_str()))
        .collect();
    seen.sort_unstable();
    let mut pending = scenario.pending_keys();
    pending.sort_unstable();
    assert_eq!(seen, pending);
}

fn pending_pod<'a>(scenario: &'a Scenario, key: &str) -> &'a Pod {
    scenario
        .snapshot
        .pending
        .iter()
        .find(|p| p.key() == key)
        .unwrap_or_else(|| panic!("{key} is not a pending pod"))
}

/// Each claim's labels satisfy one required node-affinity term of every pod on it, and the
/// pods tolerate its taints.
fn assert_claims_suit_their_pods(scenario: &Scenario, report: &Report) {
    for c in &report.node_claims {
        let taints: Vec<Taint> = c
            .taints
            .iter()
            .map(|t| Taint::new(&t.key, &t.value, Effect::parse(&t.effect).unwrap()))
            .collect();
        for key in &c.pods {
            let pod = pending_pod(scenario, key);
            assert!(
                pod.node_requirements
                    .iter()
                    .any(|term| term.matches_labels(&c.labels)),
                "{key} on {}: labels {:?} meet none of {:?}",
                c.name,
                c.labels,
                pod.node_requirements
            );
            assert_eq!(
                first_untolerated(&taints, &pod.tolerations, false),
                None,
                "{key} on {}",
                c.name
            );
        }
    }
}

/// Pod → (node or claim, zone), for placed pods.
fn placements(scenario: &Scenario, report: &Report) -> BTreeMap<String, (String, String)> {
    let mut out = BTreeMap::new();
    for c in &report.node_claims {
        for p in &c.pods {
            out.insert(p.clone(), (c.name.clone(), c.zone.clone()));
        }
    }
    for e in &report.existing_nodes {
        let node = scenario
            .snapshot
            .nodes
            .iter()
            .find(|n| n.name == e.name)
            .unwrap();
        let zone = node
            .requirements
            .get(labels::ZONE)
            .and_then(|r| r.single_value())
            .unwrap_or_default();
        for p in &e.pods {
            out.insert(p.clone(), (e.name.clone(), zone.to_string()));
        }
    }
    out
}

fn claims_of<'a>(
    report: &'a Report,
    pod_prefix: &str,
) -> Vec<&'a adze_provisioner::simulate::output::NodeClaimReport> {
    report
        .node_claims
        .iter()
        .filter(|c| c.pods.iter().any(|p| p.starts_with(pod_prefix)))
        .collect()
}

#[test]
fn inflate_places_every_replica_on_the_default_pool() {
    let (_, report) = plan("inflate.yaml", &[]);
    assert!(
        report.unschedulable.is_empty(),
        "{:?}",
        report.unschedulable
    );
    assert!(!report.node_claims.is_empty());
    for c in &report.node_claims {
        assert_eq!(c.node_pool, "default");
        assert!(["amd64", "arm64"].contains(&c.labels[labels::ARCH].as_str()));
        assert!(["on-demand", "spot"].contains(&c.capacity_type.as_str()));
        assert!(c.instance_type_options.contains(&c.instance_type));
        assert!(c.allocatable.contains_key("cpu") && c.allocatable.contains_key("memory"));
    }
    let total: f64 = report.node_claims.iter().map(|c| c.price_per_hour).sum();
    assert!((total - report.total_price_per_hour).abs() < 1e-3);
    assert!(report.cost_lower_bound <= report.total_price_per_hour);
}

#[test]
fn max_instance_types_caps_the_options() {
    let (_, report) = plan("inflate.yaml", &["--max-instance-types", "3"]);
    for c in &report.node_claims {
        assert!(
            c.instance_type_options.len() <= 3,
            "{:?}",
            c.instance_type_options
        );
    }
}

#[test]
fn gpu_pods_land_on_gpu_types_and_web_stays_on_default() {
    let (_, report) = plan("gpu-team.yaml", &[]);
    assert!(
        report.unschedulable.is_empty(),
        "{:?}",
        report.unschedulable
    );
    let gpu_types: BTreeSet<&str> = ec2_data::TYPES
        .iter()
        .filter(|t| t.gpu.is_some())
        .map(|t| t.name)
        .collect();
    let trainers = claims_of(&report, "ml/trainer-");
    assert!(!trainers.is_empty());
    for c in trainers {
        assert_eq!(c.node_pool, "gpu");
        assert!(
            gpu_types.contains(c.instance_type.as_str()),
            "{}",
            c.instance_type
        );
        assert_eq!(c.labels[labels::INSTANCE_CATEGORY], "g");
        assert!(c.allocatable["nvidia.com/gpu"].parse::<i64>().unwrap() >= 1);
        assert!(c.pods.iter().all(|p| p.starts_with("ml/trainer-")));
    }
    let web = claims_of(&report, "shop/web-");
    assert!(!web.is_empty());
    for c in web {
        assert_eq!(c.node_pool, "default");
        assert!(c.taints.is_empty());
    }
}

#[test]
fn zone_spread_keeps_the_skew_within_one() {
    let (scenario, report) = plan("zone-spread.yaml", &[]);
    assert!(
        report.unschedulable.is_empty(),
        "{:?}",
        report.unschedulable
    );
    let mut per_zone: BTreeMap<&str, usize> = ec2_data::ZONES.iter().map(|z| (*z, 0)).collect();
    let placed = placements(&scenario, &report);
    for (pod, (_, zone)) in &placed {
        if pod.starts_with("default/web-") {
            *per_zone.get_mut(zone.as_str()).unwrap() += 1;
        }
    }
    let (min, max) = (
        per_zone.values().min().unwrap(),
        per_zone.values().max().unwrap(),
    );
    assert!(max - min <= 1, "{per_zone:?}");
    assert_eq!(per_zone.values().sum::<usize>(), 7);
    assert_eq!(scenario.snapshot.daemonsets.len(), 1);
}

#[test]
fn anti_affinity_puts_each_cache_replica_on_its_own_node() {
    let (scenario, report) = plan("anti-affinity.yaml", &[]);
    assert!(
        report.unschedulable.is_empty(),
        "{:?}",
        report.unschedulable
    );
    let placed = placements(&scenario, &report);
    let existing = "ip-10-0-1-10.ec2.internal";
    let mut cache_nodes: Vec<&str> = placed
        .iter()
        .filter(|(p, _)| p.starts_with("default/cache-"))
        .map(|(_, (node, _))| node.as_str())
        .collect();
    // The replica already running there counts too.
    cache_nodes.push(existing);
    let distinct: BTreeSet<&str> = cache_nodes.iter().copied().collect();
    assert_eq!(distinct.len(), cache_nodes.len(), "{cache_nodes:?}");
    assert_eq!(cache_nodes.len(), 5);
    let batch_on_existing = placed
        .iter()
        .filter(|(p, (node, _))| p.starts_with("default/batch-") && node == existing)
        .count();
    assert_eq!(
        batch_on_existing, 3,
        "batch pods fit on the existing node first"
    );
}

#[test]
fn custom_catalog_types_are_the_only_ones_used() {
    let (scenario, report) = plan("custom-catalog.yaml", &[]);
    assert!(scenario.custom_catalog);
    assert!(
        report.unschedulable.is_empty(),
        "{:?}",
        report.unschedulable
    );
    let catalog: BTreeSet<&str> = ["small.2x", "medium.4x", "arm.4x"].into();
    for c in &report.node_claims {
        assert!(
            catalog.contains(c.instance_type.as_str()),
            "{}",
            c.instance_type
        );
        for o in &c.instance_type_options {
            assert!(catalog.contains(o.as_str()), "{o}");
        }
        assert!(["test-1a", "test-1b"].contains(&c.zone.as_str()));
        assert!(
            !(c.instance_type == "small.2x" && c.zone == "test-1a" && c.capacity_type == "spot"),
            "the unavailable offering was used: {}",
            c.name
        );
    }
    for c in claims_of(&report, "default/zonal-") {
        assert_eq!(c.zone, "test-1a");
    }
}

#[test]
fn an_invalid_nodepool_fails_naming_the_field_and_prints_no_plan() {
    let out = simulate(&example("invalid-nodepool.yaml"), &[]);
    assert!(!out.status.success());
    assert_eq!(stdout(&out), "");
    let err = stderr(&out);
    assert!(err.contains("document 1 (NodePool default)"), "{err}");
    assert!(
        err.contains("spec.template.spec.requirements[1].values"),
        "{err}"
    );
}

#[test]
fn table_output_has_a_row_per_claim_and_the_summary_line() {
    let out = simulate(&example("inflate.yaml"), &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let (_, report) = plan("inflate.yaml", &[]);
    let summary = text
        .lines()
        .find(|l| l.contains("placed on new capacity"))
        .unwrap_or_else(|| panic!("no summary line in\n{text}"));
    let n = report.node_claims.len();
    let claims = if n == 1 { "nodeclaim" } else { "nodeclaims" };
    assert!(
        summary.starts_with(&format!(
            "{n} {claims}, 10 pods placed on new capacity, 0 on existing nodes, 0 unschedulable; total $"
        )),
        "{summary}"
    );
    assert!(summary.contains("lower bound $") && summary.contains("(ratio "));
    assert!(summary.ends_with(" ms"), "{summary}");
    assert!(text.contains("NODECLAIM") && text.contains("INSTANCE TYPE"));
    for c in &report.node_claims {
        assert!(text.contains(&c.instance_type), "{text}");
    }
}

#[path = "support/scratch.rs"]
mod support_scratch;

/// Writes a scenario to a temporary file named after the test.
fn scratch(name: &str, yaml: &str) -> PathBuf {
    support_scratch::scratch("simulate", name, yaml)
}

fn fails_with(name: &str, yaml: &str, expected: &[&str]) {
    let path = scratch(name, yaml);
    let out = simulate(&path, &["--output", "json"]);
    let _ = std::fs::remove_file(&path);
    assert!(!out.status.success());
    assert_eq!(
        stdout(&out),
        "",
        "nothing on stdout when the scenario is bad"
    );
    let err = stderr(&out);
    for e in expected {
        assert!(err.contains(e), "{e:?} not in {err}");
    }
}

#[test]
fn bad_scenarios_name_the_document() {
    fails_with(
        "unknown-kind",
        "---\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
        &["document 2 (ConfigMap x)", "\"ConfigMap\""],
    );
    fails_with(
        "karpenter-group",
        "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: default}\nspec: {}\n",
        &[
            "document 1 (NodePool default): NodePool must have apiVersion adze.sh/v1, got \"karpenter.sh/v1\"",
        ],
    );
    fails_with(
        "malformed",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec: {containers: 7}\n",
        &["document 1 (Pod web): malformed"],
    );
    fails_with(
        "missing-node",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec: {nodeName: gone, containers: []}\n",
        &["document 1 (Pod web)", "spec.nodeName", "\"gone\""],
    );
    fails_with(
        "bad-quantity",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec: {containers: [{name: a, resources: {requests: {cpu: abc}}}]}\n",
        &["pod default/web: spec.containers[0].resources.requests.cpu: invalid quantity \"abc\""],
    );
    fails_with(
        "bad-catalog",
        "apiVersion: adze.sh/v1alpha1\nkind: InstanceCatalog\ninstanceTypes:\n  - {name: a, cpu: 2, memory: 4Gi, pods: 10, arch: amd64, offerings: [{zone: z, capacityType: reserved, price: 1}]}\n",
        &["document 1", "instanceTypes[0].offerings[0].capacityType"],
    );
    fails_with(
        "duplicate-pod",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: web-0}\nspec: {containers: []}\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: {replicas: 1, selector: {}, template: {spec: {containers: []}}}\n",
        &[
            "document 2",
            "pod default/web-0 is defined twice (first in document 1)",
        ],
    );
}

#[test]
fn daemonset_pods_charge_existing_nodes_and_never_wait() {
    let path = scratch(
        "daemons",
        r#"
apiVersion: v1
kind: Node
metadata: {name: small, labels: {kubernetes.io/os: linux}}
status: {allocatable: {cpu: "1", memory: 4Gi, pods: "10"}}
---
apiVersion: v1
kind: Node
metadata: {name: tainted}
spec: {taints: [{key: dedicated, value: db, effect: NoSchedule}]}
status: {allocatable: {cpu: "1", memory: 4Gi, pods: "10"}}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: kube-system}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      containers: [{name: a, resources: {requests: {cpu: 600m}}}]
---
apiVersion: v1
kind: Pod
metadata:
  name: agent-pending
  namespace: kube-system
  ownerReferences: [{apiVersion: apps/v1, kind: DaemonSet, name: agent, uid: "1"}]
spec: {containers: [{name: a, resources: {requests: {cpu: 600m}}}]}
---
apiVersion: v1
kind: Pod
metadata: {name: web}
spec: {containers: [{name: a, resources: {requests: {cpu: 600m}}}]}
"#,
    );
    let out = simulate(&path, &["--output", "json"]);
    let scenario = Scenario::parse(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let _ = std::fs::remove_file(&path);
    assert_exit_status(&out, &serde_json::from_str(&stdout(&out)).unwrap());
    assert_eq!(scenario.pending_keys(), vec!["default/web".to_string()]);
    // The daemon runs on "small" (leaving 400m) but not on "tainted" (not tolerated).
    let daemon_nodes: Vec<&str> = scenario
        .snapshot
        .bound
        .iter()
        .filter(|b| b.daemon)
        .map(|b| b.node.as_str())
        .collect();
    assert_eq!(daemon_nodes, vec!["small"]);
    let report = support_scratch::report(&out);
    assert_eq!(report.unschedulable.len(), 1, "{report:?}");
    assert_eq!(report.unschedulable[0].pod, "default/web");
}

#[test]
fn unschedulable_pods_exit_two_unless_allowed_and_yaml_carries_the_json_fields() {
    let path = scratch(
        "too-big",
        r#"
apiVersion: adze.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: aws.adze.sh, kind: EC2NodeClass, name: default}
---
apiVersion: v1
kind: Pod
metadata: {name: small}
spec: {containers: [{name: a, resources: {requests: {cpu: "1"}}}]}
---
apiVersion: v1
kind: Pod
metadata: {name: huge}
spec: {containers: [{name: a, resources: {requests: {cpu: "5000"}}}]}
"#,
    );
    let json = simulate(&path, &["--output", "json"]);
    let yaml = simulate(&path, &["--output", "yaml"]);
    let allowed = simulate(&path, &["--allow-unschedulable"]);
    let _ = std::fs::remove_file(&path);
    assert_eq!(json.status.code(), Some(2), "{}", stderr(&json));
    assert!(
        stderr(&json).contains("1 pod(s) unschedulable"),
        "{}",
        stderr(&json)
    );
    assert_eq!(yaml.status.code(), Some(2));
    assert_eq!(allowed.status.code(), Some(0), "{}", stderr(&allowed));
    let from_json: serde_json::Value = serde_json::from_str(&stdout(&json)).unwrap();
    let mut from_yaml: serde_json::Value = serde_yaml::from_str(&stdout(&yaml)).unwrap();
    // Timing differs between runs; everything else is the same plan.
    from_yaml["elapsedMs"] = from_json["elapsedMs"].clone();
    assert_eq!(from_yaml, from_json);
    assert_eq!(from_json["unschedulable"].as_array().unwrap().len(), 1);
}

/// A pod that asks for devices through DRA is left pending with a reason naming
/// `spec.resourceClaims`, not planned on its cpu alone (a node that may hold no device);
/// a bound pod with claims still takes its room.
#[test]
fn dra_pods_stay_pending_naming_resource_claims() {
    let path = scratch(
        "dra",
        r#"
apiVersion: adze.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: aws.adze.sh, kind: EC2NodeClass, name: default}
---
apiVersion: v1
kind: Pod
metadata: {name: plain}
spec: {containers: [{name: a, resources: {requests: {cpu: "1"}}}]}
---
apiVersion: v1
kind: Pod
metadata: {name: gpu-claim}
spec:
  resourceClaims: [{name: gpu, resourceClaimTemplateName: one-gpu}]
  containers: [{name: a, resources: {requests: {cpu: "1"}, claims: [{name: gpu}]}}]
"#,
    );
    let out = simulate(&path, &["--output", "json"]);
    let _ = std::fs::remove_file(&path);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let report = support_scratch::report(&out);
    assert_eq!(report.unschedulable.len(), 1, "{report:?}");
    assert_eq!(report.unschedulable[0].pod, "default/gpu-claim");
    let reason = &report.unschedulable[0].reason;
    assert!(
        reason.contains("spec.resourceClaims") && reason.contains("Dynamic Resource Allocation"),
        "{reason}"
    );
    assert_eq!(
        report
            .node_claims
            .iter()
            .map(|c| c.pods.len())
            .sum::<usize>(),
        1,
        "only the plain pod is planned: {report:?}"
    );
}

#[test]
fn ec2_named_catalog_types_satisfy_a_family_min_values_pool() {
    let ty = |name: &str, price: f64| {
        format!(
            "  - {{name: {name}, cpu: 2, memory: 4Gi, pods: 29, arch: amd64, offerings: [{{zone: test-1a, capacityType: on-demand, price: {price}}}]}}\n"
        )
    };
    let yaml = format!(
        r#"apiVersion: adze.sh/v1alpha1
kind: InstanceCatalog
instanceTypes:
{}{}{}---
apiVersion: adze.sh/v1
kind: NodePool
metadata: {{name: default}}
spec:
  template:
    spec:
      nodeClassRef: {{group: aws.adze.sh, kind: EC2NodeClass, name: default}}
      requirements:
        - {{key: aws.adze.sh/instance-family, operator: Exists, minValues: 3}}
---
apiVersion: v1
kind: Pod
metadata: {{name: web}}
spec: {{containers: [{{name: a, resources: {{requests: {{cpu: "1"}}}}}}]}}
"#,
        ty("c5.large", 0.085),
        ty("m5.large", 0.096),
        ty("r5.large", 0.126)
    );
    let path = scratch("ec2-named", &yaml);
    let out = simulate(&path, &["--output", "json"]);
    let _ = std::fs::remove_file(&path);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let report = support_scratch::report(&out);
    assert_eq!(report.node_claims.len(), 1);
    let claim = &report.node_claims[0];
    assert_eq!(claim.instance_type_options.len(), 3, "{claim:?}");
    assert_eq!(claim.labels[labels::INSTANCE_FAMILY], "c5");
}

#[test]
fn karpenter_keys_are_planned_for_and_put_on_nodes_only_with_karpenter_labels() {
    let path = scratch(
        "karpenter-keys",
        r#"
apiVersion: adze.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: aws.adze.sh, kind: EC2NodeClass, name: default}
---
apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  nodeSelector: {karpenter.sh/capacity-type: spot, karpenter.k8s.aws/instance-family: m5}
  affinity:
    podAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        - labelSelector: {matchLabels: {app: web}}
          topologyKey: karpenter.sh/nodepool
  containers: [{name: a, resources: {requests: {cpu: "1"}}}]
"#,
    );
    let without = simulate(&path, &["--output", "json"]);
    let with = simulate(&path, &["--output", "json", "--karpenter-labels"]);
    let _ = std::fs::remove_file(&path);
    assert_eq!(without.status.code(), Some(2), "{}", stderr(&without));
    assert_eq!(with.status.code(), Some(0), "{}", stderr(&with));
    let report = support_scratch::report(&with);
    let l = &report.node_claims[0].labels;
    assert_eq!(l[labels::CAPACITY_TYPE], "spot");
    assert_eq!(l["karpenter.sh/capacity-type"], "spot");
    assert_eq!(l[labels::INSTANCE_FAMILY], "m5");
    assert_eq!(l["karpenter.k8s.aws/instance-family"], "m5");
}

/// Built without the `controller` feature (README's first command), `run` and its flags are
/// refused naming the feature instead of being parsed and ignored. `.ci/run` runs this file
/// with --no-default-features.
#[cfg(not(feature = "controller"))]
#[test]
fn without_the_controller_feature_run_is_refused_naming_it() {
    let out = adze(&["run", "--cloud-provider", "simulated", "--kubeconfig", "/x"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("run:") && err.contains("`controller` feature"),
        "{err}"
    );
}

/// Without the `controller` feature there is no Kubernetes client: `snapshot` and
/// `simulate --from-cluster` are refused naming the feature, never ignored.
#[cfg(not(feature = "controller"))]
#[test]
fn without_the_controller_feature_the_cluster_snapshot_is_refused_naming_it() {
    for args in [
        &["simulate", "--from-cluster"][..],
        &[
            "simulate",
            "--from-cluster",
            "--disruption",
            "--save",
            "/tmp/x.yaml",
        ],
        &["snapshot", "--save", "/tmp/x.yaml"],
    ] {
        let out = adze(args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = stderr(&out);
        assert!(err.contains("`controller` feature"), "{args:?}: {err}");
        assert!(stdout(&out).is_empty(), "{args:?}: nothing planned");
    }
}

/// With the client but no cluster, `--from-cluster` fails at the kubeconfig, saying so,
/// rather than planning an empty cluster.
#[cfg(feature = "controller")]
#[test]
fn from_cluster_without_a_cluster_fails_naming_the_kubeconfig() {
    let out = adze(&[
        "simulate",
        "--from-cluster",
        "--kubeconfig",
        "/nonexistent/kubeconfig",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("/nonexistent/kubeconfig"), "{err}");
    assert!(stdout(&out).is_empty());
    // A file and the cluster at once, or a cluster flag without the cluster: refused.
    let both = adze(&[
        "simulate",
        "--from-cluster",
        example("inflate.yaml").to_str().unwrap(),
    ]);
    assert_eq!(both.status.code(), Some(2), "{}", stderr(&both));
    let lone = adze(&[
        "simulate",
        "--save",
        "/tmp/x",
        example("inflate.yaml").to_str().unwrap(),
    ]);
    assert_eq!(lone.status.code(), Some(1));
    assert!(lone.stdout.is_empty());
    assert!(
        stderr(&lone).contains("--save reads the cluster: it needs --from-cluster"),
        "{}",
        stderr(&lone)
    );
}

/// A scenario with existing nodes: the cost per NodePool today and with the new capacity, in
/// the table and the JSON.
#[test]
fn the_cost_per_nodepool_today_and_after_is_printed() {
    let path = example("disruption.yaml");
    let out = simulate(&path, &["--allow-unschedulable", "--output", "json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let cost = json["cost"].as_array().expect("cost with existing nodes");
    let pool = cost.iter().find(|c| c["nodepool"] == "default").unwrap();
    assert_eq!(pool["nodesBefore"], 4);
    // 2 medium (0.19) + 1 large (0.38) + busy's type, from the scenario's catalog.
    assert!(pool["before"].as_f64().unwrap() > 0.7, "{pool}");
    let added: f64 = json["nodeClaims"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["nodePool"] == "default")
        .map(|c| c["pricePerHour"].as_f64().unwrap())
        .sum();
    let after = pool["after"].as_f64().unwrap();
    assert!(
        (after - pool["before"].as_f64().unwrap() - added).abs() < 1e-3,
        "{pool}"
    );
    let table = stdout(&simulate(&path, &["--allow-unschedulable"]));
    assert!(
        table.contains("Cost per NodePool, today and with the plan's new capacity:"),
        "{table}"
    );
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("default ") && l.contains(" 4 ")),
        "{table}"
    );
    // No existing nodes: no cost section.
    let inflate = simulate(&example("inflate.yaml"), &["--output", "json"]);
    let json: serde_json::Value = serde_json::from_slice(&inflate.stdout).unwrap();
    assert!(json.get("cost").is_none());
}

/// Built with the controller but without the `aws` feature, `run` refuses what needs it by
/// name instead of starting without it.
#[cfg(all(feature = "controller", not(feature = "aws")))]
#[test]
fn without_the_aws_feature_run_refuses_the_aws_provider_by_name() {
    let out = adze(&["run", "--cloud-provider", "aws", "--cluster-name", "demo"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("--cloud-provider aws") && err.contains("`aws` feature"),
        "{err}"
    );
}

/// The example's text without its NodeOverlay documents.
fn without_overlays(text: &str) -> String {
    text.split("\n---\n")
        .filter(|doc| !doc.contains("kind: NodeOverlay"))
        .collect::<Vec<_>>()
        .join("\n---\n")
}

#[test]
fn node_overlays_change_the_cheapest_type_and_add_a_licence() {
    let text = std::fs::read_to_string(example("node-overlay.yaml")).unwrap();
    let bare = Scenario::parse(&without_overlays(&text)).unwrap();
    let without = adze_provisioner::simulate::run(&bare, 20).plan;
    let web_types = |plan: &adze_scheduling::Plan| -> BTreeSet<String> {
        plan.new_claims
            .iter()
            .filter(|c| c.pods.iter().any(|p| p.starts_with("default/web-")))
            .map(|c| c.instance_type.clone())
            .collect()
    };
    assert_eq!(
        web_types(&without),
        BTreeSet::from(["c5.large".to_string()])
    );
    assert_eq!(
        without
            .unschedulable
            .iter()
            .map(|u| u.pod.as_str())
            .collect::<Vec<_>>(),
        vec!["default/licensed"],
        "no type has example.com/license without the overlay"
    );

    let (scenario, report) = plan("node-overlay.yaml", &[]);
    assert_eq!(scenario.counts.nodeoverlays, 2);
    assert!(
        report.unschedulable.is_empty(),
        "{:?}",
        report.unschedulable
    );
    let with = adze_provisioner::simulate::run(&scenario, 20).plan;
    assert_eq!(web_types(&with), BTreeSet::from(["m5.large".to_string()]));
    let licensed = with
        .new_claims
        .iter()
        .find(|c| c.pods.iter().any(|p| p == "default/licensed"))
        .expect("the licensed pod is planned");
    assert_eq!(licensed.instance_type, "m5.large");
    assert_eq!(licensed.allocatable.get("example.com/license"), 2);
    for claim in &with.new_claims {
        assert!(
            (claim.price_per_hour - 0.096 * 0.8).abs() < 1e-9,
            "m5.large at 20% off: {}",
            claim.price_per_hour
        );
    }

    // Every m5 size of the catalog the pool plans from (its requirements narrow placement, not
    // the catalog).
    let table = stdout(&simulate(&example("node-overlay.yaml"), &[]));
    assert!(
        table.contains("NodeOverlay m5-savings-plan: applied to 9 NodePool instance types"),
        "{table}"
    );
}

#[test]
fn conflicting_and_invalid_overlays_are_reported() {
    let text = std::fs::read_to_string(example("node-overlay.yaml")).unwrap();
    let rival = "apiVersion: adze.sh/v1alpha1\nkind: NodeOverlay\nmetadata: {name: a-rival}\nspec:\n  priceAdjustment: \"+50%\"\n";
    let conflicting = format!("{text}\n---\n{rival}");
    let scenario = Scenario::parse(&conflicting).unwrap();
    assert_eq!(
        scenario.overlays.get("a-rival"),
        Some(&adze_provisioner::rules::OverlayVerdict::Conflict {
            with: "m5-savings-plan".into()
        }),
        "equal weights: the name later in the alphabet wins"
    );
    let plan = adze_provisioner::simulate::run(&scenario, 20).plan;
    assert!(
        plan.new_claims
            .iter()
            .all(|c| c.instance_type == "m5.large")
    );

    let invalid = format!(
        "{text}\n---\napiVersion: adze.sh/v1alpha1\nkind: NodeOverlay\nmetadata: {{name: bad}}\nspec: {{price: \"1\", priceAdjustment: \"-1%\", capacity: {{memory: 1Gi}}}}\n"
    );
    let err = Scenario::parse(&invalid).unwrap_err().to_string();
    assert!(err.contains("NodeOverlay bad"), "{err}");
    assert!(
        err.contains("spec: cannot set both price and priceAdjustment"),
        "{err}"
    );
    assert!(err.contains("spec.capacity[memory]"), "{err}");
}

/// The scenario's classes, with the pool pointing at `class`.
fn families_scenario(class_alias: &str) -> String {
    format!(
        r#"apiVersion: aws.adze.sh/v1
kind: EC2NodeClass
metadata: {{name: mixed}}
spec:
  role: node
  amiSelectorTerms: [{{alias: "{class_alias}"}}]
  subnetSelectorTerms: [{{id: subnet-0123}}]
  securityGroupSelectorTerms: [{{id: sg-0123}}]
---
apiVersion: adze.sh/v1
kind: NodePool
metadata: {{name: win}}
spec:
  template:
    spec:
      nodeClassRef: {{group: aws.adze.sh, kind: EC2NodeClass, name: mixed}}
---
apiVersion: v1
kind: Pod
metadata: {{name: p}}
spec: {{containers: [{{name: a, resources: {{requests: {{cpu: "1"}}}}}}]}}
"#
    )
}

#[test]
fn a_windows_pod_gets_a_windows_node_at_the_windows_price_and_the_linux_pod_a_linux_one() {
    let (_, report) = plan("windows.yaml", &[]);
    assert!(
        report.unschedulable.is_empty(),
        "{:?}",
        report.unschedulable
    );
    assert_eq!(report.node_claims.len(), 2);
    let claim = |pool: &str| {
        report
            .node_claims
            .iter()
            .find(|c| c.node_pool == pool)
            .unwrap_or_else(|| panic!("no {pool} claim: {report:?}"))
    };
    let windows = claim("windows");
    assert_eq!(windows.pods.len(), 1);
    assert!(windows.pods[0].starts_with("default/iis-"), "{windows:?}");
    assert_eq!(windows.instance_type, "m5.large");
    assert_eq!(windows.price_per_hour, 0.188, "Windows, licence included");
    assert_eq!(windows.labels[labels::OS], "windows");
    assert_eq!(windows.labels[labels::WINDOWS_BUILD], "10.0.20348");
    assert_eq!(windows.allocatable["pods"], "9", "primary interface only");
    let linux = claim("linux");
    assert!(linux.pods[0].starts_with("default/web-"), "{linux:?}");
    assert_eq!(linux.instance_type, "m5.large");
    assert_eq!(linux.price_per_hour, 0.096);
    assert_eq!(linux.labels[labels::OS], "linux");
    assert_eq!(linux.allocatable["pods"], "29");
    assert!((report.total_price_per_hour - 0.284).abs() < 1e-9);
}

#[test]
fn every_windows_family_plans_with_its_own_build_and_al2_stays_linux() {
    for (alias, build) in [
        ("windows2019@latest", "10.0.17763"),
        ("windows2022@latest", "10.0.20348"),
        ("windows2025@latest", "10.0.26100"),
    ] {
        let s = Scenario::parse(&families_scenario(alias)).unwrap();
        let pool = &s.snapshot.nodepools[0];
        assert!(!pool.instance_types.is_empty(), "{alias}");
        for t in &pool.instance_types {
            assert_eq!(t.label(labels::OS), Some("windows"), "{alias} {}", t.name);
            assert_eq!(t.label(labels::WINDOWS_BUILD), Some(build));
            assert_eq!(t.label(labels::ARCH), Some("amd64"));
        }
        let m5 = pool
            .instance_types
            .iter()
            .find(|t| t.name == "m5.large")
            .unwrap();
        let on_demand = m5
            .offerings
            .iter()
            .find(|o| o.capacity_type == "on-demand")
            .unwrap();
        assert_eq!(on_demand.price, 0.188, "{alias}");
    }
    let s = Scenario::parse(&families_scenario("al2@latest")).unwrap();
    let pool = &s.snapshot.nodepools[0];
    assert!(
        pool.instance_types
            .iter()
            .any(|t| t.label(labels::ARCH) == Some("arm64"))
    );
    assert!(
        pool.instance_types
            .iter()
            .all(|t| t.label(labels::OS) == Some("linux"))
    );
}

/// The cheapest embedded type (us-east-1, on-demand) that `keep` accepts and that has room
/// for a pod of `cpu` cores and `mem_gib` GiB beside the node's own reservations.
fn cheapest_embedded(keep: impl Fn(&ec2_data::Ec2Type) -> bool, cpu: u32, mem_gib: u64) -> String {
    ec2_data::TYPES
        .iter()
        .filter(|t| keep(t) && t.vcpu > cpu && t.memory_mib > mem_gib * 1024)
        .min_by(|a, b| a.on_demand_usd.total_cmp(&b.on_demand_usd))
        .map(|t| t.name.to_string())
        .unwrap()
}

#[test]
fn local_nvme_pools_plan_onto_the_cheapest_instance_store_types() {
    let (_, report) = plan("local-nvme.yaml", &[]);
    assert!(
        report.unschedulable.is_empty(),
        "{:?}",
        report.unschedulable
    );
    let nvme = |name: &str| ec2_data::find(name).unwrap().local_nvme_gb;

    // `instance-local-nvme Gt 100`, either architecture: Graviton2's c6gd.large (118 GB)
    // undercuts every other type with more than 100 GB of local disk.
    let etl = claims_of(&report, "data/etl-");
    assert_eq!(etl.len(), 1);
    let c = etl[0];
    assert_eq!(c.node_pool, "scratch");
    assert_eq!(c.instance_type, "c6gd.large");
    assert_eq!(
        c.instance_type,
        cheapest_embedded(|t| t.local_nvme_gb > 100, 1, 2)
    );
    assert_eq!(c.labels[labels::INSTANCE_LOCAL_NVME], "118");
    assert_eq!(c.price_per_hour, 0.0768);
    for t in &c.instance_type_options {
        assert!(nvme(t) > 100, "{t} has {} GB of local NVMe", nvme(t));
    }
    assert!(
        c.instance_type_options.contains(&"c5d.2xlarge".to_string()),
        "the Intel d types are options too: {:?}",
        c.instance_type_options
    );
    assert!(
        !c.instance_type_options.contains(&"c5d.xlarge".to_string()),
        "c5d.xlarge has exactly 100 GB, not more"
    );

    // `instance-family In [m6id]`: the smallest m6id that holds 3 CPUs and 12 GiB.
    let db = claims_of(&report, "data/postgres-");
    assert_eq!(db.len(), 1);
    let c = db[0];
    assert_eq!(c.node_pool, "db");
    assert_eq!(c.instance_type, "m6id.xlarge");
    assert_eq!(c.labels[labels::INSTANCE_FAMILY], "m6id");
    assert_eq!(c.labels[labels::INSTANCE_LOCAL_NVME], "237");
    assert_eq!(c.price_per_hour, 0.2373);
    assert!(
        c.instance_type_options
            .iter()
            .all(|t| t.starts_with("m6id."))
    );
}

#[test]
fn an_amd64_only_local_nvme_pool_takes_the_cheapest_intel_d_type() {
    let text = std::fs::read_to_string(example("local-nvme.yaml")).unwrap();
    let amd64 = text.replace(r#"values: ["amd64", "arm64"]"#, r#"values: ["amd64"]"#);
    assert_ne!(amd64, text);
    let path = scratch("local-nvme-amd64", &amd64);
    let out = simulate(&path, &["--output", "json"]);
    let _ = std::fs::remove_file(&path);
    let report = support_scratch::report(&out);
    let etl = claims_of(&report, "data/etl-");
    // c5d.large ($0.096) is cheaper but has 50 GB; c6id.large (118 GB, $0.1008) is the
    // cheapest amd64 type with more than 100 GB.
    assert_eq!(etl[0].instance_type, "c6id.large");
    assert_eq!(
        etl[0].instance_type,
        cheapest_embedded(|t| t.local_nvme_gb > 100 && t.arch == "amd64", 1, 2)
    );
    assert_eq!(etl[0].labels[labels::ARCH], "amd64");
    assert_eq!(etl[0].labels[labels::INSTANCE_LOCAL_NVME], "118");
}

#[test]
fn capacity_buffers_launch_spare_room_after_the_real_pods_and_say_which() {
    let (scenario, report) = plan("capacity-buffer.yaml", &[]);
    assert!(
        report.unschedulable.is_empty(),
        "{:?}",
        report.unschedulable
    );
    let buffer: BTreeSet<&str> = scenario.buffer_pods.iter().map(String::as_str).collect();
    assert_eq!(
        buffer,
        [
            "default/web-burst-buffer-0",
            "default/web-burst-buffer-1",
            "default/web-headroom-buffer-0",
            "default/web-headroom-buffer-1",
        ]
        .into_iter()
        .collect(),
        "replicas 3 capped by limits.cpu 5 at 2; 50% of 4 web replicas is 2"
    );
    let marked: BTreeSet<&str> = report
        .node_claims
        .iter()
        .flat_map(|c| &c.buffer_pods)
        .map(String::as_str)
        .collect();
    assert_eq!(
        marked, buffer,
        "every placeholder is launched for and marked"
    );
    for c in &report.node_claims {
        for b in &c.buffer_pods {
            assert!(c.pods.contains(b));
        }
    }
    // The real pods are planned too, and come first: placeholders are the lowest priority.
    let web = report
        .node_claims
        .iter()
        .flat_map(|c| &c.pods)
        .filter(|p| p.starts_with("default/web-") && !buffer.contains(p.as_str()))
        .count();
    assert_eq!(web, 4);
    let path = example("capacity-buffer.yaml");
    let table = stdout(&simulate(&path, &[]));
    assert!(
        table.contains("2 CapacityBuffers: 4 placeholder pods"),
        "{table}"
    );
    assert!(table.contains(" buffer)"), "{table}");
}

#[test]
fn a_capacity_buffer_adze_cannot_honour_fails_naming_its_field() {
    let pool = std::fs::read_to_string(example("capacity-buffer.yaml")).unwrap();
    let head: String = pool
        .split("\n---\n")
        .take(2)
        .collect::<Vec<_>>()
        .join("\n---\n");
    fails_with(
        "buffer-strategy",
        &format!(
            "{head}\n---\napiVersion: autoscaling.x-k8s.io/v1alpha1\nkind: CapacityBuffer\nmetadata:\n  name: standby\nspec:\n  provisioningStrategy: buffer.gke.io/standby-capacity\n  podTemplateRef:\n    name: x\n  replicas: 1\n"
        ),
        &[
            "CapacityBuffer standby",
            "spec.provisioningStrategy",
            "standby-capacity",
        ],
    );
    fails_with(
        "buffer-refs",
        &format!(
            "{head}\n---\napiVersion: autoscaling.x-k8s.io/v1alpha1\nkind: CapacityBuffer\nmetadata:\n  name: none\nspec:\n  replicas: 1\n"
        ),
        &["spec: set one of podTemplateRef and scalableRef"],
    );
}

/// Inputs the apiserver refuses: `simulate` exits 1 and names the document, the object and
/// the field, never a plan.
#[test]
fn inputs_kubernetes_refuses_exit_1_naming_the_field() {
    let pool = |name: &str, extra: &str| {
        format!(
            "apiVersion: adze.sh/v1\nkind: NodePool\nmetadata: {{name: {name}}}\nspec:\n  template:\n    spec:\n      nodeClassRef: {{group: aws.adze.sh, kind: EC2NodeClass, name: default}}\n{extra}"
        )
    };
    let pod =
        |spec: &str| format!("apiVersion: v1\nkind: Pod\nmetadata: {{name: p}}\nspec:\n{spec}");
    let cases: Vec<(&str, String, Vec<String>)> = vec![
        (
            "negative-overhead",
            pod("  overhead: {cpu: \"-6\"}\n  containers: [{name: a, resources: {requests: {cpu: \"1\"}}}]\n"),
            vec![
                "document 1 (Pod p): pod default/p: spec.overhead.cpu: must be greater than or equal to 0, got \"-6\"".into(),
            ],
        ),
        (
            "long-pool-name",
            pool(&"n".repeat(64), ""),
            vec![
                "metadata.name: may be at most 63 characters, got 64".into(),
            ],
        ),
        (
            "empty-spread-key",
            pod("  topologySpreadConstraints: [{maxSkew: 1, topologyKey: \"\", whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: a}}}]\n  containers: [{name: a}]\n"),
            vec!["spec.topologySpreadConstraints[0].topologyKey: must not be empty".into()],
        ),
        (
            "lowercase-protocol",
            pod("  containers: [{name: a, ports: [{containerPort: 80, hostPort: 80, protocol: tcp}]}]\n"),
            vec![
                "spec.containers[0].ports[0].protocol: unsupported value \"tcp\": supported values: \"TCP\", \"UDP\", \"SCTP\"".into(),
            ],
        ),
        (
            "duplicate-host-port",
            pod("  containers:\n  - {name: a, ports: [{containerPort: 80, hostPort: 8080}]}\n  - {name: b, ports: [{containerPort: 81, hostPort: 8080}]}\n"),
            vec![
                "spec.containers[1].ports[0].hostPort: duplicate value \"TCP//8080\": spec.containers[0].ports[0] already declares this protocol, hostIP and hostPort".into(),
            ],
        ),
        (
            "unknown-operator",
            pool("default", "      requirements: [{key: kubernetes.io/arch, operator: Within, values: [amd64]}]\n"),
            vec![
                "document 1 (NodePool default): malformed: spec.template.spec.requirements[0].operator: unknown variant `Within`".into(),
            ],
        ),
        (
            "unknown-effect",
            pool("default", "      taints: [{key: a, effect: NoSchedul}]\n"),
            vec!["malformed: spec.template.spec.taints[0].effect: unknown variant `NoSchedul`".into()],
        ),
        (
            "quantity-map",
            format!("{}  limits: {{cpu: {{amount: 4}}}}\n", pool("default", "")),
            vec!["malformed: spec.limits.cpu: invalid type: map".into()],
        ),
    ];
    for (name, yaml, expected) in cases {
        let path = scratch(name, &yaml);
        let out = simulate(&path, &[]);
        let _ = std::fs::remove_file(&path);
        assert_eq!(out.status.code(), Some(1), "{name}: {}", stderr(&out));
        assert_eq!(stdout(&out), "", "{name}: no plan");
        let err = stderr(&out);
        for e in &expected {
            assert!(err.contains(e.as_str()), "{name}: {e:?} not in {err}");
        }
    }
}

#[test]
fn cluster_limits_cap_both_pools_and_leave_pods_pending_naming_the_cap() {
    let (_, free) = plan("gpu-team.yaml", &[]);
    assert!(free.node_claims.len() > 1 && free.unschedulable.is_empty());
    let pools: BTreeSet<&str> = free
        .node_claims
        .iter()
        .map(|c| c.node_pool.as_str())
        .collect();
    assert_eq!(pools.len(), 2, "{pools:?}");
    let (_, capped) = plan("gpu-team.yaml", &["--cluster-limits", "nodes=1"]);
    assert_eq!(capped.node_claims.len(), 1);
    assert!(!capped.unschedulable.is_empty());
    for u in &capped.unschedulable {
        assert!(
            u.reason.contains("cluster-wide limits") && u.reason.contains("1 nodes limit"),
            "{}",
            u.reason
        );
    }
    for (bad, says) in [
        ("cpu=-1", "negative"),
        ("gpus=lots", "not a resource quantity"),
        ("nodes=1.5", "whole number"),
    ] {
        let out = simulate(&example("gpu-team.yaml"), &["--cluster-limits", bad]);
        assert_eq!(out.status.code(), Some(2), "{bad}");
        let err = stderr(&out);
        assert!(
            err.contains("--cluster-limits") && err.contains(says),
            "{bad}: {err}"
        );
        assert!(stdout(&out).is_empty());
    }
}

#[test]
fn pods_with_their_own_ebs_claims_get_a_node_per_attach_limit() {
    // 30 pods, each with its own claim of an EBS class: an m5 node attaches 26 (28 slots less
    // the primary interface and the root volume), so one node is not enough.
    let mut yaml = String::from(
        r#"
apiVersion: adze.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: aws.adze.sh, kind: EC2NodeClass, name: default}
      requirements: [{key: aws.adze.sh/instance-family, operator: In, values: [m5]}]
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: gp3}
provisioner: ebs.csi.aws.com
volumeBindingMode: WaitForFirstConsumer
"#,
    );
    for i in 0..30 {
        yaml.push_str(&format!(
            "---\napiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {{name: data-{i}, namespace: default}}\nspec: {{storageClassName: gp3, accessModes: [ReadWriteOnce], resources: {{requests: {{storage: 1Gi}}}}}}\n---\napiVersion: v1\nkind: Pod\nmetadata: {{name: db-{i}, namespace: default}}\nspec: {{containers: [{{name: a, resources: {{requests: {{cpu: 50m}}}}}}], volumes: [{{name: d, persistentVolumeClaim: {{claimName: data-{i}}}}}]}}\n"
        ));
    }
    let path = scratch("ebs-attach-limit", &yaml);
    let out = simulate(&path, &["--output", "json"]);
    let _ = std::fs::remove_file(&path);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let report = support_scratch::report(&out);
    let mut sizes: Vec<usize> = report.node_claims.iter().map(|c| c.pods.len()).collect();
    sizes.sort_unstable();
    assert_eq!(sizes.iter().sum::<usize>(), 30, "{report:?}");
    assert!(sizes.len() >= 2, "{report:?}");
    assert!(sizes.iter().all(|&n| n <= 26), "{sizes:?}");
}
