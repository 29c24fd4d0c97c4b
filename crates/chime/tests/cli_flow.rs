//! `chime limit …` and `chime queue …` against `chime demo` (a real admin and a real
//! executor): limits set, listed and deleted by names with `:` and `/`, a job with a
//! concurrency key whose second run waits in the queue behind the first, shown by `chime
//! queue`, cancelled, and sent on with `run-now`; run-now and cancel of a run that is not
//! queued fail with the admin's reason.

use serde_json::Value;
use std::time::{Duration, Instant};

mod common;

use common::Demo;

/// Generous: the test polls for outcomes and never asserts on speed.
const WAIT: Duration = Duration::from_secs(60);

/// The limit `name` as `limit list --json` shows it.
fn limit(demo: &Demo, name: &str) -> Option<Value> {
    let limits = demo.json(&["limit", "list"]);
    limits.as_array().unwrap().iter().find(|l| l["name"] == name).cloned()
}

/// Triggers job `id`; the run id and what the command wrote to standard error.
fn trigger(demo: &Demo, id: &str) -> (String, String) {
    let out = demo.run(&["--json", "job", "trigger", id]);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    (answer["run_id"].as_i64().unwrap().to_string(), stderr)
}

/// Waits until `ready` holds for run `id`; the run.
fn run_until(demo: &Demo, id: &str, what: &str, ready: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + WAIT;
    loop {
        let r = demo.json(&["run", "show", id]);
        if ready(&r) {
            return r;
        }
        assert!(Instant::now() < deadline, "run {id} is not {what}: {r}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn limits_are_set_listed_and_deleted_by_any_name() {
    let demo = common::demo("cli-limits");
    assert_eq!(demo.json(&["limit", "list"]), Value::Array(vec![]));
    let table = demo.ok(&["limit", "list"]);
    assert!(table.starts_with("NAME") && table.lines().count() == 1, "{table}");

    let set = demo.json(&["limit", "set", "warehouse-db", "2"]);
    assert_eq!(
        (set["name"].as_str(), set["max_running"].as_i64()),
        (Some("warehouse-db"), Some(2))
    );
    // Names with `:` and `/` stay one path segment.
    let executor = "executor:http://127.0.0.1:9999";
    for name in ["group:chime-demo", executor] {
        demo.ok(&["limit", "set", name, "3"]);
        assert_eq!(limit(&demo, name).expect(name)["max_running"], 3);
    }
    // Setting again changes it.
    demo.ok(&["limit", "set", executor, "4"]);
    assert_eq!(limit(&demo, executor).unwrap()["max_running"], 4);
    let table = demo.ok(&["limit", "list"]);
    let row = table.lines().find(|l| l.starts_with(executor)).expect(&table);
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(&cells[..6], [executor, "4", "-", "-", "0", "0"], "{table}");
    // A rate and a queue timeout, without a maximum.
    demo.ok(&[
        "limit",
        "set",
        "api-quota",
        "--rate",
        "10",
        "--per",
        "minute",
        "--queue-timeout",
        "60",
    ]);
    let quota = limit(&demo, "api-quota").unwrap();
    assert_eq!(
        (quota["rate"].as_i64(), quota["per"].as_str()),
        (Some(10), Some("minute")),
        "{quota}"
    );
    assert_eq!(
        (&quota["max_running"], quota["queue_timeout_secs"].as_i64()),
        (&serde_json::Value::Null, Some(60))
    );
    let table = demo.ok(&["limit", "list"]);
    let row = table.lines().find(|l| l.starts_with("api-quota")).expect(&table);
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(&cells[..4], ["api-quota", "-", "10/min", "60s"], "{table}");

    demo.ok(&["limit", "delete", executor]);
    assert!(limit(&demo, executor).is_none());
    assert!(limit(&demo, "group:chime-demo").is_some(), "only the one named goes");
    let err = demo.fails(&["limit", "delete", executor]);
    assert!(err.contains("HTTP 404"), "{err}");
    let err = demo.fails(&["limit", "set", "warehouse-db", "0"]);
    assert!(err.contains("max_running") && err.contains("HTTP 4"), "{err}");
    let err = demo.fails(&["limit", "set", "not a name", "1"]);
    assert!(err.contains("field: name"), "{err}");
}

#[test]
fn a_run_over_its_limit_waits_in_the_queue_until_sent_on_or_cancelled() {
    let demo = common::demo("cli-queue");
    assert_eq!(demo.json(&["queue"]), Value::Array(vec![]));
    assert_eq!(demo.json(&["queue", "list"]), Value::Array(vec![]));
    demo.ok(&["limit", "set", "k", "1"]);
    let job = demo.add_job(
        "sleepJobHandler",
        &[
            "--manual",
            "--param",
            "120",
            "--concurrency-key",
            "k",
            "--priority",
            "-5",
        ],
    );
    assert_eq!(
        (job["concurrency_key"].as_str(), job["priority"].as_i64()),
        (Some("k"), Some(-5))
    );
    let job = job["id"].as_i64().unwrap().to_string();

    // The first run takes the one slot and runs (two minutes: longer than the test).
    let (first, _) = trigger(&demo, &job);
    run_until(&demo, &first, "running", |r| r["status"] == "running");
    // A run that is running is not in the queue: both actions say so, with where to look.
    for action in ["run-now", "cancel"] {
        let err = demo.fails(&["queue", action, &first]);
        assert!(
            err.contains("not waiting in the queue") && err.contains("HTTP 409") && err.contains("chime run show"),
            "{err}"
        );
    }

    // The second waits: `job trigger` says where, and ends without waiting for it.
    let (second, note) = trigger(&demo, &job);
    assert!(note.contains("waits in the queue") && note.contains("'k'"), "{note}");
    let queue = demo.json(&["queue"]);
    let entry = &queue.as_array().unwrap()[0];
    assert_eq!(entry["run_id"].as_i64().unwrap().to_string(), second, "{queue}");
    assert_eq!(
        (entry["waits_on"].as_str(), entry["priority"].as_i64()),
        (Some("k"), Some(-5))
    );
    let table = demo.ok(&["queue"]);
    let row = table.lines().nth(1).expect(&table);
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(&cells[..4], ["1", &second, &job, "chime-demo"], "{table}");
    assert!(
        row.contains(" k ") && row.contains("-5") && row.ends_with("waiting"),
        "{table}"
    );
    let k = limit(&demo, "k").unwrap();
    assert_eq!((k["running"].as_i64(), k["queued"].as_i64()), (Some(1), Some(1)), "{k}");

    // Cancelled: it ends killed, never sent, and is no longer queued.
    assert!(demo.ok(&["queue", "cancel", &second]).contains("cancelled run"));
    let r = run_until(&demo, &second, "killed", |r| r["status"] == "killed");
    assert_eq!(r["executor_address"], "", "never sent: {r}");
    assert_eq!(demo.json(&["queue"]), Value::Array(vec![]));
    let err = demo.fails(&["queue", "cancel", &second]);
    assert!(err.contains("HTTP 409"), "{err}");

    // Sent on: it runs beside the first, over the limit's maximum.
    let (third, note) = trigger(&demo, &job);
    assert!(note.contains("waits in the queue"), "{note}");
    let answer = demo.json(&["queue", "run-now", &third]);
    assert_eq!(answer["skip_queue"], true, "{answer}");
    run_until(&demo, &third, "running", |r| r["status"] == "running");
    assert_eq!(run_until(&demo, &first, "running", |_| true)["status"], "running");
    assert_eq!(limit(&demo, "k").unwrap()["running"], 2);
    assert_eq!(demo.json(&["queue"]), Value::Array(vec![]));
}
