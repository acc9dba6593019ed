//! `{{ id }}` templates: finding token expressions in JSON and substituting values for them.
//! Pure; used by detokenize (and, later, by proxies and reactors).

use std::collections::BTreeMap;

use serde_json::Value;

use crate::token::check_literal_id;

/// Parses `{{ id }}` occurrences in a string: (start, end, id) triples.
pub fn expressions_in(s: &str) -> Vec<(usize, usize, String)> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(open) = s[from..].find("{{").map(|i| i + from) {
        let Some(close) = s[open + 2..].find("}}").map(|i| i + open + 2) else {
            break;
        };
        let id = s[open + 2..close].trim();
        if !id.is_empty() && check_literal_id(id).is_ok() {
            out.push((open, close + 2, id.to_string()));
        }
        from = close + 2;
    }
    out
}

/// Every token id named by an expression in any string of `v`, in document order.
pub fn collect_expressions(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.extend(expressions_in(s).into_iter().map(|(_, _, id)| id)),
        Value::Array(items) => items.iter().for_each(|i| collect_expressions(i, out)),
        Value::Object(map) => map.values().for_each(|i| collect_expressions(i, out)),
        _ => {}
    }
}

/// Replaces each expression by its token's value: a string that is exactly one expression
/// becomes the value itself (any JSON); inside a longer string the value is spliced in as text
/// (non-strings as JSON). Ids without a value are left as they are.
pub fn substitute(v: Value, values: &BTreeMap<String, Value>) -> Value {
    match v {
        Value::String(s) => {
            let found = expressions_in(&s);
            if let [(0, end, id)] = found.as_slice()
                && *end == s.len()
            {
                return values.get(id).cloned().unwrap_or(Value::String(s));
            }
            if found.is_empty() {
                return Value::String(s);
            }
            let mut out = String::with_capacity(s.len());
            let mut last = 0;
            for (start, end, id) in found {
                out.push_str(&s[last..start]);
                match values.get(&id) {
                    Some(Value::String(text)) => out.push_str(text),
                    Some(other) => out.push_str(&other.to_string()),
                    None => out.push_str(&s[start..end]),
                }
                last = end;
            }
            out.push_str(&s[last..]);
            Value::String(out)
        }
        Value::Array(items) => {
            Value::Array(items.into_iter().map(|i| substitute(i, values)).collect())
        }
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, i)| (k, substitute(i, values)))
                .collect(),
        ),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn expressions_are_found_and_substituted() {
        let values: BTreeMap<String, Value> = [
            ("abc".to_string(), json!("secret")),
            ("obj".to_string(), json!({"n": 1})),
        ]
        .into();
        let body = json!({"a": "{{ abc }}", "b": ["x {{abc}} y {{ obj }}"], "c": "{{obj}}", "d": 5, "e": "{{ nope"});
        let out = substitute(body, &values);
        assert_eq!(
            out,
            json!({"a": "secret", "b": ["x secret y {\"n\":1}"], "c": {"n": 1}, "d": 5, "e": "{{ nope"})
        );
        let mut ids = Vec::new();
        collect_expressions(&json!(["{{ a1b }}", {"k": "{{ a/b }}"}]), &mut ids);
        assert_eq!(ids, vec!["a1b".to_string()]);
    }
}
