//! The agent's flags follow the binaries' one convention: Go durations and quantities, with
//! `ADZE_*` fallbacks; flags renamed under it are refused with their replacement.

use std::process::Command;

fn run(args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String) {
    adze_cli::run_without_cluster(env!("CARGO_BIN_EXE_adze-agent"), args, env)
}

#[test]
fn renamed_flags_are_refused_with_their_replacement() {
    for (old, new) in [
        ("--poll-ms", "--poll-interval"),
        ("--heartbeat-seconds", "--heartbeat"),
        ("--min-available-memory-mib", "--min-available-memory"),
    ] {
        let (code, err) = run(&["--node-name", "n", &format!("{old}=5")], &[]);
        assert_eq!(code, Some(2), "{err}");
        assert!(
            err.contains(&format!("{old} was renamed: use {new}")),
            "{err}"
        );
    }
}

#[test]
fn durations_need_a_unit_also_from_the_environment() {
    let (code, err) = run(&[], &[("ADZE_NODE_NAME", "n"), ("ADZE_POLL_INTERVAL", "5")]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--poll-interval"), "{err}");
    assert!(err.contains("5s"), "{err}");
}

#[test]
fn the_node_name_falls_back_to_its_variable() {
    let (code, err) = run(&[], &[]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--node-name"), "{err}");
    // With ADZE_NODE_NAME the arguments parse and the agent gets as far as the kubeconfig.
    let (code, err) = run(
        &["--kubeconfig", "/nonexistent/kc"],
        &[
            ("ADZE_NODE_NAME", "n"),
            ("ADZE_MIN_AVAILABLE_MEMORY", "64Mi"),
        ],
    );
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("/nonexistent/kc"), "{err}");
}

#[test]
fn version() {
    let out = Command::new(env!("CARGO_BIN_EXE_adze-agent"))
        .arg("--version")
        .output()
        .expect("runs");
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("adze-agent "));
}
