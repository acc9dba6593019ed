//! Reactor formulas (code with declared configuration and request parameters) and reactors
//! (a formula configured for a tenant), per docs/decisions.md §9. Values validate on
//! construction: a [`Formula`] or [`Reactor`] that exists is a valid one.

use serde_json::{Map, Value};
use time::OffsetDateTime;
use uuid::Uuid;

use crate::application::parse_name;
use crate::error::ValidationErrors;

/// The longest code accepted (characters), of a formula or a proxy transform.
pub const MAX_CODE_LEN: usize = 50_000;

/// The most declarations of each kind one formula may have.
pub const MAX_DECLARATIONS: usize = 100;
/// The longest description accepted.
pub const MAX_DESCRIPTION_LEN: usize = 1000;
/// The longest declared name (dot-separated levels included).
pub const MAX_PARAMETER_NAME_LEN: usize = 200;

/// The type of a configuration value or request parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamType {
    /// A string.
    String,
    /// A number.
    Number,
    /// A boolean.
    Boolean,
}

impl ParamType {
    /// Parses the wire name.
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "string" => Some(Self::String),
            "number" => Some(Self::Number),
            "boolean" => Some(Self::Boolean),
            _ => None,
        }
    }

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::String => "string",
            Self::Number => "number",
            Self::Boolean => "boolean",
        }
    }

    /// `value` as this type: kept when it already is one, cast when it can be (`"42"` → 42,
    /// `"true"` → true, a number or boolean → its text for a string), `None` otherwise.
    pub fn cast(self, value: &Value) -> Option<Value> {
        match (self, value) {
            (Self::String, Value::String(_))
            | (Self::Number, Value::Number(_))
            | (Self::Boolean, Value::Bool(_)) => Some(value.clone()),
            (Self::String, Value::Number(n)) => Some(Value::String(n.to_string())),
            (Self::String, Value::Bool(b)) => Some(Value::String(b.to_string())),
            (Self::Number, Value::String(s)) => {
                let t = s.trim();
                if t.is_empty() {
                    return None;
                }
                t.parse::<i64>().map(Value::from).ok().or_else(|| {
                    t.parse::<f64>()
                        .ok()
                        .filter(|f| f.is_finite())
                        .and_then(serde_json::Number::from_f64)
                        .map(Value::Number)
                })
            }
            (Self::Boolean, Value::String(s)) => match s.trim() {
                "true" => Some(Value::Bool(true)),
                "false" => Some(Value::Bool(false)),
                _ => None,
            },
            _ => None,
        }
    }
}

/// A declared configuration value of a formula.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigDeclaration {
    /// Its name.
    pub name: String,
    /// Free text.
    pub description: Option<String>,
    /// Its type.
    pub param_type: ParamType,
}

/// A declared request parameter of a formula; a dotted name declares a nested property.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestParameter {
    /// Its name (`a.b.c` is `c` in `b` in `a`).
    pub name: String,
    /// Free text.
    pub description: Option<String>,
    /// Its type.
    pub param_type: ParamType,
    /// Whether it may be missing.
    pub optional: bool,
}

/// A stored reactor formula.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Formula {
    /// Identifier.
    pub id: Uuid,
    /// Owning tenant.
    pub tenant_id: Uuid,
    /// 1..=200 characters.
    pub name: String,
    /// Free text.
    pub description: Option<String>,
    /// `private` (the only type).
    pub formula_type: String,
    /// The CommonJS module (compiles).
    pub code: String,
    /// Declared configuration.
    pub configuration: Vec<ConfigDeclaration>,
    /// Declared request parameters.
    pub request_parameters: Vec<RequestParameter>,
    /// Creating application.
    pub created_by: Option<Uuid>,
    /// Creation time.
    pub created_at: OffsetDateTime,
    /// Last modifying application.
    pub modified_by: Option<Uuid>,
    /// Last change.
    pub modified_at: Option<OffsetDateTime>,
}

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

/// A declaration as a client sent it.
#[derive(Clone, Debug, Default)]
pub struct RawDeclaration {
    /// `name`.
    pub name: Option<String>,
    /// `description`.
    pub description: Option<String>,
    /// `type`.
    pub param_type: Option<String>,
    /// `optional` (request parameters only).
    pub optional: Option<bool>,
}

/// `POST`/`PUT /reactor-formulas` as a client sent it.
#[derive(Clone, Debug, Default)]
pub struct RawFormula {
    /// `name`.
    pub name: Option<String>,
    /// `description`.
    pub description: Option<String>,
    /// `type`.
    pub formula_type: Option<String>,
    /// `code`.
    pub code: Option<String>,
    /// `configuration`.
    pub configuration: Vec<RawDeclaration>,
    /// `request_parameters`.
    pub request_parameters: Vec<RawDeclaration>,
}

/// A validated formula body (the code still has to compile: that needs the runner).
#[derive(Clone, Debug)]
pub struct FormulaSpec {
    /// Name.
    pub name: String,
    /// Description.
    pub description: Option<String>,
    /// Type.
    pub formula_type: String,
    /// Code.
    pub code: String,
    /// Configuration declarations.
    pub configuration: Vec<ConfigDeclaration>,
    /// Request parameter declarations.
    pub request_parameters: Vec<RequestParameter>,
}

fn parse_description(
    raw: Option<String>,
    field: &str,
    errors: &mut ValidationErrors,
) -> Option<String> {
    if raw
        .as_ref()
        .is_some_and(|d| d.chars().count() > MAX_DESCRIPTION_LEN)
    {
        errors.add(field, "must be at most 1000 characters");
    }
    raw
}

