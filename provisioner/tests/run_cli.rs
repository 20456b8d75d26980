//! `run` flags that would be accepted and then have no effect are refused before anything starts.

use std::process::Command;

fn run(args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_adze-provisioner"))
        .arg("run")
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
fn leader_election_tunings_without_leader_election_are_refused_naming_the_flag() {
    let (code, err) = run(&[
        "--leader-elect=false",
        "--leader-election-lease-duration",
        "30s",
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("--leader-election-lease-duration has no effect with --leader-elect=false"),
        "{err}"
    );
}

#[test]
fn leader_election_periods_out_of_order_are_refused_naming_the_flags() {
    let (code, err) = run(&["--leader-election-retry-period", "12s"]);
    assert_ne!(code, Some(0), "{err}");
    assert!(
        err.contains("--leader-election-retry-period (12s)"),
        "{err}"
    );
}
