//! `chime executor --enable-scripts` as a user runs it, without a token: the real binary must
//! generate one, print it once, and refuse a trigger that does not carry it — the script of
//! such a trigger never runs — while a trigger with the printed token runs its script.

use serde_json::json;
use std::io::{BufRead, Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

mod common;

use common::{free_port, Guard, BIN};

/// Generous: the test polls for outcomes and never asserts on speed.
const WAIT: Duration = Duration::from_secs(60);

/// A scratch directory, removed when the test ends.
struct TempDir(std::path::PathBuf);

impl TempDir {
    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `POST path` with a JSON body as an admin sends it (HTTP/1.1 over a plain socket); returns
/// the reply's body.
fn post_json(port: u16, path: &str, token: Option<&str>, body: &str) -> String {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    let token_header = token
        .map(|t| format!("XXL-JOB-ACCESS-TOKEN: {t}\r\n"))
        .unwrap_or_default();
    write!(
        s,
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json;charset=UTF-8\r\n{token_header}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut reply = String::new();
    let _ = s.read_to_string(&mut reply);
    reply
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default()
}

/// A GLUE_SHELL trigger whose script creates `marker`.
fn touch_trigger(log_id: i64, marker: &Path) -> String {
    json!({
        "jobId": 1,
        "executorHandler": "",
        "executorParams": "",
        "executorBlockStrategy": "SERIAL_EXECUTION",
        "executorTimeout": 0,
        "logId": log_id,
        "logDateTime": 1_700_000_000_000i64,
        "glueType": "GLUE_SHELL",
        "glueSource": format!("touch '{}'", marker.display()),
        "glueUpdatetime": 1,
        "broadcastIndex": 0,
        "broadcastTotal": 1
    })
    .to_string()
}

#[test]
fn enable_scripts_without_a_token_prints_a_generated_one_and_refuses_calls_without_it() {
    let (port, admin_port) = (free_port(), free_port());
    let dir = TempDir(std::env::temp_dir().join(format!("chime-executor-cli-{}-{port}", std::process::id())));
    std::fs::create_dir_all(dir.path()).unwrap();
    let mut command = Command::new(BIN);
    command
        .args(["executor", "--enable-scripts", "--appname", "scripts"])
        .args(["--listen", &format!("127.0.0.1:{port}")])
        // Nobody listens there: results stay spooled, which does not matter here.
        .args(["--admin", &format!("http://127.0.0.1:{admin_port}")])
        .arg("--logdir")
        .arg(dir.path().join("logs"))
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    // Only the flags above: no token may leak in from the environment.
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("CHIME_") {
            command.env_remove(key);
        }
    }
    let mut executor = Guard(command.spawn().unwrap());
    let stderr = executor.0.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut output = Vec::new();
    let deadline = Instant::now() + WAIT;
    let token = loop {
        let line = rx
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .unwrap_or_else(|_| panic!("no generated token printed; output so far: {output:#?}"));
        output.push(line.clone());
        if let Some(token) = line.strip_prefix("chime executor: access token: ") {
            break token.trim().to_owned();
        }
    };
    assert!(
        token.len() >= 32 && token.bytes().all(|b| b.is_ascii_hexdigit()),
        "a strong generated token: {token}"
    );

    // Wait until it serves.
    let up = loop {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            break true;
        }
        if Instant::now() > deadline {
            break false;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(up, "the executor did not listen on {port}");

    let refused_marker = dir.path().join("ran-without-token");
    let reply = post_json(port, "/run", None, &touch_trigger(10, &refused_marker));
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&reply).unwrap(),
        json!({"code": 500, "msg": "The access token is wrong."})
    );
    let reply = post_json(port, "/run", Some("not-the-token"), &touch_trigger(11, &refused_marker));
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&reply).unwrap(),
        json!({"code": 500, "msg": "The access token is wrong."})
    );

    // With the printed token the same kind of trigger runs its script. The job runs its
    // triggers in order, so once this one ran, a refused one would have run before it.
    let marker = dir.path().join("ran-with-token");
    let reply = post_json(port, "/run", Some(&token), &touch_trigger(12, &marker));
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&reply).unwrap(),
        json!({"code": 200})
    );
    while !marker.exists() {
        assert!(Instant::now() < deadline, "the script with the token did not run");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!refused_marker.exists(), "a trigger without the token ran its script");

    let pid = executor.0.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    let stop_deadline = Instant::now() + WAIT;
    let status = loop {
        if let Some(s) = executor.0.try_wait().unwrap() {
            break s;
        }
        assert!(
            Instant::now() < stop_deadline,
            "the executor did not stop after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(status.success(), "clean exit after SIGTERM: {status:?}");
    reader.join().unwrap();
    output.extend(rx.try_iter());
    assert!(
        output.iter().any(|l| l.contains("chime admin --access-token")),
        "says how to give it to the admin: {output:#?}"
    );
    // Shown once, for the person starting it; never in the log lines.
    let mentions = output.iter().filter(|l| l.contains(&token)).count();
    assert_eq!(mentions, 1, "{output:#?}");
}

/// Starts `chime executor` with these environment variables (and no other CHIME_ ones), waits
/// until its port answers or it exits, and returns whether the port answered and its stderr.
fn executor_with_env(port: u16, env: &[(&str, String)]) -> (bool, String) {
    let dir = std::env::temp_dir().join(format!("chime-exec-env-{}-{port}", std::process::id()));
    let mut command = Command::new(BIN);
    command
        .arg("executor")
        .args(["--logdir", &dir.display().to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for (name, _) in std::env::vars() {
        if name.starts_with("CHIME_") {
            command.env_remove(name);
        }
    }
    for (name, value) in env {
        command.env(name, value);
    }
    let mut child = Guard(command.spawn().unwrap());
    let deadline = Instant::now() + WAIT;
    let listening = loop {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            break true;
        }
        if child.0.try_wait().unwrap().is_some() || Instant::now() > deadline {
            break false;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let _ = child.0.kill();
    let _ = child.0.wait();
    let mut stderr = String::new();
    child.0.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    (listening, stderr)
}

#[test]
fn the_executor_reads_the_new_variable_names_and_the_old_ones_with_a_warning() {
    // New names: the admin address as the client commands name it, a listen variable of its own.
    let port = free_port();
    let (listening, stderr) = executor_with_env(
        port,
        &[
            ("CHIME_ADMIN_URL", "http://127.0.0.1:1".into()),
            ("CHIME_EXECUTOR_LISTEN", format!("127.0.0.1:{port}")),
            // The admin's listen variable in the same environment does not move the executor.
            ("CHIME_LISTEN", "127.0.0.1:1".into()),
        ],
    );
    assert!(listening, "{stderr}");
    assert!(!stderr.contains("read for this release only"), "{stderr}");

    // Old names: still read, each with a warning naming the new one.
    let port = free_port();
    let (listening, stderr) = executor_with_env(
        port,
        &[
            ("CHIME_ADMIN", "http://127.0.0.1:1".into()),
            ("CHIME_LISTEN", format!("127.0.0.1:{port}")),
        ],
    );
    assert!(listening, "{stderr}");
    assert!(
        stderr.contains("chime: CHIME_ADMIN is read for this release only; rename it CHIME_ADMIN_URL"),
        "{stderr}"
    );
    assert!(
        stderr.contains("CHIME_LISTEN is read for this release only; rename it CHIME_EXECUTOR_LISTEN"),
        "{stderr}"
    );
    assert!(
        stderr.contains("127.0.0.1:1"),
        "the old admin variable was used: {stderr}"
    );
}
