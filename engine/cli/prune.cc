// `onyx prune`: options, the per-layer table, writing the model, and the dense-vs-pruned check.
#include "engine/cli/prune.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "engine/cli/cli_util.h"
#include "engine/model_loader.h"
#include "engine/prune/pruning.h"
#include "engine/tensor_proto.h"
#include "onnx/onnx-ml.pb.h"
#include "onyx/session.h"

namespace onyx::cli {

const char* const kPruneHelp =
    "usage: onyx prune MODEL -o OUT [options]\n"
    "\n"
    "Zeroes the smallest Conv and MatMul/Gemm weights without retraining (docs/sparsity.md),\n"
    "writes OUT, prints per layer the threshold and the sparsity reached, and compares the\n"
    "pruned model with the dense one: top-1/top-5 accuracy on a labelled set, or else the output\n"
    "deviation on random inputs.\n"
    "\n"
    "options:\n"
    "  -o, --output OUT        the pruned model (required)\n"
    "  --method M              relative (default): per layer, the S-th percentile of the scores\n"
    "                          | flat: one threshold f x (smallest layer span) for all layers\n"
    "                          | triangular: thresholds rising linearly from f x span(first\n"
    "                          layer) to f x span(last layer); f is searched so the overall\n"
    "                          sparsity reaches S\n"
    "  --sparsity S            0..1 (default 0.5)\n"
    "  --layers L              all (default) | 1x1 (1x1 Conv only) | conv | fc (MatMul/Gemm)\n"
    "  --block B               prune groups of B consecutive output channels at one input\n"
    "                          position together, ranked by the group's RMS (default 1)\n"
    "  --sparse-initializers   write the pruned weights as COO sparse_initializer\n"
    "  --inputs X.pb --labels L.txt\n"
    "                          labelled set: a TensorProto whose first dim is the sample, fed\n"
    "                          one sample at a time to the first input, and one integer class\n"
    "                          per line; reports top-1/top-5 of dense and pruned\n"
    "  --samples N             random inputs for the deviation check (default 8; 0: none)\n"
    "  --shape NAME=1x3x224x224  shape for generated inputs (symbolic dims default to 1)\n"
    "  --threads N             intra-op threads for the check\n";

namespace {

int Fail(const Status& s) {
  std::cerr << "onyx prune: error: " << s.message() << "\n";
  return 1;
}

std::string Dims(const std::vector<int64_t>& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) out += (i ? "x" : "") + std::to_string(s[i]);
  return out;
}

// Indices of the k largest entries of row `r` of a [rows, cols] float tensor, largest first.
std::vector<int64_t> TopK(const float* row, int64_t cols, int k) {
  std::vector<int64_t> idx(cols);
  for (int64_t i = 0; i < cols; ++i) idx[i] = i;
  k = static_cast<int>(std::min<int64_t>(k, cols));
  std::partial_sort(idx.begin(), idx.begin() + k, idx.end(),
                    [&](int64_t a, int64_t b) { return row[a] > row[b]; });
  idx.resize(k);
  return idx;
}

// A float output whose last dim holds classes: [C] or [..., C] with C >= 2.
bool ClassifierShaped(const Tensor& t) {
  return t.dtype() == DType::kFloat && t.rank() >= 1 && t.dim(t.rank() - 1) >= 2;
}

struct Deviation {
  double max_abs = 0, sum_abs = 0, sum_sq_diff = 0, sum_sq_ref = 0;
  int64_t count = 0, rows = 0, top1_agree = 0;
};

void Accumulate(const Tensor& dense, const Tensor& pruned, Deviation& d) {
  const float* a = dense.data<float>();
  const float* b = pruned.data<float>();
  for (int64_t i = 0; i < dense.numel(); ++i) {
    const double diff = std::fabs(static_cast<double>(a[i]) - b[i]);
    d.max_abs = std::max(d.max_abs, diff);
    d.sum_abs += diff;
    d.sum_sq_diff += diff * diff;
    d.sum_sq_ref += static_cast<double>(a[i]) * a[i];
  }
  d.count += dense.numel();
  if (ClassifierShaped(dense)) {
    const int64_t cols = dense.dim(dense.rank() - 1), rows = dense.numel() / cols;
    for (int64_t r = 0; r < rows; ++r) {
      d.top1_agree += TopK(a + r * cols, cols, 1)[0] == TopK(b + r * cols, cols, 1)[0];
      ++d.rows;
    }
  }
}

StatusOr<std::vector<int64_t>> ReadLabels(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFound("cannot open labels file '", path, "'");
  std::vector<int64_t> labels;
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    auto v = ParseInt("label on line " + std::to_string(lineno) + " of " + path, line, 0);
    if (!v.ok()) return v.status();
    labels.push_back(*v);
  }
  return labels;
}

