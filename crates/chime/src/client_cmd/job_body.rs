//! The bodies `chime job add|update` and `chime group add|update` send, as the admin's own
//! wire types ([`chime_admin::api`]), and `--set FIELD=VALUE` for any job field by its API
//! name: a field the admin gains is settable here without a new flag, checked against the
//! body's type before anything is sent.

use super::{alarm_contacts, Failure, GroupFields, JobFields};
use chime_admin::api::{GroupSpec, JobSpec, MoreSchedule, SchedulePatch};
use serde_json::{Map, Value};

/// The job body of `job add` (`creating`) or `job update` from the flags given.
pub(super) fn job_spec(f: &JobFields, creating: bool) -> Result<JobSpec, Failure> {
    let (schedule_type, schedule_expr) = if let Some(c) = &f.cron {
        (Some("CRON"), Some(c.clone()))
    } else if let Some(r) = &f.fix_rate {
        (Some("FIX_RATE"), Some(r.clone()))
    } else if let Some(d) = &f.fix_delay {
        (Some("FIX_DELAY"), Some(d.clone()))
    } else if f.manual || creating {
        (Some("NONE"), None)
    } else {
        (None, None)
    };
    let glue_source = match &f.glue_file {
        Some(path) => {
            Some(std::fs::read_to_string(path).map_err(|e| Failure(format!("cannot read {}: {e}", path.display())))?)
        }
        None => None,
    };
    let mut spec = JobSpec {
        group: f.group.clone(),
        task: chime_admin::api::JobTaskPatch {
            handler: f.handler.clone(),
            param: f.param.clone(),
            route_strategy: f.route.clone(),
            block_strategy: f.block.clone(),
            timeout_secs: f.timeout,
            retry_count: f.retries,
            glue_type: f.glue_type.clone(),
            glue_source,
        },
        schedule: SchedulePatch {
            schedule_type: schedule_type.map(str::to_owned),
            schedule_expr,
            time_zone: f.tz.clone(),
            misfire_strategy: f.misfire.clone(),
            calendar: f.calendar.clone(),
        },
        description: f.desc.clone(),
        child_job_ids: f.child.clone(),
        running: f.start.then_some(true),
        ..JobSpec::default()
    };
    if !f.also.is_empty() {
        let more = f.also.iter().map(|s| more_schedule(s)).collect::<Result<Vec<_>, _>>()?;
        spec.more_schedules = Some(more);
    }
    spec.info.owner = f.owner.clone();
    spec.flow.priority = f.priority;
    spec.flow.concurrency_key = f.concurrency_key.clone();
    if let Some(emails) = &f.alarm_email {
        spec.info.alarm_contacts = Some(alarm_contacts(emails)?);
    }
    with_settings(spec, &f.set)
}

/// A further schedule from `--also`: `CRON <expression> [@zone]` or `FIX_RATE <seconds>`.
/// The admin checks the expression and the zone.
pub(super) fn more_schedule(text: &str) -> Result<MoreSchedule, Failure> {
    let usage = || {
        Failure(format!(
            "--also '{text}': write CRON <expression> [@zone] or FIX_RATE <seconds>"
        ))
    };
    let (kind, rest) = text.trim().split_once(char::is_whitespace).ok_or_else(usage)?;
    let schedule_type = kind.to_ascii_uppercase().parse().map_err(|_| usage())?;
    let rest = rest.trim();
    // A zone is the last word, after `@` (no cron field holds one).
    let (expr, last) = rest.rsplit_once(char::is_whitespace).unwrap_or(("", rest));
    let (expr, zone) = match last.strip_prefix('@') {
        Some(zone) => (expr.trim(), zone),
        None => (rest, ""),
    };
    if expr.is_empty() {
        return Err(usage());
    }
    Ok(MoreSchedule {
        schedule_type,
        schedule_expr: expr.to_owned(),
        time_zone: zone.to_owned(),
    })
}

/// How a further schedule is written in `--also` and shown by `job show`.
pub(super) fn more_schedule_text(m: &MoreSchedule) -> String {
    if m.time_zone.is_empty() {
        format!("{} {}", m.schedule_type, m.schedule_expr)
    } else {
        format!("{} {} @{}", m.schedule_type, m.schedule_expr, m.time_zone)
    }
}

