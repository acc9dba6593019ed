//! Expression adapter: the domain's [`Expressions`] port on the `liquid` crate (Shopify Liquid,
//! maintained, with the standard filters), plus the vault's own filters of docs/decisions.md §6 and
//! JSONPath (`json: '$.path'`) through `serde_json_path`.

mod capped;
mod filters;

pub use capped::MAX_OUTPUT;

use capped::Meter;
use liquid::{Parser, ParserBuilder};
use serde_json::Value;
use tokenvault_domain::ports::{Expressions, RenderError};

/// Liquid with the standard library and the vault's filters. Parsing is done per call; the
/// parser (filter registry) is built once.
pub struct LiquidExpressions {
    parser: Parser,
}

impl std::fmt::Debug for LiquidExpressions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LiquidExpressions")
    }
}

impl LiquidExpressions {
    /// Builds the parser with every filter registered.
    pub fn new() -> Self {
        let parser = filters::register(ParserBuilder::new())
            .build()
            .expect("the filter registry is valid");
        Self { parser }
    }
}

impl Default for LiquidExpressions {
    fn default() -> Self {
        Self::new()
    }
}

/// Tags (`{% for %}`, `{% assign %}`, …) could loop or build large values at read time; masks,
/// fingerprints and aliases only need output expressions and filters, so tags are refused.
fn refuse_tags(expression: &str) -> Result<(), String> {
    if expression.contains("{%") {
        Err("tags ({% … %}) are not allowed in expressions; use {{ … }} with filters".into())
    } else {
        Ok(())
    }
}

impl Expressions for LiquidExpressions {
    fn check(&self, expression: &str) -> Result<(), String> {
        refuse_tags(expression)?;
        contained(|| {
            self.parser
                .parse(expression)
                .map(|_| ())
                .map_err(|e| e.to_string())
        })
    }

    fn render_metered(
        &self,
        expression: &str,
        data: &Value,
        steps: &mut u64,
    ) -> Result<String, RenderError> {
        refuse_tags(expression).map_err(RenderError::Failed)?;
        let (out, costly) = Meter::run(steps, || {
            contained(|| {
                let template = self.parser.parse(expression).map_err(|e| e.to_string())?;
                // The data is converted whole, once per rendering: that pass (measured at twice
                // a filter's pass) is paid for too, before it is made.
                Meter::charge(capped::json_steps(data).saturating_mul(2))
                    .map_err(|_| "the data is larger than the step budget".to_string())?;
                let mut globals = liquid::Object::new();
                globals.insert(
                    "data".into(),
                    liquid_core::model::to_value(data).map_err(|e| e.to_string())?,
                );
                let mut out = capped::CappedWriter::default();
                template
                    .render_to(&mut out, &globals)
                    .map_err(|e| e.to_string())?;
                String::from_utf8(out.buffer).map_err(|e| e.to_string())
            })
        });
        out.map_err(|why| {
            if costly {
                RenderError::TooCostly(why)
            } else {
                RenderError::Failed(why)
            }
        })
    }

    fn select(&self, path: &str, data: &Value) -> Result<Value, String> {
        if !capped::is_simple_json_path(path) {
            return Err(
                "the JSONPath must be a simple path: names, indices, slices or *, no .., unions \
                 or filters"
                    .into(),
            );
        }
        let path = serde_json_path::JsonPath::parse(path).map_err(|e| e.to_string())?;
        let found = path.query(data).all();
        Ok(match found.as_slice() {
            [] => Value::Null,
            [one] => (*one).clone(),
            many => Value::Array(many.iter().map(|v| (*v).clone()).collect()),
        })
    }
}

