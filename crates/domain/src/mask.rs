//! Rendering masks and fingerprints through the expression port.

use serde_json::{Map, Value};

use crate::ports::Expressions;

/// If `expr` is exactly `{{ data }}` or `{{ data.a.b }}` (no filters), the path after `data`.
fn plain_path(expr: &str) -> Option<Vec<&str>> {
    let inner = expr.trim().strip_prefix("{{")?.strip_suffix("}}")?.trim();
    if inner.contains('|') || inner.contains("{{") {
        return None;
    }
    let mut parts = inner.split('.');
    if parts.next()? != "data" {
        return None;
    }
    let rest: Vec<&str> = parts.collect();
    rest.iter()
        .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'))
        .then_some(rest)
}

fn lookup<'a>(data: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(data, |v, key| v.get(*key))
}

/// Evaluates a mask over `data`: a string mask renders to a string; an object mask keeps the
/// JSON shape, renders each leaf, copies plain `{{ data.x }}` leaves with their JSON type, and
/// drops every key it does not name. `None` when rendering fails (the caller shows no data).
pub fn render_mask(engine: &dyn Expressions, mask: &Value, data: &Value) -> Option<Value> {
    match mask {
        Value::String(expr) => {
            if let Some(path) = plain_path(expr) {
                return lookup(data, &path).cloned();
            }
            engine.render(expr, data).ok().map(Value::String)
        }
        Value::Object(fields) => {
            let mut out = Map::new();
            for (key, leaf) in fields {
                if let Some(v) = render_mask(engine, leaf, data) {
                    out.insert(key.clone(), v);
                }
            }
            Some(Value::Object(out))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    struct Upper;
    impl Expressions for Upper {
        fn check(&self, _: &str) -> Result<(), String> {
            Ok(())
        }
        fn render(&self, expression: &str, _: &Value) -> Result<String, String> {
            if expression.contains("fail") {
                Err("bad".into())
            } else {
                Ok(expression.to_uppercase())
            }
        }
    }

    #[test]
    fn object_masks_keep_shape_and_types() {
        let data = json!({"number": "4242", "month": 12, "cvc": "123", "deep": {"x": true}});
        let mask = json!({"number": "n{{ data.number | x }}", "month": "{{ data.month }}", "deep": {"x": "{{data.deep.x}}"}});
        let out = render_mask(&Upper, &mask, &data).unwrap();
        assert_eq!(
            out,
            json!({"number": "N{{ DATA.NUMBER | X }}", "month": 12, "deep": {"x": true}})
        );
    }

    #[test]
    fn failures_and_missing_paths_drop_the_value() {
        assert_eq!(render_mask(&Upper, &json!("fail"), &json!("x")), None);
        assert_eq!(
            render_mask(&Upper, &json!({"a": "{{ data.none }}"}), &json!({})),
            Some(json!({}))
        );
        assert_eq!(plain_path("{{ data | last4 }}"), None);
        assert_eq!(plain_path("{{ data }}"), Some(vec![]));
    }
}
