//! The client commands as an XXL-JOB operator uses them, against `chime demo` (a real admin
//! and a real executor): `run log --follow` until the run ends and on Ctrl-C, `<br>` shown as
//! line breaks, group names and zoned times in job tables, run, executor and workflow instance
//! times with their offset, alarm e-mails on `job add`/`edit`,
//! and `chime admin --help` without the client's options.

use serde_json::Value;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;

use common::{lines_of, Demo, Guard, BIN};

/// Generous: the test polls for outcomes and never asserts on speed.
const WAIT: Duration = Duration::from_secs(60);

/// A manual job of the demo group running `handler` with `param`; its id.
fn manual_job(demo: &Demo, handler: &str, param: &str) -> String {
    let job = demo.json(&[
        "job",
        "add",
        "--group",
        "chime-demo",
        "--handler",
        handler,
        "--manual",
        "--param",
        param,
    ]);
    job["id"].as_i64().unwrap().to_string()
}

/// Triggers job `id`; the run id.
fn trigger(demo: &Demo, id: &str) -> String {
    demo.json(&["job", "trigger", id])["run_id"]
        .as_i64()
        .unwrap()
        .to_string()
}

/// Triggers job `id`, whose run the executor refuses: the command fails with the admin's
/// reason, after printing the run id; the run id.
fn trigger_refused(demo: &Demo, id: &str) -> String {
    let out = demo.run(&["--json", "job", "trigger", id]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains("could not be sent"),
        "{stderr}"
    );
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    answer["run_id"].as_i64().unwrap().to_string()
}

