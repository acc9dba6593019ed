//! Driven ports: what the use cases need from the outside world. Adapters implement them;
//! the domain never names an adapter.
//!
//! Every repository write may also fail with `RepoError::Gone` when a row it refers to is
//! missing (a failed foreign key), besides the `Conflict` and `Backend` each method names.

mod applications;
mod audit;
mod cipher;
pub mod code;
mod expressions;
pub mod forward;
mod idempotency;
mod key_read;
mod keys;
mod proxies;
mod reactors;
mod sessions;
pub mod svc;
mod tenants;
mod tokens;
mod trails;
mod usage;

pub use applications::ApplicationRepository;
pub use audit::AuditRepository;
pub use cipher::{Cipher, CipherError, KeyWrapping};
pub use expressions::{Expressions, MASK_STEPS, RENDER_STEPS, RESPONSE_RENDER_STEPS, RenderError};
pub use idempotency::{Claim, IdempotencyKey, IdempotencyRepository};
pub use key_read::{AlsoRead, Beside, KeyRead, SearchAhead};
pub use keys::{Clock, KeyService};
pub use proxies::{ProxyRepository, StoredProxy};
pub use reactors::{FormulaDelete, FormulaRepository, ReactorRepository};
pub use sessions::{AuthorizedSession, SessionRepository};
pub use tenants::{TenantKeys, TenantRepository};
pub use tokens::{SearchCondition, TokenFilter, TokenRepository, TokenWrite, Visibility};
pub use trails::{ActivityTrail, AuditTrail};
pub use usage::{TypeCount, UsageRepository, month_of};
