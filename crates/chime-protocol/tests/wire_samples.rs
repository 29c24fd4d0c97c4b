//! Round-trips every body captured between an XXL-JOB-style admin and a real pyxxl 0.4.8
//! executor (tests/fixtures), plus the Java executor's reference payloads.
//!
//! A body must parse into Chime's type, and writing that type back must give the same JSON
//! (apart from keys Chime deliberately ignores, such as pyxxl's legacy `executeResult`).

use chime_protocol::*;
use serde_json::Value;

const SAMPLES: &str = include_str!("fixtures/wire-samples-pyxxl-0.4.8.md");

/// One `###` section of the capture: its heading and its JSON code blocks in order.
struct Section {
    heading: String,
    request: Option<String>,
    response: Option<String>,
}

fn sections() -> Vec<Section> {
    let mut out = Vec::new();
    let mut current: Option<Section> = None;
    let mut lines = SAMPLES.lines();
    let mut last_label = String::new();
    while let Some(line) = lines.next() {
        if let Some(h) = line.strip_prefix("### ") {
            out.extend(current.take());
            current = Some(Section {
                heading: h.to_owned(),
                request: None,
                response: None,
            });
        } else if line.starts_with("```json") {
            let mut block = String::new();
            for l in lines.by_ref() {
                if l.starts_with("```") {
                    break;
                }
                block.push_str(l);
                block.push('\n');
            }
            if let Some(s) = current.as_mut() {
                if last_label.starts_with("Request body") {
                    s.request = Some(block.trim().to_owned());
                } else if last_label.contains("response") {
                    s.response = Some(block.trim().to_owned());
                }
            }
        } else if !line.trim().is_empty() {
            last_label = line.to_owned();
        }
    }
    out.extend(current);
    out
}

fn value(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("fixture is not JSON ({e}): {text}"))
}

/// Asserts that `T` reads `body` and writes it back as the same JSON value, minus `ignored` keys.
fn assert_round_trip<T>(body: &str, ignored: &[&str]) -> T
where
    T: serde::de::DeserializeOwned + serde::Serialize + PartialEq + std::fmt::Debug,
{
    let parsed: T = serde_json::from_str(body).unwrap_or_else(|e| panic!("does not parse ({e}): {body}"));
    let written = serde_json::to_value(&parsed).unwrap();
    let mut expected = value(body);
    strip_keys(&mut expected, ignored);
    assert_eq!(written, expected, "round trip changed the body");
    let reparsed: T = serde_json::from_value(written).unwrap();
    assert_eq!(reparsed, parsed);
    parsed
}

fn strip_keys(v: &mut Value, keys: &[&str]) {
    match v {
        Value::Object(map) => {
            for k in keys {
                map.remove(*k);
            }
            map.values_mut().for_each(|c| strip_keys(c, keys));
        }
        Value::Array(items) => items.iter_mut().for_each(|c| strip_keys(c, keys)),
        _ => {}
    }
}

/// Replies: parse, write in the matching style, parse again, same envelope.
fn assert_reply_round_trip<T>(body: &str) -> ReturnT<T>
where
    T: serde::de::DeserializeOwned + serde::Serialize + PartialEq + std::fmt::Debug,
{
    let parsed = ReturnT::<T>::from_json(body.as_bytes()).unwrap_or_else(|e| panic!("{e}: {body}"));
    for written in [parsed.to_admin_json(), parsed.to_executor_json()] {
        let again = ReturnT::<T>::from_json(written.as_bytes()).unwrap();
        assert_eq!(again, parsed, "written as {written}");
    }
    parsed
}

