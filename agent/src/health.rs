//! Local readiness checks behind the `AdzeAgentReady` node condition. The verdict is pure
//! ([`verdict`]); gathering ([`Checker::gather`]) is the I/O.

use std::path::PathBuf;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

#[derive(Debug, Clone)]
pub struct HealthConfig {
    /// e.g. `http://127.0.0.1:10248/healthz`; None skips the check.
    pub kubelet_healthz: Option<String>,
    /// e.g. `/run/containerd/containerd.sock`; None skips the check.
    pub runtime_socket: Option<PathBuf>,
    pub min_available_memory: u64,
    pub min_available_disk: u64,
    /// The filesystem checked for free space (the mount holding this path).
    pub disk_path: PathBuf,
    pub timeout: Duration,
}

/// One check's outcome; `None` where the check is switched off.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Facts {
    pub imds_ok: bool,
    pub kubelet_ok: Option<bool>,
    pub runtime_ok: Option<bool>,
    pub available_memory: u64,
    pub available_disk: Option<u64>,
}

/// (ready, reason, message) for the condition.
pub fn verdict(f: &Facts, cfg: &HealthConfig) -> (bool, &'static str, String) {
    let mut problems = Vec::new();
    if !f.imds_ok {
        problems.push("instance metadata service unreachable".to_string());
    }
    if f.kubelet_ok == Some(false) {
        problems.push("kubelet healthz failing".into());
    }
    if f.runtime_ok == Some(false) {
        problems.push("container runtime socket not answering".into());
    }
    if f.available_memory < cfg.min_available_memory {
        problems.push(format!(
            "available memory {} MiB below {} MiB",
            f.available_memory >> 20,
            cfg.min_available_memory >> 20
        ));
    }
    if let Some(d) = f.available_disk
        && d < cfg.min_available_disk
    {
        problems.push(format!(
            "available disk {} MiB below {} MiB",
            d >> 20,
            cfg.min_available_disk >> 20
        ));
    }
    if problems.is_empty() {
        (true, "AgentChecksPass", "all agent checks pass".into())
    } else {
        (false, "AgentChecksFailing", problems.join("; "))
    }
}

pub struct Checker {
    cfg: HealthConfig,
    http: Client<HttpConnector, Empty<Bytes>>,
    sys: sysinfo::System,
}

impl Checker {
    pub fn new(cfg: HealthConfig) -> Self {
        let http = Client::builder(TokioExecutor::new()).build(HttpConnector::new());
        Self {
            cfg,
            http,
            sys: sysinfo::System::new(),
        }
    }

    pub fn config(&self) -> &HealthConfig {
        &self.cfg
    }

    pub async fn gather(&mut self, imds_ok: bool) -> Facts {
        let kubelet_ok = match &self.cfg.kubelet_healthz {
            None => None,
            Some(url) => Some(match url.parse::<hyper::Uri>() {
                Ok(uri) => tokio::time::timeout(self.cfg.timeout, async {
                    let req = hyper::Request::get(uri)
                        .header(
                            hyper::header::USER_AGENT,
                            adze_cli::user_agent("adze-agent"),
                        )
                        .body(Empty::new())
                        .ok()?;
                    let resp = self.http.request(req).await.ok()?;
                    let ok = resp.status().is_success();
                    let _ = resp.into_body().collect().await;
                    Some(ok)
                })
                .await
                .ok()
                .flatten()
                .unwrap_or(false),
                Err(_) => false,
            }),
        };
        let runtime_ok = match &self.cfg.runtime_socket {
            None => None,
            Some(p) => Some(
                tokio::time::timeout(self.cfg.timeout, tokio::net::UnixStream::connect(p))
                    .await
                    .is_ok_and(|r| r.is_ok()),
            ),
        };
        self.sys.refresh_memory();
        let available_memory = self.sys.available_memory();
        let disks = sysinfo::Disks::new_with_refreshed_list();
        let available_disk = disks
            .list()
            .iter()
            .filter(|d| self.cfg.disk_path.starts_with(d.mount_point()))
            .max_by_key(|d| d.mount_point().as_os_str().len())
            .map(|d| d.available_space());
        Facts {
            imds_ok,
            kubelet_ok,
            runtime_ok,
            available_memory,
            available_disk,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> HealthConfig {
        HealthConfig {
            kubelet_healthz: None,
            runtime_socket: None,
            min_available_memory: 64 << 20,
            min_available_disk: 512 << 20,
            disk_path: "/".into(),
            timeout: Duration::from_secs(1),
        }
    }

    #[test]
    fn ready_only_when_every_enabled_check_passes() {
        let good = Facts {
            imds_ok: true,
            kubelet_ok: None,
            runtime_ok: Some(true),
            available_memory: 1 << 30,
            available_disk: Some(10 << 30),
        };
        assert!(verdict(&good, &cfg()).0);
        let imds_down = Facts {
            imds_ok: false,
            ..good.clone()
        };
        let (ok, reason, msg) = verdict(&imds_down, &cfg());
        assert!(!ok);
        assert_eq!(reason, "AgentChecksFailing");
        assert!(msg.contains("metadata"), "{msg}");
        let low_disk = Facts {
            available_disk: Some(1 << 20),
            ..good.clone()
        };
        assert!(verdict(&low_disk, &cfg()).2.contains("disk"));
        let no_runtime = Facts {
            runtime_ok: Some(false),
            ..good
        };
        assert!(!verdict(&no_runtime, &cfg()).0);
    }
}
