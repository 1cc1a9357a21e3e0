/* sha256.h - SHA-256 digests through OpenSSL's libcrypto.
 *
 * Used for subgraph fingerprints and cache keys, so the output format (64
 * lower-case hex digits) is part of the on-disk format and must not change.
 */
#ifndef LF_BASE_SHA256_H
#define LF_BASE_SHA256_H

#include <stdbool.h>
#include <stddef.h>

#include "base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/// Length of a hex digest including the terminating NUL.
#define LF_SHA256_HEX_SIZE 65

/// Writes the SHA-256 of `len` bytes at `data` as 64 lower-case hex digits
/// and a NUL into `out_hex`. Fails only if libcrypto does.
lf_status_t lf_sha256_hex(const void *data, size_t len,
                          char out_hex[LF_SHA256_HEX_SIZE]);

/// Whether `s` is 64 lower-case hex digits (a digest as lf_sha256_hex
/// writes it).
bool lf_sha256_is_hex(const char *s);

#ifdef __cplusplus
}
#endif

#endif /* LF_BASE_SHA256_H */
