//! TLS end to end with the real `chime` binary: an admin serving HTTPS, executors registering
//! over https (one serving HTTPS itself, one linked over wss), clients that do not trust the
//! CA refused, and the admin's certificate replaced while it runs.

use serde_json::{json, Value};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod common;

use common::admin::{start_admin_with, Admin, API_TOKEN};
use common::tls::{Issued, TestCa};
use common::{free_port, Guard, BIN};

/// Generous: the tests poll for outcomes and never assert on speed.
const WAIT: Duration = Duration::from_secs(60);

/// The executor protocol's token of these tests.
const ACCESS_TOKEN: &str = "chime-tls-test-token";

/// An admin serving HTTPS with `cert`, trusting `ca` for its calls to executors.
fn tls_admin(dir: &Path, cert: &Issued, ca: &Path) -> Admin {
    let db = format!("sqlite://{}/chime.db", dir.display());
    let flags = [
        "--tls-cert",
        cert.cert.to_str().unwrap(),
        "--tls-key",
        cert.key.to_str().unwrap(),
        "--tls-ca",
        ca.to_str().unwrap(),
        "--access-token",
        ACCESS_TOKEN,
    ];
    let admin = start_admin_with(&db, "tls-test-password", &flags);
    assert!(admin.url.starts_with("https://"), "{}", admin.url);
    admin
}

/// A REST client trusting the test CA.
fn client(ca: &Path) -> reqwest::Client {
    let pem = std::fs::read(ca).unwrap();
    reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(&pem).unwrap())
        .build()
        .unwrap()
}

async fn api(http: &reqwest::Client, admin: &Admin, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
    let mut request = http
        .request(method, format!("{}{path}", admin.url))
        .bearer_auth(API_TOKEN);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap();
    let status = response.status();
    let value: Value = response.json().await.unwrap_or(Value::Null);
    assert!(status.is_success(), "{path}: {status} {value}");
    value
}

