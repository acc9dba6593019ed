//! `URL` and `url` in the engine, read back as Node.js reads them.

use crate::worker::testing::*;

/// `URL` and `url` read URLs as Node.js does (the host's WHATWG parser).
#[test]
fn urls_are_built_and_read_back() {
    let mut engine = engine();
    let (outcome, _) = engine.run(&call(
        "const url = require('url');
         module.exports = () => {
           const u = new URL('/v1/charges?amount=10#top', 'https://api.example.com:8443');
           u.searchParams.append('currency', 'eur');
           u.pathname = '/v2/charges';
           let invalid = null;
           try { new URL('not a url'); } catch (e) { invalid = e.name; }
           const legacy = url.parse('https://user:pw@host.example/a/b?x=1&y=2#h', true);
           const params = new URLSearchParams({ a: '1 2', b: 'é' });
           return {
             href: u.href, host: u.host, hostname: u.hostname, port: u.port,
             origin: u.origin, search: u.search, hash: u.hash, protocol: u.protocol,
             amount: u.searchParams.get('amount'), invalid, json: JSON.stringify({ u }),
             legacy: [legacy.hostname, legacy.pathname, legacy.query.y, legacy.auth, legacy.path],
             params: params.toString(),
             formatted: url.format({ protocol: 'https', hostname: 'x.example', pathname: '/p', query: { q: 'a b' } }),
             resolved: url.resolve('https://x.example/a/b', '../c'),
             same: URL === url.URL,
           };
         };",
    ));
    let value = outcome.unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(
        value,
        serde_json::json!({
            "href": "https://api.example.com:8443/v2/charges?amount=10&currency=eur#top",
            "host": "api.example.com:8443", "hostname": "api.example.com", "port": "8443",
            "origin": "https://api.example.com:8443", "search": "?amount=10&currency=eur",
            "hash": "#top", "protocol": "https:", "amount": "10", "invalid": "TypeError",
            "json": "{\"u\":\"https://api.example.com:8443/v2/charges?amount=10&currency=eur#top\"}",
            "legacy": ["host.example", "/a/b", "2", "user:pw", "/a/b?x=1&y=2"],
            "params": "a=1+2&b=%C3%A9",
            "formatted": "https://x.example/p?q=a%20b",
            "resolved": "https://x.example/c",
            "same": true
        })
    );
}
