//! [`AppState`]: the [`Service`] every front end shares, and the admission limits only
//! HTTP requests run under. Cheap to clone: one reference count.

use std::sync::Arc;

use kafko_service::Service;

use crate::middleware::{Limit, Pool};

/// The HTTP front ends' state. Every request clones it several times (router,
/// middleware, extractors), so it is one `Arc`; it derefs to [`HttpShared`], which
/// derefs to the [`Service`]'s fields (`state.kafko`, `state.config`, …).
#[derive(Clone)]
pub struct AppState {
    shared: Arc<HttpShared>,
}

/// The fields behind [`AppState`].
pub struct HttpShared {
    /// The service under every front end.
    pub(crate) service: Service,
    /// `max_concurrent_requests`.
    pub(crate) permits: Limit,
    /// The long-polls' own limit (`max_waiting_requests`).
    pub(crate) waiting_permits: Limit,
}

impl std::ops::Deref for AppState {
    type Target = HttpShared;

    fn deref(&self) -> &HttpShared {
        &self.shared
    }
}

impl std::ops::Deref for HttpShared {
    type Target = Service;

    fn deref(&self) -> &Service {
        &self.service
    }
}

impl AppState {
    /// The HTTP state over `service`.
    pub fn new(service: Service) -> Self {
        AppState {
            shared: Arc::new(HttpShared {
                permits: Limit::new(service.config.max_concurrent_requests.max(1)),
                waiting_permits: Limit::new(service.config.max_waiting_requests.max(1)),
                service,
            }),
        }
    }

    /// The limit of requests admitted under `pool`.
    pub(crate) fn limit(&self, pool: Pool) -> &Limit {
        match pool {
            Pool::General => &self.permits,
            Pool::Waiting => &self.waiting_permits,
        }
    }

    /// The service under every front end.
    pub fn service(&self) -> &Service {
        &self.service
    }
}
