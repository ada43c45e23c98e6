// kafkajs with @kafkajs/confluent-schema-registry against kafko's schema registry and
// Kafka listener: register Avro, JSON Schema and Protobuf schemas, encode records with
// them, produce and consume them with kafkajs, decode what was consumed by the schema id
// it carries; evolve the Avro schema under BACKWARD (a field with a default is a new
// version and id, a field without one is refused with 409); basic auth with the token as
// the password against a server run with --auth-token.
// Usage: node flow.mjs REGISTRY_URL KAFKA_ADDR [AUTH_REGISTRY_URL TOKEN]
import kafkajs from "kafkajs";
import registryLib from "@kafkajs/confluent-schema-registry";

const { Kafka, logLevel } = kafkajs;
const { SchemaRegistry, SchemaType } = registryLib;
const [registryUrl, bootstrap, authUrl, token] = process.argv.slice(2);

const kafka = new Kafka({ clientId: "kafko-registry-js", brokers: [bootstrap], logLevel: logLevel.ERROR });
const registry = new SchemaRegistry({ host: registryUrl });

function check(cond, what, detail) {
  if (!cond) throw new Error(`${what}${detail === undefined ? "" : `: ${JSON.stringify(detail)}`}`);
}

/** Produces the encoded values to a new topic and consumes them back in a group. */
async function roundTrip(topic, values) {
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic, numPartitions: 1 }], waitForLeaders: true });
  await admin.disconnect();
  const producer = kafka.producer();
  await producer.connect();
  await producer.send({ topic, messages: values.map((value) => ({ value })) });
  await producer.disconnect();

  const consumer = kafka.consumer({ groupId: `g-${topic}` });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const seen = [];
  const deadline = Date.now() + 60_000;
  await new Promise((resolve, reject) => {
    const timer = setInterval(() => {
      if (seen.length >= values.length) {
        clearInterval(timer);
        resolve();
      } else if (Date.now() > deadline) {
        clearInterval(timer);
        reject(new Error(`${topic}: ${seen.length} of ${values.length} records in 60 s`));
      }
    }, 50);
    consumer.run({ eachMessage: async ({ message }) => void seen.push(message.value) }).catch(reject);
  });
  await consumer.disconnect();
  return seen;
}

/** The schema id a record carries: Confluent's wire format, magic byte 0 then the id. */
function schemaIdOf(buffer) {
  check(buffer[0] === 0, "magic byte", buffer[0]);
  return buffer.readInt32BE(1);
}

async function avro() {
  const subject = "js-orders-value";
  const v1 = {
    type: "record",
    name: "Order",
    namespace: "kafko.js",
    fields: [
      { name: "id", type: "string" },
      { name: "qty", type: "int" },
    ],
  };
  const { id } = await registry.register(
    { type: SchemaType.AVRO, schema: JSON.stringify(v1) },
    { subject },
  );
  check((await registry.getLatestSchemaId(subject)) === id, "latest id of the subject");
  const orders = [0, 1, 2].map((i) => ({ id: `o-${i}`, qty: i * 10 }));
  const encoded = await Promise.all(orders.map((o) => registry.encode(id, o)));
  const consumed = await roundTrip("js-orders", encoded);
  check(consumed.every((b) => schemaIdOf(b) === id), "ids carried by the records");
  const decoded = await Promise.all(consumed.map((b) => fresh().decode(b)));
  check(JSON.stringify(decoded) === JSON.stringify(orders), "avro records decoded", decoded);

  // A field with a default reads the old records: a new version with a new id.
  const v2 = { ...v1, fields: [...v1.fields, { name: "note", type: "string", default: "" }] };
  const second = await registry.register({ type: SchemaType.AVRO, schema: JSON.stringify(v2) }, { subject });
  check(second.id !== id, "the evolved schema has an id of its own", second);
  check((await registry.getRegistryId(subject, 2)) === second.id, "version 2's id");
  const note = await fresh().decode(await registry.encode(second.id, { id: "o-9", qty: 1, note: "n" }));
  check(note.note === "n", "a v2 record decoded", note);

  // A field without a default cannot read them: refused with 409.
  const v3 = { ...v1, fields: [...v1.fields, { name: "shop", type: "string" }] };
  let refused;
  try {
    await registry.register({ type: SchemaType.AVRO, schema: JSON.stringify(v3) }, { subject });
  } catch (e) {
    refused = e;
  }
  check(refused?.status === 409, "an incompatible schema refused with 409", refused?.message);
  console.log("kafkajs registry: avro register, encode, produce, consume, decode, evolution and 409 ok");
}

async function jsonSchema() {
  const schema = {
    $schema: "http://json-schema.org/draft-07/schema#",
    type: "object",
    properties: { name: { type: "string" }, age: { type: "integer" } },
    required: ["name"],
  };
  const { id } = await registry.register(
    { type: SchemaType.JSON, schema: JSON.stringify(schema) },
    { subject: "js-people-value" },
  );
  const people = [{ name: "ada", age: 36 }, { name: "alan" }];
  const consumed = await roundTrip("js-people", await Promise.all(people.map((p) => registry.encode(id, p))));
  const decoded = await Promise.all(consumed.map((b) => fresh().decode(b)));
  check(JSON.stringify(decoded) === JSON.stringify(people), "json records decoded", decoded);
  console.log("kafkajs registry: json schema register, encode, produce, consume, decode ok");
}

async function protobuf() {
  const schema = `syntax = "proto3";
package kafko.js;
message Reading {
  string sensor = 1;
  double value = 2;
  repeated string tags = 3;
}`;
  const { id } = await registry.register(
    { type: SchemaType.PROTOBUF, schema },
    { subject: "js-readings-value" },
  );
  const fetched = await fresh().getSchema(id);
  check(fetched !== undefined, "the protobuf schema read back by id");
  const readings = [
    { sensor: "s1", value: 1.5, tags: ["a"] },
    { sensor: "s2", value: -2, tags: [] },
  ];
  const consumed = await roundTrip("js-readings", await Promise.all(readings.map((r) => registry.encode(id, r))));
  const decoded = await Promise.all(consumed.map(async (b) => (await fresh().decode(b)).toJSON()));
  const expected = readings.map((r) => (r.tags.length ? r : { sensor: r.sensor, value: r.value }));
  check(JSON.stringify(decoded) === JSON.stringify(expected), "protobuf records decoded", decoded);
  console.log("kafkajs registry: protobuf register, encode, produce, consume, decode ok");
}

/** A client with an empty cache, so a decode fetches the schema by id from kafko. */
function fresh() {
  return new SchemaRegistry({ host: registryUrl });
}

async function auth() {
  const authed = new SchemaRegistry({ host: authUrl, auth: { username: "any", password: token } });
  const { id } = await authed.register(
    {
      type: SchemaType.AVRO,
      schema: JSON.stringify({ type: "record", name: "Greeting", fields: [{ name: "text", type: "string" }] }),
    },
    { subject: "js-auth-value" },
  );
  const greeting = await authed.decode(await authed.encode(id, { text: "hello" }));
  check(greeting.text === "hello", "decode with basic auth", greeting);
  let refused;
  try {
    await new SchemaRegistry({ host: authUrl, auth: { username: "any", password: "wrong" } }).getSchema(id);
  } catch (e) {
    refused = e;
  }
  check(refused?.status === 401, "a wrong token refused with 401", refused?.message);
  console.log("kafkajs registry: basic auth with the token ok");
}

await avro();
await jsonSchema();
await protobuf();
if (authUrl) await auth();
