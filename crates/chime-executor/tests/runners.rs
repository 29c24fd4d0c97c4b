//! Runners over real HTTP: block strategies, duplicate runs, timeout, kill (async handlers and
//! whole script process groups), panics, reaping, hooks, and script jobs.

mod support;

use chime_executor::{Handler, JobContext, JobResult};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use support::*;

fn with(mut t: Value, key: &str, value: Value) -> Value {
    t[key] = value;
    t
}

async fn wait_busy(client: &Client, job_id: i64) {
    let busy = wait_for_async(WAIT, || async {
        let reply = client.post("/idleBeat", json!({ "jobId": job_id }).to_string()).await;
        (reply.code() == 500).then_some(reply.msg())
    })
    .await;
    assert_eq!(busy.as_deref(), Some("job thread is running or has trigger queue."));
}

#[tokio::test]
async fn serial_execution_runs_one_at_a_time_in_order() {
    let admin = FakeAdmin::start(true).await;
    let exec = start_executor(&admin, None, |b| b).await;
    for log_id in 1..=4 {
        let reply = exec.client.run(trigger(1, log_id, "sleepJobHandler", "0.2")).await;
        assert_eq!(reply.body, json!({"code": 200}), "replies as soon as queued");
    }
    wait_busy(&exec.client, 1).await;
    for log_id in 1..=4 {
        assert_eq!(admin.result_of(log_id).await, (200, "slept 0.2".to_owned()));
    }
    let order: Vec<String> = admin
        .events()
        .into_iter()
        .filter(|e| e.starts_with("callback:"))
        .collect();
    assert_eq!(order, ["callback:1", "callback:2", "callback:3", "callback:4"]);
    exec.handle.shutdown().await;
}

#[tokio::test]
async fn discard_later_rejects_a_trigger_while_the_job_is_busy() {
    let admin = FakeAdmin::start(true).await;
    let exec = start_executor(&admin, None, |b| b).await;
    let t = trigger(2, 20, "sleepJobHandler", "30");
    assert_eq!(
        exec.client
            .run(with(t, "executorBlockStrategy", json!("DISCARD_LATER")))
            .await
            .code(),
        200
    );
    wait_busy(&exec.client, 2).await;
    let second = with(
        trigger(2, 21, "sleepJobHandler", "1"),
        "executorBlockStrategy",
        json!("DISCARD_LATER"),
    );
    let reply = exec.client.run(second).await;
    assert_eq!(
        reply.body,
        json!({"code": 500, "msg": "block strategy effect：Discard Later"})
    );
    exec.client.post("/kill", json!({"jobId": 2}).to_string()).await;
    assert_eq!(admin.result_of(20).await.0, 500);
    assert!(
        admin.callbacks_for(21).is_empty(),
        "a discarded trigger is not reported (the admin got the 500 reply)"
    );
    exec.handle.shutdown().await;
}

#[tokio::test]
async fn cover_early_kills_the_running_and_queued_runs_and_runs_the_new_one() {
    let admin = FakeAdmin::start(true).await;
    let exec = start_executor(&admin, None, |b| b).await;
    assert_eq!(
        exec.client.run(trigger(3, 30, "sleepJobHandler", "30")).await.code(),
        200
    );
    wait_busy(&exec.client, 3).await;
    assert_eq!(
        exec.client.run(trigger(3, 31, "sleepJobHandler", "30")).await.code(),
        200
    );
    let cover = with(
        trigger(3, 32, "sleepJobHandler", "0.1"),
        "executorBlockStrategy",
        json!("COVER_EARLY"),
    );
    assert_eq!(exec.client.run(cover).await.body, json!({"code": 200}));
    assert_eq!(
        admin.result_of(30).await,
        (
            500,
            "block strategy effect：Cover Early [job running, killed]".to_owned()
        )
    );
    assert_eq!(
        admin.result_of(31).await,
        (
            500,
            "block strategy effect：Cover Early [job not executed, in the job queue, killed.]".to_owned()
        )
    );
    assert_eq!(admin.result_of(32).await, (200, "slept 0.1".to_owned()));
    // Another handler for the same job replaces the runner too, with XXL-JOB's reason.
    assert_eq!(
        exec.client.run(trigger(3, 33, "sleepJobHandler", "30")).await.code(),
        200
    );
    wait_busy(&exec.client, 3).await;
    assert_eq!(exec.client.run(trigger(3, 34, "demoJobHandler", "x")).await.code(), 200);
    assert_eq!(
        admin.result_of(33).await,
        (
            500,
            "change jobhandler or glue type, and terminate the old job thread. [job running, killed]".to_owned()
        )
    );
    assert_eq!(admin.result_of(34).await, (200, "x".to_owned()));
    exec.handle.shutdown().await;
}

