//! The conversion of API objects (as the live lists return them) into scenario objects, and
//! the scenario that comes out planned as `simulate` plans it.

use super::*;
use crate::simulate::{self, Scenario, disruption as d, output};
use serde_json::json;

fn typed<T: serde::de::DeserializeOwned>(v: Value) -> T {
    serde_json::from_value(v).expect("a valid object")
}

/// A Node as the API returns it, noise included.
fn api_node(name: &str, labels: Value) -> Node {
    typed(json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {
            "name": name, "creationTimestamp": "2026-05-01T00:00:00Z",
            "resourceVersion": "123",
            "labels": labels,
            "annotations": {
                "csi.volume.kubernetes.io/nodeid": "{\"ebs.csi.aws.com\":\"i-1\"}",
                "karpenter.sh/nodepool-hash": "42",
            },
            "managedFields": [{"manager": "kubelet", "operation": "Update"}],
        },
        "spec": {"providerID": format!("aws:///us-east-1a/i-{name}")},
        "status": {
            "capacity": {"cpu": "2", "memory": "8Gi", "pods": "29"},
            "allocatable": {"cpu": "1930m", "memory": "7Gi", "pods": "29"},
            "conditions": [{"type": "Ready", "status": "True",
                "lastHeartbeatTime": "2026-06-01T11:59:00Z",
                "lastTransitionTime": "2026-05-01T00:01:00Z"}],
            "images": [{"names": ["registry/app:1"], "sizeBytes": 1000}],
            "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}],
            "nodeInfo": {"architecture": "amd64", "bootID": "", "containerRuntimeVersion": "",
                "kernelVersion": "", "kubeProxyVersion": "", "kubeletVersion": "", "machineID": "",
                "operatingSystem": "linux", "osImage": "", "systemUUID": ""},
        },
    }))
}

fn m5_labels(extra: Value) -> Value {
    let mut l = json!({
        "node.kubernetes.io/instance-type": "m5.large",
        "topology.kubernetes.io/zone": "us-east-1a",
        "kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux",
    });
    for (k, v) in extra.as_object().unwrap() {
        l[k] = v.clone();
    }
    l
}

fn api_pod(name: &str, node: Option<&str>, phase: &str, cpu: &str) -> Pod {
    typed(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": name, "namespace": "default", "uid": format!("uid-{name}"),
            "annotations": {LAST_APPLIED: "{\"big\": true}", "adze.sh/do-not-disrupt": "false"},
            "managedFields": [{"manager": "kubectl"}],
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-1",
                "uid": "rs", "controller": true}],
        },
        "spec": {
            "nodeName": node,
            "containers": [{
                "name": "app", "image": "registry/app:1",
                "env": [{"name": "SECRET_LOOKING", "value": "x"}],
                "command": ["/bin/app"],
                "resources": {"requests": {"cpu": cpu, "memory": "256Mi"}},
                "ports": [{"containerPort": 80, "hostPort": 8080}],
            }],
        },
        "status": {"phase": phase, "podIP": "10.1.1.1",
            "containerStatuses": [{"name": "app", "image": "registry/app:1", "imageID": "",
                "ready": true, "restartCount": 0}]},
    }))
}

#[test]
fn a_pod_keeps_what_placement_reads_and_loses_the_rest() {
    let p = pod(api_pod("web", Some("n1"), "Running", "500m")).expect("a running pod is kept");
    assert!(p.metadata.managed_fields.is_none());
    let ann = p.metadata.annotations.as_ref().unwrap();
    assert!(!ann.contains_key(LAST_APPLIED), "{ann:?}");
    assert_eq!(ann["adze.sh/do-not-disrupt"], "false");
    assert_eq!(p.metadata.owner_references.as_ref().unwrap().len(), 1);
    let spec = p.spec.as_ref().unwrap();
    assert_eq!(spec.node_name.as_deref(), Some("n1"));
    let c = &spec.containers[0];
    assert_eq!(c.name, "app");
    assert!(c.image.is_none() && c.env.is_none() && c.command.is_none());
    assert_eq!(
        c.resources.as_ref().unwrap().requests.as_ref().unwrap()["cpu"].0,
        "500m"
    );
    assert_eq!(c.ports.as_ref().unwrap()[0].host_port, Some(8080));
    let st = p.status.as_ref().unwrap();
    assert_eq!(st.phase.as_deref(), Some("Running"));
    assert!(st.pod_ip.is_none() && st.container_statuses.is_none());
}

