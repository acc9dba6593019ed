//! The vault's Liquid filters (docs/decisions.md §6). `remove` and the rest of Shopify's standard
//! filters come from liquid's stdlib.

use liquid::ParserBuilder;
use liquid_core::{
    Display_filter, Expression, Filter, FilterParameters, FilterReflection, FromFilterParameters,
    ParseFilter, Result, Runtime, Value, ValueView,
};
use rand::RngExt;

use crate::capped::Capped;

macro_rules! capped {
    ($builder:expr, $($filter:expr),+ $(,)?) => {
        $builder$(.filter(Capped::new($filter)))+
    };
}

/// Registers Shopify's standard filters and the vault's, each wrapped in [`Capped`] (literal
/// arguments, bounded output). No tags are registered: `{% … %}` does not parse.
pub fn register(builder: ParserBuilder) -> ParserBuilder {
    use liquid_lib::stdlib;
    let builder = capped!(
        builder,
        stdlib::Abs,
        stdlib::Append,
        stdlib::AtLeast,
        stdlib::AtMost,
        stdlib::Capitalize,
        stdlib::Ceil,
        stdlib::Compact,
        stdlib::Concat,
        stdlib::Date,
        stdlib::Default,
        stdlib::DividedBy,
        stdlib::Downcase,
        stdlib::Escape,
        stdlib::EscapeOnce,
        stdlib::First,
        stdlib::Floor,
        stdlib::Join,
        stdlib::Last,
        stdlib::Lstrip,
        stdlib::Map,
        stdlib::Minus,
        stdlib::Modulo,
        stdlib::NewlineToBr,
        stdlib::Plus,
        stdlib::Prepend,
        stdlib::Remove,
        stdlib::RemoveFirst,
        stdlib::Replace,
        stdlib::ReplaceFirst,
        stdlib::Reverse,
        stdlib::Round,
        stdlib::Rstrip,
        stdlib::Size,
        stdlib::Slice,
        stdlib::Sort,
        stdlib::SortNatural,
        stdlib::Split,
        stdlib::Strip,
        stdlib::StripHtml,
        stdlib::StripNewlines,
        stdlib::Times,
        stdlib::Truncate,
        stdlib::TruncateWords,
        stdlib::Uniq,
        stdlib::Upcase,
        stdlib::UrlDecode,
        stdlib::UrlEncode,
        stdlib::Where,
    );
    capped!(
        builder,
        RevealLast,
        Reveal,
        Last4,
        PadLeft,
        PadRight,
        Stringify,
        Json,
        ToString,
        ToNumber,
        ToBoolean,
        AliasPreserveFormat,
        AliasPreserveLength,
    )
}

/// A Liquid value as canonical JSON (object keys sorted).
pub fn to_json(v: &dyn ValueView) -> serde_json::Value {
    if let Some(s) = v.as_scalar() {
        return match s.type_name() {
            "whole number" => s.to_integer().map_or(serde_json::Value::Null, Into::into),
            "fractional number" => s
                .to_float()
                .and_then(serde_json::Number::from_f64)
                .map_or(serde_json::Value::Null, serde_json::Value::Number),
            "boolean" => s.to_bool().map_or(serde_json::Value::Null, Into::into),
            _ => serde_json::Value::String(s.to_kstr().to_string()),
        };
    }
    if let Some(a) = v.as_array() {
        return serde_json::Value::Array(a.values().map(to_json).collect());
    }
    if let Some(o) = v.as_object() {
        let mut entries: Vec<(String, serde_json::Value)> =
            o.iter().map(|(k, v)| (k.to_string(), to_json(v))).collect();
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        return serde_json::Value::Object(entries.into_iter().collect());
    }
    serde_json::Value::Null
}

fn from_json(v: &serde_json::Value) -> Value {
    liquid_core::model::to_value(v).unwrap_or(Value::Nil)
}

fn text(v: &dyn ValueView) -> String {
    if v.is_nil() {
        String::new()
    } else if v.as_scalar().is_some() {
        v.to_kstr().to_string()
    } else {
        to_json(v).to_string()
    }
}

fn count(n: i64) -> usize {
    usize::try_from(n.max(0)).unwrap_or(0)
}

/// The mask character: one character (longer arguments are refused when parsing; see
/// `capped`), `X` by default.
fn mask_char(c: Option<&str>) -> String {
    c.and_then(|c| c.chars().next()).unwrap_or('X').to_string()
}

