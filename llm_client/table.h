/* table.h - the pattern table: kernel templates keyed by pattern key.
 *
 * A subgraph's pattern key (passes/pattern.c, docs/pattern-key.md) names its
 * math with the sizes taken out; the sizes it binds are S0, S1, ... A table
 * entry is a kernel template for one pattern key: gpu.module text in which
 * some sizes are placeholders, with the sizes it fixes and the constraints
 * it needs. Instantiating it for a subgraph checks the fixed sizes, binds
 * the free ones and lets the text's own requirements decide; it is pure
 * text processing in C (the tune expansion, tune.h), no Python, no network.
 *
 * On disk (format "llm-fuse-table-entry/1", docs/pattern-table.md): one
 * JSON file per entry under <dir>/v1/, `<name>.json` or gzip-compressed
 * `<name>.json.gz` (the shipped table), with the pattern key, the archs, the
 * class, "sizes" ({"S0": null, "S1": 4096}: null is free), the template,
 * its provenance and a checksum over the rest. An entry that fails any
 * check is reported and never used. An entry may carry "precision":
 * "tf32" (a kernel that rounds f32 operands to TF32 for the tensor cores):
 * it answers only requests in that precision (pass option tf32=1), before
 * the exact entries; a request without a precision never sees it.
 *
 * The template marks each free size with a line
 *
 *     // llm-fuse.template-size S0
 *
 * which instantiation turns into `// llm-fuse.tune S0 = <value>` (the line
 * count is kept), so `{{S0}}`, `{{S0 / RPB}}` placeholders and
 * `// llm-fuse.tune-require S0 % RPB == 0` requirements work as for tune
 * knobs, and the template's own tune knobs stay variants to time.
 *
 * An entry may also carry "signature" (Ed25519, sign.h) over
 * "llm-fuse-table-signature/1\n<pattern>\nsha256:<checksum>\n": who vouches
 * for it. With a trust rule (lf_table_set_trust), an entry whose signature
 * does not verify under the trusted keys is forged and never used, and
 * with require_signed so is an unsigned one.
 *
 * A file named `<pattern[0:16]>-<name>.json[.gz]` (every file the project
 * and growth write) is read on the first lookup of a pattern with that
 * prefix, so a compile reads only its own keys' entries; an entry whose
 * pattern is not its name's prefix is skipped as corrupt. Other names are
 * read when their folder is added. lf_table_foreach reads every file.
 * Reading happens under the table's lock: a table may be shared between
 * threads; its entries never change once read.
 */
#ifndef LF_LLM_CLIENT_TABLE_H
#define LF_LLM_CLIENT_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "base/strbuf.h"
#include "llm_client/sign.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LF_TABLE_ENTRY_SCHEMA "llm-fuse-table-entry/1"
#define LF_TABLE_MAX_SIZES 8 /* S0 .. S7 */
#define LF_TABLE_MAX_ENTRY_BYTES ((size_t)4 << 20)

typedef struct lf_table_s lf_table_t;

/// Opens the entry files under <dir>/v1/ (a missing folder is an empty
/// table; see above for when each file is read). Files that fail a check
/// are skipped and counted when read; their reasons are logged as
/// warnings. RESOURCE_EXHAUSTED only when out of memory.
lf_status_t lf_table_open(const char *dir, lf_table_t **out_table);

/// Loads the entries of another folder into `table`, after those it holds
/// (lookups try entries in load order).
lf_status_t lf_table_add_dir(lf_table_t *table, const char *dir);

/// The trust rule for the folders added after this call (borrowed ring,
/// NULL trusts nobody): an entry that carries a signature is skipped as
/// forged unless a key of `trusted` made it and it verifies; with
/// `require_signed`, an unsigned entry is skipped too. Without a call (the
/// shipped table, a folder the user names) entries are not checked beyond
/// their checksum.
void lf_table_set_trust(lf_table_t *table, const lf_keyring_t *trusted,
                        bool require_signed);

/// lf_table_open with the trust rule of lf_table_set_trust for `dir`.
lf_status_t lf_table_open_trusted(const char *dir, const lf_keyring_t *trusted,
                                  bool require_signed,
                                  lf_table_t **out_table);

/// Signs the entry file text `data` with `signer` (replacing any signature
/// it carries) and returns the new text (heap, *out_text). The entry is
/// checked first as the loader checks it: DATA_LOSS naming `origin` for a
/// corrupt one, which is never signed.
lf_status_t lf_table_sign_entry(const char *origin, const char *data,
                                size_t len, const lf_signer_t *signer,
                                char **out_text);