#[test]
fn a_resized_pod_keeps_what_its_container_statuses_say_it_holds() {
    let mut api = api_pod("web", Some("n1"), "Running", "500m");
    api.status = Some(typed(json!({
        "phase": "Running", "resize": "InProgress",
        "containerStatuses": [{"name": "app", "image": "registry/app:1", "imageID": "x",
            "ready": true, "restartCount": 3,
            "allocatedResources": {"cpu": "2"},
            "resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "4"}}}],
    })));
    let p = pod(api).expect("kept");
    let st = p.status.as_ref().unwrap();
    assert_eq!(st.resize.as_deref(), Some("InProgress"));
    let cs = &st.container_statuses.as_ref().unwrap()[0];
    assert_eq!(cs.name, "app");
    assert_eq!(cs.allocated_resources.as_ref().unwrap()["cpu"].0, "2");
    let applied = cs.resources.as_ref().unwrap();
    assert_eq!(applied.requests.as_ref().unwrap()["cpu"].0, "2");
    assert!(applied.limits.is_none() && cs.image.is_empty() && cs.restart_count == 0);
    // And the planner charges the resized size, not the spec's 500m.
    let planned = adze_api::convert::pod(&p).unwrap();
    assert_eq!(planned.requests.cpu, 2000);
}

#[test]
fn terminal_pods_are_skipped() {
    assert!(pod(api_pod("done", Some("n1"), "Succeeded", "1")).is_none());
    assert!(pod(api_pod("crashed", None, "Failed", "1")).is_none());
    assert!(pod(api_pod("waiting", None, "Pending", "1")).is_some());
}

#[test]
fn a_node_keeps_labels_capacity_and_conditions_only() {
    let n = node(api_node("n1", m5_labels(json!({}))));
    assert!(n.metadata.managed_fields.is_none() && n.metadata.resource_version.is_none());
    let ann = n.metadata.annotations.as_ref().unwrap();
    assert_eq!(
        ann.keys().collect::<Vec<_>>(),
        ["karpenter.sh/nodepool-hash"]
    );
    let st = n.status.as_ref().unwrap();
    assert!(st.images.is_none() && st.addresses.is_none() && st.node_info.is_none());
    assert_eq!(st.allocatable.as_ref().unwrap()["cpu"].0, "1930m");
    let ready = &st.conditions.as_ref().unwrap()[0];
    assert!(ready.last_heartbeat_time.is_none() && ready.last_transition_time.is_some());
    assert_eq!(
        n.spec.unwrap().provider_id.as_deref(),
        Some("aws:///us-east-1a/i-n1")
    );
}

#[test]
fn v1beta1_budgets_become_v1_unless_they_select_nothing() {
    let b = |selector: Value| {
        json!({"apiVersion": "policy/v1beta1", "kind": "PodDisruptionBudget",
            "metadata": {"name": "web", "namespace": "default", "managedFields": []},
            "spec": {"minAvailable": 1, "selector": selector}})
    };
    let v = pdb(b(json!({"matchLabels": {"app": "web"}}))).unwrap();
    assert_eq!(v["apiVersion"], "policy/v1");
    assert!(v["metadata"].get("managedFields").is_none());
    typed::<k8s_openapi::api::policy::v1::PodDisruptionBudget>(v);
    for empty in [json!({}), Value::Null, json!({"matchLabels": {}})] {
        let e = pdb(b(empty.clone())).unwrap_err();
        assert!(
            e.contains("default/web") && e.contains("selects no pod"),
            "{e}"
        );
    }
    let v1 = json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": "all", "namespace": "x"}, "spec": {"selector": {}}});
    assert_eq!(pdb(v1.clone()).unwrap(), v1);
}

#[test]
fn karpenter_labels_gain_their_adze_names() {
    let mut n = node(api_node(
        "k1",
        m5_labels(
            json!({"karpenter.sh/nodepool": "general", "karpenter.sh/capacity-type": "spot",
            "karpenter.k8s.aws/instance-family": "m5"}),
        ),
    ));
    assert_eq!(add_adze_labels(&mut n), 3);
    let l = n.metadata.labels.as_ref().unwrap();
    assert_eq!(l[labels::NODEPOOL], "general");
    assert_eq!(l[labels::CAPACITY_TYPE], "spot");
    assert_eq!(l[labels::INSTANCE_FAMILY], "m5");
    assert_eq!(l["karpenter.sh/nodepool"], "general", "Karpenter's kept");
    let mut eks = node(api_node(
        "e1",
        m5_labels(json!({"eks.amazonaws.com/capacityType": "SPOT"})),
    ));
    assert_eq!(add_adze_labels(&mut eks), 1);
    assert_eq!(eks.metadata.labels.unwrap()[labels::CAPACITY_TYPE], "spot");
}

#[test]
fn a_karpenter_nodeclaim_becomes_adze_s() {
    let v = karpenter_nodeclaim(json!({
        "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
        "metadata": {"name": "general-abcde", "labels": {"karpenter.sh/nodepool": "general"},
            "managedFields": []},
        "spec": {
            "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
            "requirements": [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]}],
            "expireAfter": "720h",
        },
        "status": {"providerID": "aws:///us-east-1a/i-k1", "nodeName": "k1"},
    }));
    let c: adze_api::NodeClaim = typed(v.clone());
    assert_eq!(v["apiVersion"], "adze.sh/v1");
    assert_eq!(c.spec.node_class_ref.group, "aws.adze.sh");
    assert_eq!(
        c.metadata.labels.as_ref().unwrap()[labels::NODEPOOL],
        "general"
    );
    assert_eq!(v["spec"]["requirements"][0]["key"], labels::CAPACITY_TYPE);
}

