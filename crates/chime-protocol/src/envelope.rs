//! The reply envelope every XXL-JOB call answers with: `{"code","msg","content"}` (G2) or
//! `{"code","msg","data"}` (G3 and later).

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `code` for success.
pub const SUCCESS_CODE: i32 = 200;
/// `code` for failure.
pub const FAIL_CODE: i32 = 500;
/// `handleCode` a Java executor reports when `executorTimeout` expired.
pub const TIMEOUT_CODE: i32 = 502;

/// XXL-JOB's `ReturnT`: a code, an optional message and an optional payload.
///
/// Two JSON styles exist in the field and peers depend on each: XXL-JOB's admin (Jackson)
/// writes nulls (`{"code":200,"msg":null,"content":null}`), its executor (Gson) omits them
/// (`{"code":200}`). [`ReturnT::to_admin_json`] and [`ReturnT::to_executor_json`] produce each.
/// Parsing accepts both, takes the payload from `content` or, failing that, `data`, and
/// accepts a `code` sent as a string.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReturnT<T> {
    /// 200 on success, 500 (or another code) on failure.
    pub code: i32,
    /// A human-readable message; for failures, the reason.
    pub msg: Option<String>,
    /// The payload: a string for most calls, a [`crate::LogResult`] for `/log`.
    pub content: Option<T>,
}

impl<T> ReturnT<T> {
    /// Success without a message or payload.
    pub fn success() -> Self {
        ReturnT {
            code: SUCCESS_CODE,
            msg: None,
            content: None,
        }
    }

    /// Success with a message (e.g. `/kill` when nothing ran: "job thread already killed.").
    pub fn success_msg(msg: impl Into<String>) -> Self {
        ReturnT {
            code: SUCCESS_CODE,
            msg: Some(msg.into()),
            content: None,
        }
    }

    /// Success carrying a payload.
    pub fn with_content(content: T) -> Self {
        ReturnT {
            code: SUCCESS_CODE,
            msg: None,
            content: Some(content),
        }
    }

    /// Failure (code 500) with the reason.
    pub fn fail(msg: impl Into<String>) -> Self {
        ReturnT {
            code: FAIL_CODE,
            msg: Some(msg.into()),
            content: None,
        }
    }

    /// True when `code` is 200, the only test XXL-JOB's own clients apply.
    pub fn is_success(&self) -> bool {
        self.code == SUCCESS_CODE
    }
}

impl<T: Serialize> ReturnT<T> {
    /// Jackson style, nulls written out: what an XXL-JOB admin answers on `/api/*`.
    pub fn to_admin_json(&self) -> String {
        // Serializing plain data into a String cannot fail.
        serde_json::to_string(self).expect("ReturnT serializes")
    }

    /// XXL-JOB 3.x style, nulls written out and the payload under `data`
    /// (`{"code":200,"msg":null,"data":"7"}`): what an XXL-JOB 3.5 admin answers on its job API.
    pub fn to_data_json(&self) -> String {
        #[derive(Serialize)]
        struct Data<'a, T> {
            code: i32,
            msg: Option<&'a str>,
            data: Option<&'a T>,
        }
        let data = Data {
            code: self.code,
            msg: self.msg.as_deref(),
            data: self.content.as_ref(),
        };
        serde_json::to_string(&data).expect("ReturnT serializes")
    }

    /// Gson style, nulls omitted: what an XXL-JOB 2.4 executor answers (`{"code":200}`).
    pub fn to_executor_json(&self) -> String {
        #[derive(Serialize)]
        struct Compact<'a, T> {
            code: i32,
            #[serde(skip_serializing_if = "Option::is_none")]
            msg: Option<&'a str>,
            #[serde(skip_serializing_if = "Option::is_none")]
            content: Option<&'a T>,
        }
        let compact = Compact {
            code: self.code,
            msg: self.msg.as_deref(),
            content: self.content.as_ref(),
        };
        serde_json::to_string(&compact).expect("ReturnT serializes")
    }
}

