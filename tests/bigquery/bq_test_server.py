#!/usr/bin/env python3
"""bq_test_server.py - a TEST DOUBLE of Google BigQuery, for cdcflow's tests only.

This is NOT BigQuery and not an emulator of all of it. It is a stand-in that cdcflow's
BigQuery target is tested against on a machine that cannot reach Google. It serves, on
127.0.0.1 only:

  gRPC (plaintext)  google.cloud.bigquery.storage.v1.BigQueryWrite: AppendRows (bidi stream),
                    GetWriteStream, CreateWriteStream (COMMITTED only). Requests and responses
                    are Google's own generated messages (PyPI google-cloud-bigquery-storage);
                    every row is decoded with Google's protobuf library from the DescriptorProto
                    the client sent, so the client's encoding is checked by code we did not write.
  HTTP              the BigQuery REST API v2 subset a CDC target needs (datasets, tables
                    get/insert/patch/update/delete with etags, tabledata.list, jobs.insert /
                    jobs.query for two DDL statements), an OAuth 2 token endpoint (JWT bearer
                    grant, RS256 checked against the service account key the test registered),
                    a fake GCE metadata server, and a control API under /_test/ (fault
                    injection, table dumps, statistics) that real BigQuery does not have.

BigQuery's change data capture rules are applied as documented (shared/specs/bigquery-cdc.md
sections 1 and 4): _CHANGE_TYPE UPSERT/DELETE by primary key, _CHANGE_SEQUENCE_NUMBER in its
hex-sections format compared section by section, equal or missing sequence numbers resolved
by ingestion order, a primary key required for CDC rows, no mixing of CDC and plain rows in
one connection, requests of at most 10 MB, the writer schema on the first request. Where the
docs say nothing and the double had to choose, tests/bigquery/README.md says what it chose.

Run:  bq_test_server.py --grpc-port 0 --http-port 0 --ready-file /tmp/x.json [options]
The ready file (JSON) names the ports once both servers listen. See --help and
tests/bigquery/README.md for the control API.
"""

import argparse
import base64
import binascii
import concurrent.futures
import datetime
import decimal
import hashlib
import http.server
import itertools
import json
import os
import re
import secrets
import signal
import sys
import threading
import time
import urllib.parse

import grpc
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from google.cloud.bigquery_storage_v1 import types as bqs_types
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, timestamp_pb2
from google.protobuf import any_pb2
from google.protobuf.descriptor import FieldDescriptor as FD
from google.rpc import status_pb2

# The raw protobuf classes behind Google's proto-plus wrappers: the server works on these
# directly (proto-plus is only a Python-side convenience layer of the same messages).
AppendRowsRequest = bqs_types.AppendRowsRequest.pb()
AppendRowsResponse = bqs_types.AppendRowsResponse.pb()
GetWriteStreamRequest = bqs_types.GetWriteStreamRequest.pb()
CreateWriteStreamRequest = bqs_types.CreateWriteStreamRequest.pb()
WriteStream = bqs_types.WriteStream.pb()
TableSchemaPb = bqs_types.TableSchema.pb()
TableFieldSchemaPb = bqs_types.TableFieldSchema.pb()
RowErrorPb = bqs_types.RowError.pb()
StorageErrorPb = bqs_types.StorageError.pb()

SERVICE = "google.cloud.bigquery.storage.v1.BigQueryWrite"

# BigQuery's documented AppendRows request limit (quotas: "AppendRows request size 10 MB";
# Google's v1beta2 Java writer used 10 * 1000 * 1000). Configurable with --max-request-bytes.
DEFAULT_MAX_REQUEST_BYTES = 10 * 1000 * 1000

SCOPE_BIGQUERY = "https://www.googleapis.com/auth/bigquery"
SCOPE_INSERTDATA = "https://www.googleapis.com/auth/bigquery.insertdata"
SCOPE_CLOUD = "https://www.googleapis.com/auth/cloud-platform"
GOOGLE_TOKEN_URI = "https://oauth2.googleapis.com/token"
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"

PSEUDO_CHANGE_TYPE = "_CHANGE_TYPE"
PSEUDO_CSN = "_CHANGE_SEQUENCE_NUMBER"
RESERVED_PREFIXES = ("_TABLE_", "_FILE_", "_PARTITION", "_ROW_TIMESTAMP", "__ROOT__",
                     "_COLIDENTIFIER", "_CHANGE_SEQUENCE_NUMBER", "_CHANGE_TYPE",
                     "_CHANGE_TIMESTAMP")
MAX_PK_COLUMNS = 16
MAX_CLUSTERING = 4
ROW_ERRORS_MESSAGE = ("Errors found while processing rows. Please refer to the row_errors field "
                      "for details. The list may not be complete because of the size limitations. "
                      "Entity: %s")
# _CHANGE_SEQUENCE_NUMBER: at most 4 sections of 1..16 hex digits separated by '/'.
CSN_RE = re.compile(r"^[0-9A-Fa-f]{1,16}(/[0-9A-Fa-f]{1,16}){0,3}$")
STREAM_RE = re.compile(r"^projects/([^/]+)/datasets/([^/]+)/tables/([^/]+)/streams/([^/]+)$")
TABLE_PARENT_RE = re.compile(r"^projects/([^/]+)/datasets/([^/]+)/tables/([^/]+)$")
NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,299}$")
ID_RE = re.compile(r"^[A-Za-z0-9_\-]{1,1024}$")


def log(msg):
    sys.stderr.write("bq_test_server: %s\n" % msg)
    sys.stderr.flush()


def now_ms():
    return int(time.time() * 1000)


def new_etag():
    return base64.b64encode(secrets.token_bytes(12)).decode()


# ============================================================================ errors

class ApiError(Exception):
    """An error with both faces: an HTTP status + reason for REST, a gRPC code for gRPC."""

    HTTP_STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED",
                   404: "NOT_FOUND", 409: "ALREADY_EXISTS", 412: "FAILED_PRECONDITION",
                   429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 501: "NOT_IMPLEMENTED",
                   503: "UNAVAILABLE"}

    def __init__(self, http, reason, message, grpc_code=None, storage_code=None, entity=""):
        super().__init__(message)
        self.http = http
        self.reason = reason
        self.message = message
        self.grpc_code = grpc_code or {400: grpc.StatusCode.INVALID_ARGUMENT,
                                       401: grpc.StatusCode.UNAUTHENTICATED,
                                       403: grpc.StatusCode.PERMISSION_DENIED,
                                       404: grpc.StatusCode.NOT_FOUND,
                                       409: grpc.StatusCode.ALREADY_EXISTS,
                                       412: grpc.StatusCode.FAILED_PRECONDITION,
                                       429: grpc.StatusCode.RESOURCE_EXHAUSTED,
                                       500: grpc.StatusCode.INTERNAL,
                                       501: grpc.StatusCode.UNIMPLEMENTED,
                                       503: grpc.StatusCode.UNAVAILABLE}.get(http, grpc.StatusCode.UNKNOWN)
        self.storage_code = storage_code
        self.entity = entity

    def rest_body(self):
        # The shape of a Google API error (the one google-cloud-bigquery parses).
        return {"error": {"code": self.http, "message": self.message,
                          "errors": [{"message": self.message, "domain": "global", "reason": self.reason}],
                          "status": self.HTTP_STATUS.get(self.http, "UNKNOWN")}}

    def status_pb(self):
        st = status_pb2.Status(code=self.grpc_code.value[0], message=self.message)
        if self.storage_code is not None:
            se = StorageErrorPb(code=self.storage_code, entity=self.entity, error_message=self.message)
            anyv = any_pb2.Any()
            anyv.Pack(se)
            st.details.append(anyv)
        return st


def bad(message, reason="invalid"):
    return ApiError(400, reason, message)


def not_found(what):
    return ApiError(404, "notFound", "Not found: %s" % what)


class RowProblem(Exception):
    """A bad value in one row: becomes a RowError (FIELDS_ERROR) for that row's index."""


# ============================================================================ schema

TYPE_ALIASES = {"INT64": "INTEGER", "INTEGER": "INTEGER", "FLOAT64": "FLOAT", "FLOAT": "FLOAT",
                "BOOL": "BOOLEAN", "BOOLEAN": "BOOLEAN", "STRUCT": "RECORD", "RECORD": "RECORD",
                "STRING": "STRING", "BYTES": "BYTES", "NUMERIC": "NUMERIC", "BIGNUMERIC": "BIGNUMERIC",
                "DECIMAL": "NUMERIC", "BIGDECIMAL": "BIGNUMERIC",
                "TIMESTAMP": "TIMESTAMP", "DATE": "DATE", "TIME": "TIME", "DATETIME": "DATETIME",
                "GEOGRAPHY": "GEOGRAPHY", "JSON": "JSON", "INTERVAL": "INTERVAL", "RANGE": "RANGE"}
# REST (legacy) type name -> storage API TableFieldSchema.Type enum name
STORAGE_TYPE = {"INTEGER": "INT64", "FLOAT": "DOUBLE", "BOOLEAN": "BOOL", "RECORD": "STRUCT"}
MODES = ("NULLABLE", "REQUIRED", "REPEATED")


def normalize_fields(fields, where="schema"):
    """Validates a REST schema field list; returns a normalized deep copy (legacy type names,
    explicit modes), as BigQuery returns it."""
    if not isinstance(fields, list):
        raise bad("Invalid %s: fields must be a list" % where)
    out, seen = [], set()
    for f in fields:
        if not isinstance(f, dict) or not isinstance(f.get("name"), str):
            raise bad("Invalid %s: every field needs a name" % where)
        name = f["name"]
        if not NAME_RE.match(name):
            raise bad("Invalid field name \"%s\". Fields must contain only letters, numbers, and "
                      "underscores, start with a letter or underscore, and be at most 300 characters long."
                      % name)
        if any(name.upper().startswith(p) for p in RESERVED_PREFIXES):
            raise bad("Invalid field name \"%s\": the prefix is reserved by BigQuery" % name)
        if name.lower() in seen:
            raise bad("Field %s already exists in schema" % name)
        seen.add(name.lower())
        t = TYPE_ALIASES.get(str(f.get("type", "")).upper())
        if t is None:
            raise bad("Invalid field type %r for field %s" % (f.get("type"), name))
        mode = str(f.get("mode") or "NULLABLE").upper()
        if mode not in MODES:
            raise bad("Invalid field mode %r for field %s" % (f.get("mode"), name))
        n = {"name": name, "type": t, "mode": mode}
        for k in ("description", "maxLength", "precision", "scale", "defaultValueExpression",
                  "collation", "policyTags"):
            if k in f:
                n[k] = f[k]
        if t == "RECORD":
            if not f.get("fields"):
                raise bad("Field %s is type RECORD but has no schema" % name)
            n["fields"] = normalize_fields(f["fields"], where)
        elif f.get("fields"):
            raise bad("Field %s has subfields but is not a RECORD" % name)
        if t == "RANGE":
            raise ApiError(501, "notImplemented", "RANGE columns are not supported by the BigQuery test double")
        out.append(n)
    return out


def field_map(fields):
    return {f["name"].lower(): f for f in fields}


def check_schema_change(old, new, path=""):
    """BigQuery's rules for a schema update: columns may be added (NULLABLE or REPEATED),
    REQUIRED may be relaxed to NULLABLE; nothing may be removed, retyped or tightened."""
    om, nm = field_map(old), field_map(new)
    for lname, of in om.items():
        nf = nm.get(lname)
        full = path + of["name"]
        if nf is None:
            raise bad("Provided Schema does not match Table. Field %s is missing in new schema" % full)
        if nf["type"] != of["type"]:
            raise bad("Provided Schema does not match Table. Field %s has changed type from %s to %s"
                      % (full, of["type"], nf["type"]))
        if of["mode"] != nf["mode"] and not (of["mode"] == "REQUIRED" and nf["mode"] == "NULLABLE"):
            raise bad("Provided Schema does not match Table. Field %s has changed mode from %s to %s"
                      % (full, of["mode"], nf["mode"]))
        if of["type"] == "RECORD":
            check_schema_change(of["fields"], nf["fields"], full + ".")
    for lname, nf in nm.items():
        if lname not in om and nf["mode"] == "REQUIRED":
            raise bad("Provided Schema does not match Table. Cannot add required fields to an existing "
                      "schema. (field: %s)" % (path + nf["name"]))


def storage_schema(fields):
    """REST fields -> storage API TableSchema message (what GetWriteStream FULL returns)."""
    ts = TableSchemaPb()
    for f in fields:
        ts.fields.append(storage_field(f))
    return ts


