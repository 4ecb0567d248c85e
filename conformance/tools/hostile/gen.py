#!/usr/bin/env python3
"""Writes the hostile inputs of the resource benchmark (bench.sh).

Each file is a valid-looking GGUF v3 container whose cost lies in what it
declares, not in its size on disk:

  tensors-sparse  1,000,000 tensor infos, all claiming one 100 GiB region of
                  a sparse file (about 39 MB on disk)
  tensors-dense   100,000 tensors over one dense 64 MiB region (71 MB)
  tensors-empty   1,000,000 empty tensors (shape [0]; 40 MB)
  keys-10m        10,000,000 key/value pairs (about 230 MB)
  sparse-100g     one 100 GiB tensor in a sparse file, metadata only

Usage: gen.py DIR [NAME...]   (all files when no NAME is given)
"""
import os
import struct
import sys

F32 = 0


def gguf(kvs, tensors, align=32):
    """Header, key/values (key, type id, packed value) and tensor infos
    (name, dims, type, offset); returns the bytes up to the aligned data start."""
    out = [b"GGUF", struct.pack("<IQQ", 3, len(tensors), len(kvs))]
    for key, ty, val in kvs:
        k = key.encode()
        out.append(struct.pack("<Q", len(k)) + k + struct.pack("<I", ty) + val)
    for name, dims, ty, off in tensors:
        n = name.encode()
        out.append(struct.pack("<Q", len(n)) + n + struct.pack("<I", len(dims))
                   + b"".join(struct.pack("<Q", d) for d in dims) + struct.pack("<IQ", ty, off))
    head = b"".join(out)
    pad = (-len(head)) % align
    return head + b"\0" * pad


def arch():
    v = b"bench"
    return ("general.architecture", 8, struct.pack("<Q", len(v)) + v)


def write(path, head, data_len=0, dense=b""):
    with open(path, "wb") as f:
        f.write(head)
        f.write(dense)
        f.truncate(len(head) + data_len)


def tensors_sparse(path):
    region = 100 << 30
    infos = [(f"t{i}", [region // 4], F32, 0) for i in range(1_000_000)]
    write(path, gguf([arch()], infos), data_len=region)


def tensors_dense(path):
    region = 64 << 20
    n = 100_000
    infos = [(f"t{i}", [region // 4 - n], F32, 4 * i) for i in range(n)]
    dense = struct.pack("<f", 1.0) * (region // 4)
    write(path, gguf([arch()], infos), data_len=region, dense=dense)


def tensors_empty(path):
    infos = [(f"t{i}", [0], F32, 0) for i in range(1_000_000)]
    write(path, gguf([arch()], infos))


def keys_10m(path):
    with open(path, "wb") as f:
        n = 10_000_000
        f.write(b"GGUF" + struct.pack("<IQQ", 3, 0, n + 1))
        key, ty, val = arch()
        f.write(struct.pack("<Q", len(key)) + key.encode() + struct.pack("<I", ty) + val)
        step = 100_000
        for base in range(0, n, step):
            parts = []
            for i in range(base, base + step):
                k = b"bench.k%d" % i
                parts.append(struct.pack("<Q", len(k)) + k + b"\x00\x00\x00\x00\x07")  # u8 = 7
            f.write(b"".join(parts))
        f.write(b"\0" * ((-f.tell()) % 32))


def sparse_100g(path):
    size = 100 << 30
    write(path, gguf([arch()], [("w", [size // 4], F32, 0)]), data_len=size)


FILES = {
    "tensors-sparse": tensors_sparse,
    "tensors-dense": tensors_dense,
    "tensors-empty": tensors_empty,
    "keys-10m": keys_10m,
    "sparse-100g": sparse_100g,
}

if __name__ == "__main__":
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name in sys.argv[2:] or FILES:
        path = os.path.join(out, name + ".gguf")
        if not os.path.exists(path):
            FILES[name](path)
        print(path)
