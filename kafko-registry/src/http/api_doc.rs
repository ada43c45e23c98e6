//! The registry's part of the server's OpenAPI document: [`document`], generated from
//! the handlers' `#[utoipa::path]` attributes, with the query parameters named here
//! (the handlers read them through `wire::Params`).

// The params structs are never built: they exist for their `IntoParams` impls.
#![allow(dead_code)]

use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{ContentBuilder, Ref, ResponseBuilder};
use utoipa::{IntoParams, OpenApi};

use super::wire::MEDIA_TYPE;
use super::{schemas, settings, subjects};

/// The tag of every registry operation.
pub(crate) const TAG: &str = "schema-registry";

/// `deleted`.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct DeletedQuery {
    /// Include soft-deleted versions.
    deleted: Option<bool>,
}

/// The query of `GET /subjects`.
#[derive(IntoParams)]
#[into_params(parameter_in = Query, rename_all = "camelCase")]
pub(crate) struct SubjectsQuery {
    /// Include soft-deleted subjects.
    deleted: Option<bool>,
    /// Only subjects starting with this.
    subject_prefix: Option<String>,
}

/// `normalize`.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct NormalizeQuery {
    /// Store (and compare) the schema in its normalized form.
    normalize: Option<bool>,
}

/// The query of a lookup.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct LookupQuery {
    /// Compare normalized forms.
    normalize: Option<bool>,
    /// Find soft-deleted versions too.
    deleted: Option<bool>,
}

/// `permanent`.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct PermanentQuery {
    /// Delete for good (only what was soft-deleted first).
    permanent: Option<bool>,
}

/// The query of `GET /schemas`.
#[derive(IntoParams)]
#[into_params(parameter_in = Query, rename_all = "camelCase")]
pub(crate) struct SchemasQuery {
    /// Only subjects starting with this.
    subject_prefix: Option<String>,
    /// Include soft-deleted versions.
    deleted: Option<bool>,
    /// Only each subject's latest version.
    latest_only: Option<bool>,
    /// Schemas to skip.
    offset: Option<i64>,
    /// Most schemas to answer (0 or less: all).
    limit: Option<i64>,
}

/// `defaultToGlobal`.
#[derive(IntoParams)]
#[into_params(parameter_in = Query, rename_all = "camelCase")]
pub(crate) struct DefaultToGlobalQuery {
    /// Answer the global setting when the subject has none of its own.
    default_to_global: Option<bool>,
}

/// `force`.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct ForceQuery {
    /// Set IMPORT even though subjects exist.
    force: Option<bool>,
}

/// The query of a compatibility check.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct CheckQuery {
    /// Answer why a schema is incompatible.
    verbose: Option<bool>,
    /// Check the normalized form.
    normalize: Option<bool>,
}

#[derive(OpenApi)]
#[openapi(
    paths(
        subjects::list, subjects::lookup, subjects::delete, subjects::versions,
        subjects::register, subjects::version, subjects::delete_version,
        subjects::version_schema, subjects::referenced_by,
        schemas::list, schemas::types, schemas::by_id, schemas::by_id_raw,
        schemas::id_subjects, schemas::id_versions, schemas::decode,
        settings::get_global, settings::put_global, settings::delete_global,
        settings::get_subject, settings::put_subject, settings::delete_subject,
        settings::get_mode, settings::put_mode,
        settings::get_subject_mode, settings::put_subject_mode, settings::delete_subject_mode,
        settings::check_all, settings::check_version,
    ),
    tags((name = "schema-registry", description = "Confluent Schema Registry's API (also on --schema-registry-bind): subjects, schemas by id, compatibility levels and modes")),
)]
struct RegistryDoc;

/// The registry's operations, schemas and security schemes as an OpenAPI document to
/// merge into the server's. Every operation accepts the bearer token or basic auth with
/// the token as the password, and answers any error it does not list as
/// `{"error_code", "message"}`.
pub(super) fn document() -> utoipa::openapi::OpenApi {
    let mut doc = RegistryDoc::openapi();
    let default = ResponseBuilder::new()
        .description("Any other error: {error_code, message} with Confluent's codes")
        .content(
            MEDIA_TYPE,
            ContentBuilder::new()
                .schema(Some(Ref::from_schema_name("RegistryErrorBody")))
                .build(),
        )
        .build();
    let security = [
        utoipa::openapi::security::SecurityRequirement::default(),
        utoipa::openapi::security::SecurityRequirement::new("bearer", Vec::<String>::new()),
        utoipa::openapi::security::SecurityRequirement::new("basic", Vec::<String>::new()),
    ];
    for item in doc.paths.paths.values_mut() {
        let operations = [
            &mut item.get,
            &mut item.put,
            &mut item.post,
            &mut item.delete,
        ];
        for op in operations.into_iter().flatten() {
            op.responses
                .responses
                .entry("default".to_owned())
                .or_insert_with(|| default.clone().into());
            op.security = Some(security.to_vec());
        }
    }
    let components = doc.components.get_or_insert_with(Default::default);
    components.add_security_scheme(
        "basic",
        SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Basic).build()),
    );
    doc
}
