//! Alarms no run raises, end to end with real executors (`chime executor`) and the vendors'
//! receivers (`common::receivers`): a workflow instance whose node fails tells the workflow's
//! channels once, naming the workflow, the instance, the failed node and its page; a group with
//! an enabled job whose executor is killed with SIGKILL tells the group's channels once that it
//! has no live executor, and once that one is back after a restart; a group without an enabled
//! job tells nothing. Two `chime admin` processes on one PostgreSQL or MariaDB database tell
//! each once.
//! A workflow's `alarm_channels` must name existing channels (422), and a channel a workflow
//! names cannot be deleted or renamed (409).

mod common;

use common::admin_process::AdminProcess;
use common::demo_executor::DemoExecutor;
use common::receivers::{Behaviour, Receiver, Recorded, Vendor};
use common::{eventually, Api, Db, Env, TestDb};
use serde_json::{json, Value};
use std::time::Duration;

const PUBLIC_URL: &str = "https://chime.example.test";
/// The admins' dead timeout: short, with executors beating every 500 ms.
const DEAD_TIMEOUT: Duration = Duration::from_secs(3);
/// The executors' heartbeat, well inside [`DEAD_TIMEOUT`].
const BEAT: &[&str] = &["--beat-interval", "500ms"];
/// A cron that never comes: the job is enabled (scheduled) without firing during the test.
const NEVER: &str = "0 0 0 1 1 ? 2099";

/// An admin on SQLite with the short dead timeout, quick alarm retries and a public URL.
async fn admin() -> Env {
    Env::start_with(Db::Sqlite, |c| {
        c.dead_timeout = DEAD_TIMEOUT;
        c.public_url = Some(PUBLIC_URL.to_owned());
        c.alarm_retry_pause = Duration::from_millis(100);
    })
    .await
}

/// Creates channel `name` pointing at receiver `r`.
async fn channel(api: &Api, name: &str, r: &Receiver) {
    let (s, v) = api
        .post(
            "/v1/alarm-channels",
            json!({"name": name, "kind": r.vendor().kind(), "url": r.url()}),
        )
        .await;
    assert_eq!(s, 201, "create channel {name}: {v}");
}

/// The body's `event` (a webhook's JSON carries it).
fn event_of(r: &Recorded) -> String {
    r.json
        .as_ref()
        .and_then(|j| j["event"].as_str())
        .unwrap_or("")
        .to_owned()
}

/// The events a workflow instance raises.
const INSTANCE: &[&str] = &["workflow_failed"];
/// The events a group raises.
const GROUP: &[&str] = &["no_executor", "executor_back"];

/// Waits until `r` accepted a message of `event`.
async fn told(r: &Receiver, event: &str) {
    eventually(60, &format!("a {event} message"), || async {
        let all = r.accepted();
        if all.iter().any(|m| event_of(m) == event) {
            Ok(())
        } else {
            Err(format!("{:?}", all.iter().map(event_of).collect::<Vec<_>>()))
        }
    })
    .await
}

/// The alarm events about `subject` (an instance's or a group's id: see `kinds`), newest first.
async fn events_about(api: &Api, subject: i64, kinds: &[&str]) -> Vec<Value> {
    let (s, v) = api.get(&format!("/v1/alarm-events?subject={subject}&limit=100")).await;
    assert_eq!(s, 200, "{v}");
    let all = v.as_array().cloned().unwrap_or_default();
    all.into_iter()
        .filter(|e| kinds.contains(&e["event"].as_str().unwrap_or("")))
        .collect()
}

/// Waits until every delivery of the alarm events about `subject` (there being `n`) was sent.
async fn all_sent(api: &Api, subject: i64, kinds: &[&str], n: usize) -> Vec<Value> {
    eventually(30, &format!("{n} alarm event(s) about {subject} sent"), || async {
        let all = events_about(api, subject, kinds).await;
        let sent = all.iter().all(|e| {
            let d = e["deliveries"].as_array().cloned().unwrap_or_default();
            !d.is_empty() && d.iter().all(|d| d["state"] == "sent")
        });
        if all.len() == n && sent {
            Ok(all)
        } else {
            Err(format!("{all:#?}"))
        }
    })
    .await
}

/// A group `app` whose channels are `channels`, with a live executor and an enabled job.
/// The job is made only once the executor is registered, so no outage precedes it.
async fn watched_group(api: &Api, base: &str, app: &str, channels: &str) -> (i64, DemoExecutor) {
    let group = api
        .ok("/v1/groups", json!({"app_name": app, "alarm_channels": channels}))
        .await["id"]
        .as_i64()
        .unwrap();
    let ex = DemoExecutor::start_with(base, app, BEAT);
    api.wait_executors(app, 1).await;
    api.ok(
        "/v1/jobs",
        json!({"group": app, "handler": "demoJobHandler", "schedule_type": "CRON",
               "schedule_expr": NEVER, "running": true}),
    )
    .await;
    (group, ex)
}

