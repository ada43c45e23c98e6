// kafkajs reads what kafka-python wrote gzipped (scripts/clients/cross_codecs.py): the
// whole topic, then from offset 77, inside a batch, where it must hand over the records
// from 77 on. Its stock build reads gzip and uncompressed batches only.
// Usage: node cross.mjs KAFKA_ADDR
import kafkajs from "kafkajs";

const { Kafka, logLevel } = kafkajs;
const [bootstrap] = process.argv.slice(2);
const topic = "cross-gzip";
const COUNT = 200;
const MID = 77;

function check(cond, what) {
  if (!cond) throw new Error(what);
}

const value = (i) => `value-${i}-${"x".repeat(i % 40)}`;

async function readFrom(start) {
  const kafka = new Kafka({ clientId: "kafko-cross", brokers: [bootstrap], logLevel: logLevel.ERROR });
  const consumer = kafka.consumer({ groupId: `cross-kafkajs-${start}` });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const got = [];
  const done = new Promise((resolve) => {
    consumer.run({
      eachMessage: async ({ message }) => {
        got.push([Number(message.offset), message.value.toString()]);
        if (got.length >= COUNT - start) resolve();
      },
    });
  });
  if (start > 0) consumer.seek({ topic, partition: 0, offset: String(start) });
  const timeout = new Promise((_, reject) => setTimeout(() => reject(new Error(`timed out from ${start}`)), 30_000));
  await Promise.race([done, timeout]);
  await consumer.disconnect();
  return got;
}

for (const start of [0, MID]) {
  const got = await readFrom(start);
  check(got.length === COUNT - start, `from ${start}: ${got.length} records`);
  got.forEach(([offset, v], i) => {
    check(offset === start + i && v === value(start + i), `from ${start}: record ${i} is ${offset} ${v}`);
  });
}
console.log(`  ok  kafkajs reads ${topic} from the start and from offset ${MID}`);
