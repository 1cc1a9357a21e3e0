"""fake_torch.py - a tiny stand-in for the part of torch that the code
bench/table/torch_ref.py generates uses, over flat Python lists, for tests
on small shapes without torch (torch_ref_test.py). Values are Python floats
rounded to the tensor's element type after every operation (f32, bf16
round-to-nearest-even, f16), as torch does for a bf16 tensor op computed in
f32 and rounded; reductions and einsum accumulate in double and round once.

Not a torch: only what the translator emits (see torch_ref.py), and every
"view" is a copy (the generated code never writes in place).
"""
import builtins
import math
import struct

_bsum = builtins.sum
_babs = builtins.abs
_bround = builtins.round


class dtype:
    def __init__(self, name, kind):
        self.name, self.kind = name, kind   # kind: 'f', 'i', 'b'

    def __repr__(self):
        return "torch." + self.name


float32 = dtype("float32", "f")
bfloat16 = dtype("bfloat16", "f")
float16 = dtype("float16", "f")
float64 = dtype("float64", "f")
int64 = dtype("int64", "i")
int32 = dtype("int32", "i")
bool = dtype("bool", "b")  # noqa: A001 (torch.bool)
_pybool = type(True)


def _f32(v):
    try:
        return struct.unpack("<f", struct.pack("<f", v))[0]
    except OverflowError:
        return math.copysign(math.inf, v)


def _round(v, dt):
    k = dt.kind
    if k == "b":
        return _pybool(v)
    if k == "i":
        return int(v)
    v = float(v)
    if dt is float64 or math.isnan(v) or math.isinf(v):
        return v
    f = _f32(v)
    if dt is float32 or math.isinf(f):
        return f
    if dt is float16:
        try:
            return struct.unpack("<e", struct.pack("<e", f))[0]
        except OverflowError:
            return math.copysign(math.inf, f)
    # bfloat16: round to nearest even on the f32 bits
    b = struct.unpack("<I", struct.pack("<f", f))[0]
    b = (b + 0x7FFF + ((b >> 16) & 1)) & 0xFFFF0000
    return struct.unpack("<f", struct.pack("<I", b))[0]


def _prod(xs):
    n = 1
    for x in xs:
        n *= x
    return n


def _strides(shape):
    s, acc = [], 1
    for d in reversed(shape):
        s.append(acc)
        acc *= d
    return list(reversed(s))


def _indices(shape):
    """All multi-indices of shape in row-major order."""
    if not shape:
        yield ()
        return
    idx = [0] * len(shape)
    total = _prod(shape)
    for _ in range(total):
        yield tuple(idx)
        for d in range(len(shape) - 1, -1, -1):
            idx[d] += 1
            if idx[d] < shape[d]:
                break
            idx[d] = 0


