/* driver.c - runs one entry point of a model compiled by llm-fuse-compile
 * on the GPU and compares its f32 outputs with a reference.
 *
 *   cc -I. -DENTRY=minigpt_block -DHEADER='"model.h"' driver.c model.o \
 *      libllm_fuse_rt.a -ldl -lpthread -o driver
 *   ./driver DIR [REPEATS]
 *
 * DIR holds in<i>.bin (raw inputs, in order) and ref<j>.bin (the reference
 * outputs, f32). Writes DIR/out<j>.bin. Prints, per output, the largest
 * and RMS errors and the verdict: |gpu - ref| <= ATOL * max|ref| + RTOL *
 * |ref| everywhere (the absolute part scales with the output, since f32
 * sums in another order differ by a few ulps of the largest partial
 * sums), then the mean time of REPEATS further calls. Exit
 * status 0 only when every output is within tolerance. Links against
 * libllm_fuse_rt alone: device memory comes from lf_rt_malloc.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include HEADER

/* Which rule decides PASS: 0 the strict one above, 1 the verifier's. */
#ifndef RULE
#define RULE 0
#endif

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define STR_(a) #a
#define STR(a) STR_(a)
#define NUM_INPUTS CAT(ENTRY, _num_inputs)
#define NUM_OUTPUTS CAT(ENTRY, _num_outputs)
#define ARG_BYTES CAT(ENTRY, _arg_bytes)
#define RUN_PACKED CAT(ENTRY, _run_packed)

#ifndef ATOL
#define ATOL 1e-5 /* times max|ref| */
#endif
#ifndef RTOL
#define RTOL 1e-3
#endif

static void *read_file(const char *path, size_t want) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "driver: cannot open %s\n", path);
    return NULL;
  }
  void *buf = malloc(want + 1);
  size_t got = buf ? fread(buf, 1, want + 1, f) : 0;
  fclose(f);
  if (got != want) {
    fprintf(stderr, "driver: %s has %zu bytes, the model wants %zu\n", path,
            got, want);
    free(buf);
    return NULL;
  }
  return buf;
}

/* scripts/cpu_equivalence.py's input_values(): an integer hash of
 * (argument, element index) giving multiples of 1/64 in [-1, 1]. Used when
 * DIR has no in<i>.bin, so a run needs no files at all. */
