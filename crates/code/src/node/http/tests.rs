//! `fetch` and Node's `http`/`https` in the engine, each request going through the host.

use crate::worker::testing::*;

/// `fetch` goes to the host as JSON (the body in base64) and its answer comes back as a
/// `Response`; `Headers` and `Request` are there.
#[test]
fn fetch_goes_through_the_host() {
    let mut engine = engine();
    let (outcome, _) = engine.run(&call(
        "module.exports = async () => {
           const res = await fetch('https://api.example/v1/charges', {
             method: 'post', headers: { 'Content-Type': 'application/json', 'X-Key': 'k' },
             body: JSON.stringify({ amount: 1 }),
           });
           const sent = await res.json();
           const body = JSON.parse(new TextDecoder().decode(Uint8Array.from(atob(sent.body), (c) => c.charCodeAt(0))));
           return { status: res.status, ok: res.ok, echo: res.headers.get('X-Echo'),
                    method: sent.method, url: sent.url, headers: sent.headers, body,
                    request: new Request('https://x.example/a').method, h: new Headers({ A: '1' }).get('a') };
         };",
    ));
    let value = outcome.unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(
        value,
        serde_json::json!({
            "status": 201, "ok": true, "echo": "1", "method": "POST",
            "url": "https://api.example/v1/charges",
            "headers": [["content-type", "application/json"], ["x-key", "k"]],
            "body": {"amount": 1}, "request": "GET", "h": "1"
        })
    );
}

/// Node's `https.request` goes through the same host call as `fetch`: the request as
/// written (method, headers, body), the answer as events.
#[test]
fn https_request_goes_through_the_host() {
    use base64::Engine as _;
    let mut engine = engine();
    let (outcome, _) = engine.run(&call(
        "const https = require('https');
         module.exports = () => new Promise((resolve, reject) => {
           const req = https.request({ hostname: 'api.example', path: '/v1/x?y=1', method: 'PUT',
                                       headers: { 'Content-Type': 'application/json' } }, (res) => {
             let text = '';
             res.setEncoding('utf8');
             res.on('data', (c) => { text += c; });
             res.on('end', () => resolve({ status: res.statusCode, echo: res.headers['x-echo'], sent: JSON.parse(text) }));
           });
           req.on('error', reject);
           req.write('{\"a\":');
           req.end('1}');
         });",
    ));
    let value = outcome.unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(value["status"], 201, "{value}");
    assert_eq!(value["echo"], "1");
    assert_eq!(value["sent"]["method"], "PUT");
    assert_eq!(value["sent"]["url"], "https://api.example/v1/x?y=1");
    let body = base64::engine::general_purpose::STANDARD
        .decode(value["sent"]["body"].as_str().unwrap_or_default())
        .unwrap_or_default();
    assert_eq!(body, br#"{"a":1}"#);
}
