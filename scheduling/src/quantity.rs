//! Kubernetes resource quantities ("100m", "1.5", "16Gi", "1e3") parsed once, at the edge, into
//! integers: the rest of the core never sees a string.

use thiserror::Error;

#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("invalid quantity {input:?}: {why}")]
pub struct QuantityError {
    pub input: String,
    pub why: &'static str,
}

/// A parsed quantity as an exact decimal: `mantissa * 10^exp10 * 2^exp2`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Decimal {
    mantissa: i128,
    exp10: i32,
    exp2: i32,
}

fn parse(input: &str) -> Result<Decimal, QuantityError> {
    let err = |why| QuantityError {
        input: input.to_string(),
        why,
    };
    let s = input.trim();
    if s.is_empty() {
        return Err(err("empty"));
    }
    let (negative, s) = match s.as_bytes()[0] {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let num_end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (number, suffix) = s.split_at(num_end);
    if number.is_empty() || number == "." {
        return Err(err("no digits"));
    }
    let mut mantissa: i128 = 0;
    let mut exp10: i32 = 0;
    let mut seen_dot = false;
    for c in number.chars() {
        if c == '.' {
            if seen_dot {
                return Err(err("two decimal points"));
            }
            seen_dot = true;
            continue;
        }
        mantissa = mantissa
            .checked_mul(10)
            .and_then(|m| m.checked_add(i128::from(c as u8 - b'0')))
            .ok_or_else(|| err("too many digits"))?;
        if seen_dot {
            exp10 -= 1;
        }
    }
    let (e10, e2) = match suffix {
        "" => (0, 0),
        "n" => (-9, 0),
        "u" => (-6, 0),
        "m" => (-3, 0),
        "k" => (3, 0),
        "M" => (6, 0),
        "G" => (9, 0),
        "T" => (12, 0),
        "P" => (15, 0),
        "E" => (18, 0),
        "Ki" => (0, 10),
        "Mi" => (0, 20),
        "Gi" => (0, 30),
        "Ti" => (0, 40),
        "Pi" => (0, 50),
        "Ei" => (0, 60),
        s if s.starts_with(['e', 'E']) => {
            let e: i32 = s[1..].parse().map_err(|_| err("bad exponent"))?;
            if e.abs() > 30 {
                return Err(err("exponent out of range"));
            }
            (e, 0)
        }
        _ => return Err(err("unknown suffix")),
    };
    Ok(Decimal {
        mantissa: if negative { -mantissa } else { mantissa },
        exp10: exp10 + e10,
        exp2: e2,
    })
}

impl Decimal {
    /// `ceil(self * scale)`, saturating at i64's range: Kubernetes rounds quantities up.
    fn scaled_ceil(self, scale: i128) -> i64 {
        let mut num = self.mantissa.saturating_mul(scale);
        let mut den: i128 = 1;
        let mut e10 = self.exp10;
        while e10 > 0 {
            num = num.saturating_mul(10);
            e10 -= 1;
        }
        while e10 < 0 {
            den = den.saturating_mul(10);
            e10 += 1;
        }
        num = num.saturating_mul(1i128 << self.exp2.min(62));
        let q = num.div_euclid(den) + i128::from(num.rem_euclid(den) != 0);
        q.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
    }
}

/// Quantity in thousandths of a unit: how CPU is kept (millicores).
pub fn parse_milli(input: &str) -> Result<i64, QuantityError> {
    Ok(parse(input)?.scaled_ceil(1000))
}

/// Quantity in whole units, rounded up: memory and storage in bytes, counts of pods or devices.
pub fn parse_units(input: &str) -> Result<i64, QuantityError> {
    Ok(parse(input)?.scaled_ceil(1))
}

/// Formats millicores the way Kubernetes prints them ("250m", "4").
pub fn format_milli(milli: i64) -> String {
    if milli % 1000 == 0 {
        format!("{}", milli / 1000)
    } else {
        format!("{milli}m")
    }
}

/// Millicores as cores for messages ("4", "1.5", "191.45").
pub fn format_cores(milli: i64) -> String {
    let s = format!("{}.{:03}", milli / 1000, (milli % 1000).abs());
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Formats bytes with the largest exact binary suffix ("16Gi", "1536Mi", "100").
pub fn format_bytes(bytes: i64) -> String {
    for (suffix, shift) in [("Ti", 40), ("Gi", 30), ("Mi", 20), ("Ki", 10)] {
        let unit = 1i64 << shift;
        if bytes != 0 && bytes % unit == 0 {
            return format!("{}{suffix}", bytes / unit);
        }
    }
    bytes.to_string()
}

/// Human-readable bytes for messages ("96 GiB", "1.5 GiB", "512 MiB").
pub fn human_bytes(bytes: i64) -> String {
    const GI: f64 = (1u64 << 30) as f64;
    const MI: f64 = (1u64 << 20) as f64;
    let b = bytes as f64;
    if b >= GI {
        let v = b / GI;
        if (v - v.round()).abs() < 0.05 {
            format!("{} GiB", v.round())
        } else {
            format!("{v:.1} GiB")
        }
    } else {
        format!("{} MiB", (b / MI).ceil())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_cpu_forms() {
        assert_eq!(parse_milli("100m").unwrap(), 100);
        assert_eq!(parse_milli("1").unwrap(), 1000);
        assert_eq!(parse_milli("1.5").unwrap(), 1500);
        assert_eq!(parse_milli("0.0001").unwrap(), 1, "rounds up");
        assert_eq!(parse_milli("2e3").unwrap(), 2_000_000);
    }

    #[test]
    fn parses_memory_forms() {
        assert_eq!(parse_units("16Gi").unwrap(), 16 << 30);
        assert_eq!(parse_units("100Mi").unwrap(), 100 << 20);
        assert_eq!(parse_units("1.5Gi").unwrap(), 3 << 29);
        assert_eq!(parse_units("1G").unwrap(), 1_000_000_000);
        assert_eq!(parse_units("128974848").unwrap(), 128974848);
        assert_eq!(parse_units("129e6").unwrap(), 129_000_000);
    }

    #[test]
    fn rejects_garbage_with_the_input_named() {
        let e = parse_units("12Qi").unwrap_err();
        assert!(e.to_string().contains("12Qi"), "{e}");
        assert!(parse_units("").is_err());
        assert!(parse_units("Gi").is_err());
        assert!(parse_units("1.2.3").is_err());
    }

    #[test]
    fn formats_round_trip() {
        assert_eq!(format_milli(250), "250m");
        assert_eq!(format_milli(4000), "4");
        assert_eq!(format_cores(191_450), "191.45");
        assert_eq!(format_cores(4000), "4");
        assert_eq!(format_cores(250), "0.25");
        assert_eq!(format_bytes(16 << 30), "16Gi");
        assert_eq!(format_bytes(1536 << 20), "1536Mi");
        assert_eq!(human_bytes(96 << 30), "96 GiB");
    }
}
