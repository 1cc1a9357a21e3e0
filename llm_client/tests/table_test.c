/* table_test.c - the pattern table: entry checks, lookup, instantiation,
 * refusals, gzip entries and reading entries on first use; and (printed,
 * not asserted) the open and lookup times of a table of 10,000 entries. */
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "base/fs.h"
#include "base/sha256.h"
#include "base/testing.h"
#include "llm_client/table.h"

static char root[256];

static int rm_one(const char *p, const struct stat *s, int f, struct FTW *w) {
  (void)s, (void)f, (void)w;
  return remove(p);
}

static const char *TEMPLATE =
    "gpu.module @kernels {\n"
    "  // llm-fuse.template-size S0\n"
    "  // llm-fuse.tune RPB = 4, 2\n"
    "  // llm-fuse.tune-require S0 % RPB == 0\n"
    "  gpu.func @k(%x: memref<{{S0}}x768xf32>) kernel attributes "
    "{known_block_size = array<i32: {{32 * RPB}}, 1, 1>, known_grid_size = "
    "array<i32: {{S0 / RPB}}, 1, 1>} {\n"
    "    gpu.return\n  }\n}\n";

/* The checksum as llm_client/table.c and kernels/table/build.py make it. */
static void checksum(const char *pattern, const char *sizes, const char *klass,
                     const char *text, char out[80]) {
  size_t n = strlen(pattern) + strlen(sizes) + strlen(klass) + strlen(text) +
             128;
  char *b = malloc(n);
  snprintf(b, n, "llm-fuse-table-entry/1\n%s\nsm_90\n%s\n%s\n%s", pattern,
           sizes, klass, text);
  char hex[LF_SHA256_HEX_SIZE];
  lf_status_free(lf_sha256_hex(b, strlen(b), hex));
  snprintf(out, 80, "sha256:%s", hex);
  free(b);
}

/* JSON-escapes `s` (quotes, backslashes, newlines). */
static char *esc(const char *s) {
  char *o = malloc(strlen(s) * 2 + 1), *p = o;
  for (; *s; ++s) {
    if (*s == '\n') {
      *p++ = '\\';
      *p++ = 'n';
    } else {
      if (*s == '"' || *s == '\\')
        *p++ = '\\';
      *p++ = *s;
    }
  }
  *p = 0;
  return o;
}

static void write_entry(const char *dir, const char *name, const char *pattern,
                        long s1, const char *text, bool break_sum) {
  char sizes[64], sum[80], path[512], s1json[32];
  /* s1 < 0: S1 free too */
  if (s1 < 0) {
    snprintf(sizes, sizeof(sizes), "S0=*,S1=*");
    snprintf(s1json, sizeof(s1json), "null");
  } else {
    snprintf(sizes, sizeof(sizes), "S0=*,S1=%ld", s1);
    snprintf(s1json, sizeof(s1json), "%ld", s1);
  }
  checksum(pattern, sizes, "reduction", text, sum);
  if (break_sum)
    sum[10] = sum[10] == '0' ? '1' : '0';
  snprintf(path, sizeof(path), "%s/v1", dir);
  mkdir(dir, 0755);
  mkdir(path, 0755);
  snprintf(path, sizeof(path), "%s/v1/%s", dir, name);
  FILE *f = fopen(path, "w");
  char *t = esc(text);
  fprintf(f,
          "{\"schema\": \"llm-fuse-table-entry/1\", \"pattern\": \"%s\", "
          "\"archs\": [\"sm_90\"], \"class\": \"reduction\", \"sizes\": "
          "{\"S0\": null, \"S1\": %s}, \"template\": \"%s\", \"source\": "
          "\"test\", \"checksum\": \"%s\"}\n",
          pattern, s1json, t, sum);
  free(t);
  fclose(f);
}

static const char *P1 =
    "cbc872d66f5ef5e5000000000000000000000000000000000000000000000000";

static bool count_one(const lf_table_info_t *info, void *user) {
  (void)info;
  if (user)
    ++*(int *)user;
  return true;
}

/* Rewrites <dir>/v1/<name> as <dir>/v1/<name>.gz with `keep` of its
 * compressed bytes (all when keep < 0) and `tail` bytes of junk after. */