/// `spec` with each `FIELD=VALUE` of `--set` put in. A value is text for a text field and
/// JSON otherwise (`3`, `true`, `[1,2]`); an unknown field or a value of the wrong type is
/// refused naming the field, with the fields there are.
fn with_settings(spec: JobSpec, settings: &[String]) -> Result<JobSpec, Failure> {
    if settings.is_empty() {
        return Ok(spec);
    }
    let schema = chime_admin::api::schema::body_schema::<JobSpec>();
    let fields = schema["properties"].as_object().cloned().unwrap_or_default();
    let mut body = match serde_json::to_value(&spec) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    };
    for setting in settings {
        let Some((name, text)) = setting.split_once('=') else {
            return Err(Failure(format!("--set {setting}: write FIELD=VALUE")));
        };
        let name = name.trim();
        let Some(field) = fields.get(name) else {
            let known: Vec<&str> = fields.keys().map(String::as_str).collect();
            return Err(Failure(format!(
                "--set {name}: not a job field (fields: {})",
                known.join(", ")
            )));
        };
        let value = if takes_text(field) {
            Value::String(text.to_owned())
        } else {
            serde_json::from_str(text).map_err(|e| Failure(format!("--set {name}: '{text}' is not a value: {e}")))?
        };
        body.insert(name.to_owned(), value);
    }
    serde_json::from_value(Value::Object(body)).map_err(|e| Failure(format!("--set: {e}")))
}

/// Whether a field's schema takes a string (then `--set` sends the text as it is).
fn takes_text(schema: &Value) -> bool {
    let is_string =
        |s: &Value| s["type"] == "string" || s["type"].as_array().is_some_and(|t| t.contains(&"string".into()));
    is_string(schema)
        || schema["anyOf"]
            .as_array()
            .is_some_and(|options| options.iter().any(is_string))
}

/// The group body of `group add|update` with the fields given (those left out stay).
pub(super) fn group_spec(f: GroupFields) -> GroupSpec {
    GroupSpec {
        title: f.title,
        addresses: (!f.addresses.is_empty()).then_some(f.addresses),
        protocol: f.protocol,
        access_token: f.access_token,
        ..GroupSpec::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(pairs: &[&str]) -> Result<JobSpec, Failure> {
        with_settings(
            JobSpec::default(),
            &pairs.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
        )
    }

    #[test]
    fn further_schedules_are_written_as_a_type_an_expression_and_a_zone() {
        let m = more_schedule("CRON 0 0 18 * * ? @Europe/Berlin").unwrap();
        assert_eq!(m.schedule_type, chime_protocol::ScheduleType::Cron);
        assert_eq!(m.schedule_expr, "0 0 18 * * ?");
        assert_eq!(m.time_zone, "Europe/Berlin");
        assert_eq!(more_schedule_text(&m), "CRON 0 0 18 * * ? @Europe/Berlin");
        let rate = more_schedule("fix_rate 90").unwrap();
        assert_eq!((rate.schedule_expr.as_str(), rate.time_zone.as_str()), ("90", ""));
        assert_eq!(more_schedule_text(&rate), "FIX_RATE 90");
        for bad in ["", "CRON", "WEEKLY 0 0 18 * * ?", "CRON @UTC"] {
            assert!(more_schedule(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn any_field_is_set_by_its_name_and_type() {
        let spec = set(&[
            "owner=ann",
            "retry_count=3",
            "child_job_ids=[4,5]",
            "schedule_expr=0 * * * * ?",
        ])
        .unwrap();
        assert_eq!(spec.info.owner.as_deref(), Some("ann"));
        assert_eq!(spec.task.retry_count, Some(3));
        assert_eq!(spec.child_job_ids, Some(vec![4, 5]));
        assert_eq!(spec.schedule.schedule_expr.as_deref(), Some("0 * * * * ?"));
        // Text that looks like a number stays text for a text field.
        assert_eq!(set(&["param=42"]).unwrap().task.param.as_deref(), Some("42"));
        let Failure(msg) = set(&["colour=red"]).unwrap_err();
        assert!(msg.contains("not a job field") && msg.contains("owner"), "{msg}");
        let Failure(msg) = set(&["retry_count=many"]).unwrap_err();
        assert!(msg.contains("retry_count"), "{msg}");
        assert!(set(&["owner"]).is_err());
    }

    #[test]
    fn flow_fields_come_from_flags_and_from_set() {
        // Flattened into the body, they are fields of it like any other for `--set`.
        let spec = set(&["priority=-5", "concurrency_key=warehouse-db"]).unwrap();
        assert_eq!(spec.flow.priority, Some(-5));
        assert_eq!(spec.flow.concurrency_key.as_deref(), Some("warehouse-db"));
        // A key of digits stays text.
        let spec = set(&["concurrency_key=42"]).unwrap();
        assert_eq!(spec.flow.concurrency_key.as_deref(), Some("42"));
        let Failure(msg) = set(&["priority=high"]).unwrap_err();
        assert!(msg.contains("priority"), "{msg}");

        let flags = JobFields {
            priority: Some(10),
            concurrency_key: Some(String::new()),
            ..JobFields::default()
        };
        let body = serde_json::to_value(job_spec(&flags, false).unwrap()).unwrap();
        assert_eq!(body["priority"], 10);
        assert_eq!(body["concurrency_key"], "", "an empty key is sent: it removes the key");
        // Not given: not sent, so `job update` keeps the job's values.
        let body = serde_json::to_value(job_spec(&JobFields::default(), false).unwrap()).unwrap();
        assert!(
            body.get("priority").is_none() && body.get("concurrency_key").is_none(),
            "{body}"
        );
    }
}
