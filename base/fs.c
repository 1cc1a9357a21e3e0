/* fs.c - atomic writes and capped reads. */
#include "base/fs.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

lf_status_t lf_write_file_atomic(const char *path, const void *data,
                                 size_t len) {
  lf_status_t status = LF_OK;
  size_t tmp_size = strlen(path) + 32;
  char *tmp = malloc(tmp_size);
  if (!tmp)
    return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  snprintf(tmp, tmp_size, "%s.tmp.XXXXXX", path);
  int fd = mkstemp(tmp);
  if (fd < 0) {
    status = LF_STATUS(LF_STATUS_UNAVAILABLE, "cannot create '%s': %s", tmp,
                       strerror(errno));
    goto out_free_tmp;
  }
  const char *p = data;
  size_t left = len;
  while (left) {
    ssize_t n = write(fd, p, left);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      status = LF_STATUS(LF_STATUS_UNAVAILABLE, "cannot write '%s': %s", tmp,
                         strerror(errno));
      goto out_close;
    }
    p += n;
    left -= (size_t)n;
  }
  /* mkstemp makes 0600 files; results are meant to be shared like any other
   * output of the build. */
  if (fchmod(fd, 0644) != 0 || fsync(fd) != 0) {
    status = LF_STATUS(LF_STATUS_UNAVAILABLE, "cannot finish '%s': %s", tmp,
                       strerror(errno));
    goto out_close;
  }
  if (close(fd) != 0) {
    fd = -1;
    status = LF_STATUS(LF_STATUS_UNAVAILABLE, "cannot close '%s': %s", tmp,
                       strerror(errno));
    goto out_unlink;
  }
  fd = -1;
  if (rename(tmp, path) != 0) {
    status = LF_STATUS(LF_STATUS_UNAVAILABLE, "cannot rename '%s' to '%s': %s",
                       tmp, path, strerror(errno));
    goto out_unlink;
  }
  goto out_free_tmp;

out_close:
  close(fd);
out_unlink:
  unlink(tmp);
out_free_tmp:
  free(tmp);
  return status;
}

lf_status_t lf_read_file(const char *path, lf_strbuf_t *out) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return LF_STATUS(errno == ENOENT ? LF_STATUS_NOT_FOUND
                                     : LF_STATUS_UNAVAILABLE,
                     "cannot open '%s': %s", path, strerror(errno));
  lf_status_t status = LF_OK;
  char chunk[8192];
  size_t n;
  while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
    status = lf_strbuf_append(out, chunk, n);
    if (status) {
      status = lf_status_annotate(status, "reading '%s'", path);
      goto out_close;
    }
  }
  if (ferror(f))
    status = LF_STATUS(LF_STATUS_UNAVAILABLE, "cannot read '%s'", path);
out_close:
  fclose(f);
  return status;
}

lf_status_t lf_make_dirs(const char *dir) {
  char path[4096];
  if ((size_t)snprintf(path, sizeof(path), "%s", dir) >= sizeof(path) || !*dir)
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT, "bad folder path");
  for (char *p = path + 1;; ++p) {
    bool end = *p == '\0';
    if (*p == '/' || end) {
      *p = '\0';
      if (mkdir(path, 0755) != 0 && errno != EEXIST)
        return LF_STATUS(LF_STATUS_UNAVAILABLE, "cannot create '%s': %s", path,
                         strerror(errno));
      if (end)
        return LF_OK;
      *p = '/';
    }
  }
}

static int remove_entry(const char *path, const struct stat *st, int flag,
                        struct FTW *ftw) {
  (void)st, (void)ftw;
  if (flag == FTW_DP)
    rmdir(path);
  else
    unlink(path);
  return 0; /* best effort: go on */
}

void lf_remove_tree(const char *path) {
  if (path && path[0])
    nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}