def storage_field(f):
    p = TableFieldSchemaPb()
    p.name = f["name"]
    p.type_ = TableFieldSchemaPb.Type.Value(STORAGE_TYPE.get(f["type"], f["type"]))
    p.mode = TableFieldSchemaPb.Mode.Value(f["mode"])
    if f.get("description"):
        p.description = f["description"]
    for k, attr in (("maxLength", "max_length"), ("precision", "precision"), ("scale", "scale")):
        if k in f:
            setattr(p, attr, int(f[k]))
    if f.get("defaultValueExpression"):
        p.default_value_expression = f["defaultValueExpression"]
    for sub in f.get("fields", []):
        p.fields.append(storage_field(sub))
    return p


# ============================================================================ intervals

INTERVAL_UNITS = {"MICROSECOND": 1, "MILLISECOND": 1000, "SECOND": 10**6, "MINUTE": 60 * 10**6,
                  "HOUR": 3600 * 10**6, "DAY": None, "WEEK": None, "MONTH": None, "QUARTER": None,
                  "YEAR": None}
CANON_INTERVAL_RE = re.compile(
    r"^\s*(-?)(\d+)-(\d+)\s+(-?\d+)\s+(-?)(\d+):(\d+):(\d+)(?:\.(\d{1,6}))?\s*$")


class Interval:
    """BigQuery INTERVAL as (months, days, micros); canonical text 'Y-M D H:M:S[.F]'."""

    def __init__(self, months=0, days=0, micros=0):
        self.months, self.days, self.micros = months, days, micros

    @classmethod
    def parse_canonical(cls, s):
        m = CANON_INTERVAL_RE.match(s)
        if not m:
            raise ValueError("invalid INTERVAL value %r (expected 'Y-M D H:M:S[.F]')" % s)
        ymneg, y, mo, d, neg, h, mi, sec, frac = m.groups()
        months = (int(y) * 12 + int(mo)) * (-1 if ymneg else 1)
        micros = ((int(h) * 60 + int(mi)) * 60 + int(sec)) * 10**6 + int((frac or "0").ljust(6, "0"))
        if int(mi) > 59 or int(sec) > 59 or int(mo) > 11:
            raise ValueError("invalid INTERVAL value %r" % s)
        return cls(months, int(d), -micros if neg else micros)

    @classmethod
    def from_unit(cls, n, unit):
        unit = unit.upper()
        if unit not in INTERVAL_UNITS:
            raise ValueError("unknown INTERVAL unit %s" % unit)
        if unit == "YEAR":
            return cls(months=12 * n)
        if unit == "QUARTER":
            return cls(months=3 * n)
        if unit == "MONTH":
            return cls(months=n)
        if unit == "WEEK":
            return cls(days=7 * n)
        if unit == "DAY":
            return cls(days=n)
        return cls(micros=n * INTERVAL_UNITS[unit])

    def canonical(self):
        y, mo = divmod(abs(self.months), 12)
        sign = "-" if self.months < 0 else ""
        us = abs(self.micros)
        secs, frac = divmod(us, 10**6)
        h, rem = divmod(secs, 3600)
        mi, s = divmod(rem, 60)
        t = "%s%d:%d:%d" % ("-" if self.micros < 0 else "", h, mi, s)
        if frac:
            t += ("." + "%06d" % frac).rstrip("0")
        return "%s%d-%d %d %s" % (sign, y, mo, self.days, t)


# ============================================================================ values

EPOCH_DATE = datetime.date(1970, 1, 1)
MIN_DATE_DAYS, MAX_DATE_DAYS = -719162, 2932896
MIN_TS_MICROS, MAX_TS_MICROS = -62135596800 * 10**6, 253402300799 * 10**6 + 999999
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
NUMERIC_SCALE, BIGNUMERIC_SCALE = 9, 38
DATE_RE = re.compile(r"^(\d{4})-(\d{1,2})-(\d{1,2})$")
TIME_RE = re.compile(r"^(\d{1,2}):(\d{1,2}):(\d{1,2})(?:\.(\d{1,6}))?$")
DATETIME_RE = re.compile(r"^(\d{4})-(\d{1,2})-(\d{1,2})[T ](\d{1,2}):(\d{1,2}):(\d{1,2})(?:\.(\d{1,6}))?$")
TS_RE = re.compile(r"^(\d{4})-(\d{1,2})-(\d{1,2})[T ](\d{1,2}):(\d{1,2}):(\d{1,2})(?:\.(\d{1,6}))?"
                   r"\s*(Z|UTC|[+-]\d{2}(?::?\d{2})?)?$")
NUMERIC_RE = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")
GEO_RE = re.compile(r"^\s*(POINT|LINESTRING|POLYGON|MULTIPOINT|MULTILINESTRING|MULTIPOLYGON|"
                    r"GEOMETRYCOLLECTION)\s*(EMPTY|\()", re.I)

INT_TYPES = {FD.TYPE_INT32, FD.TYPE_SINT32, FD.TYPE_SFIXED32, FD.TYPE_UINT32, FD.TYPE_FIXED32,
             FD.TYPE_INT64, FD.TYPE_SINT64, FD.TYPE_SFIXED64}
UINT64_TYPES = {FD.TYPE_UINT64, FD.TYPE_FIXED64}
FLOAT_TYPES = {FD.TYPE_DOUBLE, FD.TYPE_FLOAT}
INT32ISH = {FD.TYPE_INT32, FD.TYPE_SINT32, FD.TYPE_SFIXED32, FD.TYPE_UINT32, FD.TYPE_FIXED32}
INT64ISH = {FD.TYPE_INT64, FD.TYPE_SINT64, FD.TYPE_SFIXED64}
# Which proto field types BigQuery accepts for a column type (Storage Write API
# "supported data types"; shared/specs/bigquery-cdc.md section 4).
ACCEPTED = {
    "STRING": {FD.TYPE_STRING},
    "BYTES": {FD.TYPE_BYTES, FD.TYPE_STRING},
    "INTEGER": INT_TYPES | {FD.TYPE_ENUM},
    "FLOAT": FLOAT_TYPES,
    "BOOLEAN": {FD.TYPE_BOOL} | INT_TYPES,
    "NUMERIC": {FD.TYPE_STRING, FD.TYPE_BYTES} | INT_TYPES | UINT64_TYPES | FLOAT_TYPES,
    "BIGNUMERIC": {FD.TYPE_STRING, FD.TYPE_BYTES} | INT_TYPES | UINT64_TYPES | FLOAT_TYPES,
    "DATE": INT_TYPES | {FD.TYPE_STRING},
    "TIMESTAMP": INT_TYPES | {FD.TYPE_STRING},
    "DATETIME": {FD.TYPE_STRING} | INT64ISH,
    "TIME": {FD.TYPE_STRING} | INT64ISH,
    "JSON": {FD.TYPE_STRING},
    "GEOGRAPHY": {FD.TYPE_STRING},
    "INTERVAL": {FD.TYPE_STRING},
    "RECORD": {FD.TYPE_MESSAGE, FD.TYPE_GROUP},
}
PROTO_TYPE_NAMES = {v: k[5:].lower() for k, v in vars(FD).items() if k.startswith("TYPE_")}


def _micros(frac):
    return int((frac or "0").ljust(6, "0"))


def fmt_time(h, mi, s, us):
    t = "%02d:%02d:%02d" % (h, mi, s)
    return t + (".%06d" % us if us else "")


def conv_date(v, ptype):
    if ptype == FD.TYPE_STRING:
        m = DATE_RE.match(v)
        if not m:
            raise RowProblem("Invalid date string \"%s\"" % v)
        try:
            return datetime.date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
        except ValueError:
            raise RowProblem("Invalid date string \"%s\"" % v)
    if not MIN_DATE_DAYS <= v <= MAX_DATE_DAYS:
        raise RowProblem("Date value %d (days since 1970-01-01) is out of range [%d, %d]"
                         % (v, MIN_DATE_DAYS, MAX_DATE_DAYS))
    return EPOCH_DATE + datetime.timedelta(days=v)


def conv_timestamp(v, ptype):
    if ptype == FD.TYPE_STRING:
        m = TS_RE.match(v.strip())
        if not m:
            raise RowProblem("Invalid timestamp string \"%s\"" % v)
        y, mo, d, h, mi, s, frac, tz = m.groups()
        try:
            dt = datetime.datetime(int(y), int(mo), int(d), int(h), int(mi), int(s), _micros(frac))
        except ValueError:
            raise RowProblem("Invalid timestamp string \"%s\"" % v)
        off = 0
        if tz and tz not in ("Z", "UTC"):
            sign = -1 if tz[0] == "-" else 1
            digits = tz[1:].replace(":", "")
            off = sign * (int(digits[:2]) * 60 + int(digits[2:4] or 0))
        days = (dt.date() - EPOCH_DATE).days
        us = ((days * 86400 + dt.hour * 3600 + dt.minute * 60 + dt.second) - off * 60) * 10**6 + dt.microsecond
        v = us
    if not MIN_TS_MICROS <= v <= MAX_TS_MICROS:
        raise RowProblem("Timestamp value %d (microseconds since the epoch) is out of range" % v)
    return v


def conv_datetime(v, ptype):
    if ptype == FD.TYPE_STRING:
        m = DATETIME_RE.match(v)
        if not m:
            raise RowProblem("Invalid datetime string \"%s\"" % v)
        y, mo, d, h, mi, s, frac = m.groups()
        y, mo, d, h, mi, s, us = int(y), int(mo), int(d), int(h), int(mi), int(s), _micros(frac)
    else:
        # CivilTimeEncoder packed int64: year<<46 | month<<42 | day<<37 | hour<<32 | minute<<26
        # | second<<20 | micros (the 40-bit seconds part shifted by 20).
        if v < 0:
            raise RowProblem("Invalid packed DATETIME value %d" % v)
        us = v & 0xFFFFF
        secs = v >> 20
        s, mi, h = secs & 0x3F, (secs >> 6) & 0x3F, (secs >> 12) & 0x1F
        d, mo, y = (secs >> 17) & 0x1F, (secs >> 22) & 0xF, secs >> 26
    try:
        datetime.datetime(y, mo, d, h, mi, s, us)
    except ValueError:
        raise RowProblem("Invalid DATETIME value %r" % v)
    return "%04d-%02d-%02dT%s" % (y, mo, d, fmt_time(h, mi, s, us))


def conv_time(v, ptype):
    if ptype == FD.TYPE_STRING:
        m = TIME_RE.match(v)
        if not m:
            raise RowProblem("Invalid time string \"%s\"" % v)
        h, mi, s, us = int(m.group(1)), int(m.group(2)), int(m.group(3)), _micros(m.group(4))
    else:
        # CivilTimeEncoder packed int64: hour<<32 | minute<<26 | second<<20 | micros
        if v < 0:
            raise RowProblem("Invalid packed TIME value %d" % v)
        us = v & 0xFFFFF
        secs = v >> 20
        s, mi, h = secs & 0x3F, (secs >> 6) & 0x3F, secs >> 12
    if h > 23 or mi > 59 or s > 59 or us > 999999:
        raise RowProblem("Invalid TIME value %r" % v)
    return fmt_time(h, mi, s, us)


def conv_numeric(v, ptype, big):
    scale = BIGNUMERIC_SCALE if big else NUMERIC_SCALE
    if ptype == FD.TYPE_BYTES:
        # BigDecimalByteStringEncoder: little-endian two's complement of the unscaled value.
        if not v:
            raise RowProblem("Invalid %s bytes: empty" % ("BIGNUMERIC" if big else "NUMERIC"))
        d = decimal.Decimal(int.from_bytes(v, "little", signed=True)).scaleb(-scale)
    elif ptype == FD.TYPE_STRING:
        if not NUMERIC_RE.match(v.strip()):
            raise RowProblem("Invalid %s value \"%s\"" % ("BIGNUMERIC" if big else "NUMERIC", v))
        d = decimal.Decimal(v.strip())
    elif ptype in FLOAT_TYPES:
        if v != v or v in (float("inf"), float("-inf")):
            raise RowProblem("Invalid NUMERIC value %r" % v)
        d = decimal.Decimal(repr(v))
    else:
        d = decimal.Decimal(v)
    with decimal.localcontext() as ctx:
        ctx.prec = 200
        d = d.quantize(decimal.Decimal(1).scaleb(-scale), rounding=decimal.ROUND_HALF_UP)
        unscaled = int(d.scaleb(scale))
    if big:
        ok = -(1 << 255) <= unscaled <= (1 << 255) - 1
    else:
        ok = abs(unscaled) < 10**38
    if not ok:
        raise RowProblem("%s value %s is out of range" % ("BIGNUMERIC" if big else "NUMERIC", v))
    return canon_decimal(d)


