//! Go-style durations ("30s", "1h30m", "500ms") and the "Never" sentinel.
//!
//! Karpenter's API spells durations the way Go's `time.ParseDuration` does, so Adze accepts the same
//! strings and Karpenter manifests port unchanged. Two deliberate differences: no sign (a negative
//! expiry or grace period means nothing) and ASCII units only (`us`, not `µs`), so the CRD pattern
//! and this parser accept exactly the same strings.
//!
//! The text the user wrote is kept: writing an object back must not turn "90m" into "1h30m" and
//! show up as a spurious diff. Equality and hashing use the parsed value.

use std::{borrow::Cow, cmp::Ordering, fmt, hash::Hash, str::FromStr, time::Duration};

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// CRD pattern for a duration; [`GoDuration::parse`] accepts exactly the strings it matches.
pub const PATTERN: &str = r"^(0|([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+)$";
/// CRD pattern for a duration or "Never"; [`DurationOrNever::parse`] accepts exactly these.
pub const PATTERN_OR_NEVER: &str = r"^(0|([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+|Never)$";
/// The spelling Karpenter uses to switch a timer off.
pub const NEVER: &str = "Never";

const UNITS_HINT: &str = "use h, m, s, ms, us or ns, e.g. \"1h30m\"";

/// Why a duration string was refused. Each variant carries the input so the message stands alone.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    #[error("invalid duration \"\": expected a Go duration such as \"30s\" or \"1h30m\"")]
    Empty,
    #[error("invalid duration {input:?}: negative durations are not allowed")]
    Negative { input: String },
    #[error("invalid duration {input:?}: expected a number at {rest:?} ({UNITS_HINT})")]
    ExpectedNumber { input: String, rest: String },
    #[error("invalid duration {input:?}: missing unit after {number:?} ({UNITS_HINT})")]
    MissingUnit { input: String, number: String },
    #[error("invalid duration {input:?}: unknown unit {unit:?} ({UNITS_HINT})")]
    UnknownUnit { input: String, unit: String },
    #[error("invalid duration {input:?}: longer than the ~292 years a Go duration can hold")]
    Overflow { input: String },
    #[error("invalid duration \"Never\": this field needs a finite duration ({UNITS_HINT})")]
    NeverNotAllowed,
}

/// Parses a Go duration string into a [`Duration`].
pub fn parse_go_duration(input: &str) -> Result<Duration, DurationError> {
    const MAX_NANOS: u128 = i64::MAX as u128; // Go's time.Duration is an int64 of nanoseconds.
    let err_input = || input.to_string();
    if input.is_empty() {
        return Err(DurationError::Empty);
    }
    if input == NEVER {
        return Err(DurationError::NeverNotAllowed);
    }
    if input.starts_with('-') {
        return Err(DurationError::Negative { input: err_input() });
    }
    if input == "0" {
        return Ok(Duration::ZERO);
    }

    let mut rest = input;
    let mut total: u128 = 0;
    while !rest.is_empty() {
        let int_len = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        if int_len == 0 {
            return Err(DurationError::ExpectedNumber {
                input: err_input(),
                rest: rest.to_string(),
            });
        }
        let (int_part, after_int) = rest.split_at(int_len);
        let (frac_part, after_number) = match after_int.strip_prefix('.') {
            Some(after_dot) => {
                let frac_len = after_dot
                    .find(|c: char| !c.is_ascii_digit())
                    .unwrap_or(after_dot.len());
                if frac_len == 0 {
                    return Err(DurationError::ExpectedNumber {
                        input: err_input(),
                        rest: after_dot.to_string(),
                    });
                }
                after_dot.split_at(frac_len)
            }
            None => ("", after_int),
        };
        let number = &rest[..rest.len() - after_number.len()];

        let unit_len = after_number
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(after_number.len());
        let (unit, next) = after_number.split_at(unit_len);
        let unit_nanos: u128 = match unit {
            "ns" => 1,
            "us" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60 * 1_000_000_000,
            "h" => 3_600 * 1_000_000_000,
            "" => {
                return Err(DurationError::MissingUnit {
                    input: err_input(),
                    number: number.to_string(),
                });
            }
            other => {
                return Err(DurationError::UnknownUnit {
                    input: err_input(),
                    unit: other.to_string(),
                });
            }
        };

        let overflow = || DurationError::Overflow { input: err_input() };
        let whole: u128 = int_part.parse().map_err(|_| overflow())?;
        let mut nanos = whole.checked_mul(unit_nanos).ok_or_else(overflow)?;
        // Digits below a nanosecond are dropped, as Go does; capping at 20 keeps the maths in u128.
        let frac_digits = &frac_part[..frac_part.len().min(20)];
        if !frac_digits.is_empty() {
            let frac: u128 = frac_digits.parse().map_err(|_| overflow())?;
            // Checked: `whole` alone may already sit just below u128::MAX.
            nanos = nanos
                .checked_add(frac * unit_nanos / 10u128.pow(frac_digits.len() as u32))
                .ok_or_else(overflow)?;
        }
        total = total.checked_add(nanos).ok_or_else(overflow)?;
        if total > MAX_NANOS {
            return Err(overflow());
        }
        rest = next;
    }
    Ok(Duration::from_nanos(total as u64))
}

