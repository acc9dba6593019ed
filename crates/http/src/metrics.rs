//! `GET /metrics` in the Prometheus text format (docs/decisions.md §11): requests by method,
//! route template and status, a latency histogram by method and route template, code-runner
//! calls by outcome, proxy calls by destination status, and the audit log's backlog. Labels
//! never carry a raw path, an id, a key or a tenant (an alias id can show data).
//!
//! The series and their exposition are the `prometheus` crate's (TiKV's client: the classic
//! text format Prometheus scrapes, label values escaped, counters named `_total` in their
//! `# TYPE` line as dashboards already read them).

use std::borrow::Cow;
use std::sync::Mutex;
use std::time::Duration;

use actix_web::http::Method;
use actix_web::{HttpRequest, HttpResponse, web};
use prometheus::{
    Encoder as _, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge, Opts, Registry,
    TextEncoder,
};
use tokenvault_domain::Vault;

/// Upper bounds of the latency buckets, in seconds.
const BUCKETS: [f64; 12] = [
    0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
];

/// The route template a resource answers (`/tokens/{id}`), set on each resource as app data
/// (`resource!`): naming the route of a request reads it instead of matching the path again.
#[derive(Clone, Copy, Debug)]
pub struct RouteLabel(pub &'static str);

/// The route label of `req`: its resource's template, else the template the router matches
/// (a resource without a label), else `unmatched`. Never the path: ids and aliases stay out.
pub fn route_label(req: &HttpRequest) -> Cow<'static, str> {
    match req.app_data::<RouteLabel>() {
        Some(label) => Cow::Borrowed(label.0),
        None => req
            .match_pattern()
            .map_or(Cow::Borrowed("unmatched"), Cow::Owned),
    }
}

/// The method label: the standard methods by name, any other as `other` (a client can send any
/// token as a method to `/proxy`, and each would otherwise be a new series kept for good).
pub fn method_label(method: &Method) -> &'static str {
    const KNOWN: [(Method, &str); 9] = [
        (Method::GET, "GET"),
        (Method::POST, "POST"),
        (Method::PUT, "PUT"),
        (Method::PATCH, "PATCH"),
        (Method::DELETE, "DELETE"),
        (Method::HEAD, "HEAD"),
        (Method::OPTIONS, "OPTIONS"),
        (Method::TRACE, "TRACE"),
        (Method::CONNECT, "CONNECT"),
    ];
    KNOWN
        .iter()
        .find(|(m, _)| m == method)
        .map_or("other", |(_, name)| name)
}

/// The process's metrics (one per server; instances are scraped separately).
pub struct Metrics {
    registry: Registry,
    /// method, route, status → requests.
    requests: IntCounterVec,
    /// method, route → latency.
    latency: HistogramVec,
    /// outcome → code calls.
    code: IntCounterVec,
    /// destination status (or `none` when the vault answered itself) → proxy calls.
    proxy: IntCounterVec,
    /// The audit log's, read from the vault at each scrape (`scrape` keeps two scrapes from
    /// setting them at once).
    audit_waiting: IntGauge,
    audit_refusals: IntCounter,
    scrape: Mutex<()>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        // The names, help texts and label names are constants: a failure here is a typo in
        // this file, found by its test.
        let counter = |name: &str, help: &str, labels: &[&str]| {
            IntCounterVec::new(Opts::new(name, help), labels)
                .unwrap_or_else(|e| panic!("metric {name}: {e}"))
        };
        let requests = counter(
            "tokenvault_http_requests_total",
            "HTTP requests by method, route template and status.",
            &["method", "route", "status"],
        );
        let latency = HistogramVec::new(
            HistogramOpts::new(
                "tokenvault_http_request_duration_seconds",
                "Time to answer, by method and route template.",
            )
            .buckets(BUCKETS.to_vec()),
            &["method", "route"],
        )
        .unwrap_or_else(|e| panic!("latency histogram: {e}"));
        let code = counter(
            "tokenvault_code_calls_total",
            "Calls of the code runtime (reactors, transforms) by outcome.",
            &["outcome"],
        );
        let proxy = counter(
            "tokenvault_proxy_calls_total",
            "Proxy calls by destination status (none: the vault answered).",
            &["destination_status"],
        );
        let audit_waiting = IntGauge::new(
            "tokenvault_audit_events_waiting",
            "Audit events held in memory until the next flush writes them.",
        )
        .unwrap_or_else(|e| panic!("audit gauge: {e}"));
        let audit_refusals = IntCounter::new(
            "tokenvault_audit_refusals_total",
            "Requests refused (503) because their tenant's audit log stayed behind.",
        )
        .unwrap_or_else(|e| panic!("audit counter: {e}"));
        let registry = Registry::new();
        for metric in [
            Box::new(requests.clone()) as Box<dyn prometheus::core::Collector>,
            Box::new(latency.clone()),
            Box::new(code.clone()),
            Box::new(proxy.clone()),
            Box::new(audit_waiting.clone()),
            Box::new(audit_refusals.clone()),
        ] {
            registry
                .register(metric)
                .unwrap_or_else(|e| panic!("registering a metric: {e}"));
        }
        Self {
            registry,
            requests,
            latency,
            code,
            proxy,
            audit_waiting,
            audit_refusals,
            scrape: Mutex::new(()),
        }
    }
}

