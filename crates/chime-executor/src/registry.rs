//! The registry heartbeat: `POST <admin>/api/registry` at start and every interval, to every
//! admin; `registryRemove` once on shutdown.
//!
//! Every registration names this executor process ([`Instance`]): a random id, the same for
//! the whole life of the process, and how long it has been serving. An admin that sees a new id
//! at an address knows the earlier process there is gone, and so are the runs it accepted and
//! never reported; the uptime tells it which runs those were without comparing clocks across
//! machines. It also lists the names of the handlers the process runs, which a Chime admin
//! suggests when a job is made. XXL-JOB admins ignore the extra key.

use crate::admin::AdminClient;
use chime_protocol::{paths, ExecutorInstance, RegistryParam, MAX_HANDLER_NAME_CHARS, MAX_REPORTED_HANDLERS};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// Which executor process this is, as sent with every registration.
#[derive(Clone, Debug)]
pub(crate) struct Instance {
    /// Random per start (hex, 32 characters; the admin accepts up to 64).
    id: String,
    /// When the server started serving: a monotonic clock, so a wall-clock step cannot make
    /// the uptime jump or run backwards.
    serving_since: Instant,
    /// The handler names reported, sorted.
    handlers: Vec<String>,
}

impl Instance {
    /// A new instance running `handlers`, whose uptime counts from now. The names reported are
    /// the first [`MAX_REPORTED_HANDLERS`] in order that an admin accepts (a longer list, or a
    /// name a job could not carry, would have the whole registration refused).
    pub(crate) fn new<'a>(handlers: impl IntoIterator<Item = &'a String>) -> Instance {
        let mut handlers: Vec<String> = handlers
            .into_iter()
            .map(|n| n.trim())
            .filter(|n| {
                !n.is_empty() && n.chars().count() <= MAX_HANDLER_NAME_CHARS && !n.chars().any(char::is_control)
            })
            .map(str::to_owned)
            .collect();
        handlers.sort_unstable();
        handlers.dedup();
        handlers.truncate(MAX_REPORTED_HANDLERS);
        Instance {
            id: crate::token::instance_id(),
            serving_since: Instant::now(),
            handlers,
        }
    }

    /// The instance id.
    pub(crate) fn id(&self) -> &str {
        &self.id
    }

    /// The wire form, with the uptime as of now.
    fn describe(&self) -> ExecutorInstance {
        ExecutorInstance {
            id: self.id.clone(),
            uptime_ms: u64::try_from(self.serving_since.elapsed().as_millis()).unwrap_or(u64::MAX),
            handlers: self.handlers.clone(),
        }
    }
}

/// The registration body, built at send time: the uptime in it must be that of the moment it
/// leaves, not of the first beat.
pub(crate) fn body(app_name: &str, address: &str, instance: &Instance) -> String {
    let param = RegistryParam {
        instance: Some(instance.describe()),
        ..RegistryParam::executor(app_name, address)
    };
    serde_json::to_string(&param).expect("registry params serialize")
}

/// Registers every `interval` until `stop` is cancelled: the first time at once, or, with
/// `linked`, after one interval — each link registers by itself the moment it comes up, and a
/// registration at start, before any link is up, could only fail.
pub(crate) async fn heartbeat(
    admin: AdminClient,
    app_name: String,
    address: String,
    instance: Instance,
    interval: Duration,
    linked: bool,
    stop: CancellationToken,
) {
    let first = tokio::time::Instant::now() + if linked { interval } else { Duration::ZERO };
    let mut ticker = tokio::time::interval_at(first, interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut was_ok = None;
    loop {
        tokio::select! {
            _ = ticker.tick() => {}
            _ = stop.cancelled() => return,
        }
        let result = tokio::select! {
            r = admin.post_all(paths::API_REGISTRY, body(&app_name, &address, &instance)) => r,
            _ = stop.cancelled() => return,
        };
        match (&result, was_ok) {
            (Ok(()), Some(true)) => tracing::debug!("registry heartbeat accepted"),
            (Ok(()), _) => tracing::info!(app_name, address, instance = instance.id(), "registered with the admin"),
            (Err(err), _) => tracing::warn!(error = %err, "registry heartbeat failed"),
        }
        was_ok = Some(result.is_ok());
    }
}

/// Tells every admin this address is going away, so no trigger is routed here meanwhile.
pub(crate) async fn remove(admin: &AdminClient, app_name: &str, address: &str, instance: &Instance) {
    match admin
        .post_all(paths::API_REGISTRY_REMOVE, body(app_name, address, instance))
        .await
    {
        Ok(()) => tracing::info!(app_name, address, "registry removed"),
        Err(err) => tracing::warn!(error = %err, "registryRemove failed"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_body_carries_the_instance_with_the_uptime_of_the_moment_it_is_built() {
        let instance = Instance {
            id: "ab12".into(),
            serving_since: Instant::now() - Duration::from_secs(5),
            handlers: vec!["demoJobHandler".into()],
        };
        let value: serde_json::Value = serde_json::from_str(&body("app", "http://h:1/", &instance)).unwrap();
        assert_eq!(value["registryGroup"], "EXECUTOR");
        assert_eq!(value["registryKey"], "app");
        assert_eq!(value["registryValue"], "http://h:1/");
        assert_eq!(value["instance"]["id"], "ab12");
        assert!(value["instance"]["uptimeMs"].as_u64().unwrap() >= 5000, "{value}");
        assert_eq!(value["instance"]["handlers"], serde_json::json!(["demoJobHandler"]));
    }

    #[test]
    fn only_names_an_admin_accepts_are_reported() {
        let mut names: Vec<String> = (0..150).map(|i| format!("h{i:03}")).collect();
        names.push("x".repeat(MAX_HANDLER_NAME_CHARS + 1));
        names.push("line\nbreak".into());
        names.push("h000".into());
        let instance = Instance::new(&names);
        assert_eq!(instance.handlers.len(), MAX_REPORTED_HANDLERS);
        assert_eq!(instance.handlers[0], "h000");
        assert_eq!(instance.handlers[MAX_REPORTED_HANDLERS - 1], "h099");
        let param = RegistryParam {
            instance: Some(instance.describe()),
            ..RegistryParam::executor("app", "http://h:1/")
        };
        assert_eq!(param.validate(), Ok(()));
    }
}
