//! The client commands' output against a real admin: listings longer than one page of the REST
//! API, paging flags, and a reader that goes away (`chime … | head`).

use serde_json::{json, Value};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_chime");
const TOKEN: &str = "cli-output-token";

/// A `chime admin` process on a fresh SQLite file, stopped when dropped.
struct Admin {
    child: Child,
    url: String,
    dir: std::path::PathBuf,
}

impl Drop for Admin {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn start_admin() -> Admin {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = std::env::temp_dir().join(format!("chime-cli-out-{}-{port}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let child = Command::new(BIN)
        .args([
            "admin",
            "--db",
            &format!("sqlite://{}/c.db", dir.display()),
            "--listen",
            &format!("127.0.0.1:{port}"),
        ])
        .env("CHIME_API_TOKEN", TOKEN)
        .env("CHIME_ADMIN_PASSWORD", "x")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let admin = Admin {
        child,
        url: format!("http://127.0.0.1:{port}"),
        dir,
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while !client(&admin)
        .args(["group", "list"])
        .output()
        .unwrap()
        .status
        .success()
    {
        assert!(Instant::now() < deadline, "admin did not start");
        std::thread::sleep(Duration::from_millis(200));
    }
    admin
}

fn client(admin: &Admin) -> Command {
    let mut c = Command::new(BIN);
    c.env("CHIME_ADMIN_URL", &admin.url).env("CHIME_API_TOKEN", TOKEN);
    c
}

fn json_out(admin: &Admin, args: &[&str]) -> (Vec<i64>, String) {
    let out: Output = client(admin).arg("--json").args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{args:?}: {stderr}");
    let rows: Value = serde_json::from_slice(&out.stdout).unwrap();
    let ids = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_i64().unwrap())
        .collect();
    (ids, stderr)
}

/// Creates `n` jobs through the REST API, a few requests at a time.
fn create_jobs(admin: &Admin, n: usize) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let http = reqwest::Client::new();
        let url = format!("{}/v1/jobs", admin.url);
        let mut tasks = tokio::task::JoinSet::new();
        for chunk in 0..8 {
            let (http, url) = (http.clone(), url.clone());
            tasks.spawn(async move {
                for _ in (chunk..n).step_by(8) {
                    let resp = http
                        .post(&url)
                        .bearer_auth(TOKEN)
                        .json(&json!({"group": "out", "handler": "h"}))
                        .send()
                        .await
                        .unwrap();
                    assert_eq!(resp.status(), 201);
                }
            });
        }
        while let Some(done) = tasks.join_next().await {
            done.unwrap();
        }
    });
}

#[test]
fn listings_page_through_everything_and_take_paging_flags() {
    let admin = start_admin();
    let out = client(&admin)
        .args(["group", "add", "--appname", "out", "--addresses", "http://127.0.0.1:1"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // More than the 1,000 jobs the REST API returns per request.
    create_jobs(&admin, 1_005);
    let (all, _) = json_out(&admin, &["job", "list"]);
    assert_eq!(all, (1..=1_005).collect::<Vec<i64>>());
    let (page, hint) = json_out(&admin, &["job", "list", "--limit", "3", "--after-id", "1000"]);
    assert_eq!(page, [1001, 1002, 1003]);
    assert!(hint.contains("--after-id 1003"), "{hint}");
    let (tail, hint) = json_out(&admin, &["job", "list", "--after-id", "1003"]);
    assert_eq!((tail, hint.as_str()), (vec![1004, 1005], ""));

    // The group has no executor: each trigger makes a run, which cannot be sent, and says so.
    for _ in 0..5 {
        let out = client(&admin).args(["job", "trigger", "7"]).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(String::from_utf8_lossy(&out.stdout).contains("triggered job 7: run"));
        assert!(
            !out.status.success() && stderr.contains("could not be sent"),
            "{stderr}"
        );
    }
    let (newest, hint) = json_out(&admin, &["run", "list", "--job", "7", "--limit", "2"]);
    assert_eq!(newest, [5, 4]);
    assert!(hint.contains("--before-id 4"), "{hint}");
    let (older, _) = json_out(
        &admin,
        &["run", "list", "--job", "7", "--limit", "10", "--before-id", "4"],
    );
    assert_eq!(older, [3, 2, 1]);
}

/// Runs a client command whose standard output is a pipe nobody reads any more.
fn with_closed_stdout(admin: &Admin, args: &[&str]) -> Output {
    let mut child = client(admin)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The command needs a round trip to the admin before it writes, so the pipe is closed
    // before its first write.
    drop(child.stdout.take());
    child.wait_with_output().unwrap()
}

#[test]
fn a_closed_pipe_ends_the_command_quietly() {
    let admin = start_admin();
    let out = client(&admin)
        .args(["group", "add", "--appname", "out", "--addresses", "http://127.0.0.1:1"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    create_jobs(&admin, 3);
    for args in [
        &["job", "show", "3"][..],
        &["job", "list"],
        &["--json", "job", "list"],
        &["group", "list"],
    ] {
        let out = with_closed_stdout(&admin, args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.is_empty(), "chime {args:?} wrote to stderr: {stderr}");
        assert!(out.status.success(), "chime {args:?}: {:?}", out.status);
    }
}
