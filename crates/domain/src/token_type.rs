//! The eight token types of docs/decisions.md §6: validation of their data, default container, default
//! mask and default fingerprint expression.

use serde_json::{Value, json};

use crate::error::ValidationErrors;

/// A token type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TokenType {
    /// Any JSON.
    Token,
    /// A payment card object.
    Card,
    /// A bank account object.
    Bank,
    /// A card number string.
    CardNumber,
    /// A US social security number.
    SocialSecurityNumber,
    /// A US employer identification number.
    EmployerIdNumber,
    /// A US bank account number.
    UsBankAccountNumber,
    /// A US bank routing (ABA) number.
    UsBankRoutingNumber,
}

impl TokenType {
    /// Every type.
    pub const ALL: [TokenType; 8] = [
        Self::Token,
        Self::Card,
        Self::Bank,
        Self::CardNumber,
        Self::SocialSecurityNumber,
        Self::EmployerIdNumber,
        Self::UsBankAccountNumber,
        Self::UsBankRoutingNumber,
    ];

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Token => "token",
            Self::Card => "card",
            Self::Bank => "bank",
            Self::CardNumber => "card_number",
            Self::SocialSecurityNumber => "social_security_number",
            Self::EmployerIdNumber => "employer_id_number",
            Self::UsBankAccountNumber => "us_bank_account_number",
            Self::UsBankRoutingNumber => "us_bank_routing_number",
        }
    }

    /// Parses the wire name.
    pub fn parse(value: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.as_str() == value)
    }

    /// The container a token of this type goes to when none is given.
    pub fn default_container(self) -> &'static str {
        match self {
            Self::Token => "/general/high/",
            Self::Card | Self::CardNumber => "/pci/high/",
            Self::Bank | Self::UsBankAccountNumber => "/bank/high/",
            Self::SocialSecurityNumber | Self::EmployerIdNumber => "/pii/high/",
            Self::UsBankRoutingNumber => "/bank/low/",
        }
    }

    /// The mask applied when the token has none of its own.
    pub fn default_mask(self) -> Option<Value> {
        match self {
            Self::Token => None,
            Self::Card => Some(json!({
                "number": "{{ data.number | reveal_last: 4 }}",
                "expiration_month": "{{ data.expiration_month }}",
                "expiration_year": "{{ data.expiration_year }}",
            })),
            Self::Bank => Some(json!({
                "routing_number": "{{ data.routing_number }}",
                "account_number": "{{ data.account_number | reveal_last: 4 }}",
            })),
            Self::CardNumber | Self::UsBankAccountNumber | Self::UsBankRoutingNumber => {
                Some(json!("{{ data | reveal_last: 4 }}"))
            }
            Self::SocialSecurityNumber => Some(json!("XXX-XX-{{ data | last4 }}")),
            Self::EmployerIdNumber => Some(json!("XX-XXX{{ data | last4 }}")),
        }
    }

    /// The expression fingerprinted when the token has none of its own.
    pub fn default_fingerprint(self) -> &'static str {
        match self {
            Self::Token => "{{ data | stringify }}",
            Self::Card => "{{ data.number }}",
            Self::Bank => "{{ data.routing_number }}|{{ data.account_number }}",
            Self::CardNumber | Self::UsBankAccountNumber | Self::UsBankRoutingNumber => {
                "{{ data }}"
            }
            Self::SocialSecurityNumber | Self::EmployerIdNumber => "{{ data | remove: \"-\" }}",
        }
    }

    /// Checks `data` for this type, recording problems under `data` / `data.<field>`.
    pub fn validate(self, data: &Value, errors: &mut ValidationErrors) {
        match self {
            Self::Token => {}
            Self::Card => validate_card(data, errors),
            Self::Bank => validate_bank(data, errors),
            Self::CardNumber => check(errors, "data", card_number(data)),
            Self::SocialSecurityNumber | Self::EmployerIdNumber => {
                check(errors, "data", nine_digits_with_dashes(data));
            }
            Self::UsBankAccountNumber => check(errors, "data", digits_between(data, 3, 17)),
            Self::UsBankRoutingNumber => check(errors, "data", routing_number(data)),
        }
    }
}

