"""Debezium change events for the cdc-sink shell test, as a kcat -J record file.

The vectors are shared/specs/bigquery-cdc.md §3 (V1..V5) for
public.customers(id int4 PK, email text NOT NULL, name text NULL) after
ExtractNewRecordState with delete.handling.mode=rewrite, drop.tombstones=false,
serialized by Kafka's JsonConverter (schemas.enable=true), plus an unchanged
TOAST column (Debezium's __debezium_unavailable_value) and a redelivery of
offsets 10-11. `bad` adds a record whose __deleted is neither "true" nor "false".
"""
import json, sys
KS={"type":"struct","fields":[{"type":"int32","optional":False,"field":"id"}],"optional":False,"name":"dbserver1.public.customers.Key"}
VS={"type":"struct","fields":[{"type":"int32","optional":False,"field":"id"},{"type":"string","optional":False,"field":"email"},{"type":"string","optional":True,"field":"name"},{"type":"string","optional":True,"field":"__deleted"}],"optional":False,"name":"dbserver1.public.customers.Value"}
def key(i): return json.dumps({"schema":KS,"payload":{"id":i}},separators=(",",":"))
VSO=dict(VS, optional=True)  # Debezium's `after` schema, optional: what a tombstone-mode delete carries
def val(p): return json.dumps({"schema":VS if p is not None else VSO,"payload":p},separators=(",",":"))
T="dbserver1.public.customers"
recs=[(10,key(1),val({"id":1,"email":"a@x","name":"A","__deleted":"false"})),
 (11,key(1),val({"id":1,"email":"b@x","name":None,"__deleted":"false"})),
 (12,key(1),val({"id":1,"email":"","name":None,"__deleted":"true"})),
 (13,key(1),None),
 (14,key(2),val({"id":2,"email":"x@x","name":"B","__deleted":"false"})),
 (15,key(2),val(None)),
 (16,key(3),val({"id":3,"email":"c@x","name":"C","__deleted":"false"})),
 (17,key(3),val({"id":3,"email":"c2@x","name":"__debezium_unavailable_value","__deleted":"false"})),
 (10,key(1),val({"id":1,"email":"a@x","name":"A","__deleted":"false"})),
 (11,key(1),val({"id":1,"email":"b@x","name":None,"__deleted":"false"}))]
if len(sys.argv)>1 and sys.argv[1]=="bad":
    recs.append((18,key(4),val({"id":4,"email":"d@x","name":None,"__deleted":"TRUE"})))
for off,k,v in recs:
    print(json.dumps({"topic":T,"partition":0,"offset":off,"broker":-1,"key":k,"payload":v},separators=(",",":")))
