// kafkajs's idempotent producer writing numbered records until told to stop, for the
// SIGKILL loop (scripts/clients/idempotent_kills.py). Record n has the value "n" and the
// key "n % 30"; sends of 50 records, one at a time (kafkajs' idempotent producer allows
// one request in flight). Once the file STOP exists it writes OUT:
// {"acked": [n…], "failed": ["why"…]} (a send that failed after its retries: neither
// acknowledged nor sent again).
// Usage: node idempotent.mjs BOOTSTRAP TOPIC OUT STOP
import { existsSync, writeFileSync } from "node:fs";
import kafkajs from "kafkajs";

const { Kafka, logLevel } = kafkajs;
const [bootstrap, topic, out, stop] = process.argv.slice(2);
const SEND = 50;

const kafka = new Kafka({
  clientId: "kafko-idempotent",
  brokers: [bootstrap],
  logLevel: logLevel.NOTHING,
  retry: { retries: 1000, initialRetryTime: 50, maxRetryTime: 500 },
});
const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
const acked = [];
const failed = [];
await producer.connect();
let n = 0;
while (!existsSync(stop)) {
  const numbers = Array.from({ length: SEND }, (_, i) => n + i);
  n += SEND;
  try {
    await producer.send({
      topic,
      acks: -1,
      messages: numbers.map((i) => ({ key: String(i % 30), value: String(i) })),
    });
    acked.push(...numbers);
  } catch (e) {
    failed.push(String(e));
  }
  await new Promise((resolve) => setTimeout(resolve, 10));
}
await producer.disconnect();
writeFileSync(out, JSON.stringify({ acked, failed }));
