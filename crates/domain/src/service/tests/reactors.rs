//! `POST /reactors/{id}/react` with the reactor read beside the caller's key.

use serde_json::{Map, json};

use super::tokens::{rule, stored, token_ports};
use super::*;
use crate::ReactorError;
use crate::access::Transform;
use crate::formula::{FormulaStatus, ParamType, RequestParameter};

const CODE: &str = "module.exports = async (req) => ({ raw: req.configuration });";

fn formula(tenant_id: Uuid) -> Formula {
    Formula {
        id: Uuid::from_u128(300),
        tenant_id,
        name: "f".into(),
        description: None,
        formula_type: "private".into(),
        code: CODE.into(),
        configuration: vec![],
        request_parameters: vec![],
        created_by: None,
        created_at: now(),
        modified_by: None,
        modified_at: None,
        status: None,
    }
}

fn reactor(tenant_id: Uuid, id: u128) -> Reactor {
    let mut configuration = Map::new();
    configuration.insert("region".into(), json!("eu"));
    Reactor {
        id: Uuid::from_u128(id),
        tenant_id,
        name: "r".into(),
        formula_id: Uuid::from_u128(300),
        configuration,
        application_id: None,
        created_by: None,
        created_at: now(),
        modified_by: None,
        modified_at: None,
    }
}

const TENANT: Uuid = Uuid::from_u128(100);

fn user(permissions: Vec<Permission>) -> Application {
    let mut app = stored_app(TENANT, None);
    app.permissions = permissions;
    app
}

/// A vault whose key read finds `app` with `read`, whose reactor and formula storage holds
/// nothing (a second read finds no reactor), and whose code runner expects `runs` calls.
fn vault_with(app: Application, read: Option<(Reactor, Option<Formula>)>, runs: usize) -> Vault {
    let mut apps = MockApplications::new();
    apps.expect_find_by_key_hash_also()
        .returning(move |_, _, _| {
            Ok(Some(KeyRead {
                reactor: Beside::Read(read.clone()),
                token: Beside::Read(None),
                ..KeyRead::alone(app.clone(), TenantSettings::default())
            }))
        });
    let mut code = MockCode::new();
    code.expect_run().times(runs).returning(|call| {
        assert_eq!(call.code, CODE);
        Ok(json!({"raw": call.request["configuration"].clone()}))
    });
    let mut sessions = MockSessions::new();
    sessions
        .expect_find_by_key_hash()
        .returning(|_, _| Ok(None));
    Vault::new(Ports {
        code: Arc::new(code),
        sessions: Arc::new(sessions),
        ..ports(MockTenants::new(), apps)
    })
}

#[tokio::test]
async fn a_reactor_read_with_the_key_runs_without_a_second_read() {
    let read = Some((reactor(TENANT, 200), Some(formula(TENANT))));
    // The reactor storage behind the vault holds nothing: had the call read again, 404.
    let vault = vault_with(user(vec![Permission::TokenUse]), read, 1);
    let id = Uuid::from_u128(200);
    let (who, prefetched) = vault
        .auth
        .authenticate_reacting(Some(KEY), id, None)
        .await
        .unwrap();
    let result = vault
        .reactors
        .react(&who, id, None, None, prefetched)
        .await
        .unwrap();
    assert_eq!(result.raw, Some(json!({"region": "eu"})));
}

/// A key read that read no reactor beside the key (`Beside::NotRead`) leaves it to the
/// reactor store: here it holds none, so the call is 404 and no code runs.
#[tokio::test]
async fn a_key_read_that_read_no_reactor_reads_the_store() {
    let mut apps = MockApplications::new();
    let app = user(vec![Permission::TokenUse]);
    apps.expect_find_by_key_hash_also()
        .returning(move |_, _, _| Ok(Some(KeyRead::alone(app.clone(), TenantSettings::default()))));
    let mut code = MockCode::new();
    code.expect_run().never();
    let mut sessions = MockSessions::new();
    sessions
        .expect_find_by_key_hash()
        .returning(|_, _| Ok(None));
    let vault = Vault::new(Ports {
        code: Arc::new(code),
        sessions: Arc::new(sessions),
        ..ports(MockTenants::new(), apps)
    });
    let id = Uuid::from_u128(200);
    let (who, prefetched) = vault
        .auth
        .authenticate_reacting(Some(KEY), id, None)
        .await
        .unwrap();
    assert!(prefetched.is_none(), "nothing was read beside the key");
    assert!(matches!(
        vault.reactors.react(&who, id, None, None, prefetched).await,
        Err(ReactorError::Failed(Error::NotFound))
    ));
}