#[tokio::test]
async fn a_log_id_already_queued_or_running_is_rejected() {
    let admin = FakeAdmin::start(true).await;
    let exec = start_executor(&admin, None, |b| b).await;
    assert_eq!(
        exec.client.run(trigger(4, 40, "sleepJobHandler", "30")).await.code(),
        200
    );
    wait_busy(&exec.client, 4).await;
    assert_eq!(
        exec.client.run(trigger(4, 41, "sleepJobHandler", "1")).await.code(),
        200
    );
    let reply = exec.client.run(trigger(4, 41, "sleepJobHandler", "1")).await;
    assert_eq!(reply.body, json!({"code": 500, "msg": "repeate trigger job, logId:41"}));
    let reply = exec.client.run(trigger(4, 40, "sleepJobHandler", "1")).await;
    assert_eq!(reply.body, json!({"code": 500, "msg": "repeate trigger job, logId:40"}));
    exec.client.post("/kill", json!({"jobId": 4}).to_string()).await;
    exec.handle.shutdown().await;
}

#[tokio::test]
async fn executor_timeout_stops_the_handler_and_reports_502() {
    let admin = FakeAdmin::start(true).await;
    let exec = start_executor(&admin, None, |b| b).await;
    let t = with(trigger(5, 50, "sleepJobHandler", "30"), "executorTimeout", json!(1));
    let log_date_time = t["logDateTime"].as_i64().unwrap();
    assert_eq!(exec.client.run(t).await.code(), 200);
    assert_eq!(admin.result_of(50).await, (502, "job execute timeout ".to_owned()));
    let log = exec.client.log(50, log_date_time, 1).await;
    let text = log["logContent"].as_str().unwrap();
    assert!(text.contains("<br>----------- xxl-job job execute timeout"), "{text}");
    assert!(
        !text.contains("slept 2 s"),
        "the handler stopped at the timeout:\n{text}"
    );
    exec.handle.shutdown().await;
}

#[tokio::test]
async fn kill_stops_the_running_handler_and_reports_queued_runs() {
    let admin = FakeAdmin::start(true).await;
    let exec = start_executor(&admin, None, |b| b).await;
    assert_eq!(
        exec.client.run(trigger(6, 60, "sleepJobHandler", "30")).await.code(),
        200
    );
    wait_busy(&exec.client, 6).await;
    assert_eq!(
        exec.client.run(trigger(6, 61, "sleepJobHandler", "30")).await.code(),
        200
    );
    assert_eq!(
        exec.client.post("/kill", json!({"jobId": 6}).to_string()).await.body,
        json!({"code": 200})
    );
    assert_eq!(
        admin.result_of(60).await,
        (500, "scheduling center kill job. [job running, killed]".to_owned())
    );
    assert_eq!(
        admin.result_of(61).await,
        (
            500,
            "scheduling center kill job. [job not executed, in the job queue, killed.]".to_owned()
        )
    );
    let reply = exec.client.post("/idleBeat", json!({"jobId": 6}).to_string()).await;
    assert_eq!(reply.body, json!({"code": 200}), "idle after kill");
    // The job runs again afterwards on a fresh runner.
    assert_eq!(
        exec.client.run(trigger(6, 62, "demoJobHandler", "again")).await.code(),
        200
    );
    assert_eq!(admin.result_of(62).await, (200, "again".to_owned()));
    exec.handle.shutdown().await;
}

/// A blocking handler that ignores cancellation until the test opens its gate.
#[derive(Clone, Default)]
struct Gate {
    open: Arc<(std::sync::Mutex<bool>, std::sync::Condvar)>,
    /// `(log id, is_cancelled() when the handler returned)`.
    returned: Arc<std::sync::Mutex<Vec<(i64, bool)>>>,
}

impl Gate {
    fn handler(&self) -> Handler {
        let gate = self.clone();
        Handler::blocking(move |ctx: JobContext| {
            let (lock, cvar) = &*gate.open;
            let mut open = lock.lock().unwrap();
            while !*open {
                open = cvar.wait(open).unwrap();
            }
            gate.returned.lock().unwrap().push((ctx.log_id(), ctx.is_cancelled()));
            JobResult::success_with("late")
        })
    }

    fn open(&self) {
        *self.open.0.lock().unwrap() = true;
        self.open.1.notify_all();
    }
}

