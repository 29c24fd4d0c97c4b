//! Date placeholders in a job's parameter, resolved by the admin from the run's fire time in the
//! job's time zone, so every executor (XXL-JOB's included) receives plain text.
//!
//! ```text
//! ${fire_time}                  2026-03-08 09:00:00   (the fire time, yyyy-MM-dd HH:mm:ss)
//! ${fire_time:yyyy-MM-dd}       2026-03-08
//! ${fire_time-1h:HH}            08
//! ${bizdate}                    20260307              (the fire date minus one day, yyyyMMdd)
//! ${bizdate-1M:yyyy-MM}         2026-02
//! ${fire_time:unix}             1772960400            (epoch seconds; unix_ms for milliseconds)
//! $${fire_time}                 ${fire_time}          (`$${` is a literal `${`)
//! ```
//!
//! A placeholder is `${name[offset...][:pattern]}`. Offsets are `+N` or `-N` with a unit: `s`,
//! `m` (minutes), `h` exact durations; `d`, `w`, `M` (months), `y` on the calendar of the zone, so
//! `-1d` across a daylight-saving change is the same wall-clock time the day before. Patterns use
//! the letters of Java's `SimpleDateFormat` that XXL-JOB users already write (see [`pattern`]).
//!
//! Two entry points, because a parameter is judged twice. When a job is saved,
//! [`Template::parse`] refuses anything malformed with an error that says where and why. When a
//! run is made, [`resolve_or_keep`] never fails: a parameter stored before placeholders existed
//! (or imported from XXL-JOB) that happens to contain `${...}` is sent exactly as it was written.

pub mod pattern;

use chrono::{DateTime, Duration, LocalResult, Months, NaiveDate, NaiveDateTime, TimeZone};
use chrono_tz::Tz;
use pattern::Pattern;
use std::borrow::Cow;
use std::fmt;

/// At most this many bytes between `${` and `}`: a placeholder is a name, a few offsets and a
/// pattern; anything longer is a mistake (an unclosed `${` swallowing the rest of the text).
pub const MAX_PLACEHOLDER_BYTES: usize = 200;

/// At most this many placeholders in one parameter: each is resolved on every fire.
pub const MAX_PLACEHOLDERS: usize = 64;

/// The largest number an offset may carry (999999 seconds is 11 days; 999999 months is far past
/// any date chrono can hold, which resolving reports).
const MAX_OFFSET: i64 = 999_999;

/// Why a parameter's placeholders cannot be used, and where: shown to the user as is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("placeholder at character {at}: {why}; write $${{ for a literal ${{")]
pub struct ParamError {
    /// Where the placeholder starts: a 1-based character position in the parameter.
    pub at: usize,
    /// What is wrong with it.
    pub why: String,
}

/// The moment a placeholder starts from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Base {
    /// The run's fire time: when its schedule said it should run, or when it was triggered.
    FireTime,
    /// The business date: the fire time's day minus one (the data a daily run processes).
    BizDate,
}

impl Base {
    /// Every placeholder name, as written.
    pub const NAMES: [&'static str; 2] = ["fire_time", "bizdate"];

    fn named(name: &str) -> Option<Base> {
        match name {
            "fire_time" => Some(Base::FireTime),
            "bizdate" => Some(Base::BizDate),
            _ => None,
        }
    }

    /// How it is printed when the placeholder gives no pattern.
    fn default_pattern(self) -> &'static str {
        match self {
            Base::FireTime => "yyyy-MM-dd HH:mm:ss",
            Base::BizDate => "yyyyMMdd",
        }
    }
}

/// A unit of an offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unit {
    Seconds,
    Minutes,
    Hours,
    Days,
    Weeks,
    Months,
    Years,
}

impl Unit {
    fn from_char(c: char) -> Option<Unit> {
        Some(match c {
            's' => Unit::Seconds,
            'm' => Unit::Minutes,
            'h' => Unit::Hours,
            'd' => Unit::Days,
            'w' => Unit::Weeks,
            'M' => Unit::Months,
            'y' => Unit::Years,
            _ => return None,
        })
    }
}

/// `+N` or `-N` of a unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Offset {
    amount: i64,
    unit: Unit,
}

/// One `${...}`, parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct Placeholder {
    /// Where it starts (1-based character position), for errors found when resolving.
    at: usize,
    base: Base,
    offsets: Vec<Offset>,
    pattern: Pattern,
}

