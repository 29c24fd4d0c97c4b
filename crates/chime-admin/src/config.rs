//! The scheduling center's settings, each declared once.
//!
//! A setting is one field of [`AdminConfig`]: its doc comment is its help text, its `#[arg]`
//! gives its flag, its `CHIME_*` variable and its default, and its field name is its key in the
//! TOML file (`--default-tz` is `default_tz = "Europe/Berlin"`). clap and serde derive from the
//! same struct, so a setting added here is a flag, a variable and a file key at once, with one
//! default; nothing else lists the settings. Layers: flag > environment > file > default
//! ([`AdminConfig::from_layers`]).

use crate::address_policy::{ExecutorNetworks, TrustedProxies};
use clap::parser::ValueSource;
use clap::{ArgMatches, FromArgMatches};
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// Everything `start` needs to know.
#[derive(Debug, Clone, PartialEq, clap::Args, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AdminConfig {
    /// Address to listen on: executor API, REST API, console, /metrics, /healthz.
    #[arg(long, env = "CHIME_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// Database: sqlite://FILE (created on first start), mysql://USER:PASS@HOST/DB or
    /// postgres://USER@HOST/DB.
    #[arg(
        id = "db",
        long = "db",
        value_name = "URL",
        env = "CHIME_DB",
        default_value = "sqlite://chime.db"
    )]
    #[serde(rename = "db")]
    pub db_url: String,
    /// Token of the executor protocol (XXL-JOB-ACCESS-TOKEN), checked on /api/* and sent to
    /// executors [default: made at the first start and kept in the database; `chime admin
    /// show-token` prints it].
    #[arg(long, env = "CHIME_ACCESS_TOKEN", hide_env_values = true)]
    pub access_token: Option<String>,
    /// Bearer token of the REST API (/v1). Without one the REST API refuses every call.
    #[arg(long, env = "CHIME_API_TOKEN", hide_env_values = true)]
    pub api_token: Option<String>,
    /// Also serve the executor API under this prefix, e.g. /xxl-job-admin.
    #[arg(long, env = "CHIME_CONTEXT_PATH")]
    pub context_path: Option<String>,
    /// Connect and read timeout of calls to executors.
    #[arg(long, env = "CHIME_EXECUTOR_TIMEOUT", default_value = "3s", value_parser = parse_duration)]
    #[serde(with = "duration_text")]
    pub executor_timeout: Duration,
    /// How far ahead fires are claimed into run rows.
    #[arg(long, env = "CHIME_LOOKAHEAD", default_value = "3s", value_parser = parse_duration)]
    #[serde(with = "duration_text")]
    pub lookahead: Duration,
    /// How often the scheduler claims.
    #[arg(long, env = "CHIME_TICK", default_value = "500ms", value_parser = parse_duration)]
    #[serde(with = "duration_text")]
    pub tick: Duration,
    /// A fire later than this is a misfire, handled by the job's misfire policy.
    #[arg(long, env = "CHIME_MISFIRE_THRESHOLD", default_value = "5s", value_parser = parse_duration)]
    #[serde(with = "duration_text")]
    pub misfire_threshold: Duration,
    /// CATCH_UP replays at most this many missed fires per job.
    #[arg(long, env = "CHIME_CATCH_UP_MAX", default_value_t = 100)]
    pub catch_up_max: usize,
    /// CATCH_UP replays at most this many fires per second per job.
    #[arg(long, env = "CHIME_CATCH_UP_RATE", default_value_t = 10)]
    pub catch_up_rate: u32,
    /// An executor without heartbeat for this long is dead and leaves its group's list.
    #[arg(long, env = "CHIME_DEAD_TIMEOUT", default_value = "90s", value_parser = parse_duration)]
    #[serde(with = "duration_text")]
    pub dead_timeout: Duration,
    /// How often groups and heartbeats are reloaded from the database.
    #[arg(long, env = "CHIME_REGISTRY_REFRESH", default_value = "5s", value_parser = parse_duration)]
    #[serde(with = "duration_text")]
    pub registry_refresh: Duration,
    /// How often runs whose result will not come (executor vanished, result lost) are looked for.
    #[arg(long, env = "CHIME_LOST_SWEEP", default_value = "5s", value_parser = parse_duration)]
    #[serde(with = "duration_text")]
    pub lost_sweep: Duration,
    /// A run of a job without executor timeout that has waited this long for its result is
    /// failed as lost when its executor says the job is neither running nor queued there.
    /// XXL-JOB's lost-job monitor waits ten minutes too.
    #[arg(long, env = "CHIME_LOST_RESULT_AFTER", default_value = "10m", value_parser = parse_duration)]
    #[serde(with = "duration_text")]
    pub lost_result_after: Duration,
    /// A run is failed as lost when its executor says twice, at least this far apart, that the
    /// run's job is neither running nor queued there. Longer than an executor's callback retry
    /// (xxl-job-core re-sends failed callbacks every 30 s), so a result still on its way is
    /// never taken for lost.
    #[arg(long, env = "CHIME_LOST_IDLE_CONFIRM", default_value = "35s", value_parser = parse_duration)]
    #[serde(with = "duration_text")]
    pub lost_idle_confirm: Duration,
    /// Networks the admin may call executors in, as CIDRs (10.0.0.0/8,fd00::/8); registrations
    /// and manual addresses elsewhere are refused [default: all but link-local 169.254.0.0/16
    /// and fe80::/10].
    #[arg(long, env = "CHIME_EXECUTOR_NETWORKS", default_value = "", hide_default_value = true)]
    pub executor_networks: ExecutorNetworks,
    /// Partition lease time, renewed every third of it: an admin that dies loses its
    /// partitions to the others within about 1⅓ of it; one that cannot renew stops sending
    /// after ⅘ of it.
    #[arg(long, env = "CHIME_LEASE_TTL", default_value = "2s", value_parser = parse_duration)]
    #[serde(with = "duration_text")]
    pub lease_ttl: Duration,
    /// Runs being sent at once over all executors.
    #[arg(long, env = "CHIME_DISPATCH_CONCURRENCY", default_value_t = 1024)]
    pub dispatch_concurrency: usize,
    /// Runs being sent at once to one executor.
    #[arg(long, env = "CHIME_PER_EXECUTOR_CONCURRENCY", default_value_t = 256)]
    pub per_executor_concurrency: usize,
    /// Most fires one claim transaction reads (jobs). Not a flag: a tuning constant kept here
    /// so benchmarks and tests can change it.
    #[arg(skip = 20_000)]
    #[serde(skip)]
    pub claim_batch: i64,
    /// Time zone of jobs created without one [default: this machine's]. The key
    /// `default_time_zone` of older files is read too.
    #[arg(
        id = "default_tz",
        long = "default-tz",
        env = "CHIME_DEFAULT_TZ",
        default_value = "",
        hide_default_value = true
    )]
    #[serde(rename = "default_tz", alias = "default_time_zone")]
    pub default_time_zone: String,
    /// This admin's name in partition leases [default: host-pid-random].
    #[arg(long, env = "CHIME_NODE_ID", default_value = "", hide_default_value = true)]
    pub node_id: String,
    /// Base URL at which the other admins reach this one, to pass calls to executors linked
    /// only here, e.g. http://10.0.0.4:8080 [default: http://<listen address>, this machine's
    /// host name when listening on all addresses].
    #[arg(long, env = "CHIME_ADVERTISE_URL", value_name = "URL")]
    pub advertise_url: Option<String>,
    /// Password of the first `admin` user; random (printed once) when unset. Read from
    /// `CHIME_ADMIN_PASSWORD` only, never a flag or a file key: a secret on a command line is
    /// visible to every user of the machine.
    #[arg(skip)]
    #[serde(skip)]
    pub admin_password: Option<String>,
    /// Mark the console session cookie Secure (when served over https or behind a TLS proxy).
    #[arg(long, env = "CHIME_COOKIE_SECURE")]
    pub cookie_secure: bool,
    /// Reverse proxies whose X-Forwarded-For names the client, as CIDRs or addresses
    /// (10.0.0.0/8,127.0.0.1): failed console logins are then counted by the address the proxy
    /// saw [default: none; the header is ignored, as any client can write it].
    #[arg(long, env = "CHIME_TRUSTED_PROXIES", default_value = "", hide_default_value = true)]
    pub trusted_proxies: TrustedProxies,
    /// Who may log in with a password kept by Chime: `all` local users, or only local
    /// `admins` (break-glass accounts) once people log in through the directory.
    #[arg(long, env = "CHIME_LOCAL_LOGIN", value_enum, default_value = "all")]
    pub local_login: LocalLogin,
    /// LDAP directory for console logins: ldap://HOST:389 (with --ldap-starttls) or
    /// ldaps://HOST:636 [default: none]. Its certificate is checked against the system's
    /// store and --tls-ca.
    #[arg(long, env = "CHIME_LDAP_URL")]
    pub ldap_url: Option<String>,
    /// Upgrade the ldap:// connection with StartTLS before any password is sent.
    #[arg(long, env = "CHIME_LDAP_STARTTLS")]
    pub ldap_starttls: bool,
    /// Bind directly as this DN, {username} replaced: uid={username},ou=people,dc=example,dc=org,
    /// or for Active Directory {username}@corp.example.com [default: search for the user with
    /// --ldap-bind-dn under --ldap-user-base].
    #[arg(long, env = "CHIME_LDAP_USER_DN")]
    pub ldap_user_dn: Option<String>,
    /// The service account that searches for users (search-then-bind).
    #[arg(long, env = "CHIME_LDAP_BIND_DN")]
    pub ldap_bind_dn: Option<String>,
    /// The service account's password.
    #[arg(long, env = "CHIME_LDAP_BIND_PASSWORD", hide_env_values = true)]
    pub ldap_bind_password: Option<String>,
    /// Where users are searched: ou=people,dc=example,dc=org.
    #[arg(long, env = "CHIME_LDAP_USER_BASE")]
    pub ldap_user_base: Option<String>,
    /// The filter that finds a user, {username} replaced; Active Directory:
    /// (sAMAccountName={username}).
    #[arg(long, env = "CHIME_LDAP_USER_FILTER", default_value = "(uid={username})")]
    pub ldap_user_filter: String,
    /// The user entry's attribute that lists its groups (Active Directory, OpenLDAP's memberof
    /// overlay).
    #[arg(long, env = "CHIME_LDAP_GROUP_ATTRIBUTE", default_value = "memberOf")]
    pub ldap_group_attribute: String,
    /// Where groups naming the user are searched, besides the attribute: ou=groups,dc=example,dc=org
    /// [default: the attribute only].
    #[arg(long, env = "CHIME_LDAP_GROUP_BASE")]
    pub ldap_group_base: Option<String>,
    /// The filter of a user's groups under --ldap-group-base, {dn} and {username} replaced.
    #[arg(
        long,
        env = "CHIME_LDAP_GROUP_FILTER",
        default_value = "(|(member={dn})(uniqueMember={dn})(memberUid={username}))"
    )]
    pub ldap_group_filter: String,
    /// Time limit of each directory operation.
    #[arg(long, env = "CHIME_LDAP_TIMEOUT", default_value = "5s", value_parser = parse_duration)]
    #[serde(with = "duration_text")]
    pub ldap_timeout: Duration,
    /// The roles the directory's groups give: GROUP => admin, or GROUP => APP:ROLE (ROLE:
    /// viewer, operator, editor, group_admin), separated by `;`. GROUP is a DN or its first
    /// value: chime-admins => admin; billing-ops => billing:operator. A user whose groups give
    /// nothing is not let in.
    #[arg(long, env = "CHIME_SSO_ROLES", default_value = "", hide_default_value = true)]
    pub sso_roles: crate::sso::RoleRules,
    /// OpenID Connect providers for console logins, one per line or separated by `;`: NAME
    /// issuer=URL client_id=ID [client_secret_file=FILE | client_secret=S]
    /// [scopes=openid,profile,email] [username_claim=preferred_username] [groups_claim=groups].
    /// The provider redirects back to PUBLIC_URL/console/oidc/NAME/callback (needs
    /// --public-url); --sso-roles maps the groups claim's values to roles [default: none].
    #[arg(
        long,
        env = "CHIME_OIDC",
        default_value = "",
        hide_default_value = true,
        hide_env_values = true
    )]
    pub oidc: crate::sso::OidcProviders,
    /// SMTP server for alarm e-mails: smtps://USER:PASS@HOST:465 or
    /// smtp://USER:PASS@HOST:587?tls=required [default: no e-mail]. Holds a password: log it
    /// only through `store::redact_url`.
    #[arg(long, env = "CHIME_SMTP_URL", hide_env_values = true)]
    pub smtp_url: Option<String>,
    /// Sender of alarm e-mails.
    #[arg(long, env = "CHIME_ALARM_FROM", default_value = "chime@localhost")]
    pub alarm_from: String,
    /// URL that receives a JSON POST for every run that fails for good [default: none].
    #[arg(long, env = "CHIME_ALARM_WEBHOOK", hide_env_values = true)]
    pub alarm_webhook: Option<String>,
    /// Attempts to deliver an alarm to each of its channels before the delivery is given up.
    #[arg(long, env = "CHIME_ALARM_ATTEMPTS", default_value_t = 4)]
    pub alarm_attempts: u32,
    /// Pause before a delivery's second attempt, doubled for each further one (at most 5 min).
    #[arg(long, env = "CHIME_ALARM_RETRY_PAUSE", default_value = "500ms", value_parser = parse_duration)]
    #[serde(with = "duration_text")]
    pub alarm_retry_pause: Duration,
    /// Time limit of one delivery: an SMTP conversation or a webhook call.
    #[arg(long, env = "CHIME_ALARM_TIMEOUT", default_value = "10s", value_parser = parse_duration)]
    #[serde(with = "duration_text")]
    pub alarm_timeout: Duration,
    /// When this many alarm deliveries to one channel are due at once (failures that came
    /// together), they go as one digest listing them; 0 sends each alone.
    #[arg(long, env = "CHIME_ALARM_DIGEST_AT", default_value_t = 5)]
    pub alarm_digest_at: u32,
    /// The language of alarm messages whose job names none (`alarm_language`): `en` or `zh`.
    #[arg(long, env = "CHIME_ALARM_LANGUAGE", value_enum, default_value = "en")]
    pub alarm_language: crate::api::alarm_policy::AlarmLanguage,
    /// The console's address as users reach it (https://chime.example.com): alarms link to the
    /// failed run there [default: no link].
    #[arg(long, env = "CHIME_PUBLIC_URL")]
    pub public_url: Option<String>,
    /// Finished runs older than this many days are deleted, daily; 0 keeps them forever.
    #[arg(long, env = "CHIME_RUN_RETENTION_DAYS", default_value_t = 30)]
    pub run_retention_days: u32,
    /// Audit log entries older than this many days are deleted, daily; 0 keeps them forever.
    #[arg(long, env = "CHIME_AUDIT_RETENTION_DAYS", default_value_t = 365)]
    pub audit_retention_days: u32,
    /// A new connection must send a whole request head within this, and so must a kept-alive
    /// one from the first byte of its next request; else it is closed (slow or stalled
    /// senders hold no connection).
    #[arg(long, env = "CHIME_HTTP_HEADER_TIMEOUT", default_value = "10s", value_parser = parse_duration)]
    #[serde(with = "duration_text")]
    pub http_header_timeout: Duration,
    /// A kept-alive connection without a request, a request body that sends nothing or a
    /// response the client does not read, for this long, is closed. Executor links (WebSockets)
    /// have their own pings instead.
    #[arg(long, env = "CHIME_HTTP_IDLE_TIMEOUT", default_value = "60s", value_parser = parse_duration)]
    #[serde(with = "duration_text")]
    pub http_idle_timeout: Duration,
    /// Most connections open at once, executor links included; at the cap new ones wait to be
    /// accepted. 0: 4,096 (or half) below the limit on open files, which the admin raises to
    /// the hard limit at start.
    #[arg(long, env = "CHIME_MAX_CONNECTIONS", default_value_t = 0)]
    pub max_connections: usize,
    /// Serve HTTPS with this certificate chain (PEM: this server's certificate, then the
    /// intermediates), with --tls-key. Read again on SIGHUP and when the file changes
    /// [default: plain HTTP].
    #[arg(long, env = "CHIME_TLS_CERT", value_name = "FILE")]
    pub tls_cert: Option<PathBuf>,
    /// The private key (PEM) of --tls-cert.
    #[arg(long, env = "CHIME_TLS_KEY", value_name = "FILE")]
    pub tls_key: Option<PathBuf>,
    /// CA certificates (PEM) trusted for https:// executors and admins besides the system's
    /// store (which SSL_CERT_FILE can name): a private CA [default: the system's store only].
    #[arg(long, env = "CHIME_TLS_CA", value_name = "FILE")]
    pub tls_ca: Option<PathBuf>,
}

