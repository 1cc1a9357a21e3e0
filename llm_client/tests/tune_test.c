/* tune_test.c - unit tests for llm_client/tune: tuning declarations. */
#include "llm_client/tune.h"

#include <stdlib.h>

#include "base/testing.h"

/* Expands a C string; prints the message of an unexpected failure. */
static lf_tune_set_t *expand_ok(const char *text) {
  lf_tune_set_t *set = (lf_tune_set_t *)1;
  lf_status_t s = lf_tune_expand(text, strlen(text), &set);
  LF_EXPECT(s == LF_OK);
  if (s) {
    fprintf(stderr, "  status: %s\n", lf_status_message(s));
    LF_EXPECT(set == NULL);
    lf_status_free(s);
    return NULL;
  }
  LF_EXPECT(set != NULL);
  return set;
}

/* Expects INVALID_ARGUMENT with exactly `want` as the message. */
static void expect_error_n(const char *text, size_t len, const char *want) {
  lf_tune_set_t *set = (lf_tune_set_t *)1;
  lf_status_t s = lf_tune_expand(text, len, &set);
  LF_EXPECT(lf_status_code(s) == LF_STATUS_INVALID_ARGUMENT);
  LF_EXPECT_STREQ(lf_status_message(s), want);
  LF_EXPECT(set == NULL);
  lf_status_free(s);
}

static void expect_error(const char *text, const char *want) {
  expect_error_n(text, strlen(text), want);
}

static size_t count_lines(const char *s) {
  size_t n = 0;
  for (; *s; ++s)
    n += *s == '\n';
  return n;
}

#define HEAD "gpu.module @k {\n"
#define TAIL "}\n"

LF_TEST(no_declaration_is_one_identical_variant) {
  const char *text =
      HEAD "  gpu.func @f(%a: memref<4xf32>) kernel attributes "
           "{known_block_size = array<i32: 4, 1, 1>} {\n"
           "    // a comment, llm-fuse.tune in prose, {single} braces }}\n"
           "    // llm-fuse.tuned X = 3\n"
           "    // llm-fuse.tuned-require X > 1\n"
           "    gpu.return\r\n  }\n" TAIL "no final newline";
  lf_tune_set_t *set = expand_ok(text);
  if (!set)
    return;
  LF_EXPECT(!set->tuned);
  LF_EXPECT(set->knob_count == 0);
  LF_EXPECT(set->count == 1);
  LF_EXPECT(set->excluded == 0);
  LF_EXPECT_STREQ(set->variants[0].text, text);
  LF_EXPECT_STREQ(set->variants[0].label, "");
  lf_tune_set_destroy(set);

  /* Empty text, and NULL with length 0. */
  set = expand_ok("");
  if (set) {
    LF_EXPECT(set->count == 1 && !set->tuned);
    LF_EXPECT_STREQ(set->variants[0].text, "");
  }
  lf_tune_set_destroy(set);
  set = NULL;
  lf_status_t s = lf_tune_expand(NULL, 0, &set);
  LF_EXPECT(s == LF_OK && set && set->count == 1);
  if (set)
    LF_EXPECT_STREQ(set->variants[0].text, "");
  lf_tune_set_destroy(set);
  lf_status_free(s);

  /* Only `len` bytes are read. */
  set = NULL;
  s = lf_tune_expand("abc{{X}}", 3, &set);
  LF_EXPECT(s == LF_OK && set && set->count == 1);
  if (set)
    LF_EXPECT_STREQ(set->variants[0].text, "abc");
  lf_tune_set_destroy(set);
  lf_status_free(s);
}

LF_TEST(one_knob_three_values) {
  const char *text = HEAD "  // llm-fuse.tune BLOCK = 128, 256,512\n"
                          "  attributes {known_block_size = array<i32: "
                          "{{BLOCK}}, 1, 1>} {{ BLOCK }}{{BLOCK}}\n" TAIL;
  lf_tune_set_t *set = expand_ok(text);
  if (!set)
    return;
  LF_EXPECT(set->tuned);
  LF_EXPECT(set->knob_count == 1);
  LF_EXPECT_STREQ(set->knobs[0], "BLOCK");
  LF_EXPECT(set->count == 3);
  LF_EXPECT(set->excluded == 0);
  static const char *const want[] = {
      HEAD "  // llm-fuse.tuned BLOCK = 128\n"
           "  attributes {known_block_size = array<i32: 128, 1, 1>} "
           "128128\n" TAIL,
      HEAD "  // llm-fuse.tuned BLOCK = 256\n"
           "  attributes {known_block_size = array<i32: 256, 1, 1>} "
           "256256\n" TAIL,
      HEAD "  // llm-fuse.tuned BLOCK = 512\n"
           "  attributes {known_block_size = array<i32: 512, 1, 1>} "
           "512512\n" TAIL};
  static const char *const labels[] = {"BLOCK=128", "BLOCK=256", "BLOCK=512"};
  static const int values[] = {128, 256, 512};
  for (size_t i = 0; i < 3 && i < set->count; ++i) {
    LF_EXPECT_STREQ(set->variants[i].text, want[i]);
    LF_EXPECT_STREQ(set->variants[i].label, labels[i]);
    LF_EXPECT(set->variants[i].values[0] == values[i]);
  }
  lf_tune_set_destroy(set);
}

