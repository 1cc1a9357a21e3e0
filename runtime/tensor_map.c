/* tensor_map.c - encoding a kernel's tensor maps with the CUDA driver (see
 * tensor_map.h). */
#include "runtime/tensor_map.h"

#include <stdio.h>
#include <string.h>

uint32_t lf_tensor_map_dtype_bytes(const char *dtype) {
  static const struct {
    const char *name;
    uint32_t bytes;
  } table[] = {{"bf16", 2}, {"f16", 2}, {"f32", 4}, {"f64", 8},
               {"i8", 1},   {"i16", 2}, {"i32", 4}, {"i64", 8},
               {"tf32", 4}};
  for (size_t i = 0; dtype && i < sizeof(table) / sizeof(table[0]); ++i)
    if (!strcmp(dtype, table[i].name))
      return table[i].bytes;
  return 0;
}

/* In the order of the LF_RT_DTYPE_* codes. */
static const char *const rt_dtypes[] = {"f32", "f16", "bf16", "f64", "i8",
                                        "i16", "i32", "i64",  "tf32"};
enum { NUM_RT_DTYPES = sizeof(rt_dtypes) / sizeof(rt_dtypes[0]) };

int lf_tensor_map_rt_code(const char *dtype, size_t cap) {
  for (int i = 0; dtype && i < NUM_RT_DTYPES; ++i)
    if (!strncmp(dtype, rt_dtypes[i], cap))
      return i;
  return -1;
}

const char *lf_tensor_map_rt_name(int code) {
  return code >= 0 && code < NUM_RT_DTYPES ? rt_dtypes[code] : NULL;
}

static CUtensorMapDataType data_type(const char *dtype) {
  if (!strcmp(dtype, "bf16"))
    return CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  if (!strcmp(dtype, "f16"))
    return CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  if (!strcmp(dtype, "f32"))
    return CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
  if (!strcmp(dtype, "tf32")) /* f32 in memory, rounded to TF32 by TMA */
    return CU_TENSOR_MAP_DATA_TYPE_TFLOAT32;
  if (!strcmp(dtype, "f64"))
    return CU_TENSOR_MAP_DATA_TYPE_FLOAT64;
  if (!strcmp(dtype, "i8"))
    return CU_TENSOR_MAP_DATA_TYPE_UINT8;
  if (!strcmp(dtype, "i16"))
    return CU_TENSOR_MAP_DATA_TYPE_UINT16;
  if (!strcmp(dtype, "i32"))
    return CU_TENSOR_MAP_DATA_TYPE_INT32;
  return CU_TENSOR_MAP_DATA_TYPE_INT64;
}

void lf_tensor_map_describe(const lf_tensor_map_spec_t *spec, char *out,
                            size_t size) {
  char dims[128] = "", box[128] = "";
  size_t nd = 0, nb = 0;
  int rank = spec->rank < 0 ? 0 : spec->rank > 5 ? 5 : spec->rank;
  for (int d = 0; d < rank; ++d) {
    nd += (size_t)snprintf(dims + nd, sizeof(dims) - nd, "%s%llu",
                           d ? "x" : "", (unsigned long long)spec->dims[d]);
    nb += (size_t)snprintf(box + nb, sizeof(box) - nb, "%s%u", d ? "x" : "",
                           (unsigned)spec->box[d]);
  }
  char sw[16], l2[16];
  snprintf(sw, sizeof(sw), spec->swizzle_bytes ? "%db" : "none",
           spec->swizzle_bytes);
  snprintf(l2, sizeof(l2), spec->l2promo_bytes ? "%db" : "none",
           spec->l2promo_bytes);
  snprintf(out, size, "%.7s %s box %s swizzle %s l2promo %s oob %s",
           spec->dtype, dims, box, sw, l2, spec->oob_nan ? "nan" : "zero");
}

#define BAD(...) LF_STATUS(LF_STATUS_INVALID_ARGUMENT, __VA_ARGS__)

