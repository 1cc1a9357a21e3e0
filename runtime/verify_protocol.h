/* verify_protocol.h - the verification protocol's rules, without a GPU.
 *
 * Everything the verification worker decides that needs no device lives
 * here, so that CPU tests can check it: the element types and their
 * tolerances, the poison patterns, the trial schedule and its seeds, the
 * NaN-aware comparison rule (the GPU kernel in verify_kernels.c applies the
 * same rule), the degenerate-reference test, the roofline plausibility test
 * and the verdict format (schema LF_VERDICT_SCHEMA). docs/verification.md
 * explains the protocol for users.
 */
#ifndef LF_RUNTIME_VERIFY_PROTOCOL_H
#define LF_RUNTIME_VERIFY_PROTOCOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "base/strbuf.h"
#include "builder/builder.h"

#ifdef __cplusplus
extern "C" {
#endif

/// Version of the verdict JSON. Bump it when a field changes meaning.
#define LF_VERDICT_SCHEMA "llm-fuse-verdict/0"

/// Element types, numbered as the GPU helper kernels expect them.
typedef enum lf_vdtype_e {
  LF_VDT_F32 = 0,
  LF_VDT_F16,
  LF_VDT_BF16,
  LF_VDT_F64,
  LF_VDT_I8,
  LF_VDT_I16,
  LF_VDT_I32,
  LF_VDT_I64, ///< also `index`
  LF_VDT_I1,  ///< one byte per element, 0 or 1
  LF_VDT_COUNT_
} lf_vdtype_t;

/// "f32", "bf16", ...
const char *lf_vdtype_name(lf_vdtype_t dt);
/// Bytes per element.
size_t lf_vdtype_size(lf_vdtype_t dt);
bool lf_vdtype_is_float(lf_vdtype_t dt);

/// A subgraph operand: a static tensor/memref or a scalar.
typedef struct lf_voperand_s {
  lf_vdtype_t dtype;
  bool is_scalar;
  bool is_index; ///< the scalar or element type was `index`
  int rank;
  int64_t dims[8];
  size_t count; ///< elements (1 for a scalar)
  size_t bytes;
} lf_voperand_t;

/// Parses "tensor<16x4xbf16>", "memref<4xf32>", "f32" or "index".
/// INVALID_ARGUMENT (naming the text) for anything else, dynamic or
/// unsupported element types included.
lf_status_t lf_voperand_parse(const char *type, lf_voperand_t *out);

/// Parses a subgraph signature "(tensor<..>, f32) -> tensor<..>" into
/// operands. `*out_ins` and `*out_outs` are malloc'ed, owned by the caller
/// (free()). At most 64 of each. Results must be tensors.
lf_status_t lf_vsignature_parse(const char *sig, lf_voperand_t **out_ins,
                                size_t *out_num_ins, lf_voperand_t **out_outs,
                                size_t *out_num_outs);

struct cJSON;

/// Reads a build result's tensor-map parameter (docs/kernel-contract.md,
/// "Tensor maps": {"role": "tensor_map", "operand": P, "dtype": "bf16",
/// "dims": [...], "box": [...], "swizzle": "none"|"32b"|"64b"|"128b",
/// "l2promo": "none"|"64b"|"128b"|"256b", "oob": "zero"|"nan",
/// "interleave": "none"}) into `*out`. `num_operands` is the subgraph's
/// inputs plus results; the map must view one of them. INVALID_ARGUMENT
/// naming the field for anything else. Only the JSON is checked here: the
/// worker then checks the map against the operand it views, and
/// lf_tensor_map_args() against what TMA accepts.
lf_status_t lf_vtensor_map_parse(const struct cJSON *param, size_t num_operands,
                                 lf_tensor_map_spec_t *out);

/// Checks that tensor map `spec` views operand `op` as it is: the same
/// element type, rank and dimensions. INVALID_ARGUMENT saying what differs.
lf_status_t lf_vtensor_map_check_operand(const lf_tensor_map_spec_t *spec,
                                         const lf_voperand_t *op);

/// Tolerance of one element type: an element passes when
/// |c - r| <= rtol*|r| + atol, atol = atol_scale * mean|reference output|.
/// Integers and i1 are exact (rtol = atol_scale = 0).
typedef struct lf_vtolerance_s {
  double rtol;
  double atol_scale;
} lf_vtolerance_t;

lf_vtolerance_t lf_vtolerance_for(lf_vdtype_t dt);

/// The tolerance of an f32 output of a subgraph compiled in TF32 mode (pass
/// option tf32=1) whose f32 contractions reduce over at most `k` terms
/// (docs/verification.md, "TF32 mode"): rtol = atol_scale =
/// min(2e-2, 10 * 2^-11 + k * 2^-24) -- the rounding of both operands to
/// TF32's 10-bit mantissa (unit roundoff 2^-11) with a tail margin, plus the
/// worst-case f32 accumulation error of a k-term sum. Never below the f32
/// tolerance; k <= 0 gives the f32 tolerance.
lf_vtolerance_t lf_vtolerance_tf32(int64_t k);

/// The TF32 mode's componentwise bound (docs/verification.md, "TF32
/// mode"): an f32 output element also passes when |c - r| <= stol *
/// sqrt(s), s the reference plan's output on the squared inputs (sum
/// (a_k b_k)^2 for a contraction), stol = 8 * 2^-11 + k * 2^-23: ten
/// standard deviations of the error that rounding both operands of each
/// product to TF32 makes (about 0.82 * 2^-11 * sqrt(s)), plus a truncating
/// k-term f32 accumulation. k <= 0 gives 0 (no such bound).
double lf_vtf32_scale_tol(int64_t k);

/// The componentwise bound of a 16-bit contraction accumulated in f32
/// (docs/verification.md, "16-bit contractions accumulated in f32"): a
/// float output element of a subgraph whose plan says so ("acc32": {"k":
/// K}) also passes when |c - r| <= stol * sqrt(s), s the error scale (the
/// plan run on the squared inputs: sum (a_k b_k)^2 for a contraction),
/// stol = min(k * 2^-23, 2^-10): the products of bf16/f16 operands are
/// exact in f32, and each of the k adds of an f32 sum errs by at most
/// 2^-24 |S_i| (rounding to nearest), the partial sums |S_i| of the
/// verifier's zero-mean draws staying within 2 sqrt(s); the cap (reached at
/// k = 8192) keeps operands rounded to bf16 (about 2.3e-3 sqrt(s)) and sums
/// in f16 or bf16 rejected. k <= 0 gives 0 (no such bound).
double lf_vacc32_scale_tol(int64_t k);

/// The comparison rule, NaN-aware: true when `cand` passes against `ref`.
/// Both NaN pass; equal values (infinities of one sign included) pass; an
/// infinity against anything else fails; otherwise the element fails when
/// !(|c-r| <= rtol*|r| + atol), which is also how any lone NaN fails.
/// `*out_ratio` (may be NULL) is |c-r| / tolerance (0 when equal, +inf
/// when failing with zero tolerance or on NaN/Inf).
bool lf_vclose(double ref, double cand, double rtol, double atol,
               double *out_ratio);

/// lf_vclose with the TF32 bound (the lf_compare kernel's rule): the
/// tolerance of a finite element is max(rtol*|r| + atol, stol*sqrt(scale))
/// where `scale` is finite and positive, else the first. `*out_by_scale`
/// (may be NULL) says whether the element passed by the second alone.
bool lf_vclose_scaled(double ref, double cand, double rtol, double atol,
                      double scale, double stol, double *out_ratio,
                      bool *out_by_scale);

/// The smallest magnitude that rounds to an infinity in `dt` (round to
/// nearest even): f16 65520 (65504 + half an ulp), bf16 (2 - 2^-8) 2^127,
/// f32 (2 - 2^-24) 2^127; +inf for f64 and integer types.
double lf_voverflow_threshold(lf_vdtype_t dt);

/// The overflow-boundary rule (docs/verification.md, "The f16 overflow
/// boundary"), for an element where exactly one of `ref` and `cand` is an
/// infinity and the other finite (the ordinary rule fails it); `wide` is
/// the element's unrounded (f32) value from the wide reference, tolerance
/// tol = rtol*|wide| + atol. It passes when `wide` has the infinity's sign
/// and lies within tol of the overflow threshold `threshold`
/// (|wide| >= threshold - tol: the value rounds to the infinity up to the
/// tolerance), and, when the infinity is the reference's, `wide` is finite
/// and the candidate within tol of it (|cand - wide| <= tol). Anything
/// else (NaN anywhere, both or neither infinite) is false.
/// `*out_ratio` (may be NULL): the error over tolerance of a passing
/// element, |cand - wide| / tol or (threshold - |wide|) / tol (>= 0).
bool lf_vboundary_close(double ref, double cand, double wide, double rtol,
                        double atol, double threshold, double *out_ratio);

/// A poison pattern: what a memset writes into an output before a launch.
/// `bits` is one element's bit pattern (to recognize unwritten elements);
/// the memset repeats `value` of `width` bytes (1, 2 or 4).
typedef struct lf_vpoison_s {
  uint64_t bits;
  unsigned width;
  uint32_t value;
} lf_vpoison_t;

/// The first poison is a NaN (floats) or 0xA5 bytes (integers); the second
/// a finite sentinel (floats) or 0x5A bytes (integers).
lf_vpoison_t lf_vpoison_for(lf_vdtype_t dt, bool finite_sentinel);

/// Input distributions of the trials.
typedef enum lf_vdist_e {
  LF_VDIST_NORMAL = 0,     ///< N(0, 1)
  LF_VDIST_HEAVY,          ///< N(0, 1) * u^-0.4: a power-law tail
  LF_VDIST_SPIKE,          ///< normal plus a few values of +-1000
  LF_VDIST_FINITE_SPECIAL, ///< normal plus -0.0 and denormals
  LF_VDIST_NONFINITE,      ///< normal plus NaN, +Inf and -Inf
  LF_VDIST_COUNT_
} lf_vdist_t;

/// "normal", "heavy-tailed", "spike", "signed-zero-denormal", "nan-inf".
const char *lf_vdist_name(lf_vdist_t dist);

/// One trial of the schedule.
typedef struct lf_vtrial_s {
  int index;
  lf_vdist_t dist;
  uint64_t seed;
} lf_vtrial_t;

/// Seed of trial `index`, redraw `redraw`, from the run's base seed: every
/// trial's seed is distinct and recorded, and reproduces the trial alone.
uint64_t lf_vseed_derive(uint64_t base_seed, int index, int redraw);

/// The schedule: `random_trials` (>= 5 enforced) alternating normal and
/// heavy-tailed trials, then a spike trial, then, when some input is a
/// float buffer, a signed-zero/denormal trial and a NaN/Inf trial. Writes
/// up to `cap` trials; returns how many the schedule has.
size_t lf_vtrial_schedule(uint64_t base_seed, int random_trials,
                          bool float_inputs, lf_vtrial_t *out, size_t cap);

/// Summary of one reference output, as the GPU kernel lf_stats fills it.
typedef struct lf_vstats_s {
  uint64_t finite, nan, inf;
  double sum_abs;
  uint64_t min_ord, max_ord; ///< lf_vordered() of the finite min and max
} lf_vstats_t;

/// Result of one comparison, as the GPU kernel lf_compare fills it.
typedef struct lf_vcompare_s {
  uint64_t bad, unwritten, first_bad, worst_ord, differ, relaxed;
  uint64_t by_scale; ///< passed only by stol * sqrt(scale) (lf_vclose_scaled)
  uint64_t boundary; ///< passed by the overflow-boundary rule
} lf_vcompare_t;

/// Orders doubles as unsigned integers (monotonic), and back.
uint64_t lf_vordered(double d);
double lf_vfrom_ordered(uint64_t o);

/// Host version of the lf_stats kernel over `n` doubles (for tests).
void lf_vstats_of(const double *v, size_t n, lf_vstats_t *out);

/// True when a reference output is constant or nearly so (all elements
/// non-finite, or max - min <= 1e-6 * max(|max|, |min|), or fewer than two
/// finite elements in a buffer of more than one): a test set-up that cannot
/// tell a constant fill from the real thing. `*out_why` gets a sentence.
bool lf_vstats_degenerate(const lf_vstats_t *stats, size_t count,
                          const char **out_why);

/// atol for an output: atol_scale * mean |finite reference element|.
double lf_vatol(const lf_vstats_t *stats, lf_vtolerance_t tol);

/// Roofline floor in ms: max(bytes / bandwidth, flops / peak). Output
/// bytes that fit in L2 (`l2_bytes`) are not counted: a write-back cache
/// may still hold them when the end event fires.
double lf_vroofline_ms(double in_bytes, double out_bytes, double l2_bytes,
                       double flops, double bandwidth_bytes_per_s,
                       double peak_flops_per_s);

/// Slack under the roofline before a time is called implausible.
#define LF_VROOFLINE_SLACK 0.8

/// Peak FLOP/s of a device for an element type (tensor-core dense rates
/// per SM per clock for compute capability 8.x/9.x, generously rounded up,
/// so the test rejects only the impossible).
double lf_vpeak_flops(int cc_major, int multiprocessors, int clock_khz,
                      lf_vdtype_t dt);

/// The yardstick of the roofline the report and the model see: the dense
/// rate of the unit an element type's contraction runs on, per SM per
/// clock, without slack: 16-bit types on tensor cores (4096 FLOP on 9.x,
/// 2048 on 8.x), i8 twice that, f32 on the CUDA cores (256: 128 FMA; exact
/// f32 has no tensor-core path), f64 at 128 on 9.x and 64 on 8.x. Lower than
/// lf_vpeak_flops(), which is an upper bound for the plausibility test.
double lf_vroofline_peak_flops(int cc_major, int multiprocessors, int clock_khz,
                               lf_vdtype_t dt);

/// Which reference judges a candidate's values (docs/verification.md,
/// "16-bit accumulation: the opmath reference"). The plan of a subgraph
/// that accumulates in bf16/f16 names its opmath truth, a second plan of
/// the same subgraph computed in f32 ("truth": {"plan": "truth/plan.json",
/// "kind": "opmath-f32", "reason": ...}), or says why it has none
/// ("truth_note"). The worker then compares the candidate with the truth's
/// outputs and still times the plan itself (the fallback).
typedef struct lf_vjudge_s {
  bool named;            ///< the plan names a truth, or says why it has none
  bool use_truth;        ///< compare with the truth plan's outputs
  char truth_path[4096]; ///< the truth's plan.json (when use_truth)
  char kind[32];         ///< "opmath-f32" (when named)
  char reason[256];      ///< why the subgraph has a truth
  char note[768];        ///< why the upstream plan judges although named ("")
  /* The wide reference (docs/verification.md, "The f16 overflow
   * boundary"): the plan of a subgraph with an f16 result names a second
   * plan whose 16-bit float results are f32, not rounded ("wide":
   * {"plan": "wide/plan.json", "kind": "f32-results"}), or says why it has
   * none ("wide_note"). */
  bool wide_named;       ///< the plan names a wide plan or says why not
  bool use_wide;         ///< judge overflow-boundary elements by it
  char wide_path[4096];  ///< its plan.json (when use_wide)
  char wide_note[512];   ///< why it is not used although named ("")
  uint64_t wide_outputs; ///< outputs it widened (lf_vjudge_check_wide)
  /* A contraction-class subgraph whose contractions multiply bf16/f16
   * operands and sum in f32 ("acc32": {"k": K, "operands": "f16"}): K, the
   * longest such reduction, turns on the componentwise bound
   * lf_vacc32_scale_tol(K) for its float outputs; 0: none. */
  int64_t acc32_k;
} lf_vjudge_t;

/// Reads the reference plan's JSON text (`plan`, `size` bytes; in folder
/// `plan_dir`) into `*out`. A truth is used when the plan names one with a
/// relative path inside the folder (no "..", not absolute) and
/// `upstream_only` (the worker's --upstream-reference) is false; a plan
/// without these keys gives named false, use_truth false. Never fails:
/// what cannot be used becomes `out->note`.
void lf_vjudge_from_plan(const char *plan, size_t size, const char *plan_dir,
                         bool upstream_only, lf_vjudge_t *out);

/// Checks the truth plan's text against the reference plan's: both
/// "llm-fuse-reference/0", the same "subgraph" and "signature" (so the
/// inputs drawn and the outputs compared are the same buffers), and an
/// "opmath" member of the kind the plan names. On a mismatch clears
/// `judge->use_truth` and says why in `judge->note`.
void lf_vjudge_check_truth(const char *plan, size_t plan_size,
                           const char *truth, size_t truth_size,
                           lf_vjudge_t *judge);

/// Checks the wide plan's text against the reference plan's: both
/// "llm-fuse-reference/0", the same "subgraph", a "wide_results" member of
/// kind "f32-results", and signatures that differ only where a 16-bit
/// float result (f16, bf16) is f32 in the wide plan: the same inputs, the
/// same result shapes; "wide_results.outputs" must list exactly those
/// results, at least one. Sets `judge->wide_outputs`; on a mismatch clears
/// `judge->use_wide` and says why in `judge->wide_note`.
void lf_vjudge_check_wide(const char *plan, size_t plan_size, const char *wide,
                          size_t wide_size, lf_vjudge_t *judge);

/// The verdict's word for the judge: its kind ("opmath-f32") when the
/// truth is used, else "upstream".
const char *lf_vjudge_name(const lf_vjudge_t *judge);

/// Median of `n` values (sorts `v` in place); 0 for n == 0.
double lf_vmedian(double *v, size_t n);

/// A verdict as the client reads it back. Strings owned (lf_verdict_free).
typedef struct lf_verdict_s {
  bool accepted;
  char *reason;  ///< a short machine word ("ok", "mismatch", "timeout", ...)
  char *message; ///< one or two sentences for a user
  double candidate_ms, reference_ms, speedup; ///< 0 when not timed
  int trials;                                 ///< trial records in the verdict
  char *json; ///< the whole verdict text (schema LF_VERDICT_SCHEMA)
} lf_verdict_t;

/// Parses and checks a verdict: valid JSON, the schema string, `accepted`
/// a boolean, `reason` and `message` strings, `trials` an array, and an
/// accepted verdict with at least 5 trials. Anything else is an
/// INVALID_ARGUMENT status that says what is wrong.
lf_status_t lf_verdict_parse(const char *text, size_t size, lf_verdict_t *out);

/// Fills `out` with a rejection made outside the worker (crash, timeout,
/// no verdict): accepted false, the reason word and message, and a JSON
/// text in the same schema. Returns OK or RESOURCE_EXHAUSTED.
lf_status_t lf_verdict_reject(const char *reason, const char *message,
                              lf_verdict_t *out);

/// Frees what `v` owns and zeroes it. Accepts NULL.
void lf_verdict_free(lf_verdict_t *v);

/// Most bytes of a verdict's feedback for a model.
#define LF_VERDICT_FEEDBACK_MAX 2048

/// True when a rejection's `reason` is no fault of the candidate (the
/// reference, the worker or the inputs could not be used): "no-worker",
/// "no-verdict", "malformed-verdict", "degenerate-reference",
/// "no-reference", "verify-error".
bool lf_verdict_reason_unjudged(const char *reason);

/// Appends the short located summary of a rejected verdict that goes back
/// to the model (at most LF_VERDICT_FEEDBACK_MAX bytes): the reason word;
/// for wrong values the failing output (type, shape), how many elements are
/// wrong or unwritten, the first wrong flat index with its coordinates and
/// the got/want pair, the tolerance; the failing trial's input
/// distribution; the worker's sentence. Never the seeds (any "seed 0x..."
/// and any hex word of 9 or more digits are removed), never tensors, never
/// a reference value beyond that one pair. `verdict_json` is the worker's
/// verdict text (LF_VERDICT_SCHEMA); INVALID_ARGUMENT if it does not parse.
lf_status_t lf_verdict_feedback(const char *verdict_json, lf_strbuf_t *out);

#ifdef __cplusplus
}
#endif

#endif /* LF_RUNTIME_VERIFY_PROTOCOL_H */
