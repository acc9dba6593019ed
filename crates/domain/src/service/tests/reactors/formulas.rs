//! Formulas: the status of their code, new code for a formula a reactor with an application
//! uses (lent), and deleting one a reactor uses.

use super::*;
use crate::ReactorError;
use crate::formula::FormulaStatus;

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
