//! The OpenID Connect providers users may log in with (`--oidc`): one per line or separated by
//! `;`, each its name then `key=value` words:
//!
//! ```text
//! corp issuer=https://sso.example.com/realms/acme client_id=chime client_secret_file=/run/secrets/oidc
//! ```
//!
//! Keys: `issuer` and `client_id` (required); the client's secret as `client_secret_file` (a
//! file holding it, read at start) or `client_secret` (visible to whoever reads the settings;
//! none: a public client, protected by PKCE alone); `scopes` (comma-separated, default
//! `openid,profile,email`); `username_claim` (default `preferred_username`); `groups_claim`
//! (default `groups`), whose values `--sso-roles` maps to roles.

use std::fmt;
use std::str::FromStr;

/// One provider.
#[derive(Clone, PartialEq, Eq)]
pub struct OidcProvider {
    /// Its name: in the login button, the callback's path and its users' `source` (`oidc:NAME`).
    pub name: String,
    /// The issuer, whose `/.well-known/openid-configuration` describes it.
    pub issuer: String,
    /// Chime's client id there.
    pub client_id: String,
    /// Where the secret comes from, as written (kept to write the setting back).
    secret: Secret,
    /// The scopes asked for; `openid` is always among them.
    pub scopes: Vec<String>,
    /// The claim that names the user in Chime.
    pub username_claim: String,
    /// The claim that lists the user's groups.
    pub groups_claim: String,
}

/// How the client secret is given.
#[derive(Clone, PartialEq, Eq)]
enum Secret {
    None,
    Inline(String),
    File(String),
}

impl OidcProvider {
    /// The client secret: inline, or read from its file (trailing new lines dropped); `None`
    /// for a public client.
    pub fn client_secret(&self) -> Result<Option<String>, String> {
        match &self.secret {
            Secret::None => Ok(None),
            Secret::Inline(s) => Ok(Some(s.clone())),
            Secret::File(path) => std::fs::read_to_string(path)
                .map(|s| Some(s.trim_end_matches(['\r', '\n']).to_owned()))
                .map_err(|e| format!("oidc: {}: client_secret_file {path}: {e}", self.name)),
        }
    }

    /// What its users are stored as (`app_user.source`).
    pub fn source(&self) -> String {
        format!("oidc:{}", self.name)
    }
}

impl fmt::Debug for OidcProvider {
    /// Everything but the secret.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OidcProvider")
            .field("name", &self.name)
            .field("issuer", &self.issuer)
            .field("client_id", &self.client_id)
            .field("scopes", &self.scopes)
            .field("username_claim", &self.username_claim)
            .field("groups_claim", &self.groups_claim)
            .finish_non_exhaustive()
    }
}

/// The providers, in the order given (the login page's buttons).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OidcProviders(pub Vec<OidcProvider>);

impl OidcProviders {
    /// True when none is set.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The provider named `name`.
    pub fn get(&self, name: &str) -> Option<&OidcProvider> {
        self.0.iter().find(|p| p.name == name)
    }
}

/// Whether `url` may be an issuer: https, or http on a loopback address (a provider on the
/// same machine, as in tests); anything else would send codes and tokens in clear.
fn usable_issuer(url: &str) -> bool {
    let Ok(u) = url::Url::parse(url) else {
        return false;
    };
    match u.scheme() {
        "https" => u.host().is_some(),
        "http" => match u.host() {
            Some(url::Host::Domain(d)) => d == "localhost",
            Some(url::Host::Ipv4(a)) => a.is_loopback(),
            Some(url::Host::Ipv6(a)) => a.is_loopback(),
            None => false,
        },
        _ => false,
    }
}

fn parse_provider(part: &str) -> Result<OidcProvider, String> {
    let mut words = part.split_whitespace();
    let name = words.next().unwrap_or_default();
    if name.is_empty()
        || name.len() > 32
        || !name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
    {
        return Err(format!(
            "'{name}': a provider's name is 1 to 32 of a-z, 0-9, - and _, before its key=value words"
        ));
    }
    let mut p = OidcProvider {
        name: name.to_owned(),
        issuer: String::new(),
        client_id: String::new(),
        secret: Secret::None,
        scopes: vec!["openid".into(), "profile".into(), "email".into()],
        username_claim: "preferred_username".into(),
        groups_claim: "groups".into(),
    };
    for word in words {
        let (key, value) = word
            .split_once('=')
            .filter(|(_, v)| !v.is_empty())
            .ok_or_else(|| format!("{name}: '{word}' is not key=value"))?;
        match key {
            "issuer" => p.issuer = value.trim_end_matches('/').to_owned(),
            "client_id" => p.client_id = value.to_owned(),
            "client_secret" => p.secret = Secret::Inline(value.to_owned()),
            "client_secret_file" => p.secret = Secret::File(value.to_owned()),
            "scopes" => {
                p.scopes = value.split(',').filter(|s| !s.is_empty()).map(str::to_owned).collect();
                if !p.scopes.iter().any(|s| s == "openid") {
                    p.scopes.insert(0, "openid".into());
                }
            }
            "username_claim" => p.username_claim = value.to_owned(),
            "groups_claim" => p.groups_claim = value.to_owned(),
            _ => {
                return Err(format!(
                    "{name}: unknown key '{key}' (issuer, client_id, client_secret, client_secret_file, scopes, username_claim, groups_claim)"
                ))
            }
        }
    }
    if !usable_issuer(&p.issuer) {
        return Err(format!(
            "{name}: issuer must be an https:// URL (http:// only on a loopback address), got '{}'",
            p.issuer
        ));
    }
    if p.client_id.is_empty() {
        return Err(format!("{name}: client_id is required"));
    }
    Ok(p)
}

