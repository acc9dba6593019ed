//! Several master keys behind one [`KeyWrapping`]: the current one wraps; unwrapping tries it,
//! then each previous one that does not know the wrapped form. How a vault moves from a local
//! master key to a key manager: the key manager current, the local key previous, then
//! `tokenvault keys rotate-master` re-wraps every tenant key under the key manager.

use std::sync::Arc;

use async_trait::async_trait;
use tokenvault_domain::ports::{CipherError, KeyWrapping};

/// The current wrapping and the previous ones.
#[derive(Debug)]
pub struct WrappingChain {
    current: Arc<dyn KeyWrapping>,
    previous: Vec<Arc<dyn KeyWrapping>>,
}

impl WrappingChain {
    /// `current` wraps; it and then each of `previous` unwrap.
    pub fn new(current: Arc<dyn KeyWrapping>, previous: Vec<Arc<dyn KeyWrapping>>) -> Self {
        Self { current, previous }
    }
}

#[async_trait]
impl KeyWrapping for WrappingChain {
    async fn wrap(&self, context: &[u8], key: &[u8]) -> Result<Vec<u8>, CipherError> {
        self.current.wrap(context, key).await
    }

    async fn unwrap(&self, context: &[u8], wrapped: &[u8]) -> Result<Vec<u8>, CipherError> {
        match self.current.unwrap(context, wrapped).await {
            Err(CipherError::UnknownMasterKey) => {}
            done => return done,
        }
        for previous in &self.previous {
            match previous.unwrap(context, wrapped).await {
                Err(CipherError::UnknownMasterKey) => {}
                done => return done,
            }
        }
        Err(CipherError::UnknownMasterKey)
    }

    async fn is_current(&self, wrapped: &[u8]) -> Result<bool, CipherError> {
        self.current.is_current(wrapped).await
    }
}

#[cfg(test)]
mod tests {
    use futures_util::FutureExt as _;

    use super::*;
    use crate::{LocalMasterKeys, MasterKey};

    fn local(b: u8) -> Arc<dyn KeyWrapping> {
        Arc::new(LocalMasterKeys::new(MasterKey::from_bytes([b; 32]), vec![]))
    }

    #[test]
    fn the_current_wraps_and_every_key_unwraps() {
        let old = local(1);
        let wrapped_old = old.wrap(b"ctx", &[7; 32]).now_or_never().unwrap().unwrap();
        let chain = WrappingChain::new(local(2), vec![old]);
        let wrapped_new = chain
            .wrap(b"ctx", &[8; 32])
            .now_or_never()
            .unwrap()
            .unwrap();
        let unwrap = |w: &[u8]| chain.unwrap(b"ctx", w).now_or_never().unwrap();
        assert_eq!(unwrap(&wrapped_old).unwrap(), vec![7; 32]);
        assert_eq!(unwrap(&wrapped_new).unwrap(), vec![8; 32]);
        assert!(
            !chain
                .is_current(&wrapped_old)
                .now_or_never()
                .unwrap()
                .unwrap()
        );
        assert!(
            chain
                .is_current(&wrapped_new)
                .now_or_never()
                .unwrap()
                .unwrap()
        );
        // Bound to its context; unknown keys stay unknown.
        assert!(matches!(
            chain.unwrap(b"other", &wrapped_old).now_or_never().unwrap(),
            Err(CipherError::Corrupt)
        ));
        let stranger = local(3)
            .wrap(b"ctx", &[9; 32])
            .now_or_never()
            .unwrap()
            .unwrap();
        assert!(matches!(
            unwrap(&stranger),
            Err(CipherError::UnknownMasterKey)
        ));
    }
}
