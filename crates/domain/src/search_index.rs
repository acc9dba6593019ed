//! Search indexes (docs/decisions.md §12): Liquid expressions per token whose values a search
//! by `data:` matches, and the blind index terms they and the metadata are stored as.
//!
//! A term is a keyed hash (the cipher's search key, a tenant key used for nothing else) of a
//! normalized, domain-separated input: `data` values and `metadata` values are lower-cased
//! (they match case-insensitively) and each kind carries its own prefix, so a metadata value
//! never matches a `data:` search and no term equals a fingerprint. Values are never stored,
//! shown or logged: only the terms, beside the token's ciphertext.

use serde_json::Value;

use crate::error::ValidationErrors;
use crate::token::MAX_EXPRESSION_LEN;
use crate::token_type::TokenType;

/// The most search indexes one token may have.
pub const MAX_SEARCH_INDEXES: usize = 10;
/// The longest value a search index may evaluate to (characters): an index is for a value a
/// caller holds (an SSN, its last four digits), not for a document.
pub const MAX_INDEX_VALUE_LEN: usize = 1024;

/// The search indexes a token of `token_type` gets when its create names none.
pub fn default_search_indexes(token_type: TokenType) -> Vec<String> {
    match token_type {
        TokenType::SocialSecurityNumber | TokenType::EmployerIdNumber => vec![
            "{{ data }}".to_string(),
            "{{ data | remove: '-' }}".to_string(),
            "{{ data | last4 }}".to_string(),
        ],
        _ => Vec::new(),
    }
}

/// Reads `search_indexes` as a client sent it: an array of at most [`MAX_SEARCH_INDEXES`]
/// expression strings (`null`: none given). Errors name `search_indexes` or the item.
pub fn parse_search_indexes(raw: &Value, errors: &mut ValidationErrors) -> Option<Vec<String>> {
    let items = match raw {
        Value::Null => return None,
        Value::Array(items) => items,
        _ => {
            errors.add("search_indexes", "must be an array of expressions");
            return None;
        }
    };
    if items.len() > MAX_SEARCH_INDEXES {
        errors.add("search_indexes", "at most 10 search indexes");
        return None;
    }
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        match item.as_str() {
            Some(e) if !e.trim().is_empty() && e.len() <= MAX_EXPRESSION_LEN => {
                out.push(e.to_string());
            }
            Some(_) => errors.add(
                format!("search_indexes.{i}"),
                "must be an expression of 1 to 4096 characters",
            ),
            None => errors.add(format!("search_indexes.{i}"), "must be a string"),
        }
    }
    Some(out)
}

/// Checks one evaluated index value: non-empty and at most [`MAX_INDEX_VALUE_LEN`]
/// characters (the message names neither the value nor its length).
pub fn check_index_value(value: &str) -> Result<(), &'static str> {
    if value.trim().is_empty() {
        return Err("evaluates to an empty value");
    }
    if value.chars().count() > MAX_INDEX_VALUE_LEN {
        return Err("evaluates to a value longer than 1024 characters");
    }
    Ok(())
}

/// What the search key hashes for a `data` value (the value as a search gives it, or as an
/// index evaluated): lower-cased, after its own prefix.
pub fn data_term_input(value: &str) -> Vec<u8> {
    let mut out = b"tokenvault:search:data:v1\0".to_vec();
    out.extend_from_slice(value.to_lowercase().as_bytes());
    out
}

/// What the search key hashes for a metadata entry: the key as it is, the value lower-cased,
/// after their own prefix (the key is length-prefixed, so no key/value split is ambiguous).
pub fn metadata_term_input(key: &str, value: &str) -> Vec<u8> {
    let mut out = b"tokenvault:search:metadata:v1\0".to_vec();
    out.extend_from_slice(&(key.len() as u64).to_be_bytes());
    out.extend_from_slice(key.as_bytes());
    out.extend_from_slice(value.to_lowercase().as_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn social_security_and_employer_numbers_are_indexed_by_default() {
        assert_eq!(
            default_search_indexes(TokenType::SocialSecurityNumber).len(),
            3
        );
        assert_eq!(default_search_indexes(TokenType::EmployerIdNumber).len(), 3);
        assert!(default_search_indexes(TokenType::Card).is_empty());
        assert!(default_search_indexes(TokenType::Token).is_empty());
    }

    #[test]
    fn indexes_are_bounded_and_named_when_bad() {
        let mut errors = ValidationErrors::new();
        assert_eq!(
            parse_search_indexes(&json!(["{{ data }}"]), &mut errors),
            Some(vec!["{{ data }}".to_string()])
        );
        assert!(errors.is_empty());
        assert_eq!(parse_search_indexes(&Value::Null, &mut errors), None);
        let eleven: Vec<&str> = vec!["{{ data }}"; 11];
        parse_search_indexes(&json!(eleven), &mut errors);
        assert!(errors.contains("search_indexes"));
        let mut errors = ValidationErrors::new();
        parse_search_indexes(&json!(["{{ data }}", 7, ""]), &mut errors);
        assert!(errors.contains("search_indexes.1"));
        assert!(errors.contains("search_indexes.2"));
        let mut errors = ValidationErrors::new();
        parse_search_indexes(&json!("{{ data }}"), &mut errors);
        assert!(errors.contains("search_indexes"));
    }

    #[test]
    fn terms_fold_case_and_keep_kinds_apart() {
        assert_eq!(data_term_input("ABC"), data_term_input("abc"));
        assert_ne!(data_term_input("abc"), metadata_term_input("", "abc"));
        assert_ne!(
            metadata_term_input("ab", "c"),
            metadata_term_input("a", "bc"),
            "the key's length keeps the split unambiguous"
        );
        assert_eq!(
            metadata_term_input("Customer", "X"),
            metadata_term_input("Customer", "x")
        );
        assert_ne!(
            metadata_term_input("Customer", "x"),
            metadata_term_input("customer", "x"),
            "keys match exactly"
        );
    }

    #[test]
    fn an_index_value_is_non_empty_and_short() {
        assert!(check_index_value("6789").is_ok());
        assert!(check_index_value("  ").is_err());
        assert!(check_index_value(&"x".repeat(1025)).is_err());
    }
}