/// Replaces each `// llm-fuse.template-size SK` line of `text` by
/// `// llm-fuse.tune SK = sizes[K]` (indent and line count kept) into
/// `out`. DATA_LOSS when a line names no size below `count`.
lf_status_t lf_table_bind_sizes(const char *text, const int64_t *sizes,
                                size_t count, lf_strbuf_t *out);

/// Whether `text` declares a template size.
bool lf_table_is_template(const char *text);

/// A new entry (growth): `fixed` holds -1 for each size the template leaves
/// free. Written atomically as <dir>/v1/<pattern[0:16]>-<name>.json with
/// its checksum; *out_path (optional, malloc'ed) names it.
typedef struct lf_table_new_entry_s {
  const char *pattern;
  const char *arch;
  const char *klass;
  const int64_t *fixed;
  size_t num_sizes;
  const char *template_text;
  const char *source;
  const char *name;      /* file name part, [a-z0-9_] */
  const char *precision; /* NULL or "": exact; "tf32" */
} lf_table_new_entry_t;
lf_status_t lf_table_write_entry(const char *dir,
                                 const lf_table_new_entry_t *entry,
                                 char **out_path);

/// lf_table_write_entry, the entry signed by `signer` (NULL: unsigned).
lf_status_t lf_table_write_entry_signed(const char *dir,
                                        const lf_table_new_entry_t *entry,
                                        const lf_signer_t *signer,
                                        char **out_path);

/// The shipped table: $LLM_FUSE_TABLE_DIR, else share/llm-fuse/table beside
/// the binary, else the source tree's kernels/table. Appends it to `out`.
lf_status_t lf_table_default_dir(lf_strbuf_t *out);

void lf_table_close(lf_table_t *table);

/// Appends an entry file's JSON text to `out` (whose cap bounds it),
/// inflating a `.gz` file. DATA_LOSS naming the file for gzip that is
/// corrupt, truncated, followed by other bytes or inflates past the cap.
lf_status_t lf_table_read_entry_file(const char *path, lf_strbuf_t *out);

/// Entries loaded plus entry files not read yet, and files skipped as
/// corrupt so far (every file after lf_table_foreach).
size_t lf_table_size(const lf_table_t *table);
size_t lf_table_skipped(const lf_table_t *table);

/// One instantiation.
typedef struct lf_table_match_s {
  char *text;      /* the instantiated gpu.module text (malloc'ed) */
  char id[96];     /* which entry: "<pattern[0:16]>/<file name>" */
  char source[256]; /* the entry's provenance, one line */
  char precision[8]; /* the entry's precision: "" exact, "tf32" */
  size_t rank;       /* 1 + its place among the entries that admit the sizes,
                        in lookup order (lf_table_instantiate_nth) */
} lf_table_match_t;

/// Finds the first entry for `pattern` (64 hex) and `arch` that admits
/// `sizes` (S0..S<count-1>) and instantiates it into *out (free out->text).
/// NOT_FOUND when the table holds no entry for the pattern and arch;
/// FAILED_PRECONDITION when it holds some but none admits the sizes, the
/// message saying, per entry, which fixed size or requirement refused them
/// (e.g. "S1 = 1000, the template is for 4096"; "line 5: every variant is
/// excluded by the requirements: S0 % RPB == 0").
lf_status_t lf_table_instantiate(const lf_table_t *table, const char *pattern,
                                 const char *arch, const int64_t *sizes,
                                 size_t count, lf_table_match_t *out);

/// lf_table_instantiate for a request in `precision`: NULL or "" (exact)
/// sees only the entries without a precision (what lf_table_instantiate
/// does); "tf32" tries the tf32 entries first, then the exact ones (an
/// exact kernel is a correct answer in TF32 mode, never the other way).
/// out->precision says which answered.
lf_status_t lf_table_instantiate_precision(const lf_table_t *table,
                                           const char *pattern,
                                           const char *arch,
                                           const char *precision,
                                           const int64_t *sizes, size_t count,
                                           lf_table_match_t *out);

/// The next answer when an entry's kernel fails (acquire.h): skips the
/// first `skip` entries that admit the sizes, in the order
/// lf_table_instantiate_precision tries them (most specific first, then
/// load order; in tf32, the tf32 entries, then the exact ones), and
/// instantiates the one after them; out->rank is skip + 1. With skip 0 it
/// is lf_table_instantiate_precision. OUT_OF_RANGE when some entries admit
/// the sizes but no more than `skip` (the message counts them); otherwise
/// NOT_FOUND or FAILED_PRECONDITION as lf_table_instantiate says.
lf_status_t lf_table_instantiate_nth(const lf_table_t *table,
                                     const char *pattern, const char *arch,
                                     const char *precision,
                                     const int64_t *sizes, size_t count,
                                     size_t skip, lf_table_match_t *out);

