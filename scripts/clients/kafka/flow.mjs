// kafkajs against kafko's Kafka listener: the flow of kafka_flow.py.
// Usage: node flow.mjs KAFKA_ADDR HTTP_URL
//
// kafkajs consumes only as a group member (it has no manual assignment): the records are
// compared field by field through /v1, and read through kafkajs by the group step (a
// group reads 500 and commits, a new consumer of the group resumes at the commit and
// reads the other 500; list and describe the group). Every other step (create, produce
// with the Java-compatible murmur2 partitioner, watermarks, ListOffsets by timestamp,
// the admin calls: createPartitions, deleteTopicRecords, resetOffsets, deleteGroups;
// delete) goes through kafkajs.
import kafkajs from "kafkajs";

const { Kafka, CompressionTypes, logLevel } = kafkajs;
const [bootstrap, httpUrl] = process.argv.slice(2);
const RECORDS = 1000;
const PARTITIONS = 3;
const BASE_TS = 1_700_000_000_000;
const topic = "flow-kafkajs";

const kafka = new Kafka({ clientId: "kafko-flow", brokers: [bootstrap], logLevel: logLevel.ERROR });
const admin = kafka.admin();

function check(cond, what) {
  if (!cond) throw new Error(what);
}

async function http(path, method = "GET", body) {
  const r = await fetch(`${httpUrl}${path}`, {
    method,
    headers: { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (r.status === 404) return null;
  check(r.ok, `${method} ${path}: ${r.status}`);
  const text = await r.text();
  return text ? JSON.parse(text) : null;
}

/** Where kafko's /v1 routes each key (a scratch topic of the same partition count). */
async function expectedPartitions() {
  const scratch = `${topic}-routes`;
  await http(`/v1/topics/${scratch}`, "PUT", { partitions: PARTITIONS });
  const records = Array.from({ length: RECORDS }, (_, i) => ({ key: `key-${i}`, value: "" }));
  const out = await http(`/v1/topics/${scratch}/records?answer=records`, "POST", { records });
  await http(`/v1/topics/${scratch}`, "DELETE");
  return new Map(out.offsets.map((o, i) => [`key-${i}`, o.partition]));
}

async function create() {
  check(await admin.createTopics({ topics: [{ topic, numPartitions: PARTITIONS }], waitForLeaders: true }),
    "createTopics answered false");
  const d = await http(`/v1/topics/${topic}`);
  check(d.config.partitions === PARTITIONS, `partitions ${d.config.partitions}`);
}

async function produce() {
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  const messages = Array.from({ length: RECORDS }, (_, i) => ({
    key: `key-${i}`,
    value: `value-${i}`,
    headers: { seq: `${i}`, dup: ["a", "b"] },
    timestamp: `${BASE_TS + i}`,
  }));
  const sent = await producer.send({ topic, messages, compression: CompressionTypes.GZIP });
  await producer.disconnect();
  check(sent.every((m) => m.errorCode === 0), "produce errors");
}

async function readBack() {
  const want = await expectedPartitions();
  let seen = 0;
  for (let p = 0; p < PARTITIONS; p++) {
    const b = await http(`/v1/topics/${topic}/records?partition=${p}&offset=0&max_records=${RECORDS}`);
    for (const r of b.records) {
      const i = Number(r.key.slice(4));
      check(want.get(r.key) === p, `${r.key} on partition ${p}, kafko routes it to ${want.get(r.key)}`);
      check(r.value === `value-${i}`, `value of ${r.key}`);
      check(r.timestamp === BASE_TS + i, `timestamp of ${r.key}`);
      const headers = JSON.stringify(r.headers);
      check(headers === JSON.stringify([{ name: "seq", value: `${i}` }, { name: "dup", value: "a" }, { name: "dup", value: "b" }]),
        `headers of ${r.key}: ${headers}`);
      seen++;
    }
  }
  check(seen === RECORDS, `read ${seen}`);
}

async function watermarks() {
  const offsets = await admin.fetchTopicOffsets(topic);
  check(offsets.length === PARTITIONS, "partitions");
  check(offsets.every((o) => o.low === "0"), "low watermarks");
  const total = offsets.reduce((n, o) => n + Number(o.high), 0);
  check(total === RECORDS, `high watermarks sum to ${total}`);
}

async function listOffsets() {
  const first = await admin.fetchTopicOffsetsByTimestamp(topic, BASE_TS);
  check(first.every((o) => o.offset === "0"), `by timestamp, the first: ${JSON.stringify(first)}`);
  const want = await expectedPartitions();
  const middle = 500;
  const p = want.get(`key-${middle}`);
  let before = 0;
  for (let i = 0; i < middle; i++) if (want.get(`key-${i}`) === p) before++;
  const found = await admin.fetchTopicOffsetsByTimestamp(topic, BASE_TS + middle);
  const got = found.find((o) => o.partition === p).offset;
  check(got === `${before}`, `timestamp of record ${middle} → ${got}, want ${before}`);
}

async function remove() {
  await admin.deleteTopics({ topics: [topic] });
  check((await http(`/v1/topics/${topic}`)) === null, "the topic is still there");
}

/** Reads `count` records as a member of `groupId`, committing each one read; the keys. */
async function groupRead(groupId, count) {
  const consumer = kafka.consumer({ groupId });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const keys = [];
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`group read ${keys.length} of ${count}`)), 60_000);
    consumer.run({
      autoCommit: false,
      eachMessage: async ({ partition, message }) => {
        if (keys.length >= count) return;
        keys.push(message.key.toString());
        const next = (BigInt(message.offset) + 1n).toString();
        await consumer.commitOffsets([{ topic, partition, offset: next }]);
        if (keys.length === count) {
          clearTimeout(timer);
          resolve();
        }
      },
    }).catch(reject);
  });
  await consumer.disconnect();
  return keys;
}

