// kafkajs against kafko's Kafka listener: the flow of kafka_flow.py.
// Usage: node flow.mjs KAFKA_ADDR HTTP_URL
//
// kafkajs consumes only as a group member (it has no manual assignment): the records are
// compared field by field through /v1, and read through kafkajs by the group step (a
// group reads 500 and commits, a new consumer of the group resumes at the commit and
// reads the other 500; list and describe the group). Every other step (create, produce
// with the Java-compatible murmur2 partitioner, watermarks, ListOffsets by timestamp,
// the admin calls: createPartitions, deleteTopicRecords, resetOffsets, deleteGroups;
// the configs: describeConfigs and alterConfigs on a topic, read back through kafkajs and
// /v1 and taking effect on what the topic accepts, and the broker's configs; delete) goes
// through kafkajs.
import kafkajs from "kafkajs";

const { Kafka, CompressionTypes, ConfigResourceTypes, logLevel } = kafkajs;
const [bootstrap, httpUrl] = process.argv.slice(2);
const RECORDS = 1000;
const PARTITIONS = 3;
const BASE_TS = 1_700_000_000_000;
const topic = "flow-kafkajs";
// DescribeConfigs' config sources (Kafka's numbers).
const DYNAMIC_TOPIC_CONFIG = 1;
const DEFAULT_CONFIG = 5;

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

/** One keyed record of `size` value bytes: the error types on the way (none: written). */
async function produceOne(t, size) {
  // Quiet: kafkajs logs a refused produce at error level.
  const quiet = new Kafka({ clientId: "kafko-flow", brokers: [bootstrap], logLevel: logLevel.NOTHING });
  const producer = quiet.producer({ retry: { retries: 0 } });
  await producer.connect();
  try {
    await producer.send({ topic: t, acks: -1, messages: [{ key: "k", value: "v".repeat(size) }] });
    return [];
  } catch (e) {
    const types = [];
    const seen = new Set();
    for (let err = e; err && !seen.has(err); err = err.cause ?? err.originalError) {
      seen.add(err);
      if (err.type) types.push(err.type);
    }
    return types.length ? types : [String(e)];
  } finally {
    await producer.disconnect();
  }
}

/** describeConfigs of one resource: its entries by name. */
async function described(type, name) {
  const { resources: [r] } = await admin.describeConfigs({ includeSynonyms: false, resources: [{ type, name }] });
  check(r.errorCode === 0, `describeConfigs ${name}: error ${r.errorCode}`);
  return new Map(r.configEntries.map((e) => [e.configName, e]));
}

/** On a topic of its own: describeConfigs lists the topic configs (the defaults /v1 shows,
 * none read-only); alterConfigs sets retention.ms and max.message.bytes (described as set
 * on the topic, shown by /v1, and a record past the new max.message.bytes is refused); a
 * second alterConfigs setting retention.ms alone replaces the whole set (max.message.bytes
 * back to its default: the large record is taken again). The broker's configs are
 * described read-only. */
async function configs() {
  const t = `${topic}-configs`;
  check(await admin.createTopics({ topics: [{ topic: t, numPartitions: 1 }], waitForLeaders: true }),
    "createTopics answered false");
  const v1 = async () => (await http(`/v1/topics/${t}`)).config;
  const defaults = await v1();
  let d = await described(ConfigResourceTypes.TOPIC, t);
  for (const name of ["cleanup.policy", "retention.ms", "retention.bytes", "segment.bytes", "max.message.bytes",
    "min.insync.replicas", "compression.type", "message.timestamp.type"]) {
    check(d.has(name), `describeConfigs lacks ${name}`);
  }
  const readOnly = [...d.values()].filter((e) => e.readOnly).map((e) => e.configName);
  check(readOnly.length === 0, `topic configs described read-only: ${readOnly}`);
  const entry = (name) => { const e = d.get(name); return [e.configValue, e.configSource]; };
  const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
  check(same(entry("retention.ms"), [`${defaults.retention_ms}`, DEFAULT_CONFIG]),
    `retention.ms ${entry("retention.ms")}, /v1 ${defaults.retention_ms}`);
  check(same(entry("max.message.bytes"), [`${defaults.max_record_bytes}`, DEFAULT_CONFIG]),
    `max.message.bytes ${entry("max.message.bytes")}, /v1 ${defaults.max_record_bytes}`);
  check((await produceOne(t, 4000)).length === 0, "a 4000-byte record at the defaults");

  const alter = (entries) => admin.alterConfigs({
    validateOnly: false,
    resources: [{ type: ConfigResourceTypes.TOPIC, name: t, configEntries: entries }],
  });
  await alter([{ name: "retention.ms", value: "3600000" }, { name: "max.message.bytes", value: "2048" }]);
  d = await described(ConfigResourceTypes.TOPIC, t);
  check(same(entry("retention.ms"), ["3600000", DYNAMIC_TOPIC_CONFIG]), `retention.ms ${entry("retention.ms")}`);
  check(same(entry("max.message.bytes"), ["2048", DYNAMIC_TOPIC_CONFIG]),
    `max.message.bytes ${entry("max.message.bytes")}`);
  let shown = await v1();
  check(shown.retention_ms === 3600000 && shown.max_record_bytes === 2048, `/v1 after alterConfigs: ${JSON.stringify(shown)}`);
  const refused = await produceOne(t, 4000);
  check(refused.includes("MESSAGE_TOO_LARGE"), `a 4000-byte record past max.message.bytes 2048: ${refused}`);
  check((await produceOne(t, 100)).length === 0, "a 100-byte record within it");

  await alter([{ name: "retention.ms", value: "7200000" }]);
  d = await described(ConfigResourceTypes.TOPIC, t);
  check(same(entry("retention.ms"), ["7200000", DYNAMIC_TOPIC_CONFIG]), `retention.ms ${entry("retention.ms")}`);
  check(same(entry("max.message.bytes"), [`${defaults.max_record_bytes}`, DEFAULT_CONFIG]),
    `alterConfigs replaces the whole set: max.message.bytes ${entry("max.message.bytes")}`);
  shown = await v1();
  check(shown.retention_ms === 7200000 && shown.max_record_bytes === defaults.max_record_bytes,
    `/v1 after the second alterConfigs: ${JSON.stringify(shown)}`);
  check((await produceOne(t, 4000)).length === 0, "a 4000-byte record at the default again");

  const broker = await described(ConfigResourceTypes.BROKER, "0");
  for (const name of ["log.retention.ms", "num.partitions", "log.segment.bytes", "message.max.bytes"]) {
    check(broker.has(name) && broker.get(name).readOnly, `broker config ${name}: ${JSON.stringify(broker.get(name))}`);
  }
  check(broker.get("log.retention.ms").configValue === `${defaults.retention_ms}`,
    `log.retention.ms ${broker.get("log.retention.ms").configValue}`);
  await admin.deleteTopics({ topics: [t] });
}

const STEPS = [create, produce, readBack, watermarks, listOffsets, group, adminCalls, configs, remove];

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
