//! Time-zone offsets as `java.util.GregorianCalendar` sees them, built from chrono-tz's data.
//!
//! Quartz asks its calendar two questions: "what is the local wall-clock time at this instant"
//! (easy, one offset per instant) and "which instant is this wall-clock time", which has zero
//! answers inside a spring-forward gap and two inside a fall-back overlap. Java's `ZoneInfo`
//! answers the second one with a rule of its own: it takes the offset of the *last transition
//! whose wall-clock start (transition instant + offset after it) is not after the wall time*. So
//! a time inside a gap is read with the offset from before the gap (02:30 in New York on the
//! spring-forward day becomes 03:30 EDT), and a time inside an overlap with the offset from after
//! the transition (01:30 on the fall-back day is the second 01:30, EST). [`ZoneRules`] reproduces
//! exactly that.
//!
//! chrono-tz does not expose its transition list, so the list is rebuilt once per zone by probing
//! chrono-tz's offsets (every 6 hours from 1900 to 2100, bisecting every change to the second)
//! and cached for the life of the process. A table also makes lookups O(1) in the hot loop: the
//! caller keeps a hint (the span it used last) and nearly every lookup hits it.
//!
//! chrono-tz's data stop at 2100 (its last daylight-saving transitions are in 2099; afterwards
//! it keeps the last offset forever), while Java keeps applying the zone's final recurring rule.
//! Quartz searches up to (current year + 100), so for zones whose transitions follow a rule every
//! year up to 2099, the years 2100..2199 are filled in by copying the transitions of an earlier
//! year with the same calendar (same weekday on 1 January, same leap-ness), which is what a
//! recurring rule such as "second Sunday of March" yields.

use chrono::{DateTime, Offset, TimeZone};
use chrono_tz::Tz;
use std::sync::{Arc, OnceLock};

/// 1900-01-01T00:00:00Z: the table starts here; earlier instants use the offset in force then.
const TABLE_START: i64 = -2_208_988_800;
/// 2100-01-01T00:00:00Z: where chrono-tz's data end.
const TABLE_END: i64 = 4_102_444_800;
/// Probe step. Two transitions that cancel out within one step would be missed; tzdb has none
/// that close after 1900 (checked by the `table_matches_chrono_tz` test at a finer step).
const PROBE_STEP: i64 = 6 * 3600;

/// Offsets of one zone over time, with Java's rules for reading wall-clock times.
pub(crate) struct ZoneRules {
    /// `starts[k]`: first UTC second of span `k` (`i64::MIN` for span 0).
    starts: Vec<i64>,
    /// `wall_starts[k]`: `starts[k] + offsets[k]`, the wall-clock second at which Java starts
    /// reading wall times with span `k`'s offset (`i64::MIN` for span 0).
    wall_starts: Vec<i64>,
    /// Total UTC offset (standard + daylight saving) of each span, in seconds.
    offsets: Vec<i32>,
}

impl ZoneRules {
    /// A zone with one offset forever (UTC, `Etc/GMT+5`, or a test zone).
    pub(crate) fn fixed(offset: i32) -> ZoneRules {
        ZoneRules {
            starts: vec![i64::MIN],
            wall_starts: vec![i64::MIN],
            offsets: vec![offset],
        }
    }

    /// Builds the table of a zone from chrono-tz (a few milliseconds; see [`rules_for`] for the
    /// cached version).
    pub(crate) fn build(tz: Tz) -> ZoneRules {
        let offset_at = |utc: i64| -> i32 {
            let naive = DateTime::from_timestamp(utc, 0).expect("in chrono's range").naive_utc();
            tz.offset_from_utc_datetime(&naive).fix().local_minus_utc()
        };
        let mut transitions: Vec<(i64, i32)> = Vec::new();
        let mut prev_utc = TABLE_START;
        let mut prev_off = offset_at(prev_utc);
        let first = prev_off;
        let mut utc = TABLE_START;
        while utc < TABLE_END {
            utc = (utc + PROBE_STEP).min(TABLE_END);
            let off = offset_at(utc);
            // Find every change in (prev_utc, utc]; more than one is possible in one step.
            while off != prev_off {
                let (mut lo, mut hi) = (prev_utc, utc);
                while hi - lo > 1 {
                    let mid = lo + (hi - lo) / 2;
                    if offset_at(mid) == prev_off {
                        lo = mid;
                    } else {
                        hi = mid;
                    }
                }
                prev_off = offset_at(hi);
                prev_utc = hi;
                transitions.push((hi, prev_off));
            }
            prev_utc = utc;
        }
        extend_past_2100(&mut transitions);

        let mut rules = ZoneRules::fixed(first);
        for (start, off) in transitions {
            rules.starts.push(start);
            rules.wall_starts.push(start + i64::from(off));
            rules.offsets.push(off);
        }
        rules
    }

