//! `run` flags that would be accepted and then have no effect are refused before anything starts.

use std::process::Command;

/// `run ARGS`, with `--cloud-provider simulated` added unless ARGS name a provider (the flag
/// is required; these tests are about the other flags).
fn run(args: &[&str]) -> (Option<i32>, String) {
    run_env(args, &[])
}

fn run_env(args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String) {
    let provider: &[&str] = if args.contains(&"--cloud-provider") {
        &[]
    } else {
        &["--cloud-provider", "simulated"]
    };
    let args: Vec<&str> = std::iter::once("run")
        .chain(provider.iter().copied())
        .chain(args.iter().copied())
        .collect();
    adze_cli::run_without_cluster(env!("CARGO_BIN_EXE_adze-provisioner"), &args, env)
}

/// `run` with no `--cloud-provider` used to start on the simulated cloud, which against a real
/// cluster creates Nodes no machine backs. It is refused at parse time, naming the flag and
/// its choices, before any cluster is contacted (the kubeconfig named here does not exist, so
/// reaching it would fail with another message).
#[test]
fn run_without_a_cloud_provider_is_refused_naming_the_flag_and_its_choices() {
    let (code, err) = adze_cli::run_without_cluster(
        env!("CARGO_BIN_EXE_adze-provisioner"),
        &[
            "run",
            "--kubeconfig",
            "/nonexistent/kc",
            "--leader-elect=false",
        ],
        &[],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--cloud-provider <CLOUD_PROVIDER>"), "{err}");
    assert!(
        err.contains("--cloud-provider simulated or --cloud-provider aws"),
        "choices listed: {err}"
    );
    assert!(
        !err.contains("/nonexistent/kc"),
        "no cluster reached: {err}"
    );
    // The environment fallback satisfies it like the flag.
    let (code, err) = adze_cli::run_without_cluster(
        env!("CARGO_BIN_EXE_adze-provisioner"),
        &[
            "run",
            "--kubeconfig",
            "/nonexistent/kc",
            "--leader-elect=false",
            "--metrics-addr",
            "127.0.0.1:0",
        ],
        &[("ADZE_CLOUD_PROVIDER", "simulated")],
    );
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("/nonexistent/kc"), "{err}");
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

#[test]
fn environment_fallbacks_take_effect_and_are_refused_like_flags() {
    let (code, err) = run_env(
        &[],
        &[
            ("ADZE_LEADER_ELECT", "false"),
            ("ADZE_LEADER_ELECTION_LEASE_DURATION", "30s"),
        ],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("ADZE_LEADER_ELECTION_LEASE_DURATION (for --leader-election-lease-duration) has no effect"),
        "{err}"
    );
    // `simulate` reads ADZE_OUTPUT as it reads --output.
    let out = Command::new(env!("CARGO_BIN_EXE_adze-provisioner"))
        .args([
            "simulate",
            concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/inflate.yaml"),
        ])
        .env("ADZE_OUTPUT", "json")
        .output()
        .expect("runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    let plan: serde_json::Value = serde_json::from_str(&text).expect("JSON from ADZE_OUTPUT=json");
    assert!(plan.is_object(), "{text}");
}

#[test]
fn kubeconfig_is_a_flag_of_run() {
    let (code, err) = run(&[
        "--kubeconfig",
        "/nonexistent/kc",
        "--leader-elect=false",
        "--metrics-addr",
        "127.0.0.1:0",
    ]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("/nonexistent/kc"), "{err}");
}

#[test]
fn the_simulated_cloud_refuses_an_unknown_region_naming_the_flag() {
    let (code, err) = run(&[
        "--cloud-provider",
        "simulated",
        "--region",
        "mars-1",
        "--leader-elect=false",
        "--metrics-addr",
        "127.0.0.1:0",
    ]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("--region"), "{err}");
    assert!(err.contains("unknown region \"mars-1\""), "{err}");
    assert!(err.contains("us-west-2"), "known regions listed: {err}");
}

#[test]
fn simulated_zonal_shifts_without_the_feature_are_refused_naming_both_flags() {
    let (code, err) = run(&["--simulated-zonal-shifts", "/tmp/adze-shifts.json"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("--simulated-zonal-shifts has no effect without --enable-zonal-shift"),
        "{err}"
    );
}

/// `--pod-deletion-cost` (the chart's `provisioner.podDeletionCost`) is a switch of `run`: it
/// parses and `run` goes on to the cluster; a value given to it is refused by name.
#[test]
fn pod_deletion_cost_is_a_switch_of_run() {
    let (code, err) = run(&[
        "--pod-deletion-cost",
        "--kubeconfig",
        "/nonexistent/kc",
        "--leader-elect=false",
        "--metrics-addr",
        "127.0.0.1:0",
    ]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("/nonexistent/kc"), "{err}");
    let (code, err) = run(&["--pod-deletion-cost=sometimes"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--pod-deletion-cost"), "{err}");
}

/// `--vpa-predictions` (the chart's `provisioner.vpaPredictions`) is a switch of `run`, also
/// read from `ADZE_VPA_PREDICTIONS`: it parses and `run` goes on to the cluster (no
/// combination of `run`'s flags leaves it without effect: the disruption controller always
/// runs); a value given to it is refused by name.
#[test]
fn vpa_predictions_is_a_switch_of_run() {
    let rest = [
        "--kubeconfig",
        "/nonexistent/kc",
        "--leader-elect=false",
        "--metrics-addr",
        "127.0.0.1:0",
    ];
    let with_flag: Vec<&str> = std::iter::once("--vpa-predictions").chain(rest).collect();
    let (code, err) = run(&with_flag);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("/nonexistent/kc"), "{err}");
    let (code, err) = run_env(&rest, &[("ADZE_VPA_PREDICTIONS", "true")]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("/nonexistent/kc"), "{err}");
    let (code, err) = run_env(&rest, &[("ADZE_VPA_PREDICTIONS", "sometimes")]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--vpa-predictions"), "{err}");
    let (code, err) = run(&["--vpa-predictions=sometimes"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--vpa-predictions"), "{err}");
}
