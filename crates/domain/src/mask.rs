//! Masks: the shape a mask must have, and rendering masks and fingerprints through the
//! expression port.

use serde_json::{Map, Value};

use crate::error::ValidationErrors;
pub use crate::json_size::json_len;
use crate::ports::{Expressions, RENDER_STEPS, RenderError};
use crate::token::MAX_EXPRESSION_LEN;

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

/// The most a whole mask may render to, over all its fields (1 MiB).
pub const MAX_RENDERED: usize = 1 << 20;

/// Evaluates a mask over `data`: a string mask renders to a string; an object mask keeps the
/// JSON shape, renders each leaf, copies plain `{{ data.x }}` leaves with their JSON type, and
/// drops every key it does not name. `None` when rendering fails, or when the fields together
/// pass [`MAX_RENDERED`] or the step budget (the caller shows no data).
pub fn render_mask(engine: &dyn Expressions, mask: &Value, data: &Value) -> Option<Value> {
    try_render_mask(engine, mask, data).ok().flatten()
}

/// [`render_mask`] for one of several tokens of a response: the masks of one response share
/// `steps` (at most [`RENDER_STEPS`] each), so a page of tokens whose stored masks each cost the
/// most one may cost does not hold the request for the sum of them (docs/decisions.md §6). A
/// mask that cannot be rendered within what is left shows no data, as one that fails.
pub fn render_mask_sharing(
    engine: &dyn Expressions,
    mask: &Value,
    data: &Value,
    steps: &mut u64,
) -> Option<Value> {
    let mut budget = Budget {
        bytes: MAX_RENDERED,
        steps: (*steps).min(RENDER_STEPS),
    };
    let before = budget.steps;
    let shown = render_within(engine, mask, data, &mut budget);
    *steps = steps.saturating_sub(before - budget.steps);
    shown.ok().flatten()
}

/// [`render_mask`], telling a mask too costly for `data` (`Err`: it passes [`MAX_RENDERED`] or
/// the one step budget, [`RENDER_STEPS`], that all its leaves share) from one that renders to
/// nothing (`Ok(None)`). Create and PATCH refuse the first with a 400.
pub fn try_render_mask(
    engine: &dyn Expressions,
    mask: &Value,
    data: &Value,
) -> Result<Option<Value>, RenderError> {
    let mut steps = RENDER_STEPS;
    try_render_mask_within(engine, mask, data, &mut steps)
}

/// [`try_render_mask`] within `*steps`, taking what it used from them.
pub fn try_render_mask_within(
    engine: &dyn Expressions,
    mask: &Value,
    data: &Value,
    steps: &mut u64,
) -> Result<Option<Value>, RenderError> {
    let mut budget = Budget {
        bytes: MAX_RENDERED,
        steps: *steps,
    };
    let shown = render_within(engine, mask, data, &mut budget);
    *steps = budget.steps;
    shown
}

struct Budget {
    bytes: usize,
    steps: u64,
}

impl Budget {
    fn spend(&mut self, n: usize) -> Result<(), RenderError> {
        self.bytes = self
            .bytes
            .checked_sub(n)
            .ok_or_else(|| RenderError::TooCostly("the mask renders to more than 1 MiB".into()))?;
        Ok(())
    }
}

/// Renders `mask` while `budget` lasts. `Err` once it is spent (the whole mask fails); `Ok(None)`
/// when this leaf alone cannot be rendered (it is dropped).
fn render_within(
    engine: &dyn Expressions,
    mask: &Value,
    data: &Value,
    budget: &mut Budget,
) -> Result<Option<Value>, RenderError> {
    match mask {
        Value::String(expr) => {
            if let Some(path) = plain_path(expr) {
                let Some(found) = lookup(data, &path) else {
                    return Ok(None);
                };
                budget.spend(json_len(found))?;
                return Ok(Some(found.clone()));
            }
            match engine.render_metered(expr, data, &mut budget.steps) {
                Ok(text) => {
                    budget.spend(text.len())?;
                    Ok(Some(Value::String(text)))
                }
                Err(e @ RenderError::TooCostly(_)) => Err(e),
                Err(RenderError::Failed(_)) => Ok(None),
            }
        }
        Value::Object(fields) => {
            let mut out = Map::new();
            for (key, leaf) in fields {
                if let Some(v) = render_within(engine, leaf, data, budget)? {
                    out.insert(key.clone(), v);
                }
            }
            Ok(Some(Value::Object(out)))
        }
        _ => Ok(None),
    }
}

/// The most expressions one mask may hold (each is rendered on every read).
pub const MAX_MASK_FIELDS: usize = 32;