static void gzip_entry(const char *dir, const char *name, long keep,
                       const char *tail) {
  char path[512], gz[520];
  snprintf(path, sizeof(path), "%s/v1/%s", dir, name);
  snprintf(gz, sizeof(gz), "%s.gz", path);
  lf_strbuf_t in;
  lf_strbuf_init(&in, 1 << 24);
  lf_status_free(lf_read_file(path, &in));
  uLong bound = compressBound(in.len) + 64;
  unsigned char *out = malloc(bound);
  z_stream z;
  memset(&z, 0, sizeof(z));
  deflateInit2(&z, 9, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
  z.next_in = (Bytef *)in.data;
  z.avail_in = (uInt)in.len;
  z.next_out = out;
  z.avail_out = (uInt)bound;
  deflate(&z, Z_FINISH);
  size_t n = bound - z.avail_out;
  deflateEnd(&z);
  FILE *f = fopen(gz, "wb");
  fwrite(out, 1, keep < 0 ? n : (size_t)keep, f);
  if (tail)
    fputs(tail, f);
  fclose(f);
  free(out);
  lf_strbuf_free(&in);
  remove(path);
}

/* An entry made for one size is tried before a general template that admits
 * the same sizes, whatever the file names' order. */
LF_TEST(most_specific_entry_first) {
  char dir[300];
  snprintf(dir, sizeof(dir), "%s/t_spec", root);
  write_entry(dir, "a_general.json", P1, -1, TEMPLATE, false);
  write_entry(dir, "z_specific.json", P1, 768, TEMPLATE, false);
  lf_table_t *t = NULL;
  LF_EXPECT(lf_table_open(dir, &t) == LF_OK);
  LF_EXPECT(lf_table_size(t) == 2);
  lf_table_match_t m;
  int64_t at768[2] = {2048, 768};
  LF_EXPECT(lf_table_instantiate(t, P1, "sm_90", at768, 2, &m) == LF_OK);
  LF_EXPECT(strstr(m.id, "z_specific.json") != NULL);
  lf_table_match_clear(&m);
  int64_t at1000[2] = {2048, 1000};
  LF_EXPECT(lf_table_instantiate(t, P1, "sm_90", at1000, 2, &m) == LF_OK);
  LF_EXPECT(strstr(m.id, "a_general.json") != NULL);
  lf_table_match_clear(&m);
  lf_table_close(t);
}

LF_TEST(instantiates_and_refuses_with_reasons) {
  char dir[300];
  snprintf(dir, sizeof(dir), "%s/t1", root);
  write_entry(dir, "a.json", P1, 768, TEMPLATE, false);
  write_entry(dir, "b.json", P1, 1024, TEMPLATE, true); /* corrupt */
  lf_table_t *t = NULL;
  LF_EXPECT(lf_table_open(dir, &t) == LF_OK);
  LF_EXPECT(lf_table_size(t) == 1);
  LF_EXPECT(lf_table_skipped(t) == 1);
  int64_t ok[2] = {2048, 768};
  lf_table_match_t m;
  lf_status_t s = lf_table_instantiate(t, P1, "sm_90", ok, 2, &m);
  LF_EXPECT(s == LF_OK);
  LF_EXPECT(m.text && strstr(m.text, "// llm-fuse.tune S0 = 2048\n"));
  LF_EXPECT(m.text && strstr(m.text, "{{S0 / RPB}}")); /* tune expands it */
  LF_EXPECT(m.text && !strstr(m.text, "template-size"));
  lf_table_match_clear(&m);
  /* Another row length: the fixed size refuses it. */
  int64_t other[2] = {2048, 1024};
  s = lf_table_instantiate(t, P1, "sm_90", other, 2, &m);
  LF_EXPECT(lf_status_code(s) == LF_STATUS_FAILED_PRECONDITION);
  LF_EXPECT(strstr(lf_status_message(s),
                   "S1 = 1024, the template is for S1 = 768") != NULL);
  lf_status_free(s);
  /* Odd rows: every RPB is refused; the requirement is named. */
  int64_t odd[2] = {1001, 768};
  s = lf_table_instantiate(t, P1, "sm_90", odd, 2, &m);
  LF_EXPECT(lf_status_code(s) == LF_STATUS_FAILED_PRECONDITION);
  LF_EXPECT(strstr(lf_status_message(s), "'S0 % RPB == 0' (with S0 = 1001") !=
            NULL);
  lf_status_free(s);
  /* Another arch, another pattern. */
  s = lf_table_instantiate(t, P1, "sm_80", ok, 2, &m);
  LF_EXPECT(lf_status_code(s) == LF_STATUS_NOT_FOUND);
  lf_status_free(s);
  char p2[65];
  memcpy(p2, P1, 65);
  p2[63] = '1';
  s = lf_table_instantiate(t, p2, "sm_90", ok, 2, &m);
  LF_EXPECT(lf_status_code(s) == LF_STATUS_NOT_FOUND);
  lf_status_free(s);
  /* Sizes out of range, a count mismatch. */
  int64_t huge[2] = {(int64_t)1 << 40, 768};
  s = lf_table_instantiate(t, P1, "sm_90", huge, 2, &m);
  LF_EXPECT(lf_status_code(s) == LF_STATUS_FAILED_PRECONDITION);
  lf_status_free(s);
  s = lf_table_instantiate(t, P1, "sm_90", ok, 1, &m);
  LF_EXPECT(lf_status_code(s) == LF_STATUS_FAILED_PRECONDITION);
  lf_status_free(s);
  lf_table_close(t);
}

LF_TEST(missing_folder_is_an_empty_table) {
  char dir[300];
  snprintf(dir, sizeof(dir), "%s/none", root);
  lf_table_t *t = NULL;
  LF_EXPECT(lf_table_open(dir, &t) == LF_OK);
  LF_EXPECT(lf_table_size(t) == 0);
  lf_table_close(t);
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* The shipped table's entries are gzip files: read as the plain ones, named
 * without ".gz" in ids; broken gzip is a corrupt entry, never used. */
LF_TEST(gzip_entries) {
  static const char *key =
      "9999000000000000000000000000000000000000000000000000000000000011";
  char dir[300];
  snprintf(dir, sizeof(dir), "%s/gz", root);
  write_entry(dir, "9999000000000000-good.json", key, 768, TEMPLATE, false);
  gzip_entry(dir, "9999000000000000-good.json", -1, NULL);
  write_entry(dir, "9999000000000000-cut.json", key, 768, TEMPLATE, false);
  gzip_entry(dir, "9999000000000000-cut.json", 40, NULL);
  write_entry(dir, "9999000000000000-junk.json", key, 768, TEMPLATE, false);
  gzip_entry(dir, "9999000000000000-junk.json", -1, "junk");
  char path[512];
  snprintf(path, sizeof(path), "%s/v1/9999000000000000-plain.json.gz", dir);
  lf_status_free(lf_write_file_atomic(path, "{\"schema\": 1}", 13));
  lf_table_t *t = NULL;
  LF_EXPECT(lf_table_open(dir, &t) == LF_OK);
  int64_t at[2] = {64, 768};
  lf_table_match_t m;
  LF_EXPECT(lf_table_instantiate(t, key, "sm_90", at, 2, &m) == LF_OK);
  LF_EXPECT(strcmp(m.id, "9999000000000000/9999000000000000-good.json") == 0);
  LF_EXPECT(m.text && strstr(m.text, "// llm-fuse.tune S0 = 64\n"));
  lf_table_match_clear(&m);
  LF_EXPECT(lf_table_size(t) == 1 && lf_table_skipped(t) == 3);
  lf_table_close(t);
  /* The reader names the defect. */
  lf_strbuf_t b;
  lf_strbuf_init(&b, 1 << 20);
  snprintf(path, sizeof(path), "%s/v1/9999000000000000-cut.json.gz", dir);
  lf_status_t s = lf_table_read_entry_file(path, &b);
  LF_EXPECT(lf_status_code(s) == LF_STATUS_DATA_LOSS &&
            strstr(lf_status_message(s), "not gzip data"));
  lf_status_free(s);
  lf_strbuf_reset(&b);
  snprintf(path, sizeof(path), "%s/v1/9999000000000000-junk.json.gz", dir);
  s = lf_table_read_entry_file(path, &b);
  LF_EXPECT(lf_status_code(s) == LF_STATUS_DATA_LOSS &&
            strstr(lf_status_message(s), "bytes after the end"));
  lf_status_free(s);
  /* A gzip bomb: inflates past the reader's cap. */
  lf_strbuf_reset(&b);
  lf_strbuf_t small;
  lf_strbuf_init(&small, 100);
  snprintf(path, sizeof(path), "%s/v1/9999000000000000-good.json.gz", dir);
  s = lf_table_read_entry_file(path, &small);
  LF_EXPECT(lf_status_code(s) == LF_STATUS_DATA_LOSS &&
            strstr(lf_status_message(s), "inflates to more than 100 bytes"));
  lf_status_free(s);
  lf_strbuf_free(&small);
  lf_strbuf_free(&b);
}

/* A file named <pattern[0:16]>-... is read on the first lookup of a key
 * with that prefix; its pattern must be the name's, or it is corrupt. */
LF_TEST(entries_read_on_first_use) {
  static const char *k1 =
      "9999000000000000000000000000000000000000000000000000000000000021";
  static const char *k2 =
      "8888000000000000000000000000000000000000000000000000000000000022";
  char dir[300];
  snprintf(dir, sizeof(dir), "%s/lazy", root);
  write_entry(dir, "9999000000000000-a.json", k1, 768, TEMPLATE, false);
  write_entry(dir, "9999000000000000-broken.json", k1, 512, TEMPLATE, true);
  write_entry(dir, "9999000000000000-liar.json", k2, 768, TEMPLATE, false);
  write_entry(dir, "8888000000000000-b.json", k2, 768, TEMPLATE, false);
  lf_table_t *t = NULL;
  LF_EXPECT(lf_table_open(dir, &t) == LF_OK);
  LF_EXPECT(lf_table_size(t) == 4 && lf_table_skipped(t) == 0);
  int64_t at[2] = {64, 768};
  lf_table_match_t m;
  /* k2: only 8888...-b is read (the liar names 9999 and is not). */
  LF_EXPECT(lf_table_instantiate(t, k2, "sm_90", at, 2, &m) == LF_OK);
  LF_EXPECT(strstr(m.id, "-b.json") != NULL);
  lf_table_match_clear(&m);
  LF_EXPECT(lf_table_size(t) == 4 && lf_table_skipped(t) == 0);
  /* k1: its three files are read; the broken one and the liar (whose
   * pattern is k2, not its name's) are skipped; k2 still has one entry. */
  LF_EXPECT(lf_table_instantiate(t, k1, "sm_90", at, 2, &m) == LF_OK);
  LF_EXPECT(strstr(m.id, "-a.json") != NULL);
  lf_table_match_clear(&m);
  LF_EXPECT(lf_table_size(t) == 2 && lf_table_skipped(t) == 2);
  lf_status_t s = lf_table_instantiate_nth(t, k2, "sm_90", NULL, at, 2, 1, &m);
  LF_EXPECT(lf_status_code(s) == LF_STATUS_OUT_OF_RANGE);
  lf_status_free(s);
  int n = 0;
  lf_table_foreach(t, count_one, &n);
  LF_EXPECT(n == 2);
  lf_table_close(t);
}

LF_TEST(ten_thousand_entries) {
  char dir[300];
  snprintf(dir, sizeof(dir), "%s/big", root);
  char pattern[65];
  for (int i = 0; i < 10000; ++i) {
    char seed[32], name[64];
    snprintf(seed, sizeof(seed), "p%d", i);
    lf_status_free(lf_sha256_hex(seed, strlen(seed), pattern));
    snprintf(name, sizeof(name), "%05d.json", i);
    write_entry(dir, name, pattern, 768, TEMPLATE, false);
  }
  double t0 = now_ms();
  lf_table_t *t = NULL;
  LF_EXPECT(lf_table_open(dir, &t) == LF_OK);
  double t1 = now_ms();
  LF_EXPECT(lf_table_size(t) == 10000);
  /* The last entry's pattern (the longest walk in its bucket). */
  int64_t sizes[2] = {4096, 768};
  lf_table_match_t m;
  double t2 = now_ms();
  int hits = 0;
  for (int k = 0; k < 100; ++k) {
    lf_status_t s = lf_table_instantiate(t, pattern, "sm_90", sizes, 2, &m);
    hits += s == LF_OK;
    lf_status_free(s);
    lf_table_match_clear(&m);
  }
  double t3 = now_ms();
  char miss[65];
  lf_status_free(lf_sha256_hex("absent", 6, miss));
  double t4 = now_ms();
  for (int k = 0; k < 1000; ++k)
    lf_status_free(lf_table_instantiate(t, miss, "sm_90", sizes, 2, &m));
  double t5 = now_ms();
  LF_EXPECT(hits == 100);
  printf("table of 10000 entries: loaded in %.0f ms; a hit (lookup and "
         "instantiation) %.3f ms; a miss %.4f ms\n",
         t1 - t0, (t3 - t2) / 100, (t5 - t4) / 1000);
  lf_table_close(t);
  /* The same entries named <pattern[0:16]>-...: read on first use. */
  snprintf(dir, sizeof(dir), "%s/big_lazy", root);
  for (int i = 0; i < 10000; ++i) {
    char seed[32], name[64];
    snprintf(seed, sizeof(seed), "p%d", i);
    lf_status_free(lf_sha256_hex(seed, strlen(seed), pattern));
    snprintf(name, sizeof(name), "%.16s-%05d.json", pattern, i);
    write_entry(dir, name, pattern, 768, TEMPLATE, false);
  }
  t0 = now_ms();
  LF_EXPECT(lf_table_open(dir, &t) == LF_OK);
  t1 = now_ms();
  LF_EXPECT(lf_table_instantiate(t, pattern, "sm_90", sizes, 2, &m) == LF_OK);
  lf_table_match_clear(&m);
  t2 = now_ms();
  hits = 0;
  for (int k = 0; k < 100; ++k) {
    lf_status_t s = lf_table_instantiate(t, pattern, "sm_90", sizes, 2, &m);
    hits += s == LF_OK;
    lf_status_free(s);
    lf_table_match_clear(&m);
  }
  t3 = now_ms();
  for (int k = 0; k < 1000; ++k)
    lf_status_free(lf_table_instantiate(t, miss, "sm_90", sizes, 2, &m));
  t4 = now_ms();
  LF_EXPECT(hits == 100);
  LF_EXPECT(lf_table_size(t) == 10000 && lf_table_skipped(t) == 0);
  printf("table of 10000 entries read on first use: opened in %.0f ms; the "
         "first hit (reads its file) %.3f ms; later hits %.3f ms; a miss "
         "%.4f ms\n",
         t1 - t0, t2 - t1, (t3 - t2) / 100, (t4 - t3) / 1000);
  lf_table_close(t);
}

LF_TEST(nearest_refusing_entry_for_an_adapt_request) {
  /* Three entries of one key, none for 1000 x 768: one fixed to 8192 x
   * 1024 (two sizes differ), one to 4096 x 768 (one differs, ratio 4.1),
   * one to 2048 x 768 (one differs, ratio 2.0: the nearest). */
  static const char *key =
      "9999000000000000000000000000000000000000000000000000000000000009";
  char dir[300];
  snprintf(dir, sizeof(dir), "%s/nearest", root);
  const int64_t f1[2] = {8192, 1024}, f2[2] = {4096, 768}, f3[2] = {2048, 768};
  const int64_t *fs[3] = {f1, f2, f3};
  const char *names[3] = {"far", "mid", "near"};
  for (int i = 0; i < 3; ++i) {
    lf_table_new_entry_t e = {key,      "sm_90", "reduction",
                              fs[i],    2,       "gpu.module @kernels {\n}\n",
                              names[i], names[i], NULL};
    lf_status_t s = lf_table_write_entry(dir, &e, NULL);
    LF_EXPECT(!s);
    lf_status_free(s);
  }
  lf_table_t *t = NULL;
  lf_status_free(lf_table_open(dir, &t));
  const int64_t sizes[2] = {1000, 768};
  lf_table_nearest_t n;
  lf_status_t s = lf_table_nearest(t, key, "sm_90", sizes, 2, NULL, &n);
  LF_EXPECT(!s);
  LF_EXPECT_STREQ(n.id, "9999000000000000/9999000000000000-near.json");
  LF_EXPECT_STREQ(n.source, "near");
  LF_EXPECT_STREQ(n.reason, "S0 = 1000, the template is for S0 = 2048");
  LF_EXPECT(n.num_sizes == 2 && n.fixed[0] == 2048 && n.fixed[1] == 768);
  LF_EXPECT(n.template_text && strstr(n.template_text, "gpu.module"));
  lf_table_nearest_clear(&n);
  lf_status_free(s);
  /* By id, an entry that admits the sizes: no reason. */
  const int64_t own[2] = {8192, 1024};
  s = lf_table_nearest(t, key, "sm_90", own, 2,
                       "9999000000000000/9999000000000000-far.json", &n);
  LF_EXPECT(!s && n.reason[0] == '\0' && strcmp(n.source, "far") == 0);
  lf_table_nearest_clear(&n);
  lf_status_free(s);
  /* Another arch, or every entry admitting the sizes: none. */
  s = lf_table_nearest(t, key, "sm_80", sizes, 2, NULL, &n);
  LF_EXPECT(lf_status_code(s) == LF_STATUS_NOT_FOUND && !n.template_text);
  lf_status_free(s);
  lf_table_close(t);
}

LF_TEST(nearest_entry_of_an_older_arch) {
  /* An sm_80 entry that admits 1000 x 768: the lookup for sm_90 does not
   * serve it, so it is the adapt request's start, with the arch as the
   * reason; an sm_90 entry that refuses the sizes comes before it; an
   * sm_90a entry never serves sm_90, nor an sm_90 one sm_80. */
  static const char *key =
      "9999000000000000000000000000000000000000000000000000000000000008";
  char dir[300], dir2[300];
  snprintf(dir, sizeof(dir), "%s/older", root);
  snprintf(dir2, sizeof(dir2), "%s/older2", root);
  const int64_t free_rows[2] = {-1, 768}, fixed[2] = {4096, 1024};
  lf_table_new_entry_t old = {key,     "sm_80",   "reduction",
                              free_rows, 2,       "gpu.module @kernels {\n}\n",
                              "old",     "old",   NULL};
  lf_table_new_entry_t a = {key,   "sm_90a", "reduction",
                            free_rows, 2,    "gpu.module @kernels {\n}\n",
                            "a",   "a",      NULL};
  lf_table_new_entry_t same = {key,   "sm_90", "reduction",
                               fixed, 2,       "gpu.module @kernels {\n}\n",
                               "same", "same", NULL};
  lf_status_t s = lf_table_write_entry(dir, &old, NULL);
  LF_EXPECT(!s);
  lf_status_free(s);
  s = lf_table_write_entry(dir, &a, NULL);
  LF_EXPECT(!s);
  lf_status_free(s);
  lf_table_t *t = NULL;
  lf_status_free(lf_table_open(dir, &t));
  const int64_t sizes[2] = {1000, 768};
  lf_table_match_t m;
  s = lf_table_instantiate(t, key, "sm_90", sizes, 2, &m);
  LF_EXPECT(lf_status_code(s) == LF_STATUS_NOT_FOUND);
  lf_status_free(s);
  lf_table_nearest_t n;
  s = lf_table_nearest(t, key, "sm_90", sizes, 2, NULL, &n);
  LF_EXPECT(!s);
  LF_EXPECT_STREQ(n.source, "old");
  LF_EXPECT_STREQ(n.reason, "it was verified for sm_80, not sm_90");
  lf_table_nearest_clear(&n);
  lf_status_free(s);
  s = lf_table_nearest(t, key, "sm_80", sizes, 2, NULL, &n);
  LF_EXPECT(lf_status_code(s) == LF_STATUS_NOT_FOUND);
  lf_status_free(s);
  lf_table_close(t);
  /* With an sm_90 entry of the key that refuses the sizes. */
  s = lf_table_write_entry(dir2, &old, NULL);
  lf_status_free(s);
  s = lf_table_write_entry(dir2, &same, NULL);
  lf_status_free(s);
  t = NULL;
  lf_status_free(lf_table_open(dir2, &t));
  s = lf_table_nearest(t, key, "sm_90", sizes, 2, NULL, &n);
  LF_EXPECT(!s);
  LF_EXPECT_STREQ(n.source, "same");
  lf_table_nearest_clear(&n);
  lf_status_free(s);
  lf_table_close(t);
}

LF_TEST(signed_entries_and_the_trust_rule) {
  /* An entry signed with k1, one unsigned: a ring of k1 loads both (and
   * the unsigned one is refused under require_signed); a ring of k2 refuses
   * the signed one as untrusted; an empty rule (lf_table_open) loads both. */
  static const char *key =
      "9999000000000000000000000000000000000000000000000000000000000007";
  char dir[300], k1[300], k2[300];
  snprintf(dir, sizeof(dir), "%s/signed", root);
  snprintf(k1, sizeof(k1), "%s/k1", root);
  snprintf(k2, sizeof(k2), "%s/k2", root);
  lf_strbuf_t pub1, pub2;
  lf_strbuf_init(&pub1, 4096);
  lf_strbuf_init(&pub2, 4096);
  lf_status_t s = lf_sign_keygen(k1, "k1", &pub1);
  LF_EXPECT(!s);
  lf_status_free(s);
  s = lf_sign_keygen(k2, "k2", &pub2);
  LF_EXPECT(!s);
  lf_status_free(s);
  lf_signer_t *signer = NULL;
  s = lf_signer_load(k1, &signer);
  LF_EXPECT(!s && signer);
  lf_status_free(s);
  const int64_t sizes[2] = {-1, 768};
  lf_table_new_entry_t e = {key,     "sm_90",  "reduction",
                            sizes,   2,        "gpu.module @kernels {\n}\n",
                            "test",  "signed", NULL};
  s = lf_table_write_entry_signed(dir, &e, signer, NULL);
  LF_EXPECT(!s);
  lf_status_free(s);
  e.name = "unsigned";
  s = lf_table_write_entry(dir, &e, NULL);
  LF_EXPECT(!s);
  lf_status_free(s);
  lf_keyring_t *ring1 = NULL, *ring2 = NULL;
  lf_status_free(lf_keyring_parse(pub1.data, pub1.len, "k1", &ring1));
  lf_status_free(lf_keyring_parse(pub2.data, pub2.len, "k2", &ring2));
  lf_table_t *t = NULL;
  /* The entries are read on first use: a lookup of their key reads them. */
  lf_table_match_t m;
  int64_t at[2] = {64, 768};
  lf_status_free(lf_table_open_trusted(dir, ring1, true, &t));
  LF_EXPECT(lf_table_size(t) == 2 && lf_table_skipped(t) == 0);
  LF_EXPECT(lf_table_instantiate(t, key, "sm_90", at, 2, &m) == LF_OK);
  LF_EXPECT(strstr(m.id, "-signed.json") != NULL);
  lf_table_match_clear(&m);
  LF_EXPECT(lf_table_size(t) == 1 && lf_table_skipped(t) == 1);
  lf_table_close(t);
  /* The others: lf_table_foreach reads every file. */
  lf_status_free(lf_table_open_trusted(dir, ring1, false, &t));
  lf_table_foreach(t, count_one, NULL);
  LF_EXPECT(lf_table_size(t) == 2 && lf_table_skipped(t) == 0);
  lf_table_close(t);
  lf_status_free(lf_table_open_trusted(dir, ring1, true, &t));
  lf_table_foreach(t, count_one, NULL);
  LF_EXPECT(lf_table_size(t) == 1 && lf_table_skipped(t) == 1);
  lf_table_close(t);
  lf_status_free(lf_table_open_trusted(dir, ring2, false, &t));
  lf_table_foreach(t, count_one, NULL);
  LF_EXPECT(lf_table_size(t) == 1 && lf_table_skipped(t) == 1);
  lf_table_close(t);
  lf_status_free(lf_table_open(dir, &t));
  lf_table_foreach(t, count_one, NULL);
  LF_EXPECT(lf_table_size(t) == 2 && lf_table_skipped(t) == 0);
  lf_table_close(t);
  lf_keyring_free(ring1);
  lf_keyring_free(ring2);
  lf_signer_free(signer);
  lf_strbuf_free(&pub1);
  lf_strbuf_free(&pub2);
}

/* When an entry's kernel fails, the acquire loop asks for the next entry
 * that admits the sizes (lf_table_instantiate_nth): in the order of the
 * first lookup (most specific, then file names; tf32 requests: the tf32
 * entries, then the exact ones), skipping refusing and corrupt entries. */
LF_TEST(nth_admitting_entry_after_a_failed_kernel) {
  char dir[300];
  snprintf(dir, sizeof(dir), "%s/t_nth", root);
  write_entry(dir, "a_general.json", P1, -1, TEMPLATE, false);
  write_entry(dir, "b_other.json", P1, 1024, TEMPLATE, false); /* refuses */
  write_entry(dir, "c_broken.json", P1, 768, TEMPLATE, true);  /* corrupt */
  write_entry(dir, "z_specific.json", P1, 768, TEMPLATE, false);
  const int64_t any[2] = {-1, -1};
  lf_table_new_entry_t tf = {P1,       "sm_90", "reduction",    any,   2,
                             TEMPLATE, "test",  "tf32_general", "tf32"};
  lf_status_t s = lf_table_write_entry(dir, &tf, NULL);
  LF_EXPECT(!s);
  lf_status_free(s);
  lf_table_t *t = NULL;
  LF_EXPECT(lf_table_open(dir, &t) == LF_OK);
  LF_EXPECT(lf_table_size(t) == 4 && lf_table_skipped(t) == 1);
  const int64_t at768[2] = {2048, 768};
  lf_table_match_t m;
  /* Exact: the specific entry, then the general one, then none. */
  s = lf_table_instantiate_nth(t, P1, "sm_90", NULL, at768, 2, 0, &m);
  LF_EXPECT(!s && strstr(m.id, "z_specific.json") && m.rank == 1);
  LF_EXPECT(m.text && strstr(m.text, "// llm-fuse.tune S0 = 2048"));
  lf_table_match_clear(&m);
  s = lf_table_instantiate_nth(t, P1, "sm_90", NULL, at768, 2, 1, &m);
  LF_EXPECT(!s && strstr(m.id, "a_general.json") && m.rank == 2);
  LF_EXPECT(m.precision[0] == '\0');
  lf_table_match_clear(&m);
  s = lf_table_instantiate_nth(t, P1, "sm_90", "", at768, 2, 2, &m);
  LF_EXPECT(lf_status_code(s) == LF_STATUS_OUT_OF_RANGE && !m.text);
  LF_EXPECT(s && strstr(lf_status_message(s),
                        "2 of the pattern table's 3 template(s) for this "
                        "pattern admit these sizes; none after the first 2"));
  lf_status_free(s);
  /* TF32: the tf32 entry, then the exact ones in the same order. */
  const char *want[3] = {"tf32_general.json", "z_specific.json",
                         "a_general.json"};
  for (size_t k = 0; k < 3; ++k) {
    s = lf_table_instantiate_nth(t, P1, "sm_90", "tf32", at768, 2, k, &m);
    LF_EXPECT(!s && strstr(m.id, want[k]) && m.rank == k + 1);
    LF_EXPECT(strcmp(m.precision, k == 0 ? "tf32" : "") == 0);
    lf_table_match_clear(&m);
    lf_status_free(s);
  }
  s = lf_table_instantiate_nth(t, P1, "sm_90", "tf32", at768, 2, 3, &m);
  LF_EXPECT(lf_status_code(s) == LF_STATUS_OUT_OF_RANGE);
  lf_status_free(s);
  /* Skip 0 is lf_table_instantiate_precision. */
  s = lf_table_instantiate_precision(t, P1, "sm_90", "tf32", at768, 2, &m);
  LF_EXPECT(!s && strstr(m.id, "tf32_general.json") && m.rank == 1);
  lf_table_match_clear(&m);
  /* At 1000 only the general entry admits the sizes. */
  const int64_t at1000[2] = {2048, 1000};
  s = lf_table_instantiate_nth(t, P1, "sm_90", NULL, at1000, 2, 0, &m);
  LF_EXPECT(!s && strstr(m.id, "a_general.json"));
  lf_table_match_clear(&m);
  s = lf_table_instantiate_nth(t, P1, "sm_90", NULL, at1000, 2, 1, &m);
  LF_EXPECT(lf_status_code(s) == LF_STATUS_OUT_OF_RANGE);
  lf_status_free(s);
  /* None admits an odd S0 (the requirement): the refusals, whatever the
   * skip; another pattern: NOT_FOUND. */
  const int64_t odd[2] = {2047, 768};
  for (size_t k = 0; k < 2; ++k) {
    s = lf_table_instantiate_nth(t, P1, "sm_90", NULL, odd, 2, k, &m);
    LF_EXPECT(lf_status_code(s) == LF_STATUS_FAILED_PRECONDITION);
    LF_EXPECT(s && strstr(lf_status_message(s), "S0 % RPB == 0"));
    lf_status_free(s);
  }
  static const char *p2 =
      "abcdef0000000000000000000000000000000000000000000000000000000000";
  s = lf_table_instantiate_nth(t, p2, "sm_90", NULL, at768, 2, 1, &m);
  LF_EXPECT(lf_status_code(s) == LF_STATUS_NOT_FOUND);
  lf_status_free(s);
  lf_table_close(t);
}

int main(void) {
  const char *tmp = getenv("TMPDIR");
  snprintf(root, sizeof(root), "%s/lf-table-test-XXXXXX",
           tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(root))
    return 1;
  LF_RUN(instantiates_and_refuses_with_reasons);
  LF_RUN(most_specific_entry_first);
  LF_RUN(nth_admitting_entry_after_a_failed_kernel);
  LF_RUN(missing_folder_is_an_empty_table);
  LF_RUN(nearest_refusing_entry_for_an_adapt_request);
  LF_RUN(nearest_entry_of_an_older_arch);
  LF_RUN(signed_entries_and_the_trust_rule);
  LF_RUN(gzip_entries);
  LF_RUN(entries_read_on_first_use);
  LF_RUN(ten_thousand_entries);
  int rc = lf_test_finish();
  nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
  return rc;
}
