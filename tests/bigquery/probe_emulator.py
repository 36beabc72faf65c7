#!/usr/bin/env python3
"""probe_emulator.py - asks a running goccy/bigquery-emulator (scripts/bigquery-emulator start)
what it supports of what cdcflow's BigQuery target needs, with Google's own clients
(google-cloud-bigquery for REST, BigQueryWriteClient for the Storage Write API over gRPC),
and prints one line per probe: 'yes'/'no'/'error' and what was seen. The findings are written
down in tests/bigquery/README.md; this script is how to check them again for a new version.

  probe_emulator.py [--check] http://127.0.0.1:19850 127.0.0.1:19860 [project] [dataset]

Without --check it is not a test (exit 0 unless the emulator cannot be reached): the emulator
is not BigQuery, and where it differs that is the finding. With --check (the CTest
integration test test_it_bq_emulator.sh) it exits 1 unless what cdcflow's emulator tests
rely on works: REQUIRED below.
"""

import json
import secrets
import sys

import grpc
import requests
from google.auth.credentials import AnonymousCredentials
from google.cloud import bigquery
from google.cloud.bigquery_storage_v1 import BigQueryWriteClient, types
from google.cloud.bigquery_storage_v1.services.big_query_write.transports import BigQueryWriteGrpcTransport
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

FD = descriptor_pb2.FieldDescriptorProto
REQUIRED = ("tables.insert", "tables.get", "  tableConstraints.primaryKey kept", "GetWriteStream _default FULL",
            "AppendRows plain rows (no _CHANGE_TYPE)")
VERDICTS = {}
# No retries, a deadline: after some failed appends the emulator's GetWriteStream hangs
# (README.md), and that must show as a failed probe, not as a test that never ends.
BOUNDED = {"retry": None, "timeout": 30}


def say(probe, verdict, seen):
    VERDICTS[probe] = verdict
    print("%-44s %-5s %s" % (probe, verdict, str(seen).replace("\n", " ")[:300]), flush=True)


