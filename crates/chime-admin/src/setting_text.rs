//! Settings kept in the TOML file as the text their flag takes. Its own module, below
//! `config` and the modules whose types it serves (`address_policy`, `sso`), so that those
//! need not import `config`, which imports them.

/// Implements serde for a setting kept in the TOML file as the text its flag takes: reading
/// parses that text with the type's `FromStr`, so a file is checked exactly as a flag is;
/// with `display`, writing gives the type's `Display`, the same text. (A type whose default
/// is written otherwise implements `Serialize` itself.)
macro_rules! text_setting {
    ($t:ty) => {
        impl<'de> serde::Deserialize<'de> for $t {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                <String as serde::Deserialize>::deserialize(d)?
                    .parse()
                    .map_err(serde::de::Error::custom)
            }
        }
    };
    ($t:ty, display) => {
        $crate::setting_text::text_setting!($t);
        impl serde::Serialize for $t {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(&self.to_string())
            }
        }
    };
}
pub(crate) use text_setting;
