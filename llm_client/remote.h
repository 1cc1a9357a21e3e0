/* remote.h - a kernel cache on an HTTP store: plain GET, PUT and HEAD.
 *
 * The protocol is the one nginx's WebDAV module, bazel-remote and
 * S3-compatible gateways speak: an entry lives at
 *
 *     <url>/v1/<digest[0:2]>/<digest>.json
 *
 * (the local cache's layout, so a cache folder served by any web server is
 * a read-only store). GET 200 is a hit, 404 a miss; PUT (201 or 204)
 * publishes; HEAD tells whether the store holds a key and how large it is.
 *
 * The store is not trusted. This layer only moves bytes, and refuses what
 * no store should answer: a redirect (never followed), a body over
 * LF_CACHE_MAX_ENTRY_BYTES (cut off while it arrives), a body shorter than
 * its Content-Length, a status other than those above. What the bytes say
 * is checked by the cache (lf_cache_entry_parse, then the signature: see
 * cache.h and docs/remote-cache.md).
 *
 * A slow or dead store costs at most one timeout per pass: the first
 * transport failure (no connection, a timeout, a 5xx) marks the store down
 * and every later call fails at once with UNAVAILABLE, naming the first
 * failure. Nothing here ever fails a build; callers log and go on.
 *
 * Credentials: an optional Authorization header value comes from an
 * environment variable (never an option, so it is never in a pipeline
 * string); user:password in the URL works too. Neither reaches a message:
 * messages and lf_remote_display_url() show the URL without its userinfo.
 *
 * One handle is safe to use from several threads (calls are serialized; a
 * single connection is kept alive between them).
 */
#ifndef LF_LLM_CLIENT_REMOTE_H
#define LF_LLM_CLIENT_REMOTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/sha256.h"
#include "base/status.h"
#include "base/strbuf.h"

#ifdef __cplusplus
extern "C" {
#endif

/// Where the store's URL comes from when no option names one.
#define LF_REMOTE_URL_ENV "LLM_FUSE_REMOTE_CACHE"
/// The default variable holding an Authorization header value.
#define LF_REMOTE_AUTH_ENV "LLM_FUSE_REMOTE_CACHE_AUTH"
/// The default timeout of one request, connection included.
#define LF_REMOTE_DEFAULT_TIMEOUT_MS 5000

typedef struct lf_remote_options_s {
  const char *url;      /* http:// or https://, no query or fragment */
  long timeout_ms;      /* per request; <= 0: the default */
  const char *auth_env; /* NULL: LF_REMOTE_AUTH_ENV; "": none */
} lf_remote_options_t;

void lf_remote_options_init(lf_remote_options_t *options);

typedef struct lf_remote_s lf_remote_t;

/// What a handle did, for reports and benchmarks.
typedef struct lf_remote_stats_s {
  long gets, hits, misses, puts, heads, failures; /* requests sent */
  long bytes_in, bytes_out;
  double ms; /* wall time inside requests */
} lf_remote_stats_t;

/// Checks the URL (scheme http or https, a host, no query, fragment or
/// control characters) and makes a handle; no request is made.
/// INVALID_ARGUMENT names what is wrong (without the userinfo).
lf_status_t lf_remote_open(const lf_remote_options_t *options,
                           lf_remote_t **out_remote);

void lf_remote_close(lf_remote_t *remote);

/// The URL without userinfo, for messages (borrowed).
const char *lf_remote_display_url(const lf_remote_t *remote);

/// GETs the entry of `digest` into `out` (reset first). OK with *found
/// true (200) or false (404). DATA_LOSS for a body the store should not
/// have sent (too large, shorter than announced, a redirect, another
/// status); UNAVAILABLE when the store is down (and from then on).
lf_status_t lf_remote_get(lf_remote_t *remote, const char *digest,
                          lf_strbuf_t *out, bool *found);

/// PUTs `len` bytes as the entry of `digest`. UNAVAILABLE when the store
/// refuses or is down.
lf_status_t lf_remote_put(lf_remote_t *remote, const char *digest,
                          const void *data, size_t len);

/// HEADs the entry of `digest`: *found, and its size when the store says.
lf_status_t lf_remote_head(lf_remote_t *remote, const char *digest,
                           bool *found, int64_t *out_size);

/// Why the store is down ("" when it is not); borrowed. Read it when no
/// other thread uses the handle (reports); lf_remote_is_down() any time.
const char *lf_remote_down_reason(const lf_remote_t *remote);

/// Whether the store has been marked down (safe from any thread).
bool lf_remote_is_down(const lf_remote_t *remote);

/// A copy of the counters.
lf_remote_stats_t lf_remote_stats(const lf_remote_t *remote);

#ifdef __cplusplus
}
#endif

#endif /* LF_LLM_CLIENT_REMOTE_H */
