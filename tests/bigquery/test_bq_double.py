#!/usr/bin/env python3
"""test_bq_double.py - checks the BigQuery test double (bq_test_server.py) with Google's own
client libraries, so the double is held to what Google's clients send and expect, not to what
cdcflow's C client does:

  google-auth                      signs the service account JWT (RS256) and exchanges it at the
                                   double's token endpoint; reads the fake metadata server
  google-cloud-bigquery            the REST v2 client: datasets, tables (etag If-Match), DDL query
                                   jobs, tabledata.list (so the f/v row format is parsed by Google)
  google-cloud-bigquery-storage    BigQueryWriteClient over an insecure channel: AppendRows,
                                   GetWriteStream, and Google's AppendRowsStream writer
  protobuf                         builds the writer DescriptorProto and encodes the rows

The CDC expectations are BigQuery's documented rules (shared/specs/bigquery-cdc.md section 1:
the doc's UPSERT/DELETE example and its _CHANGE_SEQUENCE_NUMBER comparison examples).
Run with the test venv's python (scripts/servers start python); each run starts its own
double on free loopback ports. Plain unittest: exits non-zero on any failure.
"""

import base64
import datetime
import decimal
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import google.auth.jwt
import google.auth.transport.requests
import grpc
import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from google.api_core import exceptions as gexc
from google.auth import crypt
from google.cloud import bigquery
from google.cloud.bigquery.table import PrimaryKey, TableConstraints
from google.cloud.bigquery_storage_v1 import BigQueryWriteClient, types, writer
from google.cloud.bigquery_storage_v1.services.big_query_write.transports import BigQueryWriteGrpcTransport
from google.oauth2 import service_account
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

HERE = os.path.dirname(os.path.abspath(__file__))
SERVER = os.path.join(HERE, "bq_test_server.py")
PROJECT = "cdcflow-test"
DATASET = "ds"
BQ_SCOPE = "https://www.googleapis.com/auth/bigquery"
FD = descriptor_pb2.FieldDescriptorProto


def new_key():
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def key_info(key, email, token_uri, key_id="k1"):
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption()).decode()
    return {"type": "service_account", "project_id": PROJECT, "private_key_id": key_id, "private_key": pem,
            "client_email": email, "client_id": "1", "token_uri": token_uri}


class Double:
    """One bq_test_server.py process for the whole run."""

    def __init__(self, *extra):
        self.dir = tempfile.mkdtemp(prefix="bqdouble-")
        ready = os.path.join(self.dir, "ready.json")
        self.log = open(os.path.join(self.dir, "server.log"), "w")
        self.proc = subprocess.Popen([sys.executable, SERVER, "--ready-file", ready, "--dataset",
                                      "%s.%s" % (PROJECT, DATASET)] + list(extra),
                                     stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 60
        while not os.path.exists(ready):
            if self.proc.poll() is not None or time.time() > deadline:
                self.log.flush()
                raise RuntimeError("the double did not start: " + open(self.log.name).read())
            time.sleep(0.05)
        self.info = json.load(open(ready))
        self.http = self.info["http"]
        self.grpc = self.info["grpc"]

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def control(self, method, path, body=None, **params):
        r = requests.request(method, self.http + "/_test/" + path, json=body, params=params, timeout=30)
        r.raise_for_status()
        return r.json()

    def token(self, scopes=None, lifetime=None):
        return self.control("POST", "token", {"scopes": scopes or [BQ_SCOPE], "lifetime": lifetime})["access_token"]

    def rows(self, table):
        return self.control("GET", "rows", table="%s.%s.%s" % (PROJECT, DATASET, table))


D = None  # the Double of this run
_names = iter(range(1, 1000000))


def fresh(prefix="t"):
    return "%s_%d" % (prefix, next(_names))


def rest_create(table, fields, pk=None, token=None, **extra):
    body = {"tableReference": {"projectId": PROJECT, "datasetId": DATASET, "tableId": table},
            "schema": {"fields": fields}}
    if pk:
        body["tableConstraints"] = {"primaryKey": {"columns": pk}}
    body.update(extra)
    r = requests.post("%s/bigquery/v2/projects/%s/datasets/%s/tables" % (D.http, PROJECT, DATASET), json=body,
                      headers={"Authorization": "Bearer " + (token or D.token())}, timeout=30)
    assert r.status_code == 200, r.text
    return r.json()


EMP = [{"name": "id", "type": "INT64", "mode": "REQUIRED"}, {"name": "name", "type": "STRING"},
       {"name": "salary", "type": "INT64"}]


# ---------------------------------------------------------------- protobuf helpers

def descriptor(name, fields, nested=()):
    """fields: (name, FD.TYPE_x, label or None, type_name or None)"""
    dp = descriptor_pb2.DescriptorProto(name=name)
    for i, (fname, ftype, label, tname) in enumerate(fields, 1):
        f = dp.field.add(name=fname, number=i, type=ftype, label=label or FD.LABEL_OPTIONAL)
        if tname:
            f.type_name = tname
    for n in nested:
        dp.nested_type.add().CopyFrom(n)
    return dp


def msg_class(dp):
    fdp = descriptor_pb2.FileDescriptorProto(name="t_%s.proto" % id(dp), syntax="proto2")
    fdp.message_type.add().CopyFrom(dp)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(dp.name))


EMP_DESC = descriptor("Emp", [("id", FD.TYPE_INT64, None, None), ("name", FD.TYPE_STRING, None, None),
                              ("salary", FD.TYPE_INT64, None, None),
                              ("_CHANGE_TYPE", FD.TYPE_STRING, None, None),
                              ("_CHANGE_SEQUENCE_NUMBER", FD.TYPE_STRING, None, None)])
EMP_CLS = msg_class(EMP_DESC)


def encode(cls, rows):
    out = []
    for r in rows:
        m = cls()
        for k, v in r.items():
            if v is None:
                continue
            if isinstance(v, list):
                getattr(m, k).extend(v)
            elif isinstance(v, dict):
                sub = getattr(m, k)
                for sk, sv in v.items():
                    setattr(sub, sk, sv)
            else:
                setattr(m, k, v)
        out.append(m.SerializeToString())
    return out


