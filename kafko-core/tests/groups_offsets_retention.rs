//! Offsets retention (Kafka's `offsets.retention.minutes`): a group without live members
//! loses its committed offsets once their commit and its last member are older than the
//! retention, durably; a group with a live member (kafko's own or a Kafka client) keeps
//! them; commit times survive a restart (an offset committed ten days ago expires after
//! the reopen), and offsets from files written before commit times were kept count from
//! the open. `None` keeps offsets forever.
mod common;

use std::path::Path;
use std::time::Duration;

use kafko_core::{Kafko, PartitionOffset, TopicConfig};

async fn open(dir: &Path, retention: Option<Duration>) -> Kafko {
    Kafko::builder(dir)
        .retention_check_interval(Duration::from_secs(24 * 3600))
        .offsets_retention(retention)
        .open()
        .await
        .unwrap()
}

/// Topic → committed offsets of `group`, as OffsetFetch reads them.
fn committed(k: &Kafko, group: &str) -> Vec<(String, Vec<(u32, u64)>)> {
    let Ok(all) = k.group(group).unwrap().classic_committed() else {
        return Vec::new();
    };
    all.into_iter()
        .map(|(t, offsets)| (t, offsets.iter().map(|o| (o.partition, o.offset)).collect()))
        .collect()
}

async fn produce_one(k: &Kafko) {
    let p = k.producer_for("t").unwrap();
    p.send_record(common::rec(0)).await.unwrap();
}

async fn commit_first(k: &Kafko, group: &str) {
    let t = k.topic("t").unwrap();
    let offsets = [PartitionOffset {
        partition: 0,
        offset: 1,
    }];
    k.group(group)
        .unwrap()
        .commit(&t, None, Some(&offsets))
        .await
        .unwrap();
}

#[tokio::test]
async fn offsets_of_groups_without_members_expire_durably_and_members_keep_theirs() {
    let dir = tempfile::tempdir().unwrap();
    let k = open(dir.path(), Some(Duration::ZERO)).await;
    k.create_topic_with_config("t", TopicConfig::default())
        .await
        .unwrap();
    produce_one(&k).await;
    commit_first(&k, "alone").await;
    // A group with a live member of kafko's own keeps its offsets.
    let with_member = k.group("with-member").unwrap();
    let member = with_member
        .join(&k.topic("t").unwrap(), Some("m"), Duration::from_secs(60))
        .unwrap();
    with_member
        .commit(
            &k.topic("t").unwrap(),
            Some(&member.member_ref()),
            Some(&[PartitionOffset {
                partition: 0,
                offset: 1,
            }]),
        )
        .await
        .unwrap();

    assert_eq!(k.expire_group_offsets().await.unwrap(), 1);
    assert_eq!(committed(&k, "alone"), []);
    assert!(!dir.path().join("groups/alone/t.offsets").exists());
    assert_eq!(committed(&k, "with-member"), [("t".into(), vec![(0, 1)])]);
    // The member leaves: its group's offsets go at the next pass.
    with_member.leave("m").await.unwrap();
    assert_eq!(k.expire_group_offsets().await.unwrap(), 1);
    assert_eq!(committed(&k, "with-member"), []);
    drop(with_member);
    k.shutdown().await.unwrap();
    let k = open(dir.path(), None).await;
    assert_eq!(committed(&k, "alone"), []);
    assert_eq!(committed(&k, "with-member"), []);
}

#[tokio::test]
async fn commit_times_survive_a_restart_and_older_files_count_from_the_open() {
    let dir = tempfile::tempdir().unwrap();
    let k = open(dir.path(), None).await;
    k.create_topic_with_config("t", TopicConfig::default())
        .await
        .unwrap();
    produce_one(&k).await;
    commit_first(&k, "kept").await;
    k.shutdown().await.unwrap();
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let ten_days_ago = now_ms - 10 * 24 * 3600 * 1000;
    let groups = dir.path().join("groups");
    std::fs::create_dir_all(groups.join("old")).unwrap();
    std::fs::create_dir_all(groups.join("v1")).unwrap();
    let old = format!(
        r#"{{"version":2,"topic":"t","offsets":{{"0":0}},"committed_at":{{"0":{ten_days_ago}}}}}"#
    );
    std::fs::write(groups.join("old/t.offsets"), common::state_file(&old)).unwrap();
    let v1 = r#"{"version":1,"topic":"t","offsets":{"0":0}}"#;
    std::fs::write(groups.join("v1/t.offsets"), common::state_file(v1)).unwrap();

    // The default retention, 7 days: only the offset committed ten days ago goes.
    let k = open(dir.path(), Some(kafko_core::DEFAULT_OFFSETS_RETENTION)).await;
    assert_eq!(k.expire_group_offsets().await.unwrap(), 1);
    assert_eq!(committed(&k, "old"), []);
    assert_eq!(committed(&k, "v1"), [("t".into(), vec![(0, 0)])]);
    assert_eq!(committed(&k, "kept"), [("t".into(), vec![(0, 1)])]);
    k.shutdown().await.unwrap();

    // Without retention nothing ever goes.
    let k = open(dir.path(), None).await;
    assert_eq!(k.expire_group_offsets().await.unwrap(), 0);
    assert_eq!(committed(&k, "kept"), [("t".into(), vec![(0, 1)])]);
}
