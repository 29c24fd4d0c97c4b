//! How the client prints what the REST API answers, for people: aligned tables, one run or
//! job as a list of fields, times in a job's own zone with the zone named, and XXL-JOB's `<br>`
//! as line breaks. (`--json` prints the API's answer instead.)

use chime_admin::api::{Group, Job};
use chime_admin::model::Run;
use chime_protocol::ScheduleType;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashMap;

/// Chime's and XXL-JOB's run messages (and some executors' logs) separate lines with `<br>`:
/// shown as line breaks, each new line starting with `indent`.
pub(super) fn br_lines(text: &str, indent: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('<') {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        let tag = ["<br>", "<br/>", "<br />"]
            .into_iter()
            .find(|t| tail.get(..t.len()).is_some_and(|h| h.eq_ignore_ascii_case(t)));
        match tag {
            Some(t) => {
                out.push('\n');
                out.push_str(indent);
                rest = &tail[t.len()..];
            }
            None => {
                out.push('<');
                rest = &tail[1..];
            }
        }
    }
    out.push_str(rest);
    // Two breaks in a row leave a line of indentation only: printed empty.
    let blank = format!("\n{indent}\n");
    while !indent.is_empty() && out.contains(&blank) {
        out = out.replace(&blank, "\n\n");
    }
    out
}

/// A time (epoch ms) in the zone `tz` (an IANA name), with the zone named:
/// `2026-11-24 09:30:00 Asia/Shanghai`. The one format for job times; an unknown zone falls
/// back to UTC, named as such. 0 (never) is `-`.
pub(super) fn zoned(ms: i64, tz: &str) -> String {
    if ms == 0 {
        return "-".to_owned();
    }
    let Some(at) = chrono::DateTime::from_timestamp_millis(ms) else {
        return ms.to_string();
    };
    match tz.parse::<chrono_tz::Tz>() {
        Ok(zone) => format!("{} {tz}", at.with_timezone(&zone).format("%Y-%m-%d %H:%M:%S")),
        Err(_) => format!("{} UTC", at.format("%Y-%m-%d %H:%M:%S")),
    }
}

/// A time (epoch ms) to the millisecond in this machine's zone, with its offset, for runs,
/// executors and workflow instances: `2026-11-29 04:12:05.123 +01:00`. The offset makes the
/// time unambiguous (a copy in a ticket, a machine in another zone, the hour repeated when
/// summer time ends); the local clock makes it the one the reader compares with. `TZ` chooses
/// another zone (`TZ=UTC chime run list`). 0 (not yet) is `-`.
pub(super) fn time(ms: i64) -> String {
    time_in(ms, &chrono::Local)
}

/// [`time`] in the zone `zone`.
fn time_in<Z: chrono::TimeZone>(ms: i64, zone: &Z) -> String
where
    Z::Offset: std::fmt::Display,
{
    if ms == 0 {
        return "-".to_owned();
    }
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|d| d.with_timezone(zone).format("%Y-%m-%d %H:%M:%S%.3f %:z").to_string())
        .unwrap_or_else(|| ms.to_string())
}

/// A JSON value of an answer without a type of its own, as a table cell.
pub(super) fn cell(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        Value::Array(a) => a.iter().map(cell).collect::<Vec<_>>().join(","),
        other => other.to_string(),
    }
}

/// The name a value goes by on the wire (`auto`, `success`, `not_run`): how the API's enums
/// are shown.
pub(super) fn wire_name(v: &impl Serialize) -> String {
    serde_json::to_value(v).map(|v| cell(&v)).unwrap_or_default()
}

/// `text` with `<br>` as spaces, cut to `n` characters with `…`, for one table cell.
pub(super) fn one_line(text: &str, n: usize) -> String {
    let flat = br_lines(text, "").replace('\n', " ");
    if flat.chars().count() > n {
        format!("{}…", flat.chars().take(n - 1).collect::<String>())
    } else {
        flat
    }
}

/// Prints rows as an aligned table.
pub(super) fn table(headers: &[&str], rows: Vec<Vec<String>>) {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for r in &rows {
        for (i, c) in r.iter().enumerate() {
            widths[i] = widths[i].max(c.chars().count());
        }
    }
    let line = |cells: Vec<String>| {
        let parts: Vec<String> = cells
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{c:<w$}", w = widths[i]))
            .collect();
        outln!("{}", parts.join("  ").trim_end());
    };
    line(headers.iter().map(|h| h.to_string()).collect());
    for r in rows {
        line(r);
    }
}

