//! The guards, over real HTTP against a bound ephemeral loopback port.

mod common;

use common::request;
use troupe_admin::{AdminServer, CSRF_HEADER};

const TOKEN: &str = "test-token-0123456789";
const BEARER: (&str, &str) = ("Authorization", "Bearer test-token-0123456789");

fn server() -> AdminServer {
    AdminServer::builder(TOKEN)
        .bind("127.0.0.1:0")
        .body_limit(1024)
        .start()
        .expect("starts")
}

fn csrf(s: &AdminServer) -> String {
    let a = request(s.addr(), "GET", "/api/v1/csrf", &[BEARER], b"");
    assert_eq!(a.status, 200, "{}", a.body);
    a.json()["token"].as_str().unwrap().to_string()
}

#[test]
fn no_token_and_wrong_token_are_401() {
    let s = server();
    let a = request(s.addr(), "GET", "/api/v1/node", &[], b"");
    assert_eq!(a.status, 401);
    assert!(a.json()["error"].as_str().unwrap().contains("bearer"));
    assert_eq!(a.header("www-authenticate"), Some("Bearer"));
    let wrong = ("Authorization", "Bearer test-token-0123456788");
    assert_eq!(
        request(s.addr(), "GET", "/api/v1/node", &[wrong], b"").status,
        401
    );
    let short = ("Authorization", "Bearer test");
    assert_eq!(
        request(s.addr(), "GET", "/api/v1/node", &[short], b"").status,
        401
    );
    let basic = ("Authorization", "Basic dGVzdA==");
    assert_eq!(
        request(s.addr(), "GET", "/api/v1/node", &[basic], b"").status,
        401
    );
    let a = request(s.addr(), "GET", "/api/v1/node", &[BEARER], b"");
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(a.json()["version"], env!("CARGO_PKG_VERSION"));
    // Health needs no token.
    assert_eq!(
        request(s.addr(), "GET", "/health/alive", &[], b"").status,
        200
    );
}

#[test]
fn no_cors_headers() {
    let s = server();
    let evil = ("Origin", "http://evil.example");
    let a = request(s.addr(), "GET", "/api/v1/node", &[BEARER, evil], b"");
    assert_eq!(a.status, 200);
    assert!(
        a.headers
            .iter()
            .all(|(k, _)| !k.starts_with("access-control-")),
        "{:?}",
        a.headers
    );
    let a = request(s.addr(), "OPTIONS", "/api/v1/node", &[BEARER, evil], b"");
    assert!(
        a.headers
            .iter()
            .all(|(k, _)| !k.starts_with("access-control-")),
        "{:?}",
        a.headers
    );
}

#[test]
fn oversize_body_is_413() {
    let s = server();
    let c = csrf(&s);
    let body = format!("{{\"node\": \"{}\"}}", "x".repeat(4096));
    let a = request(
        s.addr(),
        "POST",
        "/api/v1/actions/down",
        &[
            BEARER,
            (CSRF_HEADER, &c),
            ("Content-Type", "application/json"),
        ],
        body.as_bytes(),
    );
    assert_eq!(a.status, 413, "{}", a.body);
    assert!(a.json()["error"].is_string());
}

#[test]
fn bad_json_is_400() {
    let s = server();
    let c = csrf(&s);
    let h = [BEARER, (CSRF_HEADER, c.as_str())];
    for body in [
        &b"{not json"[..],
        b"{\"node\": 3}",
        b"{\"nod\": \"a\"}",
        b"[]",
    ] {
        let a = request(s.addr(), "POST", "/api/v1/actions/down", &h, body);
        assert_eq!(a.status, 400, "{body:?}: {}", a.body);
        assert!(
            a.json()["error"].as_str().unwrap().contains("JSON"),
            "{}",
            a.body
        );
    }
    let a = request(
        s.addr(),
        "POST",
        "/api/v1/actions/down",
        &h,
        b"{\"node\": \"a.b\"}",
    );
    assert_eq!(a.status, 400, "{}", a.body);
    let a = request(s.addr(), "GET", "/api/v1/actors?top=many", &[BEARER], b"");
    assert_eq!(a.status, 400, "{}", a.body);
    // A good body reaches the action: this server reports no sharded
    // kind to mark the node down in (404, saying so).
    let a = request(
        s.addr(),
        "POST",
        "/api/v1/actions/down",
        &h,
        b"{\"node\": \"n2\"}",
    );
    assert_eq!(a.status, 404, "{}", a.body);
    assert!(a.body.contains("no sharded kind"), "{}", a.body);
}

#[test]
fn wrong_origin_is_403_own_origin_passes() {
    let s = server();
    let c = csrf(&s);
    let body = b"{\"node\": \"n2\"}";
    let evil = [
        BEARER,
        (CSRF_HEADER, c.as_str()),
        ("Origin", "http://evil.example"),
    ];
    let a = request(s.addr(), "POST", "/api/v1/actions/down", &evil, body);
    assert_eq!(a.status, 403, "{}", a.body);
    assert!(a.json()["error"].as_str().unwrap().contains("Origin"));
    let own = format!("http://{}", s.addr());
    let ok = [BEARER, (CSRF_HEADER, c.as_str()), ("Origin", own.as_str())];
    assert_eq!(
        request(s.addr(), "POST", "/api/v1/actions/down", &ok, body).status,
        404
    );
}