#[tokio::test]
async fn kill_and_timeout_report_a_blocking_handler_at_once_and_its_late_result_is_dropped() {
    let admin = FakeAdmin::start(true).await;
    let gate = Gate::default();
    let handler = gate.handler();
    let exec = start_executor(&admin, None, move |b| b.register("stuck", handler)).await;

    // Kill: reported as killed while the thread is still stuck in the handler.
    assert_eq!(exec.client.run(trigger(9, 90, "stuck", "")).await.code(), 200);
    wait_busy(&exec.client, 9).await;
    assert_eq!(
        exec.client.post("/kill", json!({"jobId": 9}).to_string()).await.body,
        json!({"code": 200})
    );
    assert_eq!(
        admin.result_of(90).await,
        (500, "scheduling center kill job. [job running, killed]".to_owned())
    );
    // Timeout: the same for executorTimeout.
    let t = with(trigger(10, 100, "stuck", ""), "executorTimeout", json!(1));
    assert_eq!(exec.client.run(t).await.code(), 200);
    assert_eq!(admin.result_of(100).await, (502, "job execute timeout ".to_owned()));
    assert!(
        gate.returned.lock().unwrap().is_empty(),
        "both runs were reported while their handlers were still blocked"
    );
    let reply = exec.client.post("/idleBeat", json!({"jobId": 9}).to_string()).await;
    assert_eq!(reply.body, json!({"code": 200}), "the killed job is idle for the admin");

    // Released, both handlers see that they were cancelled; their late results go nowhere.
    gate.open();
    let returned = wait_for(WAIT, || {
        let r = gate.returned.lock().unwrap();
        (r.len() == 2).then(|| r.clone())
    })
    .await
    .expect("both handlers return once released");
    assert!(returned.iter().all(|&(_, cancelled)| cancelled), "{returned:?}");
    // A later run of the job is reported once, with its own result, after the stale ones.
    assert_eq!(
        exec.client.run(trigger(9, 91, "demoJobHandler", "next")).await.code(),
        200
    );
    assert_eq!(admin.result_of(91).await, (200, "next".to_owned()));
    assert_eq!(admin.callbacks_for(90).len(), 1, "one result for the killed run");
    assert_eq!(admin.callbacks_for(100).len(), 1, "one result for the timed-out run");
    exec.handle.shutdown().await;
}

#[tokio::test]
async fn a_panicking_handler_fails_its_run_and_the_executor_carries_on() {
    let admin = FakeAdmin::start(true).await;
    let exec = start_executor(&admin, None, |b| {
        b.blocking_handler("blockingPanic", |_ctx: JobContext| -> JobResult { panic!("sync boom") })
    })
    .await;
    assert_eq!(
        exec.client.run(trigger(7, 70, "panicJobHandler", "x")).await.code(),
        200
    );
    let (code, msg) = admin.result_of(70).await;
    assert_eq!(code, 500);
    assert!(msg.contains("panicJobHandler panicked on purpose (param: x)"), "{msg}");
    assert_eq!(exec.client.run(trigger(7, 71, "blockingPanic", "")).await.code(), 200);
    let (code, msg) = admin.result_of(71).await;
    assert_eq!((code, msg.contains("sync boom")), (500, true), "{msg}");
    assert_eq!(
        exec.client
            .run(trigger(7, 72, "failJobHandler", "bad input"))
            .await
            .code(),
        200
    );
    assert_eq!(admin.result_of(72).await, (500, "bad input".to_owned()));
    assert_eq!(
        exec.client.run(trigger(8, 80, "shardingJobHandler", "")).await.code(),
        200
    );
    assert_eq!(admin.result_of(80).await, (200, "shard 0/1".to_owned()));
    exec.handle.shutdown().await;
}

