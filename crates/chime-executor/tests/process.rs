//! The demo executor as a real process: results survive `kill -9` through the callback spool,
//! and SIGTERM delivers in-flight results before `registryRemove`.

mod support;

use serde_json::json;
use std::collections::HashSet;
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use support::*;

const DEMO: &str = env!("CARGO_BIN_EXE_chime-demo-executor");

fn free_port() -> SocketAddr {
    // Bind port 0 and release it: a tiny race with other processes, acceptable in tests.
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

struct DemoProcess {
    child: Child,
    client: Client,
}

impl DemoProcess {
    async fn start(admin: &FakeAdmin, listen: SocketAddr, logdir: &std::path::Path) -> DemoProcess {
        let child = Command::new(DEMO)
            .args([
                "--admin",
                &admin.base(),
                "--appname",
                "chime-proc-test",
                "--token",
                "tok",
            ])
            .args(["--listen", &listen.to_string(), "--logdir"])
            .arg(logdir)
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .spawn()
            .expect("demo executor starts");
        let client = Client::new(listen, Some("tok"));
        let up = wait_for_async(WAIT, || {
            let client = client.clone();
            async move {
                let ok = reqwest::Client::new()
                    .post(format!("{}/beat", client.base))
                    .header("XXL-JOB-ACCESS-TOKEN", "tok")
                    .send()
                    .await
                    .is_ok();
                ok.then_some(())
            }
        })
        .await;
        assert_eq!(up, Some(()), "demo executor did not come up on {listen}");
        DemoProcess { child, client }
    }

    fn signal(&self, signal: i32) {
        // SAFETY: kill(2) on the pid of a child this test started.
        let rc = unsafe { libc::kill(self.child.id() as i32, signal) };
        assert_eq!(rc, 0);
    }

    async fn wait_exit(&mut self) -> std::process::ExitStatus {
        let status = wait_for(WAIT, || self.child.try_wait().unwrap()).await;
        status.expect("demo executor exited")
    }
}

impl Drop for DemoProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test]
async fn results_spooled_before_kill_9_are_delivered_after_restart() {
    let admin = FakeAdmin::start(false).await;
    let logdir = tempfile::tempdir().unwrap();
    let listen = free_port();
    let mut demo = DemoProcess::start(&admin, listen, logdir.path()).await;

    let ids: Vec<i64> = (1000..1030).collect();
    for &id in &ids {
        let handler = if id % 3 == 0 {
            "failJobHandler"
        } else {
            "demoJobHandler"
        };
        let reply = demo.client.run(trigger(id, id, handler, &format!("p{id}"))).await;
        assert_eq!(reply.body, json!({"code": 200}));
    }
    // The admin refuses: wait until every run finished (the executor went idle for each job),
    // then until the executor has tried (and failed) to deliver at least once.
    for &id in &ids {
        let idle = wait_for_async(WAIT, || async {
            let reply = demo.client.post("/idleBeat", json!({ "jobId": id }).to_string()).await;
            (reply.code() == 200).then_some(())
        })
        .await;
        assert_eq!(idle, Some(()));
    }
    let refused = wait_for(WAIT, || {
        let r = admin.recorded.lock().unwrap();
        (r.refused_callback_requests > 0).then_some(())
    })
    .await;
    assert_eq!(refused, Some(()), "the executor never tried to send");
    // Give the last results of the burst time to be written (the runs above are all done, and
    // each result is spooled before any send is attempted).
    tokio::time::sleep(Duration::from_millis(300)).await;

    demo.signal(libc::SIGKILL);
    demo.wait_exit().await;
    assert!(
        admin.recorded.lock().unwrap().callbacks.is_empty(),
        "nothing was accepted before the kill"
    );

    admin.set_accepting(true);
    let _demo = DemoProcess::start(&admin, listen, logdir.path()).await;
    let want: HashSet<i64> = ids.iter().copied().collect();
    let all = wait_for(WAIT, || {
        let got: HashSet<i64> = admin
            .recorded
            .lock()
            .unwrap()
            .callbacks
            .iter()
            .map(|c| c.log_id)
            .collect();
        want.is_subset(&got).then_some(())
    })
    .await;
    let got: Vec<i64> = admin
        .recorded
        .lock()
        .unwrap()
        .callbacks
        .iter()
        .map(|c| c.log_id)
        .collect();
    assert_eq!(all, Some(()), "missing results after restart; got {got:?}");
    for &id in &ids {
        let cb = admin.callbacks_for(id);
        let expected = if id % 3 == 0 { 500 } else { 200 };
        assert!(cb.iter().all(|c| c.handle_code == expected), "{id}: {cb:?}");
        assert_eq!(cb[0].handle_msg.as_deref(), Some(format!("p{id}").as_str()));
    }
    assert!(got.len() >= ids.len(), "each result at least once (duplicates allowed)");
}

#[tokio::test]
async fn sigterm_finishes_the_running_job_reports_it_then_leaves_the_registry() {
    let admin = FakeAdmin::start(true).await;
    let logdir = tempfile::tempdir().unwrap();
    let listen = free_port();
    let mut demo = DemoProcess::start(&admin, listen, logdir.path()).await;
    let registered = wait_for(WAIT, || {
        let r = admin.recorded.lock().unwrap();
        r.registry.first().map(|p| p.registry_value.clone())
    })
    .await;
    assert_eq!(registered, Some(format!("http://{listen}/")));

    assert_eq!(
        demo.client.run(trigger(1, 2001, "sleepJobHandler", "1.5")).await.code(),
        200
    );
    let busy = wait_for_async(WAIT, || async {
        let reply = demo.client.post("/idleBeat", json!({"jobId": 1}).to_string()).await;
        (reply.code() == 500).then_some(())
    })
    .await;
    assert_eq!(busy, Some(()));
    demo.signal(libc::SIGTERM);
    let status = demo.wait_exit().await;
    assert!(status.success(), "graceful exit: {status:?}");

    assert_eq!(
        admin.callbacks_for(2001).first().map(|c| c.handle_code),
        Some(200),
        "in-flight run finished"
    );
    let events = admin.events();
    let callback_at = events
        .iter()
        .position(|e| e == "callback:2001")
        .expect("result delivered");
    let remove_at = events
        .iter()
        .position(|e| e == "registryRemove")
        .expect("registryRemove sent");
    assert!(callback_at < remove_at, "result before registryRemove: {events:?}");
    let removed = admin.recorded.lock().unwrap().registry_remove[0].clone();
    assert_eq!(
        (removed.registry_key.as_str(), removed.registry_value),
        ("chime-proc-test", format!("http://{listen}/"))
    );
}
