#!/usr/bin/env bash
# test_rest_slow_clients.sh - held connections cannot take the REST API down
# (issue 15: 1,100 half-open requests did). 1,100 sockets each send part of a
# request line and hold; a real `GET /connectors` must then answer within
# 5 s. Beyond rest.connections.max.per.ip (100) the held connections idle
# longest are closed to make room, and one idle past
# rest.connection.idle.timeout.ms is closed by the worker. The same with
# rest.connections.max (50) and no per-address limit. A request head that
# trickles in byte by byte is closed at rest.request.header.timeout.ms. The client needs 1,100+ descriptors: the test raises its soft
# limit (ulimit -n 4096) and, if the hard limit is lower, uses fewer sockets
# and says so.
set -euo pipefail
T=$(mktemp -d /tmp/cf_rest_slow.XXXXXX)
source "$(dirname "$0")/rest_lib.sh"
ulimit -n 4096 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
N=1100
lim=$(ulimit -n)
if [ "$lim" != unlimited ] && [ "$lim" -lt $((N + 64)) ]; then
    N=$((lim - 64))
    echo "NOTE: descriptor limit $lim: holding $N connections instead of 1100" >&2
fi

rest_start "$T/w" 'rest.connection.idle.timeout.ms=3000'
c=$(code POST /connectors -H 'Content-Type: application/json' \
    --data '{"name":"s1","config":{"connector.class":"stream","topic":"t"}}')
[ "$c" = 201 ] || fail "create: $c $(cat "$T/body")"

cat > "$T/hold.py" <<'P'
import http.client, socket, sys, time
port, n, limit = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
held = []
for i in range(n):
    s = socket.socket()
    s.settimeout(5)
    try:
        s.connect(("127.0.0.1", port))
        s.sendall(b"GET /connectors HTTP/1.1\r\nHost: 127.0")  # and never the rest
    except OSError:
        pass  # refused or reset: the worker protects itself, fine
    held.append(s)
print(f"holding {n} half-open connections", file=sys.stderr)
t0 = time.monotonic()
try:
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    c.request("GET", "/connectors")
    r = c.getresponse()
    body = r.read()
except OSError as e:
    sys.exit(f"FAIL: GET /connectors under {n} held connections: {e!r} after {time.monotonic() - t0:.1f} s")
dt = time.monotonic() - t0
print(f"GET /connectors answered {r.status} in {dt:.3f} s", file=sys.stderr)
if r.status != 200 or body != b'["s1"]' or dt >= 5:
    sys.exit(f"FAIL: GET /connectors: {r.status} {body!r} in {dt:.1f} s")
# a second, a third: the API stays up while they are held
for k in range(3):
    t0 = time.monotonic()
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    c.request("GET", "/connectors/s1/status")
    r = c.getresponse(); r.read()
    if r.status != 200 or time.monotonic() - t0 >= 5:
        sys.exit(f"FAIL: request {k}: {r.status} in {time.monotonic() - t0:.1f} s")
def count_closed():
    closed = 0
    for s in held:
        s.settimeout(0.001)
        try:
            if s.recv(1) == b"":
                closed += 1
        except socket.timeout:
            pass
        except OSError:
            closed += 1
    return closed
# over the limit, the oldest held ones were closed at once to make room
early = count_closed()
print(f"{early} of {n} held connections closed to make room", file=sys.stderr)
if early < n - limit - 10:
    sys.exit(f"FAIL: only {early} held connections were closed beyond the limit of {limit}")
# the idle timeout (3 s) closes the rest: reading gives EOF or a reset
time.sleep(5)
closed = count_closed()
print(f"{closed} of {n} held connections closed by the worker after 5 s", file=sys.stderr)
if closed < n:
    sys.exit(f"FAIL: {n - closed} held connections still open after the 3 s idle timeout")
P
# the per-address limit (100 by default) makes room
python3 "$T/hold.py" "$PORT" "$N" 100 || fail "slow clients (see above)"
# the worker survived and still answers
c=$(code GET /connectors)
[ "$c" = 200 ] || fail "after: $c"
rest_stop
# the total limit, with no per-address one, makes room the same way
rest_start "$T/w2" 'rest.connection.idle.timeout.ms=3000' 'rest.connections.max=50' 'rest.connections.max.per.ip=0'
c=$(code POST /connectors -H 'Content-Type: application/json' \
    --data '{"name":"s1","config":{"connector.class":"stream","topic":"t"}}')
[ "$c" = 201 ] || fail "create: $c $(cat "$T/body")"
python3 "$T/hold.py" "$PORT" 300 50 || fail "slow clients, total limit (see above)"
grep -q 'WARN.*rest.connections.max=50' "$T/w2/err.txt" || fail "no WARN at the limit: $(cat "$T/w2/err.txt")"
[ "$(grep -c 'WARN' "$T/w2/err.txt")" = 1 ] || fail "more than one WARN: $(grep WARN "$T/w2/err.txt")"
rest_stop
# slowloris: one byte every 0.5 s is never idle, but the request head has a
# deadline (rest.request.header.timeout.ms=2000); the API answers meanwhile
rest_start "$T/w3" 'rest.request.header.timeout.ms=2000'
python3 - "$PORT" <<'P' || fail "slowloris (see above)"
import http.client, socket, sys, time
port = int(sys.argv[1])
s = socket.create_connection(("127.0.0.1", port))
head = b"GET /connectors HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 100
t0 = time.monotonic()
closed_at = None
for i in range(len(head)):
    try:
        s.sendall(head[i:i + 1])
    except OSError:
        closed_at = time.monotonic() - t0
        break
    s.settimeout(0.5)
    try:
        if s.recv(1) == b"":
            closed_at = time.monotonic() - t0
            break
    except socket.timeout:
        pass
    except OSError:
        closed_at = time.monotonic() - t0
        break
    if i == 4:  # while it trickles, a real request is answered
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        c.request("GET", "/connectors")
        r = c.getresponse(); r.read()
        if r.status != 200:
            sys.exit(f"FAIL: GET during the trickle: {r.status}")
if closed_at is None or closed_at > 4.5:
    sys.exit(f"FAIL: a trickling request head was not closed by its 2 s deadline (closed at {closed_at})")
print(f"trickling request head closed after {closed_at:.1f} s", file=sys.stderr)
# a keep-alive connection between requests has the same deadline for its next head
c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
c.request("GET", "/connectors")
r = c.getresponse(); r.read()
t0 = time.monotonic()
c.sock.settimeout(10)
try:
    gone = c.sock.recv(1) == b""
except OSError:
    gone = True
dt = time.monotonic() - t0
if not gone or dt > 4.5:
    sys.exit(f"FAIL: an idle keep-alive connection stayed {dt:.1f} s")
print(f"idle keep-alive connection closed after {dt:.1f} s", file=sys.stderr)
P
rest_stop
echo OK
