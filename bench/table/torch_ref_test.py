#!/usr/bin/env python3
"""torch_ref_test.py - checks bench/table/torch_ref.py without torch.

For every family of heldout.py FAMILIES, at small sizes (rows 3 with
hidden 16, and rows 1 with hidden 8 in another element type where that
model verifies), the model is outlined (llm-fuse-opt --llm-fuse-outline),
and every subgraph is

  * translated to a torch function (torch_ref.translate) and run on the
    stand-in bench/table/fake_torch.py, and
  * run by MLIR itself: the outlined module with a @main that calls the
    subgraph on the same inputs, lowered by the upstream CPU pipeline (as
    scripts/cpu_equivalence.py does) and run by mlir-runner, printing the
    results' bits: the default lowering's semantics on the CPU (the GPU
    default lowering, llm-fuse-reference, runs only on a GPU).

Inputs are random multiples of 1/64 in [-1, 1] (exact in every element
type). Outputs are compared by the verifier's rule (docs/verification.md):
an element fails when !(|c - r| <= rtol*|r| + atol), atol = rtol * mean|r|,
rtol 2e-2 bf16, 1e-2 f16, 1e-3 f32. Prints per family PASS/FAIL (and per
subgraph the worst error over tolerance); exit status 1 on any failure.

  python3 bench/table/torch_ref_test.py [--opt BIN] [--only FAMILY,...] [-v]

Python 3 standard library only.
"""
import argparse
import math
import os
import random
import re
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import fake_torch  # noqa: E402
import heldout  # noqa: E402
import torch_ref  # noqa: E402

LLVM_BIN = "/usr/lib/llvm-22/bin"
RUNNER_LIBS = ["/usr/lib/llvm-22/lib/libmlir_runner_utils.so",
               "/usr/lib/llvm-22/lib/libmlir_c_runner_utils.so"]
# As scripts/cpu_equivalence.py (upstream passes only, MLIR 22).
CPU_PIPELINE = ",".join([
    "builtin.module(one-shot-bufferize{bufferize-function-boundaries"
    " function-boundary-type-conversion=identity-layout-map}",
    "buffer-deallocation-pipeline", "convert-bufferization-to-memref",
    "func.func(convert-linalg-to-loops)", "expand-strided-metadata",
    "lower-affine", "convert-scf-to-cf", "arith-expand{include-bf16=true}",
    "convert-math-to-llvm", "convert-math-to-libm", "finalize-memref-to-llvm",
    "convert-arith-to-llvm", "convert-cf-to-llvm", "convert-func-to-llvm",
    "convert-index-to-llvm", "reconcile-unrealized-casts)"])
RTOL = {"bf16": 2e-2, "f16": 1e-2, "f32": 1e-3, "f64": 1e-7}
FT = {"f32": fake_torch.float32, "bf16": fake_torch.bfloat16,
      "f16": fake_torch.float16, "f64": fake_torch.float64}


