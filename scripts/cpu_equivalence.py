#!/usr/bin/env python3
"""CPU equivalence check of a transformation on llm-fuse's example models.

For each example in examples/ (see EXAMPLES below) this script

  1. makes a small variant of the model by substituting its realistic
     dimensions with small ones (a per-example table; the substitution is
     textual but checked: every realistic dimension must occur, none may be
     left over, and the small variant must parse and verify),
  2. optionally transforms it with a command (--transform "CMD ARGS": the
     small model's path is appended to the command, the transformed IR is
     read from its stdout),
  3. appends a @main that builds deterministic pseudo-random inputs (dense
     constants from a fixed formula, exact in bf16), calls the model and
     prints every result twice: as f32 values (printMemrefF32; bf16 results
     are widened exactly) and as the raw bits of those f32 values
     (printMemrefI32),
  4. lowers original and transformed alike with the upstream CPU pipeline
     (CPU_PIPELINE; TOSA examples go through TOSA_PIPELINE first),
  5. runs both with mlir-runner, and
  6. compares the two printouts byte for byte (after blanking the buffer
     addresses), after checking that each is sane: the right number of
     values, all finite, not all zero.

It prints one line per example:

  NAME: values=N abs-sum=S ir-changed=yes|no identical: yes|no

ir-changed says whether the transform changed the small model at all (both
sides are printed by the same opt with no passes before they are compared),
so that a no-op transform is visible; bit-identical outputs are required
either way. With no --transform only the original runs (a sanity check of
the examples and the pipeline). The exit status is 0 only if every example ran and
was identical; any failure is reported on stderr with the step that failed.

Examples:
  scripts/cpu_equivalence.py --list
  scripts/cpu_equivalence.py --example all --self-test
  scripts/cpu_equivalence.py --example mlp_block \\
      --transform "build/bin/llm-fuse-opt --llm-fuse-outline"
  scripts/cpu_equivalence.py --emit-small softmax        # print the small IR

Python 3 standard library only.
"""

import argparse
import concurrent.futures
import math
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

SRC_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LLVM_BIN = "/usr/lib/llvm-22/bin"
RUNNER_LIBS = [
    "/usr/lib/llvm-22/lib/libmlir_runner_utils.so",
    "/usr/lib/llvm-22/lib/libmlir_c_runner_utils.so",
]

# Example name -> file (relative to the source root), the substitution table
# from realistic to small dimensions, optional exact literal substitutions
# (constants that depend on a dimension), and the front end ("linalg" or
# "tosa"). Every realistic dimension of a file must mean one thing only; the
# small sizes are chosen distinct where two dimensions meet in one op, so
# that a mixed-up index shows up as a verifier error or a wrong value.
EXAMPLES = {
    "mlp_block": dict(
        file="examples/mlp_block.mlir",
        dims={4096: 8, 768: 16, 3072: 32}),
    "gemm_epilogue": dict(
        file="examples/gemm_epilogue.mlir",
        dims={1024: 8, 8192: 16}),
    "rmsnorm": dict(
        file="examples/rmsnorm.mlir",
        dims={16384: 8, 4096: 16}),
    "layernorm": dict(
        file="examples/layernorm.mlir",
        dims={16384: 8, 4096: 16}),
    "layernorm_f32": dict(
        file="examples/layernorm_f32.mlir",
        dims={4096: 8, 16384: 16}),
    "softmax": dict(
        file="examples/softmax.mlir",
        dims={16384: 8, 8192: 16}),
    "swiglu": dict(
        file="examples/swiglu.mlir",
        dims={8192: 8, 4096: 16, 14336: 24}),
    "minigpt_block": dict(
        file="examples/minigpt_block.mlir",
        # seq 1024, hidden 768 = 12 heads x 64, qkv 2304 (slices at 768 and
        # 1536), MLP 3072  ->  seq 10, hidden 16 = 2 heads x 8, qkv 48
        # (slices at 16 and 32), MLP 40.
        dims={1024: 10, 768: 16, 12: 2, 64: 8, 2304: 48, 1536: 32, 3072: 40},
        # The attention scale 1/sqrt(head dim) follows the head dim.
        literals={"0.125": "0.353553385"}),
    "tosa/mlp_block": dict(
        file="examples/tosa/mlp_block.mlir",
        dims={4096: 8, 768: 16, 3072: 32}, frontend="tosa"),
    "tosa/softmax": dict(
        file="examples/tosa/softmax.mlir",
        dims={4096: 8, 16384: 16}, frontend="tosa"),
    "tosa/rmsnorm": dict(
        file="examples/tosa/rmsnorm.mlir",
        dims={16384: 8, 4096: 16}, frontend="tosa"),
}