/// Runs `f`, turning a panic inside the engine (a standard filter dividing `i64::MIN` by -1,
/// say) into an error: no expression may take a worker down.
fn contained<T>(f: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
        .unwrap_or_else(|_| Err("the expression failed".into()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn render(expr: &str, data: Value) -> String {
        LiquidExpressions::new().render(expr, &data).unwrap()
    }

    #[test]
    fn select_keeps_json_and_refuses_multiplying_paths() {
        let e = LiquidExpressions::new();
        let card = json!({"number": "4242", "expiration_month": 12, "tags": ["a", "b"]});
        assert_eq!(e.select("$.expiration_month", &card).unwrap(), json!(12));
        assert_eq!(e.select("$.number", &card).unwrap(), json!("4242"));
        assert_eq!(e.select("$.tags[*]", &card).unwrap(), json!(["a", "b"]));
        assert_eq!(e.select("$.missing", &card).unwrap(), Value::Null);
        assert!(e.select("$..*", &card).is_err());
        assert!(e.select("$['a','b']", &card).is_err());
        assert!(e.select("not a path", &card).is_err());
    }

    #[test]
    fn standard_and_vault_filters() {
        assert_eq!(
            render("{{ data | slice: 0, 3 }}***", json!("abcdef")),
            "abc***"
        );
        assert_eq!(
            render("{{ data | reveal_last: 4 }}", json!("4242424242424242")),
            "XXXXXXXXXXXX4242"
        );
        assert_eq!(
            render("{{ data | reveal_last: 2, '*' }}", json!("12345")),
            "***45"
        );
        assert_eq!(
            render("{{ data | reveal: 2, 2 }}", json!("123456789")),
            "12XXXXX89"
        );
        assert_eq!(render("{{ data | last4 }}", json!("123-45-6789")), "6789");
        assert_eq!(
            render("{{ data | remove: '-' }}", json!("123-45-6789")),
            "123456789"
        );
        assert_eq!(
            render("{{ data | pad_left: 5, '0' }}", json!("42")),
            "00042"
        );
        assert_eq!(render("{{ data | pad_right: 4 }}|", json!("ab")), "ab  |");
        assert_eq!(
            render("{{ data | pad_left: 999999999 }}", json!("ab")).len(),
            filters::MAX_PAD
        );
        assert_eq!(
            render("{{ data | stringify }}", json!({"b": [1, null], "a": "x"})),
            r#"{"a":"x","b":[1,null]}"#
        );
        assert_eq!(
            render("{{ data | json: '$.a.b' }}", json!({"a": {"b": "deep"}})),
            "deep"
        );
        assert_eq!(
            render("{{ data | to_number | plus: 1 }}", json!("41")),
            "42"
        );
        assert_eq!(
            render("{{ data | to_string | append: '!' }}", json!(7)),
            "7!"
        );
        assert_eq!(render("{{ data | to_boolean }}", json!("yes")), "true");
        assert_eq!(render("{{ data | to_boolean }}", json!("nope")), "false");
        assert_eq!(
            render("{{ data.number }}", json!({"number": "4242"})),
            "4242"
        );
    }

    #[test]
    fn bad_expressions_are_refused() {
        let e = LiquidExpressions::new();
        assert!(e.check("{{ data | slice: 0, 2").is_err());
        assert!(e.check("{{ data | no_such_filter }}").is_err());
        assert!(e.check("{% if %}").is_err());
        assert!(
            e.check("{% for i in (1..100000000) %}x{% endfor %}")
                .is_err(),
            "no loops"
        );
        assert!(e.render("{% if true %}x{% endif %}", &json!(1)).is_err());
        assert!(e.check("{{ data | reveal_last: 4 }}").is_ok());
    }

    #[test]
    fn arguments_must_be_literals_and_characters_one_character() {
        let e = LiquidExpressions::new();
        // The attacks of the review: a variable argument repeats the data inside a filter.
        for expr in [
            "{{ data | reveal_last: 0, data }}",
            "{{ data | replace: '', data }}",
            "{{ data | append: data }}",
            "{{ data | join: data }}",
            "{{ data | pad_left: 10, data }}",
            "{{ data | reveal_last: 2, 'ab' }}",
            "{{ data | reveal: 1, 1, '' }}",
            "{{ data | pad_right: 5, '**' }}",
        ] {
            assert!(e.check(expr).is_err(), "{expr} must be refused");
            assert!(e.render(expr, &json!("0123456789")).is_err(), "{expr}");
        }
        for expr in [
            "{{ 'now' | date: '%99999T' }}",
            "{{ 'now' | date: '%-0999d' }}",
            "{{ data | json: '$..a' }}",
            "{{ data | json: '$[0,1]' }}",
            "{{ data | json: '$[?@.a]' }}",
        ] {
            assert!(e.check(expr).is_err(), "{expr} must be refused");
        }
        assert!(e.check("{{ 'now' | date: '%Y-%m-%d %%' }}").is_ok());
        assert!(e.check("{{ data | json: '$.a[0][*].b' }}").is_ok());
        assert!(e.check("{{ data | json: \"$['a,b']\" }}").is_ok());
        // A panic inside a standard filter is an error, not a crash.
        assert!(
            e.render("{{ -9223372036854775808 | divided_by: -1 }}", &json!(1))
                .is_err()
        );
        assert!(e.check("{{ data | reveal_last: 2, '*' }}").is_ok());
        assert!(
            e.check("{{ data.a | append: 'x' | replace: 'a', 'b' }}")
                .is_ok()
        );
    }

    #[test]
    fn output_is_capped_before_it_is_allocated() {
        let e = LiquidExpressions::new();
        let big = json!("a".repeat(600 * 1024));
        // 600 KiB × a 4 KiB replacement between every character: ~2.5 TB if allowed.
        let four_k = "y".repeat(4000);
        let expr = format!("{{{{ data | replace: '', '{four_k}' }}}}");
        assert!(e.check(&expr).is_ok());
        assert!(e.render(&expr, &big).is_err());
        assert!(e.render("{{ data | append: data }}", &big).is_err());
        // Each output fits; together they pass 1 MiB.
        assert!(e.render("{{ data }}{{ data }}", &big).is_err());
        assert_eq!(e.render("{{ data }}", &big).unwrap().len(), 600 * 1024);
        assert!(
            e.render("{{ data | escape }}", &big).is_err(),
            "6× growth bound"
        );
        let small = json!("x".repeat(1000));
        assert_eq!(
            e.render("{{ data | replace: 'x', 'yy' }}", &small)
                .unwrap()
                .len(),
            2000
        );
        let lines = json!("\n".repeat(200_000));
        assert!(e.render("{{ data | newline_to_br }}", &lines).is_err());
    }

    /// The review's finding: `uniq` is quadratic in liquid (3.4 s over 20,000 items on every
    /// masked read). Work is budgeted: quadratic work over a large array is refused before it
    /// runs, and every render ends quickly, whatever it is asked.
    #[test]
    fn work_is_budgeted_and_quadratic_work_is_refused() {
        let e = LiquidExpressions::new();
        let items: Vec<Value> = (0..20_000).map(|i| json!(format!("v{i}"))).collect();
        let data = Value::Array(items);
        let started = std::time::Instant::now();
        assert!(e.render("{{ data | uniq | size }}", &data).is_err());
        assert!(
            started.elapsed() < std::time::Duration::from_millis(500),
            "refused before it runs: {:?}",
            started.elapsed()
        );
        // Linear and n·log n work over the same array stays within the budget.
        assert_eq!(e.render("{{ data | size }}", &data).unwrap(), "20000");
        assert_eq!(e.render("{{ data | sort | first }}", &data).unwrap(), "v0");
        assert_eq!(
            e.render("{{ data | reverse | last }}", &data).unwrap(),
            "v0"
        );
        // A small array may still be made unique.
        assert_eq!(
            e.render("{{ data | uniq | join: ',' }}", &json!([1, 2, 1]))
                .unwrap(),
            "1,2"
        );
        // A long chain of linear filters over a large array adds up and is refused.
        let chain = " | reverse".repeat(400);
        let started = std::time::Instant::now();
        assert!(
            e.render(&format!("{{{{ data{chain} | size }}}}"), &data)
                .is_err()
        );
        assert!(started.elapsed() < std::time::Duration::from_millis(500));
    }

    #[test]
    fn stringify_is_canonical() {
        let a = render(
            "{{ data | stringify }}",
            json!({"z": 1, "a": {"y": 2, "b": 3}}),
        );
        let b = render(
            "{{ data | stringify }}",
            json!({"a": {"b": 3, "y": 2}, "z": 1}),
        );
        assert_eq!(a, b);
    }

    proptest! {
        #[test]
        fn aliases_keep_format_and_length(s in "[0-9A-Za-z -]{1,30}") {
            let f = render("{{ data | alias_preserve_format }}", json!(s.clone()));
            prop_assert_eq!(f.chars().count(), s.chars().count());
            for (a, b) in s.chars().zip(f.chars()) {
                prop_assert_eq!(a.is_ascii_digit(), b.is_ascii_digit());
                prop_assert_eq!(a.is_ascii_lowercase(), b.is_ascii_lowercase());
                prop_assert_eq!(a.is_ascii_uppercase(), b.is_ascii_uppercase());
                if !a.is_ascii_alphanumeric() { prop_assert_eq!(a, b); }
            }
            let l = render("{{ data | alias_preserve_length }}", json!(s.clone()));
            prop_assert_eq!(l.chars().count(), s.chars().count());
        }

        #[test]
        fn reveal_last_shows_only_the_tail(s in "[0-9]{0,20}", n in 0i64..25) {
            let out = render(&format!("{{{{ data | reveal_last: {n} }}}}"), json!(s.clone()));
            prop_assert_eq!(out.chars().count(), s.chars().count());
            let keep = usize::try_from(n).unwrap().min(s.len());
            prop_assert_eq!(&out[s.len() - keep..], &s[s.len() - keep..]);
            prop_assert!(out[..s.len() - keep].chars().all(|c| c == 'X'));
        }
    }
}