impl Metrics {
    /// A request finished. `route` is the matched template (`/tokens/{id}`), never the path.
    pub fn request(
        &self,
        method: &Method,
        route: Cow<'static, str>,
        status: u16,
        elapsed: Duration,
    ) {
        let method = method_label(method);
        let mut digits = [0u8; 5];
        self.requests
            .with_label_values(&[method, &route, status_text(status, &mut digits)])
            .inc();
        self.latency
            .with_label_values(&[method, &route])
            .observe(elapsed.as_secs_f64());
    }

    /// A code-runner call ended (`ok`, or an error of any kind).
    pub fn code_call(&self, ok: bool) {
        self.code
            .with_label_values(&[if ok { "ok" } else { "error" }])
            .inc();
    }

    /// A proxy call ended: the destination's status, or `None` when the vault answered itself.
    pub fn proxy_call(&self, destination_status: Option<u16>) {
        let mut digits = [0u8; 5];
        let label = destination_status.map_or("none", |s| status_text(s, &mut digits));
        self.proxy.with_label_values(&[label]).inc();
    }

    /// The exposition text, with the audit log's `waiting` events and `refusals` so far.
    pub fn render(&self, waiting: u64, refusals: u64) -> String {
        let _one_scrape = self
            .scrape
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        self.audit_waiting
            .set(i64::try_from(waiting).unwrap_or(i64::MAX));
        self.audit_refusals.reset();
        self.audit_refusals.inc_by(refusals);
        let mut out = Vec::new();
        // Encoding into memory fails only on a family without a name, which the registry
        // refuses at registration.
        if let Err(e) = TextEncoder::new().encode(&self.registry.gather(), &mut out) {
            tracing::error!(error = %e, "cannot encode the metrics");
        }
        String::from_utf8(out).unwrap_or_default()
    }
}

/// A status code as its digits, without allocating.
fn status_text(status: u16, digits: &mut [u8; 5]) -> &str {
    let mut n = status;
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + u8::try_from(n % 10).unwrap_or(0);
        n /= 10;
        if n == 0 {
            break;
        }
    }
    std::str::from_utf8(&digits[at..]).unwrap_or("0")
}

/// `GET /metrics`.
#[utoipa::path(get, path = "/metrics", tag = "meta",
    responses((status = 200, description = "Prometheus text format", content_type = "text/plain")))]
pub async fn metrics(metrics: web::Data<Metrics>, vault: web::Data<Vault>) -> HttpResponse {
    let out = metrics.render(
        u64::try_from(vault.audit.audit_waiting()).unwrap_or(u64::MAX),
        vault.audit.audit_refusals(),
    );
    HttpResponse::Ok()
        .content_type("text/plain; version=0.0.4; charset=utf-8")
        .body(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn series_render_as_prometheus_text() {
        let m = Metrics::default();
        m.request(
            &Method::GET,
            "/tokens/{id}".into(),
            200,
            Duration::from_millis(3),
        );
        m.request(
            &Method::GET,
            "/tokens/{id}".into(),
            200,
            Duration::from_millis(30),
        );
        m.request(
            &Method::POST,
            "/we\"ird".into(),
            404,
            Duration::from_millis(1),
        );
        let odd = Method::from_bytes(b"BREW").unwrap();
        m.request(&odd, "/proxy".into(), 200, Duration::from_millis(1));
        m.code_call(true);
        m.code_call(false);
        m.proxy_call(Some(201));
        m.proxy_call(None);
        let text = m.render(7, 2);
        assert!(
            text.contains("tokenvault_audit_events_waiting 7\n"),
            "{text}"
        );
        assert!(
            text.contains("tokenvault_audit_refusals_total 2\n"),
            "{text}"
        );
        assert!(
            text.contains("# TYPE tokenvault_http_requests_total counter"),
            "{text}"
        );
        assert!(text.contains(
            "tokenvault_http_requests_total{method=\"GET\",route=\"/tokens/{id}\",status=\"200\"} 2"
        ));
        assert!(text.contains("route=\"/we\\\"ird\""));
        assert!(text.contains("{method=\"other\",route=\"/proxy\",status=\"200\"} 1"));
        assert!(
            !text.contains("BREW"),
            "a method a client made up is not a label"
        );
        assert!(text.contains(
            "tokenvault_http_request_duration_seconds_bucket{method=\"GET\",route=\"/tokens/{id}\",le=\"0.005\"} 1"
        ));
        assert!(text.contains(
            "tokenvault_http_request_duration_seconds_bucket{method=\"GET\",route=\"/tokens/{id}\",le=\"+Inf\"} 2"
        ));
        assert!(text.contains("tokenvault_code_calls_total{outcome=\"error\"} 1"));
        assert!(text.contains("tokenvault_proxy_calls_total{destination_status=\"201\"} 1"));
        assert!(text.contains("tokenvault_proxy_calls_total{destination_status=\"none\"} 1"));
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let (_, value) = line.rsplit_once(' ').expect("a sample has a value");
            assert!(value.parse::<f64>().is_ok(), "{line}");
        }
    }
}
