/* verify_protocol.c - the verification protocol's rules, without a GPU. */
#include "runtime/verify_protocol.h"

#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

static const struct {
  const char *name;
  size_t size;
  bool is_float;
} dtypes[LF_VDT_COUNT_] = {
    [LF_VDT_F32] = {"f32", 4, true},   [LF_VDT_F16] = {"f16", 2, true},
    [LF_VDT_BF16] = {"bf16", 2, true}, [LF_VDT_F64] = {"f64", 8, true},
    [LF_VDT_I8] = {"i8", 1, false},    [LF_VDT_I16] = {"i16", 2, false},
    [LF_VDT_I32] = {"i32", 4, false},  [LF_VDT_I64] = {"i64", 8, false},
    [LF_VDT_I1] = {"i1", 1, false},
};

const char *lf_vdtype_name(lf_vdtype_t dt) {
  return dt < LF_VDT_COUNT_ ? dtypes[dt].name : "?";
}
size_t lf_vdtype_size(lf_vdtype_t dt) {
  return dt < LF_VDT_COUNT_ ? dtypes[dt].size : 0;
}
bool lf_vdtype_is_float(lf_vdtype_t dt) {
  return dt < LF_VDT_COUNT_ && dtypes[dt].is_float;
}

static bool parse_element(const char *s, size_t n, lf_voperand_t *out) {
  if (n == 5 && !strncmp(s, "index", 5)) {
    out->dtype = LF_VDT_I64;
    out->is_index = true;
    return true;
  }
  for (int i = 0; i < LF_VDT_COUNT_; ++i)
    if (strlen(dtypes[i].name) == n && !strncmp(s, dtypes[i].name, n)) {
      out->dtype = (lf_vdtype_t)i;
      return true;
    }
  return false;
}

/* Parses one type at `*p` (advancing it): tensor<...>, memref<...> or a
 * scalar element type. */
static lf_status_t parse_type_at(const char **p, lf_voperand_t *out) {
  memset(out, 0, sizeof(*out));
  const char *s = *p;
  while (isspace((unsigned char)*s))
    ++s;
  const char *start = s;
  bool shaped = false;
  if (!strncmp(s, "tensor<", 7) || !strncmp(s, "memref<", 7)) {
    shaped = true;
    s += 7;
    for (;;) {
      if (!isdigit((unsigned char)*s))
        break;
      char *end;
      long long d = strtoll(s, &end, 10);
      if (*end != 'x')
        break;
      if (out->rank == 8 || d < 0)
        return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                         "unsupported shape in type '%.60s'", start);
      out->dims[out->rank++] = d;
      s = end + 1;
    }
    if (*s == '?')
      return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                       "dynamic shape in type '%.60s': only static shapes "
                       "are verified",
                       start);
  }
  const char *e = s;
  while (isalnum((unsigned char)*e))
    ++e;
  if (!parse_element(s, (size_t)(e - s), out))
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "unsupported element type in '%.60s' (supported: f32, "
                     "f16, bf16, f64, i1, i8, i16, i32, i64, index)",
                     start);
  if (shaped) {
    if (*e != '>')
      return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                       "unsupported type '%.60s' (only identity layouts in "
                       "the default memory space)",
                       start);
    ++e;
  }
  out->is_scalar = !shaped;
  out->count = 1;
  for (int i = 0; i < out->rank; ++i)
    out->count *= (size_t)out->dims[i];
  out->bytes = out->count * lf_vdtype_size(out->dtype);
  *p = e;
  return LF_OK;
}

lf_status_t lf_voperand_parse(const char *type, lf_voperand_t *out) {
  const char *p = type;
  LF_RETURN_IF_ERROR(parse_type_at(&p, out));
  while (isspace((unsigned char)*p))
    ++p;
  if (*p)
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "trailing text after type in '%.60s'", type);
  return LF_OK;
}

static lf_status_t parse_list(const char **p, lf_voperand_t *list,
                              size_t *count, const char *sig) {
  *count = 0;
  const char *s = *p;
  while (isspace((unsigned char)*s))
    ++s;
  bool paren = *s == '(';
  if (paren)
    ++s;
  while (isspace((unsigned char)*s))
    ++s;
  if (paren && *s == ')') {
    *p = s + 1;
    return LF_OK;
  }
  for (;;) {
    if (*count == 64)
      return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                       "more than 64 operands in signature '%.80s'", sig);
    LF_RETURN_IF_ERROR(parse_type_at(&s, &list[*count]));
    ++*count;
    while (isspace((unsigned char)*s))
      ++s;
    if (*s == ',') {
      ++s;
      continue;
    }
    break;
  }
  if (paren) {
    if (*s != ')')
      return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                       "expected ')' in signature '%.80s'", sig);
    ++s;
  }
  *p = s;
  return LF_OK;
}

lf_status_t lf_vsignature_parse(const char *sig, lf_voperand_t **out_ins,
                                size_t *out_num_ins, lf_voperand_t **out_outs,
                                size_t *out_num_outs) {
  *out_ins = *out_outs = NULL;
  *out_num_ins = *out_num_outs = 0;
  lf_voperand_t *ins = calloc(64, sizeof(*ins));
  lf_voperand_t *outs = calloc(64, sizeof(*outs));
  lf_status_t status = LF_OK;
  if (!ins || !outs) {
    status = LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
    goto out_free;
  }
  const char *p = sig;
  size_t ni = 0, no = 0;
  status = parse_list(&p, ins, &ni, sig);
  if (status)
    goto out_free;
  while (isspace((unsigned char)*p))
    ++p;
  if (strncmp(p, "->", 2)) {
    status = LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                       "expected '->' in signature '%.80s'", sig);
    goto out_free;
  }
  p += 2;
  status = parse_list(&p, outs, &no, sig);
  if (status)
    goto out_free;
  for (size_t i = 0; i < no; ++i)
    if (outs[i].is_scalar) {
      status = LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                         "scalar result %zu in signature '%.80s': results "
                         "must be tensors",
                         i, sig);
      goto out_free;
    }
  if (no == 0) {
    status = LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                       "no results in signature '%.80s'", sig);
    goto out_free;
  }
  *out_ins = ins;
  *out_outs = outs;
  *out_num_ins = ni;
  *out_num_outs = no;
  return LF_OK;

