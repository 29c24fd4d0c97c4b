//! Bearer secrets: how Chime makes them and how it keeps them. A token has 256 random bits, so
//! a plain SHA-256 of it is enough to keep (no salt or slow hash: nobody can guess through
//! 2^256 values), and it is found again by that hash in one index probe.

use sha2::{Digest, Sha256};

/// A new secret: 32 random bytes as 64 lower-case hex digits, fit for a header, a cookie and a
/// properties file.
pub fn random_hex() -> String {
    hex::encode(rand::random::<[u8; 32]>())
}

/// Lower-case hex SHA-256 of `s`: what session tokens and API keys are stored as.
pub fn sha256_hex(s: &str) -> String {
    hex::encode(Sha256::digest(s.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_new_each_time_and_kept_as_their_hash() {
        let (a, b) = (random_hex(), random_hex());
        assert_eq!(a.len(), 64);
        assert_ne!(a, b);
        assert_eq!(
            sha256_hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
