//! The flag conventions every Adze binary follows, in one place so the three read alike:
//!
//! - every flag has an environment fallback named `ADZE_` and its long name in upper snake
//!   case (`--log-format` ← `ADZE_LOG_FORMAT`); a flag on the command line wins;
//! - times are Go durations (`10s`, `5m`, `1h30m`) and sizes Kubernetes quantities (`64Mi`),
//!   so flag names carry no unit;
//! - `--log-format text|json` (the level stays `RUST_LOG`), logs on stderr;
//! - `--kubeconfig` where a binary talks to a cluster, `--version` everywhere;
//! - a flag renamed under this convention is refused with its new name, not ignored.
//!
//! [`violations`] checks a binary's `clap::Command` against the first rule, and each binary's
//! tests call it, so a new flag without its fallback fails a test.

pub mod reference;

use std::path::Path;
use std::time::Duration;

use clap::ValueEnum;

/// The environment variable a flag falls back to.
pub fn env_name(long: &str) -> String {
    format!("ADZE_{}", long.replace('-', "_").to_uppercase())
}

/// Where `cmd` (and its subcommands) breaks the convention: a visible flag without its
/// `ADZE_*` fallback, or a flag whose name carries a unit.
pub fn violations(cmd: &clap::Command) -> Vec<String> {
    let mut out = Vec::new();
    collect(cmd, cmd.get_name(), &mut out);
    out
}

fn collect(cmd: &clap::Command, path: &str, out: &mut Vec<String>) {
    for arg in cmd.get_arguments() {
        let Some(long) = arg.get_long() else { continue };
        if arg.is_hide_set() || long == "help" || long == "version" {
            continue;
        }
        let want = env_name(long);
        match arg.get_env() {
            Some(env) if env == want.as_str() => {}
            Some(env) => out.push(format!(
                "{path} --{long}: falls back to {}, not {want}",
                env.to_string_lossy()
            )),
            None => out.push(format!("{path} --{long}: no {want} fallback")),
        }
        for unit in ["-ms", "-seconds", "-secs", "-minutes", "-mib", "-bytes"] {
            if long.ends_with(unit) {
                out.push(format!(
                    "{path} --{long}: a unit in the name (take a Go duration or a quantity)"
                ));
            }
        }
    }
    for sub in cmd.get_subcommands() {
        collect(sub, &format!("{path} {}", sub.get_name()), out);
    }
}

/// For each binary's tests: panics, listing them, when `cmd` breaks the convention or clap's
/// own consistency rules.
pub fn assert_follows_convention(cmd: clap::Command) {
    let found = violations(&cmd);
    assert!(found.is_empty(), "flags off the convention: {found:#?}");
    cmd.debug_assert();
}

/// For each binary's CLI tests: runs `program` with `args` and `env` where no cluster can be
/// reached (KUBECONFIG points nowhere, no in-cluster service), so a refusal must come before
/// the client configuration is read. Returns the exit code and stderr.
pub fn run_without_cluster(
    program: &str,
    args: &[&str],
    env: &[(&str, &str)],
) -> (Option<i32>, String) {
    let out = std::process::Command::new(program)
        .args(args)
        .env("KUBECONFIG", "/nonexistent")
        .env_remove("KUBERNETES_SERVICE_HOST")
        .envs(env.iter().copied())
        .output()
        .expect("the binary runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Flags renamed under the convention: `(old flag, what to write instead)`. Refused before
/// parsing, with clap's own error format, so an old manifest fails at start with the fix in
/// the message rather than as an "unexpected argument".
pub fn refuse_renamed(mut cmd: clap::Command, renamed: &[(&str, &str)]) {
    if let Some(msg) = renamed_in(std::env::args().skip(1), renamed) {
        cmd.error(clap::error::ErrorKind::UnknownArgument, msg)
            .exit();
    }
}

/// The refusal for the first renamed flag among `args`, if any.
pub fn renamed_in(
    args: impl IntoIterator<Item = String>,
    renamed: &[(&str, &str)],
) -> Option<String> {
    for arg in args {
        if arg == "--" {
            return None;
        }
        for (old, new) in renamed {
            if arg == *old || arg.starts_with(&format!("{old}=")) {
                return Some(format!("{old} was renamed: use {new}"));
            }
        }
    }
    None
}

/// A Go duration flag value (`10s`, `1m30s`). A bare number is refused with the unit spelled
/// out: before this convention several flags took plain seconds or milliseconds.
pub fn duration(s: &str) -> Result<Duration, String> {
    if s != "0" && !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "{s:?} has no unit: write a Go duration such as {s}s or {s}ms"
        ));
    }
    adze_api::duration::parse_go_duration(s).map_err(|e| e.to_string())
}

/// A Kubernetes quantity flag value in bytes (`64Mi`, `1Gi`, `500M`).
pub fn bytes(s: &str) -> Result<u64, String> {
    let v = adze_scheduling::quantity::parse_units(s).map_err(|e| e.to_string())?;
    u64::try_from(v).map_err(|_| format!("{s:?} is negative"))
}

/// `--log-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

/// The logging flags every binary flattens in.
#[derive(Debug, Clone, clap::Args)]
pub struct LogArgs {
    /// How log lines are written (to stderr); the level is `RUST_LOG` (default info).
    #[arg(long, value_enum, env = "ADZE_LOG_FORMAT", default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
}