macro_rules! simple_filter {
    ($parser:ident, $filter:ident, $name:literal, $desc:literal, |$input:ident| $body:expr) => {
        #[derive(Clone, ParseFilter, FilterReflection)]
        #[filter(name = $name, description = $desc, parsed($filter))]
        pub struct $parser;

        #[derive(Debug, Default, Display_filter)]
        #[name = $name]
        struct $filter;

        impl Filter for $filter {
            fn evaluate(&self, $input: &dyn ValueView, _runtime: &dyn Runtime) -> Result<Value> {
                Ok($body)
            }
        }
    };
}

simple_filter!(
    Last4,
    Last4Filter,
    "last4",
    "The last four characters.",
    |input| {
        let s: Vec<char> = text(input).chars().collect();
        Value::scalar(s[s.len().saturating_sub(4)..].iter().collect::<String>())
    }
);

simple_filter!(
    Stringify,
    StringifyFilter,
    "stringify",
    "The value as canonical JSON text.",
    |input| {
        Value::scalar(match to_json(input) {
            serde_json::Value::String(s) => s,
            other => other.to_string(),
        })
    }
);

simple_filter!(
    ToString,
    ToStringFilter,
    "to_string",
    "The value as a string.",
    |input| Value::scalar(text(input))
);

simple_filter!(
    ToNumber,
    ToNumberFilter,
    "to_number",
    "The value as a number (nil if not one).",
    |input| {
        let t = text(input);
        t.trim()
            .parse::<i64>()
            .map(Value::scalar)
            .or_else(|_| t.trim().parse::<f64>().map(Value::scalar))
            .unwrap_or(Value::Nil)
    }
);

simple_filter!(
    ToBoolean,
    ToBooleanFilter,
    "to_boolean",
    "The value as a boolean.",
    |input| {
        Value::scalar(matches!(
            text(input).trim().to_ascii_lowercase().as_str(),
            "true" | "1" | "yes"
        ))
    }
);

simple_filter!(
    AliasPreserveFormat,
    AliasPreserveFormatFilter,
    "alias_preserve_format",
    "Random characters of the same classes; separators kept.",
    |input| {
        let mut rng = rand::rng();
        let out: String = text(input)
            .chars()
            .map(|c| {
                if c.is_ascii_digit() {
                    char::from(b'0' + rng.random_range(0..10u8))
                } else if c.is_ascii_lowercase() {
                    char::from(b'a' + rng.random_range(0..26u8))
                } else if c.is_ascii_uppercase() {
                    char::from(b'A' + rng.random_range(0..26u8))
                } else {
                    c
                }
            })
            .collect();
        Value::scalar(out)
    }
);

simple_filter!(
    AliasPreserveLength,
    AliasPreserveLengthFilter,
    "alias_preserve_length",
    "Random letters and digits of the same length.",
    |input| {
        const SET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
        let mut rng = rand::rng();
        let out: String = text(input)
            .chars()
            .map(|_| char::from(SET[rng.random_range(0..SET.len())]))
            .collect();
        Value::scalar(out)
    }
);

#[derive(Debug, FilterParameters)]
struct RevealLastArgs {
    #[parameter(description = "Characters shown at the end.", arg_type = "integer")]
    n: Expression,
    #[parameter(description = "Mask character (default X).", arg_type = "str")]
    ch: Option<Expression>,
}

#[derive(Clone, ParseFilter, FilterReflection)]
#[filter(
    name = "reveal_last",
    description = "Masks all but the last n characters.",
    parameters(RevealLastArgs),
    parsed(RevealLastFilter)
)]
pub struct RevealLast;

#[derive(Debug, FromFilterParameters, Display_filter)]
#[name = "reveal_last"]
struct RevealLastFilter {
    #[parameters]
    args: RevealLastArgs,
}

impl Filter for RevealLastFilter {
    fn evaluate(&self, input: &dyn ValueView, runtime: &dyn Runtime) -> Result<Value> {
        let args = self.args.evaluate(runtime)?;
        let c = mask_char(args.ch.as_deref());
        let chars: Vec<char> = text(input).chars().collect();
        let keep = count(args.n).min(chars.len());
        let hidden = chars.len() - keep;
        let out: String = c.repeat(hidden) + &chars[hidden..].iter().collect::<String>();
        Ok(Value::scalar(out))
    }
}

#[derive(Debug, FilterParameters)]
struct RevealArgs {
    #[parameter(description = "Characters shown at the start.", arg_type = "integer")]
    first: Expression,
    #[parameter(description = "Characters shown at the end.", arg_type = "integer")]
    last: Expression,
    #[parameter(description = "Mask character (default X).", arg_type = "str")]
    ch: Option<Expression>,
}

#[derive(Clone, ParseFilter, FilterReflection)]
#[filter(
    name = "reveal",
    description = "Masks all but the first and last characters.",
    parameters(RevealArgs),
    parsed(RevealFilter)
)]
pub struct Reveal;