def stream_name(table):
    return "projects/%s/datasets/%s/tables/%s/streams/_default" % (PROJECT, DATASET, table)


def append_request(table, rows, desc=EMP_DESC, cls=EMP_CLS, schema=True, stream=True):
    req = types.AppendRowsRequest()
    if stream:
        req.write_stream = stream_name(table)
    pd = types.AppendRowsRequest.ProtoData()
    if schema:
        pd.writer_schema = types.ProtoSchema(proto_descriptor=desc)
    pd.rows = types.ProtoRows(serialized_rows=encode(cls, rows))
    req.proto_rows = pd
    return req


def write_client():
    channel = grpc.insecure_channel(D.grpc, options=[("grpc.max_send_message_length", 64 << 20)])
    return BigQueryWriteClient(transport=BigQueryWriteGrpcTransport(channel=channel))


def md(token=None):
    return (("authorization", "Bearer " + (token or D.token())),)


def append(requests_, token=None, client=None):
    """One AppendRows connection: sends the requests, returns the responses (in order)."""
    c = client or write_client()
    return list(c.append_rows(requests=iter(requests_), metadata=md(token)))


def emp(i, name=None, salary=None, ct="UPSERT", csn=None):
    r = {"id": i, "name": name, "salary": salary, "_CHANGE_TYPE": ct}
    if csn is not None:
        r["_CHANGE_SEQUENCE_NUMBER"] = csn
    return r


def live(table):
    return sorted((r["id"], r["name"], r["salary"]) for r in D.rows(table)["rows"])


def bq_client(token=None):
    from google.oauth2.credentials import Credentials
    creds = Credentials(token or D.token())
    return bigquery.Client(project=PROJECT, credentials=creds, client_options={"api_endpoint": D.http})


# ================================================================ auth

class TestAuth(unittest.TestCase):
    def setUp(self):
        self.key = new_key()
        self.email = fresh("sa") + "@cdcflow-test.iam.gserviceaccount.com"
        self.info = key_info(self.key, self.email, D.info["token_uri"])
        D.control("POST", "service-accounts", self.info)

    def test_jwt_bearer_exchange_with_google_auth(self):
        creds = service_account.Credentials.from_service_account_info(self.info, scopes=[BQ_SCOPE])
        creds.refresh(google.auth.transport.requests.Request())
        self.assertTrue(creds.token)
        self.assertGreater(creds.expiry, datetime.datetime.utcnow() + datetime.timedelta(minutes=50))
        r = requests.get("%s/bigquery/v2/projects/%s/datasets/%s" % (D.http, PROJECT, DATASET),
                         headers={"Authorization": "Bearer " + creds.token})
        self.assertEqual(r.status_code, 200, r.text)
        # and the REST client of Google, with these credentials end to end
        client = bigquery.Client(project=PROJECT, credentials=creds, client_options={"api_endpoint": D.http})
        self.assertEqual(client.get_dataset(DATASET).dataset_id, DATASET)

    def test_signature_checked_against_registered_key(self):
        forged = key_info(new_key(), self.email, D.info["token_uri"])
        creds = service_account.Credentials.from_service_account_info(forged, scopes=[BQ_SCOPE])
        with self.assertRaisesRegex(google.auth.exceptions.RefreshError, "Invalid JWT Signature"):
            creds.refresh(google.auth.transport.requests.Request())

    def _assertion(self, **claims):
        signer = crypt.RSASigner.from_service_account_info(self.info)
        now = int(time.time())
        payload = {"iss": self.email, "aud": D.info["token_uri"], "scope": BQ_SCOPE, "iat": now, "exp": now + 3600}
        payload.update(claims)
        payload = {k: v for k, v in payload.items() if v is not None}
        return google.auth.jwt.encode(signer, payload).decode()

    def _exchange(self, assertion, grant="urn:ietf:params:oauth:grant-type:jwt-bearer"):
        return requests.post(D.info["token_uri"], data={"grant_type": grant, "assertion": assertion})

    def test_claims_checked(self):
        now = int(time.time())
        cases = [({"aud": "https://example.com/token"}, "invalid_grant", "audience"),
                 ({"iat": now - 7200, "exp": now - 3600}, "invalid_grant", "short-lived"),
                 ({"iat": now, "exp": now + 7200}, "invalid_grant", "short-lived"),
                 ({"scope": None}, "invalid_scope", "scope"),
                 ({"iss": "nobody@example.com"}, "invalid_grant", "account not found")]
        for claims, error, text in cases:
            r = self._exchange(self._assertion(**claims))
            self.assertEqual(r.status_code, 400, claims)
            self.assertEqual(r.json()["error"], error, claims)
            self.assertIn(text, r.json()["error_description"], claims)
        r = self._exchange(self._assertion(), grant="password")
        self.assertEqual(r.json()["error"], "unsupported_grant_type")
        r = self._exchange(self._assertion())
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(r.json()["token_type"], "Bearer")

    def test_metadata_server_with_google_auth(self):
        # google-auth reads GCE_METADATA_HOST when it is imported: a child process of its own
        code = ("import google.auth, google.auth.transport.requests as r\n"
                "creds, project = google.auth.default(scopes=['%s'])\n"
                "creds.refresh(r.Request())\n"
                "print(type(creds).__name__, project, creds.token)\n" % BQ_SCOPE)
        env = dict(os.environ, GCE_METADATA_HOST=D.info["metadata_host"], GCE_METADATA_IP=D.info["metadata_host"],
                   GOOGLE_APPLICATION_CREDENTIALS="", HOME=D.dir, CLOUDSDK_CONFIG=D.dir)
        env.pop("GOOGLE_APPLICATION_CREDENTIALS")
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        kind, project, token = out.stdout.split()
        self.assertEqual(kind, "Credentials")
        self.assertEqual(project, "cdcflow-test")   # from /computeMetadata/v1/project/project-id
        r = requests.get("%s/bigquery/v2/projects/%s/datasets/%s" % (D.http, PROJECT, DATASET),
                         headers={"Authorization": "Bearer " + token})
        self.assertEqual(r.status_code, 200, r.text)
        r = requests.get(D.http + "/computeMetadata/v1/instance/service-accounts/default/token")
        self.assertEqual(r.status_code, 403)

    def test_every_request_needs_a_live_token(self):
        url = "%s/bigquery/v2/projects/%s/datasets/%s" % (D.http, PROJECT, DATASET)
        self.assertEqual(requests.get(url).status_code, 401)
        self.assertEqual(requests.get(url, headers={"Authorization": "Bearer nope"}).status_code, 401)
        short = D.token(lifetime=0.3)
        self.assertEqual(requests.get(url, headers={"Authorization": "Bearer " + short}).status_code, 200)
        time.sleep(0.5)
        r = requests.get(url, headers={"Authorization": "Bearer " + short})
        self.assertEqual(r.status_code, 401)
        self.assertEqual(r.json()["error"]["status"], "UNAUTHENTICATED")
        narrow = D.token(scopes=["https://www.googleapis.com/auth/devstorage.read_only"])
        self.assertEqual(requests.get(url, headers={"Authorization": "Bearer " + narrow}).status_code, 403)
        # gRPC too
        c = write_client()
        with self.assertRaises(gexc.Unauthenticated):
            c.get_write_stream(name=stream_name("x"))
        with self.assertRaises(gexc.Unauthenticated):
            c.get_write_stream(name=stream_name("x"), metadata=md("bogus"))