/// A group as the admin answers it. [`Group`] reads every field but its token: the answer
/// never holds the token, only whether one is set.
#[derive(Debug, Deserialize)]
pub(super) struct GroupAnswer {
    /// The group.
    #[serde(flatten)]
    pub(super) group: Group,
    /// Whether the group has an access token of its own.
    #[serde(default)]
    pub(super) access_token_set: bool,
}

pub(super) fn print_groups(groups: &[GroupAnswer]) {
    let rows = groups
        .iter()
        .map(
            |GroupAnswer {
                 group: g,
                 access_token_set,
             }| {
                // Which token the group's executors need: a group without one stands out.
                let token = if g.insecure_no_token {
                    "NONE (insecure)"
                } else if *access_token_set {
                    "own"
                } else {
                    "admin's"
                };
                vec![
                    g.id.to_string(),
                    g.app_name.clone(),
                    g.title.clone(),
                    wire_name(&g.address_type),
                    g.protocol.to_string(),
                    token.to_owned(),
                    g.addresses.join(","),
                ]
            },
        )
        .collect();
    table(
        &["ID", "APP NAME", "TITLE", "TYPE", "PROTOCOL", "TOKEN", "ADDRESSES"],
        rows,
    );
}

pub(super) fn print_jobs(jobs: &[Job], groups: &GroupNames) {
    let rows = jobs
        .iter()
        .map(|j| {
            let schedule = match j.schedule_type {
                ScheduleType::None => "manual".to_owned(),
                t if j.calendar.is_empty() => format!("{t} {}", j.schedule_expr),
                // Said here, as a schedule on a calendar does not fire on every day it names.
                t => format!("{t} {} (calendar {})", j.schedule_expr, j.calendar),
            };
            vec![
                j.id.to_string(),
                groups.name(j.group_id),
                j.handler.clone(),
                schedule,
                j.time_zone.clone(),
                j.route_strategy.to_string(),
                match (j.running, j.paused_until > chime_admin::model::now_ms()) {
                    (true, true) => "paused",
                    (true, false) => "running",
                    (false, _) => "stopped",
                }
                .to_owned(),
                if j.next_fire_at == chime_admin::model::WAITING_FOR_RUN_END {
                    "after its run ends".to_owned()
                } else {
                    zoned(j.next_fire_at, &j.time_zone)
                },
            ]
        })
        .collect();
    table(
        &[
            "ID",
            "GROUP",
            "HANDLER",
            "SCHEDULE",
            "TZ",
            "ROUTE",
            "STATE",
            "NEXT FIRE",
        ],
        rows,
    );
}

pub(super) fn print_runs(runs: &[Run]) {
    let rows = runs
        .iter()
        .map(|r| {
            let message = if r.handle_msg.is_empty() {
                &r.trigger_msg
            } else {
                &r.handle_msg
            };
            vec![
                r.id.to_string(),
                r.job_id.to_string(),
                r.trigger_type.to_string(),
                time(r.scheduled_at),
                time(r.triggered_at),
                r.executor_address.clone(),
                format!("{}/{}", r.shard_index, r.shard_total),
                wire_name(&r.status),
                one_line(message, 60),
            ]
        })
        .collect();
    table(
        &[
            "ID",
            "JOB",
            "TYPE",
            "SCHEDULED",
            "TRIGGERED",
            "EXECUTOR",
            "SHARD",
            "STATUS",
            "RESULT",
        ],
        rows,
    );
}

/// Group ids to app names, for tables that would otherwise show bare ids.
#[derive(Default)]
pub(super) struct GroupNames(pub(super) HashMap<i64, String>);

impl GroupNames {
    /// The app name of the group `id`, or the id when the group is unknown (deleted, or the
    /// listing failed).
    pub(super) fn name(&self, id: i64) -> String {
        self.0.get(&id).cloned().unwrap_or_else(|| id.to_string())
    }
}

