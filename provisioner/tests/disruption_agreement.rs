//! `run` and the offline planner agree: the disruption controller's input built from the
//! objects its watches would hold (typed straight from the same YAML, NodeClaims and all),
//! carried through the steps of a controller pass (expiry, the wait for placeable pending
//! pods, `decide_all` with the controller's options), gives the same commands as
//! `simulate --disruption` ([`plan_disruption`]) on that YAML as a scenario.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use adze_provisioner::disruption::{input, pdb};
use adze_provisioner::provisioning::snapshot::Objects;
use adze_provisioner::simulate::Scenario;
use adze_provisioner::simulate::disruption::{DisruptionOptions, Method, plan_disruption};
use adze_scheduling::disruption as pure;
use serde_json::Value;

#[path = "support/disruption.rs"]
mod support;
use support::{CATALOG, NOW};

fn pool(name: &str, extra_requirement: &str) -> String {
    format!(
        r#"
apiVersion: adze.sh/v1
kind: NodePool
metadata: {{name: {name}}}
spec:
  template:
    spec:
      nodeClassRef: {{group: aws.adze.sh, kind: EC2NodeClass, name: default}}
      expireAfter: 720h
      requirements:
        - {{key: adze.sh/capacity-type, operator: In, values: [on-demand]}}
{extra_requirement}
  disruption:
    consolidationPolicy: WhenEmptyOrUnderutilized
    consolidateAfter: 5m
    budgets: [{{nodes: "100%"}}]
"#
    )
}

/// A NodeClaim and its Node, linked by providerID, as a live cluster holds them.
fn node(name: &str, pool: &str, size: &str, created: &str) -> String {
    format!(
        "{}---{}",
        support::claim(name, pool, size, created),
        support::node(name, pool, size, created, "")
    )
}

fn pod(name: &str, node: &str, cpu: &str, labels: &str) -> String {
    support::pod(name, node, cpu, labels, "")
}

const PDB: &str = r#"
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: db, namespace: shop}
spec: {maxUnavailable: 0, selector: {matchLabels: {app: db}}}
status: {disruptionsAllowed: 0, currentHealthy: 1, desiredHealthy: 1, expectedPods: 1}
"#;

/// The objects as the controller's watches would hold them, typed from the YAML directly.
fn watched(yaml: &str) -> (Objects, Vec<pdb::Budget>) {
    let mut o = Objects {
        nodes: vec![],
        pods: vec![],
        claims: vec![],
        nodepools: vec![],
        nodeoverlays: vec![],
        daemonsets: vec![],
        pvcs: vec![],
        pvs: vec![],
        storage_classes: vec![],
        csinodes: vec![],
        nodeclasses: None,
        karpenter_labels: false,
        failed_every_node: Arc::new(HashMap::new()),
        buffers: Default::default(),
    };
    let mut pdbs = Vec::new();
    for doc in yaml.split("\n---\n") {
        let v: Value = serde_yaml::from_str(doc).unwrap();
        match v["kind"].as_str().unwrap() {
            "Node" => o.nodes.push(Arc::new(serde_json::from_value(v).unwrap())),
            "Pod" => o.pods.push(Arc::new(serde_json::from_value(v).unwrap())),
            "NodeClaim" => o.claims.push(Arc::new(serde_json::from_value(v).unwrap())),
            "NodePool" => o
                .nodepools
                .push(Arc::new(serde_json::from_value(v).unwrap())),
            "PodDisruptionBudget" => pdbs.push(pdb::Budget::from_json(&v).unwrap()),
            "InstanceCatalog" => {}
            k => panic!("unexpected {k}"),
        }
    }
    (o, pdbs)
}

/// A comparable summary of one command: method, nodes, where each pod goes (replacements
/// by type), prices.
type Summary = (
    String,
    Vec<String>,
    Vec<(String, String)>,
    Vec<String>,
    String,
);