/// Formats a duration compactly in Go syntax ("720h", "1h30m", "1s500ms", "0s").
pub fn format_go_duration(d: Duration) -> String {
    let mut nanos = d.as_nanos();
    if nanos == 0 {
        return "0s".to_string();
    }
    let mut out = String::new();
    for (unit, size) in [
        ("h", 3_600_000_000_000u128),
        ("m", 60_000_000_000),
        ("s", 1_000_000_000),
        ("ms", 1_000_000),
        ("us", 1_000),
        ("ns", 1),
    ] {
        let count = nanos / size;
        if count > 0 {
            out.push_str(&count.to_string());
            out.push_str(unit);
            nanos %= size;
        }
    }
    out
}

/// A finite Go duration, e.g. `terminationGracePeriod: 48h`.
#[derive(Clone, Debug)]
pub struct GoDuration {
    text: String,
    value: Duration,
}

impl GoDuration {
    pub fn parse(text: &str) -> Result<Self, DurationError> {
        Ok(Self {
            text: text.to_string(),
            value: parse_go_duration(text)?,
        })
    }

    pub fn from_std(value: Duration) -> Self {
        Self {
            text: format_go_duration(value),
            value,
        }
    }

    pub fn as_std(&self) -> Duration {
        self.value
    }

    /// The text as written (or as formatted by [`GoDuration::from_std`]).
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

impl From<Duration> for GoDuration {
    fn from(value: Duration) -> Self {
        Self::from_std(value)
    }
}

impl PartialEq for GoDuration {
    fn eq(&self, other: &Self) -> bool {
        self.value == other.value
    }
}

impl Eq for GoDuration {}

impl Hash for GoDuration {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.value.hash(state);
    }
}

impl PartialOrd for GoDuration {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for GoDuration {
    fn cmp(&self, other: &Self) -> Ordering {
        self.value.cmp(&other.value)
    }
}

impl fmt::Display for GoDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl FromStr for GoDuration {
    type Err = DurationError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl Serialize for GoDuration {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for GoDuration {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Self::parse(&text).map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for GoDuration {
    fn schema_name() -> Cow<'static, str> {
        "GoDuration".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "pattern": PATTERN,
        })
    }
}

/// A Go duration or "Never", for timers a user may switch off (`expireAfter`, `consolidateAfter`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum DurationOrNever {
    Never,
    After(GoDuration),
}

impl DurationOrNever {
    pub fn parse(text: &str) -> Result<Self, DurationError> {
        if text == NEVER {
            Ok(Self::Never)
        } else {
            GoDuration::parse(text).map(Self::After)
        }
    }

    /// `None` means the timer never fires.
    pub fn as_std(&self) -> Option<Duration> {
        match self {
            Self::Never => None,
            Self::After(d) => Some(d.as_std()),
        }
    }

    pub fn is_never(&self) -> bool {
        matches!(self, Self::Never)
    }

    pub fn as_str(&self) -> &str {
        match self {
            Self::Never => NEVER,
            Self::After(d) => d.as_str(),
        }
    }
}

impl From<Duration> for DurationOrNever {
    fn from(value: Duration) -> Self {
        Self::After(GoDuration::from_std(value))
    }
}

impl From<Option<Duration>> for DurationOrNever {
    fn from(value: Option<Duration>) -> Self {
        value.map_or(Self::Never, Self::from)
    }
}