def canon_decimal(d):
    s = format(d, "f")
    if "." in s:
        s = s.rstrip("0").rstrip(".")
    if s in ("-0", ""):
        s = "0"
    return s


class Plan:
    """How the writer's message maps onto the table: built once per (writer schema, table
    schema) and checked when it is built, so a mismatch fails the request, not each row."""

    def __init__(self, desc, fields, stream, top=True):
        self.cols = []          # (column, proto field or None)
        self.change_type = None
        self.csn = None
        by_name = {f.name.lower(): f for f in desc.fields}
        extra = []
        cols = field_map(fields)
        for lname, pf in by_name.items():
            if top and lname == PSEUDO_CHANGE_TYPE.lower():
                if pf.type != FD.TYPE_STRING or pf.is_repeated:
                    raise ApiError(400, "invalid", "%s must be a singular string field in the writer schema, "
                                   "not %s. Entity: %s" % (PSEUDO_CHANGE_TYPE, PROTO_TYPE_NAMES[pf.type], stream))
                self.change_type = pf
            elif top and lname == PSEUDO_CSN.lower():
                if pf.type != FD.TYPE_STRING or pf.is_repeated:
                    raise ApiError(400, "invalid", "%s must be a singular string field in the writer schema, "
                                   "not %s. Entity: %s" % (PSEUDO_CSN, PROTO_TYPE_NAMES[pf.type], stream))
                self.csn = pf
            elif lname not in cols:
                extra.append(pf.name)
        if extra:
            raise ApiError(400, "invalid", "Input schema has more fields than BigQuery schema, extra fields: "
                           "'%s' Entity: %s" % (",".join(extra), stream),
                           storage_code=StorageErrorPb.StorageErrorCode.SCHEMA_MISMATCH_EXTRA_FIELDS,
                           entity=stream)
        for col in fields:
            pf = by_name.get(col["name"].lower())
            sub = None
            if pf is not None:
                if pf.type not in ACCEPTED[col["type"]]:
                    raise ApiError(400, "invalid", "The proto field mismatched with BigQuery field at %s, the "
                                   "proto field type %s, BigQuery field type %s Entity: %s"
                                   % (pf.full_name, PROTO_TYPE_NAMES[pf.type], col["type"], stream))
                if (pf.is_repeated) != (col["mode"] == "REPEATED"):
                    raise ApiError(400, "invalid", "The proto field mismatched with BigQuery field at %s: a %s "
                                   "proto field for a %s column Entity: %s"
                                   % (pf.full_name, "repeated" if pf.is_repeated else "singular",
                                      col["mode"], stream))
                if col["type"] == "RECORD":
                    sub = Plan(pf.message_type, col["fields"], stream, top=False)
            self.cols.append((col, pf, sub))

    def row(self, msg):
        """Decoded message -> dict column name -> canonical value (None = NULL)."""
        out = {}
        for col, pf, sub in self.cols:
            name = col["name"]
            if pf is None:
                v = [] if col["mode"] == "REPEATED" else None
            elif pf.is_repeated:
                v = [self.value(col, pf, sub, x) for x in getattr(msg, pf.name)]
            elif msg.HasField(pf.name):
                v = self.value(col, pf, sub, getattr(msg, pf.name))
            else:
                v = None
            if v is None and col["mode"] == "REQUIRED":
                raise RowProblem("Field %s: a value is required (REQUIRED column) but the row has none" % name)
            out[name] = v
        return out

    def value(self, col, pf, sub, v):
        t = col["type"]
        name = col["name"]
        try:
            if t == "RECORD":
                return sub.row(v)
            if t == "STRING":
                if "maxLength" in col and len(v) > int(col["maxLength"]):
                    raise RowProblem("Field %s: length %d exceeds maxLength %s" % (name, len(v), col["maxLength"]))
                return v
            if t == "BYTES":
                b = v.encode() if isinstance(v, str) else bytes(v)
                if "maxLength" in col and len(b) > int(col["maxLength"]):
                    raise RowProblem("Field %s: length %d exceeds maxLength %s" % (name, len(b), col["maxLength"]))
                return b
            if t == "INTEGER":
                return int(v)
            if t == "FLOAT":
                return float(v)
            if t == "BOOLEAN":
                return bool(v)
            if t in ("NUMERIC", "BIGNUMERIC"):
                return conv_numeric(v, pf.type, t == "BIGNUMERIC")
            if t == "DATE":
                return conv_date(v, pf.type)
            if t == "TIMESTAMP":
                return conv_timestamp(v, pf.type)
            if t == "DATETIME":
                return conv_datetime(v, pf.type)
            if t == "TIME":
                return conv_time(v, pf.type)
            if t == "JSON":
                try:
                    return json.dumps(json.loads(v), separators=(",", ":"), sort_keys=True)
                except ValueError as e:
                    raise RowProblem("Field %s: invalid JSON: %s" % (name, e))
            if t == "GEOGRAPHY":
                s = v.strip()
                if GEO_RE.match(s):
                    return s
                try:
                    if isinstance(json.loads(s), dict):
                        return s
                except ValueError:
                    pass
                raise RowProblem("Field %s: invalid GEOGRAPHY value (neither WKT nor GeoJSON): %.60s" % (name, v))
            if t == "INTERVAL":
                try:
                    return Interval.parse_canonical(v).canonical()
                except ValueError as e:
                    raise RowProblem("Field %s: %s" % (name, e))
        except RowProblem as e:
            if str(e).startswith("Field "):
                raise
            raise RowProblem("Field %s: %s" % (name, e))
        raise RowProblem("Field %s: unsupported column type %s" % (name, t))


# ============================================================================ output formats

def json_value(col, v):
    """Canonical value -> the JSON of the /_test dump (documented in README.md)."""
    if v is None:
        return None
    if col["mode"] == "REPEATED":
        c = dict(col, mode="NULLABLE")
        return [json_value(c, x) for x in v]
    t = col["type"]
    if t == "RECORD":
        return {f["name"]: json_value(f, v.get(f["name"])) for f in col["fields"]}
    if t == "BYTES":
        return base64.b64encode(v).decode()
    if t == "DATE":
        return v.isoformat()
    if t == "TIMESTAMP":
        return ts_iso(v)
    if t == "FLOAT":
        if v != v or v in (float("inf"), float("-inf")):
            return str(v)
        return v
    return v


def ts_iso(us):
    secs, frac = divmod(us, 10**6)
    days, rem = divmod(secs, 86400)
    d = EPOCH_DATE + datetime.timedelta(days=days)
    h, rem = divmod(rem, 3600)
    mi, s = divmod(rem, 60)
    return "%04d-%02d-%02dT%02d:%02d:%02d.%06dZ" % (d.year, d.month, d.day, h, mi, s, frac)


def fv_value(col, v, int64_ts):
    """Canonical value -> tabledata.list's {"v": ...} cell format."""
    if v is None:
        return None
    if col["mode"] == "REPEATED":
        c = dict(col, mode="NULLABLE")
        return [{"v": fv_value(c, x, int64_ts)} for x in v]
    t = col["type"]
    if t == "RECORD":
        return {"f": [{"v": fv_value(f, v.get(f["name"]), int64_ts)} for f in col["fields"]]}
    if t == "BOOLEAN":
        return "true" if v else "false"
    if t == "BYTES":
        return base64.b64encode(v).decode()
    if t == "DATE":
        return v.isoformat()
    if t == "TIMESTAMP":
        if int64_ts:
            return str(v)
        secs, frac = divmod(v, 10**6)
        return "%d.%06d" % (secs, frac) if v >= 0 else repr(v / 1e6)
    if t == "FLOAT":
        if v != v:
            return "NaN"
        if v in (float("inf"), float("-inf")):
            return "Infinity" if v > 0 else "-Infinity"
        return repr(v)
    return str(v)


# ============================================================================ CDC

def parse_csn(s):
    """'_CHANGE_SEQUENCE_NUMBER' text -> tuple of section values; ValueError when malformed."""
    if not CSN_RE.match(s):
        raise ValueError(s)
    return tuple(int(x, 16) for x in s.split("/"))


class Entry:
    __slots__ = ("row", "deleted", "csn", "req", "idx")

    def __init__(self, row, deleted, csn, req, idx):
        self.row, self.deleted, self.csn, self.req, self.idx = row, deleted, csn, req, idx


# ============================================================================ store

class Table:
    def __init__(self, project, dataset, table_id, resource):
        self.project, self.dataset, self.table_id = project, dataset, table_id
        self.resource = resource
        self.cdc = {}            # key tuple -> Entry (latest version per primary key, tombstones too)
        self.appended = []       # rows written without _CHANGE_TYPE (plain appends)
        self.generation = 1      # bumped on every schema change (updated_schema, plan cache)
        self.stats = {"upserts": 0, "deletes": 0, "ignored_older": 0, "appended": 0,
                      "requests": 0, "rows": 0}
        self.warnings = []

    @property
    def fields(self):
        return self.resource.get("schema", {}).get("fields", [])

    def pk(self):
        return ((self.resource.get("tableConstraints") or {}).get("primaryKey") or {}).get("columns") or []

    def ref(self):
        return "%s:%s.%s" % (self.project, self.dataset, self.table_id)

    def touch(self, schema_changed=False):
        self.resource["etag"] = new_etag()
        self.resource["lastModifiedTime"] = str(now_ms())
        if schema_changed:
            self.generation += 1

    def live_rows(self):
        rows = [e.row for e in self.cdc.values() if not e.deleted]
        return rows + self.appended

    def key_of(self, row):
        out = []
        for c in self.pk():
            real = next(f["name"] for f in self.fields if f["name"].lower() == c.lower())
            v = row.get(real)
            if isinstance(v, (dict, list)):
                v = json.dumps(v, sort_keys=True, default=str)
            out.append(v)
        return tuple(out)


