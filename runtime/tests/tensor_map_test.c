/* tensor_map_test.c - the tensor-map encoder (runtime/tensor_map.c): the
 * arguments it derives from a spec (reversed to innermost first, byte
 * strides, swizzle and L2 enums), the rules it enforces, and what reaches
 * cuTensorMapEncodeTiled of the fake driver (runtime/tests/fake_libcuda.c),
 * which records its last call. */
#include "runtime/tensor_map.h"
#include "runtime/mgpu/llm_fuse_rt.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "base/testing.h"

/* The fake's record of its last cuTensorMapEncodeTiled call. */
typedef struct fake_tmap_call_s {
  int calls;
  int dtype;
  unsigned rank;
  unsigned long long address;
  unsigned long long dims[5], strides[4];
  unsigned box[5], element_strides[5];
  int interleave, swizzle, l2, oob;
} fake_tmap_call_t;

static fake_tmap_call_t last_call(void) {
  fake_tmap_call_t c;
  memset(&c, 0xff, sizeof(c));
  void *h = dlopen(FAKE_LIBCUDA, RTLD_NOW | RTLD_NOLOAD);
  void (*f)(fake_tmap_call_t *) =
      h ? (void (*)(fake_tmap_call_t *))dlsym(h, "fake_tensor_map_last") : NULL;
  if (f)
    f(&c);
  if (h)
    dlclose(h);
  return c;
}

static lf_tensor_map_spec_t spec2(const char *dt, uint64_t d0, uint64_t d1,
                                  uint32_t b0, uint32_t b1, int swizzle) {
  lf_tensor_map_spec_t s;
  memset(&s, 0, sizeof(s));
  snprintf(s.dtype, sizeof(s.dtype), "%s", dt);
  s.rank = 2;
  s.dims[0] = d0, s.dims[1] = d1;
  s.box[0] = b0, s.box[1] = b1;
  s.swizzle_bytes = swizzle;
  return s;
}

