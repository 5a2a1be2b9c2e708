//! Errors as HTTP answers: every refusal is a 4xx or 5xx whose body is
//! `{"error": "<what went wrong>"}` (JSON), never a panic and never an
//! HTML page.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;

/// A refusal: its status and the message the body carries.
#[derive(Debug)]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// What went wrong, for a person.
    pub message: String,
}

impl ApiError {
    /// A refusal with `status` and `message`.
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        ApiError {
            status,
            message: message.into(),
        }
    }

    /// 400: the request's content is wrong.
    pub fn bad_request(message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::BAD_REQUEST, message)
    }

    /// 404: nothing here.
    pub fn not_found(message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::NOT_FOUND, message)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (
            self.status,
            Json(serde_json::json!({ "error": self.message })),
        )
            .into_response()
    }
}
