/* fs.h - small file helpers with statuses instead of errno. */
#ifndef LF_BASE_FS_H
#define LF_BASE_FS_H

#include <stddef.h>

#include "base/status.h"
#include "base/strbuf.h"

#ifdef __cplusplus
extern "C" {
#endif

/// Writes `len` bytes to `path` atomically: a temporary file beside it is
/// written, flushed to disk and renamed over `path`, so readers see either
/// the old or the new contents, never a partial file.
lf_status_t lf_write_file_atomic(const char *path, const void *data,
                                 size_t len);

/// Appends the whole contents of `path` to `out` (whose cap bounds the
/// size). NOT_FOUND if it does not exist; RESOURCE_EXHAUSTED if too large.
lf_status_t lf_read_file(const char *path, lf_strbuf_t *out);

/// Creates folder `path` and its missing parents (mode 0755), like
/// `mkdir -p`. UNAVAILABLE names the folder that could not be made.
lf_status_t lf_make_dirs(const char *path);

/// Removes `path` and everything below it (like `rm -rf`, without a
/// shell; symbolic links are removed, not followed). Best effort: what
/// cannot be removed stays. A missing path is fine.
void lf_remove_tree(const char *path);

#ifdef __cplusplus
}
#endif

#endif /* LF_BASE_FS_H */
