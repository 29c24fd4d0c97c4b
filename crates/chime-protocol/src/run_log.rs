//! Chime's extension of the admin API: a finished run's log, sent by the executor so that the
//! admin keeps it when the executor (and its disk) is gone. XXL-JOB admins do not know this
//! endpoint and answer it with `code: 500` ([`crate::messages::uri_not_found`]); an executor
//! takes that as "not kept here" and stops sending.

use serde::{Deserialize, Serialize};

/// The most of one run's log an executor sends by default: the last 1 MiB. The admin keeps
/// at most this much per run whatever it is sent.
pub const MAX_RUN_LOG_BYTES: usize = 1024 * 1024;

/// Body of `POST /api/runLog`: the log of one finished run, or its end when it was longer than
/// the sender's cap.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunLogParam {
    /// The app name the executor registers under: the admin keeps the log only when the run
    /// belongs to that app name's group.
    pub app_name: String,
    /// The run's id (`logId` of its trigger).
    pub log_id: i64,
    /// The run's trigger time, epoch milliseconds, as the trigger carried it.
    #[serde(rename = "logDateTim", alias = "logDateTime", default)]
    pub log_date_tim: i64,
    /// The log's text (UTF-8; invalid bytes replaced). When `truncated`, only its end.
    pub log_content: String,
    /// True when the start of the log was cut off to fit the cap.
    #[serde(default)]
    pub truncated: bool,
    /// Size of the whole log in bytes, before any cut.
    #[serde(default)]
    pub total_bytes: u64,
}

impl RunLogParam {
    /// The run's log `bytes` cut to its last `cap` bytes (at a character boundary, after a
    /// line break when one is near), so that the end of a long run — where its failure usually
    /// is — is what is kept.
    pub fn from_log(app_name: &str, log_id: i64, log_date_tim: i64, bytes: &[u8], cap: usize) -> RunLogParam {
        let total = bytes.len();
        let mut start = total.saturating_sub(cap);
        if start > 0 {
            // Start at the next line when one begins within the first 4 KiB kept: a whole
            // first line reads better than half of one.
            // A last line longer than the cap is kept as its end instead.
            if let Some(nl) = bytes[start..].iter().take(4096).position(|&b| b == b'\n') {
                if start + nl + 1 < total {
                    start += nl + 1;
                }
            }
            // Never start inside a UTF-8 sequence.
            while start < total && (bytes[start] & 0b1100_0000) == 0b1000_0000 {
                start += 1;
            }
        }
        RunLogParam {
            app_name: app_name.to_owned(),
            log_id,
            log_date_tim,
            log_content: String::from_utf8_lossy(&bytes[start..]).into_owned(),
            truncated: start > 0,
            total_bytes: total as u64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_log_keeps_its_end_from_a_line_start() {
        let log = b"first line\nsecond line\nthird line\n";
        let whole = RunLogParam::from_log("app", 1, 2, log, 1000);
        assert_eq!(whole.log_content.as_bytes(), log);
        assert!(!whole.truncated);
        let cut = RunLogParam::from_log("app", 1, 2, log, 20);
        assert!(cut.truncated);
        assert_eq!(cut.log_content, "third line\n");
        assert_eq!(cut.total_bytes, log.len() as u64);
    }

    #[test]
    fn a_last_line_longer_than_the_cap_keeps_its_end() {
        let log = b"short\na very long last line\n";
        let cut = RunLogParam::from_log("app", 1, 2, log, 10);
        assert!(cut.truncated);
        assert_eq!(cut.log_content, "last line\n");
    }

    #[test]
    fn a_cut_never_splits_a_character() {
        let log = "ééééé".as_bytes();
        let cut = RunLogParam::from_log("app", 1, 2, log, 5);
        assert!(cut.truncated);
        assert_eq!(cut.log_content, "éé");
    }

    #[test]
    fn the_wire_names_are_camel_case() {
        let p = RunLogParam::from_log("app", 7, 8, b"x", 10);
        let json = serde_json::to_value(&p).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"appName": "app", "logId": 7, "logDateTim": 8, "logContent": "x", "truncated": false, "totalBytes": 1})
        );
    }
}