LF_TEST(two_knobs_product_order_and_labels) {
  /* Declarations may follow their use; the first declared knob varies
   * slowest; values keep their declared order (not sorted). */
  const char *text = "x = {{UNROLL}} y = {{BLOCK}}\n"
                     "\t//llm-fuse.tune BLOCK = 256, 64\n"
                     "// llm-fuse.tune UNROLL=4,1,-2\n";
  lf_tune_set_t *set = expand_ok(text);
  if (!set)
    return;
  LF_EXPECT(set->knob_count == 2);
  LF_EXPECT_STREQ(set->knobs[0], "BLOCK");
  LF_EXPECT_STREQ(set->knobs[1], "UNROLL");
  LF_EXPECT(set->count == 6);
  static const char *const labels[] = {
      "BLOCK=256 UNROLL=4", "BLOCK=256 UNROLL=1", "BLOCK=256 UNROLL=-2",
      "BLOCK=64 UNROLL=4",  "BLOCK=64 UNROLL=1",  "BLOCK=64 UNROLL=-2"};
  static const int values[][2] = {{256, 4}, {256, 1}, {256, -2},
                                  {64, 4},  {64, 1},  {64, -2}};
  for (size_t i = 0; i < 6 && i < set->count; ++i) {
    LF_EXPECT_STREQ(set->variants[i].label, labels[i]);
    LF_EXPECT(set->variants[i].values[0] == values[i][0]);
    LF_EXPECT(set->variants[i].values[1] == values[i][1]);
  }
  if (set->count == 6)
    LF_EXPECT_STREQ(set->variants[5].text, "x = -2 y = 64\n"
                                           "\t// llm-fuse.tuned BLOCK = 64\n"
                                           "// llm-fuse.tuned UNROLL = -2\n");
  lf_tune_set_destroy(set);
}

LF_TEST(requires_filter_variants) {
  const char *text = "// llm-fuse.tune BLOCK = 128, 256, 512, 1024\n"
                     "// llm-fuse.tune UNROLL = 1, 2, 4\n"
                     "  // llm-fuse.tune-require BLOCK * UNROLL <= 1024\n"
                     "// llm-fuse.tune-require UNROLL != 2 || BLOCK == 256\n"
                     "b={{BLOCK}} u={{UNROLL}}\n";
  lf_tune_set_t *set = expand_ok(text);
  if (!set)
    return;
  /* Kept: 128x1, 128x4, 256x1, 256x2, 256x4, 512x1, 1024x1. */
  static const char *const labels[] = {
      "BLOCK=128 UNROLL=1", "BLOCK=128 UNROLL=4", "BLOCK=256 UNROLL=1",
      "BLOCK=256 UNROLL=2", "BLOCK=256 UNROLL=4", "BLOCK=512 UNROLL=1",
      "BLOCK=1024 UNROLL=1"};
  LF_EXPECT(set->count == 7);
  LF_EXPECT(set->excluded == 5);
  for (size_t i = 0; i < 7 && i < set->count; ++i)
    LF_EXPECT_STREQ(set->variants[i].label, labels[i]);
  /* Requirement lines become comments too. */
  if (set->count)
    LF_EXPECT_STREQ(set->variants[0].text,
                    "// llm-fuse.tuned BLOCK = 128\n"
                    "// llm-fuse.tuned UNROLL = 1\n"
                    "  // llm-fuse.tuned-require BLOCK * UNROLL <= 1024\n"
                    "// llm-fuse.tuned-require UNROLL != 2 || BLOCK == 256\n"
                    "b=128 u=1\n");
  lf_tune_set_destroy(set);
}

