//! Operations on executor groups. Each change reloads the directory, so dispatch sends to the
//! changed addresses (and knows a new group) at once.

use crate::center::{Admin, OpError};
use crate::model::{Group, GroupSpec};
use crate::store::retry_deadlocked;

impl Admin {
    /// Creates an executor group.
    pub async fn create_group(&self, spec: &GroupSpec) -> Result<Group, OpError> {
        let mut draft = spec.validate(None, &self.config.executor_networks)?;
        draft.alarm_channels = self
            .checked_channel_names("alarm_channels", &draft.alarm_channels)
            .await?;
        let group = self.store.insert_group(&draft).await?;
        self.refresh_directory().await;
        Ok(group)
    }

    /// Changes the group `current`: fields `spec` leaves out keep their value.
    pub async fn update_group(&self, current: &Group, spec: &GroupSpec) -> Result<Group, OpError> {
        let mut draft = spec.validate(Some(current), &self.config.executor_networks)?;
        if draft.alarm_channels != current.alarm_channels {
            draft.alarm_channels = self
                .checked_channel_names("alarm_channels", &draft.alarm_channels)
                .await?;
        }
        let group = retry_deadlocked(|| self.store.update_group(current.id, &draft)).await?;
        self.refresh_directory().await;
        Ok(group)
    }

    /// Deletes a group (the store refuses one that still has jobs).
    pub async fn delete_group(&self, id: i64) -> Result<(), OpError> {
        retry_deadlocked(|| self.store.delete_group(id)).await?;
        self.refresh_directory().await;
        Ok(())
    }
}