out_free:
  free(ins);
  free(outs);
  return status;
}

lf_vtolerance_t lf_vtolerance_for(lf_vdtype_t dt) {
  switch (dt) {
  case LF_VDT_F64:
    return (lf_vtolerance_t){1e-7, 1e-7};
  case LF_VDT_F32:
    return (lf_vtolerance_t){1e-3, 1e-3};
  case LF_VDT_F16:
    return (lf_vtolerance_t){1e-2, 1e-2};
  case LF_VDT_BF16:
    return (lf_vtolerance_t){2e-2, 2e-2};
  default:
    return (lf_vtolerance_t){0, 0};
  }
}

lf_vtolerance_t lf_vtolerance_tf32(int64_t k) {
  lf_vtolerance_t f32 = lf_vtolerance_for(LF_VDT_F32);
  if (k <= 0)
    return f32;
  double t = 10.0 * ldexp(1.0, -11) + (double)k * ldexp(1.0, -24);
  t = fmin(t, 2e-2);
  t = fmax(t, f32.rtol);
  return (lf_vtolerance_t){t, t};
}

double lf_vtf32_scale_tol(int64_t k) {
  if (k <= 0)
    return 0.0;
  return 8.0 * ldexp(1.0, -11) + (double)k * ldexp(1.0, -23);
}

double lf_vacc32_scale_tol(int64_t k) {
  if (k <= 0)
    return 0.0;
  return fmin((double)k * ldexp(1.0, -23), ldexp(1.0, -10));
}

bool lf_vclose(double ref, double cand, double rtol, double atol,
               double *out_ratio) {
  return lf_vclose_scaled(ref, cand, rtol, atol, NAN, 0.0, out_ratio, NULL);
}

bool lf_vclose_scaled(double ref, double cand, double rtol, double atol,
                      double scale, double stol, double *out_ratio,
                      bool *out_by_scale) {
  double ratio = 0;
  bool ok, by_scale = false;
  if (isnan(ref) || isnan(cand)) {
    ok = isnan(ref) && isnan(cand);
    ratio = ok ? 0 : INFINITY;
  } else if (ref == cand) {
    ok = true;
  } else if (isinf(ref) || isinf(cand)) {
    ok = false; /* an infinity matches only itself (inf <= inf*rtol) */
    ratio = INFINITY;
  } else {
    double d = fabs(cand - ref);
    double tol = rtol * fabs(ref) + atol;
    double st = isfinite(scale) && scale > 0 ? stol * sqrt(scale) : 0.0;
    if (st > tol) {
      by_scale = d > tol && d <= st;
      tol = st;
    }
    ok = d <= tol;
    ratio = tol > 0 ? d / tol : INFINITY;
    if (isnan(ratio))
      ratio = INFINITY;
  }
  if (out_ratio)
    *out_ratio = ratio;
  if (out_by_scale)
    *out_by_scale = ok && by_scale;
  return ok;
}

double lf_voverflow_threshold(lf_vdtype_t dt) {
  switch (dt) {
  case LF_VDT_F16:
    return 65520.0;
  case LF_VDT_BF16:
    return ldexp(2.0 - ldexp(1.0, -8), 127);
  case LF_VDT_F32:
    return ldexp(2.0 - ldexp(1.0, -24), 127);
  default:
    return INFINITY;
  }
}

bool lf_vboundary_close(double ref, double cand, double wide, double rtol,
                        double atol, double threshold, double *out_ratio) {
  if (out_ratio)
    *out_ratio = INFINITY;
  if (isnan(ref) || isnan(cand) || isnan(wide) || isinf(ref) == isinf(cand))
    return false;
  bool ref_inf = isinf(ref);
  double inf_side = ref_inf ? ref : cand;
  double tol = rtol * fabs(wide) + atol;
  /* The unrounded value rounds to that infinity, up to the tolerance. */
  if (signbit(wide) != signbit(inf_side) || !(fabs(wide) >= threshold - tol))
    return false;
  double ratio;
  if (ref_inf) { /* the candidate is judged against the unrounded value */
    double d = fabs(cand - wide);
    if (!isfinite(wide) || !(d <= tol))
      return false;
    ratio = tol > 0 ? d / tol : 0.0;
  } else {
    ratio = fabs(wide) < threshold && tol > 0 ? (threshold - fabs(wide)) / tol
                                              : 0.0;
  }
  if (out_ratio)
    *out_ratio = ratio;
  return true;
}

lf_vpoison_t lf_vpoison_for(lf_vdtype_t dt, bool finite) {
  switch (dt) {
  case LF_VDT_F32:
    return finite ? (lf_vpoison_t){0x4CBADBADu, 4, 0x4CBADBADu}
                  : (lf_vpoison_t){0x7FC00BADu, 4, 0x7FC00BADu};
  case LF_VDT_F64: /* the 32-bit pattern twice */
    return finite ? (lf_vpoison_t){0x41E0BEEF41E0BEEFull, 4, 0x41E0BEEFu}
                  : (lf_vpoison_t){0x7FF87FF87FF87FF8ull, 4, 0x7FF87FF8u};
  case LF_VDT_F16:
    return finite ? (lf_vpoison_t){0x5BADu, 2, 0x5BADu}
                  : (lf_vpoison_t){0x7E0Bu, 2, 0x7E0Bu};
  case LF_VDT_BF16:
    return finite ? (lf_vpoison_t){0x4BADu, 2, 0x4BADu}
                  : (lf_vpoison_t){0x7FCBu, 2, 0x7FCBu};
  default: {
    uint64_t byte = finite ? 0x5A : 0xA5, bits = 0;
    for (size_t i = 0; i < lf_vdtype_size(dt); ++i)
      bits |= byte << (8 * i);
    return (lf_vpoison_t){bits, 1, (uint32_t)byte};
  }
  }
}