#[derive(Debug, FromFilterParameters, Display_filter)]
#[name = "reveal"]
struct RevealFilter {
    #[parameters]
    args: RevealArgs,
}

impl Filter for RevealFilter {
    fn evaluate(&self, input: &dyn ValueView, runtime: &dyn Runtime) -> Result<Value> {
        let args = self.args.evaluate(runtime)?;
        let c = mask_char(args.ch.as_deref());
        let chars: Vec<char> = text(input).chars().collect();
        let first = count(args.first).min(chars.len());
        let last = count(args.last).min(chars.len() - first);
        let hidden = chars.len() - first - last;
        let out = chars[..first].iter().collect::<String>()
            + &c.repeat(hidden)
            + &chars[chars.len() - last..].iter().collect::<String>();
        Ok(Value::scalar(out))
    }
}

#[derive(Debug, FilterParameters)]
struct PadArgs {
    #[parameter(description = "Target length.", arg_type = "integer")]
    n: Expression,
    #[parameter(description = "Pad character (default space).", arg_type = "str")]
    ch: Option<Expression>,
}

pub use crate::capped::MAX_PAD;

fn pad(input: &dyn ValueView, n: i64, ch: Option<&str>, left: bool) -> Value {
    let s = text(input);
    let c = ch.and_then(|c| c.chars().next()).unwrap_or(' ');
    let missing = count(n).min(MAX_PAD).saturating_sub(s.chars().count());
    let fill: String = std::iter::repeat_n(c, missing).collect();
    Value::scalar(if left { fill + &s } else { s + &fill })
}

#[derive(Clone, ParseFilter, FilterReflection)]
#[filter(
    name = "pad_left",
    description = "Pads on the left to a length.",
    parameters(PadArgs),
    parsed(PadLeftFilter)
)]
pub struct PadLeft;

#[derive(Debug, FromFilterParameters, Display_filter)]
#[name = "pad_left"]
struct PadLeftFilter {
    #[parameters]
    args: PadArgs,
}

impl Filter for PadLeftFilter {
    fn evaluate(&self, input: &dyn ValueView, runtime: &dyn Runtime) -> Result<Value> {
        let args = self.args.evaluate(runtime)?;
        Ok(pad(input, args.n, args.ch.as_deref(), true))
    }
}

#[derive(Clone, ParseFilter, FilterReflection)]
#[filter(
    name = "pad_right",
    description = "Pads on the right to a length.",
    parameters(PadArgs),
    parsed(PadRightFilter)
)]
pub struct PadRight;

#[derive(Debug, FromFilterParameters, Display_filter)]
#[name = "pad_right"]
struct PadRightFilter {
    #[parameters]
    args: PadArgs,
}

impl Filter for PadRightFilter {
    fn evaluate(&self, input: &dyn ValueView, runtime: &dyn Runtime) -> Result<Value> {
        let args = self.args.evaluate(runtime)?;
        Ok(pad(input, args.n, args.ch.as_deref(), false))
    }
}

#[derive(Debug, FilterParameters)]
struct JsonArgs {
    #[parameter(description = "A JSONPath.", arg_type = "str")]
    path: Expression,
}

#[derive(Clone, ParseFilter, FilterReflection)]
#[filter(
    name = "json",
    description = "Selects with a JSONPath.",
    parameters(JsonArgs),
    parsed(JsonFilter)
)]
pub struct Json;

#[derive(Debug, FromFilterParameters, Display_filter)]
#[name = "json"]
struct JsonFilter {
    #[parameters]
    args: JsonArgs,
}

impl Filter for JsonFilter {
    fn evaluate(&self, input: &dyn ValueView, runtime: &dyn Runtime) -> Result<Value> {
        let args = self.args.evaluate(runtime)?;
        let path = serde_json_path::JsonPath::parse(&args.path)
            .map_err(|e| liquid_core::Error::with_msg(format!("invalid JSONPath: {e}")))?;
        let doc = to_json(input);
        let found = path.query(&doc).all();
        let total: usize = found
            .iter()
            .map(|v| tokenvault_domain::mask::json_len(v))
            .sum();
        if total > crate::capped::MAX_OUTPUT {
            return Err(liquid_core::Error::with_msg(
                "the JSONPath selects more than 1 MiB",
            ));
        }
        Ok(match found.as_slice() {
            [] => Value::Nil,
            [one] => from_json(one),
            many => from_json(&serde_json::Value::Array(
                many.iter().map(|v| (*v).clone()).collect(),
            )),
        })
    }
}
