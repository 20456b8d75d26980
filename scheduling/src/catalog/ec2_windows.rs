//! Windows Server (License Included) on-demand prices for the embedded catalog's types, and the
//! Windows facts placement derives from them.
//!
//! **Source** (written November 2026). [`ON_DEMAND_USD`] holds us-east-1 on-demand prices for
//! "Windows" (License Included, shared tenancy, no SQL Server), USD per hour. AWS composes a
//! published Windows price as the Linux price plus the Windows Server licence it bills per
//! vCPU-hour, [`LICENCE_USD_PER_VCPU_HOUR`] ($0.046, the EC2 User Guide's "Optimize CPUs for
//! License-Included instances" table, usage operation `RunInstances:0002`); every row is the
//! Linux price of [`super::ec2_data`] plus that licence, and a test holds every one of them to
//! it, so a mistyped row fails.
//! Like the Linux prices, these are list prices that drift; refresh the table, not single rows.
//!
//! **Not offered for Windows** (no row, so a Windows node class never launches them): Graviton
//! (arm64) types, for which EKS publishes no Windows image; `inf2` and `trn1`, whose Neuron
//! devices have Linux drivers only; bare-metal sizes; and the burstable t3/t3a families, whose
//! Windows licence is priced per size below the per-vCPU rate, by figures this table could not
//! check against a published copy. A Windows pool that allows only those types plans nothing
//! and says the type has no Windows price.
//!
//! **Other regions, the live catalog and spot.** The licence is billed per vCPU at the same
//! rate in every region, so a Windows offering is priced as the type's Linux offering there
//! plus [`licence_usd`] (the published Windows price less the Linux one, in us-east-1). A spot
//! offering gets the licence at its full rate too: the licence is a fixed fee, not part of the
//! spare-capacity market, so only the Linux part follows the catalog's spot rule. The type
//! name is the key, so this module stands apart from the per-region Linux prices in
//! [`super::ec2_data`].

use super::ec2_data;

/// The Windows Server licence AWS bills per vCPU-hour on License Included instances.
pub const LICENCE_USD_PER_VCPU_HOUR: f64 = 0.046;