/// Why a reply body could not be understood.
#[derive(Debug, thiserror::Error)]
#[error("reply is not an XXL-JOB envelope: {0}")]
pub struct EnvelopeError(#[from] serde_json::Error);

impl<T: DeserializeOwned> ReturnT<T> {
    /// Parses a reply from either generation: payload from `content`, else from `data`.
    ///
    /// pyxxl sends both keys at once, so a plain serde alias (which rejects duplicates) would not do.
    pub fn from_json(body: &[u8]) -> Result<Self, EnvelopeError> {
        #[derive(Deserialize)]
        struct Raw {
            #[serde(default, deserialize_with = "crate::lenient::i32")]
            code: i32,
            #[serde(default, deserialize_with = "crate::lenient::opt_string")]
            msg: Option<String>,
            #[serde(default)]
            content: Option<Value>,
            #[serde(default)]
            data: Option<Value>,
        }
        // serde would also read a struct from a JSON array; an envelope is always an object.
        let value: Value = serde_json::from_slice(body)?;
        if !value.is_object() {
            return Err(EnvelopeError(serde::de::Error::custom("expected a JSON object")));
        }
        let raw: Raw = serde_json::from_value(value)?;
        let payload = match (raw.content, raw.data) {
            (Some(Value::Null) | None, Some(data)) => Some(data),
            (content, _) => content,
        };
        let content = match payload {
            None | Some(Value::Null) => None,
            Some(value) => Some(serde_json::from_value(value)?),
        };
        Ok(ReturnT {
            code: raw.code,
            msg: raw.msg,
            content,
        })
    }
}

impl<'de, T: DeserializeOwned> Deserialize<'de> for ReturnT<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        let bytes = serde_json::to_vec(&value).map_err(serde::de::Error::custom)?;
        ReturnT::from_json(&bytes).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admin_style_writes_nulls_executor_style_omits_them() {
        let ok: ReturnT<String> = ReturnT::success();
        assert_eq!(ok.to_admin_json(), r#"{"code":200,"msg":null,"content":null}"#);
        assert_eq!(ok.to_executor_json(), r#"{"code":200}"#);
        let fail: ReturnT<String> = ReturnT::fail("The access token is wrong.");
        assert_eq!(
            fail.to_executor_json(),
            r#"{"code":500,"msg":"The access token is wrong."}"#
        );
    }

    #[test]
    fn data_style_names_the_payload_data() {
        assert_eq!(
            ReturnT::with_content("7".to_owned()).to_data_json(),
            r#"{"code":200,"msg":null,"data":"7"}"#
        );
        let fail: ReturnT<String> = ReturnT::fail("no");
        assert_eq!(fail.to_data_json(), r#"{"code":500,"msg":"no","data":null}"#);
    }

    #[test]
    fn parses_g2_g3_and_string_codes() {
        let g2: ReturnT<String> = ReturnT::from_json(br#"{"code":200,"content":"x"}"#).unwrap();
        assert_eq!(g2.content.as_deref(), Some("x"));
        let g3: ReturnT<String> = ReturnT::from_json(br#"{"code":200,"msg":"Success","data":"y"}"#).unwrap();
        assert_eq!(g3.content.as_deref(), Some("y"));
        let stringly: ReturnT<String> = ReturnT::from_json(br#"{"code":"500","msg":"no"}"#).unwrap();
        assert_eq!(stringly.code, 500);
        assert!(!stringly.is_success());
        let missing: ReturnT<String> = ReturnT::from_json(br#"{"code":200,"msg":null}"#).unwrap();
        assert_eq!(missing.content, None);
    }

    #[test]
    fn rejects_bodies_that_are_not_envelopes() {
        assert!(ReturnT::<String>::from_json(b"<html>").is_err());
        assert!(ReturnT::<String>::from_json(b"[1,2]").is_err());
    }
}
