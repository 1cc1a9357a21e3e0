/* mgpu_cache_test.c - the runtime library's buffer cache against the fake
 * driver (runtime/tests/fake_libcuda.c): a freed buffer comes back for the
 * same size, not for another size, and lf_rt_free frees for real. */
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

int main(void) {
  setenv("LLM_FUSE_LIBCUDA", FAKE_LIBCUDA, 1);
  LF_RUN(freed_buffers_come_back_for_the_same_size);
  LF_RUN(lf_rt_free_frees_for_real);
  return lf_test_finish();
}