impl Default for AdminConfig {
    /// Every setting at the default its `#[arg]` declares (no environment is read).
    fn default() -> AdminConfig {
        let cmd =
            <AdminConfig as clap::Args>::augment_args(clap::Command::new("defaults")).mut_args(|a| a.env(None::<&str>));
        let matches = cmd
            .try_get_matches_from(["defaults"])
            .expect("the declared defaults parse");
        let mut c = AdminConfig::from_arg_matches(&matches).expect("the declared defaults parse");
        c.resolve_machine_defaults();
        c
    }
}

impl AdminConfig {
    /// Defaults for everything but the database URL.
    pub fn new(db_url: impl Into<String>) -> AdminConfig {
        AdminConfig {
            db_url: db_url.into(),
            ..AdminConfig::default()
        }
    }

    /// The configuration from parsed flags and environment (`matches`, from a command built
    /// with [`clap::Args::augment_args`] of this type) and the text of a TOML file: a value
    /// from the file counts where no flag or variable gave one. Errors name the setting.
    pub fn from_layers(matches: &ArgMatches, file: Option<&str>) -> Result<AdminConfig, String> {
        let given = AdminConfig::from_arg_matches(matches).map_err(|e| e.to_string())?;
        let Some(text) = file else {
            return given.checked();
        };
        let file: toml::Table = toml::from_str(text).map_err(|e| e.to_string())?;
        // Typed first, for errors that name the key (unknown keys, wrong types, bad values).
        AdminConfig::deserialize(toml::Value::Table(file.clone())).map_err(|e| e.to_string())?;
        let mut merged = toml::Table::try_from(&given).map_err(|e| e.to_string())?;
        for (key, value) in file {
            let key = if key == "default_time_zone" {
                "default_tz".to_owned()
            } else {
                key
            };
            let from_flag_or_env = matches
                .value_source(&key)
                .is_some_and(|s| s != ValueSource::DefaultValue);
            if !from_flag_or_env {
                merged.insert(key, value);
            }
        }
        AdminConfig::deserialize(toml::Value::Table(merged))
            .map_err(|e| e.to_string())?
            .checked()
    }

