//! Framing: every Kafka request and response is a 4-byte big-endian size followed by
//! that many bytes. A frame whose declared size is negative or past the limit is refused
//! from its prefix alone, before any of it is read or buffered; a frame's buffer grows
//! as its bytes arrive. A frame larger than [`SMALL_FRAME`] first takes its size from
//! the server's [`RequestPool`] (`--queued-max-request-bytes`), held until its request
//! is handled: past the pool, connections wait before reading (the bytes stay in the
//! kernel), as a Kafka broker mutes them.

use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The most a frame buffer holds before its bytes arrive.
const INITIAL_CAPACITY: usize = 64 * 1024;
/// A frame this small is read without the pool: at most one per connection, so the
/// connection cap bounds them, and Metadata, heartbeats and commits never wait behind
/// large produces.
const SMALL_FRAME: usize = 64 * 1024;
/// The pool counts kibibytes.
const UNIT: usize = 1024;

/// The bytes of request frames read and not yet handled, all connections together.
pub(crate) struct RequestPool {
    room: Arc<Semaphore>,
    units: u32,
}

/// A frame's room in the [`RequestPool`], given back on drop.
pub(crate) type PoolRoom = Option<OwnedSemaphorePermit>;

impl RequestPool {
    /// A pool of `bytes` (at least one frame of [`SMALL_FRAME`]).
    pub(crate) fn new(bytes: usize) -> Self {
        let units = u32::try_from((bytes.max(SMALL_FRAME) / UNIT).min(Semaphore::MAX_PERMITS))
            .unwrap_or(u32::MAX);
        RequestPool {
            room: Arc::new(Semaphore::new(units as usize)),
            units,
        }
    }

    /// Room for a frame of `len` bytes, waiting for it (a frame larger than the pool
    /// waits for all of it).
    async fn take(&self, len: usize) -> PoolRoom {
        if len <= SMALL_FRAME {
            return None;
        }
        let units = u32::try_from(len.div_ceil(UNIT))
            .unwrap_or(u32::MAX)
            .min(self.units);
        // The semaphore is never closed.
        self.room.clone().acquire_many_owned(units).await.ok()
    }
}

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