LF_TEST(requires_operators) {
  /* Each requirement keeps exactly the listed values of A in -3..3. */
  static const struct {
    const char *expr;
    const char *kept;
  } cases[] = {
      {"A", "-3 -2 -1 1 2 3"},
      {"A == 1", "1"},
      {"A != 1", "-3 -2 -1 0 2 3"},
      {"A < 0", "-3 -2 -1"},
      {"A <= 0", "-3 -2 -1 0"},
      {"A > 1", "2 3"},
      {"A >= 1", "1 2 3"},
      {"A > -2 && A < 2", "-1 0 1"},
      {"A < -2 || A > 2", "-3 3"},
      {"A % 2 == 0", "-2 0 2"},
      {"A % 2 == -1", "-3 -1"}, /* C remainder: sign of the dividend */
      {"A / 2 == -1", "-3 -2"}, /* truncating division */
      {"-A == 3", "-3"},
      {"- -A == 3", "3"},
      {"1 + 2 * A == 7", "3"}, /* precedence: * before + */
      {"(1 + 2) * A == 6", "2"},
      {"10 - 3 - A == 5", "2"}, /* left associative */
      {"12 / 3 / A == 2", "2"},
      {"A == 0 || 6 / A == 2", "0 3"},      /* || short-circuits */
      {"A != 0 && 6 / A == -3", "-2"},      /* && short-circuits */
      {"6 / A == 6 / A", "-3 -2 -1 1 2 3"}, /* division by zero: false */
      {"6 % A == 0 || 1", "-3 -2 -1 1 2 3"},
      {"A < 1 == 1", ""}, /* chained comparison: an error, below */
  };
  for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); ++c) {
    char text[256];
    snprintf(text, sizeof(text),
             "// llm-fuse.tune A = -3, -2, -1, 0, 1, 2, 3\n"
             "// llm-fuse.tune-require %s\n{{A}}\n",
             cases[c].expr);
    lf_tune_set_t *set = NULL;
    lf_status_t s = lf_tune_expand(text, strlen(text), &set);
    if (!cases[c].kept[0]) {
      LF_EXPECT(s != LF_OK);
      lf_status_free(s);
      continue;
    }
    LF_EXPECT(s == LF_OK);
    char got[128] = "";
    for (size_t i = 0; set && i < set->count; ++i)
      snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%d",
               i ? " " : "", set->variants[i].values[0]);
    if (strcmp(got, cases[c].kept) != 0)
      fprintf(stderr, "  require %s\n", cases[c].expr);
    LF_EXPECT_STREQ(got, cases[c].kept);
    if (set)
      LF_EXPECT(set->count + set->excluded == 7);
    lf_tune_set_destroy(set);
    lf_status_free(s);
  }
}

LF_TEST(placeholder_arithmetic) {
  const char *text = "// llm-fuse.tune TILE = 32, 64\n"
                     "// llm-fuse.tune WARPS = 4\n"
                     "memref<{{TILE * 2}}xf32> {{TILE / 32}} {{TILE % 48}} "
                     "{{(TILE + 31) / 32 * 32}} {{-TILE}} {{ 7 }} "
                     "{{TILE * WARPS - 1}} {{TILE > 32}} {{TILE*-1}}\n";
  lf_tune_set_t *set = expand_ok(text);
  if (!set)
    return;
  LF_EXPECT(set->count == 2);
  if (set->count == 2) {
    LF_EXPECT_STREQ(set->variants[0].text,
                    "// llm-fuse.tuned TILE = 32\n"
                    "// llm-fuse.tuned WARPS = 4\n"
                    "memref<64xf32> 1 32 32 -32 7 127 0 -32\n");
    LF_EXPECT_STREQ(set->variants[1].text,
                    "// llm-fuse.tuned TILE = 64\n"
                    "// llm-fuse.tuned WARPS = 4\n"
                    "memref<128xf32> 2 16 64 -64 7 255 1 -64\n");
  }
  lf_tune_set_destroy(set);

  /* 64-bit arithmetic: a product past 32 bits is fine. */
  set = expand_ok("// llm-fuse.tune A = 2147483647, -2147483648\n"
                  "{{A * A}} {{A * 4}}\n");
  if (set && set->count == 2) {
    LF_EXPECT_STREQ(set->variants[0].text, "// llm-fuse.tuned A = 2147483647\n"
                                           "4611686014132420609 8589934588\n");
    LF_EXPECT_STREQ(set->variants[1].text, "// llm-fuse.tuned A = -2147483648\n"
                                           "4611686018427387904 -8589934592\n");
  }
  lf_tune_set_destroy(set);

  /* A `}` right after a placeholder stays: the first `}}` closes it. */
  set = expand_ok("// llm-fuse.tune N = 8\n{x = {{N}}}\n");
  if (set && set->count == 1)
    LF_EXPECT_STREQ(set->variants[0].text,
                    "// llm-fuse.tuned N = 8\n{x = 8}\n");
  lf_tune_set_destroy(set);
}

LF_TEST(line_count_and_endings_preserved) {
  const char *text = "gpu.module @k {\r\n"
                     "    // llm-fuse.tune BLOCK = 1, 22\r\n"
                     "  // llm-fuse.tune-require BLOCK > 0\r\n"
                     "  a {{BLOCK}} b {{BLOCK * 1000}}\r\n"
                     "\n"
                     "}";
  lf_tune_set_t *set = expand_ok(text);
  if (!set)
    return;
  LF_EXPECT(set->count == 2);
  for (size_t i = 0; i < set->count; ++i)
    LF_EXPECT(count_lines(set->variants[i].text) == count_lines(text));
  if (set->count == 2)
    LF_EXPECT_STREQ(set->variants[1].text,
                    "gpu.module @k {\r\n"
                    "    // llm-fuse.tuned BLOCK = 22\r\n"
                    "  // llm-fuse.tuned-require BLOCK > 0\r\n"
                    "  a 22 b 22000\r\n"
                    "\n"
                    "}");
  lf_tune_set_destroy(set);

  /* A last line ending in a bare CR. */
  set = expand_ok("{{A}}\r\n// llm-fuse.tune A = 1, 2\r");
  if (set && set->count == 2)
    LF_EXPECT_STREQ(set->variants[1].text, "2\r\n// llm-fuse.tuned A = 2\r");
  lf_tune_set_destroy(set);
}