/// `chime executor` registering in `app` at the admin, with `extra` flags.
fn executor(admin: &Admin, app: &str, dir: &Path, ca: &Path, extra: &[&str]) -> Guard {
    let child = Command::new(BIN)
        .args(["executor", "--admin", &admin.url, "--appname", app])
        .args(["--access-token", ACCESS_TOKEN, "--demo-handlers"])
        .args(["--tls-ca", ca.to_str().unwrap()])
        .args(["--logdir", dir.join(format!("logs-{app}")).to_str().unwrap()])
        .args(extra)
        .env_remove("CHIME_ADMIN_URL")
        .env_remove("CHIME_ACCESS_TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    Guard(child)
}

/// Polls `check` until it gives a value or [`WAIT`] passes.
async fn eventually<T, F: std::future::Future<Output = Result<T, String>>>(what: &str, check: impl Fn() -> F) -> T {
    let deadline = Instant::now() + WAIT;
    loop {
        match check().await {
            Ok(value) => return value,
            Err(last) if Instant::now() > deadline => panic!("{what}: {last}"),
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

/// Creates group `app` and a job of `demoJobHandler` in it, waits for one executor to be
/// listed, triggers the job with `param`; returns the finished run and its log.
async fn run_once(http: &reqwest::Client, admin: &Admin, app: &str, param: &str) -> (Value, String) {
    use reqwest::Method;
    api(
        http,
        admin,
        Method::POST,
        "/v1/groups",
        Some(json!({"app_name": app, "title": app})),
    )
    .await;
    let job = api(
        http,
        admin,
        Method::POST,
        "/v1/jobs",
        Some(json!({"group": app, "handler": "demoJobHandler", "schedule_type": "NONE"})),
    )
    .await["id"]
        .as_i64()
        .unwrap();
    eventually(&format!("an executor of {app} registers"), || async {
        let v = api(http, admin, Method::GET, &format!("/v1/executors?group={app}"), None).await;
        match v[0]["executors"].as_array().map(Vec::len) {
            Some(1) => Ok(()),
            _ => Err(v.to_string()),
        }
    })
    .await;
    let run = api(
        http,
        admin,
        Method::POST,
        &format!("/v1/jobs/{job}/trigger"),
        Some(json!({"param": param})),
    )
    .await["run_id"]
        .as_i64()
        .unwrap();
    let finished = eventually(&format!("run {run} of {app} succeeds"), || async {
        let r = api(http, admin, Method::GET, &format!("/v1/runs/{run}"), None).await;
        if r["status"] == "success" && r["trigger_code"] == 200 {
            Ok(r)
        } else {
            Err(r.to_string())
        }
    })
    .await;
    let log = eventually(&format!("the log of run {run}"), || async {
        let v = api(http, admin, Method::GET, &format!("/v1/runs/{run}/log"), None).await;
        match v["content"].as_str() {
            Some(content) if content.contains(param) => Ok(content.to_owned()),
            _ => Err(v.to_string()),
        }
    })
    .await;
    (finished, log)
}

#[tokio::test(flavor = "multi_thread")]
async fn executors_register_over_https_and_run_jobs_over_https_and_wss() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new();
    let ca_file = ca.write(dir.path());
    let admin = tls_admin(dir.path(), &ca.issue(dir.path(), "admin", 1), &ca_file);
    let http = client(&ca_file);

    // HTTP mode, the executor serving HTTPS: it registers https://, the admin calls it there.
    let served = ca.issue(dir.path(), "executor", 2);
    let port = free_port().to_string();
    let listen = format!("127.0.0.1:{port}");
    let _https = executor(
        &admin,
        "tls-https",
        dir.path(),
        &ca_file,
        &[
            "--listen",
            &listen,
            "--tls-cert",
            served.cert.to_str().unwrap(),
            "--tls-key",
            served.key.to_str().unwrap(),
        ],
    );
    let (run, log) = run_once(&http, &admin, "tls-https", "over https").await;
    assert_eq!(run["executor_address"], format!("https://127.0.0.1:{port}"), "{run}");
    assert!(log.contains("param=over https"), "{log}");

    // Link mode: the executor dials wss:// to the https:// admin.
    let _linked = executor(&admin, "tls-link", dir.path(), &ca_file, &["--link"]);
    let (run, log) = run_once(&http, &admin, "tls-link", "over wss").await;
    assert!(
        run["executor_address"].as_str().unwrap().starts_with("link://"),
        "{run}"
    );
    assert!(log.contains("param=over wss"), "{log}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_client_that_does_not_trust_the_ca_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new();
    let ca_file = ca.write(dir.path());
    let admin = tls_admin(dir.path(), &ca.issue(dir.path(), "admin", 1), &ca_file);
    let trusted = client(&ca_file)
        .get(format!("{}/healthz", admin.url))
        .send()
        .await
        .unwrap();
    assert_eq!(trusted.status(), 200);
    let refused = reqwest::Client::new()
        .get(format!("{}/healthz", admin.url))
        .send()
        .await
        .unwrap_err();
    let chain = format!("{:?}", refused);
    assert!(
        chain.contains("UnknownIssuer") || chain.contains("certificate"),
        "a handshake error: {chain}"
    );
    // Plain HTTP to the TLS port gets no answer from the API.
    let plain = reqwest::Client::new()
        .get(admin.url.replace("https://", "http://") + "/healthz")
        .send()
        .await;
    assert!(plain.map(|r| r.status() != 200).unwrap_or(true));
}

/// The certificate the server at `url` presents to a new connection.
async fn presented(url: &str, ca: &Path) -> rustls::pki_types::CertificateDer<'static> {
    let addr = url.trim_start_matches("https://");
    let mut roots = rustls::RootCertStore::empty();
    let pem = std::fs::read(ca).unwrap();
    for cert in rustls_pemfile_certs(&pem) {
        roots.add(cert).unwrap();
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(rustls::pki_types::ServerName::try_from("localhost").unwrap(), tcp)
        .await
        .unwrap();
    tls.get_ref().1.peer_certificates().unwrap()[0].clone()
}

fn rustls_pemfile_certs(pem: &[u8]) -> Vec<rustls::pki_types::CertificateDer<'static>> {
    use rustls::pki_types::pem::PemObject;
    rustls::pki_types::CertificateDer::pem_slice_iter(pem)
        .map(Result::unwrap)
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_replaced_certificate_is_served_after_sighup_or_the_next_look_at_the_files() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new();
    let ca_file = ca.write(dir.path());
    let first = ca.issue(dir.path(), "admin", 1);
    let admin = tls_admin(dir.path(), &first, &ca_file);
    assert_eq!(presented(&admin.url, &ca_file).await, first.der);

    // Replaced, then SIGHUP: the next connection gets the new one at once.
    let second = ca.issue(dir.path(), "admin", 2);
    let pid = admin.child.id().to_string();
    let hup = || assert!(Command::new("kill").args(["-HUP", &pid]).status().unwrap().success());
    hup();
    eventually("SIGHUP reloads the certificate", || async {
        if presented(&admin.url, &ca_file).await == second.der {
            Ok(())
        } else {
            Err("still the first certificate".to_owned())
        }
    })
    .await;

    // A broken file: logged, the certificate in use stays.
    std::fs::write(&second.key, "not a key").unwrap();
    hup();
    eventually("the broken key is reported", || async {
        let log = admin.stderr.lock().unwrap().clone();
        if log.contains("could not be reloaded") {
            Ok(())
        } else {
            Err(log)
        }
    })
    .await;
    assert_eq!(presented(&admin.url, &ca_file).await, second.der);

    // Replaced without a signal: the admin sees the files change within its poll.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let third = ca.issue(dir.path(), "admin", 3);
    let started = Instant::now();
    eventually("the changed files are read again", || async {
        if presented(&admin.url, &ca_file).await == third.der {
            Ok(())
        } else {
            Err("not yet the third certificate".to_owned())
        }
    })
    .await;
    assert!(started.elapsed() < Duration::from_secs(12), "{:?}", started.elapsed());
    assert!(admin.child.id() > 0);
}
