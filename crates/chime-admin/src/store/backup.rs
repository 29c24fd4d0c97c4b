//! An online backup of a SQLite database: `chime admin backup --to FILE`.

use super::{Backend, Store, StoreError, StoreResult};
use std::path::Path;

/// For a database `chime admin backup` does not copy, the tool that backs it up instead: the
/// server's own dump takes a consistent snapshot without stopping the admins.
pub fn dump_advice(backend: Backend) -> Option<&'static str> {
    match backend {
        Backend::Sqlite => None,
        Backend::Postgres => Some(
            "only SQLite databases are copied by Chime; back up PostgreSQL with its own tool: \
             `pg_dump --format=custom chime > chime.dump` (see docs/operations.md, \"Backups\")",
        ),
        Backend::MySql => Some(
            "only SQLite databases are copied by Chime; back up MariaDB or MySQL with its own tool: \
             `mariadb-dump --single-transaction chime > chime.sql` (see docs/operations.md, \"Backups\")",
        ),
    }
}

impl Store {
    /// Writes a consistent copy of this SQLite database to `path` with `VACUUM INTO`, while
    /// the admin may be running: the copy is one read transaction's view (every commit before
    /// it, none after), compacted, and a complete database without a `-wal` file. It runs on a
    /// reading connection, so the admin's writer goes on committing meanwhile. An existing
    /// `path` is refused (SQLite would refuse a non-empty one too; an empty one it would
    /// overwrite, and a backup never replaces a file). MySQL and PostgreSQL: refused with the
    /// tool to use instead, as their own dump tools are the consistent way.
    pub async fn backup_to(&self, path: &Path) -> StoreResult<()> {
        if let Some(advice) = dump_advice(self.backend) {
            return Err(StoreError::Url(advice.to_owned()));
        }
        if path.exists() {
            return Err(StoreError::Conflict(format!(
                "{} already exists: a backup does not overwrite a file",
                path.display()
            )));
        }
        let target = path
            .to_str()
            .ok_or_else(|| StoreError::Conflict(format!("{} is not a UTF-8 path", path.display())))?;
        // Bound, not spliced into the statement: a path may hold quotes.
        sqlx::query("VACUUM INTO ?").bind(target).execute(&self.read).await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_copy_is_a_database_and_an_existing_file_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::connect(&format!("sqlite://{}/live.db", dir.path().display()))
            .await
            .unwrap();
        let copy = dir.path().join("copy 'quoted'.db");
        store.backup_to(&copy).await.unwrap();
        let copied = Store::connect(&format!("sqlite://{}", copy.display())).await.unwrap();
        copied.ping().await.unwrap();
        copied.close().await;

        let taken = dir.path().join("taken.db");
        std::fs::write(&taken, b"").unwrap();
        let refused = store.backup_to(&taken).await.unwrap_err();
        assert!(refused.to_string().contains("already exists"), "{refused}");
        assert_eq!(std::fs::read(&taken).unwrap(), b"", "the file is untouched");
        store.close().await;
    }
}