LF_TEST(limits_at_the_edge_are_accepted) {
  /* 4 knobs, 8 values, 16 variants, a 32-character name, 32 levels. */
  lf_tune_set_t *set =
      expand_ok("// llm-fuse.tune A = 1, 2, 3, 4, 5, 6, 7, 8\n"
                "// llm-fuse.tune B = 1, 2\n"
                "// llm-fuse.tune C = 1\n"
                "// llm-fuse.tune ABCDEFGHIJKLMNOPQRSTUVWXYZ_01234 = 5\n"
                "{{A+B+C+ABCDEFGHIJKLMNOPQRSTUVWXYZ_01234}} "
                "{{((((((((((((((((((((((((((((((((A))))))))))))))))))))))))))"
                "))))))}}\n");
  if (set) {
    LF_EXPECT(set->count == 16);
    LF_EXPECT(set->knob_count == 4);
    LF_EXPECT_STREQ(set->knobs[3], "ABCDEFGHIJKLMNOPQRSTUVWXYZ_01234");
    if (set->count == 16)
      LF_EXPECT_STREQ(set->variants[15].label,
                      "A=8 B=2 C=1 ABCDEFGHIJKLMNOPQRSTUVWXYZ_01234=5");
  }
  lf_tune_set_destroy(set);
}

LF_TEST(malformed_declarations) {
  expect_error("x\n// llm-fuse.tune\n",
               "line 2: llm-fuse.tune: expected a knob name after "
               "'llm-fuse.tune' (write '// llm-fuse.tune NAME = V1, V2, ...')");
  expect_error("// llm-fuse.tune block = 1\n",
               "line 1: llm-fuse.tune: knob name 'block' must match "
               "[A-Z][A-Z0-9_]* (upper case, e.g. BLOCK)");
  expect_error("// llm-fuse.tune 1A = 1\n",
               "line 1: llm-fuse.tune: knob name '1A' must match "
               "[A-Z][A-Z0-9_]* (upper case, e.g. BLOCK)");
  expect_error("// llm-fuse.tune ABCDEFGHIJKLMNOPQRSTUVWXYZ_012345 = 1\n",
               "line 1: llm-fuse.tune: knob name "
               "'ABCDEFGHIJKLMNOPQRSTUVWXYZ_012345' is longer than 32 "
               "characters");
  expect_error("// llm-fuse.tune BLOCK 128, 256\n",
               "line 1: llm-fuse.tune: expected '=' after knob name 'BLOCK' "
               "(write '// llm-fuse.tune BLOCK = V1, V2, ...')");
  expect_error("// llm-fuse.tune BLOCK =\n",
               "line 1: llm-fuse.tune: knob 'BLOCK': expected a value at the "
               "end of the line");
  expect_error("// llm-fuse.tune BLOCK = 1,\n",
               "line 1: llm-fuse.tune: knob 'BLOCK': expected a value at the "
               "end of the line");
  expect_error("// llm-fuse.tune BLOCK = 1,,2\n",
               "line 1: llm-fuse.tune: knob 'BLOCK': expected a value before "
               "','");
  expect_error("// llm-fuse.tune BLOCK = 1, 0x20\n",
               "line 1: llm-fuse.tune: knob 'BLOCK': value '0x20' is not a "
               "decimal integer");
  expect_error("// llm-fuse.tune BLOCK = 1, +2\n",
               "line 1: llm-fuse.tune: knob 'BLOCK': value '+2' is not a "
               "decimal integer");
  expect_error("// llm-fuse.tune BLOCK = 1.5\n",
               "line 1: llm-fuse.tune: knob 'BLOCK': expected ',' or the end "
               "of the line but found '.5'");
  expect_error("// llm-fuse.tune BLOCK = 1 2\n",
               "line 1: llm-fuse.tune: knob 'BLOCK': expected ',' or the end "
               "of the line but found '2'");
  expect_error("// llm-fuse.tune BLOCK = 1, 2, 1\n",
               "line 1: llm-fuse.tune: knob 'BLOCK': value 1 listed twice");
  expect_error("// llm-fuse.tune A = 1\n\n// llm-fuse.tune A = 2\n",
               "line 3: llm-fuse.tune: knob 'A' declared twice (first on "
               "line 1)");
  expect_error("// llm-fuse.tuneBLOCK = 1\n",
               "line 1: unknown directive 'llm-fuse.tuneBLOCK'; write "
               "'// llm-fuse.tune NAME = V1, V2, ...' or "
               "'// llm-fuse.tune-require EXPR'");
  expect_error("  // llm-fuse.tune-requires A\n",
               "line 1: unknown directive 'llm-fuse.tune-requires'; write "
               "'// llm-fuse.tune NAME = V1, V2, ...' or "
               "'// llm-fuse.tune-require EXPR'");
}