    /// Whether the zone has a single offset (enables the caller's fast paths).
    #[allow(dead_code)]
    pub(crate) fn is_fixed(&self) -> bool {
        self.offsets.len() == 1
    }

    /// Offset in force at the UTC second `utc`. `hint` is the span used last; it is updated.
    #[inline]
    pub(crate) fn offset_at(&self, utc: i64, hint: &mut usize) -> i32 {
        let k = find_span(&self.starts, utc, hint);
        self.offsets[k]
    }

    /// The UTC second Java's `GregorianCalendar` computes for the wall-clock second `wall`
    /// (seconds since 1970-01-01T00:00 local), resolving gaps and overlaps as explained in the
    /// module documentation.
    #[inline]
    pub(crate) fn resolve_wall(&self, wall: i64, hint: &mut usize) -> i64 {
        let k = find_span(&self.wall_starts, wall, hint);
        wall - i64::from(self.offsets[k])
    }
}

impl std::fmt::Debug for ZoneRules {
    // The table has hundreds of entries; logs only need its size.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ZoneRules({} spans)", self.offsets.len())
    }
}

/// Index of the last entry of `starts` that is `<= x` (`starts[0]` is `i64::MIN`), trying
/// `hint` first.
#[inline]
fn find_span(starts: &[i64], x: i64, hint: &mut usize) -> usize {
    let h = *hint;
    if h < starts.len() && starts[h] <= x && starts.get(h + 1).is_none_or(|&next| x < next) {
        return h;
    }
    let k = starts.partition_point(|&s| s <= x) - 1;
    *hint = k;
    k
}

/// Continues a zone's yearly rule past 2099, where chrono-tz's data stop (see the module
/// documentation). Only zones with transitions in every year 2090..=2099 are extended: a zone
/// that stopped changing its clocks has nothing to continue.
fn extend_past_2100(transitions: &mut Vec<(i64, i32)>) {
    let year_of = |utc: i64| crate::calendar::civil_from_days(utc.div_euclid(86_400)).0;
    let recurring = (2090..=2099).all(|y| transitions.iter().any(|&(t, _)| year_of(t) == y));
    if !recurring {
        return;
    }
    let jan1 = |y: i32| crate::calendar::days_from_civil(y, 1, 1);
    let weekday = |y: i32| jan1(y).rem_euclid(7);
    let mut extra = Vec::new();
    for year in 2100..2200 {
        let Some(model) = (2072..=2099)
            .find(|&m| crate::calendar::is_leap(m) == crate::calendar::is_leap(year) && weekday(m) == weekday(year))
        else {
            continue;
        };
        let shift = (jan1(year) - jan1(model)) * 86_400;
        extra.extend(
            transitions
                .iter()
                .filter(|&&(t, _)| year_of(t) == model)
                .map(|&(t, off)| (t + shift, off)),
        );
    }
    transitions.extend(extra);
}

