//! Flags that would be accepted and then have no effect are refused before anything starts.

use std::process::Command;

fn run(args: &[&str]) -> (Option<i32>, String) {
    run_env(args, &[])
}

fn run_env(args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String) {
    adze_cli::run_without_cluster(env!("CARGO_BIN_EXE_adze-extender"), args, env)
}

#[test]
fn a_hold_limit_with_preemption_allowed_is_refused_naming_both_flags() {
    let (code, err) = run(&["--preemption", "allow", "--preemption-hold-limit", "1m"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--preemption-hold-limit"), "{err}");
    assert!(err.contains("--preemption allow"), "{err}");
}

#[test]
fn leader_election_periods_out_of_order_are_refused_naming_the_flags() {
    let (code, err) = run(&["--leader-election-renew-deadline", "20s"]);
    assert_ne!(code, Some(0), "{err}");
    assert!(
        err.contains("--leader-election-renew-deadline (20s)"),
        "{err}"
    );
}

#[test]
fn leader_election_flags_without_leader_election_are_refused() {
    let (code, err) = run(&[
        "--leader-elect=false",
        "--leader-election-renew-deadline",
        "9s",
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("--leader-election-renew-deadline has no effect with --leader-elect=false"),
        "{err}"
    );
    // Left at their defaults they are not in the way.
    let (code, err) = run(&["--leader-elect=false"]);
    assert_ne!(code, Some(2), "{err}");
}

#[test]
fn environment_fallbacks_take_effect_and_are_refused_like_flags() {
    // ADZE_PREEMPTION and ADZE_PREEMPTION_HOLD_LIMIT are read: together they are refused
    // exactly as the two flags are.
    let (code, err) = run_env(
        &[],
        &[
            ("ADZE_PREEMPTION", "allow"),
            ("ADZE_PREEMPTION_HOLD_LIMIT", "1m"),
        ],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--preemption-hold-limit"), "{err}");
    // A flag on the command line wins over its variable.
    let (code, err) = run_env(
        &["--preemption", "hold"],
        &[
            ("ADZE_PREEMPTION", "allow"),
            ("ADZE_PREEMPTION_HOLD_LIMIT", "1m"),
        ],
    );
    assert_ne!(code, Some(2), "{err}");
    let (code, err) = run_env(
        &["--leader-elect=false"],
        &[("ADZE_LEADER_ELECTION_NAME", "x")],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("ADZE_LEADER_ELECTION_NAME (for --leader-election-name) has no effect"),
        "{err}"
    );
    let (code, err) = run_env(&[], &[("ADZE_LOG_FORMAT", "xml")]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--log-format"), "{err}");
}

#[test]
fn the_renamed_log_flag_is_refused_with_its_replacement() {
    let (code, err) = run(&["--log-json"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("--log-json was renamed: use --log-format json"),
        "{err}"
    );
}

#[test]
fn version_and_kubeconfig_are_flags() {
    let out = Command::new(env!("CARGO_BIN_EXE_adze-extender"))
        .arg("--version")
        .output()
        .expect("runs");
    assert!(out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stdout).starts_with("adze-extender "),
        "{out:?}"
    );
    let (code, err) = run(&[
        "--kubeconfig",
        "/nonexistent/kubeconfig",
        "--leader-elect=false",
    ]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("/nonexistent/kubeconfig"), "{err}");
}
