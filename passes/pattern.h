/* pattern.h - the pattern key of an outlined subgraph: its canonical form
 * with sizes abstracted (docs/pattern-key.md).
 *
 * The fingerprint (outline.c) names one subgraph at one size. The pattern
 * key names what is left when the sizes are taken out: the same ops, the
 * same element types, the same indexing maps (which dimensions are
 * reduced, broadcast or transposed), the same constants, the same
 * equalities between sizes. The same pattern at another batch size or row
 * length has the same key; another op, element type or map changes it.
 * The pattern table will be keyed by (pattern key, arch).
 */
#ifndef LF_PASSES_PATTERN_H
#define LF_PASSES_PATTERN_H

#include <stddef.h>
#include <stdint.h>

#include "base/sha256.h"
#include "base/status.h"
#include "base/strbuf.h"

#ifdef __cplusplus
extern "C" {
#endif

/// The most distinct sizes a pattern binds.
#define LF_PATTERN_MAX_SIZES 32

/// The longest abstracted text a report carries (`pattern_text`).
#define LF_PATTERN_MAX_TEXT ((size_t)256 << 10)

/// A pattern key and the sizes it abstracted.
typedef struct lf_pattern_s {
  char key[LF_SHA256_HEX_SIZE];        /* SHA-256 of the abstracted text */
  int64_t sizes[LF_PATTERN_MAX_SIZES]; /* the value of S0, S1, ... */
  size_t num_sizes;
} lf_pattern_t;

/// Computes the pattern of `canonical` (`len` bytes: the fingerprint's
/// canonical text). Every static dimension of a `tensor<...>` type that is
/// greater than 1 becomes a symbol S<k>, numbered by the first appearance
/// of each distinct value (so equal sizes share a symbol and unit
/// dimensions stay 1); integers in `array<i64: ...>` attributes and
/// constants (`value = X : T`) equal to a bound size of at least 8 become
/// that size's symbol too (a mean's divisor is the row length). Appends the
/// abstracted text to `abstract_out` when it is not NULL. RESOURCE_EXHAUSTED
/// when more than LF_PATTERN_MAX_SIZES distinct sizes appear.
lf_status_t lf_pattern_compute(const char *canonical, size_t len,
                               lf_pattern_t *out, lf_strbuf_t *abstract_out);

#ifdef __cplusplus
}
#endif

#endif /* LF_PASSES_PATTERN_H */
