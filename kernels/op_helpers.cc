// Shared building blocks for op definitions: broadcasting, axes, element copies, inference helpers.
#include "kernels/op_helpers.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#include "memory/aligned_alloc.h"

#ifdef ONYX_HAVE_OPENMP
#include <omp.h>
#endif

namespace onyx::kernels {

Status InferSameAsInput0(InferContext& ctx) {
  if (ctx.num_outputs() > 0 && ctx.has_input(0)) ctx.SetOutputType(0, ctx.input_type(0));
  return Status::Ok();
}

Status InferPassThrough(InferContext& ctx) {
  for (int i = 0; i < ctx.num_outputs() && i < ctx.num_inputs(); ++i)
    if (ctx.has_input(i)) ctx.SetOutputType(i, ctx.input_type(i));
  return Status::Ok();
}

StatusOr<std::vector<Dim>> BroadcastDims(const std::vector<Dim>& a, const std::vector<Dim>& b) {
  const size_t rank = std::max(a.size(), b.size());
  std::vector<Dim> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const Dim* da = i + a.size() >= rank ? &a[i + a.size() - rank] : nullptr;
    const Dim* db = i + b.size() >= rank ? &b[i + b.size() - rank] : nullptr;
    if (!da) {
      out[i] = *db;
    } else if (!db) {
      out[i] = *da;
    } else if (da->known() && db->known()) {
      if (da->value == db->value || db->value == 1) {
        out[i] = *da;
      } else if (da->value == 1) {
        out[i] = *db;
      } else {
        return InvalidModel("cannot broadcast dim ", da->value, " with dim ", db->value,
                            " at axis ", i);
      }
    } else if (da->known() && da->value == 1) {
      out[i] = *db;
    } else if (db->known() && db->value == 1) {
      out[i] = *da;
    } else if (da->known()) {
      out[i] = *da;  // the symbol must equal it (or be 1) at run time
    } else if (db->known()) {
      out[i] = *db;
    } else if (da->symbol == db->symbol) {
      out[i] = *da;
    } else {
      out[i] = Dim();  // two different symbols: unknown until run time
    }
  }
  return out;
}

Status InferBroadcast(InferContext& ctx, const std::vector<int>& inputs, DType out, int output) {
  if (!ctx.has_output(output)) return Status::Ok();
  TypeInfo result = TypeInfo::Tensor(out);
  result.has_shape = true;
  for (int i : inputs) {
    if (!ctx.has_input(i)) continue;
    const TypeInfo& t = ctx.input_type(i);
    if (!t.has_shape) {
      result.has_shape = false;
      break;
    }
    auto dims = BroadcastDims(result.dims, t.dims);
    if (!dims.ok()) {
      return ctx.node().Invalid("input ", i, " '", ctx.node().node().inputs[i], "' has shape ",
                                t.ToString(), " which ", dims.status().message());
    }
    result.dims = std::move(dims).value();
  }
  if (!result.has_shape) result.dims.clear();
  ctx.SetOutputType(output, result);
  return Status::Ok();
}

namespace {
std::vector<int> PresentInputs(InferContext& ctx) {
  std::vector<int> v;
  for (int i = 0; i < ctx.num_inputs(); ++i)
    if (ctx.has_input(i)) v.push_back(i);
  return v;
}
}  // namespace

Status InferBroadcastAll(InferContext& ctx) {
  return InferBroadcast(ctx, PresentInputs(ctx), ctx.input_type(0).elem);
}

Status InferBroadcastAllBool(InferContext& ctx) {
  return InferBroadcast(ctx, PresentInputs(ctx), DType::kBool);
}

Status ExpectInputType(InferContext& ctx, int i, const std::vector<DType>& allowed) {
  if (!ctx.has_input(i)) return Status::Ok();
  const TypeInfo& t = ctx.input_type(i);
  // Unknown kind or element type (e.g. an untyped subgraph input): checked at run time.
  if (t.kind != TypeInfo::Kind::kTensor || t.elem == DType::kUndefined) return Status::Ok();
  if (std::find(allowed.begin(), allowed.end(), t.elem) != allowed.end()) return Status::Ok();
  return ctx.node().NotSupported("input ", i, " '", ctx.node().node().inputs[i], "' has type ",
                                 DTypeName(t.elem), ", which this operator does not support");
}

