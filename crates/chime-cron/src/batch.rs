//! The `chime cron next --batch` line protocol, shared by the CLI and the conformance test
//! (whose Java oracle, `tests/oracle/QuartzOracle.java`, speaks the same protocol).
//!
//! Input, one case per line: `EXPR<TAB>ZONE<TAB>AFTER_MS<TAB>COUNT`.
//! Output, one line per input line: `EXPR<TAB>ZONE<TAB>AFTER_MS<TAB>t1,t2,…` (epoch
//! milliseconds, fewer than COUNT — possibly none — when the schedule ends) or
//! `EXPR<TAB>ZONE<TAB>AFTER_MS<TAB>INVALID`.
//!
//! A line is INVALID when it does not have exactly four columns, AFTER_MS is not a signed
//! 64-bit integer, COUNT is not an integer in 1..=10000, ZONE is not a known IANA zone, or EXPR
//! is not a valid Quartz expression. The first three columns are echoed as given (missing ones
//! as empty strings); a trailing CR is ignored.

use crate::cron::CronExpr;
use crate::zone::{rules_for, ZoneRules};
use chrono_tz::Tz;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Arc;

/// Largest COUNT accepted (keeps one line's output bounded).
pub const MAX_COUNT: u32 = 10_000;

/// Answers batch lines, caching parsed expressions and zones between lines.
#[derive(Default)]
pub struct Batch {
    exprs: HashMap<String, Option<Arc<CronExpr>>>,
    zones: HashMap<String, Option<Arc<ZoneRules>>>,
}

impl Batch {
    /// An answerer with empty caches.
    pub fn new() -> Batch {
        Batch::default()
    }

    /// Appends the answer to `line` (without a newline) to `out`.
    pub fn answer_into(&mut self, line: &str, out: &mut String) {
        let line = line.strip_suffix('\r').unwrap_or(line);
        let mut cols = line.split('\t');
        let expr = cols.next().unwrap_or("");
        let zone = cols.next().unwrap_or("");
        let after = cols.next().unwrap_or("");
        let count = cols.next();
        let extra = cols.next().is_some();
        out.push_str(expr);
        out.push('\t');
        out.push_str(zone);
        out.push('\t');
        out.push_str(after);
        out.push('\t');
        let answer = match count {
            Some(count) if !extra => self.times(expr, zone, after, count),
            _ => None,
        };
        match answer {
            None => out.push_str("INVALID"),
            Some((expr, rules, after, count)) => {
                let mut t = after;
                for k in 0..count {
                    match expr.next_after_in(t, &rules) {
                        Some(next) => {
                            if k > 0 {
                                out.push(',');
                            }
                            let _ = write!(out, "{next}");
                            t = next;
                        }
                        None => break,
                    }
                }
            }
        }
    }

    /// Validates the columns of a line; `None` means INVALID.
    #[allow(clippy::type_complexity)]
    fn times(
        &mut self,
        expr: &str,
        zone: &str,
        after: &str,
        count: &str,
    ) -> Option<(Arc<CronExpr>, Arc<ZoneRules>, i64, u32)> {
        let after: i64 = parse_java_long(after)?;
        let count: u32 = parse_java_long(count)
            .and_then(|c| u32::try_from(c).ok())
            .filter(|c| (1..=MAX_COUNT).contains(c))?;
        let rules = match self.zones.get(zone) {
            Some(cached) => cached.clone(),
            None => {
                let rules = zone.parse::<Tz>().ok().map(rules_for);
                self.zones.insert(zone.to_string(), rules.clone());
                rules
            }
        }?;
        let expr = match self.exprs.get(expr) {
            Some(cached) => cached.clone(),
            None => {
                let parsed = CronExpr::parse(expr).ok().map(Arc::new);
                self.exprs.insert(expr.to_string(), parsed.clone());
                parsed
            }
        }?;
        Some((expr, rules, after, count))
    }
}

/// Java's `Long.parseLong` for ASCII input: optional sign, digits, no overflow.
fn parse_java_long(s: &str) -> Option<i64> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let s = s.strip_prefix('+').unwrap_or(s);
    s.parse().ok()
}

/// Answers one batch line (see the module documentation), without a trailing newline.
///
/// Uses a per-thread [`Batch`], so repeated expressions are parsed once.
pub fn answer_line(line: &str) -> String {
    thread_local! {
        static BATCH: std::cell::RefCell<Batch> = std::cell::RefCell::new(Batch::new());
    }
    let mut out = String::with_capacity(line.len() + 32);
    BATCH.with(|b| b.borrow_mut().answer_into(line, &mut out));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocol() {
        assert_eq!(
            answer_line("0 0 12 LW * ?\tUTC\t1795305600000\t2"),
            "0 0 12 LW * ?\tUTC\t1795305600000\t1796040000000,1798718400000"
        );
        assert_eq!(
            answer_line("0 0 0 * * ? 2027\tUTC\t1830297600000\t3"),
            "0 0 0 * * ? 2027\tUTC\t1830297600000\t"
        );
        assert_eq!(answer_line("0 0 0 ? * 8\tUTC\t0\t1"), "0 0 0 ? * 8\tUTC\t0\tINVALID");
        assert_eq!(
            answer_line("0 0 0 * * ?\tMars/Base\t0\t1"),
            "0 0 0 * * ?\tMars/Base\t0\tINVALID"
        );
        assert_eq!(answer_line("0 0 0 * * ?\tUTC\tx\t1"), "0 0 0 * * ?\tUTC\tx\tINVALID");
        assert_eq!(answer_line("0 0 0 * * ?\tUTC\t0\t0"), "0 0 0 * * ?\tUTC\t0\tINVALID");
        assert_eq!(answer_line("0 0 0 * * ?\tUTC\t0\t1\t5"), "0 0 0 * * ?\tUTC\t0\tINVALID");
        assert_eq!(answer_line("only"), "only\t\t\tINVALID");
        assert_eq!(answer_line(""), "\t\t\tINVALID");
        assert_eq!(
            answer_line("0 0 0 * * ?\tUTC\t+0\t1\r"),
            "0 0 0 * * ?\tUTC\t+0\t86400000"
        );
    }
}