LF_TEST(single_valued_knobs_do_not_count) {
  /* A template's bound sizes are single-valued knobs: five of them beside
   * four tuned knobs (2 x 2 x 2 x 2 variants) are accepted, the labels name
   * every knob, and the constants are usable in placeholders. */
  lf_tune_set_t *set =
      expand_ok("// llm-fuse.tune S0 = 16384\n// llm-fuse.tune S1 = 768\n"
                "// llm-fuse.tune A = 1, 2\n// llm-fuse.tune B = 1, 2\n"
                "// llm-fuse.tune S2 = 3072\n// llm-fuse.tune S3 = 32\n"
                "// llm-fuse.tune C = 1, 2\n// llm-fuse.tune D = 1, 2\n"
                "// llm-fuse.tune S4 = 512\n"
                "// llm-fuse.tune-require S0 == S3 * S4\n"
                "{{S0 / 128 * (S2 / 128) + A + B + C + D + S1}}\n");
  if (set) {
    LF_EXPECT(set->count == 16);
    LF_EXPECT(set->knob_count == 9);
    LF_EXPECT_STREQ(set->knobs[8], "S4");
    if (set->count == 16) {
      LF_EXPECT_STREQ(set->variants[0].label,
                      "S0=16384 S1=768 A=1 B=1 S2=3072 S3=32 C=1 D=1 S4=512");
      LF_EXPECT(set->variants[15].values[7] == 2);
      LF_EXPECT(set->variants[15].values[8] == 512);
      /* 128 * 24 + 4 * 2 + 768 */
      LF_EXPECT(strstr(set->variants[15].text, "\n3848\n") != NULL);
    }
  }
  lf_tune_set_destroy(set);
  /* LF_TUNE_MAX_DECLS declarations, all single-valued: one variant. */
  char text[2048] = "";
  for (int i = 0; i < LF_TUNE_MAX_DECLS; ++i)
    snprintf(text + strlen(text), sizeof(text) - strlen(text),
             "// llm-fuse.tune K%d = %d\n", i, i);
  set = expand_ok(text);
  if (set) {
    LF_EXPECT(set->count == 1 && set->knob_count == LF_TUNE_MAX_DECLS);
    LF_EXPECT(set->tuned);
  }
  lf_tune_set_destroy(set);
}

LF_TEST(too_many_knobs_values_variants) {
  /* the fifth knob with more than one value; single-valued ones between
   * them do not count */
  expect_error("// llm-fuse.tune A = 1, 2\n// llm-fuse.tune B = 1, 2\n"
               "// llm-fuse.tune S0 = 7\n"
               "// llm-fuse.tune C = 1\n// llm-fuse.tune D = 1, 2\n"
               "// llm-fuse.tune E = 1, 2\n// llm-fuse.tune F = 1, 2\n",
               "line 7: llm-fuse.tune: too many knobs: 'F' would be knob 5 "
               "with more than one value; at most 4");
  {
    char text[2048] = "";
    for (int i = 0; i <= LF_TUNE_MAX_DECLS; ++i)
      snprintf(text + strlen(text), sizeof(text) - strlen(text),
               "// llm-fuse.tune K%d = %d\n", i, i);
    expect_error(text, "line 13: llm-fuse.tune: too many declarations: 'K12' "
                       "would be number 13; at most 12");
  }
  expect_error("// llm-fuse.tune A = 1, 2, 3, 4, 5, 6, 7, 8, 9\n",
               "line 1: llm-fuse.tune: knob 'A' has more than 8 values");
  expect_error("// llm-fuse.tune A = 1, 2, 3, 4, 5, 6\n"
               "// llm-fuse.tune B = 1, 2\n"
               "// llm-fuse.tune C = 1, 2\n",
               "line 3: llm-fuse.tune: knob 'C' makes 24 variants (the "
               "product of the value counts); at most 16");
  char text[1024] = "";
  for (int i = 0; i < LF_TUNE_MAX_REQUIRES + 1; ++i)
    strcat(text, "// llm-fuse.tune-require 1\n");
  strcat(text, "// llm-fuse.tune A = 1\n");
  expect_error(text, "line 9: llm-fuse.tune-require: more than 8 "
                     "requirement lines; join conditions with '&&'");
}

LF_TEST(values_out_of_range) {
  expect_error("// llm-fuse.tune A = 2147483648\n",
               "line 1: llm-fuse.tune: knob 'A': value 2147483648 is out of "
               "range (at most 2147483647 in magnitude)");
  expect_error("// llm-fuse.tune A = -2147483649\n",
               "line 1: llm-fuse.tune: knob 'A': value -2147483649 is out of "
               "range (at most 2147483647 in magnitude)");
  expect_error("\n// llm-fuse.tune A = 1, "
               "99999999999999999999999999999999999999999999999999\n",
               "line 2: llm-fuse.tune: knob 'A': value "
               "9999999999999999999999999999999999999999... is out of range "
               "(at most 2147483647 in magnitude)");
  /* Huge literals in expressions: an error, not a wrap-around. */
  expect_error("// llm-fuse.tune A = 1\n{{A + 99999999999999999999}}\n",
               "line 2: placeholder '{{A + 99999999999999999999}}': number "
               "'99999999999999999999' at column 7 is too large");
  lf_tune_set_t *set =
      expand_ok("// llm-fuse.tune A = 1\n{{9223372036854775807}}\n");
  if (set)
    LF_EXPECT_STREQ(set->variants[0].text,
                    "// llm-fuse.tuned A = 1\n9223372036854775807\n");
  lf_tune_set_destroy(set);
}

