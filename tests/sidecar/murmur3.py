"""murmur3.py - the token of a partition key as Cassandra's Murmur3Partitioner
computes it, for tests: ranges_check.py (test_sidecar_rf3.sh,
test_cluster_sidecar_ring.sh) checks it against the tokens Cassandra itself
returned (tokens.jsonl) before using it for keys no table holds any more
(deleted partitions)."""
import struct
M = (1 << 64) - 1
def rotl(x, r): return ((x << r) | (x >> (64 - r))) & M
def fmix(k):
    k ^= k >> 33; k = (k * 0xff51afd7ed558ccd) & M
    k ^= k >> 33; k = (k * 0xc4ceb9fe1a85ec53) & M
    k ^= k >> 33; return k
def token(data):
    """Cassandra's Murmur3Partitioner token: MurmurHash.hash3_x64_128 seed 0,
    h1 as a signed long, with its signed-byte tail (as Cassandra's Java)."""
    n = len(data); c1 = 0x87c37b91114253d5; c2 = 0x4cf5ad432745937f
    h1 = h2 = 0
    nb = n // 16
    for i in range(nb):
        k1, k2 = struct.unpack_from('<QQ', data, i * 16)
        k1 = (k1 * c1) & M; k1 = rotl(k1, 31); k1 = (k1 * c2) & M; h1 ^= k1
        h1 = rotl(h1, 27); h1 = (h1 + h2) & M; h1 = (h1 * 5 + 0x52dce729) & M
        k2 = (k2 * c2) & M; k2 = rotl(k2, 33); k2 = (k2 * c1) & M; h2 ^= k2
        h2 = rotl(h2, 31); h2 = (h2 + h1) & M; h2 = (h2 * 5 + 0x38495ab5) & M
    tail = data[nb * 16:]
    sb = lambda i: (tail[i] - 256 if tail[i] > 127 else tail[i]) & M  # sign-extended byte
    k1 = k2 = 0
    t = len(tail)
    for i in range(min(t, 16) - 1, 7, -1): k2 ^= (sb(i) << (8 * (i - 8))) & M
    if t > 8:
        k2 = (k2 * c2) & M; k2 = rotl(k2, 33); k2 = (k2 * c1) & M; h2 ^= k2
    for i in range(min(t, 8) - 1, -1, -1): k1 ^= (sb(i) << (8 * i)) & M
    if t > 0:
        k1 = (k1 * c1) & M; k1 = rotl(k1, 31); k1 = (k1 * c2) & M; h1 ^= k1
    h1 ^= n; h2 ^= n
    h1 = (h1 + h2) & M; h2 = (h2 + h1) & M
    h1 = fmix(h1); h2 = fmix(h2)
    h1 = (h1 + h2) & M
    v = h1 - (1 << 64) if h1 >> 63 else h1
    return (1 << 63) - 1 if v == -(1 << 63) else v
