//! An EC2 instance metadata service simulator (IMDSv2 only), so the node agent can be tested
//! against the rules the real one enforces — token TTL bounds, 401 without a valid token,
//! 404 while no event exists — plus events that appear at a trigger time and faults (forced
//! 401, 503, slow responses, hangs) that a test or an e2e script switches on over HTTP.
//!
//! Metadata paths (all need `X-aws-ec2-metadata-token`):
//! `/latest/meta-data/{instance-id,instance-type,placement/availability-zone}`,
//! `/latest/meta-data/spot/instance-action`, `/latest/meta-data/events/recommendations/rebalance`,
//! `/latest/meta-data/events/maintenance/scheduled`.
//!
//! Admin paths (no token; JSON bodies): `POST /_sim/spot`, `/_sim/rebalance`,
//! `/_sim/maintenance`, `/_sim/fault`, `/_sim/expire-tokens`, `/_sim/clear`; `GET /_sim/stats`.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::json;

pub const TOKEN_HEADER: &str = "x-aws-ec2-metadata-token";
pub const TTL_HEADER: &str = "x-aws-ec2-metadata-token-ttl-seconds";
pub const MAX_TTL: u64 = 21600;

/// The date format IMDS uses for scheduled maintenance events: `2 Jan 2006 15:04:05 GMT`.
pub fn maintenance_date(t: DateTime<Utc>) -> String {
    t.format("%-d %b %Y %H:%M:%S GMT").to_string()
}

/// The RFC 3339 form IMDS uses for spot and rebalance notices (second precision, `Z`).
pub fn rfc3339(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// A fault the simulator injects into metadata requests (token requests included) until it ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FaultKind {
    /// Every request answers 401, as if the token were never valid.
    Unauthorized,
    /// Every request answers 503.
    Unavailable,
    /// Every request is answered after `delay_ms`.
    Slow,
    /// Requests are not answered until the fault ends.
    Hang,
}

#[derive(Debug, Clone, Deserialize)]
pub struct FaultRequest {
    pub kind: FaultKind,
    /// How long the fault lasts.
    pub seconds: f64,
    #[serde(default)]
    pub delay_ms: u64,
}

#[derive(Debug, Clone, Deserialize)]
pub struct SpotRequest {
    #[serde(default = "terminate")]
    pub action: String,
    /// The interruption time, this many seconds after the notice appears.
    #[serde(default = "two_minutes")]
    pub deadline_seconds: i64,
    /// The notice appears this many seconds from now.
    #[serde(default)]
    pub after_seconds: f64,
}

fn terminate() -> String {
    "terminate".into()
}
fn two_minutes() -> i64 {
    120
}

#[derive(Debug, Clone, Deserialize)]
pub struct RebalanceRequest {
    #[serde(default)]
    pub after_seconds: f64,
}

/// Adds or updates (same `event_id`) a scheduled maintenance event.
#[derive(Debug, Clone, Deserialize)]
pub struct MaintenanceRequest {
    #[serde(default = "default_event_id")]
    pub event_id: String,
    #[serde(default = "default_code")]
    pub code: String,
    /// `active`, `completed` or `canceled`.
    #[serde(default = "default_state")]
    pub state: String,
    /// NotBefore is this many seconds from now.
    #[serde(default = "ten_minutes")]
    pub not_before_seconds: i64,
    #[serde(default = "two_hours")]
    pub duration_seconds: i64,
    #[serde(default)]
    pub after_seconds: f64,
}

fn default_event_id() -> String {
    "instance-event-0d59937288b749b32".into()
}
fn default_code() -> String {
    "system-reboot".into()
}
fn default_state() -> String {
    "active".into()
}
fn ten_minutes() -> i64 {
    600
}
fn two_hours() -> i64 {
    7200
}

/// Request counters, for tests to see what the client did.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Stats {
    pub token_requests: u64,
    pub metadata_requests: u64,
    pub unauthorized: u64,
    pub faulted: u64,
}

