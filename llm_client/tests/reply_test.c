/* reply_test.c - unit tests for llm_client/reply: gpu.module extraction. */
#include "llm_client/reply.h"

#include <stdlib.h>

#include "base/testing.h"

/* Extracts from a C string; returns the status, fills text and offset. */
static lf_status_t extract(const char *reply, char **text, size_t *offset) {
  *text = NULL;
  *offset = 12345;
  return lf_reply_extract_gpu_module(reply, strlen(reply), text, offset);
}

/* Expects success with exactly `want` and `want_offset`. */
static void expect_kernel(const char *reply, const char *want,
                          size_t want_offset) {
  char *text;
  size_t offset;
  lf_status_t s = extract(reply, &text, &offset);
  LF_EXPECT(s == LF_OK);
  if (s)
    fprintf(stderr, "  status: %s\n", lf_status_message(s));
  LF_EXPECT_STREQ(text, want);
  LF_EXPECT(offset == want_offset);
  free(text);
  lf_status_free(s);
}

/* Expects INVALID_ARGUMENT with exactly `want` as the message. */
static void expect_refusal(const char *reply, const char *want) {
  char *text;
  size_t offset;
  lf_status_t s = extract(reply, &text, &offset);
  LF_EXPECT(lf_status_code(s) == LF_STATUS_INVALID_ARGUMENT);
  LF_EXPECT_STREQ(lf_status_message(s), want);
  LF_EXPECT(text == NULL);
  LF_EXPECT(offset == 0);
  lf_status_free(s);
}

#define MODULE                                                                 \
  "gpu.module @k {\n  gpu.func @f() kernel {\n    gpu.return\n  }\n}\n"

LF_TEST(prose_around_a_fence) {
  expect_kernel("Sure! Here is the kernel:\n"
                "\n"
                "```mlir\n" MODULE "```\n"
                "\n"
                "It tiles by 128.\n",
                MODULE, 3);
}

LF_TEST(line_offset_maps_text_lines_to_reply_lines) {
  /* The module starts on reply line 6 (1-based): offset 5. */
  const char *reply = "a\nb\nc\nd\n```\ngpu.module @k {\n}\n```\n";
  expect_kernel(reply, "gpu.module @k {\n}\n", 5);
}

LF_TEST(picks_the_block_with_the_module) {
  expect_kernel("Original:\n"
                "```python\n"
                "y = relu(x @ w)\n"
                "```\n"
                "Kernel:\n"
                "```mlir\n" MODULE "```\n",
                MODULE, 6);
}

LF_TEST(tilde_fences_and_long_fences) {
  expect_kernel("~~~mlir\n" MODULE "~~~\n", MODULE, 1);
  /* A ``` line does not close a ```` fence; ```` closes it. */
  expect_kernel("````\n" MODULE "```\n````\n", MODULE "```\n", 1);
  /* A ~~~ fence is not closed by backticks. */
  expect_kernel("~~~\n" MODULE "```\n~~~~\n", MODULE "```\n", 1);
}

LF_TEST(crlf_line_endings) {
  expect_kernel("Here:\r\n```mlir\r\ngpu.module @k {\r\n}\r\n```\r\n",
                "gpu.module @k {\r\n}\r\n", 2);
}

LF_TEST(bare_module_without_fences) {
  expect_kernel(MODULE, MODULE, 0);
  expect_kernel("\n\n  " MODULE "\n", "  " MODULE "\n", 2);
  expect_kernel("// fused matmul+relu\n" MODULE,
                "// fused matmul+relu\n" MODULE, 0);
  expect_kernel("module attributes {gpu.container_module} {\n" MODULE "}\n",
                "module attributes {gpu.container_module} {\n" MODULE "}\n", 0);
}

LF_TEST(unfenced_module_inside_prose_is_refused) {
  expect_refusal("Here is the kernel: \n" MODULE "Hope it helps.\n",
                 "reply has a gpu.module outside any fenced code block, "
                 "mixed with prose; put the kernel in one fenced block");
}

LF_TEST(no_module) {
  expect_refusal("I cannot do that.", "reply has no gpu.module");
  expect_refusal("```mlir\nfunc.func @f() {\n  return\n}\n```\n",
                 "reply has no gpu.module");
  expect_refusal("", "reply has no gpu.module (the reply is empty)");
  /* Mentions that are not ops. */
  expect_refusal("```mlir\n// gpu.module @k is below\n"
                 "%0 = \"x\"() {note = \"gpu.module @y\"} : () -> i32\n```\n",
                 "reply has no gpu.module");
  expect_refusal("```\ngpu.module_thing @k\ngpu.module k\n```\n",
                 "reply has no gpu.module");
}

LF_TEST(module_only_in_prose_outside_fences) {
  expect_refusal("gpu.module @k {\n}\nand the host code:\n"
                 "```mlir\nfunc.func @main() {\n}\n```\n",
                 "reply has no gpu.module inside a fenced code block (one "
                 "appears in the prose around them)");
}

