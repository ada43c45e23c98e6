// kafkajs on compressed topics (scripts/clients/cross_codecs.py). kafkajs reads gzip
// only in its stock build; an lz4 codec is registered here over lz4js (LZ4 frames, as
// Kafka's lz4 batches are).
//   node cross.mjs KAFKA_ADDR read TOPIC   the whole topic, then from offset 77, inside a
//                                           batch, where it must hand over 77 on
//   node cross.mjs KAFKA_ADDR write TOPIC  200 records, lz4, in sends of 50 (a batch each)
import kafkajs from "kafkajs";
import lz4 from "lz4js";

const { Kafka, logLevel, CompressionTypes, CompressionCodecs } = kafkajs;
const [bootstrap, mode, topic] = process.argv.slice(2);
const COUNT = 200;
const MID = 77;
const SEND = 50;

CompressionCodecs[CompressionTypes.LZ4] = () => ({
  compress: async (encoder) => Buffer.from(lz4.compress(encoder.buffer)),
  decompress: async (buffer) => Buffer.from(lz4.decompress(buffer)),
});

function check(cond, what) {
  if (!cond) throw new Error(what);
}

const value = (i) => `value-${i}-${"x".repeat(i % 40)}`;
const kafka = new Kafka({ clientId: "kafko-cross", brokers: [bootstrap], logLevel: logLevel.ERROR });

async function readFrom(start) {
  const consumer = kafka.consumer({ groupId: `cross-kafkajs-${topic}-${start}` });
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

async function write() {
  const producer = kafka.producer();
  await producer.connect();
  for (let from = 0; from < COUNT; from += SEND) {
    const messages = [];
    for (let i = from; i < from + SEND; i++) messages.push({ key: `k${i}`, value: value(i), partition: 0 });
    await producer.send({ topic, compression: CompressionTypes.LZ4, messages });
  }
  await producer.disconnect();
}

if (mode === "write") {
  await write();
} else {
  for (const start of [0, MID]) {
    const got = await readFrom(start);
    check(got.length === COUNT - start, `from ${start}: ${got.length} records`);
    got.forEach(([offset, v], i) => {
      check(offset === start + i && v === value(start + i), `from ${start}: record ${i} is ${offset} ${v}`);
    });
  }
  console.log(`  ok  kafkajs reads ${topic} from the start and from offset ${MID}`);
}
