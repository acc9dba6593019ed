//! Reactors: a formula (`formula.rs`) configured for a tenant, per docs/decisions.md §9; its
//! configuration checked against the formula's declarations, and the arguments its code
//! receives. A [`Reactor`] that exists is a valid one.

use serde_json::{Map, Value};
use time::OffsetDateTime;
use uuid::Uuid;

use crate::error::ValidationErrors;
use crate::formula::{ConfigDeclaration, MAX_DECLARATIONS, RequestParameter};
/// A stored reactor. Its `Debug` names the configuration's keys only: the values are the
/// tenant's secrets.
#[derive(Clone, PartialEq, Eq)]
pub struct Reactor {
    /// Identifier.
    pub id: Uuid,
    /// Owning tenant.
    pub tenant_id: Uuid,
    /// 1..=200 characters.
    pub name: String,
    /// Its formula (fixed at creation).
    pub formula_id: Uuid,
    /// Configuration values, each of its declared type.
    pub configuration: Map<String, Value>,
    /// The application `svc` acts as (public or private), if any.
    pub application_id: Option<Uuid>,
    /// Creating application.
    pub created_by: Option<Uuid>,
    /// Creation time.
    pub created_at: OffsetDateTime,
    /// Last modifying application.
    pub modified_by: Option<Uuid>,
    /// Last change.
    pub modified_at: Option<OffsetDateTime>,
}

impl std::fmt::Debug for Reactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reactor")
            .field("id", &self.id)
            .field("tenant_id", &self.tenant_id)
            .field("name", &self.name)
            .field("formula_id", &self.formula_id)
            .field(
                "configuration",
                &self.configuration.keys().collect::<Vec<_>>(),
            )
            .field("application_id", &self.application_id)
            .finish_non_exhaustive()
    }
}

/// Checks a reactor's configuration against its formula's declarations: every declared name
/// present with a value that casts to its type (cast values are what is stored); undeclared
/// names are kept as given (strings). Problems are named `configuration.<name>`.
pub fn check_configuration(
    raw: &Map<String, Value>,
    declared: &[ConfigDeclaration],
) -> Result<Map<String, Value>, ValidationErrors> {
    let mut errors = ValidationErrors::new();
    let mut out = Map::new();
    for d in declared {
        match raw.get(&d.name) {
            None | Some(Value::Null) => {
                errors.add(format!("configuration.{}", d.name), "is required");
            }
            Some(v) => match d.param_type.cast(v) {
                Some(cast) => {
                    out.insert(d.name.clone(), cast);
                }
                None => errors.add(
                    format!("configuration.{}", d.name),
                    format!("must be a {}", d.param_type.as_str()),
                ),
            },
        }
    }
    for (k, v) in raw {
        if out.contains_key(k) || declared.iter().any(|d| &d.name == k) {
            continue;
        }
        match v {
            Value::String(_) | Value::Number(_) | Value::Bool(_) => {
                out.insert(k.clone(), v.clone());
            }
            _ => errors.add(
                format!("configuration.{k}"),
                "must be a string, number or boolean",
            ),
        }
    }
    if out.len() > MAX_DECLARATIONS {
        errors.add("configuration", "at most 100 entries");
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

/// The arguments a reactor's code receives (interface: invocation rules 2–6, 9): only declared
/// parameters (case-sensitive, dotted names nested), each cast to its type; a missing required
/// parameter or an impossible cast is named in the error. `args` is what remains after
/// detokenization.
pub fn bind_arguments(
    args: &Value,
    declared: &[RequestParameter],
) -> Result<Value, ValidationErrors> {
    let mut errors = ValidationErrors::new();
    let mut out = Map::new();
    for p in declared {
        let path: Vec<&str> = p.name.split('.').collect();
        let found = path.iter().try_fold(args, |v, key| v.get(*key));
        match found {
            None | Some(Value::Null) if p.optional => {}
            None | Some(Value::Null) => errors.add(format!("args.{}", p.name), "is required"),
            Some(v) => match p.param_type.cast(v) {
                Some(cast) => insert_at(&mut out, &path, cast),
                None => errors.add(
                    format!("args.{}", p.name),
                    format!("must be a {}", p.param_type.as_str()),
                ),
            },
        }
    }
    if errors.is_empty() {
        Ok(Value::Object(out))
    } else {
        Err(errors)
    }
}

fn insert_at(map: &mut Map<String, Value>, path: &[&str], value: Value) {
    match path {
        [] => {}
        [last] => {
            map.insert((*last).to_string(), value);
        }
        [first, rest @ ..] => {
            let entry = map
                .entry((*first).to_string())
                .or_insert_with(|| Value::Object(Map::new()));
            if !entry.is_object() {
                *entry = Value::Object(Map::new());
            }
            if let Value::Object(inner) = entry {
                insert_at(inner, rest, value);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formula::ParamType;
    use serde_json::json;

    fn param(name: &str, t: ParamType, optional: bool) -> RequestParameter {
        RequestParameter {
            name: name.into(),
            description: None,
            param_type: t,
            optional,
        }
    }

    #[test]
    fn arguments_are_bound_cast_and_nested() {
        let declared = [
            param("a", ParamType::String, false),
            param("n", ParamType::Number, true),
            param("deep.x.y", ParamType::Boolean, false),
        ];
        let args =
            json!({"a": "1", "n": "42", "deep": {"x": {"y": "true", "z": 1}}, "other": 5, "A": 1});
        assert_eq!(
            bind_arguments(&args, &declared).unwrap(),
            json!({"a": "1", "n": 42, "deep": {"x": {"y": true}}})
        );
        let missing = bind_arguments(&json!({"n": "x"}), &declared).unwrap_err();
        let fields: Vec<&String> = missing.fields().keys().collect();
        assert_eq!(fields, ["args.a", "args.deep.x.y", "args.n"]);
        // Case-sensitive names: `A` is not `a`.
        assert!(bind_arguments(&json!({"A": "1", "deep": {"x": {"y": true}}}), &declared).is_err());
    }

    #[test]
    fn configuration_must_give_every_declared_name_in_its_type() {
        let declared = [ConfigDeclaration {
            name: "limit".into(),
            description: None,
            param_type: ParamType::Number,
        }];
        let ok = check_configuration(
            json!({"limit": "5", "extra": "x"}).as_object().unwrap(),
            &declared,
        )
        .unwrap();
        assert_eq!(Value::Object(ok), json!({"limit": 5, "extra": "x"}));
        assert!(check_configuration(json!({}).as_object().unwrap(), &declared).is_err());
        assert!(
            check_configuration(json!({"limit": "many"}).as_object().unwrap(), &declared).is_err()
        );
    }
}