#[tokio::test]
async fn a_prefetched_reactor_stands_only_for_its_tenant_and_id() {
    let read = Some((reactor(TENANT, 200), Some(formula(TENANT))));
    let vault = vault_with(user(vec![Permission::TokenUse]), read, 0);
    let id = Uuid::from_u128(200);
    // Read for reactor 200: another id reads again (and finds none here).
    let (who, prefetched) = vault
        .auth
        .authenticate_reacting(Some(KEY), id, None)
        .await
        .unwrap();
    assert!(matches!(
        vault
            .reactors
            .react(&who, Uuid::from_u128(201), None, None, prefetched)
            .await,
        Err(ReactorError::Failed(Error::NotFound))
    ));
    // Read for this tenant: a caller of another tenant reads again.
    let (mut who, prefetched) = vault
        .auth
        .authenticate_reacting(Some(KEY), id, None)
        .await
        .unwrap();
    who.tenant_id = Uuid::from_u128(999);
    assert!(matches!(
        vault.reactors.react(&who, id, None, None, prefetched).await,
        Err(ReactorError::Failed(Error::NotFound))
    ));
}

#[tokio::test]
async fn the_caller_is_checked_before_anything_read_is_used() {
    let read = Some((reactor(TENANT, 200), Some(formula(TENANT))));
    let vault = vault_with(user(vec![Permission::TokenRead]), read, 0);
    let id = Uuid::from_u128(200);
    let (who, prefetched) = vault
        .auth
        .authenticate_reacting(Some(KEY), id, None)
        .await
        .unwrap();
    assert!(matches!(
        vault.reactors.react(&who, id, None, None, prefetched).await,
        Err(ReactorError::Failed(Error::Forbidden))
    ));
}

#[tokio::test]
async fn no_reactor_read_is_a_404_and_a_reactor_without_its_formula_an_internal_error() {
    let id = Uuid::from_u128(200);
    let vault = vault_with(user(vec![Permission::TokenUse]), None, 0);
    let (who, prefetched) = vault
        .auth
        .authenticate_reacting(Some(KEY), id, None)
        .await
        .unwrap();
    assert!(matches!(
        vault.reactors.react(&who, id, None, None, prefetched).await,
        Err(ReactorError::Failed(Error::NotFound))
    ));
    let vault = vault_with(
        user(vec![Permission::TokenUse]),
        Some((reactor(TENANT, 200), None)),
        0,
    );
    let (who, prefetched) = vault
        .auth
        .authenticate_reacting(Some(KEY), id, None)
        .await
        .unwrap();
    let outcome = vault.reactors.react(&who, id, None, None, prefetched).await;
    assert!(
        matches!(outcome, Err(ReactorError::Failed(Error::Internal { .. }))),
        "{outcome:?}"
    );
}

#[tokio::test]
async fn an_expired_key_is_refused_before_its_reactor_is_used() {
    let mut app = user(vec![Permission::TokenUse]);
    app.expires_at = Some(now() - Duration::seconds(1));
    let read = Some((reactor(TENANT, 200), Some(formula(TENANT))));
    let vault = vault_with(app, read, 0);
    assert!(matches!(
        vault
            .auth
            .authenticate_reacting(Some(KEY), Uuid::from_u128(200), None)
            .await,
        Err(Error::Unauthenticated)
    ));
}

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

/// The formula storage of [`formula_vault`]: `formula(tenant)` for any id, used by a reactor
/// with an application when `lent` (or from the first write on, when `attached_at_write`: an
/// application attached between the caller's check and its write); counts updates.
struct OneFormula {
    lent: std::sync::atomic::AtomicBool,
    attached_at_write: bool,
    updates: std::sync::atomic::AtomicUsize,
}

