#!/usr/bin/env python3
"""tensor_map_test.py - bench/gpu/run.py's launch of a kernel with
tensor-map parameters (launch_built, also bench/tma/gemm_bench.py's), run
without a GPU or torch: torch is a stub with tensors of fake device
addresses, libllm_fuse_rt loads the fake driver of the tests
(runtime/tests/fake_libcuda.c), which writes each map as a record of what it
was asked for and keeps the bytes of each launch's parameters.

    LLM_FUSE_LIBCUDA=FAKE_LIBCUDA FAKE_CUDA_MODULE_ERROR=0 FAKE_CUDA_LAUNCH_OK=1 \\
      python3 bench/gpu/tensor_map_test.py LIBLLM_FUSE_RT KERNEL_DIR

KERNEL_DIR is what llm-fuse-build-kernel wrote (kernel.cubin, result.json).
Prints the launch's parameters as the driver got them (pointers, then each
map decoded: address, rank, element type, dims and box, innermost first),
then two launches that must not happen: a buffer of another shape than the
map's, and a map the driver refuses (FAKE_CUDA_TMAP_ERROR). Exits 1 when
the launch's parameters are not the tensors' pointers and their maps.
"""
import ctypes
import json
import os
import struct
import sys
import types

HERE = os.path.dirname(os.path.abspath(__file__))


def stub_torch():
    torch = types.ModuleType("torch")
    for name in ("bfloat16", "float32", "float16", "float64", "int32", "int64"):
        setattr(torch, name, name)
    torch.cuda = types.SimpleNamespace(current_stream=lambda: types.SimpleNamespace(cuda_stream=None))
    nn = types.ModuleType("torch.nn")
    nn.Module = object   # run.py's module classes derive from it
    fn = types.ModuleType("torch.nn.functional")
    torch.nn, nn.functional = nn, fn
    sys.modules.update({"torch": torch, "torch.nn": nn, "torch.nn.functional": fn})


class Tensor:
    """what run.py's launch reads of a torch tensor"""

    def __init__(self, shape, addr, contiguous=True):
        self.shape, self.addr, self.contiguous = list(shape), addr, contiguous

    def data_ptr(self):
        return self.addr

    def is_contiguous(self):
        return self.contiguous


def shapes(res):
    out = []
    for p in res["params"]:
        if p["role"] in ("input", "output"):
            dims = p["type"][len("memref<"):-1].split("x")[:-1]
            out.append((p["role"], [int(d) for d in dims]))
    return out


def main():
    lib, kdir = sys.argv[1:3]
    stub_torch()
    sys.path.insert(0, HERE)
    import run as suite
    res = json.load(open(os.path.join(kdir, "result.json")))
    bufs = shapes(res)
    maps = [p for p in res["params"] if p["role"] == "tensor_map"]
    # the fake keeps 8 bytes per pointer and 128 per map of each launch of the kernel
    os.environ["FAKE_CUDA_RECORD"] = "%s:%s" % (res["kernel"], ",".join(["8"] * len(bufs) + ["128"] * len(maps)))
    rt = suite.Runtime(lib)
    fake = ctypes.CDLL(os.environ["LLM_FUSE_LIBCUDA"])
    addr = [0x7f0000000000 + (i + 1) * 0x100000000 for i in range(len(bufs))]
    ins = [Tensor(s, a) for (r, s), a in zip(bufs, addr) if r == "input"]
    outs = [Tensor(s, a) for (r, s), a in zip(bufs, addr) if r == "output"]
    launch = suite.launch_built(rt, kdir, ins, outs)
    launch()
    rt.check("launch")
    print("launched %s: %d pointer(s), %d map(s)" % (res["kernel"], len(bufs), launch.info["maps"]))
    rec = (ctypes.c_ubyte * (16 * 128))()
    n = fake.fake_launch_record(0, rec, len(rec))
    data = bytes(rec)[:n]
    bad = 0
    for i, a in enumerate(addr):
        got = struct.unpack_from("<Q", data, 8 * i)[0]
        print("param %d: pointer %s" % (i, "= the tensor's" if got == a else "0x%x, the tensor is at 0x%x" % (got, a)))
        bad += got != a
    for j, p in enumerate(maps):
        q = struct.unpack_from("<16Q", data, 8 * len(bufs) + 128 * j)
        rank = q[2] & 0xff
        tag = struct.pack("<Q", q[1])
        view = addr[p["operand"]]
        print("param %d: map %s over operand %d%s, rank %d, driver dtype %d, dims %s, box %s (innermost first)" % (
            len(bufs) + j, tag.decode(errors="replace"), p["operand"],
            "" if q[0] == view else " at 0x%x, NOT the operand's 0x%x" % (q[0], view),
            rank, (q[2] >> 8) & 0xff, list(q[3:3 + rank]), list(q[8:8 + rank])))
        bad += tag != b"FAKETMAP" or q[0] != view or list(q[3:3 + rank]) != p["dims"][::-1] or \
            list(q[8:8 + rank]) != p["box"][::-1]
    # a buffer that is not what the map says: refused before any encoding
    wrong = [Tensor([s[0] + 1] + s[1:], a) for s, a in ((t.shape, t.addr) for t in ins)]
    try:
        suite.launch_built(rt, kdir, wrong, outs)
        print("wrong shape: launched (BAD)")
        bad += 1
    except RuntimeError as e:
        print("wrong shape: %s" % str(e).replace(kdir, "KERNEL_DIR"))
    # the driver refuses a map: the runtime's error, no launch
    os.environ["FAKE_CUDA_TMAP_ERROR"] = "1"
    try:
        suite.launch_built(rt, kdir, ins, outs)
        print("refused map: launched (BAD)")
        bad += 1
    except RuntimeError as e:
        print("refused map: %s" % str(e).replace(kdir, "KERNEL_DIR"))
    del os.environ["FAKE_CUDA_TMAP_ERROR"]
    print("launches recorded: %d" % sum(fake.fake_launch_record(i, rec, 0) >= 0 for i in range(8)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