/// Published us-east-1 Windows (License Included) on-demand prices, USD per hour.
#[rustfmt::skip]
pub const ON_DEMAND_USD: &[(&str, f64)] = &[
    // ---- c5 ----
    ("c5.large", 0.177),
    ("c5.xlarge", 0.354),
    ("c5.2xlarge", 0.708),
    ("c5.4xlarge", 1.416),
    ("c5.9xlarge", 3.186),
    ("c5.12xlarge", 4.248),
    ("c5.18xlarge", 6.372),
    ("c5.24xlarge", 8.496),
    // ---- c5a ----
    ("c5a.large", 0.169),
    ("c5a.xlarge", 0.338),
    ("c5a.2xlarge", 0.676),
    ("c5a.4xlarge", 1.352),
    ("c5a.8xlarge", 2.704),
    ("c5a.12xlarge", 4.056),
    ("c5a.16xlarge", 5.408),
    ("c5a.24xlarge", 8.112),
    // ---- c6i ----
    ("c6i.large", 0.177),
    ("c6i.xlarge", 0.354),
    ("c6i.2xlarge", 0.708),
    ("c6i.4xlarge", 1.416),
    ("c6i.8xlarge", 2.832),
    ("c6i.12xlarge", 4.248),
    ("c6i.16xlarge", 5.664),
    ("c6i.24xlarge", 8.496),
    ("c6i.32xlarge", 11.328),
    // ---- c6a ----
    ("c6a.large", 0.1685),
    ("c6a.xlarge", 0.337),
    ("c6a.2xlarge", 0.674),
    ("c6a.4xlarge", 1.348),
    ("c6a.8xlarge", 2.696),
    ("c6a.12xlarge", 4.044),
    ("c6a.16xlarge", 5.392),
    ("c6a.24xlarge", 8.088),
    ("c6a.32xlarge", 10.784),
    ("c6a.48xlarge", 16.176),
    // ---- c7i ----
    ("c7i.large", 0.18125),
    ("c7i.xlarge", 0.3625),
    ("c7i.2xlarge", 0.725),
    ("c7i.4xlarge", 1.45),
    ("c7i.8xlarge", 2.9),
    ("c7i.12xlarge", 4.35),
    ("c7i.16xlarge", 5.8),
    ("c7i.24xlarge", 8.7),
    ("c7i.48xlarge", 17.4),
    // ---- m5 ----
    ("m5.large", 0.188),
    ("m5.xlarge", 0.376),
    ("m5.2xlarge", 0.752),
    ("m5.4xlarge", 1.504),
    ("m5.8xlarge", 3.008),
    ("m5.12xlarge", 4.512),
    ("m5.16xlarge", 6.016),
    ("m5.24xlarge", 9.024),
    // ---- m5a ----
    ("m5a.large", 0.178),
    ("m5a.xlarge", 0.356),
    ("m5a.2xlarge", 0.712),
    ("m5a.4xlarge", 1.424),
    ("m5a.8xlarge", 2.848),
    ("m5a.12xlarge", 4.272),
    ("m5a.16xlarge", 5.696),
    ("m5a.24xlarge", 8.544),
    // ---- m6i ----
    ("m6i.large", 0.188),
    ("m6i.xlarge", 0.376),
    ("m6i.2xlarge", 0.752),
    ("m6i.4xlarge", 1.504),
    ("m6i.8xlarge", 3.008),
    ("m6i.12xlarge", 4.512),
    ("m6i.16xlarge", 6.016),
    ("m6i.24xlarge", 9.024),
    ("m6i.32xlarge", 12.032),
    // ---- m6a ----
    ("m6a.large", 0.1784),
    ("m6a.xlarge", 0.3568),
    ("m6a.2xlarge", 0.7136),
    ("m6a.4xlarge", 1.4272),
    ("m6a.8xlarge", 2.8544),
    ("m6a.12xlarge", 4.2816),
    ("m6a.16xlarge", 5.7088),
    ("m6a.24xlarge", 8.5632),
    ("m6a.32xlarge", 11.4176),
    ("m6a.48xlarge", 17.1264),
    // ---- m7i ----
    ("m7i.large", 0.1928),
    ("m7i.xlarge", 0.3856),
    ("m7i.2xlarge", 0.7712),
    ("m7i.4xlarge", 1.5424),
    ("m7i.8xlarge", 3.0848),
    ("m7i.12xlarge", 4.6272),
    ("m7i.16xlarge", 6.1696),
    ("m7i.24xlarge", 9.2544),
    ("m7i.48xlarge", 18.5088),
    // ---- r5 ----
    ("r5.large", 0.218),
    ("r5.xlarge", 0.436),
    ("r5.2xlarge", 0.872),
    ("r5.4xlarge", 1.744),
    ("r5.8xlarge", 3.488),
    ("r5.12xlarge", 5.232),
    ("r5.16xlarge", 6.976),
    ("r5.24xlarge", 10.464),
    // ---- r5a ----
    ("r5a.large", 0.205),
    ("r5a.xlarge", 0.41),
    ("r5a.2xlarge", 0.82),
    ("r5a.4xlarge", 1.64),
    ("r5a.8xlarge", 3.28),
    ("r5a.12xlarge", 4.92),
    ("r5a.16xlarge", 6.56),
    ("r5a.24xlarge", 9.84),
    // ---- r6i ----
    ("r6i.large", 0.218),
    ("r6i.xlarge", 0.436),
    ("r6i.2xlarge", 0.872),
    ("r6i.4xlarge", 1.744),
    ("r6i.8xlarge", 3.488),
    ("r6i.12xlarge", 5.232),
    ("r6i.16xlarge", 6.976),
    ("r6i.24xlarge", 10.464),
    ("r6i.32xlarge", 13.952),
    // ---- r6a ----
    ("r6a.large", 0.2054),
    ("r6a.xlarge", 0.4108),
    ("r6a.2xlarge", 0.8216),
    ("r6a.4xlarge", 1.6432),
    ("r6a.8xlarge", 3.2864),
    ("r6a.12xlarge", 4.9296),
    ("r6a.16xlarge", 6.5728),
    ("r6a.24xlarge", 9.8592),
    ("r6a.32xlarge", 13.1456),
    ("r6a.48xlarge", 19.7184),
    // ---- r7i ----
    ("r7i.large", 0.2243),
    ("r7i.xlarge", 0.4486),
    ("r7i.2xlarge", 0.8972),
    ("r7i.4xlarge", 1.7944),
    ("r7i.8xlarge", 3.5888),
    ("r7i.12xlarge", 5.3832),
    ("r7i.16xlarge", 7.1776),
    ("r7i.24xlarge", 10.7664),
    ("r7i.48xlarge", 21.5328),
    // ---- g4dn ----
    ("g4dn.xlarge", 0.71),
    ("g4dn.2xlarge", 1.12),
    ("g4dn.4xlarge", 1.94),
    ("g4dn.8xlarge", 3.648),
    ("g4dn.12xlarge", 6.12),
    ("g4dn.16xlarge", 7.296),
    // ---- g5 ----
    ("g5.xlarge", 1.19),
    ("g5.2xlarge", 1.58),
    ("g5.4xlarge", 2.36),
    ("g5.8xlarge", 3.92),
    ("g5.12xlarge", 7.88),
    ("g5.16xlarge", 7.04),
    ("g5.24xlarge", 12.56),
    ("g5.48xlarge", 25.12),
    // ---- g6 ----
    ("g6.xlarge", 0.9888),
    ("g6.2xlarge", 1.3456),
    ("g6.4xlarge", 2.0592),
    ("g6.8xlarge", 3.4864),
    ("g6.12xlarge", 6.8096),
    ("g6.16xlarge", 6.3408),
    ("g6.24xlarge", 11.0912),
    ("g6.48xlarge", 22.1824),
    // ---- p3 ----
    ("p3.2xlarge", 3.428),
    ("p3.8xlarge", 13.712),
    ("p3.16xlarge", 27.424),

];

