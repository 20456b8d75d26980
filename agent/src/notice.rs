//! What IMDS says about this instance's future, parsed once at the edge into typed notices.

use chrono::{DateTime, Datelike, NaiveDateTime, Utc};
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

    /// Any RFC 3339 time chrono can hold (years 0000–9999) is taken as given, however odd:
    /// the notice itself means the instance is going, so it is never ignored for its time. A
    /// past time drains at once (grace cut to nothing), a far one drains honouring PDBs;
    /// [`crate::decide`] does only checked arithmetic on it.
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

    /// Parses the event list. A body that is not a JSON list is an error (the whole answer is
    /// ignored); an entry that does not parse, or whose `NotBefore` is not a plausible date,
    /// is left out with a warning and the others kept. Leaving it out is the conservative
    /// choice both ways: an unreadable new event starts no drain (a bogus year-0 date would
    /// otherwise force-delete every pod at once), and an unreadable "canceled" never ends
    /// one.
    pub fn parse_list(body: &str) -> Result<Vec<Self>, ParseError> {
        let entries: Vec<serde_json::Value> =
            serde_json::from_str(body).map_err(|e| err("maintenance events", e))?;
        Ok(entries
            .into_iter()
            .filter_map(|entry| {
                Self::parse_one(entry)
                    .inspect_err(|e| tracing::warn!(error = %e, "ignoring maintenance event"))
                    .ok()
            })
            .collect())
    }

    fn parse_one(entry: serde_json::Value) -> Result<Self, ParseError> {
        #[derive(Deserialize)]
        #[serde(rename_all = "PascalCase")]
        struct Raw {
            code: String,
            event_id: String,
            not_before: String,
            state: String,
        }
        let r: Raw = serde_json::from_value(entry).map_err(|e| err("maintenance event", e))?;
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
    }
}

/// Years a maintenance date may name. AWS schedules maintenance days to weeks ahead; a date
/// outside these years is corrupt, not an event to act on.
pub const PLAUSIBLE_YEARS: std::ops::RangeInclusive<i32> = 1970..=9999;

/// IMDS writes maintenance dates like `2 Jan 2006 15:04:05 GMT`. Dates outside
/// [`PLAUSIBLE_YEARS`] are refused.
pub fn parse_maintenance_date(s: &str) -> Result<DateTime<Utc>, ParseError> {
    let t = NaiveDateTime::parse_from_str(s.trim(), "%d %b %Y %H:%M:%S GMT")
        .map(|t| t.and_utc())
        .map_err(|e| err("maintenance NotBefore", format!("{s:?}: {e}")))?;
    if !PLAUSIBLE_YEARS.contains(&t.year()) {
        return Err(err(
            "maintenance NotBefore",
            format!(
                "{s:?}: year {} is outside {}-{}",
                t.year(),
                PLAUSIBLE_YEARS.start(),
                PLAUSIBLE_YEARS.end()
            ),
        ));
    }
    Ok(t)
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

    fn maintenance_event(not_before: &str) -> String {
        format!(
            r#"{{"Code":"system-reboot","EventId":"e-{not_before}","NotBefore":"{not_before}","State":"active"}}"#
        )
    }

    #[test]
    fn maintenance_in_year_9999_parses_as_a_far_event() {
        let list = MaintenanceEvent::parse_list(&format!(
            "[{}]",
            maintenance_event("31 Dec 9999 23:59:59 GMT")
        ))
        .unwrap();
        assert_eq!(list[0].not_before.to_rfc3339(), "9999-12-31T23:59:59+00:00");
    }

    #[test]
    fn maintenance_with_an_impossible_date_is_left_out_and_the_others_kept() {
        for bad in [
            "1 Jan 0000 00:00:00 GMT",
            "1 Jan -262144 00:00:00 GMT",
            "1 Jan +262143 00:00:00 GMT",
            "13 Sep +275760 00:00:00 GMT",
            "+275760-09-13",
            "31 Feb 2026 00:00:00 GMT",
            "garbage",
            "",
        ] {
            let body = format!(
                "[{}, {}]",
                maintenance_event(bad),
                maintenance_event("2 Jan 2026 15:04:05 GMT")
            );
            let list = MaintenanceEvent::parse_list(&body).unwrap();
            assert_eq!(list.len(), 1, "{bad:?} should be left out: {list:?}");
            assert_eq!(list[0].id, "e-2 Jan 2026 15:04:05 GMT");
        }
    }

    #[test]
    fn maintenance_answers_of_unexpected_shapes_never_panic() {
        assert!(MaintenanceEvent::parse_list(r#"{"Code":"x"}"#).is_err());
        assert!(MaintenanceEvent::parse_list("").is_err());
        assert!(MaintenanceEvent::parse_list("[").is_err());
        // serde_json refuses numbers beyond f64 outright.
        assert!(MaintenanceEvent::parse_list("[1e999]").is_err());
        for odd in [
            "[18446744073709551616]",
            "[null, [], \"x\"]",
            r#"[{"Code":1,"EventId":"e","NotBefore":"2 Jan 2026 15:04:05 GMT","State":"active"}]"#,
            r#"[{"Code":"c","EventId":"e","NotBefore":99999999999999999999,"State":"active"}]"#,
            r#"[{"Code":"c","EventId":"e","NotBefore":"2 Jan 2026 15:04:05 GMT"}]"#,
        ] {
            assert_eq!(MaintenanceEvent::parse_list(odd).unwrap(), vec![], "{odd}");
        }
    }

    #[test]
    fn spot_notices_with_extreme_times_parse_or_are_refused_without_panic() {
        let at =
            |time: &str| SpotNotice::parse(&format!(r#"{{"action":"terminate","time":"{time}"}}"#));
        assert_eq!(
            at("9999-12-31T23:59:59Z").unwrap().key(),
            "spot/9999-12-31T23:59:59Z"
        );
        assert_eq!(
            at("0000-01-01T00:00:00Z").unwrap().key(),
            "spot/0000-01-01T00:00:00Z"
        );
        for bad in [
            "+275760-09-13T00:00:00Z",
            "-000001-01-01T00:00:00Z",
            "",
            "9999-12-31T23:59:60+99:00",
        ] {
            assert!(at(bad).is_err(), "{bad:?}");
        }
        assert!(SpotNotice::parse(r#"{"action":"terminate","time":1e400}"#).is_err());
        assert!(SpotNotice::parse(r#"["terminate"]"#).is_err());
        assert!(RebalanceNotice::parse(r#"{"noticeTime":"+275760-09-13T00:00:00Z"}"#).is_err());
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
