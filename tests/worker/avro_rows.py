#!/usr/bin/env python3
"""avro_rows.py - write the rows of stop_lib.sh's json_rows in Avro, with an outside
writer: confluent-kafka's Producer and AvroSerializer (Confluent's wire format, schemas
registered in the registry), so that cdcflow's Avro converter reads bytes it did not write.

  avro_rows.py BOOTSTRAP REGISTRY_URL TOPIC N

Key {id: int}, value {id: int, name: string}: ids 1..N named nI, then ids 1..N/2
renamed uI (one partition: the topic is created by the broker on first use).
"""
import sys

from confluent_kafka import Producer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

KEY = '{"type":"record","name":"Key","namespace":"stoptest","fields":[{"name":"id","type":"int"}]}'
VALUE = ('{"type":"record","name":"Value","namespace":"stoptest","fields":[{"name":"id","type":"int"},'
         '{"name":"name","type":"string"}]}')


def main():
    bootstrap, registry, topic, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    # a request the registry never answers is asked again (the client's
    # max.retries), not waited for forever: once, right after the spare
    # registry's restart, one hung a CI run for 15 minutes (timeout: None
    # is confluent-kafka's default)
    sr = SchemaRegistryClient({"url": registry, "timeout": 10})
    ks = AvroSerializer(schema_registry_client=sr, schema_str=KEY)
    vs = AvroSerializer(schema_registry_client=sr, schema_str=VALUE)
    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    rows = [(i, f"n{i}") for i in range(1, n + 1)] + [(i, f"u{i}") for i in range(1, n // 2 + 1)]
    for i, name in rows:
        p.produce(topic, key=ks({"id": i}, SerializationContext(topic, MessageField.KEY)),
                  value=vs({"id": i, "name": name}, SerializationContext(topic, MessageField.VALUE)))
        p.poll(0)
    left = p.flush(30)
    if left:
        print(f"avro_rows: {left} records not delivered", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