impl LogArgs {
    /// Installs the process-wide subscriber.
    pub fn init(&self) {
        let filter = tracing_subscriber::EnvFilter::try_from_default_env()
            .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
        // Colours only on a terminal: `kubectl logs` and log files get plain text.
        let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
        let builder = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_ansi(ansi)
            .with_writer(std::io::stderr);
        match self.log_format {
            LogFormat::Text => builder.init(),
            LogFormat::Json => builder.json().init(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum KubeconfigError {
    #[error("reading kubeconfig {path}: {source}")]
    Read {
        path: String,
        source: kube::config::KubeconfigError,
    },
    #[error("no kubeconfig or in-cluster config: {0}")]
    Infer(#[from] kube::config::InferConfigError),
}

/// `component/version`: how Adze's requests are named in the API server's audit log.
pub fn user_agent(component: &str) -> String {
    format!("{component}/{}", env!("CARGO_PKG_VERSION"))
}

/// The client configuration: the `--kubeconfig` file when given, else KUBECONFIG,
/// `~/.kube/config` or the in-cluster service account (kube's inference). Every request
/// carries `User-Agent: component/version`, so audit logs can attribute it.
pub async fn kube_config(
    path: Option<&Path>,
    component: &str,
) -> Result<kube::Config, KubeconfigError> {
    let mut config = read_kube_config(path).await?;
    if let Ok(value) = http::HeaderValue::from_str(&user_agent(component)) {
        config.headers.push((http::header::USER_AGENT, value));
    }
    Ok(config)
}

async fn read_kube_config(path: Option<&Path>) -> Result<kube::Config, KubeconfigError> {
    match path {
        Some(path) => {
            let read = |source| KubeconfigError::Read {
                path: path.display().to_string(),
                source,
            };
            let kc = kube::config::Kubeconfig::read_from(path).map_err(read)?;
            kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
                .await
                .map_err(read)
        }
        None => Ok(kube::Config::infer().await?),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{CommandFactory, Parser};

    #[tokio::test]
    async fn every_client_names_its_component_and_version() {
        let dir = std::env::temp_dir().join(format!("adze-ua-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("kubeconfig");
        std::fs::write(
            &path,
            "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:6443'}}]\nusers: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n",
        )
        .unwrap();
        let config = kube_config(Some(&path), "adze-extender").await.unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        let ua: Vec<&http::HeaderValue> = config
            .headers
            .iter()
            .filter(|(k, _)| k == http::header::USER_AGENT)
            .map(|(_, v)| v)
            .collect();
        assert_eq!(ua.len(), 1);
        assert_eq!(
            ua[0].to_str().unwrap(),
            format!("adze-extender/{}", env!("CARGO_PKG_VERSION"))
        );
    }

    #[derive(Parser)]
    #[command(name = "t")]
    struct Good {
        #[arg(long, env = "ADZE_POLL_INTERVAL", value_parser = duration, default_value = "1s")]
        poll_interval: Duration,
        #[command(flatten)]
        log: LogArgs,
    }

    #[derive(Parser)]
    #[command(name = "t")]
    struct Bad {
        #[arg(long)]
        poll_ms: u64,
        #[arg(long, env = "POLL")]
        other: u64,
    }

    #[test]
    fn a_conforming_command_has_no_violations() {
        assert_eq!(violations(&Good::command()), Vec::<String>::new());
    }

    #[test]
    fn missing_or_misnamed_fallbacks_and_units_are_violations() {
        let v = violations(&Bad::command());
        assert!(
            v.iter().any(|m| m.contains("--poll-ms: no ADZE_POLL_MS")),
            "{v:?}"
        );
        assert!(v.iter().any(|m| m.contains("--poll-ms: a unit")), "{v:?}");
        assert!(
            v.iter()
                .any(|m| m.contains("--other: falls back to POLL, not ADZE_OTHER")),
            "{v:?}"
        );
    }

    #[test]
    fn bare_numbers_are_refused_with_the_unit_spelled_out() {
        let e = duration("600").unwrap_err();
        assert!(e.contains("600s"), "{e}");
        assert_eq!(duration("0").unwrap(), Duration::ZERO);
        assert_eq!(duration("1m30s").unwrap(), Duration::from_secs(90));
        assert!(duration("-1s").is_err());
    }

    #[test]
    fn sizes_are_quantities() {
        assert_eq!(bytes("64Mi").unwrap(), 64 << 20);
        assert_eq!(bytes("1G").unwrap(), 1_000_000_000);
        assert!(bytes("lots").is_err());
    }

    #[test]
    fn renamed_flags_are_found_in_both_spellings_and_not_after_a_double_dash() {
        let table = [("--poll-ms", "--poll-interval (a Go duration)")];
        let args = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let m = renamed_in(args(&["--x", "--poll-ms", "5"]), &table).unwrap();
        assert_eq!(
            m,
            "--poll-ms was renamed: use --poll-interval (a Go duration)"
        );
        assert!(renamed_in(args(&["--poll-ms=5"]), &table).is_some());
        assert!(renamed_in(args(&["--poll-msx"]), &table).is_none());
        assert!(renamed_in(args(&["--", "--poll-ms"]), &table).is_none());
    }
}