struct Scheduled<T> {
    visible_from: Instant,
    value: T,
}

struct Fault {
    kind: FaultKind,
    until: Instant,
    delay: Duration,
}

#[derive(Default)]
struct Inner {
    tokens: HashMap<String, Instant>,
    next_token: u64,
    spot: Option<Scheduled<serde_json::Value>>,
    rebalance: Option<Scheduled<serde_json::Value>>,
    maintenance: Vec<Scheduled<serde_json::Value>>,
    fault: Option<Fault>,
    stats: Stats,
}

/// The simulator's state; cheap to clone (shared).
#[derive(Clone)]
pub struct Sim {
    inner: Arc<Mutex<Inner>>,
    pub instance_id: String,
    pub instance_type: String,
    pub zone: String,
}

impl Default for Sim {
    fn default() -> Self {
        Self::new("i-0123456789abcdef0")
    }
}

fn after(seconds: f64) -> Instant {
    Instant::now() + Duration::from_secs_f64(seconds.max(0.0))
}

impl Sim {
    pub fn new(instance_id: &str) -> Self {
        Self {
            inner: Arc::default(),
            instance_id: instance_id.into(),
            instance_type: "m5.large".into(),
            zone: "us-east-1a".into(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Schedules a spot interruption notice; returns its `time` (the deadline) as served.
    pub fn spot(&self, r: &SpotRequest) -> String {
        let appears =
            Utc::now() + chrono::Duration::milliseconds((r.after_seconds.max(0.0) * 1000.0) as i64);
        let time = rfc3339(appears + chrono::Duration::seconds(r.deadline_seconds));
        self.lock().spot = Some(Scheduled {
            visible_from: after(r.after_seconds),
            value: json!({"action": r.action, "time": time}),
        });
        time
    }

    pub fn rebalance(&self, r: &RebalanceRequest) -> String {
        let appears =
            Utc::now() + chrono::Duration::milliseconds((r.after_seconds.max(0.0) * 1000.0) as i64);
        let t = rfc3339(appears);
        self.lock().rebalance = Some(Scheduled {
            visible_from: after(r.after_seconds),
            value: json!({"noticeTime": t}),
        });
        t
    }

    pub fn maintenance(&self, r: &MaintenanceRequest) -> serde_json::Value {
        let nb = Utc::now() + chrono::Duration::seconds(r.not_before_seconds);
        let na = nb + chrono::Duration::seconds(r.duration_seconds);
        let value = json!({
            "Code": r.code,
            "Description": format!("scheduled {}", r.code),
            "EventId": r.event_id,
            "NotBefore": maintenance_date(nb),
            "NotAfter": maintenance_date(na),
            "State": r.state,
        });
        let mut inner = self.lock();
        inner
            .maintenance
            .retain(|e| e.value["EventId"] != r.event_id);
        inner.maintenance.push(Scheduled {
            visible_from: after(r.after_seconds),
            value: value.clone(),
        });
        value
    }

    pub fn fault(&self, f: &FaultRequest) {
        self.lock().fault = Some(Fault {
            kind: f.kind,
            until: after(f.seconds),
            delay: Duration::from_millis(f.delay_ms),
        });
    }

    /// Every token issued so far becomes invalid, as if its TTL had run out.
    pub fn expire_tokens(&self) {
        self.lock().tokens.clear();
    }

    /// Removes events and faults (tokens stay valid).
    pub fn clear(&self) {
        let mut inner = self.lock();
        inner.spot = None;
        inner.rebalance = None;
        inner.maintenance.clear();
        inner.fault = None;
    }

    pub fn stats(&self) -> Stats {
        self.lock().stats.clone()
    }

    pub fn router(&self) -> Router {
        Router::new().fallback(handle).with_state(self.clone())
    }

    /// Serves on `addr` (port 0 picks one) until the returned task is aborted.
    pub async fn serve(
        &self,
        addr: SocketAddr,
    ) -> std::io::Result<(SocketAddr, tokio::task::JoinHandle<()>)> {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        let local = listener.local_addr()?;
        let app = self.router();
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok((local, task))
    }

    /// The fault in force now, if any; the delay to apply before answering.
    fn active_fault(&self) -> Option<(FaultKind, Duration)> {
        let mut inner = self.lock();
        let now = Instant::now();
        match &inner.fault {
            Some(f) if f.until > now => {
                let r = match f.kind {
                    FaultKind::Hang => (f.kind, f.until - now),
                    _ => (f.kind, f.delay),
                };
                inner.stats.faulted += 1;
                Some(r)
            }
            Some(_) => {
                inner.fault = None;
                None
            }
            None => None,
        }
    }

    fn issue_token(&self, ttl: u64) -> String {
        let mut inner = self.lock();
        inner.next_token += 1;
        let token = format!("AQAEA-sim-{}-{:x}", inner.next_token, rand_bits());
        let now = Instant::now();
        inner.tokens.retain(|_, exp| *exp > now);
        inner
            .tokens
            .insert(token.clone(), now + Duration::from_secs(ttl));
        inner.stats.token_requests += 1;
        token
    }

    fn token_valid(&self, token: Option<&str>) -> bool {
        let inner = self.lock();
        token
            .and_then(|t| inner.tokens.get(t))
            .is_some_and(|exp| *exp > Instant::now())
    }

    fn metadata(&self, path: &str) -> Option<(String, &'static str)> {
        let now = Instant::now();
        let inner = self.lock();
        let visible = |s: &Option<Scheduled<serde_json::Value>>| {
            s.as_ref()
                .filter(|s| s.visible_from <= now)
                .map(|s| (s.value.to_string(), "application/json"))
        };
        let text = |s: &str| Some((s.to_string(), "text/plain"));
        match path {
            "" | "/" => text("events/\ninstance-id\ninstance-type\nplacement/\nspot/"),
            "instance-id" => text(&self.instance_id),
            "instance-type" => text(&self.instance_type),
            "placement/availability-zone" => text(&self.zone),
            "spot/instance-action" => visible(&inner.spot),
            "events/recommendations/rebalance" => visible(&inner.rebalance),
            "events/maintenance/scheduled" => {
                let events: Vec<_> = inner
                    .maintenance
                    .iter()
                    .filter(|e| e.visible_from <= now)
                    .map(|e| e.value.clone())
                    .collect();
                Some((
                    serde_json::Value::Array(events).to_string(),
                    "application/json",
                ))
            }
            _ => None,
        }
    }
}

/// Unguessable enough for a simulator: tokens must differ between runs.
fn rand_bits() -> u64 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    (t.as_nanos() as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

fn status(code: StatusCode, body: &str) -> Response {
    (code, body.to_string()).into_response()
}

async fn handle(
    State(sim): State<Sim>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path().to_string();
    if let Some(admin) = path.strip_prefix("/_sim/") {
        return admin_request(&sim, &method, admin, &body);
    }
    if let Some((kind, delay)) = sim.active_fault() {
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        match kind {
            FaultKind::Unauthorized => {
                sim.lock().stats.unauthorized += 1;
                return status(StatusCode::UNAUTHORIZED, "");
            }
            FaultKind::Unavailable => return status(StatusCode::SERVICE_UNAVAILABLE, ""),
            FaultKind::Slow | FaultKind::Hang => {}
        }
    }
    if path == "/latest/api/token" {
        if method != Method::PUT {
            return status(StatusCode::METHOD_NOT_ALLOWED, "");
        }
        let ttl = headers
            .get(TTL_HEADER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok());
        return match ttl {
            Some(ttl) if (1..=MAX_TTL).contains(&ttl) => {
                let token = sim.issue_token(ttl);
                let mut resp = (StatusCode::OK, token).into_response();
                resp.headers_mut()
                    .insert(TTL_HEADER, ttl.to_string().parse().expect("header value"));
                resp
            }
            _ => status(StatusCode::BAD_REQUEST, ""),
        };
    }
    let Some(rest) = path.strip_prefix("/latest/meta-data") else {
        return status(StatusCode::NOT_FOUND, "");
    };
    if method != Method::GET {
        return status(StatusCode::METHOD_NOT_ALLOWED, "");
    }
    sim.lock().stats.metadata_requests += 1;
    let token = headers.get(TOKEN_HEADER).and_then(|v| v.to_str().ok());
    if !sim.token_valid(token) {
        sim.lock().stats.unauthorized += 1;
        return status(StatusCode::UNAUTHORIZED, "");
    }
    match sim.metadata(rest.trim_start_matches('/')) {
        Some((body, ctype)) => ([("content-type", ctype)], body).into_response(),
        None => status(StatusCode::NOT_FOUND, ""),
    }
}

fn admin_request(sim: &Sim, method: &Method, path: &str, body: &[u8]) -> Response {
    fn parse<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, String> {
        let body = if body.is_empty() { b"{}" } else { body };
        serde_json::from_slice(body).map_err(|e| e.to_string())
    }
    let json = |v: serde_json::Value| (StatusCode::OK, axum::Json(v)).into_response();
    if method == Method::GET && path == "stats" {
        return json(serde_json::to_value(sim.stats()).expect("stats"));
    }
    if method != Method::POST {
        return status(StatusCode::METHOD_NOT_ALLOWED, "");
    }
    let result = match path {
        "spot" => parse::<SpotRequest>(body).map(|r| json!({"time": sim.spot(&r)})),
        "rebalance" => {
            parse::<RebalanceRequest>(body).map(|r| json!({"noticeTime": sim.rebalance(&r)}))
        }
        "maintenance" => parse::<MaintenanceRequest>(body).map(|r| sim.maintenance(&r)),
        "fault" => parse::<FaultRequest>(body).map(|r| {
            sim.fault(&r);
            json!({"ok": true})
        }),
        "expire-tokens" => {
            sim.expire_tokens();
            Ok(json!({"ok": true}))
        }
        "clear" => {
            sim.clear();
            Ok(json!({"ok": true}))
        }
        _ => return status(StatusCode::NOT_FOUND, "unknown admin path"),
    };
    match result {
        Ok(v) => json(v),
        Err(e) => status(StatusCode::BAD_REQUEST, &e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maintenance_dates_use_the_imds_format() {
        let t = DateTime::parse_from_rfc3339("2006-01-02T15:04:05Z")
            .unwrap()
            .with_timezone(&Utc);
        assert_eq!(maintenance_date(t), "2 Jan 2006 15:04:05 GMT");
        assert_eq!(rfc3339(t), "2006-01-02T15:04:05Z");
    }

    #[test]
    fn scheduled_spot_notice_is_invisible_before_its_trigger_time() {
        let sim = Sim::default();
        sim.spot(&SpotRequest {
            action: "terminate".into(),
            deadline_seconds: 120,
            after_seconds: 60.0,
        });
        assert!(sim.metadata("spot/instance-action").is_none());
        sim.spot(&SpotRequest {
            action: "stop".into(),
            deadline_seconds: 120,
            after_seconds: 0.0,
        });
        let (body, _) = sim.metadata("spot/instance-action").unwrap();
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["action"], "stop");
    }

    #[test]
    fn expired_tokens_are_rejected() {
        let sim = Sim::default();
        let t = sim.issue_token(60);
        assert!(sim.token_valid(Some(&t)));
        sim.expire_tokens();
        assert!(!sim.token_valid(Some(&t)));
        assert!(!sim.token_valid(None));
    }
}