class Tensor:
    def __init__(self, data, shape, dt):
        self.data = list(data)
        self.shape = tuple(shape)
        self.dtype = dt
        assert len(self.data) == _prod(self.shape), (len(self.data), shape)

    device = "cpu"

    def dim(self):
        return len(self.shape)

    def numel(self):
        return len(self.data)

    def tolist_flat(self):
        return list(self.data)

    def __repr__(self):
        return "FakeTensor(%s, %r)" % (self.dtype, self.shape)

    # ---- conversions and views (copies)
    def to(self, dt):
        return Tensor([_round(v, dt) for v in self.data], self.shape, dt)

    def float(self):
        return self.to(float32)

    def contiguous(self):
        return self

    def clone(self):
        return Tensor(self.data, self.shape, self.dtype)

    def reshape(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        shape = list(shape)
        if -1 in shape:
            k = shape.index(-1)
            shape[k] = len(self.data) // _prod([d for d in shape if d != -1])
        if _prod(shape) != len(self.data):
            raise RuntimeError("reshape %r -> %r" % (self.shape, shape))
        return Tensor(self.data, shape, self.dtype)

    view = reshape

    def permute(self, *dims):
        if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
            dims = tuple(dims[0])
        if sorted(dims) != list(range(len(self.shape))):
            raise RuntimeError("permute %r of rank %d" % (dims, len(self.shape)))
        st = _strides(self.shape)
        nshape = [self.shape[d] for d in dims]
        nst = [st[d] for d in dims]
        data = [self.data[_bsum(i * s for i, s in zip(idx, nst))]
                for idx in _indices(nshape)]
        return Tensor(data, nshape, self.dtype)

    def expand(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        shape = list(shape)
        lead = len(shape) - len(self.shape)
        if lead < 0:
            raise RuntimeError("expand %r to %r" % (self.shape, shape))
        own = [1] * lead + list(self.shape)
        for k, (a, b) in enumerate(zip(own, shape)):
            if b == -1:
                shape[k] = a
            elif a != b and a != 1:
                raise RuntimeError("expand %r to %r" % (self.shape, shape))
        return _broadcast_to(self, shape)

    def select(self, dim, index):
        if dim < 0:
            dim += len(self.shape)
        idx = [slice(None)] * len(self.shape)
        idx[dim] = index
        return self[tuple(idx)]

    def __getitem__(self, key):
        if not isinstance(key, tuple):
            key = (key,)
        key = list(key) + [slice(None)] * (len(self.shape) - len(key))
        ranges, keep = [], []
        for d, k in enumerate(key):
            if isinstance(k, slice):
                r = range(*k.indices(self.shape[d]))
                ranges.append(list(r))
                keep.append(True)
            else:
                k = k + self.shape[d] if k < 0 else k
                if not 0 <= k < self.shape[d]:
                    raise IndexError("index %d of size %d" % (k, self.shape[d]))
                ranges.append([k])
                keep.append(False)
        st = _strides(self.shape)
        shape = [len(r) for r in ranges]
        data = []
        for idx in _indices(shape):
            data.append(self.data[_bsum(ranges[d][i] * st[d]
                                      for d, i in enumerate(idx))])
        return Tensor(data, [s for s, kp in zip(shape, keep) if kp], self.dtype)

    # ---- arithmetic
    def __add__(self, o):
        return _binary(self, o, lambda a, b: a + b)

    def __radd__(self, o):
        return _binary(o, self, lambda a, b: a + b)

    def __sub__(self, o):
        return _binary(self, o, lambda a, b: a - b)

    def __rsub__(self, o):
        return _binary(o, self, lambda a, b: a - b)

    def __mul__(self, o):
        return _binary(self, o, lambda a, b: a * b)

    def __rmul__(self, o):
        return _binary(o, self, lambda a, b: a * b)

    def __truediv__(self, o):
        return _binary(self, o, _div)

    def __rtruediv__(self, o):
        return _binary(o, self, _div)

    def __neg__(self):
        return Tensor([-v for v in self.data], self.shape, self.dtype)

    def __lt__(self, o):
        return _binary(self, o, lambda a, b: a < b, bool)

    def __le__(self, o):
        return _binary(self, o, lambda a, b: a <= b, bool)

    def __gt__(self, o):
        return _binary(self, o, lambda a, b: a > b, bool)

    def __ge__(self, o):
        return _binary(self, o, lambda a, b: a >= b, bool)

    def __eq__(self, o):
        return _binary(self, o, lambda a, b: a == b, bool)

    def __ne__(self, o):
        return _binary(self, o, lambda a, b: a != b, bool)

    def __and__(self, o):
        return _binary(self, o, lambda a, b: a and b, bool)

    def __or__(self, o):
        return _binary(self, o, lambda a, b: a or b, bool)

    def __xor__(self, o):
        return _binary(self, o, lambda a, b: a != b, bool)

    def __invert__(self):
        return Tensor([not v for v in self.data], self.shape, bool)

    __hash__ = object.__hash__


def _div(a, b):
    if isinstance(a, int) and isinstance(b, int):
        return a / b
    try:
        return a / b
    except ZeroDivisionError:
        if a == 0 or math.isnan(a):
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)


def _bshape(a, b):
    n = max(len(a), len(b))
    a = (1,) * (n - len(a)) + tuple(a)
    b = (1,) * (n - len(b)) + tuple(b)
    out = []
    for x, y in zip(a, b):
        if x != y and x != 1 and y != 1:
            raise RuntimeError("shapes %r and %r do not broadcast" % (a, b))
        out.append(max(x, y))
    return out


def _broadcast_to(t, shape):
    shape = list(shape)
    own = (1,) * (len(shape) - len(t.shape)) + tuple(t.shape)
    if list(own) == shape:
        return Tensor(t.data, shape, t.dtype)
    st = _strides(own)
    bst = [0 if o == 1 and s != 1 else st_ for o, s, st_ in zip(own, shape, st)]
    data = [t.data[_bsum(i * s for i, s in zip(idx, bst))] for idx in _indices(shape)]
    return Tensor(data, shape, t.dtype)


def _result_dtype(a, b):
    ta, tb = isinstance(a, Tensor), isinstance(b, Tensor)
    if ta and tb:
        if a.dtype is b.dtype:
            return a.dtype
        order = [bool, int32, int64, bfloat16, float16, float32, float64]
        if {a.dtype, b.dtype} == {bfloat16, float16}:
            return float32
        return max(a.dtype, b.dtype, key=order.index)
    t, s = (a, b) if ta else (b, a)
    if t.dtype.kind != "f" and isinstance(s, float):
        return float32
    return t.dtype


def _binary(a, b, fn, out_dt=None):
    dt = _result_dtype(a, b)
    if dt.kind == "f":
        if isinstance(a, Tensor):
            a = a if a.dtype.kind == "f" else a.to(dt)
        if isinstance(b, Tensor):
            b = b if b.dtype.kind == "f" else b.to(dt)
    sa = a.shape if isinstance(a, Tensor) else ()
    sb = b.shape if isinstance(b, Tensor) else ()
    shape = _bshape(sa, sb)
    da = _broadcast_to(a, shape).data if isinstance(a, Tensor) else None
    db = _broadcast_to(b, shape).data if isinstance(b, Tensor) else None
    n = _prod(shape)
    xs = da if da is not None else [a] * n
    ys = db if db is not None else [b] * n
    rdt = out_dt or dt
    return Tensor([_round(fn(x, y), rdt) for x, y in zip(xs, ys)], shape, rdt)


def _unary(fn):
    def f(x, *rest):
        if not isinstance(x, Tensor):
            return fn(x)
        return Tensor([_round(_safe(fn, v), x.dtype) for v in x.data], x.shape,
                      x.dtype if x.dtype.kind == "f" else float32)
    return f


def _safe(fn, v):
    try:
        return fn(v)
    except OverflowError:
        return math.inf
    except ValueError:
        return math.nan


def _log(v):
    if v == 0:
        return -math.inf
    if v < 0 or math.isnan(v):
        return math.nan
    return math.inf if math.isinf(v) else math.log(v)


def _rsqrt(v):
    if v == 0:
        return math.copysign(math.inf, v)
    if v < 0 or math.isnan(v):
        return math.nan
    return 0.0 if math.isinf(v) else 1.0 / math.sqrt(v)


def _exp(v):
    if math.isinf(v):
        return 0.0 if v < 0 else math.inf
    return math.exp(v)


exp = _unary(_exp)
exp2 = _unary(lambda v: 2.0 ** v)
log = _unary(_log)
log1p = _unary(lambda v: _log(1.0 + v) if v > -1 else (-math.inf if v == -1
                                                       else math.nan))
log2 = _unary(lambda v: _log(v) / math.log(2.0))
tanh = _unary(math.tanh)
rsqrt = _unary(_rsqrt)
sqrt = _unary(lambda v: math.sqrt(v) if v >= 0 else math.nan)
erf = _unary(math.erf)
abs = _unary(lambda v: -v if v < 0 else v)  # noqa: A001
expm1 = _unary(math.expm1)
sin = _unary(math.sin)
cos = _unary(math.cos)
floor = _unary(lambda v: float(math.floor(v)) if math.isfinite(v) else v)
ceil = _unary(lambda v: float(math.ceil(v)) if math.isfinite(v) else v)
round = _unary(lambda v: float(_bround(v)) if math.isfinite(v) else v)  # noqa: A001
atan = _unary(math.atan)
sigmoid = _unary(lambda v: 1.0 / (1.0 + _exp(-v)))


def fmod(a, b):
    return _binary(a, b, lambda x, y: math.fmod(x, y) if y else math.nan)


def pow(a, b):  # noqa: A001
    return _binary(a, b, lambda x, y: _safe(lambda z: math.pow(z, y), x))


def _max(x, y):
    if isinstance(x, float) and math.isnan(x) or isinstance(y, float) and math.isnan(y):
        return math.nan
    return x if x >= y else y


def _min(x, y):
    if isinstance(x, float) and math.isnan(x) or isinstance(y, float) and math.isnan(y):
        return math.nan
    return x if x <= y else y


def maximum(a, b):
    return _binary(a, b, _max)


def minimum(a, b):
    return _binary(a, b, _min)


def fmax(a, b):
    return _binary(a, b, lambda x, y: y if x != x else x if y != y else max(x, y))


def fmin(a, b):
    return _binary(a, b, lambda x, y: y if x != x else x if y != y else min(x, y))


def clamp_min(a, c):
    return _binary(a, c, lambda x, y: x if x != x else max(x, y))


def clamp_max(a, c):
    return _binary(a, c, lambda x, y: x if x != x else min(x, y))


def relu(a):
    return clamp_min(a, 0.0)


def where(c, a, b):
    sa = a.shape if isinstance(a, Tensor) else ()
    sb = b.shape if isinstance(b, Tensor) else ()
    shape = _bshape(_bshape(c.shape, sa), sb)
    dt = _result_dtype(a, b) if (isinstance(a, Tensor) or isinstance(b, Tensor)) \
        else float32
    cs = _broadcast_to(c, shape).data
    n = _prod(shape)
    xs = _broadcast_to(a, shape).data if isinstance(a, Tensor) else [a] * n
    ys = _broadcast_to(b, shape).data if isinstance(b, Tensor) else [b] * n
    return Tensor([_round(x if k else y, dt) for k, x, y in zip(cs, xs, ys)],
                  shape, dt)


# ---- construction

def _shape_arg(shape):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        return tuple(shape[0])
    return tuple(shape)


def full(shape, value, dtype=float32, device=None):
    shape = tuple(shape)
    return Tensor([_round(value, dtype)] * _prod(shape), shape, dtype)


def zeros(*shape, dtype=float32, device=None):
    return full(_shape_arg(shape), 0.0, dtype)


def empty(*shape, dtype=float32, device=None):
    return full(_shape_arg(shape), math.nan if dtype.kind == "f" else 0, dtype)


def arange(n, dtype=int64, device=None):
    return Tensor(list(range(n)), (n,), dtype)


def tensor(v, dtype=float32, device=None):
    return Tensor([_round(v, dtype)], (), dtype)


def from_list(values, shape, dtype):
    """A test helper (not torch): a tensor of the given flat values."""
    return Tensor([_round(v, dtype) for v in values], shape, dtype)


# ---- reductions

def _reduce(x, dim, keepdim, fn, init):
    if dim is None:
        dim = list(range(len(x.shape)))
    if isinstance(dim, int):
        dim = [dim]
    dim = sorted(d + len(x.shape) if d < 0 else d for d in dim)
    outer = [s if d not in dim else 1 for d, s in enumerate(x.shape)]
    st = _strides(x.shape)
    inner = [x.shape[d] for d in dim]
    data = []
    for idx in _indices(outer):
        base = _bsum(i * s for i, s in zip(idx, st))
        acc = init
        for j in _indices(inner):
            acc = fn(acc, x.data[base + _bsum(i * st[d] for i, d in zip(j, dim))])
        data.append(_round(acc, x.dtype))
    shape = outer if keepdim else [s for d, s in enumerate(x.shape) if d not in dim]
    return Tensor(data, shape, x.dtype)


def sum(x, dim=None, keepdim=False):  # noqa: A001
    return _reduce(x, dim, keepdim, lambda a, b: a + b, 0.0)


def prod(x, dim=None, keepdim=False):
    return _reduce(x, dim, keepdim, lambda a, b: a * b, 1.0)


def amax(x, dim=None, keepdim=False):
    return _reduce(x, dim, keepdim, _max, -math.inf)


def amin(x, dim=None, keepdim=False):
    return _reduce(x, dim, keepdim, _min, math.inf)


def einsum(eq, *ops):
    ins, out = eq.replace(" ", "").split("->")
    ins = ins.split(",")
    if len(ins) != len(ops):
        raise RuntimeError("einsum %s with %d operands" % (eq, len(ops)))
    size = {}
    for subs, t in zip(ins, ops):
        if len(subs) != len(t.shape):
            raise RuntimeError("einsum %s: operand of shape %r" % (eq, t.shape))
        for ch, n in zip(subs, t.shape):
            if size.setdefault(ch, n) != n:
                raise RuntimeError("einsum %s: size of %s" % (eq, ch))
    dt = ops[0].dtype
    for t in ops[1:]:
        if t.dtype is not dt:
            raise RuntimeError("einsum: expected the same dtype, got %s and %s"
                               % (dt, t.dtype))
    summed = [ch for ch in size if ch not in out]
    letters = list(out) + summed
    pos = {ch: i for i, ch in enumerate(letters)}
    sts = []
    for subs, t in zip(ins, ops):
        st = _strides(t.shape)
        sts.append([(pos[ch], s) for ch, s in zip(subs, st)])
    oshape = [size[ch] for ch in out]
    sshape = [size[ch] for ch in summed]
    data = []
    for oi in _indices(oshape):
        acc = 0.0
        for si in _indices(sshape):
            idx = oi + si
            p = 1.0
            for t, st in zip(ops, sts):
                p *= t.data[_bsum(idx[k] * s for k, s in st)]
            acc += p
        data.append(_round(acc, dt))
    return Tensor(data, oshape, dt)


class _Cuda:
    @staticmethod
    def is_available():
        return False


cuda = _Cuda()
