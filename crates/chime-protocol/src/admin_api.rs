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
    /// Chime's extension, absent from XXL-JOB's executors: which process this is. A new value
    /// at the same address tells the admin that the executor restarted, so runs the earlier
    /// process accepted and never reported are lost. XXL-JOB admins ignore unknown keys.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance: Option<ExecutorInstance>,
}

/// One executor process, as a Chime executor describes itself in each registration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecutorInstance {
    /// Random per process, the same in every registration the process sends.
    pub id: String,
    /// Milliseconds since the process started serving runs. The admin subtracts it from the
    /// time the registration arrived, so no clock is compared across machines: a run sent
    /// before that moment was accepted by an earlier process at this address.
    pub uptime_ms: u64,
    /// The names of the handlers this process runs (at most [`MAX_REPORTED_HANDLERS`], each a
    /// handler name as a job may give it), so the admin can suggest them when a job is made.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub handlers: Vec<String>,
}

impl RegistryParam {
    /// An executor registration for `app_name` reachable at `address`.
    pub fn executor(app_name: impl Into<String>, address: impl Into<String>) -> Self {
        RegistryParam {
            registry_group: crate::RegistryGroup::Executor.as_str().to_owned(),
            registry_key: app_name.into(),
            registry_value: address.into(),
            instance: None,
        }
    }

    /// True when any field is blank: XXL-JOB answers such a call with "Illegal Argument.".
    pub fn has_blank_field(&self) -> bool {
        [&self.registry_group, &self.registry_key, &self.registry_value]
            .iter()
            .any(|s| s.trim().is_empty())
    }

    /// Checks the sizes and characters of the fields (blank fields are [`has_blank_field`]'s
    /// business): the app name and `registryGroup` at most [`MAX_APP_NAME_CHARS`], the address
    /// at most [`MAX_ADDRESS_CHARS`], no control characters in them (trimmed, as the admin keeps
    /// them), and an instance id of 1 to [`MAX_INSTANCE_ID_CHARS`] characters `A-Z a-z 0-9 _ -`.
    ///
    /// An admin checks this before it stores or keeps anything of a registration: the widths are
    /// those of XXL-JOB's tables, which SQLite does not enforce, and a registration is repeated
    /// every heartbeat, so one oversized value would be held in memory and in the database for
    /// as long as its sender keeps beating.
    ///
    /// [`has_blank_field`]: RegistryParam::has_blank_field
    pub fn validate(&self) -> Result<(), RegistryParamError> {
        check_text("registryGroup", &self.registry_group, MAX_APP_NAME_CHARS)?;
        check_text("registryKey", &self.registry_key, MAX_APP_NAME_CHARS)?;
        check_text("registryValue", &self.registry_value, MAX_ADDRESS_CHARS)?;
        if let Some(instance) = &self.instance {
            let id = &instance.id;
            let fits = !id.is_empty()
                && id.len() <= MAX_INSTANCE_ID_CHARS
                && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
            if !fits {
                return Err(RegistryParamError::InstanceId);
            }
            if instance.handlers.len() > MAX_REPORTED_HANDLERS {
                return Err(RegistryParamError::TooManyHandlers);
            }
            for name in &instance.handlers {
                check_text("instance.handlers", name, MAX_HANDLER_NAME_CHARS)?;
            }
        }
        Ok(())
    }
}

/// Longest app name (`registryKey`) and `registryGroup`, in characters: the width of the app
/// name column in XXL-JOB's tables and Chime's.
pub const MAX_APP_NAME_CHARS: usize = 64;

/// Longest executor address (`registryValue`), in characters: the width of the address column.
pub const MAX_ADDRESS_CHARS: usize = 255;

/// Longest instance id a Chime executor may send (it sends 32 hex digits).
pub const MAX_INSTANCE_ID_CHARS: usize = 64;

/// Most handler names one registration may carry: the registration is repeated every
/// heartbeat and its names are held in memory for as long as the executor beats.
pub const MAX_REPORTED_HANDLERS: usize = 100;

/// Longest handler name, in characters: the width of a job's handler.
pub const MAX_HANDLER_NAME_CHARS: usize = 255;

/// Why a registration was refused by [`RegistryParam::validate`]. The message names the field
/// and the rule, never the value: a refused value may be megabytes long, or made to forge log
/// lines.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistryParamError {
    /// A field is longer than its column.
    #[error("{field} is longer than {max} characters")]
    TooLong {
        /// The field's name on the wire.
        field: &'static str,
        /// Its limit.
        max: usize,
    },
    /// A field holds a control character (a line break, say).
    #[error("{field} must not contain control characters")]
    ControlCharacter {
        /// The field's name on the wire.
        field: &'static str,
    },
    /// The instance id is empty, too long, or has other characters than `A-Z a-z 0-9 _ -`.
    #[error("instance.id must be 1 to {MAX_INSTANCE_ID_CHARS} characters of A-Z, a-z, 0-9, '_' and '-'")]
    InstanceId,
    /// More handler names than [`MAX_REPORTED_HANDLERS`].
    #[error("instance.handlers must list at most {MAX_REPORTED_HANDLERS} names")]
    TooManyHandlers,
}

