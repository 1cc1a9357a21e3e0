#!/usr/bin/env python3
"""torch_ref.py - one outlined llm-fuse subgraph as a Python function over
torch tensors (issue 15, point 7: time every held-out subgraph against torch
eager and torch.compile on the same sizes and element types).

The input is the func.func that the outliner makes for a subgraph
(`llm-fuse-opt --llm-fuse-outline`), taken through
`--linalg-generalize-named-ops --mlir-print-op-generic` (prepare()): every
linalg op is then a linalg.generic (matmul, batch_matmul, transpose, fill,
reduce included) and every op prints in the one generic syntax. TOSA models
are outlined after their conversion to linalg, so no TOSA op remains.

What is translated:

  * linalg.generic: each input is viewed in the iteration space through
    its indexing map (a projected permutation; constant 0 results on unit
    dimensions too), the body is evaluated elementwise as torch ops on
    broadcasting tensors (arith add/sub/mul/div/rem/neg/max/min, extf ->
    .to(f32), truncf -> .to(bf16/f16), cmpf/cmpi, select, sitofp,
    index_cast, math exp/exp2/log/log1p/log2/tanh/rsqrt/sqrt/erf/abs/...,
    linalg.index -> torch.arange), constants folded; a result with
    reduction dimensions must yield combiner(value, %out) (addf -> sum,
    mulf -> prod, maximumf/maxnumf -> amax, minimumf/minnumf -> amin),
    and the initial value is combined after (skipped when it is the
    combiner's identity). A sum of a product of two different inputs
    (a contraction: matmul, batch_matmul, attention scores) becomes one
    torch.einsum in the inputs' storage type (bf16 operands widened by
    extf to an f32 accumulator: the product runs in bf16 with torch's f32
    accumulation and is widened after, as x @ w would in a bf16 model).
  * tensor.empty, tensor.expand_shape / collapse_shape (reshape),
    tensor.extract_slice (static offsets, sizes, strides), arith.constant
    scalars and dense splats (a splat input of a generic becomes a scalar
    in its body), func.return (every result made contiguous).

Anything else raises Unsupported with the op's name: the caller records it
as that subgraph's error. Temporaries are deleted after their last use, so
that eager mode holds no more than it needs.

API:
  prepare(opt, outlined_text) -> generic-form text
  functions(generic_text) -> [name of each outlined subgraph]
  translate(generic_text, name) -> (source, signature)
      signature: dict(args=[(shape, dtype)], results=[(shape, dtype)]);
      source defines `subgraph(*args)` over a global `torch`.
  load(source, torch_module) -> the function

Python 3 standard library only; runs on the real torch or on the stand-in
bench/table/fake_torch.py (the tests: torch_ref_test.py).
"""
import math
import re
import struct
import subprocess

__all__ = ["prepare", "functions", "translate", "load", "Unsupported"]


class Unsupported(Exception):
    pass


TORCH_DT = {"f32": "torch.float32", "bf16": "torch.bfloat16",
            "f16": "torch.float16", "f64": "torch.float64",
            "i64": "torch.int64", "index": "torch.int64", "i32": "torch.int32",
            "i1": "torch.bool"}
FLOATS = ("f16", "bf16", "f32", "f64")


def prepare(opt, outlined_text, timeout=300):
    """The outlined module in generic form with named linalg ops
    generalized (see the module docstring)."""
    r = subprocess.run([opt, "--linalg-generalize-named-ops",
                        "--mlir-print-op-generic", "-"], input=outlined_text,
                       capture_output=True, text=True, timeout=timeout)
    if r.returncode:
        raise Unsupported("generalize failed: " + r.stderr.strip()[-300:])
    return r.stdout


# ---- scalars -------------------------------------------------------------

def round_to(v, ty):
    """v (a Python float) rounded to the MLIR float type ty."""
    if ty in ("f64",) or not isinstance(v, float):
        return v
    if math.isnan(v) or math.isinf(v):
        return v
    try:
        f = struct.unpack("<f", struct.pack("<f", v))[0]
    except OverflowError:
        return math.copysign(math.inf, v)
    if ty == "f32":
        return f
    if ty == "f16":
        try:
            return struct.unpack("<e", struct.pack("<e", f))[0]
        except OverflowError:
            return math.copysign(math.inf, v)
    if ty == "bf16":
        b = struct.unpack("<I", struct.pack("<f", f))[0]
        b = (b + 0x7FFF + ((b >> 16) & 1)) & 0xFFFF0000
        return struct.unpack("<f", struct.pack("<I", b))[0]
    return v


