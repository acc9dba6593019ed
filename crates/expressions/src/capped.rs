//! Every filter, the standard ones and the vault's, is registered through [`Capped`], which
//! makes expressions unable to grow without bound (docs/decisions.md §6):
//!
//! - filter arguments must be literals (a variable such as `data` could repeat the data inside
//!   a filter: `{{ data | replace: '', data }}` is quadratic in the data);
//! - mask and padding characters are exactly one character;
//! - before a filter runs, its input must be at most [`MAX_OUTPUT`] and, for the filters whose
//!   output grows with their arguments (`append`, `replace`, `join`, …), the length the output
//!   can reach is computed from the input and the arguments and refused past [`MAX_OUTPUT`];
//!   filters that grow by a small constant factor (`escape`, `url_encode`, `upcase`) are bounded
//!   the same way, and every output is checked again after the filter.
//!
//! Together with the capped writer of the template output, no expression can make the server
//! allocate more than a small multiple of 1 MiB.

use std::fmt;

use liquid_core::parser::{FilterArguments, FilterReflection, ParameterReflection, ParseFilter};
use liquid_core::{Error, Expression, Filter, Result, Runtime, Value, ValueView};

/// The longest text any filter or a whole rendering may produce (1 MiB).
pub const MAX_OUTPUT: usize = 1 << 20;

/// A filter wrapped with the checks of this module.
#[derive(Clone)]
pub struct Capped<F> {
    inner: F,
}

impl<F> Capped<F> {
    /// Wraps `inner`.
    pub fn new(inner: F) -> Self {
        Self { inner }
    }
}

impl<F: ParseFilter> FilterReflection for Capped<F> {
    fn name(&self) -> &str {
        self.inner.reflection().name()
    }
    fn description(&self) -> &str {
        self.inner.reflection().description()
    }
    fn positional_parameters(&self) -> &'static [ParameterReflection] {
        self.inner.reflection().positional_parameters()
    }
    fn keyword_parameters(&self) -> &'static [ParameterReflection] {
        self.inner.reflection().keyword_parameters()
    }
}

/// Which positional argument of a filter is a mask or padding character.
fn one_char_argument(name: &str) -> Option<usize> {
    match name {
        "reveal_last" | "pad_left" | "pad_right" => Some(1),
        "reveal" => Some(2),
        _ => None,
    }
}

fn refuse(message: &str, name: &str) -> Error {
    Error::with_msg(message.to_owned()).context("filter", name.to_owned())
}

impl<F: ParseFilter + Clone + 'static> ParseFilter for Capped<F> {
    fn parse(&self, arguments: FilterArguments) -> Result<Box<dyn Filter>> {
        let name = self.inner.reflection().name().to_owned();
        let positional: Vec<Expression> = arguments.positional.collect();
        let keyword: Vec<(&str, Expression)> = arguments.keyword.collect();
        let mut args = Vec::with_capacity(positional.len());
        for (i, e) in positional.iter().enumerate() {
            let Expression::Literal(v) = e else {
                return Err(refuse("filter arguments must be literals", &name));
            };
            if one_char_argument(&name) == Some(i) && v.to_kstr().chars().count() != 1 {
                return Err(refuse(
                    "the character argument must be one character",
                    &name,
                ));
            }
            args.push(v.clone());
        }
        if keyword
            .iter()
            .any(|(_, e)| matches!(e, Expression::Variable(_)))
        {
            return Err(refuse("filter arguments must be literals", &name));
        }
        match name.as_str() {
            "date" if args.first().is_some_and(|f| has_width(&f.to_kstr())) => {
                return Err(refuse("date formats cannot set a width", &name));
            }
            "json" => {
                let path = args.first().map(|p| p.to_kstr().to_string());
                if !path.as_deref().is_some_and(is_simple_json_path) {
                    return Err(refuse(
                        "the JSONPath must be a simple path: names, indices, slices or *, \
                         without `..`, unions or filters",
                        &name,
                    ));
                }
            }
            _ => {}
        }
        let inner = self.inner.parse(FilterArguments {
            positional: Box::new(positional.into_iter()),
            keyword: Box::new(keyword.into_iter()),
        })?;
        Ok(Box::new(CappedFilter { name, args, inner }))
    }

    fn reflection(&self) -> &dyn FilterReflection {
        self
    }
}

/// Whether a `date` format sets a field width (`%99999999T` pads that many characters).
fn has_width(format: &str) -> bool {
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        if c == '%' {
            let rest: String = chars
                .clone()
                .skip_while(|f| matches!(f, '-' | '_' | '0' | '^' | '#'))
                .take(1)
                .collect();
            if rest.starts_with(|d: char| d.is_ascii_digit()) {
                return true;
            }
            chars.next();
        }
    }
    false
}