#[test]
fn missing_or_wrong_csrf_is_403() {
    let s = server();
    let body = b"{\"node\": \"n2\"}";
    let a = request(s.addr(), "POST", "/api/v1/actions/down", &[BEARER], body);
    assert_eq!(a.status, 403, "{}", a.body);
    assert!(a.json()["error"].as_str().unwrap().contains("CSRF"));
    let wrong = [BEARER, (CSRF_HEADER, "00")];
    assert_eq!(
        request(s.addr(), "POST", "/api/v1/actions/down", &wrong, body).status,
        403
    );
    // Without the bearer token, the CSRF token does not help.
    let c = csrf(&s);
    let a = request(
        s.addr(),
        "POST",
        "/api/v1/actions/down",
        &[(CSRF_HEADER, &c)],
        body,
    );
    assert_eq!(a.status, 401);
}

#[test]
fn unknown_route_is_404_json() {
    let s = server();
    for path in ["/nope", "/api/v1/nope", "/api/v2/node"] {
        let a = request(s.addr(), "GET", path, &[BEARER], b"");
        assert_eq!(a.status, 404, "{path}");
        assert!(a.json()["error"].is_string(), "{path}");
    }
    let a = request(s.addr(), "DELETE", "/health/alive", &[], b"");
    assert_eq!(a.status, 405);
    assert!(a.json()["error"].is_string());
}

#[test]
fn over_rate_is_429() {
    let s = AdminServer::builder(TOKEN)
        .bind("127.0.0.1:0")
        .rate(0.001, 3)
        .start()
        .unwrap();
    for _ in 0..3 {
        assert_eq!(
            request(s.addr(), "GET", "/health/alive", &[], b"").status,
            200
        );
    }
    let a = request(s.addr(), "GET", "/health/alive", &[], b"");
    assert_eq!(a.status, 429);
    assert!(a.json()["error"].is_string());
    assert_eq!(
        request(s.addr(), "GET", "/api/v1/node", &[BEARER], b"").status,
        429
    );
}

#[test]
fn non_loopback_must_be_asked_for_and_short_tokens_refused() {
    let e = AdminServer::builder(TOKEN)
        .bind("0.0.0.0:0")
        .start()
        .err()
        .unwrap();
    assert!(e.to_string().contains("allow_non_loopback"), "{e}");
    let e = AdminServer::builder("short")
        .bind("127.0.0.1:0")
        .start()
        .err()
        .unwrap();
    assert!(e.to_string().contains("at least"), "{e}");
    let e = AdminServer::builder(TOKEN)
        .bind("localhost:x")
        .start()
        .err()
        .unwrap();
    assert!(e.to_string().contains("address"), "{e}");
}

#[test]
fn the_dashboard_is_served_with_a_strict_csp_and_no_data() {
    let s = server();
    for (path, ty) in [
        ("/", "text/html"),
        ("/dashboard/app.js", "text/javascript"),
        ("/dashboard/style.css", "text/css"),
    ] {
        // No token needed: the assets hold no data.
        let a = request(s.addr(), "GET", path, &[], b"");
        assert_eq!(a.status, 200, "{path}");
        assert!(a.header("content-type").unwrap().starts_with(ty), "{path}");
        let csp = a.header("content-security-policy").expect("a CSP");
        assert_eq!(csp, troupe_admin::dashboard::CSP);
        assert!(csp.contains("default-src 'none'") && csp.contains("script-src 'self'"));
        assert!(!csp.contains("unsafe-inline") && !csp.contains("unsafe-eval"));
        assert_eq!(a.header("x-content-type-options"), Some("nosniff"));
        assert_eq!(a.header("x-frame-options"), Some("DENY"));
        assert!(a
            .headers
            .iter()
            .all(|(k, _)| !k.starts_with("access-control-")));
    }
    // The page's reads still need the token.
    assert_eq!(
        request(s.addr(), "GET", "/api/v1/shards", &[], b"").status,
        401
    );
    // A write from the dashboard's own origin with the token and CSRF
    // token passes the guards; from another origin it does not.
    let c = csrf(&s);
    let own = format!("http://{}", s.addr());
    let body = b"{}";
    let ok = [BEARER, (CSRF_HEADER, c.as_str()), ("Origin", own.as_str())];
    let a = request(
        s.addr(),
        "POST",
        "/api/v1/actions/rebalancing/pause",
        &ok,
        body,
    );
    assert_eq!(a.status, 404, "guards passed, no kind: {}", a.body);
    let evil = [
        BEARER,
        (CSRF_HEADER, c.as_str()),
        ("Origin", "http://localhost.evil"),
    ];
    let a = request(
        s.addr(),
        "POST",
        "/api/v1/actions/rebalancing/pause",
        &evil,
        body,
    );
    assert_eq!(a.status, 403, "{}", a.body);
}
