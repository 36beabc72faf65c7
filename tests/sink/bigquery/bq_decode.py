#!/usr/bin/env python3
"""bq_decode.py - decode an AppendRowsRequest with Google's own code.

The oracle of the BigQuery encoder tests: the request bytes cdcflow wrote
are parsed by google-cloud-bigquery-storage's AppendRowsRequest, the
writer schema it carries is loaded into a protobuf descriptor pool as a
proto2 file, and every serialized row is parsed with the message class that
pool makes (Google's protobuf runtime, not our decoder). Prints JSON lines:

  {"write_stream": ..., "has_schema": bool, "trace_id": ...}
  {"descriptor": [[name, number, label, type, type_name], ...], "nested": {...}}
  one line per row: the row as protobuf's JSON mapping (field names kept,
  int64 as strings), plus "_unknown": the count of unknown fields (must be 0)

Usage: bq_decode.py REQUEST_FILE [REQUEST_FILE...]   (later requests of one
stream carry no schema: the last one seen is used)
       bq_decode.py --get-write-stream FILE   a GetWriteStreamRequest: prints
       {"name": ..., "view": the WriteStreamView name, "_unknown": count}
"""
import json
import sys

from google.cloud.bigquery_storage_v1 import types
from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory
from google.protobuf import unknown_fields


def fields_of(d):
    return [[f.name, f.number, f.label, f.type, f.type_name] for f in d.field]


def get_write_stream(path):
    req = types.GetWriteStreamRequest.pb(types.GetWriteStreamRequest.deserialize(open(path, "rb").read()))
    print(json.dumps({"name": req.name, "view": types.WriteStreamView(req.view).name,
                      "_unknown": len(unknown_fields.UnknownFieldSet(req))}))


def main():
    if sys.argv[1:2] == ["--get-write-stream"]:
        return get_write_stream(sys.argv[2])
    cls = None
    for path in sys.argv[1:]:
        data = open(path, "rb").read()
        req = types.AppendRowsRequest.pb(types.AppendRowsRequest.deserialize(data))
        has_schema = req.proto_rows.HasField("writer_schema")
        print(json.dumps({"write_stream": req.write_stream, "has_schema": has_schema, "trace_id": req.trace_id}))
        if has_schema:
            d = req.proto_rows.writer_schema.proto_descriptor
            print(json.dumps({"descriptor": fields_of(d),
                              "nested": {n.name: fields_of(n) for n in d.nested_type}}))
            fdp = descriptor_pb2.FileDescriptorProto(name="writer.proto", syntax="proto2")
            fdp.message_type.add().CopyFrom(d)
            pool = descriptor_pool.DescriptorPool()
            pool.Add(fdp)
            cls = message_factory.GetMessageClass(pool.FindMessageTypeByName(d.name))
        if cls is None:
            sys.exit("no writer schema before the rows")
        for raw in req.proto_rows.rows.serialized_rows:
            m = cls()
            m.ParseFromString(raw)
            out = json_format.MessageToDict(m, preserving_proto_field_name=True)
            out["_unknown"] = len(unknown_fields.UnknownFieldSet(m))
            print(json.dumps(out, sort_keys=True))


if __name__ == "__main__":
    main()
