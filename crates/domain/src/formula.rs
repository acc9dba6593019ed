//! Reactor formulas: code with declared configuration and request parameters, per
//! docs/decisions.md §9, as a client sends one and as validated. A [`Formula`] that exists is a
//! valid one. What a reactor made of one receives is in `reactor.rs`.

use serde_json::Value;
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

/// Whether a formula's code compiles as a module (docs/decisions.md §12), checked at create and
/// update without running it. Code that does not compile is stored all the same (§7).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FormulaStatus {
    /// The code compiles.
    Verified,
    /// The code does not compile: its invocations fail with a 422.
    Failed,
}

impl FormulaStatus {
    /// Parses the wire name.
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "verified" => Some(Self::Verified),
            "failed" => Some(Self::Failed),
            _ => None,
        }
    }

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Verified => "verified",
            Self::Failed => "failed",
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
    /// The CommonJS module, as given (it may not compile: see `status`).
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
    /// Whether the code compiles (`None`: stored before the vault checked, not checked since).
    pub status: Option<FormulaStatus>,
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

/// A formula's `code` (also a dry run's): present, not blank, at most [`MAX_CODE_LEN`]
/// characters; `None` after adding why not to `errors`.
pub fn check_code(code: Option<String>, errors: &mut ValidationErrors) -> Option<String> {
    match code {
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
    }
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
        let code = check_code(raw.code, &mut errors);
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

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
