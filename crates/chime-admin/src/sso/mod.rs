//! Logins through the company's identity: an LDAP directory (`ldap.rs`), OpenID Connect
//! providers (`oidc.rs`, their settings in `oidc_settings.rs`), and the rules that turn their
//! groups into Chime roles (`rules.rs`). Users they let in are kept as users whose roles are
//! set again from their groups at each login.

pub mod ldap;
pub mod oidc;
pub mod oidc_settings;
pub mod rules;

pub use ldap::{DirectoryUser, LdapFailure, LdapSettings};
pub use oidc::{OidcFailure, OidcIdentity, OidcLogin, OidcLogins};
pub use oidc_settings::{OidcProvider, OidcProviders};
pub use rules::{Mapped, RoleRules};
