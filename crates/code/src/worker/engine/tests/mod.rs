//! The engine's tests: limits, the lazy globals, and Node's built-in modules computing real
//! values. By concern: what a call costs its runtime (`runtime`), the globals and host functions
//! of a call's context (`globals`), QuickJS's intrinsics added on first use (`intrinsics`), and
//! the tenant's module: compiled, kept and loaded (`modules`).

mod globals;
mod intrinsics;
mod modules;
mod runtime;
