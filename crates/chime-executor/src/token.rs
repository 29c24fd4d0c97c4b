//! Random values from the operating system: generated access tokens and the per-process
//! instance id sent with every registration.

/// Length in bytes of a generated access token (hex-encoded: twice as many characters).
const TOKEN_BYTES: usize = 32;

/// Length in bytes of an instance id (hex-encoded: 32 characters).
const INSTANCE_ID_BYTES: usize = 16;

/// A new random access token: 32 bytes from the operating system's random number generator,
/// as 64 lowercase hex characters (256 bits: not guessable, and safe in a header, a shell
/// variable and XXL-JOB's `xxl.job.accessToken`).
///
/// `chime executor` uses it when script jobs or the shell handler are enabled and no token was
/// given; a service embedding the SDK can do the same and hand the value to its admin.
///
/// # Panics
///
/// If the operating system cannot provide random bytes (no usable `getrandom(2)` or
/// `/dev/urandom`), where no secret could be made safely anyway.
pub fn generate_access_token() -> String {
    random_hex(TOKEN_BYTES)
}

/// A new instance id: random per executor start, so that an admin tells a restarted process
/// from the one before it at the same address.
pub(crate) fn instance_id() -> String {
    random_hex(INSTANCE_ID_BYTES)
}

fn random_hex(len: usize) -> String {
    let mut bytes = vec![0u8; len];
    getrandom::fill(&mut bytes).expect("the operating system's random number generator is available");
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_and_instance_ids_are_hex_of_the_promised_length_and_differ() {
        let (a, b) = (generate_access_token(), generate_access_token());
        assert_eq!(a.len(), 64);
        assert!(
            a.bytes().all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()),
            "{a}"
        );
        assert_ne!(a, b);
        let id = instance_id();
        assert_eq!(id.len(), 32);
        assert!(id.bytes().all(|c| c.is_ascii_hexdigit()), "{id}");
        assert_ne!(id, instance_id());
    }
}