#[test]
fn every_captured_body_round_trips() {
    let sections = sections();
    let mut checked_requests = 0;
    let mut checked_replies = 0;
    for s in &sections {
        let request = s
            .request
            .as_deref()
            .unwrap_or_else(|| panic!("no request body in '{}'", s.heading));
        let response = s
            .response
            .as_deref()
            .unwrap_or_else(|| panic!("no response body in '{}'", s.heading));
        let h = s.heading.as_str();
        if h.contains("/api/registry") {
            let p: RegistryParam = assert_round_trip(request, &[]);
            assert_eq!(p.registry_group, "EXECUTOR");
            assert_eq!(p.registry_key, "pyxxl-probe-executor");
            assert!(!p.has_blank_field());
        } else if h.contains("/api/callback") {
            let batch: CallbackBatch = assert_round_trip(request, &["executeResult"]);
            assert_eq!(batch.0.len(), 1);
            let item = &batch.0[0];
            assert!(h.contains(&format!("logId={}", item.log_id)), "{h}");
            assert!(h.contains(&format!("handleCode={}", item.handle_code)), "{h}");
            assert!(item.log_date_tim > 1_700_000_000_000);
        } else if h.contains("POST beat") {
            assert_eq!(
                value(request),
                Value::String(String::new()),
                "beat carries the empty string"
            );
        } else if h.contains("POST idleBeat") {
            assert_round_trip::<IdleBeatParam>(request, &[]);
        } else if h.contains("POST kill") {
            let k: KillParam = assert_round_trip(request, &[]);
            assert_eq!(k.job_id, 2);
        } else if h.contains("POST run") {
            let t: TriggerParam = assert_round_trip(request, &[]);
            assert_eq!(t.glue_type, GlueType::Bean);
            assert_eq!(t.broadcast_total, 1);
            if h.contains("DISCARD_LATER") {
                assert_eq!(t.executor_block_strategy, BlockStrategy::DiscardLater);
            }
            if h.contains("executorTimeout=1") {
                assert_eq!(t.executor_timeout, 1);
            }
        } else if h.contains("POST log") {
            let p: LogParam = assert_round_trip(request, &[]);
            assert_eq!((p.log_id, p.from_line_num), (101, 1));
        } else {
            panic!("unclassified section '{h}'");
        }
        checked_requests += 1;

        if h.contains("POST log") {
            let reply = assert_reply_round_trip::<LogResult>(response);
            let log = reply.content.expect("log payload");
            assert_eq!((log.from_line_num, log.to_line_num, log.is_end), (1, 4, true));
            assert_eq!(log.log_content.lines().count(), 4);
        } else {
            let reply = assert_reply_round_trip::<String>(response);
            if h.starts_with("POST /xxl-job-admin/") {
                // The admin's reply must be byte-exact: pyxxl and Java parse it strictly.
                assert_eq!(reply.to_admin_json(), response);
            }
            if h.contains("unknown handler") || h.contains("busy") || h.contains("DISCARD_LATER") {
                assert_eq!(reply.code, FAIL_CODE, "{h}");
                assert!(reply.msg.is_some());
            } else {
                assert!(reply.is_success(), "{h}");
            }
        }
        checked_replies += 1;
    }
    // 8 executor→admin calls and 14 admin→executor calls were captured.
    assert_eq!((checked_requests, checked_replies), (22, 22));
}

