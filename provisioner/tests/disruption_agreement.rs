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
        spread: Default::default(),
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
        vpas: None,
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

/// A static pool (`spec.replicas`: a scenario refuses one, so the objects are typed straight
/// from YAML): its NodeClaims, `limits.nodes` and `Disrupting` marks become the decision's
/// [`pure::StaticSize`], and the controller's pass and the planner's commands both launch
/// a drifted node's replacement first, only as far as the limit leaves room, or delete first
/// at the limit with the terminate-first gate.
#[test]
fn a_static_pools_drift_replaces_first_within_its_node_limit() {
    let pool = r#"
apiVersion: adze.sh/v1
kind: NodePool
metadata: {name: fixed}
spec:
  replicas: 3
  limits: {nodes: "4"}
  template:
    spec:
      nodeClassRef: {group: aws.adze.sh, kind: EC2NodeClass, name: default}
      requirements:
        - {key: adze.sh/capacity-type, operator: In, values: [on-demand]}
  disruption:
    consolidateAfter: 0s
    budgets: [{nodes: "100%"}]
"#;
    let yaml = [
        pool.to_string(),
        node("f-0", "fixed", "medium", support::DAY_BEFORE),
        node("f-1", "fixed", "medium", support::DAY_BEFORE),
        node("f-2", "fixed", "medium", support::DAY_BEFORE),
        pod("web", "f-0", "1", "app: web"),
    ]
    .join("\n---\n");
    let (objects, pdbs) = watched(&yaml);
    let scenario = Scenario::parse(CATALOG).unwrap();
    let now: k8s_openapi::jiff::Timestamp = NOW.parse().unwrap();
    // The cloud reports every instance's node class drifted.
    let drifted: BTreeSet<String> = ["f-0", "f-1", "f-2"].map(String::from).into();
    let build = |objects: &Objects| {
        input::build(
            objects,
            &scenario.instance_types,
            &input::Extra {
                pdbs: &pdbs,
                pdb_empty_selects_all: true,
                cloud_drifted: &drifted,
                now: now.as_second(),
                vpas: None,
            },
            &mut input::PodActivity::default(),
        )
    };
    let built = build(&objects);
    let policy = &built.input.policies[0];
    assert!(policy.fixed_size);
    assert_eq!(
        policy.static_size,
        Some(pure::StaticSize {
            replicas: 3,
            node_limit: Some(4),
            active: 3,
            leaving: 0
        })
    );
    assert_eq!(built.input.static_pools.len(), 1);
    assert!(
        built.input.snapshot.nodepools.is_empty(),
        "not launchable for pods"
    );

    let options =
        input::decision_options(&built, 60, &adze_provisioner::rules::Policies::default(), 0);
    let decided = pure::decide_all(&built.input, &options, true, 100);
    assert_eq!(decided.len(), 1, "one slot under limits.nodes");
    let d = &decided[0];
    assert_eq!(d.reason, pure::Reason::Drifted);
    assert_eq!(d.plan.new_claims.len(), 1);
    assert_eq!(d.plan.new_claims[0].nodepool, "fixed");
    assert_eq!(
        d.plan.new_claims[0].instance_type, "small",
        "as its scaler plans one"
    );

    // The planner, on the same input, takes the same command and says why the rest wait.
    let prepared = adze_provisioner::simulate::disruption::Prepared {
        built,
        options: options.clone(),
        notes: Vec::new(),
    };
    let plan = adze_provisioner::simulate::disruption::plan_prepared(
        &prepared,
        &DisruptionOptions::at(now),
    );
    assert_eq!(plan.commands.len(), 1);
    let c = &plan.commands[0];
    assert_eq!(
        (c.method, c.nodes.clone()),
        (
            Method::Drift,
            d.node_names().iter().map(|n| n.to_string()).collect()
        )
    );
    assert_eq!(c.replacements.len(), 1);
    assert_eq!(c.replacements[0].nodepool, "fixed");
    let waiting: Vec<_> = plan
        .left_alone
        .iter()
        .filter(|l| l.message.contains("limits.nodes (4)"))
        .collect();
    assert_eq!(waiting.len(), 2, "{:?}", plan.left_alone);

    // A claim already marked Disrupting leaves the replicas but not the limit: no room.
    let mut marked = objects.clone();
    let mut claim = (*marked.claims[1]).clone();
    claim
        .status
        .as_mut()
        .unwrap()
        .conditions
        .push(serde_json::from_value(serde_json::json!({"type": "Disrupting", "status": "True", "reason": "Drifted", "message": "", "lastTransitionTime": NOW})).unwrap());
    marked.claims[1] = Arc::new(claim);
    // Its replacement, launching.
    let launching: Value =
        serde_yaml::from_str(&support::claim("f-new", "fixed", "small", NOW)).unwrap();
    marked
        .claims
        .push(Arc::new(serde_json::from_value(launching).unwrap()));
    let built = build(&marked);
    assert_eq!(
        built.input.policies[0]
            .static_size
            .map(|s| (s.active, s.leaving)),
        Some((3, 1))
    );
    assert!(pure::decide_all(&built.input, &options, true, 100).is_empty());
    // With the terminate-first gate the nodes at the limit are deleted first instead.
    let gate = pure::Options {
        terminate_first_drift: true,
        ..options
    };
    let decided = pure::decide_all(&built.input, &gate, true, 100);
    assert!(!decided.is_empty());
    assert!(decided.iter().all(|d| d.plan.new_claims.is_empty()));
}
