//! `req.svc` in the domain: a call is counted against its application's rate limit before
//! anything else, and its arguments are read by the wire only then; a failure is the wire's
//! problem body.

use std::sync::Mutex;

use super::*;
use crate::ports::svc::{SvcAnswer, SvcCall, SvcWire};
use crate::service::svc::ApplicationSvc;

/// A wire that records what it was asked, admitting while `open`.
struct Recording {
    open: bool,
    asked: Mutex<Vec<String>>,
}

impl SvcWire for Recording {
    fn admit(&self, application: Uuid) -> Result<(), serde_json::Value> {
        self.asked
            .lock()
            .unwrap()
            .push(format!("admit {application}"));
        if self.open {
            Ok(())
        } else {
            Err(serde_json::json!({"status": 429}))
        }
    }
    fn read(&self, method: &str, _: &[serde_json::Value]) -> Result<SvcCall, serde_json::Value> {
        self.asked.lock().unwrap().push(format!("read {method}"));
        Err(serde_json::json!({"status": 400, "errors": {"method": ["is not a svc method"]}}))
    }
    fn write(&self, answer: SvcAnswer) -> serde_json::Value {
        self.asked.lock().unwrap().push(format!("write {answer:?}"));
        serde_json::Value::Null
    }
    fn problem(&self, error: TokenError) -> serde_json::Value {
        self.asked.lock().unwrap().push(format!("problem {error}"));
        serde_json::Value::Null
    }
}

#[tokio::test]
async fn a_call_is_admitted_first_and_its_arguments_read_by_the_wire() {
    let vault = vault(MockTenants::new(), MockApplications::new());
    let caller = principal(&[Permission::TokenRead]);
    for open in [false, true] {
        let wire = Arc::new(Recording {
            open,
            asked: Mutex::new(Vec::new()),
        });
        let svc = ApplicationSvc::acting_as(vault.clone(), caller.clone(), wire.clone());
        let refused = svc.call("tokens.drop", vec![]).await.unwrap_err();
        let asked = wire.asked.lock().unwrap().clone();
        let admit = format!("admit {}", caller.application_id);
        if open {
            // Admitted, room in the log, then the wire refused the method: nothing ran.
            assert_eq!(refused["status"], 400);
            assert_eq!(asked, vec![admit, "read tokens.drop".to_string()]);
        } else {
            // Over its rate limit: refused before its arguments are even read.
            assert_eq!(refused["status"], 429);
            assert_eq!(asked, vec![admit]);
        }
    }
}
