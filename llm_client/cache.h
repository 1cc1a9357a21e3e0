/* cache.h - the kernel cache: a content-addressed table of LLM kernels.
 *
 * The cache is the lockfile of llm-fuse: an offline build with the same
 * cache gives the same output. One entry answers one question, "which
 * kernel did this provider/model give for this subgraph, on this arch,
 * with this toolchain and this prompt template", so the key covers all six
 * (lf_cache_key_t) and the entry's address is the SHA-256 of the key's
 * canonical serialization (lf_cache_key_digest).
 *
 * On disk (format "llm-fuse-cache-entry/1", described in
 * tools/llm-fuse-cache/README.md):
 *
 *   <dir>/v1/<digest[0:2]>/<digest>.json
 *
 * one file per entry: a single line of unformatted JSON with the key, the
 * kernel text, the PTX, the cubin (base64), the verification record, the
 * provenance and a SHA-256 checksum over everything else. Files are written
 * atomically (temp file + fsync + rename). A file that is too large, not
 * JSON, of another schema, mistyped, fails its checksum, is not in
 * canonical form, or holds a key other than the one its name or the lookup
 * asked for is CORRUPT: reported with a DATA_LOSS status naming the file,
 * never returned as a hit.
 *
 * The cache holds no secrets: lf_cache_store refuses to write an entry in
 * which the value of the API key's environment variable appears anywhere.
 * It does no network I/O unless a remote store is attached (options.remote,
 * remote.h): then a local miss is asked of the store, and every store is
 * pushed to it.
 *
 * Trust. A checksum proves an entry undamaged, not who wrote it: anyone can
 * recompute it. So a "verified" or "rejected" verdict from a remote store
 * counts only under an Ed25519 signature by a key of the reader's trusted
 * set (sign.h); any other remote entry is demoted to an unverified
 * candidate before it is used or kept, and the caller verifies it again
 * (or defers). Entries in the local folder are trusted as the local disk
 * is, unless options.require_signed asks for signatures there too. A cache
 * with a signer signs every entry it stores. docs/remote-cache.md has the
 * threat model.
 *
 * A cache handle is used from one thread at a time; several processes may
 * share a directory (the last writer of a key wins, readers never see a
 * partial file).
 */
#ifndef LF_LLM_CLIENT_CACHE_H
#define LF_LLM_CLIENT_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/sha256.h"
#include "base/status.h"
#include "base/strbuf.h"
#include "llm_client/remote.h"
#include "llm_client/sign.h"

