/* verify_kernels.c - the verification worker's own GPU kernels.
 *
 * Device code, not host code: compiled by clang for nvptx64 (see
 * runtime/CMakeLists.txt) to PTX that is embedded in the worker and loaded
 * with cuModuleLoadData. They draw inputs, checksum buffers, compare
 * outputs with the reference and summarize the reference's outputs on the
 * GPU, so that only a few bytes per buffer cross PCIe: verifying a
 * 16384x4096 subgraph stays well under a second.
 *
 * Every kernel takes the element type as a code (LF_VDT_* below, the same
 * numbers as lf_vdtype_t in verify_protocol.h) and uses grid-stride loops
 * with 256-thread blocks. Random values are counter based (splitmix64 of
 * seed, buffer salt and element index), so a trial is reproduced from its
 * seed alone, whatever the grid.
 */
typedef unsigned long long u64;
typedef unsigned int u32;
typedef unsigned short u16;
typedef unsigned char u8;

#define KERNEL __attribute__((nvptx_kernel))
#define SHARED __attribute__((address_space(3)))
#define BLOCK 256

enum { F32, F16, BF16, F64, I8, I16, I32, I64, I1 };
enum { DIST_NORMAL, DIST_HEAVY };
enum { SPECIAL_SPIKE, SPECIAL_FINITE, SPECIAL_NONFINITE };

static inline u64 gtid(void) {
  return (u64)__nvvm_read_ptx_sreg_ctaid_x() * __nvvm_read_ptx_sreg_ntid_x() +
         __nvvm_read_ptx_sreg_tid_x();
}
static inline u64 gstride(void) {
  return (u64)__nvvm_read_ptx_sreg_nctaid_x() * __nvvm_read_ptx_sreg_ntid_x();
}
static inline u32 tid(void) { return __nvvm_read_ptx_sreg_tid_x(); }

