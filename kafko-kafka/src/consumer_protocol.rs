//! Reading the topic partitions out of a consumer-protocol assignment (Kafka's
//! `ConsumerProtocolAssignment`: a version, then `[topic [partition]]`, then user
//! data), for descriptions and lag only: the broker relays assignments unchanged; and
//! the topics of a subscription (`ConsumerProtocolSubscription`), for OffsetDelete.
//!
//! Only groups of protocol type `consumer` carry this layout (Schema Registry's `sr`
//! and Kafka Connect's `connect` groups carry their own), and the leader's bytes are
//! untrusted: no count read is believed beyond the bytes left to hold it, so the
//! decoded form is never larger than a small multiple of the bytes given.

/// Bytes a topic entry takes at least: a name's length and a partition count.
const MIN_TOPIC_BYTES: usize = 2 + 4;

/// The topic partitions `assignment` names, or nothing when it is not a well-formed
/// consumer-protocol assignment (negative partitions are left out).
pub(crate) fn assigned_partitions(assignment: &[u8]) -> Vec<(String, Vec<u32>)> {
    read(assignment).unwrap_or_default()
}

fn read(bytes: &[u8]) -> Option<Vec<(String, Vec<u32>)>> {
    let mut r = Reader(bytes);
    // Every version so far (0-3) starts with this layout, and later versions may only
    // add fields after it.
    if r.i16()? < 0 {
        return None;
    }
    let topics = r.count(MIN_TOPIC_BYTES)?;
    let mut out = Vec::with_capacity(topics);
    for _ in 0..topics {
        let name_len = usize::try_from(r.i16()?).ok()?;
        let name = std::str::from_utf8(r.take(name_len)?).ok()?.to_owned();
        let partitions = r.count(4)?;
        let mut ids = Vec::with_capacity(partitions);
        for _ in 0..partitions {
            if let Ok(p) = u32::try_from(r.i32()?) {
                ids.push(p);
            }
        }
        out.push((name, ids));
    }
    Some(out)
}

/// Whether a consumer-protocol subscription (a member's JoinGroup metadata: a version,
/// then `[topic]`, then user data) names `topic`; `None` when it is not a well-formed
/// one.
pub(crate) fn subscribes_to(subscription: &[u8], topic: &str) -> Option<bool> {
    let mut r = Reader(subscription);
    if r.i16()? < 0 {
        return None;
    }
    let topics = r.count(2)?;
    let mut found = false;
    for _ in 0..topics {
        let name_len = usize::try_from(r.i16()?).ok()?;
        found |= r.take(name_len)? == topic.as_bytes();
    }
    Some(found)
}

/// A cursor over untrusted bytes.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if n > self.0.len() {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }

    fn i16(&mut self) -> Option<i16> {
        self.take(2).map(|b| i16::from_be_bytes([b[0], b[1]]))
    }

    fn i32(&mut self) -> Option<i32> {
        self.take(4)
            .map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// An array's length, refused when the bytes left cannot hold that many entries of
    /// at least `min_entry` bytes each (a null array, -1, counts as empty).
    fn count(&mut self, min_entry: usize) -> Option<usize> {
        let n = self.i32()?;
        if n == -1 {
            return Some(0);
        }
        let n = usize::try_from(n).ok()?;
        (n <= self.0.len() / min_entry).then_some(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assignment(topics: &[(&str, &[i32])]) -> Vec<u8> {
        let mut out = 1i16.to_be_bytes().to_vec();
        out.extend(i32::try_from(topics.len()).unwrap().to_be_bytes());
        for (name, partitions) in topics {
            out.extend(i16::try_from(name.len()).unwrap().to_be_bytes());
            out.extend(name.as_bytes());
            out.extend(i32::try_from(partitions.len()).unwrap().to_be_bytes());
            for p in *partitions {
                out.extend(p.to_be_bytes());
            }
        }
        out.extend((-1i32).to_be_bytes());
        out
    }

    #[test]
    fn reads_the_topics_of_a_subscription() {
        // Version 1, topics "a" and "bb", no user data.
        let mut sub = vec![0, 1, 0, 0, 0, 2, 0, 1, b'a', 0, 2, b'b', b'b'];
        sub.extend_from_slice(&[0xff, 0xff, 0xff, 0xff]);
        assert_eq!(subscribes_to(&sub, "bb"), Some(true));
        assert_eq!(subscribes_to(&sub, "b"), Some(false));
        assert_eq!(subscribes_to(&[], "a"), None);
        // A count past the bytes left is no subscription.
        assert_eq!(subscribes_to(&[0, 1, 0x7f, 0, 0, 0], "a"), None);
    }

    #[test]
    fn reads_a_consumer_assignment() {
        let bytes = assignment(&[("a", &[0, 2]), ("b", &[1])]);
        assert_eq!(
            assigned_partitions(&bytes),
            vec![("a".to_owned(), vec![0, 2]), ("b".to_owned(), vec![1])]
        );
    }

    #[test]
    fn counts_beyond_the_bytes_left_and_other_layouts_read_as_nothing() {
        let mut hostile = 0i16.to_be_bytes().to_vec();
        hostile.extend(i32::MAX.to_be_bytes());
        assert!(assigned_partitions(&hostile).is_empty());
        let mut partitions = assignment(&[("a", &[0])]);
        // The partition count of topic "a" claims 2^31 - 1 entries.
        partitions[9..13].copy_from_slice(&i32::MAX.to_be_bytes());
        assert!(assigned_partitions(&partitions).is_empty());
        assert!(assigned_partitions(br#"{"version":1,"leader":"x"}"#).is_empty());
        assert!(assigned_partitions(b"").is_empty());
    }
}
