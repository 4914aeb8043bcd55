// Reference kernels for If, Loop and Scan. Each runs its graph attributes through
// KernelContext::RunSubgraph, which binds the subgraph's formal inputs in order and resolves
// outer-scope names; values it returns own their buffers.
#pragma once

#include "kernels/kernel.h"

namespace onyx::kernels::reference {

// If (all opsets): runs then_branch or else_branch on the single-element condition and forwards
// the branch's outputs (tensors, sequences or optionals; shapes may differ between branches).
Status IfRef(KernelContext& ctx);

// Loop (all opsets): inputs (M, cond, v_initial...), body (iter_num, cond_in, v_in...) ->
// (cond_out, v_out..., scan_out...). Outputs the final loop-carried values and the scan outputs
// stacked along a new axis 0 (zero iterations give [0, ...] of the body's declared type).
Status LoopRef(KernelContext& ctx);

// Scan opset 8: input 0 is the optional sequence_lens; states have a leading batch axis, scan
// inputs are [batch, sequence, ...]; `directions` reverses scan inputs; scan outputs are
// [batch, max_sequence, ...] padded with zeros past each batch's length.
Status Scan8Ref(KernelContext& ctx);

// Scan opset 9+: no batch axis; scan_input_axes/scan_input_directions pick the axis and order
// each scan input is iterated in, scan_output_axes/scan_output_directions where and in which
// order each scan output is stacked.
Status Scan9Ref(KernelContext& ctx);

}  // namespace onyx::kernels::reference
