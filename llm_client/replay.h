/* replay.h - recorded exchanges: what the `replay` provider answers with and
 * what `record` mode writes.
 *
 * A replay folder holds one JSON file per exchange (schema
 * "llm-fuse-replay/1"), named
 *
 *   <fingerprint>.<arch>.<prompt major>.<attempt>.json
 *
 * i.e. keyed by the subgraph's fingerprint, the target arch, the prompt
 * templates' major version and the attempt number (1: the first request,
 * 2..: the repairs), not by a hash of the whole request. Why: the shipped
 * set (the hand-written kernels, kernels/replay/) and recorded fixtures
 * must survive prompt edits that do not change what is asked; keying by
 * the request hash would make any wording change, any new example kernel
 * or any builder message change invalidate every recording. Bumping the
 * major version (LF_PROMPT_MAJOR) retires them on purpose. A recorded
 * entry also stores the SHA-256 of its request (lf_replay_request_sha256),
 * and strict replay refuses an entry whose request differs.
 *
 * An entry's reply is either inline ("reply") or a file beside the folder
 * ("reply_file", relative, with "reply_sha256"; used by the generated
 * shipped set so the kernels are not copied). Entries never hold the API
 * key: the request body carries none, and callers redact replies first.
 */
#ifndef LF_LLM_CLIENT_REPLAY_H
#define LF_LLM_CLIENT_REPLAY_H

#include <stdbool.h>
#include <stddef.h>

#include "base/sha256.h"
#include "base/status.h"
#include "base/strbuf.h"
#include "llm_client/http_client.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LF_REPLAY_SCHEMA "llm-fuse-replay/1"
/// Entry files (and reply files) larger than this are refused.
#define LF_REPLAY_MAX_FILE ((size_t)16 << 20)

/// Which exchange. Strings borrowed.
typedef struct lf_replay_key_s {
  const char *fingerprint; /* 64 lower-case hex */
  const char *arch;        /* sm_<digits>[a|f] */
  const char *prompt;      /* the prompt major version, [a-z0-9]+ */
  int attempt;             /* 1-based */
} lf_replay_key_t;

/// One recorded exchange as read back. Owned: lf_replay_entry_free().
typedef struct lf_replay_entry_s {
  char *path;           /* the entry file */
  char *reply;          /* the reply text */
  char *provider;       /* who answered ("openai", "handwritten", ...) */
  char *model;          /* the model that answered */
  char *request_sha256; /* NULL when the entry has none (shipped set) */
  char *finish_reason;  /* NULL when absent */
  lf_llm_usage_t usage;
} lf_replay_entry_t;

/// What to record. Strings and messages borrowed.
typedef struct lf_replay_record_s {
  const char *provider;
  const char *model;
  const char *prompt_version; /* the full version, for the reader */
  const lf_llm_message_t *messages;
  size_t message_count;
  const char *reply;
  const char *finish_reason; /* may be NULL */
  lf_llm_usage_t usage;
} lf_replay_record_t;

/// The shipped replay set: $LLM_FUSE_REPLAY_DIR, else share/llm-fuse/replay
/// beside the binary, else the source tree's kernels/replay. Appends to
/// `out`.
lf_status_t lf_replay_default_dir(lf_strbuf_t *out);

/// Appends the entry file's path for `key` under `dir`. INVALID_ARGUMENT
/// when a key field is malformed (so no key can name a path outside `dir`).
lf_status_t lf_replay_entry_path(const char *dir, const lf_replay_key_t *key,
                                 lf_strbuf_t *out);

/// Reads the entry for `key`. NOT_FOUND (naming the file) when there is
/// none; DATA_LOSS when it exists but is unreadable, too large, not JSON,
/// of another schema or key, or its reply file is missing or changed since
/// it was generated; INVALID_ARGUMENT for a bad key. With `request_sha256`
/// non-NULL, an entry that records a different request hash is
/// FAILED_PRECONDITION (strict replay). On success `*out_entry` is owned by
/// the caller; else NULL.
lf_status_t lf_replay_lookup(const char *dir, const lf_replay_key_t *key,
                             const char *request_sha256,
                             lf_replay_entry_t **out_entry);

/// Frees an entry. Accepts NULL.
void lf_replay_entry_free(lf_replay_entry_t *entry);

/// Writes `record` as the entry for `key` under `dir` (created as needed),
/// atomically, replacing an older one. INVALID_ARGUMENT for a bad key or
/// record; UNAVAILABLE for I/O errors.
lf_status_t lf_replay_write(const char *dir, const lf_replay_key_t *key,
                            const lf_replay_record_t *record);

/// The SHA-256 of a request as replay compares it: model and messages in a
/// length-prefixed canonical form.
lf_status_t lf_replay_request_sha256(const char *model,
                                     const lf_llm_message_t *messages,
                                     size_t count,
                                     char out_hex[LF_SHA256_HEX_SIZE]);

#ifdef __cplusplus
}
#endif

#endif /* LF_LLM_CLIENT_REPLAY_H */
