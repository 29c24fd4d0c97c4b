//! SHARDING_BROADCAST: every executor gets the run, each with its shard index and the total.
//! Shard `i` goes to address `i` of the sorted list (the first one if the list shrank since).

/// The address of shard `index`.
pub fn shard_address(addresses: &[String], index: i64) -> Option<&String> {
    usize::try_from(index)
        .ok()
        .and_then(|i| addresses.get(i))
        .or_else(|| addresses.first())
}