bool ConstantInts(InferContext& ctx, int i, std::vector<int64_t>* out) {
  if (!ctx.has_input(i)) return false;
  const Tensor* t = ctx.input_constant(i);
  if (!t || (t->dtype() != DType::kInt64 && t->dtype() != DType::kInt32)) return false;
  *out = TensorToInts(*t);
  return true;
}

StatusOr<Shape> BroadcastShapes(const std::vector<Shape>& shapes) {
  size_t rank = 0;
  for (const Shape& s : shapes) rank = std::max(rank, s.size());
  Shape out(rank, 1);
  for (const Shape& s : shapes) {
    for (size_t i = 0; i < s.size(); ++i) {
      const size_t o = rank - s.size() + i;
      if (s[i] == out[o] || s[i] == 1) continue;
      if (out[o] == 1) {
        out[o] = s[i];
        continue;
      }
      std::string all;
      for (const Shape& x : shapes) all += ShapeToString(x) + " ";
      return InvalidArgument("shapes ", all, "cannot be broadcast together (axis ", o, ": ", out[o],
                             " vs ", s[i], ")");
    }
  }
  return out;
}

std::vector<int64_t> ContiguousStrides(const Shape& shape) {
  std::vector<int64_t> st(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) st[i - 1] = st[i] * shape[i];
  return st;
}

std::vector<int64_t> BroadcastStrides(const Shape& in, const Shape& out) {
  std::vector<int64_t> st(out.size(), 0);
  const std::vector<int64_t> cs = ContiguousStrides(in);
  const size_t off = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i) st[off + i] = in[i] == 1 ? 0 : cs[i];
  return st;
}

StatusOr<int64_t> NormalizeAxis(const NodeView& node, int64_t axis, int64_t rank,
                                const char* what) {
  if (axis < -rank || axis >= rank)
    return node.Invalid(what, " ", axis, " is out of range for rank ", rank, " (expected [", -rank,
                        ", ", rank, "))");
  return axis < 0 ? axis + rank : axis;
}

std::vector<int64_t> TensorToInts(const Tensor& t) {
  std::vector<int64_t> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) {
    switch (t.dtype()) {
      case DType::kInt64:
        v[i] = t.data<int64_t>()[i];
        break;
      case DType::kInt32:
        v[i] = t.data<int32_t>()[i];
        break;
      default:
        v[i] = static_cast<int64_t>(ElementAsDouble(t, i));
        break;
    }
  }
  return v;
}

std::vector<double> TensorToDoubles(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[i] = ElementAsDouble(t, i);
  return v;
}

void CopyElements(DType t, const void* src, int64_t src_off, void* dst, int64_t dst_off,
                  int64_t n) {
  if (n <= 0) return;
  if (t == DType::kString) {
    const std::string* s = static_cast<const std::string*>(src) + src_off;
    std::string* d = static_cast<std::string*>(dst) + dst_off;
    for (int64_t i = 0; i < n; ++i) d[i] = s[i];
    return;
  }
  const size_t e = DTypeSize(t);
  std::memmove(static_cast<char*>(dst) + dst_off * e, static_cast<const char*>(src) + src_off * e,
               static_cast<size_t>(n) * e);
}

Tensor MakeInt64Tensor(const std::vector<int64_t>& values) {
  Tensor t = Tensor::Allocate(DType::kInt64, {static_cast<int64_t>(values.size())});
  std::copy(values.begin(), values.end(), t.data<int64_t>());
  return t;
}

std::string DescribeInput(const NodeView& node, int i) {
  const auto& ins = node.node().inputs;
  return StrCat("input ", i, " '", i < static_cast<int>(ins.size()) ? ins[i] : "", "'");
}

