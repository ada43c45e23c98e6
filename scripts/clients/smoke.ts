// A client from openapi-typescript + openapi-fetch, generated from openapi/openapi.json
// and used unedited, driving a running server: create a topic, produce a JSON batch,
// fetch, poll a group, commit, describe, and errors typed as Problems; then the schema
// registry: register a schema, read it by id and as its subject's latest version, and a
// registry error typed as its {error_code, message}. Type-checked with `tsc --strict`,
// then run with node. Exits non-zero on the first surprise.
// Usage: node generated/out/smoke.js <base URL>
import createClient from "openapi-fetch";
import type { components, paths } from "./generated/kafko.js";

type Problem = components["schemas"]["Problem"];
type RegistryErrorBody = components["schemas"]["RegistryErrorBody"];

// JSON bodies and problems; the streams (NDJSON, SSE) are other media types.
const client = createClient<paths, "application/json" | "application/problem+json">({
  baseUrl: process.argv[2],
});
// The schema registry answers in its own media type.
const registry = createClient<paths, "application/vnd.schemaregistry.v1+json">({
  baseUrl: process.argv[2],
});

function check(ok: boolean, what: string, detail?: unknown): asserts ok {
  if (!ok) {
    console.error(`typescript client: ${what}`, JSON.stringify(detail));
    process.exit(1);
  }
}

const topic = "ts-smoke";
const group = "ts-smoke-group";

// Create: the default call (no body) and one with a typed config.
const plain = await client.PUT("/v1/topics/{topic}", { params: { path: { topic: "ts-smoke-defaults" } } });
check(plain.response.status === 201, "create without a body", plain.error);
const created = await client.PUT("/v1/topics/{topic}", {
  params: { path: { topic } },
  body: { partitions: 2, fsync: { mode: "interval_ms", interval_ms: 50 } },
});
check(created.data !== undefined, "create", created.error);
check(created.data.partitions.length === 2, "partitions", created.data);

// Produce a JSON batch to partition 0.
const produced = await client.POST("/v1/topics/{topic}/records", {
  params: { path: { topic } },
  body: { records: [0, 1, 2].map((i) => ({ key: `k${i}`, value: `v${i}`, partition: 0 })) },
});
check(produced.response.status === 201, "produce", produced.error);

// Fetch them back: the JSON 200 is one type.
const fetched = await client.GET("/v1/topics/{topic}/records", {
  params: { path: { topic }, query: { partition: 0, offset: "earliest" } },
});
check(fetched.data !== undefined, "fetch", fetched.error);
const values: unknown[] = fetched.data.records.map((r) => r.value);
check(JSON.stringify(values) === JSON.stringify(["v0", "v1", "v2"]), "fetched values", values);
check(fetched.data.high_watermark === 3, "high watermark", fetched.data);

// Poll as a group, commit what the poll returned, describe the group.
const polled = await client.POST("/v1/groups/{group}/topics/{topic}/poll", {
  params: { path: { group, topic } },
});
check(polled.data !== undefined, "poll", polled.error);
check(polled.data.records.length === 3, "polled records", polled.data);
const committed = await client.PUT("/v1/groups/{group}/topics/{topic}/offsets", {
  params: { path: { group, topic } },
  body: { offsets: polled.data.positions },
});
check(committed.data !== undefined, "commit", committed.error);
const described = await client.GET("/v1/groups/{group}", { params: { path: { group } } });
check(described.data !== undefined, "describe group", described.error);
const partition0 = described.data.topics[0]?.partitions.find((p) => p.partition === 0);
check(partition0?.committed === 3, "committed offset", described.data);

// Errors are Problems, with their typed members.
const missing = await client.GET("/v1/topics/{topic}", { params: { path: { topic: "ts-smoke-missing" } } });
const notFound: Problem | undefined = missing.error;
check(notFound?.status === 404 && notFound.code === "topic_not_found", "missing topic", missing.error);
const beyond = await client.GET("/v1/topics/{topic}/records", {
  params: { path: { topic }, query: { partition: 0, offset: "99" } },
});
const range: Problem | undefined = beyond.error;
check(range?.code === "offset_out_of_range", "fetch past the end", beyond.error);
const end: number | undefined = range.high_watermark;
check(end === 3 && range.log_start_offset === 0, "problem members", range);

const deleted = await client.DELETE("/v1/topics/{topic}", { params: { path: { topic: "ts-smoke-defaults" } } });
check(deleted.response.status === 204, "delete", deleted.error);
console.log("typescript client: create, produce, fetch, poll, commit, describe and problems ok");

// The schema registry: register, read by id and as the latest version, an error.
const subject = "ts-smoke-value";
const avro = '{"type":"record","name":"Smoke","fields":[{"name":"id","type":"string"}]}';
const registered = await registry.POST("/subjects/{subject}/versions", {
  params: { path: { subject } },
  body: { schema: avro },
});
check(registered.data !== undefined, "register", registered.error);
const id: number = registered.data.id;
const byId = await registry.GET("/schemas/ids/{id}", { params: { path: { id } } });
check(byId.data?.schema === avro, "schema by id", byId);
const latest = await registry.GET("/subjects/{subject}/versions/{version}", {
  params: { path: { subject, version: "latest" } },
});
check(latest.data !== undefined, "latest version", latest.error);
check(latest.data.version === 1 && latest.data.id === id, "latest version", latest.data);
const absent = await registry.GET("/subjects/{subject}/versions/{version}", {
  params: { path: { subject: "ts-smoke-missing", version: "1" } },
});
const registryError: RegistryErrorBody | undefined = absent.error;
check(registryError?.error_code === 40401, "missing subject", absent.error);
console.log("typescript client: schema registry register, read by id and version, errors ok");