def small_model(name, rows, hidden, dtype=None):
    """The family's model with rows and hidden sizes replaced (hidden: the
    row length H, or D (F = 1.5 D) for the GEMM families, or the head count
    for the MiniGPT block (head dim 64 stays))."""
    fam = heldout.FAMILIES[name]
    src = open(os.path.join(heldout.ROOT, fam["src"])).read()
    h = fam["hidden"]
    if "HEADS" in h:
        heads = hidden
        d = 64 * heads
        new = {"HEADS": heads, "D": d, "D2": 2 * d, "D3": 3 * d, "F": 4 * d}
    elif set(h) == {"D", "F"}:
        new = {"D": hidden, "F": hidden * 3 // 2}
    else:
        new = {"H": hidden}
    ints = {fam["rows"]: rows}
    for k, v in h.items():
        if k != "HEADS":
            ints[v] = new[k]
    floats = {float(h[k]): new[k] for k in fam.get("floats", [])}
    t = heldout.size_rewrite(src, ints, floats)
    if "HEADS" in h:
        t = heldout.heads_rewrite(t, h["HEADS"], new["HEADS"])
    if dtype and dtype != fam["dtype"]:
        t = heldout.dtype_rewrite(t, fam["dtype"], dtype)
    return t


def run(cmd, inp=None, timeout=300):
    r = subprocess.run(cmd, input=inp, capture_output=True, text=True,
                       timeout=timeout)
    if r.returncode:
        raise RuntimeError("%s failed: %s" % (os.path.basename(cmd[0]),
                                              r.stderr.strip()[-600:]))
    return r.stdout


def dense(shape, vals):
    if not shape:
        return repr(vals[0])
    it = iter(vals)

    def nest(dims):
        if len(dims) == 1:
            return "[" + ", ".join(repr(next(it)) for _ in range(dims[0])) + "]"
        return "[" + ", ".join(nest(dims[1:]) for _ in range(dims[0])) + "]"
    return nest(shape)


def ttype(shape, elt):
    return "tensor<%s>" % "".join(["%dx" % d for d in shape] + [elt])


def make_main(calls):
    """calls: [(function, [(shape, elt, values)], [(shape, elt)])]. A @main
    that calls each and prints each result's f32 bits (printMemrefI32)."""
    L = ["  func.func private @printMemrefI32(memref<*xi32>) "
         "attributes {llvm.emit_c_interface}",
         "  func.func @main() {"]
    n = 0
    for fn, args, results in calls:
        names = []
        for shape, elt, vals in args:
            n += 1
            L.append("    %%in%d = arith.constant dense<%s> : %s" % (
                n, dense(shape, vals), ttype(shape, elt)))
            names.append("%%in%d" % n)
        n += 1
        rv = "%%r%d" % n
        rtypes = [ttype(s, e) for s, e in results]
        L.append("    %s%s = func.call @%s(%s) : (%s) -> %s" % (
            rv, ":%d" % len(results) if len(results) > 1 else "", fn,
            ", ".join(names), ", ".join(ttype(s, e) for s, e, _ in args),
            rtypes[0] if len(rtypes) == 1 else "(%s)" % ", ".join(rtypes)))
        for k, (shape, elt) in enumerate(results):
            n += 1
            r = rv if len(results) == 1 else "%s#%d" % (rv, k)
            rank = len(shape)
            ds = ", ".join("d%d" % i for i in range(rank))
            idm = "affine_map<(%s) -> (%s)>" % (ds, ds)
            its = ", ".join(['"parallel"'] * rank)
            tf, ti = ttype(shape, "f32"), ttype(shape, "i32")
            mi = "memref<%s>" % "".join(["%dx" % d for d in shape] + ["i32"])
            L += ["    %%ei%d = tensor.empty() : %s" % (n, ti),
                  "    %%i%d = linalg.generic {indexing_maps = [%s, %s], "
                  "iterator_types = [%s]} ins(%s : %s) outs(%%ei%d : %s) {" % (
                      n, idm, idm, its, r, ttype(shape, elt), n, ti),
                  "    ^bb0(%%a: %s, %%o: i32):" % elt]
            if elt == "f32":
                L.append("      %b = arith.bitcast %a : f32 to i32")
            else:
                L += ["      %%w = arith.extf %%a : %s to f32" % elt,
                      "      %b = arith.bitcast %w : f32 to i32"]
            L += ["      linalg.yield %b : i32", "    } -> %s" % ti,
                  "    %%m%d = bufferization.to_buffer %%i%d : %s to %s" % (
                      n, n, ti, mi),
                  "    %%u%d = memref.cast %%m%d : %s to memref<*xi32>" % (n, n, mi),
                  "    func.call @printMemrefI32(%%u%d) : (memref<*xi32>) -> ()" % n]
    L += ["    return", "  }"]
    return "\n".join(L) + "\n"


def mlir_outputs(opt, outlined, calls):
    """Runs the calls with mlir-runner on the CPU: per call, per result, the
    flat list of f32 values."""
    main = make_main(calls)
    end = outlined.rstrip().rfind("}")
    module = outlined[:end] + main + outlined[end:]
    llvm = run([opt, "--pass-pipeline=" + CPU_PIPELINE, "-"], module)
    out = run([os.path.join(LLVM_BIN, "mlir-runner"), "-e", "main",
               "-entry-point-result=void"] +
              ["-shared-libs=" + x for x in RUNNER_LIBS], llvm)
    blocks = out.split("Unranked Memref")[1:]
    vals = []
    for b in blocks:
        data = b.split("data =", 1)[1]
        ints = [int(x) for x in re.findall(r"-?\d+", data)]
        vals.append([struct.unpack("<f", struct.pack("<i", v))[0] for v in ints])
    res, k = [], 0
    for _, _, results in calls:
        res.append(vals[k:k + len(results)])
        k += len(results)
    return res


def compare(got, want, elt):
    """(ok, worst |c - r| / bound, bad count)."""
    rtol = RTOL[elt]
    fin = [abs(r) for r in want if math.isfinite(r)]
    atol = rtol * (sum(fin) / len(fin) if fin else 0.0)
    worst, bad = 0.0, 0
    for c, r in zip(got, want):
        if c == r or (math.isnan(c) and math.isnan(r)):
            continue
        bound = rtol * abs(r) + atol
        d = abs(c - r)
        if not d <= bound:
            bad += 1
        ratio = d / bound if bound > 0 else math.inf
        worst = max(worst, ratio if ratio == ratio else math.inf)
    if len(got) != len(want):
        bad += 1
    return bad == 0, worst, bad


CONFIGS = [  # (rows, hidden, dtype: None = the family's own, 'other' = another)
    (3, 16, None),
    (1, 8, "other"),
]


def check_family(opt, name, rng, verbose):
    fam = heldout.FAMILIES[name]
    lines, ok_all, n_sg = [], True, 0
    for rows, hidden, dsel in CONFIGS:
        if "HEADS" in fam["hidden"]:
            hidden = 2 if hidden >= 16 else 1
        dts = [None]
        if dsel == "other":
            dts = heldout.OTHER_DTYPES[fam["dtype"]]
        text = None
        for dt in dts:
            t = small_model(name, rows, hidden, dt)
            with tempfile.NamedTemporaryFile("w", suffix=".mlir", delete=False) as f:
                f.write(t)
                path = f.name
            try:
                outlined = run([opt, "--llm-fuse-outline=remarks=false", path,
                                "-o", "-"])
                text, used_dt = outlined, dt or fam["dtype"]
                break
            except RuntimeError:
                continue
            finally:
                os.unlink(path)
        tag = "rows %d hidden %d %s" % (rows, hidden, dts[-1] if dsel else
                                         fam["dtype"])
        if text is None:
            lines.append("  %s: no element type verifies (skipped)" % tag)
            continue
        tag = "rows %d hidden %d %s" % (rows, hidden, used_dt)
        gtext = torch_ref.prepare(opt, text)
        calls, fns, sigs = [], [], []
        for fn in torch_ref.functions(gtext):
            n_sg += 1
            try:
                src, sig = torch_ref.translate(gtext, fn)
            except torch_ref.Unsupported as e:
                lines.append("  %s %s: FAIL: unsupported: %s" % (tag, fn, e))
                ok_all = False
                continue
            if verbose:
                print(src)
            args = []
            for shape, elt in sig["args"]:
                n = 1
                for d in shape:
                    n *= d
                args.append((shape, elt, [rng.randint(-64, 64) / 64.0
                                          for _ in range(n)]))
            calls.append((fn, args, sig["results"]))
            fns.append((fn, src))
            sigs.append(sig)
        if not calls:
            continue
        try:
            ref = mlir_outputs(opt, text, calls)
        except RuntimeError as e:
            lines.append("  %s: FAIL: the MLIR run: %s" % (tag, e))
            ok_all = False
            continue
        for (fn, src), (_, args, results), want in zip(fns, calls, ref):
            t0 = time.time()
            try:
                f = torch_ref.load(src, fake_torch)
                ins = [fake_torch.from_list(v, s, FT[e]) for s, e, v in args]
                got = f(*ins)
            except Exception as e:  # noqa: BLE001 (a test reports everything)
                lines.append("  %s %s: FAIL: the translation raised %s: %s" % (
                    tag, fn, type(e).__name__, e))
                ok_all = False
                continue
            for k, ((shape, elt), g, w) in enumerate(zip(results, got, want)):
                if list(g.shape) != list(shape) or g.dtype is not FT[elt]:
                    ok, worst, bad = False, math.inf, -1
                    why = "shape/dtype %r %s, want %r %s" % (
                        g.shape, g.dtype, shape, elt)
                else:
                    ok, worst, bad = compare(g.data, w, elt)
                    why = "worst %.3g of tolerance, %d bad of %d" % (
                        worst, bad, len(w))
                ok_all &= ok
                lines.append("  %s %s result %d %s: %s (%s; %.1f s)" % (
                    tag, fn, k, "x".join(map(str, shape)) + elt,
                    "ok" if ok else "FAIL", why, time.time() - t0))
    return ok_all, n_sg, lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--opt", default=os.environ.get(
        "LLM_FUSE_OPT", os.path.join(heldout.ROOT, "build", "bin", "llm-fuse-opt")))
    ap.add_argument("--only", help="families, comma-separated")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("-v", "--verbose", action="store_true",
                    help="print the generated sources")
    a = ap.parse_args()
    fams = sorted(heldout.FAMILIES)
    if a.only:
        fams = [f for f in fams if f in a.only.split(",")]
    rng = random.Random(a.seed)
    failed = []
    for name in fams:
        t0 = time.time()
        try:
            ok, n, lines = check_family(a.opt, name, rng, a.verbose)
        except Exception as e:  # noqa: BLE001
            ok, n, lines = False, 0, ["  error: %s: %s" % (type(e).__name__, e)]
        print("%-16s %s (%d subgraph(s), %.1f s)" % (name, "PASS" if ok else "FAIL",
                                                     n, time.time() - t0))
        for ln in lines:
            print(ln)
        if not ok:
            failed.append(name)
        sys.stdout.flush()
    print("%d famil%s, %d failed%s" % (len(fams), "y" if len(fams) == 1 else "ies",
                                       len(failed),
                                       (": " + ", ".join(failed)) if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
