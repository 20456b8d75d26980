//! Kubernetes resource quantities ("100m", "1.5", "16Gi", "1e3") parsed once, at the edge, into
//! integers: the rest of the core never sees a string.
//!
//! Quantities come from users and from unauthenticated callers (the extender), so parsing is
//! bounded: it runs in time linear in the input, never in an exponent's value, and refuses
//! any quantity whose magnitude exceeds [`MAX_QUANTITY`] in the unit it is parsed to. Sums of
//! in-range quantities then stay far from `i64` overflow, and [`crate::Resources`] saturates
//! beyond that.

use thiserror::Error;

/// The largest magnitude a quantity may have in the unit it is parsed to (millicores for CPU,
/// bytes, whole devices): 2^62, about 4.6 × 10^18. That is 4.6 × 10^15 cores or 4 EiB, far
/// past any machine, and half of `i64`'s range so that adding two never overflows.
pub const MAX_QUANTITY: i64 = 1 << 62;

/// Significant digits a quantity may spell (leading and trailing zeros aside). An `i64` has
/// 19; 20 keeps the exact arithmetic below inside `u128`.
pub const MAX_SIGNIFICANT_DIGITS: usize = 20;

/// Largest `|n|` of a decimal exponent suffix (`1e3`, `5E-6`). Anything past it is either
/// zero after rounding or beyond [`MAX_QUANTITY`].
pub const MAX_EXPONENT: u32 = 30;

/// How much of an invalid input an error repeats: enough to recognise it, never a megabyte.
const QUOTED_INPUT_CHARS: usize = 64;

#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("invalid quantity {input:?}: {why}")]
pub struct QuantityError {
    /// The input, cut to its first 64 characters (with "…" when cut).
    pub input: String,
    pub why: &'static str,
}

impl QuantityError {
    fn new(input: &str, why: &'static str) -> Self {
        let mut chars = input.char_indices();
        let input = match chars.nth(QUOTED_INPUT_CHARS) {
            Some((cut, _)) => format!("{}…", &input[..cut]),
            None => input.to_string(),
        };
        QuantityError { input, why }
    }
}

const OUT_OF_RANGE: &str =
    "out of range: at most 2^62 (about 4.6e18) millicores, bytes or units are supported";

/// A parsed quantity as an exact decimal: `±digits * 10^exp10 * 2^exp2`, with `digits` below
/// 10^20 and no trailing zeros.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Decimal {
    negative: bool,
    digits: u128,
    exp10: i64,
    exp2: u32,
}

fn parse(input: &str) -> Result<Decimal, QuantityError> {
    let err = |why| QuantityError::new(input, why);
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
    let (int_part, frac_part) = match number.split_once('.') {
        Some((_, f)) if f.contains('.') => return Err(err("two decimal points")),
        Some((i, f)) => (i, f),
        None => (number, ""),
    };
    if int_part.is_empty() && frac_part.is_empty() {
        return Err(err("no digits"));
    }
    // The significant digits: zeros that only place the point are counted into the exponent
    // instead, so "0.000001" and "1000000" are one digit each.
    let frac_kept = frac_part.trim_end_matches('0');
    let int_kept = int_part.trim_start_matches('0');
    let (significant, mut exp10) = if frac_kept.is_empty() {
        let trimmed = int_kept.trim_end_matches('0');
        ((trimmed, ""), (int_kept.len() - trimmed.len()) as i64)
    } else {
        ((int_kept, frac_kept), -(frac_kept.len() as i64))
    };
    // Leading zeros of the fraction when the integer part is zero ("0.005").
    let (int_sig, frac_sig) = significant;
    let frac_sig = if int_sig.is_empty() {
        frac_sig.trim_start_matches('0')
    } else {
        frac_sig
    };
    if int_sig.len() + frac_sig.len() > MAX_SIGNIFICANT_DIGITS {
        return Err(err("too many significant digits (at most 20)"));
    }
    let mut digits: u128 = 0;
    for b in int_sig.bytes().chain(frac_sig.bytes()) {
        // At most 20 digits: below 10^20 < 2^67.
        digits = digits * 10 + u128::from(b - b'0');
    }
    let (e10, exp2) = match suffix {
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
        s if s.starts_with(['e', 'E']) => (exponent(&s[1..]).map_err(err)?, 0),
        _ => return Err(err("unknown suffix")),
    };
    exp10 += e10;
    Ok(Decimal {
        negative,
        digits,
        exp10,
        exp2,
    })
}

/// A decimal exponent (`3`, `-6`, `+02`), read without ever building a number larger than the
/// allowed range: its digits are checked by count first.
fn exponent(s: &str) -> Result<i64, &'static str> {
    let (negative, digits) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err("bad exponent");
    }
    let digits = digits.trim_start_matches('0');
    if digits.len() > 2 {
        return Err("exponent out of range (at most 30 either way)");
    }
    let e = digits
        .bytes()
        .fold(0u32, |e, b| e * 10 + u32::from(b - b'0'));
    if e > MAX_EXPONENT {
        return Err("exponent out of range (at most 30 either way)");
    }
    Ok(if negative {
        -i64::from(e)
    } else {
        i64::from(e)
    })
}

