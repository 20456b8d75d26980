//! ARC zonal shift (Karpenter v1.14's AWS provider, `--enable-zonal-shift`): while a shift
//! moves a cluster away from a zone, nothing new is launched there and the nodes there are
//! not voluntarily disrupted. This module is the rule alone: the shifts the cloud reported
//! and the time in, the zones to stay away from out. Reading the shifts is the cloud
//! provider's job; planning and disruption apply the answer.
//!
//! A shift counts while it is *applied* and its expiry is still ahead. ARC reports every kind
//! of shift on the cluster alike (one started by hand, an autoshift, a practice run), and all
//! of them count: a practice run exists to show the cluster copes without the zone.

use std::collections::BTreeSet;

use crate::disruption::UnixSeconds;

/// One zonal shift on the cluster, as the cloud reported it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZonalShift {
    /// The zone traffic is moved away from. ARC names it by zone ID (`use1-az1`); a cloud
    /// without zone IDs may name it by zone name. Both are matched.
    pub away_from: String,
    /// When the shift ends unless extended.
    pub expires_at: UnixSeconds,
    /// ARC's `appliedStatus` is `APPLIED`. A shift that is `NOT_APPLIED` (another shift on
    /// the resource takes precedence, or it is not in effect yet) does not count.
    pub applied: bool,
    /// ARC's `shiftType` (`ZONAL_SHIFT`, `ZONAL_AUTOSHIFT`, `PRACTICE_RUN`,
    /// `FIS_EXPERIMENT`), for logs and events only.
    pub kind: String,
}

impl ZonalShift {
    /// Whether this shift holds at `now`.
    pub fn active(&self, now: UnixSeconds) -> bool {
        self.applied && now < self.expires_at
    }
}

/// The zones (IDs or names, as reported) that active shifts move away from at `now`.
pub fn zones_away(shifts: &[ZonalShift], now: UnixSeconds) -> BTreeSet<String> {
    shifts
        .iter()
        .filter(|s| s.active(now))
        .map(|s| s.away_from.clone())
        .collect()
}

/// Whether a zone named `zone` with ID `zone_id` (if known) is one of `away`.
pub fn is_away(away: &BTreeSet<String>, zone: &str, zone_id: Option<&str>) -> bool {
    if away.is_empty() {
        return false;
    }
    (!zone.is_empty() && away.contains(zone)) || zone_id.is_some_and(|id| away.contains(id))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shift(away: &str, expires_at: UnixSeconds, applied: bool, kind: &str) -> ZonalShift {
        ZonalShift {
            away_from: away.into(),
            expires_at,
            applied,
            kind: kind.into(),
        }
    }

    #[test]
    fn an_applied_unexpired_shift_takes_its_zone_away() {
        let s = [shift("use1-az1", 1_000, true, "ZONAL_SHIFT")];
        assert_eq!(
            zones_away(&s, 999),
            BTreeSet::from(["use1-az1".to_string()])
        );
    }

    #[test]
    fn a_shift_ends_at_its_expiry() {
        let s = [shift("use1-az1", 1_000, true, "ZONAL_SHIFT")];
        assert!(zones_away(&s, 1_000).is_empty());
        assert!(zones_away(&s, 5_000).is_empty());
    }

    #[test]
    fn a_shift_not_applied_does_not_count() {
        let s = [shift("use1-az1", 1_000, false, "ZONAL_SHIFT")];
        assert!(zones_away(&s, 10).is_empty());
    }

    #[test]
    fn autoshifts_and_practice_runs_count_like_manual_shifts() {
        let s = [
            shift("use1-az1", 1_000, true, "ZONAL_AUTOSHIFT"),
            shift("use1-az2", 1_000, true, "PRACTICE_RUN"),
            shift("use1-az3", 1_000, true, "FIS_EXPERIMENT"),
        ];
        assert_eq!(zones_away(&s, 0).len(), 3);
    }

    #[test]
    fn zones_match_by_id_or_by_name() {
        let away = BTreeSet::from(["use1-az1".to_string(), "zone-b".to_string()]);
        assert!(is_away(&away, "us-east-1a", Some("use1-az1")));
        assert!(is_away(&away, "zone-b", None));
        assert!(!is_away(&away, "us-east-1c", Some("use1-az3")));
        assert!(!is_away(&away, "us-east-1a", None));
        assert!(!is_away(&BTreeSet::new(), "zone-b", None));
        // A node without a zone label is never taken for a shifted one.
        assert!(!is_away(&BTreeSet::from([String::new()]), "", None));
    }
}