// Top-1/top-5 accuracy of the dense and pruned sessions on a labelled set.
Status RunLabelled(const Session& dense, const Session& pruned, const std::string& inputs_path,
                   const std::string& labels_path) {
  ONYX_ASSIGN_OR_RETURN(std::vector<int64_t> labels, ReadLabels(labels_path));
  ONYX_ASSIGN_OR_RETURN(Value xv, engine::ReadValueFile(inputs_path, TypeInfo{}));
  if (!xv.is_tensor()) return InvalidArgument("--inputs '", inputs_path, "' is not a tensor");
  const Tensor& x = xv.tensor();
  if (x.rank() < 1 || x.dim(0) != static_cast<int64_t>(labels.size()))
    return InvalidArgument("--inputs '", inputs_path, "' has shape ", ShapeToString(x.shape()),
                           " but --labels gives ", labels.size(), " labels (one per sample)");
  const auto required = dense.required_inputs();
  if (required.size() != 1)
    return Unsupported("the labelled check feeds one input; the model needs ", required.size());
  Shape one = x.shape();
  one[0] = 1;
  const int64_t per = x.numel() / std::max<int64_t>(1, x.dim(0));
  const size_t esize = DTypeSize(x.dtype());
  int64_t hits[2][2] = {{0, 0}, {0, 0}};  // [dense|pruned][top1|top5]
  for (int64_t s = 0; s < x.dim(0); ++s) {
    Tensor xs = Tensor::Allocate(x.dtype(), one);
    std::memcpy(xs.raw_data(), static_cast<const char*>(x.raw_data()) + s * per * esize,
                per * esize);
    NamedValues feeds{{required[0], Value(xs)}};
    for (int m = 0; m < 2; ++m) {
      NamedValues out;
      ONYX_RETURN_IF_ERROR((m == 0 ? dense : pruned).Run(feeds, {}, &out));
      const Tensor& y = out.front().second.tensor();
      if (!ClassifierShaped(y))
        return Unsupported("the first output is not a float [.., classes] tensor");
      const auto top = TopK(y.data<float>(), y.dim(y.rank() - 1), 5);
      hits[m][0] += top[0] == labels[s];
      hits[m][1] += std::find(top.begin(), top.end(), labels[s]) != top.end();
    }
    std::cerr << "\r  labelled set " << s + 1 << "/" << x.dim(0) << std::flush;
  }
  std::cerr << "\n";
  const double n = static_cast<double>(x.dim(0));
  std::printf(
      "labelled set (%lld samples): top-1 dense %.2f%% pruned %.2f%% (drop %.2f), "
      "top-5 dense %.2f%% pruned %.2f%% (drop %.2f)\n",
      static_cast<long long>(x.dim(0)), 100 * hits[0][0] / n, 100 * hits[1][0] / n,
      100 * (hits[0][0] - hits[1][0]) / n, 100 * hits[0][1] / n, 100 * hits[1][1] / n,
      100 * (hits[0][1] - hits[1][1]) / n);
  return Status::Ok();
}

