//! Console logins through an OpenID Connect provider (Keycloak, Okta, Entra ID, Google, …),
//! with `openidconnect`: discovery, the authorization code flow with PKCE, and the ID token's
//! signature (against the provider's published keys), issuer, audience, expiry and nonce
//! checked by that crate. Chime adds what is its own: which claim names the user, which lists
//! their groups, fetching the keys again when the provider has rotated them, and the
//! provider's logout address.

use super::oidc_settings::OidcProvider;
use crate::error_text::with_causes;
use openidconnect::core::{
    CoreAuthDisplay, CoreAuthPrompt, CoreAuthenticationFlow, CoreErrorResponseType, CoreGenderClaim, CoreJsonWebKey,
    CoreJweContentEncryptionAlgorithm, CoreJwsSigningAlgorithm, CoreRevocableToken, CoreRevocationErrorResponse,
    CoreTokenIntrospectionResponse, CoreTokenType,
};
use openidconnect::{
    AdditionalClaims, AuthorizationCode, Client, ClientId, ClientSecret, CsrfToken, EmptyExtraTokenFields,
    EndpointMaybeSet, EndpointNotSet, EndpointSet, IdTokenClaims, IdTokenFields, IssuerUrl, LogoutRequest, Nonce,
    OAuth2TokenResponse, PkceCodeChallenge, PkceCodeVerifier, PostLogoutRedirectUrl, ProviderMetadataWithLogout,
    RedirectUrl, Scope, StandardErrorResponse, StandardTokenResponse, TokenResponse, UserInfoClaims,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Mutex;

/// How long a provider's discovery document and keys are used before they are fetched again.
const METADATA_TTL: Duration = Duration::from_secs(3600);
/// A token signed by a key Chime does not know makes it fetch the keys again (the provider
/// rotated them), at most this often, so forged tokens cannot make it hammer the provider.
const MIN_REFRESH: Duration = Duration::from_secs(10);
/// Time limit of each request to the provider.
const PROVIDER_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest user name accepted from a claim (Chime's user names are at most 64 characters).
const MAX_USERNAME: usize = 64;
/// Most groups read from a claim; more are a misconfigured claim, not a user.
const MAX_GROUPS: usize = 1_000;

/// The claims beyond the standard ones (the groups claim, or a custom user name claim), kept
/// as JSON.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ExtraClaims {
    #[serde(flatten)]
    claims: serde_json::Map<String, Value>,
}

impl AdditionalClaims for ExtraClaims {}

/// The claim `$name` of `$claims` as text: one of the standard claims a user name is taken
/// from (`sub`, `preferred_username`, `email`), or a custom claim. A macro because its claims
/// are the ID token's or the user info endpoint's answer, two types with the same accessors
/// but no trait in common.
macro_rules! claim_text {
    ($claims:expr, $name:expr) => {{
        let claims = $claims;
        match $name {
            "sub" => Some(claims.subject().to_string()),
            "preferred_username" => claims.preferred_username().map(|u| u.to_string()),
            "email" => claims.email().map(|e| e.to_string()),
            custom => text_of(claims.additional_claims(), custom),
        }
    }};
}

type IdFields = IdTokenFields<
    ExtraClaims,
    EmptyExtraTokenFields,
    CoreGenderClaim,
    CoreJweContentEncryptionAlgorithm,
    CoreJwsSigningAlgorithm,
>;
type Tokens = StandardTokenResponse<IdFields, CoreTokenType>;
type OidcClient = Client<
    ExtraClaims,
    CoreAuthDisplay,
    CoreGenderClaim,
    CoreJweContentEncryptionAlgorithm,
    CoreJsonWebKey,
    CoreAuthPrompt,
    StandardErrorResponse<CoreErrorResponseType>,
    Tokens,
    CoreTokenIntrospectionResponse,
    CoreRevocableToken,
    CoreRevocationErrorResponse,
    EndpointSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointMaybeSet,
    EndpointMaybeSet,
>;

/// Why an OpenID Connect login failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OidcFailure {
    /// The provider's answer was refused: a token that fails its checks (signature, issuer,
    /// audience, expiry, nonce), a code the provider would not exchange, a missing claim.
    #[error("{0}")]
    Refused(String),
    /// The provider could not be asked (down, unreachable, not an OpenID provider).
    #[error("{0}")]
    Unavailable(String),
}