const char *lf_vdist_name(lf_vdist_t dist) {
  static const char *names[LF_VDIST_COUNT_] = {
      "normal", "heavy-tailed", "spike", "signed-zero-denormal", "nan-inf"};
  return dist < LF_VDIST_COUNT_ ? names[dist] : "?";
}

static uint64_t splitmix(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t lf_vseed_derive(uint64_t base_seed, int index, int redraw) {
  return splitmix(splitmix(base_seed) ^ ((uint64_t)index << 32) ^
                  (uint64_t)redraw);
}

size_t lf_vtrial_schedule(uint64_t base_seed, int random_trials,
                          bool float_inputs, lf_vtrial_t *out, size_t cap) {
  if (random_trials < 5)
    random_trials = 5;
  size_t n = (size_t)random_trials + 1 + (float_inputs ? 2 : 0);
  for (size_t i = 0; i < n && i < cap; ++i) {
    lf_vdist_t d;
    if (i < (size_t)random_trials)
      d = i % 2 ? LF_VDIST_HEAVY : LF_VDIST_NORMAL;
    else
      d = (lf_vdist_t)(LF_VDIST_SPIKE + (i - (size_t)random_trials));
    out[i] = (lf_vtrial_t){(int)i, d, lf_vseed_derive(base_seed, (int)i, 0)};
  }
  return n;
}

uint64_t lf_vordered(double d) {
  uint64_t u;
  memcpy(&u, &d, 8);
  return u >> 63 ? ~u : u | (1ull << 63);
}

double lf_vfrom_ordered(uint64_t o) {
  uint64_t u = o >> 63 ? o & ~(1ull << 63) : ~o;
  double d;
  memcpy(&d, &u, 8);
  return d;
}

void lf_vstats_of(const double *v, size_t n, lf_vstats_t *out) {
  memset(out, 0, sizeof(*out));
  out->min_ord = ~0ull;
  for (size_t i = 0; i < n; ++i) {
    if (isnan(v[i])) {
      ++out->nan;
    } else if (isinf(v[i])) {
      ++out->inf;
    } else {
      ++out->finite;
      out->sum_abs += fabs(v[i]);
      uint64_t o = lf_vordered(v[i]);
      out->min_ord = o < out->min_ord ? o : out->min_ord;
      out->max_ord = o > out->max_ord ? o : out->max_ord;
    }
  }
}

bool lf_vstats_degenerate(const lf_vstats_t *s, size_t count,
                          const char **out_why) {
  const char *why = NULL;
  if (count > 1) {
    if (s->finite == 0) {
      why = "every reference output element is NaN or infinite";
    } else if (s->finite < 2) {
      why = "the reference output has fewer than two finite elements";
    } else {
      double lo = lf_vfrom_ordered(s->min_ord);
      double hi = lf_vfrom_ordered(s->max_ord);
      double mag = fmax(fabs(lo), fabs(hi));
      if (!(hi - lo > 1e-6 * mag))
        why = "the reference output is constant or nearly so (max - min <= "
              "1e-6 of its magnitude)";
    }
  }
  if (out_why)
    *out_why = why;
  return why != NULL;
}

double lf_vatol(const lf_vstats_t *s, lf_vtolerance_t tol) {
  if (!s->finite)
    return 0;
  return tol.atol_scale * (s->sum_abs / (double)s->finite);
}

double lf_vroofline_ms(double in_bytes, double out_bytes, double l2_bytes,
                       double flops, double bandwidth, double peak) {
  double bytes = in_bytes + fmax(0.0, out_bytes - l2_bytes);
  double t_mem = bandwidth > 0 ? bytes / bandwidth : 0;
  double t_math = peak > 0 ? flops / peak : 0;
  return 1e3 * fmax(t_mem, t_math);
}

double lf_vpeak_flops(int cc_major, int multiprocessors, int clock_khz,
                      lf_vdtype_t dt) {
  double per_clock = cc_major >= 9 ? 4096 : 2048; /* 16-bit tensor, dense */
  switch (dt) {
  case LF_VDT_I8:
  case LF_VDT_I1:
    per_clock *= 2;
    break;
  case LF_VDT_F32:
    per_clock *= 0.5;
    break;
  case LF_VDT_F64:
    per_clock *= 0.125;
    break;
  case LF_VDT_F16:
  case LF_VDT_BF16:
    break;
  default:
    per_clock *= 0.5;
    break;
  }
  return 1.5 * per_clock * multiprocessors * clock_khz * 1e3;
}

double lf_vroofline_peak_flops(int cc_major, int multiprocessors, int clock_khz,
                               lf_vdtype_t dt) {
  double per_clock;
  switch (dt) {
  case LF_VDT_F16:
  case LF_VDT_BF16:
    per_clock = cc_major >= 9 ? 4096 : 2048;
    break;
  case LF_VDT_I8:
  case LF_VDT_I1:
    per_clock = cc_major >= 9 ? 8192 : 4096;
    break;
  case LF_VDT_F64:
    per_clock = cc_major >= 9 ? 128 : 64;
    break;
  default: /* f32 and the integers: the CUDA cores */
    per_clock = 256;
    break;
  }
  return per_clock * multiprocessors * clock_khz * 1e3;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

double lf_vmedian(double *v, size_t n) {
  if (!n)
    return 0;
  qsort(v, n, sizeof(*v), cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void lf_verdict_free(lf_verdict_t *v) {
  if (!v)
    return;
  free(v->reason);
  free(v->message);
  free(v->json);
  memset(v, 0, sizeof(*v));
}

/* ---- Tensor-map parameters of a build result ---- */

static lf_status_t tmap_bytes(const cJSON *param, const char *key,
                              const char *const *names, const int *values,
                              size_t n, int *out) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(param, key);
  if (!v) { /* absent: the default (the first) */
    *out = values[0];
    return LF_OK;
  }
  for (size_t i = 0; cJSON_IsString(v) && i < n; ++i)
    if (!strcmp(v->valuestring, names[i])) {
      *out = values[i];
      return LF_OK;
    }
  return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                   "tensor-map parameter: \"%s\" is not one of %s%s%s%s%s%s%s",
                   key, names[0], n > 1 ? ", " : "", n > 1 ? names[1] : "",
                   n > 2 ? ", " : "", n > 2 ? names[2] : "", n > 3 ? ", " : "",
                   n > 3 ? names[3] : "");
}

static lf_status_t tmap_array(const cJSON *param, const char *key, int rank,
                              uint64_t *out, uint64_t max) {
  const cJSON *a = cJSON_GetObjectItemCaseSensitive(param, key);
  if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) != rank)
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "tensor-map parameter: \"%s\" must be an array of %d "
                     "numbers (one per dimension)",
                     key, rank);
  for (int d = 0; d < rank; ++d) {
    const cJSON *x = cJSON_GetArrayItem(a, d);
    if (!cJSON_IsNumber(x) || x->valuedouble < 1 || x->valuedouble > (double)max ||
        x->valuedouble != floor(x->valuedouble))
      return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                       "tensor-map parameter: \"%s\"[%d] must be an integer "
                       "from 1 to %llu",
                       key, d, (unsigned long long)max);
    out[d] = (uint64_t)x->valuedouble;
  }
  return LF_OK;
}