LF_TEST(placeholder_errors) {
  expect_error("// llm-fuse.tune BLOCK = 1\n// llm-fuse.tune N = 1\n"
               "a {{BLOCK}}\nb {{TILE * 2}}\n",
               "line 4: placeholder '{{TILE * 2}}': 'TILE' at column 5 is "
               "not a declared knob (declared: BLOCK, N)");
  expect_error("gpu.module @k {\n  x = {{BLOCK}}\n}\n",
               "line 2: placeholder '{{BLOCK}}' without any "
               "'// llm-fuse.tune NAME = V1, V2, ...' declaration; declare "
               "its knob or remove the braces");
  expect_error("a\nb\nc {{BLOCK\n",
               "line 3: placeholder '{{BLOCK' without any "
               "'// llm-fuse.tune NAME = V1, V2, ...' declaration; declare "
               "its knob or remove the braces");
  expect_error("// llm-fuse.tune BLOCK = 1\nx {{BLOCK\n}}\n",
               "line 2: unterminated placeholder '{{BLOCK': '{{' needs '}}' "
               "on the same line");
  expect_error("// llm-fuse.tune BLOCK = 1\n\n{{}}\n",
               "line 3: placeholder '{{}}': empty expression");
  expect_error("// llm-fuse.tune BLOCK = 1\n{{ BLOCK * }}\n",
               "line 2: placeholder '{{ BLOCK * }}': expected a number, a "
               "knob name or '(' but found the end of the expression");
  expect_error("// llm-fuse.tune BLOCK = 1\n{{(BLOCK + 1}}\n",
               "line 2: placeholder '{{(BLOCK + 1}}': expected ')' but found "
               "the end of the expression");
  expect_error("// llm-fuse.tune BLOCK = 1\n  {{BLOCK) }}\n",
               "line 2: placeholder '{{BLOCK) }}': unexpected ')' at column "
               "10");
  expect_error("// llm-fuse.tune BLOCK = 1\n{{BLOCK = 1}}\n",
               "line 2: placeholder '{{BLOCK = 1}}': unexpected '=' at column "
               "9 (compare with '==')");
  expect_error("// llm-fuse.tune BLOCK = 1\n{{BLOCK & 1}}\n",
               "line 2: placeholder '{{BLOCK & 1}}': unexpected '&' at column "
               "9 (use '&&' or '||')");
  expect_error("// llm-fuse.tune BLOCK = 1\n{{{BLOCK}}}\n",
               "line 2: placeholder '{{{BLOCK}}': expected a number, a knob "
               "name or '(' but found '{' at column 3");
  expect_error("// llm-fuse.tune BLOCK = 1\n{{BLOCK @ 2}}\n",
               "line 2: placeholder '{{BLOCK @ 2}}': unexpected '@' at column "
               "9");
}

LF_TEST(require_errors) {
  expect_error("// llm-fuse.tune-require 1\n{{A}}\n",
               "line 1: llm-fuse.tune-require without any "
               "'// llm-fuse.tune NAME = V1, V2, ...' declaration");
  expect_error("// llm-fuse.tune A = 1\n// llm-fuse.tune-require\n",
               "line 2: llm-fuse.tune-require: empty expression");
  expect_error("// llm-fuse.tune A = 1\n// llm-fuse.tune-require A < B\n",
               "line 2: llm-fuse.tune-require: 'B' at column 30 is not a "
               "declared knob (declared: A)");
  expect_error("// llm-fuse.tune A = 1\n// llm-fuse.tune-require 0 < A < 4\n",
               "line 2: llm-fuse.tune-require: comparisons cannot be chained "
               "(column 32); join them with '&&'");
  /* Syntax is checked in the operand a short circuit skips, too. */
  expect_error("// llm-fuse.tune A = 1\n// llm-fuse.tune-require 1 || (A\n",
               "line 2: llm-fuse.tune-require: expected ')' but found the end "
               "of the expression");
  expect_error("// llm-fuse.tune A = 1, 2\n"
               "// llm-fuse.tune B = 3\n"
               "// llm-fuse.tune-require A > 1\n"
               "// llm-fuse.tune-require A + B > 5\n"
               "// llm-fuse.tune-require A < 2\n",
               "line 3: llm-fuse.tune-require: every one of the 2 variants "
               "is excluded (requirements on lines 3, 4, 5); relax them or "
               "change the values");
  expect_error("// llm-fuse.tune A = 1\n// llm-fuse.tune-require A > 1\n",
               "line 2: llm-fuse.tune-require: every one of the 1 variants "
               "is excluded (requirements on line 2); relax them or change "
               "the values");
}

