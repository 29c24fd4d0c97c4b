//! Deserializers that accept what real XXL-JOB peers send, not only what they should send.
//!
//! Gson (the Java executor's and admin's JSON library) coerces freely: a number may arrive as a
//! string (`"logId":"42"`), a string field may carry a number, and a missing or `null` primitive
//! becomes zero. Rejecting such a body would drop a callback or a trigger over a formatting detail,
//! so every numeric and string field of the wire types goes through these functions.

use serde::de::{self, Deserializer, Visitor};
use std::fmt;

/// An `i64` from a JSON number, a numeric string, or `null` (→ 0).
pub fn i64<'de, D: Deserializer<'de>>(deserializer: D) -> Result<i64, D::Error> {
    deserializer.deserialize_any(I64Visitor)
}

/// An `i32` from a JSON number, a numeric string, or `null` (→ 0); out-of-range values are an error.
pub fn i32<'de, D: Deserializer<'de>>(deserializer: D) -> Result<i32, D::Error> {
    let wide = deserializer.deserialize_any(I64Visitor)?;
    i32::try_from(wide).map_err(|_| de::Error::custom(format!("{wide} does not fit in a 32-bit integer")))
}

/// An `Option<i64>` from a JSON number or a numeric string; `null`, a missing key or a blank
/// string is `None` (so "not given" can differ from 0).
pub fn opt_i64<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<i64>, D::Error> {
    let given: Option<serde_json::Value> = serde::Deserialize::deserialize(deserializer)?;
    match given {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(serde_json::Value::String(s)) if s.trim().is_empty() => Ok(None),
        Some(v) => I64Visitor.visit_value(v).map(Some),
    }
}

/// A `String` from a JSON string, a number or boolean (written out as text), or `null` (→ empty).
pub fn string<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    deserializer
        .deserialize_any(StringVisitor)
        .map(Option::unwrap_or_default)
}

/// An `Option<String>` from a JSON string, a number or boolean (as text), or `null` (→ `None`).
pub fn opt_string<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<String>, D::Error> {
    deserializer.deserialize_any(StringVisitor)
}

/// A `bool` from `true`/`false`, `"true"`/`"false"`, `0`/`1`, or `null` (→ false).
pub fn bool<'de, D: Deserializer<'de>>(deserializer: D) -> Result<bool, D::Error> {
    deserializer.deserialize_any(BoolVisitor)
}

struct I64Visitor;

impl I64Visitor {
    /// Reads an already parsed value with the same rules as a streamed one.
    fn visit_value<E: de::Error>(self, v: serde_json::Value) -> Result<i64, E> {
        use serde_json::Value;
        match v {
            Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
                (Some(i), _, _) => self.visit_i64(i),
                (None, Some(u), _) => self.visit_u64(u),
                (None, None, Some(f)) => self.visit_f64(f),
                _ => Err(E::custom("not a number")),
            },
            Value::String(s) => self.visit_str(&s),
            Value::Bool(b) => self.visit_bool(b),
            Value::Null => self.visit_unit(),
            other => Err(E::custom(format!("expected an integer, found {other}"))),
        }
    }
}

impl Visitor<'_> for I64Visitor {
    type Value = i64;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an integer, or a string holding one")
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<i64, E> {
        Ok(v)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<i64, E> {
        i64::try_from(v).map_err(|_| E::custom(format!("{v} is too large")))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<i64, E> {
        // Some clients write every number as a double (`42.0`); only whole values are meaningful.
        if v.fract() == 0.0 && v.is_finite() && v.abs() < 9.0e15 {
            Ok(v as i64)
        } else {
            Err(E::custom(format!("{v} is not a whole number")))
        }
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<i64, E> {
        let trimmed = v.trim();
        if trimmed.is_empty() {
            return Ok(0);
        }
        trimmed
            .parse::<i64>()
            .map_err(|_| E::custom(format!("'{v}' is not an integer")))
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<i64, E> {
        Err(E::custom(format!("expected an integer, found the boolean {v}")))
    }

    fn visit_unit<E: de::Error>(self) -> Result<i64, E> {
        Ok(0)
    }

    fn visit_none<E: de::Error>(self) -> Result<i64, E> {
        Ok(0)
    }
}

struct StringVisitor;

impl Visitor<'_> for StringVisitor {
    type Value = Option<String>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Some(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(Some(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(Some(v.to_string()))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(Some(v.to_string()))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Ok(Some(v.to_string()))
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
        Ok(Some(v.to_string()))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
}

struct BoolVisitor;

impl Visitor<'_> for BoolVisitor {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a boolean")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<bool, E> {
        Ok(v)
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<bool, E> {
        Ok(v != 0)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<bool, E> {
        Ok(v != 0)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<bool, E> {
        match v.trim() {
            "true" | "1" => Ok(true),
            "false" | "0" | "" => Ok(false),
            other => Err(E::custom(format!("'{other}' is not a boolean"))),
        }
    }

    fn visit_unit<E: de::Error>(self) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_none<E: de::Error>(self) -> Result<bool, E> {
        Ok(false)
    }
}