/// Where the browser is sent, and what the way back is checked with.
#[derive(Debug)]
pub struct Authorization {
    /// The provider's authorization URL with this login's parameters.
    pub url: String,
    /// The `state` in it.
    pub state: String,
    /// The nonce the ID token must carry.
    pub nonce: String,
    /// The PKCE verifier of its challenge.
    pub pkce_verifier: String,
}

/// Who the provider says logged in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OidcIdentity {
    /// The value of the provider's user name claim.
    pub username: String,
    /// The values of its groups claim.
    pub groups: Vec<String>,
}

/// The discovery document as last fetched.
struct Discovered {
    metadata: ProviderMetadataWithLogout,
    fetched: Instant,
}

/// One provider at run time: its settings, an HTTP client, and its discovery document cached.
pub struct OidcLogin {
    /// The provider's settings.
    pub provider: OidcProvider,
    /// The client secret, read once here (from its file, when it is given as one).
    secret: Option<ClientSecret>,
    http: openidconnect::reqwest::Client,
    discovered: Mutex<Option<Discovered>>,
}

impl std::fmt::Debug for OidcLogin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OidcLogin")
            .field("provider", &self.provider)
            .finish_non_exhaustive()
    }
}

impl OidcLogin {
    /// A provider reached with `tls` (the system's roots and `--tls-ca`). Redirects are not
    /// followed: a provider's answer must not send Chime's requests elsewhere.
    pub fn new(provider: OidcProvider, tls: rustls::ClientConfig) -> Result<OidcLogin, String> {
        let http = openidconnect::reqwest::Client::builder()
            .use_preconfigured_tls(tls)
            .redirect(openidconnect::reqwest::redirect::Policy::none())
            .timeout(PROVIDER_TIMEOUT)
            .build()
            .map_err(|e| format!("oidc {}: HTTP client: {e}", provider.name))?;
        let secret = provider.client_secret()?.map(ClientSecret::new);
        Ok(OidcLogin {
            provider,
            secret,
            http,
            discovered: Mutex::new(None),
        })
    }

    /// The discovery document: cached for [`METADATA_TTL`], fetched again when older or when
    /// `refresh` (a token named a key it did not hold) and the last fetch is [`MIN_REFRESH`] old.
    async fn metadata(&self, refresh: bool) -> Result<ProviderMetadataWithLogout, OidcFailure> {
        let mut cached = self.discovered.lock().await;
        if let Some(d) = cached.as_ref() {
            let age = d.fetched.elapsed();
            if age < METADATA_TTL && !(refresh && age >= MIN_REFRESH) {
                return Ok(d.metadata.clone());
            }
        }
        let issuer = IssuerUrl::new(self.provider.issuer.clone())
            .map_err(|e| OidcFailure::Unavailable(format!("issuer: {e}")))?;
        let metadata = ProviderMetadataWithLogout::discover_async(issuer, &self.http)
            .await
            .map_err(|e| {
                OidcFailure::Unavailable(format!("discovery at {}: {}", self.provider.issuer, with_causes(&e)))
            })?;
        *cached = Some(Discovered {
            metadata: metadata.clone(),
            fetched: Instant::now(),
        });
        Ok(metadata)
    }

