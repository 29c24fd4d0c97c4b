//! JSON Schemas of the wire types, as the OpenAPI document's `components/schemas`.
//!
//! Derived with `schemars` from the types themselves (their doc comments become descriptions),
//! so the document cannot drift from what the API reads and writes. Answers are described as
//! serialized, bodies as deserialized; the protocol's named enums (`CRON`, `FIRST`, …) are
//! listed from their own `ALL` tables.

use schemars::generate::{Contract, SchemaSettings};
use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde_json::{Map, Value};

/// Where the OpenAPI document keeps its schemas (OpenAPI 3.1 schemas are JSON Schema 2020-12).
const DEFINITIONS_PATH: &str = "/components/schemas";

/// A protocol enum named on the wire by its strings.
pub trait Named: 'static + Sized + Copy {
    /// Every value.
    fn all() -> &'static [Self];
    /// Its wire name.
    fn name(self) -> &'static str;
}

macro_rules! named {
    ($($t:ty),*) => {$(
        impl Named for $t {
            fn all() -> &'static [Self] {
                <$t>::ALL
            }
            fn name(self) -> &'static str {
                self.as_str()
            }
        }
    )*};
}

named!(
    chime_protocol::ScheduleType,
    chime_protocol::MisfireStrategy,
    chime_protocol::RouteStrategy,
    chime_protocol::BlockStrategy,
    chime_protocol::GlueType,
    chime_protocol::ProtocolGeneration,
    chime_protocol::TriggerType
);

/// The wire names of `T`, as a string enum.
pub fn schema_of_names<T: Named>(_: &mut SchemaGenerator) -> Schema {
    let names: Vec<&str> = T::all().iter().map(|v| v.name()).collect();
    json_schema!({ "type": "string", "enum": names })
}

/// Protocol generations (`G2`, `G3`, `G4`).
pub fn protocols(g: &mut SchemaGenerator) -> Schema {
    schema_of_names::<chime_protocol::ProtocolGeneration>(g)
}

/// `schema` or `null`, which the API takes as "left out".
pub fn nullable_enum(schema: Schema) -> Schema {
    json_schema!({ "anyOf": [schema, { "type": "null" }] })
}

/// An answer object: every property is always there, and nothing else is.
pub fn exact(schema: &mut Schema) {
    let keys: Vec<Value> = schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|m| m.keys().cloned().map(Value::String).collect())
        .unwrap_or_default();
    schema.insert("required".into(), Value::Array(keys));
    schema.insert("additionalProperties".into(), Value::Bool(false));
}

/// A generator writing `$ref`s to `#/components/schemas/…`, for answers (`Contract::Serialize`)
/// or bodies (`Contract::Deserialize`).
fn generator(contract: Contract) -> SchemaGenerator {
    let mut settings = SchemaSettings::draft2020_12();
    settings.definitions_path = DEFINITIONS_PATH.into();
    settings.meta_schema = None;
    settings.contract = contract;
    settings.into_generator()
}

/// The definitions, by name, of types `$t` and of everything they refer to, as `$contract`
/// (answers or bodies) describes them.
macro_rules! definitions {
    ($contract:expr; $($t:ty),+ $(,)?) => {{
        let mut generator = generator($contract);
        $(generator.subschema_for::<$t>();)+
        generator.take_definitions(true)
    }};
}

/// The component schemas of the wire types: answers under their type's name (`Job`, `Group`),
/// bodies likewise (`JobSpec`, `GroupSpec`), with everything they refer to.
pub fn components() -> Map<String, Value> {
    use super::*;
    let mut all = definitions!(Contract::Serialize;
        Job, Group, AlarmChannel, AlarmDelivery, AlarmSilence, AlarmEventEntry, ApiKey, NewApiKey, GroupMember,
        GroupGrant, Limit, QueuedRunEntry, Backfill, BusinessCalendar,
    );
    all.extend(definitions!(Contract::Deserialize;
        JobSpec, GroupSpec, AlarmChannelSpec, AlarmSilenceSpec, ApiKeySpec, MemberChange, LimitSpec, BackfillSpec,
        BusinessCalendarSpec,
    ));
    all
}

/// The schemas of answer type `T` and of what it refers to, by name (for answers declared
/// outside this module, such as a run).
pub fn answer_components<T: JsonSchema>() -> Map<String, Value> {
    definitions!(Contract::Serialize; T)
}

/// The schema of `T` as a body, inline (for the few places the document builds on it).
pub fn body_schema<T: JsonSchema>() -> Value {
    generator(Contract::Deserialize).root_schema_for::<T>().to_value()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_exact_and_bodies_take_null_for_left_out() {
        let mut c = components();
        c.extend(answer_components::<crate::model::Run>());
        let job = &c["Job"];
        assert_eq!(job["additionalProperties"], false);
        let required = job["required"].as_array().unwrap();
        assert!(required.iter().any(|k| k == "alarm_contacts"), "{job}");
        assert!(required.iter().any(|k| k == "glue_updated_at"), "{job}");
        assert_eq!(c["Group"]["properties"]["access_token_set"]["type"], "boolean");
        let run = &c["Run"];
        assert_eq!(run["additionalProperties"], false);
        assert!(
            run["required"].as_array().unwrap().iter().any(|k| k == "killed_by"),
            "{run}"
        );
        assert_eq!(
            run["properties"]["killed_by"]["type"],
            serde_json::json!(["string", "null"])
        );
        assert!(
            run["properties"]["status"]["enum"].to_string().contains("killed"),
            "{run}"
        );
        let spec = &c["JobSpec"];
        assert_eq!(spec["additionalProperties"], false, "{spec}");
        assert!(spec.get("required").is_none(), "{spec}");
        assert!(spec["properties"]["owner"].to_string().contains("null"), "{spec}");
        assert!(
            spec["properties"]["schedule_type"].to_string().contains("FIX_RATE"),
            "{spec}"
        );
    }
}
