//! A scenario written to a temporary file, and the binary's JSON report read back, for the
//! `simulate` binary's tests.

use std::path::PathBuf;

/// Writes `yaml` to a file in the temporary directory named after the suite (`suite`), this
/// process and the test (`name`), so parallel tests and suites never share one.
pub fn scratch(suite: &str, name: &str, yaml: &str) -> PathBuf {
    let path =
        std::env::temp_dir().join(format!("adze-{suite}-{}-{name}.yaml", std::process::id()));
    std::fs::write(&path, yaml).unwrap();
    path
}

/// The report `simulate --output json` printed (a plan or, with `--allow-unschedulable`, what
/// could not be placed); a failure to read it shows stdout and stderr.
pub fn report(out: &std::process::Output) -> adze_provisioner::simulate::Report {
    let text = String::from_utf8(out.stdout.clone()).unwrap();
    serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{e}: {text}\n{}", String::from_utf8_lossy(&out.stderr)))
}