#[tokio::test]
async fn idle_runners_are_reaped_with_their_hooks() {
    let admin = FakeAdmin::start(true).await;
    let inits = Arc::new(AtomicUsize::new(0));
    let destroys = Arc::new(AtomicUsize::new(0));
    let (i, d) = (inits.clone(), destroys.clone());
    let handler = Handler::blocking(|ctx: JobContext| {
        ctx.log("sync handler ran");
        format!("sync {}", ctx.param())
    })
    .with_init(move || {
        let i = i.clone();
        async move {
            i.fetch_add(1, Ordering::SeqCst);
        }
    })
    .with_destroy(move || {
        let d = d.clone();
        async move {
            d.fetch_add(1, Ordering::SeqCst);
        }
    });
    let exec = start_executor(&admin, None, move |b| {
        b.register("hooked", handler)
            .runner_idle_timeout(Duration::from_millis(300))
    })
    .await;
    assert_eq!(exec.client.run(trigger(9, 90, "hooked", "a")).await.code(), 200);
    assert_eq!(exec.client.run(trigger(9, 91, "hooked", "b")).await.code(), 200);
    assert_eq!(admin.result_of(90).await, (200, "sync a".to_owned()));
    assert_eq!(admin.result_of(91).await, (200, "sync b".to_owned()));
    assert_eq!(
        wait_for(WAIT, || (destroys.load(Ordering::SeqCst) == 1).then_some(())).await,
        Some(()),
        "reaped"
    );
    assert_eq!(inits.load(Ordering::SeqCst), 1, "one runner served both runs");
    // A new trigger after reaping starts a new runner.
    assert_eq!(exec.client.run(trigger(9, 92, "hooked", "c")).await.code(), 200);
    assert_eq!(admin.result_of(92).await, (200, "sync c".to_owned()));
    assert_eq!(inits.load(Ordering::SeqCst), 2);
    exec.handle.shutdown().await;
}

fn script(job_id: i64, log_id: i64, glue: &str, source: &str, param: &str) -> Value {
    let t = with(trigger(job_id, log_id, "", param), "glueType", json!(glue));
    with(t, "glueSource", json!(source))
}