lf_status_t lf_vtensor_map_parse(const cJSON *param, size_t num_operands,
                                 lf_tensor_map_spec_t *out) {
  memset(out, 0, sizeof(*out));
  const cJSON *role = cJSON_GetObjectItemCaseSensitive(param, "role");
  const cJSON *operand = cJSON_GetObjectItemCaseSensitive(param, "operand");
  const cJSON *dtype = cJSON_GetObjectItemCaseSensitive(param, "dtype");
  const cJSON *dims = cJSON_GetObjectItemCaseSensitive(param, "dims");
  const cJSON *il = cJSON_GetObjectItemCaseSensitive(param, "interleave");
  if (!cJSON_IsString(role) || strcmp(role->valuestring, "tensor_map"))
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "not a tensor-map parameter (role \"tensor_map\")");
  if (!cJSON_IsNumber(operand) || operand->valuedouble < 0 ||
      operand->valuedouble >= (double)num_operands ||
      operand->valuedouble != floor(operand->valuedouble))
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "tensor-map parameter: \"operand\" must name one of the "
                     "subgraph's %zu operands (inputs, then results)",
                     num_operands);
  out->param = (int)operand->valuedouble;
  if (!cJSON_IsString(dtype) || strlen(dtype->valuestring) >= sizeof(out->dtype))
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "tensor-map parameter: \"dtype\" must be an element type "
                     "name such as \"bf16\"");
  snprintf(out->dtype, sizeof(out->dtype), "%s", dtype->valuestring);
  int rank = cJSON_IsArray(dims) ? cJSON_GetArraySize(dims) : 0;
  if (rank < 1 || rank > 5)
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "tensor-map parameter: \"dims\" must hold 1 to 5 "
                     "dimensions");
  out->rank = rank;
  LF_RETURN_IF_ERROR(tmap_array(param, "dims", rank, out->dims, (1ull << 32) - 1));
  uint64_t box[5];
  LF_RETURN_IF_ERROR(tmap_array(param, "box", rank, box, 256));
  for (int d = 0; d < rank; ++d)
    out->box[d] = (uint32_t)box[d];
  static const char *const sw_names[] = {"none", "32b", "64b", "128b"};
  static const int sw_values[] = {0, 32, 64, 128};
  static const char *const l2_names[] = {"none", "64b", "128b", "256b"};
  static const int l2_values[] = {0, 64, 128, 256};
  static const char *const oob_names[] = {"zero", "nan"};
  static const int oob_values[] = {0, 1};
  int oob;
  LF_RETURN_IF_ERROR(
      tmap_bytes(param, "swizzle", sw_names, sw_values, 4, &out->swizzle_bytes));
  LF_RETURN_IF_ERROR(
      tmap_bytes(param, "l2promo", l2_names, l2_values, 4, &out->l2promo_bytes));
  LF_RETURN_IF_ERROR(tmap_bytes(param, "oob", oob_names, oob_values, 2, &oob));
  out->oob_nan = oob != 0;
  if (il && (!cJSON_IsString(il) || strcmp(il->valuestring, "none")))
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "tensor-map parameter: \"interleave\" must be \"none\"");
  return LF_OK;
}

lf_status_t lf_vtensor_map_check_operand(const lf_tensor_map_spec_t *spec,
                                         const lf_voperand_t *op) {
  if (op->is_scalar)
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "the tensor map views operand %d, a scalar", spec->param);
  /* a "tf32" map views an f32 buffer (TMA rounds as it loads) */
  bool tf32_over_f32 = !strncmp(spec->dtype, "tf32", sizeof(spec->dtype)) &&
                       op->dtype == LF_VDT_F32;
  if (!tf32_over_f32 &&
      strncmp(spec->dtype, lf_vdtype_name(op->dtype), sizeof(spec->dtype)))
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "the tensor map of operand %d has element type %.8s, the "
                     "operand %s",
                     spec->param, spec->dtype, lf_vdtype_name(op->dtype));
  bool same = spec->rank == op->rank;
  for (int d = 0; same && d < spec->rank; ++d)
    same = (int64_t)spec->dims[d] == op->dims[d];
  if (!same)
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "the tensor map of operand %d does not have the "
                     "operand's shape (rank %d against %d, or a dimension "
                     "differs): a map views its whole buffer",
                     spec->param, spec->rank, op->rank);
  return LF_OK;
}