class Store:
    def __init__(self, same_request_tie):
        self.lock = threading.RLock()
        self.datasets = {}
        self.tables = {}
        self.jobs = {}
        self.streams = {}        # created (non-default) stream name -> {"table", "rows", "type"}
        self.same_request_tie = same_request_tie
        self.ingest = itertools.count(1)

    def dataset(self, p, d):
        ds = self.datasets.get((p, d))
        if ds is None:
            raise not_found("Dataset %s:%s" % (p, d))
        return ds

    def table(self, p, d, t):
        self.dataset(p, d)
        tb = self.tables.get((p, d, t))
        if tb is None:
            raise not_found("Table %s:%s.%s" % (p, d, t))
        return tb

    def add_dataset(self, p, d, body=None):
        if not ID_RE.match(d):
            raise bad("Invalid dataset ID \"%s\"" % d)
        if (p, d) in self.datasets:
            raise ApiError(409, "duplicate", "Already Exists: Dataset %s:%s" % (p, d))
        ds = {"kind": "bigquery#dataset", "id": "%s:%s" % (p, d), "etag": new_etag(),
              "datasetReference": {"projectId": p, "datasetId": d},
              "location": (body or {}).get("location", "US"),
              "creationTime": str(now_ms()), "lastModifiedTime": str(now_ms())}
        for k in ("friendlyName", "description", "labels", "defaultTableExpirationMs"):
            if body and k in body:
                ds[k] = body[k]
        self.datasets[(p, d)] = ds
        return ds

    # ------------------------------------------------------------- table resources

    def validate_table_parts(self, res, fields):
        names = {f["name"].lower(): f for f in fields}
        tc = res.get("tableConstraints")
        if tc is not None:
            if not isinstance(tc, dict):
                raise bad("Invalid tableConstraints")
            if tc.get("foreignKeys"):
                raise ApiError(501, "notImplemented", "foreign keys are not supported by the BigQuery test double")
            pk = tc.get("primaryKey")
            if pk is not None:
                cols = pk.get("columns") if isinstance(pk, dict) else None
                if not isinstance(cols, list) or not cols:
                    raise bad("Invalid primary key: columns must be a non-empty list")
                self.check_pk(cols, names)
        cl = res.get("clustering")
        if cl is not None:
            cols = cl.get("fields") if isinstance(cl, dict) else None
            if not isinstance(cols, list) or not cols:
                raise bad("Invalid clustering: fields must be a non-empty list")
            if len(cols) > MAX_CLUSTERING:
                raise bad("Too many clustering fields: %d, only %d are allowed." % (len(cols), MAX_CLUSTERING))
            for c in cols:
                f = names.get(str(c).lower())
                if f is None:
                    raise bad("The field specified for clustering cannot be found in the schema. "
                              "Invalid field: %s." % c)
                if f["mode"] == "REPEATED" or f["type"] in ("RECORD", "FLOAT", "JSON", "INTERVAL"):
                    raise bad("Field %s is of type %s%s which is not supported for clustering."
                              % (c, "REPEATED " if f["mode"] == "REPEATED" else "", f["type"]))
        if "maxStaleness" in res and res["maxStaleness"] is not None:
            try:
                res["maxStaleness"] = Interval.parse_canonical(str(res["maxStaleness"])).canonical()
            except ValueError as e:
                raise bad("Invalid maxStaleness: %s" % e)

    @staticmethod
    def check_pk(cols, names):
        if len(cols) > MAX_PK_COLUMNS:
            raise bad("Primary key has %d columns; at most %d are allowed." % (len(cols), MAX_PK_COLUMNS))
        seen = set()
        for c in cols:
            f = names.get(str(c).lower())
            if f is None:
                raise bad("Primary key column %s not found in table schema." % c)
            if c.lower() in seen:
                raise bad("Duplicate primary key column %s." % c)
            seen.add(c.lower())
            if f["mode"] == "REPEATED" or f["type"] in ("RECORD", "JSON", "GEOGRAPHY", "INTERVAL"):
                raise bad("Primary key column %s has type %s%s, which cannot be a primary key."
                          % (c, "REPEATED " if f["mode"] == "REPEATED" else "", f["type"]))

    def insert_table(self, p, d, body):
        self.dataset(p, d)
        ref = body.get("tableReference") or {}
        t = ref.get("tableId")
        if not t or not ID_RE.match(str(t)):
            raise bad("Invalid table ID \"%s\"" % t)
        if ref.get("projectId", p) != p or ref.get("datasetId", d) != d:
            raise bad("The tableReference does not match the request path")
        if (p, d, t) in self.tables:
            raise ApiError(409, "duplicate", "Already Exists: Table %s:%s.%s" % (p, d, t))
        if body.get("view") or body.get("materializedView") or body.get("externalDataConfiguration"):
            raise ApiError(501, "notImplemented", "views and external tables are not supported by the "
                           "BigQuery test double")
        fields = normalize_fields((body.get("schema") or {}).get("fields", []))
        res = {"kind": "bigquery#table", "id": "%s:%s.%s" % (p, d, t),
               "tableReference": {"projectId": p, "datasetId": d, "tableId": t},
               "schema": {"fields": fields}, "type": "TABLE",
               "creationTime": str(now_ms()), "location": self.datasets[(p, d)]["location"]}
        for k in ("tableConstraints", "clustering", "maxStaleness", "description", "friendlyName",
                  "labels", "expirationTime", "timePartitioning", "requirePartitionFilter"):
            if k in body:
                res[k] = body[k]
        self.validate_table_parts(res, fields)
        tb = Table(p, d, t, res)
        tb.touch()
        self.tables[(p, d, t)] = tb
        return tb

    def update_table(self, tb, body, replace):
        res = json.loads(json.dumps(tb.resource))
        schema_changed = False
        if "schema" in body or replace:
            new_fields = normalize_fields((body.get("schema") or {}).get("fields", []))
            check_schema_change(tb.fields, new_fields)
            schema_changed = json.dumps(new_fields) != json.dumps(tb.fields)
            res["schema"] = {"fields": new_fields}
        for k in ("tableConstraints", "clustering", "maxStaleness", "description", "friendlyName",
                  "labels", "expirationTime", "requirePartitionFilter"):
            if k in body:
                if body[k] is None:
                    res.pop(k, None)
                else:
                    res[k] = body[k]
            elif replace:
                res.pop(k, None)
        ref = body.get("tableReference")
        if ref and ref.get("tableId", tb.table_id) != tb.table_id:
            raise bad("The table ID cannot be changed")
        self.validate_table_parts(res, res["schema"]["fields"])
        tb.resource = res
        tb.touch(schema_changed)
        return tb

    # ------------------------------------------------------------- CDC apply

    def apply(self, tb, rows, stream_name):
        """rows: [(kind, row dict, csn tuple|None)], kind UPSERT/DELETE/INSERT. Called with the
        lock held; one call per AppendRows request, so a request lands whole or not at all."""
        req = next(self.ingest)
        tb.stats["requests"] += 1
        tb.stats["rows"] += len(rows)
        for idx, (kind, row, csn) in enumerate(rows):
            if kind == "INSERT":
                tb.appended.append(row)
                tb.stats["appended"] += 1
                continue
            key = tb.key_of(row)
            old = tb.cdc.get(key)
            new = Entry(row if kind == "UPSERT" else None, kind == "DELETE", csn, req, idx)
            if self.newer(tb, new, old):
                tb.cdc[key] = new
                tb.stats["upserts" if kind == "UPSERT" else "deletes"] += 1
                if tb.appended:  # an upsert/delete replaces plain rows of the same key too
                    tb.appended = [r for r in tb.appended if tb.key_of(r) != key]
            else:
                tb.stats["ignored_older"] += 1

    def newer(self, tb, new, old):
        if old is None:
            return True
        if new.csn is not None and old.csn is not None:
            if new.csn != old.csn:
                return new.csn > old.csn   # tuple order: section by section, missing < present
        elif (new.csn is None) != (old.csn is None):
            w = ("rows with and without _CHANGE_SEQUENCE_NUMBER were written for one key of %s; "
                 "BigQuery documents the order as unpredictable (the double used ingestion order)" % tb.ref())
            if w not in tb.warnings:
                tb.warnings.append(w)
        # equal (or missing) sequence numbers: the latest ingestion wins
        if new.req != old.req:
            return new.req > old.req
        return self.same_request_tie == "last"


# ============================================================================ auth

def b64url_decode(s):
    s = s.encode() if isinstance(s, str) else s
    return base64.urlsafe_b64decode(s + b"=" * (-len(s) % 4))


class Auth:
    def __init__(self, lifetime, required):
        self.lock = threading.Lock()
        self.accounts = {}       # client_email -> {"public_key", "key_id"}
        self.tokens = {}         # token -> {"expires": t, "scopes": set, "who": str}
        self.lifetime = lifetime
        self.required = required
        self.issued = {"jwt": 0, "metadata": 0, "control": 0}

    def add_account_json(self, info):
        email = info.get("client_email")
        if not email:
            raise bad("service account: client_email missing")
        if info.get("private_key"):
            key = serialization.load_pem_private_key(info["private_key"].encode(), password=None)
            pub = key.public_key()
        elif info.get("public_key_pem"):
            pub = serialization.load_pem_public_key(info["public_key_pem"].encode())
        else:
            raise bad("service account: private_key or public_key_pem needed")
        if not isinstance(pub, rsa.RSAPublicKey):
            raise bad("service account: the key is not an RSA key")
        with self.lock:
            self.accounts[email] = {"public_key": pub, "key_id": info.get("private_key_id")}
        return email

    def mint(self, scopes, who, lifetime=None, kind="control"):
        tok = "ya29.test-double." + secrets.token_urlsafe(24)
        life = self.lifetime if lifetime is None else lifetime
        with self.lock:
            self.tokens[tok] = {"expires": time.time() + life, "scopes": set(scopes), "who": who}
            self.issued[kind] += 1
        return tok, max(int(life) - 1, 0)

    def add_static(self, tok):
        with self.lock:
            self.tokens[tok] = {"expires": float("inf"), "scopes": {SCOPE_CLOUD}, "who": "static"}

    def exchange(self, form, audiences):
        """RFC 7523 JWT bearer grant as Google's token endpoint runs it. Returns (status, body)."""
        def oauth_err(error, desc, status=400):
            return status, {"error": error, "error_description": desc}

        if form.get("grant_type") != JWT_BEARER:
            return oauth_err("unsupported_grant_type", "Invalid grant_type: %s" % form.get("grant_type", ""))
        assertion = form.get("assertion", "")
        parts = assertion.split(".")
        if len(parts) != 3:
            return oauth_err("invalid_grant", "Invalid JWT: the assertion is not a JWS compact serialization.")
        try:
            header = json.loads(b64url_decode(parts[0]))
            claims = json.loads(b64url_decode(parts[1]))
            sig = b64url_decode(parts[2])
        except (ValueError, binascii.Error):
            return oauth_err("invalid_grant", "Invalid JWT: the header or claims are not base64url JSON.")
        if header.get("alg") != "RS256":
            return oauth_err("invalid_grant", "Invalid JWT: the signing algorithm must be RS256, not %s."
                             % header.get("alg"))
        acct = self.accounts.get(claims.get("iss"))
        if acct is None:
            return oauth_err("invalid_grant", "Invalid grant: account not found")
        try:
            acct["public_key"].verify(sig, (parts[0] + "." + parts[1]).encode(), padding.PKCS1v15(),
                                      hashes.SHA256())
        except InvalidSignature:
            return oauth_err("invalid_grant", "Invalid JWT Signature.")
        if acct["key_id"] and header.get("kid") not in (None, acct["key_id"]):
            return oauth_err("invalid_grant", "Invalid JWT Signature.")
        if claims.get("aud") not in audiences:
            return oauth_err("invalid_grant", "Invalid JWT: Failed audience check. The expected audience is %s."
                             % audiences[0])
        now = time.time()
        iat, exp = claims.get("iat"), claims.get("exp")
        if (not isinstance(iat, (int, float)) or not isinstance(exp, (int, float)) or exp <= iat
                or exp - iat > 3600 or iat > now + 300 or exp < now):
            return oauth_err("invalid_grant", "Invalid JWT: Token must be a short-lived token (60 minutes) and in "
                             "a reasonable timeframe. Check your iat and exp values in the JWT claim.")
        scopes = str(claims.get("scope") or "").split()
        if not scopes:
            return oauth_err("invalid_scope", "Invalid OAuth scope or ID token audience provided.")
        tok, expires_in = self.mint(scopes, claims["iss"], kind="jwt")
        return 200, {"access_token": tok, "expires_in": expires_in, "token_type": "Bearer"}

    def check(self, authorization, accepted_scopes):
        """Raises ApiError 401/403 unless the header carries a live token with one of the scopes."""
        if not self.required:
            return None
        if not authorization or not authorization.startswith("Bearer "):
            raise ApiError(401, "required", "Request is missing required authentication credential. Expected "
                           "OAuth 2 access token, login cookie or other valid authentication credential.")
        tok = authorization[7:].strip()
        with self.lock:
            info = self.tokens.get(tok)
        if info is None or info["expires"] < time.time():
            raise ApiError(401, "authError", "Request had invalid authentication credentials. Expected OAuth 2 "
                           "access token, login cookie or other valid authentication credential."
                           + (" (the token expired)" if info else ""))
        if not info["scopes"] & set(accepted_scopes):
            raise ApiError(403, "insufficientPermissions", "Request had insufficient authentication scopes.")
        return info


# ============================================================================ faults

GRPC_CODES = {c.name: c for c in grpc.StatusCode}
DEFAULT_FAULT_MESSAGES = {
    "INTERNAL": "Internal error encountered (injected by the BigQuery test double).",
    "UNAVAILABLE": "The service is currently unavailable (injected by the BigQuery test double).",
    "ABORTED": "Request processing is aborted because of prior failures (injected by the BigQuery test double).",
    "RESOURCE_EXHAUSTED": "Exceeds 'AppendRows throughput' quota (injected by the BigQuery test double).",
    "CANCELLED": "The operation was cancelled (injected by the BigQuery test double).",
    "INVALID_ARGUMENT": "Invalid argument (injected by the BigQuery test double).",
}


