/* partition.h - which ops of a function fuse together.
 *
 * The rules live in partition.c, in one place, in the order they apply.
 * This header is the data they produce: groups of ops of one block, each a
 * future outlined function, plus remarks for what was left alone and why.
 */
#ifndef LF_PASSES_PARTITION_H
#define LF_PASSES_PARTITION_H

#include <stdbool.h>
#include <stddef.h>

#include "base/status.h"
#include "mlir-c/IR.h"

#ifdef __cplusplus
extern "C" {
#endif

/// What an op is to the partitioner.
typedef enum lf_op_kind_e {
  LF_OPK_OTHER = 0,   /* not fusable: stays where it is */
  LF_OPK_CONTRACTION, /* matmul family, generic with reduction + mul/add */
  LF_OPK_REDUCTION,   /* linalg.reduce, generic with reduction iterators */
  LF_OPK_SOFTMAX,     /* linalg.softmax */
  LF_OPK_ELEMENTWISE, /* parallel generic/map/named elementwise, arith/math on tensors */
  LF_OPK_FILL,        /* linalg.fill */
  LF_OPK_BROADCAST,   /* linalg.broadcast */
  LF_OPK_TRANSPOSE,   /* linalg.transpose */
  LF_OPK_EMPTY,       /* tensor.empty: free, cloned where needed */
  LF_OPK_CONSTANT,    /* arith.constant: free, cloned where needed */
  LF_OPK_RESHAPE,     /* expand/collapse_shape adding or dropping unit dims */
} lf_op_kind_t;

/// What a group computes; recorded on the outlined function.
typedef enum lf_group_class_e {
  LF_CLASS_ELEMENTWISE,
  LF_CLASS_REDUCTION,
  LF_CLASS_CONTRACTION,
  LF_CLASS_SOFTMAX,
  LF_CLASS_ATTENTION,
} lf_group_class_t;

/// One member of a group. `recompute` members are cloned into the group but
/// stay in place for their other users.
typedef struct lf_member_s {
  MlirOperation op;
  lf_op_kind_t kind;
  bool recompute;
} lf_member_t;

/// A fusable group: members in block order.
typedef struct lf_group_s {
  lf_member_t *members;
  size_t num_members;
  lf_group_class_t group_class;
} lf_group_t;

/// An op left alone, and why (shown as a remark).
typedef struct lf_left_alone_s {
  MlirOperation op;
  char *reason; /* owned */
} lf_left_alone_t;

typedef struct lf_partition_s {
  lf_group_t *groups;
  size_t num_groups;
  /* Ops cloned into groups but moved by none, in block order: the outliner
   * erases those left without users once every group is outlined. */
  MlirOperation *cloned_only;
  size_t num_cloned_only;
  lf_left_alone_t *left_alone;
  size_t num_left_alone;
} lf_partition_t;

typedef struct lf_partition_options_s {
  size_t max_group_ops; /* cap on members of one group (not counting free ops) */
} lf_partition_options_t;

/// Partitions the ops of `block` (a function body). On success `*out` holds
/// the groups; free with lf_partition_free().
lf_status_t lf_partition_block(MlirBlock block,
                               const lf_partition_options_t *options,
                               lf_partition_t *out);

/// Frees what `partition` owns. Accepts NULL.
void lf_partition_free(lf_partition_t *partition);

/// Classifies one op.
lf_op_kind_t lf_classify_op(MlirOperation op);

/// The ancestor of `op` that sits directly in `block` (`op` itself if it
/// does), or a null op.
MlirOperation lf_ancestor_in_block(MlirOperation op, MlirBlock block);

/// Arithmetic/math ops in `op`'s regions (casts and constants not counted):
/// the per-element cost used for recompute decisions and FLOP counts.
int lf_body_arith_ops(MlirOperation op);

/// "elementwise", "reduction", ...
const char *lf_group_class_name(lf_group_class_t group_class);

#ifdef __cplusplus
}
#endif

#endif /* LF_PASSES_PARTITION_H */
