//! Flags that would be accepted and then have no effect are refused before anything starts.

use std::process::Command;

fn run(args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_adze-extender"))
        .args(args)
        // No cluster: a refused flag must fail before the client configuration is read.
        .env("KUBECONFIG", "/nonexistent")
        .env_remove("KUBERNETES_SERVICE_HOST")
        .output()
        .expect("runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
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