async fn log_text(exec: &TestExecutor, t: &Value) -> String {
    let page = exec
        .client
        .log(t["logId"].as_i64().unwrap(), t["logDateTime"].as_i64().unwrap(), 1)
        .await;
    page["logContent"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn script_jobs_get_xxl_jobs_argv_and_their_exit_code_decides() {
    let admin = FakeAdmin::start(true).await;
    let exec = start_executor(&admin, Some("tok"), |b| b.enable_scripts(true)).await;
    let t = with(
        script(
            10,
            100,
            "GLUE_SHELL",
            "echo \"args:$1|$2|$3\"; echo to-stderr >&2; exit 0",
            "p1",
        ),
        "broadcastIndex",
        json!(2),
    );
    let t = with(t, "broadcastTotal", json!(5));
    assert_eq!(exec.client.run(t.clone()).await.body, json!({"code": 200}));
    assert_eq!(admin.result_of(100).await.0, 200);
    let text = log_text(&exec, &t).await;
    assert!(text.contains("args:p1|2|5"), "{text}");
    assert!(text.contains("to-stderr"), "{text}");
    assert!(text.contains("----------- script file:"), "{text}");
    let glue = exec.logdir.path().join("gluesource").join("10_1586629003727.sh");
    assert!(glue.exists(), "{}", glue.display());

    let failing = script(11, 110, "GLUE_SHELL", "exit 3", "");
    assert_eq!(exec.client.run(failing).await.code(), 200);
    assert_eq!(
        admin.result_of(110).await,
        (500, "script exit value(3) is failed".to_owned())
    );

    // A new glueUpdatetime replaces the script and removes the old file.
    let v2 = with(
        script(10, 101, "GLUE_SHELL", "echo v2", ""),
        "glueUpdatetime",
        json!(1_586_629_009_999i64),
    );
    assert_eq!(exec.client.run(v2.clone()).await.code(), 200);
    assert_eq!(admin.result_of(101).await.0, 200);
    assert!(log_text(&exec, &v2).await.contains("v2"));
    assert!(!glue.exists(), "old version removed");

    // python3 and node are part of the machine Chime is tested on: a missing one is a failure.
    {
        let py = script(
            12,
            120,
            "GLUE_PYTHON",
            "import sys\nprint('py', sys.argv[1:])\nsys.exit(0)",
            "x",
        );
        assert_eq!(exec.client.run(py.clone()).await.code(), 200);
        assert_eq!(admin.result_of(120).await.0, 200);
        assert!(log_text(&exec, &py).await.contains("py ['x', '0', '1']"));
    }
    {
        let js = script(
            13,
            130,
            "GLUE_NODEJS",
            "console.log('node', process.argv.slice(2).join(',')); process.exit(4)",
            "y",
        );
        assert_eq!(exec.client.run(js.clone()).await.code(), 200);
        assert_eq!(
            admin.result_of(130).await,
            (500, "script exit value(4) is failed".to_owned())
        );
        assert!(log_text(&exec, &js).await.contains("node y,0,1"));
    }
    exec.handle.shutdown().await;
}

/// Starts a script that puts `sleep 1000` in the background and waits; returns the sleep's pid.
async fn start_group_script(exec: &TestExecutor, job_id: i64, log_id: i64, timeout: i64) -> i32 {
    let pidfile = exec.logdir.path().join(format!("sleep-{log_id}.pid"));
    let source = format!(
        "sleep 1000 &\necho $! > {}.tmp && mv {0}.tmp {0}\nwait\n",
        pidfile.display()
    );
    let t = with(
        script(job_id, log_id, "GLUE_SHELL", &source, ""),
        "executorTimeout",
        json!(timeout),
    );
    assert_eq!(exec.client.run(t).await.code(), 200);
    let pid = wait_for(WAIT, || {
        std::fs::read_to_string(&pidfile)
            .ok()
            .and_then(|s| s.trim().parse::<i32>().ok())
    })
    .await
    .expect("script started its background sleep");
    assert!(process_alive(pid));
    pid
}

#[tokio::test]
async fn kill_and_timeout_take_down_the_scripts_whole_process_group() {
    let admin = FakeAdmin::start(true).await;
    let exec = start_executor(&admin, Some("tok"), |b| b.enable_scripts(true)).await;

    let pid = start_group_script(&exec, 14, 140, 0).await;
    assert_eq!(
        exec.client.post("/kill", json!({"jobId": 14}).to_string()).await.body,
        json!({"code": 200})
    );
    assert_eq!(
        admin.result_of(140).await,
        (500, "scheduling center kill job. [job running, killed]".to_owned())
    );
    let gone = wait_for(WAIT, || (!process_alive(pid)).then_some(())).await;
    assert_eq!(gone, Some(()), "the script's background child {pid} survived the kill");

    let pid = start_group_script(&exec, 15, 150, 1).await;
    assert_eq!(admin.result_of(150).await, (502, "job execute timeout ".to_owned()));
    let gone = wait_for(WAIT, || (!process_alive(pid)).then_some(())).await;
    assert_eq!(
        gone,
        Some(()),
        "the script's background child {pid} survived the timeout"
    );
    exec.handle.shutdown().await;
}

#[tokio::test]
async fn the_shell_handler_runs_its_parameter_when_enabled() {
    let admin = FakeAdmin::start(true).await;
    let exec = start_executor(&admin, Some("tok"), |b| b.enable_shell_handler(true)).await;
    let t = trigger(16, 160, "shell", "echo shell-says-$CHIME_SHARD_TOTAL && exit 0");
    assert_eq!(exec.client.run(t.clone()).await.code(), 200);
    assert_eq!(admin.result_of(160).await.0, 200);
    assert!(log_text(&exec, &t).await.contains("shell-says-1"));
    assert_eq!(exec.client.run(trigger(16, 161, "shell", "false")).await.code(), 200);
    assert_eq!(
        admin.result_of(161).await,
        (500, "script exit value(1) is failed".to_owned())
    );
    exec.handle.shutdown().await;
}

#[tokio::test]
async fn code_running_handlers_without_a_token_are_refused_at_build_on_loopback_too() {
    use chime_executor::Executor;
    // Loopback is no boundary: local processes, and web pages in a local browser, reach it.
    for listen in ["0.0.0.0:0", "127.0.0.1:0"] {
        let listen = listen.parse().unwrap();
        let refused = [
            Executor::builder().listen(listen).enable_scripts(true),
            Executor::builder().listen(listen).enable_shell_handler(true),
            // The shell handler under a name of one's own is the same thing.
            Executor::builder()
                .listen(listen)
                .register("run-anything", chime_executor::script::shell_handler()),
            Executor::builder()
                .listen(listen)
                .enable_scripts(true)
                .access_token("  "),
        ];
        for builder in refused {
            let err = builder.build().err().expect("refused");
            assert!(err.to_string().contains("without an access token"), "{err}");
        }
        let allowed = [
            Executor::builder()
                .listen(listen)
                .enable_scripts(true)
                .access_token("t"),
            Executor::builder()
                .listen(listen)
                .enable_shell_handler(true)
                .access_token("t"),
            Executor::builder()
                .listen(listen)
                .register("run-anything", chime_executor::script::shell_handler())
                .access_token("t"),
            // Handlers that run only their own code need no token on loopback (as before).
            Executor::builder()
                .listen(listen)
                .handler("plain", |_ctx: JobContext| async {}),
        ];
        for builder in allowed {
            assert!(builder.build().is_ok(), "{listen}");
        }
    }
}
