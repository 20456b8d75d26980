use super::total_order_bits;

/// The pod order's integer key for a share must order as `f64::total_cmp` does, or the
/// placement order (and so the plan) would change.
#[test]
fn total_order_bits_orders_as_total_cmp() {
    let values = [
        f64::NEG_INFINITY,
        -1.5,
        -1e-300,
        -0.0,
        0.0,
        1e-300,
        0.25,
        0.5,
        1.0,
        f64::MAX,
        f64::INFINITY,
        f64::NAN,
    ];
    for a in values {
        for b in values {
            assert_eq!(
                total_order_bits(a).cmp(&total_order_bits(b)),
                a.total_cmp(&b),
                "{a} vs {b}"
            );
        }
    }
}
