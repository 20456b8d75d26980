//! Standard five-field cron schedules (minute hour day-of-month month day-of-week, UTC) and
//! the `@yearly`-style macros, for budget windows. Small on purpose: only what deciding
//! "is the window open at `now`" needs.
//!
//! Fields take `*`, numbers, ranges `a-b`, steps `*/n` and `a-b/n`, lists `a,b`, and month
//! and weekday names (`jan`, `mon`). Day of week 0 and 7 are both Sunday. As in Vixie cron,
//! when both day fields are restricted a day matches if either does.

use std::time::Duration;

use super::UnixSeconds;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cron schedule {schedule:?}: {reason}")]
pub struct CronError {
    pub schedule: String,
    pub reason: String,
}

/// A parsed schedule: for each field, a bit set of the values it matches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schedule {
    text: String,
    minutes: u64,
    hours: u64,
    days: u64,
    months: u64,
    weekdays: u64,
    /// Whether the day-of-month / day-of-week field was `*` (then the other one decides).
    any_day: bool,
    any_weekday: bool,
}

const MONTHS: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];
const WEEKDAYS: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

impl Schedule {
    pub fn parse(text: &str) -> Result<Schedule, CronError> {
        let err = |reason: String| CronError {
            schedule: text.to_string(),
            reason,
        };
        let expanded = match text.trim() {
            "@yearly" | "@annually" => "0 0 1 1 *",
            "@monthly" => "0 0 1 * *",
            "@weekly" => "0 0 * * 0",
            "@daily" | "@midnight" => "0 0 * * *",
            "@hourly" => "0 * * * *",
            other if other.starts_with('@') => {
                return Err(err(format!("unknown macro {other}")));
            }
            other => other,
        };
        let fields: Vec<&str> = expanded.split_whitespace().collect();
        if fields.len() != 5 {
            return Err(err(format!(
                "expected 5 fields (minute hour day-of-month month day-of-week), found {}",
                fields.len()
            )));
        }
        let minutes = field(fields[0], "minute", 0, 59, &[]).map_err(err)?;
        let hours = field(fields[1], "hour", 0, 23, &[]).map_err(err)?;
        let days = field(fields[2], "day-of-month", 1, 31, &[]).map_err(err)?;
        let months = field(fields[3], "month", 1, 12, &MONTHS).map_err(err)?;
        let mut weekdays = field(fields[4], "day-of-week", 0, 7, &WEEKDAYS).map_err(err)?;
        if weekdays & (1 << 7) != 0 {
            weekdays |= 1;
        }
        Ok(Schedule {
            text: text.to_string(),
            minutes,
            hours,
            days,
            months,
            weekdays,
            any_day: fields[2].starts_with('*'),
            any_weekday: fields[4].starts_with('*'),
        })
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether the schedule fires at the minute containing `t`.
    pub fn fires_at(&self, t: UnixSeconds) -> bool {
        let c = Civil::from_unix(t);
        bit(self.minutes, c.minute)
            && bit(self.hours, c.hour)
            && bit(self.months, c.month)
            && self.day_matches(c.day, c.weekday)
    }

    /// The day-of-month / day-of-week rule (either matches when both are restricted).
    fn day_matches(&self, day: u32, weekday: u32) -> bool {
        let dom = bit(self.days, day);
        let dow = bit(self.weekdays, weekday);
        match (self.any_day, self.any_weekday) {
            (true, true) => true,
            (true, false) => dow,
            (false, true) => dom,
            (false, false) => dom || dow,
        }
    }

    /// Whether a window opened by a tick of this schedule and lasting `duration` contains
    /// `now`: some tick `t` with `t ≤ now < t + duration`. Only the latest tick at or before
    /// `now` can decide it (an earlier tick's window ends no later), so this is
    /// [`Schedule::last_tick`] plus one comparison: fast for any duration, ~292-year windows
    /// included, where walking minute by minute would take 150 million steps.
    pub fn window_open(&self, duration: Duration, now: UnixSeconds) -> bool {
        // Whole seconds, as ticks are whole minutes; beyond i64 is "forever".
        let dur = i64::try_from(duration.as_secs()).unwrap_or(i64::MAX);
        if dur == 0 {
            return false;
        }
        self.last_tick(now, dur)
            .is_some_and(|t| i128::from(now) - i128::from(t) < i128::from(dur))
    }

    /// The latest tick `t ≤ now` with `t > now - lookback`, if any. Jumps over months the
    /// schedule excludes, days that do not match, and hours and minutes by bit masks, so the
    /// work is at most one step per month and per day of a matching month in the span. The
    /// span is cut to one 400-year Gregorian cycle (146,097 days, a whole number of weeks):
    /// the calendar, weekdays included, repeats after it, so a schedule that has not fired in
    /// that long never fires (e.g. `0 0 30 2 *`).
    pub fn last_tick(&self, now: UnixSeconds, lookback: i64) -> Option<UnixSeconds> {
        const CYCLE_SECS: i64 = 146_097 * 86_400;
        let now_wide = i128::from(now);
        // Ticks must be strictly after this.
        let earliest = now_wide - i128::from(lookback.clamp(0, CYCLE_SECS));
        let c = Civil::from_unix(now);
        let (mut year, mut month) = (c.year, c.month);
        let mut first = true;
        loop {
            let month_days = days_in_month(year, month);
            let month_end = i128::from(days_from_civil(year, month, month_days) + 1) * 86_400;
            if month_end <= earliest + 1 {
                return None;
            }
            if bit(self.months, month) {
                let last_day = if first { c.day } else { month_days };
                for day in (1..=last_day).rev() {
                    let days = days_from_civil(year, month, day);
                    let day_start = i128::from(days) * 86_400;
                    if day_start + 86_400 <= earliest + 1 {
                        return None;
                    }
                    let weekday = (days + 4).rem_euclid(7) as u32;
                    if !self.day_matches(day, weekday) {
                        continue;
                    }
                    let today = first && day == c.day;
                    let (h, m) = if today { (c.hour, c.minute) } else { (23, 59) };
                    if let Some((h, m)) = self.last_time_of_day(h, m) {
                        let t = day_start + i128::from(h * 3600 + m * 60);
                        return (t > earliest)
                            .then_some(t)
                            .and_then(|t| i64::try_from(t).ok());
                    }
                }
            }
            first = false;
            (year, month) = if month == 1 {
                (year - 1, 12)
            } else {
                (year, month - 1)
            };
        }
    }

    /// The latest (hour, minute) the schedule fires at, no later than `hour:minute`.
    fn last_time_of_day(&self, hour: u32, minute: u32) -> Option<(u32, u32)> {
        if bit(self.hours, hour)
            && let Some(m) = highest(self.minutes, minute)
        {
            return Some((hour, m));
        }
        let h = highest(self.hours, hour.checked_sub(1)?)?;
        Some((h, highest(self.minutes, 59)?))
    }
}

fn bit(set: u64, v: u32) -> bool {
    set & (1u64 << v) != 0
}

/// The highest value in `set` that is at most `limit` (≤ 62).
fn highest(set: u64, limit: u32) -> Option<u32> {
    let masked = set & ((1u64 << (limit + 1)) - 1);
    (masked != 0).then(|| 63 - masked.leading_zeros())
}

fn is_leap(year: i64) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (the inverse of [`Civil::from_unix`],
/// after Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(month);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn field(text: &str, name: &str, min: u32, max: u32, names: &[&str]) -> Result<u64, String> {
    let value = |s: &str| -> Result<u32, String> {
        let lower = s.to_ascii_lowercase();
        if let Some(i) = names.iter().position(|n| *n == lower) {
            // Month names count from 1, weekday names from 0 (Sunday).
            return Ok(if names.len() == 12 {
                i as u32 + 1
            } else {
                i as u32
            });
        }
        let v: u32 = s
            .parse()
            .map_err(|_| format!("{name} value {s:?} is not a number"))?;
        if v < min || v > max {
            return Err(format!("{name} value {v} is outside {min}-{max}"));
        }
        Ok(v)
    };
    let mut set = 0u64;
    for part in text.split(',') {
        let (range, step) = match part.split_once('/') {
            Some((r, s)) => {
                let step: u32 = s
                    .parse()
                    .map_err(|_| format!("{name} step {s:?} is not a number"))?;
                if step == 0 {
                    return Err(format!("{name} step must be positive"));
                }
                (r, step)
            }
            None => (part, 1),
        };
        let (lo, hi) = if range == "*" {
            (min, max)
        } else if let Some((a, b)) = range.split_once('-') {
            (value(a)?, value(b)?)
        } else {
            let v = value(range)?;
            // "5/10" means from 5 to the end in steps of 10.
            (v, if step > 1 { max } else { v })
        };
        if lo > hi {
            return Err(format!("{name} range {range:?} is empty"));
        }
        let mut v = lo;
        while v <= hi {
            set |= 1u64 << v;
            v += step;
        }
    }
    Ok(set)
}

/// A UTC calendar minute.
struct Civil {
    year: i64,
    month: u32,
    day: u32,
    hour: u32,
    minute: u32,
    /// 0 = Sunday.
    weekday: u32,
}

impl Civil {
    fn from_unix(t: UnixSeconds) -> Civil {
        let days = t.div_euclid(86_400);
        let secs = t.rem_euclid(86_400);
        // Days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's algorithm).
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z - era * 146_097;
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
        let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
        Civil {
            year: yoe + era * 400 + i64::from(month <= 2),
            month,
            day,
            hour: (secs / 3600) as u32,
            minute: ((secs % 3600) / 60) as u32,
            // 1970-01-01 was a Thursday.
            weekday: (days + 4).rem_euclid(7) as u32,
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// 2026-11-23 (a Monday) 00:00 UTC.
    const MON: i64 = 1_795_392_000;

    #[test]
    fn calendar_conversion_knows_dates_and_weekdays() {
        let c = Civil::from_unix(MON + 9 * 3600 + 30 * 60);
        assert_eq!(
            (c.month, c.day, c.hour, c.minute, c.weekday),
            (11, 23, 9, 30, 1)
        );
        let leap = Civil::from_unix(951_782_400); // 2000-02-29
        assert_eq!((leap.month, leap.day), (2, 29));
    }

    #[test]
    fn business_hours_window_is_open_only_on_weekdays_during_the_day() {
        let s = Schedule::parse("0 9 * * mon-fri").unwrap();
        let eight_hours = Duration::from_secs(8 * 3600);
        assert!(s.window_open(eight_hours, MON + 9 * 3600));
        assert!(s.window_open(eight_hours, MON + 16 * 3600 + 59 * 60));
        assert!(!s.window_open(eight_hours, MON + 17 * 3600));
        assert!(!s.window_open(eight_hours, MON + 8 * 3600 + 59 * 60));
        // Saturday 10:00.
        assert!(!s.window_open(eight_hours, MON + 5 * 86_400 + 10 * 3600));
    }

    #[test]
    fn macros_steps_and_names_parse() {
        let daily = Schedule::parse("@daily").unwrap();
        assert!(daily.fires_at(MON));
        assert!(!daily.fires_at(MON + 60));
        let every5 = Schedule::parse("*/5 * * * *").unwrap();
        assert!(every5.fires_at(MON + 10 * 60) && !every5.fires_at(MON + 11 * 60));
        let sunday7 = Schedule::parse("0 0 * * 7").unwrap();
        assert!(sunday7.fires_at(MON - 86_400));
        let dec = Schedule::parse("0 0 1 DEC *").unwrap();
        assert!(dec.fires_at(MON + 8 * 86_400)); // 2026-12-01
    }

    #[test]
    fn restricted_day_fields_match_either() {
        // The 1st of the month OR any Monday.
        let s = Schedule::parse("0 0 1 * mon").unwrap();
        assert!(s.fires_at(MON));
        assert!(s.fires_at(MON + 8 * 86_400));
        assert!(!s.fires_at(MON + 86_400));
    }

    #[test]
    fn bad_schedules_name_the_problem() {
        let e = Schedule::parse("0 25 * * *").unwrap_err();
        assert!(e.reason.contains("hour value 25"), "{e}");
        let e = Schedule::parse("* * * *").unwrap_err();
        assert!(e.reason.contains("expected 5 fields"), "{e}");
        assert!(Schedule::parse("@often").is_err());
        assert!(Schedule::parse("*/0 * * * *").is_err());
    }

    /// The definition, one minute at a time: the reference the fast search must agree with.
    fn window_open_by_walk(s: &Schedule, duration: Duration, now: UnixSeconds) -> bool {
        let dur = duration.as_secs() as i64;
        let mut t = now.div_euclid(60) * 60;
        while t > now - dur {
            if s.fires_at(t) {
                return true;
            }
            t -= 60;
        }
        false
    }

    const YEAR: u64 = 365 * 86_400;

    #[test]
    fn a_292_year_window_on_leap_days_answers_at_once_and_correctly() {
        let s = Schedule::parse("0 0 29 2 *").unwrap();
        let centuries = Duration::from_secs(292 * YEAR);
        let started = std::time::Instant::now();
        // 2026-11-23: the last tick was 2024-02-29 00:00, inside a 292-year window...
        assert!(s.window_open(centuries, MON));
        // ...but not inside a one-year one.
        assert!(!s.window_open(Duration::from_secs(YEAR), MON));
        let leap_day = 1_709_164_800; // 2024-02-29 00:00 UTC
        assert_eq!(s.last_tick(MON, i64::MAX), Some(leap_day));
        // A minute before it, the window of 2020-02-29 is the one open.
        assert!(s.window_open(centuries, leap_day - 60));
        assert!(!s.window_open(Duration::from_secs(3 * YEAR), leap_day - 60));
        assert_eq!(
            s.last_tick(leap_day - 60, i64::MAX),
            Some(leap_day - 1461 * 86_400)
        );
        // A date that never comes, and a window as long as a Duration can be.
        let never = Schedule::parse("0 0 30 2 *").unwrap();
        assert!(!never.window_open(Duration::MAX, MON));
        assert!(s.window_open(Duration::MAX, MON));
        assert!(!never.window_open(centuries, i64::MIN));
        assert!(!never.window_open(centuries, i64::MAX));
        assert!(s.window_open(Duration::MAX, i64::MAX));
        let elapsed = started.elapsed();
        assert!(elapsed < std::time::Duration::from_secs(1), "{elapsed:?}");
    }

    #[test]
    fn a_window_ends_exactly_duration_after_its_tick() {
        let s = Schedule::parse("30 9 * * *").unwrap();
        let tick = MON + 9 * 3600 + 30 * 60;
        let d = Duration::from_secs(90);
        assert!(!s.window_open(d, tick - 1));
        assert!(s.window_open(d, tick));
        assert!(s.window_open(d, tick + 89));
        assert!(!s.window_open(d, tick + 90));
        assert!(!s.window_open(Duration::ZERO, tick));
    }

    fn schedules() -> impl Strategy<Value = Schedule> {
        (
            prop::sample::select(vec!["*", "*/15", "0", "59", "5-10", "0,30"]),
            prop::sample::select(vec!["*", "0", "23", "*/6", "9-17"]),
            prop::sample::select(vec!["*", "1", "15", "29", "31", "1-7", "*/10"]),
            prop::sample::select(vec!["*", "2", "1-6", "*/3", "dec"]),
            prop::sample::select(vec!["*", "mon", "0", "mon-fri", "6", "7"]),
        )
            .prop_map(|(mi, h, dom, mo, dow)| {
                Schedule::parse(&format!("{mi} {h} {dom} {mo} {dow}")).unwrap()
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        #[test]
        fn fast_window_agrees_with_the_minute_walk(
            s in schedules(),
            // 1900..2200, where leap centuries and month ends all occur.
            now in -2_208_988_800i64..7_258_118_400,
            secs in 0u64..4 * 86_400,
        ) {
            let d = Duration::from_secs(secs);
            prop_assert_eq!(s.window_open(d, now), window_open_by_walk(&s, d, now));
        }

        #[test]
        fn last_tick_is_the_latest_firing_minute(
            s in schedules(),
            now in -2_208_988_800i64..7_258_118_400,
        ) {
            let lookback = 2 * 86_400;
            let mut walk = None;
            let mut t = now.div_euclid(60) * 60;
            while t > now - lookback {
                if s.fires_at(t) {
                    walk = Some(t);
                    break;
                }
                t -= 60;
            }
            prop_assert_eq!(s.last_tick(now, lookback), walk);
        }
    }

    #[test]
    fn calendar_round_trips_over_four_centuries() {
        for days in (-146_097 * 2..146_097).step_by(13) {
            let c = Civil::from_unix(days * 86_400);
            assert_eq!(days_from_civil(c.year, c.month, c.day), days);
            assert!(c.day <= days_in_month(c.year, c.month));
        }
    }
}