// Output deviation of the pruned model from the dense one on `samples` random inputs.
Status RunRandom(const Session& dense, const Session& pruned, int samples,
                 const std::map<std::string, Shape>& shapes) {
  std::map<std::string, Deviation> dev;
  for (int s = 0; s < samples; ++s) {
    ONYX_ASSIGN_OR_RETURN(NamedValues feeds, GenerateInputs(dense, "random", shapes, 1000 + s));
    SetIndexSafeIntegers(&feeds);
    NamedValues a, b;
    ONYX_RETURN_IF_ERROR(dense.Run(feeds, {}, &a));
    ONYX_RETURN_IF_ERROR(pruned.Run(feeds, {}, &b));
    for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
      if (!a[i].second.is_tensor() || a[i].second.tensor().dtype() != DType::kFloat) continue;
      Accumulate(a[i].second.tensor(), b[i].second.tensor(), dev[a[i].first]);
    }
    std::cerr << "\r  random inputs " << s + 1 << "/" << samples << std::flush;
  }
  std::cerr << "\n";
  std::printf("output deviation, pruned vs dense, %d random inputs (uniform [0,1)):\n", samples);
  std::printf("  %-24s %12s %12s %12s %10s\n", "output", "max_abs", "mean_abs", "rel_l2",
              "top1_agree");
  for (const auto& [name, d] : dev) {
    std::string agree = "-";
    if (d.rows) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%lld/%lld", static_cast<long long>(d.top1_agree),
                    static_cast<long long>(d.rows));
      agree = buf;
    }
    std::printf("  %-24s %12.4g %12.4g %12.4g %10s\n", name.c_str(), d.max_abs,
                d.count ? d.sum_abs / d.count : 0.0,
                d.sum_sq_ref > 0 ? std::sqrt(d.sum_sq_diff / d.sum_sq_ref) : 0.0, agree.c_str());
  }
  return Status::Ok();
}

}  // namespace