#[test]
fn pools_are_inferred_per_family_capacity_type_and_labels() {
    let mut nodes = vec![
        node(api_node("a", m5_labels(json!({})))),
        node(api_node(
            "b",
            m5_labels(json!({"node.kubernetes.io/instance-type": "m5.xlarge"})),
        )),
        node(api_node(
            "c",
            m5_labels(json!({"eks.amazonaws.com/capacityType": "SPOT",
            "node.kubernetes.io/instance-type": "c5.large"})),
        )),
        node(api_node(
            "d",
            m5_labels(json!({"team": "data", "eks.amazonaws.com/nodegroup": "ng"})),
        )),
        node(api_node("bare", json!({"kubernetes.io/os": "linux"}))),
    ];
    let (pools, notes) = infer_pools(&mut nodes);
    let names: Vec<&str> = pools
        .iter()
        .map(|p| p["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "inferred-c5-spot",
            "inferred-m5-on-demand",
            "inferred-m5-on-demand-2"
        ]
    );
    let pool_of = |i: usize| {
        nodes[i]
            .metadata
            .labels
            .as_ref()
            .unwrap()
            .get(labels::NODEPOOL)
            .cloned()
    };
    assert_eq!(pool_of(0).as_deref(), Some("inferred-m5-on-demand"));
    assert_eq!(pool_of(1), pool_of(0), "m5.large and m5.xlarge: one family");
    assert_eq!(pool_of(2).as_deref(), Some("inferred-c5-spot"));
    assert_eq!(pool_of(3).as_deref(), Some("inferred-m5-on-demand-2"));
    assert_eq!(pool_of(4), None);
    // The custom label is the new nodes' label; the node group's (EKS's domain) is not.
    assert_eq!(
        pools[2]["spec"]["template"]["metadata"]["labels"],
        json!({"team": "data"})
    );
    for p in &pools {
        assert_eq!(p["spec"]["template"]["spec"]["expireAfter"], "Never");
        let pool: adze_api::NodePool = typed(p.clone());
        pool.validate().expect("an inferred pool is valid");
    }
    assert!(notes.iter().any(|n| n.contains("Node bare")), "{notes:?}");
    assert!(
        notes
            .iter()
            .any(|n| n.contains("NodePool inferred-m5-on-demand inferred") && n.contains("a, b")),
        "{notes:?}"
    );
}

