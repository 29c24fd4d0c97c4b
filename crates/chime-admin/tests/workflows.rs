//! Workflows end to end, on SQLite, MariaDB and PostgreSQL: the admin in the test process, its
//! nodes' jobs run by real Chime executors (the demo handlers) over real HTTP. A diamond whose
//! join waits for both branches, with results passed into parameters; a fan-out of 100 nodes
//! and their join; a failure branch; stop, retry, skip and mark succeeded; a concurrency limit
//! that queues; a cron-fired workflow; definitions refused naming the node. Every node runs
//! exactly once (counted on the runs of its job).

mod common;

use chime_admin::model::now_ms;
use common::{eventually, status, Db, Env};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::time::Duration;

const APP: &str = "wf-demo";

/// Node key → its entry in the instance.
fn nodes(instance: &Value) -> HashMap<String, Value> {
    instance["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| (n["node"].as_str().unwrap().to_owned(), n.clone()))
        .collect()
}

async fn job(env: &Env, handler: &str, param: &str, retries: i64) -> i64 {
    env.job(json!({"group": APP, "handler": handler, "param": param, "retry_count": retries}))
        .await
}

async fn workflow(env: &Env, body: Value) -> i64 {
    let (s, v) = env.api.post("/v1/workflows", body).await;
    assert_eq!(s, 201, "{v}");
    v["id"].as_i64().unwrap()
}

async fn trigger(env: &Env, wf: i64) -> i64 {
    let v = env.api.ok(&format!("/v1/workflows/{wf}/trigger"), json!({})).await;
    v["instance_id"].as_i64().unwrap()
}

/// The fire times of workflow `wf`'s instances, in order (one per instance).
async fn fire_times(env: &Env, wf: i64) -> Vec<i64> {
    let (_, list) = env
        .api
        .get(&format!("/v1/workflow-instances?workflow_id={wf}&limit=1000"))
        .await;
    let mut at: Vec<i64> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["scheduled_at"].as_i64().unwrap())
        .collect();
    at.sort_unstable();
    at
}

/// The runs of `job` made by workflow nodes.
async fn node_runs(env: &Env, job: i64) -> Vec<Value> {
    env.api
        .runs(job)
        .await
        .into_iter()
        .filter(|r| r["trigger_type"] == "WORKFLOW")
        .collect()
}

