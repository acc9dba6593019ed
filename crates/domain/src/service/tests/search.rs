//! `POST /tokens/search`: the permission, the query's 400s before any read, and what the store
//! is given (terms, never values; the caller's `token:search` visibility).

use super::tokens::{caller, rule, token_vault};
use super::*;
use crate::access::Transform;
use crate::ports::{SearchCondition, Visibility};
use crate::search_index::data_term_input;

fn page_of(page: PageRequest) -> Page<StoredToken> {
    Page {
        items: vec![],
        total_items: 0,
        request: page,
    }
}

const PAGE: PageRequest = PageRequest { page: 1, size: 20 };

#[tokio::test]
async fn a_search_needs_token_search_and_a_query_that_parses_before_any_read() {
    let mut tokens = MockTokens::new();
    tokens.expect_search().never();
    let vault = token_vault(tokens);
    let reader = caller(&[Permission::TokenRead], vec![], TenantSettings::default());
    assert!(matches!(
        vault.tokens.search_tokens(&reader, "", PAGE, None).await,
        Err(Error::Forbidden)
    ));
    let searcher = caller(
        &[Permission::TokenSearch],
        vec![],
        TenantSettings::default(),
    );
    for bad in ["data:", "nope:1", "(data:1"] {
        match vault.tokens.search_tokens(&searcher, bad, PAGE, None).await {
            Err(Error::Validation(e)) => assert!(e.contains("query"), "{bad}"),
            other => panic!("{bad}: {other:?}"),
        }
    }
}

#[tokio::test]
async fn the_store_is_given_terms_and_the_search_visibility() {
    let mut tokens = MockTokens::new();
    tokens
        .expect_search()
        .withf(|_, condition, visibility, _, _| {
            // The mock cipher's term is "st" and its input: the value only ever reaches the
            // store inside the keyed hash's input, never as a condition of its own.
            let term = format!("st{}", String::from_utf8_lossy(&data_term_input("ABC")));
            *condition
                == Some(SearchCondition::All(vec![
                    SearchCondition::Term(term),
                    SearchCondition::Type("card".into()),
                ]))
                && *visibility == Visibility::Prefixes(vec!["/pci/".into()])
        })
        .times(1)
        .returning(|_, _, _, page, _| Ok(page_of(page)));
    tokens
        .expect_search()
        .withf(|_, condition, _, _, _| condition.is_none())
        .times(1)
        .returning(|_, _, _, page, _| Ok(page_of(page)));
    let vault = token_vault(tokens);
    let who = caller(
        &[],
        vec![rule("/pci/", Transform::Mask, &[Permission::TokenSearch])],
        TenantSettings::default(),
    );
    let found = vault
        .tokens
        .search_tokens(&who, "data:abc AND type:card", PAGE, None)
        .await
        .unwrap();
    assert_eq!(found.total_items, 0);
    vault
        .tokens
        .search_tokens(&who, "  ", PAGE, None)
        .await
        .unwrap();
}

/// `fingerprint:` only for a caller that sees every token it may search revealed: a plain
/// grant is a mask, unless a reveal rule on `/` decides every token first.
#[tokio::test]
async fn a_fingerprint_search_needs_every_searchable_token_revealed() {
    let mut tokens = MockTokens::new();
    tokens
        .expect_search()
        .times(1)
        .returning(|_, _, _, page, _| Ok(page_of(page)));
    let vault = token_vault(tokens);
    let q = "fingerprint:abc";
    let plain = caller(
        &[Permission::TokenSearch],
        vec![],
        TenantSettings::default(),
    );
    let masked = caller(
        &[],
        vec![
            rule("/pci/", Transform::Reveal, &[Permission::TokenSearch]),
            rule("/pii/", Transform::Mask, &[Permission::TokenSearch]),
        ],
        TenantSettings::default(),
    );
    for who in [&plain, &masked] {
        assert!(matches!(
            vault.tokens.search_tokens(who, q, PAGE, None).await,
            Err(Error::Forbidden)
        ));
    }
    let revealed = caller(
        &[Permission::TokenSearch],
        vec![rule("/", Transform::Reveal, &[Permission::TokenSearch])],
        TenantSettings::default(),
    );
    vault
        .tokens
        .search_tokens(&revealed, q, PAGE, None)
        .await
        .unwrap();
}
