/* sha256_test.c - known-answer tests for base/sha256 (FIPS 180-2 vectors). */
#include "base/sha256.h"

#include "base/testing.h"

LF_TEST(known_answers) {
  char hex[LF_SHA256_HEX_SIZE];
  LF_EXPECT(lf_sha256_hex("abc", 3, hex) == LF_OK);
  LF_EXPECT_STREQ(
      hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  LF_EXPECT(lf_sha256_hex("", 0, hex) == LF_OK);
  LF_EXPECT_STREQ(
      hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  const char *two_block =
      "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  LF_EXPECT(lf_sha256_hex(two_block, strlen(two_block), hex) == LF_OK);
  LF_EXPECT_STREQ(
      hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

int main(void) {
  LF_RUN(known_answers);
  return lf_test_finish();
}
