//! Jobs a service declares in its code, applied by the Rust executor SDK at start with an API
//! key that edits its group: created at the first start, unchanged by the next, brought up to
//! a changed declaration, never deleting a job someone made by hand; and the rules of
//! `/v1/apply` for a group-limited editor key (what `chime apply` sends with such a key).

mod common;

use chime_executor::{Executor, ExecutorHandle, JobContext, JobDeclaration, JobResult};
use common::caller::Caller;
use common::{Db, TestDb, ACCESS_TOKEN};
use reqwest::Method;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// The billing service's executor, declaring `jobs`, applied with `key`.
async fn billing_service(base: &str, key: &str, logs: &std::path::Path, jobs: Vec<JobDeclaration>) -> ExecutorHandle {
    let mut b = Executor::builder()
        .admin_addresses([base])
        .app_name("billing")
        .access_token(ACCESS_TOKEN)
        .listen("127.0.0.1:0".parse().unwrap())
        .log_dir(logs)
        .api_key(key)
        .handler("closeInvoices", |_ctx: JobContext| async move {
            Ok::<_, String>(JobResult::success())
        });
    for j in jobs {
        b = b.declare_job(j);
    }
    b.build().unwrap().start().await.unwrap()
}

/// The billing group's jobs by key, once `pred` holds of them (the executor applies its
/// declarations in the background).
async fn jobs_when(api: &Caller, what: &str, pred: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let jobs = api.ok(Method::GET, "/v1/jobs?group=billing", None).await;
        let jobs = jobs.as_array().unwrap().clone();
        if pred(&jobs) {
            return jobs;
        }
        assert!(Instant::now() < deadline, "{what}: {jobs:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn by_key<'a>(jobs: &'a [Value], key: &str) -> Option<&'a Value> {
    jobs.iter().find(|j| j["key"] == key)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_services_declared_jobs_are_applied_at_each_start() {
    let db = TestDb::new(Db::Sqlite).await;
    let handle = common::start_admin(&db.url).await;
    let base = format!("http://{}", handle.local_addr);
    let api = Caller::api(&base);
    let billing = api.new_group("billing").await;
    let (key, _) = api
        .new_key(json!({"name": "billing-service", "role": "editor", "group_ids": [billing]}))
        .await;
    // A job someone made by hand in the same group.
    api.ok(
        Method::POST,
        "/v1/jobs",
        Some(json!({"group_id": billing, "key": "by-hand", "handler": "closeInvoices", "schedule_type": "NONE"})),
    )
    .await;
    let logs = tempfile::tempdir().unwrap();
    let declared = || {
        vec![
            JobDeclaration::new("close-invoices", "closeInvoices")
                .description("close last month's invoices")
                .cron("0 0 2 1 * ?")
                .time_zone("Asia/Shanghai")
                .retries(2),
            JobDeclaration::new("rebuild-index", "closeInvoices").stopped(),
        ]
    };

    // First start: both created as declared; the hand-made job stays.
    let exec = billing_service(&base, &key, logs.path(), declared()).await;
    let jobs = jobs_when(&api, "the declared jobs", |j| {
        by_key(j, "close-invoices").is_some() && by_key(j, "rebuild-index").is_some()
    })
    .await;
    let close = by_key(&jobs, "close-invoices").unwrap().clone();
    assert_eq!(
        (
            close["schedule_expr"].as_str(),
            close["time_zone"].as_str(),
            close["running"].as_bool(),
            close["retry_count"].as_i64()
        ),
        (Some("0 0 2 1 * ?"), Some("Asia/Shanghai"), Some(true), Some(2)),
        "{close}"
    );
    assert_eq!(by_key(&jobs, "rebuild-index").unwrap()["running"], false);
    assert!(
        by_key(&jobs, "by-hand").is_some(),
        "a job the service did not declare stays"
    );
    let audit = api
        .ok(Method::GET, "/v1/audit?username=key:billing-service", None)
        .await;
    assert!(
        audit
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["action"] == "POST /v1/apply"),
        "{audit}"
    );
    exec.shutdown().await;

    // Second start, same declarations: nothing changes.
    let exec = billing_service(&base, &key, logs.path(), declared()).await;
    let applies = || async {
        api.ok(Method::GET, "/v1/audit?username=key:billing-service&action=apply", None)
            .await
            .as_array()
            .unwrap()
            .len()
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while applies().await < 2 {
        assert!(Instant::now() < deadline, "the second start applied its declarations");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let again = jobs_when(&api, "unchanged", |_| true).await;
    assert_eq!(
        by_key(&again, "close-invoices").unwrap()["updated_at"],
        close["updated_at"]
    );
    exec.shutdown().await;

    // A changed declaration is brought in at the next start.
    let mut changed = declared();
    changed[0] = JobDeclaration::new("close-invoices", "closeInvoices")
        .description("close last month's invoices")
        .cron("0 0 3 1 * ?")
        .time_zone("Asia/Shanghai")
        .retries(2);
    let exec = billing_service(&base, &key, logs.path(), changed).await;
    let jobs = jobs_when(&api, "the changed schedule", |j| {
        by_key(j, "close-invoices").is_some_and(|c| c["schedule_expr"] == "0 0 3 1 * ?")
    })
    .await;
    assert_eq!(jobs.len(), 3, "{jobs:?}");
    exec.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_editor_key_applies_the_jobs_of_its_groups_only() {
    let db = TestDb::new(Db::Sqlite).await;
    let handle = common::start_admin(&db.url).await;
    let base = format!("http://{}", handle.local_addr);
    let api = Caller::api(&base);
    let billing = api.new_group("billing").await;
    api.new_group("other").await;
    let mut keys = Vec::new();
    for role in ["editor", "operator"] {
        let body = json!({"name": format!("billing-{role}"), "role": role, "group_ids": [billing]});
        keys.push(Caller::with_key(&base, &api.new_key(body).await.0));
    }
    let (editor, operator) = (&keys[0], &keys[1]);
    let job = |key: &str| json!({"key": key, "handler": "h"});
    let doc = |groups: Value| json!({ "groups": groups });

    let ok = editor
        .ok(
            Method::POST,
            "/v1/apply",
            Some(doc(json!([{"app_name": "billing", "jobs": [job("a")]}]))),
        )
        .await;
    assert_eq!(ok["create"][0]["key"], "a", "{ok}");
    let refused = [
        (
            operator,
            doc(json!([{"app_name": "billing", "jobs": [job("b")]}])),
            "needs the role editor",
        ),
        (
            editor,
            doc(json!([{"app_name": "other", "jobs": [job("b")]}])),
            "no access",
        ),
        (
            editor,
            doc(json!([{"app_name": "new-group", "jobs": []}])),
            "administrators create groups",
        ),
        (
            editor,
            doc(json!([{"app_name": "billing", "title": "x", "jobs": []}])),
            "settings",
        ),
        (
            editor,
            doc(
                json!([{"app_name": "billing", "jobs": [{"key": "g", "handler": "", "glue_type": "GLUE_SHELL", "glue_source": "rm -rf /"}]}]),
            ),
            "GLUE",
        ),
        (
            editor,
            doc(json!([{"app_name": "billing", "jobs": [{"key": "c", "handler": "h", "children": ["other/x"]}]}])),
            "child",
        ),
        (
            editor,
            json!({"groups": [{"app_name": "billing", "jobs": [job("a")]}], "prune": true}),
            "prune",
        ),
        (
            editor,
            json!({"groups": [], "alarm_channels": [{"name": "x", "kind": "slack"}]}),
            "administrators only",
        ),
    ];
    for (who, body, why) in refused {
        let (s, v) = who.call(Method::POST, "/v1/apply", Some(body.clone())).await;
        assert_eq!(s, 403, "{body}: {v}");
        assert!(v["error"].as_str().unwrap().contains(why), "{body}: {v}");
    }
    // Nothing of the refused documents was written.
    let jobs = api.ok(Method::GET, "/v1/jobs", None).await;
    let keys: Vec<&str> = jobs
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|j| j["key"].as_str())
        .collect();
    assert_eq!(keys, vec!["a"]);
}
