/* mgpu_cache_test.c - the runtime library's buffer cache against the fake
 * driver (runtime/tests/fake_libcuda.c): a freed buffer comes back for the
 * same size, not for another size, and lf_rt_free frees for real; a
 * destroyed stream is handed out again. */
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/testing.h"
#include "runtime/mgpu/llm_fuse_rt.h"

void *mgpuMemAlloc(uint64_t bytes, void *stream, bool host_shared);
void mgpuMemFree(void *ptr, void *stream);
void *mgpuStreamCreate(void);
void mgpuStreamDestroy(void *stream);

LF_TEST(freed_buffers_come_back_for_the_same_size) {
  void *s = mgpuStreamCreate();
  LF_EXPECT(lf_rt_status() == 0);
  void *a = mgpuMemAlloc(4096, s, false);
  void *b = mgpuMemAlloc(4096, s, false);
  LF_EXPECT(a && b && a != b);
  mgpuMemFree(a, s);
  void *c = mgpuMemAlloc(8192, s, false); /* another size: a new buffer */
  LF_EXPECT(c && c != a);
  void *d = mgpuMemAlloc(4096, s, false); /* the cached one */
  LF_EXPECT(d == a);
  mgpuMemFree(b, s);
  mgpuMemFree(c, s);
  mgpuMemFree(d, s);
  /* Two buffers of 4096 are cached now: both come back, then a new one. */
  void *e = mgpuMemAlloc(4096, s, false), *f = mgpuMemAlloc(4096, s, false);
  LF_EXPECT((e == a || e == b) && (f == a || f == b) && e != f);
  void *g = mgpuMemAlloc(4096, s, false);
  LF_EXPECT(g && g != a && g != b);
  mgpuMemFree(e, s);
  mgpuMemFree(f, s);
  mgpuMemFree(g, s);
  mgpuStreamDestroy(s);
  LF_EXPECT(lf_rt_status() == 0);
}

LF_TEST(lf_rt_free_frees_for_real) {
  void *p = NULL;
  LF_EXPECT(lf_rt_malloc(&p, 1000) == 0 && p);
  LF_EXPECT(lf_rt_free(p) == 0);
  void *q = NULL;
  LF_EXPECT(lf_rt_malloc(&q, 1000) == 0 && q);
  LF_EXPECT(lf_rt_free(q) == 0);
}

/* The fake driver's stream counters (runtime/tests/fake_libcuda.c). */
static void stream_counts(int *made, int *destroyed) {
  void *h = dlopen(FAKE_LIBCUDA, RTLD_NOW | RTLD_NOLOAD);
  void (*f)(int *, int *) =
      h ? (void (*)(int *, int *))dlsym(h, "fake_stream_counts") : NULL;
  *made = *destroyed = -1;
  if (f)
    f(made, destroyed);
}

LF_TEST(destroyed_streams_are_reused) {
  void *s1 = mgpuStreamCreate();
  void *s2 = mgpuStreamCreate();
  LF_EXPECT(s1 && s2 && s1 != s2); /* live streams are distinct */
  int made0, destroyed0;
  stream_counts(&made0, &destroyed0);
  LF_EXPECT(made0 >= 2);
  mgpuStreamDestroy(s1);
  mgpuStreamDestroy(s2);
  /* A model's call per call: create, run, destroy; no driver call. */
  for (int i = 0; i < 100; ++i) {
    void *s = mgpuStreamCreate();
    LF_EXPECT(s == s1 || s == s2);
    mgpuStreamDestroy(s);
  }
  int made, destroyed;
  stream_counts(&made, &destroyed);
  LF_EXPECT(made == made0 && destroyed == destroyed0);
  /* More live streams than the pool holds: the extra ones are destroyed. */
  void *many[40];
  for (int i = 0; i < 40; ++i)
    many[i] = mgpuStreamCreate();
  for (int i = 0; i < 40; ++i)
    mgpuStreamDestroy(many[i]);
  stream_counts(&made, &destroyed);
  LF_EXPECT(made == made0 + 38 && destroyed > destroyed0);
  LF_EXPECT(lf_rt_status() == 0);
}

int main(void) {
  setenv("LLM_FUSE_LIBCUDA", FAKE_LIBCUDA, 1);
  LF_RUN(freed_buffers_come_back_for_the_same_size);
  LF_RUN(lf_rt_free_frees_for_real);
  LF_RUN(destroyed_streams_are_reused);
  return lf_test_finish();
}
