//! The Quartz 2.3.2 cron parser, reproduced decision by decision.
//!
//! Quartz's parser is a hand-written scanner with many accidental behaviours: it ignores
//! trailing characters in several places (`5X`, `MONDAY`, `MON-FRIXYZ` are accepted), ignores
//! fields beyond the seventh, treats `?X` as `?`, reads `W` after `L-` without digits, accepts
//! `9#2` in day-of-week without a range check, rejects `*/90` in seconds but accepts `0-59/90`,
//! and turns any runtime exception (index out of bounds, bad number) into a parse error. XXL-JOB
//! validates expressions with this parser, so Chime must accept and reject exactly the same
//! strings. The scan below therefore follows Quartz's steps over the same UTF-16 code units
//! (Java's `String.charAt`), with every place where Java would throw turned into a
//! [`ScheduleError`] naming the field.
//!
//! Field values are collected into sorted sets, as Quartz's `TreeSet`s, including its marker
//! values 98 (`?`) and 99 (`*`), because the evaluator consults them the same way.

use crate::error::{CronField, ScheduleError};
use std::collections::BTreeSet;

/// `?` marker value in a field set (Quartz's `NO_SPEC_INT`).
pub(crate) const NO_SPEC: i32 = 98;
/// `*` marker value in a field set (Quartz's `ALL_SPEC_INT`).
pub(crate) const ALL_SPEC: i32 = 99;

const SECOND: usize = 0;
const MINUTE: usize = 1;
const HOUR: usize = 2;
const DAY_OF_MONTH: usize = 3;
const MONTH: usize = 4;
const DAY_OF_WEEK: usize = 5;
const YEAR: usize = 6;

/// Years above this can never be returned (Quartz gives up at year 2999), so ranges are not
/// expanded past it; this keeps `2000-2000000000` from allocating for nothing.
const YEAR_CEILING: i32 = 3000;

/// The result of parsing: Quartz's field sets and flags.
#[derive(Debug, Clone)]
pub(crate) struct Parsed {
    pub sets: [BTreeSet<i32>; 7],
    pub lastday_of_week: bool,
    pub nthday_of_week: i32,
    pub lastday_of_month: bool,
    pub nearest_weekday: bool,
    pub lastday_offset: i32,
}

type Res<T> = Result<T, ScheduleError>;

struct Parser {
    p: Parsed,
    max_year: i32,
}

/// Parses `expression` as `new org.quartz.CronExpression(expression)` would.
pub(crate) fn parse(expression: &str, max_year: i32) -> Res<Parsed> {
    let mut parser = Parser {
        p: Parsed {
            sets: Default::default(),
            lastday_of_week: false,
            nthday_of_week: 0,
            lastday_of_month: false,
            nearest_weekday: false,
            lastday_offset: 0,
        },
        max_year,
    };
    // Quartz upper-cases with Locale.US (full Unicode mapping, so 'ß' becomes "SS").
    let upper: Vec<u16> = expression.to_uppercase().encode_utf16().collect();
    parser.build(&upper)?;
    Ok(parser.p)
}

fn field_of(kind: usize) -> CronField {
    CronField::ALL[kind]
}

fn text(s: &[u16]) -> String {
    String::from_utf16_lossy(s)
}

fn is_ascii_digit(c: u16) -> bool {
    (u16::from(b'0')..=u16::from(b'9')).contains(&c)
}

/// The value of a decimal digit as Java's `Character.digit(c, 10)` sees it: any Unicode
/// decimal digit of the Basic Multilingual Plane counts, not only ASCII.
fn java_digit(c: u16) -> Option<u32> {
    // First code unit ("zero") of each run of ten Nd digits in the BMP (Unicode 13, Java 17).
    const ZEROS: [u16; 37] = [
        0x0030, 0x0660, 0x06F0, 0x07C0, 0x0966, 0x09E6, 0x0A66, 0x0AE6, 0x0B66, 0x0BE6, 0x0C66, 0x0CE6, 0x0D66, 0x0DE6,
        0x0E50, 0x0ED0, 0x0F20, 0x1040, 0x1090, 0x17E0, 0x1810, 0x1946, 0x19D0, 0x1A80, 0x1A90, 0x1B50, 0x1BB0, 0x1C40,
        0x1C50, 0xA620, 0xA8D0, 0xA900, 0xA9D0, 0xA9F0, 0xAA50, 0xABF0, 0xFF10,
    ];
    ZEROS.iter().find(|&&z| c >= z && c < z + 10).map(|&z| u32::from(c - z))
}

