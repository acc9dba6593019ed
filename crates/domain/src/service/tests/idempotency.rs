//! Idempotent replays: the domain seals and hands back the adapter's bytes unread, and a
//! success too large to keep is remembered as done but not replayed.

use std::collections::HashMap;
use std::sync::Mutex;

use super::*;
use crate::service::{Idempotent, Replay};

/// A record: the request's fingerprint and, once it succeeded, its sealed response.
type Record = (Vec<u8>, Option<Vec<u8>>);

/// Idempotency records in memory, as the repositories keep them (no expiry here).
#[derive(Default)]
struct Records(Mutex<HashMap<String, Record>>);

#[async_trait]
impl IdempotencyRepository for Records {
    async fn claim(
        &self,
        key: &IdempotencyKey,
        fingerprint: &[u8],
        _: OffsetDateTime,
        _: OffsetDateTime,
        _: OffsetDateTime,
    ) -> Result<Claim, RepoError> {
        let mut records = self.0.lock().unwrap();
        Ok(match records.get(&key.key) {
            None => {
                records.insert(key.key.clone(), (fingerprint.to_vec(), None));
                Claim::Claimed
            }
            Some((f, None)) => Claim::InFlight {
                fingerprint: f.clone(),
            },
            Some((f, Some(response))) => Claim::Done {
                fingerprint: f.clone(),
                response: response.clone(),
            },
        })
    }
    async fn delete_expired(&self, _: OffsetDateTime) -> Result<u64, RepoError> {
        Ok(0)
    }
    async fn complete(&self, key: &IdempotencyKey, response: &[u8]) -> Result<(), RepoError> {
        if let Some(record) = self.0.lock().unwrap().get_mut(&key.key) {
            record.1 = Some(response.to_vec());
        }
        Ok(())
    }
    async fn release(&self, key: &IdempotencyKey) -> Result<(), RepoError> {
        self.0.lock().unwrap().remove(&key.key);
        Ok(())
    }
}

#[tokio::test]
async fn replays_are_the_adapters_bytes_and_a_large_success_is_not_replayed() {
    let mut cipher = MockCiph::new();
    cipher.expect_has_tenant_key().return_const(true);
    cipher
        .expect_fingerprint()
        .returning(|_, input| Ok(format!("fp:{}", input.len())));
    // Sealing reverses the bytes, so that a test reading them unsealed would fail.
    cipher
        .expect_encrypt()
        .returning(|_, _, plain| Ok(plain.iter().rev().copied().collect()));
    cipher
        .expect_decrypt()
        .returning(|_, _, sealed| Ok(sealed.iter().rev().copied().collect()));
    let mut ports = ports(MockTenants::new(), MockApplications::new());
    ports.cipher = Arc::new(cipher);
    let records = Arc::new(Records::default());
    ports.idempotency = records.clone();
    let vault = Vault::new(ports);
    let caller = principal(&[Permission::TokenCreate]);
    let idem = &vault.idempotency;

    assert!(matches!(
        idem.idempotency_begin(&caller, "small", b"POST /tokens")
            .await,
        Ok(Idempotent::Proceed)
    ));
    // A repeat before the first finished is in flight.
    assert!(matches!(
        idem.idempotency_begin(&caller, "small", b"POST /tokens")
            .await,
        Ok(Idempotent::InFlight)
    ));
    let sent = Replay(b"\x00\xc9any bytes the adapter made".to_vec());
    idem.idempotency_complete(&caller, "small", &sent)
        .await
        .unwrap();
    match idem
        .idempotency_begin(&caller, "small", b"POST /tokens")
        .await
    {
        Ok(Idempotent::Replay(replay)) => assert_eq!(replay, sent),
        other => panic!("{other:?}"),
    }
    // The same key with another request is refused, naming the header.
    let err = idem
        .idempotency_begin(&caller, "small", b"POST /tokens/other")
        .await
        .unwrap_err();
    assert!(
        format!("{err:?}").contains("SVC-IDEMPOTENCY-KEY"),
        "{err:?}"
    );

    assert!(matches!(
        idem.idempotency_begin(&caller, "large", b"POST /tokens")
            .await,
        Ok(Idempotent::Proceed)
    ));
    let large = Replay(vec![7; (2 << 20) + 1]);
    idem.idempotency_complete(&caller, "large", &large)
        .await
        .unwrap();
    assert!(matches!(
        idem.idempotency_begin(&caller, "large", b"POST /tokens")
            .await,
        Ok(Idempotent::Unreplayable)
    ));
    // Sealed as the mark every build reads (four zero bytes; this cipher reverses them).
    let sealed = records.0.lock().unwrap()["large"].1.clone();
    assert_eq!(sealed.as_deref(), Some(crate::service::UNREPLAYABLE));
    // A replay's Debug shows its length, never its bytes.
    assert!(!format!("{sent:?}").contains("any bytes"));
}