lf_status_t lf_verdict_parse(const char *text, size_t size, lf_verdict_t *out) {
  memset(out, 0, sizeof(*out));
  cJSON *root = cJSON_ParseWithLength(text, size);
  lf_status_t status = LF_OK;
  if (!root)
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "the verdict is not JSON (%zu bytes)", size);
  const cJSON *schema = cJSON_GetObjectItemCaseSensitive(root, "schema");
  const cJSON *accepted = cJSON_GetObjectItemCaseSensitive(root, "accepted");
  const cJSON *reason = cJSON_GetObjectItemCaseSensitive(root, "reason");
  const cJSON *message = cJSON_GetObjectItemCaseSensitive(root, "message");
  const cJSON *trials = cJSON_GetObjectItemCaseSensitive(root, "trials");
  if (!cJSON_IsString(schema) ||
      strcmp(schema->valuestring, LF_VERDICT_SCHEMA)) {
    status = LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                       "the verdict's schema is not \"%s\"", LF_VERDICT_SCHEMA);
    goto out_free;
  }
  if (!cJSON_IsBool(accepted) || !cJSON_IsString(reason) ||
      !cJSON_IsString(message) || !cJSON_IsArray(trials)) {
    status = LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                       "the verdict lacks a boolean 'accepted', string "
                       "'reason' and 'message', or a 'trials' array");
    goto out_free;
  }
  out->accepted = cJSON_IsTrue(accepted);
  out->trials = cJSON_GetArraySize(trials);
  if (out->accepted && (out->trials < 5 || strcmp(reason->valuestring, "ok"))) {
    status = LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                       "the verdict accepts with %d trial(s) and reason "
                       "'%.40s' (an acceptance needs at least 5 trials and "
                       "reason 'ok')",
                       out->trials, reason->valuestring);
    goto out_free;
  }
  const cJSON *timing = cJSON_GetObjectItemCaseSensitive(root, "timing");
  if (cJSON_IsObject(timing)) {
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(timing, "candidate_ms");
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(timing, "reference_ms");
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(timing, "speedup");
    out->candidate_ms = cJSON_IsNumber(c) ? c->valuedouble : 0;
    out->reference_ms = cJSON_IsNumber(r) ? r->valuedouble : 0;
    out->speedup = cJSON_IsNumber(s) ? s->valuedouble : 0;
  }
  out->reason = strdup(reason->valuestring);
  out->message = strdup(message->valuestring);
  out->json = malloc(size + 1);
  if (!out->reason || !out->message || !out->json) {
    status = LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
    goto out_free;
  }
  memcpy(out->json, text, size);
  out->json[size] = 0;
  cJSON_Delete(root);
  return LF_OK;

out_free:
  cJSON_Delete(root);
  lf_verdict_free(out);
  return status;
}

lf_status_t lf_verdict_reject(const char *reason, const char *message,
                              lf_verdict_t *out) {
  memset(out, 0, sizeof(*out));
  cJSON *root = cJSON_CreateObject();
  if (!root)
    return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  cJSON_AddStringToObject(root, "schema", LF_VERDICT_SCHEMA);
  cJSON_AddBoolToObject(root, "accepted", false);
  cJSON_AddStringToObject(root, "reason", reason);
  cJSON_AddStringToObject(root, "message", message);
  cJSON_AddArrayToObject(root, "trials");
  out->json = cJSON_PrintUnformatted(root);
  cJSON_Delete(root);
  out->reason = strdup(reason);
  out->message = strdup(message);
  if (!out->json || !out->reason || !out->message) {
    lf_verdict_free(out);
    return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  }
  return LF_OK;
}

/* ---- Feedback for the model ---------------------------------------------*/

bool lf_verdict_reason_unjudged(const char *reason) {
  static const char *const words[] = {
      "no-worker",         "no-verdict",
      "malformed-verdict", "degenerate-reference",
      "no-reference",      "verify-error"};
  for (size_t i = 0; reason && i < sizeof(words) / sizeof(words[0]); ++i)
    if (strcmp(reason, words[i]) == 0)
      return true;
  return false;
}

/* Appends `text` without seeds: "seed 0x<hex>" (with a ", " or " " before
 * it) is dropped, any other "0x" word of 9+ hex digits becomes "0x...". */
static lf_status_t append_scrubbed(lf_strbuf_t *out, const char *text) {
  const char *p = text ? text : "";
  while (*p) {
    if (strncmp(p, ", seed 0x", 9) == 0 || strncmp(p, " seed 0x", 8) == 0 ||
        strncmp(p, "seed 0x", 7) == 0) {
      const char *h = strstr(p, "0x") + 2;
      while (isxdigit((unsigned char)*h))
        ++h;
      p = h;
      continue;
    }
    if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
      const char *h = p + 2;
      while (isxdigit((unsigned char)*h))
        ++h;
      if (h - p - 2 >= 9) {
        LF_RETURN_IF_ERROR(lf_strbuf_append_str(out, "0x..."));
        p = h;
        continue;
      }
    }
    LF_RETURN_IF_ERROR(lf_strbuf_append(out, p, 1));
    ++p;
  }
  return LF_OK;
}

static double num_of(const cJSON *o, const char *k, double dflt) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

static const char *str_of(const cJSON *o, const char *k) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  return cJSON_IsString(v) && v->valuestring ? v->valuestring : NULL;
}

/* The failing trial: the first whose result is not "ok"/"skipped". */
static const cJSON *failing_trial(const cJSON *root, int *out_n) {
  const cJSON *trials = cJSON_GetObjectItemCaseSensitive(root, "trials");
  const cJSON *t, *bad = NULL;
  *out_n = cJSON_IsArray(trials) ? cJSON_GetArraySize(trials) : 0;
  cJSON_ArrayForEach(t, trials) {
    const char *r = str_of(t, "result");
    if (!bad && r && strcmp(r, "ok") && strcmp(r, "skipped"))
      bad = t;
  }
  return bad;
}