    /// Reads a TOML file's settings over the defaults (tests and tools; `chime admin` uses
    /// [`AdminConfig::from_layers`]).
    pub fn from_toml(text: &str) -> Result<AdminConfig, String> {
        let c: AdminConfig = toml::from_str(text).map_err(|e| e.to_string())?;
        c.checked()
    }

    /// How the HTTP server treats its connections.
    pub fn serve_limits(&self) -> chime_serve::Limits {
        chime_serve::Limits {
            header_timeout: self.http_header_timeout,
            idle_timeout: self.http_idle_timeout,
            max_connections: self.max_connections,
        }
    }

    /// The server's TLS, when --tls-cert and --tls-key are set: the files read and checked.
    pub fn server_tls(&self) -> Result<Option<chime_serve::tls::ServerTls>, chime_serve::tls::TlsError> {
        match (&self.tls_cert, &self.tls_key) {
            (Some(cert), Some(key)) => chime_serve::tls::ServerTls::from_files(cert, key).map(Some),
            _ => Ok(None),
        }
    }

    /// The directory login's settings; `None` without `ldap_url`.
    pub fn ldap(&self) -> Option<crate::sso::LdapSettings> {
        let url = self.ldap_url.clone()?;
        Some(crate::sso::LdapSettings {
            url,
            starttls: self.ldap_starttls,
            user_dn: self.ldap_user_dn.clone(),
            bind_dn: self.ldap_bind_dn.clone(),
            bind_password: self.ldap_bind_password.clone(),
            user_base: self.ldap_user_base.clone(),
            user_filter: self.ldap_user_filter.clone(),
            group_attribute: self.ldap_group_attribute.clone(),
            group_base: self.ldap_group_base.clone(),
            group_filter: self.ldap_group_filter.clone(),
            timeout: self.ldap_timeout,
        })
    }

