/* tune.h - auto-tuning variants declared in a kernel reply.
 *
 * A model may declare a few knobs of its kernel (launch sizes, tile sizes,
 * unroll depth) inside the gpu.module text it returns:
 *
 *   // llm-fuse.tune BLOCK = 128, 256, 512
 *   // llm-fuse.tune-require BLOCK * UNROLL <= 1024
 *   ... known_block_size = array<i32: {{BLOCK}}, 1, 1> ...
 *
 * This module parses those declarations and instantiates one text per
 * combination of values the requirements keep; the pass builds, verifies
 * and times each and keeps the fastest. Pure text processing: no MLIR, no
 * I/O. The syntax and limits are specified in docs/kernel-contract.md
 * ("Auto-tuning variants").
 */
#ifndef LF_LLM_CLIENT_TUNE_H
#define LF_LLM_CLIENT_TUNE_H

#include <stdbool.h>
#include <stddef.h>

#include "base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A knob with one value is a named constant (the pattern table binds each
 * free size of a template as one, `// llm-fuse.tune S0 = 16384`): only the
 * knobs with more than one value, which make the variants, count toward
 * LF_TUNE_MAX_KNOBS, so a template's sizes do not take its tuned knobs'
 * places. LF_TUNE_MAX_DECLS bounds the declarations of both kinds. */
#define LF_TUNE_MAX_KNOBS 4     /* knobs with more than one value per text */
#define LF_TUNE_MAX_DECLS 12    /* `// llm-fuse.tune` lines per text */
#define LF_TUNE_MAX_VALUES 8    /* values per knob */
#define LF_TUNE_MAX_VARIANTS 16 /* product of the value counts */
#define LF_TUNE_MAX_REQUIRES 8  /* `// llm-fuse.tune-require` lines */
#define LF_TUNE_MAX_NAME 32     /* characters in a knob name */
#define LF_TUNE_MAX_EXPR 512    /* bytes in one expression */
#define LF_TUNE_MAX_DEPTH 32    /* nesting of parentheses and unary minus */

/// One instantiated variant.
typedef struct lf_tune_variant_s {
  char *text;  /* the instantiated gpu.module text; owned by the set */
  char *label; /* "BLOCK=256 UNROLL=2"; "" when not tuned; owned by the set */
  int values[LF_TUNE_MAX_DECLS]; /* one per knob, in declaration order */
} lf_tune_variant_t;

/// The variants of one text, in a deterministic order: lexicographic over
/// the knobs in declaration order (the first knob varies slowest), each
/// knob's values in declaration order, minus those the requirements drop.
typedef struct lf_tune_set_s {
  bool tuned;        /* the text declared at least one knob */
  size_t knob_count; /* 0 when not tuned */
  char knobs[LF_TUNE_MAX_DECLS][LF_TUNE_MAX_NAME + 1]; /* declaration order */
  lf_tune_variant_t *variants; /* `count` entries; owned */
  size_t count;                /* >= 1 on success */
  size_t excluded;             /* combinations dropped by the requirements */
} lf_tune_set_t;

/// Parses the tuning declarations in `text` and instantiates every variant.
///
/// `text` is `len` bytes (need not be NUL-terminated; NULL allowed when
/// `len` is 0). A text without declarations and without `{{` is one
/// variant: a byte-identical copy, `tuned` false, label "". Otherwise each
/// variant's text is `text` with every `{{EXPR}}` replaced by the value of
/// EXPR for that variant and each declaration line replaced by
/// `// llm-fuse.tuned NAME = VALUE` and each requirement line by
/// `// llm-fuse.tuned-require EXPR` (indent and line ending kept), so that a
/// variant's text, expanded again, is one untuned variant of itself.
/// Instantiation never adds or removes a line: line L of a variant is line
/// L of `text`.
///
/// On success `*out` is a new set (free it with lf_tune_set_destroy()).
/// Fails with `*out` NULL: INVALID_ARGUMENT for a text the model must fix,
/// the message starting "line N: " (1-based, in `text`) and saying what to
/// change (malformed declaration, a limit exceeded, an undeclared or
/// unterminated placeholder, an expression error, every variant excluded,
/// a value outside 32 bits, arithmetic failing in a placeholder for some
/// variant, named by its label); RESOURCE_EXHAUSTED when memory runs out.
lf_status_t lf_tune_expand(const char *text, size_t len, lf_tune_set_t **out);

/// Frees a set and everything in it. Accepts NULL.
void lf_tune_set_destroy(lf_tune_set_t *set);

#ifdef __cplusplus
}
#endif

#endif /* LF_LLM_CLIENT_TUNE_H */
