//! Framing: every Kafka request and response is a 4-byte big-endian size followed by
//! that many bytes. A frame whose declared size is negative or past the limit is refused
//! from its prefix alone, before any of it is read or buffered; a frame's buffer grows
//! as its bytes arrive.

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// The most a frame buffer holds before its bytes arrive.
const INITIAL_CAPACITY: usize = 64 * 1024;

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
    // Grown as bytes arrive: a declared size reserves nothing the peer has not sent.
    let mut body = BytesMut::with_capacity(len.min(INITIAL_CAPACITY));
    while body.len() < len {
        body.reserve((len - body.len()).min(INITIAL_CAPACITY));
        let want = len - body.len();
        let n = (&mut *reader).take(want as u64).read_buf(&mut body).await?;
        if n == 0 {
            return Err(FrameError::Io(std::io::ErrorKind::UnexpectedEof.into()));
        }
    }
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

/// Writes a sealed frame, within `limit`: a peer that stops reading its answers is not
/// waited for longer.
///
/// # Errors
/// The socket's failure; `TimedOut` past the limit.
pub(crate) async fn write_frame<W: AsyncWrite + Unpin>(
    writer: &mut W,
    frame: &[u8],
    limit: std::time::Duration,
) -> std::io::Result<()> {
    let write = async {
        writer.write_all(frame).await?;
        writer.flush().await
    };
    tokio::time::timeout(limit, write)
        .await
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::TimedOut))?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn frames_are_read_whole_refused_past_the_limit_and_cut_short_is_an_error() {
        let (mut client, mut server) = tokio::io::duplex(1 << 20);
        let body = vec![7u8; 200_000];
        client.write_all(&200_000i32.to_be_bytes()).await.unwrap();
        client.write_all(&body).await.unwrap();
        assert_eq!(
            &read_frame(&mut server, 1 << 20).await.unwrap()[..],
            &body[..]
        );
        // Past the limit, from the prefix alone.
        client.write_all(&(2i32 << 20).to_be_bytes()).await.unwrap();
        assert!(matches!(
            read_frame(&mut server, 1 << 20).await,
            Err(FrameError::TooLarge { .. })
        ));
        // Cut short by the peer's close.
        let (mut client, mut server) = tokio::io::duplex(1024);
        client.write_all(&100i32.to_be_bytes()).await.unwrap();
        client.write_all(&[1, 2, 3]).await.unwrap();
        drop(client);
        assert!(matches!(
            read_frame(&mut server, 1 << 20).await,
            Err(FrameError::Io(_))
        ));
        // Between frames, a close is just that.
        let (client, mut server) = tokio::io::duplex(1024);
        drop(client);
        assert!(matches!(
            read_frame(&mut server, 1 << 20).await,
            Err(FrameError::Closed)
        ));
    }
}
