//! The conformance table (docs/conformance/*.md) and the conformance suites stay in step: every
//! test of a suite is in a table row, every test a row names exists, and a test is ignored
//! only where its row does not say "pass", and one that runs says "pass" or "differs" (Adze
//! deliberately does otherwise, and the test asserts Adze's outcome).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Each suite and the fewest tests it can hold (a suite that lost its tests fails here).
const SUITES: [(&str, usize); 6] = [
    ("conformance_scheduling", 50),
    ("conformance_topology", 50),
    ("conformance_provisioning", 50),
    ("conformance_disruption", 50),
    ("conformance_termination", 10),
    ("conformance_repair", 10),
];

/// Test function name → whether it is `#[ignore]`d.
fn tests_in(source: &str) -> BTreeMap<String, bool> {
    let mut out = BTreeMap::new();
    let (mut is_test, mut ignored) = (false, false);
    for line in source.lines().map(str::trim) {
        if line == "#[test]" {
            is_test = true;
        } else if line.starts_with("#[ignore") {
            ignored = true;
        } else if let Some(rest) = line.strip_prefix("fn ") {
            if is_test {
                let name = rest.split('(').next().unwrap_or_default().to_string();
                out.insert(name, ignored);
            }
            (is_test, ignored) = (false, false);
        }
    }
    out
}

/// Test name → the statuses of the rows naming it.
fn rows(table: &str) -> Vec<(Vec<String>, String)> {
    table
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| Karpenter case"))
        .map(|l| {
            let cells: Vec<&str> = l.trim().trim_matches('|').split(" | ").collect();
            let names = cells
                .get(1)
                .map(|c| {
                    c.split('`')
                        .skip(1)
                        .step_by(2)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default();
            (names, cells.last().unwrap_or(&"").trim().to_string())
        })
        .collect()
}

#[test]
fn every_conformance_test_has_a_row_and_every_row_a_test() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut tests: BTreeMap<String, bool> = BTreeMap::new();
    for (suite, fewest) in SUITES {
        let src = std::fs::read_to_string(root.join("tests").join(format!("{suite}.rs"))).unwrap();
        let found = tests_in(&src);
        assert!(
            found.len() > fewest,
            "{suite}: only {} tests found",
            found.len()
        );
        tests.extend(found);
    }
    let mut named: BTreeSet<String> = BTreeSet::new();
    let mut problems = Vec::new();
    let mut total = 0;
    for entry in std::fs::read_dir(root.join("../docs/conformance")).unwrap() {
        let path = entry.unwrap().path();
        let table = std::fs::read_to_string(&path).unwrap();
        for (names, status) in rows(&table) {
            total += 1;
            for n in &names {
                match tests.get(n) {
                    None => problems.push(format!("{}: no test {n}", path.display())),
                    Some(&ignored)
                        if (ignored && status.starts_with("pass"))
                            || (!ignored
                                && !status.starts_with("pass")
                                && !status.starts_with("differs")) =>
                    {
                        problems.push(format!(
                            "{}: {n} is ignored={ignored} but its row says {status:?}",
                            path.display()
                        ))
                    }
                    Some(_) => {}
                }
                named.insert(n.clone());
            }
            if names.is_empty() && !status.starts_with("n/a") {
                problems.push(format!(
                    "{}: a row with no test says {status:?}",
                    path.display()
                ));
            }
        }
    }
    for t in tests.keys() {
        if !named.contains(t) {
            problems.push(format!("test {t} is in no table row"));
        }
    }
    assert!(total > 300, "only {total} rows");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
