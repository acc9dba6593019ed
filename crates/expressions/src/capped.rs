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
//!
//! The work is bounded too (a step budget per rendering, [`Meter`]): every filter pays, before
//! it runs, one step per value it is given (an array's items and an object's entries, each
//! recursively; a string one step per 32 bytes) and the same for what it returns; `sort` and
//! `sort_natural` pay that times log₂ of the item count, `uniq` (quadratic in liquid) the item
//! count times the size over two. A filter that would pass the budget is refused before it
//! runs, so `{{ data | uniq }}` over 20,000 items fails at once instead of taking seconds.

use std::fmt;

use liquid_core::parser::{FilterArguments, FilterReflection, ParameterReflection, ParseFilter};
use liquid_core::{Error, Expression, Filter, Result, Runtime, Value, ValueView};

/// The longest text any filter or a whole rendering may produce (1 MiB).
pub const MAX_OUTPUT: usize = 1 << 20;

/// The longest string a pad filter produces (no request can make the server allocate more);
/// here, with the other bounds, so that the cost estimates below need nothing of `filters`.
pub const MAX_PAD: usize = 4096;

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
    weigh(v).bytes
}

/// Bytes of text in a string that count as one step of work.
const BYTES_PER_STEP: usize = 32;

/// What a value weighs: its [`size`] and the steps a pass over it costs.
#[derive(Clone, Copy, Default)]
pub struct Weight {
    /// Its length as text.
    pub bytes: usize,
    /// One per value, a string one more per 32 bytes.
    pub steps: u64,
}

impl std::ops::Add for Weight {
    type Output = Self;
    fn add(self, other: Self) -> Self {
        Self {
            bytes: self.bytes.saturating_add(other.bytes),
            steps: self.steps.saturating_add(other.steps),
        }
    }
}

fn text_steps(bytes: usize) -> u64 {
    1 + (bytes / BYTES_PER_STEP) as u64
}

/// [`size`] and steps in one walk.
pub fn weigh(v: &dyn ValueView) -> Weight {
    if let Some(a) = v.as_array() {
        return a.values().fold(Weight { bytes: 0, steps: 1 }, |w, i| {
            w + weigh(i) + Weight { bytes: 1, steps: 0 }
        });
    }
    if let Some(o) = v.as_object() {
        return o.iter().fold(Weight { bytes: 0, steps: 1 }, |w, (k, i)| {
            w + weigh(i)
                + Weight {
                    bytes: k.len() + 1,
                    steps: text_steps(k.len()),
                }
        });
    }
    if v.is_nil() {
        return Weight { bytes: 0, steps: 1 };
    }
    let bytes = v.to_kstr().len();
    Weight {
        bytes,
        steps: text_steps(bytes),
    }
}

/// The steps of a pass over JSON data (the conversion a rendering starts with).
pub fn json_steps(v: &serde_json::Value) -> u64 {
    match v {
        serde_json::Value::String(s) => text_steps(s.len()),
        serde_json::Value::Array(items) => items
            .iter()
            .fold(1u64, |n, i| n.saturating_add(json_steps(i))),
        serde_json::Value::Object(map) => map.iter().fold(1u64, |n, (k, i)| {
            n.saturating_add(text_steps(k.len()))
                .saturating_add(json_steps(i))
        }),
        _ => 1,
    }
}

/// The step budget of the rendering running on this thread (renderings are synchronous, and
/// the filters of one are called on the thread that renders it).
pub struct Meter;

thread_local! {
    /// Steps left to the rendering running on this thread.
    static STEPS_LEFT: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    /// Whether it was refused for its cost (steps or output), not for its data.
    static TOO_COSTLY: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

impl Meter {
    /// Runs `f` (a rendering) with `*steps` steps; leaves what it did not use in `*steps`.
    /// Returns what `f` returns and whether it was refused for its cost.
    pub fn run<T>(steps: &mut u64, f: impl FnOnce() -> T) -> (T, bool) {
        let left = STEPS_LEFT.replace(*steps);
        let costly = TOO_COSTLY.replace(false);
        let out = f();
        *steps = STEPS_LEFT.replace(left);
        (out, TOO_COSTLY.replace(costly))
    }

    /// Takes `steps` from the budget, or refuses (the budget is then spent).
    pub fn charge(steps: u64) -> std::result::Result<(), TooCostly> {
        let left = STEPS_LEFT.get();
        if steps > left {
            STEPS_LEFT.set(0);
            return Err(Self::too_costly());
        }
        STEPS_LEFT.set(left - steps);
        Ok(())
    }

    /// Marks the rendering as refused for its cost.
    pub fn too_costly() -> TooCostly {
        TOO_COSTLY.set(true);
        TooCostly
    }
}

/// A rendering refused for its cost.
#[derive(Debug)]
pub struct TooCostly;

fn over_budget(name: &str) -> Error {
    refuse("the expression needs more work than its step budget", name)
}

fn log2_ceil(n: u64) -> u64 {
    u64::from(u64::BITS - n.saturating_sub(1).leading_zeros())
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
            // Each piece costs a separator in `size`: the pieces are counted before splitting.
            "split" => {
                let pattern = self.args.first().map(|p| p.to_kstr().to_string());
                let pieces = match (pattern.as_deref(), text()) {
                    (Some(p), Some(t)) if !p.is_empty() => t.matches(p).count() + 1,
                    (_, Some(t)) => t.chars().count(),
                    _ => n,
                };
                n.saturating_add(pieces)
            }
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
            "pad_left" | "pad_right" => n.saturating_add(4 * MAX_PAD),
            // Filters that never lengthen their input, or only by serialising it.
            _ => n,
        }
    }
}

impl CappedFilter {
    /// The steps the filter's own work costs beyond one pass over its input of `weight`.
    fn extra_steps(&self, input: &dyn ValueView, weight: Weight) -> u64 {
        let items = || {
            input
                .as_array()
                .map_or(0, |a| a.size().max(0).unsigned_abs())
        };
        match self.name.as_str() {
            // n·log n comparisons, each as deep as the items.
            "sort" | "sort_natural" => weight.steps.saturating_mul(log2_ceil(items())),
            // liquid compares each item with every distinct one before it: quadratic.
            "uniq" => items().saturating_mul(weight.steps) / 2,
            // Converted to JSON and back (`json`), or to JSON text, per call; a regular
            // expression over the text (`strip_html`): measured at several times a plain pass.
            "json" => weight.steps.saturating_mul(4),
            "stringify" | "to_string" | "last4" | "strip_html" => weight.steps.saturating_mul(2),
            _ => 0,
        }
    }
}

impl Filter for CappedFilter {
    fn evaluate(&self, input: &dyn ValueView, runtime: &dyn Runtime) -> Result<Value> {
        let weight = weigh(input);
        let n = weight.bytes;
        if n > MAX_OUTPUT || self.bound(input, n) > MAX_OUTPUT {
            Meter::too_costly();
            return Err(refuse("the output would exceed 1 MiB", &self.name));
        }
        Meter::charge(weight.steps.saturating_add(self.extra_steps(input, weight)))
            .map_err(|_| over_budget(&self.name))?;
        let out = self.inner.evaluate(input, runtime)?;
        let weight = weigh(out.as_view());
        if weight.bytes > MAX_OUTPUT {
            Meter::too_costly();
            return Err(refuse("the output exceeds 1 MiB", &self.name));
        }
        Meter::charge(weight.steps).map_err(|_| over_budget(&self.name))?;
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
            Meter::too_costly();
            return Err(std::io::Error::other("the output exceeds 1 MiB"));
        }
        self.buffer.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