class Faults:
    """Test-controlled faults. A rule (JSON, POST /_test/faults):
      {"rpc": "AppendRows"|"GetWriteStream"|"CreateWriteStream"|"rest"|"token",
       "table": "p.d.t" (optional filter), "method": "tables.patch" (rest only, optional),
       "nth": N (fire on the Nth matching call counted from when the rule was added; default 1),
       "times": K (how many calls it fires on from the Nth; default 1; 0 = unlimited),
       "action": "status" | "row_error" | "delay" | "close",
       "code": "INTERNAL" (gRPC code name) | 409 (HTTP status for rest/token),
       "how": "response" (AppendRowsResponse.error, the stream stays) | "stream" (the RPC ends),
       "message": "...", "seconds": 0.5 (delay),
       "match": {"column": "id", "values": [..]} (row_error: rows whose value is one of these;
                 canonical values as in the dump), "change_type": "DELETE" (optional)}
    """

    def __init__(self):
        self.lock = threading.Lock()
        self.rules = []
        self.ids = itertools.count(1)

    def add(self, rule):
        if not isinstance(rule, dict):
            raise bad("a fault rule must be a JSON object")
        rpc = rule.get("rpc", "AppendRows")
        action = rule.get("action", "status")
        if rpc not in ("AppendRows", "GetWriteStream", "CreateWriteStream", "rest", "token"):
            raise bad("fault: unknown rpc %r" % rpc)
        if action not in ("status", "row_error", "delay", "close"):
            raise bad("fault: unknown action %r" % action)
        if action == "status":
            code = rule.get("code", "INTERNAL")
            if rpc in ("rest", "token"):
                if not isinstance(code, int) or not 400 <= code <= 599:
                    raise bad("fault: a rest/token status code must be an HTTP status (400..599)")
            elif code not in GRPC_CODES or code == "OK":
                raise bad("fault: unknown gRPC code %r" % code)
        if action == "row_error":
            m = rule.get("match")
            if rpc != "AppendRows" or not isinstance(m, dict) or "column" not in m or \
                    not isinstance(m.get("values"), list):
                raise bad("fault: row_error needs rpc AppendRows and match {column, values: [...]}")
        r = dict(rule, rpc=rpc, action=action, id=next(self.ids), seen=0, fired=0)
        r.setdefault("nth", 1)
        r.setdefault("times", 0 if action == "row_error" else 1)
        r.setdefault("how", "response")
        with self.lock:
            self.rules.append(r)
        return r

    def take(self, rpc, table=None, method=None, actions=("status", "delay", "close")):
        """Counts this call against the matching rules; returns the rules that fire now."""
        out = []
        with self.lock:
            for r in self.rules:
                if r["rpc"] != rpc or r["action"] not in actions:
                    continue
                if r.get("table") and table != r["table"]:
                    continue
                if r.get("method") and method != r["method"]:
                    continue
                r["seen"] += 1
                if r["seen"] >= r["nth"] and (r["times"] == 0 or r["fired"] < r["times"]):
                    r["fired"] += 1
                    out.append(dict(r))
        return out

    def row_rules(self, table):
        with self.lock:
            return [dict(r) for r in self.rules if r["action"] == "row_error"
                    and (not r.get("table") or r["table"] == table)
                    and (r["times"] == 0 or r["fired"] < r["times"])]

    def fired_row_rule(self, rid):
        with self.lock:
            for r in self.rules:
                if r["id"] == rid:
                    r["fired"] += 1

    def listing(self):
        with self.lock:
            return [dict(r) for r in self.rules]

    def clear(self):
        with self.lock:
            self.rules = []


def canon_for_match(v):
    if isinstance(v, (bytes, bytearray)):
        return base64.b64encode(v).decode()
    if isinstance(v, datetime.date):
        return v.isoformat()
    return v


# ============================================================================ gRPC

class Connection:
    ids = itertools.count(1)

    def __init__(self, peer):
        self.id = next(Connection.ids)
        self.peer = peer
        self.stream = None         # current write_stream name
        self.schemas = {}          # stream name -> (message class, descriptor proto bytes, schema #)
        self.mode = {}             # stream name -> "cdc" | "insert" (decided by its first row)
        self.generation = {}       # stream name -> table generation the client last saw
        self.requests = 0


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.counts = {}
        self.appends = []          # one record per AppendRows request (bounded)
        self.get_write_streams = []  # one record per GetWriteStream call (bounded)
        self.seq = 0               # numbers those records in call order, across both lists
        self.connections = 0
        self.open_connections = 0
        self.max_open_connections = 0

    def inc(self, k, n=1):
        with self.lock:
            self.counts[k] = self.counts.get(k, 0) + n

    def next_seq(self):
        with self.lock:
            self.seq += 1
            return self.seq

    def record_append(self, rec):
        with self.lock:
            self.appends.append(rec)
            if len(self.appends) > 100000:
                del self.appends[:50000]

    def record_get_write_stream(self, rec):
        with self.lock:
            self.get_write_streams.append(rec)
            if len(self.get_write_streams) > 100000:
                del self.get_write_streams[:50000]


class WriteService:
    def __init__(self, server):
        self.s = server

    # ------------------------------------------------------------- helpers

    def auth(self, context):
        md = dict(context.invocation_metadata())
        try:
            self.s.auth.check(md.get("authorization"), (SCOPE_BIGQUERY, SCOPE_INSERTDATA, SCOPE_CLOUD))
        except ApiError as e:
            context.abort(e.grpc_code, e.message)

    def unary_faults(self, rpc, table, context):
        for r in self.s.faults.take(rpc, table):
            if r["action"] == "delay":
                time.sleep(float(r.get("seconds", 0.1)))
            elif r["action"] == "status":
                context.abort(GRPC_CODES[r["code"]], r.get("message") or DEFAULT_FAULT_MESSAGES.get(r["code"], r["code"]))

    def resolve_stream(self, name):
        m = STREAM_RE.match(name or "")
        if not m:
            raise ApiError(400, "invalid", "Invalid stream name: \"%s\". Expected "
                           "projects/{project}/datasets/{dataset}/tables/{table}/streams/{stream}" % name)
        p, d, t, sid = m.groups()
        with self.s.store.lock:
            tb = self.s.store.tables.get((p, d, t))
            if tb is None or (p, d) not in self.s.store.datasets:
                raise ApiError(404, "notFound", "Requested entity was not found. Entity: %s" % name,
                               storage_code=StorageErrorPb.StorageErrorCode.TABLE_NOT_FOUND, entity=name)
            if sid != "_default" and name not in self.s.store.streams:
                raise ApiError(404, "notFound", "Requested entity was not found. Entity: %s" % name,
                               storage_code=StorageErrorPb.StorageErrorCode.STREAM_NOT_FOUND, entity=name)
        return tb, sid

    def write_stream_msg(self, name, tb, view_full, typ="COMMITTED"):
        # proto-plus names the proto field `type` type_ (its Python descriptor too); same field number
        ws = WriteStream(name=name, type_=WriteStream.Type.Value(typ), write_mode=WriteStream.WriteMode.INSERT,
                         location=tb.resource.get("location", "US"))
        ct = timestamp_pb2.Timestamp()
        ct.FromMilliseconds(int(tb.resource["creationTime"]))
        ws.create_time.CopyFrom(ct)
        ws.commit_time.CopyFrom(ct)
        if view_full:
            ws.table_schema.CopyFrom(storage_schema(tb.fields))
        return ws

    # ------------------------------------------------------------- unary RPCs

    def GetWriteStream(self, raw, context):
        self.auth(context)
        self.s.stats.inc("GetWriteStream")
        req = GetWriteStreamRequest.FromString(raw)
        try:
            view = bqs_types.WriteStreamView(req.view).name
        except ValueError:  # a number the enum does not have: recorded as is, served as BASIC
            view = str(req.view)
        self.s.stats.record_get_write_stream({"seq": self.s.stats.next_seq(), "name": req.name, "time": time.time(),
                                              "view": view})
        m = STREAM_RE.match(req.name or "")
        self.unary_faults("GetWriteStream", ".".join(m.groups()[:3]) if m else None, context)
        try:
            tb, sid = self.resolve_stream(req.name)
        except ApiError as e:
            context.abort(e.grpc_code, e.message)
        with self.s.store.lock:
            typ = "COMMITTED" if sid == "_default" else self.s.store.streams[req.name]["type"]
            ws = self.write_stream_msg(req.name, tb, req.view == bqs_types.WriteStreamView.FULL.value, typ)
        return ws.SerializeToString()

    def CreateWriteStream(self, raw, context):
        self.auth(context)
        self.s.stats.inc("CreateWriteStream")
        req = CreateWriteStreamRequest.FromString(raw)
        m = TABLE_PARENT_RE.match(req.parent or "")
        if not m:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "Invalid parent: \"%s\"" % req.parent)
        self.unary_faults("CreateWriteStream", ".".join(m.groups()), context)
        typ = WriteStream.Type.Name(req.write_stream.type_)
        if typ != "COMMITTED":
            context.abort(grpc.StatusCode.UNIMPLEMENTED, "%s write streams are not implemented by the BigQuery "
                          "test double (COMMITTED and _default are)" % typ)
        name = "%s/streams/%s" % (req.parent, secrets.token_hex(12))
        with self.s.store.lock:
            tb = self.s.store.tables.get(m.groups())
            if tb is None:
                context.abort(grpc.StatusCode.NOT_FOUND, "Requested entity was not found. Entity: %s" % req.parent)
            self.s.store.streams[name] = {"table": m.groups(), "rows": 0, "type": typ}
            ws = self.write_stream_msg(name, tb, True, typ)
        return ws.SerializeToString()

    def _not_for_default(self, what):
        def handler(raw, context):
            self.auth(context)
            context.abort(grpc.StatusCode.UNIMPLEMENTED, "%s is not implemented by the BigQuery test double "
                          "(and is not supported on the _default stream)" % what)
        return handler

    # ------------------------------------------------------------- AppendRows

    def AppendRows(self, request_iterator, context):
        self.auth(context)
        conn = Connection(context.peer())
        st = self.s.stats
        with st.lock:
            st.connections += 1
            st.open_connections += 1
            st.max_open_connections = max(st.max_open_connections, st.open_connections)
        try:
            for raw in request_iterator:
                conn.requests += 1
                st.inc("AppendRows")
                try:
                    resp = self.one_append(conn, raw, context)
                except Exception as e:
                    if type(e) is not Exception:   # grpc's abort() raises a bare Exception: not a bug
                        log("AppendRows: internal error of the double (connection %d, request %d): %r"
                            % (conn.id, conn.requests, e))
                        import traceback
                        traceback.print_exc()
                    raise
                if resp is not None:
                    yield resp.SerializeToString()
        finally:
            with st.lock:
                st.open_connections -= 1

    def one_append(self, conn, raw, context):
        rec = {"connection": conn.id, "request": conn.requests, "bytes": len(raw), "time": time.time(),
               "seq": self.s.stats.next_seq()}
        try:
            req = AppendRowsRequest.FromString(raw)
        except Exception as e:  # a request Google's own parser cannot read
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "Invalid AppendRowsRequest: %s" % e)
        name = req.write_stream or conn.stream
        m = STREAM_RE.match(name or "")
        table_key = ".".join(m.groups()[:3]) if m else None
        rec.update(write_stream=req.write_stream, has_schema=req.proto_rows.HasField("writer_schema"),
                   rows=len(req.proto_rows.rows.serialized_rows), table=table_key)
        resp = AppendRowsResponse()
        resp.write_stream = name or ""

        def fail(err):
            resp.error.CopyFrom(err.status_pb())
            rec.update(result=err.grpc_code.name, message=err.message)
            self.s.stats.record_append(rec)
            return resp

        for r in self.s.faults.take("AppendRows", table_key):
            if r["action"] == "delay":
                time.sleep(float(r.get("seconds", 0.1)))
                continue
            if r["action"] == "close":
                rec.update(result="closed by fault")
                self.s.stats.record_append(rec)
                context.abort(grpc.StatusCode.UNAVAILABLE, r.get("message") or "Connection closed (injected "
                              "by the BigQuery test double).")
            code = r["code"]
            msg = r.get("message") or DEFAULT_FAULT_MESSAGES.get(code, code)
            if r["how"] == "stream":
                rec.update(result=code + " (stream)", message=msg)
                self.s.stats.record_append(rec)
                context.abort(GRPC_CODES[code], msg)
            return fail(ApiError(500, "injected", msg, grpc_code=GRPC_CODES[code]))

        if len(raw) > self.s.max_request_bytes:
            return fail(bad("AppendRows request too large: %d bytes, the limit is %d bytes. Entity: %s"
                            % (len(raw), self.s.max_request_bytes, name or "")))
        if not name:
            return fail(bad("write_stream must be set on the first request of an AppendRows connection"))
        try:
            tb, sid = self.resolve_stream(name)
        except ApiError as e:
            return fail(e)
        conn.stream = name
        if req.HasField("offset") and sid == "_default":
            return fail(bad("Offset is not allowed when appending to the _default stream. Entity: %s" % name))
        if req.WhichOneof("rows") != "proto_rows":
            return fail(bad("AppendRowsRequest has no proto_rows%s. Entity: %s"
                            % (" (arrow_rows are not supported by the BigQuery test double, and BigQuery "
                               "CDC needs protobuf rows)" if req.HasField("arrow_rows") else "", name)))
        for k, v in req.missing_value_interpretations.items():
            if v == 0:
                return fail(bad("Invalid missing value interpretation for field %s" % k))
        pd = req.proto_rows
        if pd.HasField("writer_schema"):
            try:
                cls = self.s.message_class(pd.writer_schema.proto_descriptor)
            except ApiError as e:
                return fail(e)
            with self.s.store.lock:
                conn.schemas[name] = cls
                conn.generation[name] = tb.generation
        cls = conn.schemas.get(name)
        if cls is None:
            return fail(bad("The writer schema (proto_rows.writer_schema) must be set on the first request of "
                            "a connection and on the first request for each new destination. Entity: %s" % name))
        if not pd.rows.serialized_rows:
            return fail(bad("Rows must be specified. Entity: %s" % name))
        with self.s.store.lock:
            fields = json.loads(json.dumps(tb.fields))
            gen, pk = tb.generation, list(tb.pk())
        try:
            plan = self.s.plan(cls, fields, gen, name)
        except ApiError as e:
            return fail(e)
        mode = conn.mode.get(name)
        decoded, row_errors = [], []
        rules = self.s.faults.row_rules(table_key)
        fired_rules = set()
        for i, b in enumerate(pd.rows.serialized_rows):
            try:
                msg = cls()
                try:
                    msg.ParseFromString(b)
                except Exception as e:
                    raise RowProblem("Could not parse the serialized row with the writer schema: %s" % e)
                row = plan.row(msg)
                ct = getattr(msg, plan.change_type.name) if plan.change_type and msg.HasField(plan.change_type.name) else None
                csn_text = getattr(msg, plan.csn.name) if plan.csn and msg.HasField(plan.csn.name) else None
                kind = self.row_kind(ct, sid, mode, name)
                if mode is None:
                    mode = "cdc" if kind != "INSERT" else "insert"
                if kind != "INSERT":
                    if not pk:
                        # the whole request fails: the stream cannot be an upsert stream
                        return fail(bad("The primary keys and clustering keys of the table are required to "
                                        "create an upsert stream. Entity: %s (table %s has no primary key)"
                                        % (name, tb.ref())))
                    for c in pk:
                        real = next(f["name"] for f in fields if f["name"].lower() == c.lower())
                        if row.get(real) is None:
                            raise RowProblem("Primary key column %s is NULL in a %s row" % (real, kind))
                csn = None
                if csn_text is not None:
                    try:
                        csn = parse_csn(csn_text)
                    except ValueError:
                        raise RowProblem("Invalid _CHANGE_SEQUENCE_NUMBER \"%s\": expected 1 to 4 sections of 1 "
                                         "to 16 hexadecimal digits separated by '/'" % csn_text)
                    if kind == "INSERT":
                        raise RowProblem("_CHANGE_SEQUENCE_NUMBER is set on a row without _CHANGE_TYPE")
                for r in rules:
                    if r.get("change_type") and r["change_type"] != kind:
                        continue
                    col = next((f["name"] for f in fields if f["name"].lower() == str(r["match"]["column"]).lower()), None)
                    if col is not None and canon_for_match(row.get(col)) in r["match"]["values"]:
                        fired_rules.add(r["id"])
                        raise RowProblem(r.get("message") or "Field %s: value rejected (row error injected by the "
                                         "BigQuery test double)" % col)
                decoded.append((kind, row, csn))
            except RowProblem as e:
                row_errors.append(RowErrorPb(index=i, code=RowErrorPb.RowErrorCode.FIELDS_ERROR, message=str(e)))
        for rid in fired_rules:
            self.s.faults.fired_row_rule(rid)
        if row_errors:
            resp.error.CopyFrom(status_pb2.Status(code=grpc.StatusCode.INVALID_ARGUMENT.value[0],
                                                  message=ROW_ERRORS_MESSAGE % name))
            resp.row_errors.extend(row_errors)
            rec.update(result="ROW_ERRORS", row_errors=[r.index for r in row_errors])
            self.s.stats.record_append(rec)
            return resp
        with self.s.store.lock:
            conn.mode[name] = mode
            self.s.store.apply(tb, decoded, name)
            if sid != "_default":
                start = self.s.store.streams[name]["rows"]
                self.s.store.streams[name]["rows"] += len(decoded)
                resp.append_result.offset.value = start
            else:
                resp.append_result.SetInParent()
            if conn.generation.get(name, tb.generation) != tb.generation:
                resp.updated_schema.CopyFrom(storage_schema(tb.fields))
                conn.generation[name] = tb.generation
        rec.update(result="OK")
        self.s.stats.record_append(rec)
        self.s.stats.inc("rows", len(decoded))
        return resp

    @staticmethod
    def row_kind(ct, sid, mode, name):
        if ct is None or ct == "":
            if mode == "cdc":
                raise RowProblem("The given value is not a valid CHANGE_TYPE: a row without _CHANGE_TYPE on a "
                                 "connection that wrote UPSERT/DELETE rows (mixing CDC and non-CDC rows in one "
                                 "connection is not supported)")
            return "INSERT"
        if ct not in ("UPSERT", "DELETE"):
            raise RowProblem("The given value is not a valid CHANGE_TYPE: %s (only UPSERT and DELETE)" % ct)
        if sid != "_default":
            raise RowProblem("The given value is not a valid CHANGE_TYPE in insert mode: %s (CDC needs the "
                             "_default stream)" % ct)
        if mode == "insert":
            raise RowProblem("The given value is not a valid CHANGE_TYPE in insert mode: %s (this connection "
                             "wrote rows without _CHANGE_TYPE; mixing is not supported)" % ct)
        return ct