/* Appends "[i, j, k]" for flat index `idx` of `op`. */
static lf_status_t append_coords(lf_strbuf_t *out, const lf_voperand_t *op,
                                 uint64_t idx) {
  if (op->rank < 1)
    return LF_OK;
  uint64_t c[8];
  for (int d = op->rank - 1; d >= 0; --d) {
    uint64_t n = op->dims[d] > 0 ? (uint64_t)op->dims[d] : 1;
    c[d] = idx % n;
    idx /= n;
  }
  LF_RETURN_IF_ERROR(lf_strbuf_append_str(out, " (coordinates ["));
  for (int d = 0; d < op->rank; ++d)
    LF_RETURN_IF_ERROR(lf_strbuf_appendf(out, "%s%llu", d ? ", " : "",
                                         (unsigned long long)c[d]));
  return lf_strbuf_append_str(out, "])");
}

static lf_status_t append_shape(lf_strbuf_t *out, const lf_voperand_t *op) {
  for (int d = 0; d < op->rank; ++d)
    LF_RETURN_IF_ERROR(
        lf_strbuf_appendf(out, "%s%lld", d ? "x" : "", (long long)op->dims[d]));
  return LF_OK;
}

/* One output's line of a failing trial. */
static lf_status_t output_line(lf_strbuf_t *b, const cJSON *rec,
                               const lf_voperand_t *outs, size_t nouts) {
  int o = (int)num_of(rec, "index", 0);
  double bad_a = num_of(rec, "bad_nan_poison", 0);
  double bad_b = num_of(rec, "bad_sentinel_poison", 0);
  double unwritten = num_of(rec, "unwritten", 0);
  double differ = num_of(rec, "runs_differ", 0);
  if (bad_a == 0 && bad_b == 0 && differ == 0)
    return LF_OK;
  const lf_voperand_t *op = o >= 0 && (size_t)o < nouts ? &outs[o] : NULL;
  LF_RETURN_IF_ERROR(lf_strbuf_appendf(b, "- output %d", o));
  if (op) {
    LF_RETURN_IF_ERROR(
        lf_strbuf_appendf(b, " (%s, ", lf_vdtype_name(op->dtype)));
    LF_RETURN_IF_ERROR(append_shape(b, op));
    LF_RETURN_IF_ERROR(lf_strbuf_appendf(b, ", %zu elements)", op->count));
  }
  double bad = bad_a > bad_b ? bad_a : bad_b;
  if (bad > 0)
    LF_RETURN_IF_ERROR(lf_strbuf_appendf(b, ": %.0f element(s) wrong", bad));
  if (unwritten > 0)
    LF_RETURN_IF_ERROR(lf_strbuf_appendf(
        b,
        ", %.0f still holding the value written before the launch "
        "(never written)",
        unwritten));
  if (differ > 0)
    LF_RETURN_IF_ERROR(lf_strbuf_appendf(
        b, "%s%.0f element(s) differ between two runs on the same inputs",
        bad > 0 ? "; " : ": ", differ));
  const cJSON *fb =
      cJSON_GetObjectItemCaseSensitive(rec, "first_bad_sentinel_poison");
  if (!cJSON_IsObject(fb))
    fb = cJSON_GetObjectItemCaseSensitive(rec, "first_bad_nan_poison");
  if (cJSON_IsObject(fb)) {
    double idx = num_of(fb, "index", 0);
    LF_RETURN_IF_ERROR(
        lf_strbuf_appendf(b, "; first wrong at flat index %.0f", idx));
    if (op)
      LF_RETURN_IF_ERROR(append_coords(b, op, (uint64_t)idx));
    const cJSON *got = cJSON_GetObjectItemCaseSensitive(fb, "candidate");
    const cJSON *want = cJSON_GetObjectItemCaseSensitive(fb, "reference");
    if (cJSON_IsNumber(got) && cJSON_IsNumber(want))
      LF_RETURN_IF_ERROR(lf_strbuf_appendf(
          b, ": got %.6g, want %.6g", got->valuedouble, want->valuedouble));
    else
      LF_RETURN_IF_ERROR(lf_strbuf_appendf(
          b, ": got %s, want %s",
          str_of(fb, "candidate") ? str_of(fb, "candidate") : "?",
          str_of(fb, "reference") ? str_of(fb, "reference") : "?"));
    double rtol = num_of(rec, "rtol", -1), atol = num_of(rec, "atol", -1);
    if (rtol >= 0 && atol >= 0)
      LF_RETURN_IF_ERROR(lf_strbuf_appendf(
          b, " (allowed: |got - want| <= %.3g*|want| + %.3g)", rtol, atol));
  }
  return lf_strbuf_append_str(b, "\n");
}

