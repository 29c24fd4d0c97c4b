//! Named alarm channels (`alarm_channel`): the receivers' URLs and signing secrets, kept here
//! whole and only ever shown shortened ([`ChannelDraft::shown`]).

use super::job_columns::Cell;
use super::rows;
use super::{Store, StoreError, StoreResult};
use crate::api::alarm_channels::names_of;
use crate::model::{now_ms, AlarmChannel, ChannelDraft, Invalid};
use sqlx::any::AnyRow;
use sqlx::AnyConnection;
use std::collections::HashMap;

/// A stored channel, secrets included: for the alarm sender, never for an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredChannel {
    /// Channel id.
    pub id: i64,
    /// Its settings.
    pub draft: ChannelDraft,
    /// Creation time, epoch ms.
    pub created_at: i64,
    /// Last change, epoch ms.
    pub updated_at: i64,
}

impl StoredChannel {
    /// The channel as the API shows it.
    pub fn shown(&self) -> AlarmChannel {
        self.draft.shown(self.id, self.created_at, self.updated_at)
    }
}

const CHANNEL_COLUMNS: &str = "id, name, kind, url, secret, recipients, template, created_at, updated_at";

fn channel(row: &AnyRow) -> Result<StoredChannel, sqlx::Error> {
    Ok(StoredChannel {
        id: rows::int(row, "id")?,
        draft: ChannelDraft {
            name: rows::text(row, "name")?,
            kind: rows::parsed(row, "kind")?,
            url: rows::text(row, "url")?,
            secret: rows::text(row, "secret")?,
            recipients: rows::text(row, "recipients")?,
            template: rows::text(row, "template")?,
        },
        created_at: rows::int(row, "created_at")?,
        updated_at: rows::int(row, "updated_at")?,
    })
}

/// A failed write of `draft`: 409 when another channel has its name.
fn name_taken(e: sqlx::Error, draft: &ChannelDraft) -> StoreError {
    StoreError::unique_violation_as(e, || {
        StoreError::Conflict(format!("an alarm channel '{}' already exists", draft.name))
    })
}

impl Store {
    /// Every channel, by name.
    pub async fn alarm_channels(&self) -> StoreResult<Vec<StoredChannel>> {
        let mut conn = self.read.acquire().await?;
        self.alarm_channels_on(&mut conn).await
    }

    /// The channel `id`.
    pub async fn alarm_channel(&self, id: i64) -> StoreResult<StoredChannel> {
        let select = format!("SELECT {CHANNEL_COLUMNS} FROM alarm_channel WHERE id = ?");
        self.read_by_id(&select, id, "alarm channel", channel).await
    }

    /// The channels of these names (those that exist), by name. Read from the writing pool: a
    /// channel created a moment ago must be found by the alarm that names it.
    pub async fn alarm_channels_named(&self, names: &[&str]) -> StoreResult<HashMap<String, StoredChannel>> {
        if names.is_empty() {
            return Ok(HashMap::new());
        }
        let q = self.sql_text(format!(
            "SELECT {CHANNEL_COLUMNS} FROM alarm_channel WHERE name IN ({})",
            super::placeholders(names.len())
        ));
        let mut query = sqlx::query(&q);
        for name in names {
            query = query.bind(*name);
        }
        let found = query.fetch_all(&self.write).await?;
        found
            .iter()
            .map(|r| channel(r).map(|c| (c.draft.name.clone(), c)))
            .collect::<Result<_, _>>()
            .map_err(Into::into)
    }

    /// Refuses a list of channel names (`field` of the input) that names a channel that does
    /// not exist: 422 naming the first such name.
    pub async fn check_channel_names(&self, field: &str, list: &str) -> StoreResult<()> {
        let names: Vec<&str> = names_of(list).collect();
        let found = self.alarm_channels_named(&names).await?;
        match names.iter().find(|n| !found.contains_key(**n)) {
            None => Ok(()),
            Some(missing) => Err(StoreError::Invalid(Invalid::new(
                field,
                format!("'{missing}' is not an alarm channel"),
            ))),
        }
    }

    /// Creates a channel; its name must be new.
    pub async fn insert_alarm_channel(&self, draft: &ChannelDraft) -> StoreResult<StoredChannel> {
        let mut conn = self.write.acquire().await?;
        let id = self.insert_channel_on(&mut conn, draft, now_ms()).await?;
        drop(conn);
        self.alarm_channel_written(id).await
    }

