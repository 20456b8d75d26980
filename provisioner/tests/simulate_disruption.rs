//! The disruption planner (`simulate --disruption`, [`plan_disruption`]) on small clusters:
//! each test states a cluster and what one pass of the disruption controller does to it.

use adze_provisioner::simulate::Scenario;
use adze_provisioner::simulate::disruption::{
    Action, DisruptionOptions, DisruptionPlan, LeftAloneReason, Method, plan_disruption,
};

#[path = "support/disruption.rs"]
mod support;
use support::{CATALOG, DAY_BEFORE, NOW};

fn pool(name: &str, disruption: &str, extra_spec: &str) -> String {
    format!(
        r#"
apiVersion: adze.sh/v1
kind: NodePool
metadata: {{name: {name}}}
spec:
  template:
    spec:
      nodeClassRef: {{group: aws.adze.sh, kind: EC2NodeClass, name: default}}
      requirements:
        - {{key: adze.sh/capacity-type, operator: In, values: [on-demand]}}
{extra_spec}
  disruption: {disruption}
"#
    )
}

fn default_pool() -> String {
    pool(
        "default",
        "{consolidationPolicy: WhenEmptyOrUnderutilized, consolidateAfter: 0s}",
        "",
    )
}

/// A node of `pool`, of `size` (small, medium, large), created a day before [`NOW`].
fn node(name: &str, pool: &str, size: &str, annotations: &str) -> String {
    support::node(name, pool, size, DAY_BEFORE, annotations)
}

use support::pod;

fn scenario(docs: &[String]) -> Scenario {
    let mut all = vec![CATALOG.to_string()];
    all.extend(docs.iter().cloned());
    Scenario::parse(&all.join("\n---\n")).unwrap_or_else(|e| panic!("{e}"))
}

fn plan(docs: &[String]) -> DisruptionPlan {
    let options = DisruptionOptions::at(NOW.parse().unwrap());
    plan_disruption(&scenario(docs), &options)
}

#[test]
fn an_empty_node_is_deleted_by_emptiness() {
    let p = plan(&[
        default_pool(),
        node("busy", "default", "medium", ""),
        node("idle", "default", "medium", ""),
        pod("web-1", "busy", "3", "", ""),
    ]);
    assert_eq!(p.commands.len(), 1, "{p:#?}");
    let c = &p.commands[0];
    assert_eq!(c.method, Method::Emptiness);
    assert_eq!(c.action, Action::Delete);
    assert_eq!(c.nodes, ["idle"]);
    assert!(c.pods.is_empty());
    assert!((c.price_before - 0.19).abs() < 1e-9, "{c:?}");
    // Karpenter's default budget (10% of 2 nodes, rounded up: 1) is used by the command.
    let busy = p.left_alone("busy").expect("busy is listed");
    assert_eq!(busy.reason, LeftAloneReason::Budget, "{busy:?}");
    let (before, after) = p.total_cost();
    assert!(
        (before - 0.38).abs() < 1e-9 && (after - 0.19).abs() < 1e-9,
        "{p:#?}"
    );
}

fn pool_100() -> String {
    pool(
        "default",
        "{consolidationPolicy: WhenEmptyOrUnderutilized, consolidateAfter: 0s, budgets: [{nodes: \"100%\"}]}",
        "",
    )
}

#[test]
fn two_underutilized_nodes_are_replaced_by_one_cheaper_node() {
    let p = plan(&[
        pool_100(),
        node("a", "default", "medium", ""),
        node("b", "default", "medium", ""),
        pod("web-1", "a", "500m", "", ""),
        pod("web-2", "b", "500m", "", ""),
    ]);
    assert_eq!(p.commands.len(), 1, "{p:#?}");
    let c = &p.commands[0];
    assert_eq!(c.method, Method::MultiNodeConsolidation, "{c:#?}");
    assert_eq!(c.action, Action::Replace);
    assert_eq!(c.nodes.len(), 2);
    assert_eq!(c.replacements.len(), 1);
    assert_eq!(c.replacements[0].instance_type, "small");
    assert!(c.price_after < c.price_before, "{c:#?}");
    assert!(
        c.pods
            .iter()
            .all(|m| m.to == format!("new:{}", c.replacements[0].name)),
        "{c:#?}"
    );
}

#[test]
fn an_underutilized_node_is_replaced_by_a_cheaper_one() {
    let p = plan(&[
        pool_100(),
        node("big", "default", "large", ""),
        pod("web-1", "big", "1", "", ""),
    ]);
    assert_eq!(p.commands.len(), 1, "{p:#?}");
    let c = &p.commands[0];
    assert_eq!(c.method, Method::SingleNodeConsolidation);
    assert_eq!(c.action, Action::Replace);
    assert_eq!(c.replacements[0].instance_type, "small");
    assert!((c.price_before - 0.38).abs() < 1e-9 && (c.price_after - 0.10).abs() < 1e-9);
    let cost = &p.cost[0];
    assert_eq!((cost.nodes_before, cost.nodes_after), (1, 1));
    assert!((cost.after - 0.10).abs() < 1e-9, "{cost:?}");
}

