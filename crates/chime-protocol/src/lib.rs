//! XXL-JOB's wire protocol as Rust types, shared by Chime's scheduling center and its executor SDK.
//!
//! Chime speaks XXL-JOB 2.4's protocol ("G2") so that executors already in production (Java
//! `xxl-job-core`, Python `pyxxl`, Go, …) work against Chime's admin unchanged, and Chime's SDK
//! works against an XXL-JOB admin. This crate holds only types and constants — no I/O:
//!
//! - [`ReturnT`]: the `{code, msg, content}` envelope every reply uses (G3's `data` accepted too);
//! - admin → executor bodies: [`TriggerParam`] (`/run`), [`IdleBeatParam`], [`KillParam`],
//!   [`LogParam`] and its answer [`LogResult`];
//! - executor → admin bodies: [`RegistryParam`], [`HandleCallbackParam`], [`CallbackBatch`];
//! - the enums stored and sent as strings ([`RouteStrategy`], [`BlockStrategy`], [`GlueType`], …);
//! - the literal messages peers match on ([`messages`]) and endpoint [`paths`];
//! - XXL-JOB 3.5's job API bodies ([`JobAddRequest`], [`JobUpdateRequest`], …);
//! - Chime's executor link, a WebSocket an executor opens to the admin ([`link`]);
//! - an error written out with its causes, as both sides put their HTTP clients' failures in
//!   messages ([`error_text::with_causes`]).
//!
//! Parsing is tolerant the way real peers need: unknown keys are ignored (pyxxl adds
//! `executeResult`), `null` and missing fields take Gson's defaults, numbers may arrive as
//! strings, and both generations' key spellings (`logDateTim`/`logDateTime`, bare callback
//! array/`callbackList`) are accepted.
//!
//! ```
//! use chime_protocol::{CallbackBatch, ReturnT};
//! let batch: CallbackBatch = serde_json::from_str(
//!     r#"[{"logId":101,"logDateTim":1795345165810,"handleCode":200,"handleMsg":"ok","executeResult":{"code":200}}]"#,
//! ).unwrap();
//! assert_eq!(batch.0[0].log_id, 101);
//! assert_eq!(ReturnT::<String>::success().to_admin_json(), r#"{"code":200,"msg":null,"content":null}"#);
//! ```
#![deny(missing_docs)]

mod admin_api;
mod enums;
mod envelope;
pub mod error_text;
mod executor_api;
mod job_api;
pub mod lenient;
pub mod link;
pub mod messages;
pub mod paths;
mod run_log;

pub use admin_api::{
    CallbackBatch, ExecutorInstance, HandleCallbackParam, RegistryParam, RegistryParamError, MAX_ADDRESS_CHARS,
    MAX_APP_NAME_CHARS, MAX_HANDLER_NAME_CHARS, MAX_INSTANCE_ID_CHARS, MAX_REPORTED_HANDLERS,
};
pub use enums::{
    BlockStrategy, GlueType, MisfireStrategy, ProtocolGeneration, RegistryGroup, RouteStrategy, ScheduleType,
    TriggerType, UnknownVariant,
};
pub use envelope::{EnvelopeError, ReturnT, FAIL_CODE, SUCCESS_CODE, TIMEOUT_CODE};
pub use executor_api::{IdleBeatParam, KillParam, LogParam, LogResult, TriggerParam, UPSTREAM_RESULTS_KEY};
pub use job_api::{
    is_job_api_uri, JobAddRequest, JobFields, JobOperateRequest, JobTriggerRequest, JobUpdateRequest, JOB_API_URIS,
};
pub use run_log::{RunLogParam, MAX_RUN_LOG_BYTES};