    /// Empty LDAP settings are unset; a directory needs a way to find users and rules that
    /// let someone in.
    fn check_ldap(&mut self) -> Result<(), String> {
        for v in [
            &mut self.ldap_url,
            &mut self.ldap_user_dn,
            &mut self.ldap_bind_dn,
            &mut self.ldap_bind_password,
            &mut self.ldap_user_base,
            &mut self.ldap_group_base,
        ] {
            if v.as_deref().is_some_and(|t| t.trim().is_empty()) {
                *v = None;
            }
        }
        let Some(url) = &self.ldap_url else {
            return Ok(());
        };
        if !(url.starts_with("ldap://") || url.starts_with("ldaps://")) {
            return Err(format!("ldap_url: '{url}' is not an ldap:// or ldaps:// URL"));
        }
        if self.ldap_starttls && url.starts_with("ldaps://") {
            return Err("ldap_starttls: an ldaps:// URL is TLS already".to_owned());
        }
        if self.ldap_user_dn.is_none() && (self.ldap_bind_dn.is_none() || self.ldap_user_base.is_none()) {
            return Err(
                "ldap_url: set ldap_user_dn, or ldap_bind_dn and ldap_user_base to search for users".to_owned(),
            );
        }
        if self.ldap_user_dn.as_deref().is_some_and(|t| !t.contains("{username}")) {
            return Err("ldap_user_dn: must contain {username}".to_owned());
        }
        if self.sso_roles.is_empty() {
            return Err("sso_roles: with ldap_url, say which directory groups give which roles (GROUP => admin; GROUP => APP:ROLE)".to_owned());
        }
        if self.ldap_timeout.is_zero() {
            return Err("ldap_timeout must be positive".to_owned());
        }
        Ok(())
    }