/// The published us-east-1 Windows on-demand price of `name`; None when it is not offered
/// for Windows here.
pub fn on_demand_usd(name: &str) -> Option<f64> {
    static BY_NAME: std::sync::OnceLock<std::collections::HashMap<&'static str, f64>> =
        std::sync::OnceLock::new();
    BY_NAME
        .get_or_init(|| ON_DEMAND_USD.iter().copied().collect())
        .get(name)
        .copied()
}

/// What a Windows node of `name` costs per hour on top of a Linux one: the published Windows
/// price less the Linux price in us-east-1. None when either is unknown, so the type is not
/// offered for Windows.
pub fn licence_usd(name: &str) -> Option<f64> {
    let windows = on_demand_usd(name)?;
    let linux = ec2_data::find(name)?.on_demand_usd;
    let licence = round_usd(windows - linux);
    (licence >= 0.0).then_some(licence)
}

/// IPv4 addresses of the primary network interface of `name` (Windows pods take theirs from
/// it alone); None for a type the embedded catalog does not know.
pub fn primary_eni_ipv4(name: &str) -> Option<u32> {
    ec2_data::find(name).map(|t| t.ipv4_per_eni)
}

/// A dollar amount rounded to a millionth, so a Linux price plus a licence is the published
/// Windows price exactly, not one floating-point step beside it.
pub fn round_usd(usd: f64) -> f64 {
    (usd * 1_000_000.0).round() / 1_000_000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn linux(name: &str) -> &'static ec2_data::Ec2Type {
        ec2_data::TYPES.iter().find(|t| t.name == name).unwrap()
    }

    #[test]
    fn published_windows_prices_of_familiar_types() {
        assert_eq!(on_demand_usd("m5.large"), Some(0.188));
        assert_eq!(on_demand_usd("c5.large"), Some(0.177));
        assert_eq!(on_demand_usd("r5.large"), Some(0.218));
        assert_eq!(on_demand_usd("g4dn.xlarge"), Some(0.71));
        assert_eq!(on_demand_usd("p3.2xlarge"), Some(3.428));
    }

    #[test]
    fn every_row_is_a_catalog_type_that_windows_can_run_and_costs_more_than_linux() {
        let mut seen = std::collections::BTreeSet::new();
        for (name, usd) in ON_DEMAND_USD {
            assert!(seen.insert(*name), "{name} listed twice");
            let t = linux(name);
            assert_eq!(t.arch, "amd64", "{name}: no Windows image for {}", t.arch);
            assert!(*usd > t.on_demand_usd, "{name}: {usd} is not above Linux");
        }
    }

    #[test]
    fn every_row_is_linux_plus_the_per_vcpu_licence() {
        for (name, usd) in ON_DEMAND_USD {
            let t = linux(name);
            let expected =
                round_usd(t.on_demand_usd + LICENCE_USD_PER_VCPU_HOUR * f64::from(t.vcpu));
            assert_eq!(*usd, expected, "{name}");
            assert_eq!(
                licence_usd(name),
                Some(round_usd(LICENCE_USD_PER_VCPU_HOUR * f64::from(t.vcpu))),
                "{name}"
            );
        }
    }

    #[test]
    fn graviton_neuron_metal_and_burstable_types_are_not_offered_for_windows() {
        for name in [
            "m6g.large",
            "c7g.xlarge",
            "t4g.medium",
            "inf2.xlarge",
            "trn1.2xlarge",
            "m5.metal",
            "t3.medium",
            "t3a.large",
        ] {
            assert_eq!(on_demand_usd(name), None, "{name}");
            assert_eq!(licence_usd(name), None, "{name}");
        }
        assert_eq!(licence_usd("no.such"), None);
    }
}