# TOSA -> linalg on tensors (the conversion the TOSA examples are checked
# with); run before CPU_PIPELINE on TOSA examples.
TOSA_PIPELINE = ("builtin.module(func.func(tosa-to-linalg-named,tosa-to-linalg,"
                 "tosa-to-arith,tosa-to-tensor),canonicalize)")

# linalg on tensors -> LLVM dialect, upstream passes only (MLIR 22).
# arith-expand{include-bf16} turns bf16 extf/truncf into integer ops (round
# to nearest even), so no soft-float library calls are needed in the JIT.
CPU_PIPELINE = ",".join([
    "builtin.module(one-shot-bufferize{bufferize-function-boundaries"
    " function-boundary-type-conversion=identity-layout-map}",
    "buffer-deallocation-pipeline",
    "convert-bufferization-to-memref",
    "func.func(convert-linalg-to-loops)",
    "expand-strided-metadata",
    "lower-affine",
    "convert-scf-to-cf",
    "arith-expand{include-bf16=true}",
    "convert-math-to-llvm",
    "convert-math-to-libm",
    "finalize-memref-to-llvm",
    "convert-arith-to-llvm",
    "convert-cf-to-llvm",
    "convert-func-to-llvm",
    "convert-index-to-llvm",
    "reconcile-unrealized-casts)",
])

TOOL_TIMEOUT_S = 300


class Failure(Exception):
    """A step of one example failed; the message says which and why."""


def find_tool(names, env_var=None):
    if env_var and os.environ.get(env_var):
        return os.environ[env_var]
    for n in names:
        p = shutil.which(n)
        if p:
            return p
        p = os.path.join(LLVM_BIN, n)
        if os.access(p, os.X_OK):
            return p
    return None


def default_llm_fuse_opt():
    p = os.path.join(SRC_ROOT, "build", "bin", "llm-fuse-opt")
    if os.access(p, os.X_OK):
        return p
    return shutil.which("llm-fuse-opt")


# ---------------------------------------------------------------- small IR

# A whole number that is a dimension: not part of an identifier, SSA name,
# float literal fraction or exponent; either standing alone or inside a
# shape such as 4096x768xbf16 (preceded by "<digit>x" / "?x", followed by
# "x" or a non-word character).
_NUM = (r"(?:(?<=\dx)|(?<=\?x)|(?<![\w.%#@^$+\-]))"
        r"(\d+)"
        r"(?=x|(?!\w))")


def strip_comments(text):
    return re.sub(r"//[^\n]*", "", text)


def make_small(name, spec, text):
    """Returns the small variant of an example's text."""
    dims = spec["dims"]
    code = strip_comments(text)
    for k in dims:
        if not re.search(r"(?<!\d)%d(?!\d)" % k, code):
            raise Failure("table lists dimension %d, which %s does not contain"
                          % (k, spec["file"]))

    def sub(m):
        n = int(m.group(1))
        return str(dims[n]) if n in dims else m.group(0)

    small = re.sub(_NUM, sub, text)
    for lit, rep in spec.get("literals", {}).items():
        pat = r"(?<![\w.])%s(?![\w.])" % re.escape(lit)
        if not re.search(pat, strip_comments(small)):
            raise Failure("literal %s listed in the table is not in %s"
                          % (lit, spec["file"]))
        small = re.sub(pat, rep, small)
    code = strip_comments(small)
    for k in dims:
        m = re.search(r"(?<!\d)%d(?!\d)" % k, code)
        if m:
            line = code.count("\n", 0, m.start()) + 1
            raise Failure("dimension %d still occurs after substitution "
                          "(line %d of the small variant): it is used in a "
                          "way the substitution does not recognise; make the "
                          "example unambiguous" % (k, line))
    return small