/// Validates a mask: its shape ([`check_mask_shape`]) and at most [`MAX_MASK_FIELDS`]
/// expressions in all.
pub fn check_mask(mask: &Value, errors: &mut ValidationErrors) {
    check_mask_shape(mask, "mask", errors);
    let mut leaves = Vec::new();
    mask_expressions(mask, "mask", &mut leaves);
    if leaves.len() > MAX_MASK_FIELDS {
        errors.add("mask", "at most 32 expressions");
    }
}

/// A mask is an expression string or an object (nested) whose leaves are expression strings.
pub fn check_mask_shape(mask: &Value, field: &str, errors: &mut ValidationErrors) {
    match mask {
        Value::String(s) if s.len() <= MAX_EXPRESSION_LEN => {}
        Value::String(_) => errors.add(field, "expression is too long"),
        Value::Object(map) if !map.is_empty() => {
            for (k, v) in map {
                check_mask_shape(v, &format!("{field}.{k}"), errors);
            }
        }
        _ => errors.add(field, "must be an expression string or an object of them"),
    }
}

/// Every expression string in a mask, with its field path.
pub fn mask_expressions<'a>(mask: &'a Value, field: &str, out: &mut Vec<(String, &'a str)>) {
    match mask {
        Value::String(s) => out.push((field.to_string(), s)),
        Value::Object(map) => {
            for (k, v) in map {
                mask_expressions(v, &format!("{field}.{k}"), out);
            }
        }
        _ => {}
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
        fn render_metered(
            &self,
            expression: &str,
            _: &Value,
            steps: &mut u64,
        ) -> Result<String, RenderError> {
            // One step per character, so that tests can spend the budget.
            let cost = expression.len() as u64;
            if cost > *steps {
                return Err(RenderError::TooCostly("over budget".into()));
            }
            *steps -= cost;
            if expression.contains("fail") {
                Err(RenderError::Failed("bad".into()))
            } else {
                Ok(expression.to_uppercase())
            }
        }
        fn select(&self, _: &str, data: &Value) -> Result<Value, String> {
            Ok(data.clone())
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

    #[test]
    fn a_mask_renders_at_most_one_mebibyte_in_all() {
        let big = json!("x".repeat(400 * 1024));
        let one = json!({"a": "{{ data }}", "b": "{{ data }}"});
        assert!(render_mask(&Upper, &one, &big).is_some());
        // Many plain leaves, each a copy of the data: refused once they pass 1 MiB together.
        let many: Map<String, Value> = (0..40)
            .map(|i| (format!("k{i}"), json!("{{ data }}")))
            .collect();
        assert_eq!(render_mask(&Upper, &Value::Object(many), &big), None);
    }

    #[test]
    fn the_leaves_of_a_mask_share_one_step_budget() {
        let long = "y".repeat(usize::try_from(RENDER_STEPS / 4).unwrap() + 1);
        let three: Map<String, Value> = (0..3).map(|i| (format!("k{i}"), json!(long))).collect();
        assert!(render_mask(&Upper, &Value::Object(three), &json!("x")).is_some());
        let four: Map<String, Value> = (0..4).map(|i| (format!("k{i}"), json!(long))).collect();
        assert!(matches!(
            try_render_mask(&Upper, &Value::Object(four), &json!("x")),
            Err(RenderError::TooCostly(_))
        ));
        assert_eq!(
            try_render_mask(&Upper, &json!("fail"), &json!("x")),
            Ok(None)
        );
    }

    #[test]
    fn the_masks_of_one_response_share_its_budget() {
        use crate::ports::RESPONSE_RENDER_STEPS;
        // Each mask costs just under what one rendering may cost: twenty fit in a response's
        // budget, the twenty-first shows nothing, and every one of them alone renders.
        let cost = RENDER_STEPS - 1;
        let costly = json!("z".repeat(usize::try_from(cost).unwrap()));
        let mut steps = RESPONSE_RENDER_STEPS;
        let fit = usize::try_from(RESPONSE_RENDER_STEPS / cost).unwrap();
        let shown: Vec<bool> = (0..=fit)
            .map(|_| render_mask_sharing(&Upper, &costly, &json!("x"), &mut steps).is_some())
            .collect();
        assert_eq!(shown.iter().filter(|s| **s).count(), fit);
        assert_eq!(shown.last(), Some(&false));
        assert!(render_mask(&Upper, &costly, &json!("x")).is_some());
        // Cheap masks after the budget is spent still cost nothing they do not have.
        let left = RESPONSE_RENDER_STEPS - cost * fit as u64;
        assert_eq!(steps, left);
        assert!(render_mask_sharing(&Upper, &json!("abc"), &json!("x"), &mut steps).is_some());
        assert_eq!(steps, left - 3);
    }
}
