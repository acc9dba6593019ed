//! Reading tokens: the deciding rule, visibility pushed into a list's query, detokenize's bound,
//! and a usage report that waits for the activity a read recorded.

use serde_json::json;

use super::*;
use crate::ports::Visibility;

/// A report must see every activity recorded before it started, even while the background
/// flush has drained the buffer and is still writing (docs/decisions.md §10). The write is
/// made slow by holding the fake repository until the test lets it go; no timing involved.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_report_waits_for_the_flush_in_flight() {
    use futures_util::FutureExt as _;
    use std::sync::atomic::{AtomicU64, Ordering};
    let written = Arc::new(AtomicU64::new(0));
    let (entered_tx, entered_rx) = tokio::sync::oneshot::channel::<()>();
    let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
    let entered_tx = std::sync::Mutex::new(Some(entered_tx));
    let go_rx = std::sync::Mutex::new(go_rx);
    let mut tokens = MockTokens::new();
    tokens.expect_get().returning(|_, id, _| {
        // Made last month: a read this month is recorded as activity.
        let mut token = stored(id, "/pci/high/", &json!("4242424242424242"));
        token.created_at = now() - Duration::days(40);
        Ok(Some(token))
    });
    let mut usage = MockUsage::new();
    let w = written.clone();
    usage.expect_record_activity().returning(move |entries| {
        if let Some(tx) = entered_tx.lock().unwrap().take() {
            let _ = tx.send(());
        }
        go_rx.lock().unwrap().recv().unwrap();
        w.fetch_add(entries.len() as u64, Ordering::SeqCst);
        Ok(())
    });
    let w = written.clone();
    usage
        .expect_count_active()
        .returning(move |_, _| Ok(w.load(Ordering::SeqCst)));
    usage.expect_count_by_type().returning(|_, _| Ok(vec![]));
    let mut ports = token_ports(tokens);
    ports.usage = Arc::new(usage);
    let vault = Vault::new(ports);
    let who = caller(
        &[Permission::TokenRead, Permission::ReportRead],
        vec![],
        TenantSettings::default(),
    );
    vault.tokens.get_token(&who, "t-1").await.unwrap();
    let background = tokio::spawn({
        let vault = vault.clone();
        async move { vault.usage.flush_activity().await }
    });
    entered_rx.await.unwrap(); // the background flush has drained the buffer and is writing
    let mut report = Box::pin(vault.usage.usage_report(&who));
    assert!(
        (&mut report).now_or_never().is_none(),
        "the report waits for the flush in flight"
    );
    go_tx.send(()).unwrap();
    assert_eq!(background.await.unwrap().unwrap(), 1);
    assert_eq!(report.await.unwrap().monthly_active_tokens, 1);
}

#[tokio::test]
async fn reads_apply_the_deciding_rule() {
    let mut tokens = MockTokens::new();
    tokens
        .expect_get()
        .returning(|_, id, _| Ok(Some(stored(id, "/pci/high/", &json!("4242424242424242")))));
    let vault = token_vault(tokens);
    let reveal = caller(
        &[Permission::TokenRead],
        vec![rule("/pci/", Transform::Reveal, &[Permission::TokenRead])],
        TenantSettings::default(),
    );
    assert_eq!(
        vault.tokens.get_token(&reveal, "t").await.unwrap().shown,
        Some(json!("4242424242424242"))
    );
    let redact = caller(
        &[Permission::TokenRead],
        vec![rule("/", Transform::Redact, &[Permission::TokenRead])],
        TenantSettings::default(),
    );
    assert_eq!(
        vault.tokens.get_token(&redact, "t").await.unwrap().shown,
        None
    );
    let elsewhere = caller(
        &[],
        vec![rule("/bank/", Transform::Reveal, &[Permission::TokenRead])],
        TenantSettings::default(),
    );
    assert!(matches!(
        vault.tokens.get_token(&elsewhere, "t").await,
        Err(Error::Forbidden)
    ));
}

#[tokio::test]
async fn lists_push_visibility_into_the_query() {
    let mut tokens = MockTokens::new();
    tokens
        .expect_list()
        .withf(|_, f, _, _| f.visibility == Visibility::Prefixes(vec!["/pci/".into()]))
        .times(1)
        .returning(|_, _, page, _| {
            Ok(Page {
                items: vec![],
                total_items: 0,
                request: page,
            })
        });
    let vault = token_vault(tokens);
    let who = caller(
        &[],
        vec![rule("/pci/", Transform::Mask, &[Permission::TokenRead])],
        TenantSettings::default(),
    );
    let filter = TokenFilter {
        ids: vec![],
        types: vec![],
        metadata: vec![],
        visibility: Visibility::All,
        parent: None,
    };
    let page = vault
        .tokens
        .list_tokens(&who, filter, PageRequest::default())
        .await
        .unwrap();
    assert_eq!(page.total_items, 0);
}

#[tokio::test]
async fn detokenize_refuses_more_than_a_hundred_tokens_without_reading() {
    let mut tokens = MockTokens::new();
    tokens.expect_get_many().never();
    let vault = token_vault(tokens);
    let who = caller(&[Permission::TokenRead], vec![], TenantSettings::default());
    let body = json!(
        (0..101)
            .map(|i| format!("{{{{ token-{i} }}}}"))
            .collect::<Vec<_>>()
    );
    assert!(matches!(
        vault.tokens.detokenize(&who, body).await,
        Err(Error::Validation(_))
    ));
}
