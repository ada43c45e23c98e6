"""A consumer group (kafka-python, subscribed: it joins and syncs) that reads a
one-partition topic up to an offset and commits there, leaving the rest as its lag.
Usage: burrow_group.py BOOTSTRAP TOPIC GROUP OFFSET"""

import sys
import time

from kafka import KafkaConsumer, TopicPartition
from kafka.structs import OffsetAndMetadata

bootstrap, topic, group, upto = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
consumer = KafkaConsumer(
    topic,
    bootstrap_servers=bootstrap,
    group_id=group,
    enable_auto_commit=False,
    auto_offset_reset="earliest",
    max_poll_records=upto,
)
tp = TopicPartition(topic, 0)
read = 0
deadline = time.monotonic() + 60
while read < upto:
    if time.monotonic() > deadline:
        sys.exit(f"read {read} of {upto} records in 60 s")
    for records in consumer.poll(timeout_ms=200, max_records=upto - read).values():
        read += len(records)
consumer.commit({tp: OffsetAndMetadata(upto, "", -1)})
committed = consumer.committed(tp)
if committed != upto:
    sys.exit(f"committed {committed}, not {upto}")
consumer.close()
print(f"group {group} committed {upto}")