    fn client(&self, metadata: ProviderMetadataWithLogout, redirect: &str) -> Result<OidcClient, OidcFailure> {
        let redirect = RedirectUrl::new(redirect.to_owned())
            .map_err(|e| OidcFailure::Unavailable(format!("redirect URL: {e}")))?;
        Ok(OidcClient::from_provider_metadata(
            metadata,
            ClientId::new(self.provider.client_id.clone()),
            self.secret.clone(),
        )
        .set_redirect_uri(redirect))
    }

    /// Starts a login: the provider's authorization URL for a browser coming back to
    /// `redirect`, with a fresh state, nonce and PKCE challenge (S256).
    pub async fn authorize(&self, redirect: &str) -> Result<Authorization, OidcFailure> {
        let client = self.client(self.metadata(false).await?, redirect)?;
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let mut request = client
            .authorize_url(
                CoreAuthenticationFlow::AuthorizationCode,
                CsrfToken::new_random,
                Nonce::new_random,
            )
            .set_pkce_challenge(challenge);
        for scope in self.provider.scopes.iter().filter(|s| *s != "openid") {
            request = request.add_scope(Scope::new(scope.clone()));
        }
        let (url, state, nonce) = request.url();
        Ok(Authorization {
            url: url.to_string(),
            state: state.secret().clone(),
            nonce: nonce.secret().clone(),
            pkce_verifier: verifier.secret().clone(),
        })
    }

    /// Ends a login: exchanges `code` (with the PKCE verifier), checks the ID token and reads
    /// the user name and groups from it, or from the user info endpoint when the token lacks
    /// them.
    pub async fn finish(
        &self,
        redirect: &str,
        code: &str,
        nonce: &str,
        pkce_verifier: &str,
    ) -> Result<OidcIdentity, OidcFailure> {
        let client = self.client(self.metadata(false).await?, redirect)?;
        let tokens = client
            .exchange_code(AuthorizationCode::new(code.to_owned()))
            .map_err(|e| OidcFailure::Unavailable(format!("the provider has no token endpoint: {e}")))?
            .set_pkce_verifier(PkceCodeVerifier::new(pkce_verifier.to_owned()))
            .request_async(&self.http)
            .await
            .map_err(|e| match e {
                // The provider answered no (a code used twice, a wrong verifier or secret).
                openidconnect::RequestTokenError::ServerResponse(_) | openidconnect::RequestTokenError::Parse(..) => {
                    OidcFailure::Refused(format!("the provider refused the code: {}", with_causes(&e)))
                }
                _ => OidcFailure::Unavailable(format!("the token endpoint: {}", with_causes(&e))),
            })?;
        let id_token = tokens
            .id_token()
            .ok_or_else(|| OidcFailure::Refused("the provider sent no ID token".into()))?;
        let nonce = Nonce::new(nonce.to_owned());
        let claims = match id_token.claims(&client.id_token_verifier(), &nonce) {
            Ok(claims) => claims.clone(),
            Err(openidconnect::ClaimsVerificationError::SignatureVerification(_)) => {
                // Perhaps a key published since the keys were fetched: fetch them again once.
                let client = self.client(self.metadata(true).await?, redirect)?;
                let verifier = client.id_token_verifier();
                let claims = id_token
                    .claims(&verifier, &nonce)
                    .map_err(|e| OidcFailure::Refused(format!("the ID token was refused: {e}")))?
                    .clone();
                claims
            }
            Err(e) => return Err(OidcFailure::Refused(format!("the ID token was refused: {e}"))),
        };
        let mut username = claim_text!(&claims, self.provider.username_claim.as_str());
        let mut groups = claim_list(claims.additional_claims(), &self.provider.groups_claim);
        if username.is_none() || groups.is_none() {
            if let Some(info) = self.user_info(&client, &tokens, &claims).await? {
                username = username.or_else(|| claim_text!(&info, self.provider.username_claim.as_str()));
                groups = groups.or_else(|| claim_list(info.additional_claims(), &self.provider.groups_claim));
            }
        }
        let username = username.ok_or_else(|| {
            OidcFailure::Refused(format!(
                "the provider named no user: claim '{}' is missing",
                self.provider.username_claim
            ))
        })?;
        if username.len() > MAX_USERNAME || username.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(OidcFailure::Refused(format!(
                "claim '{}' is not a usable user name (1 to 64 characters without spaces)",
                self.provider.username_claim
            )));
        }
        Ok(OidcIdentity {
            username,
            groups: groups.unwrap_or_default(),
        })
    }

    /// The user info endpoint's claims, when the provider has one.
    async fn user_info(
        &self,
        client: &OidcClient,
        tokens: &Tokens,
        claims: &IdTokenClaims<ExtraClaims, CoreGenderClaim>,
    ) -> Result<Option<UserInfoClaims<ExtraClaims, CoreGenderClaim>>, OidcFailure> {
        let Ok(request) = client.user_info(tokens.access_token().clone(), Some(claims.subject().clone())) else {
            return Ok(None);
        };
        request
            .request_async(&self.http)
            .await
            .map(Some)
            .map_err(|e| OidcFailure::Unavailable(format!("user info: {}", with_causes(&e))))
    }

    /// The provider's logout address, sending the browser back to `after` (`None` when the
    /// provider publishes none, or cannot be reached: the session here is closed anyway).
    pub async fn logout_url(&self, after: &str) -> Option<String> {
        let metadata = self.metadata(false).await.ok()?;
        let end = metadata.additional_metadata().end_session_endpoint.clone()?;
        let after = PostLogoutRedirectUrl::new(after.to_owned()).ok()?;
        let request = LogoutRequest::from(end)
            .set_client_id(ClientId::new(self.provider.client_id.clone()))
            .set_post_logout_redirect_uri(after);
        Some(request.http_get_url().to_string())
    }
}

