/* fuzz_cache_entry.c - libFuzzer target for the kernel cache's entry reader,
 * lf_cache_entry_parse().
 *
 * Each input is parsed twice: as it is, and, when it is a JSON object with
 * a "checksum" member, with that checksum recomputed the way the writer
 * computes it, so mutations reach the checks behind the checksum (member
 * order and types, key, digest, base64, times, verification record,
 * canonical form) instead of stopping at a mismatch.
 *
 * Invariants beyond the sanitizers: a failure is DATA_LOSS (or out of
 * memory) with no entry; an accepted entry re-serializes to exactly the
 * bytes read, its digest is its key's, it is accepted again when its own
 * key is expected and refused (DATA_LOSS) when another is.
 */
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/sha256.h"
#include "llm_client/cache.h"

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "fuzz_cache_entry: invariant failed: %s (line %d)\n",    \
              #cond, __LINE__);                                                \
      abort();                                                                 \
    }                                                                          \
  } while (0)

static void check_parse(const char *data, size_t len) {
  lf_cache_entry_t *e = (lf_cache_entry_t *)1;
  lf_status_t s = lf_cache_entry_parse(data, len, NULL, "fuzz", &e);
  if (s) {
    CHECK(e == NULL);
    CHECK(lf_status_code(s) == LF_STATUS_DATA_LOSS ||
          lf_status_code(s) == LF_STATUS_RESOURCE_EXHAUSTED);
    CHECK(strncmp(lf_status_message(s), "fuzz: ", 6) == 0);
    lf_status_free(s);
    return;
  }
  CHECK(e != NULL && e->kernel && *e->kernel);
  CHECK(!e->cubin == !e->cubin_len);

  char digest[LF_SHA256_HEX_SIZE];
  s = lf_cache_key_digest(&e->key, digest);
  CHECK(s == NULL && strcmp(digest, e->digest) == 0);

  /* Writing what was read gives the same bytes (created == 0 means "now"
   * to the public serializer, so the epoch itself is skipped). */
  if (e->provenance.created != 0) {
    char *text = NULL;
    size_t n = 0;
    s = lf_cache_entry_serialize(&e->key, e, &text, &n);
    CHECK(s == NULL && n == len && memcmp(text, data, len) == 0);
    free(text);
  }

  lf_cache_entry_t *again = NULL;
  s = lf_cache_entry_parse(data, len, &e->key, "fuzz", &again);
  CHECK(s == NULL && again != NULL);
  lf_cache_entry_free(again);

  lf_cache_key_t other = e->key;
  other.model = strcmp(e->key.model, "x") == 0 ? "y" : "x";
  again = (lf_cache_entry_t *)1;
  s = lf_cache_entry_parse(data, len, &other, "fuzz", &again);
  CHECK(lf_status_code(s) == LF_STATUS_DATA_LOSS && again == NULL);
  lf_status_free(s);
  lf_cache_entry_free(e);
}

/* Recomputes the checksum of a JSON object and parses the result. */
static void check_with_fixed_checksum(const char *data, size_t len) {
  cJSON *root = cJSON_ParseWithLength(data, len);
  cJSON *sum = cJSON_IsObject(root)
                   ? cJSON_GetObjectItemCaseSensitive(root, "checksum")
                   : NULL;
  if (!sum) {
    cJSON_Delete(root);
    return;
  }
  cJSON_Delete(cJSON_DetachItemViaPointer(root, sum));
  char *body = cJSON_PrintUnformatted(root);
  char hex[LF_SHA256_HEX_SIZE], value[80];
  if (body && lf_sha256_hex(body, strlen(body), hex) == NULL) {
    snprintf(value, sizeof(value), "sha256:%s", hex);
    char *full = cJSON_AddStringToObject(root, "checksum", value)
                     ? cJSON_PrintUnformatted(root)
                     : NULL;
    if (full) {
      size_t n = strlen(full);
      char *line = malloc(n + 1);
      if (line) {
        memcpy(line, full, n);
        line[n] = '\n';
        check_parse(line, n + 1);
        free(line);
      }
    }
    cJSON_free(full);
  }
  cJSON_free(body);
  cJSON_Delete(root);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  check_parse((const char *)data, size);
  check_with_fixed_checksum((const char *)data, size);
  return 0;
}
