//! Proxy transforms as real signing code writes them (docs/decisions.md §8): a string body goes
//! out byte for byte, and the headers a transform returns replace the request's. Over HTTP on
//! each database, against a loopback destination.

use hmac::{Hmac, KeyInit, Mac};
use reqwest::Method;
use serde_json::json;
use tokenvault_tests::destination::{Answer, Destination};
use tokenvault_tests::on_each_backend_with;

use super::proxies::{loopback, proxy};
use super::tokens::with;

/// A request transform turns a JSON body into a form body and signs it with a secret of the
/// proxy's configuration: the destination gets exactly those bytes (a line break and a
/// non-ASCII character included), the signature checks out here, and of the caller's headers
/// only what the transform returned is sent.
#[tokio::test]
async fn a_transform_signs_its_body_and_its_headers_replace_the_requests() {
    on_each_backend_with(loopback, async |app| {
        let dest = Destination::start("127.0.0.1").await;
        dest.answer(Answer::default());
        let code = r"const crypto = require('crypto');
module.exports = (req) => {
  const body = `amount=${req.args.body.amount}&note=café\n`;
  const signature = crypto.createHmac('sha256', req.configuration.SECRET).update(body).digest('base64');
  return { body, headers: { 'Content-Type': 'application/x-www-form-urlencoded', 'X-Signature': signature } };
};";
        let p = proxy(
            app,
            json!({"name": "signing", "destination_url": dest.url,
                   "configuration": {"SECRET": "s3cret"}, "request_transform": {"code": code}}),
        )
        .await;
        let caller = with(app, &["token:use"], json!([])).await;
        let res = app
            .request_as(Some(&caller.key), Method::POST, "/proxy/pay")
            .header("SVC-PROXY-KEY", p["key"].as_str().unwrap())
            .header("X-Original", "from the caller")
            .json(&json!({"amount": 10}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200);
        let got = dest.last();
        let expected = "amount=10&note=café\n".as_bytes();
        assert_eq!(got.body, expected, "byte for byte");
        let mut mac = Hmac::<sha2::Sha256>::new_from_slice(b"s3cret").unwrap();
        mac.update(expected);
        let signature = {
            use base64::Engine as _;
            base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
        };
        assert_eq!(got.header("x-signature"), Some(signature.as_str()));
        assert_eq!(
            got.header("content-type"),
            Some("application/x-www-form-urlencoded")
        );
        assert_eq!(got.header("x-original"), None, "replaced by the returned headers");
        assert_eq!(
            got.header("content-length"),
            Some(expected.len().to_string().as_str())
        );
    })
    .await;
}