#[test]
fn an_underutilized_node_whose_pods_fit_elsewhere_is_deleted() {
    let p = plan(&[
        pool_100(),
        node(
            "kept",
            "default",
            "medium",
            "adze.sh/do-not-disrupt: \"true\"",
        ),
        node("spare", "default", "medium", ""),
        pod("web-1", "kept", "2", "", ""),
        pod("web-2", "spare", "1", "", ""),
    ]);
    assert_eq!(p.commands.len(), 1, "{p:#?}");
    let c = &p.commands[0];
    assert_eq!(c.method, Method::SingleNodeConsolidation);
    assert_eq!(c.action, Action::Delete);
    assert_eq!(c.nodes, ["spare"]);
    assert_eq!(c.pods[0].pod, "shop/web-2");
    assert_eq!(c.pods[0].to, "kept");
    assert_eq!(
        p.left_alone("kept").unwrap().reason,
        LeftAloneReason::DoNotDisrupt
    );
}

fn big_with_one_small_pod(
    pod_labels: &str,
    pod_annotations: &str,
    extra: &[String],
) -> DisruptionPlan {
    let mut docs = vec![
        node("big", "default", "large", ""),
        pod("web-1", "big", "1", pod_labels, pod_annotations),
    ];
    docs.extend(extra.iter().cloned());
    plan(&docs)
}

#[test]
fn a_pdb_allowing_no_eviction_keeps_the_node() {
    let pdb = |allowed: u32| {
        format!(
            r#"
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {{name: web, namespace: shop}}
spec: {{maxUnavailable: 1, selector: {{matchLabels: {{app: web}}}}}}
status: {{disruptionsAllowed: {allowed}, currentHealthy: 1, desiredHealthy: 0, expectedPods: 1}}
"#
        )
    };
    let p = big_with_one_small_pod("app: web", "", &[pool_100(), pdb(0)]);
    assert!(p.commands.is_empty(), "{p:#?}");
    let l = p.left_alone("big").unwrap();
    assert_eq!(l.reason, LeftAloneReason::Pdb, "{l:?}");
    assert!(l.message.contains("shop/web"), "{l:?}");
    let p = big_with_one_small_pod("app: web", "", &[pool_100(), pdb(1)]);
    assert_eq!(
        p.commands.len(),
        1,
        "the same PDB allowing one eviction: {p:#?}"
    );
}

#[test]
fn a_do_not_disrupt_pod_keeps_its_node() {
    let p = big_with_one_small_pod("", "karpenter.sh/do-not-disrupt: \"true\"", &[pool_100()]);
    assert!(p.commands.is_empty(), "{p:#?}");
    let l = p.left_alone("big").unwrap();
    assert_eq!(l.reason, LeftAloneReason::DoNotDisrupt, "{l:?}");
    assert!(l.message.contains("shop/web-1"), "{l:?}");
}

#[test]
fn a_budget_of_zero_keeps_every_node() {
    let zero = pool(
        "default",
        "{consolidateAfter: 0s, budgets: [{nodes: \"0\"}]}",
        "",
    );
    let p = big_with_one_small_pod("", "", &[zero]);
    assert!(p.commands.is_empty(), "{p:#?}");
    assert_eq!(p.left_alone("big").unwrap().reason, LeftAloneReason::Budget);
}

#[test]
fn consolidate_after_not_elapsed_keeps_the_node_and_says_how_long() {
    let hour = pool("default", "{consolidateAfter: 1h}", "");
    let docs = [
        hour,
        node("big", "default", "large", ""),
        pod("web-1", "big", "1", "", "").replace(
            "creationTimestamp: \"2026-05-31T12:00:00Z\"",
            "creationTimestamp: \"2026-06-01T11:50:00Z\"",
        ),
    ];
    let p = plan(&docs);
    assert!(p.commands.is_empty(), "{p:#?}");
    let l = p.left_alone("big").unwrap();
    assert_eq!(l.reason, LeftAloneReason::ConsolidateAfter, "{l:?}");
    assert!(l.message.contains("3000s to go"), "{l:?}");
    // An hour later it goes.
    let later = DisruptionOptions::at("2026-06-01T12:50:00Z".parse().unwrap());
    let p = plan_disruption(&scenario(&docs), &later);
    assert_eq!(p.commands.len(), 1, "{p:#?}");
}

#[test]
fn a_node_its_pool_no_longer_allows_is_replaced_by_drift() {
    let pinned = pool(
        "default",
        "{consolidateAfter: Never}",
        "        - {key: node.kubernetes.io/instance-type, operator: In, values: [small, medium]}",
    );
    let p = big_with_one_small_pod("", "", &[pinned]);
    assert_eq!(p.commands.len(), 1, "{p:#?}");
    let c = &p.commands[0];
    assert_eq!(c.method, Method::Drift, "{c:#?}");
    assert_eq!(c.action, Action::Replace);
    assert_ne!(c.replacements[0].instance_type, "large");
    assert_eq!(c.pods.len(), 1);
}