/// The cached [`ZoneRules`] of a zone, built on first use.
pub(crate) fn rules_for(tz: Tz) -> Arc<ZoneRules> {
    static TABLES: OnceLock<Vec<OnceLock<Arc<ZoneRules>>>> = OnceLock::new();
    let tables = TABLES.get_or_init(|| (0..chrono_tz::TZ_VARIANTS.len()).map(|_| OnceLock::new()).collect());
    tables[tz as usize]
        .get_or_init(|| Arc::new(ZoneRules::build(tz)))
        .clone()
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::NaiveDate;

    fn utc(y: i32, mo: u32, d: u32, h: u32, mi: u32) -> i64 {
        NaiveDate::from_ymd_opt(y, mo, d)
            .unwrap()
            .and_hms_opt(h, mi, 0)
            .unwrap()
            .and_utc()
            .timestamp()
    }

    fn wall(y: i32, mo: u32, d: u32, h: u32, mi: u32) -> i64 {
        utc(y, mo, d, h, mi)
    }

    #[test]
    fn new_york_gap_and_overlap_resolve_like_java() {
        let ny = rules_for(Tz::America__New_York);
        let mut hint = 0;
        // 02:30 on the spring-forward day does not exist: Java reads it with EST, 07:30Z.
        assert_eq!(
            ny.resolve_wall(wall(2027, 3, 14, 2, 30), &mut hint),
            utc(2027, 3, 14, 7, 30)
        );
        // 01:30 on the fall-back day exists twice: Java takes the second one (EST), 06:30Z.
        assert_eq!(
            ny.resolve_wall(wall(2026, 11, 1, 1, 30), &mut hint),
            utc(2026, 11, 1, 6, 30)
        );
        assert_eq!(ny.offset_at(utc(2026, 11, 1, 5, 30), &mut hint), -4 * 3600);
        assert_eq!(ny.offset_at(utc(2026, 11, 1, 6, 0), &mut hint), -5 * 3600);
    }

    #[test]
    fn rules_continue_past_2100() {
        let ny = rules_for(Tz::America__New_York);
        let mut hint = 0;
        // 2110: DST from the second Sunday of March (9th) to the first Sunday of November (2nd).
        assert_eq!(ny.offset_at(utc(2110, 7, 1, 0, 0), &mut hint), -4 * 3600);
        assert_eq!(ny.offset_at(utc(2110, 3, 9, 6, 59), &mut hint), -5 * 3600);
        assert_eq!(ny.offset_at(utc(2110, 3, 9, 7, 0), &mut hint), -4 * 3600);
        assert_eq!(ny.offset_at(utc(2110, 11, 2, 5, 59), &mut hint), -4 * 3600);
        assert_eq!(ny.offset_at(utc(2110, 11, 2, 6, 0), &mut hint), -5 * 3600);
        let lh = rules_for(Tz::Australia__Lord_Howe);
        assert_eq!(lh.offset_at(utc(2110, 7, 1, 0, 0), &mut hint), 10 * 3600 + 1800);
        assert_eq!(lh.offset_at(utc(2110, 1, 1, 0, 0), &mut hint), 11 * 3600);
        let sp = rules_for(Tz::America__Sao_Paulo);
        assert_eq!(sp.offset_at(utc(2110, 1, 1, 0, 0), &mut hint), -3 * 3600);
    }

    #[test]
    fn fixed_zones_have_one_span() {
        assert!(rules_for(Tz::UTC).is_fixed());
        assert!(rules_for(Tz::Etc__GMTPlus5).is_fixed());
    }

    /// The probed table agrees with chrono-tz at every hour from 1900 to 2100 in a selection
    /// of zones, and its wall-clock starts are increasing (Java's binary search assumes it).
    #[test]
    fn table_matches_chrono_tz() {
        for tz in [
            Tz::America__New_York,
            Tz::Europe__London,
            Tz::Australia__Lord_Howe,
            Tz::Pacific__Chatham,
            Tz::America__Sao_Paulo,
            Tz::Asia__Kolkata,
            Tz::Asia__Shanghai,
            Tz::Europe__Moscow,
            Tz::Africa__Casablanca,
        ] {
            let rules = ZoneRules::build(tz);
            assert!(rules.wall_starts.windows(2).all(|w| w[0] < w[1]), "{tz}");
            let mut hint = 0;
            let mut t = TABLE_START;
            while t < TABLE_END {
                let naive = DateTime::from_timestamp(t, 0).unwrap().naive_utc();
                let want = tz.offset_from_utc_datetime(&naive).fix().local_minus_utc();
                assert_eq!(rules.offset_at(t, &mut hint), want, "{tz} at {t}");
                t += 3600;
            }
        }
    }
}
