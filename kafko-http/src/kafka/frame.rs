//! Framing: every Kafka request and response is a 4-byte big-endian size followed by
//! that many bytes. A frame whose declared size is negative or past the limit is refused
//! from its prefix alone, before any of it is read or buffered.

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Why a connection stops reading frames.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FrameError {
    /// The peer closed the connection between frames.
    #[error("connection closed")]
    Closed,
    /// The declared size is negative or past the limit.
    #[error("frame of {size} bytes refused (limit {limit})")]
    TooLarge {
        /// Declared size.
        size: i64,
        /// The limit.
        limit: usize,
    },
    /// The socket failed, or closed inside a frame.
    #[error("reading a frame: {0}")]
    Io(#[from] std::io::Error),
}

/// Reads one frame's body (without its size prefix).
///
/// # Errors
/// [`FrameError`].
pub(crate) async fn read_frame<R: AsyncRead + Unpin>(
    reader: &mut R,
    limit: usize,
) -> Result<Bytes, FrameError> {
    let mut prefix = [0u8; 4];
    match reader.read_exact(&mut prefix[..1]).await {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Err(FrameError::Closed),
        Err(e) => return Err(e.into()),
    }
    reader.read_exact(&mut prefix[1..]).await?;
    let size = i32::from_be_bytes(prefix);
    let len = usize::try_from(size)
        .ok()
        .filter(|len| *len <= limit)
        .ok_or(FrameError::TooLarge {
            size: i64::from(size),
            limit,
        })?;
    let mut body = BytesMut::zeroed(len);
    reader.read_exact(&mut body).await?;
    Ok(body.freeze())
}

/// A buffer for one outgoing frame: room for the size prefix, which [`seal`] fills.
pub(crate) fn start() -> BytesMut {
    let mut buf = BytesMut::with_capacity(256);
    buf.extend_from_slice(&[0; 4]);
    buf
}

/// Fills in the size prefix of a buffer begun by [`start`].
///
/// # Errors
/// `InvalidData` for a body past `i32::MAX` bytes.
pub(crate) fn seal(mut buf: BytesMut) -> std::io::Result<Bytes> {
    let size = i32::try_from(buf.len().saturating_sub(4))
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidData, "frame too large"))?;
    buf[..4].copy_from_slice(&size.to_be_bytes());
    Ok(buf.freeze())
}

/// Writes a sealed frame.
///
/// # Errors
/// The socket's failure.
pub(crate) async fn write_frame<W: AsyncWrite + Unpin>(
    writer: &mut W,
    frame: &[u8],
) -> std::io::Result<()> {
    writer.write_all(frame).await?;
    writer.flush().await
}
