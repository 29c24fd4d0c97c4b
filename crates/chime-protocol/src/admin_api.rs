//! Bodies of the calls an executor makes to an admin: `/api/registry`, `/api/registryRemove`
//! and `/api/callback`.

use crate::lenient;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

/// The body of `/api/registry` and `/api/registryRemove` (XXL-JOB's `RegistryParam`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RegistryParam {
    /// Always `EXECUTOR` in practice; kept as text so a blank value can be answered with
    /// XXL-JOB's "Illegal Argument." instead of a parse error.
    #[serde(default, deserialize_with = "lenient::string")]
    pub registry_group: String,
    /// The executor's app name (its group).
    #[serde(default, deserialize_with = "lenient::string")]
    pub registry_key: String,
    /// The address the admin calls, e.g. `http://10.0.0.5:9999/` (trailing slash optional).
    #[serde(default, deserialize_with = "lenient::string")]
    pub registry_value: String,
}

impl RegistryParam {
    /// An executor registration for `app_name` reachable at `address`.
    pub fn executor(app_name: impl Into<String>, address: impl Into<String>) -> Self {
        RegistryParam {
            registry_group: crate::RegistryGroup::Executor.as_str().to_owned(),
            registry_key: app_name.into(),
            registry_value: address.into(),
        }
    }

    /// True when any field is blank: XXL-JOB answers such a call with "Illegal Argument.".
    pub fn has_blank_field(&self) -> bool {
        [&self.registry_group, &self.registry_key, &self.registry_value]
            .iter()
            .any(|s| s.trim().is_empty())
    }
}

/// One run's result as an executor reports it (XXL-JOB's `HandleCallbackParam`).
///
/// Serialized the way a 2.4 executor writes it (`logDateTim`, `handleMsg` omitted when null).
/// Parsed tolerantly: `logDateTime` (G4) is accepted, unknown keys are ignored, and a legacy
/// (XXL-JOB ≤ 2.2) item that carries only `executeResult: {code, msg}` still yields a result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HandleCallbackParam {
    /// The run's id.
    pub log_id: i64,
    /// The run's trigger time, epoch milliseconds, as the trigger carried it.
    #[serde(rename = "logDateTim")]
    pub log_date_tim: i64,
    /// 200 success, 500 failure, 502 timeout.
    pub handle_code: i32,
    /// The result message, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub handle_msg: Option<String>,
}

impl<'de> Deserialize<'de> for HandleCallbackParam {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Raw {
            #[serde(default, deserialize_with = "lenient::i64")]
            log_id: i64,
            #[serde(
                rename = "logDateTim",
                alias = "logDateTime",
                default,
                deserialize_with = "lenient::i64"
            )]
            log_date_tim: i64,
            #[serde(default)]
            handle_code: Option<Value>,
            #[serde(default, deserialize_with = "lenient::opt_string")]
            handle_msg: Option<String>,
            #[serde(default)]
            execute_result: Option<LegacyResult>,
        }
        #[derive(Deserialize)]
        struct LegacyResult {
            #[serde(default, deserialize_with = "lenient::i32")]
            code: i32,
            #[serde(default, deserialize_with = "lenient::opt_string")]
            msg: Option<String>,
        }
        let raw = Raw::deserialize(deserializer)?;
        let handle_code = match raw.handle_code {
            Some(Value::Null) | None => None,
            Some(v) => Some(lenient::i32(v).map_err(serde::de::Error::custom)?),
        };
        let (handle_code, handle_msg) = match (handle_code, raw.execute_result) {
            (Some(code), _) => (code, raw.handle_msg),
            (None, Some(legacy)) => (legacy.code, raw.handle_msg.or(legacy.msg)),
            (None, None) => (0, raw.handle_msg),
        };
        Ok(HandleCallbackParam {
            log_id: raw.log_id,
            log_date_tim: raw.log_date_tim,
            handle_code,
            handle_msg,
        })
    }
}

/// The body of `/api/callback`: a batch of results.
///
/// G2 and G3 executors send a bare JSON array; G4 wraps it as `{"callbackList":[…]}`. Both parse
/// to the same list; serialization writes the bare array.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
#[serde(transparent)]
pub struct CallbackBatch(pub Vec<HandleCallbackParam>);

impl<'de> Deserialize<'de> for CallbackBatch {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Shape {
            Bare(Vec<HandleCallbackParam>),
            Wrapped {
                #[serde(rename = "callbackList")]
                callback_list: Vec<HandleCallbackParam>,
            },
        }
        match Shape::deserialize(deserializer) {
            Ok(Shape::Bare(list) | Shape::Wrapped { callback_list: list }) => Ok(CallbackBatch(list)),
            Err(_) => Err(serde::de::Error::custom(
                "callback body must be a JSON array of {logId, logDateTim, handleCode, handleMsg} or {\"callbackList\": [...]}",
            )),
        }
    }
}
