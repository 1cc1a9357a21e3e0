/* remote.c - GET/PUT/HEAD of cache entries on an HTTP store (libcurl). */
#include "base/sha256.h"
#include "llm_client/remote.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>

#include "llm_client/cache.h"

struct lf_remote_s {
  pthread_mutex_t lock;
  CURL *curl;
  struct curl_slist *headers;
  char *url;     /* as given, trailing '/' removed (may hold userinfo) */
  char *display; /* without userinfo */
  char *auth;    /* the Authorization header line; wiped on close */
  long timeout_ms;
  char down[512];
  lf_remote_stats_t stats;
};

static lf_status_t oom(void) {
  return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

void lf_remote_options_init(lf_remote_options_t *options) {
  memset(options, 0, sizeof(*options));
  options->timeout_ms = LF_REMOTE_DEFAULT_TIMEOUT_MS;
}

/* The URL with "user:password@" cut out of its authority. */
static char *strip_userinfo(const char *url) {
  const char *scheme_end = strstr(url, "://");
  char *out = strdup(url);
  if (!out || !scheme_end)
    return out;
  const char *auth = scheme_end + 3;
  const char *slash = strchr(auth, '/');
  const char *auth_end = slash ? slash : auth + strlen(auth);
  const char *at = NULL;
  for (const char *p = auth; p < auth_end; ++p)
    if (*p == '@')
      at = p;
  if (at) {
    size_t head = (size_t)(auth - url);
    memmove(out + head, at + 1, strlen(at + 1) + 1);
  }
  return out;
}

lf_status_t lf_remote_open(const lf_remote_options_t *options,
                           lf_remote_t **out_remote) {
  *out_remote = NULL;
  const char *url = options ? options->url : NULL;
  if (!url || !*url)
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT, "no remote cache URL");
  char *display = strip_userinfo(url);
  if (!display)
    return oom();
  lf_status_t st = LF_OK;
  size_t n = strlen(url);
  const char *host = NULL;
  if (strncmp(url, "http://", 7) == 0)
    host = url + 7;
  else if (strncmp(url, "https://", 8) == 0)
    host = url + 8;
  if (!host)
    st = LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                   "remote cache URL '%s': the scheme must be http:// or "
                   "https://",
                   display);
  else if (!*host || *host == '/')
    st = LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                   "remote cache URL '%s' names no host", display);
  for (size_t i = 0; !st && i < n; ++i) {
    unsigned char c = (unsigned char)url[i];
    if (c <= 0x20 || c == 0x7f || c == '?' || c == '#')
      st = LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "remote cache URL '%s': no spaces, control characters, "
                     "query or fragment allowed",
                     display);
  }
  if (!st && n > 2048)
    st = LF_STATUS(LF_STATUS_INVALID_ARGUMENT, "remote cache URL too long");
  if (st) {
    free(display);
    return st;
  }
  lf_remote_t *r = calloc(1, sizeof(*r));
  if (!r) {
    free(display);
    return oom();
  }
  pthread_mutex_init(&r->lock, NULL);
  r->display = display;
  while (n > 0 && url[n - 1] == '/')
    --n;
  size_t dn = strlen(display);
  while (dn > 0 && display[dn - 1] == '/')
    display[--dn] = '\0';
  r->url = strndup(url, n);
  r->timeout_ms = options->timeout_ms > 0 ? options->timeout_ms
                                          : LF_REMOTE_DEFAULT_TIMEOUT_MS;
  const char *env = options->auth_env ? options->auth_env : LF_REMOTE_AUTH_ENV;
  const char *auth = *env ? getenv(env) : NULL;
  bool failed = !r->url;
  if (auth && *auth) {
    size_t an = strlen(auth);
    for (size_t i = 0; i < an; ++i)
      if ((unsigned char)auth[i] < 0x20 || auth[i] == 0x7f) {
        lf_remote_close(r);
        return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                         "$%s holds a control character; it must be one "
                         "Authorization header value",
                         env);
      }
    r->auth = malloc(an + sizeof("Authorization: "));
    if (r->auth)
      snprintf(r->auth, an + sizeof("Authorization: "), "Authorization: %s",
               auth);
    failed = failed || !r->auth;
  }
  r->curl = failed ? NULL : curl_easy_init();
  if (!r->curl) {
    lf_remote_close(r);
    return failed ? oom()
                  : LF_STATUS(LF_STATUS_INTERNAL, "curl_easy_init failed");
  }
  /* No "Expect: 100-continue" round trip before a PUT's body. */
  r->headers = curl_slist_append(NULL, "Expect:");
  if (r->headers && r->auth) {
    struct curl_slist *h = curl_slist_append(r->headers, r->auth);
    if (h)
      r->headers = h;
    else
      failed = true;
  }
  if (!r->headers || failed) {
    lf_remote_close(r);
    return oom();
  }
  *out_remote = r;
  return LF_OK;
}