def main():
    args = sys.argv[1:]
    check = args[:1] == ["--check"]
    args = args[1:] if check else args
    http, grpc_addr = args[0], args[1]
    project = args[2] if len(args) > 2 else "cdcflow-test"
    dataset = args[3] if len(args) > 3 else "ds"
    run = secrets.token_hex(4)   # the emulator is shared: tables of this run only
    cdc, wt = "probe_cdc_" + run, "probe_w_" + run
    base = "%s/bigquery/v2/projects/%s" % (http, project)
    c = bigquery.Client(project=project, credentials=AnonymousCredentials(), client_options={"api_endpoint": http})
    requests.get(base + "/datasets/" + dataset, timeout=10).raise_for_status()

    fields = [{"name": "id", "type": "INT64", "mode": "REQUIRED"}, {"name": "name", "type": "STRING"}]
    body = {"tableReference": {"projectId": project, "datasetId": dataset, "tableId": cdc},
            "schema": {"fields": fields}, "tableConstraints": {"primaryKey": {"columns": ["id"]}},
            "clustering": {"fields": ["id"]}, "maxStaleness": "0-0 0 0:15:0"}
    requests.delete(base + "/datasets/%s/tables/%s" % (dataset, cdc), timeout=10)
    r = requests.post(base + "/datasets/%s/tables" % dataset, json=body, timeout=10)
    say("tables.insert", "yes" if r.ok else "no", r.status_code)
    got = requests.get(base + "/datasets/%s/tables/%s" % (dataset, cdc), timeout=10).json()
    say("tables.get", "yes" if got.get("schema") else "no", list(got))
    say("  tableConstraints.primaryKey kept", "yes" if got.get("tableConstraints") else "no",
        got.get("tableConstraints"))
    say("  clustering kept", "yes" if got.get("clustering") else "no", got.get("clustering"))
    say("  maxStaleness kept", "yes" if got.get("maxStaleness") else "no", got.get("maxStaleness"))
    say("  etag", "yes" if got.get("etag") else "no", got.get("etag"))
    r = requests.post(base + "/datasets/%s/tables" % dataset, json=body, timeout=10)
    say("tables.insert again -> 409", "yes" if r.status_code == 409 else "no", r.status_code)
    patch = {"schema": {"fields": fields + [{"name": "dept", "type": "STRING"}]}}
    r = requests.patch(base + "/datasets/%s/tables/%s" % (dataset, cdc), json=patch, timeout=10)
    say("tables.patch add column", "yes" if r.ok and len(r.json()["schema"]["fields"]) == 3 else "no",
        r.status_code)
    r = requests.patch(base + "/datasets/%s/tables/%s" % (dataset, cdc), json=patch, headers={"If-Match": "stale"},
                       timeout=10)
    say("tables.patch stale If-Match -> 412", "yes" if r.status_code == 412 else "no", r.status_code)
    bad = {"schema": {"fields": [{"name": "id", "type": "STRING"}]}}
    r = requests.patch(base + "/datasets/%s/tables/%s" % (dataset, cdc), json=bad, timeout=10)
    say("tables.patch refuses type change/drop", "yes" if r.status_code == 400 else "no", r.status_code)
    requests.patch(base + "/datasets/%s/tables/%s" % (dataset, cdc), json=patch, timeout=10)
    for sql in ("ALTER TABLE `%s.%s.%s` SET OPTIONS (max_staleness = INTERVAL 10 MINUTE)" % (project, dataset, cdc),
                "ALTER TABLE `%s.%s.%s` ADD PRIMARY KEY (id) NOT ENFORCED" % (project, dataset, cdc)):
        try:
            c.query(sql).result()
            say("DDL " + sql.split("`")[2].strip()[:34], "yes", "ran")
        except Exception as e:
            say("DDL " + sql.split("`")[2].strip()[:34], "no", e)
    got = requests.get(base + "/datasets/%s/tables/%s" % (dataset, cdc), timeout=10).json()
    say("  DDL changed maxStaleness to 10 minutes", "yes" if got.get("maxStaleness") == "0-0 0 0:10:0" else "no",
        got.get("maxStaleness"))

    # Storage Write API, on a table of its own that no REST patch touched (a patched table's
    # new columns are not in the emulator's storage: its writes fail, probed last)
    wbody = dict(body, tableReference={"projectId": project, "datasetId": dataset, "tableId": wt})
    requests.delete(base + "/datasets/%s/tables/%s" % (dataset, wt), timeout=10)
    requests.post(base + "/datasets/%s/tables" % dataset, json=wbody, timeout=10).raise_for_status()
    w = BigQueryWriteClient(transport=BigQueryWriteGrpcTransport(channel=grpc.insecure_channel(grpc_addr)))
    stream = "projects/%s/datasets/%s/tables/%s/streams/_default" % (project, dataset, wt)
    try:
        ws = w.get_write_stream(request={"name": stream, "view": types.WriteStreamView.FULL}, **BOUNDED)
        say("GetWriteStream _default FULL", "yes", "type=%s fields=%s" % (ws.type_.name,
                                                                      [f.name for f in ws.table_schema.fields]))
    except Exception as e:
        say("GetWriteStream _default FULL", "no", e)
    dp = descriptor_pb2.DescriptorProto(name="Row")
    for i, (n, t) in enumerate((("id", FD.TYPE_INT64), ("name", FD.TYPE_STRING), ("_CHANGE_TYPE", FD.TYPE_STRING),
                                ("_CHANGE_SEQUENCE_NUMBER", FD.TYPE_STRING)), 1):
        dp.field.add(name=n, number=i, type=t, label=FD.LABEL_OPTIONAL)
    fdp = descriptor_pb2.FileDescriptorProto(name="probe.proto", syntax="proto2")
    fdp.message_type.add().CopyFrom(dp)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    cls = message_factory.GetMessageClass(pool.FindMessageTypeByName("Row"))

    def req(rows, schema=True):
        r = types.AppendRowsRequest(write_stream=stream)
        pd = types.AppendRowsRequest.ProtoData()
        if schema:
            pd.writer_schema = types.ProtoSchema(proto_descriptor=dp)
        pd.rows = types.ProtoRows(serialized_rows=[cls(**x).SerializeToString() for x in rows])
        r.proto_rows = pd
        return r

    def rows_now():
        d = requests.get(base + "/datasets/%s/tables/%s/data" % (dataset, wt), timeout=10).json()
        return [[c.get("v") for c in r["f"]] for r in d.get("rows", [])]

    def appendrows(probe, reqs):
        try:
            out = list(w.append_rows(requests=iter(reqs), timeout=60))
            errs = [(r.error.code, r.error.message) for r in out if r._pb.HasField("error")]
            return out, errs
        except Exception as e:
            say(probe, "error", "%s: %s" % (type(e).__name__, e))
            return None, None

    out, errs = appendrows("AppendRows plain rows", [req([{"id": 1, "name": "a"}])])
    if out is not None:
        say("AppendRows plain rows (no _CHANGE_TYPE)", "yes" if not errs and rows_now() else "no",
            "errors=%s rows=%s" % (errs, rows_now()))
    out, errs = appendrows("AppendRows UPSERT same key", [req([{"id": 2, "name": "v1", "_CHANGE_TYPE": "UPSERT",
                                                                "_CHANGE_SEQUENCE_NUMBER": "1"}]),
                                                          req([{"id": 2, "name": "v2", "_CHANGE_TYPE": "UPSERT",
                                                                "_CHANGE_SEQUENCE_NUMBER": "2"}], schema=False)])
    if out is not None:
        n = [r for r in rows_now() if r[0] == "2"]
        say("  UPSERT replaces by primary key", "yes" if len(n) == 1 and n[0][1] == "v2" else "no",
            "errors=%s rows for id 2: %s" % (errs, n))
    out, errs = appendrows("AppendRows DELETE", [req([{"id": 2, "_CHANGE_TYPE": "DELETE",
                                                       "_CHANGE_SEQUENCE_NUMBER": "3"}])])
    if out is not None:
        n = [r for r in rows_now() if r[0] == "2"]
        say("  DELETE removes by primary key", "yes" if not n else "no", "errors=%s rows for id 2: %s" % (errs, n))
    out, errs = appendrows("AppendRows older sequence number", [req([{"id": 3, "name": "new", "_CHANGE_TYPE": "UPSERT",
                                                                     "_CHANGE_SEQUENCE_NUMBER": "9"}]),
                                                                req([{"id": 3, "name": "old", "_CHANGE_TYPE": "UPSERT",
                                                                      "_CHANGE_SEQUENCE_NUMBER": "1"}], schema=False)])
    if out is not None:
        n = [r for r in rows_now() if r[0] == "3"]
        say("  older _CHANGE_SEQUENCE_NUMBER ignored", "yes" if n == [["3", "new", None]] else "no",
            "rows for id 3: %s" % n)
    out, errs = appendrows("AppendRows malformed sequence number", [req([{"id": 4, "_CHANGE_TYPE": "UPSERT",
                                                                          "_CHANGE_SEQUENCE_NUMBER": "xyz/1/2/3/4"}])])
    if out is not None:
        say("  malformed _CHANGE_SEQUENCE_NUMBER refused", "yes" if errs else "no", "errors=%s" % errs)
    out, errs = appendrows("AppendRows bad _CHANGE_TYPE", [req([{"id": 5, "_CHANGE_TYPE": "MERGE"}])])
    if out is not None:
        say("  _CHANGE_TYPE other than UPSERT/DELETE refused", "yes" if errs else "no", "errors=%s" % errs)
    out, errs = appendrows("AppendRows > 10 MB", [req([{"id": 100 + i, "name": "x" * 1000000} for i in range(11)])])
    if out is not None:
        say("  request over 10 MB refused", "yes" if errs else "no", "errors=%s" % [e[0] for e in errs])
    print(json.dumps({"final_rows": [r for r in rows_now() if int(r[0]) < 100]}))
    stream = "projects/%s/datasets/%s/tables/%s/streams/_default" % (project, dataset, cdc)
    try:
        w.get_write_stream(name=stream, **BOUNDED)   # the emulator knows _default only after this
    except Exception as e:
        say("GetWriteStream of the patched table", "error", "%s: %s" % (type(e).__name__, e))
    dp.ClearField("field")
    for i, (n, t) in enumerate((("id", FD.TYPE_INT64), ("name", FD.TYPE_STRING)), 1):
        dp.field.add(name=n, number=i, type=t, label=FD.LABEL_OPTIONAL)
    out, errs = appendrows("AppendRows after tables.patch added a column", [req([{"id": 1, "name": "a"}])])
    if out is not None:
        say("AppendRows after tables.patch added a column", "no" if errs else "yes", "errors=%s" % errs)
    for t in (cdc, wt):
        requests.delete(base + "/datasets/%s/tables/%s" % (dataset, t), timeout=10)
    if check:
        missing = [p.strip() for p in REQUIRED if VERDICTS.get(p) != "yes"]
        print("%d passed, %d failed" % (len(REQUIRED) - len(missing), len(missing)))
        if missing:
            print("the emulator lacks what cdcflow's emulator tests rely on: %s" % ", ".join(missing))
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