# ============================================================================ HTTP

class HttpHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "bq-test-double/1"

    def log_message(self, fmt, *args):  # quiet; the control API has statistics
        if self.server.double.verbose:
            log("http " + fmt % args)

    def send_json(self, status, body, extra_headers=()):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=UTF-8")
        self.send_header("Content-Length", str(len(data)))
        for k, v in extra_headers:
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def send_text(self, status, text, extra_headers=()):
        data = text.encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain; charset=UTF-8")
        self.send_header("Content-Length", str(len(data)))
        for k, v in extra_headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def body(self):
        if self._body is None:
            self._body = self.read_body()
        return self._body

    def read_body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            out = b""
            while True:
                n = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if n == 0:
                    self.rfile.readline()
                    return out
                out += self.rfile.read(n)
                self.rfile.readline()
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def json_body(self):
        raw = self.body()
        if not raw:
            return {}
        try:
            v = json.loads(raw)
        except ValueError as e:
            raise bad("Invalid JSON payload received. %s" % e, reason="parseError")
        if not isinstance(v, dict):
            raise bad("Invalid JSON payload received: not an object", reason="parseError")
        return v

    def do_GET(self):
        self.dispatch("GET")

    def do_POST(self):
        self.dispatch("POST")

    def do_PATCH(self):
        self.dispatch("PATCH")

    def do_PUT(self):
        self.dispatch("PUT")

    def do_DELETE(self):
        self.dispatch("DELETE")

    def dispatch(self, method):
        d = self.server.double
        self._body = None
        self.body()  # always read it: an error answered early must not leave it on a kept-alive connection
        url = urllib.parse.urlsplit(self.path)
        path = urllib.parse.unquote(url.path)
        query = dict(urllib.parse.parse_qsl(url.query))
        try:
            if path.startswith("/_test/"):
                return self.control(method, path, query)
            if path == "/token" or path == "/oauth2/v4/token":
                return self.token(method)
            if path == "/" or path.startswith("/computeMetadata/"):
                return self.metadata(method, path, query)
            if path.startswith("/bigquery/v2/"):
                d.stats.inc("rest")
                d.auth.check(self.headers.get("Authorization"), (SCOPE_BIGQUERY, SCOPE_CLOUD))
                return self.rest(method, path[len("/bigquery/v2/"):], query)
            raise not_found("URL %s" % path)
        except ApiError as e:
            self.send_json(e.http, e.rest_body())
        except Exception as e:  # a bug of the double: say so, loudly, as a 500
            log("internal error on %s %s: %r" % (method, self.path, e))
            import traceback
            traceback.print_exc()
            self.send_json(500, ApiError(500, "backendError", "BigQuery test double internal error: %r" % e).rest_body())

    # ------------------------------------------------------------- OAuth

    def token(self, method):
        d = self.server.double
        if method != "POST":
            raise bad("The token endpoint takes POST")
        raw = self.body().decode("utf-8", "replace")
        form = dict(urllib.parse.parse_qsl(raw))
        d.stats.inc("token")
        for r in d.faults.take("token"):
            if r["action"] == "delay":
                time.sleep(float(r.get("seconds", 0.1)))
            elif r["action"] == "status":
                return self.send_json(int(r["code"]), {"error": "internal_failure",
                                                       "error_description": r.get("message") or "injected"})
        host = self.headers.get("Host", "")
        audiences = [GOOGLE_TOKEN_URI, "https://www.googleapis.com/oauth2/v4/token",
                     "http://%s/token" % host, "http://%s/oauth2/v4/token" % host] + d.token_audiences
        status, body = d.auth.exchange(form, audiences)
        self.send_json(status, body, (("Cache-Control", "no-store"),))

    def metadata(self, method, path, query):
        d = self.server.double
        flavor = (("Metadata-Flavor", "Google"),)
        if self.headers.get("Metadata-Flavor") != "Google":
            return self.send_text(403, "Missing required header \"Metadata-Flavor\": \"Google\"", flavor)
        d.stats.inc("metadata")
        if path == "/":
            return self.send_text(200, "computeMetadata/\n", flavor)
        sa = "/computeMetadata/v1/instance/service-accounts/"
        if path.startswith(sa):
            rest = path[len(sa):].split("/")
            who = rest[0]
            if who not in ("default", d.metadata_email):
                return self.send_text(404, "not found", flavor)
            what = "/".join(rest[1:])
            if what == "token":
                for r in d.faults.take("token", method="metadata"):
                    if r["action"] == "status":
                        return self.send_text(int(r["code"]), r.get("message") or "injected", flavor)
                scopes = query.get("scopes", SCOPE_CLOUD).replace(",", " ").split()
                tok, exp = d.auth.mint(scopes, d.metadata_email, kind="metadata")
                return self.send_json(200, {"access_token": tok, "expires_in": exp, "token_type": "Bearer"}, flavor)
            if what == "email":
                return self.send_text(200, d.metadata_email, flavor)
            if what == "scopes":
                return self.send_text(200, SCOPE_CLOUD + "\n", flavor)
            if what == "":
                return self.send_json(200, {"email": d.metadata_email, "aliases": ["default"],
                                            "scopes": [SCOPE_CLOUD]}, flavor)
            return self.send_text(404, "not found", flavor)
        if path == "/computeMetadata/v1/project/project-id":
            return self.send_text(200, d.metadata_project, flavor)
        if path == "/computeMetadata/v1/project/numeric-project-id":
            return self.send_text(200, "123456789012", flavor)
        return self.send_text(404, "not found", flavor)

    # ------------------------------------------------------------- REST v2

    def rest_faults(self, name):
        for r in self.server.double.faults.take("rest", method=name):
            if r["action"] == "delay":
                time.sleep(float(r.get("seconds", 0.1)))
            elif r["action"] == "status":
                code = int(r["code"])
                reason = {409: "duplicate", 412: "conditionNotMet", 429: "rateLimitExceeded",
                          403: "rateLimitExceeded", 500: "backendError", 503: "backendError"}.get(code, "injected")
                raise ApiError(code, reason, r.get("message") or "%s (injected by the BigQuery test double)" % reason)

    def rest(self, method, path, query):
        d = self.server.double
        store = d.store
        parts = path.split("/")
        if len(parts) < 2 or parts[0] != "projects":
            raise not_found("URL /bigquery/v2/%s" % path)
        p = parts[1]
        rest = parts[2:]
        with store.lock:
            # datasets
            if rest == ["datasets"]:
                if method == "POST":
                    self.rest_faults("datasets.insert")
                    body = self.json_body()
                    ref = body.get("datasetReference") or {}
                    ds = store.add_dataset(p, ref.get("datasetId", ""), body)
                    return self.send_json(200, ds)
                if method == "GET":
                    self.rest_faults("datasets.list")
                    return self.send_json(200, {"kind": "bigquery#datasetList", "datasets": [
                        {"kind": "bigquery#dataset", "id": v["id"], "datasetReference": v["datasetReference"],
                         "location": v["location"]} for (pp, _), v in store.datasets.items() if pp == p]})
            if len(rest) == 2 and rest[0] == "datasets":
                dsid = rest[1]
                if method == "GET":
                    self.rest_faults("datasets.get")
                    return self.send_json(200, store.dataset(p, dsid))
                if method == "DELETE":
                    self.rest_faults("datasets.delete")
                    store.dataset(p, dsid)
                    has = [k for k in store.tables if k[:2] == (p, dsid)]
                    if has and query.get("deleteContents") != "true":
                        raise bad("Dataset %s:%s is still in use" % (p, dsid), reason="resourceInUse")
                    for k in has:
                        del store.tables[k]
                    del store.datasets[(p, dsid)]
                    return self.send_empty()
            if len(rest) == 3 and rest[0] == "datasets" and rest[2] == "tables":
                dsid = rest[1]
                if method == "POST":
                    self.rest_faults("tables.insert")
                    tb = store.insert_table(p, dsid, self.json_body())
                    return self.send_json(200, tb.resource)
                if method == "GET":
                    self.rest_faults("tables.list")
                    store.dataset(p, dsid)
                    tables = [{"kind": "bigquery#table", "id": tb.resource["id"], "type": "TABLE",
                               "tableReference": tb.resource["tableReference"]}
                              for k, tb in store.tables.items() if k[:2] == (p, dsid)]
                    return self.send_json(200, {"kind": "bigquery#tableList", "tables": tables,
                                                "totalItems": len(tables)})
            if len(rest) == 4 and rest[0] == "datasets" and rest[2] == "tables":
                dsid, tid = rest[1], rest[3]
                if "$" in tid or "@" in tid:
                    raise ApiError(501, "notImplemented", "table decorators are not supported by the BigQuery "
                                   "test double")
                if method == "GET":
                    self.rest_faults("tables.get")
                    tb = store.table(p, dsid, tid)
                    return self.send_json(200, self.table_view(tb))
                if method in ("PATCH", "PUT"):
                    name = "tables.patch" if method == "PATCH" else "tables.update"
                    self.rest_faults(name)
                    tb = store.table(p, dsid, tid)
                    im = self.headers.get("If-Match")
                    if im and im.startswith("W/"):
                        im = im[2:]
                    if im and len(im) > 1 and im[0] == im[-1] == '"':
                        im = im[1:-1]   # an HTTP-quoted etag is the same etag
                    body = self.json_body()
                    if im and im != "*" and im != tb.resource["etag"]:
                        raise ApiError(412, "conditionNotMet", "Precondition check failed.")
                    store.update_table(tb, body, replace=(method == "PUT"))
                    return self.send_json(200, self.table_view(tb))
                if method == "DELETE":
                    self.rest_faults("tables.delete")
                    store.table(p, dsid, tid)
                    del store.tables[(p, dsid, tid)]
                    return self.send_empty()
            if len(rest) == 5 and rest[0] == "datasets" and rest[2] == "tables" and rest[4] == "data":
                if method == "GET":
                    self.rest_faults("tabledata.list")
                    tb = store.table(p, rest[1], rest[3])
                    return self.send_json(200, self.tabledata(tb, query))
                if method == "POST":
                    raise ApiError(501, "notImplemented", "tabledata.insertAll is not supported by the BigQuery "
                                   "test double: use the Storage Write API")
            if rest == ["jobs"] and method == "POST":
                self.rest_faults("jobs.insert")
                return self.send_json(200, self.jobs_insert(p, self.json_body()))
            if len(rest) == 2 and rest[0] == "jobs" and method == "GET":
                self.rest_faults("jobs.get")
                job = store.jobs.get((p, rest[1]))
                if job is None:
                    raise not_found("Job %s:%s" % (p, rest[1]))
                return self.send_json(200, job)
            if rest == ["queries"] and method == "POST":
                self.rest_faults("jobs.query")
                body = self.json_body()
                job = self.run_query(p, body.get("query", ""), body.get("defaultDataset"), None,
                                     body.get("useLegacySql", True), raise_errors=True,
                                     location=body.get("location"))
                return self.send_json(200, self.query_results(job))
            if len(rest) == 2 and rest[0] == "queries" and method == "GET":
                self.rest_faults("jobs.getQueryResults")
                job = store.jobs.get((p, rest[1]))
                if job is None:
                    raise not_found("Job %s:%s" % (p, rest[1]))
                return self.send_json(200, self.query_results(job))
        raise ApiError(404, "notFound", "Not found: %s /bigquery/v2/%s is not served by the BigQuery test double"
                       % (method, path))

    def send_empty(self):
        self.send_response(204)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def table_view(self, tb):
        res = json.loads(json.dumps(tb.resource))
        res["numRows"] = str(len(tb.live_rows()))
        res["selfLink"] = "http://%s/bigquery/v2/projects/%s/datasets/%s/tables/%s" % (
            self.headers.get("Host", ""), tb.project, tb.dataset, tb.table_id)
        return res

    def tabledata(self, tb, query):
        rows = tb.live_rows()
        start = int(query.get("startIndex") or query.get("pageToken") or 0)
        n = int(query.get("maxResults") or 100000)
        int64_ts = query.get("formatOptions.useInt64Timestamp", "").lower() == "true"
        page = rows[start:start + n]
        out = {"kind": "bigquery#tableDataList", "etag": tb.resource["etag"], "totalRows": str(len(rows)),
               "rows": [{"f": [{"v": fv_value(f, r.get(f["name"]), int64_ts)} for f in tb.fields]} for r in page]}
        if start + n < len(rows):
            out["pageToken"] = str(start + n)
        return out

    # ------------------------------------------------------------- jobs (DDL only)

    def jobs_insert(self, p, body):
        cfg = (body.get("configuration") or {})
        q = cfg.get("query")
        if not q:
            raise ApiError(501, "notImplemented", "only query jobs are supported by the BigQuery test double")
        ref = body.get("jobReference") or {}
        return self.run_query(p, q.get("query", ""), q.get("defaultDataset"), ref.get("jobId"),
                              q.get("useLegacySql", True), raise_errors=False, location=ref.get("location"))

    def run_query(self, p, sql, default_ds, job_id, legacy, raise_errors, location):
        store = self.server.double.store
        job_id = job_id or "job_" + secrets.token_hex(10)
        if (p, job_id) in store.jobs:
            raise ApiError(409, "duplicate", "Already Exists: Job %s:%s" % (p, job_id))
        job = {"kind": "bigquery#job", "id": "%s:%s" % (p, job_id), "etag": new_etag(),
               "jobReference": {"projectId": p, "jobId": job_id, "location": location or "US"},
               "configuration": {"jobType": "QUERY", "query": {"query": sql, "useLegacySql": bool(legacy)}},
               "statistics": {"creationTime": str(now_ms()), "startTime": str(now_ms()), "endTime": str(now_ms()),
                              "query": {"statementType": "ALTER_TABLE", "totalBytesProcessed": "0"}},
               "status": {"state": "DONE"}, "user_email": "test-double"}
        try:
            if legacy is not False:
                raise bad("The BigQuery test double runs only GoogleSQL DDL: set useLegacySql to false",
                          reason="invalidQuery")
            ddl = parse_ddl(sql, p, (default_ds or {}).get("datasetId"))
            self.apply_ddl(ddl)
            job["statistics"]["query"]["ddlOperationPerformed"] = "ALTER"
            job["statistics"]["query"]["ddlTargetTable"] = {"projectId": ddl["table"][0],
                                                            "datasetId": ddl["table"][1],
                                                            "tableId": ddl["table"][2]}
        except ApiError as e:
            if raise_errors:
                raise
            err = {"reason": e.reason, "message": e.message, "location": "query"}
            job["status"] = {"state": "DONE", "errorResult": err, "errors": [err]}
        store.jobs[(p, job_id)] = job
        return job

    def query_results(self, job):
        st = job["status"]
        if st.get("errorResult"):
            e = st["errorResult"]
            raise ApiError(404 if e["reason"] == "notFound" else 400, e["reason"], e["message"])
        return {"kind": "bigquery#queryResponse", "jobReference": job["jobReference"], "jobComplete": True,
                "totalRows": "0", "schema": {"fields": []}, "rows": [], "totalBytesProcessed": "0",
                "cacheHit": False}

    def apply_ddl(self, ddl):
        store = self.server.double.store
        tb = store.table(*ddl["table"])
        if ddl["op"] == "set_options":
            new = json.loads(json.dumps(tb.resource))
            new["maxStaleness"] = ddl["max_staleness"]
            store.validate_table_parts(new, tb.fields)
            tb.resource = new
            tb.touch()
        elif ddl["op"] == "add_pk":
            if tb.pk():
                raise bad("Already have a primary key on table %s" % tb.ref(), reason="invalidQuery")
            store.check_pk(ddl["columns"], field_map(tb.fields))
            tb.resource["tableConstraints"] = dict(tb.resource.get("tableConstraints") or {},
                                                   primaryKey={"columns": ddl["columns"]})
            tb.touch()
        elif ddl["op"] == "drop_not_null":
            fields = json.loads(json.dumps(tb.fields))
            f = next((x for x in fields if x["name"].lower() == ddl["column"].lower()), None)
            if f is None:
                raise bad("Column %s not found in table %s" % (ddl["column"], tb.ref()), reason="invalidQuery")
            f["mode"] = "NULLABLE" if f["mode"] == "REQUIRED" else f["mode"]
            store.update_table(tb, {"schema": {"fields": fields}}, replace=False)

    # ------------------------------------------------------------- control API

    def control(self, method, path, query):
        d = self.server.double
        what = path[len("/_test/"):]
        if what == "faults":
            if method == "POST":
                body = json.loads(self.body() or b"null")
                rules = body if isinstance(body, list) else [body]
                return self.send_json(200, {"faults": [d.faults.add(r) for r in rules]})
            if method == "GET":
                return self.send_json(200, {"faults": d.faults.listing()})
            if method == "DELETE":
                d.faults.clear()
                return self.send_json(200, {"faults": []})
        if what == "token" and method == "POST":
            body = self.json_body()
            scopes = body.get("scopes") or [SCOPE_CLOUD]
            tok, exp = d.auth.mint(scopes, "control", body.get("lifetime"))
            return self.send_json(200, {"access_token": tok, "expires_in": exp, "token_type": "Bearer"})
        if what == "service-accounts" and method == "POST":
            email = d.auth.add_account_json(self.json_body())
            return self.send_json(200, {"client_email": email})
        if what == "datasets" and method == "POST":
            body = self.json_body()
            with d.store.lock:
                ds = d.store.add_dataset(body["projectId"], body["datasetId"], body)
            return self.send_json(200, ds)
        if what == "stats" and method == "GET":
            with d.stats.lock:
                st = {"counts": dict(d.stats.counts), "connections": d.stats.connections,
                      "open_connections": d.stats.open_connections,
                      "max_open_connections": d.stats.max_open_connections,
                      "tokens_issued": dict(d.auth.issued)}
                if query.get("appends") == "true":
                    st["appends"] = list(d.stats.appends)
                    st["get_write_streams"] = list(d.stats.get_write_streams)
            return self.send_json(200, st)
        if what == "rows" and method == "GET":
            tref = query.get("table", "")
            parts = tref.replace(":", ".").split(".")
            if len(parts) != 3:
                raise bad("rows: ?table=project.dataset.table")
            with d.store.lock:
                tb = d.store.table(*parts)
                rows = [{f["name"]: json_value(f, r.get(f["name"])) for f in tb.fields} for r in tb.live_rows()]
                tomb = sum(1 for e in tb.cdc.values() if e.deleted)
                body = {"table": tb.ref(), "primary_key": tb.pk(), "rows": rows, "tombstones": tomb,
                        "stats": dict(tb.stats), "warnings": list(tb.warnings)}
            return self.send_json(200, body)
        if what == "reset" and method == "POST":
            with d.store.lock:
                d.store.tables.clear()
                d.store.jobs.clear()
                d.store.streams.clear()
                keep = {k: v for k, v in d.store.datasets.items() if k in d.preset_datasets}
                d.store.datasets.clear()
                d.store.datasets.update(keep)
            d.faults.clear()
            return self.send_json(200, {})
        if what == "shutdown" and method == "POST":
            self.send_json(200, {})
            threading.Thread(target=d.shutdown, daemon=True).start()
            return None
        raise not_found("control endpoint %s %s" % (method, path))


