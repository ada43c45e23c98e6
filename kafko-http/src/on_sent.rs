//! Response bodies with an effect that waits for the connection: records count as
//! delivered only once the whole answer was handed over, so an answer lost on the way
//! (the client went away, the server stopped) leaves them to be read again.

use std::convert::Infallible;

use axum::body::Body;
use bytes::Bytes;
use futures_util::{StreamExt, stream};

/// `bytes` as a body that calls `sent` once the connection has taken all of it, and
/// never if the body is dropped before.
pub(crate) fn body(bytes: Bytes, sent: impl FnOnce() + Send + 'static) -> Body {
    // The connection asks for the next frame only after it took the previous one.
    let after = stream::once(async move {
        sent();
        None
    });
    let frames = stream::once(async move { Some(bytes) })
        .chain(after)
        .filter_map(|frame| async move { frame.map(Ok::<_, Infallible>) });
    Body::from_stream(frames)
}