#[async_trait]
impl FormulaRepository for OneFormula {
    async fn insert(&self, _: &Formula) -> Result<(), RepoError> {
        Ok(())
    }
    async fn get(&self, tenant_id: Uuid, _: Uuid) -> Result<Option<Formula>, RepoError> {
        Ok(Some(formula(tenant_id)))
    }
    async fn get_many(&self, _: Uuid, _: &[Uuid]) -> Result<Vec<Formula>, RepoError> {
        Ok(Vec::new())
    }
    async fn list(
        &self,
        _: Uuid,
        _: &[Uuid],
        _: Option<&str>,
        page: PageRequest,
    ) -> Result<Page<Formula>, RepoError> {
        Ok(Page {
            items: Vec::new(),
            total_items: 0,
            request: page,
        })
    }
    async fn update(&self, new: &Formula, unless_lent: bool) -> Result<bool, RepoError> {
        use std::sync::atomic::Ordering::Relaxed;
        if self.attached_at_write {
            self.lent.store(true, Relaxed);
        }
        // As the store: the stored code (`CODE`) may always be written again.
        if unless_lent && self.lent.load(Relaxed) && new.code != CODE {
            return Ok(false);
        }
        self.updates.fetch_add(1, Relaxed);
        Ok(true)
    }
    async fn lent(&self, _: Uuid, _: Uuid) -> Result<bool, RepoError> {
        Ok(self.lent.load(std::sync::atomic::Ordering::Relaxed))
    }
    /// In use while lent (a reactor with an application uses it); else never stored.
    async fn delete(&self, _: Uuid, _: Uuid) -> Result<FormulaDelete, RepoError> {
        Ok(if self.lent.load(std::sync::atomic::Ordering::Relaxed) {
            FormulaDelete::InUse
        } else {
            FormulaDelete::Missing
        })
    }
}

/// A vault over [`OneFormula`] that compiles any code, and its formula storage.
fn formula_vault(lent: bool) -> (Vault, Arc<OneFormula>) {
    formula_vault_with(lent, false)
}

fn formula_vault_with(lent: bool, attached_at_write: bool) -> (Vault, Arc<OneFormula>) {
    let formulas = Arc::new(OneFormula {
        lent: lent.into(),
        attached_at_write,
        updates: std::sync::atomic::AtomicUsize::default(),
    });
    let mut code = MockCode::new();
    // Code "compiles" unless it says it does not.
    code.expect_compiles().returning(|_, code| match code {
        BUSY_CODE => Err(CodeError::Busy),
        _ => Ok(!code.contains("does not compile")),
    });
    let vault = Vault::new(Ports {
        formulas: formulas.clone(),
        code: Arc::new(code),
        ..ports(MockTenants::new(), MockApplications::new())
    });
    (vault, formulas)
}

fn updates(formulas: &OneFormula) -> usize {
    formulas.updates.load(std::sync::atomic::Ordering::Relaxed)
}

fn formula_body(code: &str) -> crate::formula::RawFormula {
    crate::formula::RawFormula {
        name: Some("f".into()),
        code: Some(code.into()),
        ..Default::default()
    }
}

/// Code the sandbox could not check: every worker was busy.
const BUSY_CODE: &str = "module.exports = () => 'busy';";