#[test]
fn java_executor_reference_payloads_parse() {
    // A 2.4 Java admin's trigger, byte for byte.
    let run = r#"{"jobId":1,"executorHandler":"demoJobHandler","executorParams":"","executorBlockStrategy":"SERIAL_EXECUTION","executorTimeout":0,"logId":42,"logDateTime":1586629003729,"glueType":"BEAN","glueSource":"","glueUpdatetime":1586629003727,"broadcastIndex":0,"broadcastTotal":1}"#;
    let t: TriggerParam = assert_round_trip(run, &[]);
    assert_eq!(
        serde_json::to_string(&t).unwrap(),
        run,
        "key order and spelling as XXL-JOB's"
    );

    // Gson omits nulls and HTML-escapes: `handleMsg` absent, `<br>` as \u003cbr\u003e.
    let cb: CallbackBatch =
        serde_json::from_str(r#"[{"logId":42,"logDateTim":1586629003729,"handleCode":200}]"#).unwrap();
    assert_eq!(cb.0[0].handle_msg, None);
    assert_eq!(
        serde_json::to_string(&cb).unwrap(),
        r#"[{"logId":42,"logDateTim":1586629003729,"handleCode":200}]"#
    );
    let escaped: CallbackBatch =
        serde_json::from_str(r#"[{"logId":1,"logDateTim":1,"handleCode":500,"handleMsg":"a\u003cbr\u003eb"}]"#)
            .unwrap();
    assert_eq!(escaped.0[0].handle_msg.as_deref(), Some("a<br>b"));

    let ok = ReturnT::<String>::from_json(br#"{"code":200}"#).unwrap();
    assert!(ok.is_success());
    let log = ReturnT::<LogResult>::from_json(
        br#"{"code":200,"content":{"fromLineNum":1,"toLineNum":0,"logContent":"readLog fail, logFile not exists","isEnd":true}}"#,
    )
    .unwrap();
    assert_eq!(log.content.unwrap().log_content, messages::LOG_FILE_NOT_EXISTS);
}

#[test]
fn g3_and_g4_shapes_parse() {
    let wrapped: CallbackBatch = serde_json::from_str(
        r#"{"callbackList":[{"logId":42,"logDateTime":1586629003729,"handleCode":500,"handleMsg":"boom"}]}"#,
    )
    .unwrap();
    assert_eq!(wrapped.0[0].log_date_tim, 1586629003729);
    assert_eq!(wrapped.0[0].handle_msg.as_deref(), Some("boom"));

    let g3_log = ReturnT::<LogResult>::from_json(
        br#"{"code":200,"msg":"Success","data":{"fromLineNum":4,"toLineNum":0,"logContent":"","isEnd":false}}"#,
    )
    .unwrap();
    assert_eq!(g3_log.content.unwrap().from_line_num, 4);

    let g4_log: LogParam = serde_json::from_str(r#"{"logId":42,"logDateTime":1586629003729,"fromLineNum":4}"#).unwrap();
    assert_eq!(g4_log.log_date_tim, 1586629003729);
    // And written with each generation's date key.
    let body: Value = serde_json::from_str(&g4_log.to_json(ProtocolGeneration::G4)).unwrap();
    assert_eq!(
        body,
        serde_json::json!({"logDateTime": 1586629003729i64, "logId": 42, "fromLineNum": 4})
    );
    for g2_or_g3 in [ProtocolGeneration::G2, ProtocolGeneration::G3] {
        let body: Value = serde_json::from_str(&g4_log.to_json(g2_or_g3)).unwrap();
        assert_eq!(
            body,
            serde_json::json!({"logDateTim": 1586629003729i64, "logId": 42, "fromLineNum": 4})
        );
    }
    // The console's spelling of isEnd.
    let console: LogResult =
        serde_json::from_str(r#"{"fromLineNum":1,"toLineNum":1,"logContent":"x","end":true}"#).unwrap();
    assert!(console.is_end);
}

#[test]
fn tolerant_of_what_real_peers_send() {
    // Numbers as strings, nulls for primitives, missing optional keys.
    let t: TriggerParam = serde_json::from_str(
        r#"{"jobId":"7","executorHandler":"h","executorParams":null,"executorBlockStrategy":null,"executorTimeout":"30","logId":"9","logDateTime":1.0,"glueType":"GLUE_SHELL","extra":[1,2]}"#,
    )
    .unwrap();
    assert_eq!((t.job_id, t.log_id, t.executor_timeout), (7, 9, 30));
    assert_eq!(t.executor_params, "");
    assert_eq!(t.executor_block_strategy, BlockStrategy::SerialExecution);
    assert_eq!(t.glue_type, GlueType::GlueShell);
    assert_eq!(t.broadcast_total, 1);

    // A legacy (≤ 2.2) callback item with only executeResult.
    let legacy: CallbackBatch =
        serde_json::from_str(r#"[{"logId":3,"logDateTim":0,"executeResult":{"code":500,"msg":"old"}}]"#).unwrap();
    assert_eq!(
        (legacy.0[0].handle_code, legacy.0[0].handle_msg.as_deref()),
        (500, Some("old"))
    );

    let reg: RegistryParam =
        serde_json::from_str(r#"{"registryGroup":"EXECUTOR","registryKey":"","registryValue":null}"#).unwrap();
    assert!(reg.has_blank_field());
}

#[test]
fn bad_input_is_an_error_that_says_why() {
    let bad_block = serde_json::from_str::<TriggerParam>(r#"{"jobId":1,"executorBlockStrategy":"PARALLEL"}"#)
        .unwrap_err()
        .to_string();
    assert!(
        bad_block.contains("block strategy") && bad_block.contains("PARALLEL"),
        "{bad_block}"
    );
    let bad_glue = serde_json::from_str::<TriggerParam>(r#"{"glueType":"GLUE_COBOL"}"#)
        .unwrap_err()
        .to_string();
    assert!(bad_glue.contains("glue type"), "{bad_glue}");
    let bad_number = serde_json::from_str::<KillParam>(r#"{"jobId":"seven"}"#)
        .unwrap_err()
        .to_string();
    assert!(bad_number.contains("seven"), "{bad_number}");
    let not_batch = serde_json::from_str::<CallbackBatch>(r#"{"logId":1}"#)
        .unwrap_err()
        .to_string();
    assert!(not_batch.contains("callbackList"), "{not_batch}");
}

#[test]
fn upstream_results_are_an_extension_sent_only_when_there_are_some() {
    // A trigger without them is XXL-JOB's body exactly (checked above); with them, one more
    // key at the end, which XXL-JOB's executors ignore.
    let base = r#"{"jobId":1,"executorHandler":"shell","executorParams":"","executorBlockStrategy":"SERIAL_EXECUTION","executorTimeout":0,"logId":42,"logDateTime":1586629003729,"glueType":"BEAN","glueSource":"","glueUpdatetime":0,"broadcastIndex":0,"broadcastTotal":1}"#;
    let mut t: TriggerParam = serde_json::from_str(base).unwrap();
    assert!(t.upstream_results.is_empty());
    t.upstream_results.insert("extract".into(), "$(touch /tmp/x)".into());
    let sent: Value = serde_json::from_str(&serde_json::to_string(&t).unwrap()).unwrap();
    assert_eq!(
        sent[chime_protocol::UPSTREAM_RESULTS_KEY],
        serde_json::json!({"extract": "$(touch /tmp/x)"})
    );
    let back: TriggerParam = serde_json::from_value(sent).unwrap();
    assert_eq!(back.upstream_results, t.upstream_results);
    // From a peer that sends something else under the key: no results, the run still runs.
    let odd = base.replace(
        "\"broadcastTotal\":1",
        "\"broadcastTotal\":1,\"chimeUpstreamResults\":[1]",
    );
    let t: TriggerParam = serde_json::from_str(&odd).unwrap();
    assert!(t.upstream_results.is_empty());
}
