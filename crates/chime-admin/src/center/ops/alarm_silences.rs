//! Operations on silence windows of alarms.

use crate::center::{Admin, OpError};
use crate::model::{now_ms, AlarmSilenceSpec, Invalid};
use crate::store::{StoreError, StoredSilence};

impl Admin {
    /// Creates a silence window for `created_by` (the caller's user name). The group or job it
    /// covers must exist: an unknown id is refused on its field (422), not silently kept.
    pub async fn create_alarm_silence(
        &self,
        spec: &AlarmSilenceSpec,
        created_by: &str,
    ) -> Result<StoredSilence, OpError> {
        let now = now_ms();
        let draft = spec.validate(&self.config.default_time_zone, now)?;
        let found = if draft.job_id > 0 {
            self.store.job(draft.job_id).await.map(|_| ())
        } else {
            self.store.group(draft.group_id).await.map(|_| ())
        };
        match found {
            Ok(()) => {}
            Err(StoreError::NotFound(_)) if draft.job_id > 0 => {
                return Err(Invalid::new("job_id", format!("there is no job {}", draft.job_id)).into())
            }
            Err(StoreError::NotFound(_)) => {
                return Err(Invalid::new("group_id", format!("there is no group {}", draft.group_id)).into())
            }
            Err(e) => return Err(e.into()),
        }
        Ok(self.store.insert_alarm_silence(&draft, created_by, now).await?)
    }

    /// Deletes silence window `id`: alarms of its group or job are sent again from now on.
    pub async fn delete_alarm_silence(&self, id: i64) -> Result<(), OpError> {
        Ok(self.store.delete_alarm_silence(id).await?)
    }
}