void lf_remote_close(lf_remote_t *remote) {
  if (!remote)
    return;
  if (remote->curl)
    curl_easy_cleanup(remote->curl);
  curl_slist_free_all(remote->headers);
  if (remote->auth) {
    volatile char *p = remote->auth;
    while (*p)
      *p++ = 0;
    free(remote->auth);
  }
  free(remote->url);
  free(remote->display);
  pthread_mutex_destroy(&remote->lock);
  free(remote);
}

const char *lf_remote_display_url(const lf_remote_t *remote) {
  return remote->display;
}

const char *lf_remote_down_reason(const lf_remote_t *remote) {
  return remote->down;
}

bool lf_remote_is_down(const lf_remote_t *remote) {
  lf_remote_t *r = (lf_remote_t *)remote;
  pthread_mutex_lock(&r->lock);
  bool down = r->down[0] != '\0';
  pthread_mutex_unlock(&r->lock);
  return down;
}

lf_remote_stats_t lf_remote_stats(const lf_remote_t *remote) {
  lf_remote_t *r = (lf_remote_t *)remote;
  pthread_mutex_lock(&r->lock);
  lf_remote_stats_t s = r->stats;
  pthread_mutex_unlock(&r->lock);
  return s;
}

/* ---- One request ----------------------------------------------------------*/

typedef struct body_s {
  lf_strbuf_t *out;
  bool too_large;
} body_t;

static size_t on_body(char *data, size_t size, size_t nmemb, void *user) {
  body_t *b = user;
  size_t n = size * nmemb;
  if (!b->out)
    return n;
  if (b->out->len + n > LF_CACHE_MAX_ENTRY_BYTES) {
    b->too_large = true;
    return 0; /* abort the transfer */
  }
  return lf_strbuf_append(b->out, data, n) ? 0 : n;
}

typedef struct upload_s {
  const char *data;
  size_t len, at;
} upload_t;

static size_t on_upload(char *buf, size_t size, size_t nmemb, void *user) {
  upload_t *u = user;
  size_t n = size * nmemb;
  if (n > u->len - u->at)
    n = u->len - u->at;
  memcpy(buf, u->data + u->at, n);
  u->at += n;
  return n;
}

typedef enum { M_GET, M_PUT, M_HEAD } method_t;
static const char *const method_names[] = {"GET", "PUT", "HEAD"};

/* Runs one request under the lock. Fills *code with the HTTP status (0 when
 * none came). Transport failures mark the store down. */