#[test]
fn an_expired_node_is_deleted_whatever_protects_it() {
    let expiring = pool("default", "{consolidateAfter: Never}", "").replace(
        "      nodeClassRef:",
        "      expireAfter: 24h\n      nodeClassRef:",
    );
    let p = big_with_one_small_pod("", "adze.sh/do-not-disrupt: \"true\"", &[expiring]);
    assert_eq!(p.commands.len(), 1, "{p:#?}");
    let c = &p.commands[0];
    assert_eq!(c.method, Method::Expiration, "{c:#?}");
    assert_eq!(c.nodes, ["big"]);
    assert_eq!(c.pods.len(), 1);
    assert!(c.pods[0].to.starts_with("new:"), "{c:#?}");
    assert!(c.message.contains("expired"), "{c:?}");
}

// --- The command line, as a user runs it on examples/disruption.yaml. ---

fn cli(args: &[&str]) -> std::process::Output {
    let example =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/disruption.yaml");
    std::process::Command::new(env!("CARGO_BIN_EXE_adze-provisioner"))
        .args(["simulate", "--disruption", "--now", NOW])
        .arg(example)
        .args(args)
        .output()
        .expect("the binary runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8(b.to_vec()).unwrap()
}

#[test]
fn the_cli_prints_the_plan_as_a_table_json_and_yaml_alike() {
    let table = cli(&[]);
    assert!(table.status.success(), "{}", text(&table.stderr));
    let t = text(&table.stdout);
    for want in [
        "2 commands, 2 nodes left alone",
        "Emptiness",
        "SingleNodeConsolidation",
        "shop/web-1: big -> busy",
        "do-not-disrupt",
        "budget",
        "total     4             2            0.8600      0.2900",
    ] {
        assert!(t.contains(want), "{want:?} in\n{t}");
    }
    let json = cli(&["--output", "json"]);
    assert!(json.status.success());
    let from_json: DisruptionPlan = serde_json::from_slice(&json.stdout).unwrap();
    let yaml = cli(&["--output", "yaml"]);
    let from_yaml: DisruptionPlan = serde_yaml::from_slice(&yaml.stdout).unwrap();
    assert_eq!(from_json, from_yaml);
    let methods: Vec<Method> = from_json.commands.iter().map(|c| c.method).collect();
    assert_eq!(
        methods,
        [Method::Emptiness, Method::SingleNodeConsolidation]
    );
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v["commands"][0]["method"], "Emptiness");
    assert_eq!(v["commands"][0]["action"], "delete");
    assert_eq!(v["leftAlone"][1]["reason"], "do-not-disrupt");
    assert_eq!(v["commands"][1]["pods"][0]["to"], "busy");
}