LF_TEST(division_by_zero) {
  /* In a requirement: the variant is excluded. */
  lf_tune_set_t *set = expand_ok("// llm-fuse.tune A = 0, 2, 4\n"
                                 "// llm-fuse.tune-require 8 / A >= 2\n"
                                 "// llm-fuse.tune-require 8 % A == 0\n"
                                 "{{8 / A}}\n");
  if (set) {
    LF_EXPECT(set->count == 2);
    LF_EXPECT(set->excluded == 1);
    if (set->count == 2) {
      LF_EXPECT_STREQ(set->variants[0].label, "A=2");
      LF_EXPECT_STREQ(set->variants[1].text,
                      "// llm-fuse.tuned A = 4\n"
                      "// llm-fuse.tuned-require 8 / A >= 2\n"
                      "// llm-fuse.tuned-require 8 % A == 0\n2\n");
    }
  }
  lf_tune_set_destroy(set);
  /* Overflow in a requirement excludes the variant too. */
  set = expand_ok("// llm-fuse.tune A = 2147483647, 2\n"
                  "// llm-fuse.tune-require A * A * A * A * A > 0\n{{A}}\n");
  if (set) {
    LF_EXPECT(set->count == 1 && set->excluded == 1);
    LF_EXPECT(set->count == 1 && set->variants[0].values[0] == 2);
  }
  lf_tune_set_destroy(set);

  /* In a placeholder: an error naming the variant. */
  expect_error("// llm-fuse.tune A = 2, 0\n"
               "// llm-fuse.tune B = 1\n"
               "ok {{A}}\n"
               "x {{ 64 / A }}\n",
               "line 4: placeholder '{{ 64 / A }}': division by zero (64 / 0) "
               "for variant A=0 B=1; exclude that variant with a "
               "llm-fuse.tune-require line or change the expression");
  expect_error("// llm-fuse.tune A = 0\n{{5 % A}}\n",
               "line 2: placeholder '{{5 % A}}': modulo by zero (5 % 0) for "
               "variant A=0; exclude that variant with a "
               "llm-fuse.tune-require line or change the expression");
  expect_error("// llm-fuse.tune A = 2147483647\n{{A * A * A * A * A}}\n",
               "line 2: placeholder '{{A * A * A * A * A}}': overflow in '*' "
               "(4611686014132420609 * 2147483647) for variant A=2147483647; "
               "exclude that variant with a llm-fuse.tune-require line or "
               "change the expression");
  /* A variant the requirements exclude is never instantiated. */
  set = expand_ok("// llm-fuse.tune A = 0, 4\n"
                  "// llm-fuse.tune-require A != 0\n{{16 / A}}\n");
  if (set && set->count == 1)
    LF_EXPECT_STREQ(set->variants[0].text, "// llm-fuse.tuned A = 4\n"
                                           "// llm-fuse.tuned-require A != 0\n"
                                           "4\n");
  lf_tune_set_destroy(set);
}