/// A piece of a parsed parameter.
#[derive(Debug, Clone, PartialEq)]
enum Piece<'a> {
    Text(&'a str),
    Placeholder(Placeholder),
}

/// A parameter split into text and placeholders.
#[derive(Debug, Clone, PartialEq)]
pub struct Template<'a> {
    pieces: Vec<Piece<'a>>,
}

impl<'a> Template<'a> {
    /// Parses `text`. `Err` names the first malformed placeholder: unclosed, unknown, a bad
    /// offset or a pattern letter that is not supported.
    pub fn parse(text: &'a str) -> Result<Template<'a>, ParamError> {
        let mut pieces = Vec::new();
        let mut placeholders = 0usize;
        let mut rest = text;
        let mut consumed = 0usize;
        while let Some(found) = rest.find("${") {
            // `$${` is a literal `${`: the text up to and including the first `$`, then `{`
            // carries on as text.
            if found > 0 && rest.as_bytes()[found - 1] == b'$' {
                pieces.push(Piece::Text(&rest[..found - 1]));
                pieces.push(Piece::Text("${"));
                rest = &rest[found + 2..];
                consumed += found + 2;
                continue;
            }
            let at = char_position(text, consumed + found);
            placeholders += 1;
            if placeholders > MAX_PLACEHOLDERS {
                return Err(ParamError {
                    at,
                    why: format!("a parameter may hold at most {MAX_PLACEHOLDERS} placeholders"),
                });
            }
            pieces.push(Piece::Text(&rest[..found]));
            let body_start = found + 2;
            let Some(len) = rest[body_start..].find('}') else {
                return Err(ParamError {
                    at,
                    why: "`${` is not closed by `}`".into(),
                });
            };
            let body = &rest[body_start..body_start + len];
            if body.len() > MAX_PLACEHOLDER_BYTES {
                return Err(ParamError {
                    at,
                    why: format!("longer than {MAX_PLACEHOLDER_BYTES} bytes"),
                });
            }
            let placeholder = parse_placeholder(body, at).map_err(|why| ParamError { at, why })?;
            pieces.push(Piece::Placeholder(placeholder));
            rest = &rest[body_start + len + 1..];
            consumed += body_start + len + 1;
        }
        pieces.push(Piece::Text(rest));
        pieces.retain(|p| !matches!(p, Piece::Text("")));
        Ok(Template { pieces })
    }

    /// Whether it holds any placeholder (a parameter without one is sent as written, `$${`
    /// included).
    pub fn has_placeholders(&self) -> bool {
        self.pieces.iter().any(|p| matches!(p, Piece::Placeholder(_)))
    }

    /// The text with every placeholder replaced from `fire_ms` (epoch ms) in `zone`. `Err` only
    /// when an offset leaves the dates chrono can hold.
    pub fn resolve(&self, fire_ms: i64, zone: Tz) -> Result<String, ParamError> {
        self.resolve_with(fire_ms, zone, None)
    }

    /// [`Template::resolve`] for a schedule that keeps to a business calendar: `${bizdate}` is
    /// then the last business day before the fire's date, as `previous_business_day` finds it
    /// (the fire date minus one day when it finds none).
    pub fn resolve_with(
        &self,
        fire_ms: i64,
        zone: Tz,
        previous_business_day: Option<&dyn Fn(NaiveDate) -> Option<NaiveDate>>,
    ) -> Result<String, ParamError> {
        let fire = zone
            .timestamp_millis_opt(fire_ms)
            .single()
            .ok_or_else(|| out_of_range(1))?;
        let mut out = String::new();
        for piece in &self.pieces {
            match piece {
                Piece::Text(t) => out.push_str(t),
                Piece::Placeholder(p) => {
                    let at = p
                        .moment(fire, previous_business_day)
                        .ok_or_else(|| out_of_range(p.at))?;
                    p.pattern.write(&at, &mut out);
                }
            }
        }
        Ok(out)
    }
}

fn out_of_range(at: usize) -> ParamError {
    ParamError {
        at,
        why: "an offset takes the date out of range".into(),
    }
}

impl Placeholder {
    /// The moment it prints: the base, then each offset in the order written.
    fn moment(
        &self,
        fire: DateTime<Tz>,
        previous_business_day: Option<&dyn Fn(NaiveDate) -> Option<NaiveDate>>,
    ) -> Option<DateTime<Tz>> {
        let fire_date = fire.date_naive();
        let days_back = previous_business_day
            .and_then(|previous| previous(fire_date))
            .map_or(1, |d| (fire_date - d).num_days());
        let mut at = match self.base {
            Base::FireTime => fire,
            Base::BizDate => shift(
                fire,
                Offset {
                    amount: -days_back,
                    unit: Unit::Days,
                },
            )?,
        };
        for offset in &self.offsets {
            at = shift(at, *offset)?;
        }
        Some(at)
    }
}

/// `at` moved by `offset`: exact units on the time line, calendar units on the zone's wall clock
/// (a wall-clock time that a daylight-saving change skips moves on by an hour; one it repeats
/// takes the earlier instant).
fn shift(at: DateTime<Tz>, offset: Offset) -> Option<DateTime<Tz>> {
    let exact = |d: Duration| at.checked_add_signed(d);
    let wall = |naive: NaiveDateTime| match at.timezone().from_local_datetime(&naive) {
        LocalResult::Single(t) => Some(t),
        LocalResult::Ambiguous(earlier, _) => Some(earlier),
        LocalResult::None => at
            .timezone()
            .from_local_datetime(&naive.checked_add_signed(Duration::hours(1))?)
            .earliest(),
    };
    let n = offset.amount;
    let months = |m: i64| {
        let naive = at.naive_local();
        let m = u32::try_from(m.unsigned_abs()).ok()?;
        if n >= 0 {
            naive.checked_add_months(Months::new(m))
        } else {
            naive.checked_sub_months(Months::new(m))
        }
    };
    match offset.unit {
        Unit::Seconds => exact(Duration::try_seconds(n)?),
        Unit::Minutes => exact(Duration::try_minutes(n)?),
        Unit::Hours => exact(Duration::try_hours(n)?),
        Unit::Days => wall(at.naive_local().checked_add_signed(Duration::try_days(n)?)?),
        Unit::Weeks => wall(at.naive_local().checked_add_signed(Duration::try_weeks(n)?)?),
        Unit::Months => wall(months(n)?),
        Unit::Years => wall(months(n.checked_mul(12)?)?),
    }
}

/// `name[offsets][:pattern]`; `Err` says what is wrong.
fn parse_placeholder(body: &str, at: usize) -> Result<Placeholder, String> {
    let (head, pattern) = match body.split_once(':') {
        Some((head, pattern)) => (head, Some(pattern)),
        None => (body, None),
    };
    let name_end = head.find(['+', '-']).unwrap_or(head.len());
    let name = head[..name_end].trim();
    let Some(base) = Base::named(name) else {
        let shown: String = name.chars().take(40).collect();
        return Err(format!(
            "unknown placeholder `{shown}` (known: {})",
            Base::NAMES.join(", ")
        ));
    };
    let offsets = parse_offsets(&head[name_end..])?;
    let pattern = match pattern {
        Some("") => return Err("the pattern after `:` is empty".into()),
        Some(p) => Pattern::parse(p)?,
        None => Pattern::parse(base.default_pattern())?,
    };
    Ok(Placeholder {
        at,
        base,
        offsets,
        pattern,
    })
}

/// `+1d-2h`: signed numbers, each followed by one unit letter.
fn parse_offsets(mut text: &str) -> Result<Vec<Offset>, String> {
    let mut offsets = Vec::new();
    while let Some(sign) = text.chars().next() {
        let negative = match sign {
            '+' => false,
            '-' => true,
            other => return Err(format!("expected `+` or `-` before an offset, found `{other}`")),
        };
        text = &text[1..];
        let digits = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
        if digits == 0 {
            return Err(format!("an offset needs a number after `{sign}`"));
        }
        let amount: i64 = text[..digits]
            .parse()
            .ok()
            .filter(|n| *n <= MAX_OFFSET)
            .ok_or_else(|| format!("an offset is at most {MAX_OFFSET}"))?;
        text = &text[digits..];
        let unit_char = text.chars().next();
        let unit = unit_char.and_then(Unit::from_char).ok_or_else(|| {
            format!(
                "an offset needs a unit after its number: s, m (minutes), h, d, w, M (months) or y{}",
                unit_char.map(|c| format!(", not `{c}`")).unwrap_or_default()
            )
        })?;
        text = &text[1..];
        offsets.push(Offset {
            amount: if negative { -amount } else { amount },
            unit,
        });
    }
    Ok(offsets)
}

/// The 1-based character position of byte `index` of `text`.
fn char_position(text: &str, index: usize) -> usize {
    text[..index].chars().count() + 1
}

/// Whether `text` could hold a placeholder at all: a parameter without `${` is the same text
/// resolved, so run creation skips the work.
pub fn may_have_placeholders(text: &str) -> bool {
    text.contains("${")
}

/// Checks `text` as a parameter to be saved: `Err` names its first malformed placeholder.
pub fn check(text: &str) -> Result<(), ParamError> {
    Template::parse(text).map(|_| ())
}

/// The zone a job names, UTC when it names none or one this build does not know.
pub fn zone_or_utc(zone: &str) -> Tz {
    zone.parse().unwrap_or(Tz::UTC)
}

/// `text` resolved at `fire_ms` in `zone`, or `text` unchanged when it has no placeholder or
/// cannot be resolved (a parameter stored before it was checked): making a run never fails
/// because of its parameter.
pub fn resolve_or_keep<'t>(text: &'t str, fire_ms: i64, zone: &str) -> Cow<'t, str> {
    resolve_or_keep_with(text, fire_ms, zone, None)
}

