//! The registry heartbeat: `POST <admin>/api/registry` at start and every interval, to every
//! admin; `registryRemove` once on shutdown.

use crate::admin::AdminClient;
use chime_protocol::{paths, RegistryParam};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

fn body(app_name: &str, address: &str) -> String {
    serde_json::to_string(&RegistryParam::executor(app_name, address)).expect("registry params serialize")
}

/// Registers now and then every `interval` until `stop` is cancelled.
pub(crate) async fn heartbeat(
    admin: AdminClient,
    app_name: String,
    address: String,
    interval: Duration,
    stop: CancellationToken,
) {
    let body = body(&app_name, &address);
    let mut ticker = tokio::time::interval(interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut was_ok = None;
    loop {
        tokio::select! {
            _ = ticker.tick() => {}
            _ = stop.cancelled() => return,
        }
        let result = tokio::select! {
            r = admin.post_all(paths::API_REGISTRY, body.clone()) => r,
            _ = stop.cancelled() => return,
        };
        match (&result, was_ok) {
            (Ok(()), Some(true)) => tracing::debug!("registry heartbeat accepted"),
            (Ok(()), _) => tracing::info!(app_name, address, "registered with the admin"),
            (Err(err), _) => tracing::warn!(error = %err, "registry heartbeat failed"),
        }
        was_ok = Some(result.is_ok());
    }
}

/// Tells every admin this address is going away, so no trigger is routed here meanwhile.
pub(crate) async fn remove(admin: &AdminClient, app_name: &str, address: &str) {
    match admin
        .post_all(paths::API_REGISTRY_REMOVE, body(app_name, address))
        .await
    {
        Ok(()) => tracing::info!(app_name, address, "registry removed"),
        Err(err) => tracing::warn!(error = %err, "registryRemove failed"),
    }
}