LF_TEST(args_are_innermost_first_with_byte_strides) {
  /* bf16 rows of 512, 256 rows; a box of 32 rows x 64 columns. */
  lf_tensor_map_spec_t s = spec2("bf16", 256, 512, 32, 64, 128);
  s.l2promo_bytes = 256;
  lf_tensor_map_args_t a;
  lf_status_t st = lf_tensor_map_args(&s, &a);
  LF_EXPECT(st == LF_OK);
  LF_EXPECT(a.dtype == CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 && a.rank == 2);
  LF_EXPECT(a.dims[0] == 512 && a.dims[1] == 256);
  LF_EXPECT(a.strides[0] == 1024); /* 512 bf16 */
  LF_EXPECT(a.box[0] == 64 && a.box[1] == 32);
  LF_EXPECT(a.element_strides[0] == 1 && a.element_strides[1] == 1);
  LF_EXPECT(a.interleave == CU_TENSOR_MAP_INTERLEAVE_NONE);
  LF_EXPECT(a.swizzle == CU_TENSOR_MAP_SWIZZLE_128B);
  LF_EXPECT(a.l2_promotion == CU_TENSOR_MAP_L2_PROMOTION_L2_256B);
  LF_EXPECT(a.oob_fill == CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  lf_status_free(st);

  /* rank 3, f32 [4][8][16], box [1][8][16], 64-byte swizzle, NaN fill */
  lf_tensor_map_spec_t t;
  memset(&t, 0, sizeof(t));
  snprintf(t.dtype, sizeof(t.dtype), "f32");
  t.rank = 3;
  t.dims[0] = 4, t.dims[1] = 8, t.dims[2] = 16;
  t.box[0] = 1, t.box[1] = 8, t.box[2] = 16;
  t.swizzle_bytes = 64;
  t.oob_nan = true;
  st = lf_tensor_map_args(&t, &a);
  LF_EXPECT(st == LF_OK);
  LF_EXPECT(a.dtype == CU_TENSOR_MAP_DATA_TYPE_FLOAT32 && a.rank == 3);
  LF_EXPECT(a.dims[0] == 16 && a.dims[1] == 8 && a.dims[2] == 4);
  LF_EXPECT(a.strides[0] == 64 && a.strides[1] == 512);
  LF_EXPECT(a.box[0] == 16 && a.box[1] == 8 && a.box[2] == 1);
  LF_EXPECT(a.swizzle == CU_TENSOR_MAP_SWIZZLE_64B);
  LF_EXPECT(a.oob_fill == CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA);
  lf_status_free(st);

  /* "tf32": an f32 buffer the TMA unit rounds to TF32 as it loads, 4-byte
   * elements, encoded as TFLOAT32 */
  lf_tensor_map_spec_t u = spec2("tf32", 256, 768, 128, 32, 128);
  st = lf_tensor_map_args(&u, &a);
  LF_EXPECT(st == LF_OK);
  LF_EXPECT(a.dtype == CU_TENSOR_MAP_DATA_TYPE_TFLOAT32);
  LF_EXPECT(a.strides[0] == 768 * 4 && a.box[0] == 32 && a.box[1] == 128);
  lf_status_free(st);
}

/* The one table of libllm_fuse_rt's element type codes (LF_RT_DTYPE_*),
 * which the swap emits and the runtime reads. */
LF_TEST(rt_dtype_codes_round_trip) {
  LF_EXPECT(lf_tensor_map_rt_code("f32", 8) == LF_RT_DTYPE_F32);
  LF_EXPECT(lf_tensor_map_rt_code("bf16", 8) == LF_RT_DTYPE_BF16);
  LF_EXPECT(lf_tensor_map_rt_code("i64", 8) == LF_RT_DTYPE_I64);
  LF_EXPECT(lf_tensor_map_rt_code("tf32", 8) == LF_RT_DTYPE_TF32);
  LF_EXPECT(lf_tensor_map_rt_code("f8", 8) == -1);
  for (int c = LF_RT_DTYPE_F32; c <= LF_RT_DTYPE_TF32; ++c)
    LF_EXPECT(lf_tensor_map_rt_code(lf_tensor_map_rt_name(c), 8) == c);
  LF_EXPECT(lf_tensor_map_rt_name(-1) == NULL &&
            lf_tensor_map_rt_name(LF_RT_DTYPE_TF32 + 1) == NULL);
}

static void expect_bad(lf_tensor_map_spec_t s, const char *words) {
  lf_tensor_map_args_t a;
  lf_status_t st = lf_tensor_map_args(&s, &a);
  LF_EXPECT(lf_status_code(st) == LF_STATUS_INVALID_ARGUMENT);
  LF_EXPECT(st && strstr(lf_status_message(st), words) != NULL);
  if (st && !strstr(lf_status_message(st), words))
    fprintf(stderr, "  got: %s\n", lf_status_message(st));
  lf_status_free(st);
}

LF_TEST(specs_tma_refuses_are_named) {
  /* 4 bf16 = 8 bytes: not a multiple of 16 */
  expect_bad(spec2("bf16", 64, 64, 16, 4, 0), "inner extent is 8 bytes");
  /* 64 bytes of box row under a 32-byte swizzle */
  expect_bad(spec2("bf16", 64, 64, 16, 32, 32), "exceeds the 32-byte swizzle");
  expect_bad(spec2("bf16", 64, 64, 128, 64, 0), "box dimension 0 is 128");
  expect_bad(spec2("bf16", 512, 512, 300, 64, 0), "box dimension 0 is 300");
  expect_bad(spec2("f32", 3, 5, 1, 4, 0), "byte stride of dimension 0 is 20");
  expect_bad(spec2("f8", 64, 64, 16, 16, 0), "element type 'f8'");
  expect_bad(spec2("bf16", 64, 64, 16, 64, 96), "swizzle of 96 bytes");
  lf_tensor_map_spec_t s = spec2("i32", 64, 64, 16, 16, 0);
  s.oob_nan = true;
  expect_bad(s, "NaN out-of-bounds fill needs a floating-point");
  s = spec2("bf16", 64, 64, 16, 64, 0);
  s.rank = 6;
  expect_bad(s, "rank 6");
  s = spec2("bf16", 64, 64, 16, 64, 0);
  s.l2promo_bytes = 32;
  expect_bad(s, "L2 promotion of 32 bytes");
}

LF_TEST(encode_passes_the_args_and_the_address_to_the_driver) {
  lf_cuda_driver_t *d = NULL;
  lf_status_t st = lf_cuda_driver_load(&d);
  LF_EXPECT(st == LF_OK && d);
  if (!d) {
    lf_status_free(st);
    return;
  }
  lf_tensor_map_spec_t s = spec2("f16", 128, 256, 64, 64, 128);
  s.l2promo_bytes = 128;
  unsigned char map[LF_TENSOR_MAP_BYTES + 1];
  memset(map, 0xEE, sizeof(map));
  CUdeviceptr base = 0x7f0000100000ull;
  st = lf_tensor_map_encode(d, &s, base, map + 1); /* any alignment */
  LF_EXPECT(st == LF_OK);
  lf_status_free(st);
  fake_tmap_call_t c = last_call();
  LF_EXPECT(c.calls == 1);
  LF_EXPECT(c.address == base);
  LF_EXPECT(c.dtype == CU_TENSOR_MAP_DATA_TYPE_FLOAT16 && c.rank == 2);
  LF_EXPECT(c.dims[0] == 256 && c.dims[1] == 128);
  LF_EXPECT(c.strides[0] == 512);
  LF_EXPECT(c.box[0] == 64 && c.box[1] == 64);
  LF_EXPECT(c.element_strides[0] == 1 && c.element_strides[1] == 1);
  LF_EXPECT(c.interleave == 0 && c.swizzle == CU_TENSOR_MAP_SWIZZLE_128B);
  LF_EXPECT(c.l2 == CU_TENSOR_MAP_L2_PROMOTION_L2_128B && c.oob == 0);
  /* The 128 bytes are the driver's map (the fake writes the address, then
   * "FAKETMAP"). */
  unsigned long long q0;
  memcpy(&q0, map + 1, 8);
  LF_EXPECT(q0 == base && !memcmp(map + 9, "FAKETMAP", 8));
  LF_EXPECT(map[0] == 0xEE); /* nothing written before the map */

  /* A misaligned buffer: refused before the driver, the map zeroed. */
  st = lf_tensor_map_encode(d, &s, base + 8, map + 1);
  LF_EXPECT(lf_status_code(st) == LF_STATUS_INVALID_ARGUMENT);
  LF_EXPECT(st && strstr(lf_status_message(st), "not 16-byte aligned"));
  lf_status_free(st);
  LF_EXPECT(last_call().calls == 1);
  static const unsigned char zero[LF_TENSOR_MAP_BYTES];
  LF_EXPECT(!memcmp(map + 1, zero, sizeof(zero)));

  /* The driver's refusal: its error, named with the map. */
  setenv("FAKE_CUDA_TMAP_ERROR", "1", 1);
  memset(map, 0xEE, sizeof(map));
  st = lf_tensor_map_encode(d, &s, base, map + 1);
  unsetenv("FAKE_CUDA_TMAP_ERROR");
  LF_EXPECT(lf_status_code(st) == LF_STATUS_INTERNAL);
  LF_EXPECT(st && strstr(lf_status_message(st), "cuTensorMapEncodeTiled"));
  LF_EXPECT(st && strstr(lf_status_message(st),
                         "f16 128x256 box 64x64 swizzle 128b l2promo 128b"));
  lf_status_free(st);
  LF_EXPECT(!memcmp(map + 1, zero, sizeof(zero)));
  lf_cuda_driver_unload(d);
}

int main(void) {
  setenv("LLM_FUSE_LIBCUDA", FAKE_LIBCUDA, 1);
  setenv("FAKE_CUDA_DEVICES", "1", 1);
  /* Keep the fake loaded across driver loads, so its record persists. */
  void *keep = dlopen(FAKE_LIBCUDA, RTLD_NOW);
  LF_RUN(args_are_innermost_first_with_byte_strides);
  LF_RUN(specs_tma_refuses_are_named);
  LF_RUN(rt_dtype_codes_round_trip);
  LF_RUN(encode_passes_the_args_and_the_address_to_the_driver);
  if (keep)
    dlclose(keep);
  return lf_test_finish();
}