impl FromStr for OidcProviders {
    type Err = String;

    fn from_str(text: &str) -> Result<OidcProviders, String> {
        let mut providers: Vec<OidcProvider> = Vec::new();
        for part in text.split([';', '\n']).map(str::trim).filter(|p| !p.is_empty()) {
            let p = parse_provider(part)?;
            if providers.iter().any(|q| q.name == p.name) {
                return Err(format!("{}: two providers have this name", p.name));
            }
            providers.push(p);
        }
        Ok(OidcProviders(providers))
    }
}

impl fmt::Display for OidcProviders {
    /// The setting as it was written (the secret too: this is what is read back from a file of
    /// settings; nothing logs it).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self
            .0
            .iter()
            .map(|p| {
                let secret = match &p.secret {
                    Secret::None => String::new(),
                    Secret::Inline(s) => format!(" client_secret={s}"),
                    Secret::File(path) => format!(" client_secret_file={path}"),
                };
                format!(
                    "{} issuer={} client_id={}{secret} scopes={} username_claim={} groups_claim={}",
                    p.name,
                    p.issuer,
                    p.client_id,
                    p.scopes.join(","),
                    p.username_claim,
                    p.groups_claim
                )
            })
            .collect();
        f.write_str(&parts.join("; "))
    }
}

crate::setting_text::text_setting!(OidcProviders, display);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn providers_are_read_with_their_defaults_and_written_back() {
        let text = "corp issuer=https://sso.example.com/realms/acme/ client_id=chime client_secret=s3cret\n\
                    local issuer=http://127.0.0.1:9000 client_id=chime-dev scopes=profile,groups username_claim=email";
        let ps: OidcProviders = text.parse().unwrap();
        assert_eq!(ps.0.len(), 2);
        let corp = ps.get("corp").unwrap();
        assert_eq!(corp.issuer, "https://sso.example.com/realms/acme");
        assert_eq!(corp.client_secret().unwrap().as_deref(), Some("s3cret"));
        assert_eq!(corp.scopes, ["openid", "profile", "email"]);
        assert_eq!(
            (corp.username_claim.as_str(), corp.groups_claim.as_str()),
            ("preferred_username", "groups")
        );
        assert_eq!(corp.source(), "oidc:corp");
        let local = ps.get("local").unwrap();
        assert_eq!(local.scopes, ["openid", "profile", "groups"]);
        assert_eq!(local.client_secret().unwrap(), None);
        assert_eq!(local.username_claim, "email");
        assert_eq!(ps.to_string().parse::<OidcProviders>().unwrap(), ps);
        assert!(!format!("{ps:?}").contains("s3cret"), "Debug shows no secret");
    }

    #[test]
    fn a_secret_file_is_read_at_use() {
        let dir = std::env::temp_dir().join(format!("chime-oidc-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("secret");
        std::fs::write(&file, "from-a-file\n").unwrap();
        let ps: OidcProviders = format!(
            "x issuer=https://idp.example client_id=c client_secret_file={}",
            file.display()
        )
        .parse()
        .unwrap();
        assert_eq!(ps.0[0].client_secret().unwrap().as_deref(), Some("from-a-file"));
        std::fs::remove_file(&file).unwrap();
        assert!(ps.0[0].client_secret().unwrap_err().contains("client_secret_file"));
    }

    #[test]
    fn bad_providers_are_refused_with_the_reason() {
        for (bad, says) in [
            ("Corp issuer=https://a client_id=c", "name"),
            ("corp client_id=c", "issuer"),
            ("corp issuer=http://sso.example.com client_id=c", "https"),
            ("corp issuer=ftp://127.0.0.1 client_id=c", "https"),
            ("corp issuer=https://a", "client_id"),
            ("corp issuer=https://a client_id=c colour=blue", "unknown key"),
            ("corp issuer=https://a client_id", "key=value"),
            (
                "a issuer=https://a client_id=c; a issuer=https://b client_id=c",
                "two providers",
            ),
        ] {
            let e = bad.parse::<OidcProviders>().unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
        assert!("".parse::<OidcProviders>().unwrap().is_empty());
        assert!("x issuer=http://localhost:8080/realms/r client_id=c"
            .parse::<OidcProviders>()
            .is_ok());
    }
}