fn is_parameter_name(name: &str) -> bool {
    !name.is_empty()
        && name.chars().count() <= MAX_PARAMETER_NAME_LEN
        && name.split('.').all(|level| {
            !level.is_empty()
                && level
                    .chars()
                    .all(|c| c.is_alphanumeric() || c == '_' || c == '-' || c == '$')
        })
}

fn parse_declarations(
    raw: Vec<RawDeclaration>,
    field: &str,
    nested: bool,
    errors: &mut ValidationErrors,
) -> Vec<(String, Option<String>, ParamType, bool)> {
    if raw.len() > MAX_DECLARATIONS {
        errors.add(field, "at most 100 declarations");
        return Vec::new();
    }
    let mut out: Vec<(String, Option<String>, ParamType, bool)> = Vec::with_capacity(raw.len());
    for (i, d) in raw.into_iter().enumerate() {
        let at = |f: &str| format!("{field}.{i}.{f}");
        let name = match d.name {
            Some(n) if nested && is_parameter_name(&n) => Some(n),
            Some(n) if !nested && is_parameter_name(&n) && !n.contains('.') => Some(n),
            Some(_) => {
                errors.add(
                    at("name"),
                    "must be letters, digits, _ or - (dots separate levels)",
                );
                None
            }
            None => {
                errors.add(at("name"), "is required");
                None
            }
        };
        if let Some(n) = &name
            && out.iter().any(|(o, ..)| o == n)
        {
            errors.add(at("name"), "is declared twice");
        }
        let param_type = match d.param_type.as_deref().map(ParamType::parse) {
            Some(Some(t)) => Some(t),
            Some(None) => {
                errors.add(at("type"), "must be one of string, number, boolean");
                None
            }
            None => {
                errors.add(at("type"), "is required");
                None
            }
        };
        let description = parse_description(d.description, &at("description"), errors);
        if let (Some(name), Some(param_type)) = (name, param_type) {
            out.push((name, description, param_type, d.optional.unwrap_or(false)));
        }
    }
    if nested {
        // `a` and `a.b` cannot both be declared: `a` would be a value and an object at once.
        for (name, ..) in &out {
            if out
                .iter()
                .any(|(other, ..)| other.starts_with(&format!("{name}.")))
            {
                errors.add(
                    field,
                    format!("{name} is declared as a value and as an object"),
                );
            }
        }
    }
    out
}

impl FormulaSpec {
    /// Validates a formula body.
    pub fn parse(raw: RawFormula) -> Result<Self, ValidationErrors> {
        let mut errors = ValidationErrors::new();
        let name = parse_name(raw.name, &mut errors);
        let description = parse_description(raw.description, "description", &mut errors);
        let formula_type = match raw.formula_type.as_deref() {
            None | Some("private") => "private".to_string(),
            Some(_) => {
                errors.add("type", "must be private");
                String::new()
            }
        };
        let code = match raw.code {
            None => {
                errors.add("code", "is required");
                None
            }
            Some(c) if c.trim().is_empty() => {
                errors.add("code", "must not be empty");
                None
            }
            Some(c) if c.chars().count() > MAX_CODE_LEN => {
                errors.add("code", "must be at most 50000 characters");
                None
            }
            Some(c) => Some(c),
        };
        let configuration =
            parse_declarations(raw.configuration, "configuration", false, &mut errors)
                .into_iter()
                .map(|(name, description, param_type, _)| ConfigDeclaration {
                    name,
                    description,
                    param_type,
                })
                .collect();
        let request_parameters = parse_declarations(
            raw.request_parameters,
            "request_parameters",
            true,
            &mut errors,
        )
        .into_iter()
        .map(
            |(name, description, param_type, optional)| RequestParameter {
                name,
                description,
                param_type,
                optional,
            },
        )
        .collect();
        match (name, code) {
            (Some(name), Some(code)) if errors.is_empty() => Ok(Self {
                name,
                description,
                formula_type,
                code,
                configuration,
                request_parameters,
            }),
            _ => Err(errors),
        }
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
    use proptest::prelude::*;
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
    fn formulas_validate_their_declarations() {
        let raw = RawFormula {
            name: Some("f".into()),
            code: Some("module.exports = () => 1;".into()),
            configuration: vec![RawDeclaration {
                name: Some("a.b".into()),
                param_type: Some("string".into()),
                ..RawDeclaration::default()
            }],
            request_parameters: vec![
                RawDeclaration {
                    name: Some("x".into()),
                    param_type: Some("date".into()),
                    ..RawDeclaration::default()
                },
                RawDeclaration {
                    name: Some("p".into()),
                    param_type: Some("string".into()),
                    ..RawDeclaration::default()
                },
                RawDeclaration {
                    name: Some("p.q".into()),
                    param_type: Some("string".into()),
                    ..RawDeclaration::default()
                },
            ],
            ..RawFormula::default()
        };
        let e = FormulaSpec::parse(raw).unwrap_err();
        let fields: Vec<&String> = e.fields().keys().collect();
        assert_eq!(
            fields,
            [
                "configuration.0.name",
                "request_parameters",
                "request_parameters.0.type"
            ]
        );
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

    proptest! {
        #[test]
        fn numbers_cast_both_ways(n in -1_000_000i64..1_000_000) {
            prop_assert_eq!(ParamType::Number.cast(&json!(n.to_string())), Some(json!(n)));
            prop_assert_eq!(ParamType::String.cast(&json!(n)), Some(json!(n.to_string())));
        }

        #[test]
        fn non_numeric_strings_never_become_numbers(s in "[a-zA-Z ]{0,12}") {
            prop_assume!(s.trim() != "inf" && s.trim() != "NaN" && s.trim() != "infinity");
            prop_assert_eq!(ParamType::Number.cast(&json!(s)), None);
        }
    }
}
