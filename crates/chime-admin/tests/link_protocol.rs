//! The admin's end of the executor link, spoken to by a raw WebSocket peer in the test: who may
//! link, what a linked executor may register, that a trigger travels down the link and its
//! result up it, and that a peer breaking the protocol (a binary message, a frame that is not
//! JSON, a message over the size limit) loses its link — and with it its runs, which then fail
//! like sends to an unreachable executor. A message over 1 MiB that is not an answer to `/log`
//! closes the link with the reason, and links stalled halfway through large messages share one
//! budget, given back when they close. Also the relay endpoint's refusals.

mod common;

use common::{Db, Env, ACCESS_TOKEN};
use futures::{SinkExt, StreamExt};
use serde_json::{json, Value};
use std::time::Duration;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;

const APP: &str = "linked";

/// Opens a link as executor `id` of `app` with `token`; the HTTP status of a refusal otherwise.
async fn dial(e: &Env, app: &str, id: &str, token: &str) -> Result<Socket, u16> {
    let url = format!("{}/api/link", e.prefix.replacen("http://", "ws://", 1));
    let mut request = url.into_client_request().unwrap();
    let headers = request.headers_mut();
    headers.insert("XXL-JOB-ACCESS-TOKEN", token.parse().unwrap());
    headers.insert("XXL-JOB-APPNAME", app.parse().unwrap());
    headers.insert("Chime-Executor-Id", id.parse().unwrap());
    match tokio_tungstenite::connect_async(request).await {
        Ok((socket, _)) => Ok(socket),
        Err(tokio_tungstenite::tungstenite::Error::Http(resp)) => Err(resp.status().as_u16()),
        Err(other) => panic!("link upgrade failed unexpectedly: {other}"),
    }
}

/// Next JSON frame from the admin (pings skipped); `None` once the admin closed the link. One
/// deadline for the whole wait: the admin's pings every 10 s must not stretch it for ever.
async fn next_frame(socket: &mut Socket) -> Option<Value> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let message = tokio::time::timeout_at(deadline, socket.next())
            .await
            .expect("the admin sends a frame within 20 s")?;
        match message.ok()? {
            Message::Text(t) => return Some(serde_json::from_str(t.as_str()).expect("the admin sends JSON frames")),
            Message::Close(_) => return None,
            _ => continue,
        }
    }
}

/// Makes a call up the link and returns the admin's answer.
async fn call_up(socket: &mut Socket, id: u64, path: &str, body: Value) -> Value {
    let frame = json!({"id": id, "path": path, "body": body});
    socket.send(Message::Text(frame.to_string().into())).await.unwrap();
    loop {
        let frame = next_frame(socket).await.expect("link open");
        if frame["id"] == id && frame.get("path").is_none() {
            return frame["body"].clone();
        }
    }
}

fn registration(app: &str, address: &str) -> Value {
    json!({"registryGroup": "EXECUTOR", "registryKey": app, "registryValue": address})
}

