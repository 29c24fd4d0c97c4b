//! Logins through the company's identity: an LDAP directory (`ldap.rs`) and the rules that turn
//! its groups into Chime roles (`rules.rs`). Users it lets in are kept as users whose roles are
//! set again from their groups at each login.

pub mod ldap;
pub mod rules;

pub use ldap::{DirectoryUser, LdapFailure, LdapSettings};
pub use rules::{Mapped, RoleRules};
