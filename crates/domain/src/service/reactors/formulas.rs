//! `/reactor-formulas`: create, read, list, update, delete. Code is stored as given (only its
//! length is checked): code that does not compile fails its invocation with a 422, and its
//! formula's `status` says `failed` (checked in the sandbox at create and update).

use uuid::Uuid;

use crate::area_error::ReactorError;
use crate::auth::Principal;
use crate::error::Error;
use crate::formula::{Formula, FormulaSpec, FormulaStatus, RawFormula};
use crate::page::{Page, PageRequest};
use crate::permission::Permission;
use crate::ports::FormulaDelete;
use crate::ports::code::CodeError;
use crate::service::Reactors;

impl Reactors {
    /// `POST /reactor-formulas`.
    pub async fn create_formula(
        &self,
        caller: &Principal,
        raw: RawFormula,
    ) -> Result<Formula, Error> {
        caller.require(Permission::ReactorCreate)?;
        let spec = FormulaSpec::parse(raw).map_err(Error::Validation)?;
        let formula = Formula {
            id: self.clock.new_id(),
            tenant_id: caller.tenant_id,
            name: spec.name,
            description: spec.description,
            formula_type: spec.formula_type,
            code: spec.code,
            configuration: spec.configuration,
            request_parameters: spec.request_parameters,
            created_by: Some(caller.application_id),
            created_at: self.clock.now(),
            modified_by: None,
            modified_at: None,
            status: None,
        };
        let mut formula = formula;
        formula.status = Some(self.check_code(caller.tenant_id, &formula.code).await?);
        let written = self.formulas.insert(&formula).await;
        self.shared.tenant_write(formula.tenant_id, written).await?;
        self.shared
            .audit(caller, "create", "formula", [formula.id.to_string()]);
        Ok(formula)
    }

    /// `GET /reactor-formulas/{id}`.
    pub async fn get_formula(&self, caller: &Principal, id: Uuid) -> Result<Formula, Error> {
        caller.require(Permission::ReactorRead)?;
        self.formulas
            .get(caller.tenant_id, id)
            .await?
            .ok_or(Error::NotFound)
    }

    /// `GET /reactor-formulas`.
    pub async fn list_formulas(
        &self,
        caller: &Principal,
        ids: &[Uuid],
        name: Option<&str>,
        page: PageRequest,
    ) -> Result<Page<Formula>, Error> {
        caller.require(Permission::ReactorRead)?;
        if ids.len() > super::super::tokens::MAX_ID_FILTERS {
            return Err(Error::invalid("id", "at most 100 values"));
        }
        Ok(self
            .formulas
            .list(caller.tenant_id, ids, name, page)
            .await?)
    }

    /// `PUT /reactor-formulas/{id}`. New code for a formula that a reactor with an application
    /// uses runs with that application's rights: only a caller who may lend it (may attach an
    /// application, `application:create` or `application:update`) may change it (403
    /// otherwise; docs/decisions.md §9).
    pub async fn update_formula(
        &self,
        caller: &Principal,
        id: Uuid,
        raw: RawFormula,
    ) -> Result<Formula, Error> {
        caller.require(Permission::ReactorUpdate)?;
        let mut formula = self.get_formula_of(caller, id).await?;
        let spec = FormulaSpec::parse(raw).map_err(Error::Validation)?;
        // Checked here for an early answer, and again by the update itself, whatever this read
        // said: a caller who may not lend never writes code other than the stored one while
        // the formula is lent (the stored code may change between this read and the write).
        let guarded = !caller.may_lend_applications();
        if guarded && spec.code != formula.code && self.formulas.lent(caller.tenant_id, id).await? {
            return Err(Error::Forbidden);
        }
        formula.name = spec.name;
        formula.description = spec.description;
        formula.formula_type = spec.formula_type;
        if formula.status.is_none() || spec.code != formula.code {
            formula.status = Some(self.check_code(caller.tenant_id, &spec.code).await?);
        }
        formula.code = spec.code;
        formula.configuration = spec.configuration;
        formula.request_parameters = spec.request_parameters;
        formula.modified_by = Some(caller.application_id);
        formula.modified_at = Some(self.clock.now());
        if !self.formulas.update(&formula, guarded).await? {
            // Lent since the check (an application attached meanwhile), or gone.
            if guarded && self.formulas.lent(caller.tenant_id, id).await? {
                return Err(Error::Forbidden);
            }
            return Err(Error::NotFound);
        }
        self.shared
            .audit(caller, "update", "formula", [id.to_string()]);
        Ok(formula)
    }

    /// `DELETE /reactor-formulas/{id}`: refused while a reactor uses it.
    pub async fn delete_formula(&self, caller: &Principal, id: Uuid) -> Result<(), ReactorError> {
        caller.require(Permission::ReactorDelete)?;
        match self.formulas.delete(caller.tenant_id, id).await? {
            FormulaDelete::Deleted => {
                self.shared
                    .audit(caller, "delete", "formula", [id.to_string()]);
                Ok(())
            }
            FormulaDelete::Missing => Err(Error::NotFound.into()),
            FormulaDelete::InUse => Err(ReactorError::FormulaInUse),
        }
    }

    /// Whether `code` compiles, asked of the sandbox (never compiled where keys live).
    async fn check_code(&self, tenant_id: Uuid, code: &str) -> Result<FormulaStatus, Error> {
        match self.code.compiles(tenant_id, code).await {
            Ok(true) => Ok(FormulaStatus::Verified),
            Ok(false) => Ok(FormulaStatus::Failed),
            Err(CodeError::Busy) => Err(Error::Overloaded("code workers")),
            Err(e) => Err(Error::internal(format!(
                "checking a formula's code failed: {e:?}"
            ))),
        }
    }

    async fn get_formula_of(&self, caller: &Principal, id: Uuid) -> Result<Formula, Error> {
        self.formulas
            .get(caller.tenant_id, id)
            .await?
            .ok_or(Error::NotFound)
    }
}