static lf_status_t request(lf_remote_t *r, method_t m, const char *digest,
                           lf_strbuf_t *out, const void *data, size_t len,
                           long *code, int64_t *out_size) {
  *code = 0;
  if (!lf_sha256_is_hex(digest))
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "remote cache: digest is not 64 lower-case hex digits");
  if (r->down[0])
    return LF_STATUS(LF_STATUS_UNAVAILABLE, "remote cache %s is down: %s",
                     r->display, r->down);
  /* Counted when sent: calls refused at once because the store is down
   * are not requests. */
  if (m == M_GET)
    ++r->stats.gets;
  else if (m == M_PUT)
    ++r->stats.puts;
  else
    ++r->stats.heads;
  char path[96];
  snprintf(path, sizeof(path), "/v1/%.2s/%s.json", digest, digest);
  lf_strbuf_t url;
  lf_strbuf_init(&url, 4096);
  lf_status_t st = lf_strbuf_appendf(&url, "%s%s", r->url, path);
  if (st) {
    lf_strbuf_free(&url);
    return st;
  }
  CURL *c = r->curl;
  curl_easy_reset(c); /* keeps the live connection */
  body_t body = {out, false};
  upload_t up = {data, len, 0};
  char err[CURL_ERROR_SIZE] = "";
  curl_easy_setopt(c, CURLOPT_URL, url.data);
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_TCP_NODELAY, 1L);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, r->timeout_ms);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, r->timeout_ms);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, r->headers);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, err);
  curl_easy_setopt(c, CURLOPT_USERAGENT, LF_CACHE_TOOL_VERSION);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
  switch (m) {
  case M_GET:
    curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE,
                     (curl_off_t)LF_CACHE_MAX_ENTRY_BYTES);
    break;
  case M_PUT:
    curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(c, CURLOPT_READFUNCTION, on_upload);
    curl_easy_setopt(c, CURLOPT_READDATA, &up);
    curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, (curl_off_t)len);
    body.out = NULL; /* the store's answer text is not kept */
    break;
  case M_HEAD:
    curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    break;
  }
  if (out)
    lf_strbuf_reset(out);
  double t0 = now_ms();
  CURLcode rc = curl_easy_perform(c);
  r->stats.ms += now_ms() - t0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, code);
  if (out_size) {
    curl_off_t cl = -1;
    curl_easy_getinfo(c, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl);
    *out_size = (int64_t)cl;
  }
  if (m == M_PUT)
    r->stats.bytes_out += (long)up.at;
  else if (out)
    r->stats.bytes_in += (long)out->len;
  const char *what = method_names[m];
  if (body.too_large || rc == CURLE_FILESIZE_EXCEEDED) {
    st = LF_STATUS(LF_STATUS_DATA_LOSS,
                   "remote cache %s%s: the store sent more than the %zu MiB "
                   "an entry may have; cut off",
                   r->display, path, LF_CACHE_MAX_ENTRY_BYTES >> 20);
  } else if (rc == CURLE_PARTIAL_FILE) {
    st = LF_STATUS(LF_STATUS_DATA_LOSS,
                   "remote cache %s%s: the body ended before its "
                   "Content-Length (%s)",
                   r->display, path, err[0] ? err : curl_easy_strerror(rc));
  } else if (rc != CURLE_OK) {
    snprintf(r->down, sizeof(r->down), "%s %s: %s", what, path,
             err[0] ? err : curl_easy_strerror(rc));
    st = LF_STATUS(LF_STATUS_UNAVAILABLE,
                   "remote cache %s is down: %s (not asked again in this "
                   "run)",
                   r->display, r->down);
  } else if (*code >= 300 && *code < 400) {
    char *loc = NULL;
    curl_easy_getinfo(c, CURLINFO_REDIRECT_URL, &loc);
    char *shown = loc ? strip_userinfo(loc) : NULL;
    st = LF_STATUS(LF_STATUS_DATA_LOSS,
                   "remote cache %s%s: the store answered %s with a "
                   "redirect (%ld to '%.200s'); redirects are never followed",
                   r->display, path, what, *code, shown ? shown : "?");
    free(shown);
  } else if (*code >= 500 || *code == 401 || *code == 403 ||
             *code == 407) {
    snprintf(r->down, sizeof(r->down), "%s %s: HTTP %ld%s", what, path,
             *code,
             *code >= 500 ? ""
                          : " (check the credentials in $"
                            LF_REMOTE_AUTH_ENV " or the URL)");
    st = LF_STATUS(LF_STATUS_UNAVAILABLE,
                   "remote cache %s is down: %s (not asked again in this "
                   "run)",
                   r->display, r->down);
  }
  if (st)
    ++r->stats.failures;
  lf_strbuf_free(&url);
  return st;
}

lf_status_t lf_remote_get(lf_remote_t *remote, const char *digest,
                          lf_strbuf_t *out, bool *found) {
  *found = false;
  long code = 0;
  pthread_mutex_lock(&remote->lock);
  lf_status_t st = request(remote, M_GET, digest, out, NULL, 0, &code, NULL);
  if (!st) {
    if (code == 200) {
      *found = true;
      ++remote->stats.hits;
    } else if (code == 404 || code == 410) {
      ++remote->stats.misses;
    } else {
      ++remote->stats.failures;
      st = LF_STATUS(LF_STATUS_DATA_LOSS,
                     "remote cache %s: GET of entry %.12s answered HTTP %ld, "
                     "neither 200 nor 404",
                     remote->display, digest, code);
    }
  }
  pthread_mutex_unlock(&remote->lock);
  if (st || !*found)
    lf_strbuf_reset(out);
  return st;
}

lf_status_t lf_remote_put(lf_remote_t *remote, const char *digest,
                          const void *data, size_t len) {
  long code = 0;
  pthread_mutex_lock(&remote->lock);
  lf_status_t st =
      request(remote, M_PUT, digest, NULL, data, len, &code, NULL);
  if (!st && code != 200 && code != 201 && code != 204) {
    ++remote->stats.failures;
    st = LF_STATUS(LF_STATUS_UNAVAILABLE,
                   "remote cache %s: PUT of entry %.12s answered HTTP %ld",
                   remote->display, digest, code);
  }
  pthread_mutex_unlock(&remote->lock);
  return st;
}

lf_status_t lf_remote_head(lf_remote_t *remote, const char *digest,
                           bool *found, int64_t *out_size) {
  *found = false;
  long code = 0;
  int64_t size = -1;
  pthread_mutex_lock(&remote->lock);
  lf_status_t st =
      request(remote, M_HEAD, digest, NULL, NULL, 0, &code, &size);
  if (!st) {
    if (code == 200)
      *found = true;
    else if (code != 404 && code != 410) {
      ++remote->stats.failures;
      st = LF_STATUS(LF_STATUS_DATA_LOSS,
                     "remote cache %s: HEAD of entry %.12s answered HTTP %ld",
                     remote->display, digest, code);
    }
  }
  pthread_mutex_unlock(&remote->lock);
  if (out_size)
    *out_size = *found ? size : -1;
  return st;
}
