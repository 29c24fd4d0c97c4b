//! Date placeholders from the command line, against `chime demo` (a real admin and a real
//! executor): `job next` and `job show` print each next fire with the parameter a run of it
//! would carry, a triggered run shows the parameter it was sent with, and a malformed
//! placeholder is refused with where and why.

use chrono::{NaiveDate, TimeZone};
use serde_json::Value;
use std::time::{Duration, Instant};

mod common;

/// The job id `job add --json` printed.
fn id_of(job: &Value) -> String {
    job["id"].as_i64().unwrap().to_string()
}

#[test]
fn next_fires_and_runs_show_their_dates() {
    let demo = common::demo("cli-dates");
    let job = demo.add_job(
        "demoJobHandler",
        &[
            "--cron",
            "0 30 0 * * ?",
            "--tz",
            "Asia/Shanghai",
            "--param",
            "day=${bizdate:yyyy-MM-dd} at=${fire_time:HH:mm} literal=$${x}",
            "--start",
        ],
    );
    let id = id_of(&job);

    // Each next fire with its own dates: the day before the fire, in the job's zone.
    let next = demo.json(&["job", "next", &id, "--count", "3"]);
    let fires = next["next"].as_array().unwrap();
    assert_eq!(fires.len(), 3, "{next}");
    for f in fires {
        let local = f["local"].as_str().unwrap();
        let day = NaiveDate::parse_from_str(&local[..10], "%Y-%m-%d").unwrap();
        let expected = format!("day={} at=00:30 literal=${{x}}", day.pred_opt().unwrap());
        assert_eq!(f["param"], expected, "{f}");
    }
    let table = demo.ok(&["job", "next", &id, "--count", "2"]);
    assert!(table.lines().next().unwrap().contains("PARAM"), "{table}");
    assert!(table.contains("at=00:30 literal=${x}"), "{table}");
    let shown = demo.ok(&["job", "show", &id]);
    assert!(
        shown.contains("param: day="),
        "job show prints the resolved parameters: {shown}"
    );

    // A manual trigger's parameter, resolved from when it was triggered, as the run shows it.
    let manual = id_of(&demo.add_job("demoJobHandler", &["--manual", "--tz", "UTC"]));
    let answer = demo.json(&[
        "job",
        "trigger",
        &manual,
        "--param",
        "ms=${fire_time:unix_ms} d=${fire_time:yyyyMMdd}",
    ]);
    let run_id = answer["run_id"].as_i64().unwrap().to_string();
    let deadline = Instant::now() + Duration::from_secs(60);
    let run = loop {
        let r = demo.json(&["run", "show", &run_id]);
        if r["status"] == "success" {
            break r;
        }
        assert!(Instant::now() < deadline, "run {run_id} did not succeed: {r}");
        std::thread::sleep(Duration::from_millis(200));
    };
    let at = run["scheduled_at"].as_i64().unwrap();
    let day = chrono::Utc.timestamp_millis_opt(at).unwrap().format("%Y%m%d");
    assert_eq!(run["param"], format!("ms={at} d={day}"), "{run}");

    // Malformed: refused, with the field and the character where the placeholder starts.
    let err = demo.fails(&["job", "update", &id, "--param", "x ${fire_tme}"]);
    assert!(err.contains("character 3") && err.contains("fire_tme"), "{err}");
    let err = demo.fails(&["job", "trigger", &manual, "--param", "${bizdate-1q}"]);
    assert!(err.contains("unit"), "{err}");
    // Nothing was changed by the refused update.
    assert_eq!(
        demo.json(&["job", "show", &id])["param"],
        "day=${bizdate:yyyy-MM-dd} at=${fire_time:HH:mm} literal=$${x}"
    );
}

#[test]
fn jobs_groups_and_workflows_pause_and_resume() {
    let demo = common::demo("cli-pause");
    let job = id_of(&demo.add_job("demoJobHandler", &["--cron", "0 0 3 * * ?", "--start"]));
    // --until in RFC 3339; the table shows the state.
    let until = chrono::Utc::now() + chrono::Duration::hours(2);
    let paused = demo.json(&["job", "pause", &job, "--until", &until.to_rfc3339()]);
    assert_eq!(paused["paused_until"], until.timestamp_millis(), "{paused}");
    let table = demo.ok(&["job", "list"]);
    let row = table.lines().find(|l| l.starts_with(&format!("{job} "))).expect(&table);
    assert!(row.contains("paused"), "{table}");
    assert!(demo.ok(&["job", "show", &job]).contains("paused_until"));
    let resumed = demo.json(&["job", "resume", &job]);
    let ended = resumed["paused_until"].as_i64().unwrap();
    assert!(ended <= chrono::Utc::now().timestamp_millis(), "{resumed}");
    assert!(!demo.ok(&["job", "list"]).contains("paused"));

    // --for, on a whole group.
    let before = chrono::Utc::now().timestamp_millis();
    let answer = demo.json(&["group", "pause", "chime-demo", "--for", "30m"]);
    let until = answer["paused_until"].as_i64().unwrap();
    assert!((before + 1_800_000..before + 1_860_000).contains(&until), "{answer}");
    assert!(answer["jobs"].as_i64().unwrap() >= 1, "{answer}");
    assert_eq!(demo.json(&["job", "show", &job])["paused_until"], until);
    let out = demo.ok(&["group", "resume", "chime-demo"]);
    assert!(
        out.starts_with("resumed ") && out.contains("jobs of group chime-demo"),
        "{out}"
    );
    let ended = demo.json(&["job", "show", &job])["paused_until"].as_i64().unwrap();
    assert!(ended <= chrono::Utc::now().timestamp_millis(), "resumed: {ended}");

    // Refused: a time passed, a bad time, neither flag.
    let err = demo.fails(&["job", "pause", &job, "--until", "1000"]);
    assert!(err.contains("until") && err.contains("future"), "{err}");
    let err = demo.fails(&["job", "pause", &job, "--until", "next tuesday"]);
    assert!(err.contains("RFC 3339"), "{err}");
    demo.fails(&["job", "pause", &job]);
}