# ------------------------------------------------------------ signature

_ELEM_TYPES = ("bf16", "f16", "f32", "f64")


def parse_tensor_type(t):
    m = re.fullmatch(r"tensor<((?:\d+x)*)(\w+)>", t)
    if not m:
        raise Failure("unsupported type %s (static ranked tensors only)" % t)
    shape = [int(d) for d in m.group(1).split("x") if d]
    elem = m.group(2)
    if elem not in _ELEM_TYPES:
        raise Failure("unsupported element type %s" % elem)
    return shape, elem


def find_entry(text, want=None):
    """Returns (name, [arg types], [result types]) of the public function."""
    funcs = []
    for m in re.finditer(r"func\.func\s+(private\s+)?@([\w$.]+)\s*\(", text):
        if m.group(1):
            continue
        # the argument list, up to the matching parenthesis
        depth, i = 1, m.end()
        while depth and i < len(text):
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
        args = text[m.end():i - 1]
        rest = text[i:]
        body = rest.find("{")
        head = rest[:body] if body >= 0 else rest
        results = []
        if re.match(r"\s*->", head):
            results = re.findall(r"tensor<[^>]*>", head.split("attributes")[0])
        arg_types = re.findall(r"%[\w$.]+\s*:\s*(tensor<[^>]*>)", args)
        n_args = len(re.findall(r"%[\w$.]+\s*:", args))
        if n_args != len(arg_types):
            raise Failure("@%s has non-tensor arguments" % m.group(2))
        funcs.append((m.group(2), arg_types, results))
    if want:
        funcs = [f for f in funcs if f[0] == want]
    if len(funcs) != 1:
        raise Failure("expected one public function%s, found %s" % (
            " @" + want if want else "", [f[0] for f in funcs] or "none"))
    if not funcs[0][2]:
        raise Failure("@%s returns no tensors" % funcs[0][0])
    return funcs[0]


# ------------------------------------------------------------------ @main

def input_values(arg_index, count):
    """Deterministic pseudo-random values in [-1, 1], multiples of 1/64:
    exact in bf16 (at most 7 significant bits) and printed exactly by repr.
    An integer hash of (argument, element index), so platform-independent."""
    out = []
    for n in range(count):
        h = (n * 2654435761 + (arg_index + 1) * 0x9E3779B9) & 0xFFFFFFFF
        h ^= h >> 15
        h = (h * 2246822519) & 0xFFFFFFFF
        h ^= h >> 13
        h = (h * 3266489917) & 0xFFFFFFFF
        h ^= h >> 16
        out.append(((h % 129) - 64) / 64.0)
    return out


def dense_literal(shape, values):
    if not shape:
        return repr(values[0])
    it = iter(values)

    def nest(dims):
        if len(dims) == 1:
            return "[" + ", ".join(repr(next(it)) for _ in range(dims[0])) + "]"
        return "[" + ", ".join(nest(dims[1:]) for _ in range(dims[0])) + "]"
    return nest(shape)


def identity_map(rank):
    ds = ", ".join("d%d" % i for i in range(rank))
    return "affine_map<(%s) -> (%s)>" % (ds, ds)


def tensor_type(shape, elem):
    return "tensor<%s>" % "".join(["%dx" % d for d in shape] + [elem])


def memref_type(shape, elem):
    return "memref<%s>" % "".join(["%dx" % d for d in shape] + [elem])