# ================================================================ REST

class TestRest(unittest.TestCase):
    def test_create_get_with_pk_clustering_staleness(self):
        c = bq_client()
        name = fresh()
        t = bigquery.Table("%s.%s.%s" % (PROJECT, DATASET, name), schema=[
            bigquery.SchemaField("id", "INT64", mode="REQUIRED"), bigquery.SchemaField("name", "STRING"),
            bigquery.SchemaField("tags", "STRING", mode="REPEATED"),
            bigquery.SchemaField("addr", "RECORD", fields=[bigquery.SchemaField("city", "STRING")])])
        t.table_constraints = TableConstraints(primary_key=PrimaryKey(["id"]), foreign_keys=None)
        t.clustering_fields = ["id"]
        t.max_staleness = "0-0 0 0:15:0"
        c.create_table(t)
        got = c.get_table("%s.%s" % (DATASET, name))
        self.assertEqual(got.table_constraints.primary_key.columns, ["id"])
        self.assertEqual(got.clustering_fields, ["id"])
        self.assertEqual(got.max_staleness, "0-0 0 0:15:0")
        self.assertEqual([(f.name, f.field_type, f.mode) for f in got.schema],
                         [("id", "INTEGER", "REQUIRED"), ("name", "STRING", "NULLABLE"),
                          ("tags", "STRING", "REPEATED"), ("addr", "RECORD", "NULLABLE")])
        self.assertTrue(got.etag)
        with self.assertRaises(gexc.Conflict):
            c.create_table(t)
        with self.assertRaises(gexc.NotFound):
            c.get_table("%s.nope" % DATASET)
        with self.assertRaises(gexc.NotFound):
            c.get_table("nods.nope")

    def test_schema_update_rules_and_etag(self):
        c = bq_client()
        name = fresh()
        rest_create(name, EMP, pk=["id"])
        t = c.get_table("%s.%s" % (DATASET, name))
        etag0 = t.etag
        t.schema = list(t.schema) + [bigquery.SchemaField("dept", "STRING")]
        t2 = c.update_table(t, ["schema"])          # sends If-Match: etag0
        self.assertNotEqual(t2.etag, etag0)
        self.assertEqual([f.name for f in t2.schema], ["id", "name", "salary", "dept"])
        # a second task that read the table before: its etag is stale -> 412
        t.schema = list(t.schema) + [bigquery.SchemaField("other", "STRING")]
        with self.assertRaises(gexc.PreconditionFailed):
            c.update_table(t, ["schema"])
        # relaxing REQUIRED -> NULLABLE is allowed
        t3 = c.get_table(t2)
        t3.schema = [bigquery.SchemaField("id", "INTEGER", mode="NULLABLE")] + list(t3.schema)[1:]
        self.assertEqual(c.update_table(t3, ["schema"]).schema[0].mode, "NULLABLE")
        bad_changes = [
            [bigquery.SchemaField("id", "INTEGER"), bigquery.SchemaField("name", "STRING")],   # drops columns
            [bigquery.SchemaField("id", "STRING")] + list(t3.schema)[1:],                        # changes type
            list(c.get_table(t2).schema) + [bigquery.SchemaField("req", "STRING", mode="REQUIRED")],  # new REQUIRED
        ]
        for schema in bad_changes:
            t4 = c.get_table(t2)
            t4.schema = schema
            with self.assertRaises(gexc.BadRequest):
                c.update_table(t4, ["schema"])

    def test_primary_key_limits(self):
        fields = [{"name": "c%d" % i, "type": "INT64"} for i in range(17)]
        r = requests.post("%s/bigquery/v2/projects/%s/datasets/%s/tables" % (D.http, PROJECT, DATASET),
                          headers={"Authorization": "Bearer " + D.token()},
                          json={"tableReference": {"tableId": fresh()}, "schema": {"fields": fields},
                                "tableConstraints": {"primaryKey": {"columns": [f["name"] for f in fields]}}})
        self.assertEqual(r.status_code, 400)
        self.assertIn("at most 16", r.json()["error"]["message"])
        r = requests.post("%s/bigquery/v2/projects/%s/datasets/%s/tables" % (D.http, PROJECT, DATASET),
                          headers={"Authorization": "Bearer " + D.token()},
                          json={"tableReference": {"tableId": fresh()}, "schema": {"fields": fields},
                                "tableConstraints": {"primaryKey": {"columns": ["nope"]}}})
        self.assertEqual(r.status_code, 400)

    def test_ddl_jobs(self):
        c = bq_client()
        name = fresh()
        rest_create(name, EMP)
        c.query("ALTER TABLE `%s.%s.%s` SET OPTIONS (max_staleness = INTERVAL 10 MINUTE)"
                % (PROJECT, DATASET, name)).result()
        self.assertEqual(c.get_table("%s.%s" % (DATASET, name)).max_staleness, "0-0 0 0:10:0")
        c.query("ALTER TABLE %s.%s SET OPTIONS (max_staleness = INTERVAL '0-0 0 0:0:15' YEAR TO SECOND)"
                % (DATASET, name)).result()
        self.assertEqual(c.get_table("%s.%s" % (DATASET, name)).max_staleness, "0-0 0 0:0:15")
        c.query("ALTER TABLE `%s.%s` ADD PRIMARY KEY (id) NOT ENFORCED" % (DATASET, name)).result()
        self.assertEqual(c.get_table("%s.%s" % (DATASET, name)).table_constraints.primary_key.columns, ["id"])
        with self.assertRaises(gexc.BadRequest):   # already has one
            c.query("ALTER TABLE `%s.%s` ADD PRIMARY KEY (id) NOT ENFORCED" % (DATASET, name)).result()
        with self.assertRaises(gexc.BadRequest):   # only what the double parses, refused by name
            c.query("SELECT 1").result()
        with self.assertRaises(gexc.BadRequest):
            c.query("ALTER TABLE `%s.%s` SET OPTIONS (description = 'x')" % (DATASET, name)).result()
        name2 = fresh()
        rest_create(name2, EMP)
        with self.assertRaises(gexc.BadRequest):
            c.query("ALTER TABLE `%s.%s` ADD PRIMARY KEY (id)" % (DATASET, name2)).result()
        with self.assertRaises(gexc.NotFound):
            c.query("ALTER TABLE `%s.missing` SET OPTIONS (max_staleness = INTERVAL 1 MINUTE)" % DATASET).result()
        # jobs.query (the synchronous endpoint) too
        r = requests.post("%s/bigquery/v2/projects/%s/queries" % (D.http, PROJECT),
                          headers={"Authorization": "Bearer " + D.token()},
                          json={"query": "ALTER TABLE %s.%s ALTER COLUMN id DROP NOT NULL" % (DATASET, name2),
                                "useLegacySql": False})
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(c.get_table("%s.%s" % (DATASET, name2)).schema[0].mode, "NULLABLE")

    def test_rest_fault_injection(self):
        c = bq_client()
        name = fresh()
        rest_create(name, EMP, pk=["id"])
        D.control("POST", "faults", {"rpc": "rest", "method": "tables.patch", "code": 409})
        t = c.get_table("%s.%s" % (DATASET, name))
        t.schema = list(t.schema) + [bigquery.SchemaField("x", "STRING")]
        with self.assertRaises(gexc.Conflict):
            c.update_table(t, ["schema"])
        self.assertEqual(len(c.update_table(t, ["schema"]).schema), 4)   # fired once only
        D.control("DELETE", "faults")