/// A workflow `name` naming `channels`: `extract` succeeds, then `load` fails.
async fn failing_workflow(api: &Api, app: &str, name: &str, channels: Option<&str>) -> i64 {
    let ok = api
        .ok(
            "/v1/jobs",
            json!({"group": app, "handler": "demoJobHandler", "schedule_type": "NONE"}),
        )
        .await["id"]
        .clone();
    let fail = api
        .ok(
            "/v1/jobs",
            json!({"group": app, "handler": "failJobHandler", "schedule_type": "NONE", "retry_count": 0}),
        )
        .await["id"]
        .clone();
    let mut body = json!({
        "name": name,
        "definition": {
            "nodes": [{"key": "extract", "job_id": ok}, {"key": "load", "job_id": fail}],
            "edges": [{"from": "extract", "to": "load"}]
        }
    });
    if let Some(c) = channels {
        body["alarm_channels"] = json!(c);
    }
    let (s, v) = api.post("/v1/workflows", body).await;
    assert_eq!(s, 201, "{v}");
    v["id"].as_i64().unwrap()
}

/// Fires workflow `wf` and waits until its instance failed; returns the instance's id.
async fn fail_instance(api: &Api, wf: i64) -> i64 {
    let i = api.ok(&format!("/v1/workflows/{wf}/trigger"), json!({})).await["instance_id"]
        .as_i64()
        .unwrap();
    eventually(60, &format!("instance {i} failed"), || async {
        let (_, v) = api.get(&format!("/v1/workflow-instances/{i}")).await;
        match v["state"].as_str() {
            Some("failed") => Ok(()),
            Some("succeeded" | "stopped") => panic!("instance {i} did not fail: {v}"),
            _ => Err(v.to_string()),
        }
    })
    .await;
    i
}

