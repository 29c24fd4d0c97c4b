//! Password hashes: Argon2id for every password Chime sets, and the legacy hashes of users
//! imported from XXL-JOB, accepted until their owner's next login replaces them.

use argon2::password_hash::{rand_core::OsRng, PasswordHasher, SaltString};
use argon2::Argon2;
use subtle::ConstantTimeEq;

/// Argon2id hash (PHC string) of a password.
pub fn hash_password(password: &str) -> String {
    let salt = SaltString::generate(&mut OsRng);
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .unwrap_or_default()
}

/// Checks a password against a stored hash: an Argon2 PHC string, or a legacy hash brought
/// over from XXL-JOB (see [`legacy_hash`]).
pub fn verify_password(password: &str, hash: &str) -> bool {
    use argon2::password_hash::{PasswordHash, PasswordVerifier};
    if let Some((scheme, digest)) = split_legacy(hash) {
        return bool::from(hex_digest(scheme, password).as_bytes().ct_eq(digest.as_bytes()));
    }
    PasswordHash::new(hash).is_ok_and(|h| Argon2::default().verify_password(password.as_bytes(), &h).is_ok())
}

/// Prefix of an XXL-JOB 2.x password hash (unsalted MD5, lower-case hex).
const LEGACY_MD5: &str = "xxl-md5:";
/// Prefix of an XXL-JOB 3.x password hash (unsalted SHA-256, lower-case hex).
const LEGACY_SHA256: &str = "xxl-sha256:";

/// The stored form of a password hash imported from XXL-JOB: `xxl-md5:<hex>` for the 32 hex
/// digits of 2.x, `xxl-sha256:<hex>` for the 64 of 3.x; `None` when `digest` is neither.
/// Such a hash is accepted at the next login and replaced there by an Argon2 hash, so a
/// user keeps their password across the move and the weak hash does not stay.
pub fn legacy_hash(digest: &str) -> Option<String> {
    let digest = digest.trim().to_ascii_lowercase();
    if !digest.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    match digest.len() {
        32 => Some(format!("{LEGACY_MD5}{digest}")),
        64 => Some(format!("{LEGACY_SHA256}{digest}")),
        _ => None,
    }
}

/// True when `hash` is a legacy XXL-JOB hash still waiting for its user's next login.
pub fn is_legacy_hash(hash: &str) -> bool {
    split_legacy(hash).is_some()
}

fn split_legacy(hash: &str) -> Option<(&'static str, &str)> {
    [LEGACY_MD5, LEGACY_SHA256]
        .into_iter()
        .find_map(|scheme| hash.strip_prefix(scheme).map(|digest| (scheme, digest)))
}

fn hex_digest(scheme: &str, password: &str) -> String {
    use sha2::Digest;
    let bytes: Vec<u8> = if scheme == LEGACY_MD5 {
        md5::Md5::digest(password.as_bytes()).to_vec()
    } else {
        sha2::Sha256::digest(password.as_bytes()).to_vec()
    };
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xxl_job_hashes_are_accepted_until_replaced() {
        // XXL-JOB's seed user: admin / 123456, in 2.x (MD5) and 3.x (SHA-256).
        let md5 = legacy_hash("E10ADC3949BA59ABBE56E057F20F883E").unwrap();
        assert_eq!(md5, "xxl-md5:e10adc3949ba59abbe56e057f20f883e");
        assert!(verify_password("123456", &md5));
        assert!(!verify_password("1234567", &md5));
        let sha = legacy_hash("8d969eef6ecad3c29a3a629280e686cf0c3f5d5a86aff3ca12020c923adc6c92").unwrap();
        assert!(verify_password("123456", &sha));
        assert!(!verify_password("12345", &sha));
        assert!(is_legacy_hash(&sha) && !is_legacy_hash(&hash_password("123456")));
        // Neither length nor hex: not a hash anyone could log in with.
        assert_eq!(legacy_hash("e10adc3949ba59abbe56e057f20f883"), None);
        assert_eq!(legacy_hash("z10adc3949ba59abbe56e057f20f883e"), None);
        assert_eq!(legacy_hash(""), None);
        assert!(!verify_password("", "xxl-md5:"));
    }
}