/// `value`, trimmed as the admin keeps it, is at most `max` characters without control ones.
fn check_text(field: &'static str, value: &str, max: usize) -> Result<(), RegistryParamError> {
    let value = value.trim();
    // Counting stops past the limit: a value of megabytes costs no more than a short one.
    if value.chars().nth(max).is_some() {
        return Err(RegistryParamError::TooLong { field, max });
    }
    if value.chars().any(char::is_control) {
        return Err(RegistryParamError::ControlCharacter { field });
    }
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;

    fn param(key: &str, value: &str) -> RegistryParam {
        RegistryParam::executor(key, value)
    }

    #[test]
    fn registrations_within_the_column_widths_pass() {
        let mut p = param(&"a".repeat(64), &format!("http://{}", "h".repeat(248)));
        assert_eq!(p.registry_value.chars().count(), 255);
        p.instance = Some(ExecutorInstance {
            id: format!("{}-_", "Az09".repeat(15)),
            uptime_ms: u64::MAX,
            handlers: (0..MAX_REPORTED_HANDLERS)
                .map(|i| format!("{i}{}", "h".repeat(MAX_HANDLER_NAME_CHARS - 3)))
                .collect(),
        });
        assert_eq!(p.validate(), Ok(()));
        // Counted in characters, as the databases count VARCHAR widths, and trimmed, as kept.
        assert_eq!(
            param(&format!(" {} ", "é".repeat(64)), "http://h:1/\n").validate(),
            Ok(())
        );
    }

    #[test]
    fn oversized_fields_are_refused_by_name() {
        let too_long = |field, max| Err(RegistryParamError::TooLong { field, max });
        assert_eq!(
            param(&"a".repeat(65), "http://h:1").validate(),
            too_long("registryKey", 64)
        );
        assert_eq!(
            param("app", &format!("http://{}", "h".repeat(249))).validate(),
            too_long("registryValue", 255)
        );
        let mut p = param("app", "http://h:1");
        p.registry_group = "E".repeat(65);
        assert_eq!(p.validate(), too_long("registryGroup", 64));
        let msg = param(&"k".repeat(10 << 20), "http://h:1")
            .validate()
            .unwrap_err()
            .to_string();
        assert_eq!(
            msg, "registryKey is longer than 64 characters",
            "the value is not echoed"
        );
    }

    #[test]
    fn control_characters_are_refused() {
        for (key, value, field) in [
            ("a\u{0}pp", "http://h:1", "registryKey"),
            ("app", "http://h:1/\r\nX-Forged: 1", "registryValue"),
            ("a\u{7f}", "http://h:1", "registryKey"),
        ] {
            assert_eq!(
                param(key, value).validate(),
                Err(RegistryParamError::ControlCharacter { field }),
                "{key:?} {value:?}"
            );
        }
    }

    #[test]
    fn instance_ids_are_short_and_plain() {
        for id in ["", "has space", "dot.ted", "ünï", &"x".repeat(65)] {
            let mut p = param("app", "http://h:1");
            p.instance = Some(ExecutorInstance {
                id: id.to_owned(),
                uptime_ms: 1,
                handlers: Vec::new(),
            });
            assert_eq!(p.validate(), Err(RegistryParamError::InstanceId), "{id:?}");
        }
    }

    #[test]
    fn reported_handlers_are_bounded() {
        let with = |handlers: Vec<String>| {
            let mut p = param("app", "http://h:1");
            p.instance = Some(ExecutorInstance {
                id: "one".to_owned(),
                uptime_ms: 1,
                handlers,
            });
            p.validate()
        };
        assert_eq!(
            with(vec!["h".to_owned(); MAX_REPORTED_HANDLERS + 1]),
            Err(RegistryParamError::TooManyHandlers)
        );
        assert_eq!(
            with(vec!["h".repeat(MAX_HANDLER_NAME_CHARS + 1)]),
            Err(RegistryParamError::TooLong {
                field: "instance.handlers",
                max: MAX_HANDLER_NAME_CHARS
            })
        );
        assert_eq!(
            with(vec!["a\nb".to_owned()]),
            Err(RegistryParamError::ControlCharacter {
                field: "instance.handlers"
            })
        );
        // XXL-JOB admins and older Chime admins see no new key when there is nothing to say.
        let empty = serde_json::to_value(ExecutorInstance {
            id: "one".to_owned(),
            uptime_ms: 1,
            handlers: Vec::new(),
        })
        .unwrap();
        assert_eq!(empty, serde_json::json!({"id": "one", "uptimeMs": 1}));
    }
}