const KARPENTER_POOL: &str = r#"{"apiVersion": "karpenter.sh/v1", "kind": "NodePool",
  "metadata": {"name": "general", "managedFields": [{"manager": "kubectl"}]},
  "spec": {"template": {"spec": {
      "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
      "requirements": [
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
        {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["m5", "c5"]}]}},
    "disruption": {"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "0s"}},
  "status": {"resources": {"cpu": "4"}}}"#;

const KARPENTER_CLASS: &str = r#"{"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass",
  "metadata": {"name": "default"},
  "spec": {"role": "KarpenterNodeRole", "amiSelectorTerms": [{"alias": "al2023@latest"}],
    "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "c"}}],
    "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "c"}}]}}"#;

/// A Karpenter cluster: two m5.large nodes of its pool, one busy and one empty, a pending
/// pod, a terminal pod and a pod bound to a node the node list missed.
fn karpenter_cluster() -> Collected {
    let labels = |n: &str| {
        m5_labels(
            json!({"karpenter.sh/nodepool": "general", "karpenter.sh/capacity-type": "on-demand",
            "kubernetes.io/hostname": n}),
        )
    };
    let mut c = Collected {
        nodes: vec![
            node(api_node("busy", labels("busy"))),
            node(api_node("idle", labels("idle"))),
        ],
        autoscaler: Autoscaler::Karpenter {
            api_version: "karpenter.sh/v1".into(),
            nodepools: vec![autoscaler_object(
                serde_json::from_str(KARPENTER_POOL).unwrap(),
            )],
            ec2nodeclasses: vec![autoscaler_object(
                serde_json::from_str(KARPENTER_CLASS).unwrap(),
            )],
            nodeclaims: Vec::new(),
        },
        ..Default::default()
    };
    for p in [
        api_pod("web-a", Some("busy"), "Running", "500m"),
        api_pod("web-b", None, "Pending", "1500m"),
        api_pod("old", Some("busy"), "Succeeded", "1"),
        api_pod("ghost", Some("gone"), "Running", "100m"),
    ] {
        match pod(p) {
            Some(p) => c.pods.push(p),
            None => c.terminal_pods += 1,
        }
    }
    c
}

#[test]
fn a_karpenter_cluster_becomes_a_scenario_simulate_plans() {
    let snap = assemble(karpenter_cluster());
    assert!(snap.source.contains("karpenter.sh/v1"), "{}", snap.source);
    let report = snap.migration_report.as_deref().unwrap();
    assert!(report.contains("migrated 2 object(s)"), "{report}");
    assert!(
        snap.notes.iter().any(|n| n.contains("1 pod(s) left out")),
        "{:?}",
        snap.notes
    );
    assert!(
        snap.notes.iter().any(|n| n.contains("1 terminal pod")),
        "{:?}",
        snap.notes
    );
    assert_eq!(snap.counts["pending Pods"], 1);
    assert_eq!(snap.counts["bound Pods"], 1);
    let yaml = snap.yaml();
    assert!(
        !yaml.contains("managedFields") && !yaml.contains("registry/app"),
        "{yaml}"
    );
    let scenario = Scenario::parse(&yaml).expect("the snapshot is a valid scenario");
    assert_eq!(scenario.counts.nodepools, 1);
    assert_eq!(scenario.counts.nodes, 2);
    // Pending: the 1.5-CPU pod fits on the idle node's 1.93 CPUs: no new capacity.
    let out = simulate::run(&scenario, 60);
    assert!(
        out.plan.unschedulable.is_empty(),
        "{:?}",
        out.plan.unschedulable
    );
    assert!(out.plan.new_claims.is_empty());
    let cost = output::cost(&scenario, &out.plan);
    assert_eq!(cost.len(), 1, "{cost:?}");
    assert_eq!(cost[0].nodepool, "general");
    assert_eq!((cost[0].nodes_before, cost[0].nodes_after), (2, 2));
    assert!(
        cost[0].before > 0.1,
        "m5.large priced from the catalog: {cost:?}"
    );
    // Disruption (the pending pod placed first: the planner waits for it).
    let plan = d::plan_disruption(
        &scenario,
        &d::DisruptionOptions::at("2026-06-01T12:00:00Z".parse().unwrap()),
    );
    assert!(
        plan.left_alone
            .iter()
            .all(|l| l.nodepool.as_deref() == Some("general")),
        "{plan:?}"
    );
    assert_eq!(plan.cost[0].nodepool, "general");
}

#[test]
fn a_cluster_without_autoscaler_objects_is_planned_on_inferred_pools() {
    let mut c = karpenter_cluster();
    c.autoscaler = Autoscaler::None;
    for n in &mut c.nodes {
        let l = n.metadata.labels.as_mut().unwrap();
        l.retain(|k, _| !k.starts_with("karpenter"));
    }
    c.pods
        .retain(|p| p.spec.as_ref().unwrap().node_name.is_some());
    let snap = assemble(c);
    assert!(snap.source.contains("1 inferred"), "{}", snap.source);
    assert!(
        snap.yaml()
            .contains("# note: NodePool inferred-m5-on-demand inferred")
    );
    let scenario = Scenario::parse(&snap.yaml()).unwrap();
    let plan = d::plan_disruption(
        &scenario,
        &d::DisruptionOptions::at("2026-06-01T12:00:00Z".parse().unwrap()),
    );
    // The empty node of the inferred pool is Adze's to disrupt: emptiness deletes it.
    let cmd = plan.command_for("idle").expect("the idle node is planned");
    assert_eq!(cmd.method.as_str(), "Emptiness", "{cmd:?}");
    assert!(plan.total_cost().1 < plan.total_cost().0);
}

#[test]
fn an_adze_cluster_passes_through_and_bad_claims_are_noted() {
    let mut c = karpenter_cluster();
    let pool = crate::migrate::migrate(KARPENTER_POOL)
        .unwrap()
        .objects
        .remove(0);
    c.autoscaler = Autoscaler::Adze {
        nodepools: vec![pool],
        ec2nodeclasses: Vec::new(),
        nodeclaims: vec![json!({"apiVersion": "adze.sh/v1", "kind": "NodeClaim",
            "metadata": {"name": "broken"}, "spec": {"nodeClassRef": 7}})],
        nodeoverlays: Vec::new(),
    };
    let snap = assemble(c);
    assert!(
        snap.source.contains("Adze's own (1 NodePool"),
        "{}",
        snap.source
    );
    assert!(
        snap.notes
            .iter()
            .any(|n| n.starts_with("NodeClaim broken left out")),
        "{:?}",
        snap.notes
    );
    let scenario = Scenario::parse(&snap.yaml()).unwrap();
    assert_eq!(scenario.counts.nodeclaims, 0);
    assert_eq!(scenario.counts.nodepools, 1);
}

#[test]
fn a_v1beta1_nodeclaim_loses_the_fields_adze_lacks_with_a_note() {
    let mut c = karpenter_cluster();
    if let Autoscaler::Karpenter { nodeclaims, .. } = &mut c.autoscaler {
        nodeclaims.push(json!({
            "apiVersion": "karpenter.sh/v1beta1", "kind": "NodeClaim",
            "metadata": {"name": "general-abcde", "labels": {"karpenter.sh/nodepool": "general"}},
            "spec": {
                "nodeClassRef": {"apiVersion": "karpenter.k8s.aws/v1beta1", "kind": "EC2NodeClass", "name": "default"},
                "requirements": [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}],
                "kubelet": {"maxPods": 110},
            },
            "status": {"nodeName": "busy"},
        }));
    }
    let snap = assemble(c);
    assert!(
        snap.notes.iter().any(|n| n
            == "NodeClaim general-abcde: spec.kubelet left out (Adze's NodeClaim has no such field)"),
        "{:?}",
        snap.notes
    );
    let scenario = Scenario::parse(&snap.yaml()).expect("the snapshot is a valid scenario");
    assert_eq!(scenario.counts.nodeclaims, 1);
}

fn api_vpa(name: &str, cpu_target: Value) -> Value {
    json!({
        "apiVersion": "autoscaling.k8s.io/v1", "kind": "VerticalPodAutoscaler",
        "metadata": {"name": name, "namespace": "default", "resourceVersion": "7",
            "creationTimestamp": "2026-06-01T00:00:00Z",
            "managedFields": [{"manager": "kubectl"}]},
        "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "updatePolicy": {"updateMode": "Auto"}},
        "status": {
            "conditions": [{"type": "RecommendationProvided", "status": "True"}],
            "recommendation": {"containerRecommendations": [
                {"containerName": "app", "target": {"cpu": cpu_target}}]}}
    })
}

#[test]
fn a_vpa_keeps_its_spec_and_recommendation_and_an_unreadable_one_is_left_out() {
    let kept = vpa(api_vpa("web", json!("250m"))).expect("readable");
    assert_eq!(kept["spec"]["updatePolicy"]["updateMode"], "Auto");
    assert_eq!(
        kept["status"],
        json!({"recommendation": {"containerRecommendations": [
            {"containerName": "app", "target": {"cpu": "250m"}}]}})
    );
    assert!(kept["metadata"].get("managedFields").is_none(), "{kept}");
    let why = vpa(api_vpa("bad", json!("-1"))).unwrap_err();
    assert!(
        why.contains("VerticalPodAutoscaler default/bad")
            && why.contains("status.recommendation.containerRecommendations[0].target.cpu"),
        "{why}"
    );
}

#[test]
fn vpas_read_reach_the_scenario_and_only_when_read() {
    let mut c = karpenter_cluster();
    c.vpas.push(vpa(api_vpa("web", json!("250m"))).unwrap());
    let snap = assemble(c);
    assert_eq!(snap.counts["VerticalPodAutoscalers"], 1);
    let scenario = Scenario::parse(&snap.yaml()).expect("the snapshot is a valid scenario");
    assert_eq!(scenario.objects.vpas.len(), 1);
    assert_eq!(scenario.objects.vpas[0].name, "web");
    assert_eq!(scenario.objects.vpas[0].targets["app"]["cpu"], 250);
    // Without VPAs the snapshot holds none (simulate without --vpa-predictions refuses them).
    let plain = Scenario::parse(&assemble(karpenter_cluster()).yaml()).unwrap();
    assert!(plain.objects.vpas.is_empty());
}
