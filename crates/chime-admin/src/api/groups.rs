//! Executor groups on the wire: a group as the API answers it ([`Group`]) and the body that
//! creates or changes one ([`GroupSpec`]).

use super::schema::{nullable_enum, protocols};
use chime_protocol::ProtocolGeneration;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How a group learns its executor addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum AddressType {
    /// Executors register themselves through `/api/registry` (XXL-JOB's address_type 0).
    #[default]
    Auto,
    /// An operator lists the addresses (address_type 1).
    Manual,
}

impl AddressType {
    /// The database value (XXL-JOB's numbering).
    pub fn code(self) -> i64 {
        match self {
            AddressType::Auto => 0,
            AddressType::Manual => 1,
        }
    }

    /// From the database value; unknown values read as automatic.
    pub fn from_code(code: i64) -> AddressType {
        if code == 1 {
            AddressType::Manual
        } else {
            AddressType::Auto
        }
    }
}

/// An executor group (XXL-JOB's 执行器): executors sharing an app name.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
#[schemars(transform = super::schema::exact)]
pub struct Group {
    /// Group id.
    pub id: i64,
    /// The app name executors register under (`registryKey`).
    pub app_name: String,
    /// Display name.
    pub title: String,
    /// Automatic registration or a manual list.
    pub address_type: AddressType,
    /// The configured addresses of a manual group (empty for automatic groups).
    pub addresses: Vec<String>,
    /// How Chime calls this group's executors.
    #[schemars(schema_with = "protocols")]
    pub protocol: ProtocolGeneration,
    /// The group's own executor access token (as XXL-JOB 3.5 keeps one per group), sent to its
    /// executors and expected from them instead of the admin's `--access-token`; `None` = the
    /// admin's. A secret: the JSON of a group only says whether one is set
    /// (`access_token_set`).
    #[serde(rename(serialize = "access_token_set"), serialize_with = "is_set", default)]
    #[schemars(rename = "access_token_set", with = "bool")]
    pub access_token: Option<String>,
    /// The group's executors call the admin without any access token and are called without
    /// one: XXL-JOB's "no token" setup, for legacy executors that cannot be given one, and only
    /// when an operator asked for it. Anyone who reaches the admin can then register as such an
    /// executor and receive the group's jobs, so the admin warns of every such group at each
    /// start, and refuses links and relays for it.
    pub insecure_no_token: bool,
    /// Whether the admin keeps its executors' run logs (sent by Chime executors once a run
    /// ended), so a run's log outlives its executor.
    pub keep_logs: bool,
    /// Comma-separated names of the alarm channels of the group's jobs that name none.
    pub alarm_channels: String,
    /// Creation time, epoch ms.
    pub created_at: i64,
    /// Last change, epoch ms.
    pub updated_at: i64,
}

fn is_set<S: serde::Serializer>(token: &Option<String>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_bool(token.is_some())
}

/// Input to create or replace a group.
#[derive(Debug, Clone, Deserialize, Serialize, Default, JsonSchema)]
// `default`: every field may be left out (the derived schema then requires none).
#[serde(deny_unknown_fields, default)]
pub struct GroupSpec {
    /// App name, 1–64 characters without whitespace or commas.
    #[schemars(regex(pattern = r"^\s*[^\s,]{1,64}\s*$"))]
    pub app_name: Option<String>,
    /// Display name (defaults to the app name).
    pub title: Option<String>,
    /// `auto` (default) or `manual`; giving addresses implies `manual`.
    pub address_type: Option<AddressType>,
    /// Manual addresses (`http://host:port`).
    pub addresses: Option<Vec<String>>,
    /// `G2` (default), `G3` or `G4`.
    #[schemars(schema_with = "nullable_protocols")]
    pub protocol: Option<String>,
    /// The group's own executor access token; `""` removes it (the admin's token applies).
    pub access_token: Option<String>,
    /// Let the group's executors work without any access token (default false; see
    /// [`Group::insecure_no_token`]). Not with a token of the group's own.
    pub insecure_no_token: Option<bool>,
    /// Keep the group's run logs in the admin (default true).
    pub keep_logs: Option<bool>,
    /// Alarm channels of the group's jobs that name none (comma-separated names).
    #[schemars(length(max = 255))]
    pub alarm_channels: Option<String>,
}

fn nullable_protocols(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
    nullable_enum(protocols(g))
}