#ifdef __cplusplus
extern "C" {
#endif

/// The on-disk schema of one entry.
#define LF_CACHE_ENTRY_SCHEMA "llm-fuse-cache-entry/1"
/// The layout version: the folder under the cache dir holding entries.
#define LF_CACHE_LAYOUT "v1"
/// Entry files larger than this are corrupt, unread.
#define LF_CACHE_MAX_ENTRY_BYTES ((size_t)64 << 20)
/// What provenance.tool_version says when the caller gives none.
#define LF_CACHE_TOOL_VERSION "llm-fuse/0.1.0"
/// Secrets shorter than this are not searched for (a one-letter "key" would
/// match every entry); real API keys are far longer.
#define LF_CACHE_MIN_SECRET_LEN 8

/// The question an entry answers. All strings are borrowed by the functions
/// that take a key; inside an lf_cache_entry_t returned by the cache they
/// are owned by the entry.
///  fingerprint:    the subgraph's SHA-256, 64 lower-case hex digits
///  arch:           "sm_<digits>" with an optional "a" or "f" ("sm_90a")
///  toolchain:      versions of everything that turns text into a binary,
///                  e.g. "llvm-22.1.8;ptxas-13.0"
///  provider:       "openai", "replay", ...
///  model:          the model name sent to the provider
///  prompt_version: the prompt template's version
///  precision:      optional: NULL or "" for the exact precision of the
///                  subgraph's types (the field is then absent from the
///                  digest and the entry, so such keys are those of before
///                  the field existed); "tf32" for a subgraph with an f32
///                  contraction compiled with the pass option tf32=1
/// Every other field is required; none may hold control characters;
/// fingerprint and arch must match their formats; the others are at most
/// 1024 bytes.
typedef struct lf_cache_key_s {
  const char *fingerprint;
  const char *arch;
  const char *toolchain;
  const char *provider;
  const char *model;
  const char *prompt_version;
  const char *precision;
} lf_cache_key_t;

/// Checks `key` as described above. INVALID_ARGUMENT names the bad field.
lf_status_t lf_cache_key_validate(const lf_cache_key_t *key);

/// Writes the key's address, the SHA-256 (hex) of its canonical
/// serialization: the line "llm-fuse-cache-key/1\n", then per field, in the
/// order of the struct, "<name>=<byte length>:<bytes>\n". The length prefix
/// makes the encoding unambiguous whatever bytes the fields hold.
/// INVALID_ARGUMENT when the key is invalid.
lf_status_t lf_cache_key_digest(const lf_cache_key_t *key,
                                char out_digest[LF_SHA256_HEX_SIZE]);

/// The verification verdict, the "status" of the verification record.
typedef enum lf_cache_verdict_e {
  LF_CACHE_UNVERIFIED = 0, /* never run on a GPU (e.g. built on a CPU host) */
  LF_CACHE_VERIFIED,       /* passed verification */
  LF_CACHE_REJECTED,       /* failed verification or the build */
} lf_cache_verdict_t;

/// "unverified", "verified", "rejected"; "?" out of range.
const char *lf_cache_verdict_name(lf_cache_verdict_t verdict);

/// Parses a verdict name. INVALID_ARGUMENT for anything else.
lf_status_t lf_cache_verdict_parse(const char *name,
                                   lf_cache_verdict_t *out_verdict);

/// Where an entry came from. Strings as for the key.
typedef struct lf_cache_provenance_s {
  const char *provider;       /* who produced the text; NULL: key's */
  const char *model;          /* the model that produced it; NULL: key's */
  const char *prompt_version; /* NULL: key's */
  const char *tool_version;   /* NULL: LF_CACHE_TOOL_VERSION */
  int64_t created;            /* Unix seconds, UTC; 0: now (store only) */
  int attempts;               /* LLM requests spent on this kernel, >= 0 */
} lf_cache_provenance_t;

/// An entry's signature: `key_id` is "" when the entry is unsigned. It
/// signs the message lf_cache_signed_message() makes of the entry's digest
/// and checksum, which cover every other byte of the entry.
typedef struct lf_cache_signature_s {
  char key_id[LF_SIGN_KEY_ID_SIZE];
  unsigned char value[LF_SIGN_BYTES];
} lf_cache_signature_t;

/// Why the verdict of an entry returned by a lookup may be believed.
typedef enum lf_cache_trust_e {
  LF_CACHE_TRUST_NONE = 0, /* unverified: the entry claims nothing */
  LF_CACHE_TRUST_LOCAL,    /* a claim in the local folder (trusted disk) */
  LF_CACHE_TRUST_SIGNED,   /* a claim signed by a trusted key */
  LF_CACHE_TRUST_DEMOTED,  /* a claim refused: now unverified (trust_note) */
} lf_cache_trust_t;

/// "none", "local", "signed", "demoted".
const char *lf_cache_trust_name(lf_cache_trust_t trust);

/// One entry. To store, the caller fills it with borrowed pointers (the
/// store never frees them). Entries returned by the cache are heap objects
/// whose every pointer (key and provenance strings included) is owned by
/// the entry: release with lf_cache_entry_free().
typedef struct lf_cache_entry_s {
  lf_cache_key_t key; /* filled on read; ignored by store (its key rules) */
  char digest[LF_SHA256_HEX_SIZE]; /* filled on read */

  char *kernel;         /* the gpu.module text; required, non-empty */
  char *ptx;            /* NULL when there is none */
  unsigned char *cubin; /* NULL when there is none */
  size_t cubin_len;     /* 0 with cubin NULL */

  lf_cache_verdict_t verdict;
  /// The verification record: a JSON object (trials, max error, timings,
  /// seeds, ...), free-form except for its "status" member, which is the
  /// verdict's name. Store: NULL means {"status": <verdict>}; a record
  /// without "status" gets it; one whose "status" disagrees with `verdict`
  /// is refused. Read: the record as stored, unformatted.
  char *verification_json;

  lf_cache_provenance_t provenance;

  /* Filled on read; ignored by store (a cache with a signer signs). */
  char checksum[LF_SHA256_HEX_SIZE]; /* hex, without "sha256:" */
  lf_cache_signature_t signature;
  /* Filled by lf_cache_lookup. */
  lf_cache_trust_t trust;
  bool from_remote;      /* fetched from the remote store by this lookup */
  char trust_note[320];  /* who signed, or why the claim was refused */
} lf_cache_entry_t;

/// The message an entry's signature signs: "llm-fuse-cache-signature/1\n",
/// the digest, "\n", "sha256:" and the checksum, "\n". Both are hex.
#define LF_CACHE_SIGNED_MESSAGE_SIZE 192
lf_status_t lf_cache_signed_message(const char *digest, const char *checksum,
                                    char out[LF_CACHE_SIGNED_MESSAGE_SIZE],
                                    size_t *out_len);

/// Checks an entry's signature against `trusted` (NULL trusts nobody). OK
/// when a trusted key signed it; PERMISSION_DENIED with the reason (not
/// signed, signed by an untrusted key, a signature that does not verify).
lf_status_t lf_cache_entry_check_signature(const lf_keyring_t *trusted,
                                           const lf_cache_entry_t *entry);

/// Formats Unix seconds as the entry files' UTC time stamp
/// "YYYY-MM-DDTHH:MM:SSZ" into `out`. INVALID_ARGUMENT outside 1970..9999.
lf_status_t lf_cache_time_format(int64_t seconds, char out[32]);

/// Parses exactly that format (a real calendar date, no leap seconds).
/// INVALID_ARGUMENT for anything else.
lf_status_t lf_cache_time_parse(const char *text, int64_t *out_seconds);

/// Frees an entry returned by the cache (every member included). Accepts
/// NULL. Never call it on an entry the caller filled with its own pointers.
void lf_cache_entry_free(lf_cache_entry_t *entry);

/// Serializes `entry` under `key` into the exact bytes of an entry file
/// (one line of JSON ending in "\n"), checksum included, and the entry's
/// signature member when `entry->signature.key_id` is set (as on an entry
/// read from a file: writing what was read gives the same bytes; whether it
/// still verifies is the reader's question). `entry->key` and
/// `entry->digest` are ignored. INVALID_ARGUMENT for a bad key or entry
/// (empty kernel, cubin_len without cubin, a bad verification record,
/// negative attempts, a created time out of 1970..9999); RESOURCE_EXHAUSTED
/// when memory runs out. On success `*out_text` (free()) holds `*out_len`
/// bytes plus a NUL.
lf_status_t lf_cache_entry_serialize(const lf_cache_key_t *key,
                                     const lf_cache_entry_t *entry,
                                     char **out_text, size_t *out_len);

/// Parses and validates the `len` bytes of an entry file (need not be
/// NUL-terminated; NULL allowed when `len` is 0). `origin` names the data
/// in messages (a path; NULL: "cache entry"). With `expect` non-NULL, the
/// entry's key must equal it field for field.
///
/// Every defect is DATA_LOSS with a message that starts with the origin and
/// says what is wrong: larger than LF_CACHE_MAX_ENTRY_BYTES, not JSON (with
/// the byte offset), wrong schema, a missing, extra or mistyped member, an
/// invalid key, a digest that is not the key's, a bad base64 cubin, a bad
/// verification record or provenance, a checksum mismatch, a file not in
/// canonical form, or a key other than `expect`. RESOURCE_EXHAUSTED when
/// memory runs out; INVALID_ARGUMENT when `expect` is not a valid key. On
/// success `*out_entry` is owned by the caller; on failure it is NULL.
lf_status_t lf_cache_entry_parse(const char *data, size_t len,
                                 const lf_cache_key_t *expect,
                                 const char *origin,
                                 lf_cache_entry_t **out_entry);

/// The cache directory to use when none is given: $LLM_FUSE_CACHE_DIR, else
/// $XDG_CACHE_HOME/llm-fuse (when absolute), else $HOME/.cache/llm-fuse.
/// Appends it to `out`. FAILED_PRECONDITION when none of the three is set.
lf_status_t lf_cache_default_dir(lf_strbuf_t *out);

/// Cache settings. Fill with lf_cache_options_init(), then override.
typedef struct lf_cache_options_s {
  /// Name of the environment variable holding the provider's API key
  /// (default "OPENAI_API_KEY"; NULL or "" disables the check). When the
  /// variable holds at least LF_CACHE_MIN_SECRET_LEN bytes, lf_cache_store
  /// refuses any entry that contains its value. Borrowed during open only.
  const char *api_key_env;
  /// Signs every stored entry when non-NULL. Borrowed for the cache's life.
  const lf_signer_t *signer;
  /// The keys whose signatures make a remote verdict count. NULL: none.
  /// Borrowed for the cache's life.
  const lf_keyring_t *trusted;
  /// Ask for a trusted signature on local verdicts too (a cache folder
  /// that others can write). Default false.
  bool require_signed;
  /// The HTTP store asked after a local miss; NULL: none. Borrowed.
  lf_remote_t *remote;
  /// Push every stored entry to the remote (default true).
  bool push;
} lf_cache_options_t;

/// Fills `options` with the defaults.
void lf_cache_options_init(lf_cache_options_t *options);

/// Opaque cache handle.
typedef struct lf_cache_s lf_cache_t;

/// Opens the cache rooted at `dir` (copied). Touches nothing on disk: a
/// directory that does not exist is an empty cache, created by the first
/// store. `options` may be NULL for the defaults. INVALID_ARGUMENT for an
/// empty `dir`. On success `*out_cache` is owned by the caller
/// (lf_cache_close); on failure NULL.
lf_status_t lf_cache_open(const char *dir, const lf_cache_options_t *options,
                          lf_cache_t **out_cache);

/// Closes the cache (wiping its copy of the secret). Accepts NULL.
void lf_cache_close(lf_cache_t *cache);

/// The cache's root directory, borrowed.
const char *lf_cache_dir(const lf_cache_t *cache);

/// Appends to `out` the path of the entry file for `digest` (64 hex).
/// INVALID_ARGUMENT for a malformed digest.
lf_status_t lf_cache_entry_path(const lf_cache_t *cache, const char *digest,
                                lf_strbuf_t *out);

/// The result of a lookup.
typedef enum lf_cache_outcome_e {
  LF_CACHE_MISS = 0, /* no entry (or the lookup itself failed) */
  LF_CACHE_HIT,      /* a valid entry for exactly this key */
  LF_CACHE_CORRUPT,  /* an entry file exists but cannot be trusted */
} lf_cache_outcome_t;

/// Looks `key` up: the local folder, then (on a miss or a corrupt local
/// file) the remote store. A remote entry passes lf_cache_entry_parse with
/// `key` expected and the secret guard; a claimed verdict without a trusted
/// signature is demoted to unverified (entry->trust DEMOTED, trust_note says
/// why); then the entry is kept in the local folder (so the next lookup is
/// local) and returned as a HIT with from_remote set. A remote answer that
/// fails a check is recorded (lf_cache_remote_rejections) and logged, and
/// the lookup goes on as for a miss. A local verdict without a trusted
/// signature under require_signed is demoted in the returned entry (the
/// file stays). Returns OK with HIT (and `*out_entry`, owned by the
/// caller) or MISS (no file). Returns DATA_LOSS with CORRUPT when the file
/// exists but fails any check of lf_cache_entry_parse (the message names the
/// file and the reason); the caller reports it and goes on as for a miss (a
/// later store replaces the file). Other errors (INVALID_ARGUMENT for a bad
/// key, UNAVAILABLE for an unreadable file) come with MISS. `*out_entry` is
/// NULL unless HIT.
lf_status_t lf_cache_lookup(lf_cache_t *cache, const lf_cache_key_t *key,
                            lf_cache_entry_t **out_entry,
                            lf_cache_outcome_t *out_outcome);

/// Writes `entry` under `key` atomically, creating directories as needed,
/// replacing any previous entry of that key, signed when the cache has a
/// signer; then pushes the file to the remote store (a failure there is
/// logged and counted, never returned): a signed entry always, an unsigned
/// unverified candidate when the store lacks the key (HEAD first), an
/// unsigned verdict never (it counts for nobody else, and it would replace
/// a signed entry). INVALID_ARGUMENT as for
/// lf_cache_entry_serialize; PERMISSION_DENIED when the entry contains the
/// API key's value (the message names the field, never the value);
/// UNAVAILABLE for I/O errors. If `out_digest` is non-NULL it receives the
/// key's digest.
lf_status_t lf_cache_store(lf_cache_t *cache, const lf_cache_key_t *key,
                           const lf_cache_entry_t *entry,
                           char out_digest[LF_SHA256_HEX_SIZE]);

/// Stores the raw bytes of an entry file (an export bundle's line) after
/// validating them exactly as a lookup would (DATA_LOSS if they fail) and
/// applying the secret guard. `origin` names the data in messages. Writes
/// nothing when an identical file is already there (*out_written false).
lf_status_t lf_cache_store_raw(lf_cache_t *cache, const char *data, size_t len,
                               const char *origin,
                               char out_digest[LF_SHA256_HEX_SIZE],
                               bool *out_written);

/// One remote answer the cache refused, for reports.
typedef struct lf_cache_rejection_s {
  char digest[LF_SHA256_HEX_SIZE];
  char reason[480];
} lf_cache_rejection_t;

/// The remote answers refused so far (at most the first 64; `*out_total`
/// counts all). Borrowed until the next lookup or close.
const lf_cache_rejection_t *lf_cache_remote_rejections(const lf_cache_t *cache,
                                                       size_t *out_count,
                                                       size_t *out_total);

/// Counts of remote entries used: fetched, of which demoted; pushes that
/// failed; and stores not pushed because their verdict is unsigned.
typedef struct lf_cache_remote_counts_s {
  long fetched, demoted, push_failures, push_skipped;
} lf_cache_remote_counts_t;
lf_cache_remote_counts_t lf_cache_remote_counts(const lf_cache_t *cache);

/// Fetches the remote entry of `digest` into the local folder, exactly as a
/// lookup after a local miss would (checks, demotion, local write), whether
/// or not the local folder has it. OK with *out_outcome HIT (and
/// *out_entry unless out_entry is NULL) or MISS; DATA_LOSS with CORRUPT
/// when the store's answer was refused; UNAVAILABLE when it is down.
/// FAILED_PRECONDITION without a remote.
lf_status_t lf_cache_pull(lf_cache_t *cache, const char *digest,
                          lf_cache_entry_t **out_entry,
                          lf_cache_outcome_t *out_outcome);

/// Pushes the local entry file of `digest` (validated first) to the remote,
/// unless (with `only_missing`) the store already holds an entry of the
/// same size. *out_pushed says whether a PUT was made. NOT_FOUND without a
/// local entry; DATA_LOSS for a corrupt one; FAILED_PRECONDITION without a
/// remote.
lf_status_t lf_cache_push(lf_cache_t *cache, const char *digest,
                          bool only_missing, bool *out_pushed);

/// Removes the entry file of `digest`. NOT_FOUND when there is none.
lf_status_t lf_cache_remove(lf_cache_t *cache, const char *digest);

/// What lf_cache_list found in one file.
typedef enum lf_cache_file_state_e {
  LF_CACHE_FILE_OK = 0,  /* a valid entry, stored under its own digest */
  LF_CACHE_FILE_CORRUPT, /* anything else in an entry's place */
  LF_CACHE_FILE_TEMP,    /* an interrupted atomic write's temp file */
} lf_cache_file_state_t;

/// One file, as reported to the list callback. Everything is borrowed and
/// valid during the callback only.
typedef struct lf_cache_file_s {
  const char *path;
  const char *digest; /* from the file name; "" when it has none */
  lf_cache_file_state_t state;
  const char *reason;            /* why CORRUPT; "" otherwise */
  uint64_t size;                 /* bytes on disk */
  int64_t mtime;                 /* Unix seconds */
  const lf_cache_entry_t *entry; /* the parsed entry when OK; else NULL */
} lf_cache_file_t;

/// Called once per file; return false to stop the walk.
typedef bool (*lf_cache_list_fn_t)(const lf_cache_file_t *file, void *user);

/// Reports every regular file under <dir>/v1/ in path order: valid entries,
/// corrupt ones (with the reason, including files whose name is not
/// "<digest>.json" in the right folder, or whose key's digest is not the
/// name) and leftover temp files. A missing cache dir is an empty cache.
/// Fails (UNAVAILABLE) only when a folder cannot be read.
lf_status_t lf_cache_list(lf_cache_t *cache, lf_cache_list_fn_t fn, void *user);

#ifdef __cplusplus
}
#endif

#endif /* LF_LLM_CLIENT_CACHE_H */
