//! The token a reactor's arguments name, read beside the caller's key and the reactor: used
//! without a second read, and authorized as any detokenization.

use super::super::tokens::{rule, stored, token_ports};
use super::*;
use crate::ReactorError;
use crate::access::Transform;
use crate::formula::{ParamType, RequestParameter};

/// A vault whose key read finds a private application revealing `/pci/` for `token:use`, the
/// reactor 200 of a formula declaring `card`, and `token` beside them; whose token storage is
/// never read (`reads`: how many `get_many` it answers, with nothing), and whose code returns
/// the arguments it was given.
fn token_vault(token: Option<StoredToken>, reads: usize) -> Vault {
    let mut app = user(vec![]);
    app.rules = vec![rule("/pci/", Transform::Reveal, &[Permission::TokenUse])];
    let mut declared = formula(TENANT);
    declared.request_parameters = vec![RequestParameter {
        name: "card".into(),
        description: None,
        param_type: ParamType::String,
        optional: false,
    }];
    let read = Some((reactor(TENANT, 200), Some(declared)));
    let mut apps = MockApplications::new();
    apps.expect_find_by_key_hash_also()
        .returning(move |_, also, _| {
            // The one token the arguments name, asked for with the key.
            assert_eq!(also.token.as_deref(), Some("tok1"));
            assert_eq!(also.reactor, Some(Uuid::from_u128(200)));
            Ok(Some(KeyRead {
                reactor: Beside::Read(read.clone()),
                token: Beside::Read(token.clone()),
                ..KeyRead::alone(app.clone(), TenantSettings::default())
            }))
        });
    let mut tokens = MockTokens::new();
    tokens
        .expect_get_many()
        .times(reads)
        .returning(|_, _, _| Ok(Vec::new()));
    let mut code = MockCode::new();
    code.expect_run()
        .returning(|call| Ok(json!({"raw": call.request["args"].clone()})));
    let mut sessions = MockSessions::new();
    sessions
        .expect_find_by_key_hash()
        .returning(|_, _| Ok(None));
    Vault::new(Ports {
        applications: Arc::new(apps),
        code: Arc::new(code),
        sessions: Arc::new(sessions),
        ..token_ports(tokens)
    })
}

#[tokio::test]
async fn the_token_read_with_the_key_is_used_without_a_second_read() {
    let card = stored("tok1", "/pci/high/", &json!("4242424242424242"));
    let vault = token_vault(Some(card), 0);
    let id = Uuid::from_u128(200);
    let args = json!({"card": "{{ tok1 }}"});
    let (who, prefetched) = vault
        .auth
        .authenticate_reacting(Some(KEY), id, Some(&args))
        .await
        .unwrap();
    let result = vault
        .reactors
        .react(&who, id, Some(args), None, prefetched)
        .await
        .unwrap();
    assert_eq!(result.raw, Some(json!({"card": "4242424242424242"})));
}

#[tokio::test]
async fn the_token_read_with_the_key_is_authorized_as_any_detokenization() {
    let id = Uuid::from_u128(200);
    let args = json!({"card": "{{ tok1 }}"});
    // Outside the application's rule: refused, nothing run.
    let bank = stored("tok1", "/bank/", &json!("1234"));
    let vault = token_vault(Some(bank), 0);
    let (who, prefetched) = vault
        .auth
        .authenticate_reacting(Some(KEY), id, Some(&args))
        .await
        .unwrap();
    assert!(matches!(
        vault
            .reactors
            .react(&who, id, Some(args.clone()), None, prefetched)
            .await,
        Err(ReactorError::Failed(Error::Forbidden))
    ));
    // Not in the key's tenant (or expired): the argument's error, without a second read.
    let vault = token_vault(None, 0);
    let (who, prefetched) = vault
        .auth
        .authenticate_reacting(Some(KEY), id, Some(&args))
        .await
        .unwrap();
    assert!(matches!(
        vault
            .reactors
            .react(&who, id, Some(args.clone()), None, prefetched)
            .await,
        Err(ReactorError::Failed(Error::Validation(_)))
    ));
    // Arguments other than those it was read for (the use case's own): read again.
    let card = stored("tok1", "/pci/high/", &json!("4242424242424242"));
    let vault = token_vault(Some(card), 1);
    let (who, prefetched) = vault
        .auth
        .authenticate_reacting(Some(KEY), id, Some(&args))
        .await
        .unwrap();
    let other = json!({"card": "{{ tok2 }}"});
    assert!(matches!(
        vault
            .reactors
            .react(&who, id, Some(other), None, prefetched)
            .await,
        Err(ReactorError::Failed(Error::Validation(_)))
    ));
}
