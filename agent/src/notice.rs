//! What IMDS says about this instance's future, parsed once at the edge into typed notices.

use chrono::{DateTime, NaiveDateTime, Utc};
use serde::Deserialize;

pub const SPOT_PATH: &str = "/latest/meta-data/spot/instance-action";
pub const REBALANCE_PATH: &str = "/latest/meta-data/events/recommendations/rebalance";
pub const MAINTENANCE_PATH: &str = "/latest/meta-data/events/maintenance/scheduled";

#[derive(Debug, thiserror::Error)]
#[error("cannot parse {what}: {message}")]
pub struct ParseError {
    what: &'static str,
    message: String,
}

fn err(what: &'static str, e: impl std::fmt::Display) -> ParseError {
    ParseError {
        what,
        message: e.to_string(),
    }
}

/// A spot interruption notice: the instance will be stopped, hibernated or terminated at `time`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpotNotice {
    pub action: String,
    pub time: DateTime<Utc>,
}

impl SpotNotice {
    /// Identifies the notice across polls, restarts and the SQS path (same deadline).
    pub fn key(&self) -> String {
        format!("spot/{}", self.time.format("%Y-%m-%dT%H:%M:%SZ"))
    }

    pub fn parse(body: &str) -> Result<Self, ParseError> {
        #[derive(Deserialize)]
        struct Raw {
            action: String,
            time: String,
        }
        let raw: Raw = serde_json::from_str(body).map_err(|e| err("spot instance-action", e))?;
        let time = DateTime::parse_from_rfc3339(&raw.time)
            .map_err(|e| err("spot instance-action time", e))?
            .with_timezone(&Utc);
        Ok(Self {
            action: raw.action,
            time,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RebalanceNotice {
    pub notice_time: DateTime<Utc>,
}

impl RebalanceNotice {
    pub fn key(&self) -> String {
        format!(
            "rebalance/{}",
            self.notice_time.format("%Y-%m-%dT%H:%M:%SZ")
        )
    }

    pub fn parse(body: &str) -> Result<Self, ParseError> {
        #[derive(Deserialize)]
        struct Raw {
            #[serde(rename = "noticeTime")]
            notice_time: String,
        }
        let raw: Raw = serde_json::from_str(body).map_err(|e| err("rebalance", e))?;
        let notice_time = DateTime::parse_from_rfc3339(&raw.notice_time)
            .map_err(|e| err("rebalance noticeTime", e))?
            .with_timezone(&Utc);
        Ok(Self { notice_time })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MaintenanceState {
    Active,
    Completed,
    Canceled,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MaintenanceEvent {
    pub id: String,
    pub code: String,
    pub not_before: DateTime<Utc>,
    pub state: MaintenanceState,
}

impl MaintenanceEvent {
    pub fn key(&self) -> String {
        format!("maintenance/{}", self.id)
    }

    pub fn parse_list(body: &str) -> Result<Vec<Self>, ParseError> {
        #[derive(Deserialize)]
        #[serde(rename_all = "PascalCase")]
        struct Raw {
            code: String,
            event_id: String,
            not_before: String,
            state: String,
        }
        let raw: Vec<Raw> = serde_json::from_str(body).map_err(|e| err("maintenance events", e))?;
        raw.into_iter()
            .map(|r| {
                let state = match r.state.to_ascii_lowercase().as_str() {
                    "completed" => MaintenanceState::Completed,
                    "canceled" | "cancelled" => MaintenanceState::Canceled,
                    _ => MaintenanceState::Active,
                };
                Ok(Self {
                    not_before: parse_maintenance_date(&r.not_before)?,
                    id: r.event_id,
                    code: r.code,
                    state,
                })
            })
            .collect()
    }
}

/// IMDS writes maintenance dates like `2 Jan 2006 15:04:05 GMT`.
pub fn parse_maintenance_date(s: &str) -> Result<DateTime<Utc>, ParseError> {
    NaiveDateTime::parse_from_str(s.trim(), "%d %b %Y %H:%M:%S GMT")
        .map(|t| t.and_utc())
        .map_err(|e| err("maintenance NotBefore", format!("{s:?}: {e}")))
}

/// Everything one poll saw. `None`/empty where IMDS answered 404 or the poll failed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Observation {
    pub spot: Option<SpotNotice>,
    pub rebalance: Option<RebalanceNotice>,
    pub maintenance: Vec<MaintenanceEvent>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spot_notice_parses_and_keys_on_its_deadline() {
        let n =
            SpotNotice::parse(r#"{"action":"terminate","time":"2026-11-22T23:59:00Z"}"#).unwrap();
        assert_eq!(n.action, "terminate");
        assert_eq!(n.key(), "spot/2026-11-22T23:59:00Z");
        assert!(SpotNotice::parse(r#"{"action":"terminate","time":"soon"}"#).is_err());
    }

    #[test]
    fn maintenance_dates_parse_with_single_digit_days() {
        let t = parse_maintenance_date("2 Jan 2006 15:04:05 GMT").unwrap();
        assert_eq!(t.to_rfc3339(), "2006-01-02T15:04:05+00:00");
        let list = MaintenanceEvent::parse_list(
            r#"[{"Code":"system-reboot","Description":"d","EventId":"e1",
                "NotBefore":"21 Jan 2019 09:00:43 GMT","NotAfter":"21 Jan 2019 09:17:23 GMT",
                "State":"canceled"}]"#,
        )
        .unwrap();
        assert_eq!(list[0].state, MaintenanceState::Canceled);
        assert_eq!(list[0].key(), "maintenance/e1");
        assert!(parse_maintenance_date("2006-01-02").is_err());
    }
}
