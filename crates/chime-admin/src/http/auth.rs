//! Secrets: the first user, password hashing, and constant-time token checks.

pub use crate::password::{hash_password, is_legacy_hash, legacy_hash, verify_password};
use crate::store::{Store, StoreResult};
use subtle::ConstantTimeEq;

/// True when `given` equals `expected`, in time independent of where they differ.
pub fn token_matches(given: &str, expected: &str) -> bool {
    // Lengths are compared in the open; a token's length is not the secret.
    given.len() == expected.len() && bool::from(given.as_bytes().ct_eq(expected.as_bytes()))
}

/// A random password of 20 letters and digits.
pub fn random_password() -> String {
    use rand::distr::{Alphanumeric, SampleString};
    Alphanumeric.sample_string(&mut rand::rng(), 20)
}

/// Creates the `admin` user when there is no user yet. Its password is `password` or, when
/// none is given, a random one printed once to standard error: there is no default password.
pub async fn ensure_first_user(store: &Store, password: Option<&str>) -> StoreResult<()> {
    if store.count_users().await? > 0 {
        return Ok(());
    }
    let (pw, generated) = match password.filter(|p| !p.is_empty()) {
        Some(p) => (p.to_owned(), false),
        None => (random_password(), true),
    };
    store.insert_user("admin", &hash_password(&pw), "admin").await?;
    if generated {
        eprintln!("chime: created console user 'admin' with password: {pw}");
        eprintln!("chime: (shown once; set CHIME_ADMIN_PASSWORD before the first start to choose it)");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_and_passwords() {
        assert!(token_matches("abc", "abc"));
        assert!(!token_matches("abd", "abc"));
        assert!(!token_matches("ab", "abc"));
        let h = hash_password("s3cret");
        assert!(h.starts_with("$argon2"));
        assert!(verify_password("s3cret", &h));
        assert!(!verify_password("nope", &h));
        assert_eq!(random_password().len(), 20);
    }
}
