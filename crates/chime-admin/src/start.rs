//! Starting a scheduling center: database and migrations, the first user, partition leases,
//! recovery of pending runs, then every loop and the HTTP server. The one module that knows all
//! the others: nothing imports it but the crate root, so wiring never closes an import cycle.

use crate::center::Admin;
use crate::config::AdminConfig;
use crate::store::{Store, StoreError};
use std::net::SocketAddr;
use std::sync::Arc;

/// Why the admin could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The configuration is unsafe or invalid.
    #[error("{0}")]
    Config(String),
    /// The database could not be opened or migrated.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The listen address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// Address.
        addr: SocketAddr,
        /// Cause.
        source: std::io::Error,
    },
}

/// A running admin: its address, and a way to stop it.
#[derive(Debug)]
pub struct AdminHandle {
    /// Where the HTTP server listens.
    pub local_addr: SocketAddr,
    /// The shared state (for in-process callers and tests).
    pub admin: Arc<Admin>,
    tasks: tokio::task::JoinSet<()>,
}

impl AdminHandle {
    /// Stops the loops and the HTTP server and waits for them.
    pub async fn shutdown(mut self) {
        self.admin.shutdown.cancel();
        while self.tasks.join_next().await.is_some() {}
        self.admin.store.close().await;
    }

    /// Waits until the admin stops (after [`Admin::shutdown`] is cancelled, e.g. by a signal).
    pub async fn wait(mut self) {
        while self.tasks.join_next().await.is_some() {}
        self.admin.store.close().await;
    }
}

/// Starts the scheduling center: database and migrations, first user, partition leases,
/// recovery of pending runs, then the loops and the HTTP server.
pub async fn start(config: AdminConfig) -> Result<AdminHandle, StartError> {
    if let Some(problem) = config.safety_problem() {
        return Err(StartError::Config(problem));
    }
    if let Some(cp) = &config.context_path {
        if !cp.starts_with('/') || cp.len() < 2 || cp.ends_with('/') || cp.contains("//") {
            return Err(StartError::Config(format!(
                "context path '{cp}' must look like /xxl-job-admin"
            )));
        }
    }
    if config.default_time_zone.parse::<chrono_tz::Tz>().is_err() {
        return Err(StartError::Config(format!(
            "unknown default time zone '{}'",
            config.default_time_zone
        )));
    }
    let store = Store::connect(&config.db_url).await?;
    crate::http::auth::ensure_first_user(&store, config.admin_password.as_deref()).await?;
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .map_err(|source| StartError::Bind {
            addr: config.listen,
            source,
        })?;
    let local_addr = listener.local_addr().map_err(|source| StartError::Bind {
        addr: config.listen,
        source,
    })?;

    let (admin, channels) = Admin::new(config, store);
    let admin = Arc::new(admin);
    admin.directory.refresh().await?;

    let mut tasks = tokio::task::JoinSet::new();
    tasks.spawn(crate::results::run(admin.clone(), channels.results));
    tasks.spawn(crate::schedule::wheel::run(admin.clone(), channels.wheel));
    let acquired = crate::schedule::lease::balance(&admin, true).await?;
    crate::schedule::recover(&admin, &acquired).await?;
    tasks.spawn(crate::schedule::lease::run(admin.clone()));
    tasks.spawn(crate::schedule::run_claims(admin.clone()));
    tasks.spawn(crate::monitor::run_registry_refresh(admin.clone()));
    tasks.spawn(crate::monitor::run_lost_sweep(admin.clone()));
    tasks.spawn(crate::alarm::run(admin.clone(), channels.alarms));
    tasks.spawn(crate::retention::run(admin.clone()));
    if admin.store.backend() == crate::store::Backend::Sqlite {
        tasks.spawn(run_wal_checkpoints(admin.clone()));
    }
    let app = crate::http::router(admin.clone());
    let shutdown = admin.shutdown.clone();
    tasks.spawn(async move {
        let app = app.into_make_service_with_connect_info::<SocketAddr>();
        let serve = axum::serve(listener, app).with_graceful_shutdown(async move { shutdown.cancelled().await });
        if let Err(e) = serve.await {
            tracing::error!(error = %e, "HTTP server stopped");
        }
    });
    tracing::info!(%local_addr, db = %admin.store.backend().name(), node = %admin.config.node_id, "scheduling center started");
    Ok(AdminHandle {
        local_addr,
        admin,
        tasks,
    })
}

/// SQLite: checkpoints the write-ahead log once a second off the writing connection (see
/// `Store::checkpoint_wal`), until shutdown.
async fn run_wal_checkpoints(admin: Arc<Admin>) {
    loop {
        tokio::select! {
            _ = admin.shutdown.cancelled() => return,
            _ = tokio::time::sleep(std::time::Duration::from_secs(1)) => {}
        }
        if let Err(e) = admin.store.checkpoint_wal().await {
            tracing::debug!(error = %e, "WAL checkpoint failed; the writer checkpoints itself past its limit");
        }
    }
}
