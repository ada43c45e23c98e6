//! Small builders for OpenAPI documents, shared by every front end's part of the spec.

/// A body whose schema is the component `schema`.
pub(crate) fn content_of(schema: &str) -> utoipa::openapi::Content {
    utoipa::openapi::ContentBuilder::new()
        .schema(Some(utoipa::openapi::Ref::from_schema_name(schema)))
        .build()
}

/// Every operation of a path.
pub(crate) fn operations(
    item: &mut utoipa::openapi::PathItem,
) -> impl Iterator<Item = &mut utoipa::openapi::path::Operation> {
    [
        &mut item.get,
        &mut item.put,
        &mut item.post,
        &mut item.delete,
        &mut item.patch,
    ]
    .into_iter()
    .flatten()
}