/// A formula's status is the sandbox's answer for the code it holds, asked at create and
/// whenever its code changes (or it was never checked); a check that could not be made
/// fails the request as overloaded, never as a status made up.
#[tokio::test]
async fn a_formula_carries_whether_its_code_compiles() {
    let (vault, _) = formula_vault(false);
    let caller = principal(&[Permission::ReactorCreate, Permission::ReactorUpdate]);
    let made = vault
        .reactors
        .create_formula(&caller, formula_body(CODE))
        .await
        .unwrap();
    assert_eq!(made.status, Some(FormulaStatus::Verified));
    let broken = vault
        .reactors
        .create_formula(
            &caller,
            formula_body("module.exports = ( // does not compile"),
        )
        .await
        .unwrap();
    assert_eq!(broken.status, Some(FormulaStatus::Failed));
    assert!(matches!(
        vault
            .reactors
            .create_formula(&caller, formula_body(BUSY_CODE))
            .await,
        Err(Error::Overloaded(_))
    ));
    let updated = vault
        .reactors
        .update_formula(
            &caller,
            Uuid::from_u128(300),
            formula_body("x = ( // does not compile"),
        )
        .await
        .unwrap();
    assert_eq!(updated.status, Some(FormulaStatus::Failed));
}

const OTHER_CODE: &str =
    "module.exports = async (req) => ({ tokenize: { a: { type: 'token', data: 'x' } } });";

#[tokio::test]
async fn new_code_for_a_lent_formula_needs_the_right_to_lend() {
    let id = Uuid::from_u128(300);
    // reactor:update alone: the code a reactor with an application runs stays as it is.
    let (vault, formulas) = formula_vault(true);
    let caller = principal(&[Permission::ReactorUpdate]);
    assert!(matches!(
        vault
            .reactors
            .update_formula(&caller, id, formula_body(OTHER_CODE))
            .await,
        Err(Error::Forbidden)
    ));
    assert_eq!(updates(&formulas), 0);
    // The same code under another name is no new code.
    let renamed = vault
        .reactors
        .update_formula(&caller, id, formula_body(CODE))
        .await
        .unwrap();
    assert_eq!(renamed.code, CODE);
    assert_eq!(updates(&formulas), 1);
    // Whoever may lend applications may change it.
    for lending in [Permission::ApplicationCreate, Permission::ApplicationUpdate] {
        let caller = principal(&[Permission::ReactorUpdate, lending]);
        let changed = vault
            .reactors
            .update_formula(&caller, id, formula_body(OTHER_CODE))
            .await
            .unwrap();
        assert_eq!(changed.code, OTHER_CODE);
    }
    assert_eq!(updates(&formulas), 3);
    // A formula no reactor with an application uses is reactor:update's.
    let (vault, formulas) = formula_vault(false);
    assert!(
        vault
            .reactors
            .update_formula(&caller, id, formula_body(OTHER_CODE))
            .await
            .is_ok()
    );
    assert_eq!(updates(&formulas), 1);
}

/// An application attached to a reactor of the formula between the caller's check and its write
/// still stops new code from a caller who may not lend it: the write is guarded too.
#[tokio::test]
async fn new_code_is_refused_when_the_formula_is_lent_between_check_and_write() {
    let id = Uuid::from_u128(301);
    let (vault, formulas) = formula_vault_with(false, true);
    let caller = principal(&[Permission::ReactorUpdate]);
    assert!(matches!(
        vault
            .reactors
            .update_formula(&caller, id, formula_body(OTHER_CODE))
            .await,
        Err(Error::Forbidden)
    ));
    assert_eq!(updates(&formulas), 0);
    // A lender's write is not guarded.
    let (vault, formulas) = formula_vault_with(false, true);
    let lender = principal(&[Permission::ReactorUpdate, Permission::ApplicationUpdate]);
    vault
        .reactors
        .update_formula(&lender, id, formula_body(OTHER_CODE))
        .await
        .unwrap();
    assert_eq!(updates(&formulas), 1);
}

#[tokio::test]
async fn a_formula_a_reactor_uses_is_not_deleted() {
    let id = Uuid::from_u128(302);
    let caller = principal(&[Permission::ReactorDelete]);
    let (vault, _) = formula_vault(true);
    let err = vault
        .reactors
        .delete_formula(&caller, id)
        .await
        .unwrap_err();
    assert!(matches!(err, ReactorError::FormulaInUse), "{err:?}");
    let (vault, _) = formula_vault(false);
    let err = vault
        .reactors
        .delete_formula(&caller, id)
        .await
        .unwrap_err();
    assert!(
        matches!(err, ReactorError::Failed(Error::NotFound)),
        "{err:?}"
    );
}