int PruneMain(int argc, char** argv) {
  // "-o OUT" is the short form of --output.
  std::vector<std::string> storage(argv, argv + argc);
  for (auto& s : storage)
    if (s == "-o") s = "--output";
  std::vector<char*> args;
  for (auto& s : storage) args.push_back(s.data());
  auto a = ParseArgs(static_cast<int>(args.size()), args.data(), 2, {"sparse-initializers"},
                     {"output", "method", "sparsity", "layers", "block", "inputs", "labels",
                      "samples", "shape", "threads"});
  if (!a.ok()) return Fail(a.status());
  if (a->positional.size() != 1)
    return Fail(InvalidArgument("expected one MODEL (see onyx prune --help)"));
  if (!a->has("output")) return Fail(InvalidArgument("missing -o OUT (see onyx prune --help)"));
  prune::PruneOptions po;
  auto method = prune::ParseMethod(a->get("method", "relative"));
  if (!method.ok()) return Fail(method.status());
  po.method = *method;
  auto layers = prune::ParseLayerSet(a->get("layers", "all"));
  if (!layers.ok()) return Fail(layers.status());
  po.layers = *layers;
  {
    const std::string s = a->get("sparsity", "0.5");
    char* end = nullptr;
    po.sparsity = std::strtod(s.c_str(), &end);
    if (s.empty() || *end != '\0' || !(po.sparsity >= 0 && po.sparsity <= 1))
      return Fail(InvalidArgument("--sparsity must be a number in [0, 1], got '", s, "'"));
  }
  auto block = ParseInt("--block", a->get("block", "1"), 1);
  if (!block.ok()) return Fail(block.status());
  po.block = *block;
  po.sparse_initializers = a->has("sparse-initializers");
  auto samples = ParseInt("--samples", a->get("samples", "8"), 0);
  if (!samples.ok()) return Fail(samples.status());
  if (a->has("inputs") != a->has("labels"))
    return Fail(InvalidArgument("--inputs and --labels go together"));
  auto parsed_shapes = ParseShapes(*a);
  if (!parsed_shapes.ok()) return Fail(parsed_shapes.status());
  const std::map<std::string, Shape>& shapes = *parsed_shapes;
  SessionOptions so;
  if (a->has("threads")) {
    auto t = ParseInt("--threads", a->get("threads"), 1);
    if (!t.ok()) return Fail(t.status());
    so.intra_op_threads = *t;
  }

  const std::string path = a->positional[0], out_path = a->get("output");
  onnx::ModelProto mp;
  Status st = engine::ReadModelProto(path, ResolveLimits(), &mp);
  if (!st.ok()) return Fail(st);
  const bool check = *samples > 0 || a->has("labels");
  std::string dense_bytes;
  if (check && !mp.SerializeToString(&dense_bytes))
    return Fail(RuntimeError("cannot serialize the model"));
  std::cerr << "pruning " << path << " (" << prune::MethodName(po.method) << ", sparsity "
            << po.sparsity << ", block " << po.block << ")\n";
  auto rep = prune::PruneModel(&mp, po, [](const std::string& line) {
    std::cerr << "\r  " << line << "\x1b[K" << std::flush;
  });
  std::cerr << "\n";
  if (!rep.ok()) return Fail(rep.status());

  std::printf("%-40s %-6s %-14s %12s %9s\n", "layer", "op", "shape", "threshold", "sparsity");
  for (const auto& l : rep->layers) {
    char thr[32] = "-";
    if (l.threshold >= 0) std::snprintf(thr, sizeof thr, "%.6g", l.threshold);
    std::printf("%-40s %-6s %-14s %12s %8.2f%%\n", l.initializer.c_str(), l.op_type.c_str(),
                Dims(l.shape).c_str(), thr, 100 * l.sparsity());
  }
  std::printf("total: %zu layers, %lld of %lld weights zero (%.2f%%)", rep->layers.size(),
              static_cast<long long>(rep->zeros), static_cast<long long>(rep->elements),
              100 * rep->sparsity());
  if (po.method != prune::Method::kRelative)
    std::printf(", span fraction f = %.6g", rep->span_fraction);
  std::printf("\n");
  if (po.method != prune::Method::kRelative && po.sparsity > 0 &&
      rep->sparsity() + 1e-12 < po.sparsity)
    std::printf(
        "note: the target sparsity %.4g is out of reach with thresholds within the span "
        "(f = 1)\n",
        po.sparsity);
  for (const auto& s : rep->skipped) std::printf("skipped: %s\n", s.c_str());
  if (rep->layers.empty()) std::printf("note: no weight matched --layers\n");

  std::string pruned_bytes;
  if (!mp.SerializeToString(&pruned_bytes))
    return Fail(RuntimeError("cannot serialize the pruned model"));
  mp.Clear();
  {
    std::ofstream out(out_path, std::ios::binary);
    out.write(pruned_bytes.data(), static_cast<std::streamsize>(pruned_bytes.size()));
    if (!out) return Fail(IoError("cannot write '", out_path, "'"));
  }
  std::printf("wrote %s\n", out_path.c_str());
  if (!check) return 0;

  auto dense = Session::CreateFromBytes(dense_bytes, so);
  if (!dense.ok()) return Fail(dense.status().WithContext("dense model: "));
  dense_bytes.clear();
  dense_bytes.shrink_to_fit();
  auto pruned = Session::CreateFromBytes(pruned_bytes, so);
  if (!pruned.ok()) return Fail(pruned.status().WithContext("pruned model: "));
  if (a->has("labels")) {
    st = RunLabelled(*dense, *pruned, a->get("inputs"), a->get("labels"));
    if (!st.ok()) return Fail(st);
  }
  if (*samples > 0) {
    st = RunRandom(*dense, *pruned, *samples, shapes);
    if (!st.ok()) return Fail(st);
  }
  return 0;
}

}  // namespace onyx::cli