    /// Inserts a channel on `conn` (a transaction's, for `apply`); answers its id.
    pub(super) async fn insert_channel_on(
        &self,
        conn: &mut AnyConnection,
        draft: &ChannelDraft,
        now: i64,
    ) -> StoreResult<i64> {
        let inserted = self
            .insert_row(conn, "alarm_channel", channel_columns(draft), now)
            .await;
        inserted.map_err(|e| name_taken(e, draft))
    }

    /// Replaces channel `id`'s settings on `conn`.
    pub(super) async fn update_channel_on(
        &self,
        conn: &mut AnyConnection,
        id: i64,
        draft: &ChannelDraft,
        now: i64,
    ) -> StoreResult<u64> {
        let updated = self
            .update_row(conn, "alarm_channel", id, channel_columns(draft), now)
            .await;
        updated.map_err(|e| name_taken(e, draft))
    }

    /// Every channel, read on `conn` (a transaction's, for `apply`).
    pub(super) async fn alarm_channels_on(&self, conn: &mut AnyConnection) -> StoreResult<Vec<StoredChannel>> {
        let q = format!("SELECT {CHANNEL_COLUMNS} FROM alarm_channel ORDER BY name");
        let all = sqlx::query(&q).fetch_all(&mut *conn).await?;
        Ok(all.iter().map(channel).collect::<Result<_, _>>()?)
    }

    /// Replaces channel `id`'s settings. A rename is refused while jobs or groups use the old
    /// name, as a delete is: they would silently lose their channel.
    pub async fn update_alarm_channel(&self, id: i64, draft: &ChannelDraft) -> StoreResult<StoredChannel> {
        let current = self.alarm_channel(id).await?;
        if current.draft.name != draft.name {
            self.refuse_if_used(&current.draft.name, "renamed").await?;
        }
        let mut conn = self.write.acquire().await?;
        let changed = self.update_channel_on(&mut conn, id, draft, now_ms()).await?;
        drop(conn);
        if changed == 0 {
            return Err(StoreError::NotFound(format!("alarm channel {id}")));
        }
        self.alarm_channel_written(id).await
    }

    /// Deletes channel `id`, unless a job or group names it (409, naming one). Its past
    /// deliveries stay on their runs, under its name.
    pub async fn delete_alarm_channel(&self, id: i64) -> StoreResult<()> {
        let current = self.alarm_channel(id).await?;
        self.refuse_if_used(&current.draft.name, "deleted").await?;
        let q = self.sql("DELETE FROM alarm_channel WHERE id = ?");
        sqlx::query(&q).bind(id).execute(&self.write).await?;
        Ok(())
    }

    /// 409 when a job, group or workflow names the channel `name`.
    async fn refuse_if_used(&self, name: &str, what: &str) -> StoreResult<()> {
        let mut users = Vec::new();
        for (table, label) in [("job", "job"), ("executor_group", "group"), ("workflow", "workflow")] {
            let q = format!("SELECT id, alarm_channels FROM {table} WHERE alarm_channels <> ''");
            for row in sqlx::query(&q).fetch_all(&self.write).await? {
                if names_of(&rows::text(&row, "alarm_channels")?).any(|n| n == name) {
                    users.push(format!("{label} {}", rows::int(&row, "id")?));
                }
            }
        }
        if users.is_empty() {
            return Ok(());
        }
        let more = if users.len() > 3 {
            format!(" and {} more", users.len() - 3)
        } else {
            String::new()
        };
        users.truncate(3);
        Err(StoreError::Conflict(format!(
            "alarm channel '{name}' cannot be {what}: {}{more} name it in alarm_channels",
            users.join(", ")
        )))
    }

    /// The channel just written, read from the writing pool (on SQLite a reader might not see
    /// the commit yet).
    async fn alarm_channel_written(&self, id: i64) -> StoreResult<StoredChannel> {
        let select = format!("SELECT {CHANNEL_COLUMNS} FROM alarm_channel WHERE id = ?");
        let mut conn = self.write.acquire().await?;
        self.row_by_id(&mut conn, &select, id, "alarm channel", channel).await
    }
}

/// A channel's columns with their values, as its insert and update write them.
fn channel_columns(draft: &ChannelDraft) -> Vec<(&'static str, Cell)> {
    vec![
        ("name", Cell::Text(draft.name.clone())),
        ("kind", Cell::Text(draft.kind.as_str().to_owned())),
        ("url", Cell::Text(draft.url.clone())),
        ("secret", Cell::Text(draft.secret.clone())),
        ("recipients", Cell::Text(draft.recipients.clone())),
        ("template", Cell::Text(draft.template.clone())),
    ]
}
