//! Bodies of the calls an admin makes to an executor: `/run`, `/idleBeat`, `/kill`, `/log`
//! (`/beat` has no body).

use crate::enums::{BlockStrategy, GlueType, ProtocolGeneration};
use crate::lenient;
use serde::{Deserialize, Deserializer, Serialize};
use std::collections::BTreeMap;

/// The key of Chime's extension of [`TriggerParam`]: a workflow node's upstream results.
pub const UPSTREAM_RESULTS_KEY: &str = "chimeUpstreamResults";

/// The body of `POST /run`: one trigger of one job (XXL-JOB's `TriggerParam`).
///
/// Keys and their order are XXL-JOB 2.4's, so a Java executor that logs the raw body sees what
/// it would from XXL-JOB. `logDateTime` is the trigger time; the executor files the run's log
/// under that day, and echoes it back in the callback as `logDateTim`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TriggerParam {
    /// The job's id.
    #[serde(default, deserialize_with = "lenient::i64")]
    pub job_id: i64,
    /// Name of the BEAN handler to run (ignored for script jobs).
    #[serde(default, deserialize_with = "lenient::string")]
    pub executor_handler: String,
    /// The job parameter (the plural key is XXL-JOB's).
    #[serde(default, deserialize_with = "lenient::string")]
    pub executor_params: String,
    /// What to do when the job is already running on this executor.
    #[serde(default, deserialize_with = "block_strategy_or_default")]
    pub executor_block_strategy: BlockStrategy,
    /// Seconds the run may take; 0 or less means no limit.
    #[serde(default, deserialize_with = "lenient::i32")]
    pub executor_timeout: i32,
    /// The run's id (a run row in the admin); names the run's log file.
    #[serde(default, deserialize_with = "lenient::i64")]
    pub log_id: i64,
    /// Trigger time, epoch milliseconds.
    #[serde(default, deserialize_with = "lenient::i64")]
    pub log_date_time: i64,
    /// BEAN for a registered handler, otherwise the script language.
    #[serde(default = "bean", deserialize_with = "glue_type_or_bean")]
    pub glue_type: GlueType,
    /// The script source for GLUE types.
    #[serde(default, deserialize_with = "lenient::string")]
    pub glue_source: String,
    /// Version stamp of the script source, epoch milliseconds.
    #[serde(default, deserialize_with = "lenient::i64")]
    pub glue_updatetime: i64,
    /// Shard index, from 0.
    #[serde(default, deserialize_with = "lenient::i32")]
    pub broadcast_index: i32,
    /// Number of shards; 1 when not broadcasting.
    #[serde(default = "one", deserialize_with = "lenient::i32")]
    pub broadcast_total: i32,
    /// Chime's extension (key [`UPSTREAM_RESULTS_KEY`]): for a workflow node's run, the
    /// results of its upstream nodes by node key, as data. Sent only when there are some, so
    /// every other trigger's body is XXL-JOB's byte for byte; XXL-JOB's executors (Gson,
    /// pyxxl's field filter) ignore a key they do not know. Anything but an object of strings
    /// reads as none: it is information for the handler, never a reason to refuse the run.
    #[serde(
        rename = "chimeUpstreamResults",
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "string_map_or_empty"
    )]
    pub upstream_results: BTreeMap<String, String>,
}

fn string_map_or_empty<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<String, String>, D::Error> {
    let value = serde_json::Value::deserialize(d)?;
    Ok(serde_json::from_value(value).unwrap_or_default())
}

fn bean() -> GlueType {
    GlueType::Bean
}

fn one() -> i32 {
    1
}

fn block_strategy_or_default<'de, D: Deserializer<'de>>(d: D) -> Result<BlockStrategy, D::Error> {
    Ok(crate::enums::opt_enum(d)?.unwrap_or_default())
}

fn glue_type_or_bean<'de, D: Deserializer<'de>>(d: D) -> Result<GlueType, D::Error> {
    Ok(crate::enums::opt_enum(d)?.unwrap_or(GlueType::Bean))
}

/// The body of `POST /idleBeat`: is this job busy on this executor?
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IdleBeatParam {
    /// The job's id.
    #[serde(default, deserialize_with = "lenient::i64")]
    pub job_id: i64,
}

/// The body of `POST /kill`: stop whatever run of this job the executor is processing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KillParam {
    /// The job's id.
    #[serde(default, deserialize_with = "lenient::i64")]
    pub job_id: i64,
}

/// The body of `POST /log`: read a run's log from a line on.
///
/// Serialized with G2's key `logDateTim`; parsed from `logDateTim` or G4's `logDateTime`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LogParam {
    /// Trigger time of the run, epoch milliseconds (locates the day directory).
    #[serde(
        rename = "logDateTim",
        alias = "logDateTime",
        default,
        deserialize_with = "lenient::i64"
    )]
    pub log_date_tim: i64,
    /// The run's id.
    #[serde(default, deserialize_with = "lenient::i64")]
    pub log_id: i64,
    /// First line wanted, counting from 1.
    #[serde(default = "one", deserialize_with = "lenient::i32")]
    pub from_line_num: i32,
}

impl LogParam {
    /// The request body as `generation` expects it: XXL-JOB 3.5 (G4) renamed the date key to
    /// `logDateTime`, and an executor that reads the other key looks in the wrong day's
    /// directory and answers "logFile not exists".
    pub fn to_json(&self, generation: ProtocolGeneration) -> String {
        let date_key = match generation {
            ProtocolGeneration::G2 | ProtocolGeneration::G3 => "logDateTim",
            ProtocolGeneration::G4 => "logDateTime",
        };
        let mut body = serde_json::Map::with_capacity(3);
        body.insert(date_key.to_owned(), self.log_date_tim.into());
        body.insert("logId".to_owned(), self.log_id.into());
        body.insert("fromLineNum".to_owned(), self.from_line_num.into());
        serde_json::Value::Object(body).to_string()
    }
}

/// The payload of a `/log` reply: a slice of the run's log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LogResult {
    /// First line number of this slice.
    #[serde(default, deserialize_with = "lenient::i32")]
    pub from_line_num: i32,
    /// Last line number of this slice (G2: last line of the file).
    #[serde(default, deserialize_with = "lenient::i32")]
    pub to_line_num: i32,
    /// The lines, each ending in `\n`.
    #[serde(default, deserialize_with = "lenient::string")]
    pub log_content: String,
    /// True once the log is complete. (`end` is the key XXL-JOB's console uses.)
    #[serde(alias = "end", default, deserialize_with = "lenient::bool")]
    pub is_end: bool,
}