fn check(errors: &mut ValidationErrors, field: &str, result: Result<(), &'static str>) {
    if let Err(message) = result {
        errors.add(field, message);
    }
}

/// Whether `digits` (ASCII digits only) passes the Luhn checksum.
pub fn luhn_valid(digits: &str) -> bool {
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return false;
    }
    let sum: u32 = digits
        .bytes()
        .rev()
        .enumerate()
        .map(|(i, b)| {
            let d = u32::from(b - b'0');
            if i % 2 == 1 {
                let doubled = d * 2;
                if doubled > 9 { doubled - 9 } else { doubled }
            } else {
                d
            }
        })
        .sum();
    sum.is_multiple_of(10)
}

/// Whether `digits` is a 9-digit ABA routing number with a valid checksum.
pub fn aba_valid(digits: &str) -> bool {
    if digits.len() != 9 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return false;
    }
    let d: Vec<u32> = digits.bytes().map(|b| u32::from(b - b'0')).collect();
    (3 * (d[0] + d[3] + d[6]) + 7 * (d[1] + d[4] + d[7]) + (d[2] + d[5] + d[8])).is_multiple_of(10)
}

fn all_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

fn card_number(v: &Value) -> Result<(), &'static str> {
    let s = v.as_str().ok_or("must be a string of digits")?;
    if !all_digits(s) || !(13..=19).contains(&s.len()) {
        return Err("must be 13 to 19 digits");
    }
    if !luhn_valid(s) {
        return Err("fails the Luhn check");
    }
    Ok(())
}

fn routing_number(v: &Value) -> Result<(), &'static str> {
    let s = v.as_str().ok_or("must be a string of 9 digits")?;
    if !all_digits(s) || s.len() != 9 {
        return Err("must be 9 digits");
    }
    if !aba_valid(s) {
        return Err("fails the ABA checksum");
    }
    Ok(())
}

fn digits_between(v: &Value, min: usize, max: usize) -> Result<(), &'static str> {
    let s = v.as_str().ok_or("must be a string of digits")?;
    if !all_digits(s) || !(min..=max).contains(&s.len()) {
        return Err(if min == 1 {
            "must be 1 to 17 digits"
        } else {
            "must be 3 to 17 digits"
        });
    }
    Ok(())
}

fn nine_digits_with_dashes(v: &Value) -> Result<(), &'static str> {
    let s = v.as_str().ok_or("must be a string of 9 digits")?;
    let digits = s.bytes().filter(u8::is_ascii_digit).count();
    if digits != 9
        || !s.bytes().all(|b| b.is_ascii_digit() || b == b'-')
        || s.starts_with('-')
        || s.ends_with('-')
        || s.contains("--")
    {
        return Err("must be 9 digits, dashes optional");
    }
    Ok(())
}

fn validate_card(data: &Value, errors: &mut ValidationErrors) {
    let Some(obj) = data.as_object() else {
        errors.add(
            "data",
            "must be an object with number, expiration_month, expiration_year",
        );
        return;
    };
    match obj.get("number") {
        None => errors.add("data.number", "is required"),
        Some(n) => check(errors, "data.number", card_number(n)),
    }
    match obj.get("expiration_month").map(Value::as_i64) {
        None => errors.add("data.expiration_month", "is required"),
        Some(Some(m)) if (1..=12).contains(&m) => {}
        Some(_) => errors.add("data.expiration_month", "must be an integer from 1 to 12"),
    }
    match obj.get("expiration_year").map(Value::as_i64) {
        None => errors.add("data.expiration_year", "is required"),
        Some(Some(y)) if (1000..=9999).contains(&y) => {}
        Some(_) => errors.add("data.expiration_year", "must be a 4-digit integer"),
    }
    if let Some(cvc) = obj.get("cvc") {
        let ok = cvc
            .as_str()
            .is_some_and(|c| all_digits(c) && (3..=4).contains(&c.len()));
        if !ok {
            errors.add("data.cvc", "must be 3 or 4 digits");
        }
    }
}

