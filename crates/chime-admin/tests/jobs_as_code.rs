//! Jobs as code over real HTTP on each database: `GET /v1/export` on one admin and
//! `POST /v1/apply` on a second, fresh one reproduce the same groups and jobs; applying again
//! changes nothing; an edit is an update naming exactly the changed fields; prune deletes only
//! in the groups the document names; a document with one bad job, or one that fails half way
//! (a cycle of new children), writes nothing; a dry run writes nothing; keys are unique per
//! group; children are matched by key; the audit log names the apply.

mod common;

use common::{Db, Env};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::time::Duration;

/// The jobs of an admin by `group/key`, without what differs between two admins by nature
/// (ids, times) and with children named by `group/key`.
async fn jobs_by_name(env: &Env) -> BTreeMap<String, Value> {
    let (s, groups) = env.api.get("/v1/groups").await;
    assert_eq!(s, 200);
    let apps: BTreeMap<i64, String> = groups
        .as_array()
        .unwrap()
        .iter()
        .map(|g| (g["id"].as_i64().unwrap(), g["app_name"].as_str().unwrap().to_owned()))
        .collect();
    let (s, jobs) = env.api.get("/v1/jobs?limit=1000").await;
    assert_eq!(s, 200, "{jobs}");
    let jobs = jobs.as_array().unwrap().clone();
    let names: BTreeMap<i64, String> = jobs
        .iter()
        .map(|j| {
            let app = &apps[&j["group_id"].as_i64().unwrap()];
            (
                j["id"].as_i64().unwrap(),
                format!("{app}/{}", j["key"].as_str().unwrap()),
            )
        })
        .collect();
    jobs.into_iter()
        .map(|mut j| {
            let name = names[&j["id"].as_i64().unwrap()].clone();
            let children: Vec<String> = j["child_job_ids"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| names[&c.as_i64().unwrap()].clone())
                .collect();
            j["child_job_ids"] = json!(children);
            j["group"] = json!(apps[&j["group_id"].as_i64().unwrap()]);
            let o = j.as_object_mut().unwrap();
            for volatile in [
                "id",
                "group_id",
                "partition",
                "glue_updated_at",
                "anchor_at",
                "next_fire_at",
                "last_fire_at",
                "created_at",
                "updated_at",
            ] {
                o.remove(volatile);
            }
            (name, j)
        })
        .collect()
}

async fn export(env: &Env) -> Value {
    let (s, doc) = env.api.get("/v1/export").await;
    assert_eq!(s, 200, "{doc}");
    doc
}

/// `body` (a document) with the flags.
fn with_flags(doc: &Value, dry_run: bool, prune: bool) -> Value {
    let mut b = doc.clone();
    b["dry_run"] = json!(dry_run);
    b["prune"] = json!(prune);
    b
}

fn names(entries: &Value) -> Vec<String> {
    entries
        .as_array()
        .unwrap()
        .iter()
        .map(|e| match e["key"].as_str() {
            Some(k) => format!("{}/{k}", e["group"].as_str().unwrap()),
            None => format!("group {}", e["group"].as_str().unwrap()),
        })
        .collect()
}

