//! How the client prints what the REST API answers, for people: aligned tables, one run or
//! job as a list of fields, times in a job's own zone with the zone named, and XXL-JOB's `<br>`
//! as line breaks. (`--json` prints the API's answer instead.)

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
/// back to UTC, named as such.
pub(super) fn zoned(v: &Value, tz: &str) -> String {
    let Some(ms) = v.as_i64().filter(|ms| *ms != 0) else {
        return "-".to_owned();
    };
    let Some(at) = chrono::DateTime::from_timestamp_millis(ms) else {
        return ms.to_string();
    };
    match tz.parse::<chrono_tz::Tz>() {
        Ok(zone) => format!("{} {tz}", at.with_timezone(&zone).format("%Y-%m-%d %H:%M:%S")),
        Err(_) => format!("{} UTC", at.format("%Y-%m-%d %H:%M:%S")),
    }
}

pub(super) fn cell(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        Value::Array(a) => a.iter().map(cell).collect::<Vec<_>>().join(","),
        other => other.to_string(),
    }
}

pub(super) fn time(v: &Value) -> String {
    match v.as_i64() {
        Some(0) | None => "-".to_owned(),
        Some(ms) => chrono::DateTime::from_timestamp_millis(ms)
            .map(|d| d.format("%Y-%m-%d %H:%M:%S%.3f").to_string())
            .unwrap_or_else(|| ms.to_string()),
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

fn truncate(s: &str, n: usize) -> String {
    let flat = br_lines(s, "").replace('\n', " ");
    if flat.chars().count() > n {
        format!("{}…", flat.chars().take(n - 1).collect::<String>())
    } else {
        flat
    }
}

pub(super) fn print_groups(v: &Value) {
    let rows = v.as_array().cloned().unwrap_or_default();
    table(
        &["ID", "APP NAME", "TITLE", "TYPE", "PROTOCOL", "TOKEN", "ADDRESSES"],
        rows.iter()
            .map(|g| {
                // Which token the group's executors need: a group without one stands out.
                let token = if g["insecure_no_token"] == true {
                    "NONE (insecure)"
                } else if g["access_token_set"] == true {
                    "own"
                } else {
                    "admin's"
                };
                vec![
                    cell(&g["id"]),
                    cell(&g["app_name"]),
                    cell(&g["title"]),
                    cell(&g["address_type"]),
                    cell(&g["protocol"]),
                    token.to_owned(),
                    cell(&g["addresses"]),
                ]
            })
            .collect(),
    );
}

pub(super) fn print_jobs(v: &Value, groups: &GroupNames) {
    let rows: Vec<Value> = match v {
        Value::Array(a) => a.clone(),
        other => vec![other.clone()],
    };
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
        rows.iter()
            .map(|j| {
                let sched = match j["schedule_type"].as_str() {
                    Some("NONE") => "manual".to_owned(),
                    Some(t) => format!("{t} {}", cell(&j["schedule_expr"])),
                    None => String::new(),
                };
                vec![
                    cell(&j["id"]),
                    groups.name(&j["group_id"]),
                    cell(&j["handler"]),
                    sched,
                    cell(&j["time_zone"]),
                    cell(&j["route_strategy"]),
                    if j["running"].as_bool() == Some(true) {
                        "running".into()
                    } else {
                        "stopped".into()
                    },
                    zoned(&j["next_fire_at"], j["time_zone"].as_str().unwrap_or("")),
                ]
            })
            .collect(),
    );
}

pub(super) fn print_runs(v: &Value) {
    let rows: Vec<Value> = match v {
        Value::Array(a) => a.clone(),
        other => vec![other.clone()],
    };
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
        rows.iter()
            .map(|r| {
                vec![
                    cell(&r["id"]),
                    cell(&r["job_id"]),
                    cell(&r["trigger_type"]),
                    time(&r["scheduled_at"]),
                    time(&r["triggered_at"]),
                    cell(&r["executor_address"]),
                    format!("{}/{}", cell(&r["shard_index"]), cell(&r["shard_total"])),
                    cell(&r["status"]),
                    truncate(
                        r["handle_msg"]
                            .as_str()
                            .filter(|s| !s.is_empty())
                            .unwrap_or(r["trigger_msg"].as_str().unwrap_or("")),
                        60,
                    ),
                ]
            })
            .collect(),
    );
}

/// Group ids to app names, for tables that would otherwise show bare ids.
#[derive(Default)]
pub(super) struct GroupNames(pub(super) HashMap<i64, String>);

impl GroupNames {
    /// The app name of the group with id `v`, or the id when the group is unknown (deleted,
    /// or the listing failed).
    pub(super) fn name(&self, v: &Value) -> String {
        v.as_i64()
            .and_then(|id| self.0.get(&id).cloned())
            .unwrap_or_else(|| cell(v))
    }
}

/// A job as a list of fields, with times in the job's own zone and its group by name.
pub(super) fn print_job_detail(j: &Value, groups: &GroupNames, next: Option<&Value>) {
    let tz = j["time_zone"].as_str().unwrap_or("");
    let rows = j
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, x)| {
                    let value = if k == "group_id" {
                        format!("{} ({})", groups.name(x), cell(x))
                    } else if k.ends_with("_at") {
                        zoned(x, tz)
                    } else {
                        cell(x)
                    };
                    vec![k.clone(), value]
                })
                .collect()
        })
        .unwrap_or_default();
    table(&["FIELD", "VALUE"], rows);
    if let Some(next) = next {
        let times = next["next"].as_array().cloned().unwrap_or_default();
        if !times.is_empty() {
            outln!("\nnext fire times:");
            for t in &times {
                outln!("  {}", zoned(&t["at"], tz));
            }
        }
    }
}

pub(super) fn print_run_detail(r: &Value) {
    let fields = [
        "id",
        "job_id",
        "group_id",
        "status",
        "trigger_type",
        "scheduled_at",
        "triggered_at",
        "executor_address",
        "handler",
        "param",
        "shard_index",
        "shard_total",
        "retry_count",
        "trigger_code",
        "handle_code",
        "handled_at",
    ];
    let mut rows: Vec<Vec<String>> = fields
        .iter()
        .map(|f| {
            vec![
                f.to_string(),
                if f.ends_with("_at") {
                    format!("{} ({})", time(&r[*f]), cell(&r[*f]))
                } else {
                    cell(&r[*f])
                },
            ]
        })
        .collect();
    // Shown only when they say something: who killed the run, and the runs a retry links.
    for f in ["killed_by", "retry_of", "retried_by"] {
        if !r[f].is_null() {
            rows.push(vec![f.to_owned(), cell(&r[f])]);
        }
    }
    // Admins older than these fields send no `alarm`: leave the row out rather than guess.
    if let Some(alarm) = r["alarm"].as_str() {
        let why = r["alarm_msg"].as_str().unwrap_or("");
        let shown = if why.is_empty() {
            alarm.to_owned()
        } else {
            format!("{alarm}: {why}")
        };
        rows.push(vec!["alarm".to_owned(), shown]);
    }
    table(&["FIELD", "VALUE"], rows);
    outln!(
        "\ntrigger message:\n  {}",
        br_lines(r["trigger_msg"].as_str().unwrap_or(""), "  ")
    );
    outln!(
        "\nresult message:\n  {}",
        br_lines(r["handle_msg"].as_str().unwrap_or(""), "  ")
    );
}
