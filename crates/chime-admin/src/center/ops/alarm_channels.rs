//! Operations on alarm channels, and the check that a list of channel names (a job's or a
//! group's `alarm_channels`) names channels that exist.

use crate::api::alarm_channels::{channel_names, names_of};
use crate::api::alarm_policy::{AlarmLanguage, AlarmPolicy};
use crate::center::{Admin, OpError};
use crate::model::AlarmChannelSpec;
use crate::model::JobInfo;
use crate::store::{JobsDocument, StoredChannel};

impl Admin {
    /// Creates an alarm channel.
    pub async fn create_alarm_channel(&self, spec: &AlarmChannelSpec) -> Result<StoredChannel, OpError> {
        let draft = spec.validate(None)?;
        Ok(self.store.insert_alarm_channel(&draft).await?)
    }

    /// Changes channel `id`: `url` and `secret` left out keep their values.
    pub async fn update_alarm_channel(&self, id: i64, spec: &AlarmChannelSpec) -> Result<StoredChannel, OpError> {
        let current = self.store.alarm_channel(id).await?;
        let draft = spec.validate(Some(&current.draft))?;
        Ok(self.store.update_alarm_channel(id, &draft).await?)
    }

    /// Deletes channel `id`, unless a job or group names it.
    pub async fn delete_alarm_channel(&self, id: i64) -> Result<(), OpError> {
        Ok(self.store.delete_alarm_channel(id).await?)
    }

    /// Sends a made-up alarm to channel `id` once, now; a refusal or an unreachable receiver
    /// is [`OpError::Unreachable`] (502) with why, without the URL or secret.
    pub async fn test_alarm_channel(&self, id: i64) -> Result<(), OpError> {
        let channel = self.store.alarm_channel(id).await?;
        crate::alarm::send_test(&self.config, &channel.draft)
            .await
            .map_err(OpError::Unreachable)
    }

    /// `list` (channel names as given) checked and written back as `a,b`, each name a channel
    /// that exists; `field` names the input in the error.
    pub(crate) async fn checked_channel_names(&self, field: &str, list: &str) -> Result<String, OpError> {
        let names = channel_names(list).map_err(|mut e| {
            e.field = field.to_owned();
            e
        })?;
        self.store.check_channel_names(field, &names).await?;
        Ok(names)
    }

    /// Checks a job's alarm fields and writes them as stored: its channels (each must exist;
    /// not looked up again when unchanged from `current`) and its policy.
    pub(crate) async fn check_alarm_fields(
        &self,
        info: &mut JobInfo,
        current: Option<&JobInfo>,
    ) -> Result<(), OpError> {
        if current.is_none_or(|c| c.alarm_channels != info.alarm_channels) {
            info.alarm_channels = self
                .checked_channel_names("alarm_channels", &info.alarm_channels)
                .await?;
        }
        info.alarm_policy = AlarmPolicy::parse(&info.alarm_policy)?.to_string();
        info.alarm_language = AlarmLanguage::parse(&info.alarm_language)?
            .map(|l| l.as_str().to_owned())
            .unwrap_or_default();
        Ok(())
    }

    /// Refuses a jobs document whose groups, jobs or workflows name a channel that neither exists nor is
    /// defined by the document itself, or whose jobs have a policy that does not read.
    pub(crate) async fn check_document_alarms(&self, doc: &JobsDocument) -> Result<(), OpError> {
        let defined: Vec<&str> = doc.alarm_channels.iter().filter_map(|c| c.name.as_deref()).collect();
        let mut named: Vec<&str> = Vec::new();
        for g in &doc.groups {
            let lists = g
                .alarm_channels
                .iter()
                .chain(g.jobs.iter().filter_map(|j| j.info.alarm_channels.as_ref()));
            for list in lists {
                channel_names(list)?;
                named.extend(names_of(list).filter(|n| !defined.contains(n)));
            }
            for job in &g.jobs {
                AlarmPolicy::parse(job.info.alarm_policy.as_deref().unwrap_or(""))?;
                AlarmLanguage::parse(job.info.alarm_language.as_deref().unwrap_or(""))?;
            }
        }
        for list in doc.workflows.iter().filter_map(|w| w.alarm_channels.as_ref()) {
            channel_names(list)?;
            named.extend(names_of(list).filter(|n| !defined.contains(n)));
        }
        named.sort_unstable();
        named.dedup();
        self.store
            .check_channel_names("alarm_channels", &named.join(","))
            .await?;
        Ok(())
    }
}
