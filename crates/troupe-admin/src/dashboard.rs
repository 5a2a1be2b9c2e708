//! The web dashboard: three static assets (`dashboard/index.html`,
//! `app.js`, `style.css` beside `Cargo.toml`) compiled into the binary
//! with `include_str!`, served at `/`, `/dashboard/app.js` and
//! `/dashboard/style.css`. No CDN, nothing fetched at run time but this
//! server's own API.
//!
//! The assets hold no data, so they are served without the bearer token:
//! the page asks for the token, keeps it in the tab's `sessionStorage`,
//! and reads the API with `Authorization: Bearer`. Its writes (drain,
//! undrain, down, pause, resume) carry the CSRF token from
//! `GET /api/v1/csrf` in [`CSRF_HEADER`](crate::CSRF_HEADER); the server
//! checks the Origin (`security.rs`).
//!
//! Every asset goes out with [`CSP`]: scripts, styles and connections from
//! this origin only, no inline script or style, no frames, no forms, no
//! plug-ins; and `X-Content-Type-Options: nosniff`, `Referrer-Policy:
//! no-referrer`, `X-Frame-Options: DENY`, `Cache-Control: no-store`.

use axum::http::{header, HeaderName, HeaderValue};
use axum::response::{IntoResponse, Response};

/// The page.
pub const INDEX_HTML: &str = include_str!("../dashboard/index.html");
/// Its script (no framework, charts drawn on canvases).
pub const APP_JS: &str = include_str!("../dashboard/app.js");
/// Its style sheet.
pub const STYLE_CSS: &str = include_str!("../dashboard/style.css");

/// The Content-Security-Policy every asset carries.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
    connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; \
    frame-ancestors 'none'";

fn asset(content_type: &'static str, body: &'static str) -> Response {
    let mut r = body.into_response();
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        HeaderName::from_static("cross-origin-opener-policy"),
        HeaderValue::from_static("same-origin"),
    );
    r
}

/// `GET /`: the page.
pub async fn index() -> Response {
    asset("text/html; charset=utf-8", INDEX_HTML)
}

/// `GET /dashboard/app.js`.
pub async fn script() -> Response {
    asset("text/javascript; charset=utf-8", APP_JS)
}

/// `GET /dashboard/style.css`.
pub async fn style() -> Response {
    asset("text/css; charset=utf-8", STYLE_CSS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_loads_only_its_own_assets() {
        // No inline script or style (the CSP forbids them), nothing from
        // another host.
        assert!(INDEX_HTML.contains("src=\"/dashboard/app.js\""));
        assert!(INDEX_HTML.contains("href=\"/dashboard/style.css\""));
        for text in [INDEX_HTML, APP_JS, STYLE_CSS] {
            assert!(!text.contains("http://") && !text.contains("https://"));
            assert!(!text.contains("style=\""));
        }
        assert!(!INDEX_HTML.contains("<script>"));
        assert!(!APP_JS.contains("innerHTML"), "text only, never markup");
        assert!(!APP_JS.contains("eval("));
    }
}
