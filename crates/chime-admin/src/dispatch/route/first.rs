//! FIRST: the first address of the sorted list.

/// Picks the first address.
pub fn pick(addresses: &[String]) -> Option<&String> {
    addresses.first()
}