lf_status_t lf_verdict_feedback(const char *verdict_json, lf_strbuf_t *out) {
  cJSON *root = verdict_json ? cJSON_Parse(verdict_json) : NULL;
  if (!cJSON_IsObject(root)) {
    cJSON_Delete(root);
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "the verdict is not a JSON object");
  }
  lf_strbuf_t b;
  lf_strbuf_init(&b, 1 << 16);
  lf_voperand_t *ins = NULL, *outs = NULL;
  size_t nins = 0, nouts = 0;
  const char *sig = str_of(root, "signature");
  if (sig) {
    lf_status_t s = lf_vsignature_parse(sig, &ins, &nins, &outs, &nouts);
    if (s) {
      lf_status_free(s);
      nouts = 0;
    }
  }
  const char *reason = str_of(root, "reason");
  lf_status_t s =
      lf_strbuf_appendf(&b, "verification rejected the kernel: %s\n",
                        reason ? reason : "unknown reason");
  int ntrials = 0;
  const cJSON *t = failing_trial(root, &ntrials);
  if (!s && t) {
    const cJSON *outputs = cJSON_GetObjectItemCaseSensitive(t, "outputs");
    const cJSON *rec;
    cJSON_ArrayForEach(rec, outputs) {
      if (s)
        break;
      s = output_line(&b, rec, outs, nouts);
    }
    const char *dist = str_of(t, "distribution");
    if (!s && dist)
      s = lf_strbuf_appendf(&b,
                            "- failing trial: inputs drawn from the %s "
                            "distribution (trial %.0f of %d)\n",
                            dist, num_of(t, "index", 0) + 1, ntrials);
  }
  const char *message = str_of(root, "message");
  if (!s && message && message[0]) {
    s = lf_strbuf_append_str(&b, "- the verifier says: ");
    if (!s)
      s = append_scrubbed(&b, message);
    if (!s)
      s = lf_strbuf_append_str(&b, "\n");
  }
  if (!s) {
    size_t n = lf_strbuf_len(&b);
    if (n > LF_VERDICT_FEEDBACK_MAX) {
      n = LF_VERDICT_FEEDBACK_MAX - 16;
      while (n > 0 && ((unsigned char)b.data[n] & 0xC0) == 0x80)
        --n;
    }
    s = lf_strbuf_append(out, b.data, n);
    if (!s && n < lf_strbuf_len(&b))
      s = lf_strbuf_append_str(out, "\n[... cut]");
  }
  free(ins);
  free(outs);
  lf_strbuf_free(&b);
  cJSON_Delete(root);
  return s;
}

/* ---- The judge: upstream plan or opmath truth ---------------------------- */

