#!/usr/bin/env python3
"""Writes a model's inputs as raw files in<i>.bin: the same values as
scripts/cpu_equivalence.py's input_values() (an integer hash of argument and
element index, multiples of 1/64 in [-1, 1]), vectorized with numpy so the
GPU machine can make the full-size inputs in a second instead of carrying
tens of megabytes. f32 only.

  bench/e2e/gen_inputs.py MODEL.mlir OUT_DIR
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "scripts"))
import cpu_equivalence as ce  # noqa: E402


def values(arg_index, count):
    m = np.uint64(0xFFFFFFFF)
    n = np.arange(count, dtype=np.uint64)
    h = (n * np.uint64(2654435761) + np.uint64((arg_index + 1) * 0x9E3779B9)) & m
    h ^= h >> np.uint64(15)
    h = (h * np.uint64(2246822519)) & m
    h ^= h >> np.uint64(13)
    h = (h * np.uint64(3266489917)) & m
    h ^= h >> np.uint64(16)
    return ((h % np.uint64(129)).astype(np.int64) - 64).astype(np.float32) / 64.0


def main():
    model, out = sys.argv[1], sys.argv[2]
    text = open(model).read()
    _, arg_types, _ = ce.find_entry(text, None)
    for a, t in enumerate(arg_types):
        shape, elem = ce.parse_tensor_type(t)
        if elem != "f32":
            sys.exit("gen_inputs.py: f32 models only (%s)" % t)
        v = values(a, int(np.prod(shape)))
        if a == 0:  # the pure-Python original, on a prefix, as a check
            ref = np.array(ce.input_values(a, 1000), dtype=np.float32)
            assert np.array_equal(ref, v[:1000]), "hash mismatch"
        v.astype("<f4").tofile(os.path.join(out, "in%d.bin" % a))
    print("gen_inputs: %d input(s) written to %s" % (len(arg_types), out))


if __name__ == "__main__":
    main()
