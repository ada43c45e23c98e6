// Kafka transactions with kafkajs against kafko's Kafka listener: a transaction across
// two topics committed, one aborted, one committed again; consume-transform-produce with
// sendOffsets (the group's offset moves only on commit); a zombie producer fenced by a
// newer one with the same transactionalId; a transaction left open past its
// transactionTimeout aborted by the server (run it with a short
// --transaction-abort-check-interval-ms). read_committed and read_uncommitted consumers
// (kafkajs consumes in groups only) are counted record by record against the exact
// sets expected.
// Usage: node transactions.mjs BOOTSTRAP
import { randomUUID } from "node:crypto";
import kafkajs from "kafkajs";

const { Kafka, logLevel } = kafkajs;
const [bootstrap] = process.argv.slice(2);
const END = "end";
const run = `txn-kafkajs-${randomUUID().slice(0, 8)}`;

const kafka = new Kafka({
  clientId: "kafko-transactions",
  brokers: [bootstrap],
  logLevel: logLevel.NOTHING,
  retry: { retries: 20, initialRetryTime: 100, maxRetryTime: 1000 },
});
const admin = kafka.admin();
await admin.connect();

function check(ok, what) {
  if (!ok) throw new Error(`FAIL ${what}`);
}
const ok = (what) => console.log(`  ok  ${what}`);
const values = (prefix, from, to) =>
  Array.from({ length: to - from }, (_, i) => `${prefix}${from + i}`);
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

async function create(...topics) {
  await admin.createTopics({ topics: topics.map((topic) => ({ topic, numPartitions: 1 })) });
}

async function txnProducer(transactionalId, transactionTimeout = 60000) {
  const p = kafka.producer({ transactionalId, idempotent: true, maxInFlightRequests: 1,
    transactionTimeout });
  await p.connect();
  return p;
}

async function plainSend(topic, vals) {
  const p = kafka.producer();
  await p.connect();
  await p.send({ topic, acks: -1, messages: vals.map((value) => ({ value })) });
  await p.disconnect();
}

// Every value of `topic` up to the END record, in order, as `readUncommitted` says.
async function read(topic, readUncommitted, deadlineMs = 30000) {
  const c = kafka.consumer({ groupId: `r-${randomUUID()}`, readUncommitted });
  await c.connect();
  await c.subscribe({ topic, fromBeginning: true });
  const got = [];
  let done;
  const finished = new Promise((resolve) => (done = resolve));
  await c.run({
    autoCommit: false,
    eachMessage: async ({ message }) => {
      const v = message.value.toString();
      if (v === END) done();
      else got.push(v);
    },
  });
  const timer = new Promise((_, reject) =>
    setTimeout(() => reject(new Error(`FAIL ${topic}: no end record; read ${got}`)), deadlineMs));
  try {
    await Promise.race([finished, timer]);
  } finally {
    await c.disconnect();
  }
  return got;
}

async function committed(groupId, topic) {
  const [t] = await admin.fetchOffsets({ groupId, topics: [topic] });
  return Number(t.partitions[0].offset);
}

async function commitAndAbort() {
  const [a, b] = [`${run}-a`, `${run}-b`];
  await create(a, b);
  const p = await txnProducer(`${run}-tx`);
  let t = await p.transaction();
  await t.send({ topic: a, messages: values("a", 0, 10).map((value) => ({ value })) });
  await t.send({ topic: b, messages: values("b", 0, 10).map((value) => ({ value })) });
  await t.commit();
  t = await p.transaction();
  await t.send({ topic: a, messages: values("a", 10, 15).map((value) => ({ value })) });
  await t.send({ topic: b, messages: values("b", 10, 15).map((value) => ({ value })) });
  await t.abort();
  t = await p.transaction();
  await t.send({ topic: a, messages: values("a", 15, 18).map((value) => ({ value })) });
  await t.commit();
  await p.disconnect();
  await plainSend(a, [END]);
  await plainSend(b, [END]);
  let got = await read(a, false);
  check(same(got, [...values("a", 0, 10), ...values("a", 15, 18)]), `${a} read_committed: ${got}`);
  got = await read(b, false);
  check(same(got, values("b", 0, 10)), `${b} read_committed: ${got}`);
  got = await read(a, true);
  check(same(got, values("a", 0, 18)), `${a} read_uncommitted: ${got}`);
  got = await read(b, true);
  check(same(got, values("b", 0, 15)), `${b} read_uncommitted: ${got}`);
  ok("commit, abort, commit across two topics: read_committed 13 + 10, read_uncommitted 18 + 15");
}