async function group() {
  const groupId = `${topic}-group`;
  const first = await groupRead(groupId, RECORDS / 2);
  const d = await http(`/v1/groups/${groupId}`);
  const committed = d.topics[0].partitions.reduce((n, p) => n + (p.committed ?? 0), 0);
  check(committed === RECORDS / 2, `/v1 shows ${committed} committed`);
  const second = await groupRead(groupId, RECORDS / 2);
  const all = new Set([...first, ...second]);
  check(all.size === RECORDS, `${all.size} distinct keys: the second resumed at the commit`);
  const listed = (await admin.listGroups()).groups.map((g) => g.groupId);
  check(listed.includes(groupId), `${groupId} listed: ${listed}`);
  const [described] = (await admin.describeGroups([groupId])).groups;
  check(described.state === "Empty" && described.members.length === 0,
    `described: ${described.state}, ${described.members.length} members`);
}

/** CreatePartitions to 4, DeleteRecords below 10 on partition 0, resetOffsets to the
 * earliest (kafkajs commits the logical offset −2), then the group's delete. */
async function adminCalls() {
  const groupId = `${topic}-group`;
  check(await admin.createPartitions({ topicPartitions: [{ topic, count: PARTITIONS + 1 }] }) === undefined,
    "createPartitions");
  let d = await http(`/v1/topics/${topic}`);
  check(d.partitions.length === PARTITIONS + 1, `partitions ${d.partitions.length}`);
  await admin.deleteTopicRecords({ topic, partitions: [{ partition: 0, offset: "10" }] });
  d = await http(`/v1/topics/${topic}`);
  const starts = d.partitions.map((p) => p.log_start_offset);
  check(JSON.stringify(starts) === "[10,0,0,0]", `/v1 log starts ${starts}`);
  const offsets = await admin.fetchTopicOffsets(topic);
  check(offsets.find((o) => o.partition === 0).low === "10", `low watermarks ${JSON.stringify(offsets)}`);
  await admin.resetOffsets({ groupId, topic, earliest: true });
  const fetched = await admin.fetchOffsets({ groupId, topics: [topic] });
  const reset = fetched[0].partitions.map((p) => [p.partition, p.offset]).sort((a, b) => a[0] - b[0]);
  check(JSON.stringify(reset) === JSON.stringify([[0, "10"], [1, "0"], [2, "0"], [3, "0"]]),
    `offsets after resetOffsets(earliest): ${JSON.stringify(reset)}`);
  await admin.deleteGroups([groupId]);
  check((await http(`/v1/groups/${groupId}`)) === null, "the group is still there");
}

const STEPS = [create, produce, readBack, watermarks, listOffsets, group, adminCalls, remove];

console.log("--- kafkajs");
await admin.connect();
try {
  for (const step of STEPS) {
    const t0 = Date.now();
    await step();
    console.log(`  ok  ${step.name} (${((Date.now() - t0) / 1000).toFixed(2)} s)`);
  }
} finally {
  await admin.disconnect();
}
