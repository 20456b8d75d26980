//! Reboot as the first repair action (`--reboot-for-repair`, Karpenter's `RebootForRepair`):
//! a node due for repair is rebooted, within its pool's `Unhealthy` budget, and replaced only
//! when still unhealthy after the wait or when the reboot was refused; one reboot per episode.

use adze_scheduling::disruption::repair::{
    self, Finding, NodeHealth, REBOOT_WAIT, RebootRecord, RebootStep, RepairMode, reboot_step,
};
use adze_scheduling::disruption::{
    Budget, BudgetNodes, Input, Options, Reason, decide_all, reboots, repair_held, revalidate,
};
use adze_scheduling::fixtures::{ClusterBuilder, GI, ZONES, pod, pool, small_catalog};

const NOW: i64 = 1_000_000;
const MIN: i64 = 60;

fn opts(reboot: bool) -> Options {
    Options {
        node_repair: Some(RepairMode::Budgeted),
        reboot_for_repair: reboot,
        ..Options::default()
    }
}

/// Ten m.4x nodes with a pod each, every one with an instance; `sick` of them report Ready
/// False since 40 − i minutes ago (sick-0 due first). The pool's only budget is `unhealthy`
/// nodes for reason Unhealthy.
fn cluster(sick: usize, unhealthy: &str) -> Input {
    let mut b = ClusterBuilder::new(pool("default", small_catalog()));
    let mut health = Vec::new();
    for i in 0..10 {
        let name = if i < sick {
            format!("sick-{i}")
        } else {
            format!("n{i}")
        };
        b = b
            .node(&name, "m.4x", ZONES[0], false)
            .pod(&name, pod(&format!("p{i}")).cpu(500).mem(GI).build());
        let mut h = NodeHealth::new(&name, &format!("{name}-claim"), "default");
        h.provider_id = Some(format!("aws:///us-east-1a/i-{name}"));
        if i < sick {
            h = h.with("Ready", "False", Some(NOW - (40 - i as i64) * MIN));
            b = b.facts(&name, |f| {
                f.disrupting = true;
                f.disrupting_as_not_ready = true;
            });
        } else {
            h = h.with("Ready", "True", Some(0));
        }
        health.push(h);
    }
    let mut input = b
        .policy(|p| {
            p.budgets = vec![Budget {
                reasons: vec![Reason::Unhealthy],
                ..Budget::nodes(BudgetNodes::parse(unhealthy).unwrap())
            }]
        })
        .now(NOW)
        .build();
    input.health = health;
    input
}

fn rebooted(input: &mut Input, node: &str, at: i64, failed: bool) {
    let h = input.health.iter_mut().find(|h| h.node == node).unwrap();
    h.reboot = Some(RebootRecord { at, failed });
}

fn repaired(input: &Input, options: &Options) -> Vec<String> {
    decide_all(input, options, true, 100)
        .iter()
        .filter(|d| d.reason == Reason::Unhealthy)
        .flat_map(|d| d.node_names())
        .map(String::from)
        .collect()
}

#[test]
fn a_node_due_for_repair_is_rebooted_first_within_the_budget_and_not_replaced() {
    let input = cluster(2, "1");
    let options = opts(true);
    let plans = reboots(&input, &options);
    assert_eq!(plans.len(), 2, "{plans:?}");
    assert_eq!(plans[0].node, "sick-0", "earliest due first");
    assert_eq!(plans[0].step, RebootStep::Reboot);
    assert_eq!(plans[0].blocked, None);
    assert_eq!(
        plans[0].provider_id.as_deref(),
        Some("aws:///us-east-1a/i-sick-0")
    );
    assert!(
        plans[0].message.contains(
            "node condition Ready has been False for 40m (tolerated for 30m); its instance is rebooted first"
        ),
        "{}",
        plans[0].message
    );
    // The budget of one Unhealthy node is the first reboot's.
    assert!(
        plans[1]
            .blocked
            .as_deref()
            .is_some_and(|b| b.contains("disruption budget of nodepool default")),
        "{plans:?}"
    );
    assert!(repaired(&input, &options).is_empty(), "no replacement yet");
    let d = decide_all(&input, &options, true, 100);
    assert!(
        repair_held(&input, &options, &d).is_empty(),
        "rebooting nodes are reported by reboots(), not as held repairs"
    );
    // Reboots off: replaced as before, and nothing rebooted.
    assert_eq!(repaired(&input, &opts(false)), ["sick-0"]);
    assert!(reboots(&input, &opts(false)).is_empty());
}

