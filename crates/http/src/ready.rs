//! Readiness (`GET /ready`): the checks the server wires in (the database, the code workers),
//! each behind [`ReadyCheck`] so this adapter knows neither.

use std::sync::Arc;
use std::time::Duration;

use actix_web::{HttpResponse, web};
use serde::Serialize;
use utoipa::ToSchema;

/// How long one check may take before it counts as down: a load balancer polls every few
/// seconds and must not wait longer than its own timeout.
const CHECK_TIMEOUT: Duration = Duration::from_secs(2);

/// One thing the server needs to serve requests.
#[async_trait::async_trait]
pub trait ReadyCheck: Send + Sync {
    /// Its name in the answer (`database`, `code_workers`).
    fn name(&self) -> &'static str;

    /// `Ok` while it works. The error is logged, never answered: it may name a host.
    async fn check(&self) -> Result<(), String>;
}

/// How long an answer is reused: `/ready` needs no key, so a flood of probes must not become a
/// flood of database round trips or worker starts. One probe runs at a time; the others wait
/// for it and take its answer.
const REUSE: Duration = Duration::from_secs(1);

/// The checks of `GET /ready`, and the last answer (shared by clones).
#[derive(Clone, Default)]
pub struct ReadyChecks {
    checks: Vec<Arc<dyn ReadyCheck>>,
    last: Arc<tokio::sync::Mutex<Option<(tokio::time::Instant, Readiness)>>>,
}

impl std::fmt::Debug for ReadyChecks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.checks.iter().map(|c| c.name()))
            .finish()
    }
}

/// `GET /ready`.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct Readiness {
    /// `ready`, or `unavailable` when a check failed.
    pub status: &'static str,
    /// Each check by name: `ok` or `down`.
    #[schema(value_type = std::collections::BTreeMap<String, String>)]
    pub checks: std::collections::BTreeMap<&'static str, &'static str>,
}

impl ReadyChecks {
    /// These checks.
    pub fn new(checks: Vec<Arc<dyn ReadyCheck>>) -> Self {
        Self {
            checks,
            last: Arc::default(),
        }
    }

    /// The answer: the last one if younger than a second, else every check run at once, each
    /// bounded at 2 s.
    pub async fn run(&self) -> Readiness {
        let mut last = self.last.lock().await;
        if let Some((at, readiness)) = last.as_ref()
            && at.elapsed() < REUSE
        {
            return readiness.clone();
        }
        let readiness = self.probe().await;
        *last = Some((tokio::time::Instant::now(), readiness.clone()));
        readiness
    }

    async fn probe(&self) -> Readiness {
        let outcomes = futures_util::future::join_all(self.checks.iter().map(|c| async move {
            let outcome = match tokio::time::timeout(CHECK_TIMEOUT, c.check()).await {
                Ok(Ok(())) => Ok(()),
                Ok(Err(e)) => Err(e),
                Err(_) => Err(format!("no answer in {CHECK_TIMEOUT:?}")),
            };
            (c.name(), outcome)
        }))
        .await;
        let mut checks = std::collections::BTreeMap::new();
        let mut ready = true;
        for (name, outcome) in outcomes {
            if let Err(error) = outcome {
                tracing::warn!(check = name, %error, "not ready");
                ready = false;
                checks.insert(name, "down");
            } else {
                checks.insert(name, "ok");
            }
        }
        Readiness {
            status: if ready { "ready" } else { "unavailable" },
            checks,
        }
    }
}

/// Readiness: 200 when the database answers and a code worker can run; else 503 as
/// problem+json whose `errors` name the checks that failed (a load balancer then sends requests
/// elsewhere). `/health` stays the cheap liveness probe.
#[utoipa::path(get, path = "/ready", tag = "meta", responses(
    (status = 200, body = Readiness, description = "Every check passed"),
    (status = 503, body = crate::problem::Problem, content_type = "application/problem+json",
        description = "A check failed: `errors` maps each failed check to `[\"down\"]`"),
))]
pub async fn ready(checks: web::Data<ReadyChecks>) -> HttpResponse {
    let readiness = checks.run().await;
    let mut response = if readiness.status == "ready" {
        HttpResponse::Ok().json(readiness)
    } else {
        let down: Vec<&str> = readiness
            .checks
            .iter()
            .filter(|(_, v)| **v != "ok")
            .map(|(k, _)| *k)
            .collect();
        let errors: serde_json::Map<String, serde_json::Value> = down
            .iter()
            .map(|name| ((*name).to_string(), serde_json::json!(["down"])))
            .collect();
        crate::problem::problem_response(
            actix_web::http::StatusCode::SERVICE_UNAVAILABLE,
            &format!("Not ready: {} down.", down.join(", ")),
            Some(errors.into()),
        )
    };
    response.headers_mut().insert(
        actix_web::http::header::CACHE_CONTROL,
        actix_web::http::header::HeaderValue::from_static("no-store"),
    );
    response
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    /// Counts its runs.
    struct Counted(Arc<AtomicUsize>);

    #[async_trait::async_trait]
    impl ReadyCheck for Counted {
        fn name(&self) -> &'static str {
            "counted"
        }
        async fn check(&self) -> Result<(), String> {
            self.0.fetch_add(1, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(50)).await;
            Ok(())
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_flood_of_probes_runs_the_checks_once_a_second() {
        let runs = Arc::new(AtomicUsize::new(0));
        let checks = ReadyChecks::new(vec![Arc::new(Counted(runs.clone()))]);
        let answers = futures_util::future::join_all((0..100).map(|_| checks.run())).await;
        assert!(answers.iter().all(|r| r.status == "ready"));
        assert_eq!(runs.load(Ordering::SeqCst), 1, "one probe for 100 requests");
        tokio::time::sleep(REUSE).await;
        checks.run().await;
        assert_eq!(
            runs.load(Ordering::SeqCst),
            2,
            "a fresh probe after a second"
        );
    }

    struct Fixed(&'static str, Result<(), String>);

    #[async_trait::async_trait]
    impl ReadyCheck for Fixed {
        fn name(&self) -> &'static str {
            self.0
        }
        async fn check(&self) -> Result<(), String> {
            self.1.clone()
        }
    }

    struct Hangs;

    #[async_trait::async_trait]
    impl ReadyCheck for Hangs {
        fn name(&self) -> &'static str {
            "slow"
        }
        async fn check(&self) -> Result<(), String> {
            std::future::pending().await
        }
    }

    #[tokio::test]
    async fn ready_only_when_every_check_passes() {
        let all_ok = ReadyChecks::new(vec![
            Arc::new(Fixed("database", Ok(()))),
            Arc::new(Fixed("code_workers", Ok(()))),
        ]);
        let r = all_ok.run().await;
        assert_eq!(r.status, "ready");
        assert_eq!(r.checks["database"], "ok");
        let one_down = ReadyChecks::new(vec![
            Arc::new(Fixed(
                "database",
                Err("postgres://secret@db refused".into()),
            )),
            Arc::new(Fixed("code_workers", Ok(()))),
        ]);
        let r = one_down.run().await;
        assert_eq!(r.status, "unavailable");
        assert_eq!(r.checks["database"], "down");
        assert_eq!(r.checks["code_workers"], "ok");
        let body = serde_json::to_string(&r).unwrap();
        assert!(
            !body.contains("secret"),
            "the error is not answered: {body}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_check_that_hangs_counts_as_down() {
        let r = ReadyChecks::new(vec![Arc::new(Hangs)]).run().await;
        assert_eq!(r.status, "unavailable");
        assert_eq!(r.checks["slow"], "down");
    }
}