fn validate_bank(data: &Value, errors: &mut ValidationErrors) {
    let Some(obj) = data.as_object() else {
        errors.add(
            "data",
            "must be an object with routing_number and account_number",
        );
        return;
    };
    match obj.get("routing_number") {
        None => errors.add("data.routing_number", "is required"),
        Some(r) => check(errors, "data.routing_number", routing_number(r)),
    }
    match obj.get("account_number") {
        None => errors.add("data.account_number", "is required"),
        Some(a) => check(errors, "data.account_number", digits_between(a, 1, 17)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn luhn_complete(body: &str) -> String {
        (0..10)
            .map(|c| format!("{body}{c}"))
            .find(|n| luhn_valid(n))
            .unwrap()
    }

    fn valid(t: TokenType, data: Value) -> bool {
        let mut e = ValidationErrors::new();
        t.validate(&data, &mut e);
        e.is_empty()
    }

    #[test]
    fn known_numbers() {
        assert!(luhn_valid("4242424242424242"));
        assert!(!luhn_valid("4242424242424241"));
        assert!(aba_valid("021000021"));
        assert!(!aba_valid("021000022"));
    }

    #[test]
    fn simple_types() {
        assert!(valid(TokenType::SocialSecurityNumber, json!("123-45-6789")));
        assert!(valid(TokenType::SocialSecurityNumber, json!("123456789")));
        assert!(!valid(TokenType::SocialSecurityNumber, json!("12345678")));
        assert!(!valid(TokenType::EmployerIdNumber, json!("1234567890")));
        assert!(valid(TokenType::EmployerIdNumber, json!("12-3456789")));
        assert!(!valid(TokenType::UsBankAccountNumber, json!("12")));
        assert!(valid(
            TokenType::UsBankAccountNumber,
            json!("12345678901234567")
        ));
        assert!(!valid(
            TokenType::UsBankAccountNumber,
            json!("123456789012345678")
        ));
        assert!(!valid(
            TokenType::CardNumber,
            json!(4_242_424_242_424_242_u64)
        ));
        assert!(valid(TokenType::Token, json!({"any": [1, null]})));
    }

    #[test]
    fn card_fields_are_named() {
        let mut e = ValidationErrors::new();
        TokenType::Card.validate(
            &json!({"number": "4242424242424241", "expiration_month": 13, "expiration_year": 26, "cvc": "12"}),
            &mut e,
        );
        for f in [
            "data.number",
            "data.expiration_month",
            "data.expiration_year",
            "data.cvc",
        ] {
            assert!(e.contains(f), "{f}");
        }
        assert!(valid(
            TokenType::Card,
            json!({"number": "4242424242424242", "expiration_month": 12, "expiration_year": 2030})
        ));
    }

    #[test]
    fn names_round_trip() {
        for t in TokenType::ALL {
            assert_eq!(TokenType::parse(t.as_str()), Some(t));
            assert!(crate::container::Container::parse(t.default_container()).is_ok());
        }
    }

    proptest! {
        #[test]
        fn luhn_completion_is_valid_and_one_digit_change_breaks_it(body in "[0-9]{12,18}", pos in 0usize..12, delta in 1u8..10) {
            let number = luhn_complete(&body);
            prop_assert!(luhn_valid(&number));
            let mut bytes = number.into_bytes();
            bytes[pos] = b'0' + (bytes[pos] - b'0' + delta) % 10;
            prop_assert!(!luhn_valid(&String::from_utf8(bytes).unwrap()));
        }

        #[test]
        fn aba_accepts_exactly_one_check_digit(body in "[0-9]{8}") {
            let valid: Vec<_> = (0..10).filter(|c| aba_valid(&format!("{body}{c}"))).collect();
            prop_assert_eq!(valid.len(), 1);
        }

        #[test]
        fn non_digits_never_validate(s in "[0-9]{0,8}[a-zA-Z ][0-9]{0,8}") {
            prop_assert!(!luhn_valid(&s));
            prop_assert!(!aba_valid(&s));
        }
    }
}