# ================================================================ Storage Write API

class TestWrite(unittest.TestCase):
    def setUp(self):
        D.control("DELETE", "faults")

    def test_get_write_stream(self):
        name = fresh()
        rest_create(name, EMP, pk=["id"])
        c = write_client()
        full = c.get_write_stream(request={"name": stream_name(name), "view": types.WriteStreamView.FULL},
                                  metadata=md())
        self.assertEqual(full.type_, types.WriteStream.Type.COMMITTED)
        self.assertEqual([(f.name, f.type_, f.mode) for f in full.table_schema.fields],
                         [("id", types.TableFieldSchema.Type.INT64, types.TableFieldSchema.Mode.REQUIRED),
                          ("name", types.TableFieldSchema.Type.STRING, types.TableFieldSchema.Mode.NULLABLE),
                          ("salary", types.TableFieldSchema.Type.INT64, types.TableFieldSchema.Mode.NULLABLE)])
        basic = c.get_write_stream(name=stream_name(name), metadata=md())
        self.assertEqual(len(basic.table_schema.fields), 0)
        with self.assertRaises(gexc.NotFound):
            c.get_write_stream(name=stream_name("missing"), metadata=md())
        # the control API records every call with the view Google's client sent, in call order
        calls = D.control("GET", "stats", appends="true")["get_write_streams"][-3:]
        self.assertEqual([(g["name"], g["view"]) for g in calls],
                         [(stream_name(name), "FULL"), (stream_name(name), "WRITE_STREAM_VIEW_UNSPECIFIED"),
                          (stream_name("missing"), "WRITE_STREAM_VIEW_UNSPECIFIED")])
        self.assertLess(calls[0]["seq"], calls[1]["seq"])

    def test_docs_upsert_delete_example(self):
        # The example of BigQuery's CDC doc: {100 Charlie 2000; 101 Tal 3000; 102 Lee 5000} then
        # (100, DELETE) (101 Tal 8000 UPSERT) (105 Izumi 6000 UPSERT).
        name = fresh()
        rest_create(name, EMP, pk=["id"])
        r1 = append_request(name, [emp(100, "Charlie", 2000), emp(101, "Tal", 3000), emp(102, "Lee", 5000)])
        r2 = append_request(name, [emp(100, ct="DELETE"), emp(101, "Tal", 8000), emp(105, "Izumi", 6000)],
                            schema=False, stream=False)
        resps = append([r1, r2])
        self.assertEqual(len(resps), 2)
        for r in resps:
            self.assertFalse(r._pb.HasField("error"), r)
            self.assertTrue(r._pb.HasField("append_result"))
            self.assertFalse(r.append_result._pb.HasField("offset"))   # none on the default stream
            self.assertEqual(r.write_stream, stream_name(name))
        expect = [(101, "Tal", 8000), (102, "Lee", 5000), (105, "Izumi", 6000)]
        self.assertEqual(live(name), expect)
        # read back through Google's REST client (tabledata.list, f/v format)
        got = sorted((r["id"], r["name"], r["salary"]) for r in bq_client().list_rows("%s.%s" % (DATASET, name)))
        self.assertEqual(got, expect)

    def _race(self, first, second):
        """Writes id 1 with sequence number `first` (value 'A') then `second` (value 'B') in two
        requests, and the other way round; returns the winner's sequence number both ways."""
        out = []
        for a, b in ((first, second), (second, first)):
            name = fresh()
            rest_create(name, EMP, pk=["id"])
            append([append_request(name, [emp(1, a, csn=a)]),
                    append_request(name, [emp(1, b, csn=b)], schema=False)])
            out.append(live(name)[0][1])
        return out

    def test_sequence_number_comparison_docs_examples(self):
        for a, b, winner in (("77", "7B", "7B"), ("FFF/B", "FFF/ABC", "FFF/ABC"), ("BA/FFFFFFFF", "ABC", "ABC"),
                             ("FFF/ABC", "ABC", "FFF/ABC"), ("ff", "FE", "ff"),
                             ("0000000000000010", "F", "0000000000000010"),
                             ("FFFFFFFFFFFFFFFF/FFFFFFFFFFFFFFFF/FFFFFFFFFFFFFFFF/FFFFFFFFFFFFFFFF", "0/0/0/0",
                              "FFFFFFFFFFFFFFFF/FFFFFFFFFFFFFFFF/FFFFFFFFFFFFFFFF/FFFFFFFFFFFFFFFF")):
            self.assertEqual(self._race(a, b), [winner, winner], (a, b))

    def test_older_sequence_ignored_and_delete_remembered(self):
        name = fresh()
        rest_create(name, EMP, pk=["id"])
        append([append_request(name, [emp(1, "v5", csn="5"), emp(2, "w1", csn="1")]),
                append_request(name, [emp(1, ct="DELETE", csn="6")], schema=False),
                append_request(name, [emp(1, "v4", csn="4"), emp(2, "w0", csn="0")], schema=False)])
        self.assertEqual(live(name), [(2, "w1", None)])
        d = D.rows(name)
        self.assertEqual(d["tombstones"], 1)
        self.assertEqual(d["stats"]["ignored_older"], 2)
        self.assertEqual(d["warnings"], [])

    def test_equal_sequence_latest_ingestion_wins(self):
        name = fresh()
        rest_create(name, EMP, pk=["id"])
        append([append_request(name, [emp(1, "first", csn="A/1")]),
                append_request(name, [emp(1, "second", csn="a/1")], schema=False)])
        self.assertEqual(live(name), [(1, "second", None)])
        # without any sequence number: ingestion order too
        name = fresh()
        rest_create(name, EMP, pk=["id"])
        append([append_request(name, [emp(1, "first")]), append_request(name, [emp(1, "second")], schema=False)])
        self.assertEqual(live(name), [(1, "second", None)])
        # two rows of one key in ONE request (same ingestion time): the first one stands, as
        # observed on BigQuery (java-bigquerystorage#2404); --same-request-tie last flips it
        name = fresh()
        rest_create(name, EMP, pk=["id"])
        append([append_request(name, [emp(1, "first", csn="7"), emp(1, "second", csn="7")])])
        self.assertEqual(live(name), [(1, "first", None)])

    def test_mixing_rows_with_and_without_sequence_numbers_is_reported(self):
        name = fresh()
        rest_create(name, EMP, pk=["id"])
        append([append_request(name, [emp(1, "a", csn="1")]), append_request(name, [emp(1, "b")], schema=False)])
        self.assertEqual(len(D.rows(name)["warnings"]), 1)

    def _row_errors(self, resp):
        self.assertTrue(resp._pb.HasField("error"), resp)
        self.assertEqual(resp.error.code, grpc.StatusCode.INVALID_ARGUMENT.value[0])
        return {e.index: e.message for e in resp.row_errors}

    def test_malformed_sequence_numbers_are_row_errors(self):
        name = fresh()
        rest_create(name, EMP, pk=["id"])
        bad = ["", "G", "1/2/3/4/5", "12345678901234567", "/1", "1//2", "-1", "0x1", "1/", " 1", "1 "]
        rows = [emp(100, "good", csn="1")] + [emp(i, "bad", csn=c) for i, c in enumerate(bad, 1)]
        [resp] = append([append_request(name, rows)])
        errs = self._row_errors(resp)
        self.assertEqual(sorted(errs), list(range(1, len(bad) + 1)))
        for m in errs.values():
            self.assertIn("_CHANGE_SEQUENCE_NUMBER", m)
        self.assertIn("Errors found while processing rows", resp.error.message)
        for e in resp.row_errors:
            self.assertEqual(e.code, types.RowError.RowErrorCode.FIELDS_ERROR)
        self.assertEqual(live(name), [])   # nothing of a request with bad rows lands
        # the caller removes the bad rows and resends: the rest lands
        [resp] = append([append_request(name, rows[:1])])
        self.assertFalse(resp._pb.HasField("error"))
        self.assertEqual(live(name), [(100, "good", None)])

    def test_change_type_values_and_mixing_in_one_connection(self):
        name = fresh()
        rest_create(name, EMP, pk=["id"])
        [resp] = append([append_request(name, [emp(1, ct="INSERT"), emp(2, ct="upsert"), emp(3, "ok")])])
        self.assertEqual(sorted(self._row_errors(resp)), [0, 1])
        # CDC first, then a plain row on the same connection
        r = append([append_request(name, [emp(1, "x")]), append_request(name, [emp(2, "y", ct=None)], schema=False)])
        self.assertFalse(r[0]._pb.HasField("error"))
        self.assertIn("not a valid CHANGE_TYPE", self._row_errors(r[1])[0])
        # plain first, then CDC on the same connection
        r = append([append_request(name, [emp(5, "p", ct=None)]), append_request(name, [emp(6, "q")], schema=False)])
        self.assertFalse(r[0]._pb.HasField("error"))
        self.assertIn("insert mode", self._row_errors(r[1])[0])

    def test_cdc_needs_a_primary_key(self):
        name = fresh()
        rest_create(name, EMP)
        [resp] = append([append_request(name, [emp(1, "x")])])
        self.assertEqual(resp.error.code, grpc.StatusCode.INVALID_ARGUMENT.value[0])
        self.assertIn("primary keys", resp.error.message)
        self.assertEqual(len(resp.row_errors), 0)
        [resp] = append([append_request(name, [emp(1, "x", ct=None), emp(1, "y", ct=None)])])
        self.assertFalse(resp._pb.HasField("error"))
        self.assertEqual(live(name), [(1, "x", None), (1, "y", None)])   # plain appends: both rows

    def test_writer_schema_checks(self):
        name = fresh()
        rest_create(name, EMP, pk=["id"])
        extra = descriptor("E", [("id", FD.TYPE_INT64, None, None), ("bogus", FD.TYPE_STRING, None, None)])
        [resp] = append([append_request(name, [{"id": 1, "bogus": "x"}], desc=extra, cls=msg_class(extra))])
        self.assertEqual(resp.error.code, grpc.StatusCode.INVALID_ARGUMENT.value[0])
        self.assertIn("extra fields", resp.error.message)
        detail = types.StorageError.pb()()
        self.assertTrue(resp._pb.error.details[0].Unpack(detail))
        self.assertEqual(detail.code, types.StorageError.StorageErrorCode.SCHEMA_MISMATCH_EXTRA_FIELDS)
        wrong = descriptor("W", [("id", FD.TYPE_STRING, None, None)])
        [resp] = append([append_request(name, [{"id": "1"}], desc=wrong, cls=msg_class(wrong))])
        self.assertIn("mismatched", resp.error.message)
        [resp] = append([append_request(name, [emp(1)], schema=False)])
        self.assertIn("writer schema", resp.error.message)
        [resp] = append([append_request(name, [emp(1)], stream=False)])
        self.assertIn("write_stream", resp.error.message)
        # required column without a value: a row error
        [resp] = append([append_request(name, [{"name": "no id", "_CHANGE_TYPE": "UPSERT"}])])
        self.assertIn("REQUIRED", self._row_errors(resp)[0])
        # field names match columns case-insensitively (Google's Java CDC sample writes _change_type)
        lower = descriptor("L", [("ID", FD.TYPE_INT64, None, None), ("_change_type", FD.TYPE_STRING, None, None)])
        [resp] = append([append_request(name, [{"ID": 9, "_change_type": "UPSERT"}], desc=lower, cls=msg_class(lower))])
        self.assertFalse(resp._pb.HasField("error"), resp)
        self.assertEqual(live(name), [(9, None, None)])

    def test_request_size_limit(self):
        name = fresh()
        rest_create(name, EMP, pk=["id"])
        big = "x" * 1000000
        ok = append_request(name, [emp(i, big) for i in range(9)])
        too = append_request(name, [emp(i, big) for i in range(11)])
        self.assertLess(types.AppendRowsRequest.serialize(ok).__len__(), 10000000)
        self.assertGreater(types.AppendRowsRequest.serialize(too).__len__(), 10000000)
        r = append([too, ok])
        self.assertEqual(r[0].error.code, grpc.StatusCode.INVALID_ARGUMENT.value[0])
        self.assertIn("too large", r[0].error.message)
        self.assertFalse(r[1]._pb.HasField("error"))   # the schema of the refused first request still counts
        self.assertEqual(len(live(name)), 9)

    def test_offset_refused_on_default_stream(self):
        name = fresh()
        rest_create(name, EMP, pk=["id"])
        req = append_request(name, [emp(1)])
        req.offset = 0
        [resp] = append([req])
        self.assertIn("Offset", resp.error.message)

    def test_types(self):
        name = fresh()
        fields = [{"name": "id", "type": "INT64", "mode": "REQUIRED"}, {"name": "ts", "type": "TIMESTAMP"},
                  {"name": "d", "type": "DATE"}, {"name": "n", "type": "NUMERIC"}, {"name": "nb", "type": "NUMERIC"},
                  {"name": "bn", "type": "BIGNUMERIC"}, {"name": "dt", "type": "DATETIME"},
                  {"name": "dts", "type": "DATETIME"}, {"name": "t", "type": "TIME"}, {"name": "j", "type": "JSON"},
                  {"name": "g", "type": "GEOGRAPHY"}, {"name": "b", "type": "BYTES"}, {"name": "ok", "type": "BOOL"},
                  {"name": "f", "type": "FLOAT64"}, {"name": "arr", "type": "INT64", "mode": "REPEATED"},
                  {"name": "rec", "type": "RECORD", "fields": [{"name": "city", "type": "STRING"},
                                                              {"name": "zip", "type": "INT64"}]}]
        rest_create(name, fields, pk=["id"])
        rec = descriptor("Rec", [("city", FD.TYPE_STRING, None, None), ("zip", FD.TYPE_INT64, None, None)])
        dp = descriptor("Row", [("id", FD.TYPE_INT64, None, None), ("ts", FD.TYPE_INT64, None, None),
                                ("d", FD.TYPE_INT32, None, None), ("n", FD.TYPE_STRING, None, None),
                                ("nb", FD.TYPE_BYTES, None, None), ("bn", FD.TYPE_STRING, None, None),
                                ("dt", FD.TYPE_INT64, None, None), ("dts", FD.TYPE_STRING, None, None),
                                ("t", FD.TYPE_STRING, None, None), ("j", FD.TYPE_STRING, None, None),
                                ("g", FD.TYPE_STRING, None, None), ("b", FD.TYPE_BYTES, None, None),
                                ("ok", FD.TYPE_BOOL, None, None), ("f", FD.TYPE_DOUBLE, None, None),
                                ("arr", FD.TYPE_INT64, FD.LABEL_REPEATED, None),
                                ("rec", FD.TYPE_MESSAGE, None, ".Row.Rec"),
                                ("_CHANGE_TYPE", FD.TYPE_STRING, None, None)], nested=[rec])
        cls = msg_class(dp)
        # 2024-04-30 11:19:44.123456 UTC (the doc's hex example time) in microseconds
        ts = int(datetime.datetime(2024, 4, 30, 11, 19, 44, 123456, tzinfo=datetime.timezone.utc).timestamp()) * 10**6 + 123456
        # CivilTimeEncoder packing of 2024-04-30 11:19:44.5
        packed_dt = ((((((2024 << 4 | 4) << 5 | 30) << 5 | 11) << 6 | 19) << 6 | 44) << 20) | 500000
        numeric_bytes = (-12345678901).to_bytes(16, "little", signed=True)   # unscaled, scale 9 -> -12.345678901
        row = {"id": 1, "ts": ts, "d": 19843, "n": "123.4500", "nb": numeric_bytes,
               "bn": "0.00000000000000000000000000000000000001", "dt": packed_dt,
               "dts": "2024-04-30 11:19:44", "t": "23:59:59.999999", "j": '{"b": [1, 2], "a": null}',
               "g": "POINT(1 2)", "b": b"\x00\xff", "ok": True, "f": 1.5, "arr": [3, 1, 2],
               "rec": {"city": "Basel", "zip": 4051}, "_CHANGE_TYPE": "UPSERT"}
        [resp] = append([append_request(name, [row], desc=dp, cls=cls)])
        self.assertFalse(resp._pb.HasField("error"), resp)
        [got] = D.rows(name)["rows"]
        self.assertEqual(got, {"id": 1, "ts": "2024-04-30T11:19:44.123456Z", "d": "2024-04-30", "n": "123.45",
                               "nb": "-12.345678901", "bn": "0.00000000000000000000000000000000000001",
                               "dt": "2024-04-30T11:19:44.500000", "dts": "2024-04-30T11:19:44",
                               "t": "23:59:59.999999", "j": '{"a":null,"b":[1,2]}', "g": "POINT(1 2)",
                               "b": base64.b64encode(b"\x00\xff").decode(), "ok": True, "f": 1.5, "arr": [3, 1, 2],
                               "rec": {"city": "Basel", "zip": 4051}})
        # Google's REST client parses our tabledata.list cells into Python values
        [r] = list(bq_client().list_rows("%s.%s" % (DATASET, name)))
        self.assertEqual(r["ts"], datetime.datetime(2024, 4, 30, 11, 19, 44, 123456, tzinfo=datetime.timezone.utc))
        self.assertEqual(r["d"], datetime.date(2024, 4, 30))
        self.assertEqual(r["n"], decimal.Decimal("123.45"))
        self.assertEqual(r["nb"], decimal.Decimal("-12.345678901"))
        self.assertEqual(r["dt"], datetime.datetime(2024, 4, 30, 11, 19, 44, 500000))
        self.assertEqual(r["t"], datetime.time(23, 59, 59, 999999))
        self.assertEqual(r["b"], b"\x00\xff")
        self.assertEqual(r["arr"], [3, 1, 2])
        self.assertEqual(r["rec"], {"city": "Basel", "zip": 4051})
        self.assertIs(r["ok"], True)
        # bad values are row errors, the good row of the same request does not land either
        bad = [dict(row, id=2, d=2932897), dict(row, id=3, j="{nope"), dict(row, id=4, n="1e30"),
               dict(row, id=5, t="24:00:00"), dict(row, id=6, dts="2024-02-30 00:00:00"),
               dict(row, id=7, g="not a shape"), dict(row, id=8, ts=253402300800 * 10**6)]
        [resp] = append([append_request(name, [dict(row, id=99)] + bad, desc=dp, cls=cls)])
        self.assertEqual(sorted(self._row_errors(resp)), list(range(1, len(bad) + 1)))
        self.assertEqual(len(D.rows(name)["rows"]), 1)

    def test_injected_response_errors_and_row_errors(self):
        name = fresh()
        rest_create(name, EMP, pk=["id"])
        table = "%s.%s.%s" % (PROJECT, DATASET, name)
        D.control("POST", "faults", [{"rpc": "AppendRows", "table": table, "nth": 2, "code": "INTERNAL"},
                                     {"rpc": "AppendRows", "table": table, "nth": 4, "code": "RESOURCE_EXHAUSTED"},
                                     {"rpc": "AppendRows", "table": table, "action": "row_error",
                                      "match": {"column": "id", "values": [7]}}])
        reqs = [append_request(name, [emp(1, "a")])] + \
               [append_request(name, [emp(i, "a")], schema=False) for i in (2, 3, 4)] + \
               [append_request(name, [emp(6, "a"), emp(7, "bad"), emp(8, "a")], schema=False)]
        r = append(reqs)
        self.assertFalse(r[0]._pb.HasField("error"))
        self.assertEqual(r[1].error.code, grpc.StatusCode.INTERNAL.value[0])
        self.assertFalse(r[2]._pb.HasField("error"))
        self.assertEqual(r[3].error.code, grpc.StatusCode.RESOURCE_EXHAUSTED.value[0])
        self.assertEqual(list(self._row_errors(r[4])), [1])
        self.assertEqual([x[0] for x in live(name)], [1, 3])
        faults = D.control("GET", "faults")["faults"]
        self.assertEqual([f["fired"] for f in faults], [1, 1, 1])

    def test_injected_stream_abort(self):
        name = fresh()
        rest_create(name, EMP, pk=["id"])
        D.control("POST", "faults", {"rpc": "AppendRows", "table": "%s.%s.%s" % (PROJECT, DATASET, name),
                                     "nth": 2, "code": "UNAVAILABLE", "how": "stream"})
        c = write_client()
        it = c.append_rows(requests=iter([append_request(name, [emp(1)]),
                                          append_request(name, [emp(2)], schema=False)]), metadata=md())
        self.assertFalse(next(it)._pb.HasField("error"))
        with self.assertRaises(gexc.ServiceUnavailable):
            next(it)
        # a new connection (schema again) works
        [resp] = append([append_request(name, [emp(2)])])
        self.assertFalse(resp._pb.HasField("error"))
        self.assertEqual([x[0] for x in live(name)], [1, 2])
        D.control("POST", "faults", {"rpc": "GetWriteStream", "code": "UNAVAILABLE"})
        with self.assertRaises(gexc.ServiceUnavailable):
            c.get_write_stream(name=stream_name(name), metadata=md(),
                               retry=None)

    def test_updated_schema_after_table_change(self):
        name = fresh()
        rest_create(name, EMP, pk=["id"])
        gate = threading.Event()

        def reqs():
            yield append_request(name, [emp(1)])
            gate.wait(10)
            yield append_request(name, [emp(2)], schema=False)

        c = write_client()
        it = c.append_rows(requests=reqs(), metadata=md())
        first = next(it)
        self.assertEqual(len(first.updated_schema.fields), 0)
        t = requests.get("%s/bigquery/v2/projects/%s/datasets/%s/tables/%s" % (D.http, PROJECT, DATASET, name),
                         headers={"Authorization": "Bearer " + D.token()}).json()
        r = requests.patch("%s/bigquery/v2/projects/%s/datasets/%s/tables/%s" % (D.http, PROJECT, DATASET, name),
                           headers={"Authorization": "Bearer " + D.token(), "If-Match": t["etag"]},
                           json={"schema": {"fields": EMP + [{"name": "dept", "type": "STRING"}]}})
        self.assertEqual(r.status_code, 200, r.text)
        gate.set()
        second = next(it)
        self.assertFalse(second._pb.HasField("error"))
        self.assertEqual([f.name for f in second.updated_schema.fields], ["id", "name", "salary", "dept"])

    def test_one_connection_two_tables(self):
        a, b = fresh(), fresh()
        rest_create(a, EMP, pk=["id"])
        rest_create(b, EMP, pk=["id"])
        r = append([append_request(a, [emp(1, "a")]), append_request(b, [emp(2, "b")]),
                    append_request(b, [emp(3, "b")], schema=False, stream=False)])
        self.assertEqual([x._pb.HasField("error") for x in r], [False, False, False])
        self.assertEqual([x.write_stream for x in r], [stream_name(a), stream_name(b), stream_name(b)])
        self.assertEqual([x[0] for x in live(a)], [1])
        self.assertEqual([x[0] for x in live(b)], [2, 3])

    def test_committed_stream_offsets_and_no_cdc(self):
        name = fresh()
        rest_create(name, EMP, pk=["id"])
        c = write_client()
        ws = c.create_write_stream(parent="projects/%s/datasets/%s/tables/%s" % (PROJECT, DATASET, name),
                                   write_stream=types.WriteStream(type_=types.WriteStream.Type.COMMITTED),
                                   metadata=md())
        self.assertTrue(ws.name.startswith("projects/%s/datasets/%s/tables/%s/streams/" % (PROJECT, DATASET, name)))
        self.assertEqual(len(ws.table_schema.fields), 3)   # CreateWriteStream returns the full view

        def req(rows, first=False):
            r = append_request(name, rows, schema=first)
            r.write_stream = ws.name
            return r
        r = append([req([emp(1, ct=None), emp(2, ct=None)], True), req([emp(3, ct=None)]), req([emp(4)])])
        self.assertEqual([x.append_result.offset for x in r[:2]], [0, 2])
        self.assertIn("insert mode", self._row_errors(r[2])[0])   # CDC only on _default
        with self.assertRaises(gexc.MethodNotImplemented):
            c.create_write_stream(parent="projects/%s/datasets/%s/tables/%s" % (PROJECT, DATASET, name),
                                  write_stream=types.WriteStream(type_=types.WriteStream.Type.PENDING),
                                  metadata=md())

    def test_google_writer_pipelined(self):
        # Google's own AppendRowsStream: several requests in flight on one connection, futures
        # resolved in order; an injected INTERNAL fails exactly its own future.
        name = fresh()
        rest_create(name, EMP, pk=["id"])
        D.control("POST", "faults", {"rpc": "AppendRows", "table": "%s.%s.%s" % (PROJECT, DATASET, name),
                                     "nth": 3, "code": "INTERNAL"})
        template = types.AppendRowsRequest(write_stream=stream_name(name))
        pd = types.AppendRowsRequest.ProtoData()
        pd.writer_schema = types.ProtoSchema(proto_descriptor=EMP_DESC)
        template.proto_rows = pd
        stream = writer.AppendRowsStream(write_client(), template, metadata=md())
        futures = []
        for i in range(1, 9):
            req = types.AppendRowsRequest()
            data = types.AppendRowsRequest.ProtoData()
            data.rows = types.ProtoRows(serialized_rows=encode(EMP_CLS, [emp(i, "w%d" % i, csn="%x" % i)]))
            req.proto_rows = data
            futures.append(stream.send(req))
        results = []
        for f in futures:
            try:
                f.result(timeout=30)
                results.append("ok")
            except gexc.GoogleAPICallError as e:
                results.append(type(e).__name__)
        stream.close()
        self.assertEqual(results, ["ok", "ok", "InternalServerError", "ok", "ok", "ok", "ok", "ok"])
        self.assertEqual([x[0] for x in live(name)], [1, 2, 4, 5, 6, 7, 8])
        st = D.control("GET", "stats", appends="true")
        mine = [a for a in st["appends"] if a["table"] == "%s.%s.%s" % (PROJECT, DATASET, name)]
        self.assertTrue(mine[0]["has_schema"])
        self.assertEqual(len(mine), 8)


def main():
    global D
    D = Double()
    ok = False
    try:
        prog = unittest.main(module=__name__, exit=False, verbosity=2)
        ok = prog.result.wasSuccessful()
        n, f = prog.result.testsRun, len(prog.result.failures) + len(prog.result.errors)
        print("%d passed, %d failed" % (n - f, f))
    finally:
        D.stop()
        D.log.close()
        if not ok:
            sys.stderr.write("---- server log (%s)\n%s\n" % (D.log.name, open(D.log.name).read()[-20000:]))
        else:
            shutil.rmtree(D.dir, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
