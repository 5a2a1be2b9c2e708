//! The OpenAPI 3 document of the API (`openapi.yaml` beside `Cargo.toml`),
//! served at `GET /api/v1/openapi.yaml`. Versioned by its path prefix:
//! `/api/v1` changes only by adding; a breaking change is `/api/v2`.

/// The document, as served.
pub const OPENAPI_YAML: &str = include_str!("../openapi.yaml");