static float *make_input(size_t arg, size_t bytes) {
  size_t n = bytes / sizeof(float);
  float *v = malloc(bytes);
  for (size_t k = 0; v && k < n; ++k) {
    uint64_t h = ((uint64_t)k * 2654435761u + (arg + 1) * 0x9E3779B9u) &
                 0xFFFFFFFFu;
    h ^= h >> 15;
    h = (h * 2246822519u) & 0xFFFFFFFFu;
    h ^= h >> 13;
    h = (h * 3266489917u) & 0xFFFFFFFFu;
    h ^= h >> 16;
    v[k] = (float)((int)(h % 129) - 64) / 64.0f;
  }
  return v;
}

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int fail(const char *what) {
  fprintf(stderr, "driver: %s: %s\n", what,
          lf_rt_last_error() ? lf_rt_last_error() : "error");
  return 1;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s DIR [REPEATS]\n", argv[0]);
    return 2;
  }
  const char *dir = argv[1];
  int repeats = argc > 2 ? atoi(argv[2]) : 10;
  enum { N = NUM_INPUTS + NUM_OUTPUTS };
  void *dev[N] = {0};
  char path[4096];
  if (lf_rt_init())
    return fail("init");
  for (size_t i = 0; i < N; ++i) {
    if (lf_rt_malloc(&dev[i], ARG_BYTES(i)))
      return fail("lf_rt_malloc");
    if (i < NUM_INPUTS) {
      snprintf(path, sizeof(path), "%s/in%zu.bin", dir, i);
      void *host = access(path, F_OK) == 0 ? read_file(path, ARG_BYTES(i))
                                            : make_input(i, ARG_BYTES(i));
      if (!host)
        return 1;
      if (lf_rt_copy_to_device(dev[i], host, ARG_BYTES(i)))
        return fail("copy to device");
      free(host);
    }
  }
  double t0 = now_ms();
  if (RUN_PACKED(dev))
    return fail(STR(ENTRY));
  double first = now_ms() - t0;
  int ok = 1;
  for (size_t j = 0; j < NUM_OUTPUTS; ++j) {
    size_t bytes = ARG_BYTES(NUM_INPUTS + j), n = bytes / sizeof(float);
    float *got = malloc(bytes);
    if (!got || lf_rt_copy_to_host(got, dev[NUM_INPUTS + j], bytes))
      return fail("copy to host");
    snprintf(path, sizeof(path), "%s/out%zu.bin", dir, j);
    FILE *f = fopen(path, "wb");
    if (f) {
      fwrite(got, 1, bytes, f);
      fclose(f);
    }
    snprintf(path, sizeof(path), "%s/ref%zu.bin", dir, j);
    if (access(path, F_OK) != 0) {
      double sum = 0;
      for (size_t k = 0; k < n; ++k)
        sum += fabs(got[k]);
      printf("output %zu: %zu values, abs-sum %.6g; no reference in %s, not "
             "compared\n", j, n, sum, dir);
      free(got);
      continue;
    }
    float *ref = read_file(path, bytes);
    if (!ref)
      return 1;
    double max_abs = 0, max_ref = 0, sum = 0, err2 = 0, ref2 = 0, mean_ref = 0;
    size_t bad = 0, bad_verifier = 0, worst = 0;
    for (size_t k = 0; k < n; ++k) {
      if (fabs(ref[k]) > max_ref)
        max_ref = fabs(ref[k]);
      mean_ref += fabs(ref[k]) / (double)n;
    }
    double atol = ATOL * max_ref;
    /* The verifier's f32 rule (docs/verification.md): rtol 1e-3 and an
     * absolute part of rtol times the mean magnitude. */
    double v_atol = 1e-3 * mean_ref;
    for (size_t k = 0; k < n; ++k) {
      double d = fabs((double)got[k] - ref[k]);
      if (!(d <= atol + RTOL * fabs(ref[k])))
        ++bad;
      if (!(d <= v_atol + 1e-3 * fabs(ref[k])))
        ++bad_verifier;
      if (!(d <= max_abs))
        max_abs = d, worst = k;
      sum += fabs(got[k]);
      err2 += d * d;
      ref2 += (double)ref[k] * ref[k];
    }
    printf("output %zu: %zu values, abs-sum %.6g, max|ref| %.6g, max "
           "|gpu-ref| %.3g (at %zu: gpu %.9g ref %.9g), relative RMS error "
           "%.3g; outside %g*max|ref| + %g*|ref|: %zu; outside the "
           "verifier's f32 rule 1e-3*mean|ref| + 1e-3*|ref|: %zu -> %s\n",
           j, n, sum, max_ref, max_abs, worst, got[worst], ref[worst],
           ref2 > 0 ? sqrt(err2 / ref2) : 0.0, (double)ATOL, (double)RTOL, bad,
           bad_verifier,
           (RULE ? bad_verifier : bad) ? "MISMATCH" : "match");
    ok &= (RULE ? bad_verifier : bad) == 0;
    free(got);
    free(ref);
  }
  double t1 = now_ms();
  for (int r = 0; r < repeats; ++r)
    if (RUN_PACKED(dev))
      return fail(STR(ENTRY));
  double per = repeats ? (now_ms() - t1) / repeats : 0;
  printf("time: first call %.3f ms (module load is at program start), then "
         "%.3f ms per call over %d calls (host wall clock, synchronous)\n",
         first, per, repeats);
  for (size_t i = 0; i < N; ++i)
    lf_rt_free(dev[i]);
  printf("%s\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}
