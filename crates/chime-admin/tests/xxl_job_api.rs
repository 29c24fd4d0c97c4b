//! XXL-JOB 3.5's job API (`/api/addJob`, `updateJob`, `removeJob`, `startJob`, `stopJob`,
//! `triggerJob`) on a real admin over real HTTP: each call round-trips into what `/v1/jobs`
//! shows, a trigger reaches a real executor, an executor's credentials act on its own group's
//! jobs only, bad bodies are answered with the field at fault, and the rate limit holds.

mod common;

use common::executor::TestExecutor;
use common::{Db, Env, ACCESS_TOKEN};
use serde_json::{json, Value};
use std::time::Duration;

const OWN_APP: &str = "openapi-own";
const OWN_TOKEN: &str = "openapi-own-token";
const OTHER_APP: &str = "openapi-other";

/// Posts raw `body` to `{base}/api/{uri}` with the app name and token headers (each only when
/// given); checks the reply is HTTP 200 JSON and returns the envelope.
async fn raw(base: &str, uri: &str, app: Option<&str>, token: Option<&str>, body: Vec<u8>) -> Value {
    let mut req = reqwest::Client::new()
        .post(format!("{base}/api/{uri}"))
        .header("Content-Type", "application/json")
        .body(body);
    if let Some(a) = app {
        req = req.header("XXL-JOB-APPNAME", a);
    }
    if let Some(t) = token {
        req = req.header("XXL-JOB-ACCESS-TOKEN", t);
    }
    let resp = req.send().await.expect("the admin answers");
    assert_eq!(resp.status(), 200, "every job API reply is HTTP 200");
    let text = resp.text().await.unwrap();
    let v: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"));
    assert!(
        v.get("data").is_some() && v.get("msg").is_some(),
        "XXL-JOB 3.5 envelope: {text}"
    );
    v
}

/// A call as the own group's executor.
async fn own(base: &str, uri: &str, body: Value) -> Value {
    raw(base, uri, Some(OWN_APP), Some(OWN_TOKEN), body.to_string().into_bytes()).await
}

/// The reply must be a failure whose message contains `needle`.
fn refused(v: &Value, needle: &str) {
    assert_eq!(v["code"], 500, "{v}");
    let msg = v["msg"].as_str().unwrap_or_default();
    assert!(msg.contains(needle), "message names '{needle}': {v}");
}

fn ok(v: &Value) {
    assert_eq!(v["code"], 200, "{v}");
}

async fn job(env: &Env, id: i64) -> (u16, Value) {
    env.api.get(&format!("/v1/jobs/{id}")).await
}