impl fmt::Display for DurationOrNever {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for DurationOrNever {
    type Err = DurationError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl Serialize for DurationOrNever {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for DurationOrNever {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Self::parse(&text).map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for DurationOrNever {
    fn schema_name() -> Cow<'static, str> {
        "DurationOrNever".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "pattern": PATTERN_OR_NEVER,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    #[test]
    fn a_fraction_on_a_number_just_below_u128_max_is_an_overflow_not_a_panic() {
        // u128::MAX / 1000 microseconds is u128::MAX - 455 nanoseconds; ".9" adds 900 more.
        let input = format!("{}.9us", u128::MAX / 1000);
        assert!(matches!(
            parse_go_duration(&input),
            Err(DurationError::Overflow { .. })
        ));
        assert!(matches!(
            parse_go_duration(&format!("{}.99999999999999999999999ns", u128::MAX)),
            Err(DurationError::Overflow { .. })
        ));
        assert!(matches!(
            parse_go_duration(&format!("{}0h", u128::MAX)),
            Err(DurationError::Overflow { .. })
        ));
        assert_eq!(
            parse_go_duration("2562047h47m16.854775807s"),
            Ok(Duration::from_nanos(i64::MAX as u64))
        );
    }

    #[test]
    fn parses_the_forms_karpenter_users_write() {
        assert_eq!(parse_go_duration("30s"), Ok(secs(30)));
        assert_eq!(parse_go_duration("720h"), Ok(secs(720 * 3600)));
        assert_eq!(parse_go_duration("1h30m"), Ok(secs(5400)));
        assert_eq!(parse_go_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_go_duration("0s"), Ok(Duration::ZERO));
        assert_eq!(parse_go_duration("0"), Ok(Duration::ZERO));
        assert_eq!(parse_go_duration("1.5h"), Ok(secs(5400)));
        assert_eq!(
            parse_go_duration("2m3s4ms5us6ns"),
            Ok(Duration::new(123, 4_005_006))
        );
    }

    #[test]
    fn refusals_name_the_problem() {
        assert_eq!(parse_go_duration(""), Err(DurationError::Empty));
        assert!(matches!(
            parse_go_duration("-5m"),
            Err(DurationError::Negative { .. })
        ));
        assert!(
            matches!(parse_go_duration("10"), Err(DurationError::MissingUnit { number, .. }) if number == "10")
        );
        assert!(
            matches!(parse_go_duration("3d"), Err(DurationError::UnknownUnit { unit, .. }) if unit == "d")
        );
        assert!(matches!(
            parse_go_duration("h"),
            Err(DurationError::ExpectedNumber { .. })
        ));
        assert!(matches!(
            parse_go_duration("1.h"),
            Err(DurationError::ExpectedNumber { .. })
        ));
        assert!(matches!(
            parse_go_duration("1h 30m"),
            Err(DurationError::UnknownUnit { .. })
        ));
        assert!(matches!(
            parse_go_duration("3000000h"),
            Err(DurationError::Overflow { .. })
        ));
        assert_eq!(
            parse_go_duration("Never"),
            Err(DurationError::NeverNotAllowed)
        );
        let message = parse_go_duration("3d").unwrap_err().to_string();
        assert_eq!(
            message,
            "invalid duration \"3d\": unknown unit \"d\" (use h, m, s, ms, us or ns, e.g. \"1h30m\")"
        );
    }

    #[test]
    fn parser_and_crd_pattern_agree() {
        let pattern = regex::Regex::new(PATTERN).unwrap();
        let or_never = regex::Regex::new(PATTERN_OR_NEVER).unwrap();
        for input in [
            "30s", "720h", "1h30m", "500ms", "0", "0s", "1.5h", "10", "3d", "h", "1.h", ".5h",
            "-1s", "1h 30m", "", "Never", "never", "1µs", "1us", "+1s", "1e3s",
        ] {
            let parses = parse_go_duration(input).is_ok();
            assert_eq!(parses, pattern.is_match(input), "duration {input:?}");
            let parses_or_never = DurationOrNever::parse(input).is_ok();
            assert_eq!(
                parses_or_never,
                or_never.is_match(input),
                "duration-or-never {input:?}"
            );
        }
    }

    #[test]
    fn keeps_the_text_but_compares_by_value() {
        let written: GoDuration = "90m".parse().unwrap();
        assert_eq!(written.as_str(), "90m");
        assert_eq!(written, GoDuration::parse("1h30m").unwrap());
        assert_eq!(serde_json::to_string(&written).unwrap(), "\"90m\"");
        assert_eq!(GoDuration::from_std(secs(5400)).as_str(), "1h30m");
        assert_eq!(
            GoDuration::from_std(Duration::from_millis(1500)).as_str(),
            "1s500ms"
        );
        assert_eq!(GoDuration::from_std(Duration::ZERO).as_str(), "0s");
    }

    #[test]
    fn never_switches_the_timer_off() {
        let never: DurationOrNever = serde_json::from_str("\"Never\"").unwrap();
        assert_eq!(never.as_std(), None);
        assert_eq!(serde_json::to_string(&never).unwrap(), "\"Never\"");
        let after: DurationOrNever = serde_json::from_str("\"720h\"").unwrap();
        assert_eq!(after.as_std(), Some(secs(720 * 3600)));
        let err = serde_json::from_str::<DurationOrNever>("\"forever\"").unwrap_err();
        assert!(
            err.to_string().contains("invalid duration \"forever\""),
            "{err}"
        );
    }
}
