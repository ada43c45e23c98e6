"""confluent-kafka's schema-registry serializers against kafko's registry and Kafka
listener: Avro produce and consume, evolution under BACKWARD (an old record read with
the new reader schema), an incompatible change refused with 409, evolution under each
of the seven levels (the serializer registers what the level allows and refuses the
rest with 409; the transitive levels alone refuse a schema compatible with the latest
version only), JSON Schema and Protobuf produce and consume (Protobuf evolution and a
refused change too), the client's admin calls, and basic auth with the token as
password.

Usage: schema_registry_flow.py REGISTRY_URL KAFKA_BOOTSTRAP [AUTH_REGISTRY_URL TOKEN]
"""

import json
import sys
import time

from confluent_kafka import Consumer, Producer
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

REGISTRY, KAFKA = sys.argv[1], sys.argv[2]

V1 = json.dumps({"type": "record", "name": "Payment", "namespace": "shop", "fields": [
    {"name": "id", "type": "string"},
    {"name": "amount", "type": "double"},
]})
V2 = json.dumps({"type": "record", "name": "Payment", "namespace": "shop", "fields": [
    {"name": "id", "type": "string"},
    {"name": "amount", "type": "double"},
    {"name": "currency", "type": "string", "default": "EUR"},
]})
# A field without a default: the new schema cannot read records written with V2.
V3 = json.dumps({"type": "record", "name": "Payment", "namespace": "shop", "fields": [
    {"name": "id", "type": "string"},
    {"name": "amount", "type": "double"},
    {"name": "currency", "type": "string", "default": "EUR"},
    {"name": "merchant", "type": "string"},
]})
ORDER = json.dumps({
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "Order", "type": "object",
    "properties": {"id": {"type": "integer"}, "item": {"type": "string"}},
    "required": ["id", "item"],
})


def evo(*fields):
    """An Avro record shop.Evo with `fields` (name, type[, default])."""
    return json.dumps({"type": "record", "name": "Evo", "namespace": "shop", "fields": [
        {"name": f[0], "type": f[1], **({"default": f[2]} if len(f) > 2 else {})} for f in fields]})


# S2 drops a field that has a default (compatible with S1 both ways); S3 brings it back
# as a string (compatible with S2 both ways, with S1 in neither).
S1 = evo(("id", "string"), ("b", "int", 0))
S2 = evo(("id", "string"))
S3 = evo(("id", "string"), ("b", "string", ""))
# A field added without a default (new readers cannot read S2 records), and the field
# S2 readers need removed (S2 readers cannot read the new records).
NOT_BACKWARD = evo(("id", "string"), ("c", "string"))
NOT_FORWARD = evo(("n", "int", 0))
LEVELS = ["BACKWARD", "FORWARD", "FULL", "NONE",
          "BACKWARD_TRANSITIVE", "FORWARD_TRANSITIVE", "FULL_TRANSITIVE"]


def serialized(sr, topic, schema, value):
    """The record as the serializer writes it with `schema`, or None when the registry
    refuses the schema with a 409."""
    try:
        return AvroSerializer(sr, schema)(value, SerializationContext(topic, MessageField.VALUE))
    except Exception as e:  # the serializer wraps the registry's error
        if "409" not in str(e) and "incompatible" not in str(e).lower():
            raise
        return None


def evolution_under_each_level(sr):
    """Under each level, the serializer writes S1 then S2, then tries S3, NOT_BACKWARD
    and NOT_FORWARD (in that order, each checked against what was accepted before):
    the level accepts and refuses each as it should, and every record written reads
    back by its schema id."""
    for level in LEVELS:
        topic = f"evo-{level.lower()}"
        sr.set_compatibility(subject_name=f"{topic}-value", level=level)
        backward = level.startswith(("BACKWARD", "FULL"))
        forward = level.startswith(("FORWARD", "FULL"))
        transitive = level.endswith("_TRANSITIVE")
        tries = [
            ("S1", S1, {"id": "a", "b": 1}, False),
            ("S2 (a field with a default removed)", S2, {"id": "b"}, False),
            ("S3 (compatible with the latest version only)", S3, {"id": "c", "b": "s"}, transitive),
            ("a field added without a default", NOT_BACKWARD, {"id": "x", "c": "y"}, backward),
            ("a field without a default removed", NOT_FORWARD, {"n": 1}, forward),
        ]
        p = Producer({"bootstrap.servers": KAFKA})
        written = []
        for what, schema, value, refuse in tries:
            record = serialized(sr, topic, schema, value)
            check((record is None) == refuse, f"{level}: {what} {'refused' if refuse else 'accepted'}")
            if record is not None:
                p.produce(topic, value=record)
                written.append(value)
        check(p.flush(30) == 0, f"{level}: {len(written)} records produced")
        check(consume(topic, AvroDeserializer(sr), len(written)) == written,
              f"{level}: every record decodes by its schema id")
        check(len(sr.get_versions(f"{topic}-value")) == len(written),
              f"{level}: one version per accepted schema")