LF_TEST(hostile_input) {
  /* 10000 nested parentheses: refused by the length limit... */
  size_t depth = 10000;
  char *deep = malloc(2 * depth + 64);
  char *p = deep;
  p += sprintf(p, "// llm-fuse.tune A = 1\n{{");
  memset(p, '(', depth);
  p += depth;
  *p++ = 'A';
  memset(p, ')', depth);
  p += depth;
  strcpy(p, "}}\n");
  lf_tune_set_t *set = NULL;
  lf_status_t s = lf_tune_expand(deep, strlen(deep), &set);
  LF_EXPECT(lf_status_code(s) == LF_STATUS_INVALID_ARGUMENT);
  LF_EXPECT(strstr(lf_status_message(s), "line 2: placeholder '{{((((") ==
            lf_status_message(s));
  LF_EXPECT(strstr(lf_status_message(s),
                   "...}}': expression is 20001 bytes long; at most 512"));
  LF_EXPECT(set == NULL);
  lf_status_free(s);
  /* ...and, within it, by the depth limit; in requirements too. */
  expect_error("// llm-fuse.tune A = 1\n"
               "// llm-fuse.tune-require "
               "((((((((((((((((((((((((((((((((((A)))))))))))))))))))))))))))"
               ")))))))\n",
               "line 2: llm-fuse.tune-require: nested more than 32 levels "
               "deep at column 58");
  expect_error("// llm-fuse.tune A = 1\n"
               "{{----------------------------------A}}\n",
               "line 2: placeholder '{{----------------------------------A}}'"
               ": nested more than 32 levels deep at column 35");
  free(deep);

  /* A 1 MB line, with placeholders at both ends, in 16 variants. */
  size_t big = (size_t)1 << 20;
  char *text = malloc(big + 256);
  p = text;
  p += sprintf(p, "// llm-fuse.tune A = 1, 2, 3, 4\n"
                  "// llm-fuse.tune B = 5, 6, 7, 8\n{{A}}");
  memset(p, 'x', big);
  p += big;
  strcpy(p, "{{B * 1000}}\nend\n");
  set = expand_ok(text);
  if (set) {
    LF_EXPECT(set->count == 16);
    if (set->count == 16) {
      const char *t = set->variants[15].text;
      LF_EXPECT(strlen(t) == strlen("// llm-fuse.tuned A = 4\n"
                                    "// llm-fuse.tuned B = 8\n4") +
                                 big + strlen("8000\nend\n"));
      LF_EXPECT(strncmp(t,
                        "// llm-fuse.tuned A = 4\n// llm-fuse.tuned B = 8\n4x",
                        50) == 0);
      LF_EXPECT(strcmp(t + strlen(t) - 10, "x8000\nend\n") == 0);
    }
  }
  lf_tune_set_destroy(set);
  /* A 1 MB declaration line or requirement: refused early. */
  p = text + sprintf(text, "// llm-fuse.tune A = ");
  for (size_t i = 0; i < big / 2; ++i)
    p += sprintf(p, "%zu,", i % 10);
  *p = '\0';
  expect_error(text, "line 1: llm-fuse.tune: knob 'A' has more than 8 values");
  p = text + sprintf(text, "// llm-fuse.tune A = 1\n// llm-fuse.tune-require ");
  memset(p, '1', big);
  p[big] = '\0';
  expect_error(text, "line 2: llm-fuse.tune-require: expression is 1048576 "
                     "bytes long; at most 512");
  free(text);

  /* `{{` at the very end, with and without declarations. */
  expect_error("// llm-fuse.tune A = 1\n{{",
               "line 2: unterminated placeholder '{{': '{{' needs '}}' on the "
               "same line");
  expect_error("abc {{", "line 1: placeholder '{{' without any "
                         "'// llm-fuse.tune NAME = V1, V2, ...' declaration; "
                         "declare its knob or remove the braces");
  expect_error("// llm-fuse.tune A = 1\n{{A}", "line 2: unterminated "
                                               "placeholder '{{A}': '{{' "
                                               "needs '}}' on the same line");

  /* A NUL byte, control characters in a message, a long snippet cut. */
  expect_error_n("a\nb\0c", 5, "line 2: the text contains a NUL byte");
  expect_error("// llm-fuse.tune A = 1\n{{A\x01\x7f}}\n",
               "line 2: placeholder '{{A??}}': unexpected '?' at column 4");
  expect_error("// llm-fuse.tune A = 1\n"
               "{{A + BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB}}\n",
               "line 2: placeholder "
               "'{{A + BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB...}}': "
               "'BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB...' at column 7 is "
               "not a declared knob (declared: A)");
  /* A UTF-8 character is never cut in two. */
  expect_error("// llm-fuse.tune A = 1\n"
               "{{A + 1 123456789012345678901234567890123\xc3\xa9}}\n",
               "line 2: placeholder "
               "'{{A + 1 123456789012345678901234567890123...}}': "
               "unexpected '123456789012345678901234567890123' at column 9");
}

LF_TEST(bad_arguments) {
  lf_status_t s = lf_tune_expand("x", 1, NULL);
  LF_EXPECT(lf_status_code(s) == LF_STATUS_INVALID_ARGUMENT);
  lf_status_free(s);
  lf_tune_set_t *set = (lf_tune_set_t *)1;
  s = lf_tune_expand(NULL, 3, &set);
  LF_EXPECT(lf_status_code(s) == LF_STATUS_INVALID_ARGUMENT);
  LF_EXPECT(set == NULL);
  lf_status_free(s);
  lf_tune_set_destroy(NULL);
}

LF_TEST(expansion_is_stable) {
  /* Expanding an instantiated text again gives it back unchanged. */
  lf_tune_set_t *set = expand_ok("// llm-fuse.tune A = 3, 4\n"
                                 "// llm-fuse.tune-require A > 3\n{{A}}\n");
  if (set && set->count == 1) {
    lf_tune_set_t *again = expand_ok(set->variants[0].text);
    if (again) {
      LF_EXPECT(!again->tuned && again->count == 1);
      LF_EXPECT_STREQ(again->variants[0].text, set->variants[0].text);
    }
    lf_tune_set_destroy(again);
  }
  lf_tune_set_destroy(set);
}

int main(void) {
  LF_RUN(no_declaration_is_one_identical_variant);
  LF_RUN(one_knob_three_values);
  LF_RUN(two_knobs_product_order_and_labels);
  LF_RUN(requires_filter_variants);
  LF_RUN(requires_operators);
  LF_RUN(placeholder_arithmetic);
  LF_RUN(line_count_and_endings_preserved);
  LF_RUN(limits_at_the_edge_are_accepted);
  LF_RUN(malformed_declarations);
  LF_RUN(single_valued_knobs_do_not_count);
  LF_RUN(too_many_knobs_values_variants);
  LF_RUN(values_out_of_range);
  LF_RUN(placeholder_errors);
  LF_RUN(require_errors);
  LF_RUN(division_by_zero);
  LF_RUN(hostile_input);
  LF_RUN(bad_arguments);
  LF_RUN(expansion_is_stable);
  return lf_test_finish();
}
