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
        let bit = |set: u64, v: u32| set & (1u64 << v) != 0;
        if !bit(self.minutes, c.minute) || !bit(self.hours, c.hour) || !bit(self.months, c.month) {
            return false;
        }
        let dom = bit(self.days, c.day);
        let dow = bit(self.weekdays, c.weekday);
        match (self.any_day, self.any_weekday) {
            (true, true) => true,
            (true, false) => dow,
            (false, true) => dom,
            (false, false) => dom || dow,
        }
    }

    /// Whether a window opened by a tick of this schedule and lasting `duration` contains
    /// `now`: some tick `t` with `t ≤ now < t + duration`.
    pub fn window_open(&self, duration: Duration, now: UnixSeconds) -> bool {
        let minute = now.div_euclid(60) * 60;
        let dur = duration.as_secs() as i64;
        // Walk back one minute at a time over the window's length; a year is 525,600 steps
        // of a few integer operations, which is fine for a once-per-decision check.
        let mut t = minute;
        while t > now - dur {
            if self.fires_at(t) {
                return true;
            }
            t -= 60;
        }
        false
    }
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
}