LF_TEST(two_modules) {
  expect_refusal("```mlir\n" MODULE MODULE "```\n",
                 "reply has 2 gpu.module ops; exactly one is required");
  expect_refusal("v1:\n```mlir\n" MODULE "```\nv2:\n~~~\n" MODULE "~~~\n",
                 "reply has 2 gpu.module ops; exactly one is required");
  expect_refusal(MODULE MODULE,
                 "reply has 2 gpu.module ops; exactly one is required");
  /* Ops after a brace count too. */
  expect_refusal("```\nmodule {gpu.module @a {}\n} gpu.module @b {}\n```\n",
                 "reply has 2 gpu.module ops; exactly one is required");
}

LF_TEST(unterminated_fence) {
  expect_refusal("Here:\n```mlir\n" MODULE,
                 "reply's code fence opened at line 2 is never closed "
                 "(truncated reply?)");
  /* An unterminated fence without a module after a good block is fine. */
  expect_kernel("```mlir\n" MODULE "```\nNotes:\n```\nmore\n", MODULE, 1);
}

LF_TEST(backticks_in_prose_are_not_fences) {
  expect_kernel("Use `gpu.module @k` and ``a ``` b`` inline; ```mlir "
                "is how fences start.\n"
                "```mlir\n" MODULE "```\n",
                MODULE, 2);
  /* An info string with a backtick means the line is not a fence. */
  expect_kernel("```a`b\n```mlir\n" MODULE "```\n", MODULE, 2);
  /* Four spaces of indent: not a fence. */
  expect_refusal("    ```\n" MODULE "    ```\n",
                 "reply has a gpu.module outside any fenced code block, "
                 "mixed with prose; put the kernel in one fenced block");
}

LF_TEST(empty_block_and_indented_fence) {
  expect_kernel("```\n```\n   ```mlir\n" MODULE "   ```\n", MODULE, 3);
}

LF_TEST(bad_arguments) {
  char *text = (char *)"x";
  size_t offset = 7;
  lf_status_t s = lf_reply_extract_gpu_module("a\0b", 3, &text, &offset);
  LF_EXPECT(lf_status_code(s) == LF_STATUS_INVALID_ARGUMENT);
  LF_EXPECT_STREQ(lf_status_message(s), "reply contains a NUL byte");
  LF_EXPECT(text == NULL);
  lf_status_free(s);
  s = lf_reply_extract_gpu_module(NULL, 4, &text, &offset);
  LF_EXPECT(lf_status_code(s) == LF_STATUS_INVALID_ARGUMENT);
  lf_status_free(s);
  s = lf_reply_extract_gpu_module("x", 1, NULL, &offset);
  LF_EXPECT(lf_status_code(s) == LF_STATUS_INVALID_ARGUMENT);
  lf_status_free(s);
  s = lf_reply_extract_gpu_module(NULL, 0, &text, &offset);
  LF_EXPECT_STREQ(lf_status_message(s),
                  "reply has no gpu.module (the reply is empty)");
  lf_status_free(s);
  /* Length, not NUL, bounds the reply. */
  const char *two = "```\n" MODULE "```\n```\n" MODULE "```\n";
  size_t first_len = strlen("```\n" MODULE "```\n");
  s = lf_reply_extract_gpu_module(two, first_len, &text, &offset);
  LF_EXPECT(s == LF_OK);
  LF_EXPECT_STREQ(text, MODULE);
  free(text);
  lf_status_free(s);
}

LF_TEST(counting) {
  LF_EXPECT(lf_reply_count_gpu_modules(MODULE, strlen(MODULE)) == 1);
  const char *two = "  gpu.module   @a\n\tgpu.module\t@b";
  LF_EXPECT(lf_reply_count_gpu_modules(two, strlen(two)) == 2);
  LF_EXPECT(lf_reply_count_gpu_modules("x gpu.module @a", 15) == 0);
  LF_EXPECT(lf_reply_count_gpu_modules("gpu.module", 10) == 0);
  LF_EXPECT(lf_reply_count_gpu_modules(NULL, 0) == 0);
}

int main(void) {
  LF_RUN(prose_around_a_fence);
  LF_RUN(line_offset_maps_text_lines_to_reply_lines);
  LF_RUN(picks_the_block_with_the_module);
  LF_RUN(tilde_fences_and_long_fences);
  LF_RUN(crlf_line_endings);
  LF_RUN(bare_module_without_fences);
  LF_RUN(unfenced_module_inside_prose_is_refused);
  LF_RUN(no_module);
  LF_RUN(module_only_in_prose_outside_fences);
  LF_RUN(two_modules);
  LF_RUN(unterminated_fence);
  LF_RUN(backticks_in_prose_are_not_fences);
  LF_RUN(empty_block_and_indented_fence);
  LF_RUN(bad_arguments);
  LF_RUN(counting);
  return lf_test_finish();
}