DDL_TABLE = r"(`[^`]+`(?:\.`[^`]+`){0,2}|[A-Za-z0-9_\-]+(?:\.[A-Za-z0-9_\-]+){0,2})"
DDL_SET_OPTIONS = re.compile(r"^\s*ALTER\s+TABLE\s+(?:IF\s+EXISTS\s+)?" + DDL_TABLE +
                             r"\s+SET\s+OPTIONS\s*\((.*)\)\s*;?\s*$", re.I | re.S)
DDL_ADD_PK = re.compile(r"^\s*ALTER\s+TABLE\s+" + DDL_TABLE +
                        r"\s+ADD\s+PRIMARY\s+KEY\s*\(([^)]*)\)\s*(NOT\s+ENFORCED)?\s*;?\s*$", re.I | re.S)
DDL_DROP_NOT_NULL = re.compile(r"^\s*ALTER\s+TABLE\s+" + DDL_TABLE +
                               r"\s+ALTER\s+COLUMN\s+(`[^`]+`|[A-Za-z_][A-Za-z0-9_]*)\s+DROP\s+NOT\s+NULL\s*;?\s*$",
                               re.I | re.S)
OPT_STALENESS = re.compile(r"^\s*max_staleness\s*=\s*(.*?)\s*$", re.I | re.S)
INTERVAL_UNIT_RE = re.compile(r"^INTERVAL\s+(-?\d+)\s+([A-Za-z]+)$", re.I)
INTERVAL_STR_RE = re.compile(r"^INTERVAL\s+(['\"])(.*)\1\s+YEAR\s+TO\s+SECOND$", re.I)