/// [`resolve_or_keep`] for a schedule that keeps to a business calendar (see
/// [`Template::resolve_with`]).
pub fn resolve_or_keep_with<'t>(
    text: &'t str,
    fire_ms: i64,
    zone: &str,
    previous_business_day: Option<&dyn Fn(NaiveDate) -> Option<NaiveDate>>,
) -> Cow<'t, str> {
    if !may_have_placeholders(text) {
        return Cow::Borrowed(text);
    }
    match Template::parse(text).and_then(|t| t.resolve_with(fire_ms, zone_or_utc(zone), previous_business_day)) {
        Ok(resolved) => Cow::Owned(resolved),
        Err(_) => Cow::Borrowed(text),
    }
}

impl fmt::Display for Base {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Base::FireTime => "fire_time",
            Base::BizDate => "bizdate",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::NaiveDate;

    /// Epoch ms of a wall-clock time in `zone`.
    fn at(zone: &str, y: i32, mo: u32, d: u32, h: u32, mi: u32) -> i64 {
        let naive = NaiveDate::from_ymd_opt(y, mo, d)
            .unwrap()
            .and_hms_opt(h, mi, 0)
            .unwrap();
        zone_or_utc(zone)
            .from_local_datetime(&naive)
            .earliest()
            .unwrap()
            .timestamp_millis()
    }