/// The logins of every configured provider.
#[derive(Debug, Default)]
pub struct OidcLogins(Vec<Arc<OidcLogin>>);

impl OidcLogins {
    /// The providers of the settings, each with an HTTP client trusting `tls`.
    pub fn new(providers: &super::OidcProviders, tls: &rustls::ClientConfig) -> Result<OidcLogins, String> {
        providers
            .0
            .iter()
            .map(|p| OidcLogin::new(p.clone(), tls.clone()).map(Arc::new))
            .collect::<Result<Vec<_>, _>>()
            .map(OidcLogins)
    }

    /// The provider named `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<OidcLogin>> {
        self.0.iter().find(|l| l.provider.name == name)
    }

    /// The providers' names, in the order of the settings.
    pub fn names(&self) -> Vec<String> {
        self.0.iter().map(|l| l.provider.name.clone()).collect()
    }
}

fn text_of(extra: &ExtraClaims, name: &str) -> Option<String> {
    match extra.claims.get(name)? {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        _ => None,
    }
}

/// A claim listing groups: an array of strings, or one string. `None` when absent.
fn claim_list(extra: &ExtraClaims, name: &str) -> Option<Vec<String>> {
    match extra.claims.get(name)? {
        Value::String(s) => Some(vec![s.clone()]),
        Value::Array(items) => Some(
            items
                .iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .take(MAX_GROUPS)
                .collect(),
        ),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn extra(json: Value) -> ExtraClaims {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn groups_are_read_from_a_list_or_a_single_value() {
        let e = extra(serde_json::json!({ "groups": ["a", 3, "b"], "role": "ops", "n": 1 }));
        assert_eq!(claim_list(&e, "groups"), Some(vec!["a".to_owned(), "b".to_owned()]));
        assert_eq!(claim_list(&e, "role"), Some(vec!["ops".to_owned()]));
        assert_eq!(claim_list(&e, "n"), None);
        assert_eq!(claim_list(&e, "missing"), None);
        assert_eq!(text_of(&e, "role").as_deref(), Some("ops"));
        assert_eq!(text_of(&e, "groups"), None);
    }
}