async fn scenario(kind: Db) {
    let env = Env::start(kind, Duration::from_secs(30)).await;
    let root = env.api.base.clone();
    let prefix = env.prefix.clone();
    let own_group = env
        .api
        .ok(
            "/v1/groups",
            json!({"app_name": OWN_APP, "title": "own", "access_token": OWN_TOKEN}),
        )
        .await["id"]
        .as_i64()
        .unwrap();
    let other_group = env.group(OTHER_APP).await;
    let executor = TestExecutor::start(&prefix, OWN_APP, OWN_TOKEN).await;
    env.api.wait_executors(OWN_APP, 1).await;

    // addJob, at the context path: every field lands in the job; it is created stopped.
    let add = json!({
        "jobGroup": own_group, "name": "nightly report", "author": "ops", "alarmEmail": "ops@example.com",
        "scheduleType": "CRON", "scheduleConf": "0 0 3 * * ?", "misfireStrategy": "FIRE_ONCE_NOW",
        "executorRouteStrategy": "ROUND", "executorHandler": "ok", "executorParam": "p=1",
        "executorBlockStrategy": "DISCARD_LATER", "executorTimeout": 30, "executorFailRetryCount": "2",
        "glueType": "BEAN", "glueSource": "", "glueRemark": "first", "childJobId": "5"
    });
    let v = own(&prefix, "addJob", add.clone()).await;
    ok(&v);
    let id: i64 = v["data"].as_str().expect("the new id as a string").parse().unwrap();
    let (s, j) = job(&env, id).await;
    assert_eq!(s, 200, "{j}");
    assert_eq!(j["group_id"], own_group);
    assert_eq!(j["description"], "nightly report");
    assert_eq!(j["owner"], "ops");
    assert_eq!(j["alarm_contacts"], "ops@example.com");
    assert_eq!(j["schedule_type"], "CRON");
    assert_eq!(j["schedule_expr"], "0 0 3 * * ?");
    assert_eq!(j["misfire_strategy"], "FIRE_ONCE_NOW");
    assert_eq!(j["route_strategy"], "ROUND");
    assert_eq!(j["handler"], "ok");
    assert_eq!(j["param"], "p=1");
    assert_eq!(j["block_strategy"], "DISCARD_LATER");
    assert_eq!(j["timeout_secs"], 30);
    assert_eq!(j["retry_count"], 2);
    assert_eq!(j["glue_type"], "BEAN");
    assert_eq!(j["running"], false, "new jobs are created stopped");
    assert_eq!(j["child_job_ids"], json!([]), "childJobId is not taken");

    // A script job keeps its GLUE source; a fixed rate maps onto FIX_RATE.
    let v = own(
        &root,
        "addJob",
        json!({"jobGroup": own_group, "name": "script", "author": "ops", "scheduleType": "FIX_RATE",
               "scheduleConf": "60", "glueType": "GLUE_SHELL", "glueSource": "echo hi"}),
    )
    .await;
    ok(&v);
    let script: i64 = v["data"].as_str().unwrap().parse().unwrap();
    let (_, j) = job(&env, script).await;
    assert_eq!(j["glue_type"], "GLUE_SHELL");
    assert_eq!(j["glue_source"], "echo hi");
    assert_eq!(j["schedule_type"], "FIX_RATE");
    assert_eq!(j["schedule_expr"], "60");

    // updateJob: fields change, the group stays (a jobGroup in the body is ignored), GLUE
    // fields are ignored.
    let v = own(
        &prefix,
        "updateJob",
        json!({"id": id, "jobGroup": other_group, "name": "nightly report v2", "author": "ops",
               "scheduleType": "CRON", "scheduleConf": "0 30 4 * * ?", "executorParam": "p=2",
               "executorTimeout": 0, "glueType": "GLUE_PYTHON", "glueSource": "print(1)"}),
    )
    .await;
    ok(&v);
    let (_, j) = job(&env, id).await;
    assert_eq!(j["description"], "nightly report v2");
    assert_eq!(j["schedule_expr"], "0 30 4 * * ?");
    assert_eq!(j["param"], "p=2");
    assert_eq!(j["timeout_secs"], 0);
    assert_eq!(j["group_id"], own_group, "an update keeps the group");
    assert_eq!(j["glue_type"], "BEAN", "an update ignores the GLUE fields");
    assert_eq!(j["route_strategy"], "ROUND", "fields not given are kept");

    // startJob / stopJob.
    ok(&own(&prefix, "startJob", json!({"id": id})).await);
    assert_eq!(job(&env, id).await.1["running"], true);
    ok(&own(&prefix, "stopJob", json!({"id": id})).await);
    assert_eq!(job(&env, id).await.1["running"], false);
    // A NONE job cannot be started.
    let v = own(
        &prefix,
        "addJob",
        json!({"jobGroup": own_group, "name": "by hand", "author": "ops", "scheduleType": "NONE",
               "executorHandler": "ok"}),
    )
    .await;
    ok(&v);
    let by_hand: i64 = v["data"].as_str().unwrap().parse().unwrap();
    refused(&own(&prefix, "startJob", json!({"id": by_hand})).await, "scheduleType");
    assert_eq!(job(&env, by_hand).await.1["running"], false);

    // triggerJob: a manual run reaches the executor; a null parameter is sent as "".
    ok(&own(&prefix, "triggerJob", json!({"id": by_hand, "executorParam": null})).await);
    let address = format!("{}/", executor.address.trim_end_matches('/'));
    ok(&own(
        &prefix,
        "triggerJob",
        json!({"id": by_hand, "executorParam": "once", "addressList": address}),
    )
    .await);
    let runs = env
        .api
        .wait_runs(by_hand, 30, "two manual runs finished", |r| common::finished(r) == 2)
        .await;
    for r in &runs {
        assert_eq!(r["trigger_type"], "MANUAL", "{r}");
        assert!(common::succeeded(r), "{r}");
    }
    let params: Vec<String> = executor
        .seen
        .lock()
        .unwrap()
        .runs
        .iter()
        .filter(|r| r.job_id == by_hand)
        .map(|r| r.executor_params.clone())
        .collect();
    assert_eq!(params.len(), 2, "the executor got both runs: {params:?}");
    assert!(
        params.contains(&String::new()) && params.contains(&"once".to_owned()),
        "{params:?}"
    );
    // An address that is not an executor of the group is refused, naming the field.
    refused(
        &own(
            &prefix,
            "triggerJob",
            json!({"id": by_hand, "addressList": format!("{address},http://127.0.0.1:1")}),
        )
        .await,
        "addressList",
    );

    // Access: blank headers, unknown app, a token not the group's.
    let body = json!({"id": id}).to_string().into_bytes();
    let v = raw(&prefix, "stopJob", None, Some(OWN_TOKEN), body.clone()).await;
    refused(&v, "accessToken or appname is empty");
    let v = raw(&prefix, "stopJob", Some(OWN_APP), None, body.clone()).await;
    refused(&v, "accessToken or appname is empty");
    let v = raw(&prefix, "stopJob", Some(OWN_APP), Some("wrong"), body.clone()).await;
    refused(&v, "accessToken or appname invalid");
    let v = raw(&prefix, "stopJob", Some(OWN_APP), Some(ACCESS_TOKEN), body.clone()).await;
    refused(&v, "accessToken or appname invalid");
    let v = raw(
        &prefix,
        "stopJob",
        Some("no-such-app"),
        Some(ACCESS_TOKEN),
        body.clone(),
    )
    .await;
    refused(&v, "accessToken or appname invalid");
    // The other group has no token of its own: the admin's token is its token.
    let v = raw(&root, "stopJob", Some(OTHER_APP), Some(ACCESS_TOKEN), body.clone()).await;
    refused(&v, "forbidden");

    // Another group's jobs are out of reach.
    let theirs = env
        .job(
            json!({"group_id": other_group, "handler": "ok", "schedule_type": "CRON",
                    "schedule_expr": "0 0 1 * * ?", "description": "theirs"}),
        )
        .await;
    let mut foreign = add.clone();
    foreign["jobGroup"] = json!(other_group);
    refused(&own(&prefix, "addJob", foreign).await, "forbidden");
    refused(
        &own(
            &prefix,
            "updateJob",
            json!({"id": theirs, "name": "mine now", "author": "x"}),
        )
        .await,
        "forbidden",
    );
    for uri in ["startJob", "stopJob", "removeJob", "triggerJob"] {
        refused(&own(&prefix, uri, json!({"id": theirs})).await, "forbidden");
    }
    let (s, j) = job(&env, theirs).await;
    assert_eq!(s, 200, "still there: {j}");
    assert_eq!(j["description"], "theirs");
    assert_eq!(j["running"], false);
    assert!(env.api.runs(theirs).await.is_empty(), "never triggered");
    let (_, jobs) = env.api.get(&format!("/v1/jobs?group_id={other_group}")).await;
    let listed = jobs.get("jobs").unwrap_or(&jobs).as_array().map(Vec::len);
    assert_eq!(listed, Some(1), "no job was added to the other group: {jobs}");

    // Malformed bodies: a clear message, never a server error.
    for (uri, body, needle) in [
        ("addJob", &b""[..], "requestBody empty"),
        ("addJob", b"not json", "not JSON"),
        ("addJob", b"[1,2]", "JSON object"),
        ("addJob", br#"{"jobGroup":"abc"}"#, "jobGroup"),
        ("updateJob", br#"{"id":{"x":1}}"#, "id"),
        ("triggerJob", br#"{"id":1,"executorParam":[1]}"#, "executorParam"),
    ] {
        let v = raw(&prefix, uri, Some(OWN_APP), Some(OWN_TOKEN), body.to_vec()).await;
        refused(&v, needle);
    }
    let base = json!({"jobGroup": own_group, "name": "n", "author": "a", "scheduleType": "CRON",
                      "scheduleConf": "0 0 * * * ?", "executorHandler": "ok"});
    for (field, value, needle) in [
        ("author", json!(""), "author"),
        ("scheduleConf", json!("not a cron"), "scheduleConf"),
        ("scheduleType", json!("WEEKLY"), "scheduleType"),
        ("executorRouteStrategy", json!("NEAREST"), "executorRouteStrategy"),
        ("executorBlockStrategy", json!("QUEUE"), "executorBlockStrategy"),
        ("misfireStrategy", json!("LATER"), "misfireStrategy"),
        ("executorFailRetryCount", json!(1000), "executorFailRetryCount"),
        ("glueType", json!("GLUE_COBOL"), "glueType"),
    ] {
        let mut b = base.clone();
        b[field] = value;
        refused(&own(&prefix, "addJob", b).await, needle);
    }
    refused(&own(&prefix, "updateJob", json!({"id": 0})).await, "id");
    refused(&own(&prefix, "removeJob", json!({"id": 987654})).await, "not found");
    let huge = json!({"jobGroup": own_group, "name": "n", "author": "a", "glueType": "GLUE_SHELL",
                      "glueSource": "x".repeat(1024 * 1024 + 1)});
    refused(&own(&prefix, "addJob", huge).await, "larger than");

    // removeJob deletes the job and its runs.
    ok(&own(&prefix, "removeJob", json!({"id": by_hand})).await);
    assert_eq!(job(&env, by_hand).await.0, 404);
    assert!(env.api.runs(by_hand).await.is_empty(), "its runs went with it");

    // Every call past the access check is audited as openapi and the app name.
    let (s, audit) = env
        .api
        .get(&format!("/v1/audit?username=openapi:{OWN_APP}&limit=500"))
        .await;
    assert_eq!(s, 200, "{audit}");
    let entries = audit
        .get("entries")
        .unwrap_or(&audit)
        .as_array()
        .cloned()
        .unwrap_or_default();
    let actions: Vec<&str> = entries.iter().filter_map(|e| e["action"].as_str()).collect();
    for uri in ["addJob", "updateJob", "removeJob", "startJob", "stopJob", "triggerJob"] {
        let action = format!("POST /api/{uri}");
        assert!(actions.contains(&action.as_str()), "{action} audited: {actions:?}");
    }
    assert!(
        entries
            .iter()
            .any(|e| e["action"] == "POST /api/updateJob" && e["detail"]["status"] == 403),
        "a refused call on another group's job is audited as forbidden"
    );

    executor.kill();
    env.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn job_api_on_sqlite() {
    scenario(Db::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn job_api_on_postgres() {
    scenario(Db::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn job_api_on_mariadb() {
    scenario(Db::MySql).await;
}

/// 100 calls per 30 s per group: the calls beyond get XXL-JOB's 502. Refill is 1 per 0.3 s,
/// so the calls are made back to back and a 502 must come well before 200 calls. Another
/// group's calls go on meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn job_api_is_rate_limited() {
    let env = Env::start(Db::Sqlite, Duration::from_secs(30)).await;
    env.api
        .ok(
            "/v1/groups",
            json!({"app_name": OWN_APP, "title": "own", "access_token": OWN_TOKEN}),
        )
        .await;
    const OTHER_TOKEN: &str = "openapi-other-token";
    env.api
        .ok(
            "/v1/groups",
            json!({"app_name": OTHER_APP, "title": "other", "access_token": OTHER_TOKEN}),
        )
        .await;
    // Refused callers take no permit: a wrong token cannot starve the right one.
    for _ in 0..20 {
        let v = raw(&env.prefix, "stopJob", Some(OWN_APP), Some("wrong"), b"{}".to_vec()).await;
        refused(&v, "invalid");
    }
    for i in 0..100 {
        let v = own(&env.prefix, "stopJob", json!({"id": 424242})).await;
        assert_ne!(v["code"], 502, "call {i} of the first 100 is not limited: {v}");
    }
    let mut limited = None;
    for i in 100..200 {
        let v = own(&env.prefix, "stopJob", json!({"id": 424242})).await;
        if v["code"] == 502 {
            limited = Some(v);
            break;
        }
        assert!(i < 199, "no call was limited");
    }
    let v = limited.expect("a call beyond 100 is limited");
    assert_eq!(v["msg"], "Too many requests, please try again later.");
    // The other group's calls are its own: not limited by the first group's.
    for i in 0..50 {
        let body = json!({"id": 424242}).to_string().into_bytes();
        let v = raw(&env.prefix, "stopJob", Some(OTHER_APP), Some(OTHER_TOKEN), body).await;
        assert_ne!(v["code"], 502, "call {i} of another group is not limited: {v}");
    }
    env.close().await;
}