static inline u64 mix(u64 z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
/* uniform in (0, 1) */
static inline float unit(u64 h) {
  return ((float)(u32)(h >> 40) + 0.5f) * (1.0f / 16777216.0f);
}
static inline float normal(u64 h) {
  float u1 = unit(h), u2 = unit(mix(h));
  float r = __nvvm_sqrt_rn_f(-2.0f * 0.69314718f * __nvvm_lg2_approx_f(u1));
  return r * __nvvm_cos_approx_f(6.28318531f * u2);
}

static inline u16 f32_to_bf16(float f) {
  u32 u = __builtin_bit_cast(u32, f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u)
    return 0x7FC0;
  return (u16)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}
static inline float bf16_to_f32(u16 b) {
  return __builtin_bit_cast(float, (u32)b << 16);
}

static inline unsigned size_of(int dt) {
  switch (dt) {
  case F64:
  case I64:
    return 8;
  case F32:
  case I32:
    return 4;
  case F16:
  case BF16:
  case I16:
    return 2;
  default:
    return 1;
  }
}

/* Stores `v` as element i; integers round to nearest and saturate. */
static void store(void *p, u64 i, int dt, double v) {
  switch (dt) {
  case F32:
    ((float *)p)[i] = (float)v;
    return;
  case F64:
    ((double *)p)[i] = v;
    return;
  case F16: {
    double c = v > 65504.0 ? 65504.0 : v < -65504.0 ? -65504.0 : v;
    ((_Float16 *)p)[i] = (_Float16)(float)c;
    return;
  }
  case BF16:
    ((u16 *)p)[i] = f32_to_bf16((float)v);
    return;
  default:
    break;
  }
  double r = __builtin_rint(v);
  double lo = dt == I8 ? -128.0 : dt == I16 ? -32768.0 : -2147483648.0;
  double hi = dt == I8 ? 127.0 : dt == I16 ? 32767.0 : 2147483647.0;
  r = r < lo ? lo : r > hi ? hi : r;
  switch (dt) {
  case I8:
    ((signed char *)p)[i] = (signed char)r;
    return;
  case I16:
    ((short *)p)[i] = (short)r;
    return;
  case I32:
    ((int *)p)[i] = (int)r;
    return;
  case I64:
    ((long long *)p)[i] = (long long)r;
    return;
  case I1:
    ((u8 *)p)[i] = r > 0.0;
    return;
  }
}

static double load(const void *p, u64 i, int dt) {
  switch (dt) {
  case F32:
    return ((const float *)p)[i];
  case F64:
    return ((const double *)p)[i];
  case F16:
    return (float)((const _Float16 *)p)[i];
  case BF16:
    return bf16_to_f32(((const u16 *)p)[i]);
  case I8:
    return ((const signed char *)p)[i];
  case I16:
    return ((const short *)p)[i];
  case I32:
    return ((const int *)p)[i];
  case I64:
    return (double)((const long long *)p)[i];
  default:
    return ((const u8 *)p)[i];
  }
}

static u64 bits(const void *p, u64 i, int dt) {
  switch (size_of(dt)) {
  case 8:
    return ((const u64 *)p)[i];
  case 4:
    return ((const u32 *)p)[i];
  case 2:
    return ((const u16 *)p)[i];
  default:
    return ((const u8 *)p)[i];
  }
}

/* Draws n elements. Normal: N(0, 1). Heavy: N(0, 1) times u^-0.4, a
 * power-law tail of index 2.5 (finite variance, values in the thousands).
 * Integers: 4x the draw, rounded (so mostly within [-8, 8]); i1: a fair
 * coin. `scale` multiplies the float draw. */
KERNEL void lf_fill(void *p, u64 n, int dt, int dist, u64 seed, u64 salt,
                    float scale) {
  u64 base = mix(seed ^ mix(salt));
  for (u64 i = gtid(); i < n; i += gstride()) {
    u64 h = mix(base + i);
    float x = normal(h);
    if (dist == DIST_HEAVY)
      x *= __nvvm_ex2_approx_f(-0.4f * __nvvm_lg2_approx_f(unit(mix(h ^ 7))));
    if (dt == I1)
      ((u8 *)p)[i] = (u8)(h >> 63);
    else if (dt >= I8)
      store(p, i, dt, 4.0 * x);
    else
      store(p, i, dt, (double)(x * scale));
  }
}

/* Overwrites `count` pseudo-random elements (thread k picks one) of a
 * float buffer: SPIKE puts +-`magnitude` (the spike trial); FINITE puts
 * -0.0 and denormals (the smallest subnormal times 1..7); NONFINITE puts
 * NaN, +Inf and -Inf in turn. Integer buffers get +-`magnitude` saturated
 * for SPIKE and are left alone otherwise. */
KERNEL void lf_special(void *p, u64 n, int dt, int mode, u64 seed, u64 salt,
                       u64 count, double magnitude) {
  u64 k = gtid();
  if (k >= count || n == 0)
    return;
  u64 h =
      mix(mix(seed ^ 0x5EC1A1ull) ^ mix(salt) ^ (k * 0x2545F4914F6CDD1Dull));
  u64 i = h % n;
  double sign = (h >> 62) & 1 ? -1.0 : 1.0;
  if (mode == SPECIAL_SPIKE) {
    if (dt != I1)
      store(p, i, dt, sign * magnitude);
    return;
  }
  if (dt >= I8)
    return;
  if (mode == SPECIAL_FINITE) {
    u64 m = 1 + (h >> 32) % 7;
    if (k % 2 == 0) {
      store(p, i, dt, -0.0);
      return;
    }
    switch (dt) {
    case F32:
      ((u32 *)p)[i] = (u32)m | (sign < 0 ? 0x80000000u : 0);
      return;
    case F64:
      ((u64 *)p)[i] = m | (sign < 0 ? 1ull << 63 : 0);
      return;
    default:
      ((u16 *)p)[i] = (u16)(m | (sign < 0 ? 0x8000u : 0));
      return;
    }
  }
  double v = k % 3 == 0 ? __builtin_nan("") : sign * __builtin_inf();
  if (dt == BF16)
    ((u16 *)p)[i] = k % 3 == 0 ? 0x7FC0 : sign < 0 ? 0xFF80 : 0x7F80;
  else if (dt == F16)
    ((u16 *)p)[i] = k % 3 == 0 ? 0x7E00 : sign < 0 ? 0xFC00 : 0x7C00;
  else
    store(p, i, dt, v);
}

/* dst[i] = src[i]^2 in the element type of both (floats only): the inputs
 * of the TF32 mode's scale run (lf_compare's `scale`). An f32 element whose
 * square overflows becomes +Inf, which makes the scale of the outputs it
 * reaches non-finite: those are judged by the ordinary bound alone. */
KERNEL void lf_square(const void *src, void *dst, u64 n, int dt) {
  for (u64 i = gtid(); i < n; i += gstride()) {
    double v = load(src, i, dt);
    store(dst, i, dt, v * v);
  }
}

/* Order-independent 64-bit checksum of `bytes` bytes: the sum over 8-byte
 * words of mix(word + index), the tail zero-padded. Added to out[0]. */
KERNEL void lf_checksum(const u8 *p, u64 bytes, u64 *out) {
  SHARED static u64 part[BLOCK];
  u64 words = bytes / 8, acc = 0;
  for (u64 i = gtid(); i < words; i += gstride())
    acc += mix(((const u64 *)p)[i] + i * 0x9E3779B97F4A7C15ull);
  if (gtid() == 0 && bytes % 8) {
    u64 w = 0;
    for (u64 b = words * 8; b < bytes; ++b)
      w |= (u64)p[b] << (8 * (b - words * 8));
    acc += mix(w + words * 0x9E3779B97F4A7C15ull);
  }
  part[tid()] = acc;
  __syncthreads();
  for (u32 s = BLOCK / 2; s; s >>= 1) {
    if (tid() < s)
      part[tid()] += part[tid() + s];
    __syncthreads();
  }
  if (tid() == 0)
    __atomic_fetch_add(out, part[0], __ATOMIC_RELAXED);
}

/* Counts bytes that differ from `pattern` (the red zones around outputs). */
KERNEL void lf_count_not(const u8 *p, u64 bytes, u32 pattern, u64 *out) {
  u64 c = 0;
  for (u64 i = gtid(); i < bytes; i += gstride())
    c += p[i] != (u8)pattern;
  if (c)
    __atomic_fetch_add(out, c, __ATOMIC_RELAXED);
}

/* Orders doubles as unsigned integers (for atomic min/max). */
static inline u64 ordered(double d) {
  u64 u = __builtin_bit_cast(u64, d);
  return u >> 63 ? ~u : u | (1ull << 63);
}

/* Summary of a reference output (lf_vstats_t in verify_protocol.h). */
typedef struct {
  u64 finite, nan, inf;
  double sum_abs;
  u64 min_ord, max_ord; /* ordered() of the finite min and max */
} stats_t;

KERNEL void lf_stats(const void *p, u64 n, int dt, stats_t *out) {
  SHARED static double part[BLOCK];
  u64 finite = 0, nan = 0, inf = 0, lo = ~0ull, hi = 0;
  double sum = 0;
  for (u64 i = gtid(); i < n; i += gstride()) {
    double v = load(p, i, dt);
    if (__builtin_isnan(v)) {
      ++nan;
    } else if (__builtin_isinf(v)) {
      ++inf;
    } else {
      ++finite;
      sum += __builtin_fabs(v);
      u64 o = ordered(v);
      lo = o < lo ? o : lo;
      hi = o > hi ? o : hi;
    }
  }
  part[tid()] = sum;
  __syncthreads();
  for (u32 s = BLOCK / 2; s; s >>= 1) {
    if (tid() < s)
      part[tid()] += part[tid() + s];
    __syncthreads();
  }
  if (tid() == 0)
    __atomic_fetch_add(&out->sum_abs, part[0], __ATOMIC_RELAXED);
  if (finite)
    __atomic_fetch_add(&out->finite, finite, __ATOMIC_RELAXED);
  if (nan)
    __atomic_fetch_add(&out->nan, nan, __ATOMIC_RELAXED);
  if (inf)
    __atomic_fetch_add(&out->inf, inf, __ATOMIC_RELAXED);
  if (finite) {
    __atomic_fetch_min(&out->min_ord, lo, __ATOMIC_RELAXED);
    __atomic_fetch_max(&out->max_ord, hi, __ATOMIC_RELAXED);
  }
}

/* Result of one comparison (lf_vcompare_t in verify_protocol.h). */
typedef struct {
  u64 bad;       /* elements out of tolerance (NaN-aware) */
  u64 unwritten; /* bad elements still holding the poison's bits */
  u64 first_bad; /* lowest bad index, ~0 if none */
  u64 worst_ord; /* ordered() of the largest |c-r| / tol */
  u64 differ;    /* elements whose bits differ from `other` */
  u64 relaxed;   /* non-finite reference, finite candidate, let pass */
  u64 by_scale;  /* passed only by the bound stol * sqrt(scale) */
  u64 boundary;  /* passed by the overflow-boundary rule (`wide`) */
} compare_t;

/* Compares candidate `c` with reference `r`: an element is good when
 *   integers: the bits are equal;
 *   floats:   both NaN, or equal (infinities of one sign), or
 *             |c - r| <= max(rtol*|r| + atol, stol*sqrt(scale[i])),
 *             written so that NaN fails.
 * `scale` (may be NULL; element type `scale_dt`, the last parameter: the
 * output's, or f32 where the scale run widened it) is the per-element error
 * scale of TF32 mode and of 16-bit contractions summed in f32: a reference
 * plan run on the squared inputs, sum (a_k b_k)^2 for a contraction
 * (docs/verification.md, "TF32 mode", "16-bit contractions accumulated in
 * f32"); where it is not finite only the first bound applies. Elements that
 * pass by the second bound alone are counted in `by_scale`.
 * `other` (may be NULL) is the candidate's second run: elements whose bits
 * differ from `c` are counted (the determinism check). With `lenient`, an
 * element whose reference is NaN or infinite passes whatever the candidate
 * holds there, provided it is finite (counted in `relaxed`).
 * `wide` (may be NULL; f32) is the wide reference's unrounded value of a
 * 16-bit float output: an element where exactly one of reference and
 * candidate is an infinity, the other finite, passes when the unrounded
 * value w has the infinity's sign and |w| >= thr - tol (thr: the smallest
 * magnitude that rounds to an infinity, tol = rtol*|w| + atol) and, when the
 * infinity is the reference's, w is finite and |c - w| <= tol (counted in
 * `boundary`; lf_vboundary_close in verify_protocol.c, the same rule).
 * Every other element is judged as without it. */
KERNEL void lf_compare(const void *r, const void *c, const void *other, u64 n,
                       int dt, double rtol, double atol, u64 poison,
                       int lenient, const void *scale, double stol,
                       const void *wide, double thr, compare_t *out,
                       int scale_dt) {
  u64 bad = 0, unwritten = 0, first = ~0ull, worst = ordered(0.0), differ = 0;
  u64 relaxed = 0, by_scale = 0, boundary = 0;
  int is_float = dt <= F64;
  for (u64 i = gtid(); i < n; i += gstride()) {
    u64 cb = bits(c, i, dt);
    if (other && bits(other, i, dt) != cb)
      ++differ;
    int ok;
    double ratio = 0.0;
    if (!is_float) {
      ok = bits(r, i, dt) == cb;
      ratio = ok ? 0.0 : __builtin_inf();
    } else {
      double a = load(r, i, dt), b = load(c, i, dt);
      if (lenient && !__builtin_isfinite(a) && __builtin_isfinite(b)) {
        ok = 1;
        ++relaxed;
      } else if (__builtin_isnan(a) || __builtin_isnan(b)) {
        ok = __builtin_isnan(a) && __builtin_isnan(b);
        ratio = ok ? 0.0 : __builtin_inf();
      } else if (a == b) {
        ok = 1;
      } else if (__builtin_isinf(a) || __builtin_isinf(b)) {
        ok = 0; /* an infinity matches only itself */
        ratio = __builtin_inf();
        if (wide && __builtin_isinf(a) != __builtin_isinf(b)) {
          /* exactly one infinity: a rounding at the overflow threshold? */
          double wv = load(wide, i, F32);
          double tol = rtol * __builtin_fabs(wv) + atol;
          double inf_side = __builtin_isinf(a) ? a : b;
          if (!__builtin_isnan(wv) &&
              __builtin_signbit(wv) == __builtin_signbit(inf_side) &&
              __builtin_fabs(wv) >= thr - tol) {
            if (__builtin_isinf(a)) { /* the candidate against w */
              double d = __builtin_fabs(b - wv);
              if (__builtin_isfinite(wv) && d <= tol) {
                ok = 1;
                ratio = tol > 0 ? d / tol : 0.0;
              }
            } else {
              ok = 1;
              ratio = __builtin_fabs(wv) < thr && tol > 0
                          ? (thr - __builtin_fabs(wv)) / tol
                          : 0.0;
            }
            boundary += ok;
          }
        }
      } else {
        double d = __builtin_fabs(a - b);
        double tol = rtol * __builtin_fabs(a) + atol;
        if (scale) {
          double sq = load(scale, i, scale_dt);
          double st = __builtin_isfinite(sq) && sq > 0.0
                          ? stol * __nvvm_sqrt_rn_d(sq)
                          : 0.0;
          if (st > tol) {
            by_scale += d > tol && d <= st;
            tol = st;
          }
        }
        ok = d <= tol; /* false for NaN and for infinities that differ */
        ratio = tol > 0 ? d / tol : __builtin_inf();
        if (__builtin_isnan(ratio))
          ratio = __builtin_inf();
      }
    }
    if (!ok) {
      ++bad;
      first = i < first ? i : first;
      unwritten += cb == poison;
    }
    u64 o = ordered(ratio);
    worst = o > worst ? o : worst;
  }
  if (bad) {
    __atomic_fetch_add(&out->bad, bad, __ATOMIC_RELAXED);
    __atomic_fetch_min(&out->first_bad, first, __ATOMIC_RELAXED);
  }
  if (unwritten)
    __atomic_fetch_add(&out->unwritten, unwritten, __ATOMIC_RELAXED);
  if (differ)
    __atomic_fetch_add(&out->differ, differ, __ATOMIC_RELAXED);
  if (relaxed)
    __atomic_fetch_add(&out->relaxed, relaxed, __ATOMIC_RELAXED);
  if (by_scale)
    __atomic_fetch_add(&out->by_scale, by_scale, __ATOMIC_RELAXED);
  if (boundary)
    __atomic_fetch_add(&out->boundary, boundary, __ATOMIC_RELAXED);
  __atomic_fetch_max(&out->worst_ord, worst, __ATOMIC_RELAXED);
}
