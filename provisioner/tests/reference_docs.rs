//! docs/reference/metrics.md's provisioner sections are what the code registers and emits:
//! the metric families of `/metrics` and the Kubernetes Event reasons. Fails when the page is
//! stale; `ADZE_REGENERATE_DOCS=1` (docs/reference/generate.sh) rewrites it instead.

use std::path::{Path, PathBuf};

use adze_provisioner::events::reasons;
use adze_provisioner::metrics::{self, *};

fn page() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/reference/metrics.md")
}

#[test]
fn provisioner_metrics_reference_is_current() {
    let m = metrics::provisioner();
    // One series in each labelled family, so the page can list its labels.
    let pool = nodepool("example");
    let _ = m.nodeclaims_created.get_or_create(&pool);
    let _ = m.nodeclaims_launched.get_or_create(&pool);
    let _ = m.nodeclaims_registered.get_or_create(&pool);
    let _ = m.nodeclaims_initialized.get_or_create(&pool);
    let _ = m.nodeclaims_terminated.get_or_create(&reason("example"));
    let _ = m.cloud_errors.get_or_create(&CloudErrorLabels {
        op: "create".into(),
        error: "example".into(),
    });
    let _ = m.cloud_duration.get_or_create(&CloudCallLabels {
        method: "create".into(),
        provider: "example".into(),
    });
    m.offering_price.replace([(
        OfferingLabels {
            instance_type: "m5.large".into(),
            zone: "zone-a".into(),
            capacity_type: "on-demand".into(),
        },
        0.1,
    )]);
    let _ = m.interruption_messages.get_or_create(&ResultLabel {
        result: "acted".into(),
    });
    let resource = PoolResourceLabels {
        nodepool: "example".into(),
        resource_type: "cpu".into(),
    };
    m.nodepool_usage.replace([(resource.clone(), 1.0)]);
    m.nodepool_limit.replace([(resource, 1.0)]);
    let _ = m.repair_reboots.get_or_create(&RebootLabels {
        nodepool: "default".into(),
        result: REBOOT_RESULTS[0].into(),
    });
    let _ = m.pods_disrupted.get_or_create(&PodsDisruptedLabels {
        reason: "Empty".into(),
        nodepool: "example".into(),
        consolidation_policy: "WhenEmpty".into(),
        termination_mode: "graceful".into(),
    });
    let table = adze_cli::reference::metrics_markdown(&metrics::render());
    adze_cli::reference::sync_section(&page(), "adze-provisioner metrics", &table);
}

#[test]
fn event_reasons_reference_is_current() {
    let mut rows = String::from("| Reason | Type | On | Meaning |\n|---|---|---|---|\n");
    let mut sorted: Vec<&reasons::Reason> = reasons::ALL.iter().collect();
    sorted.sort_by_key(|r| r.name);
    for r in sorted {
        rows.push_str(&format!(
            "| `{}` | {} | {} | {} |\n",
            r.name,
            r.type_,
            r.on,
            adze_cli::reference::cell(r.meaning)
        ));
    }
    adze_cli::reference::sync_section(&page(), "adze-provisioner events", &rows);
}

/// Every reason an emitter in provisioner/src passes as a literal (or through a named
/// constant) is in the registry, and every registry entry is still emitted somewhere.
#[test]
fn every_emitted_event_reason_is_registered() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    let mut dirs = vec![src];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                files.push(p);
            }
        }
    }
    let known: Vec<&str> = reasons::ALL.iter().map(|r| r.name).collect();
    let not_reasons = ["Normal", "Warning", "Pod", "NodeClaim", "Node"];
    let mut unregistered = Vec::new();
    let mut all_code = String::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        // Code only: unit-test modules come last in each file.
        let code = text.split("#[cfg(test)]").next().unwrap_or("");
        all_code.push_str(code);
        let lines: Vec<&str> = code.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            if !["publish(", "pod_event(", "announce(", "Note::new("]
                .iter()
                .any(|c| line.contains(c) && !line.contains("fn "))
            {
                continue;
            }
            // The call's arguments: up to its closing line.
            for arg in lines[i..(i + 6).min(lines.len())].iter() {
                for lit in arg.split('"').skip(1).step_by(2) {
                    let is_reason = lit.len() > 1
                        && lit.chars().next().is_some_and(|c| c.is_ascii_uppercase())
                        && lit.chars().all(|c| c.is_ascii_alphabetic());
                    if is_reason && !not_reasons.contains(&lit) && !known.contains(&lit) {
                        unregistered.push(format!("{}: {lit}", f.display()));
                    }
                }
                if arg.trim_end().ends_with(");") {
                    break;
                }
            }
        }
    }
    assert!(
        unregistered.is_empty(),
        "event reasons not in adze_provisioner::events::reasons::ALL: {unregistered:#?}"
    );
    let shared = [adze_scheduling::disruption::repair::REASON];
    for r in &known {
        assert!(
            all_code.contains(&format!("\"{r}\"")) || shared.contains(r),
            "{r} is registered but nothing in provisioner/src emits it"
        );
    }
}
