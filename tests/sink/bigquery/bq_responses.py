#!/usr/bin/env python3
"""bq_responses.py - AppendRowsResponse and WriteStream messages made by Google's own classes
(google-cloud-bigquery-storage), for the tests of our decoders.

Usage: bq_responses.py PREFIX   writes PREFIX.ok, .row_errors, .internal, .schema (AppendRowsResponse)
                                and PREFIX.ws_full, .ws_basic (WriteStream, GetWriteStream's answer)
"""
import sys

from google.cloud.bigquery_storage_v1 import types
from google.protobuf import any_pb2
from google.rpc import status_pb2


def main():
    prefix = sys.argv[1]
    R = types.AppendRowsResponse
    ok = R(append_result=R.AppendResult(offset=42),
           write_stream="projects/p/datasets/d/tables/t/streams/_default")
    bad = R(error=status_pb2.Status(code=3, message="rows are bad"),
            row_errors=[types.RowError(index=1, code=types.RowError.RowErrorCode.FIELDS_ERROR,
                                       message="Field qty: bad value"),
                        types.RowError(index=300, code=types.RowError.RowErrorCode.FIELDS_ERROR, message="x")])
    detail = any_pb2.Any()
    detail.Pack(types.StorageError.pb(types.StorageError(
        code=types.StorageError.StorageErrorCode.SCHEMA_MISMATCH_EXTRA_FIELDS, entity="t", error_message="extra")))
    internal = R(error=status_pb2.Status(code=13, message="backend error", details=[detail]))
    schema = R(append_result=R.AppendResult(),
               updated_schema=types.TableSchema(fields=[types.TableFieldSchema(
                   name="id", type_=types.TableFieldSchema.Type.INT64)]))
    for name, msg in [("ok", ok), ("row_errors", bad), ("internal", internal), ("schema", schema)]:
        with open(f"{prefix}.{name}", "wb") as f:
            f.write(R.serialize(msg))
    F = types.TableFieldSchema
    ws = types.WriteStream(
        name="projects/p/datasets/d/tables/t/streams/_default", type_=types.WriteStream.Type.COMMITTED,
        write_mode=types.WriteStream.WriteMode.INSERT, location="EU",
        table_schema=types.TableSchema(fields=[
            F(name="id", type_=F.Type.INT64, mode=F.Mode.REQUIRED),
            F(name="Addr", type_=F.Type.STRUCT, fields=[F(name="city", type_=F.Type.STRING)]),
            F(name="tags", type_=F.Type.STRING, mode=F.Mode.REPEATED, max_length=10)]))
    ws.create_time = "2024-01-02T03:04:05Z"
    basic = types.WriteStream(name="projects/p/datasets/d/tables/t/streams/_default",
                              type_=types.WriteStream.Type.COMMITTED)
    for name, msg in [("ws_full", ws), ("ws_basic", basic)]:
        with open(f"{prefix}.{name}", "wb") as f:
            f.write(types.WriteStream.serialize(msg))


if __name__ == "__main__":
    main()