/// The close frame's code once the admin closes the link.
async fn close_code(socket: &mut Socket) -> Option<CloseCode> {
    loop {
        let message = tokio::time::timeout(Duration::from_secs(20), socket.next())
            .await
            .expect("the admin closes the link within 20 s");
        match message {
            Some(Ok(Message::Close(frame))) => return frame.map(|f| f.code),
            Some(Ok(_)) => continue,
            Some(Err(_)) | None => return None,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn who_may_link_and_what_a_link_may_register() {
    let e = Env::start(Db::Sqlite, Duration::from_secs(10)).await;
    e.group(APP).await;
    assert_eq!(
        dial(&e, APP, "ex-1", "wrong").await.err(),
        Some(401),
        "a wrong token is refused"
    );
    assert_eq!(
        dial(&e, APP, "a/b", ACCESS_TOKEN).await.err(),
        Some(400),
        "an id with '/' is refused"
    );
    assert_eq!(
        dial(&e, "", "ex-1", ACCESS_TOKEN).await.err(),
        Some(400),
        "an app name is required"
    );
    let plain = reqwest::get(format!("{}/api/link", e.prefix)).await.unwrap();
    assert_eq!(
        plain.status(),
        400,
        "a GET without the upgrade is refused with a reason"
    );

    let mut socket = dial(&e, APP, "ex-1", ACCESS_TOKEN)
        .await
        .expect("the right token links");
    // A linked executor cannot enter an address the admin would dial, nor speak for another
    // link or group.
    for (app, address) in [
        (APP, "http://127.0.0.1:1"),
        (APP, "link://ex-2"),
        ("other-app", "link://ex-1"),
    ] {
        let answer = call_up(&mut socket, 1, "/api/registry", registration(app, address)).await;
        assert_eq!(answer["code"], 500, "{app} {address}: {answer}");
    }
    let answer = call_up(&mut socket, 2, "/api/registry", registration(APP, "link://ex-1")).await;
    assert_eq!(answer["code"], 200, "{answer}");
    let listed = e.api.wait_executors(APP, 1).await;
    assert_eq!(listed, vec!["link://ex-1".to_owned()]);
    let unknown = call_up(&mut socket, 3, "/run", json!({})).await;
    assert_eq!(
        unknown["code"], 500,
        "an executor endpoint is not served up the link: {unknown}"
    );
    // Over HTTP nobody can register a link address.
    let (code, msg) = common::executor_api(
        &reqwest::Client::new(),
        &e.prefix,
        "registry",
        ACCESS_TOKEN,
        registration(APP, "link://ex-9"),
    )
    .await;
    assert_eq!(code, 500, "{msg}");
    e.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_trigger_goes_down_the_link_and_its_result_comes_up() {
    let e = Env::start(Db::Sqlite, Duration::from_secs(10)).await;
    e.group(APP).await;
    let mut socket = dial(&e, APP, "ex-1", ACCESS_TOKEN).await.unwrap();
    let answer = call_up(&mut socket, 1, "/api/registry", registration(APP, "link://ex-1")).await;
    assert_eq!(answer["code"], 200, "{answer}");
    e.api.wait_executors(APP, 1).await;
    let job = e.job(json!({"group": APP, "handler": "h"})).await;

    let run = e.trigger(job, json!({"param": "p-42"})).await;
    let call = next_frame(&mut socket).await.expect("a call");
    assert_eq!(call["path"], "/run");
    assert_eq!(call["body"]["logId"], run);
    assert_eq!(call["body"]["executorParams"], "p-42");
    let ok = json!({"id": call["id"], "body": {"code": 200, "msg": null}});
    socket.send(Message::Text(ok.to_string().into())).await.unwrap();
    let callback = json!([{"logId": run, "logDateTim": 0, "handleCode": 200, "handleMsg": "done"}]);
    let answer = call_up(&mut socket, 2, "/api/callback", callback).await;
    assert_eq!(answer["code"], 200, "{answer}");
    let finished = e.run_with_status(run, "success").await;
    assert_eq!(finished["executor_address"], "link://ex-1");

    // An executor that does not answer: the trigger fails at the executor timeout.
    let silent = e.trigger(job, json!({})).await;
    let call = next_frame(&mut socket).await.expect("a call");
    assert_eq!(call["body"]["logId"], silent);
    let failed = e.run_with_status(silent, "failed").await;
    let msg = failed["trigger_msg"].as_str().unwrap_or_default();
    assert!(msg.contains("timed out") && msg.contains("link://ex-1"), "{failed}");
    e.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_peer_breaking_the_protocol_loses_its_link() {
    let e = Env::start(Db::Sqlite, Duration::from_secs(10)).await;
    e.group(APP).await;
    let oversized = "x".repeat(chime_protocol::link::MAX_FRAME_BYTES + 1);
    let breaches: [(&str, Message); 3] = [
        ("binary", Message::Binary(vec![1, 2, 3].into())),
        ("not JSON", Message::Text("{not json".into())),
        (
            "oversized",
            Message::Text(format!("{{\"id\":1,\"body\":\"{oversized}\"}}").into()),
        ),
    ];
    for (what, message) in breaches {
        let mut socket = dial(&e, APP, "ex-1", ACCESS_TOKEN).await.unwrap();
        let answer = call_up(&mut socket, 1, "/api/registry", registration(APP, "link://ex-1")).await;
        assert_eq!(answer["code"], 200, "{answer}");
        // The send of an oversized message may itself fail as the admin closes mid-way.
        let _ = socket.send(message).await;
        let code = close_code(&mut socket).await;
        assert!(
            code.is_none() || code == Some(CloseCode::Policy) || code == Some(CloseCode::Size),
            "{what}: closed with {code:?}"
        );
    }
    // The executor is still listed (its heartbeat is recent), but its link is gone: a trigger
    // fails at once like a send to an executor that cannot be reached.
    let job = e.job(json!({"group": APP, "handler": "h"})).await;
    let run = e.trigger(job, json!({})).await;
    let failed = e.run_with_status(run, "failed").await;
    let msg = failed["trigger_msg"].as_str().unwrap_or_default();
    assert!(msg.contains("no admin holds a link"), "{failed}");
    e.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_relay_answers_only_for_links_held_here() {
    let e = Env::start(Db::Sqlite, Duration::from_secs(10)).await;
    e.group(APP).await;
    let http = reqwest::Client::new();
    let secret = e
        .admin
        .admin
        .store
        .secret(chime_admin::store::CLUSTER_SECRET)
        .await
        .unwrap()
        .expect("the first start made the cluster secret");
    // Only another admin of the database, which reads the secret from it, may relay: the
    // executor's token alone is refused, whatever else the call says.
    let outsider = http
        .post(format!("{}/api/linkRelay", e.prefix))
        .header("XXL-JOB-ACCESS-TOKEN", ACCESS_TOKEN)
        .header("XXL-JOB-APPNAME", APP)
        .header("Chime-Link-Address", "link://ex-1")
        .header("Chime-Link-Path", "/beat")
        .body("\"\"")
        .send()
        .await
        .unwrap();
    assert_eq!(outsider.status(), 401);
    let relay_with = |address: &str, path: &str, token: &str, body: &'static str| {
        http.post(format!("{}/api/linkRelay", e.prefix))
            .header("Chime-Cluster-Secret", &secret)
            .header("XXL-JOB-ACCESS-TOKEN", token)
            .header("XXL-JOB-APPNAME", APP)
            .header("Chime-Link-Address", address)
            .header("Chime-Link-Path", path)
            .body(body)
            .send()
    };
    let relay = |address: &str, path: &str, token: &str| relay_with(address, path, token, "\"\"");
    let status_of = |r: reqwest::Response| r.status().as_u16();
    assert_eq!(
        status_of(relay("link://ex-1", "/beat", ACCESS_TOKEN).await.unwrap()),
        404
    );
    assert_eq!(status_of(relay("link://ex-1", "/beat", "wrong").await.unwrap()), 401);
    assert_eq!(
        status_of(relay("http://127.0.0.1:1", "/beat", ACCESS_TOKEN).await.unwrap()),
        400
    );
    assert_eq!(
        status_of(relay("link://ex-1", "/api/registry", ACCESS_TOKEN).await.unwrap()),
        400
    );

    let mut socket = dial(&e, APP, "ex-1", ACCESS_TOKEN).await.unwrap();
    // A body that is not JSON never reaches the link (it would break the frame).
    let broken = relay_with("link://ex-1", "/beat", ACCESS_TOKEN, "{not json")
        .await
        .unwrap();
    assert_eq!(broken.status(), 400);
    let answering = tokio::spawn(async move {
        let call = next_frame(&mut socket).await.expect("the relayed call");
        assert_eq!(call["path"], "/beat");
        // The token of the call goes down with it, for the executor to check.
        assert_eq!(call["token"], ACCESS_TOKEN);
        let ok = json!({"id": call["id"], "body": {"code": 200, "msg": "beat over the link"}});
        socket.send(Message::Text(ok.to_string().into())).await.unwrap();
        socket
    });
    let answer = relay("link://ex-1", "/beat", ACCESS_TOKEN).await.unwrap();
    assert_eq!(answer.status(), 200);
    let body: Value = answer.json().await.unwrap();
    assert_eq!(body["msg"], "beat over the link");
    answering.await.unwrap();
    e.close().await;
}

/// The admin's count of linked executors, from `/metrics`.
async fn linked_count(e: &Env) -> i64 {
    e.api
        .metric("chime_linked_executors")
        .await
        .expect("the gauge chime_linked_executors") as i64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_link_silent_after_an_unanswered_call_is_dropped_and_a_live_one_kept() {
    let e = Env::start(Db::Sqlite, Duration::from_secs(60)).await;
    e.group(APP).await;
    let job = e.job(json!({"group": APP, "handler": "h"})).await;

    // A peer that still reads (so it answers pings) but does not answer the call: the call
    // times out, the link stays.
    let mut live = dial(&e, APP, "ex-1", ACCESS_TOKEN).await.unwrap();
    call_up(&mut live, 1, "/api/registry", registration(APP, "link://ex-1")).await;
    e.api.wait_executors(APP, 1).await;
    let reader = tokio::spawn(async move { while let Some(Ok(_)) = live.next().await {} });
    let run = e.trigger(job, json!({})).await;
    let failed = e.run_with_status(run, "failed").await;
    assert!(
        failed["trigger_msg"].as_str().unwrap_or_default().contains("timed out"),
        "{failed}"
    );
    tokio::time::sleep(Duration::from_secs(8)).await;
    assert_eq!(linked_count(&e).await, 1, "a link that answers pings is kept");
    // Dropping the socket closes the link.
    reader.abort();
    let links_become = |n: i64| {
        let e = &e;
        async move {
            common::eventually(20, &format!("{n} links"), || async {
                match linked_count(e).await {
                    got if got == n => Ok(()),
                    got => Err(format!("{got} links")),
                }
            })
            .await
        }
    };
    links_become(0).await;

    // A peer that reads nothing at all any more (a cut line): after its call times out the
    // admin pings, hears nothing, and drops the link a few seconds later (well before the 30 s
    // idle timeout, which the wait below does not reach); the next call fails at once.
    e.group("other").await;
    let mut silent = dial(&e, "other", "ex-2", ACCESS_TOKEN).await.unwrap();
    call_up(&mut silent, 1, "/api/registry", registration("other", "link://ex-2")).await;
    e.api.wait_executors("other", 1).await;
    links_become(1).await;
    let other_job = e.job(json!({"group": "other", "handler": "h"})).await;
    let run = e.trigger(other_job, json!({})).await;
    e.run_with_status(run, "failed").await;
    links_become(0).await;
    let next = e.trigger(other_job, json!({})).await;
    let failed = e.run_with_status(next, "failed").await;
    assert!(
        failed["trigger_msg"]
            .as_str()
            .unwrap_or_default()
            .contains("no admin holds a link"),
        "{failed}"
    );
    drop(silent);
    e.close().await;
}

/// An executor that sends nothing (not even the answer to the admin's pings) for the idle time
/// is dropped with a close frame that says so, which the executor logs.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_quiet_link_is_closed_saying_why() {
    let e = Env::start(Db::Sqlite, Duration::from_secs(10)).await;
    e.group(APP).await;
    let mut socket = dial(&e, APP, "ex-1", ACCESS_TOKEN).await.unwrap();
    // Read below the WebSocket layer, which would answer each ping (and a pong is a sign of
    // life): the frames the admin sends, to the end of the connection.
    use tokio::io::AsyncReadExt;
    let MaybeTlsStream::Plain(tcp) = socket.get_mut() else {
        panic!("a plain TCP link")
    };
    let mut bytes = Vec::new();
    let wait = Duration::from_secs(chime_protocol::link::IDLE_TIMEOUT_SECS + 30);
    tokio::time::timeout(wait, tcp.read_to_end(&mut bytes))
        .await
        .expect("the admin ends a quiet link")
        .expect("the link reads to its end");
    // Unmasked server frames with short payloads: opcode, length, payload.
    let mut frames = Vec::new();
    let mut rest = bytes.as_slice();
    while let [head, len, tail @ ..] = rest {
        let len = usize::from(len & 0x7f);
        assert!(len < 126 && tail.len() >= len, "a short frame: {bytes:?}");
        frames.push((head & 0x0f, tail[..len].to_vec()));
        rest = &tail[len..];
    }
    let (opcode, payload) = frames.last().expect("frames before the end").clone();
    assert_eq!(opcode, 0x8, "the last frame closes: {frames:?}");
    assert_eq!(u16::from_be_bytes([payload[0], payload[1]]), 1001, "going away");
    assert_eq!(
        String::from_utf8_lossy(&payload[2..]),
        format!("nothing received for {} s", chime_protocol::link::IDLE_TIMEOUT_SECS)
    );
    // Pings before it, which went unanswered.
    assert!(
        frames[..frames.len() - 1].iter().all(|(op, _)| *op == 0x9),
        "{frames:?}"
    );
    e.close().await;
}

/// The admin's count of bytes held for links' unfinished large messages.
async fn message_bytes(e: &Env) -> i64 {
    e.api
        .metric("chime_link_message_bytes")
        .await
        .expect("the gauge chime_link_message_bytes") as i64
}

/// The close frame once the admin closes the link: its code and reason. (One deadline for the
/// whole wait: the admin's pings must not keep a link it never closes waited for.)
async fn close_frame(socket: &mut Socket) -> Option<(CloseCode, String)> {
    let wait = async {
        loop {
            match socket.next().await {
                Some(Ok(Message::Close(frame))) => return frame.map(|f| (f.code, f.reason.to_string())),
                Some(Ok(_)) => continue,
                Some(Err(_)) | None => return None,
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(20), wait)
        .await
        .expect("the admin closes the link within 20 s")
}

/// Writes, below the WebSocket layer, the head of one masked text frame of `len` bytes and
/// `send` bytes of it (mask 0: the payload goes as is), as a peer that then stalls; `false` if
/// the admin closed the connection meanwhile.
async fn send_most_of_a_frame(socket: &mut Socket, len: u64, send: usize) -> bool {
    use tokio::io::AsyncWriteExt;
    let MaybeTlsStream::Plain(tcp) = socket.get_mut() else {
        panic!("a plain TCP link")
    };
    let mut head = vec![0x81u8, 0x80 | 127];
    head.extend_from_slice(&len.to_be_bytes());
    head.extend_from_slice(&[0, 0, 0, 0]);
    if tcp.write_all(&head).await.is_err() {
        return false;
    }
    tcp.write_all(&vec![b'a'; send]).await.is_ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_message_over_the_cap_closes_the_link_with_the_reason() {
    let e = Env::start(Db::Sqlite, Duration::from_secs(10)).await;
    e.group(APP).await;
    let mut socket = dial(&e, APP, "ex-1", ACCESS_TOKEN).await.unwrap();
    // 2 MiB: far below what the WebSocket layer takes (17 MiB), over what a link may send
    // when it owes no answer to /log.
    let big = "x".repeat(2 * 1024 * 1024);
    let _ = socket
        .send(Message::Text(format!("{{\"id\":1,\"body\":\"{big}\"}}").into()))
        .await;
    let frame = close_frame(&mut socket).await;
    let Some((code, reason)) = frame else {
        panic!("the admin closed the link without a close frame")
    };
    assert_eq!(code, CloseCode::Policy);
    assert!(
        reason.contains(&format!("over {} bytes", chime_protocol::link::MAX_MESSAGE_BYTES)),
        "{reason}"
    );
    common::eventually(20, "the bytes of the closed link to be given back", || async {
        match message_bytes(&e).await {
            0 => Ok(()),
            n => Err(format!("{n} bytes held")),
        }
    })
    .await;
    e.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn stalled_links_share_one_budget_and_give_it_back() {
    use chime_admin::http::link_socket::{FREE_BYTES, LARGE_MESSAGE_BUDGET};
    let e = Env::start(Db::Sqlite, Duration::from_secs(10)).await;
    e.group(APP).await;
    // Each link sends 1,000,000 bytes of a message announced at 1,040,000, and stalls: under a
    // link's cap, but together over the budget.
    let per_link = 1_000_000usize;
    let links = LARGE_MESSAGE_BUDGET / (per_link - FREE_BYTES) + 3;
    let mut sockets = Vec::new();
    for k in 0..links {
        let mut socket = dial(&e, APP, &format!("stall-{k}"), ACCESS_TOKEN).await.unwrap();
        send_most_of_a_frame(&mut socket, 1_040_000, per_link).await;
        sockets.push(socket);
    }
    let held = common::eventually(30, "every stalled link to be read or refused", || async {
        let held = message_bytes(&e).await;
        let full = (LARGE_MESSAGE_BUDGET - (per_link - FREE_BYTES)) as i64;
        if held >= full {
            Ok(held)
        } else {
            Err(format!("{held} bytes held"))
        }
    })
    .await;
    assert!(
        held <= LARGE_MESSAGE_BUDGET as i64,
        "{held} bytes held, over the budget"
    );
    // The links that did not fit were closed, saying why.
    let reasons = futures::future::join_all(sockets.iter_mut().map(|socket| async move {
        // Pings until a close frame, if one comes; a link still held sends nothing else.
        while let Ok(Some(Ok(message))) = tokio::time::timeout(Duration::from_millis(500), socket.next()).await {
            if let Message::Close(frame) = message {
                return Some(frame.map(|f| f.reason.to_string()).unwrap_or_default());
            }
        }
        None
    }))
    .await;
    // A link held mid-message sends nothing more: under load the test may outlast the idle
    // time, and such a link is then closed as quiet, saying so.
    let mut refused = 0;
    for reason in reasons.into_iter().flatten() {
        if reason.starts_with("nothing received for") {
            continue;
        }
        assert!(reason.contains("unfinished large link messages"), "{reason:?}");
        refused += 1;
    }
    assert!(
        refused >= 1,
        "no link was refused although they sent more than the budget"
    );
    drop(sockets);
    common::eventually(20, "the bytes of the closed links to be given back", || async {
        match message_bytes(&e).await {
            0 => Ok(()),
            n => Err(format!("{n} bytes held")),
        }
    })
    .await;
    e.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_answer_to_log_may_be_large() {
    // What is checked is that a 5 MiB answer is taken, not how fast: written and parsed by
    // debug builds on a loaded machine it can take longer than XXL-JOB's 3 s call timeout.
    let e = Env::start_with(Db::Sqlite, |config| {
        config.dead_timeout = Duration::from_secs(10);
        config.executor_timeout = Duration::from_secs(30);
    })
    .await;
    e.group(APP).await;
    let mut socket = dial(&e, APP, "ex-1", ACCESS_TOKEN).await.unwrap();
    let answer = call_up(&mut socket, 1, "/api/registry", registration(APP, "link://ex-1")).await;
    assert_eq!(answer["code"], 200, "{answer}");
    e.api.wait_executors(APP, 1).await;
    let job = e.job(json!({"group": APP, "handler": "h"})).await;
    let run = e.trigger(job, json!({})).await;
    let call = next_frame(&mut socket).await.expect("a call");
    let ok = json!({"id": call["id"], "body": {"code": 200, "msg": null}});
    socket.send(Message::Text(ok.to_string().into())).await.unwrap();
    // The log is asked of the executor the run was sent to: once the trigger's answer is
    // recorded (under load that is not at once, and before it the admin has no one to ask).
    e.api
        .wait_runs(job, 30, "the trigger recorded", |runs| {
            runs.iter().any(|r| r["trigger_code"] == 200)
        })
        .await;

    // 5 MiB of log, read through the admin while the run is still running.
    let reader = {
        let api = e.api.clone();
        tokio::spawn(async move { api.get(&format!("/v1/runs/{run}/log?from_line=1")).await })
    };
    // Other calls may come first (the monitor's /idleBeat): answered, and skipped.
    let call = loop {
        let call = next_frame(&mut socket).await.expect("a /log call");
        if call["path"] == "/log" {
            break call;
        }
        let ok = json!({"id": call["id"], "body": {"code": 200, "msg": null}});
        socket.send(Message::Text(ok.to_string().into())).await.unwrap();
    };
    let content = "line of the log\n".repeat(5 * 1024 * 1024 / 16);
    let page = json!({"id": call["id"], "body": {"code": 200, "content": {
        "fromLineNum": 1, "toLineNum": 5 * 1024 * 1024 / 16, "logContent": content, "isEnd": false}}});
    socket.send(Message::Text(page.to_string().into())).await.unwrap();
    let (status, log) = reader.await.unwrap();
    assert_eq!(status, 200, "{log}");
    assert_eq!(log["content"].as_str().map(str::len), Some(content.len()));
    // The link is still up: it answers the next call.
    let answer = call_up(&mut socket, 2, "/api/registry", registration(APP, "link://ex-1")).await;
    assert_eq!(answer["code"], 200, "{answer}");
    e.close().await;
}
