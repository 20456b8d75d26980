//! The `--leader-elect` and `--leader-election-*` flags, one definition for every binary
//! that elects a leader, so they read and are refused alike.

use std::time::Duration;

use clap::ArgMatches;
use clap::parser::ValueSource;

use crate::Settings;

#[derive(Debug, Clone, clap::Args)]
pub struct LeaderArgs {
    /// Act only while holding a coordination.k8s.io/v1 Lease, so that of several replicas
    /// one acts (see the program's docs for what "act" means for it).
    #[arg(long = "leader-elect", env = "ADZE_LEADER_ELECT", default_value_t = true, action = clap::ArgAction::Set)]
    pub enabled: bool,
    /// Namespace of the Lease (default: $POD_NAMESPACE, else `default`).
    #[arg(
        long = "leader-election-namespace",
        env = "ADZE_LEADER_ELECTION_NAMESPACE"
    )]
    pub namespace: Option<String>,
    /// Name of the Lease (default: the program's name, e.g. adze-provisioner).
    #[arg(long = "leader-election-name", env = "ADZE_LEADER_ELECTION_NAME")]
    pub name: Option<String>,
    /// This replica's identity in the Lease (default: $POD_NAME or hostname, and the pid).
    #[arg(
        long = "leader-election-identity",
        env = "ADZE_LEADER_ELECTION_IDENTITY"
    )]
    pub identity: Option<String>,
    /// How long the Lease is valid after its last renewal: other replicas wait this long
    /// before taking over from a leader that stopped renewing.
    #[arg(long = "leader-election-lease-duration", env = "ADZE_LEADER_ELECTION_LEASE_DURATION", value_parser = duration, default_value = "15s")]
    pub lease_duration: Duration,
    /// A leader that has not renewed the Lease within this long stops acting.
    #[arg(long = "leader-election-renew-deadline", env = "ADZE_LEADER_ELECTION_RENEW_DEADLINE", value_parser = duration, default_value = "10s")]
    pub renew_deadline: Duration,
    /// How often the Lease is renewed, or tried for when another replica holds it.
    #[arg(long = "leader-election-retry-period", env = "ADZE_LEADER_ELECTION_RETRY_PERIOD", value_parser = duration, default_value = "2s")]
    pub retry_period: Duration,
}

/// The arguments that only mean something with leader election on (clap ids).
const TUNING: [&str; 6] = [
    "namespace",
    "name",
    "identity",
    "lease_duration",
    "renew_deadline",
    "retry_period",
];

impl LeaderArgs {
    /// `None` without leader election; the Lease `program` (unless named) otherwise, its
    /// periods checked.
    pub fn settings(&self, program: &str) -> Result<Option<Settings>, String> {
        if !self.enabled {
            return Ok(None);
        }
        let settings = Settings {
            namespace: self
                .namespace
                .clone()
                .unwrap_or_else(crate::default_namespace),
            name: self.name.clone().unwrap_or_else(|| program.to_string()),
            identity: self
                .identity
                .clone()
                .unwrap_or_else(|| crate::default_identity(program)),
            lease_duration: self.lease_duration,
            renew_deadline: self.renew_deadline,
            retry_period: self.retry_period,
        };
        settings.check()?;
        Ok(Some(settings))
    }

    /// With `--leader-elect=false`, the first `--leader-election-*` flag given on the command
    /// line (in `matches`, the matches these arguments were flattened into), as a refusal:
    /// accepted, it would have no effect.
    pub fn unused_flag(&self, matches: &ArgMatches) -> Option<String> {
        if self.enabled {
            return None;
        }
        TUNING.iter().find_map(|id| {
            let flag = format!("--leader-election-{}", id.replace('_', "-"));
            match matches.value_source(id) {
                Some(ValueSource::CommandLine) => {
                    Some(format!("{flag} has no effect with --leader-elect=false"))
                }
                Some(ValueSource::EnvVariable) => Some(format!(
                    "ADZE_LEADER_ELECTION_{} (for {flag}) has no effect with --leader-elect=false",
                    id.to_uppercase()
                )),
                _ => None,
            }
        })
    }
}

fn duration(s: &str) -> Result<Duration, String> {
    adze_cli::duration(s)
}