fn controller_pass(yaml: &str, scenario: &Scenario) -> Vec<Summary> {
    let (objects, pdbs) = watched(yaml);
    let now: k8s_openapi::jiff::Timestamp = NOW.parse().unwrap();
    let drifted = BTreeSet::new();
    let extra = input::Extra {
        pdbs: &pdbs,
        pdb_empty_selects_all: true,
        cloud_drifted: &drifted,
        now: now.as_second(),
    };
    let built = input::build(
        &objects,
        &scenario.instance_types,
        &extra,
        &mut input::PodActivity::default(),
    );
    let options =
        input::decision_options(&built, 60, &adze_provisioner::rules::Policies::default(), 0);
    assert!(input::expiring(&built).is_empty());
    assert_eq!(input::waiting_for(&built, &options), 0);
    let consolidate = built.in_flight.is_empty();
    pure::decide_all(&built.input, &options, consolidate, 100)
        .iter()
        .map(|d| {
            let placements = d.plan.placements();
            let type_of = |to: &str| {
                d.plan
                    .new_claims
                    .iter()
                    .find(|c| c.name == to)
                    .map_or(to.to_string(), |c| format!("new {}", c.instance_type))
            };
            (
                d.method().to_string(),
                d.node_names().iter().map(|n| n.to_string()).collect(),
                d.pods()
                    .map(|p| (p.to_string(), type_of(placements[p])))
                    .collect(),
                d.plan
                    .new_claims
                    .iter()
                    .map(|c| c.instance_type.clone())
                    .collect(),
                format!("{:.4}->{:.4}", d.removed_price, d.replacement_price + 0.0),
            )
        })
        .collect()
}

fn planner(scenario: &Scenario) -> Vec<Summary> {
    let plan = plan_disruption(scenario, &DisruptionOptions::at(NOW.parse().unwrap()));
    plan.commands
        .iter()
        .map(|c| {
            let type_of = |to: &str| match to.strip_prefix("new:") {
                Some(name) => format!(
                    "new {}",
                    c.replacements
                        .iter()
                        .find(|r| r.name == name)
                        .unwrap()
                        .instance_type
                ),
                None => to.to_string(),
            };
            (
                c.method.to_string(),
                c.nodes.clone(),
                c.pods
                    .iter()
                    .map(|m| (m.pod.clone(), type_of(&m.to)))
                    .collect(),
                c.replacements
                    .iter()
                    .map(|r| r.instance_type.clone())
                    .collect(),
                format!("{:.4}->{:.4}", c.price_before, c.price_after),
            )
        })
        .collect()
}

#[test]
fn the_controller_and_the_planner_take_the_same_commands() {
    let docs = [
        CATALOG.to_string(),
        pool("default", ""),
        pool(
            "pinned",
            "        - {key: node.kubernetes.io/instance-type, operator: In, values: [small]}",
        ),
        node("drifted", "pinned", "medium", "2026-05-20T08:00:00Z"),
        node("idle", "default", "medium", "2026-05-20T08:00:00Z"),
        node("big", "default", "large", "2026-05-20T08:00:00Z"),
        node("busy", "default", "medium", "2026-05-20T08:00:00Z"),
        node("guarded", "default", "large", "2026-05-20T08:00:00Z"),
        pod("a-1", "drifted", "1", ""),
        pod("web-1", "big", "1", ""),
        pod("api-1", "busy", "3", ""),
        pod("db-1", "guarded", "1", "app: db"),
        PDB.to_string(),
    ];
    let yaml = docs
        .iter()
        .map(|d| d.trim())
        .collect::<Vec<_>>()
        .join("\n---\n");
    let scenario = Scenario::parse(&yaml).unwrap();
    let live = controller_pass(&yaml, &scenario);
    let offline = planner(&scenario);
    assert_eq!(live, offline);
    // The cluster exercises drift, emptiness and consolidation, and the PDB holds.
    let methods: Vec<&str> = live.iter().map(|c| c.0.as_str()).collect();
    assert_eq!(
        methods,
        [
            Method::Drift.as_str(),
            Method::Emptiness.as_str(),
            Method::MultiNodeConsolidation.as_str()
        ],
        "{live:#?}"
    );
    assert!(live.iter().all(|c| !c.1.contains(&"guarded".to_string())));
}
