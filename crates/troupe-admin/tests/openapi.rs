//! The OpenAPI document names every route the router serves, and only
//! those: the router's source, `ROUTES`, the document and the live
//! server agree.

mod common;

use std::collections::BTreeSet;

use common::request;
use troupe_admin::openapi::OPENAPI_YAML;
use troupe_admin::router::ROUTES;
use troupe_admin::AdminServer;

const BEARER: (&str, &str) = ("Authorization", "Bearer test-token-0123456789");

/// (method, path) of every `.route("path", get|post(...))` in router.rs.
fn routed() -> BTreeSet<(String, String)> {
    let src = include_str!("../src/router.rs");
    let mut out = BTreeSet::new();
    for part in src.split(".route(\"").skip(1) {
        let (path, rest) = part.split_once('"').unwrap();
        let method = rest.trim_start_matches(", ").split('(').next().unwrap();
        out.insert((method.to_uppercase(), path.to_string()));
    }
    out
}

/// (method, path) of every operation in the document's `paths`.
fn documented() -> BTreeSet<(String, String)> {
    let paths = OPENAPI_YAML
        .split("\npaths:\n")
        .nth(1)
        .expect("a paths section");
    let mut out = BTreeSet::new();
    let mut path = String::new();
    for line in paths.lines() {
        if let Some(p) = line.strip_prefix("  /") {
            path = format!("/{}", p.trim_end_matches(':'));
        } else if let Some(m) = line.strip_prefix("    ") {
            if let Some(m) = m.strip_suffix(':') {
                if ["get", "post", "put", "delete", "patch"].contains(&m) {
                    out.insert((m.to_uppercase(), path.clone()));
                }
            }
        }
    }
    out
}

#[test]
fn every_route_is_documented_and_every_documented_route_served() {
    let listed: BTreeSet<(String, String)> = ROUTES
        .iter()
        .map(|(m, p)| (m.to_string(), p.to_string()))
        .collect();
    assert_eq!(routed(), listed, "router.rs vs ROUTES");
    assert_eq!(documented(), listed, "openapi.yaml vs ROUTES");
    assert!(OPENAPI_YAML.contains("version: \"1\""));

    let s = AdminServer::builder("test-token-0123456789")
        .bind("127.0.0.1:0")
        .start()
        .unwrap();
    for (m, p) in ROUTES {
        let a = request(s.addr(), m, p, &[BEARER], b"");
        // Served: not the router's fallbacks (a 404 for a missing object,
        // e.g. no cluster, names the object instead).
        assert!(
            a.status != 405 && !a.body.contains("no such route (see"),
            "{m} {p}: {} {}",
            a.status,
            a.body
        );
    }
    let a = request(s.addr(), "GET", "/api/v1/openapi.yaml", &[BEARER], b"");
    assert_eq!(a.status, 200);
    assert_eq!(a.body, OPENAPI_YAML);
}