/// Waits until run `id` is final; the run.
fn final_run(demo: &Demo, id: &str) -> Value {
    let deadline = Instant::now() + WAIT;
    loop {
        let r = demo.json(&["run", "show", id]);
        if matches!(r["status"].as_str(), Some("success" | "failed" | "skipped")) {
            return r;
        }
        assert!(Instant::now() < deadline, "run {id} did not end: {r}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn run_log_follow_prints_until_the_run_ends_and_stops_on_ctrl_c() {
    let demo = common::demo("cli-client");
    let job = manual_job(&demo, "sleepJobHandler", "3");
    let run_id = trigger(&demo, &job);
    let started = Instant::now();
    let out = demo.run(&["run", "log", &run_id, "--follow"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let log = String::from_utf8_lossy(&out.stdout);
    for n in 1..=3 {
        assert_eq!(log.matches(&format!("slept {n} s")).count(), 1, "each line once: {log}");
    }
    assert!(started.elapsed() < WAIT);
    // It returned because the run ended, not before.
    assert_eq!(demo.json(&["run", "show", &run_id])["status"], "success");

    // A run its executor refused (no such handler) has no result code: the follow still ends.
    let job = manual_job(&demo, "noSuchHandler", "");
    let refused = trigger_refused(&demo, &job);
    let r = final_run(&demo, &refused);
    assert_eq!(r["status"], "failed");
    assert_ne!(r["executor_address"], "", "sent to the executor, which refused it: {r}");
    assert_eq!(r["handle_code"], 0, "{r}");
    let mut follow = Guard(
        demo.client()
            .args(["run", "log", &refused, "--follow"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = follow.0.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "run log --follow of a refused run did not end"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(status.success(), "{status:?}");

    // Ctrl-C ends a follow of a long run.
    let job = manual_job(&demo, "sleepJobHandler", "120");
    let run_id = trigger(&demo, &job);
    let mut follow = demo
        .client()
        .args(["run", "log", &run_id, "--follow"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let lines = lines_of(&mut follow);
    let mut follow = Guard(follow);
    let deadline = Instant::now() + WAIT;
    loop {
        let line = lines
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .expect("the follow prints new lines as they come");
        if line.contains("slept 1 s") {
            break;
        }
    }
    let pid = follow.0.id().to_string();
    assert!(Command::new("kill").args(["-INT", &pid]).status().unwrap().success());
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = follow.0.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "run log --follow did not stop on Ctrl-C");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(130), "the exit code of a command ended by Ctrl-C");
    demo.ok(&["run", "kill", &run_id]);
    // `run show` names the state and who killed the run.
    let show = demo.ok(&["run", "show", &run_id]);
    let row = |name: &str| {
        show.lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .map(|l| l.split_whitespace().skip(1).collect::<Vec<_>>().join(" "))
    };
    assert_eq!(row("status").as_deref(), Some("killed"), "{show}");
    assert_eq!(row("killed_by").as_deref(), Some("api-token"), "{show}");
    assert!(row("alarm").is_some(), "{show}");
    assert_eq!(row("retry_of"), None, "no retry row for a run that is none: {show}");
}

#[test]
fn br_is_a_line_break_in_logs_and_run_details() {
    let demo = common::demo("cli-client");
    let job = manual_job(&demo, "failJobHandler", "first part<br>second part");
    let run_id = trigger(&demo, &job);
    let r = final_run(&demo, &run_id);
    assert_eq!(r["status"], "failed");
    assert!(r["trigger_msg"].as_str().unwrap().contains("<br>"), "{r}");

    let log = demo.ok(&["run", "log", &run_id]);
    assert!(log.contains("failing: first part\nsecond part"), "{log}");
    let show = demo.ok(&["run", "show", &run_id]);
    // (The job's parameter, shown as typed, keeps its `<br>`; the messages do not.)
    let messages = &show[show.find("trigger message:").expect("the messages")..];
    assert!(!messages.to_lowercase().contains("<br"), "{show}");
    assert!(
        show.lines().any(|l| l.trim_start().starts_with("Route strategy")),
        "each part of the trigger message on its own line: {show}"
    );
    assert!(show.lines().any(|l| l.trim() == "second part"), "{show}");
}

#[test]
fn a_job_with_several_schedules_from_the_command_line() {
    let demo = common::demo("cli-more-schedules");
    let job = demo.add_job(
        "demoJobHandler",
        &[
            "--cron",
            "0 30 9 * * ?",
            "--tz",
            "Asia/Shanghai",
            "--also",
            "CRON 0 0 18 * * ? @Europe/Berlin",
            "--also",
            "cron 0 30 9 * * ?",
            "--start",
        ],
    );
    let id = job["id"].as_i64().unwrap().to_string();
    assert_eq!(
        job["more_schedules"],
        serde_json::json!([
            {"schedule_type": "CRON", "schedule_expr": "0 0 18 * * ?", "time_zone": "Europe/Berlin"},
            {"schedule_type": "CRON", "schedule_expr": "0 30 9 * * ?"}
        ])
    );
    let show = demo.ok(&["job", "show", &id]);
    let row = show
        .lines()
        .find(|l| l.starts_with("more_schedules"))
        .unwrap_or_else(|| panic!("more_schedules in {show}"));
    assert!(
        row.ends_with("CRON 0 0 18 * * ? @Europe/Berlin; CRON 0 30 9 * * ?"),
        "{row}"
    );
    // The next fire times merge both zones' times; the second 09:30 (in the job's zone) meets
    // the first and fires once.
    let next: Vec<&str> = show
        .lines()
        .skip_while(|l| !l.starts_with("next fire times:"))
        .skip(1)
        .map(str::trim)
        .collect();
    assert_eq!(next.len(), 5, "{show}");
    let morning = next.iter().filter(|t| t.ends_with(" 09:30:00 Asia/Shanghai")).count();
    assert!((2..=3).contains(&morning), "{show}");
    let mut sorted = next.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted, next, "in order, none twice: {show}");

    // A bad one is refused by the admin, naming it; `--set more_schedules=[]` removes them.
    let out = demo.run(&["job", "edit", &id, "--also", "FIX_RATE soon"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("more_schedules[0].schedule_expr"), "{err}");
    let out = demo.run(&["job", "edit", &id, "--also", "WEEKLY 0 0 18 * * ?"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--also"));
    let cleared = demo.json(&["job", "edit", &id, "--set", "more_schedules=[]"]);
    assert_eq!(cleared["more_schedules"], serde_json::json!([]));
}

#[test]
fn a_backfill_from_the_command_line_runs_each_day_once_and_waits_for_it() {
    let demo = common::demo("cli-backfill");
    let job = demo.add_job(
        "demoJobHandler",
        &[
            "--cron",
            "0 0 2 * * ?",
            "--tz",
            "UTC",
            "--param",
            "${fire_time:yyyy-MM-dd}",
        ],
    );
    let id = job["id"].as_i64().unwrap().to_string();
    let range = ["--from", "2026-10-01T00:00:00Z", "--to", "2026-10-05T23:59:59+00:00"];
    let waited = demo.ok(&[&["job", "backfill", &id][..], &range, &["--at-once", "2", "--wait"]].concat());
    let last = waited.lines().last().unwrap_or_default();
    assert!(
        last.contains(": done — 5 fire times: 5 succeeded, 0 failed"),
        "{waited}"
    );
    let runs = demo.json(&["run", "list", "--job", &id]);
    let mut params: Vec<&str> = runs
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            assert_eq!(r["trigger_type"], "BACKFILL", "{r}");
            r["param"].as_str().unwrap()
        })
        .collect();
    params.sort_unstable();
    assert_eq!(
        params,
        ["2026-10-01", "2026-10-02", "2026-10-03", "2026-10-04", "2026-10-05"]
    );
    // Asked again: every day was backfilled before, nothing runs.
    let again = demo.json(&[&["job", "backfill", &id][..], &range].concat());
    assert_eq!(
        (again["fires"].as_i64(), again["already"].as_i64()),
        (Some(0), Some(5)),
        "{again}"
    );
    let listed = demo.ok(&["job", "backfills", &id]);
    assert!(listed.lines().next().unwrap_or_default().starts_with("ID"), "{listed}");
    assert_eq!(listed.lines().filter(|l| l.contains(" done ")).count(), 2, "{listed}");
    // A bad time names its flag; a cancel of a finished backfill is refused.
    let out = demo.run(&["job", "backfill", &id, "--from", "yesterday", "--to", "1"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--from"));
    let out = demo.run(&["job", "backfill-cancel", &id, &again["id"].to_string()]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not running"));
}

#[test]
fn job_tables_name_groups_and_zones_and_take_alarm_emails() {
    let demo = common::demo("cli-client");
    let job = demo.add_job(
        "demoJobHandler",
        &[
            "--cron",
            "0 30 9 * * ?",
            "--tz",
            "Asia/Shanghai",
            "--start",
            "--alarm-email",
            "ops@example.com, dev@example.com",
        ],
    );
    let id = job["id"].as_i64().unwrap().to_string();
    assert_eq!(job["alarm_contacts"], "ops@example.com,dev@example.com");

    // Group by name in the list.
    let list = demo.ok(&["job", "list"]);
    let row = list
        .lines()
        .find(|l| l.split_whitespace().next() == Some(id.as_str()))
        .unwrap_or_else(|| panic!("job {id} in {list}"));
    assert_eq!(row.split_whitespace().nth(1), Some("chime-demo"), "{list}");

    // Times in the job's zone, the zone named, one format; the next fire times too.
    let zone: chrono_tz::Tz = "Asia/Shanghai".parse().unwrap();
    let at = |ms: i64| {
        chrono::DateTime::from_timestamp_millis(ms)
            .unwrap()
            .with_timezone(&zone)
            .format("%Y-%m-%d %H:%M:%S Asia/Shanghai")
            .to_string()
    };
    let next_fire = at(job["next_fire_at"].as_i64().unwrap());
    assert!(next_fire.contains(" 09:30:00 "), "{next_fire}");
    assert!(row.contains(&next_fire), "{row}");
    let show = demo.ok(&["job", "show", &id]);
    let field = |name: &str| {
        show.lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .map(|l| l[name.len()..].trim().to_owned())
            .unwrap_or_else(|| panic!("{name} in {show}"))
    };
    assert_eq!(field("next_fire_at"), next_fire);
    assert_eq!(field("created_at"), at(job["created_at"].as_i64().unwrap()));
    assert!(field("group_id").starts_with("chime-demo"), "{show}");
    let next: Vec<&str> = show
        .lines()
        .skip_while(|l| !l.starts_with("next fire times:"))
        .skip(1)
        .map(str::trim)
        .collect();
    assert_eq!(next.len(), 5, "{show}");
    assert_eq!(next[0], next_fire);
    assert!(next.iter().all(|t| t.ends_with(" 09:30:00 Asia/Shanghai")), "{show}");

    // Alarm e-mails are edited, checked, and cleared.
    let edited = demo.json(&["job", "edit", &id, "--alarm-email", "oncall@example.com"]);
    assert_eq!(edited["alarm_contacts"], "oncall@example.com");
    let out = demo.run(&["job", "edit", &id, "--alarm-email", "oncall example.com"]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("not an e-mail address"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(demo.json(&["job", "show", &id])["alarm_contacts"], "oncall@example.com");
    let cleared = demo.json(&["job", "update", &id, "--alarm-email", ""]);
    assert_eq!(cleared["alarm_contacts"], "");
}

#[test]
fn admin_help_lists_no_client_options() {
    let out = Command::new(BIN).args(["admin", "--help"]).output().unwrap();
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    let options: Vec<&str> = help
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("--"))
        .map(|l| l.split([' ', ',']).next().unwrap_or(""))
        .collect();
    assert!(options.contains(&"db") && options.contains(&"api-token"), "{help}");
    assert!(!options.contains(&"json") && !options.contains(&"admin"), "{options:?}");
    assert!(help.contains("reset-password"), "{help}");
    // Given anyway, they are refused, not silently ignored.
    let out = Command::new(BIN)
        .args(["admin", "--json", "--db", "sqlite::memory:"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--json"));
    // The clients still have them.
    let out = Command::new(BIN).args(["job", "list", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.contains("--json") && help.contains("--admin"), "{help}");
}

/// The options of `chime executor --help` are the executor's: the REST API client's token and
/// `--json` are not among them (and are refused there), while `executor list`, a client, has
/// them and reads them.
#[test]
fn executor_help_lists_only_what_the_executor_reads() {
    let options = |args: &[&str]| {
        let out = Command::new(BIN).args(args).output().unwrap();
        assert!(out.status.success());
        let help = String::from_utf8_lossy(&out.stdout).into_owned();
        let names: Vec<String> = help
            .lines()
            .filter_map(|l| l.trim_start().strip_prefix("--"))
            .map(|l| l.split([' ', ',']).next().unwrap_or("").to_owned())
            .collect();
        names
    };
    let executor = options(&["executor", "--help"]);
    for own in ["admin", "access-token", "appname", "enable-scripts"] {
        assert!(executor.iter().any(|o| o == own), "{own} in {executor:?}");
    }
    for client in ["api-token", "json"] {
        assert!(!executor.iter().any(|o| o == client), "{client} in {executor:?}");
    }
    let out = Command::new(BIN)
        .args(["executor", "--api-token", "x"])
        .env_remove("CHIME_API_TOKEN")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--api-token"));
    let list = options(&["executor", "list", "--help"]);
    for client in ["admin", "api-token", "json", "group"] {
        assert!(list.iter().any(|o| o == client), "{client} in {list:?}");
    }

    // Given after `list`, before it, or as variables, they reach the client.
    let demo = common::demo("cli-executor-help");
    for args in [
        vec![
            "executor",
            "list",
            "--admin",
            &demo.url,
            "--api-token",
            &demo.token,
            "--json",
        ],
        vec![
            "--json",
            "--admin",
            &demo.url,
            "--api-token",
            &demo.token,
            "executor",
            "list",
        ],
    ] {
        let out = Command::new(BIN)
            .args(&args)
            .env_remove("CHIME_ADMIN_URL")
            .env_remove("CHIME_API_TOKEN")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let groups: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(
            groups.as_array().unwrap().iter().any(|g| g["app_name"] == "chime-demo"),
            "{groups}"
        );
    }
    let table = demo.ok(&["executor", "list", "--group", "chime-demo"]);
    assert!(table.starts_with("GROUP"), "{table}");
}

/// Run, executor and workflow instance times are printed in the machine's zone (`TZ`) with
/// its offset, so a time copied elsewhere still says when it was.
#[test]
fn run_executor_and_instance_times_show_their_offset() {
    let demo = common::demo("cli-times");
    let local = |args: &[&str]| {
        let out = demo.client().env("TZ", "Asia/Kolkata").args(args).output().unwrap();
        assert!(
            out.status.success(),
            "chime {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let kolkata = chrono::FixedOffset::east_opt(5 * 3600 + 1800).unwrap();
    let at = |ms: i64| {
        chrono::DateTime::from_timestamp_millis(ms)
            .unwrap()
            .with_timezone(&kolkata)
            .format("%Y-%m-%d %H:%M:%S%.3f +05:30")
            .to_string()
    };
    let job = manual_job(&demo, "demoJobHandler", "");
    let run_id = trigger(&demo, &job);
    let r = final_run(&demo, &run_id);
    let (scheduled, triggered) = (
        at(r["scheduled_at"].as_i64().unwrap()),
        at(r["triggered_at"].as_i64().unwrap()),
    );

    let list = local(&["run", "list", "--job", &job]);
    assert!(list.contains(&scheduled) && list.contains(&triggered), "{list}");
    let show = local(&["run", "show", &run_id]);
    assert!(
        show.contains(&scheduled) && show.contains(&at(r["handled_at"].as_i64().unwrap())),
        "{show}"
    );
    let executors = local(&["executor", "list"]);
    let row = executors
        .lines()
        .find(|l| l.starts_with("chime-demo"))
        .unwrap_or_else(|| panic!("{executors}"));
    assert!(row.trim_end().ends_with("+05:30"), "{executors}");

    let definition = demo.dir.join("workflow.json");
    std::fs::write(
        &definition,
        serde_json::json!({"name": "times", "definition": {"nodes": [{"key": "only", "job_id": job.parse::<i64>().unwrap()}]}})
            .to_string(),
    )
    .unwrap();
    let workflow = demo.json(&["workflow", "add", "--file", definition.to_str().unwrap()]);
    let workflow = workflow["id"].as_i64().unwrap().to_string();
    let instance = demo.json(&["workflow", "trigger", &workflow])["instance_id"]
        .as_i64()
        .unwrap();
    let shown = demo.json(&["workflow", "instance", &instance.to_string()]);
    let scheduled = at(shown["scheduled_at"].as_i64().unwrap());
    let detail = local(&["workflow", "instance", &instance.to_string()]);
    assert!(detail.contains(&format!("scheduled {scheduled})")), "{detail}");
    let instances = local(&["workflow", "instances"]);
    assert!(instances.contains(&scheduled), "{instances}");
}

#[test]
fn api_keys_are_made_listed_used_and_revoked_from_the_command_line() {
    let demo = common::demo("cli-api-keys");
    // Made with the bootstrap token: a viewer key of the demo group, by app name.
    let made = demo.json(&[
        "api-key",
        "create",
        "ci-reader",
        "--role",
        "viewer",
        "--group",
        "chime-demo",
        "--expires-in",
        "30d",
    ]);
    let token = made["token"].as_str().unwrap().to_owned();
    let id = made["key"]["id"].as_i64().unwrap().to_string();
    // The client adds 30 days to its own clock, a moment before the admin stamps the key.
    let life_ms = made["key"]["expires_at"].as_i64().unwrap() - made["key"]["created_at"].as_i64().unwrap();
    assert!((life_ms - 30 * 86_400_000).abs() < 60_000, "{made}");
    // Listed for people without the token; the token is printed once, at creation.
    let list = demo.ok(&["api-key", "list"]);
    let row = list
        .lines()
        .find(|l| l.split_whitespace().next() == Some(id.as_str()))
        .unwrap_or_else(|| panic!("key {id} in {list}"));
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(
        (cells[1], cells[3], cells[5]),
        ("ci-reader", "viewer", "active"),
        "{list}"
    );
    assert!(!list.contains(&token[12..]), "{list}");
    // The key works as the client's token: it reads, it does not write.
    let with_key = |args: &[&str]| {
        let mut c = Command::new(BIN);
        c.env("CHIME_ADMIN_URL", &demo.url).env("CHIME_API_TOKEN", &token);
        c.args(args).output().unwrap()
    };
    let jobs = with_key(&["--json", "job", "list"]);
    assert!(jobs.status.success(), "{}", String::from_utf8_lossy(&jobs.stderr));
    let refused = with_key(&["job", "add", "--group", "chime-demo", "--handler", "h", "--manual"]);
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("read-only"),
        "{refused:?}"
    );
    let refused = with_key(&["api-key", "list"]);
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("cannot manage API keys"),
        "{refused:?}"
    );
    // Revoked: it stops at once.
    let revoked = demo.json(&["api-key", "revoke", &id]);
    assert_eq!(revoked["state"], "revoked");
    let after = with_key(&["job", "list"]);
    assert!(!after.status.success());
    assert!(String::from_utf8_lossy(&after.stderr).contains("revoked"), "{after:?}");
    // A bad role is the client's own error.
    let bad = demo.run(&["api-key", "create", "x", "--role", "root"]);
    assert!(String::from_utf8_lossy(&bad.stderr).contains("not a role"), "{bad:?}");
}
