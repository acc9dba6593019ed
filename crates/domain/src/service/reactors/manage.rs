//! `/reactors`: create, read, list, update, delete. The formula is fixed at creation; the
//! configuration is checked against the formula's declarations; the application, if any, is a
//! public or private application of the same tenant.

use serde_json::{Map, Value};
use uuid::Uuid;

use super::{RawReactor, ReactorView, body_uuid};
use crate::application::{Application, parse_name};
use crate::auth::Principal;
use crate::error::{Error, ValidationErrors};
use crate::formula::Formula;
use crate::page::{Page, PageRequest};
use crate::permission::{ApplicationType, Permission};
use crate::reactor::{Reactor, check_configuration};
use crate::service::Reactors;

/// The validated fields of a create or update.
struct Checked {
    name: String,
    configuration: Map<String, Value>,
    application: Option<Application>,
}

impl Reactors {
    /// Validates name, configuration (against `formula`) and application, naming each problem.
    async fn check_reactor(
        &self,
        caller: &Principal,
        raw: &RawReactor,
        formula: Option<&Formula>,
        errors: &mut ValidationErrors,
    ) -> Result<Option<Checked>, Error> {
        let name = parse_name(raw.name.clone(), errors);
        let configuration = match &raw.configuration {
            Some(Value::Object(map)) => Some(map.clone()),
            None | Some(Value::Null) => {
                errors.add("configuration", "is required");
                None
            }
            Some(_) => {
                errors.add("configuration", "must be an object");
                None
            }
        };
        let configuration = match (configuration, formula) {
            (Some(c), Some(f)) => match check_configuration(&c, &f.configuration) {
                Ok(c) => Some(c),
                Err(e) => {
                    for (field, messages) in e.fields() {
                        for m in messages {
                            errors.add(field.clone(), m.clone());
                        }
                    }
                    None
                }
            },
            _ => None,
        };
        let mut application = None;
        if let Some(id) = body_uuid(raw.application_id.as_deref(), "application.id", errors) {
            // Attaching an application lends its token rights to the reactor's code.
            if !caller.may_lend_applications() {
                return Err(Error::Forbidden);
            }
            match self.applications.get(caller.tenant_id, id).await? {
                Some(app) if app.app_type != ApplicationType::Management => application = Some(app),
                Some(_) => errors.add("application.id", "must be a public or private application"),
                None => errors.add("application.id", "does not exist"),
            }
        }
        Ok(match (name, configuration) {
            (Some(name), Some(configuration)) if errors.is_empty() => Some(Checked {
                name,
                configuration,
                application,
            }),
            _ => None,
        })
    }

    /// `POST /reactors`.
    pub async fn create_reactor(
        &self,
        caller: &Principal,
        raw: RawReactor,
    ) -> Result<ReactorView, Error> {
        caller.require(Permission::ReactorCreate)?;
        let mut errors = ValidationErrors::new();
        let formula =
            if let Some(id) = body_uuid(raw.formula_id.as_deref(), "formula.id", &mut errors) {
                let found = self.formulas.get(caller.tenant_id, id).await?;
                if found.is_none() {
                    errors.add("formula.id", "does not exist");
                }
                found
            } else {
                if raw.formula_id.is_none() {
                    errors.add("formula.id", "is required");
                }
                None
            };
        let checked = self
            .check_reactor(caller, &raw, formula.as_ref(), &mut errors)
            .await?;
        let (Some(checked), Some(formula)) = (checked, formula) else {
            return Err(Error::Validation(errors));
        };
        let reactor = Reactor {
            id: self.clock.new_id(),
            tenant_id: caller.tenant_id,
            name: checked.name,
            formula_id: formula.id,
            configuration: checked.configuration,
            application_id: checked.application.as_ref().map(|a| a.id),
            created_by: Some(caller.application_id),
            created_at: self.clock.now(),
            modified_by: None,
            modified_at: None,
        };
        let written = self.store.insert(&self.stored(&reactor).await?).await;
        self.shared.tenant_write(reactor.tenant_id, written).await?;
        self.shared
            .audit(caller, "create", "reactor", [reactor.id.to_string()]);
        Ok(ReactorView {
            reactor,
            formula,
            application: checked.application,
        })
    }

    /// `GET /reactors/{id}`.
    pub async fn get_reactor(&self, caller: &Principal, id: Uuid) -> Result<ReactorView, Error> {
        caller.require(Permission::ReactorRead)?;
        let reactor = self.reactor_of(caller, id).await?;
        self.view(reactor).await
    }