/// Frees the match's text.
void lf_table_match_clear(lf_table_match_t *match);

/// Whether the table holds an entry for `pattern` that `arch` runs (for
/// `arch`, or an older unsuffixed arch).
bool lf_table_has_pattern(const lf_table_t *table, const char *pattern,
                          const char *arch);

/// The same pattern at distinct sizes (docs/pattern-key.md, "Coincident
/// sizes"). A subgraph whose sizes happen to be equal (a batch equal to a
/// hidden size, K equal to N) has a key of its own, since the key keeps
/// which sizes are equal. `text` is its abstracted text (the outline
/// record's `pattern_text`) and `sizes` the values of its symbols. This
/// looks for a pattern of the table's index (`<dir>/patterns.json.gz`,
/// written by kernels/table/build.py: each entry's abstracted text, which
/// must hash to its key, or it is ignored) whose text is `text` with some
/// of its symbols merged, and that has an entry `arch` runs. On success
/// `out_key` is that pattern's key and out_sizes[0..*out_count) the values
/// of its symbols (the merged ones repeat a value); the most specific such
/// pattern wins (fewest symbols, then key order). NOT_FOUND when none.
lf_status_t lf_table_coincident(const lf_table_t *table, const char *text,
                                const int64_t *sizes, size_t count,
                                const char *arch, char out_key[65],
                                int64_t *out_sizes, size_t *out_count);

/// A verified entry to start an adapt request from (lf_table_nearest).
typedef struct lf_table_nearest_s {
  char id[96];                       /* "<pattern[0:16]>/<file name>" */
  char source[256];                  /* its provenance, one line */
  char *template_text;               /* as loaded (malloc'ed) */
  int64_t fixed[LF_TABLE_MAX_SIZES]; /* per size: -1 free, else the size */
  size_t num_sizes;
  char reason[512]; /* why it refuses the sizes; "" when it admits them */
} lf_table_nearest_t;

/// The entry for `pattern` and `arch` nearest to `sizes` among those that
/// refuse them (the entries lf_table_instantiate tries): fewest fixed
/// sizes that differ, then the smallest ratios between them, then the
/// lookup order. When no entry for `arch` refuses them, entries for an
/// older unsuffixed arch that `arch` runs (sm_80 for sm_90), admitting the
/// sizes or not, in the same order; their reason says which arch they
/// were verified for. With `id` (lf_table_match_t's), that entry of
/// `arch` whether it refuses the sizes or not. Fills *out (lf_table_nearest_clear) with the
/// entry's template and the reason it refuses, as lf_table_instantiate
/// words it. NOT_FOUND when there is none.
lf_status_t lf_table_nearest(const lf_table_t *table, const char *pattern,
                             const char *arch, const int64_t *sizes,
                             size_t count, const char *id,
                             lf_table_nearest_t *out);

/// lf_table_nearest among the entries a request in `precision` may use
/// (lf_table_instantiate_precision's rule; lf_table_nearest: exact only).
lf_status_t lf_table_nearest_precision(const lf_table_t *table,
                                       const char *pattern, const char *arch,
                                       const char *precision,
                                       const int64_t *sizes, size_t count,
                                       const char *id,
                                       lf_table_nearest_t *out);

/// Frees the template text. Accepts NULL.
void lf_table_nearest_clear(lf_table_nearest_t *nearest);

/// One entry as lf_table_foreach shows it (borrowed for the call).
typedef struct lf_table_info_s {
  const char *pattern;
  const char *klass;
  const char *const *archs;
  size_t num_archs;
  const int64_t *fixed; /* per size: -1 free, else the size */
  size_t num_sizes;
  const char *id;
  const char *path; /* the entry's file */
  const char *source;
  const char *template_text; /* the template, as loaded */
  const char *precision;     /* "" exact, "tf32" */
  const char *signed_by;     /* the signing key's id, "" when unsigned */
} lf_table_info_t;

/// Calls `fn` for every loaded entry, by file name; stops when it returns
/// false.
void lf_table_foreach(const lf_table_t *table,
                      bool (*fn)(const lf_table_info_t *info, void *user),
                      void *user);

#ifdef __cplusplus
}
#endif

#endif /* LF_LLM_CLIENT_TABLE_H */
