//! The alarm channels of a jobs document: exported without their URL and secret (a document is
//! shared and kept in version control), and applied by name — a channel the document names
//! that does not exist is created (its URL is then needed), one that differs is changed, and a
//! URL or secret the document leaves out keeps the stored one. A document never deletes a
//! channel.

use super::apply::{ApplyPlan, PlanEntry};
use super::plan_fields::differing;
use super::{Store, StoreError, StoreResult};
use crate::model::{AlarmChannelSpec, ChannelDraft, Invalid};
use sqlx::any::Any;
use sqlx::Transaction;

/// Most channels one document may hold.
pub const MAX_DOC_CHANNELS: usize = 1_000;

/// The channel as a document lists it: everything but the URL and the secret.
fn exported(draft: &ChannelDraft) -> AlarmChannelSpec {
    AlarmChannelSpec {
        name: Some(draft.name.clone()),
        kind: Some(draft.kind),
        url: None,
        secret: None,
        recipients: Some(draft.recipients.clone()).filter(|r| !r.is_empty()),
        template: Some(draft.template.clone()).filter(|t| !t.is_empty()),
    }
}

fn refused(i: usize, e: Invalid) -> StoreError {
    StoreError::Invalid(Invalid::new(format!("alarm_channels[{i}].{}", e.field), e.message))
}

impl Store {
    /// Every channel as a document lists it (no URL, no secret).
    pub(super) async fn export_channels(&self) -> StoreResult<Vec<AlarmChannelSpec>> {
        Ok(self
            .alarm_channels()
            .await?
            .iter()
            .map(|c| exported(&c.draft))
            .collect())
    }

    /// Creates and changes the document's `channels` in `tx`, adding each to `plan`.
    pub(super) async fn apply_channels(
        &self,
        tx: &mut Transaction<'static, Any>,
        channels: &[AlarmChannelSpec],
        now: i64,
        plan: &mut ApplyPlan,
    ) -> StoreResult<()> {
        if channels.len() > MAX_DOC_CHANNELS {
            return Err(Invalid::new("alarm_channels", format!("at most {MAX_DOC_CHANNELS} channels")).into());
        }
        if channels.is_empty() {
            return Ok(());
        }
        let existing = self.alarm_channels_on(tx).await?;
        let mut seen = std::collections::HashSet::new();
        for (i, spec) in channels.iter().enumerate() {
            let name = spec.name.as_deref().unwrap_or("").trim();
            if !seen.insert(name.to_owned()) {
                return Err(refused(i, Invalid::new("name", format!("'{name}' is listed twice"))));
            }
            let base = existing.iter().find(|c| c.draft.name == name);
            let draft = spec.validate(base.map(|c| &c.draft)).map_err(|e| refused(i, e))?;
            match base {
                None => {
                    self.insert_channel_on(tx, &draft, now).await?;
                    plan.create.push(channel_entry(&draft.name, Vec::new()));
                }
                Some(c) if c.draft != draft => {
                    let fields = changed_fields(&c.draft, &draft);
                    self.update_channel_on(tx, c.id, &draft, now).await?;
                    plan.update.push(channel_entry(&draft.name, fields));
                }
                Some(_) => {}
            }
        }
        Ok(())
    }
}

fn changed_fields(was: &ChannelDraft, now: &ChannelDraft) -> Vec<String> {
    differing!(was, now; kind, url, secret, recipients, template)
}

fn channel_entry(name: &str, fields: Vec<String>) -> PlanEntry {
    PlanEntry {
        kind: "alarm_channel".to_owned(),
        group: String::new(),
        key: Some(name.to_owned()),
        fields,
    }
}