static const char *json_str(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* A path relative to the plan's folder and inside it. */
static bool path_inside(const char *p) {
  if (!p || !*p || p[0] == '/')
    return false;
  for (const char *c = p; *c;) {
    const char *end = strchr(c, '/');
    size_t n = end ? (size_t)(end - c) : strlen(c);
    if (n == 0 || (n == 2 && c[0] == '.' && c[1] == '.'))
      return false;
    c += n + (end ? 1 : 0);
  }
  return true;
}

void lf_vjudge_from_plan(const char *plan, size_t size, const char *plan_dir,
                         bool upstream_only, lf_vjudge_t *out) {
  memset(out, 0, sizeof(*out));
  cJSON *root = plan ? cJSON_ParseWithLength(plan, size) : NULL;
  if (!root)
    return; /* the plan's own reader says what is wrong with it */
  const cJSON *truth = cJSON_GetObjectItemCaseSensitive(root, "truth");
  const char *note = json_str(root, "truth_note");
  if (cJSON_IsObject(truth)) {
    out->named = true;
    const char *path = json_str(truth, "plan");
    const char *kind = json_str(truth, "kind");
    const char *reason = json_str(truth, "reason");
    snprintf(out->kind, sizeof(out->kind), "%s", kind ? kind : "");
    snprintf(out->reason, sizeof(out->reason), "%s", reason ? reason : "");
    if (!kind || !path_inside(path))
      snprintf(out->note, sizeof(out->note),
               "the plan names a truth without a kind or with a path "
               "outside its folder: not used");
    else if (upstream_only)
      snprintf(out->note, sizeof(out->note),
               "the upstream reference was asked for (--upstream-reference)");
    else if ((size_t)snprintf(out->truth_path, sizeof(out->truth_path), "%s/%s",
                              plan_dir ? plan_dir : ".",
                              path) >= sizeof(out->truth_path))
      snprintf(out->note, sizeof(out->note), "the truth's path is too long");
    else
      out->use_truth = true;
  } else if (note) {
    out->named = true;
    snprintf(out->note, sizeof(out->note), "%s", note);
  }
  /* The wide reference, independent of the truth. */
  const cJSON *wide = cJSON_GetObjectItemCaseSensitive(root, "wide");
  const char *wide_note = json_str(root, "wide_note");
  if (cJSON_IsObject(wide)) {
    out->wide_named = true;
    const char *path = json_str(wide, "plan");
    const char *kind = json_str(wide, "kind");
    if (!kind || strcmp(kind, "f32-results"))
      snprintf(out->wide_note, sizeof(out->wide_note),
               "the plan names a wide plan of an unknown kind: not used");
    else if (!path_inside(path))
      snprintf(out->wide_note, sizeof(out->wide_note),
               "the plan names a wide plan with a path outside its folder: "
               "not used");
    else if ((size_t)snprintf(out->wide_path, sizeof(out->wide_path), "%s/%s",
                              plan_dir ? plan_dir : ".",
                              path) >= sizeof(out->wide_path))
      snprintf(out->wide_note, sizeof(out->wide_note),
               "the wide plan's path is too long");
    else
      out->use_wide = true;
  } else if (wide_note) {
    out->wide_named = true;
    snprintf(out->wide_note, sizeof(out->wide_note), "%s", wide_note);
  }
  /* A 16-bit contraction summed in f32: K >= 1, an integer. */
  const cJSON *acc = cJSON_GetObjectItemCaseSensitive(root, "acc32");
  const cJSON *k =
      cJSON_IsObject(acc) ? cJSON_GetObjectItemCaseSensitive(acc, "k") : NULL;
  if (cJSON_IsNumber(k) && k->valuedouble >= 1 && k->valuedouble < 9e15 &&
      k->valuedouble == floor(k->valuedouble))
    out->acc32_k = (int64_t)k->valuedouble;
  cJSON_Delete(root);
}

static bool same_shape(const lf_voperand_t *a, const lf_voperand_t *b) {
  if (a->is_scalar != b->is_scalar || a->rank != b->rank ||
      a->count != b->count)
    return false;
  for (int d = 0; d < a->rank && d < 8; ++d)
    if (a->dims[d] != b->dims[d])
      return false;
  return true;
}

void lf_vjudge_check_wide(const char *plan, size_t plan_size, const char *wide,
                          size_t wide_size, lf_vjudge_t *judge) {
  judge->wide_outputs = 0;
  if (!judge->use_wide)
    return;
  cJSON *p = plan ? cJSON_ParseWithLength(plan, plan_size) : NULL;
  cJSON *t = wide ? cJSON_ParseWithLength(wide, wide_size) : NULL;
  const char *why = NULL;
  const cJSON *wr =
      t ? cJSON_GetObjectItemCaseSensitive(t, "wide_results") : NULL;
  const cJSON *listed =
      wr ? cJSON_GetObjectItemCaseSensitive(wr, "outputs") : NULL;
  const char *ps = p ? json_str(p, "schema") : NULL;
  const char *ts = t ? json_str(t, "schema") : NULL;
  const char *kind = wr ? json_str(wr, "kind") : NULL;
  const char *psig = p ? json_str(p, "signature") : NULL;
  const char *tsig = t ? json_str(t, "signature") : NULL;
  lf_voperand_t *pin = NULL, *pout = NULL, *tin = NULL, *tout = NULL;
  size_t npin = 0, npout = 0, ntin = 0, ntout = 0;
  uint64_t widened = 0, named = 0;
  if (!p || !t)
    why = "the wide plan is not valid JSON";
  else if (!ps || !ts || strcmp(ps, ts) || strcmp(ts, "llm-fuse-reference/0"))
    why = "the wide plan is not an llm-fuse-reference/0 plan";
  else if (!json_str(p, "subgraph") || !json_str(t, "subgraph") ||
           strcmp(json_str(p, "subgraph"), json_str(t, "subgraph")))
    why = "the wide plan is another subgraph's";
  else if (!kind || strcmp(kind, "f32-results") || !cJSON_IsArray(listed))
    why = "the wide plan does not say it has f32 results";
  else if (!psig || !tsig)
    why = "the wide plan or the plan has no signature";
  if (!why) {
    lf_status_t s = lf_vsignature_parse(psig, &pin, &npin, &pout, &npout);
    if (!s)
      s = lf_vsignature_parse(tsig, &tin, &ntin, &tout, &ntout);
    if (s) {
      lf_status_free(s);
      why = "a signature does not parse";
    }
  }
  if (!why && (npin != ntin || npout != ntout))
    why = "the wide plan's signature has other operands than the plan's";
  for (size_t i = 0; !why && i < npin; ++i)
    if (pin[i].dtype != tin[i].dtype || !same_shape(&pin[i], &tin[i]))
      why = "the wide plan's inputs differ from the plan's";
  for (size_t o = 0; !why && o < npout; ++o) {
    if (!same_shape(&pout[o], &tout[o]) || o >= 64)
      why = "the wide plan's results have other shapes than the plan's";
    else if (pout[o].dtype == tout[o].dtype)
      continue;
    else if ((pout[o].dtype == LF_VDT_F16 || pout[o].dtype == LF_VDT_BF16) &&
             tout[o].dtype == LF_VDT_F32)
      widened |= (uint64_t)1 << o;
    else
      why = "a result of the wide plan is neither the plan's type nor the "
            "f32 of a 16-bit float";
  }
  if (!why) {
    const cJSON *k;
    cJSON_ArrayForEach(k, listed) {
      if (!cJSON_IsNumber(k) || k->valuedouble < 0 || k->valuedouble >= 64 ||
          k->valuedouble != (double)(int)k->valuedouble) {
        why = "the wide plan lists a result it does not have";
        break;
      }
      named |= (uint64_t)1 << (int)k->valuedouble;
    }
  }
  if (!why && (named != widened || !widened))
    why = "the results the wide plan lists are not those its signature "
          "widens";
  if (why) {
    judge->use_wide = false;
    snprintf(judge->wide_note, sizeof(judge->wide_note), "%s: not used", why);
  } else {
    judge->wide_outputs = widened;
  }
  free(pin);
  free(pout);
  free(tin);
  free(tout);
  cJSON_Delete(p);
  cJSON_Delete(t);
}

void lf_vjudge_check_truth(const char *plan, size_t plan_size,
                           const char *truth, size_t truth_size,
                           lf_vjudge_t *judge) {
  if (!judge->use_truth)
    return;
  cJSON *p = plan ? cJSON_ParseWithLength(plan, plan_size) : NULL;
  cJSON *t = truth ? cJSON_ParseWithLength(truth, truth_size) : NULL;
  const char *why = NULL;
  const cJSON *opmath =
      t ? cJSON_GetObjectItemCaseSensitive(t, "opmath") : NULL;
  const char *ps = p ? json_str(p, "schema") : NULL;
  const char *ts = t ? json_str(t, "schema") : NULL;
  const char *pk = opmath ? json_str(opmath, "kind") : NULL;
  if (!p || !t)
    why = "the truth plan is not valid JSON";
  else if (!ps || !ts || strcmp(ps, ts) || strcmp(ts, "llm-fuse-reference/0"))
    why = "the truth plan is not an llm-fuse-reference/0 plan";
  else if (!json_str(p, "subgraph") || !json_str(t, "subgraph") ||
           strcmp(json_str(p, "subgraph"), json_str(t, "subgraph")))
    why = "the truth plan is another subgraph's";
  else if (!json_str(p, "signature") || !json_str(t, "signature") ||
           strcmp(json_str(p, "signature"), json_str(t, "signature")))
    why = "the truth plan's signature differs from the plan's";
  else if (!pk || strcmp(pk, judge->kind))
    why = "the truth plan is not the promotion the plan names";
  if (why) {
    judge->use_truth = false;
    snprintf(judge->note, sizeof(judge->note), "%s: not used", why);
  }
  cJSON_Delete(p);
  cJSON_Delete(t);
}

const char *lf_vjudge_name(const lf_vjudge_t *judge) {
  return judge->use_truth ? judge->kind : "upstream";
}