Status CheckTensorInputs(KernelContext& ctx) {
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    if (ctx.has_input(i) && !ctx.input_value(i).is_tensor())
      return ctx.node().Fail(DescribeInput(ctx.node(), i), " must be a tensor");
  }
  return Status::Ok();
}

Status RequireInputs(KernelContext& ctx, int n) {
  for (int i = 0; i < n; ++i)
    if (!ctx.has_input(i)) return ctx.node().Invalid("missing required input ", i);
  return CheckTensorInputs(ctx);
}

// "[batch,3,?]" for messages.
static std::string DimsText(const std::vector<Dim>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ",";
    s += dims[i].known()          ? std::to_string(dims[i].value)
         : dims[i].symbol.empty() ? "?"
                                  : dims[i].symbol;
  }
  return s + "]";
}

Status CheckElementCount(const NodeView& node, const std::vector<Dim>& dims) {
  int64_t n = 1;
  for (const Dim& d : dims)
    if (d.known() && d.value == 0) return Status::Ok();
  for (const Dim& d : dims) {
    if (!d.known() || d.value < 0) continue;
    if (!CheckedMul(n, d.value, &n) || n > kMaxOutputElements)
      return node.Error(ErrorCode::kLimit, "output shape ", DimsText(dims),
                        " has more than 2^46 elements");
  }
  return Status::Ok();
}

Status CheckOutputSize(const NodeView& node, int i, DType dtype, const Shape& shape,
                       uint64_t max_bytes) {
  // Every kernel output passes here on every run: the messages are built only when one fails.
  bool fits = true;
  for (int64_t d : shape) fits = fits && d >= 0;
  uint64_t bytes = 0;
  if (fits && memory::TensorBytesWithin(dtype, shape, max_bytes, &bytes)) return Status::Ok();
  const auto& outs = node.node().outputs;
  const std::string who =
      StrCat("output ", i,
             i >= 0 && i < static_cast<int>(outs.size()) ? " '" + outs[i] + "'" : std::string());
  for (int64_t d : shape)
    if (d < 0) return node.Fail(who, " would have a negative dim ", ShapeToString(shape));
  return memory::CheckTensorBytes(who, dtype, shape, max_bytes)
      .WithContext(node.node().Describe() + ": ");
}

StatusOr<Tensor> NewOutput(KernelContext& ctx, int i, DType dtype, const Shape& shape) {
  ONYX_RETURN_IF_ERROR(CheckOutputSize(ctx.node(), i, dtype, shape, memory::TensorByteCeiling()));
  return ctx.Output(i, dtype, shape);
}

TypeInfo RankedType(DType t, std::vector<Dim> dims) {
  TypeInfo ti = TypeInfo::Tensor(t);
  ti.has_shape = true;
  ti.dims = std::move(dims);
  return ti;
}

TypeInfo UnknownDimsType(DType t, int64_t rank) {
  return RankedType(t, std::vector<Dim>(static_cast<size_t>(rank)));
}

bool IsFloatStatic(const TypeInfo& t) {
  return t.is_tensor() && t.elem == DType::kFloat && t.shape_is_static();
}

bool Present(const std::vector<TypeInfo>& types, size_t i) {
  return i < types.size() && types[i].kind != TypeInfo::Kind::kUnknown;
}

namespace {

// Which runtime ParallelFor uses. With oneDNN's GNU OpenMP build (x86), the engine's own loops
// run on the same OpenMP team so that two thread pools never spin against each other on the
// same cores (docs/threading.md has the measurements). ONYX_PARALLEL_RUNTIME=tbb|openmp
// overrides the choice, for those measurements.
bool UseOpenMp() {
#ifdef ONYX_HAVE_OPENMP
  static const bool use = [] {
    const char* env = std::getenv("ONYX_PARALLEL_RUNTIME");
    return !(env && std::string(env) == "tbb");
  }();
  return use;
#else
  return false;
#endif
}

}  // namespace

int64_t MinParallelWork() {
  // Measured on ShuffleNet at 2 threads (docs/threading.md): its 28x28x136 channel shuffles
  // (107K elements) split in two run 0.05-0.1 ms faster per model run on OpenMP.
  return UseOpenMp() ? int64_t{1} << 16 : int64_t{1} << 18;
}

