/* sign.h - Ed25519 signatures on cache entries, through libcrypto.
 *
 * A cache entry's "verified" verdict is a claim: a machine ran the kernel
 * on a GPU and it passed. The entry's checksum proves only that the bytes
 * were not damaged, since anyone can recompute it. A signature by a key the
 * reader trusts proves who made the claim. docs/remote-cache.md has the
 * threat model.
 *
 *  - A signer holds one Ed25519 private key, read from a PEM (PKCS#8) file
 *    that only its owner may read, as `openssl genpkey -algorithm ed25519`
 *    or `llm-fuse-cache keygen` writes it. The key never leaves the
 *    process: not in a log, a report, the IR or the cache. Its copy in
 *    memory is freed by libcrypto (which cleanses private keys).
 *  - A keyring is the reader's set of trusted public keys, read from a text
 *    file, one key per line:
 *
 *        ed25519 <base64 of the 32-byte public key> [comment]
 *
 *    Blank lines and lines starting with '#' are skipped. A key is named by
 *    its id: the first 16 hex digits of the SHA-256 of the 32 raw bytes.
 *
 * Handles are immutable after loading and safe to share between threads.
 */
#ifndef LF_LLM_CLIENT_SIGN_H
#define LF_LLM_CLIENT_SIGN_H

#include <stdbool.h>
#include <stddef.h>

#include "base/status.h"
#include "base/strbuf.h"

#ifdef __cplusplus
extern "C" {
#endif

/// A key id: 16 lower-case hex digits and a NUL.
#define LF_SIGN_KEY_ID_SIZE 17
/// An Ed25519 signature's bytes.
#define LF_SIGN_BYTES 64
/// An Ed25519 public key's bytes.
#define LF_SIGN_PUBLIC_BYTES 32

/// The environment variables that name the key files when no option does.
#define LF_SIGN_KEY_ENV "LLM_FUSE_SIGNING_KEY"
#define LF_TRUSTED_KEYS_ENV "LLM_FUSE_TRUSTED_KEYS"

typedef struct lf_signer_s lf_signer_t;
typedef struct lf_keyring_s lf_keyring_t;

/// Loads the private key in `path`. INVALID_ARGUMENT for an empty path;
/// NOT_FOUND / UNAVAILABLE when the file cannot be read; PERMISSION_DENIED
/// when its group or others may read or write it (chmod 600, as ssh asks);
/// INVALID_ARGUMENT when it is not a PEM Ed25519 private key. Messages name
/// the file, never its contents.
lf_status_t lf_signer_load(const char *path, lf_signer_t **out_signer);

/// Frees a signer. Accepts NULL.
void lf_signer_free(lf_signer_t *signer);

/// The signer's key id (borrowed).
const char *lf_signer_key_id(const lf_signer_t *signer);

/// Appends the keyring line of the signer's public key: "ed25519 <base64>
/// <comment>" (comment NULL or "": the key id) and a newline.
lf_status_t lf_signer_public_line(const lf_signer_t *signer,
                                  const char *comment, lf_strbuf_t *out);

/// Signs `len` bytes. Fails only if libcrypto does.
lf_status_t lf_signer_sign(const lf_signer_t *signer, const void *msg,
                           size_t len, unsigned char out_sig[LF_SIGN_BYTES]);

/// Makes a new key pair: the private key to `path` (created 0600, never
/// overwriting: ALREADY_EXISTS) and its keyring line (with `comment`) to
/// `out_public_line`.
lf_status_t lf_sign_keygen(const char *path, const char *comment,
                           lf_strbuf_t *out_public_line);

/// Parses keyring text. `origin` names it in messages. A malformed line is
/// INVALID_ARGUMENT naming the origin and line number. An empty keyring is
/// valid (it trusts nobody).
lf_status_t lf_keyring_parse(const char *text, size_t len, const char *origin,
                             lf_keyring_t **out_ring);

/// Reads and parses the keyring file `path`.
lf_status_t lf_keyring_load(const char *path, lf_keyring_t **out_ring);

/// Frees a keyring. Accepts NULL.
void lf_keyring_free(lf_keyring_t *ring);

/// How many keys the ring holds.
size_t lf_keyring_size(const lf_keyring_t *ring);

/// Whether the ring holds the key `key_id`.
bool lf_keyring_has(const lf_keyring_t *ring, const char *key_id);

/// OK when `sig` is a valid signature of `msg` by the key `key_id` and the
/// ring holds that key. PERMISSION_DENIED otherwise, with the reason: the
/// key is not trusted (a NULL ring trusts nobody), or the signature does
/// not verify under it.
lf_status_t lf_keyring_verify(const lf_keyring_t *ring, const char *key_id,
                              const void *msg, size_t len,
                              const unsigned char sig[LF_SIGN_BYTES]);

/// Computes the id of a raw public key.
lf_status_t lf_sign_key_id(const unsigned char pub[LF_SIGN_PUBLIC_BYTES],
                           char out_id[LF_SIGN_KEY_ID_SIZE]);

#ifdef __cplusplus
}
#endif

#endif /* LF_LLM_CLIENT_SIGN_H */
