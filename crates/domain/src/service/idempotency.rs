//! Idempotent requests (docs/decisions.md §11): `SVC-IDEMPOTENCY-KEY` on POST/PUT/PATCH. A key
//! belongs to the application that sent it; the first success is stored encrypted under the
//! tenant's data key (it may hold token data or an API key) and replayed for 24 hours; a
//! request still in flight is a 409; the same key with another request is a 422; a failure is
//! not stored, so the request may be retried with its key.

use time::Duration;

use crate::auth::Principal;
use crate::error::{Error, ValidationErrors};
use crate::ports::{Claim, IdempotencyKey};
use crate::service::Idempotency;

/// How long a stored response is replayed.
const RETENTION: Duration = Duration::hours(24);
/// How long a request may hold its key without finishing before the key is free again (its
/// request died: a dropped connection, a crash).
const IN_FLIGHT_LEASE: Duration = Duration::minutes(2);
/// The largest response kept for replay; a larger success is remembered as done but answered
/// with 409 when repeated.
const MAX_STORED: usize = 2 << 20;
/// The header, for error messages.
const HEADER: &str = "SVC-IDEMPOTENCY-KEY";

/// A success kept for replay: the bytes the inbound adapter made of its response (their shape
/// is the adapter's; the domain only seals, stores and hands them back). Never the four zero
/// bytes of [`UNREPLAYABLE`].
#[derive(Clone, PartialEq, Eq)]
pub struct Replay(pub Vec<u8>);

impl std::fmt::Debug for Replay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The response may hold token data or an API key.
        f.debug_struct("Replay")
            .field("len", &self.0.len())
            .finish_non_exhaustive()
    }
}

/// What is sealed for a success too large to replay: four zero bytes, the mark every build has
/// written (to the HTTP adapter, a status of 0), so that instances of an older and a newer build
/// side by side during an upgrade read each other's marks alike. No replay is these bytes.
pub const UNREPLAYABLE: &[u8] = &[0, 0, 0, 0];

/// What to do with a request that carries a key.
#[derive(Debug)]
pub enum Idempotent {
    /// Run it, then `idempotency_complete` (success) or `idempotency_release` (failure).
    Proceed,
    /// Answer with the stored response.
    Replay(Replay),
    /// The first request with this key is still running (409).
    InFlight,
    /// The first request with this key succeeded but its response cannot be replayed (too
    /// large, or it could not be stored): 409, never a second run.
    Unreplayable,
}

impl Idempotency {
    fn idempotency_key(caller: &Principal, key: &str) -> Result<IdempotencyKey, Error> {
        if key.is_empty() || key.len() > 255 || !key.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(Error::invalid(
                HEADER,
                "must be 1 to 255 visible ASCII characters",
            ));
        }
        Ok(IdempotencyKey {
            tenant_id: caller.tenant_id,
            application_id: caller.application_id,
            key: key.to_string(),
        })
    }

    fn context(key: &IdempotencyKey) -> Vec<u8> {
        format!("idempotency:{}:{}", key.application_id, key.key).into_bytes()
    }

    /// Claims `key` for a request described by `request` (method, path, query and body): a
    /// keyed hash of it is kept, never the request itself.
    pub async fn idempotency_begin(
        &self,
        caller: &Principal,
        key: &str,
        request: &[u8],
    ) -> Result<Idempotent, Error> {
        let key = Self::idempotency_key(caller, key)?;
        self.shared.ensure_key(caller.tenant_id).await?;
        let fingerprint = self
            .cipher
            .fingerprint(caller.tenant_id, request)
            .map_err(|e| Error::internal_from("fingerprinting a request", e))?
            .into_bytes();
        let now = self.clock.now();
        let claimed = self
            .store
            .claim(
                &key,
                &fingerprint,
                now,
                now - RETENTION,
                now - IN_FLIGHT_LEASE,
            )
            .await;
        // A claim is a create: its tenant deleted (and purged) meanwhile is refused as such.
        let claim = self.shared.tenant_write(caller.tenant_id, claimed).await?;
        let mismatch = || {
            Error::Unprocessable(ValidationErrors::single(
                HEADER,
                "this key was used for another request (method, path or body)",
            ))
        };
        match claim {
            Claim::Claimed => Ok(Idempotent::Proceed),
            Claim::InFlight { fingerprint: f } if f == fingerprint => Ok(Idempotent::InFlight),
            Claim::Done {
                fingerprint: f,
                response,
            } if f == fingerprint => {
                let plain = self
                    .cipher
                    .decrypt(caller.tenant_id, &Self::context(&key), &response)
                    .map_err(|e| Error::internal_from("decrypting a stored response", e))?;
                // An empty record is the mark too, as a build of this session wrote it.
                if plain == UNREPLAYABLE || plain.is_empty() {
                    Ok(Idempotent::Unreplayable)
                } else {
                    Ok(Idempotent::Replay(Replay(plain)))
                }
            }
            Claim::InFlight { .. } | Claim::Done { .. } => Err(mismatch()),
        }
    }

    /// Stores the success of the request holding `key`, encrypted (a response over 2 MiB, or
    /// an empty one, as a marker that it succeeded).
    pub async fn idempotency_complete(
        &self,
        caller: &Principal,
        key: &str,
        response: &Replay,
    ) -> Result<(), Error> {
        let key = Self::idempotency_key(caller, key)?;
        let kept = if response.0.len() > MAX_STORED {
            UNREPLAYABLE
        } else {
            &response.0
        };
        let sealed = self
            .cipher
            .encrypt(caller.tenant_id, &Self::context(&key), kept)
            .map_err(|e| Error::internal_from("encrypting a stored response", e))?;
        Ok(self.store.complete(&key, &sealed).await?)
    }

    /// Deletes the records past their 24 hours (the expiry sweep); how many.
    pub async fn purge_idempotency(&self) -> Result<u64, Error> {
        let now = self.clock.now();
        Ok(self.store.delete_expired(now - RETENTION).await?)
    }

    /// Releases `key`: its request failed and may be retried.
    pub async fn idempotency_release(&self, caller: &Principal, key: &str) -> Result<(), Error> {
        let key = Self::idempotency_key(caller, key)?;
        Ok(self.store.release(&key).await?)
    }
}
