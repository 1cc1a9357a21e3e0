// tma_tf32_probe.cu - what a TMA tensor map of data type TFLOAT32 does to
// the f32 values it loads: for each element of a 32 x 32 box of random f32
// bits loaded through a CU_TENSOR_MAP_DATA_TYPE_TFLOAT32 map (and through a
// FLOAT32 map as a control), compare the shared-memory copy with the input:
// unchanged, round to nearest (ties away or even), or truncated to TF32's
// 10 mantissa bits. Decides whether TMA can replace the in-place cvt.rna
// pass of gemm_wgmma_tma.py's TF32 mode (bench/NOTES.md, session 24).
//   nvcc -arch=sm_90a -o probe tma_tf32_probe.cu -lcuda && ./probe
#include <cuda.h>
#include <cuda_runtime.h>
#include <cstdint>
#include <cstdio>
#include <cstring>

__global__ void load_box(const __grid_constant__ CUtensorMap map, float *out) {
  __shared__ alignas(128) float tile[32 * 32];
  __shared__ alignas(8) uint64_t bar;
  uint32_t sbar = (uint32_t)__cvta_generic_to_shared(&bar);
  uint32_t stile = (uint32_t)__cvta_generic_to_shared(tile);
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared.b64 [%0], 1;" ::"r"(sbar));
    asm volatile("fence.proxy.async.shared::cta;");
    asm volatile("mbarrier.arrive.expect_tx.shared.b64 _, [%0], %1;" ::"r"(sbar), "r"(32 * 32 * 4));
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];" ::"r"(
            stile),
        "l"(&map), "r"(0), "r"(0), "r"(sbar)
        : "memory");
  }
  __syncthreads();
  asm volatile(
      "{\n .reg .pred p;\n W: mbarrier.try_wait.parity.shared.b64 p, [%0], 0;\n @!p bra W;\n}" ::"r"(sbar));
  for (int i = threadIdx.x; i < 32 * 32; i += blockDim.x) out[i] = tile[i];
}

static uint32_t bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }

int main() {
  cuInit(0);
  cudaFree(0);
  typedef CUresult (*encode_t)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *, const cuuint64_t *,
                               const cuuint64_t *, const cuuint32_t *, const cuuint32_t *, CUtensorMapInterleave,
                               CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
  const int n = 32 * 32;
  float h[n];
  uint64_t s = 0x9E3779B97F4A7C15ull;
  for (int i = 0; i < n; ++i) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    uint32_t u = (uint32_t)(s >> 32);
    u = (u & 0x807FFFFFu) | (0x3F000000u + ((u >> 8) & 0x00800000u));   // |x| in [0.5, 2), random low bits
    if (i < 8) u = (u & ~0x1FFFu) | 0x1000u;                           // exact ties
    memcpy(&h[i], &u, 4);
  }
  float *d_in, *d_out;
  cudaMalloc(&d_in, n * 4);
  cudaMalloc(&d_out, n * 4);
  cudaMemcpy(d_in, h, n * 4, cudaMemcpyHostToDevice);
  const char *names[] = {"FLOAT32", "TFLOAT32", "TFLOAT32_FTZ"};
  CUtensorMapDataType types[] = {CU_TENSOR_MAP_DATA_TYPE_FLOAT32, CU_TENSOR_MAP_DATA_TYPE_TFLOAT32,
                                 CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ};
  for (int t = 0; t < 3; ++t) {
    CUtensorMap map;
    cuuint64_t dims[2] = {32, 32}, strides[1] = {32 * 4};
    cuuint32_t box[2] = {32, 32}, es[2] = {1, 1};
    CUresult r = cuTensorMapEncodeTiled(&map, types[t], 2, d_in, dims, strides, box, es,
                                        CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                                        CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) { printf("%-13s encode failed: %d\n", names[t], (int)r); continue; }
    cudaMemset(d_out, 0, n * 4);
    load_box<<<1, 128>>>(map, d_out);
    cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) { printf("%-13s launch failed: %s\n", names[t], cudaGetErrorString(e)); return 1; }
    float o[n];
    cudaMemcpy(o, d_out, n * 4, cudaMemcpyDeviceToHost);
    // non-exclusive: an element can equal several of these
    int same = 0, tr = 0, ra = 0, re = 0, none = 0, ties_ra = 0, ties_re = 0;
    for (int i = 0; i < n; ++i) {
      uint32_t x = bits(h[i]), y = bits(o[i]);
      uint32_t vt = x & ~0x1FFFu, va = (x + 0x1000u) & ~0x1FFFu;
      uint32_t ve = (x + 0x0FFFu + ((x >> 13) & 1)) & ~0x1FFFu;
      same += y == x;
      tr += y == vt;
      ra += y == va;
      re += y == ve;
      none += y != x && y != vt && y != va && y != ve;
      if (i < 8) { ties_ra += y == va; ties_re += y == ve; }
    }
    printf("%-13s of %d elements: unchanged %d, truncated %d, nearest-ties-away %d, nearest-even %d, "
           "none of these %d; of 8 exact ties: away %d, even %d\n", names[t], n, same, tr, ra, re, none,
           ties_ra, ties_re);
  }
  return 0;
}