/// Java's `Integer.parseInt(s)`: optional sign, at least one digit, no overflow.
fn parse_int(s: &[u16]) -> Option<i32> {
    let (negative, digits) = match s.first() {
        Some(&c) if c == u16::from(b'-') => (true, &s[1..]),
        Some(&c) if c == u16::from(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() {
        return None;
    }
    let mut value: i64 = 0;
    for &c in digits {
        value = value * 10 + i64::from(java_digit(c)?);
        if value > i64::from(i32::MAX) + 1 {
            return None;
        }
    }
    let value = if negative { -value } else { value };
    i32::try_from(value).ok()
}

/// Java's `String.trim()`: strips code units `<= ' '` at both ends.
fn java_trim(s: &[u16]) -> &[u16] {
    let start = s.iter().position(|&c| c > 0x20).unwrap_or(s.len());
    let end = s.iter().rposition(|&c| c > 0x20).map_or(start, |e| e + 1);
    &s[start..end]
}

/// Java's `StringTokenizer`: maximal runs of non-delimiters.
fn tokens<'a>(s: &'a [u16], delims: &'a [u16]) -> impl Iterator<Item = &'a [u16]> + 'a {
    s.split(move |c| delims.contains(c)).filter(|t| !t.is_empty())
}

/// `s.matches("^L-[0-9]*[W]?")`.
fn is_l_offset(s: &[u16]) -> bool {
    if s.len() < 2 || s[0] != u16::from(b'L') || s[1] != u16::from(b'-') {
        return false;
    }
    let rest = &s[2..];
    let digits = rest.iter().take_while(|&&c| is_ascii_digit(c)).count();
    let tail = &rest[digits..];
    tail.is_empty() || tail == [u16::from(b'W')]
}

fn month_number(sub: &[u16]) -> i32 {
    const NAMES: [&str; 12] = [
        "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC",
    ];
    NAMES
        .iter()
        .position(|n| n.encode_utf16().eq(sub.iter().copied()))
        .map_or(-1, |i| i as i32)
}

fn day_number(sub: &[u16]) -> i32 {
    const NAMES: [&str; 7] = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"];
    NAMES
        .iter()
        .position(|n| n.encode_utf16().eq(sub.iter().copied()))
        .map_or(-1, |i| i as i32 + 1)
}

const C_L: u16 = b'L' as u16;
const C_W: u16 = b'W' as u16;
const C_HASH: u16 = b'#' as u16;
const C_DASH: u16 = b'-' as u16;
const C_SLASH: u16 = b'/' as u16;
const C_STAR: u16 = b'*' as u16;
const C_QUESTION: u16 = b'?' as u16;
const C_COMMA: u16 = b',' as u16;
const C_SPACE: u16 = b' ' as u16;
const C_TAB: u16 = b'\t' as u16;

impl Parser {
    fn build(&mut self, expression: &[u16]) -> Res<()> {
        let mut expr_on = SECOND;
        for token in tokens(expression, &[C_SPACE, C_TAB]) {
            if expr_on > YEAR {
                // Quartz 2.3.2 does not count fields: anything after the seventh is ignored.
                break;
            }
            let expr = java_trim(token);
            let has = |c: u16| expr.contains(&c);
            if expr_on == DAY_OF_MONTH && has(C_L) && expr.len() > 1 && has(C_COMMA) {
                return Err(self.err(
                    expr_on,
                    format!("'{}': 'L' and 'LW' cannot be combined with other days", text(expr)),
                ));
            }
            if expr_on == DAY_OF_WEEK && has(C_L) && expr.len() > 1 && has(C_COMMA) {
                return Err(self.err(
                    expr_on,
                    format!("'{}': 'L' cannot be combined with other days", text(expr)),
                ));
            }
            if expr_on == DAY_OF_WEEK && expr.iter().filter(|&&c| c == C_HASH).count() > 1 {
                return Err(self.err(
                    expr_on,
                    format!("'{}': only one '#' (nth day) is supported", text(expr)),
                ));
            }
            for value in tokens(expr, &[C_COMMA]) {
                self.store_expression_vals(value, expr_on)?;
            }
            expr_on += 1;
        }
        if expr_on <= DAY_OF_WEEK {
            return Err(ScheduleError::FieldCount { found: expr_on });
        }
        if expr_on <= YEAR {
            self.add_to_set(ALL_SPEC, -1, 0, YEAR)?;
        }
        let dom_spec = !self.p.sets[DAY_OF_MONTH].contains(&NO_SPEC);
        let dow_spec = !self.p.sets[DAY_OF_WEEK].contains(&NO_SPEC);
        if dom_spec && dow_spec {
            return Err(self.err(
                DAY_OF_WEEK,
                "day-of-month and day-of-week are both specified; one of them must be '?'",
            ));
        }
        if !dom_spec && !dow_spec {
            return Err(self.err(
                DAY_OF_WEEK,
                "day-of-month and day-of-week are both '?'; one of them must be specified",
            ));
        }
        Ok(())
    }

    fn err(&self, kind: usize, reason: impl Into<String>) -> ScheduleError {
        ScheduleError::field_err(field_of(kind), reason)
    }

    /// Java's `charAt`, whose out-of-bounds exception Quartz reports as a parse error.
    fn char_at(&self, s: &[u16], i: usize, kind: usize) -> Res<u16> {
        s.get(i)
            .copied()
            .ok_or_else(|| self.err(kind, format!("'{}' ends too early", text(s))))
    }

    fn substring<'a>(&self, s: &'a [u16], from: usize, to: usize, kind: usize) -> Res<&'a [u16]> {
        s.get(from..to)
            .ok_or_else(|| self.err(kind, format!("'{}' ends too early", text(s))))
    }

    /// `Integer.parseInt(String.valueOf(c))`.
    fn digit_value(&self, c: u16, s: &[u16], kind: usize) -> Res<i32> {
        parse_int(&[c]).ok_or_else(|| self.err(kind, format!("'{}': expected a number at '{}'", text(s), text(&[c]))))
    }

    fn store_expression_vals(&mut self, s: &[u16], kind: usize) -> Res<()> {
        let mut i = 0;
        // skipWhiteSpace: tokens never contain ' ' or '\t', so this is a no-op kept for form.
        while i < s.len() && (s[i] == C_SPACE || s[i] == C_TAB) {
            i += 1;
        }
        if i >= s.len() {
            return Ok(());
        }
        let mut c = s[i];
        let is_letter = (u16::from(b'A')..=u16::from(b'Z')).contains(&c);
        if is_letter && s != [C_L] && s != [C_L, C_W] && !is_l_offset(s) {
            // Quartz reads a three-letter name here; a shorter token fails as it does, with a
            // reason a person can act on.
            let sub = s.get(i..i + 3).ok_or_else(|| {
                self.err(
                    kind,
                    format!("'{}' is neither a number nor a three-letter month or day name", text(s)),
                )
            })?;
            let sval;
            let mut eval = -1;
            if kind == MONTH {
                sval = month_number(sub) + 1;
                if sval <= 0 {
                    return Err(self.err(kind, format!("'{}' is not a month name (JAN-DEC)", text(sub))));
                }
                if s.len() > i + 3 && s[i + 3] == C_DASH {
                    i += 4;
                    let sub = self.substring(s, i, i + 3, kind)?;
                    eval = month_number(sub) + 1;
                    if eval <= 0 {
                        return Err(self.err(kind, format!("'{}' is not a month name (JAN-DEC)", text(sub))));
                    }
                }
            } else if kind == DAY_OF_WEEK {
                sval = day_number(sub);
                if sval < 0 {
                    return Err(self.err(kind, format!("'{}' is not a day name (SUN-SAT)", text(sub))));
                }
                if s.len() > i + 3 {
                    c = s[i + 3];
                    if c == C_DASH {
                        i += 4;
                        let sub = self.substring(s, i, i + 3, kind)?;
                        eval = day_number(sub);
                        if eval < 0 {
                            return Err(self.err(kind, format!("'{}' is not a day name (SUN-SAT)", text(sub))));
                        }
                    } else if c == C_HASH {
                        i += 4;
                        self.p.nthday_of_week = self.parse_nth(s, i)?;
                    } else if c == C_L {
                        self.p.lastday_of_week = true;
                    }
                }
            } else {
                return Err(self.err(
                    kind,
                    format!("'{}': names are only allowed in month and day-of-week", text(s)),
                ));
            }
            let incr = if eval != -1 { 1 } else { 0 };
            return self.add_to_set(sval, eval, incr, kind);
        }

        if c == C_QUESTION {
            i += 1;
            if i + 1 < s.len() && s[i] != C_SPACE && s[i + 1] != C_TAB {
                return Err(self.err(kind, format!("'{}': unexpected character after '?'", text(s))));
            }
            if kind != DAY_OF_WEEK && kind != DAY_OF_MONTH {
                return Err(self.err(kind, "'?' is only allowed in day-of-month and day-of-week"));
            }
            if kind == DAY_OF_WEEK && !self.p.lastday_of_month {
                // Quartz reads the last day-of-month value here, which throws when there is none.
                match self.p.sets[DAY_OF_MONTH].last() {
                    None => {
                        return Err(self.err(
                            DAY_OF_MONTH,
                            "no value (one of day-of-month and day-of-week must be specified)",
                        ))
                    }
                    Some(&NO_SPEC) => {
                        return Err(self.err(
                            kind,
                            "day-of-month and day-of-week are both '?'; one of them must be specified",
                        ))
                    }
                    Some(_) => {}
                }
            }
            return self.add_to_set(NO_SPEC, -1, 0, kind);
        }

        if c == C_STAR || c == C_SLASH {
            if c == C_STAR && i + 1 >= s.len() {
                return self.add_to_set(ALL_SPEC, -1, 0, kind);
            } else if c == C_SLASH && (i + 1 >= s.len() || s[i + 1] == C_SPACE || s[i + 1] == C_TAB) {
                return Err(self.err(kind, "'/' must be followed by a number"));
            } else if c == C_STAR {
                i += 1;
            }
            c = self.char_at(s, i, kind)?;
            let incr;
            if c == C_SLASH {
                i += 1;
                if i >= s.len() {
                    return Err(self.err(kind, "'/' must be followed by a number"));
                }
                // getNumericValue: Quartz meant "up to the next blank" but its loop runs to the
                // end of the value, so the whole rest must be a number.
                incr = parse_int(&s[i..])
                    .ok_or_else(|| self.err(kind, format!("'{}': '{}' is not a number", text(s), text(&s[i..]))))?;
                self.check_increment_range(incr, kind)?;
            } else {
                // "*X": Quartz takes any other character as "every value".
                incr = 1;
            }
            return self.add_to_set(ALL_SPEC, -1, incr, kind);
        }

        if c == C_L {
            i += 1;
            if kind == DAY_OF_MONTH {
                self.p.lastday_of_month = true;
            }
            if kind == DAY_OF_WEEK {
                self.add_to_set(7, 7, 0, kind)?;
            }
            if kind == DAY_OF_MONTH && s.len() > i {
                c = s[i];
                if c == C_DASH {
                    let (value, pos) = self.get_value(0, s, i + 1, kind)?;
                    self.p.lastday_offset = value;
                    if value > 30 {
                        return Err(self.err(
                            kind,
                            format!("'{}': the offset from the last day must be <= 30", text(s)),
                        ));
                    }
                    i = pos;
                }
                if s.len() > i && s[i] == C_W {
                    self.p.nearest_weekday = true;
                }
            }
            return Ok(());
        }

        if is_ascii_digit(c) {
            let mut val = i32::from(c - u16::from(b'0'));
            i += 1;
            if i >= s.len() {
                return self.add_to_set(val, -1, -1, kind);
            }
            c = s[i];
            if is_ascii_digit(c) {
                let (value, pos) = self.get_value(val, s, i, kind)?;
                val = value;
                i = pos;
            }
            return self.check_next(i, s, val, kind);
        }

        Err(self.err(kind, format!("'{}': unexpected character '{}'", text(s), text(&[c]))))
    }

    fn parse_nth(&self, s: &[u16], i: usize) -> Res<i32> {
        let rest = s.get(i..).unwrap_or(&[]);
        match parse_int(rest) {
            Some(n) if (1..=5).contains(&n) => Ok(n),
            _ => Err(self.err(
                DAY_OF_WEEK,
                format!("'{}': '#' must be followed by a number 1-5", text(s)),
            )),
        }
    }

    fn check_increment_range(&self, incr: i32, kind: usize) -> Res<()> {
        let max = match kind {
            SECOND | MINUTE => 59,
            HOUR => 23,
            DAY_OF_MONTH => 31,
            DAY_OF_WEEK => 7,
            MONTH => 12,
            _ => return Ok(()),
        };
        if incr > max {
            return Err(self.err(kind, format!("increment '{incr}' is larger than {max}")));
        }
        Ok(())
    }

    fn check_next(&mut self, pos: usize, s: &[u16], val: i32, kind: usize) -> Res<()> {
        let mut i = pos;
        if i >= s.len() {
            return self.add_to_set(val, -1, -1, kind);
        }
        let c = s[pos];
        if c == C_L {
            if kind == DAY_OF_WEEK {
                if !(1..=7).contains(&val) {
                    return Err(self.err(kind, format!("'{val}' is out of range {}", field_of(kind).range_text())));
                }
                self.p.lastday_of_week = true;
            } else {
                return Err(self.err(
                    kind,
                    format!("'{}': 'L' after a number is only allowed in day-of-week", text(s)),
                ));
            }
            self.p.sets[kind].insert(val);
            return Ok(());
        }
        if c == C_W {
            if kind == DAY_OF_MONTH {
                self.p.nearest_weekday = true;
            } else {
                return Err(self.err(kind, format!("'{}': 'W' is only allowed in day-of-month", text(s))));
            }
            if val > 31 {
                return Err(self.err(kind, format!("'{}': 'W' needs a day 1-31", text(s))));
            }
            self.p.sets[kind].insert(val);
            return Ok(());
        }
        if c == C_HASH {
            if kind != DAY_OF_WEEK {
                return Err(self.err(kind, format!("'{}': '#' is only allowed in day-of-week", text(s))));
            }
            i += 1;
            self.p.nthday_of_week = self.parse_nth(s, i)?;
            self.p.sets[kind].insert(val);
            return Ok(());
        }
        if c == C_DASH {
            i += 1;
            let c = self.char_at(s, i, kind)?;
            let v = self.digit_value(c, s, kind)?;
            let mut end = v;
            i += 1;
            if i >= s.len() {
                return self.add_to_set(val, end, 1, kind);
            }
            if is_ascii_digit(s[i]) {
                let (value, pos) = self.get_value(v, s, i, kind)?;
                end = value;
                i = pos;
            }
            if i < s.len() && s[i] == C_SLASH {
                i += 1;
                let c = self.char_at(s, i, kind)?;
                let v2 = self.digit_value(c, s, kind)?;
                i += 1;
                if i >= s.len() {
                    return self.add_to_set(val, end, v2, kind);
                }
                if is_ascii_digit(s[i]) {
                    let (v3, _) = self.get_value(v2, s, i, kind)?;
                    return self.add_to_set(val, end, v3, kind);
                }
                return self.add_to_set(val, end, v2, kind);
            }
            return self.add_to_set(val, end, 1, kind);
        }
        if c == C_SLASH {
            if i + 1 >= s.len() || s[i + 1] == C_SPACE || s[i + 1] == C_TAB {
                return Err(self.err(kind, "'/' must be followed by a number"));
            }
            i += 1;
            let c = s[i];
            let v2 = self.digit_value(c, s, kind)?;
            i += 1;
            if i >= s.len() {
                self.check_increment_range(v2, kind)?;
                return self.add_to_set(val, -1, v2, kind);
            }
            if is_ascii_digit(s[i]) {
                let (v3, _) = self.get_value(v2, s, i, kind)?;
                self.check_increment_range(v3, kind)?;
                return self.add_to_set(val, -1, v3, kind);
            }
            return Err(self.err(kind, format!("'{}': unexpected character after '/'", text(s))));
        }
        // Anything else after a number is ignored by Quartz ("5X" is 5).
        self.add_to_set(val, -1, 0, kind)
    }

    /// Quartz's `getValue`: the digits at `i` appended to `v`, and the position after them
    /// (one past the end when the digits run to the end, as Quartz does).
    fn get_value(&self, v: i32, s: &[u16], mut i: usize, kind: usize) -> Res<(i32, usize)> {
        let mut c = self.char_at(s, i, kind)?;
        let mut digits: Vec<u16> = v.to_string().encode_utf16().collect();
        while is_ascii_digit(c) {
            digits.push(c);
            i += 1;
            if i >= s.len() {
                break;
            }
            c = s[i];
        }
        let pos = if i < s.len() { i } else { i + 1 };
        let value = parse_int(&digits).ok_or_else(|| self.err(kind, format!("'{}': number too large", text(s))))?;
        Ok((value, pos))
    }

    fn add_to_set(&mut self, val: i32, end: i32, incr: i32, kind: usize) -> Res<()> {
        let out_of_range = match kind {
            SECOND | MINUTE => (!(0..=59).contains(&val) || end > 59) && val != ALL_SPEC,
            HOUR => (!(0..=23).contains(&val) || end > 23) && val != ALL_SPEC,
            DAY_OF_MONTH => (!(1..=31).contains(&val) || end > 31) && val != ALL_SPEC && val != NO_SPEC,
            MONTH => (!(1..=12).contains(&val) || end > 12) && val != ALL_SPEC,
            DAY_OF_WEEK => (val == 0 || val > 7 || end > 7) && val != ALL_SPEC && val != NO_SPEC,
            _ => false,
        };
        if out_of_range {
            let (lo, hi) = match kind {
                SECOND | MINUTE => (0, 59),
                HOUR => (0, 23),
                DAY_OF_MONTH | DAY_OF_WEEK => (1, if kind == DAY_OF_MONTH { 31 } else { 7 }),
                _ => (1, 12),
            };
            let bad = if val < lo || val > hi { val } else { end };
            return Err(self.err(kind, format!("'{bad}' is out of range {}", field_of(kind).range_text())));
        }

        if (incr == 0 || incr == -1) && val != ALL_SPEC {
            self.p.sets[kind].insert(if val != -1 { val } else { NO_SPEC });
            return Ok(());
        }

        let mut start_at = val;
        let mut stop_at = end;
        let mut incr = incr;
        if val == ALL_SPEC && incr <= 0 {
            incr = 1;
            self.p.sets[kind].insert(ALL_SPEC);
        }
        let (min, max_value) = match kind {
            SECOND | MINUTE => (0, 59),
            HOUR => (0, 23),
            DAY_OF_MONTH => (1, 31),
            MONTH => (1, 12),
            DAY_OF_WEEK => (1, 7),
            _ => (1970, self.max_year),
        };
        if stop_at == -1 {
            stop_at = max_value;
        }
        if start_at == -1 || start_at == ALL_SPEC {
            start_at = min;
        }

        // A range whose end is below its start wraps around (22-2 in hours is 22,23,0,1,2).
        let mut wrap = -1;
        if stop_at < start_at {
            wrap = match kind {
                SECOND | MINUTE => 60,
                HOUR => 24,
                MONTH => 12,
                DAY_OF_WEEK => 7,
                DAY_OF_MONTH => 31,
                _ => return Err(self.err(kind, format!("the range starts at {start_at}, after its end {stop_at}"))),
            };
            stop_at += wrap;
        }
        let one_based = matches!(kind, MONTH | DAY_OF_WEEK | DAY_OF_MONTH);
        let mut i = i64::from(start_at);
        while i <= i64::from(stop_at) {
            let v = i as i32;
            if wrap == -1 {
                if kind == YEAR && v > YEAR_CEILING {
                    break;
                }
                self.p.sets[kind].insert(v);
            } else {
                let mut v2 = v % wrap;
                if v2 == 0 && one_based {
                    v2 = wrap;
                }
                self.p.sets[kind].insert(v2);
            }
            i += i64::from(incr);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sets(expr: &str) -> Parsed {
        parse(expr, 2126).unwrap_or_else(|e| panic!("{expr}: {e}"))
    }

    fn field_err(expr: &str) -> (CronField, String) {
        match parse(expr, 2126) {
            Err(ScheduleError::Field { field, reason }) => (field, reason),
            other => panic!("{expr}: expected a field error, got {other:?}"),
        }
    }

    fn vals(p: &Parsed, kind: usize) -> Vec<i32> {
        p.sets[kind].iter().copied().collect()
    }

    #[test]
    fn basic_sets() {
        let p = sets("0/15 5-50/10 22-2 ? JAN,MAR-MAY MON-FRI 2027-2030");
        assert_eq!(vals(&p, SECOND), vec![0, 15, 30, 45]);
        assert_eq!(vals(&p, MINUTE), vec![5, 15, 25, 35, 45]);
        assert_eq!(vals(&p, HOUR), vec![0, 1, 2, 22, 23]);
        assert_eq!(vals(&p, DAY_OF_MONTH), vec![NO_SPEC]);
        assert_eq!(vals(&p, MONTH), vec![1, 3, 4, 5]);
        assert_eq!(vals(&p, DAY_OF_WEEK), vec![2, 3, 4, 5, 6]);
        assert_eq!(vals(&p, YEAR), vec![2027, 2028, 2029, 2030]);
    }

    #[test]
    fn special_days() {
        let p = sets("0 0 0 L-3W * ?");
        assert!(p.lastday_of_month && p.nearest_weekday);
        assert_eq!(p.lastday_offset, 3);
        let p = sets("0 0 0 ? * 6#3");
        assert_eq!((vals(&p, DAY_OF_WEEK), p.nthday_of_week), (vec![6], 3));
        let p = sets("0 0 0 ? * fril");
        assert!(p.lastday_of_week);
        assert_eq!(vals(&p, DAY_OF_WEEK), vec![6]);
        // 'L' alone in day-of-week is Saturday, not "last".
        let p = sets("0 0 0 ? * L");
        assert!(!p.lastday_of_week);
        assert_eq!(vals(&p, DAY_OF_WEEK), vec![7]);
    }

    #[test]
    fn quartz_quirks_are_accepted() {
        // Trailing characters ignored, fields beyond the seventh ignored, '#' value unchecked.
        for expr in [
            "0 0 0 ? * MONDAY",
            "5X 0 0 * * ?",
            "0 0 0 * * ? 2027 extra fields",
            "0 0 0 ? * 9#2",
            "0-59/90 * * * * ?",
            "0 0 0 ?X * 1",
            "0 0 0 L-W * ?",
        ] {
            sets(expr);
        }
    }

    #[test]
    fn errors_name_the_field() {
        let (field, reason) = field_err("0 0 0 ? * 8");
        assert_eq!(field, CronField::DayOfWeek);
        assert_eq!(reason, "'8' is out of range 1-7 (1=SUN … 7=SAT)");
        assert_eq!(field_err("*/90 * * * * ?").0, CronField::Second);
        assert_eq!(field_err("0 60 * * * ?").0, CronField::Minute);
        assert_eq!(field_err("0 0 24 * * ?").0, CronField::Hour);
        assert_eq!(field_err("0 0 0 32 * ?").0, CronField::DayOfMonth);
        assert_eq!(field_err("0 0 0 1 13 ?").0, CronField::Month);
        assert_eq!(field_err("0 0 0 1 FOO ?").0, CronField::Month);
        assert_eq!(field_err("0 0 0 1 * MON").0, CronField::DayOfWeek);
        assert_eq!(field_err("0 0 0 ? * ?").0, CronField::DayOfWeek);
        assert_eq!(field_err("0 0 0 ? * 2#6").0, CronField::DayOfWeek);
        assert_eq!(field_err("0 0 0 ? * 2#1,3#2").0, CronField::DayOfWeek);
        assert_eq!(field_err("0 0 0 L,15 * ?").0, CronField::DayOfMonth);
        assert_eq!(field_err("0 0 0 L-31 * ?").0, CronField::DayOfMonth);
        assert_eq!(field_err("0 0 0 * * ? 2030-2027").0, CronField::Year);
        assert_eq!(field_err("0 0 ? * * ?").0, CronField::Hour);
        assert_eq!(field_err("0 5- * * * ?").0, CronField::Minute);
        assert!(matches!(
            parse("0 0 0 * *", 2126),
            Err(ScheduleError::FieldCount { found: 5 })
        ));
    }

    #[test]
    fn java_integer_parsing() {
        assert_eq!(parse_int(&"+3".encode_utf16().collect::<Vec<_>>()), Some(3));
        assert_eq!(parse_int(&"-".encode_utf16().collect::<Vec<_>>()), None);
        assert_eq!(parse_int(&"2147483648".encode_utf16().collect::<Vec<_>>()), None);
        assert_eq!(
            parse_int(&"-2147483648".encode_utf16().collect::<Vec<_>>()),
            Some(i32::MIN)
        );
        // Arabic-Indic digit three, which Java's parseInt accepts.
        assert_eq!(parse_int(&[0x0663]), Some(3));
    }
}
