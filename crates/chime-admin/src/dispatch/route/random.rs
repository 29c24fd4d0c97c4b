//! RANDOM: uniformly random.

use rand::Rng;

/// Picks a random address.
pub fn pick(addresses: &[String]) -> Option<&String> {
    if addresses.is_empty() {
        return None;
    }
    addresses.get(rand::rng().random_range(0..addresses.len()))
}
