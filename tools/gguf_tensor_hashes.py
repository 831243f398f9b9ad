#!/usr/bin/env python3
"""Prints, as JSON, the type, shape and sha256 of every tensor's data bytes in GGUF files.

    gguf_tensor_hashes.py FILE...   ->   {"FILE": {"tensor name": {"type": "Q4_0",
                                          "dims": [576, 576], "sha256": "..."}, ...}, ...}

A small GGUF reader of its own (standard library only), so that fixtures made with it do
not depend on Kite's reader. It knows the sizes of the types Kite converts between.
"""

import hashlib
import json
import struct
import sys

# ggml type id -> (name, values per block, bytes per block)
TYPES = {
    0: ("F32", 1, 4),
    1: ("F16", 1, 2),
    2: ("Q4_0", 32, 18),
    3: ("Q4_1", 32, 20),
    6: ("Q5_0", 32, 22),
    7: ("Q5_1", 32, 24),
    8: ("Q8_0", 32, 34),
    12: ("Q4_K", 256, 144),
    13: ("Q5_K", 256, 176),
    14: ("Q6_K", 256, 210),
    30: ("BF16", 1, 2),
}

# GGUF metadata value type -> struct format of a scalar (8 = string, 9 = array)
SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?",
           10: "<Q", 11: "<q", 12: "<d"}


class Reader:
    def __init__(self, data):
        self.data = data
        self.pos = 0

    def unpack(self, fmt):
        (value,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return value

    def string(self):
        n = self.unpack("<Q")
        s = bytes(self.data[self.pos:self.pos + n]).decode("utf-8")
        self.pos += n
        return s

    def value(self, vtype):
        if vtype == 8:
            return self.string()
        if vtype == 9:
            elem_type = self.unpack("<I")
            return [self.value(elem_type) for _ in range(self.unpack("<Q"))]
        return self.unpack(SCALARS[vtype])


def tensor_hashes(path):
    with open(path, "rb") as f:
        data = memoryview(f.read())
    r = Reader(data)
    if bytes(data[:4]) != b"GGUF":
        sys.exit(f"{path}: not a GGUF file")
    r.pos = 4
    version = r.unpack("<I")
    if version not in (2, 3):
        sys.exit(f"{path}: GGUF version {version} is not supported")
    n_tensors = r.unpack("<Q")
    n_kv = r.unpack("<Q")
    alignment = 32
    for _ in range(n_kv):
        key = r.string()
        value = r.value(r.unpack("<I"))
        if key == "general.alignment":
            alignment = value
    infos = []
    for _ in range(n_tensors):
        name = r.string()
        dims = [r.unpack("<Q") for _ in range(r.unpack("<I"))]
        type_id = r.unpack("<I")
        offset = r.unpack("<Q")
        infos.append((name, dims, type_id, offset))
    data_start = (r.pos + alignment - 1) // alignment * alignment

    result = {}
    for name, dims, type_id, offset in infos:
        if type_id not in TYPES:
            sys.exit(f"{path}: tensor {name} has type {type_id}, which this script does not know")
        type_name, block, block_bytes = TYPES[type_id]
        n = 1
        for d in dims:
            n *= d
        size = n // block * block_bytes
        begin = data_start + offset
        if begin + size > len(data):
            sys.exit(f"{path}: tensor {name} runs past the end of the file")
        result[name] = {
            "type": type_name,
            "dims": dims,
            "sha256": hashlib.sha256(data[begin:begin + size]).hexdigest(),
        }
    return result


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: gguf_tensor_hashes.py FILE...")
    json.dump({path: tensor_hashes(path) for path in sys.argv[1:]}, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
