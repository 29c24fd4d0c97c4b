//! CONSISTENT_HASH: the same job goes to the same executor while the address list is stable,
//! exactly as XXL-JOB computes it: a ring of 100 virtual nodes per address keyed
//! `"SHARD-<address>-NODE-<i>"`, hash = the first four bytes of the key's MD5 read as a
//! little-endian unsigned 32-bit number, job key = the job id in decimal hashed the same way,
//! and the job goes to the first node at or after its hash, wrapping to the smallest.
//!
//! The addresses must be the strings as registered: a Java executor's `http://ip:port/` and
//! pyxxl's `http://ip:port` hash differently, and XXL-JOB hashes whichever was registered.

use md5::{Digest, Md5};
use std::collections::BTreeMap;

const VIRTUAL_NODES: usize = 100;

/// XXL-JOB's hash: MD5, bytes 0..4 as little-endian u32.
pub fn hash(key: &str) -> u32 {
    let digest = Md5::digest(key.as_bytes());
    u32::from_le_bytes([digest[0], digest[1], digest[2], digest[3]])
}

/// Picks the address for `job_id`.
pub fn pick(job_id: i64, addresses: &[String]) -> Option<&String> {
    if addresses.is_empty() {
        return None;
    }
    let mut ring: BTreeMap<u32, &String> = BTreeMap::new();
    for address in addresses {
        for i in 0..VIRTUAL_NODES {
            ring.insert(hash(&format!("SHARD-{address}-NODE-{i}")), address);
        }
    }
    let key = hash(&job_id.to_string());
    ring.range(key..).next().or_else(|| ring.iter().next()).map(|(_, a)| *a)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values computed independently with Python:
    /// `int.from_bytes(hashlib.md5(key.encode()).digest()[:4], "little")`.
    #[test]
    fn hash_matches_python_hashlib() {
        assert_eq!(hash("1"), 0x3842_cac4);
        assert_eq!(hash("SHARD-http://127.0.0.1:9999-NODE-0"), 4_061_258_004);
    }

    #[test]
    fn picks_match_a_python_reference_ring() {
        let addrs: Vec<String> = vec![
            "http://127.0.0.1:9997".into(),
            "http://127.0.0.1:9998".into(),
            "http://127.0.0.1:9999".into(),
        ];
        let expected = [(1, 2), (2, 2), (3, 0), (42, 2), (1000, 0)];
        for (job, idx) in expected {
            assert_eq!(pick(job, &addrs), Some(&addrs[idx]), "job {job}");
        }
    }

    /// XXL-JOB hashes the registered strings: Java executors register with a trailing slash,
    /// which moves most jobs. Values from a Python transcription of `ExecutorRouteConsistentHash`
    /// (`hashlib.md5`, first four bytes little-endian, `bisect` on the sorted ring).
    #[test]
    fn picks_hash_the_address_as_registered() {
        let bare: Vec<String> = (7..=9).map(|p| format!("http://127.0.0.1:999{p}")).collect();
        let slash: Vec<String> = bare.iter().map(|a| format!("{a}/")).collect();
        assert_eq!(hash("SHARD-http://127.0.0.1:9999/-NODE-0"), 2_087_608_106);
        // job id, index without slash, index with slash
        let expected = [(1, 2, 2), (3, 0, 2), (5, 0, 1), (10, 1, 0), (42, 2, 0), (1000, 0, 1)];
        for (job, without, with) in expected {
            assert_eq!(pick(job, &bare), Some(&bare[without]), "job {job} without slash");
            assert_eq!(pick(job, &slash), Some(&slash[with]), "job {job} with slash");
        }
    }

    #[test]
    fn stable_when_unrelated_address_leaves() {
        let addrs: Vec<String> = (0..5).map(|i| format!("http://10.0.0.{i}:9999")).collect();
        let before: Vec<String> = (1..200).map(|j| pick(j, &addrs).unwrap().clone()).collect();
        let fewer: Vec<String> = addrs.iter().filter(|a| !a.ends_with(".4:9999")).cloned().collect();
        for (j, b) in (1..200).zip(before) {
            if !b.ends_with(".4:9999") {
                assert_eq!(pick(j, &fewer).unwrap(), &b);
            }
        }
    }
}