    fn resolve(text: &str, fire: i64, zone: &str) -> String {
        Template::parse(text).unwrap().resolve(fire, zone_or_utc(zone)).unwrap()
    }

    /// With a business calendar, `${bizdate}` is the last business day before the fire's date:
    /// on a Monday, the Friday before; offsets apply after.
    #[test]
    fn bizdate_follows_a_business_calendar() {
        use chrono::Datelike;
        let weekdays_only = |d: NaiveDate| {
            let mut d = d.pred_opt()?;
            while d.weekday().number_from_monday() > 5 {
                d = d.pred_opt()?;
            }
            Some(d)
        };
        let monday = at("Asia/Shanghai", 2026, 3, 2, 9, 0);
        let template = Template::parse("${bizdate:yyyy-MM-dd} ${bizdate-1d:dd} ${fire_time:dd}").unwrap();
        let zone: Tz = "Asia/Shanghai".parse().unwrap();
        assert_eq!(
            template.resolve_with(monday, zone, Some(&weekdays_only)).unwrap(),
            "2026-02-27 26 02"
        );
        assert_eq!(template.resolve(monday, zone).unwrap(), "2026-03-01 28 02");
        assert_eq!(
            resolve_or_keep_with("${bizdate}", monday, "Asia/Shanghai", Some(&weekdays_only)),
            "20260227"
        );
    }

    #[test]
    fn fire_time_and_bizdate_in_the_jobs_zone() {
        let fire = at("Asia/Shanghai", 2026, 3, 1, 0, 30);
        assert_eq!(resolve("${fire_time}", fire, "Asia/Shanghai"), "2026-03-01 00:30:00");
        // The same instant is still February in UTC.
        assert_eq!(resolve("${fire_time:yyyy-MM-dd}", fire, "UTC"), "2026-02-28");
        assert_eq!(resolve("${bizdate}", fire, "Asia/Shanghai"), "20260228");
        assert_eq!(
            resolve("dt=${bizdate:yyyy-MM-dd} h=${fire_time-1h:HH}", fire, "Asia/Shanghai"),
            "dt=2026-02-28 h=23"
        );
        assert_eq!(resolve("${fire_time:unix}", 1_772_960_400_000, "UTC"), "1772960400");
        assert_eq!(
            resolve("${fire_time:unix_ms}", 1_772_960_400_123, "UTC"),
            "1772960400123"
        );
    }