async fn workflows_story(kind: Db) {
    let env = Env::start(kind, common::demo_executor::REAL_EXECUTOR_DEAD_TIMEOUT).await;
    env.group(APP).await;
    let _executors = env.demo_executors(APP, 2).await;

    // A diamond: a → b, c → d (join all); d's parameter carries b's and c's results.
    let echo = job(&env, "demoJobHandler", "from-job", 0).await;
    let (a, b, c, d) = (
        job(&env, "demoJobHandler", "", 0).await,
        job(&env, "demoJobHandler", "", 0).await,
        job(&env, "demoJobHandler", "", 0).await,
        job(&env, "demoJobHandler", "", 0).await,
    );
    let diamond = workflow(
        &env,
        json!({
            "name": "diamond",
            "definition": {
                "nodes": [
                    {"key": "a", "job_id": a, "param": "start"},
                    {"key": "b", "job_id": b, "param": "b-after-{{a.result}}"},
                    {"key": "c", "job_id": c, "param": "c"},
                    {"key": "d", "job_id": d, "param": "{{b.result}}+{{c.result}}"},
                    {"key": "own", "job_id": echo}
                ],
                "edges": [
                    {"from": "a", "to": "b"}, {"from": "a", "to": "c"},
                    {"from": "b", "to": "d"}, {"from": "c", "to": "d"}, {"from": "d", "to": "own"}
                ]
            }
        }),
    )
    .await;
    let i = trigger(&env, diamond).await;
    let done = env.finished_instance(i, 60).await;
    assert_eq!(done["state"], "succeeded", "{done:#}");
    let n = nodes(&done);
    assert_eq!(n["b"]["result"], "b-after-start");
    assert_eq!(
        n["d"]["result"], "b-after-start+c",
        "results passed into the join's parameter"
    );
    assert_eq!(n["own"]["result"], "from-job", "no override: the job's own parameter");
    // The metrics: the instance among the succeeded, none left running, its nodes' lateness.
    eventually(20, "workflow metrics", || async {
        let succeeded = env.api.metric("chime_workflow_instances{state=\"succeeded\"}").await;
        let running = env.api.metric("chime_workflow_instances{state=\"running\"}").await;
        let lateness = env.api.metric("chime_workflow_node_lateness_seconds_count").await;
        if succeeded >= Some(1.0) && running == Some(0.0) && lateness >= Some(4.0) {
            Ok(())
        } else {
            Err(format!(
                "succeeded {succeeded:?}, running {running:?}, node lateness count {lateness:?}"
            ))
        }
    })
    .await;

    for (key, job) in [("a", a), ("b", b), ("c", c), ("d", d)] {
        let runs = node_runs(&env, job).await;
        assert_eq!(runs.len(), 1, "node {key} ran once: {runs:?}");
        assert_eq!(runs[0]["id"], n[key]["run_id"]);
        assert_eq!(status(&runs[0]), "success");
    }
    // d started only after both b and c had results.
    let run_id = |key: &str| n[key]["run_id"].as_i64().unwrap();
    let (rb, rc, rd) = (
        env.run(run_id("b")).await,
        env.run(run_id("c")).await,
        env.run(run_id("d")).await,
    );
    let joined_at = rd["created_at"].as_i64().unwrap();
    assert!(joined_at >= rb["handled_at"].as_i64().unwrap() && joined_at >= rc["handled_at"].as_i64().unwrap());

    // Fan-out of 100 nodes, then a join.
    let leaf = job(&env, "demoJobHandler", "leaf", 0).await;
    let join = job(&env, "demoJobHandler", "joined", 0).await;
    let mut fan_nodes = vec![json!({"key": "root", "job_id": a})];
    let mut fan_edges = Vec::new();
    for k in 0..100 {
        fan_nodes.push(json!({"key": format!("n{k}"), "job_id": leaf}));
        fan_edges.push(json!({"from": "root", "to": format!("n{k}")}));
        fan_edges.push(json!({"from": format!("n{k}"), "to": "join"}));
    }
    fan_nodes.push(json!({"key": "join", "job_id": join}));
    let fan = workflow(
        &env,
        json!({"name": "fan-out", "definition": {"nodes": fan_nodes, "edges": fan_edges}}),
    )
    .await;
    let i = trigger(&env, fan).await;
    let done = env.finished_instance(i, 120).await;
    assert_eq!(done["state"], "succeeded");
    assert_eq!(done["nodes"].as_array().unwrap().len(), 102);
    assert_eq!(node_runs(&env, leaf).await.len(), 100, "each of the 100 nodes once");
    assert_eq!(node_runs(&env, join).await.len(), 1, "the join once");

    // A failure branch: fail (with a retry) → cleanup on failure; ok on success is not run.
    let failing = job(&env, "failJobHandler", "", 1).await;
    let cleanup = job(&env, "demoJobHandler", "cleaned", 0).await;
    let after = job(&env, "demoJobHandler", "", 0).await;
    let branch = workflow(
        &env,
        json!({
            "name": "failure-branch",
            "definition": {
                "nodes": [
                    {"key": "work", "job_id": failing},
                    {"key": "cleanup", "job_id": cleanup},
                    {"key": "after", "job_id": after}
                ],
                "edges": [
                    {"from": "work", "to": "cleanup", "when": "failure"},
                    {"from": "work", "to": "after"}
                ]
            }
        }),
    )
    .await;
    let i = trigger(&env, branch).await;
    let done = env.finished_instance(i, 60).await;
    assert_eq!(done["state"], "succeeded", "the failure is handled: {done:#}");
    let n = nodes(&done);
    assert_eq!(n["work"]["state"], "failed");
    assert_eq!(n["cleanup"]["state"], "succeeded");
    assert_eq!(n["after"]["state"], "not_run");
    let tries = node_runs(&env, failing).await;
    assert_eq!(tries.len(), 1, "the node's first run");
    let all_tries = env.api.runs(failing).await;
    assert_eq!(
        all_tries.len(),
        2,
        "… and its job's retry, an ordinary run: {all_tries:?}"
    );
    assert_eq!(
        n["work"]["run_id"],
        all_tries.iter().map(|r| r["id"].as_i64().unwrap()).max().unwrap(),
        "the node follows its retry"
    );
    assert!(node_runs(&env, after).await.is_empty());

    // Without a failure edge the instance fails; retry the node (now succeeding: its job
    // changed) and the rest goes on; skip and mark succeeded.
    let flaky = job(&env, "failJobHandler", "", 0).await;
    let next = job(&env, "demoJobHandler", "next", 0).await;
    let retried = workflow(
        &env,
        json!({
            "name": "retry",
            "definition": {
                "nodes": [{"key": "flaky", "job_id": flaky}, {"key": "next", "job_id": next}],
                "edges": [{"from": "flaky", "to": "next"}]
            }
        }),
    )
    .await;
    let i = trigger(&env, retried).await;
    let failed = env.finished_instance(i, 60).await;
    assert_eq!(failed["state"], "failed");
    assert_eq!(nodes(&failed)["next"]["state"], "not_run");
    let (s, v) = env
        .api
        .post(&format!("/v1/workflow-instances/{i}/nodes/next/retry"), json!({}))
        .await;
    assert_eq!(s, 409, "only a failed or stopped node is retried: {v}");
    env.api
        .call(
            reqwest::Method::PATCH,
            &format!("/v1/jobs/{flaky}"),
            Some(json!({"handler": "demoJobHandler"})),
        )
        .await;
    let (s, v) = env
        .api
        .post(&format!("/v1/workflow-instances/{i}/nodes/flaky/retry"), json!({}))
        .await;
    assert_eq!(s, 200, "{v}");
    let done = env.finished_instance(i, 60).await;
    assert_eq!(done["state"], "succeeded", "{done:#}");
    assert_eq!(node_runs(&env, flaky).await.len(), 2, "the first run and the retry");
    assert_eq!(node_runs(&env, next).await.len(), 1, "next ran once, after the retry");
    env.api
        .call(
            reqwest::Method::PATCH,
            &format!("/v1/jobs/{flaky}"),
            Some(json!({"handler": "failJobHandler"})),
        )
        .await;
    let i = trigger(&env, retried).await;
    env.finished_instance(i, 60).await;
    let v = env
        .api
        .ok(&format!("/v1/workflow-instances/{i}/nodes/flaky/succeed"), json!({}))
        .await;
    assert_eq!(nodes(&v)["flaky"]["state"], "succeeded");
    let done = env.finished_instance(i, 60).await;
    assert_eq!(done["state"], "succeeded");
    assert_eq!(node_runs(&env, next).await.len(), 2);

    // A retry while the instance is still running elsewhere: the loop keeps running instances
    // in memory between its steps, and must take the operator's change from the database
    // (the instance's revision), not step on with the failed node it kept — which would fail
    // the instance, and never run `joined`, when `slow` finishes.
    let slow_side = job(&env, "sleepJobHandler", "3", 0).await;
    let broken = job(&env, "failJobHandler", "", 0).await;
    let joined = job(&env, "demoJobHandler", "joined", 0).await;
    let parallel = workflow(
        &env,
        json!({
            "name": "retry-while-running",
            "definition": {
                "nodes": [
                    {"key": "slow", "job_id": slow_side},
                    {"key": "broken", "job_id": broken},
                    {"key": "joined", "job_id": joined}
                ],
                "edges": [{"from": "slow", "to": "joined"}, {"from": "broken", "to": "joined"}]
            }
        }),
    )
    .await;
    let i = trigger(&env, parallel).await;
    eventually(30, "the broken node failed, the slow one still running", || async {
        let (_, v) = env.api.get(&format!("/v1/workflow-instances/{i}")).await;
        let n = nodes(&v);
        match (n.get("broken"), n.get("slow")) {
            (Some(b), Some(s)) if b["state"] == "failed" && s["state"] == "running" => Ok(()),
            _ => Err(format!("{v}")),
        }
    })
    .await;
    env.api
        .call(
            reqwest::Method::PATCH,
            &format!("/v1/jobs/{broken}"),
            Some(json!({"handler": "demoJobHandler"})),
        )
        .await;
    env.api
        .ok(&format!("/v1/workflow-instances/{i}/nodes/broken/retry"), json!({}))
        .await;
    let done = env.finished_instance(i, 60).await;
    assert_eq!(done["state"], "succeeded", "the retry counted: {done:#}");
    assert_eq!(nodes(&done)["joined"]["state"], "succeeded");
    assert_eq!(node_runs(&env, broken).await.len(), 2, "the failed run and the retry");
    assert_eq!(node_runs(&env, joined).await.len(), 1);

    // Stop: the running node is killed, nothing after it starts.
    let sleeper = job(&env, "sleepJobHandler", "30", 0).await;
    let never = job(&env, "demoJobHandler", "", 0).await;
    let stoppable = workflow(
        &env,
        json!({
            "name": "stop",
            "definition": {
                "nodes": [{"key": "sleep", "job_id": sleeper}, {"key": "never", "job_id": never}],
                "edges": [{"from": "sleep", "to": "never"}]
            }
        }),
    )
    .await;
    let i = trigger(&env, stoppable).await;
    eventually(30, "the sleeping node running at its executor", || async {
        let runs = node_runs(&env, sleeper).await;
        match runs.first() {
            Some(r) if r["trigger_code"] == 200 => Ok(()),
            _ => Err(format!("{runs:?}")),
        }
    })
    .await;
    let v = env.api.ok(&format!("/v1/workflow-instances/{i}/stop"), json!({})).await;
    assert_eq!(v["state"], "stopped");
    assert_eq!(nodes(&v)["sleep"]["state"], "stopped");
    let killed = node_runs(&env, sleeper).await;
    assert_eq!(status(&killed[0]), "killed", "{killed:?}");
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(node_runs(&env, never).await.is_empty(), "nothing after a stop");
    let (s, _) = env
        .api
        .post(&format!("/v1/workflow-instances/{i}/stop"), json!({}))
        .await;
    assert_eq!(s, 409);

    // A stop before the node's run went out: the run is withdrawn and never sent. Scheduled
    // fires are made `lookahead` ahead (2 s in these tests), so a cron instance's first run
    // waits on the timer until its fire time.
    let early = job(&env, "demoJobHandler", "never-sent", 0).await;
    let ahead = workflow(
        &env,
        json!({"name": "stopped-ahead", "schedule_type": "CRON", "schedule_expr": "0/5 * * * * ?", "running": true,
               "definition": {"nodes": [{"key": "early", "job_id": early}]}}),
    )
    .await;
    let (i, run_id, due) = eventually(30, "an instance made ahead of its fire time", || async {
        let (_, list) = env
            .api
            .get(&format!("/v1/workflow-instances?workflow_id={ahead}"))
            .await;
        let newest = list.as_array().and_then(|l| l.first()).cloned().ok_or("none yet")?;
        let (id, due) = (newest["id"].as_i64().unwrap(), newest["scheduled_at"].as_i64().unwrap());
        let (_, full) = env.api.get(&format!("/v1/workflow-instances/{id}")).await;
        let run_id = nodes(&full)
            .get("early")
            .and_then(|n| n["run_id"].as_i64())
            .ok_or("no node yet")?;
        if due > now_ms() + 300 {
            Ok((id, run_id, due))
        } else {
            Err(format!("instance {id} is due already"))
        }
    })
    .await;
    let v = env.api.ok(&format!("/v1/workflow-instances/{i}/stop"), json!({})).await;
    assert_eq!(v["state"], "stopped");
    env.api.ok(&format!("/v1/workflows/{ahead}/stop"), json!({})).await;
    tokio::time::sleep(Duration::from_millis((due - now_ms()).max(0) as u64 + 1_500)).await;
    let run = env.run(run_id).await;
    assert_eq!(status(&run), "killed", "{run}");
    assert_eq!(run["executor_address"], "", "never sent: {run}");
    assert!(
        run["trigger_msg"].as_str().unwrap_or_default().contains("was stopped"),
        "{run}"
    );

    // A limit of one instance that queues: the second starts when the first finishes.
    let slow = job(&env, "sleepJobHandler", "2", 0).await;
    let limited = workflow(
        &env,
        json!({"name": "limited", "max_instances": 1, "on_limit": "queue",
               "definition": {"nodes": [{"key": "slow", "job_id": slow}]}}),
    )
    .await;
    let first = trigger(&env, limited).await;
    let second = trigger(&env, limited).await;
    let (_, v) = env.api.get(&format!("/v1/workflow-instances/{second}")).await;
    assert_eq!(v["state"], "queued");
    let a_done = env.finished_instance(first, 60).await;
    let b_done = env.finished_instance(second, 60).await;
    assert_eq!(
        (a_done["state"].as_str(), b_done["state"].as_str()),
        (Some("succeeded"), Some("succeeded"))
    );
    let runs = node_runs(&env, slow).await;
    let (r1, r2) = (&runs[1], &runs[0]);
    assert!(
        r2["created_at"].as_i64() >= r1["handled_at"].as_i64(),
        "queued behind the first"
    );

    // Fired by its cron, every second, one instance per second.
    let ticker = job(&env, "demoJobHandler", "tick", 0).await;
    let cron = workflow(
        &env,
        json!({"name": "every-second", "schedule_type": "CRON", "schedule_expr": "* * * * * ?", "running": true,
               "definition": {"nodes": [{"key": "tick", "job_id": ticker}]}}),
    )
    .await;
    eventually(30, "three cron instances succeeded", || async {
        let (_, v) = env
            .api
            .get(&format!("/v1/workflow-instances?workflow_id={cron}&state=succeeded"))
            .await;
        let n = v.as_array().map_or(0, Vec::len);
        if n >= 3 {
            Ok(())
        } else {
            Err(format!("{n}"))
        }
    })
    .await;
    // Edited while it fires: later fires take the new graph, a new version (the loop keeps
    // each workflow's settings and graph between fires, and must see the edit).
    let tock = job(&env, "demoJobHandler", "tock", 0).await;
    let (s, edited) = env
        .api
        .call(
            reqwest::Method::PATCH,
            &format!("/v1/workflows/{cron}"),
            Some(json!({"definition": {
                "nodes": [{"key": "tick", "job_id": ticker}, {"key": "tock", "job_id": tock}],
                "edges": [{"from": "tick", "to": "tock"}]}})),
        )
        .await;
    assert_eq!(s, 200, "{edited}");
    let (_, before) = env.api.get(&format!("/v1/workflows/{cron}")).await;
    let version = edited["version"].as_i64().unwrap();
    assert_eq!(before["version"], version);
    let newest = eventually(30, "an instance of the new graph succeeded", || async {
        let (_, v) = env
            .api
            .get(&format!("/v1/workflow-instances?workflow_id={cron}&state=succeeded"))
            .await;
        v.as_array()
            .and_then(|all| all.iter().find(|i| i["version"] == version))
            .and_then(|i| i["id"].as_i64())
            .ok_or_else(|| format!("{v}"))
    })
    .await;
    let (_, v) = env.api.get(&format!("/v1/workflow-instances/{newest}")).await;
    assert_eq!(nodes(&v)["tock"]["state"], "succeeded", "{v:#}");
    env.api.ok(&format!("/v1/workflows/{cron}/stop"), json!({})).await;
    let mut seconds = fire_times(&env, cron).await;
    let total = seconds.len();
    seconds.dedup();
    assert_eq!(seconds.len(), total, "one instance per fire time");
    assert!(seconds.iter().all(|s| s % 1000 == 0), "{seconds:?}");

    // Definitions are refused naming the node; nodes of other groups' jobs are fine.
    for (body, field) in [
        (json!({"name": "x", "definition": {"nodes": []}}), "definition.nodes"),
        (
            json!({"name": "x", "definition": {"nodes": [{"key": "a", "job_id": 999999}]}}),
            "definition.nodes[a].job_id",
        ),
        (
            json!({"name": "x", "definition": {"nodes": [{"key": "a", "job_id": a}, {"key": "b", "job_id": a}],
                   "edges": [{"from": "a", "to": "b"}, {"from": "b", "to": "a"}]}}),
            "definition.nodes[a].edges",
        ),
        (
            json!({"name": "x", "definition": {"nodes": [{"key": "a", "job_id": a, "param": "{{b.result}}"}, {"key": "b", "job_id": a}]}}),
            "definition.nodes[a].param",
        ),
        (
            json!({"name": "diamond", "definition": {"nodes": [{"key": "a", "job_id": a}]}}),
            "name",
        ),
    ] {
        let (s, v) = env.api.post("/v1/workflows", body).await;
        assert_eq!((s, v["field"].as_str()), (422, Some(field)), "{v}");
    }
    let (s, v) = env
        .api
        .post(
            "/v1/workflows",
            json!({"name": "x", "definition": {"nodes": [{"key": "a", "job_id": a, "extra": 1}]}}),
        )
        .await;
    assert_eq!(s, 400, "unknown fields are refused: {v}");
    let (s, _) = env
        .api
        .call(reqwest::Method::DELETE, &format!("/v1/workflows/{limited}"), None)
        .await;
    assert_eq!(s, 204);

    // Jobs as code: the export holds the workflows, nodes naming jobs by app/key; applying it
    // back changes nothing; a document creates a workflow over a job it creates too.
    let (s, doc) = env.api.get("/v1/export").await;
    assert_eq!(s, 200, "{doc}");
    let exported = doc["workflows"].as_array().unwrap();
    let d = exported
        .iter()
        .find(|w| w["name"] == "diamond")
        .expect("diamond exported");
    assert_eq!(d["nodes"][0]["job"], format!("{APP}/job-{a}"));
    assert_eq!(d["nodes"][1]["param"], "b-after-{{a.result}}");
    let plan = env
        .api
        .ok(
            "/v1/apply",
            json!({"groups": doc["groups"], "workflows": doc["workflows"]}),
        )
        .await;
    assert!(
        plan["create"].as_array().unwrap().is_empty() && plan["update"].as_array().unwrap().is_empty(),
        "applying the export changes nothing: {plan}"
    );
    let plan = env
        .api
        .ok(
            "/v1/apply",
            json!({"groups": [{"app_name": APP, "jobs": [{"key": "etl-a", "handler": "demoJobHandler"}]}],
                   "workflows": [{"name": "from-doc", "nodes": [{"key": "a", "job": format!("{APP}/etl-a"), "param": "doc"}]}]}),
        )
        .await;
    let created: Vec<&Value> = plan["create"].as_array().unwrap().iter().collect();
    assert!(
        created
            .iter()
            .any(|e| e["kind"] == "workflow" && e["key"] == "from-doc"),
        "{plan}"
    );
    let (_, list) = env.api.get("/v1/workflows").await;
    let from_doc = list
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["name"] == "from-doc")
        .unwrap()["id"]
        .as_i64()
        .unwrap();
    let i = trigger(&env, from_doc).await;
    assert_eq!(nodes(&env.finished_instance(i, 60).await)["a"]["result"], "doc");
    let (s, v) = env
        .api
        .post(
            "/v1/apply",
            json!({"workflows": [{"name": "bad", "nodes": [{"key": "a", "job": format!("{APP}/missing")}]}]}),
        )
        .await;
    assert_eq!(
        (s, v["field"].as_str()),
        (422, Some("workflows[bad].nodes[a].job")),
        "{v}"
    );

    // A fire is made once: fired again with the same fire time (another admin's fire, a
    // replayed round), a workflow makes no second instance, while the other fires of the
    // same round are made. Fired here through the store, with the fire times chosen.
    let once = job(&env, "demoJobHandler", "once", 0).await;
    let yearly = |name: &str| {
        json!({"name": name, "schedule_type": "CRON", "schedule_expr": "0 0 0 1 1 ?", "running": true,
               "definition": {"nodes": [{"key": "n", "job_id": once}]}})
    };
    let (w1, w2) = (
        workflow(&env, yearly("refired-1")).await,
        workflow(&env, yearly("refired-2")).await,
    );
    let fire_at = |keys: HashMap<i64, i64>| {
        move |w: &chime_admin::workflow::spec::Workflow| chime_admin::store::FirePlan {
            runs: keys
                .get(&w.id)
                .map(|k| chime_admin::store::NewRun {
                    job_id: once,
                    group_id: 0,
                    fire_key: Some(*k),
                    scheduled_at: *k,
                    trigger_type: chime_protocol::TriggerType::Cron,
                    payload: chime_admin::store::RunPayload {
                        shard_total: 1,
                        ..Default::default()
                    },
                    trigger_code: 0,
                    trigger_msg: String::new(),
                })
                .into_iter()
                .collect(),
            next_fire_at: w.next_fire_at,
            last_fire_at: w.last_fire_at,
        }
    };
    let store = &env.admin.admin.store;
    let all: Vec<i64> = (0..chime_admin::store::PARTITIONS).collect();
    let (k1, k2) = (4_000_000_000_000, 4_000_000_001_000);
    let mut live = chime_admin::workflow::live::LiveInstances::default();
    let first = store
        .fire_workflows(&all, i64::MAX, &mut live, fire_at(HashMap::from([(w1, k1), (w2, k1)])))
        .await
        .unwrap();
    assert_eq!(first.tickets.len(), 2, "both fired");
    let again = store
        .fire_workflows(&all, i64::MAX, &mut live, fire_at(HashMap::from([(w1, k1), (w2, k2)])))
        .await
        .unwrap();
    assert_eq!(again.tickets.len(), 1, "only the new fire time made an instance");
    for (w, expect) in [(w1, vec![k1]), (w2, vec![k1, k2])] {
        assert_eq!(fire_times(&env, w).await, expect, "instances of workflow {w}");
    }
    env.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn workflows_sqlite() {
    workflows_story(Db::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn workflows_mysql() {
    workflows_story(Db::MySql).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn workflows_postgres() {
    workflows_story(Db::Postgres).await;
}

/// More workflows due on one second than one round fires (a batch of 200): the first tick
/// that reaches their fire time fires them all, each instance made ahead of its time. One
/// batch a tick left the third batch of this second to a tick after it.
#[tokio::test(flavor = "multi_thread")]
async fn a_crowded_second_is_fired_ahead_in_full() {
    const WORKFLOWS: usize = 450;
    // The first tick whose lookahead reaches the fire time comes at least a second before it.
    let env = Env::start_with(Db::Sqlite, |config| {
        config.tick = Duration::from_secs(2);
        config.lookahead = Duration::from_secs(3);
    })
    .await;
    env.group(APP).await;
    // No executor is needed: the instances are made whether or not their runs can be sent.
    let job = job(&env, "demoJobHandler", "crowded", 0).await;
    let now_s = now_ms() / 1000;
    let due_s = now_s + 25;
    let (h, m, s) = ((due_s / 3600) % 24, (due_s / 60) % 60, due_s % 60);
    for k in 0..WORKFLOWS {
        workflow(
            &env,
            json!({"name": format!("crowded-{k}"), "schedule_type": "CRON",
                   "schedule_expr": format!("{s} {m} {h} * * ?"), "running": true,
                   "definition": {"nodes": [{"key": "only", "job_id": job}]}}),
        )
        .await;
    }
    let made_by_s = now_ms() / 1000;
    assert!(
        made_by_s + 4 < due_s,
        "the workflows took too long to create to test this"
    );
    let instances = eventually(60, "an instance of every workflow", || async {
        let (_, list) = env.api.get("/v1/workflow-instances?limit=1000").await;
        let list = list.as_array().cloned().unwrap_or_default();
        if list.len() >= WORKFLOWS {
            Ok(list)
        } else {
            Err(format!("{} instances", list.len()))
        }
    })
    .await;
    assert_eq!(instances.len(), WORKFLOWS, "one instance each");
    let late: Vec<&Value> = instances
        .iter()
        .filter(|i| i["created_at"].as_i64() > i["scheduled_at"].as_i64())
        .collect();
    assert!(
        instances.iter().all(|i| i["scheduled_at"] == json!(due_s * 1000)),
        "all for the one second"
    );
    assert!(late.is_empty(), "{} instances made after their fire time", late.len());
    env.close().await;
}