/// A JSONPath whose result is at most as large as the document: it parses, and has no
/// descendant segment (`..`), union (`,`) or filter (`?`) outside quoted names, which can
/// select the same node many times over.
pub(crate) fn is_simple_json_path(path: &str) -> bool {
    if serde_json_path::JsonPath::parse(path).is_err() {
        return false;
    }
    let mut quote = None;
    let mut previous = ' ';
    for c in path.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            None if c == '\'' || c == '"' => quote = Some(c),
            None if c == ',' || c == '?' || (c == '.' && previous == '.') => return false,
            _ => {}
        }
        previous = c;
    }
    true
}

struct CappedFilter {
    name: String,
    args: Vec<Value>,
    inner: Box<dyn Filter>,
}

impl fmt::Debug for CappedFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.fmt(f)
    }
}

impl fmt::Display for CappedFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.inner, f)
    }
}

/// The length of a value as text: scalars their bytes, collections the sum of their items
/// plus one per item (a separator).
pub fn size(v: &dyn ValueView) -> usize {
    if let Some(a) = v.as_array() {
        return a.values().map(|i| size(i) + 1).sum();
    }
    if let Some(o) = v.as_object() {
        return o.iter().map(|(k, i)| k.len() + size(i) + 1).sum();
    }
    if v.is_nil() {
        return 0;
    }
    v.to_kstr().len()
}

impl CappedFilter {
    fn arg_len(&self, i: usize) -> usize {
        self.args.get(i).map_or(0, |v| size(v.as_view()))
    }

    /// The most bytes the filter's output can hold for an input of `n` bytes.
    fn bound(&self, input: &dyn ValueView, n: usize) -> usize {
        let text = || input.as_scalar().map(|s| s.to_kstr().to_string());
        match self.name.as_str() {
            "append" | "prepend" | "concat" => n.saturating_add(self.arg_len(0)),
            "replace" => {
                let pattern = self.args.first().map(|p| p.to_kstr().to_string());
                let hits = match (pattern.as_deref(), text()) {
                    (Some(p), Some(t)) if !p.is_empty() => t.matches(p).count(),
                    (_, Some(t)) => t.chars().count() + 1,
                    _ => n + 1,
                };
                n.saturating_add(hits.saturating_mul(self.arg_len(1)))
            }
            "replace_first" => n.saturating_add(self.arg_len(1)),
            "join" => {
                let items = input.as_array().map_or(1, |a| a.values().count());
                let separator = if self.args.is_empty() {
                    1
                } else {
                    self.arg_len(0)
                };
                n.saturating_add(items.saturating_mul(separator))
            }
            "default" => n.max(self.arg_len(0)),
            "truncate" | "truncatewords" => n.saturating_add(self.arg_len(1).max(3)),
            "date" => n.saturating_add(self.arg_len(0).saturating_mul(64)),
            "newline_to_br" => {
                let lines = text().map_or(n, |t| t.matches('\n').count());
                n.saturating_add(lines.saturating_mul(6))
            }
            "escape" | "escape_once" => n.saturating_mul(6),
            "url_encode" | "upcase" | "downcase" | "capitalize" => n.saturating_mul(3),
            "reveal" | "reveal_last" | "alias_preserve_format" | "alias_preserve_length" => {
                n.saturating_mul(4)
            }
            "pad_left" | "pad_right" => n.saturating_add(4 * crate::filters::MAX_PAD),
            // Filters that never lengthen their input, or only by serialising it.
            _ => n,
        }
    }
}

impl Filter for CappedFilter {
    fn evaluate(&self, input: &dyn ValueView, runtime: &dyn Runtime) -> Result<Value> {
        let n = size(input);
        if n > MAX_OUTPUT || self.bound(input, n) > MAX_OUTPUT {
            return Err(refuse("the output would exceed 1 MiB", &self.name));
        }
        let out = self.inner.evaluate(input, runtime)?;
        if size(out.as_view()) > MAX_OUTPUT {
            return Err(refuse("the output exceeds 1 MiB", &self.name));
        }
        Ok(out)
    }
}

/// A sink for the rendered template that fails once more than [`MAX_OUTPUT`] bytes arrive.
#[derive(Default)]
pub struct CappedWriter {
    /// What was written so far.
    pub buffer: Vec<u8>,
}

impl std::io::Write for CappedWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.buffer.len() + buf.len() > MAX_OUTPUT {
            return Err(std::io::Error::other("the output exceeds 1 MiB"));
        }
        self.buffer.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
