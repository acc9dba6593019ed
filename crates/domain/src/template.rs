//! `{{ id }}` templates: finding token expressions in JSON and substituting values for them.
//! Pure; used by detokenize, reactors and proxies (which also accept `{{ id | filters }}`).

use std::collections::BTreeMap;

use serde_json::Value;

use crate::token::check_literal_id;

/// One `{{ id }}` or `{{ id | filters }}` occurrence in a string.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expression {
    /// Byte offset of `{{`.
    pub start: usize,
    /// Byte offset just past `}}`.
    pub end: usize,
    /// The token id.
    pub id: String,
    /// The filter chain after the first `|` (`json: '$.number'`), trimmed; `None` without one.
    pub filter: Option<String>,
}

impl Expression {
    /// The key its value is kept under: the id, or `id|filter`.
    pub fn key(&self) -> String {
        match &self.filter {
            None => self.id.clone(),
            Some(f) => format!("{}|{f}", self.id),
        }
    }
}

/// Parses the expressions of a string; `with_filters` also accepts `{{ id | filters }}`.
pub fn parse_expressions(s: &str, with_filters: bool) -> Vec<Expression> {
    expressions(s, with_filters).collect()
}

/// The distinct ids of the expressions in `text` read as one string (a request body before it
/// is parsed as JSON); `None` past `limit` ids. They may differ from the parsed body's (an
/// escaped character inside an expression, a `{{` in one string closed in another), so a
/// caller compares the two before relying on what it read for them.
pub fn ids_in_text(
    text: &str,
    with_filters: bool,
    limit: usize,
) -> Option<std::collections::BTreeSet<String>> {
    let mut ids = std::collections::BTreeSet::new();
    for e in expressions(text, with_filters) {
        ids.insert(e.id);
        if ids.len() > limit {
            return None;
        }
    }
    Some(ids)
}

/// The expressions of a string, one at a time.
fn expressions(s: &str, with_filters: bool) -> impl Iterator<Item = Expression> + '_ {
    let mut from = 0;
    std::iter::from_fn(move || {
        while let Some(open) = s[from..].find("{{").map(|i| i + from) {
            let close = s[open + 2..].find("}}").map(|i| i + open + 2)?;
            from = close + 2;
            let inner = s[open + 2..close].trim();
            let (id, filter) = match inner.split_once('|') {
                Some((id, filter)) if with_filters && !filter.trim().is_empty() => {
                    (id.trim(), Some(filter.trim().to_string()))
                }
                Some(_) => ("", None),
                None => (inner, None),
            };
            if !id.is_empty() && check_literal_id(id).is_ok() {
                return Some(Expression {
                    start: open,
                    end: close + 2,
                    id: id.to_string(),
                    filter,
                });
            }
        }
        None
    })
}

/// Every expression in any string of `v`, in document order.
pub fn collect_all(v: &Value, with_filters: bool, out: &mut Vec<Expression>) {
    match v {
        Value::String(s) => out.extend(parse_expressions(s, with_filters)),
        Value::Array(items) => items.iter().for_each(|i| collect_all(i, with_filters, out)),
        Value::Object(map) => map.values().for_each(|i| collect_all(i, with_filters, out)),
        _ => {}
    }
}

/// Replaces each expression by the value under its [`Expression::key`]: a string that is
/// exactly one expression becomes the value itself (any JSON); inside a longer string the value
/// is spliced in as text (non-strings as JSON). Expressions without a value stay as they are.
pub fn substitute_all(v: Value, with_filters: bool, values: &BTreeMap<String, Value>) -> Value {
    match v {
        Value::String(s) => {
            let found = parse_expressions(&s, with_filters);
            if let [one] = found.as_slice()
                && one.start == 0
                && one.end == s.len()
            {
                return values.get(&one.key()).cloned().unwrap_or(Value::String(s));
            }
            if found.is_empty() {
                return Value::String(s);
            }
            let mut out = String::with_capacity(s.len());
            let mut last = 0;
            for e in found {
                out.push_str(&s[last..e.start]);
                match values.get(&e.key()) {
                    Some(Value::String(text)) => out.push_str(text),
                    Some(other) => out.push_str(&other.to_string()),
                    None => out.push_str(&s[e.start..e.end]),
                }
                last = e.end;
            }
            out.push_str(&s[last..]);
            Value::String(out)
        }
        Value::Array(items) => Value::Array(
            items
                .into_iter()
                .map(|i| substitute_all(i, with_filters, values))
                .collect(),
        ),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, i)| (k, substitute_all(i, with_filters, values)))
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
    fn a_raw_body_names_the_ids_its_parsed_strings_do_up_to_a_limit() {
        let body =
            json!({"a": "{{ tok_1 }}", "b": ["x {{tok_2|json: '$.n'}} y", "{{ tok_1 }}"], "c": 5});
        let text = body.to_string();
        let mut parsed = Vec::new();
        collect_all(&body, true, &mut parsed);
        let parsed: std::collections::BTreeSet<String> = parsed.into_iter().map(|e| e.id).collect();
        assert_eq!(ids_in_text(&text, true, 10), Some(parsed));
        assert_eq!(
            ids_in_text(&text, true, 1),
            None,
            "two ids past a limit of one"
        );
        assert_eq!(
            ids_in_text("{{ tok_1 }} {{", true, 10).map(|ids| ids.len()),
            Some(1)
        );
    }

    #[test]
    fn expressions_are_found_and_substituted() {
        let values: BTreeMap<String, Value> = [
            ("abc".to_string(), json!("secret")),
            ("obj".to_string(), json!({"n": 1})),
        ]
        .into();
        let body = json!({"a": "{{ abc }}", "b": ["x {{abc}} y {{ obj }}"], "c": "{{obj}}", "d": 5, "e": "{{ nope"});
        let out = substitute_all(body, false, &values);
        assert_eq!(
            out,
            json!({"a": "secret", "b": ["x secret y {\"n\":1}"], "c": {"n": 1}, "d": 5, "e": "{{ nope"})
        );
        let mut found = Vec::new();
        collect_all(&json!(["{{ a1b }}", {"k": "{{ a/b }}"}]), false, &mut found);
        let ids: Vec<&str> = found.iter().map(|e| e.id.as_str()).collect();
        assert_eq!(ids, vec!["a1b"]);
    }

    #[test]
    fn filtered_expressions_only_where_asked() {
        let text = "n={{ card1 | json: '$.number' }} m={{card1}}";
        assert_eq!(parse_expressions(text, false).len(), 1);
        let all = parse_expressions(text, true);
        assert_eq!(all.len(), 2);
        assert_eq!(all[0].filter.as_deref(), Some("json: '$.number'"));
        assert_eq!(all[0].key(), "card1|json: '$.number'");
        assert_eq!(all[1].key(), "card1");
        let values: BTreeMap<String, Value> = [
            ("card1|json: '$.number'".to_string(), json!("4242")),
            ("card1".to_string(), json!({"number": "4242"})),
        ]
        .into();
        assert_eq!(
            substitute_all(json!(text), true, &values),
            json!("n=4242 m={\"number\":\"4242\"}")
        );
        // Without filters the filtered one is not an expression and stays as written.
        assert_eq!(
            substitute_all(json!("{{ card1 | json: '$.n' }}"), false, &values),
            json!("{{ card1 | json: '$.n' }}")
        );
        // An empty filter or id is no expression.
        assert!(parse_expressions("{{ card1 | }} {{ | x }}", true).is_empty());
    }
}
