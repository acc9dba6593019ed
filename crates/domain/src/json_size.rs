//! How large a JSON value is, without writing it out: the budgets of masks, token data and
//! code results are counted with it. Below every other module (it imports none).

use serde_json::Value;

/// The length of a value as compact JSON, counted without building the text.
pub fn json_len(v: &Value) -> usize {
    match v {
        Value::Null => 4,
        Value::Bool(b) => 4 + usize::from(!*b),
        Value::Number(n) => n.to_string().len(),
        Value::String(s) => s.len() + 2,
        Value::Array(items) => items.iter().map(|i| json_len(i) + 1).sum::<usize>() + 1,
        Value::Object(map) => {
            map.iter()
                .map(|(k, i)| k.len() + 4 + json_len(i))
                .sum::<usize>()
                + 1
        }
    }
}