def make_main(entry, arg_types, result_types, module_text):
    lines = []
    if "@printMemrefF32" not in module_text:
        lines.append("  func.func private @printMemrefF32(memref<*xf32>) "
                     "attributes {llvm.emit_c_interface}")
    if "@printMemrefI32" not in module_text:
        lines.append("  func.func private @printMemrefI32(memref<*xi32>) "
                     "attributes {llvm.emit_c_interface}")
    lines.append("  func.func @main() {")
    args = []
    for a, t in enumerate(arg_types):
        shape, _ = parse_tensor_type(t)
        vals = input_values(a, math.prod(shape))
        lines.append("    %%in%d = arith.constant dense<%s> : %s"
                     % (a, dense_literal(shape, vals), t))
        args.append("%%in%d" % a)
    nres = len(result_types)
    res = "%res" if nres == 1 else "%%res:%d" % nres
    lines.append("    %s = func.call @%s(%s) : (%s) -> %s" % (
        res, entry, ", ".join(args), ", ".join(arg_types),
        result_types[0] if nres == 1 else "(%s)" % ", ".join(result_types)))
    for r, t in enumerate(result_types):
        shape, elem = parse_tensor_type(t)
        rv = "%res" if nres == 1 else "%%res#%d" % r
        rank = len(shape)
        maps = "[%s, %s]" % (identity_map(rank), identity_map(rank))
        its = "[%s]" % ", ".join(['"parallel"'] * rank)
        tf = tensor_type(shape, "f32")
        ti = tensor_type(shape, "i32")
        fv = "%%f%d" % r
        if elem == "f32":
            fv = rv
        else:
            op = "arith.extf" if elem in ("bf16", "f16") else "arith.truncf"
            lines += [
                "    %%ef%d = tensor.empty() : %s" % (r, tf),
                "    %%f%d = linalg.generic {indexing_maps = %s, iterator_types = %s}"
                " ins(%s : %s) outs(%%ef%d : %s) {" % (r, maps, its, rv, t, r, tf),
                "    ^bb0(%%a: %s, %%o: f32):" % elem,
                "      %%w = %s %%a : %s to f32" % (op, elem),
                "      linalg.yield %w : f32",
                "    } -> %s" % tf,
            ]
        lines += [
            "    %%ei%d = tensor.empty() : %s" % (r, ti),
            "    %%i%d = linalg.generic {indexing_maps = %s, iterator_types = %s}"
            " ins(%s : %s) outs(%%ei%d : %s) {" % (r, maps, its, fv, tf, r, ti),
            "    ^bb0(%a: f32, %o: i32):",
            "      %b = arith.bitcast %a : f32 to i32",
            "      linalg.yield %b : i32",
            "    } -> %s" % ti,
            "    %%mf%d = bufferization.to_buffer %s : %s to %s"
            % (r, fv, tf, memref_type(shape, "f32")),
            "    %%uf%d = memref.cast %%mf%d : %s to memref<*xf32>"
            % (r, r, memref_type(shape, "f32")),
            "    func.call @printMemrefF32(%%uf%d) : (memref<*xf32>) -> ()" % r,
            "    %%mi%d = bufferization.to_buffer %%i%d : %s to %s"
            % (r, r, ti, memref_type(shape, "i32")),
            "    %%ui%d = memref.cast %%mi%d : %s to memref<*xi32>"
            % (r, r, memref_type(shape, "i32")),
            "    func.call @printMemrefI32(%%ui%d) : (memref<*xi32>) -> ()" % r,
        ]
    lines += ["    return", "  }"]
    return "\n".join(lines) + "\n"


def insert_into_module(module_text, extra):
    """Puts extra ops at the end of the top-level module: inside an explicit
    `module { ... }` (as printed by an opt tool), else after the last op of
    the implicit one."""
    if re.search(r"^\s*(builtin\.)?module\b", strip_comments(module_text),
                 re.M):
        end = module_text.rstrip().rfind("}")
        return module_text[:end] + extra + module_text[end:]
    return module_text.rstrip() + "\n" + extra


