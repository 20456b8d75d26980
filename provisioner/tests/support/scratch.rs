//! A scenario written to a temporary file, for the `simulate` binary's tests.

use std::path::PathBuf;

/// Writes `yaml` to a file in the temporary directory named after the suite (`suite`), this
/// process and the test (`name`), so parallel tests and suites never share one.
pub fn scratch(suite: &str, name: &str, yaml: &str) -> PathBuf {
    let path =
        std::env::temp_dir().join(format!("adze-{suite}-{}-{name}.yaml", std::process::id()));
    std::fs::write(&path, yaml).unwrap();
    path
}