// Reads `count` records of `src` in `group`, writes them upper-cased to `dst` in one
// transaction with the group's offset, and commits or aborts it.
async function transform(group, src, dst, p, count, commit) {
  const c = kafka.consumer({ groupId: group, readUncommitted: false });
  await c.connect();
  await c.subscribe({ topic: src, fromBeginning: true });
  const t = await p.transaction();
  let seen = 0;
  let last = -1;
  let done;
  const finished = new Promise((resolve) => (done = resolve));
  await c.run({
    autoCommit: false,
    eachMessage: async ({ message }) => {
      if (seen >= count) return;
      await t.send({ topic: dst, messages: [{ value: message.value.toString().toUpperCase() }] });
      last = Number(message.offset);
      seen += 1;
      if (seen === count) done();
    },
  });
  await Promise.race([
    finished,
    new Promise((_, reject) => setTimeout(() => reject(new Error(`FAIL read ${seen} of ${count}`)), 60000)),
  ]);
  await c.disconnect();
  await t.sendOffsets({
    consumerGroupId: group,
    topics: [{ topic: src, partitions: [{ partition: 0, offset: String(last + 1) }] }],
  });
  if (commit) await t.commit();
  else await t.abort();
}

async function consumeTransformProduce() {
  const [src, dst, group] = [`${run}-src`, `${run}-dst`, `${run}-ctp`];
  await create(src, dst);
  await plainSend(src, values("s", 0, 10));
  const p = await txnProducer(`${run}-ctp-tx`);
  await transform(group, src, dst, p, 10, true);
  check((await committed(group, src)) === 10, "the group's offset moved with the commit");
  await plainSend(src, values("s", 10, 15));
  await transform(group, src, dst, p, 5, false);
  check((await committed(group, src)) === 10, "the group's offset stays on an abort");
  await transform(group, src, dst, p, 5, true);
  check((await committed(group, src)) === 15, "the group's offset moved with the commit");
  await p.disconnect();
  await plainSend(dst, [END]);
  let got = await read(dst, false);
  check(same(got, values("S", 0, 15)), `${dst} read_committed: ${got}`);
  got = await read(dst, true);
  check(same(got, [...values("S", 0, 10), ...values("S", 10, 15), ...values("S", 10, 15)]),
    `${dst} read_uncommitted: ${got}`);
  ok("consume-transform-produce: offsets commit with the transaction, not on abort");
}

async function zombieFencing() {
  const [topic, tid] = [`${run}-zombie`, `${run}-zombie-tx`];
  await create(topic);
  const zombie = await txnProducer(tid);
  const zt = await zombie.transaction();
  await zt.send({ topic, messages: [{ value: "zombie-1" }] });
  // kafkajs initializes the transactional id when the first transaction begins: that
  // fences the zombie.
  const fresh = await txnProducer(tid);
  const ft = await fresh.transaction();
  let error;
  try {
    await zt.send({ topic, messages: [{ value: "zombie-2" }] });
    await zt.commit();
  } catch (e) {
    error = e;
  }
  check(error !== undefined, "the zombie committed");
  check(/fenced|epoch/i.test(`${error.type} ${error.message}`), `the zombie's error: ${error}`);
  await zombie.disconnect();
  await ft.send({ topic, messages: [{ value: "fresh" }] });
  await ft.commit();
  await fresh.disconnect();
  await plainSend(topic, [END]);
  let got = await read(topic, false);
  check(same(got, ["fresh"]), `${topic} read_committed: ${got}`);
  got = await read(topic, true);
  check(got.includes("zombie-1") && got.at(-1) === "fresh" && !got.slice(0, -1).includes("fresh"),
    `${topic} read_uncommitted: ${got}`);
  ok(`a second producer with the same transactionalId fences the first (${error.type})`);
}

async function timeoutAbort() {
  const topic = `${run}-slow`;
  await create(topic);
  const slow = await txnProducer(`${run}-slow-tx`, 2000);
  const t = await slow.transaction();
  await t.send({ topic, messages: [{ value: "left-open" }] });
  // After the open transaction: read_committed reaches it only once the server aborted
  // the transaction and the last stable offset moved past it.
  await plainSend(topic, ["after", END]);
  const t0 = Date.now();
  let got = await read(topic, false, 60000);
  check(same(got, ["after"]), `${topic} read_committed: ${got}`);
  got = await read(topic, true);
  check(same(got, ["left-open", "after"]), `${topic} read_uncommitted: ${got}`);
  let error;
  try {
    await t.commit();
  } catch (e) {
    error = e;
  }
  check(error !== undefined, "a transaction aborted by its timeout committed");
  await slow.disconnect();
  ok(`a transaction open past transactionTimeout is aborted (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
}

console.log("--- transactions: kafkajs");
try {
  await commitAndAbort();
  await consumeTransformProduce();
  await zombieFencing();
  await timeoutAbort();
} finally {
  await admin.disconnect();
}