    /// What the admin trusts when it calls https:// executors and admins: the system's store
    /// and --tls-ca.
    pub fn client_tls(&self) -> Result<rustls::ClientConfig, chime_serve::tls::TlsError> {
        chime_serve::tls::client_config(self.tls_ca.as_deref())
    }

    /// Fills what depends on the machine (zone, node id) and checks what one setting alone
    /// cannot: positive intervals, lookahead of at least a tick, usable alarm addresses.
    /// Errors name the setting.
    pub fn checked(mut self) -> Result<AdminConfig, String> {
        self.resolve_machine_defaults();
        for token in [&mut self.access_token, &mut self.api_token] {
            if token.as_deref().is_some_and(str::is_empty) {
                *token = None;
            }
        }
        self.context_path = self
            .context_path
            .take()
            .filter(|p| !p.is_empty() && p != "/")
            .map(|p| p.trim_end_matches('/').to_owned());
        if self.tick.is_zero()
            || self.lease_ttl < Duration::from_secs(1)
            || self.registry_refresh.is_zero()
            || self.lost_sweep.is_zero()
        {
            return Err("tick, registry_refresh and lost_sweep must be positive, lease_ttl at least 1s".to_owned());
        }
        if self.http_header_timeout.is_zero() || self.http_idle_timeout.is_zero() {
            return Err("http_header_timeout and http_idle_timeout must be positive".to_owned());
        }
        if self.lookahead < self.tick {
            return Err("lookahead must be at least one tick".to_owned());
        }
        self.catch_up_rate = self.catch_up_rate.max(1);
        self.dispatch_concurrency = self.dispatch_concurrency.max(1);
        self.per_executor_concurrency = self.per_executor_concurrency.max(1);
        if self.default_time_zone.parse::<chrono_tz::Tz>().is_err() {
            return Err(format!("default_tz: unknown time zone '{}'", self.default_time_zone));
        }
        self.check_ldap()?;
        self.smtp_url = self.smtp_url.take().filter(|u| !u.is_empty());
        if let Some(url) = &self.smtp_url {
            crate::alarm::deliver::check_smtp_url(url).map_err(|e| format!("smtp_url: {e}"))?;
        }
        if self.alarm_from.is_empty() {
            self.alarm_from = "chime@localhost".to_owned();
        }
        crate::alarm::deliver::check_mailbox(&self.alarm_from).map_err(|e| format!("alarm_from: {e}"))?;
        self.advertise_url = self.advertise_url.take().filter(|u| !u.trim().is_empty());
        if let Some(url) = &self.advertise_url {
            check_advertise_url(url).map_err(|e| format!("advertise_url: {e}"))?;
        }
        for path in [&mut self.tls_cert, &mut self.tls_key, &mut self.tls_ca] {
            if path.as_ref().is_some_and(|p| p.as_os_str().is_empty()) {
                *path = None;
            }
        }
        if self.tls_cert.is_some() != self.tls_key.is_some() {
            return Err("tls_cert and tls_key: set both to serve HTTPS, or neither".to_owned());
        }
        if self.alarm_attempts == 0 || self.alarm_timeout.is_zero() {
            return Err("alarm_attempts and alarm_timeout must be positive".to_owned());
        }
        self.public_url = self
            .public_url
            .take()
            .map(|u| u.trim().trim_end_matches('/').to_owned())
            .filter(|u| !u.is_empty());
        if let Some(url) = &self.public_url {
            crate::alarm::deliver::check_webhook_url(url).map_err(|e| format!("public_url: {e}"))?;
        }
        if !self.oidc.is_empty() {
            if self.public_url.is_none() {
                return Err("oidc: set public_url, the console's address the provider sends users back to".to_owned());
            }
            for provider in &self.oidc.0 {
                provider.client_secret()?;
            }
            if self.sso_roles.is_empty() {
                return Err(
                    "sso_roles: with oidc, say which groups give which roles (GROUP => admin; GROUP => APP:ROLE)"
                        .to_owned(),
                );
            }
        }
        self.alarm_webhook = self.alarm_webhook.take().filter(|u| !u.is_empty());
        if let Some(url) = &self.alarm_webhook {
            crate::alarm::deliver::check_webhook_url(url).map_err(|e| format!("alarm_webhook: {e}"))?;
        }
        Ok(self)
    }