async fn jobs_as_code(kind: Db) {
    let a = Env::start(kind, Duration::from_secs(30)).await;
    let orders = a.group("orders").await;
    let billing = a.group("billing").await;
    let (s, _) = a
        .api
        .call(
            reqwest::Method::PUT,
            "/v1/groups/billing",
            Some(json!({"access_token": "billing-secret-token", "keep_logs": false})),
        )
        .await;
    assert_eq!(s, 200);
    let nightly = a
        .job(
            json!({"group_id": orders, "key": "nightly", "handler": "nightlyHandler", "param": "full",
                    "schedule_type": "CRON", "schedule_expr": "0 0 2 * * ?", "time_zone": "Europe/Berlin",
                    "more_schedules": [{"schedule_type": "CRON", "schedule_expr": "0 0 14 * * ?", "time_zone": "Asia/Shanghai"}],
                    "retry_count": 2, "timeout_secs": 60, "owner": "ops", "running": true}),
        )
        .await;
    let sync = a
        .job(json!({"group_id": orders, "key": "sync", "glue_type": "GLUE_SHELL",
                    "glue_source": "#!/bin/sh\necho \"sync\"\n", "description": "sync it",
                    "schedule_type": "NONE", "child_job_ids": [nightly]}))
        .await;
    // Without a key a job is named by its id; children may be in another group.
    let (s, report) = a
        .api
        .post(
            "/v1/jobs",
            json!({"group_id": billing, "handler": "report", "schedule_type": "FIX_RATE",
                                 "schedule_expr": "3600", "child_job_ids": [sync]}),
        )
        .await;
    assert_eq!(s, 201, "{report}");
    let report_key = format!("job-{}", report["id"]);
    assert_eq!(report["key"], json!(report_key));
    // A key is unique within its group (and may repeat in another).
    let (s, e) = a
        .api
        .post("/v1/jobs", json!({"group_id": orders, "key": "sync", "handler": "x"}))
        .await;
    assert_eq!(s, 422, "{e}");
    assert_eq!(e["field"], "key");
    let (s, e) = a
        .api
        .post(
            "/v1/jobs",
            json!({"group_id": orders, "key": "bad key", "handler": "x"}),
        )
        .await;
    assert_eq!(s, 422, "{e}");
    let (s, e) = a
        .api
        .call(
            reqwest::Method::PUT,
            &format!("/v1/jobs/{nightly}"),
            Some(json!({"key": "sync"})),
        )
        .await;
    assert_eq!(s, 422, "{e}");

    // The document: no ids, no secrets.
    let doc = export(&a).await;
    let text = doc.to_string();
    assert!(!text.contains("billing-secret-token"), "{text}");
    assert!(!text.contains("\"id\""), "{text}");
    let groups = doc["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 2);
    assert_eq!(groups[1]["access_token_set"], true);
    assert_eq!(groups[0]["jobs"][1]["children"], json!(["nightly"]));
    assert_eq!(groups[1]["jobs"][0]["children"], json!(["orders/sync"]));
    let (s, one) = a.api.get("/v1/export?group=billing").await;
    assert_eq!(s, 200);
    assert_eq!(one["groups"].as_array().unwrap().len(), 1);
    let (s, _) = a.api.get("/v1/export?group=nope").await;
    assert_eq!(s, 404);

    // A second, fresh admin: a dry run plans everything and writes nothing.
    let b = Env::start(kind, Duration::from_secs(30)).await;
    let (s, plan) = b.api.post("/v1/apply", with_flags(&doc, true, false)).await;
    assert_eq!(s, 200, "{plan}");
    assert_eq!(plan["applied"], false);
    assert_eq!(
        names(&plan["create"]),
        vec![
            "group orders".to_owned(),
            "group billing".to_owned(),
            "orders/nightly".to_owned(),
            "orders/sync".to_owned(),
            format!("billing/{report_key}"),
        ]
    );
    assert!(jobs_by_name(&b).await.is_empty());
    assert_eq!(b.api.get("/v1/groups").await.1, json!([]));

    // Applied, it reproduces the same jobs, children re-mapped by key.
    let (s, plan) = b.api.post("/v1/apply", doc.clone()).await;
    assert_eq!(s, 200, "{plan}");
    assert_eq!(plan["applied"], true);
    assert_eq!(names(&plan["create"]).len(), 5);
    assert_eq!(jobs_by_name(&b).await, jobs_by_name(&a).await);
    let mut doc_b = export(&b).await;
    // The token is a secret: it is not carried over.
    assert_eq!(doc_b["groups"][1]["access_token_set"], false);
    doc_b["groups"][1]["access_token_set"] = json!(true);
    assert_eq!(doc_b, doc);

    // Again: nothing to do.
    let (s, plan) = b.api.post("/v1/apply", doc.clone()).await;
    assert_eq!(s, 200);
    assert_eq!(
        plan,
        json!({"create": [], "update": [], "delete": [], "applied": false})
    );

    // An edit is an update of exactly the changed fields.
    let mut edited = doc.clone();
    edited["groups"][0]["jobs"][0]["schedule_expr"] = json!("0 30 3 * * ?");
    edited["groups"][0]["jobs"][0]["param"] = json!("incremental");
    edited["groups"][0]["jobs"][0]["more_schedules"] = json!([{"schedule_type": "FIX_RATE", "schedule_expr": "600"}]);
    edited["groups"][0]["title"] = json!("Orders");
    let (s, plan) = b.api.post("/v1/apply", edited.clone()).await;
    assert_eq!(s, 200, "{plan}");
    assert_eq!(
        plan["update"],
        json!([
            {"kind": "group", "group": "orders", "key": null, "fields": ["title"]},
            {"kind": "job", "group": "orders", "key": "nightly", "fields": ["schedule_expr", "more_schedules", "param"]},
        ])
    );
    let after = jobs_by_name(&b).await;
    assert_eq!(after["orders/nightly"]["schedule_expr"], "0 30 3 * * ?");
    assert_eq!(after["orders/nightly"]["param"], "incremental");
    assert_eq!(
        after["orders/nightly"]["more_schedules"],
        json!([{"schedule_type": "FIX_RATE", "schedule_expr": "600"}])
    );

    // The audit log names it.
    let (s, audit) = b.api.get("/v1/audit?action=apply").await;
    assert_eq!(s, 200, "{audit}");
    let entries: Vec<&Value> = audit
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"] == "apply")
        .collect();
    assert_eq!(entries.len(), 2, "{audit}");
    let detail = match &entries[0]["detail"] {
        Value::String(s) => serde_json::from_str(s).unwrap(),
        other => other.clone(),
    };
    assert_eq!(detail["update"], 2, "{audit}");
    assert_eq!(detail["create"], 0, "{audit}");

    // One bad job: nothing is written, and the error names group, key and field.
    let before = jobs_by_name(&b).await;
    let mut bad = edited.clone();
    bad["groups"][0]["jobs"]
        .as_array_mut()
        .unwrap()
        .push(json!({"key": "extra", "handler": "extraHandler"}));
    bad["groups"][1]["jobs"][0]["schedule_expr"] = json!("every day");
    let (s, e) = b.api.post("/v1/apply", bad).await;
    assert_eq!(s, 422, "{e}");
    assert_eq!(
        e["field"],
        json!(format!("groups[billing].jobs[{report_key}].schedule_expr"))
    );
    assert!(e["error"].as_str().unwrap().contains("group 'billing'"), "{e}");
    assert_eq!(jobs_by_name(&b).await, before);

    // A failure found after the first writes (new jobs whose children form a cycle) rolls
    // them back too.
    let mut cycle = edited.clone();
    let jobs = cycle["groups"][0]["jobs"].as_array_mut().unwrap();
    jobs.push(json!({"key": "ping", "handler": "h", "children": ["pong"]}));
    jobs.push(json!({"key": "pong", "handler": "h", "children": ["ping"]}));
    let (s, e) = b.api.post("/v1/apply", cycle).await;
    assert_eq!(s, 422, "{e}");
    assert_eq!(jobs_by_name(&b).await, before);

    // Keys appear once per group in a document.
    let mut dup = edited.clone();
    let first = dup["groups"][0]["jobs"][0].clone();
    dup["groups"][0]["jobs"].as_array_mut().unwrap().push(first);
    let (s, e) = b.api.post("/v1/apply", dup).await;
    assert_eq!(s, 422, "{e}");
    assert_eq!(e["field"], "groups[orders].jobs[nightly].key");

    // Prune deletes only in the groups the document names.
    let orders_b = b.api.get("/v1/groups/orders").await.1["id"].as_i64().unwrap();
    let billing_b = b.api.get("/v1/groups/billing").await.1["id"].as_i64().unwrap();
    b.job(json!({"group_id": orders_b, "key": "stray", "handler": "h"}))
        .await;
    b.job(json!({"group_id": billing_b, "key": "stray", "handler": "h"}))
        .await;
    let only_orders = json!({"groups": [edited["groups"][0].clone()]});
    // Without prune, unlisted jobs stay.
    let (s, plan) = b.api.post("/v1/apply", only_orders.clone()).await;
    assert_eq!(s, 200);
    assert_eq!(plan["delete"], json!([]));
    let (s, plan) = b.api.post("/v1/apply", with_flags(&only_orders, false, true)).await;
    assert_eq!(s, 200, "{plan}");
    assert_eq!(names(&plan["delete"]), vec!["orders/stray".to_owned()]);
    let now = jobs_by_name(&b).await;
    assert!(!now.contains_key("orders/stray"));
    assert!(now.contains_key("billing/stray"));
    // A job another job still names as a child is not pruned: all or nothing.
    let mut without_sync = only_orders.clone();
    without_sync["groups"][0]["jobs"].as_array_mut().unwrap().remove(1);
    let (s, e) = b.api.post("/v1/apply", with_flags(&without_sync, false, true)).await;
    assert_eq!(s, 409, "{e}");
    assert!(jobs_by_name(&b).await.contains_key("orders/sync"));
    // A body without groups prunes nothing.
    let (s, plan) = b.api.post("/v1/apply", json!({"prune": true})).await;
    assert_eq!(s, 200);
    assert_eq!(plan["delete"], json!([]));

    // Unknown fields are refused, naming them.
    let (s, e) = b
        .api
        .post(
            "/v1/apply",
            json!({"groups": [{"app_name": "x", "jobs": [{"key": "k", "schedul": 1}]}]}),
        )
        .await;
    assert_eq!(s, 400, "{e}");

    b.close().await;
    a.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_as_code_sqlite() {
    jobs_as_code(Db::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_as_code_mysql() {
    jobs_as_code(Db::MySql).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_as_code_postgres() {
    jobs_as_code(Db::Postgres).await;
}