# ------------------------------------------------------------- processes

def run_tool(cmd, step, timeout=TOOL_TIMEOUT_S):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True,
                           stdin=subprocess.DEVNULL, timeout=timeout)
    except FileNotFoundError:
        raise Failure("%s: %s not found" % (step, cmd[0]))
    except subprocess.TimeoutExpired:
        raise Failure("%s: timed out after %d s: %s"
                      % (step, timeout, " ".join(map(shlex.quote, cmd))))
    if p.returncode != 0:
        err = (p.stderr or p.stdout).strip().splitlines()[-15:]
        raise Failure("%s failed (exit %d): %s%s" % (
            step, p.returncode, " ".join(map(shlex.quote, cmd)),
            "".join("\n  " + e for e in err)))
    return p.stdout


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


_MEMREF_HEAD = re.compile(
    r"Unranked Memref base@ = 0x[0-9a-fA-F]+ rank = (\d+) offset = (\d+) "
    r"sizes = \[([\d, ]*)\] strides = \[([\d, ]*)\] data =")
_NUMBER = re.compile(r"[-+]?(?:nan|inf|\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)")


def parse_printout(out, result_types):
    """Checks the printout of @main; returns (normalised text, #values,
    abs-sum of the f32 values)."""
    heads = list(_MEMREF_HEAD.finditer(out))
    if len(heads) != 2 * len(result_types):
        raise Failure("expected %d printed memrefs, got %d"
                      % (2 * len(result_types), len(heads)))
    total, abs_sum, nonzero = 0, 0.0, 0
    for k, h in enumerate(heads):
        end = heads[k + 1].start() if k + 1 < len(heads) else len(out)
        data = out[h.end():end]
        vals = _NUMBER.findall(data)
        sizes = [int(s) for s in h.group(3).split(",") if s.strip()]
        shape, _ = parse_tensor_type(result_types[k // 2])
        if sizes != shape:
            raise Failure("printed sizes %s, expected %s" % (sizes, shape))
        if len(vals) != math.prod(shape):
            raise Failure("printed %d values, expected %d"
                          % (len(vals), math.prod(shape)))
        if k % 2 == 0:  # the f32 view
            for v in vals:
                x = float(v)
                if not math.isfinite(x):
                    raise Failure("output contains %s" % v)
                abs_sum += abs(x)
                nonzero += x != 0.0
            total += len(vals)
    if total == 0:
        raise Failure("no output values")
    if nonzero == 0:
        raise Failure("all %d output values are zero" % total)
    norm = re.sub(r"base@ = 0x[0-9a-fA-F]+", "base@ = <addr>", out)
    return norm, total, abs_sum


# ------------------------------------------------------------- one example

class Tools:
    def __init__(self, args):
        self.opt = args.opt
        self.runner = args.runner
        self.transform = args.transform_cmd
        self.pipeline = args.pipeline
        self.libs = args.shared_libs


def check_example(name, tools, workdir, lower_tosa_first=False):
    """Returns (values, abs_sum, ir_changed, identical, detail)."""
    spec = EXAMPLES[name]
    tag = name.replace("/", "_")
    path = os.path.join(SRC_ROOT, spec["file"])
    with open(path) as f:
        text = f.read()
    small = make_small(name, spec, text)
    small_path = os.path.join(workdir, tag + ".small.mlir")
    write(small_path, small)
    # Parse/verify the small variant; the printed form is the reference IR.
    ref = run_tool([tools.opt, small_path], "parsing the small variant")
    entry, arg_types, result_types = find_entry(small, spec.get("func"))

    is_tosa = spec.get("frontend") == "tosa"
    pre = [TOSA_PIPELINE] if is_tosa else []
    if is_tosa and lower_tosa_first:
        ref = run_tool([tools.opt, "--pass-pipeline=" + TOSA_PIPELINE,
                        small_path], "TOSA to linalg")
        pre = []
        write(small_path, ref)

    variants = {"original": ref}
    ir_changed = None
    if tools.transform:
        out = run_tool(tools.transform + [small_path], "the transform")
        if not out.strip():
            raise Failure("the transform printed nothing: %s" % " ".join(
                map(shlex.quote, tools.transform + [small_path])))
        tpath = os.path.join(workdir, tag + ".transformed.mlir")
        write(tpath, out)
        # Both sides printed by the same opt with no passes, so that only
        # the transformation (not the printer) counts as a change.
        out = run_tool([tools.opt, tpath], "parsing the transformed IR")
        ir_changed = out != ref
        variants["transformed"] = out

    prints = {}
    for which, ir in variants.items():
        main = make_main(entry, arg_types, result_types, ir)
        full = insert_into_module(ir, main)
        src = os.path.join(workdir, "%s.%s.main.mlir" % (tag, which))
        write(src, full)
        lowered = src
        for i, pl in enumerate(pre + [tools.pipeline]):
            dst = os.path.join(workdir, "%s.%s.lowered%d.mlir" % (tag, which, i))
            run_tool([tools.opt, "--pass-pipeline=" + pl, lowered, "-o", dst],
                     "lowering the %s model to LLVM" % which)
            lowered = dst
        out = run_tool([tools.runner, lowered, "-e", "main",
                        "-entry-point-result=void",
                        "-shared-libs=" + ",".join(tools.libs)],
                       "running the %s model" % which)
        write(os.path.join(workdir, "%s.%s.out" % (tag, which)), out)
        prints[which] = parse_printout(out, result_types)

    norm, count, abs_sum = prints["original"]
    if "transformed" not in prints:
        return count, abs_sum, None, None, ""
    tnorm, tcount, tsum = prints["transformed"]
    identical = norm == tnorm
    detail = ""
    if not identical:
        a, b = norm.splitlines(), tnorm.splitlines()
        for i, (x, y) in enumerate(zip(a, b)):
            if x != y:
                detail = ("first difference at output line %d:\n  original:    %s"
                          "\n  transformed: %s" % (i + 1, x[:200], y[:200]))
                break
        else:
            detail = "outputs differ in length (%d vs %d lines)" % (len(a), len(b))
    return count, abs_sum, ir_changed, identical, detail


# ------------------------------------------------------------------ main

def main(argv):
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Examples: " + ", ".join(EXAMPLES))
    ap.add_argument("--example", action="append", default=[],
                    help="example name (repeatable, or comma-separated), or "
                         "'all' (the default)")
    ap.add_argument("--transform", metavar="CMD",
                    help="command that transforms the small model: the "
                         "model's path is appended, the result is read from "
                         "stdout (e.g. \"build/bin/llm-fuse-opt "
                         "--llm-fuse-outline\")")
    ap.add_argument("--self-test", action="store_true",
                    help="use llm-fuse-opt --linalg-generalize-named-ops as "
                         "the transform (a stand-in that must be exact)")
    ap.add_argument("--lower-tosa-first", action="store_true",
                    help="convert TOSA examples to linalg before the "
                         "transform (default: transform the TOSA as written)")
    ap.add_argument("--opt", default=find_tool(["mlir-opt-22", "mlir-opt"],
                                               "MLIR_OPT"),
                    help="opt used to parse and lower (default: mlir-opt-22)")
    ap.add_argument("--runner", default=find_tool(["mlir-runner-22",
                                                   "mlir-runner"],
                                                  "MLIR_RUNNER"),
                    help="JIT runner (default: mlir-runner-22)")
    ap.add_argument("--pipeline", default=CPU_PIPELINE,
                    help="CPU lowering pipeline (default: %(default)s)")
    ap.add_argument("--shared-libs", default=",".join(RUNNER_LIBS),
                    help="runner support libraries (default: %(default)s)")
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1,
                    help="examples checked in parallel")
    ap.add_argument("--keep", metavar="DIR",
                    help="keep intermediate files in DIR")
    ap.add_argument("--list", action="store_true",
                    help="list the examples and their dimension tables")
    ap.add_argument("--emit-small", metavar="NAME",
                    help="print the small variant of one example and exit")
    args = ap.parse_args(argv)

    if args.list:
        for n, s in EXAMPLES.items():
            print("%-16s %-32s %s%s" % (n, s["file"], s["dims"],
                                        " " + str(s["literals"])
                                        if s.get("literals") else ""))
        return 0
    if args.emit_small:
        if args.emit_small not in EXAMPLES:
            ap.error("unknown example %s" % args.emit_small)
        spec = EXAMPLES[args.emit_small]
        with open(os.path.join(SRC_ROOT, spec["file"])) as f:
            try:
                sys.stdout.write(make_small(args.emit_small, spec, f.read()))
            except Failure as e:
                print("error: %s" % e, file=sys.stderr)
                return 1
        return 0

    names = []
    for e in args.example or ["all"]:
        for n in e.split(","):
            n = n.strip()
            if n == "all":
                names += [x for x in EXAMPLES if x not in names]
            elif n in EXAMPLES:
                if n not in names:
                    names.append(n)
            else:
                ap.error("unknown example %r (known: %s)"
                         % (n, ", ".join(EXAMPLES)))

    if args.self_test and args.transform:
        ap.error("--self-test and --transform are exclusive")
    if args.self_test:
        lfo = default_llm_fuse_opt()
        if not lfo:
            ap.error("--self-test needs build/bin/llm-fuse-opt")
        args.transform_cmd = [lfo, "--linalg-generalize-named-ops"]
    elif args.transform:
        args.transform_cmd = shlex.split(args.transform)
    else:
        args.transform_cmd = None
    if not args.opt or not args.runner:
        ap.error("mlir-opt-22 / mlir-runner-22 not found (see --opt, --runner)")
    args.shared_libs = [s for s in args.shared_libs.split(",") if s]
    tools = Tools(args)

    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
        workdir, cleanup = args.keep, None
    else:
        cleanup = tempfile.TemporaryDirectory(prefix="cpu_equivalence.")
        workdir = cleanup.name

    t0 = time.monotonic()
    results = {}
    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        futs = {n: pool.submit(check_example, n, tools, workdir,
                               args.lower_tosa_first) for n in names}
        for n in names:
            try:
                results[n] = futs[n].result()
            except Failure as e:
                results[n] = e
    # One line per example on stdout, each followed by its error (if any)
    # on stderr; flushed so that 2>&1 keeps them in order.
    def say(text, stream=sys.stdout):
        print(text, file=stream, flush=True)

    ok = True
    for n in names:
        r = results[n]
        if isinstance(r, Failure):
            ok = False
            say("%s: FAILED" % n)
            hint = ("" if args.keep else "\n  (rerun with --keep DIR to keep "
                    "the intermediate files)")
            say("error: %s: %s%s" % (n, r, hint), sys.stderr)
            continue
        count, abs_sum, changed, identical, detail = r
        if identical is None:
            say("%s: values=%d abs-sum=%.6g (no transform: ran the original "
                "only)" % (n, count, abs_sum))
            continue
        say("%s: values=%d abs-sum=%.6g ir-changed=%s identical: %s" % (
            n, count, abs_sum, "yes" if changed else "no",
            "yes" if identical else "no"))
        if not identical:
            ok = False
            say("error: %s: original and transformed outputs differ; %s"
                % (n, detail), sys.stderr)
    say("%d example(s) in %.1f s: %s" % (
        len(names), time.monotonic() - t0,
        "FAILURES" if not ok else
        "all identical" if tools.transform else "ok"), sys.stderr)
    if cleanup:
        cleanup.cleanup()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