    /// Defaults that depend on the machine cannot be written in `#[arg]`: an empty zone is this
    /// machine's, an empty node id is made from host, process and a random number.
    fn resolve_machine_defaults(&mut self) {
        if self.default_time_zone.is_empty() {
            self.default_time_zone = crate::calendar::local_zone_name();
        }
        if self.node_id.is_empty() {
            self.node_id = format!("{}-{}-{:08x}", hostname(), std::process::id(), rand::random::<u32>());
        }
    }
}

/// An advertised URL is `http(s)://host[:port][/path]`: it is stored for the other admins,
/// which call it.
fn check_advertise_url(url: &str) -> Result<(), String> {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
        .ok_or("must start with http:// or https://")?;
    if rest.is_empty() || rest.starts_with('/') || url.len() > 255 || url.chars().any(|c| c.is_whitespace()) {
        return Err(format!("{url:?} is not a base URL of at most 255 characters"));
    }
    Ok(())
}

impl AdminConfig {
    /// The base URL other admins reach this one at, once it listens on `local`: the
    /// configured `--advertise-url`, else `http://` (`https://` with --tls-cert) the listen
    /// address (this machine's host name when listening on all addresses), with the context
    /// path.
    pub fn advertised_url(&self, local: SocketAddr) -> String {
        if let Some(url) = &self.advertise_url {
            return url.trim_end_matches('/').to_owned();
        }
        let host = if local.ip().is_unspecified() {
            hostname()
        } else if local.is_ipv6() {
            format!("[{}]", local.ip())
        } else {
            local.ip().to_string()
        };
        let context = self.context_path.as_deref().unwrap_or("").trim_end_matches('/');
        let scheme = if self.tls_cert.is_some() { "https" } else { "http" };
        format!("{scheme}://{host}:{}{context}", local.port())
    }
}

fn hostname() -> String {
    std::fs::read_to_string("/etc/hostname")
        .map(|s| s.trim().to_owned())
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "admin".to_owned())
}

