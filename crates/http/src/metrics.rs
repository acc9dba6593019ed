//! `GET /metrics` in the Prometheus text format (docs/decisions.md §11): requests by method,
//! route template and status, a latency histogram by method and route template, code-runner
//! calls by outcome, and proxy calls by destination status. Labels never carry a raw path, an
//! id, a key or a tenant (an alias id can show data).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::time::Duration;

use actix_web::http::Method;
use actix_web::{HttpRequest, HttpResponse, web};
use tokenvault_domain::Vault;

/// Upper bounds of the latency buckets, in seconds.
const BUCKETS: [f64; 12] = [
    0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
];

#[derive(Default)]
struct Histogram {
    counts: [u64; BUCKETS.len()],
    count: u64,
    sum: f64,
}

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

#[derive(Default)]
struct Series {
    /// (method, route, status) → requests.
    requests: BTreeMap<(&'static str, Cow<'static, str>, u16), u64>,
    /// (method, route) → latency.
    latency: BTreeMap<(&'static str, Cow<'static, str>), Histogram>,
    /// outcome → code calls.
    code: BTreeMap<&'static str, u64>,
    /// destination status (or `none` when the vault answered itself) → proxy calls.
    proxy: BTreeMap<String, u64>,
}

/// The process's metrics (one per server; instances are scraped separately).
#[derive(Default)]
pub struct Metrics {
    series: Mutex<Series>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Metrics {
    fn with(&self, f: impl FnOnce(&mut Series)) {
        let mut series = self
            .series
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        f(&mut series);
    }

    /// A request finished. `route` is the matched template (`/tokens/{id}`), never the path.
    pub fn request(
        &self,
        method: &Method,
        route: Cow<'static, str>,
        status: u16,
        elapsed: Duration,
    ) {
        let seconds = elapsed.as_secs_f64();
        let method = method_label(method);
        self.with(|s| {
            *s.requests
                .entry((method, route.clone(), status))
                .or_default() += 1;
            let h = s.latency.entry((method, route)).or_default();
            h.count += 1;
            h.sum += seconds;
            for (i, bound) in BUCKETS.iter().enumerate() {
                if seconds <= *bound {
                    h.counts[i] += 1;
                }
            }
        });
    }

    /// A code-runner call ended (`ok`, or an error of any kind).
    pub fn code_call(&self, ok: bool) {
        self.with(|s| *s.code.entry(if ok { "ok" } else { "error" }).or_default() += 1);
    }

    /// A proxy call ended: the destination's status, or `None` when the vault answered itself.
    pub fn proxy_call(&self, destination_status: Option<u16>) {
        let label = destination_status.map_or_else(|| "none".to_string(), |s| s.to_string());
        self.with(|s| *s.proxy.entry(label).or_default() += 1);
    }

    /// The exposition text.
    pub fn render(&self) -> String {
        let mut out = String::new();
        self.with(|s| {
            out.push_str("# HELP tokenvault_http_requests_total HTTP requests by method, route template and status.\n");
            out.push_str("# TYPE tokenvault_http_requests_total counter\n");
            for ((method, route, status), n) in &s.requests {
                let _ = writeln!(
                    out,
                    "tokenvault_http_requests_total{{method=\"{}\",route=\"{}\",status=\"{status}\"}} {n}",
                    escape(method),
                    escape(route)
                );
            }
            out.push_str("# HELP tokenvault_http_request_duration_seconds Time to answer, by method and route template.\n");
            out.push_str("# TYPE tokenvault_http_request_duration_seconds histogram\n");
            for ((method, route), h) in &s.latency {
                let labels = format!("method=\"{}\",route=\"{}\"", escape(method), escape(route));
                for (bound, n) in BUCKETS.iter().zip(h.counts) {
                    let _ = writeln!(
                        out,
                        "tokenvault_http_request_duration_seconds_bucket{{{labels},le=\"{bound}\"}} {n}"
                    );
                }
                let _ = writeln!(
                    out,
                    "tokenvault_http_request_duration_seconds_bucket{{{labels},le=\"+Inf\"}} {}",
                    h.count
                );
                let _ = writeln!(out, "tokenvault_http_request_duration_seconds_sum{{{labels}}} {}", h.sum);
                let _ = writeln!(out, "tokenvault_http_request_duration_seconds_count{{{labels}}} {}", h.count);
            }
            out.push_str("# HELP tokenvault_code_calls_total Calls of the code runtime (reactors, transforms) by outcome.\n");
            out.push_str("# TYPE tokenvault_code_calls_total counter\n");
            for (outcome, n) in &s.code {
                let _ = writeln!(out, "tokenvault_code_calls_total{{outcome=\"{outcome}\"}} {n}");
            }
            out.push_str("# HELP tokenvault_proxy_calls_total Proxy calls by destination status (none: the vault answered).\n");
            out.push_str("# TYPE tokenvault_proxy_calls_total counter\n");
            for (status, n) in &s.proxy {
                let _ = writeln!(
                    out,
                    "tokenvault_proxy_calls_total{{destination_status=\"{}\"}} {n}",
                    escape(status)
                );
            }
        });
        out
    }
}

/// A label value as the text format wants it.
fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// `GET /metrics`.
#[utoipa::path(get, path = "/metrics", tag = "meta",
    responses((status = 200, description = "Prometheus text format", content_type = "text/plain")))]
pub async fn metrics(metrics: web::Data<Metrics>, vault: web::Data<Vault>) -> HttpResponse {
    let mut out = metrics.render();
    out.push_str("# HELP tokenvault_audit_events_waiting Audit events held in memory until the next flush writes them.\n");
    out.push_str("# TYPE tokenvault_audit_events_waiting gauge\n");
    let _ = writeln!(
        out,
        "tokenvault_audit_events_waiting {}",
        vault.audit.audit_waiting()
    );
    out.push_str("# HELP tokenvault_audit_refusals_total Requests refused (503) because their tenant's audit log stayed behind.\n");
    out.push_str("# TYPE tokenvault_audit_refusals_total counter\n");
    let _ = writeln!(
        out,
        "tokenvault_audit_refusals_total {}",
        vault.audit.audit_refusals()
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
        let text = m.render();
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
