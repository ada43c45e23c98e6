//! The v3 API: one cluster, its topics and partitions, topic creation and deletion, and
//! the streaming produce. Resources have the `{kind, metadata:{self,…}, …}` shape and
//! lists `{kind, metadata:{self,next}, data:[…]}`.

pub(crate) mod metadata;
pub(crate) mod produce;
pub(crate) mod record;
pub(crate) mod scan;

use std::collections::HashMap;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderMap, Uri};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::rest_proxy::error::{ProxyError, ProxyResult};
use crate::rest_proxy::{ProxyPath, base_url};
use crate::state::AppState;
use axum::http::StatusCode;

/// Checks the cluster id of a path: unknown ids are 404.
pub(crate) fn check_cluster(state: &AppState, cluster: &str) -> ProxyResult<()> {
    if cluster == state.config.cluster_id {
        Ok(())
    } else {
        Err(ProxyError::plain(
            StatusCode::NOT_FOUND,
            format!("Cluster {cluster} cannot be found."),
        )
        .v3())
    }
}

/// A request under `/v3/clusters/{cluster}`, once its cluster is checked (404 unless
/// it is this one, after its path parameters parsed): those parameters (all of them,
/// the cluster's first), the server's state, and the URLs of its answer.
pub(crate) struct InCluster<T> {
    pub(crate) path: T,
    pub(crate) state: AppState,
    pub(crate) urls: Urls,
}

impl<T: DeserializeOwned + Send> FromRequestParts<AppState> for InCluster<T> {
    type Rejection = ProxyError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> ProxyResult<Self> {
        let ProxyPath(path) = ProxyPath::<T>::from_request_parts(parts, state).await?;
        let ProxyPath(params) =
            ProxyPath::<HashMap<String, String>>::from_request_parts(parts, state).await?;
        check_cluster(state, params.get("cluster").map_or("", String::as_str))?;
        Ok(InCluster {
            path,
            state: state.clone(),
            urls: Urls::new(state, &parts.headers, &parts.uri)?,
        })
    }
}

/// A resource's `metadata`.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = ProxyV3ResourceMeta)]
pub(crate) struct ResourceMeta {
    #[serde(rename = "self")]
    self_: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    resource_name: Option<String>,
}

/// A list's `metadata`.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = ProxyV3ListMeta)]
pub(crate) struct ListMeta {
    #[serde(rename = "self")]
    self_: String,
    next: Option<String>,
}

/// A link to a related collection.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = ProxyV3Related)]
pub(crate) struct Related {
    related: String,
}

/// URLs and resource names of one request.
pub(crate) struct Urls {
    base: String,
    cluster: String,
}

impl Urls {
    /// The URLs of a request's answer (see [`base_url`]); a bad `Host` is 400.
    pub(crate) fn new(state: &AppState, headers: &HeaderMap, uri: &Uri) -> ProxyResult<Self> {
        Ok(Urls {
            base: base_url(state, headers, uri).map_err(ProxyError::v3)?,
            cluster: state.config.cluster_id.clone(),
        })
    }

    /// `{base}/v3/clusters/{id}{rest}`.
    pub(crate) fn cluster(&self, rest: &str) -> String {
        format!("{}/v3/clusters/{}{rest}", self.base, self.cluster)
    }

    pub(crate) fn related(&self, rest: &str) -> Related {
        Related {
            related: self.cluster(rest),
        }
    }

    pub(crate) fn meta(&self, rest: &str, crn: &str) -> ResourceMeta {
        ResourceMeta {
            self_: self.cluster(rest),
            resource_name: Some(format!("crn:///kafka={}{crn}", self.cluster)),
        }
    }

    pub(crate) fn list(&self, rest: &str) -> ListMeta {
        ListMeta {
            self_: self.cluster(rest),
            next: None,
        }
    }

    pub(crate) fn list_root(&self) -> ListMeta {
        ListMeta {
            self_: format!("{}/v3/clusters", self.base),
            next: None,
        }
    }

    pub(crate) fn id(&self) -> &str {
        &self.cluster
    }
}
