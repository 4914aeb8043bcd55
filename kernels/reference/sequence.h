// Reference kernels for the sequence and optional operators. A sequence is a Value holding
// tensors that own their buffers (inputs are cloned on the way in); an optional holding a tensor or
// sequence is just that Value, an empty one is Value::OptionalNone.
#pragma once

#include "kernels/kernel.h"

namespace onyx::kernels::reference {

// SequenceEmpty (11): an empty sequence of the `dtype` attribute (default float).
Status SequenceEmptyRef(KernelContext& ctx);
// SequenceConstruct (11): the inputs, in order, all of one element type.
Status SequenceConstructRef(KernelContext& ctx);
// SequenceInsert (11): inserts a tensor at `position` (default: the end; negative counts from the
// end; accepted range [-n, n]).
Status SequenceInsertRef(KernelContext& ctx);
// SequenceAt (11): the tensor at `position` in [-n, n-1].
Status SequenceAtRef(KernelContext& ctx);
// SequenceErase (11): removes the tensor at `position` in [-n, n-1] (default: the last one).
Status SequenceEraseRef(KernelContext& ctx);
// SequenceLength (11): the number of tensors, an int64 scalar.
Status SequenceLengthRef(KernelContext& ctx);
// SplitToSequence (11, 24): splits along `axis` into pieces given by `split` (a scalar piece size
// whose last piece may be shorter, or a 1-D list of sizes), or into size-1 pieces without `split`,
// which `keepdims` = 0 squeezes.
Status SplitToSequenceRef(KernelContext& ctx);
// ConcatFromSequence (11): concatenates along `axis`, or stacks along a new axis when new_axis=1.
Status ConcatFromSequenceRef(KernelContext& ctx);
// SequenceMap (17): runs `body` once per position of the input sequence; further inputs are
// sequences (taken at the same position, same length) or tensors (passed whole). Each body output
// becomes a sequence.
Status SequenceMapRef(KernelContext& ctx);
// Optional (15): wraps the input, or makes an empty optional of the `type` attribute.
Status OptionalRef(KernelContext& ctx);
// OptionalHasElement (15, 18): false for an empty optional or (18) an omitted input.
Status OptionalHasElementRef(KernelContext& ctx);
// OptionalGetElement (15, 18): the held value; an error for an empty optional. Opset 18 also
// accepts plain tensors and sequences, returned as they are.
Status OptionalGetElementRef(KernelContext& ctx);

}  // namespace onyx::kernels::reference
