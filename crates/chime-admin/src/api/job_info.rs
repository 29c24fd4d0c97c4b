//! A job's descriptive fields: text Chime stores, shows, exports and applies as it is given,
//! checked only for length. They are declared once, in [`job_info!`]'s invocation below; the
//! store's columns, the REST bodies and answers, the jobs document, the OpenAPI schema, the
//! CLI and the console form all follow that list, so a new such field is this one line plus
//! the migration that adds its column (named as the field, `TEXT`/`VARCHAR`, default `''`).

use super::Invalid;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Declares [`JobInfo`] (the stored values) and [`JobInfoPatch`] (the same fields as input,
/// each one left out or `null` to keep its value) from one list of `field: max chars`.
macro_rules! job_info {
    ($( $(#[doc = $doc:literal])* $field:ident: max $max:literal, )*) => {
        /// A job's descriptive fields, stored as given (see the module docs).
        #[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
        pub struct JobInfo {
            $( $(#[doc = $doc])* #[schemars(length(max = $max))] pub $field: String, )*
        }

        /// Input of a job's descriptive fields: each one left out (or `null`) keeps its value
        /// on update and is empty on create.
        #[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
        pub struct JobInfoPatch {
            $(
                $(#[doc = $doc])*
                #[serde(default, skip_serializing_if = "Option::is_none")]
                #[schemars(length(max = $max))]
                pub $field: Option<String>,
            )*
        }

        impl JobInfo {
            /// Every field with its longest value in characters, in declaration order.
            pub const FIELDS: &'static [(&'static str, usize)] = &[$((stringify!($field), $max)),*];

            /// The fields' values, in the order of [`JobInfo::FIELDS`].
            pub fn values(&self) -> Vec<&str> {
                vec![$(self.$field.as_str()),*]
            }

            /// The names of the fields whose values differ from `other`'s.
            pub fn differing(&self, other: &JobInfo) -> Vec<&'static str> {
                let mut names = Vec::new();
                $(if self.$field != other.$field { names.push(stringify!($field)); })*
                names
            }

            /// The field `name`, for code that goes through them all (the store, `apply`).
            pub fn field_mut(&mut self, name: &str) -> Option<&mut String> {
                match name {
                    $(stringify!($field) => Some(&mut self.$field),)*
                    _ => None,
                }
            }
        }

        impl JobInfoPatch {
            /// The given values, in the order of [`JobInfo::FIELDS`].
            pub fn values(&self) -> Vec<Option<&str>> {
                vec![$(self.$field.as_deref()),*]
            }

            /// Every field given: how a stored job is written back as input (export).
            pub fn of(info: &JobInfo) -> JobInfoPatch {
                JobInfoPatch { $($field: Some(info.$field.clone())),* }
            }
        }
    };
}

job_info! {
    /// Who to ask about it.
    owner: max 64,
    /// Comma-separated alarm contacts.
    alarm_contacts: max 255,
    /// Comma-separated names of alarm channels; empty: the group's channels.
    alarm_channels: max 255,
    /// When failures alarm: `after_failures=N` (at the Nth failure in a row and every Nth
    /// after), `on_recovery` (say when the job succeeds again); empty: every final failure.
    alarm_policy: max 255,
    /// The language of the job's alarm messages: `en` or `zh`; empty: the admin's
    /// `--alarm-language`.
    alarm_language: max 8,
}

impl JobInfoPatch {
    /// The values `base` (the stored job on update, `None` on create) gets from this input,
    /// each no longer than its field allows.
    pub fn apply_to(&self, base: Option<&JobInfo>) -> Result<JobInfo, Invalid> {
        let mut info = base.cloned().unwrap_or_default();
        for (&(name, max), given) in JobInfo::FIELDS.iter().zip(self.values()) {
            let Some(slot) = info.field_mut(name) else { continue };
            if let Some(value) = given {
                value.clone_into(slot);
            }
            if slot.chars().count() > max {
                return Err(Invalid::new(name, format!("must be at most {max} characters")));
            }
        }
        Ok(info)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[allow(clippy::needless_update)] // a field added to the list takes its default
    fn left_out_keeps_given_replaces_and_long_is_refused() {
        let base = JobInfo {
            owner: "ann".into(),
            alarm_contacts: "ops@example.com".into(),
            ..Default::default()
        };
        let patch = JobInfoPatch {
            owner: Some("bob".into()),
            ..Default::default()
        };
        let info = patch.apply_to(Some(&base)).unwrap();
        assert_eq!(info.owner, "bob");
        assert_eq!(info.alarm_contacts, "ops@example.com");
        assert_eq!(base.differing(&info), ["owner"]);
        let long = JobInfoPatch {
            owner: Some("x".repeat(65)),
            ..Default::default()
        };
        let err = long.apply_to(None).unwrap_err();
        assert_eq!(
            (err.field.as_str(), err.message.as_str()),
            ("owner", "must be at most 64 characters")
        );
    }
}