def order_class(fields):
    """A generated-code-free Protobuf message class shop.Order with `fields`
    (name, number, type)."""
    F = descriptor_pb2.FieldDescriptorProto
    fdp = descriptor_pb2.FileDescriptorProto(name="shop/order.proto", package="shop", syntax="proto3")
    m = fdp.message_type.add(name="Order")
    for name, number, ty in fields:
        m.field.add(name=name, number=number, type=ty, label=F.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("shop.Order"))


def check(cond, what):
    if not cond:
        raise SystemExit(f"FAILED: {what}")
    print(f"  ok  {what}")


def produce(topic, serializer, values):
    p = Producer({"bootstrap.servers": KAFKA})
    for v in values:
        ctx = SerializationContext(topic, MessageField.VALUE)
        p.produce(topic, value=serializer(v, ctx))
    check(p.flush(30) == 0, f"{len(values)} records produced to {topic}")


def consume(topic, deserializer, count):
    c = Consumer({"bootstrap.servers": KAFKA, "group.id": f"g-{topic}-{time.time()}",
                  "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    out, deadline = [], time.time() + 60
    while len(out) < count and time.time() < deadline:
        m = c.poll(1)
        if m is None or m.error() is not None:
            continue
        out.append(deserializer(m.value(), SerializationContext(topic, MessageField.VALUE)))
    c.close()
    check(len(out) == count, f"{count} records consumed from {topic}")
    return out


def main():
    sr = SchemaRegistryClient({"url": REGISTRY})
    subject = "payments-value"

    # Avro: the serializer registers V1, the deserializer fetches it by id.
    ser1 = AvroSerializer(sr, V1)
    produce("payments", ser1, [{"id": f"p{i}", "amount": i * 1.5} for i in range(3)])
    got = consume("payments", AvroDeserializer(sr), 3)
    check(got[2] == {"id": "p2", "amount": 3.0}, "Avro records decode by their schema id")
    v1 = sr.get_latest_version(subject)
    check(v1.version == 1, "the serializer registered version 1")

    # Evolution under BACKWARD: V2 adds a field with a default.
    sr.set_compatibility(subject_name=subject, level="BACKWARD")
    check(sr.get_compatibility(subject) == "BACKWARD", "the subject's level is BACKWARD")
    check(sr.test_compatibility(subject, Schema(V2, "AVRO")), "V2 is compatible")
    ser2 = AvroSerializer(sr, V2)
    produce("payments", ser2, [{"id": "p3", "amount": 9.0, "currency": "USD"}])
    reader = AvroDeserializer(sr, V2)
    got = consume("payments", reader, 4)
    check(got[0] == {"id": "p0", "amount": 0.0, "currency": "EUR"},
          "a V1 record read with the V2 reader gets the default")
    check(got[3]["currency"] == "USD", "the V2 record keeps its field")
    check(sr.get_versions(subject) == [1, 2], "versions 1 and 2")
    # (get_latest_version is cached by the client: ask for the version itself)
    v2 = sr.get_version(subject, 2)
    check(v2.schema_id != v1.schema_id, "V2 has its own id")

    # An incompatible change is refused with 409.
    check(not sr.test_compatibility(subject, Schema(V3, "AVRO")), "V3 is incompatible")
    try:
        sr.register_schema(subject, Schema(V3, "AVRO"))
        raise SystemExit("FAILED: V3 was registered")
    except SchemaRegistryError as e:
        check(e.http_status_code == 409 and e.error_code == 409, f"V3 refused with 409: {e}")
    try:
        AvroSerializer(sr, V3)({"id": "x", "amount": 1.0, "merchant": "m"},
                               SerializationContext("payments", MessageField.VALUE))
        raise SystemExit("FAILED: the serializer registered V3")
    except Exception as e:  # the serializer wraps the registry's error
        check("409" in str(e) or "incompatible" in str(e).lower(),
              "the serializer refuses to produce with V3")

    # Registering V1 again returns its id; looking it up finds version 1.
    check(sr.register_schema(subject, Schema(V1, "AVRO")) == v1.schema_id, "V1 keeps its id")
    found = sr.lookup_schema(subject, Schema(V1, "AVRO"))
    check(found.version == 1 and found.schema_id == v1.schema_id, "lookup finds version 1")

    evolution_under_each_level(sr)

    # JSON Schema.
    jser = JSONSerializer(ORDER, sr)
    produce("orders-json", jser, [{"id": 1, "item": "book"}, {"id": 2, "item": "pen"}])
    got = consume("orders-json", JSONDeserializer(ORDER), 2)
    check(got[1] == {"id": 2, "item": "pen"}, "JSON Schema records decode")
    js = sr.get_latest_version("orders-json-value")
    check(js.schema.schema_type == "JSON", "the JSON schema is stored with its type")
    try:
        jser({"id": "not a number", "item": "x"},
             SerializationContext("orders-json", MessageField.VALUE))
        raise SystemExit("FAILED: an invalid JSON record was serialized")
    except Exception:
        check(True, "an invalid JSON record is refused by its schema")

    # Protobuf (the client registers a base64 FileDescriptorProto).
    F = descriptor_pb2.FieldDescriptorProto
    conf = {"use.deprecated.format": False}
    order1 = order_class([("id", 1, F.TYPE_STRING), ("qty", 2, F.TYPE_INT32)])
    produce("orders-proto", ProtobufSerializer(order1, sr, conf),
            [order1(id="a", qty=1), order1(id="b", qty=2)])
    got = consume("orders-proto", ProtobufDeserializer(order1, conf, sr), 2)
    check((got[1].id, got[1].qty) == ("b", 2), "Protobuf records decode")
    check(sr.get_latest_version("orders-proto-value").schema.schema_type == "PROTOBUF",
          "the Protobuf schema is stored with its type")
    order2 = order_class([("id", 1, F.TYPE_STRING), ("qty", 2, F.TYPE_INT64),
                          ("note", 3, F.TYPE_STRING)])
    produce("orders-proto", ProtobufSerializer(order2, sr, conf), [order2(id="c", qty=3, note="n")])
    got = consume("orders-proto", ProtobufDeserializer(order2, conf, sr), 3)
    check(got[0].note == "" and got[2].note == "n", "Protobuf evolution: a field added, int32 widened")
    check(sr.get_versions("orders-proto-value") == [1, 2], "Protobuf versions 1 and 2")
    order3 = order_class([("id", 1, F.TYPE_STRING), ("qty", 2, F.TYPE_STRING)])
    try:
        ProtobufSerializer(order3, sr, conf)(order3(id="d", qty="x"),
                                             SerializationContext("orders-proto", MessageField.VALUE))
        raise SystemExit("FAILED: a Protobuf field changed to another wire type was registered")
    except Exception as e:
        check("409" in str(e) or "incompatible" in str(e).lower(),
              "a Protobuf field retyped from int to string is refused")
    sr.delete_subject("orders-proto-value")

    # Admin calls.
    evo_subjects = {f"evo-{level.lower()}-value" for level in LEVELS}
    check(set(sr.get_subjects()) == {"payments-value", "orders-json-value"} | evo_subjects,
          "the subjects")
    check(sr.delete_subject("orders-json-value") == [1], "soft delete of a subject")
    check(set(sr.get_subjects()) == {"payments-value"} | evo_subjects, "the deleted subject is hidden")
    check(sr.delete_subject("orders-json-value", permanent=True) == [1], "permanent delete")

    if len(sys.argv) > 4:
        url, token = sys.argv[3], sys.argv[4]
        authed = SchemaRegistryClient({"url": url, "basic.auth.user.info": f"any:{token}"})
        sid = authed.register_schema("auth-value", Schema('"string"', "AVRO"))
        check(sid >= 1, "basic auth with the token as password registers")
        try:
            SchemaRegistryClient({"url": url, "basic.auth.user.info": "any:wrong"}).get_subjects()
            raise SystemExit("FAILED: a wrong password was let in")
        except SchemaRegistryError as e:
            check(e.http_status_code == 401, "a wrong password is refused with 401")
    print("schema registry flow: all checks passed")


if __name__ == "__main__":
    main()
