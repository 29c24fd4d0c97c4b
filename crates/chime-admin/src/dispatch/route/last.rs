//! LAST: the last address of the sorted list.

/// Picks the last address.
pub fn pick(addresses: &[String]) -> Option<&String> {
    addresses.last()
}