#[test]
fn a_rebooted_node_waits_then_is_replaced_if_still_unhealthy_and_not_rebooted_again() {
    let mut input = cluster(2, "1");
    let options = opts(true);
    let wait = REBOOT_WAIT.as_secs() as i64;
    rebooted(&mut input, "sick-0", NOW - wait + 60, false);
    let plans = reboots(&input, &options);
    assert_eq!(
        plans[0].step,
        RebootStep::Waiting {
            since: NOW - wait + 60,
            until: NOW + 60
        }
    );
    assert!(
        plans[0]
            .message
            .contains("replaced if still unhealthy in 1m"),
        "{}",
        plans[0].message
    );
    // The waiting node holds the pool's one Unhealthy disruption: sick-1 is not rebooted.
    assert!(plans[1].blocked.is_some(), "{plans:?}");
    assert!(repaired(&input, &options).is_empty());

    // The wait is over and Ready is still False: replaced, not rebooted a second time.
    rebooted(&mut input, "sick-0", NOW - wait, false);
    let plans = reboots(&input, &options);
    assert!(plans.iter().all(|p| p.node != "sick-0"), "{plans:?}");
    // sick-0's replacement has the one Unhealthy disruption: sick-1 is not rebooted beside it.
    assert!(
        plans[0].node == "sick-1" && plans[0].blocked.is_some(),
        "{plans:?}"
    );
    let all = decide_all(&input, &options, true, 100);
    assert_eq!(all[0].reason, Reason::Unhealthy);
    assert_eq!(all[0].node_names(), ["sick-0"]);
    assert!(revalidate(&all[0], &input, &options).is_ok());
    // Revalidated against a node that is back in its wait (a fresh record): dropped.
    rebooted(&mut input, "sick-0", NOW, false);
    assert!(revalidate(&all[0], &input, &options).is_err());
}

#[test]
fn a_refused_reboot_is_replaced_at_once() {
    let mut input = cluster(1, "1");
    rebooted(&mut input, "sick-0", NOW, true);
    assert_eq!(repaired(&input, &opts(true)), ["sick-0"]);
    assert!(reboots(&input, &opts(true)).is_empty());
}

#[test]
fn one_reboot_per_episode_and_a_new_episode_after_the_window_is_rebooted_again() {
    let wait = REBOOT_WAIT.as_secs() as i64;
    let finding = |since: i64| Finding {
        condition: "Ready".into(),
        status: "False".into(),
        toleration: std::time::Duration::from_secs(30 * 60),
        since: Some(since),
        checks: None,
    };
    let at = NOW - 3600;
    let record = Some(RebootRecord { at, failed: false });
    assert_eq!(
        reboot_step(&finding(at - 600), None, NOW),
        RebootStep::Reboot
    );
    // The condition held through the reboot and its window: replace.
    assert_eq!(
        reboot_step(&finding(at - 600), record, NOW),
        RebootStep::Replace
    );
    // It went False again during the window (the reboot itself flips Ready): same episode.
    assert_eq!(
        reboot_step(&finding(at + wait), record, NOW),
        RebootStep::Replace
    );
    // It began after the window ended: the node was fine after its reboot; a new episode.
    assert_eq!(
        reboot_step(&finding(at + wait + 1), record, NOW),
        RebootStep::Reboot
    );
    // A condition with no transition time cannot start a new episode.
    let mut timeless = finding(0);
    timeless.since = None;
    assert_eq!(reboot_step(&timeless, record, NOW), RebootStep::Replace);
    assert_eq!(repair::REBOOT_WAIT.as_secs(), 20 * 60);
}

#[test]
fn a_node_without_an_instance_is_not_rebooted_and_a_guarded_pool_is_not_either() {
    let mut input = cluster(1, "10");
    input.health[0].provider_id = None;
    let plans = reboots(&input, &opts(true));
    assert!(
        plans[0]
            .blocked
            .as_deref()
            .is_some_and(|b| b.contains("has no instance to reboot")),
        "{plans:?}"
    );
    // Three of ten unhealthy: over the 20 % guard, so nothing is due and nothing rebooted.
    let input = cluster(3, "10");
    assert!(reboots(&input, &opts(true)).is_empty());
}
