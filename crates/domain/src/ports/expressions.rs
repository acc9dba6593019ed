//! The expression language of masks, fingerprints and aliases, and its step budgets.

use serde_json::Value;

/// The work one rendering may do, in the steps the expression engine counts (every value a
/// filter walks, more for sorting; docs/decisions.md §6). The leaves of one mask share it.
pub const RENDER_STEPS: u64 = 500_000;

/// The most a mask stored from now on may cost on its token's data: checked at create and
/// PATCH (400 naming `mask` beyond). A fifth of [`RENDER_STEPS`]: enough to convert the largest
/// token data (1 MiB) and filter it, small enough that a full page fits one response's budget.
pub const MASK_STEPS: u64 = 100_000;

/// The work the expressions of one request may do together: the masks of a response (a page of
/// 100 tokens, a detokenization) and the masks, fingerprints and ids checked or rendered for
/// the tokens one write creates (a tokenize batch). A page of 100 masks of [`MASK_STEPS`] fits,
/// so no mask stored since the cap is ever left out of a page (~0.5 s at most).
pub const RESPONSE_RENDER_STEPS: u64 = 100 * MASK_STEPS;

/// Why an expression could not be rendered on some data.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RenderError {
    /// The expression fails on this data (a filter refused its input, a missing value, …).
    #[error("{0}")]
    Failed(String),
    /// It would do more work than its step budget allows, or produce more than 1 MiB: refused,
    /// not run to the end.
    #[error("{0}")]
    TooCostly(String),
}

/// The expression language (Liquid with the filters of docs/decisions.md §6).
pub trait Expressions: Send + Sync {
    /// Parses `expression`; the error says why it does not parse.
    fn check(&self, expression: &str) -> Result<(), String>;
    /// Renders `expression` with `data` bound to the variable `data`, doing at most `*steps`
    /// steps of work and taking what it used from `*steps` (so that several renderings can
    /// share one budget).
    fn render_metered(
        &self,
        expression: &str,
        data: &Value,
        steps: &mut u64,
    ) -> Result<String, RenderError>;
    /// Renders `expression` with `data` bound to the variable `data`, within [`RENDER_STEPS`].
    fn render(&self, expression: &str, data: &Value) -> Result<String, RenderError> {
        let mut steps = RENDER_STEPS;
        self.render_metered(expression, data, &mut steps)
    }
    /// What a simple JSONPath (`$.number`, `$.items[0]`) selects in `data`, as JSON: one value,
    /// an array of several, or null for none. Paths that can select a node many times over
    /// (`..`, unions, filters) are refused.
    fn select(&self, path: &str, data: &Value) -> Result<Value, String>;
}