/// A job as a list of fields — every field it has on the wire, by its API name —, with times
/// in the job's own zone and its group by name, then its next fire times when `next` (the
/// answer of `/v1/jobs/{id}/next`) has any.
pub(super) fn print_job_detail(job: &Job, groups: &GroupNames, next: Option<&Value>) {
    let tz = job.time_zone.as_str();
    let fields = match serde_json::to_value(job) {
        Ok(Value::Object(fields)) => fields,
        _ => Default::default(),
    };
    let rows = fields
        .iter()
        .map(|(k, x)| {
            let value = if k == "group_id" {
                format!("{} ({})", groups.name(job.group_id), job.group_id)
            } else if k == "more_schedules" {
                let texts: Vec<String> = job
                    .more_schedules
                    .iter()
                    .map(super::job_body::more_schedule_text)
                    .collect();
                texts.join("; ")
            } else if k.ends_with("_at") || k == "paused_until" {
                zoned(x.as_i64().unwrap_or_default(), tz)
            } else {
                cell(x)
            };
            vec![k.clone(), value]
        })
        .collect();
    table(&["FIELD", "VALUE"], rows);
    let times = next_fire_times(next);
    if !times.is_empty() {
        outln!("\nnext fire times:");
        for (at, param) in times {
            // The parameter as a run of that fire would send it, when placeholders change it.
            if param != job.param {
                outln!("  {}  param: {param}", zoned(at, tz));
            } else {
                outln!("  {}", zoned(at, tz));
            }
        }
    }
    let skipped = skipped_days(next);
    if !skipped.is_empty() {
        outln!("\nskipped by calendar {}:", job.calendar);
        for (at, why) in skipped {
            outln!("  {}  {why}", zoned(at, tz));
        }
    }
}

/// The days a `/v1/jobs/{id}/next` answer says the job's business calendar leaves out, each
/// with its first left-out fire time and why (a holiday's name, or `SAT: not a workday`).
pub(super) fn skipped_days(next: Option<&Value>) -> Vec<(i64, String)> {
    timed_entries(next, "skipped", "why")
}

/// The times (epoch ms) of a `/v1/jobs/{id}/next` answer, each with the parameter a run of it
/// would be sent with.
pub(super) fn next_fire_times(next: Option<&Value>) -> Vec<(i64, String)> {
    timed_entries(next, "next", "param")
}

/// The entries of the list `list` of a `/v1/jobs/{id}/next` answer, each as its `at` and its
/// text field `text` (missing ones as 0 and "").
fn timed_entries(next: Option<&Value>, list: &str, text: &str) -> Vec<(i64, String)> {
    next.and_then(|n| n[list].as_array())
        .into_iter()
        .flatten()
        .map(|e| {
            (
                e["at"].as_i64().unwrap_or_default(),
                e[text].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

pub(super) fn print_run_detail(r: &Run) {
    let at = |ms: i64| format!("{} ({ms})", time(ms));
    let mut rows: Vec<Vec<String>> = [
        ("id", r.id.to_string()),
        ("job_id", r.job_id.to_string()),
        ("group_id", r.group_id.to_string()),
        ("status", wire_name(&r.status)),
        ("trigger_type", r.trigger_type.to_string()),
        ("scheduled_at", at(r.scheduled_at)),
        ("triggered_at", at(r.triggered_at)),
        ("executor_address", r.executor_address.clone()),
        ("handler", r.handler.clone()),
        ("param", r.param.clone()),
        ("shard_index", r.shard_index.to_string()),
        ("shard_total", r.shard_total.to_string()),
        ("retry_count", r.retry_count.to_string()),
        ("trigger_code", r.trigger_code.to_string()),
        ("handle_code", r.handle_code.to_string()),
        ("handled_at", at(r.handled_at)),
    ]
    .into_iter()
    .map(|(name, value)| vec![name.to_owned(), value])
    .collect();
    // Shown only when they say something: who killed the run, and the runs a retry links.
    let links = [
        ("killed_by", r.killed_by.clone()),
        ("retry_of", r.retry_of.map(|id| id.to_string())),
        ("retried_by", r.retried_by.map(|id| id.to_string())),
    ];
    for (name, value) in links {
        if let Some(value) = value {
            rows.push(vec![name.to_owned(), value]);
        }
    }
    let alarm = wire_name(&r.alarm);
    let shown = if r.alarm_msg.is_empty() {
        alarm
    } else {
        format!("{alarm}: {}", r.alarm_msg)
    };
    rows.push(vec!["alarm".to_owned(), shown]);
    table(&["FIELD", "VALUE"], rows);
    outln!("\ntrigger message:\n  {}", br_lines(&r.trigger_msg, "  "));
    outln!("\nresult message:\n  {}", br_lines(&r.handle_msg, "  "));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_times_carry_their_offset() {
        let at = 1_795_570_200_123_i64;
        let utc = chrono::FixedOffset::east_opt(0).unwrap();
        assert_eq!(time_in(at, &utc), "2026-11-25 01:30:00.123 +00:00");
        let tokyo = chrono::FixedOffset::east_opt(9 * 3600).unwrap();
        assert_eq!(time_in(at, &tokyo), "2026-11-25 10:30:00.123 +09:00");
        assert_eq!(time_in(0, &tokyo), "-");
    }
}
