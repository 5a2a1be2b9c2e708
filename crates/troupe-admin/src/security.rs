//! The server's guards, applied in this order to every request:
//!
//! 1. **Rate** (every route, health included): one token bucket per
//!    server, `rate` tokens a second up to `burst`; a request finding it
//!    empty is answered 429 and costs nothing more.
//! 2. **Bearer token** (every route but `/health/*`): `Authorization:
//!    Bearer <token>`, compared in constant time (below); 401 otherwise.
//! 3. **Actions** (every `POST`): an `Origin` header, when present, must be
//!    one of the server's own origins (`http://<bound address>`, and
//!    `http://localhost:<port>` on loopback, plus those the builder names);
//!    403 otherwise. And the header [`CSRF_HEADER`] must carry the server's
//!    CSRF token (random per server, read with the bearer token from
//!    `GET /api/v1/csrf`); 403 otherwise. A page of another origin can
//!    neither read that token (no CORS headers are ever sent) nor forge
//!    the Origin.
//!
//! Request bodies are limited by the router (`DefaultBodyLimit`; 413).
//!
//! Constant time: the presented token and the server's are compared with
//! `subtle`'s `ConstantTimeEq` over byte slices, which ORs every byte
//! pair's difference and branches only at the end; the only early exit is
//! on a length mismatch, and the length of a token is not its secret
//! (tokens shorter than [`MIN_TOKEN_LEN`] are refused at start).

use std::sync::Arc;
use std::time::Instant;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use parking_lot::Mutex;
use serde::de::DeserializeOwned;
use subtle::ConstantTimeEq;

use crate::error::ApiError;

/// The header an action carries its CSRF token in.
pub const CSRF_HEADER: &str = "x-troupe-csrf";

/// The shortest bearer token the server accepts (bytes).
pub const MIN_TOKEN_LEN: usize = 16;

/// A token bucket: `tokens` left at `last`.
struct Bucket {
    tokens: f64,
    last: Instant,
}

/// The guards' settings and state, one per server.
pub struct Security {
    token: Vec<u8>,
    csrf: String,
    origins: Vec<String>,
    rate: f64,
    burst: f64,
    bucket: Mutex<Bucket>,
}

impl Security {
    /// Guards with bearer `token`, `rate` requests a second up to `burst`,
    /// and the origins actions may come from.
    pub fn new(token: &str, rate: f64, burst: u32, origins: Vec<String>) -> Result<Self, String> {
        if token.len() < MIN_TOKEN_LEN {
            return Err(format!(
                "the bearer token must be at least {MIN_TOKEN_LEN} bytes"
            ));
        }
        let mut raw = [0u8; 32];
        getrandom::fill(&mut raw)
            .map_err(|e| format!("no random source for the CSRF token: {e}"))?;
        let csrf = raw.iter().map(|b| format!("{b:02x}")).collect();
        let burst = f64::from(burst.max(1));
        Ok(Security {
            token: token.as_bytes().to_vec(),
            csrf,
            origins,
            rate: if rate.is_finite() && rate > 0.0 {
                rate
            } else {
                1.0
            },
            burst,
            bucket: Mutex::new(Bucket {
                tokens: burst,
                last: Instant::now(),
            }),
        })
    }

    /// The CSRF token actions must carry.
    pub fn csrf(&self) -> &str {
        &self.csrf
    }

    /// Takes one token from the bucket; `false` if it is empty.
    fn take(&self) -> bool {
        let mut b = self.bucket.lock();
        let now = Instant::now();
        let refill = now.duration_since(b.last).as_secs_f64() * self.rate;
        b.tokens = (b.tokens + refill).min(self.burst);
        b.last = now;
        if b.tokens >= 1.0 {
            b.tokens -= 1.0;
            true
        } else {
            false
        }
    }

    /// Whether `headers` carry the bearer token (constant-time compare).
    fn authorized(&self, headers: &HeaderMap) -> bool {
        let Some(v) = headers.get(header::AUTHORIZATION) else {
            return false;
        };
        let Some(given) = v.as_bytes().strip_prefix(b"Bearer ") else {
            return false;
        };
        given.ct_eq(&self.token).into()
    }
}

/// Guard 1: the token bucket (429 when empty).
pub async fn rate(State(s): State<Arc<Security>>, req: Request, next: Next) -> Response {
    if !s.take() {
        return ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "too many requests: slow down",
        )
        .into_response();
    }
    next.run(req).await
}

/// Guard 2: the bearer token (401 without it).
pub async fn bearer(State(s): State<Arc<Security>>, req: Request, next: Next) -> Response {
    if !s.authorized(req.headers()) {
        let mut r = ApiError::new(
            StatusCode::UNAUTHORIZED,
            "missing or wrong bearer token (Authorization: Bearer <token>)",
        )
        .into_response();
        r.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            header::HeaderValue::from_static("Bearer"),
        );
        return r;
    }
    next.run(req).await
}

/// Guard 3: on a `POST`, the Origin (when present) and the CSRF token
/// (403 otherwise).
pub async fn action(State(s): State<Arc<Security>>, req: Request, next: Next) -> Response {
    if req.method() == Method::POST {
        if let Some(origin) = req.headers().get(header::ORIGIN) {
            let ok = origin
                .to_str()
                .is_ok_and(|o| s.origins.iter().any(|own| own == o));
            if !ok {
                return ApiError::new(
                    StatusCode::FORBIDDEN,
                    "the Origin header is not this server's origin",
                )
                .into_response();
            }
        }
        let csrf_ok = req
            .headers()
            .get(CSRF_HEADER)
            .is_some_and(|v| bool::from(v.as_bytes().ct_eq(s.csrf.as_bytes())));
        if !csrf_ok {
            return ApiError::new(
                StatusCode::FORBIDDEN,
                format!(
                    "missing or wrong CSRF token (header {CSRF_HEADER}, from GET /api/v1/csrf)"
                ),
            )
            .into_response();
        }
    }
    next.run(req).await
}

/// A request body as JSON of type `T`: 413 past the body limit, 400 with
/// the parser's message when it is not that JSON. An empty body reads as
/// `{}`.
pub fn json_body<T: DeserializeOwned>(body: Result<Bytes, BytesRejection>) -> Result<T, ApiError> {
    let body = body.map_err(|r| ApiError::new(r.status(), r.body_text()))?;
    let body: &[u8] = if body.is_empty() { b"{}" } else { &body };
    serde_json::from_slice(body).map_err(|e| ApiError::bad_request(format!("bad JSON body: {e}")))
}
