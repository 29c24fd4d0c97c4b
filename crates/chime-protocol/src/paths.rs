//! Endpoint paths of both sides, and joining them to a configured base address.

/// Executor: liveness probe.
pub const BEAT: &str = "/beat";
/// Executor: is a job busy here?
pub const IDLE_BEAT: &str = "/idleBeat";
/// Executor: accept a trigger (G2, G3).
pub const RUN: &str = "/run";
/// Executor: accept a trigger (G4).
pub const TRIGGER: &str = "/trigger";
/// Executor: stop a job's runner.
pub const KILL: &str = "/kill";
/// Executor: read a run's log.
pub const LOG: &str = "/log";

/// Admin: register or renew an executor address.
pub const API_REGISTRY: &str = "/api/registry";
/// Admin: remove an executor address.
pub const API_REGISTRY_REMOVE: &str = "/api/registryRemove";
/// Admin: receive run results.
pub const API_CALLBACK: &str = "/api/callback";
/// Admin (Chime only): receive a finished run's log ([`crate::RunLogParam`]).
pub const API_RUN_LOG: &str = "/api/runLog";
/// Admin (Chime only): an executor opens its link here (a WebSocket, see [`crate::link`]).
pub const API_LINK: &str = "/api/link";

/// Joins a base address and an endpoint path with exactly one `/` between them.
///
/// Executors register as `http://h:p/` (Java) or `http://h:p` (pyxxl); the Java executor
/// matches paths exactly and fails `//run`, so the join must never double the slash.
pub fn join(base: &str, path: &str) -> String {
    let base = base.trim().trim_end_matches('/');
    let path = path.trim_start_matches('/');
    let mut url = String::with_capacity(base.len() + path.len() + 1);
    url.push_str(base);
    url.push('/');
    url.push_str(path);
    url
}

/// The form of an executor address used to compare and store it: trimmed, no trailing slash.
pub fn normalize_address(address: &str) -> &str {
    address.trim().trim_end_matches('/')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn join_never_doubles_or_drops_the_slash() {
        assert_eq!(join("http://h:9999/", RUN), "http://h:9999/run");
        assert_eq!(join("http://h:9999", RUN), "http://h:9999/run");
        assert_eq!(
            join("http://a:8080/xxl-job-admin/", API_CALLBACK),
            "http://a:8080/xxl-job-admin/api/callback"
        );
        assert_eq!(join(" http://h:1// ", "log"), "http://h:1/log");
    }

    #[test]
    fn normalize_strips_trailing_slashes() {
        assert_eq!(normalize_address("http://h:1/"), "http://h:1");
        assert_eq!(normalize_address("http://h:1"), "http://h:1");
    }
}