/// The workflow's field is checked: unknown channels are refused naming the field, the list is
/// stored as `a,b`, and a channel a workflow names can be neither deleted nor renamed.
async fn workflow_channels_are_checked(api: &Api, app: &str) {
    let job = api
        .ok(
            "/v1/jobs",
            json!({"group": app, "handler": "demoJobHandler", "schedule_type": "NONE"}),
        )
        .await["id"]
        .clone();
    let def = json!({"nodes": [{"key": "only", "job_id": job}], "edges": []});
    let (s, v) = api
        .post(
            "/v1/workflows",
            json!({"name": "unknown-channel", "definition": def, "alarm_channels": "nope"}),
        )
        .await;
    assert_eq!(s, 422, "{v}");
    assert_eq!(v["field"], "alarm_channels", "{v}");
    assert!(v["error"].as_str().unwrap_or("").contains("nope"), "{v}");
    let (s, v) = api
        .post(
            "/v1/workflows",
            json!({"name": "bad-name", "definition": def, "alarm_channels": "a b"}),
        )
        .await;
    assert_eq!(s, 422, "{v}");
    let (s, v) = api
        .post(
            "/v1/workflows",
            json!({"name": "checked", "definition": def, "alarm_channels": " wf-ops , wf-ops "}),
        )
        .await;
    assert_eq!(s, 201, "{v}");
    assert_eq!(v["alarm_channels"], "wf-ops", "{v}");
    let wf = v["id"].as_i64().unwrap();
    let (s, v) = api
        .call(
            reqwest::Method::PUT,
            &format!("/v1/workflows/{wf}"),
            Some(json!({"alarm_channels": "missing"})),
        )
        .await;
    assert_eq!(s, 422, "{v}");
    assert_eq!(v["field"], "alarm_channels", "{v}");
    let (_, channels) = api.get("/v1/alarm-channels").await;
    let id = channels
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "wf-ops")
        .unwrap()["id"]
        .as_i64()
        .unwrap();
    let (s, v) = api
        .call(reqwest::Method::DELETE, &format!("/v1/alarm-channels/{id}"), None)
        .await;
    assert_eq!(s, 409, "{v}");
    assert!(
        v["error"].as_str().unwrap_or("").contains(&format!("workflow {wf}")),
        "{v}"
    );
    let (s, v) = api
        .call(
            reqwest::Method::PUT,
            &format!("/v1/alarm-channels/{id}"),
            Some(json!({"name": "renamed"})),
        )
        .await;
    assert_eq!(s, 409, "{v}");
    // Once the workflow names none, the channel could go (not done: the test uses it).
    let v = api
        .call(
            reqwest::Method::PUT,
            &format!("/v1/workflows/{wf}"),
            Some(json!({"alarm_channels": ""})),
        )
        .await;
    assert_eq!(v.0, 200, "{v:?}");
    assert_eq!(v.1["alarm_channels"], "", "{v:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_failed_workflow_instance_is_told_once_naming_its_failed_node() {
    let env = admin().await;
    let api = &env.api;
    let r = Receiver::start(Vendor::Slack, Behaviour::Normal).await;
    channel(api, "wf-ops", &r).await;
    api.ok("/v1/groups", json!({"app_name": "wf-app"})).await;
    let _ex = DemoExecutor::start_with(&env.prefix, "wf-app", BEAT);
    api.wait_executors("wf-app", 1).await;
    workflow_channels_are_checked(api, "wf-app").await;

    let wf = failing_workflow(api, "wf-app", "nightly-load", Some("wf-ops")).await;
    let quiet = failing_workflow(api, "wf-app", "no-channels", None).await;
    let first = fail_instance(api, wf).await;
    let got = r.wait_accepted(1, 30).await;
    let text = got[0].text();
    for part in [
        "nightly-load",
        &format!("instance {first}"),
        "load (run",
        &format!("{PUBLIC_URL}/#/workflows/instance/{first}"),
    ] {
        assert!(text.contains(part), "the message names {part}: {text}");
    }
    assert!(
        !text.contains("extract (run"),
        "only failed nodes are listed as failed: {text}"
    );

    // A workflow naming no channel tells nobody; a second failure of the first is told once
    // more: two messages in all, one per instance.
    let silent = fail_instance(api, quiet).await;
    let second = fail_instance(api, wf).await;
    let got = r.wait_accepted(2, 30).await;
    assert!(
        got[1].text().contains(&format!("instance {second}")),
        "{}",
        got[1].text()
    );
    let events = all_sent(api, second, INSTANCE, 1).await;
    assert_eq!(events[0]["event"], "workflow_failed", "{events:#?}");
    assert_eq!(events[0]["deliveries"][0]["channel"], "wf-ops");
    assert_eq!(events[0]["deliveries"][0]["run_id"], 0);
    all_sent(api, first, INSTANCE, 1).await;
    let (s, shown) = api.get(&format!("/v1/workflow-instances/{first}/alarms")).await;
    assert_eq!(s, 200, "{shown}");
    assert_eq!(shown.as_array().map(Vec::len), Some(1), "{shown}");
    assert!(shown[0]["title"].as_str().unwrap().contains("load"), "{shown}");
    let (_, none) = api.get(&format!("/v1/workflow-instances/{silent}/alarms")).await;
    assert_eq!(none, json!([]), "no channels, no alarm");
    let (s, v) = api.get("/v1/workflow-instances/999999/alarms").await;
    assert_eq!(s, 404, "{v}");
    let (s, v) = api.get("/v1/alarm-events?event=nothing").await;
    assert_eq!(s, 400, "{v}");
    assert_eq!(r.requests().len(), 2, "{:#?}", r.requests());
    assert_eq!(
        api.metric(r#"chime_alarm_deliveries_total{kind="slack",outcome="sent"}"#)
            .await,
        Some(2.0)
    );
    env.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_group_without_a_live_executor_is_told_once_and_its_return() {
    let env = admin().await;
    let api = &env.api;
    let r = Receiver::start(Vendor::Webhook { secret: None }, Behaviour::Normal).await;
    channel(api, "exec-ops", &r).await;
    let (group, mut ex) = watched_group(api, &env.prefix, "outage-app", "exec-ops").await;
    // Channels but no enabled job, and no executor at all: nothing to tell.
    let idle = api
        .ok(
            "/v1/groups",
            json!({"app_name": "idle-app", "alarm_channels": "exec-ops"}),
        )
        .await["id"]
        .as_i64()
        .unwrap();
    api.ok(
        "/v1/jobs",
        json!({"group": "idle-app", "handler": "x", "schedule_type": "NONE"}),
    )
    .await;

    ex.kill_9();
    let got = r.wait_accepted(1, 60).await;
    assert_eq!(event_of(&got[0]), "no_executor", "{:#?}", got[0]);
    let text = got[0].text();
    assert!(
        text.contains("outage-app") && text.contains("no live executor"),
        "{text}"
    );

    let _back = DemoExecutor::start_with(&env.prefix, "outage-app", BEAT);
    let got = r.wait_accepted(2, 60).await;
    assert_eq!(event_of(&got[1]), "executor_back", "{:#?}", got[1]);
    assert!(got[1].text().contains("outage-app"), "{}", got[1].text());

    let events = all_sent(api, group, GROUP, 2).await;
    let kinds: Vec<&str> = events.iter().map(|e| e["event"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["executor_back", "no_executor"], "newest first: {events:#?}");
    assert_eq!(
        events_about(api, idle, GROUP).await,
        Vec::<Value>::new(),
        "no enabled job, no alarm"
    );
    assert_eq!(r.requests().len(), 2, "{:#?}", r.requests());
    env.close().await;
}

/// A group's outage while a silence window covers the group is recorded, with the window in
/// its note, and nothing is sent; its return is recorded too, saying why it is not sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_silenced_outage_is_recorded_and_not_sent() {
    let env = admin().await;
    let api = &env.api;
    let r = Receiver::start(Vendor::Webhook { secret: None }, Behaviour::Normal).await;
    channel(api, "quiet-ops", &r).await;
    let (group, mut ex) = watched_group(api, &env.prefix, "quiet-app", "quiet-ops").await;
    let now = chime_admin::model::now_ms();
    let (s, v) = api
        .post(
            "/v1/alarm-silences",
            json!({"group_id": group, "name": "maintenance", "starts_at": now - 1000, "ends_at": now + 3_600_000}),
        )
        .await;
    assert_eq!(s, 201, "{v}");

    ex.kill_9();
    let recorded = eventually(60, "the silenced outage recorded", || async {
        match events_about(api, group, GROUP).await.first() {
            Some(e) if e["event"] == "no_executor" => Ok(e.clone()),
            _ => Err("not yet".to_owned()),
        }
    })
    .await;
    assert!(
        recorded["note"].as_str().unwrap_or("").contains("maintenance"),
        "the window is named: {recorded:#}"
    );
    assert_eq!(
        recorded["deliveries"].as_array().map(Vec::len),
        Some(0),
        "nothing to send: {recorded:#}"
    );
    let _back = DemoExecutor::start_with(&env.prefix, "quiet-app", BEAT);
    api.wait_executors("quiet-app", 1).await;
    // Two looks later: still nothing sent, and no return told for a silenced outage.
    tokio::time::sleep(std::time::Duration::from_secs(11)).await;
    assert!(r.requests().is_empty(), "{:#?}", r.requests());
    let events = events_about(api, group, GROUP).await;
    let kinds: Vec<&str> = events.iter().map(|e| e["event"].as_str().unwrap_or("")).collect();
    assert_eq!(kinds, ["executor_back", "no_executor"], "both recorded: {events:#?}");
    assert_eq!(events[0]["deliveries"].as_array().map(Vec::len), Some(0), "{events:#?}");
    assert!(
        !events[0]["note"].as_str().unwrap_or("").is_empty(),
        "says why: {events:#?}"
    );
    env.close().await;
}

/// Two admin processes on one database: the failed instance, the outage and the return are
/// each told once.
async fn two_admins_tell_each_alarm_once(kind: Db) {
    let db = TestDb::new(kind).await;
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "--dead-timeout",
        "3s",
        "--public-url",
        PUBLIC_URL,
        "--alarm-retry-pause",
        "100ms",
    ];
    // One after the other: the first start creates the database's first user.
    let a = AdminProcess::start(&db.url, "events-a", &args, dir.path(), false);
    a.wait_ready().await;
    let b = AdminProcess::start(&db.url, "events-b", &args, dir.path(), false);
    b.wait_ready().await;
    let api = a.api();
    let both = format!("{},{}", a.base(), b.base());
    let r = Receiver::start(Vendor::Webhook { secret: None }, Behaviour::Normal).await;
    channel(&api, "ops", &r).await;
    let (group, mut ex) = watched_group(&api, &both, "two-admins", "ops").await;
    b.api().wait_executors("two-admins", 1).await;

    // The failing node's job names no channel, so its run's alarm goes to the group's ("ops")
    // too: it is told once as well.
    let wf = failing_workflow(&api, "two-admins", "shared", Some("ops")).await;
    let instance = fail_instance(&api, wf).await;
    told(&r, "workflow_failed").await;

    ex.kill_9();
    told(&r, "no_executor").await;
    let _back = DemoExecutor::start_with(&both, "two-admins", BEAT);
    told(&r, "executor_back").await;

    all_sent(&api, instance, INSTANCE, 1).await;
    all_sent(&b.api(), group, GROUP, 2).await;
    let mut events: Vec<String> = r.requests().iter().map(event_of).collect();
    let run_alarms = events.iter().filter(|e| *e == "failed").count();
    assert_eq!(run_alarms, 1, "the node run's alarm once: {events:?}");
    events.retain(|e| e != "failed");
    assert_eq!(events, ["workflow_failed", "no_executor", "executor_back"], "each once");
    drop((a, b));
    db.drop_db().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_admins_tell_each_alarm_once_postgres() {
    two_admins_tell_each_alarm_once(Db::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_admins_tell_each_alarm_once_mariadb() {
    two_admins_tell_each_alarm_once(Db::MySql).await;
}