def parse_float(text, ty):
    t = text.strip()
    if t.startswith("0x") or t.startswith("0X"):
        bits = int(t, 16)
        if ty == "f32":
            return struct.unpack("<f", struct.pack("<I", bits))[0]
        if ty == "bf16":
            return struct.unpack("<f", struct.pack("<I", bits << 16))[0]
        if ty == "f16":
            return struct.unpack("<e", struct.pack("<H", bits))[0]
        if ty == "f64":
            return struct.unpack("<d", struct.pack("<Q", bits))[0]
        raise Unsupported("hex constant of type %s" % ty)
    if ty in FLOATS:
        return round_to(float(t), ty)
    if t in ("true", "false"):
        return t == "true"
    return int(t)


def lit(v):
    """A Python literal for a constant."""
    if isinstance(v, bool):
        return repr(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "_NAN"
        if math.isinf(v):
            return "_INF" if v > 0 else "(-_INF)"
        return repr(v)
    return repr(v)


# ---- parsing the generic form ----------------------------------------------

def parse_type(t):
    """'tensor<3x16xbf16>' -> (shape, elt); 'f32' -> (None, 'f32')."""
    t = t.strip()
    m = re.fullmatch(r"tensor<((?:\d+x)*)([a-z]+\d*)>", t)
    if m:
        return [int(d) for d in m.group(1).split("x") if d], m.group(2)
    if re.fullmatch(r"[a-z]+\d*", t):
        return None, t
    raise Unsupported("type %s" % t)


def split_top(s, sep=","):
    """Splits at `sep` outside <>, (), [], {}."""
    out, depth, cur = [], 0, []
    for ch in s:
        if ch in "<([{":
            depth += 1
        elif ch in ">)]}":
            depth -= 1
        if ch == sep and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        out.append("".join(cur))
    return [x.strip() for x in out]


OP_LINE = re.compile(r'^\s*(?:(%[\w.$-]+)(?::(\d+))?\s*=\s*)?"([\w.]+)"\((.*?)\)(.*)$')
SIG = re.compile(r":\s*\(([^()]*)\)\s*->\s*(.*?)\s*$")


def parse_sig(rest):
    m = SIG.search(rest)
    if not m:
        return [], []
    ins = split_top(m.group(1)) if m.group(1).strip() else []
    out = m.group(2).strip()
    if out.startswith("("):
        out = split_top(out[1:-1]) if out[1:-1].strip() else []
    else:
        out = [out]
    return ins, out


def parse_region(lines, i):
    """Ops from lines[i] up to the line that closes the region ('})...').
    Returns (region, index of the closing line)."""
    reg = dict(args=[], ops=[])
    while i < len(lines):
        ln = lines[i].strip()
        if ln.startswith("})"):
            return reg, i
        if ln.startswith("^"):
            m = re.match(r"\^\w+\((.*)\):", ln)
            args = []
            if m and m.group(1).strip():
                for a in split_top(m.group(1)):
                    n, _, ty = a.partition(":")
                    args.append((n.strip(), ty.strip()))
            reg["args"] = args
            i += 1
            continue
        if not ln:
            i += 1
            continue
        m = OP_LINE.match(ln)
        if not m:
            raise Unsupported("cannot parse: " + ln[:120])
        res, nres, name, operands, rest = m.groups()
        op = dict(name=name, operands=[o.strip() for o in operands.split(",")
                                       if o.strip()],
                  results=[], props=rest, regions=[])
        if res:
            n = int(nres) if nres else 1
            op["results"] = [res] if n == 1 else ["%s#%d" % (res, k)
                                                  for k in range(n)]
        if rest.rstrip().endswith("({"):
            sub, j = parse_region(lines, i + 1)
            op["regions"].append(sub)
            close = lines[j].strip()
            # `}, {` would start another region: not expected here
            op["props_end"] = close
            ins, outs = parse_sig(close)
            i = j + 1
        else:
            ins, outs = parse_sig(rest)
            i += 1
        op["in_types"], op["out_types"] = ins, outs
        reg["ops"].append(op)
    return reg, i


def aliases(text):
    out = {}
    for m in re.finditer(r"^(#[\w.$-]+)\s*=\s*(affine_map<.*>)\s*$", text, re.M):
        out[m.group(1)] = m.group(2)
    return out


def parse_map(s, als):
    s = s.strip()
    s = als.get(s, s)
    m = re.fullmatch(r"affine_map<\(([^)]*)\)\s*->\s*\(([^)]*)\)>", s)
    if not m:
        raise Unsupported("indexing map %s" % s[:80])
    dims = [d.strip() for d in m.group(1).split(",") if d.strip()]
    res = []
    for e in [e.strip() for e in m.group(2).split(",") if e.strip()]:
        if e in dims:
            res.append(("d", dims.index(e)))
        elif re.fullmatch(r"\d+", e):
            res.append(("c", int(e)))
        else:
            raise Unsupported("indexing map result %s (not a projected "
                              "permutation)" % e)
    return len(dims), res


def functions(text):
    return re.findall(r'sym_name = "(sg_[0-9a-f]+)"', text)


def find_function(text, name):
    lines = text.splitlines()
    for i, ln in enumerate(lines):
        if '"func.func"' in ln and 'sym_name = "%s"' % name in ln:
            m = re.search(r"function_type = \((.*?)\) -> (.*?), sym_name", ln)
            if not m:
                raise Unsupported("function type of %s" % name)
            args = split_top(m.group(1)) if m.group(1).strip() else []
            res = m.group(2).strip()
            res = split_top(res[1:-1]) if res.startswith("(") else [res]
            body, _ = parse_region(lines, i + 1)
            return args, res, body
    raise Unsupported("no function %s" % name)


# ---- values ------------------------------------------------------------------

class Val:
    """An SSA value of the function: a tensor expression (a Python variable
    holding a torch tensor), a scalar constant, or a tensor known to be a
    splat (fill) of a constant; `empty` for tensor.empty."""

    def __init__(self, kind, shape=None, dtype=None, var=None, fill=None):
        self.kind, self.shape, self.dtype = kind, shape, dtype
        self.var, self.fill = var, fill


class Gen:
    def __init__(self, als):
        self.als = als
        self.lines = []     # (code, target or None, [names it uses])
        self.n = 0
        self.vals = {}

    def tmp(self, hint="t"):
        self.n += 1
        return "%s%d" % (hint, self.n)

    def emit(self, code, target=None):
        used = set(re.findall(r"\b([tv]\d+)\b", code))
        self.lines.append((code if not target else "%s = %s" % (target, code),
                           target, used))

    def materialize(self, v):
        """A Python expression of a tensor for v (a splat becomes
        torch.full)."""
        if v.kind == "tensor":
            return v.var
        if v.kind == "empty":
            t = self.tmp()
            self.emit("torch.zeros(%r, dtype=%s, device=dev)" % (
                tuple(v.shape), TORCH_DT[v.dtype]), t)
            v.kind, v.var = "tensor", t
            return t
        if v.kind == "splat":
            t = self.tmp()
            self.emit("torch.full(%r, %s, dtype=%s, device=dev)" % (
                tuple(v.shape), lit(v.fill), TORCH_DT[v.dtype]), t)
            v.kind, v.var = "tensor", t
            return t
        raise Unsupported("a scalar where a tensor is needed")


# ---- the body of a linalg.generic ---------------------------------------------

CMPF = {1: "==", 2: ">", 3: ">=", 4: "<", 5: "<=", 13: "!="}
CMPF_NEG = {9: "<=", 10: "<", 11: ">=", 12: ">", 8: "one"}  # u<op> = not o<inv>
CMPI = {0: "==", 1: "!=", 2: "<", 3: "<=", 4: ">", 5: ">=", 6: "<", 7: "<=",
        8: ">", 9: ">="}
UNARY = {"math.exp": "torch.exp", "math.exp2": "torch.exp2",
         "math.log": "torch.log", "math.log1p": "torch.log1p",
         "math.log2": "torch.log2", "math.tanh": "torch.tanh",
         "math.rsqrt": "torch.rsqrt", "math.sqrt": "torch.sqrt",
         "math.erf": "torch.erf", "math.absf": "torch.abs",
         "math.expm1": "torch.expm1", "math.sin": "torch.sin",
         "math.cos": "torch.cos", "math.floor": "torch.floor",
         "math.ceil": "torch.ceil", "math.roundeven": "torch.round",
         "math.atan": "torch.atan"}
PYUNARY = {"math.exp": math.exp, "math.exp2": lambda x: 2.0 ** x,
           "math.log": math.log, "math.log1p": math.log1p,
           "math.log2": math.log2, "math.tanh": math.tanh,
           "math.rsqrt": lambda x: 1.0 / math.sqrt(x), "math.sqrt": math.sqrt,
           "math.erf": math.erf, "math.absf": abs, "math.expm1": math.expm1,
           "math.sin": math.sin, "math.cos": math.cos,
           "math.floor": lambda x: float(math.floor(x)),
           "math.ceil": lambda x: float(math.ceil(x)),
           "math.atan": math.atan}
BINARY = {"arith.addf": "+", "arith.subf": "-", "arith.mulf": "*",
          "arith.divf": "/", "arith.addi": "+", "arith.subi": "-",
          "arith.muli": "*"}
COMBINERS = {"arith.addf": "sum", "arith.mulf": "prod",
             "arith.maximumf": "amax", "arith.maxnumf": "amax",
             "arith.minimumf": "amin", "arith.minnumf": "amin",
             "arith.addi": "sum", "arith.maxsi": "amax", "arith.minsi": "amin"}
IDENTITY = {"sum": 0.0, "prod": 1.0, "amax": -math.inf, "amin": math.inf}


def int_attr(props, name):
    m = re.search(r"\b%s = (-?\d+)" % name, props)
    return int(m.group(1)) if m else None


def i64_array(props, name):
    m = re.search(r"\b%s = array<i64(?::\s*([^>]*))?>" % name, props)
    if not m:
        return None
    return [int(x) for x in (m.group(1) or "").split(",") if x.strip()]


class Body:
    """Evaluates one generic body: block values -> ('t', var, dtype) for a
    tensor broadcast to the iteration space, or ('c', value, dtype)."""

    def __init__(self, g, op, iter_shape):
        self.g, self.op, self.S = g, op, iter_shape
        self.env = {}

    def const_fold(self, name, a, ty):
        vals = [x[1] for x in a]
        if name in BINARY:
            x, y = vals
            if name.endswith("f"):
                r = {"+": x + y, "-": x - y, "*": x * y,
                     "/": (x / y if y else math.copysign(math.inf, x) if x
                           else math.nan)}[BINARY[name]]
                return round_to(r, ty)
            return {"+": x + y, "-": x - y, "*": x * y}[BINARY[name]]
        if name == "arith.negf":
            return -vals[0]
        if name in PYUNARY:
            return round_to(PYUNARY[name](vals[0]), ty)
        if name in ("arith.extf", "arith.truncf", "arith.sitofp",
                    "arith.uitofp"):
            return round_to(float(vals[0]), ty)
        if name in ("arith.maximumf", "arith.maxnumf"):
            return max(vals)
        if name in ("arith.minimumf", "arith.minnumf"):
            return min(vals)
        if name == "arith.index_cast":
            return vals[0]
        raise Unsupported("constant folding of %s" % name)

    def get(self, name):
        if name in self.env:
            return self.env[name]
        v = self.g.vals.get(name)  # a value defined above the generic
        if v is not None and v.kind in ("scalar", "splat") and not v.shape:
            return ("c", v.fill, v.dtype, frozenset())
        raise Unsupported("the body uses %s from outside (not a scalar "
                          "constant)" % name)

    def ex(self, x):
        return x[1] if x[0] == "t" else lit(x[1])

    def run_op(self, o):
        g = self.g
        name = o["name"]
        ty = parse_type(o["out_types"][0])[1] if o["out_types"] else None
        if name == "arith.constant":
            m = re.search(r"value = (.*?) : ([a-z]+\d*)\}>", o["props"])
            if not m:
                raise Unsupported("constant %s" % o["props"][:80])
            return ("c", parse_float(m.group(1), m.group(2)), m.group(2),
                    frozenset())
        if name == "linalg.index":
            d = int_attr(o["props"], "dim")
            shape = [1] * len(self.S)
            shape[d] = self.S[d]
            t = g.tmp()
            g.emit("torch.arange(%d, device=dev).reshape(%r)" % (
                self.S[d], tuple(shape)), t)
            return ("t", t, "index", frozenset([d]))
        a = [self.get(x) for x in o["operands"]]
        if all(x[0] == "c" for x in a) and name not in ("arith.select",
                                                        "arith.cmpf",
                                                        "arith.cmpi"):
            return ("c", self.const_fold(name, a, ty), ty, frozenset())
        dims = frozenset().union(*[x[3] for x in a])
        t = g.tmp()
        if name in BINARY:
            g.emit("(%s %s %s)" % (self.ex(a[0]), BINARY[name], self.ex(a[1])), t)
        elif name == "arith.negf":
            g.emit("(-%s)" % self.ex(a[0]), t)
        elif name in UNARY:
            g.emit("%s(%s)" % (UNARY[name], self.ex(a[0])), t)
        elif name in ("arith.remf",):
            g.emit("torch.fmod(%s, %s)" % tuple(self.ex(x) for x in a), t)
        elif name in ("arith.maximumf", "arith.maxnumf", "arith.minimumf",
                      "arith.minnumf", "arith.maxsi", "arith.minsi"):
            mx = "max" in name
            if a[0][0] == "c" or a[1][0] == "c":
                ten, c = (a[1], a[0]) if a[0][0] == "c" else (a[0], a[1])
                g.emit("torch.%s(%s, %s)" % ("clamp_min" if mx else "clamp_max",
                                             ten[1], lit(c[1])), t)
            else:
                fn = {"arith.maximumf": "maximum", "arith.maxsi": "maximum",
                      "arith.maxnumf": "fmax", "arith.minimumf": "minimum",
                      "arith.minsi": "minimum", "arith.minnumf": "fmin"}[name]
                g.emit("torch.%s(%s, %s)" % (fn, a[0][1], a[1][1]), t)
        elif name in ("arith.extf", "arith.truncf", "arith.sitofp",
                      "arith.uitofp", "arith.fptosi", "arith.extsi",
                      "arith.trunci", "arith.index_cast"):
            if name == "arith.index_cast" and ty in ("index", "i64"):
                return a[0][0], a[0][1], ty, a[0][3]
            g.emit("%s.to(%s)" % (a[0][1], TORCH_DT[ty]), t)
        elif name == "math.powf":
            g.emit("torch.pow(%s, %s)" % (self.ex(a[0]), self.ex(a[1])), t)
        elif name == "math.fma":
            g.emit("(%s * %s + %s)" % tuple(self.ex(x) for x in a), t)
        elif name in ("arith.cmpf", "arith.cmpi"):
            p = int_attr(o["props"], "predicate")
            x, y = self.ex(a[0]), self.ex(a[1])
            if a[0][0] == "c" and a[1][0] == "c":
                raise Unsupported("comparison of two constants")
            if a[0][0] == "c":  # keep a tensor on the left
                x, y = y, x
                flip = {"<": ">", "<=": ">=", ">": "<", ">=": "<=",
                        "==": "==", "!=": "!="}
            else:
                flip = None
            if name == "arith.cmpi":
                if p not in CMPI:
                    raise Unsupported("cmpi predicate %d" % p)
                r = CMPI[p]
                g.emit("(%s %s %s)" % (x, flip[r] if flip else r, y), t)
            elif p in CMPF:
                r = CMPF[p]
                g.emit("(%s %s %s)" % (x, flip[r] if flip else r, y), t)
            elif p in CMPF_NEG and p != 8:
                r = CMPF_NEG[p]
                g.emit("(~(%s %s %s))" % (x, flip[r] if flip else r, y), t)
            elif p in (6, 8):  # one, ueq
                e = "((%s < %s) | (%s > %s))" % (x, y, x, y)
                g.emit(e if p == 6 else "(~%s)" % e, t)
            elif p in (7, 14):  # ord, uno
                e = "((%s == %s) & (%s == %s))" % (x, x, y, y)
                g.emit(e if p == 7 else "(~%s)" % e, t)
            else:
                raise Unsupported("cmpf predicate %d" % p)
            return ("t", t, "i1", dims)
        elif name == "arith.select":
            c, x, y = a
            if c[0] == "c":
                return x if c[1] else y
            if x[0] == "c" and y[0] == "c":
                g.emit("torch.where(%s, torch.tensor(%s, dtype=%s, device=dev), "
                       "torch.tensor(%s, dtype=%s, device=dev))" % (
                           c[1], lit(x[1]), TORCH_DT[ty], lit(y[1]),
                           TORCH_DT[ty]), t)
            else:
                g.emit("torch.where(%s, %s, %s)" % (c[1], self.ex(x),
                                                    self.ex(y)), t)
        elif name in ("arith.andi", "arith.ori", "arith.xori") and ty == "i1":
            g.emit("(%s %s %s)" % (self.ex(a[0]), {"arith.andi": "&",
                                                   "arith.ori": "|",
                                                   "arith.xori": "^"}[name],
                                   self.ex(a[1])), t)
        else:
            raise Unsupported(name)
        return ("t", t, ty, dims)


def depends_on(ops_by_res, v, targets, memo=None):
    """Whether the body value v depends on any block argument in targets."""
    if memo is None:
        memo = {}
    if v in targets:
        return True
    if v in memo:
        return memo[v]
    o = ops_by_res.get(v)
    r = False
    if o is not None:
        r = any(depends_on(ops_by_res, x, targets, memo) for x in o["operands"])
    memo[v] = r
    return r


def cast_chain(ops_by_res, v):
    """Follows extf/truncf back from v: (the value it starts from, [types])."""
    chain = []
    while v in ops_by_res and ops_by_res[v]["name"] in ("arith.extf",
                                                        "arith.truncf"):
        o = ops_by_res[v]
        chain.append(parse_type(o["out_types"][0])[1])
        v = o["operands"][0]
    return v, chain


def translate_generic(g, op):
    props = op["props"]
    m = re.search(r"indexing_maps = \[(.*?)\], iterator_types", props)
    if not m:
        raise Unsupported("generic without indexing_maps")
    maps = [parse_map(x, g.als) for x in split_top(m.group(1))]
    its = re.findall(r"iterator_type<(\w+)>", props)
    seg = i64_array(props.replace("array<i32", "array<i64"), "operandSegmentSizes")
    n_in = seg[0] if seg else len(op["operands"]) - len(op["results"])
    n = len(its)
    red = [k for k in range(n) if its[k] == "reduction"]
    operands = [g.vals[x] for x in op["operands"]]
    types = [parse_type(t) for t in op["in_types"]]
    # the iteration space
    S = [None] * n
    for (shape, _), (nd, res) in zip(types, maps):
        if shape is None:
            continue
        for j, (kind, k) in enumerate(res):
            if kind == "d":
                S[k] = shape[j]
    if None in S:
        raise Unsupported("iteration space not given by the operands")
    region = op["regions"][0]
    bargs = [a[0] for a in region["args"]]
    ops = region["ops"]
    yield_op = ops[-1]
    if yield_op["name"] != "linalg.yield":
        raise Unsupported("body without linalg.yield")
    ops_by_res = {}
    for o in ops[:-1]:
        for r in o["results"]:
            ops_by_res[r] = o
    out_args = set(bargs[n_in:])
    body = Body(g, op, S)

    def view(i):
        """Block argument i: a tensor var broadcast to the iteration space, or a
        constant."""
        v = operands[i]
        shape, elt = types[i]
        if v.kind == "scalar" or shape is None:
            return ("c", v.fill, elt, frozenset())
        if v.kind == "splat":
            return ("c", v.fill, elt, frozenset())
        x = g.materialize(v)
        _, res = maps[i]
        expr = x
        # constant results (unit dims, mostly): selected away
        for j in sorted((j for j, (kind, _) in enumerate(res) if kind == "c"),
                        reverse=True):
            expr = "%s.select(%d, %d)" % (expr, j, res[j][1])
        ks = [k for kind, k in res if kind == "d"]
        if len(set(ks)) != len(ks):
            raise Unsupported("an indexing map repeats a dimension")
        order = sorted(range(len(ks)), key=lambda q: ks[q])
        if order != list(range(len(ks))):
            expr = "%s.permute(%r)" % (expr, tuple(order))
        sk = sorted(ks)
        # broadcasting aligns trailing dims: a reshape only where the dims
        # the operand lacks are not all leading ones
        if sk != list(range(n - len(sk), n)):
            target = [S[k] if k in ks else 1 for k in range(n)]
            expr = "%s.reshape(%r)" % (expr, tuple(target))
        if expr == x:
            return ("t", x, elt, frozenset(ks))
        t = g.tmp("v")
        g.emit(expr, t)
        return ("t", t, elt, frozenset(ks))

    def einsum_operand(i):
        """(expression, subscripts) of input i for einsum."""
        v = operands[i]
        shape, _ = types[i]
        x = g.materialize(v)
        _, res = maps[i]
        expr = x
        sel = [(j, c) for j, (kind, c) in enumerate(res) if kind == "c"]
        for j, c in sorted(sel, reverse=True):
            expr = "%s.select(%d, %d)" % (expr, j, c)
        subs = "".join("abcdefghijklmnopqrstuvwxyz"[k] for kind, k in res
                       if kind == "d")
        return expr, subs

    # Which outputs reduce, and how.
    results = []
    for oi, yv in enumerate(yield_op["operands"]):
        out_arg = bargs[n_in + oi]
        shape_o, elt_o = parse_type(op["out_types"][oi])
        _, res_o = maps[n_in + oi]
        info = dict(yv=yv, out_arg=out_arg, shape=shape_o, elt=elt_o,
                    res=res_o, comb=None)
        if red:
            o = ops_by_res.get(yv)
            if o is None or o["name"] not in COMBINERS:
                raise Unsupported("a reduction whose yield is not a known "
                                  "combiner")
            x, y = o["operands"]
            if y == out_arg and not depends_on(ops_by_res, x, out_args):
                val = x
            elif x == out_arg and not depends_on(ops_by_res, y, out_args):
                val = y
            else:
                raise Unsupported("a reduction combiner not of the form "
                                  "f(value, %out)")
            info["comb"] = COMBINERS[o["name"]]
            info["val"] = val
            # a contraction: sum of a product of two different inputs
            if info["comb"] == "sum" and val in ops_by_res and \
                    ops_by_res[val]["name"] in ("arith.mulf", "arith.muli"):
                p, q = ops_by_res[val]["operands"]
                (p0, pc), (q0, qc) = cast_chain(ops_by_res, p), \
                    cast_chain(ops_by_res, q)
                if p0 in bargs[:n_in] and q0 in bargs[:n_in] and p0 != q0:
                    ip, iq = bargs.index(p0), bargs.index(q0)
                    if operands[ip].kind not in ("scalar", "splat") and \
                            operands[iq].kind not in ("scalar", "splat"):
                        info["einsum"] = (ip, iq)
        else:
            if depends_on(ops_by_res, yv, out_args) and yv not in out_args:
                pass  # reads the output's initial value elementwise
        results.append(info)

    # Evaluate the body (lazily: only what the results need).
    needed = set()

    def need(v):
        if v in needed:
            return
        needed.add(v)
        o = ops_by_res.get(v)
        if o is not None:
            for x in o["operands"]:
                need(x)

    for info in results:
        if info.get("einsum"):
            continue
        need(info["val"] if info["comb"] else info["yv"])
    for i, a in enumerate(bargs):
        if a in needed:
            if i >= n_in and red:
                raise Unsupported("a reduction body reads %out beyond its "
                                  "combiner")
            body.env[a] = view(i)
    for o in ops[:-1]:
        if any(r in needed for r in o["results"]):
            r = body.run_op(o)
            for x in o["results"]:
                body.env[x] = r

    outs = []
    red_t = tuple(red)
    for info in results:
        shape_o, elt_o, res_o = info["shape"], info["elt"], info["res"]
        out_dims = [k for kind, k in res_o if kind == "d"]
        if info.get("einsum"):
            ip, iq = info["einsum"]
            ep, sp = einsum_operand(ip)
            eq_, sq = einsum_operand(iq)
            so = "".join("abcdefghijklmnopqrstuvwxyz"[k] for k in out_dims)
            tp, tq = types[ip][1], types[iq][1]
            t = g.tmp()
            if tp == tq:
                g.emit("torch.einsum(%r, %s, %s)" % ("%s,%s->%s" % (sp, sq, so),
                                                     ep, eq_), t)
                if tp != elt_o:
                    g.emit("%s.to(%s)" % (t, TORCH_DT[elt_o]), t)
            else:
                g.emit("torch.einsum(%r, %s.to(%s), %s.to(%s))" % (
                    "%s,%s->%s" % (sp, sq, so), ep, TORCH_DT[elt_o], eq_,
                    TORCH_DT[elt_o]), t)
            r = ("t", t, elt_o, None)
            layout = "out"
        else:
            vkey = info["val"] if info["comb"] else info["yv"]
            r = body.get(vkey)
            layout = "iter"
        if layout == "iter" and r[0] == "c" and not red:
            # a parallel generic yielding a constant: a splat (a fill)
            outs.append(Val("splat", shape_o, elt_o, fill=r[1]))
            continue
        cur = [r[1]]

        def apply(fmt, *more):
            t_new = g.tmp()
            g.emit(fmt % ((cur[0],) + more), t_new)
            cur[0] = t_new

        if layout == "iter":
            if r[0] == "c":
                t = g.tmp()
                g.emit("torch.full(%r, %s, dtype=%s, device=dev)" % (
                    tuple(S), lit(r[1]), TORCH_DT[r[2]]), t)
                r = ("t", t, r[2], frozenset(range(n)))
                cur[0] = t
            if r[3] != frozenset(range(n)):
                apply("%s.expand(%r)", tuple(S))
            par = [k for k in range(n) if k not in red]
            if sorted(out_dims) != par:
                raise Unsupported("an output map that does not cover the "
                                  "parallel dimensions")
            if red:
                if info["comb"] == "prod" and len(red) > 1:
                    raise Unsupported("a product over several dimensions")
                dim = red[0] if len(red) == 1 else red_t
                apply("torch.%s(%s, dim=%r)" % (info["comb"], "%s", dim))
            perm = [par.index(k) for k in out_dims]
            if perm != list(range(len(perm))):
                apply("%s.permute(%r)", tuple(perm))
            if len(res_o) != len(out_dims):
                apply("%s.reshape(%r)", tuple(shape_o))
        else:
            if [S[k] for k in out_dims] != list(shape_o):
                apply("%s.reshape(%r)", tuple(shape_o))
        # the initial value
        if info["comb"]:
            init = operands[n_in + results.index(info)]
            comb = info["comb"]
            if init.kind in ("splat", "scalar"):
                c = init.fill
                if c != IDENTITY[comb]:
                    apply({"sum": "(%s + %s)", "prod": "(%s * %s)",
                           "amax": "torch.clamp_min(%s, %s)",
                           "amin": "torch.clamp_max(%s, %s)"}[comb], lit(c))
            elif init.kind == "empty":
                raise Unsupported("a reduction into tensor.empty")
            else:
                x = g.materialize(init)
                fn = {"sum": "(%s + %s)", "prod": "(%s * %s)",
                      "amax": "torch.maximum(%s, %s)",
                      "amin": "torch.minimum(%s, %s)"}[comb]
                apply(fn, x)
        if r[2] != elt_o and r[2] is not None and not info.get("einsum"):
            apply("%s.to(%s)", TORCH_DT[elt_o])
        t = cur[0]
        outs.append(Val("tensor", shape_o, elt_o, t))
    # a parallel generic that yields one constant: a splat
    return outs


def translate(text, name):
    als = aliases(text)
    args, res, body = find_function(text, name)
    g = Gen(als)
    sig = dict(args=[], results=[])
    params = []
    for i, ((a, ty), t) in enumerate(zip(body["args"], args)):
        shape, elt = parse_type(t)
        if shape is None:
            raise Unsupported("a scalar argument")
        p = "a%d" % i
        params.append(p)
        g.vals[a] = Val("tensor", shape, elt, p)
        sig["args"].append((shape, elt))
    for t in res:
        sig["results"].append(parse_type(t))
    ret = None
    for op in body["ops"]:
        name_ = op["name"]
        if name_ == "arith.constant":
            m = re.search(r"value = (.*) : (\S+?)\}>", op["props"])
            if not m:
                raise Unsupported("constant %s" % op["props"][:80])
            v, ty = m.group(1).strip(), m.group(2)
            shape, elt = parse_type(ty)
            if shape is None:
                g.vals[op["results"][0]] = Val("scalar", None, elt,
                                               fill=parse_float(v, elt))
            else:
                sm = re.fullmatch(r"dense<([^\[\]<>]+)>", v)
                if not sm:
                    raise Unsupported("a non-splat dense constant")
                g.vals[op["results"][0]] = Val("splat", shape, elt,
                                               fill=parse_float(sm.group(1), elt))
        elif name_ == "tensor.empty":
            shape, elt = parse_type(op["out_types"][0])
            g.vals[op["results"][0]] = Val("empty", shape, elt)
        elif name_ == "linalg.generic":
            outs = translate_generic(g, op)
            # a parallel generic copying a splat stays a splat
            for r, v in zip(op["results"], outs):
                g.vals[r] = v
        elif name_ in ("tensor.expand_shape", "tensor.collapse_shape"):
            src = g.vals[op["operands"][0]]
            shape, elt = parse_type(op["out_types"][0])
            if src.kind in ("splat", "empty"):
                g.vals[op["results"][0]] = Val(src.kind, shape, elt, fill=src.fill)
            else:
                t = g.tmp()
                g.emit("%s.reshape(%r)" % (g.materialize(src), tuple(shape)), t)
                g.vals[op["results"][0]] = Val("tensor", shape, elt, t)
        elif name_ == "tensor.extract_slice":
            src = g.vals[op["operands"][0]]
            if len(op["operands"]) != 1:
                raise Unsupported("extract_slice with dynamic operands")
            offs = i64_array(op["props"], "static_offsets")
            sizes = i64_array(op["props"], "static_sizes")
            strides = i64_array(op["props"], "static_strides")
            shape, elt = parse_type(op["out_types"][0])
            if src.kind in ("splat", "empty"):
                g.vals[op["results"][0]] = Val(src.kind, shape, elt, fill=src.fill)
                continue
            idx = ", ".join("%d:%d:%d" % (o, o + (s - 1) * st + 1, st)
                            for o, s, st in zip(offs, sizes, strides))
            t = g.tmp()
            g.emit("%s[%s]" % (g.materialize(src), idx), t)
            if list(sizes) != list(shape):
                g.emit("%s.reshape(%r)" % (t, tuple(shape)), t)
            g.vals[op["results"][0]] = Val("tensor", shape, elt, t)
        elif name_ == "func.return":
            ret = [g.vals[x] for x in op["operands"]]
        else:
            raise Unsupported(name_)
    if ret is None:
        raise Unsupported("no func.return")
    outs = [g.materialize(v) for v in ret]
    g.emit("(%s,)" % ", ".join("%s.contiguous()" % o for o in outs), "out")
    # delete temporaries after their last use
    last = {}
    for i, (_, target, used) in enumerate(g.lines):
        for u in used:
            last[u] = i
    body_lines = []
    for i, (code, target, used) in enumerate(g.lines):
        body_lines.append("    " + code)
        dead = sorted(u for u in used if last.get(u) == i and u != target)
        if dead:
            body_lines.append("    del " + ", ".join(dead))
    src = ["# %s, translated by bench/table/torch_ref.py" % name,
           "_INF = float('inf')",
           "_NAN = float('nan')",
           "",
           "def subgraph(%s):" % ", ".join(params),
           "    dev = %s.device" % params[0]] + body_lines + ["    return out", ""]
    return "\n".join(src), sig


def load(source, torch_module):
    env = {"torch": torch_module, "__name__": "lf_subgraph"}
    exec(compile(source, "<subgraph>", "exec"), env)
    return env["subgraph"]


if __name__ == "__main__":
    import argparse
    import sys
    ap = argparse.ArgumentParser(description="prints the torch function of "
                                 "each outlined subgraph of a model")
    ap.add_argument("model")
    ap.add_argument("--opt", default="build/bin/llm-fuse-opt")
    ap.add_argument("--outlined", action="store_true",
                    help="the model is already outlined")
    a = ap.parse_args()
    text = open(a.model).read()
    if not a.outlined:
        r = subprocess.run([a.opt, "--llm-fuse-outline=remarks=false", a.model],
                           capture_output=True, text=True)
        if r.returncode:
            sys.exit(r.stderr)
        text = r.stdout
    gtext = prepare(a.opt, text)
    for f in functions(gtext):
        try:
            src, sig = translate(gtext, f)
            print(src)
            print("# signature:", sig)
        except Unsupported as e:
            print("# %s: unsupported: %s" % (f, e))
