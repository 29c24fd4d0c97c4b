//! What an edit changed, for the audit log. The console saves a job with its whole form, so
//! the request body names every field whether it changed or not; the audit log records instead
//! the fields whose stored value differs before and after the change, each with both values,
//! secrets masked.

use crate::center::Admin;
use serde_json::{json, Map, Value};

/// Fields that the admin keeps by itself (times it records, the partition it assigns): they
/// change on every save, and are no part of what a user edited.
fn bookkeeping(field: &str) -> bool {
    field.ends_with("_at") || field == "partition"
}

/// Values never written to the audit log, only that they changed.
fn secret(field: &str) -> bool {
    ["password", "token", "secret"].iter().any(|s| field.contains(s))
}

/// Longest value kept, in characters (a GLUE script can be large).
const MAX_VALUE_CHARS: usize = 2000;

/// The stored object an edit acts on, as the API shows it, when the audit log records the
/// edit's changes: a job (`PUT` or `PATCH /v1/jobs/{id}`). `None` for any other route, or when
/// the object cannot be read (the edit itself then fails, or is audited without changes).
pub async fn snapshot(admin: &Admin, action: &str, id: Option<&str>) -> Option<Value> {
    match action {
        "PUT /v1/jobs/{id}" | "PATCH /v1/jobs/{id}" => {
            let id: i64 = id?.parse().ok()?;
            serde_json::to_value(admin.store.job(id).await.ok()?).ok()
        }
        _ => None,
    }
}

/// The fields whose values differ between `before` and `after` (two objects), as
/// `{field: {"before": …, "after": …}}`: secrets as `***`, long values cut.
pub fn changes(before: &Value, after: &Value) -> Value {
    let (Some(before), Some(after)) = (before.as_object(), after.as_object()) else {
        return Value::Object(Map::new());
    };
    let mut out = Map::new();
    for (field, new) in after {
        let old = before.get(field).unwrap_or(&Value::Null);
        if old == new || bookkeeping(field) {
            continue;
        }
        let shown = |v: &Value| if secret(field) { json!("***") } else { shortened(v) };
        out.insert(field.clone(), json!({ "before": shown(old), "after": shown(new) }));
    }
    Value::Object(out)
}

/// A value as the audit log keeps it: strings longer than [`MAX_VALUE_CHARS`] cut, with their
/// length in bytes noted.
fn shortened(v: &Value) -> Value {
    match v {
        Value::String(s) if s.chars().count() > MAX_VALUE_CHARS => {
            let cut: String = s.chars().take(MAX_VALUE_CHARS).collect();
            json!(format!("{cut}… ({} bytes)", s.len()))
        }
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_fields_that_differ_are_named() {
        let before = json!({ "id": 1, "param": "old", "owner": "Ann", "handler": "h", "updated_at": 1 });
        let after = json!({ "id": 1, "param": "new", "owner": "Bob", "handler": "h", "updated_at": 2 });
        assert_eq!(
            changes(&before, &after),
            json!({ "owner": { "before": "Ann", "after": "Bob" }, "param": { "before": "old", "after": "new" } })
        );
    }

    #[test]
    fn secrets_are_masked_and_long_values_cut() {
        let long = "x".repeat(MAX_VALUE_CHARS + 10);
        let got = changes(
            &json!({ "access_token": "a", "glue_source": "" }),
            &json!({ "access_token": "b", "glue_source": long }),
        );
        assert_eq!(got["access_token"], json!({ "before": "***", "after": "***" }));
        let cut = got["glue_source"]["after"].as_str().unwrap_or_default();
        assert!(cut.ends_with(&format!("… ({} bytes)", MAX_VALUE_CHARS + 10)), "{cut}");
    }

    #[test]
    fn no_change_is_an_empty_object() {
        let job = json!({ "param": "p" });
        assert_eq!(changes(&job, &job), json!({}));
        assert_eq!(changes(&Value::Null, &job), json!({}));
    }
}
