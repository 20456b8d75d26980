//! IMDSv2 client: one session token, reused until shortly before it expires, fetched again on a
//! 401 (the service may have restarted or the token been revoked); every request bounded by a
//! timeout so a hung metadata service can never stall the agent's loop.

use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Method, Request, StatusCode};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use tokio::sync::Mutex;

pub const TOKEN_HEADER: &str = "x-aws-ec2-metadata-token";
pub const TTL_HEADER: &str = "x-aws-ec2-metadata-token-ttl-seconds";

#[derive(Debug, thiserror::Error)]
pub enum ImdsError {
    #[error("IMDS request {path} timed out after {after:?}")]
    Timeout { path: String, after: Duration },
    #[error("IMDS answered {status} for {path}")]
    Status { path: String, status: u16 },
    #[error("IMDS request {path} failed: {message}")]
    Transport { path: String, message: String },
    #[error("IMDS token TTL must be 1..=21600 seconds, got {0}")]
    BadTtl(u64),
}

#[derive(Debug, Clone)]
pub struct ImdsConfig {
    /// e.g. `http://169.254.169.254`.
    pub endpoint: String,
    pub token_ttl: Duration,
    /// Bound on each HTTP request, token requests included.
    pub timeout: Duration,
}

impl Default for ImdsConfig {
    fn default() -> Self {
        Self {
            endpoint: "http://169.254.169.254".into(),
            token_ttl: Duration::from_secs(21600),
            timeout: Duration::from_secs(2),
        }
    }
}

struct Token {
    value: String,
    /// When to stop using it: its expiry less a margin, so a request never carries a token
    /// that runs out in flight.
    renew_at: Instant,
}

pub struct Imds {
    cfg: ImdsConfig,
    client: Client<HttpConnector, Full<Bytes>>,
    token: Mutex<Option<Token>>,
}

impl Imds {
    pub fn new(cfg: ImdsConfig) -> Result<Self, ImdsError> {
        let ttl = cfg.token_ttl.as_secs();
        if !(1..=21600).contains(&ttl) {
            return Err(ImdsError::BadTtl(ttl));
        }
        let mut connector = HttpConnector::new();
        connector.set_connect_timeout(Some(cfg.timeout));
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(30))
            .pool_max_idle_per_host(2)
            .build(connector);
        Ok(Self {
            cfg,
            client,
            token: Mutex::new(None),
        })
    }

    async fn send(
        &self,
        method: Method,
        path: &str,
        header: (&str, &str),
    ) -> Result<(StatusCode, Bytes), ImdsError> {
        let req = Request::builder()
            .method(method)
            .uri(format!(
                "{}{}",
                self.cfg.endpoint.trim_end_matches('/'),
                path
            ))
            .header(header.0, header.1)
            // Names the agent in whatever logs IMDS requests (a proxy, the simulator).
            .header(
                hyper::header::USER_AGENT,
                adze_cli::user_agent("adze-agent"),
            )
            .body(Full::new(Bytes::new()))
            .map_err(|e| ImdsError::Transport {
                path: path.into(),
                message: e.to_string(),
            })?;
        let fut = async {
            let resp = self
                .client
                .request(req)
                .await
                .map_err(|e| ImdsError::Transport {
                    path: path.into(),
                    message: e.to_string(),
                })?;
            let status = resp.status();
            let body = resp
                .into_body()
                .collect()
                .await
                .map_err(|e| ImdsError::Transport {
                    path: path.into(),
                    message: e.to_string(),
                })?
                .to_bytes();
            Ok((status, body))
        };
        tokio::time::timeout(self.cfg.timeout, fut)
            .await
            .map_err(|_| ImdsError::Timeout {
                path: path.into(),
                after: self.cfg.timeout,
            })?
    }

    /// The current token, fetching a new one when there is none, it is near expiry, or `stale`
    /// is the token a request just had rejected.
    async fn token(&self, stale: Option<&str>) -> Result<String, ImdsError> {
        let mut guard = self.token.lock().await;
        if let Some(t) = guard.as_ref()
            && t.renew_at > Instant::now()
            && stale != Some(t.value.as_str())
        {
            return Ok(t.value.clone());
        }
        let ttl = self.cfg.token_ttl;
        let fetched_at = Instant::now();
        let (status, body) = self
            .send(
                Method::PUT,
                "/latest/api/token",
                (TTL_HEADER, &ttl.as_secs().to_string()),
            )
            .await?;
        if status != StatusCode::OK {
            *guard = None;
            return Err(ImdsError::Status {
                path: "/latest/api/token".into(),
                status: status.as_u16(),
            });
        }
        let value = String::from_utf8_lossy(&body).trim().to_string();
        // Renew a quarter of the TTL early, at most a minute early.
        let margin = (ttl / 4).min(Duration::from_secs(60));
        *guard = Some(Token {
            value: value.clone(),
            renew_at: fetched_at + ttl - margin,
        });
        Ok(value)
    }

    /// GETs a metadata path (e.g. `/latest/meta-data/spot/instance-action`). `Ok(None)` on 404:
    /// that is how IMDS says "no such event".
    pub async fn get(&self, path: &str) -> Result<Option<String>, ImdsError> {
        let mut token = self.token(None).await?;
        for attempt in 0..2 {
            let (status, body) = self.send(Method::GET, path, (TOKEN_HEADER, &token)).await?;
            match status {
                StatusCode::OK => return Ok(Some(String::from_utf8_lossy(&body).into_owned())),
                StatusCode::NOT_FOUND => return Ok(None),
                StatusCode::UNAUTHORIZED if attempt == 0 => {
                    tracing::debug!(path, "IMDS rejected the token; fetching a new one");
                    token = self.token(Some(&token)).await?;
                }
                s => {
                    return Err(ImdsError::Status {
                        path: path.into(),
                        status: s.as_u16(),
                    });
                }
            }
        }
        unreachable!("the loop returns on its second attempt")
    }
}