lf_status_t lf_tensor_map_args(const lf_tensor_map_spec_t *spec,
                               lf_tensor_map_args_t *out) {
  memset(out, 0, sizeof(*out));
  char dtype[sizeof(spec->dtype) + 1];
  memcpy(dtype, spec->dtype, sizeof(spec->dtype));
  dtype[sizeof(spec->dtype)] = '\0';
  int r = spec->rank;
  if (r < 1 || r > 5)
    return BAD("tensor map of parameter %d: rank %d (TMA takes 1 to 5)",
               spec->param, r);
  uint32_t es = lf_tensor_map_dtype_bytes(dtype);
  if (!es)
    return BAD("tensor map of parameter %d: element type '%s' (tensor maps "
               "take bf16, f16, f32, f64, i8, i16, i32, i64)",
               spec->param, dtype);
  out->dtype = data_type(dtype);
  out->element_bytes = es;
  out->rank = (cuuint32_t)r;
  out->interleave = CU_TENSOR_MAP_INTERLEAVE_NONE;
  /* Row-major in the spec, innermost first for the driver. */
  for (int k = 0; k < r; ++k) {
    uint64_t dim = spec->dims[r - 1 - k];
    uint32_t box = spec->box[r - 1 - k];
    if (dim == 0 || dim >= (1ull << 32))
      return BAD("tensor map of parameter %d: dimension %d is %llu (TMA "
                 "takes 1 to 2^32-1)",
                 spec->param, r - 1 - k, (unsigned long long)dim);
    if (box == 0 || box > 256 || box > dim)
      return BAD("tensor map of parameter %d: box dimension %d is %u (TMA "
                 "takes 1 to 256, at most the tensor's %llu)",
                 spec->param, r - 1 - k, box, (unsigned long long)dim);
    out->dims[k] = dim;
    out->box[k] = box;
    out->element_strides[k] = 1;
  }
  uint64_t stride = es;
  for (int k = 1; k < r; ++k) {
    stride *= out->dims[k - 1];
    if (stride % 16 || stride >= (1ull << 40))
      return BAD("tensor map of parameter %d: the byte stride of dimension "
                 "%d is %llu (TMA needs a multiple of 16 under 2^40)",
                 spec->param, r - 1 - k, (unsigned long long)stride);
    out->strides[k - 1] = stride;
  }
  uint64_t inner = (uint64_t)out->box[0] * es;
  if (inner % 16)
    return BAD("tensor map of parameter %d: the box's inner extent is %llu "
               "bytes (TMA needs a multiple of 16)",
               spec->param, (unsigned long long)inner);
  switch (spec->swizzle_bytes) {
  case 0:
    out->swizzle = CU_TENSOR_MAP_SWIZZLE_NONE;
    break;
  case 32:
    out->swizzle = CU_TENSOR_MAP_SWIZZLE_32B;
    break;
  case 64:
    out->swizzle = CU_TENSOR_MAP_SWIZZLE_64B;
    break;
  case 128:
    out->swizzle = CU_TENSOR_MAP_SWIZZLE_128B;
    break;
  default:
    return BAD("tensor map of parameter %d: swizzle of %d bytes (none, 32, "
               "64 or 128)",
               spec->param, spec->swizzle_bytes);
  }
  if (spec->swizzle_bytes && inner > (uint64_t)spec->swizzle_bytes)
    return BAD("tensor map of parameter %d: the box's inner extent (%llu "
               "bytes) exceeds the %d-byte swizzle span",
               spec->param, (unsigned long long)inner, spec->swizzle_bytes);
  switch (spec->l2promo_bytes) {
  case 0:
    out->l2_promotion = CU_TENSOR_MAP_L2_PROMOTION_NONE;
    break;
  case 64:
    out->l2_promotion = CU_TENSOR_MAP_L2_PROMOTION_L2_64B;
    break;
  case 128:
    out->l2_promotion = CU_TENSOR_MAP_L2_PROMOTION_L2_128B;
    break;
  case 256:
    out->l2_promotion = CU_TENSOR_MAP_L2_PROMOTION_L2_256B;
    break;
  default:
    return BAD("tensor map of parameter %d: L2 promotion of %d bytes (none, "
               "64, 128 or 256)",
               spec->param, spec->l2promo_bytes);
  }
  if (spec->oob_nan && dtype[0] != 'f' && strcmp(dtype, "bf16") &&
      strcmp(dtype, "tf32"))
    return BAD("tensor map of parameter %d: NaN out-of-bounds fill needs a "
               "floating-point element type, not %s",
               spec->param, dtype);
  out->oob_fill = spec->oob_nan
                      ? CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA
                      : CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE;
  return LF_OK;
}

lf_status_t lf_tensor_map_encode(const lf_cuda_driver_t *driver,
                                 const lf_tensor_map_spec_t *spec,
                                 CUdeviceptr base, void *out_map) {
  memset(out_map, 0, LF_TENSOR_MAP_BYTES);
  lf_tensor_map_args_t a;
  LF_RETURN_IF_ERROR(lf_tensor_map_args(spec, &a));
  if (base % 16)
    return BAD("tensor map of parameter %d: the buffer's address 0x%llx is "
               "not 16-byte aligned",
               spec->param, (unsigned long long)base);
  /* The driver writes into an aligned map of its own type. */
  CUtensorMap map;
  memset(&map, 0, sizeof(map));
  lf_status_t s = lf_cuda_result_to_status(
      driver,
      driver->cuTensorMapEncodeTiled(
          &map, a.dtype, a.rank, (void *)(uintptr_t)base, a.dims, a.strides,
          a.box, a.element_strides, a.interleave, a.swizzle, a.l2_promotion,
          a.oob_fill),
      "cuTensorMapEncodeTiled", __FILE__, __LINE__);
  if (s) {
    char what[256];
    lf_tensor_map_describe(spec, what, sizeof(what));
    return lf_status_annotate(s, "encoding the tensor map of parameter %d "
                                 "(%s)",
                              spec->param, what);
  }
  _Static_assert(sizeof(CUtensorMap) == LF_TENSOR_MAP_BYTES,
                 "CUtensorMap is 128 bytes");
  memcpy(out_map, &map, LF_TENSOR_MAP_BYTES);
  return LF_OK;
}