void ParallelFor(int64_t n, int64_t work_per_item, int threads,
                 const std::function<void(int64_t, int64_t)>& fn) {
  // Below this much work a parallel split costs more than it saves.
  constexpr double kParallelMinWork = 1 << 16;
  if (n <= 0) return;
  work_per_item = std::max<int64_t>(work_per_item, 1);
  // In double: n * work_per_item may overflow int64 for huge user-given shapes.
  if (threads <= 1 || n == 1 ||
      static_cast<double>(n) * static_cast<double>(work_per_item) < kParallelMinWork) {
    fn(0, n);
    return;
  }
  // Chunks of at least this much work keep scheduling overhead small against memory traffic.
  constexpr int64_t kMinChunkWork = int64_t{1} << 14;
  const int64_t grain = std::max<int64_t>(1, kMinChunkWork / work_per_item);
#ifdef ONYX_HAVE_OPENMP
  if (UseOpenMp()) {
    // One contiguous block per thread: elementwise work is uniform, and it keeps each thread on
    // its own cache lines. Small work leaves threads without a block.
    const int64_t blocks = std::min<int64_t>(threads, (n + grain - 1) / grain);
    if (blocks <= 1) {
      fn(0, n);
      return;
    }
    // The whole team starts even when fewer blocks have work: libgomp ends the workers beyond a
    // smaller team when it starts, and the next full-size region (a oneDNN primitive) creates
    // them again. At 16 threads DenseNet-121 made about 200 threads per run that way and ran
    // slower than at 8 (docs/threading.md). The stride covers a team smaller than asked for
    // (nested, OMP_THREAD_LIMIT).
#pragma omp parallel num_threads(threads)
    {
      const int64_t team = omp_get_num_threads();
      for (int64_t b = omp_get_thread_num(); b < blocks; b += team) {
        const int64_t begin = n * b / blocks, end = n * (b + 1) / blocks;
        if (begin < end) fn(begin, end);
      }
    }
    return;
  }
#endif
  auto run = [&] {
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, n, grain),
                      [&](const tbb::blocked_range<int64_t>& r) { fn(r.begin(), r.end()); });
  };
  if (threads < tbb::this_task_arena::max_concurrency()) {
    tbb::task_arena arena(threads);
    arena.execute(run);
  } else {
    run();
  }
}

void ReleaseIdleWorkers(int threads) {
#ifdef ONYX_HAVE_OPENMP
  // libgomp keeps a pool per thread that starts parallel regions; this releases only ours. A
  // smaller team of two or more lets the workers beyond it exit when it starts (libgomp's
  // gomp_team_start), so only a run on one thread, which starts no region, needs this. A clang
  // build (the sanitizer trees) runs onyx's loops on LLVM's libomp beside oneDNN's libgomp, and
  // this then releases libomp's pool only.
  thread_local int previous = 0;
  if (threads == 1 && previous > 1 && !omp_in_parallel()) omp_pause_resource_all(omp_pause_soft);
  previous = threads;
#else
  (void)threads;
#endif
}

SliceRange ResolveSliceRange(int64_t start, int64_t end, int64_t step, int64_t dim) {
  if (start < 0) start += dim;
  if (end < 0) end += dim;
  int64_t diff;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
    diff = end - start;
  } else {
    start = std::clamp<int64_t>(start, 0, std::max<int64_t>(dim - 1, 0));
    end = std::clamp<int64_t>(end, -1, dim - 1);
    diff = start - end;
  }
  const int64_t abs_step = step > 0 ? step : (step == INT64_MIN ? INT64_MAX : -step);
  return {start, (dim == 0 || diff <= 0) ? 0 : (diff - 1) / abs_step + 1};
}

const std::string& InputName(const NodeView& node, int i) {
  static const std::string kNone;
  const auto& inputs = node.node().inputs;
  return i >= 0 && static_cast<size_t>(i) < inputs.size() ? inputs[i] : kNone;
}

}  // namespace onyx::kernels
