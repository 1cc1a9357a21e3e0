/* llm_fuse_guard.h - deferred verification: the runtime guard of a
 * subgraph compiled with the llm-fuse pass's verify=defer.
 *
 * Without a GPU at compile time, verify=defer embeds both the candidate
 * kernel and the original ops (the fallback) in the model, plus one blob
 * holding what the verification worker needs (the reference plan and
 * cubins, the candidate's build result). The outlined function then starts
 * with
 *
 *   %s = call @lf_rt_guard_decide(%blob, %size) : (!llvm.ptr, i64) -> i32
 *
 * and runs the candidate only when %s is LF_RT_GUARD_PROMOTED, the fallback
 * otherwise. The first call in a process decides: a decision recorded for
 * the blob's key in the record file is used as it is; else the blob is
 * written to a private temporary folder and `llm-fuse-verify` runs on it as
 * a child (docs/verification.md, "Deferred verification"), the outcome is
 * appended to the record file, and the folder is removed. Later calls only
 * read the decision. Nothing here links anything but libc and pthreads.
 *
 * Environment:
 *   LLM_FUSE_GUARD_RECORD      the record file (else the path the pass was
 *                              given, guard-record=, else
 *                              $XDG_STATE_HOME/llm-fuse/guard.jsonl, else
 *                              $HOME/.local/state/llm-fuse/guard.jsonl)
 *   LLM_FUSE_VERIFY            the worker (else llm-fuse-verify on PATH)
 *   LLM_FUSE_GUARD_TIMEOUT_MS  the watchdog (default 300000)
 *   LLM_FUSE_RT_QUIET          no line on stderr per decision
 */
#ifndef LLM_FUSE_GUARD_H
#define LLM_FUSE_GUARD_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// What a guard runs.
#define LF_RT_GUARD_UNDECIDED 0   ///< not asked yet in this process
#define LF_RT_GUARD_PROMOTED 1    ///< the candidate: it passed verification
#define LF_RT_GUARD_ROLLED_BACK 2 ///< the fallback (for good, or this process)

/// The blob's layout (little-endian): the magic LF_RT_GUARD_MAGIC (8 bytes),
/// a u32 member count, then per member a u32 name length, the name (no NUL),
/// a u64 data size and the data. Members: "key" (the record's key, letters,
/// digits and `_-./:` only), optionally "record" (the compile-time default
/// record path) and "args" (extra worker arguments, one per line), and the
/// files to stage: "reference/plan.json", "reference/<kernel>.{cubin,ptx}",
/// "candidate/result.json", "candidate/kernel.{cubin,ptx}".
#define LF_RT_GUARD_MAGIC "LFGUARD1"

/// Decides, once per blob and process, whether the candidate runs, and
/// returns the decision (LF_RT_GUARD_PROMOTED or LF_RT_GUARD_ROLLED_BACK).
/// `blob` is the constant the pass embedded (borrowed; its address
/// identifies the guard in this process). Never fails: a malformed blob, a
/// record file that cannot be read or written, a worker that cannot run
/// all end in the fallback, said once on stderr. Thread-safe: concurrent
/// first calls wait for one decision.
int32_t lf_rt_guard_decide(const void *blob, int64_t size);

/// The decision made so far for `blob` in this process, without making
/// one: LF_RT_GUARD_UNDECIDED, _PROMOTED or _ROLLED_BACK.
int32_t lf_rt_guard_state(const void *blob, int64_t size);

/// Why the last decision for `blob` was made, e.g. "verified: ok",
/// "record", "rejected: mismatch", "could-not-run: no worker". Borrowed,
/// valid for the process; NULL when undecided.
const char *lf_rt_guard_reason(const void *blob, int64_t size);

#ifdef __cplusplus
}
#endif

#endif /* LLM_FUSE_GUARD_H */