impl Decimal {
    /// `ceil(self * 10^scale10)` (Kubernetes rounds quantities up), or `None` past
    /// [`MAX_QUANTITY`]. Constant time: no loop runs over an exponent.
    fn scaled_ceil(self, scale10: i64) -> Option<i64> {
        if self.digits == 0 {
            return Some(0);
        }
        let x = self.exp10 + scale10;
        let ndigits = i64::from(self.digits.ilog10()) + 1;
        // The value is at least 10^(ndigits - 1 + x); 10^19 > 2^62 already.
        if ndigits - 1 + x > 18 {
            return None;
        }
        // digits < 2^67 and exp2 <= 60: fits u128.
        let num = self.digits << self.exp2;
        let magnitude = if x >= 0 {
            num.checked_mul(10u128.pow(x as u32))?
        } else {
            let k = x.unsigned_abs();
            if k > 38 {
                // num < 2^127 < 10^39: the magnitude is below one unit.
                u128::from(!self.negative)
            } else {
                let den = 10u128.pow(k as u32);
                let (q, r) = (num / den, num % den);
                // ceil: up for positive values, toward zero for negative ones.
                q + u128::from(r != 0 && !self.negative)
            }
        };
        let magnitude = i64::try_from(magnitude)
            .ok()
            .filter(|m| *m <= MAX_QUANTITY)?;
        Some(if self.negative { -magnitude } else { magnitude })
    }
}

fn parse_scaled(input: &str, scale10: i64) -> Result<i64, QuantityError> {
    parse(input)?
        .scaled_ceil(scale10)
        .ok_or_else(|| QuantityError::new(input, OUT_OF_RANGE))
}

/// Quantity in thousandths of a unit: how CPU is kept (millicores).
pub fn parse_milli(input: &str) -> Result<i64, QuantityError> {
    parse_scaled(input, 3)
}

/// Quantity in whole units, rounded up: memory and storage in bytes, counts of pods or devices.
pub fn parse_units(input: &str) -> Result<i64, QuantityError> {
    parse_scaled(input, 0)
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
    fn quantity_with_a_minimum_i32_exponent_is_refused_at_once() {
        let start = cpu_time::ThreadTime::now();
        for input in [
            "1e-2147483648",
            "1e2147483647",
            "1E-99999999999999999999",
            "5e+31",
        ] {
            let e = parse_milli(input).unwrap_err();
            assert!(e.why.contains("exponent out of range"), "{input}: {e}");
        }
        assert!(start.elapsed() < std::time::Duration::from_secs(1));
    }

    #[test]
    fn quantity_past_two_to_the_62_is_refused_naming_the_input() {
        let e = parse_milli("9223372036854775807").unwrap_err();
        assert_eq!(e.input, "9223372036854775807");
        assert!(e.why.contains("2^62"), "{e}");
        assert!(parse_units("9223372036854775807").is_err());
        assert!(parse_units("5Ei").is_err(), "5 × 2^60 > 2^62");
        assert!(
            parse_units("-5Ei").is_err(),
            "the bound holds for negatives too"
        );
        assert!(
            parse_milli("4611686018427387904").is_err(),
            "2^62 cores in millicores"
        );
        assert_eq!(parse_units("4611686018427387904").unwrap(), MAX_QUANTITY);
        assert_eq!(parse_units("4Ei").unwrap(), MAX_QUANTITY);
        assert!(parse_units("1e19").is_err());
        assert_eq!(parse_units("1e18").unwrap(), 1_000_000_000_000_000_000);
    }

    #[test]
    fn zeros_that_only_place_the_point_are_not_significant_digits() {
        assert_eq!(parse_units("0000000000000000000000000000001").unwrap(), 1);
        assert_eq!(
            parse_milli("0.000000000000000000000000000000000000000001").unwrap(),
            1,
            "a tiny positive request still rounds up to 1m"
        );
        assert_eq!(
            parse_units("1.000000000000000000000000000000000").unwrap(),
            1
        );
        assert_eq!(parse_units("10.05k").unwrap(), 10_050);
        assert_eq!(parse_units("0.005M").unwrap(), 5_000);
        assert_eq!(parse_units("-0.5").unwrap(), 0, "ceil of -0.5");
        assert_eq!(parse_units("-1.5").unwrap(), -1);
        assert_eq!(parse_units("0e30").unwrap(), 0);
        let e = parse_units("1.0000000000000000000001").unwrap_err();
        assert!(e.why.contains("significant digits"), "{e}");
    }

    #[test]
    fn an_error_quotes_a_long_input_only_in_part() {
        let long = "9".repeat(100_000);
        let e = parse_units(&long).unwrap_err();
        assert!(e.to_string().len() < 300, "{}", e.to_string().len());
        assert!(e.input.ends_with('…'));
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