/// Reads one frame's body (without its size prefix), with its room in `pool`.
///
/// # Errors
/// [`FrameError`].
pub(crate) async fn read_frame<R: AsyncRead + Unpin>(
    reader: &mut R,
    limit: usize,
    pool: &RequestPool,
) -> Result<(Bytes, PoolRoom), FrameError> {
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
    let room = pool.take(len).await;
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
    Ok((body.freeze(), room))
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

/// An outgoing frame as the pieces that make it up, in order: encoded bytes, and between
/// them record batches shared with the read that found them rather than copied into the
/// frame. Written with vectored writes.
#[derive(Debug, Clone, Default)]
pub(crate) struct Frame {
    parts: Vec<Bytes>,
    len: usize,
}

impl Frame {
    /// A frame of these pieces, the first beginning with the size prefix.
    pub(crate) fn of(parts: Vec<Bytes>) -> Self {
        let len = parts.iter().map(Bytes::len).sum();
        Frame { parts, len }
    }

    /// Its size in bytes, prefix included.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Its pieces, in order.
    pub(crate) fn parts(&self) -> &[Bytes] {
        &self.parts
    }
}

impl From<Bytes> for Frame {
    fn from(bytes: Bytes) -> Self {
        Frame::of(vec![bytes])
    }
}

/// The most pieces one vectored write takes: well under the kernel's `IOV_MAX` (1024).
const MAX_SLICES: usize = 64;

/// Writes every byte of `parts`, in order, with as few vectored writes as the socket
/// takes.
async fn write_parts<W: AsyncWrite + Unpin>(
    writer: &mut W,
    parts: &[Bytes],
) -> std::io::Result<()> {
    if let [one] = parts {
        return writer.write_all(one).await;
    }
    // The next byte to write: piece `index`, from byte `offset` of it.
    let (mut index, mut offset) = (0, 0);
    while index < parts.len() {
        let mut slices = [std::io::IoSlice::new(&[]); MAX_SLICES];
        let mut count = 0;
        for (i, part) in parts[index..].iter().take(MAX_SLICES).enumerate() {
            let from = if i == 0 { offset } else { 0 };
            slices[count] = std::io::IoSlice::new(&part[from..]);
            count += 1;
        }
        let mut written = writer.write_vectored(&slices[..count]).await?;
        if written == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        while written > 0 && index < parts.len() {
            let left = parts[index].len() - offset;
            if written < left {
                offset += written;
                written = 0;
            } else {
                written -= left;
                index += 1;
                offset = 0;
            }
        }
        // Skips empty pieces, so that the loop ends once the last byte is written.
        while index < parts.len() && parts[index].len() == offset {
            index += 1;
            offset = 0;
        }
    }
    Ok(())
}

/// Writes a sealed frame (its pieces in order), within `limit`: a peer that stops reading its answers is not
/// waited for longer.
///
/// # Errors
/// The socket's failure; `TimedOut` past the limit.
pub(crate) async fn write_frame<W: AsyncWrite + Unpin>(
    writer: &mut W,
    parts: &[Bytes],
    limit: std::time::Duration,
) -> std::io::Result<()> {
    let write = async {
        write_parts(writer, parts).await?;
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
    async fn a_frame_of_many_pieces_arrives_whole_through_partial_writes() {
        // 150 pieces (past one vectored write's 64), some empty, through a pipe that
        // takes 7 bytes at a time.
        let parts: Vec<Bytes> = (0..150u32)
            .map(|i| Bytes::from(vec![u8::try_from(i % 251).unwrap(); (i % 5 * 13) as usize]))
            .collect();
        let expected: Vec<u8> = parts.iter().flat_map(|p| p.iter().copied()).collect();
        let frame = Frame::of(parts);
        assert_eq!(frame.len(), expected.len());
        let (mut client, mut server) = tokio::io::duplex(7);
        let reader = tokio::spawn(async move {
            let mut got = Vec::new();
            server.read_to_end(&mut got).await.unwrap();
            got
        });
        write_frame(
            &mut client,
            frame.parts(),
            std::time::Duration::from_secs(10),
        )
        .await
        .unwrap();
        drop(client);
        assert_eq!(reader.await.unwrap(), expected);
    }

    #[tokio::test]
    async fn large_frames_wait_for_room_in_the_pool_and_small_ones_do_not() {
        let pool = RequestPool::new(256 * 1024);
        let (mut client, mut server) = tokio::io::duplex(1 << 20);
        let big = vec![1u8; 200_000];
        for _ in 0..2 {
            client.write_all(&200_000i32.to_be_bytes()).await.unwrap();
            client.write_all(&big).await.unwrap();
        }
        let (_, held) = read_frame(&mut server, 1 << 20, &pool).await.unwrap();
        assert!(held.is_some());
        // The second large frame waits while the first is held.
        let second = tokio::time::timeout(
            std::time::Duration::from_millis(50),
            read_frame(&mut server, 1 << 20, &pool),
        )
        .await;
        assert!(second.is_err(), "a second large frame past the pool waits");
        // A small frame does not wait.
        let (mut client, mut small) = tokio::io::duplex(1024);
        client.write_all(&3i32.to_be_bytes()).await.unwrap();
        client.write_all(&[1, 2, 3]).await.unwrap();
        let (body, room) = read_frame(&mut small, 1 << 20, &pool).await.unwrap();
        assert_eq!(&body[..], &[1, 2, 3]);
        assert!(room.is_none());
        drop(held);
    }

    #[tokio::test]
    async fn frames_are_read_whole_refused_past_the_limit_and_cut_short_is_an_error() {
        let pool = RequestPool::new(64 << 20);
        let pool = &pool;
        let (mut client, mut server) = tokio::io::duplex(1 << 20);
        let body = vec![7u8; 200_000];
        client.write_all(&200_000i32.to_be_bytes()).await.unwrap();
        client.write_all(&body).await.unwrap();
        assert_eq!(
            &read_frame(&mut server, 1 << 20, pool).await.unwrap().0[..],
            &body[..]
        );
        // Past the limit, from the prefix alone.
        client.write_all(&(2i32 << 20).to_be_bytes()).await.unwrap();
        assert!(matches!(
            read_frame(&mut server, 1 << 20, pool).await,
            Err(FrameError::TooLarge { .. })
        ));
        // Cut short by the peer's close.
        let (mut client, mut server) = tokio::io::duplex(1024);
        client.write_all(&100i32.to_be_bytes()).await.unwrap();
        client.write_all(&[1, 2, 3]).await.unwrap();
        drop(client);
        assert!(matches!(
            read_frame(&mut server, 1 << 20, pool).await,
            Err(FrameError::Io(_))
        ));
        // Between frames, a close is just that.
        let (client, mut server) = tokio::io::duplex(1024);
        drop(client);
        assert!(matches!(
            read_frame(&mut server, 1 << 20, pool).await,
            Err(FrameError::Closed)
        ));
    }
}
