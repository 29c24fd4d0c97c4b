//! Date patterns with the letters of Java's `SimpleDateFormat`, the ones XXL-JOB users write in
//! their handlers today (`yyyy-MM-dd HH:mm:ss`), so a pattern moves from the handler into the
//! parameter unchanged.
//!
//! | letters | prints |
//! |---|---|
//! | `yyyy`, `yy` | year, two-digit year |
//! | `M`, `MM`, `MMM`, `MMMM` | month: 3, 03, Mar, March |
//! | `d`, `dd` / `D` | day of month / day of year |
//! | `H`, `HH` / `h`, `hh` / `a` | hour 0–23 / hour 1–12 / AM or PM |
//! | `m`, `mm`, `s`, `ss`, `SSS` | minutes, seconds, milliseconds |
//! | `E`…`EEE`, `EEEE` / `u` | day of week: Mon, Monday / 1 (Monday) to 7 |
//! | `Z` / `X`, `XX`, `XXX` / `z` | offset: +0800 / +08, +0800, +08:00 (`Z` at UTC) / CST |
//! | `'text'`, `''` | literal text, a single quote |
//!
//! Any other letter is refused (Java would print something for `w` or `G`; a pattern that means
//! something else here than there is worse than an error). Characters that are not letters are
//! printed as they are. The whole pattern `unix` prints epoch seconds, `unix_ms` milliseconds.

use chrono::{DateTime, Datelike, Offset, Timelike};
use chrono_tz::Tz;
use std::fmt::Write;

/// Month names, January first.
const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// Day names, Monday first.
const DAYS: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];

/// One field of a pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Field {
    Literal(String),
    /// A number padded with zeros to `width`.
    Number(Number, usize),
    TwoDigitYear,
    MonthName {
        long: bool,
    },
    DayName {
        long: bool,
    },
    AmPm,
    /// `Z`: +0800.
    OffsetBasic,
    /// `X` (1 to 3): +08, +0800, +08:00, and `Z` at UTC.
    OffsetIso(usize),
    ZoneAbbreviation,
    UnixSeconds,
    UnixMillis,
}

/// What a numeric field counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Number {
    Year,
    Month,
    Day,
    DayOfYear,
    Hour24,
    Hour12,
    Minute,
    Second,
    Millisecond,
    Weekday,
}

/// A parsed pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern {
    fields: Vec<Field>,
}

impl Pattern {
    /// Parses `text`; `Err` names the letter or quote that is wrong.
    pub fn parse(text: &str) -> Result<Pattern, String> {
        match text {
            "unix" => {
                return Ok(Pattern {
                    fields: vec![Field::UnixSeconds],
                })
            }
            "unix_ms" => {
                return Ok(Pattern {
                    fields: vec![Field::UnixMillis],
                })
            }
            _ => {}
        }
        let chars: Vec<char> = text.chars().collect();
        let mut fields = Vec::new();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            if c == '\'' {
                // `''` is one quote; otherwise text up to the closing quote, in which `''` is
                // a quote too (`'o''clock'`).
                if chars.get(i + 1) == Some(&'\'') {
                    fields.push(Field::Literal("'".into()));
                    i += 2;
                    continue;
                }
                let mut text = String::new();
                i += 1;
                loop {
                    match (chars.get(i), chars.get(i + 1)) {
                        (None, _) => return Err("a quote in the pattern is not closed".into()),
                        (Some('\''), Some('\'')) => {
                            text.push('\'');
                            i += 2;
                        }
                        (Some('\''), _) => {
                            i += 1;
                            break;
                        }
                        (Some(ch), _) => {
                            text.push(*ch);
                            i += 1;
                        }
                    }
                }
                fields.push(Field::Literal(text));
                continue;
            }
            if !c.is_ascii_alphabetic() {
                fields.push(Field::Literal(c.to_string()));
                i += 1;
                continue;
            }
            let run = chars[i..].iter().take_while(|&&x| x == c).count();
            fields.push(field(c, run)?);
            i += run;
        }
        Ok(Pattern { fields })
    }

    /// Prints `at` into `out`.
    pub fn write(&self, at: &DateTime<Tz>, out: &mut String) {
        for f in &self.fields {
            // Writing to a String cannot fail.
            let _ = match f {
                Field::Literal(t) => out.write_str(t),
                Field::Number(n, width) => write!(out, "{:0width$}", number(at, *n)),
                Field::TwoDigitYear => write!(out, "{:02}", at.year().rem_euclid(100)),
                Field::MonthName { long } => out.write_str(short_or_long(MONTHS[at.month0() as usize], *long)),
                Field::DayName { long } => {
                    out.write_str(short_or_long(DAYS[at.weekday().num_days_from_monday() as usize], *long))
                }
                Field::AmPm => out.write_str(if at.hour() < 12 { "AM" } else { "PM" }),
                Field::OffsetBasic => write_offset(at, out, true, false),
                Field::OffsetIso(n) => write_iso_offset(at, out, *n),
                Field::ZoneAbbreviation => write!(out, "{}", at.format("%Z")),
                Field::UnixSeconds => write!(out, "{}", at.timestamp()),
                Field::UnixMillis => write!(out, "{}", at.timestamp_millis()),
            };
        }
    }
}

