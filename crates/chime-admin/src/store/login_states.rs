//! OpenID Connect logins under way (`login_state`): written when a browser is sent to the
//! provider, taken (read and deleted at once) when it comes back. Kept in the database, not in
//! memory, so the way back may reach any admin of a cluster, and a replayed answer finds
//! nothing whichever admin it reaches.

use super::bulk::{bound, Arg};
use super::{rows, Store, StoreResult};

/// Most logins under way at once. Each costs a row until it expires; beyond this, new ones are
/// refused (503) until some expire, so anonymous callers cannot fill the table.
pub const MAX_PENDING_LOGINS: i64 = 10_000;

/// One login under way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoginState {
    /// SHA-256 (hex) of the `state` sent to the provider.
    pub state_hash: String,
    /// The provider's name in the settings.
    pub provider: String,
    /// SHA-256 (hex) of the value in the login cookie of the browser that left.
    pub browser_hash: String,
    /// The nonce the ID token must carry.
    pub nonce: String,
    /// The PKCE verifier of the code exchange.
    pub pkce_verifier: String,
    /// When it stops being accepted, epoch ms.
    pub expires_at: i64,
}

impl Store {
    /// Records a login under way, after dropping expired ones; `false` (nothing written) when
    /// [`MAX_PENDING_LOGINS`] are under way already.
    pub async fn insert_login_state(&self, login: &LoginState, now: i64) -> StoreResult<bool> {
        let q = self.sql("DELETE FROM login_state WHERE expires_at <= ?");
        sqlx::query(&q).bind(now).execute(&self.write).await?;
        let q = self.sql("SELECT COUNT(*) AS n FROM login_state");
        let pending = rows::int(&sqlx::query(&q).fetch_one(&self.write).await?, "n")?;
        if pending >= MAX_PENDING_LOGINS {
            return Ok(false);
        }
        let q = self.sql(
            "INSERT INTO login_state (state_hash, provider, browser_hash, nonce, pkce_verifier, expires_at) \
             VALUES (?, ?, ?, ?, ?, ?)",
        );
        let args = [
            Arg::Text(&login.state_hash),
            Arg::Text(&login.provider),
            Arg::Text(&login.browser_hash),
            Arg::Text(&login.nonce),
            Arg::Text(&login.pkce_verifier),
            Arg::Int(login.expires_at),
        ];
        bound(&q, &args).execute(&self.write).await?;
        Ok(true)
    }

    /// The login under way whose state hashes to `state_hash`, removed as it is read: of two
    /// callers with the same state, only the one whose delete took the row gets it. `None`
    /// when there is none, it was taken already, or it has expired.
    pub async fn take_login_state(&self, state_hash: &str, now: i64) -> StoreResult<Option<LoginState>> {
        let q = self.sql(
            "SELECT state_hash, provider, browser_hash, nonce, pkce_verifier, expires_at \
             FROM login_state WHERE state_hash = ?",
        );
        let Some(row) = sqlx::query(&q).bind(state_hash).fetch_optional(&self.write).await? else {
            return Ok(None);
        };
        let login = LoginState {
            state_hash: rows::text(&row, "state_hash")?,
            provider: rows::text(&row, "provider")?,
            browser_hash: rows::text(&row, "browser_hash")?,
            nonce: rows::text(&row, "nonce")?,
            pkce_verifier: rows::text(&row, "pkce_verifier")?,
            expires_at: rows::int(&row, "expires_at")?,
        };
        let q = self.sql("DELETE FROM login_state WHERE state_hash = ?");
        let taken = sqlx::query(&q)
            .bind(state_hash)
            .execute(&self.write)
            .await?
            .rows_affected()
            == 1;
        Ok((taken && login.expires_at > now).then_some(login))
    }
}
