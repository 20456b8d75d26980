//! `simulate --kube-scheduler-config`: kube-scheduler's default topology spread applied to
//! a Deployment whose pods set none, as a user runs it, on `examples/inflate.yaml` (ten
//! one-CPU replicas, no constraints).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

const HEAD: &str = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n";

fn inflate() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/inflate.yaml")
}

/// A scheduler configuration file, written once per test under a name of its own.
fn config(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("adze-spread-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn list(constraints: &str) -> String {
    format!(
        "{HEAD}profiles:\n- schedulerName: default-scheduler\n  pluginConfig:\n  - name: PodTopologySpread\n    args:\n      defaultingType: List\n      defaultConstraints:{constraints}\n"
    )
}

fn simulate(extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_adze-provisioner"))
        .args(["simulate", inflate().to_str().unwrap(), "--output", "json"])
        .args(extra)
        .output()
        .expect("the binary runs")
}

/// Each claim's zone and how many inflate pods it holds.
fn claims(extra: &[&str]) -> Vec<(String, usize)> {
    let out = simulate(extra);
    assert!(
        out.status.success(),
        "{extra:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["unschedulable"].as_array().map(Vec::len), Some(0));
    json["nodeClaims"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let pods = c["pods"].as_array().unwrap();
            (c["zone"].as_str().unwrap().to_string(), pods.len())
        })
        .collect()
}

fn per_zone(claims: &[(String, usize)]) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for (zone, n) in claims {
        *out.entry(zone.clone()).or_default() += n;
    }
    out
}

#[test]
fn a_zone_default_spreads_a_deployment_that_sets_no_constraints() {
    let plain = claims(&[]);
    assert_eq!(plain.iter().map(|(_, n)| n).sum::<usize>(), 10);
    assert_eq!(
        per_zone(&plain).len(),
        1,
        "without defaults the replicas share one zone: {plain:?}"
    );

    let zone = config(
        "zone.yaml",
        &list(
            "\n      - maxSkew: 1\n        topologyKey: topology.kubernetes.io/zone\n        whenUnsatisfiable: DoNotSchedule",
        ),
    );
    let spread = claims(&["--kube-scheduler-config", zone.to_str().unwrap()]);
    let zones = per_zone(&spread);
    assert!(zones.len() >= 3, "{zones:?}");
    let (min, max) = (zones.values().min().unwrap(), zones.values().max().unwrap());
    assert!(max - min <= 1, "maxSkew 1 across zones: {zones:?}");
}

#[test]
fn system_defaults_cap_replicas_per_node_until_preferences_are_ignored() {
    let system = config("system.yaml", HEAD);
    let path = system.to_str().unwrap();
    let planned = claims(&["--kube-scheduler-config", path]);
    assert_eq!(planned.iter().map(|(_, n)| n).sum::<usize>(), 10);
    assert!(
        planned.iter().all(|(_, n)| *n <= 3),
        "hostname maxSkew 3 (ScheduleAnyway, honoured as a preference): {planned:?}"
    );
    // ScheduleAnyway defaults are preferences: --preference-policy Ignore drops them.
    let ignored = claims(&[
        "--kube-scheduler-config",
        path,
        "--preference-policy",
        "Ignore",
    ]);
    assert_eq!(ignored, claims(&["--preference-policy", "Ignore"]));
    // An empty list turns defaults off.
    let off = config("off.yaml", &list(" []"));
    assert_eq!(
        claims(&["--kube-scheduler-config", off.to_str().unwrap()]),
        claims(&[])
    );
}

#[test]
fn a_bad_configuration_is_refused_naming_the_flag_and_the_field() {
    let bad = config(
        "bad.yaml",
        &list(
            "\n      - maxSkew: 1\n        topologyKey: topology.kubernetes.io/zone\n        whenUnsatisfiable: DoNotSchedule\n        labelSelector: {matchLabels: {app: inflate}}",
        ),
    );
    let out = simulate(&["--kube-scheduler-config", bad.to_str().unwrap()]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--kube-scheduler-config"), "{err}");
    assert!(
        err.contains("profiles[0].pluginConfig[0].args.defaultConstraints[0].labelSelector"),
        "{err}"
    );
}
