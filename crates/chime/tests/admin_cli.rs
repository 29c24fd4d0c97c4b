//! The `chime` binary as a user runs it: `chime admin` makes an executor token when none is given
//! and starts on SQLite; the client commands (`group`, `job`, `run`, `executors`) talk to it, with tables or
//! `--json`, and report bad input with the field and a non-zero exit code.

use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_chime");
const TOKEN: &str = "cli-test-token";

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

fn client(admin: &Admin, args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .env("CHIME_ADMIN_URL", &admin.url)
        .env("CHIME_API_TOKEN", TOKEN)
        .output()
        .unwrap()
}

fn start_admin() -> Admin {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = std::env::temp_dir().join(format!("chime-cli-{}-{port}", std::process::id()));
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
    while !client(&admin, &["group", "list"]).status.success() {
        assert!(Instant::now() < deadline, "admin did not start");
        std::thread::sleep(Duration::from_millis(200));
    }
    admin
}

/// Listening on every address is safe without `--access-token`: the admin makes one, prints it
/// once on standard error, and requires it from executors (it used to refuse to start, and
/// on loopback it took any executor).
#[test]
fn admin_listening_openly_without_a_token_makes_one() {
    use std::io::{BufRead, BufReader};
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(BIN)
        .args(["admin", "--db", &format!("sqlite://{}/open.db", dir.path().display())])
        .args(["--listen", "0.0.0.0:0"])
        .env_remove("CHIME_ACCESS_TOKEN")
        .env("CHIME_ADMIN_PASSWORD", "x")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = BufReader::new(child.stderr.take().unwrap());
    let mut told = false;
    let mut token = None;
    let mut lines = stderr.lines();
    let mut seen = Vec::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        told |= line.contains("no --access-token was given");
        let trimmed = line.trim();
        if told && trimmed.len() == 64 && trimmed.bytes().all(|b| b.is_ascii_hexdigit()) {
            token = Some(trimmed.to_owned());
        }
        let listening = line.contains("listening on");
        seen.push(line);
        if listening {
            break;
        }
    }
    // Without an API token the admin says why tools will meet 401.
    let next = lines.next().map(Result::unwrap).unwrap_or_default();
    seen.push(next.clone());
    let _ = child.kill();
    let _ = child.wait();
    assert!(told && token.is_some(), "the start made and printed a token");
    assert!(next.contains("no --api-token"), "{seen:#?}");
    // Written to a pipe, the log has no terminal colour codes.
    assert!(seen.iter().all(|l| !l.contains('\u{1b}')), "{seen:#?}");
}

#[test]
fn client_commands_against_a_real_admin() {
    let admin = start_admin();
    let out = client(
        &admin,
        &["group", "add", "--appname", "cli", "--addresses", "http://127.0.0.1:1"],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = client(
        &admin,
        &[
            "--json",
            "job",
            "add",
            "--group",
            "cli",
            "--handler",
            "h",
            "--cron",
            "0 0 9 ? * MON-FRI",
            "--tz",
            "Europe/Berlin",
            "--retries",
            "1",
        ],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let job: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let id = job["id"].as_i64().unwrap();
    let out = client(&admin, &["job", "list"]);
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.starts_with("ID") && table.contains("Europe/Berlin"), "{table}");
    let out = client(&admin, &["--json", "job", "next", &id.to_string(), "--count", "3"]);
    let next: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(next["next"].as_array().unwrap().len(), 3);
    // A manual trigger to an unreachable executor: the run fails and is retried once, and the
    // command fails with the admin's reason.
    let out = client(&admin, &["--json", "job", "trigger", &id.to_string(), "--param", "p"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains("could not be sent"),
        "{stderr}"
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    let runs = loop {
        let out = client(&admin, &["--json", "run", "list", "--job", &id.to_string()]);
        let runs: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        if runs.as_array().unwrap().len() == 2 && runs.as_array().unwrap().iter().all(|r| r["status"] == "failed") {
            break runs;
        }
        assert!(Instant::now() < deadline, "{runs}");
        std::thread::sleep(Duration::from_millis(200));
    };
    for key in [
        "id",
        "job_id",
        "scheduled_at",
        "triggered_at",
        "trigger_type",
        "executor_address",
        "trigger_code",
        "handle_code",
        "handle_msg",
        "retry_count",
    ] {
        assert!(runs[0].get(key).is_some(), "run JSON lacks {key}: {}", runs[0]);
    }
    assert_eq!(runs[1]["trigger_type"], "MANUAL");
    let out = client(&admin, &["run", "show", &runs[0]["id"].to_string()]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("RETRY"));
    // Run times say their zone: the machine's, with its offset.
    let out = Command::new(BIN)
        .args(["run", "list", "--job", &id.to_string()])
        .env("CHIME_ADMIN_URL", &admin.url)
        .env("CHIME_API_TOKEN", TOKEN)
        .env("TZ", "UTC")
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        table.matches(" +00:00").count(),
        4,
        "scheduled and triggered of both runs: {table}"
    );
    let out = client(&admin, &["executor", "list"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("http://127.0.0.1:1"));
    // Bad input: non-zero exit, the message names the field.
    let out = client(
        &admin,
        &[
            "job",
            "add",
            "--group",
            "cli",
            "--handler",
            "h",
            "--cron",
            "0 0 25 * * ?",
        ],
    );
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("schedule_expr"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = Command::new(BIN)
        .args(["job", "list"])
        .env("CHIME_ADMIN_URL", &admin.url)
        .env_remove("CHIME_API_TOKEN")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("401"));
    let out = client(&admin, &["job", "rm", &id.to_string()]);
    assert!(out.status.success());
}
