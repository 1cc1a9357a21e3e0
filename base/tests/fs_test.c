/* fs_test.c - unit tests for base/fs: atomic writes and capped reads. */
#include "base/fs.h"

#include <dirent.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/testing.h"

static char dir[] = "/tmp/lf_fs_test.XXXXXX";

static int entries_in(const char *path) {
  int n = 0;
  DIR *d = opendir(path);
  for (struct dirent *e; d && (e = readdir(d));)
    n += e->d_name[0] != '.';
  if (d)
    closedir(d);
  return n;
}

LF_TEST(write_then_read_round_trips) {
  char path[256];
  snprintf(path, sizeof(path), "%s/a.json", dir);
  LF_EXPECT(lf_write_file_atomic(path, "{\"x\":1}\n", 8) == LF_OK);
  LF_EXPECT(lf_write_file_atomic(path, "{\"x\":2}\n", 8) == LF_OK); /* replace */
  lf_strbuf_t b;
  lf_strbuf_init(&b, 1024);
  LF_EXPECT(lf_read_file(path, &b) == LF_OK);
  LF_EXPECT_STREQ(lf_strbuf_cstr(&b), "{\"x\":2}\n");
  lf_strbuf_free(&b);
  struct stat st;
  LF_EXPECT(stat(path, &st) == 0 && (st.st_mode & 0777) == 0644);
  LF_EXPECT(entries_in(dir) == 1); /* no temporary left behind */
  unlink(path);
}

LF_TEST(write_into_missing_dir_fails_cleanly) {
  lf_status_t s = lf_write_file_atomic("/nonexistent-dir/x.json", "x", 1);
  LF_EXPECT(lf_status_code(s) == LF_STATUS_UNAVAILABLE);
  LF_EXPECT(strstr(lf_status_message(s), "/nonexistent-dir/x.json") != NULL);
  lf_status_free(s);
}

LF_TEST(read_missing_and_oversized) {
  lf_strbuf_t b;
  lf_strbuf_init(&b, 4);
  lf_status_t s = lf_read_file("/nonexistent-dir/nothing", &b);
  LF_EXPECT(lf_status_code(s) == LF_STATUS_NOT_FOUND);
  lf_status_free(s);
  char path[256];
  snprintf(path, sizeof(path), "%s/big", dir);
  LF_EXPECT(lf_write_file_atomic(path, "0123456789", 10) == LF_OK);
  s = lf_read_file(path, &b);
  LF_EXPECT(lf_status_code(s) == LF_STATUS_RESOURCE_EXHAUSTED);
  LF_EXPECT(strstr(lf_status_message(s), "big") != NULL);
  lf_status_free(s);
  lf_strbuf_free(&b);
  unlink(path);
}

int main(void) {
  if (!mkdtemp(dir)) {
    perror("mkdtemp");
    return 1;
  }
  LF_RUN(write_then_read_round_trips);
  LF_RUN(write_into_missing_dir_fails_cleanly);
  LF_RUN(read_missing_and_oversized);
  rmdir(dir);
  return lf_test_finish();
}
