//! Quantity parsing under arbitrary and near-valid input: it never panics, it answers in time
//! linear in the input whatever exponent is spelled, every accepted value is inside
//! [`MAX_QUANTITY`], and formatting then parsing gives back the value.

use cpu_time::ThreadTime as Instant;
use std::time::Duration;

use adze_scheduling::quantity::{
    MAX_QUANTITY, format_bytes, format_milli, parse_milli, parse_units,
};
use proptest::prelude::*;

/// Strings shaped like quantities: a sign, digits with at most a couple of points, and a
/// suffix that is valid, unknown or an exponent of any size (i32::MIN included).
fn near_valid() -> impl Strategy<Value = String> {
    let sign = prop::sample::select(vec!["", "-", "+", " "]);
    let digits = "[0-9]{0,30}(\\.[0-9]{0,30}){0,2}";
    let suffix = prop_oneof![
        prop::sample::select(vec![
            "", "m", "u", "n", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei",
            "Qi", "e", "E+", "e-", "i",
        ])
        .prop_map(str::to_string),
        any::<i32>().prop_map(|e| format!("e{e}")),
        any::<i64>().prop_map(|e| format!("E{e:+}")),
        "e-?0{0,40}[0-9]{0,25}",
    ];
    (sign, digits, suffix).prop_map(|(s, d, x)| format!("{s}{d}{x}"))
}

fn check(input: &str) {
    let start = Instant::now();
    for parsed in [parse_milli(input), parse_units(input)] {
        match parsed {
            Ok(v) => assert!(v.abs() <= MAX_QUANTITY, "{input:?} -> {v}"),
            Err(e) => assert!(!e.why.is_empty()),
        }
    }
    // Generous: a parse is microseconds; a loop over an exponent took seconds.
    assert!(
        start.elapsed() < Duration::from_millis(200),
        "{input:?} took {:?}",
        start.elapsed()
    );
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 2000,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn arbitrary_strings_never_panic(input in any::<String>()) {
        check(&input);
    }

    #[test]
    fn near_valid_strings_never_panic_and_stay_in_range(input in near_valid()) {
        check(&input);
    }

    #[test]
    fn millicores_round_trip(v in -MAX_QUANTITY..=MAX_QUANTITY) {
        prop_assert_eq!(parse_milli(&format_milli(v)).unwrap(), v);
    }

    #[test]
    fn suffixes_scale_exactly_or_are_refused(
        n in -10_000_000_000i64..10_000_000_000,
        (suffix, factor) in prop::sample::select(vec![
            ("", 1i128), ("k", 1_000), ("M", 1_000_000), ("G", 1_000_000_000),
            ("T", 1_000_000_000_000), ("E", 1_000_000_000_000_000_000),
            ("Ki", 1 << 10), ("Gi", 1 << 30), ("Pi", 1 << 50), ("Ei", 1 << 60),
        ]),
    ) {
        let want = i128::from(n) * factor;
        match parse_units(&format!("{n}{suffix}")) {
            Ok(v) => prop_assert_eq!(i128::from(v), want),
            Err(_) => prop_assert!(want.abs() > i128::from(MAX_QUANTITY)),
        }
    }

    #[test]
    fn bytes_round_trip(v in -MAX_QUANTITY..=MAX_QUANTITY, shift in 0u32..40) {
        // Values with every binary suffix: multiples of 2^shift.
        let v = (v >> shift) << shift;
        prop_assert_eq!(parse_units(&format_bytes(v)).unwrap(), v);
    }
}

#[test]
fn huge_exponents_are_refused_fast() {
    let start = Instant::now();
    for input in [
        "1e-2147483648",
        "1e2147483647",
        "1e-9223372036854775808",
        &format!("1e{}", "9".repeat(100_000)),
        &format!("0.{}1", "0".repeat(100_000)),
    ] {
        let _ = parse_milli(input);
        assert!(
            parse_units(input).is_err() || input.starts_with("0."),
            "{}",
            &input[..20]
        );
    }
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "{:?}",
        start.elapsed()
    );
}
