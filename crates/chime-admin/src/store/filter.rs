//! Statements filtered by what a caller asked for: each condition is appended with the value it
//! binds, so the `?`s of the text and the values bound to them cannot fall out of order.

use super::placeholders;
use sqlx::any::{Any, AnyArguments};
use sqlx::query::Query;

/// A value bound to one `?` of a [`Filtered`] statement.
#[derive(Debug, Clone)]
pub(super) enum Value {
    /// An integer.
    Int(i64),
    /// A text.
    Text(String),
}

impl From<i64> for Value {
    fn from(v: i64) -> Self {
        Value::Int(v)
    }
}

impl From<String> for Value {
    fn from(v: String) -> Self {
        Value::Text(v)
    }
}

impl From<&String> for Value {
    fn from(v: &String) -> Self {
        Value::Text(v.clone())
    }
}

/// A statement's text (with `?` placeholders) and the values of its `?`s, built in step.
#[derive(Debug, Clone)]
pub(super) struct Filtered {
    text: String,
    values: Vec<Value>,
}

impl Filtered {
    /// Starts with `text`, which has no `?`.
    pub(super) fn new(text: impl Into<String>) -> Self {
        Filtered {
            text: text.into(),
            values: Vec::new(),
        }
    }

    /// Appends `text`, its `?`s bound to `values` in order.
    pub(super) fn push<V: Into<Value>>(&mut self, text: &str, values: impl IntoIterator<Item = V>) {
        self.text.push_str(text);
        self.values.extend(values.into_iter().map(Into::into));
    }

    /// Appends `text`, which has no `?`.
    pub(super) fn append(&mut self, text: &str) {
        self.text.push_str(text);
    }

    /// Appends `text` (one `?`) bound to `value`, when there is one.
    pub(super) fn and<V: Into<Value>>(&mut self, text: &str, value: Option<V>) {
        if let Some(v) = value {
            self.push(text, [v]);
        }
    }

    /// Appends ` AND column IN (…)` for `ids` (not empty: an empty list matches nothing, which
    /// the caller answers without a query).
    pub(super) fn and_in(&mut self, column: &str, ids: &[i64]) {
        self.push(
            &format!(" AND {column} IN ({})", placeholders(ids.len())),
            ids.iter().copied(),
        );
    }

    /// The statement's text, with `?` placeholders.
    pub(super) fn text(&self) -> &str {
        &self.text
    }

    /// The statement `q` (this text in the backend's dialect) with the values bound.
    pub(super) fn bind<'q>(&'q self, q: &'q str) -> Query<'q, Any, AnyArguments<'q>> {
        self.values.iter().fold(sqlx::query(q), |query, v| match v {
            Value::Int(i) => query.bind(*i),
            Value::Text(s) => query.bind(s.as_str()),
        })
    }
}

/// `%text%` in lower case with LIKE's wildcards (and the escape `!`) escaped by `!`, for a
/// condition `LOWER(column) LIKE ? ESCAPE '!'`.
pub(super) fn like_pattern(text: &str) -> String {
    let escaped: String = text
        .to_lowercase()
        .chars()
        .flat_map(|c| match c {
            '!' | '%' | '_' => vec!['!', c],
            c => vec![c],
        })
        .collect();
    format!("%{escaped}%")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditions_keep_their_values_in_order() {
        let mut f = Filtered::new("SELECT id FROM run WHERE 1 = 1");
        f.and(" AND job_id = ?", Some(7));
        f.and(" AND group_id = ?", None::<i64>);
        f.and_in("group_id", &[1, 2]);
        f.and(" AND action LIKE ?", Some(like_pattern("50%_A!")));
        f.push(" LIMIT ?", [10]);
        assert_eq!(
            f.text(),
            "SELECT id FROM run WHERE 1 = 1 AND job_id = ? AND group_id IN (?, ?) AND action LIKE ? LIMIT ?"
        );
        let values: Vec<String> = f
            .values
            .iter()
            .map(|v| match v {
                Value::Int(i) => i.to_string(),
                Value::Text(s) => s.clone(),
            })
            .collect();
        assert_eq!(values, ["7", "1", "2", "%50!%!_a!!%", "10"]);
    }
}
