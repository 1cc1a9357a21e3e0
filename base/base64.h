/* base64.h - Base64 (RFC 4648, padded; decoding is strict). */
#ifndef LF_BASE_BASE64_H
#define LF_BASE_BASE64_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Encodes `len` bytes; NULL when memory runs out. The caller frees.
char *lf_base64_encode(const unsigned char *data, size_t len);

/// Decodes canonical padded base64: length a multiple of 4, '=' only as the
/// last one or two characters, unused bits zero. Returns false otherwise or
/// when memory runs out (*out_oom then set). On success *out (the caller
/// frees) holds *out_len bytes.
bool lf_base64_decode(const char *text, unsigned char **out, size_t *out_len,
                      bool *out_oom);

#ifdef __cplusplus
}
#endif

#endif /* LF_BASE_BASE64_H */