    /// `GET /reactors`.
    pub async fn list_reactors(
        &self,
        caller: &Principal,
        ids: &[Uuid],
        name: Option<&str>,
        page: PageRequest,
    ) -> Result<Page<ReactorView>, Error> {
        caller.require(Permission::ReactorRead)?;
        if ids.len() > super::super::tokens::MAX_ID_FILTERS {
            return Err(Error::invalid("id", "at most 100 values"));
        }
        let found = self.store.list(caller.tenant_id, ids, name, page).await?;
        let formula_ids: Vec<Uuid> = found.items.iter().map(|r| r.formula_id).collect();
        let formulas = self
            .formulas
            .get_many(caller.tenant_id, &formula_ids)
            .await?;
        let mut items = Vec::with_capacity(found.items.len());
        for reactor in found.items {
            let reactor = self.opened(reactor).await?;
            let formula = formulas
                .iter()
                .find(|f| f.id == reactor.formula_id)
                .cloned()
                .ok_or_else(|| Error::internal("a reactor's formula is missing"))?;
            let application = self.application_of(&reactor).await?;
            items.push(ReactorView {
                reactor,
                formula,
                application,
            });
        }
        Ok(Page {
            items,
            total_items: found.total_items,
            request: found.request,
        })
    }

    /// `PUT /reactors/{id}`: name, configuration and application; the formula stays.
    pub async fn update_reactor(
        &self,
        caller: &Principal,
        id: Uuid,
        raw: RawReactor,
    ) -> Result<ReactorView, Error> {
        caller.require(Permission::ReactorUpdate)?;
        let mut reactor = self.reactor_of(caller, id).await?;
        // A reactor with an application is changed only by a caller who may lend it: dropping
        // the application would let its formula's code be rewritten by anyone, and a routine
        // PUT by a lender would then lend it again (docs/decisions.md §9).
        if reactor.application_id.is_some() && !caller.may_lend_applications() {
            return Err(Error::Forbidden);
        }
        let formula = self.formula_of(&reactor).await?;
        let mut errors = ValidationErrors::new();
        if let Some(given) = raw.formula_id.as_deref()
            && Uuid::parse_str(given).ok() != Some(reactor.formula_id)
        {
            errors.add("formula.id", "the formula of a reactor cannot be changed");
        }
        let checked = self
            .check_reactor(caller, &raw, Some(&formula), &mut errors)
            .await?;
        let Some(checked) = checked else {
            return Err(Error::Validation(errors));
        };
        reactor.name = checked.name;
        reactor.configuration = checked.configuration;
        reactor.application_id = checked.application.as_ref().map(|a| a.id);
        reactor.modified_by = Some(caller.application_id);
        reactor.modified_at = Some(self.clock.now());
        if !self.store.update(&self.stored(&reactor).await?).await? {
            return Err(Error::NotFound);
        }
        self.shared
            .audit(caller, "update", "reactor", [id.to_string()]);
        Ok(ReactorView {
            reactor,
            formula,
            application: checked.application,
        })
    }

    /// `DELETE /reactors/{id}`.
    pub async fn delete_reactor(&self, caller: &Principal, id: Uuid) -> Result<(), Error> {
        caller.require(Permission::ReactorDelete)?;
        if self.store.delete(caller.tenant_id, id).await? {
            self.shared
                .audit(caller, "delete", "reactor", [id.to_string()]);
            Ok(())
        } else {
            Err(Error::NotFound)
        }
    }

    /// `reactor` as it is stored: its configuration sealed.
    async fn stored(&self, reactor: &Reactor) -> Result<Reactor, Error> {
        let configuration = self
            .shared
            .seal_reactor_configuration(reactor.tenant_id, reactor.id, &reactor.configuration)
            .await?;
        Ok(Reactor {
            configuration,
            ..reactor.clone()
        })
    }

    /// A stored reactor with its configuration opened.
    pub(super) async fn opened(&self, mut reactor: Reactor) -> Result<Reactor, Error> {
        reactor.configuration = self
            .shared
            .open_reactor_configuration(
                reactor.tenant_id,
                reactor.id,
                std::mem::take(&mut reactor.configuration),
            )
            .await?;
        Ok(reactor)
    }

    pub(super) async fn reactor_of(&self, caller: &Principal, id: Uuid) -> Result<Reactor, Error> {
        let reactor = self
            .store
            .get(caller.tenant_id, id)
            .await?
            .ok_or(Error::NotFound)?;
        self.opened(reactor).await
    }

    pub(super) async fn formula_of(&self, reactor: &Reactor) -> Result<Formula, Error> {
        self.formulas
            .get(reactor.tenant_id, reactor.formula_id)
            .await?
            .ok_or_else(Self::formula_missing)
    }

    pub(super) fn formula_missing() -> Error {
        Error::internal("a reactor's formula is missing")
    }

    pub(super) async fn application_of(
        &self,
        reactor: &Reactor,
    ) -> Result<Option<Application>, Error> {
        match reactor.application_id {
            // An application deleted since reads as none.
            Some(id) => Ok(self.applications.get(reactor.tenant_id, id).await?),
            None => Ok(None),
        }
    }

    async fn view(&self, reactor: Reactor) -> Result<ReactorView, Error> {
        let formula = self.formula_of(&reactor).await?;
        let application = self.application_of(&reactor).await?;
        Ok(ReactorView {
            reactor,
            formula,
            application,
        })
    }
}