/// The field a run of `count` letters `c` stands for.
fn field(c: char, count: usize) -> Result<Field, String> {
    let number = |n: Number| Ok(Field::Number(n, count));
    match c {
        'y' if count == 2 => Ok(Field::TwoDigitYear),
        'y' => number(Number::Year),
        'M' if count >= 4 => Ok(Field::MonthName { long: true }),
        'M' if count == 3 => Ok(Field::MonthName { long: false }),
        'M' => number(Number::Month),
        'd' => number(Number::Day),
        'D' => number(Number::DayOfYear),
        'H' => number(Number::Hour24),
        'h' => number(Number::Hour12),
        'm' => number(Number::Minute),
        's' => number(Number::Second),
        'S' => number(Number::Millisecond),
        'u' => number(Number::Weekday),
        'E' => Ok(Field::DayName { long: count >= 4 }),
        'a' => Ok(Field::AmPm),
        'Z' => Ok(Field::OffsetBasic),
        'X' if count <= 3 => Ok(Field::OffsetIso(count)),
        'z' => Ok(Field::ZoneAbbreviation),
        _ => Err(format!(
            "the pattern letter `{}` is not supported (quote text as 'text'; letters: y M d D H h m s S E u a Z X z)",
            c.to_string().repeat(count.min(4))
        )),
    }
}

fn number(at: &DateTime<Tz>, n: Number) -> i64 {
    i64::from(match n {
        Number::Year => return i64::from(at.year()),
        Number::Month => at.month(),
        Number::Day => at.day(),
        Number::DayOfYear => at.ordinal(),
        Number::Hour24 => at.hour(),
        Number::Hour12 => match at.hour() % 12 {
            0 => 12,
            h => h,
        },
        Number::Minute => at.minute(),
        Number::Second => at.second(),
        Number::Millisecond => at.timestamp_subsec_millis(),
        Number::Weekday => at.weekday().number_from_monday(),
    })
}

fn short_or_long(name: &str, long: bool) -> &str {
    if long {
        name
    } else {
        &name[..3]
    }
}

/// `+0800` (`+08:00` with `colon`); without `hours_and_minutes`, `+08` unless the minutes are
/// not zero.
fn write_offset(at: &DateTime<Tz>, out: &mut String, hours_and_minutes: bool, colon: bool) -> std::fmt::Result {
    let secs = at.offset().fix().local_minus_utc();
    let sign = if secs < 0 { '-' } else { '+' };
    let (h, m) = (secs.abs() / 3600, secs.abs() % 3600 / 60);
    if !hours_and_minutes && m == 0 {
        return write!(out, "{sign}{h:02}");
    }
    let sep = if colon { ":" } else { "" };
    write!(out, "{sign}{h:02}{sep}{m:02}")
}

/// ISO 8601 offsets as Java's `X` prints them: `Z` at UTC.
fn write_iso_offset(at: &DateTime<Tz>, out: &mut String, letters: usize) -> std::fmt::Result {
    if at.offset().fix().local_minus_utc() == 0 {
        return out.write_str("Z");
    }
    match letters {
        1 => write_offset(at, out, false, false),
        2 => write_offset(at, out, true, false),
        _ => write_offset(at, out, true, true),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{NaiveDate, TimeZone};

    /// `pattern` printed for the wall-clock time `(y, mo, d)`, `(h, mi, ms)` (at 7 seconds).
    fn print(pattern: &str, zone: Tz, (y, mo, d): (i32, u32, u32), (h, mi, ms): (u32, u32, u32)) -> String {
        let naive = NaiveDate::from_ymd_opt(y, mo, d)
            .unwrap()
            .and_hms_milli_opt(h, mi, 7, ms)
            .unwrap();
        let at = zone.from_local_datetime(&naive).unwrap();
        let mut out = String::new();
        Pattern::parse(pattern).unwrap().write(&at, &mut out);
        out
    }

    #[test]
    fn prints_what_simple_date_format_prints() {
        let sh = chrono_tz::Asia::Shanghai;
        assert_eq!(
            print("yyyy-MM-dd HH:mm:ss.SSS", sh, (2026, 3, 8), (9, 5, 42)),
            "2026-03-08 09:05:07.042"
        );
        assert_eq!(print("yyMd H:m:s", sh, (2026, 3, 8), (9, 5, 0)), "2638 9:5:7");
        assert_eq!(print("EEE, d MMM yyyy", sh, (2026, 3, 8), (9, 5, 0)), "Sun, 8 Mar 2026");
        assert_eq!(print("EEEE MMMM D u", sh, (2026, 3, 8), (9, 5, 0)), "Sunday March 67 7");
        assert_eq!(print("hh a", sh, (2026, 3, 8), (0, 5, 0)), "12 AM");
        assert_eq!(print("h a", sh, (2026, 3, 8), (13, 5, 0)), "1 PM");
        assert_eq!(
            print("Z X XX XXX z", sh, (2026, 3, 8), (13, 5, 0)),
            "+0800 +08 +0800 +08:00 CST"
        );
        assert_eq!(print("XXX", Tz::UTC, (2026, 3, 8), (13, 5, 0)), "Z");
        assert_eq!(
            print("XXX", chrono_tz::Asia::Kolkata, (2026, 3, 8), (13, 5, 0)),
            "+05:30"
        );
        assert_eq!(
            print("X", chrono_tz::America::St_Johns, (2026, 1, 8), (13, 5, 0)),
            "-0330"
        );
        assert_eq!(
            print("yyyy'T'HH 'o''clock' ''", sh, (2026, 3, 8), (13, 5, 0)),
            "2026T13 o'clock '"
        );
        assert_eq!(print("yyyy/MM_dd", sh, (2026, 3, 8), (13, 5, 0)), "2026/03_08");
    }

    #[test]
    fn refuses_letters_it_would_print_differently() {
        for bad in ["G", "yyyy-ww", "k", "K", "F", "XXXX", "Q"] {
            assert!(Pattern::parse(bad).unwrap_err().contains("not supported"), "{bad}");
        }
        assert!(Pattern::parse("yyyy 'T").unwrap_err().contains("not closed"));
    }
}