#[test]
fn fail_on_commands_exits_3_only_when_the_plan_has_commands() {
    let out = cli(&["--fail-on-commands"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("--fail-on-commands"));
    assert!(!out.stdout.is_empty(), "the plan is printed either way");
    // A budget of 0: a cluster Adze leaves alone.
    let dir = std::env::temp_dir().join(format!("adze-dplan-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let example =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/disruption.yaml");
    let frozen = std::fs::read_to_string(example)
        .unwrap()
        .replace("budgets: [{nodes: \"50%\"}]", "budgets: [{nodes: \"0\"}]");
    let path = dir.join("frozen.yaml");
    std::fs::write(&path, frozen).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_adze-provisioner"))
        .args([
            "simulate",
            "--disruption",
            "--fail-on-commands",
            "--now",
            NOW,
        ])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    assert!(
        text(&out.stdout).contains("0 commands"),
        "{}",
        text(&out.stdout)
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn disruption_flags_are_refused_without_disruption_and_a_bad_clock_is_named() {
    let example =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/disruption.yaml");
    for flag in [
        &["--now", NOW][..],
        &["--fail-on-commands"][..],
        &["--explain-node", "big"][..],
        &["--max-commands", "2"][..],
        &["--terminate-first-drift"][..],
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_adze-provisioner"))
            .arg("simulate")
            .arg(&example)
            .args(flag)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{flag:?}");
        assert!(
            text(&out.stderr).contains("--disruption"),
            "{flag:?}: {}",
            text(&out.stderr)
        );
    }
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_adze-provisioner"))
        .args(["simulate", "--disruption", "--now", "yesterday"])
        .arg(&example)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("--now \"yesterday\""),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn max_commands_limits_the_plan_and_says_so() {
    let out = cli(&["--max-commands", "1", "--output", "json"]);
    let p: DisruptionPlan = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(p.commands.len(), 1);
    assert_eq!(
        p.left_alone("big").unwrap().reason,
        LeftAloneReason::CommandLimit,
        "{p:#?}"
    );
}

#[test]
fn explain_node_says_why_and_what_consolidation_tried() {
    let out = cli(&["--explain-node", "busy"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let t = text(&out.stdout);
    for want in [
        "Node busy (NodePool default",
        "left alone (budget)",
        "consolidateAfter: 300s",
        "budget left now: Drifted 2, Empty 2, Underutilized 2",
        "consolidation of it alone",
    ] {
        assert!(t.contains(want), "{want:?} in\n{t}");
    }
    let out = cli(&["--explain-node", "batch", "--output", "json"]);
    let e: adze_provisioner::simulate::disruption::NodeExplanation =
        serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        e.blocker.as_deref().unwrap().contains("shop/report"),
        "{e:?}"
    );
    assert_eq!(
        e.left_alone.as_ref().unwrap().reason,
        LeftAloneReason::DoNotDisrupt
    );
    assert!(e.consolidation.is_none(), "not a candidate: {e:?}");
    let out = cli(&["--explain-node", "nope"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("--explain-node nope"));
}

#[test]
fn a_nodeclaim_in_the_scenario_is_linked_to_its_node_and_its_own_expire_after_counts() {
    // The claim's own expireAfter (1h) is what expiry reads, not its pool's (the default
    // 720h); it names its node by status.nodeName, the Node has no providerID.
    let claim = r#"
apiVersion: adze.sh/v1
kind: NodeClaim
metadata:
  name: big-claim
  creationTimestamp: "2026-06-01T10:00:00Z"
  labels: {adze.sh/nodepool: default}
spec:
  nodeClassRef: {group: aws.adze.sh, kind: EC2NodeClass, name: default}
  expireAfter: 1h
status:
  nodeName: big
  conditions:
    - {type: Initialized, status: "True", reason: Initialized, message: "", lastTransitionTime: "2026-06-01T10:00:00Z"}
"#
    .to_string();
    let bare_node = node("big", "default", "large", "")
        .replace("spec: {providerID: \"aws:///test-1a/i-big\"}\n", "");
    let p = plan(&[
        pool("default", "{consolidateAfter: Never}", ""),
        bare_node,
        pod("web-1", "big", "1", "", ""),
        claim.clone(),
    ]);
    assert_eq!(p.commands.len(), 1, "{p:#?}");
    assert_eq!(p.commands[0].method, Method::Expiration);
    assert!(
        p.notes
            .iter()
            .any(|n| n.contains("NodeClaim big-claim linked to Node big")),
        "{:?}",
        p.notes
    );
    let wrong = claim.replace("apiVersion: adze.sh/v1", "apiVersion: karpenter.sh/v1");
    let err = Scenario::parse(&[CATALOG.to_string(), wrong].join("\n---\n")).unwrap_err();
    assert!(err.to_string().contains("adze.sh/v1"), "{err}");
}

#[test]
fn a_node_nothing_cheaper_can_replace_is_left_alone_saying_so() {
    let p = plan(&[
        pool_100(),
        node("small-1", "default", "small", ""),
        pod("web-1", "small-1", "1500m", "", ""),
    ]);
    assert!(p.commands.is_empty(), "{p:#?}");
    let l = p.left_alone("small-1").unwrap();
    assert_eq!(l.reason, LeftAloneReason::NoCheaperFit, "{l:?}");
}

/// `big` (large, $0.38/h) holds one pod; a small node ($0.10/h) would do: the replacement
/// saves $0.28/h for a disruption cost of 1 (one pod, charged at least 1).
fn big_with_threshold(threshold: &str) -> DisruptionPlan {
    plan(&[
        pool(
            "default",
            &format!(
                "{{consolidateAfter: 0s, budgets: [{{nodes: \"100%\"}}], minSavingsPerDisruptionCost: \"{threshold}\"}}"
            ),
            "",
        ),
        node("big", "default", "large", ""),
        pod("web-1", "big", "1", "", ""),
    ])
}

#[test]
fn a_replacement_saving_less_than_min_savings_per_disruption_cost_is_left_alone() {
    let p = big_with_threshold("0.3");
    assert!(p.commands.is_empty(), "{p:#?}");
    let l = p.left_alone("big").unwrap();
    assert_eq!(l.reason, LeftAloneReason::SavingsThreshold, "{l:?}");
    assert!(
        l.message
            .contains("saves $0.2800/h for a disruption cost of 1.00: 0.2800 per unit < minSavingsPerDisruptionCost 0.3000"),
        "{l:?}"
    );
    let p = big_with_threshold("0.2");
    assert_eq!(p.commands.len(), 1, "{p:#?}");
    let c = &p.commands[0];
    assert_eq!(c.action, Action::Replace);
    assert!(
        c.message.contains(">= minSavingsPerDisruptionCost 0.2000"),
        "{c:?}"
    );
}

#[test]
fn an_invalid_min_savings_per_disruption_cost_is_refused_naming_the_field() {
    let docs = [
        CATALOG.to_string(),
        pool(
            "default",
            "{consolidateAfter: 0s, minSavingsPerDisruptionCost: \"a cent\"}",
            "",
        ),
    ];
    let err = Scenario::parse(&docs.join("\n---\n")).unwrap_err();
    assert!(
        err.to_string()
            .contains("spec.disruption.minSavingsPerDisruptionCost"),
        "{err}"
    );
}

#[test]
fn pending_pods_the_provisioner_can_place_hold_every_disruption() {
    let pending = pod("waiting", "x", "1", "", "").replace("  nodeName: x\n", "");
    let p = plan(&[
        pool_100(),
        node("idle", "default", "medium", ""),
        node("busy", "default", "medium", ""),
        pod("api-1", "busy", "3", "", ""),
        pending,
    ]);
    assert!(p.commands.is_empty(), "{p:#?}");
    let l = p.left_alone("idle").unwrap();
    assert_eq!(l.reason, LeftAloneReason::PendingPods, "{l:?}");
    assert!(l.message.starts_with("1 pending pod"), "{l:?}");
}

/// Ten medium nodes with a pod each, two of them (`sick-a`, `sick-b`) Ready False for an
/// hour (due for repair: tolerated 30 minutes); the pool's only budget is one node for
/// reason Unhealthy, and consolidation is off, so repair alone acts.
fn sick_cluster() -> Vec<String> {
    let mut docs = vec![pool(
        "default",
        r#"{consolidationPolicy: WhenEmpty, consolidateAfter: Never, budgets: [{nodes: "1", reasons: [Unhealthy]}]}"#,
        "",
    )];
    for i in 0..10 {
        let name = match i {
            0 => "sick-a".to_string(),
            1 => "sick-b".to_string(),
            _ => format!("n{i}"),
        };
        let mut n = node(&name, "default", "medium", "");
        if i < 2 {
            n = n.replace(
                r#"conditions: [{type: Ready, status: "True"}]"#,
                r#"conditions: [{type: Ready, status: "False", lastTransitionTime: "2026-06-01T11:00:00Z"}]"#,
            );
        }
        docs.push(n);
        docs.push(pod(&format!("web-{i}"), &name, "1", "", ""));
    }
    docs
}

fn plan_repair(mode: Option<adze_scheduling::disruption::repair::RepairMode>) -> DisruptionPlan {
    let mut options = DisruptionOptions::at(NOW.parse().unwrap());
    options.node_repair = mode;
    plan_disruption(&scenario(&sick_cluster()), &options)
}

#[test]
fn node_repair_is_planned_first_within_the_unhealthy_budget_or_forcefully_in_legacy_mode() {
    use adze_scheduling::disruption::repair::RepairMode;
    // Off: the unhealthy nodes are only "disrupting" (not Ready), nothing is done.
    let off = plan_repair(None);
    assert!(off.commands.is_empty(), "{off:#?}");
    assert_eq!(
        off.left_alone("sick-a").unwrap().reason,
        LeftAloneReason::Disrupting
    );

    // Budgeted: one repair (the budget is one node; the two not-Ready nodes do not use it
    // up), the other held by the budget.
    let p = plan_repair(Some(RepairMode::Budgeted));
    assert_eq!(p.commands.len(), 1, "{p:#?}");
    let c = &p.commands[0];
    assert_eq!((c.method, c.reason.as_str()), (Method::Repair, "Unhealthy"));
    assert_eq!(c.nodes, ["sick-a"]);
    assert_eq!(c.pods.len(), 1);
    assert_ne!(c.pods[0].to, "pending", "{c:?}");
    assert!(
        c.message.contains("node condition Ready has been False for 1h (tolerated for 30m); repaired within the NodePool's disruption budget for Unhealthy"),
        "{}",
        c.message
    );
    let held = p.left_alone("sick-b").unwrap();
    assert_eq!(held.reason, LeftAloneReason::RepairBlocked, "{held:?}");
    assert!(
        held.message.ends_with(
            "but the disruption budget of nodepool default allows no more Unhealthy disruptions now"
        ),
        "{}",
        held.message
    );

    // Legacy: both repaired at once, the budget not read, the rest of the pass waits.
    let p = plan_repair(Some(RepairMode::Legacy));
    assert_eq!(p.commands.len(), 2, "{p:#?}");
    assert!(p.commands.iter().all(|c| {
        c.method == Method::Repair
            && c.action == Action::Delete
            && c.message.ends_with(
                "repaired regardless of budgets, do-not-disrupt and PodDisruptionBudgets",
            )
    }));
    assert_eq!(
        p.left_alone("n5").unwrap().reason,
        LeftAloneReason::RepairFirst
    );
}

#[test]
fn a_pool_whose_drift_replacement_just_failed_is_held_back_as_after_a_restart() {
    let pinned = pool(
        "default",
        "{consolidateAfter: Never}",
        "        - {key: node.kubernetes.io/instance-type, operator: In, values: [small, medium]}",
    );
    // The drifted node's NodeClaim was kept 30 s ago: its replacement failed to launch.
    let failed = support::claim("big", "default", "large", DAY_BEFORE)
        + "    - {type: Disrupting, status: \"False\", reason: DriftReplacementFailed, message: \"replacement r-1 failed to launch\", lastTransitionTime: \"2026-06-01T11:59:30Z\"}\n";
    let docs = vec![
        node("big", "default", "large", ""),
        pod("web-1", "big", "1", "", ""),
        pinned,
        failed,
    ];
    let p = plan(&docs);
    assert!(p.commands.is_empty(), "{p:#?}");
    let l = p.left_alone.iter().find(|l| l.node == "big").expect("big");
    assert_eq!(l.reason, LeftAloneReason::DriftBackoff, "{l:?}");
    assert!(l.message.contains("until"), "{l:?}");
    assert!(l.message.contains("r-1 failed to launch"), "{l:?}");
    // The first hold is a minute: 40 s later drift replaces the node again.
    let later = DisruptionOptions::at("2026-06-01T12:00:40Z".parse().unwrap());
    let p = plan_disruption(&scenario(&docs), &later);
    assert_eq!(p.commands.len(), 1, "{p:#?}");
    assert_eq!(p.commands[0].method, Method::Drift);
}

/// A drifted large node (the pool now allows only small and medium) with a 3-CPU pod beside
/// a full medium node, in a pool whose `limits.nodes` is `limit`.
fn drifted_at_a_limit(limit: u32, gate: bool) -> DisruptionPlan {
    let limited = pool(
        "default",
        "{consolidateAfter: Never}",
        "        - {key: node.kubernetes.io/instance-type, operator: In, values: [small, medium]}",
    ) + &format!("  limits: {{nodes: \"{limit}\"}}\n");
    let docs = [
        limited,
        node("big", "default", "large", ""),
        pod("web-1", "big", "3", "", ""),
        node("full", "default", "medium", ""),
        pod("web-2", "full", "3", "", ""),
    ];
    let mut options = DisruptionOptions::at(NOW.parse().unwrap());
    options.terminate_first_drift = gate;
    plan_disruption(&scenario(&docs), &options)
}

#[test]
fn drift_of_a_pool_at_its_limits_deletes_first_with_terminate_first_drift() {
    // Off: the replacement would be a third node over limits.nodes 2; the node is kept.
    let off = drifted_at_a_limit(2, false);
    assert!(off.commands.is_empty(), "{off:#?}");
    assert_eq!(
        off.left_alone("big").unwrap().reason,
        LeftAloneReason::PodsCannotMove
    );
    // On (simulate --terminate-first-drift): deleted first, nothing launched beside it.
    let on = drifted_at_a_limit(2, true);
    assert_eq!(on.commands.len(), 1, "{on:#?}");
    let c = &on.commands[0];
    assert_eq!(
        (c.method, c.action),
        (Method::Drift, Action::Delete),
        "{c:#?}"
    );
    assert_eq!(c.nodes, ["big"]);
    assert!(c.replacements.is_empty());
    // Room under the limit: replaced first, gate or not.
    for gate in [false, true] {
        let p = drifted_at_a_limit(3, gate);
        assert_eq!(p.commands.len(), 1, "{p:#?}");
        assert_eq!(p.commands[0].action, Action::Replace);
    }
}

/// [`sick_cluster`] planned with budgeted repair and `--reboot-for-repair`; `claims` adds
/// NodeClaims (carrying a reboot record) for some of its nodes.
fn plan_reboot(claims: &[String]) -> DisruptionPlan {
    let mut options = DisruptionOptions::at(NOW.parse().unwrap());
    options.node_repair = Some(adze_scheduling::disruption::repair::RepairMode::Budgeted);
    options.reboot_for_repair = true;
    let mut docs = sick_cluster();
    docs.extend(claims.iter().cloned());
    plan_disruption(&scenario(&docs), &options)
}

/// `node`'s NodeClaim annotated as rebooted for repair at `at` (and refused, with `refused`).
fn rebooted_claim(node: &str, at: &str, refused: bool) -> String {
    let mut annotations = format!("adze.sh/repair-rebooted-at: \"{at}\"");
    if refused {
        annotations.push_str(", adze.sh/repair-reboot-failed: \"UnauthorizedOperation\"");
    }
    support::claim(node, "default", "medium", DAY_BEFORE).replacen(
        &format!("  name: {node}\n"),
        &format!("  name: {node}\n  annotations: {{{annotations}}}\n"),
        1,
    )
}

#[test]
fn reboot_for_repair_plans_a_reboot_first_then_the_replacement_once_the_wait_is_over() {
    // First pass: sick-a (due first) is rebooted, not replaced; its pods stay, its price too.
    // The budget of one Unhealthy node is the reboot's: sick-b waits.
    let p = plan_reboot(&[]);
    assert_eq!(p.commands.len(), 1, "{p:#?}");
    let c = &p.commands[0];
    assert_eq!(
        (c.method, c.action, c.reason.as_str()),
        (Method::Repair, Action::Reboot, "Unhealthy")
    );
    assert_eq!(c.nodes, ["sick-a"]);
    assert!(c.pods.is_empty() && c.replacements.is_empty(), "{c:?}");
    assert!((c.price_before - c.price_after).abs() < 1e-9, "{c:?}");
    assert!(
        c.message
            .contains("its instance is rebooted first (reboot-for-repair)"),
        "{}",
        c.message
    );
    let held = p.left_alone("sick-b").unwrap();
    assert_eq!(held.reason, LeftAloneReason::RepairBlocked, "{held:?}");
    assert!(held.message.starts_with("reboot blocked: "), "{held:?}");

    // Five minutes after the reboot, still Ready False: waiting, nothing replaced.
    let p = plan_reboot(&[rebooted_claim("sick-a", "2026-06-01T11:55:00Z", false)]);
    assert!(p.commands.iter().all(|c| c.nodes != ["sick-a"]), "{p:#?}");
    let waiting = p.left_alone("sick-a").unwrap();
    assert_eq!(waiting.reason, LeftAloneReason::RepairBlocked);
    assert!(
        waiting
            .message
            .starts_with("rebooted for repair 5m ago and still unhealthy")
            && waiting
                .message
                .ends_with("replaced if still unhealthy in 15m"),
        "{waiting:?}"
    );

    // Twenty-one minutes after it, still unhealthy: replaced (not rebooted again).
    let p = plan_reboot(&[rebooted_claim("sick-a", "2026-06-01T11:39:00Z", false)]);
    let c = &p.commands[0];
    assert_eq!(c.method, Method::Repair, "{p:#?}");
    assert_ne!(c.action, Action::Reboot, "{c:?}");
    assert_eq!(c.nodes, ["sick-a"]);
    assert_eq!(c.pods.len(), 1);

    // A refused reboot: replaced at once.
    let p = plan_reboot(&[rebooted_claim("sick-a", "2026-06-01T11:59:00Z", true)]);
    let c = &p.commands[0];
    assert_eq!(c.nodes, ["sick-a"], "{p:#?}");
    assert_ne!(c.action, Action::Reboot, "{c:?}");
}

// --- VPA predictions (`--vpa-predictions`, Karpenter's PredictionEnabled). ---

/// `big` (large) holds one Deployment pod asking for 3 CPUs; its VerticalPodAutoscaler
/// recommends 500m. Consolidation replaces `big` either way; the flag decides the size.
fn vpa_cluster() -> Vec<String> {
    vec![
        pool_100(),
        node("big", "default", "large", ""),
        r#"
apiVersion: v1
kind: Pod
metadata:
  name: web-7c9f-a
  namespace: shop
  uid: uid-web
  creationTimestamp: "2026-05-31T12:00:00Z"
  labels: {app: web, pod-template-hash: 7c9f}
  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: web-7c9f, uid: rs, controller: true}]
spec:
  nodeName: big
  containers: [{name: app, image: app, resources: {requests: {cpu: "3", memory: 1Gi}}}]
status: {phase: Running, startTime: "2026-05-31T12:00:00Z"}
"#
        .to_string(),
        r#"
apiVersion: autoscaling.k8s.io/v1
kind: VerticalPodAutoscaler
metadata: {name: web, namespace: shop}
spec:
  targetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  updatePolicy: {updateMode: Auto}
status:
  recommendation:
    containerRecommendations:
      - {containerName: app, target: {cpu: 500m, memory: 1Gi}, lowerBound: {cpu: 100m}, upperBound: {cpu: "6"}}
"#
        .to_string(),
    ]
}

fn plan_vpa(docs: &[String], predictions: bool) -> DisruptionPlan {
    let mut options = DisruptionOptions::at(NOW.parse().unwrap());
    options.vpa_predictions = predictions;
    plan_disruption(&scenario(docs), &options)
}

#[test]
fn a_consolidation_replacement_is_sized_from_the_vpa_recommendation_only_with_the_flag() {
    let without = plan_vpa(&vpa_cluster(), false);
    assert_eq!(without.commands.len(), 1, "{without:#?}");
    assert_eq!(without.commands[0].action, Action::Replace);
    // 3 CPUs as the pod asks now: the 4-CPU type.
    assert_eq!(without.commands[0].replacements[0].instance_type, "medium");

    let with = plan_vpa(&vpa_cluster(), true);
    assert_eq!(with.commands.len(), 1, "{with:#?}");
    let c = &with.commands[0];
    assert_eq!(c.action, Action::Replace);
    // 500m as the VPA will recreate it: the 2-CPU type, cheaper.
    assert_eq!(c.replacements[0].instance_type, "small");
    assert!(c.price_after < without.commands[0].price_after, "{c:#?}");

    // updateMode Off: the webhook leaves recreated pods alone, so nothing changes.
    let mut off = vpa_cluster();
    off[3] = off[3].replace("updateMode: Auto", "updateMode: \"Off\"");
    let p = plan_vpa(&off, true);
    assert_eq!(p.commands[0].replacements[0].instance_type, "medium");
    // A VPA naming another workload does not govern the pod.
    let mut other = vpa_cluster();
    other[3] = other[3].replace("name: web}", "name: api}");
    let p = plan_vpa(&other, true);
    assert_eq!(p.commands[0].replacements[0].instance_type, "medium");
}

#[test]
fn a_scenario_vpa_is_refused_without_the_flag_and_a_bad_field_at_its_path() {
    let dir = std::env::temp_dir().join(format!("adze-vpa-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut docs = vec![support::CATALOG.to_string()];
    docs.extend(vpa_cluster());
    let file = dir.join("vpa.yaml");
    std::fs::write(&file, docs.join("\n---\n")).unwrap();
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_adze-provisioner"))
            .args(["simulate", "--now", NOW])
            .args(args)
            .arg(&file)
            .output()
            .expect("the binary runs")
    };
    let refused = run(&["--disruption"]);
    assert!(!refused.status.success());
    let e = text(&refused.stderr);
    assert!(
        e.contains("VerticalPodAutoscaler shop/web") && e.contains("--vpa-predictions"),
        "{e}"
    );
    let ok = run(&["--disruption", "--vpa-predictions", "--output", "json"]);
    assert!(ok.status.success(), "{}", text(&ok.stderr));
    assert!(
        text(&ok.stdout).contains("\"small\""),
        "{}",
        text(&ok.stdout)
    );
    // The flag means nothing without --disruption: refused by clap.
    let alone = run(&["--vpa-predictions"]);
    assert!(!alone.status.success());
    assert!(
        text(&alone.stderr).contains("--disruption"),
        "{}",
        text(&alone.stderr)
    );

    docs[4] = docs[4].replace("updateMode: Auto", "updateMode: Sometimes");
    std::fs::write(&file, docs.join("\n---\n")).unwrap();
    let bad = run(&["--disruption", "--vpa-predictions"]);
    let e = text(&bad.stderr);
    assert!(
        !bad.status.success()
            && e.contains("spec.updatePolicy.updateMode")
            && e.contains("Sometimes"),
        "{e}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// A DaemonSet created after the nodes (Karpenter #731), its pods listed nowhere: each
/// node it selects holds its requests once it runs there.
fn late_daemonset(cpu: &str) -> String {
    format!(
        r#"
apiVersion: apps/v1
kind: DaemonSet
metadata: {{name: agent, namespace: monitoring}}
spec:
  selector: {{matchLabels: {{app: agent}}}}
  template:
    metadata: {{labels: {{app: agent}}}}
    spec:
      containers:
        - name: agent
          image: agent
          resources: {{requests: {{cpu: {cpu}, memory: 256Mi}}}}
"#
    )
}

#[test]
fn a_daemonset_added_after_launch_keeps_pods_out_of_the_room_it_takes() {
    let cluster = |extra: Vec<String>| {
        let mut docs = vec![
            pool_100(),
            node(
                "kept",
                "default",
                "medium",
                "adze.sh/do-not-disrupt: \"true\"",
            ),
            node("spare", "default", "medium", ""),
            pod("web-1", "kept", "2", "", ""),
            pod("web-2", "spare", "1", "", ""),
        ];
        docs.extend(extra);
        plan(&docs)
    };
    // A small DaemonSet still leaves room for web-2 beside web-1: spare goes.
    let p = cluster(vec![late_daemonset("500m")]);
    assert_eq!(p.commands.len(), 1, "{p:#?}");
    assert_eq!(p.commands[0].action, Action::Delete, "{p:#?}");
    assert_eq!(p.commands[0].pods[0].to, "kept");
    // A 1.5-CPU one, whose pod on "kept" is not running yet: web-1, it and web-2 need 4.5
    // of kept's 4 CPUs, and a small node cannot hold web-2 and the DaemonSet (2.5 of 2).
    // Read from bound pods only, spare would be deleted and web-2 left pending.
    let p = cluster(vec![late_daemonset("1500m")]);
    assert!(
        p.commands
            .iter()
            .all(|c| c.pods.iter().all(|m| m.to != "kept")),
        "{p:#?}"
    );
    assert!(p.commands.is_empty(), "{p:#?}");
    assert!(p.left_alone("spare").is_some(), "{p:#?}");
}

#[test]
fn a_node_a_late_daemonset_does_not_fit_is_replaced_by_a_bigger_one_through_drift() {
    let docs = |ds: &str| {
        vec![
            pool(
                "default",
                "{consolidateAfter: Never, budgets: [{nodes: \"100%\"}]}",
                "",
            ),
            node("full", "default", "medium", ""),
            pod("web-1", "full", "3", "", ""),
            late_daemonset(ds),
        ]
    };
    // 500m beside 3 CPUs fits a medium (4): nothing to do.
    let p = plan(&docs("500m"));
    assert!(p.commands.is_empty(), "{p:#?}");
    // 1.5 CPUs does not: its pod would stay pending. The node is drifted
    // (DaemonSetsDrifted) and replaced by one sized for web-1 and the DaemonSet.
    let p = plan(&docs("1500m"));
    assert_eq!(p.commands.len(), 1, "{p:#?}");
    let c = &p.commands[0];
    assert_eq!(c.method, Method::Drift, "{c:#?}");
    assert_eq!(c.action, Action::Replace);
    assert_eq!(c.nodes, ["full"]);
    assert_eq!(c.replacements[0].instance_type, "large", "{c:#?}");
    assert_eq!(
        c.pods.len(),
        1,
        "only web-1 moves; DaemonSet pods go with their node"
    );
    assert!(c.message.contains("drifted"), "{c:#?}");
    assert!(
        c.price_after > c.price_before,
        "drift may cost more: {c:#?}"
    );
}