/// Parses a duration: `humantime`'s forms (`3s`, `500ms`, `2m`, `1h 30m`, `2min`) or a bare
/// number of seconds (`7`, `1.5`), as earlier versions accepted.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let d = match t.parse::<f64>() {
        Ok(secs) if (0.0..=1e9).contains(&secs) => Duration::from_secs_f64(secs),
        Ok(_) => return Err(format!("'{text}' is out of range")),
        Err(_) => humantime::parse_duration(t)
            .map_err(|e| format!("'{text}' is not a duration (use e.g. 3s, 500ms, 2m): {e}"))?,
    };
    if d > Duration::from_secs(1_000_000_000) {
        return Err(format!("'{text}' is out of range"));
    }
    Ok(d)
}

/// Durations in the TOML file as text (`"3s"`), the same text flags take.
mod duration_text {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&humantime::format_duration(*d).to_string())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Text {
            Text(String),
            Seconds(f64),
        }
        let text = match Text::deserialize(d)? {
            Text::Text(t) => t,
            Text::Seconds(n) => n.to_string(),
        };
        super::parse_duration(&text).map_err(serde::de::Error::custom)
    }
}

/// Who may log in with a password kept by Chime.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum LocalLogin {
    /// Every local user.
    All,
    /// Local administrators only: break-glass accounts beside a directory.
    Admins,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Args;

    /// Parses `args` as flags of a command made of the settings, with the environment as it is.
    fn parse(args: &[&str]) -> ArgMatches {
        AdminConfig::augment_args(clap::Command::new("admin"))
            .try_get_matches_from(std::iter::once("admin").chain(args.iter().copied()))
            .unwrap()
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("3s").unwrap(), Duration::from_secs(3));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("7").unwrap(), Duration::from_secs(7));
        assert!(parse_duration("3 parsecs").is_err());
        assert_eq!(parse_duration("1h 30m").unwrap(), Duration::from_secs(5400));
        assert!(parse_duration("-1").is_err());
    }

    #[test]
    fn layers_and_file() {
        let file = "listen = \"0.0.0.0:9000\"\naccess_token = \"t\"\ndead_timeout = \"10s\"\n";
        let c = AdminConfig::from_layers(&parse(&["--listen", "127.0.0.1:9001"]), Some(file)).unwrap();
        assert_eq!(c.listen.port(), 9001);
        assert_eq!(c.access_token.as_deref(), Some("t"));
        assert_eq!(c.dead_timeout, Duration::from_secs(10));
        assert!(AdminConfig::from_toml("bogus = 1").is_err());
        let bad =
            AdminConfig::augment_args(clap::Command::new("admin")).try_get_matches_from(["admin", "--listen", "nope"]);
        assert!(bad.unwrap_err().to_string().contains("listen"));
        let bad = AdminConfig::from_toml("listen = \"nope\"").unwrap_err();
        assert!(bad.contains("listen"), "{bad}");
    }

    #[test]
    fn defaults_are_the_declared_ones() {
        let c = AdminConfig::new("sqlite::memory:");
        assert_eq!(c.listen, "127.0.0.1:8080".parse().unwrap());
        assert_eq!(c.tick, Duration::from_millis(500));
        assert_eq!(c.lost_idle_confirm, Duration::from_secs(35));
        assert_eq!(
            (c.catch_up_max, c.dispatch_concurrency, c.claim_batch),
            (100, 1024, 20_000)
        );
        assert_eq!(c.executor_networks, ExecutorNetworks::default());
        assert!(!c.default_time_zone.is_empty() && !c.node_id.is_empty());
        // The file's value counts where no flag gave one; an explicit flag wins over the file.
        let file = "tick = \"200ms\"\nexecutor_networks = \"10.0.0.0/8\"\ncatch_up_max = 7\n";
        let c = AdminConfig::from_layers(&parse(&["--catch-up-max", "9"]), Some(file)).unwrap();
        assert_eq!(c.tick, Duration::from_millis(200));
        assert_eq!(c.executor_networks, "10.0.0.0/8".parse().unwrap());
        assert_eq!(c.catch_up_max, 9);
    }

    #[test]
    fn alarm_and_retention_settings() {
        let c = AdminConfig::from_toml(
            "smtp_url = \"smtps://u:secret@mail.example.com:465\"\nalarm_from = \"Chime <c@example.com>\"\n\
             alarm_webhook = \"https://chat.example.com/hook\"\nrun_retention_days = 7\n",
        )
        .unwrap();
        assert_eq!(c.smtp_url.as_deref(), Some("smtps://u:secret@mail.example.com:465"));
        assert_eq!(c.alarm_from, "Chime <c@example.com>");
        assert_eq!(c.run_retention_days, 7);
        assert_eq!(AdminConfig::new("sqlite::memory:").run_retention_days, 30);
        let plain = AdminConfig {
            smtp_url: Some("smtp://u:secret@mail.example.com:587".into()),
            ..Default::default()
        };
        let e = plain.checked().unwrap_err();
        assert!(e.starts_with("smtp_url") && !e.contains("secret"), "{e}");
        let bad_hook = AdminConfig {
            alarm_webhook: Some("mailto:x@example.com".into()),
            ..Default::default()
        };
        assert!(bad_hook.checked().unwrap_err().starts_with("alarm_webhook"));
    }

    #[test]
    fn tls_needs_a_certificate_and_its_key_and_advertises_https() {
        let c =
            AdminConfig::from_toml("tls_cert = \"/etc/chime/cert.pem\"\ntls_key = \"/etc/chime/key.pem\"\n").unwrap();
        assert_eq!(c.tls_key.as_deref(), Some(std::path::Path::new("/etc/chime/key.pem")));
        assert_eq!(
            c.advertised_url("10.0.0.4:8443".parse().unwrap()),
            "https://10.0.0.4:8443"
        );
        let e = AdminConfig::from_toml("tls_cert = \"/etc/chime/cert.pem\"\n").unwrap_err();
        assert!(e.starts_with("tls_cert"), "{e}");
        let plain = AdminConfig::from_toml("tls_cert = \"\"\ntls_key = \"\"\n").unwrap();
        assert_eq!((plain.tls_cert, plain.tls_key), (None, None));
        assert!(AdminConfig::new("sqlite::memory:")
            .advertised_url("10.0.0.4:8080".parse().unwrap())
            .starts_with("http://"));
    }

    #[test]
    fn zone_and_cookie_keys_are_the_flag_names() {
        let c = AdminConfig::from_toml("default_tz = \"Asia/Tokyo\"\ncookie_secure = true\n").unwrap();
        assert_eq!((c.default_time_zone.as_str(), c.cookie_secure), ("Asia/Tokyo", true));
        let old_key = AdminConfig::from_toml("default_time_zone = \"Europe/Paris\"").unwrap();
        assert_eq!(old_key.default_time_zone, "Europe/Paris");
        let bad = AdminConfig::from_toml("default_tz = \"Mars/Base\"").unwrap_err();
        assert!(bad.starts_with("default_tz"), "{bad}");
    }

    #[test]
    fn every_flag_is_a_toml_key_and_a_chime_variable() {
        let cmd = AdminConfig::augment_args(clap::Command::new("admin"));
        let args: Vec<&clap::Arg> = cmd.get_arguments().collect();
        assert!(args.len() > 25, "{}", args.len());
        for arg in args {
            let long = arg.get_long().expect("every setting has a flag");
            let key = long.replace('-', "_");
            let env = arg.get_env().expect("every setting has a variable").to_string_lossy();
            assert_eq!(env, format!("CHIME_{}", key.to_uppercase()), "--{long}");
            // A value of the wrong type is refused with another message; only an unknown key
            // says "unknown field".
            for value in ["\"x\"", "1", "true"] {
                if let Err(e) = AdminConfig::from_toml(&format!("{key} = {value}")) {
                    assert!(!e.contains("unknown field"), "--{long} has no TOML key: {e}");
                }
            }
        }
    }

    /// docs/admin.md has a row for every setting, with its flag and variable, so the manual
    /// cannot fall behind the one declaration above.
    #[test]
    fn the_manual_lists_every_setting() {
        let manual = include_str!("../../../docs/admin.md");
        let cmd = AdminConfig::augment_args(clap::Command::new("admin"));
        for arg in cmd.get_arguments() {
            let long = arg.get_long().unwrap();
            let env = arg.get_env().unwrap().to_string_lossy().into_owned();
            let row = manual
                .lines()
                .find(|l| l.starts_with(&format!("| `--{long}")))
                .unwrap_or_else(|| panic!("docs/admin.md has no row for --{long}"));
            assert!(
                row.contains(&format!("`{env}`")),
                "the row of --{long} names {env}: {row}"
            );
        }
    }

    /// XXL-JOB-style heartbeats come every 30 s; a run on an executor that stopped must be
    /// failed within three of them (the dead timeout) plus a short sweep period.
    #[test]
    fn lost_runs_are_found_within_three_heartbeats() {
        let c = AdminConfig::new("sqlite::memory:");
        assert!(c.dead_timeout <= Duration::from_secs(90));
        assert!(c.dead_timeout + c.lost_sweep <= Duration::from_secs(95), "{c:?}");
        // The sweep skips younger runs; an executor that took a run right after its heartbeat
        // and died is gone a dead timeout minus one heartbeat period after the trigger, so the
        // sweep must look by then.
        let beat = Duration::from_secs(chime_protocol::messages::BEAT_TIMEOUT_SECS);
        let min_age = crate::monitor::sweep_min_age(c.dead_timeout, c.lost_result_after);
        assert!(min_age <= c.dead_timeout - beat, "{min_age:?}");
    }
}