    #[test]
    fn calendar_offsets_keep_the_wall_clock_across_daylight_saving() {
        // New York springs forward on 2026-03-08 at 02:00.
        let fire = at("America/New_York", 2026, 3, 8, 9, 0);
        assert_eq!(
            resolve("${fire_time-1d}", fire, "America/New_York"),
            "2026-03-07 09:00:00"
        );
        // 24 hours before is an hour earlier on the wall clock: that day had 23.
        assert_eq!(
            resolve("${fire_time-24h}", fire, "America/New_York"),
            "2026-03-07 08:00:00"
        );
        // 02:30 does not exist on the 8th: a day back from 02:30 on the 9th moves on an hour.
        let fire = at("America/New_York", 2026, 3, 9, 2, 30);
        assert_eq!(resolve("${fire_time-1d:HH:mm}", fire, "America/New_York"), "03:30");
        // Months clamp to the month's last day, as calendars do.
        let fire = at("UTC", 2026, 3, 31, 12, 0);
        assert_eq!(resolve("${fire_time-1M:yyyy-MM-dd}", fire, "UTC"), "2026-02-28");
        assert_eq!(resolve("${fire_time+1y-1w:yyyy-MM-dd}", fire, "UTC"), "2027-03-24");
        assert_eq!(resolve("${bizdate-1M:yyyyMM}", fire, "UTC"), "202602");
    }

    #[test]
    fn literal_dollars_and_plain_text_pass_through() {
        assert_eq!(
            resolve("$${fire_time} $HOME $$ {x}", 0, "UTC"),
            "${fire_time} $HOME $$ {x}"
        );
        assert_eq!(resolve("echo $$${bizdate}", 0, "UTC"), "echo $${bizdate}");
        assert!(!Template::parse("$${bizdate}").unwrap().has_placeholders());
        assert_eq!(resolve("", 0, "UTC"), "");
        assert_eq!(resolve("日付 ${fire_time:yyyy}年", 0, "UTC"), "日付 1970年");
    }

    #[test]
    fn malformed_placeholders_say_where_and_why() {
        let e = check("a ${fire_tme:yyyy}").unwrap_err();
        assert_eq!(e.at, 3);
        assert!(e.why.contains("unknown placeholder `fire_tme`"), "{e}");
        assert!(e.to_string().contains("$${"), "{e}");
        assert!(check("${fire_time").unwrap_err().why.contains("not closed"));
        assert!(check("${fire_time-1}").unwrap_err().why.contains("needs a unit"));
        assert!(check("${fire_time-1q}").unwrap_err().why.contains("not `q`"));
        assert!(check("${fire_time*1d}")
            .unwrap_err()
            .why
            .contains("unknown placeholder"));
        assert!(check("${fire_time-d}").unwrap_err().why.contains("needs a number"));
        assert!(check("${fire_time-9999999d}").unwrap_err().why.contains("at most"));
        assert!(check("${fire_time:}").unwrap_err().why.contains("empty"));
        assert!(check("${fire_time:yyyy-QQ}").unwrap_err().why.contains("`QQ`"));
        assert!(check(&format!("${{fire_time:{}}}", "y".repeat(300)))
            .unwrap_err()
            .why
            .contains("longer"));
        assert!(check(&"${bizdate}".repeat(MAX_PLACEHOLDERS + 1))
            .unwrap_err()
            .why
            .contains("at most"));
        check(&"${bizdate}".repeat(MAX_PLACEHOLDERS)).unwrap();
    }

    #[test]
    fn making_a_run_never_fails_on_its_parameter() {
        assert!(matches!(resolve_or_keep("plain", 0, "UTC"), Cow::Borrowed("plain")));
        assert_eq!(resolve_or_keep("${HOME}/x", 0, "UTC"), "${HOME}/x");
        assert_eq!(resolve_or_keep("${bizdate}", 86_400_000, "Nowhere/Else"), "19700101");
        // An offset past what chrono holds keeps the text.
        assert_eq!(
            resolve_or_keep("${fire_time+999999y}", 0, "UTC"),
            "${fire_time+999999y}"
        );
    }
}