def parse_table_name(text, project, dataset):
    parts = [x for x in re.split(r"\.", text.replace("`", "")) if x]
    if len(parts) == 3:
        return tuple(parts)
    if len(parts) == 2:
        return (project, parts[0], parts[1])
    if len(parts) == 1 and dataset:
        return (project, dataset, parts[0])
    raise bad("Table \"%s\" must be qualified with a dataset (e.g. dataset.table)." % text, reason="invalidQuery")


def parse_ddl(sql, project, dataset):
    """The DDL statements cdcflow's target runs; anything else is refused by name."""
    m = DDL_SET_OPTIONS.match(sql)
    if m:
        opts = m.group(2).strip()
        om = OPT_STALENESS.match(opts)
        if not om or "," in opts:
            raise bad("ALTER TABLE SET OPTIONS: the BigQuery test double supports only the option max_staleness "
                      "(got: %s)" % opts, reason="invalidQuery")
        val = om.group(1).strip()
        if val.upper() == "NULL":
            staleness = None
        else:
            um, sm = INTERVAL_UNIT_RE.match(val), INTERVAL_STR_RE.match(val)
            try:
                if um:
                    staleness = Interval.from_unit(int(um.group(1)), um.group(2)).canonical()
                elif sm:
                    staleness = Interval.parse_canonical(sm.group(2)).canonical()
                else:
                    raise ValueError("expected INTERVAL <n> <unit> or INTERVAL '<Y-M D H:M:S>' YEAR TO SECOND")
            except ValueError as e:
                raise bad("Invalid value for max_staleness: %s (%s)" % (val, e), reason="invalidQuery")
        return {"op": "set_options", "table": parse_table_name(m.group(1), project, dataset),
                "max_staleness": staleness}
    m = DDL_ADD_PK.match(sql)
    if m:
        if not m.group(3):
            raise bad("Only NOT ENFORCED primary keys are supported: ALTER TABLE ... ADD PRIMARY KEY (...) NOT ENFORCED",
                      reason="invalidQuery")
        cols = [c.strip().strip("`") for c in m.group(2).split(",") if c.strip()]
        if not cols:
            raise bad("ADD PRIMARY KEY needs at least one column", reason="invalidQuery")
        return {"op": "add_pk", "table": parse_table_name(m.group(1), project, dataset), "columns": cols}
    m = DDL_DROP_NOT_NULL.match(sql)
    if m:
        return {"op": "drop_not_null", "table": parse_table_name(m.group(1), project, dataset),
                "column": m.group(2).strip("`")}
    raise bad("The BigQuery test double does not run this statement (it parses only ALTER TABLE ... SET OPTIONS "
              "(max_staleness = ...), ALTER TABLE ... ADD PRIMARY KEY (...) NOT ENFORCED and ALTER TABLE ... "
              "ALTER COLUMN ... DROP NOT NULL): %.200s" % sql, reason="invalidQuery")


# ============================================================================ the server

class ThreadingHTTPServer(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


class Double:
    def __init__(self, args):
        self.args = args
        self.verbose = args.verbose
        self.store = Store(args.same_request_tie)
        self.auth = Auth(args.token_lifetime, not args.no_auth)
        self.faults = Faults()
        self.stats = Stats()
        self.max_request_bytes = args.max_request_bytes
        self.token_audiences = list(args.token_audience or [])
        self.metadata_email = args.metadata_email
        self.metadata_project = args.metadata_project
        self.preset_datasets = set()
        self.class_cache = {}
        self.plan_cache = {}
        self.cache_lock = threading.Lock()
        self.stopped = threading.Event()
        for tok in args.access_token or []:
            self.auth.add_static(tok)
        for path in args.service_account_key or []:
            with open(path) as f:
                self.auth.add_account_json(json.load(f))
        for ds in args.dataset or []:
            p, _, dsid = ds.replace(":", ".").partition(".")
            if not p or not dsid:
                raise SystemExit("bq_test_server: --dataset wants project.dataset, got %r" % ds)
            self.store.add_dataset(p, dsid)
            self.preset_datasets.add((p, dsid))

    def message_class(self, dp):
        """DescriptorProto from the client -> a message class of Google's protobuf runtime, in a
        pool of its own (the descriptor must be self-contained, as BigQuery requires)."""
        raw = dp.SerializeToString()
        key = hashlib.sha256(raw).hexdigest()
        with self.cache_lock:
            cls = self.class_cache.get(key)
        if cls is not None:
            return cls
        if not dp.name:
            raise bad("Invalid proto schema: the DescriptorProto has no name")
        fdp = descriptor_pb2.FileDescriptorProto(name="writer_%s.proto" % key[:16], syntax="proto2")
        fdp.message_type.add().CopyFrom(dp)
        pool = descriptor_pool.DescriptorPool()
        try:
            pool.Add(fdp)
            desc = pool.FindMessageTypeByName(dp.name)
            cls = message_factory.GetMessageClass(desc)
        except Exception as e:
            raise bad("Invalid proto schema: %s (the descriptor must be self-contained: nested types only, "
                      "no imports)" % e)
        with self.cache_lock:
            self.class_cache[key] = cls
        return cls

    def plan(self, cls, fields, generation, stream):
        key = (id(cls), stream.rsplit("/streams/", 1)[0], generation)
        with self.cache_lock:
            p = self.plan_cache.get(key)
        if p is None:
            p = Plan(cls.DESCRIPTOR, fields, stream)
            with self.cache_lock:
                self.plan_cache[key] = p
        return p

    def start(self):
        a = self.args
        svc = WriteService(self)
        ident = lambda b: b  # noqa: E731 - raw bytes in and out: sizes are measured on the wire form
        handlers = {
            "AppendRows": grpc.stream_stream_rpc_method_handler(svc.AppendRows, ident, ident),
            "GetWriteStream": grpc.unary_unary_rpc_method_handler(svc.GetWriteStream, ident, ident),
            "CreateWriteStream": grpc.unary_unary_rpc_method_handler(svc.CreateWriteStream, ident, ident),
            "FinalizeWriteStream": grpc.unary_unary_rpc_method_handler(svc._not_for_default("FinalizeWriteStream"),
                                                                       ident, ident),
            "FlushRows": grpc.unary_unary_rpc_method_handler(svc._not_for_default("FlushRows"), ident, ident),
            "BatchCommitWriteStreams": grpc.unary_unary_rpc_method_handler(
                svc._not_for_default("BatchCommitWriteStreams"), ident, ident),
        }
        self.grpc_server = grpc.server(
            concurrent.futures.ThreadPoolExecutor(max_workers=a.max_connections + 8),
            handlers=[grpc.method_handlers_generic_handler(SERVICE, handlers)],
            maximum_concurrent_rpcs=a.max_connections,
            # lenient keepalive: a client's pings never get it a GOAWAY "too_many_pings" here
            options=[("grpc.keepalive_permit_without_calls", 1),
                     ("grpc.http2.min_ping_interval_without_data_ms", 1000),
                     ("grpc.http2.max_ping_strikes", 0),
                     ("grpc.max_receive_message_length", 64 * 1024 * 1024),
                     ("grpc.max_send_message_length", 64 * 1024 * 1024),
                     ("grpc.so_reuseport", 0)])
        self.grpc_port = self.grpc_server.add_insecure_port("%s:%d" % (a.host, a.grpc_port))
        if self.grpc_port == 0:
            raise SystemExit("bq_test_server: cannot listen for gRPC on %s:%d" % (a.host, a.grpc_port))
        self.http = ThreadingHTTPServer((a.host, a.http_port), HttpHandler)
        self.http.double = self
        self.http_port = self.http.server_address[1]
        self.grpc_server.start()
        threading.Thread(target=self.http.serve_forever, daemon=True).start()
        info = {"grpc": "%s:%d" % (a.host, self.grpc_port), "http": "http://%s:%d" % (a.host, self.http_port),
                "token_uri": "http://%s:%d/token" % (a.host, self.http_port),
                "metadata_host": "%s:%d" % (a.host, self.http_port), "pid": os.getpid()}
        if a.ready_file:
            tmp = a.ready_file + ".tmp"
            with open(tmp, "w") as f:
                json.dump(info, f)
            os.replace(tmp, a.ready_file)
        print("bq_test_server: ready " + json.dumps(info), flush=True)

    def shutdown(self):
        if self.stopped.is_set():
            return
        self.stopped.set()
        try:
            self.http.shutdown()
        except Exception:
            pass
        self.grpc_server.stop(grace=0.5)


def main(argv=None):
    ap = argparse.ArgumentParser(description="A TEST DOUBLE of Google BigQuery (Storage Write API over gRPC "
                                 "+ REST v2 tables + OAuth) for cdcflow's tests. Not BigQuery.")
    ap.add_argument("--host", default="127.0.0.1", help="loopback address to listen on (default 127.0.0.1)")
    ap.add_argument("--grpc-port", type=int, default=0, help="gRPC port (0: any free port)")
    ap.add_argument("--http-port", type=int, default=0, help="HTTP port: REST, OAuth, metadata, control (0: any)")
    ap.add_argument("--ready-file", help="write {grpc, http, token_uri, metadata_host, pid} here once listening")
    ap.add_argument("--dataset", action="append", help="create project.dataset at start (repeatable)")
    ap.add_argument("--service-account-key", action="append",
                    help="service account JSON key whose JWTs the token endpoint accepts (repeatable)")
    ap.add_argument("--access-token", action="append", help="an always-valid bearer token (repeatable)")
    ap.add_argument("--no-auth", action="store_true", help="accept requests without a bearer token")
    ap.add_argument("--token-lifetime", type=float, default=3600, help="seconds an issued token lives (3600)")
    ap.add_argument("--token-audience", action="append", help="another accepted JWT aud (repeatable)")
    ap.add_argument("--metadata-email", default="test-double@cdcflow-test.iam.gserviceaccount.com")
    ap.add_argument("--metadata-project", default="cdcflow-test")
    ap.add_argument("--max-request-bytes", type=int, default=DEFAULT_MAX_REQUEST_BYTES,
                    help="AppendRows request limit (default 10,000,000)")
    ap.add_argument("--max-connections", type=int, default=64, help="concurrent gRPC calls (64)")
    ap.add_argument("--same-request-tie", choices=("first", "last"), default="first",
                    help="which of two rows of ONE request with the same key and equal (or no) sequence "
                    "numbers wins (default first, as observed on BigQuery: java-bigquerystorage#2404)")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args(argv)
    if not (args.host.startswith("127.") or args.host in ("::1", "localhost")):
        raise SystemExit("bq_test_server: listens on loopback only (got --host %s)" % args.host)
    d = Double(args)
    d.start()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: threading.Thread(target=d.shutdown, daemon=True).start())
    while not d.stopped.wait(0.5):
        pass
    d.grpc_server.wait_for_termination(timeout=5)
    return 0


if __name__ == "__main__":
    sys.exit(main())
