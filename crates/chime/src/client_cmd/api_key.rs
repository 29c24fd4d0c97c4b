//! `chime api-key …`: API keys through the REST API (see docs/admin.md, "API keys"). Making
//! and revoking keys needs a console user's session or the bootstrap API token: a key cannot
//! manage keys.

use super::output::{table, time, wire_name};
use super::{Client, Failure};
use chime_admin::api::{ApiKey, ApiKeySpec, KeyRole, NewApiKey};
use reqwest::Method;
use serde_json::Value;
use std::time::Duration;

/// `chime api-key …`
#[derive(clap::Args, Debug)]
pub struct ApiKeyArgs {
    #[command(subcommand)]
    pub(super) cmd: ApiKeyCmd,
}

#[derive(clap::Subcommand, Debug)]
pub(super) enum ApiKeyCmd {
    /// List API keys (yours; every key for an administrator), never with their tokens.
    List,
    /// Make an API key and print its token, which is shown this once.
    Create {
        /// Its name: 1–60 letters, digits, `.`, `_` or `-`, unique among all keys.
        name: String,
        /// What it may do: viewer, editor or admin.
        #[arg(long, value_parser = parse_role, default_value = "viewer")]
        role: KeyRole,
        /// A group it may reach, by app name or id (repeat for several; none for admin keys).
        #[arg(long = "group", value_name = "GROUP")]
        groups: Vec<String>,
        /// How long it works: `30d`, `12h`, … (default 90 days, at most 366).
        #[arg(long, value_parser = humantime::parse_duration)]
        expires_in: Option<Duration>,
    },
    /// Revoke an API key: it stops working at once.
    Revoke { id: i64 },
}

fn parse_role(s: &str) -> Result<KeyRole, String> {
    KeyRole::parse(s).ok_or_else(|| format!("'{s}' is not a role (viewer, editor, admin)"))
}

/// Runs one `chime api-key` command.
pub(super) async fn dispatch(c: &Client, cmd: ApiKeyCmd) -> Result<(), Failure> {
    match cmd {
        ApiKeyCmd::List => c.print(c.call(Method::GET, "/v1/api-keys", None).await?, |keys: Vec<ApiKey>| {
            print_keys(&keys)
        }),
        ApiKeyCmd::Create {
            name,
            role,
            groups,
            expires_in,
        } => {
            let mut group_ids = Vec::with_capacity(groups.len());
            for g in &groups {
                let group: Value = c.get(&format!("/v1/groups/{}", super::query_value(g))).await?;
                group_ids.push(group["id"].as_i64().ok_or_else(|| Failure(format!("no group {g}")))?);
            }
            let expires_at = expires_in.map(|d| chrono::Utc::now().timestamp_millis() + d.as_millis() as i64);
            let spec = ApiKeySpec {
                name,
                role,
                group_ids,
                expires_at,
            };
            c.print(c.send(Method::POST, "/v1/api-keys", &spec).await?, |made: NewApiKey| {
                print_keys(std::slice::from_ref(&made.key));
                outln!("\ntoken (shown this once, keep it now): {}", made.token);
            })
        }
        ApiKeyCmd::Revoke { id } => c.print(
            c.call(Method::DELETE, &format!("/v1/api-keys/{id}"), None).await?,
            |key: ApiKey| print_keys(&[key]),
        ),
    }
}

fn print_keys(keys: &[ApiKey]) {
    let rows = keys
        .iter()
        .map(|k| {
            let groups: Vec<String> = k.group_ids.iter().map(i64::to_string).collect();
            vec![
                k.id.to_string(),
                k.name.clone(),
                k.prefix.clone(),
                wire_name(&k.role),
                if groups.is_empty() {
                    "all".into()
                } else {
                    groups.join(",")
                },
                wire_name(&k.state),
                time(k.expires_at),
                k.last_used_at.map(time).unwrap_or_else(|| "-".into()),
                k.created_by.clone(),
            ]
        })
        .collect();
    table(
        &[
            "ID",
            "NAME",
            "PREFIX",
            "ROLE",
            "GROUPS",
            "STATE",
            "EXPIRES",
            "LAST USED",
            "BY",
        ],
        rows,
    );
}
