// Magnitude pruning of Conv and MatMul/Gemm weights: candidate selection, group scores, the three
// threshold methods and writing the weights back (docs/sparsity.md).
#include "engine/prune/pruning.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <set>

#include "engine/model_loader.h"
#include "engine/tensor_proto.h"
#include "onnx/onnx-ml.pb.h"
#include "onyx/tensor.h"

namespace onyx::prune {
namespace {

// One weight to prune, with its values and per-group statistics.
struct Candidate {
  LayerReport report;
  int init_index = -1;
  GroupLayout layout;
  std::vector<float> w;
  std::vector<double> scores;
  // Groups sorted by score, with the running count of their nonzero elements: the zeros for any
  // threshold in O(log groups), which the flat and triangular searches need.
  std::vector<double> sorted_scores;
  std::vector<int64_t> nonzero_prefix;  // nonzero_prefix[k]: nonzeros in the k lowest groups
  int64_t zeros_before = 0;
  double span = 0;  // the largest finite group score: magnitudes range over [0, span]

  int64_t ZerosAt(double threshold) const {
    const int64_t k = std::upper_bound(sorted_scores.begin(), sorted_scores.end(), threshold) -
                      sorted_scores.begin();
    return zeros_before + nonzero_prefix[k];
  }
};

bool IsOnnxDomain(const std::string& d) {
  return d.empty() || d == "ai.onnx";
}

int64_t IntAttr(const onnx::NodeProto& n, const std::string& name, int64_t def) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return a.i();
  return def;
}

// The group element offsets of group (o, c, r) call f(flat index).
template <typename F>
void ForGroup(const GroupLayout& g, int64_t o, int64_t cg, int64_t r, F f) {
  const int64_t c0 = cg * g.block, c1 = std::min(g.channels, c0 + g.block);
  for (int64_t c = c0; c < c1; ++c) f((o * g.channels + c) * g.inner + r);
}

// Visits every group in score order (o, cg, r), the same order as GroupScores.
template <typename F>
void ForEachGroup(const GroupLayout& g, F f) {
  const int64_t gpr = g.groups_per_row();
  int64_t k = 0;
  for (int64_t o = 0; o < g.outer; ++o)
    for (int64_t cg = 0; cg < gpr; ++cg)
      for (int64_t r = 0; r < g.inner; ++r) f(k++, o, cg, r);
}

void Prepare(Candidate& c) {
  c.scores = GroupScores(c.w.data(), c.layout);
  const int64_t ng = c.layout.num_groups();
  std::vector<int64_t> nonzeros(ng, 0);
  int64_t zeros = 0;
  ForEachGroup(c.layout, [&](int64_t k, int64_t o, int64_t cg, int64_t r) {
    ForGroup(c.layout, o, cg, r, [&](int64_t i) {
      if (c.w[i] == 0.0f)
        ++zeros;
      else
        ++nonzeros[k];
    });
  });
  std::vector<int64_t> order(ng);
  for (int64_t k = 0; k < ng; ++k) order[k] = k;
  std::sort(order.begin(), order.end(),
            [&](int64_t a, int64_t b) { return c.scores[a] < c.scores[b]; });
  c.sorted_scores.resize(ng);
  c.nonzero_prefix.assign(ng + 1, 0);
  for (int64_t k = 0; k < ng; ++k) {
    c.sorted_scores[k] = c.scores[order[k]];
    c.nonzero_prefix[k + 1] = c.nonzero_prefix[k] + nonzeros[order[k]];
  }
  c.zeros_before = zeros;
  // The largest finite score: an infinite (or NaN) weight would make every threshold infinite.
  c.span = 0;
  for (int64_t k = ng - 1; k >= 0; --k)
    if (std::isfinite(c.sorted_scores[k])) {
      c.span = c.sorted_scores[k];
      break;
    }
}

// Per-layer thresholds for span fraction f (flat and triangular).
std::vector<double> SpanThresholds(const std::vector<Candidate>& cs, Method m, double f) {
  std::vector<double> t(cs.size());
  if (m == Method::kFlat) {
    double min_span = std::numeric_limits<double>::infinity();
    for (const auto& c : cs) min_span = std::min(min_span, c.span);
    for (auto& x : t) x = f * min_span;
  } else {
    const double first = cs.front().span, last = cs.back().span;
    const double n = static_cast<double>(cs.size());
    for (size_t i = 0; i < cs.size(); ++i)
      t[i] = f * (first + (last - first) * (n > 1 ? static_cast<double>(i) / (n - 1) : 0.0));
  }
  return t;
}

int64_t TotalZeros(const std::vector<Candidate>& cs, const std::vector<double>& t) {
  int64_t z = 0;
  for (size_t i = 0; i < cs.size(); ++i) z += cs[i].ZerosAt(t[i]);
  return z;
}

std::string ShapeString(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? "," : "") + std::to_string(s[i]);
  return out + "]";
}

void WriteRaw(onnx::TensorProto* tp, const void* data, size_t bytes) {
  tp->clear_float_data();
  tp->clear_int64_data();
  tp->clear_double_data();
  tp->clear_int32_data();
  tp->set_raw_data(data, bytes);
}

}  // namespace

StatusOr<Method> ParseMethod(const std::string& s) {
  if (s == "relative") return Method::kRelative;
  if (s == "flat") return Method::kFlat;
  if (s == "triangular") return Method::kTriangular;
  return InvalidArgument("--method must be relative, flat or triangular, got '", s, "'");
}

StatusOr<LayerSet> ParseLayerSet(const std::string& s) {
  if (s == "all") return LayerSet::kAll;
  if (s == "1x1") return LayerSet::k1x1;
  if (s == "conv") return LayerSet::kConv;
  if (s == "fc") return LayerSet::kFc;
  return InvalidArgument("--layers must be all, 1x1, conv or fc, got '", s, "'");
}

const char* MethodName(Method m) {
  switch (m) {
    case Method::kRelative:
      return "relative";
    case Method::kFlat:
      return "flat";
    case Method::kTriangular:
      return "triangular";
  }
  return "?";
}

std::vector<double> GroupScores(const float* w, const GroupLayout& g) {
  std::vector<double> s(g.num_groups());
  ForEachGroup(g, [&](int64_t k, int64_t o, int64_t cg, int64_t r) {
    double sum = 0;
    int64_t n = 0;
    ForGroup(g, o, cg, r, [&](int64_t i) {
      sum += static_cast<double>(w[i]) * w[i];
      ++n;
    });
    // A NaN weight's group is never pruned (and keeps the sort below well defined).
    s[k] = std::isnan(sum) ? std::numeric_limits<double>::infinity()
                           : std::sqrt(sum / static_cast<double>(n));
  });
  return s;
}

double Percentile(std::vector<double> x, double q) {
  if (x.empty()) return 0;
  std::sort(x.begin(), x.end());
  const double pos = q / 100.0 * static_cast<double>(x.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, x.size() - 1);
  if (x[lo] == x[hi]) return x[lo];  // also two infinities, whose difference is NaN
  return x[lo] + (x[hi] - x[lo]) * (pos - static_cast<double>(lo));
}

StatusOr<PruneReport> PruneModel(onnx::ModelProto* model, const PruneOptions& opt,
                                 const std::function<void(const std::string&)>& progress) {
  if (!(opt.sparsity >= 0.0 && opt.sparsity <= 1.0))
    return InvalidArgument("--sparsity must be in [0, 1], got ", opt.sparsity);
  if (opt.block < 1) return InvalidArgument("--block must be at least 1, got ", opt.block);
  onnx::GraphProto* gp = model->mutable_graph();
  std::map<std::string, int> init_index;
  for (int i = 0; i < gp->initializer_size(); ++i) init_index[gp->initializer(i).name()] = i;

  PruneReport rep;
  std::vector<Candidate> cs;
  std::map<std::string, size_t> seen;  // initializer → candidate
  for (const auto& n : gp->node()) {
    if (!IsOnnxDomain(n.domain()) || n.input_size() < 2) continue;
    const bool conv = n.op_type() == "Conv";
    const bool fc = n.op_type() == "MatMul" || n.op_type() == "Gemm";
    if (!conv && !fc) continue;
    if (conv && opt.layers == LayerSet::kFc) continue;
    if (fc && (opt.layers == LayerSet::kConv || opt.layers == LayerSet::k1x1)) continue;
    const std::string& wname = n.input(1);
    auto it = init_index.find(wname);
    if (it == init_index.end()) continue;  // computed or fed: not a constant weight
    const onnx::TensorProto& tp = gp->initializer(it->second);
    const std::string where = n.op_type() + " '" + n.name() + "' weight '" + wname + "'";
    std::vector<int64_t> dims(tp.dims().begin(), tp.dims().end());
    GroupLayout layout;
    layout.block = opt.block;
    if (conv) {
      if (dims.size() < 3) {
        rep.skipped.push_back(where + ": rank " + std::to_string(dims.size()) + " (expected >= 3)");
        continue;
      }
      bool one_by_one = true;
      for (size_t d = 2; d < dims.size(); ++d) one_by_one = one_by_one && dims[d] == 1;
      if (opt.layers == LayerSet::k1x1 && !one_by_one) continue;
      layout.channels = dims[0];
      layout.inner = 1;
      for (size_t d = 1; d < dims.size(); ++d) layout.inner *= dims[d];
    } else {
      if (dims.size() != 2) {
        rep.skipped.push_back(where + ": rank " + std::to_string(dims.size()) + " (expected 2)");
        continue;
      }
      const bool trans_b = n.op_type() == "Gemm" && IntAttr(n, "transB", 0) != 0;
      if (trans_b) {  // B is [N, K]: output channel n is the outer axis
        layout.channels = dims[0];
        layout.inner = dims[1];
      } else {  // B is [K, N]
        layout.outer = dims[0];
        layout.channels = dims[1];
      }
    }
    auto prev = seen.find(wname);
    if (prev != seen.end()) {
      const GroupLayout& p = cs[prev->second].layout;
      if (p.outer != layout.outer || p.channels != layout.channels)
        rep.skipped.push_back(where + ": also read by " + cs[prev->second].report.op_type + " '" +
                              cs[prev->second].report.node +
                              "' along another output axis; grouped as that node reads it");
      continue;
    }
    if (tp.data_type() != onnx::TensorProto::FLOAT) {
      rep.skipped.push_back(where + ": element type " + std::to_string(tp.data_type()) +
                            " (only float32 weights are pruned)");
      continue;
    }
    if (tp.data_location() == onnx::TensorProto::EXTERNAL)
      return Unsupported(where,
                         " is stored in external data, which onyx prune does not handle; "
                         "save the model with its tensors inline first (onnx.save with "
                         "save_as_external_data=False)");
    ONYX_ASSIGN_OR_RETURN(Tensor t, engine::TensorFromProto(tp, engine::ExternalDataContext{}));
    Candidate c;
    c.report.initializer = wname;
    c.report.node = n.name();
    c.report.op_type = n.op_type();
    c.report.shape = dims;
    c.report.elements = t.numel();
    c.init_index = it->second;
    c.layout = layout;
    c.w.assign(t.data<float>(), t.data<float>() + t.numel());
    if (c.w.empty()) continue;
    Prepare(c);
    seen[wname] = cs.size();
    cs.push_back(std::move(c));
  }
  if (cs.empty()) return rep;

  // Thresholds.
  std::vector<double> thr(cs.size(), -1.0);  // < 0: prune nothing
  if (opt.method == Method::kRelative) {
    if (opt.sparsity > 0)
      for (size_t i = 0; i < cs.size(); ++i)
        thr[i] = Percentile(cs[i].sorted_scores, 100.0 * opt.sparsity);
  } else if (opt.sparsity > 0) {
    // The smallest span fraction f in [0, 1] whose thresholds reach the target overall sparsity.
    int64_t total = 0;
    for (const auto& c : cs) total += c.report.elements;
    const auto target = static_cast<int64_t>(std::ceil(opt.sparsity * static_cast<double>(total)));
    double lo = 0, hi = 1;
    if (TotalZeros(cs, SpanThresholds(cs, opt.method, 1.0)) < target) {
      lo = 1;
    } else {
      for (int it = 0; it < 60; ++it) {
        const double mid = 0.5 * (lo + hi);
        if (TotalZeros(cs, SpanThresholds(cs, opt.method, mid)) >= target)
          hi = mid;
        else
          lo = mid;
      }
    }
    rep.span_fraction = hi;
    thr = SpanThresholds(cs, opt.method, hi);
  }

  // Apply.
  int64_t done = 0;
  for (size_t i = 0; i < cs.size(); ++i) {
    Candidate& c = cs[i];
    c.report.threshold = thr[i];
    if (thr[i] >= 0)
      ForEachGroup(c.layout, [&](int64_t k, int64_t o, int64_t cg, int64_t r) {
        if (c.scores[k] <= thr[i]) ForGroup(c.layout, o, cg, r, [&](int64_t e) { c.w[e] = 0; });
      });
    int64_t zeros = 0;
    for (float v : c.w) zeros += v == 0.0f;
    c.report.zeros = zeros;
    rep.elements += c.report.elements;
    rep.zeros += zeros;
    ++done;
    if (progress)
      progress("pruned " + std::to_string(done) + "/" + std::to_string(cs.size()) + " " +
               c.report.initializer + " " + ShapeString(c.report.shape));
  }

  // Write back: dense in place, or as sparse initializers (removing the dense ones).
  std::set<int> to_remove;
  for (Candidate& c : cs) {
    onnx::TensorProto* tp = gp->mutable_initializer(c.init_index);
    if (!opt.sparse_initializers) {
      WriteRaw(tp, c.w.data(), c.w.size() * sizeof(float));
    } else {
      std::vector<float> values;
      std::vector<int64_t> indices;
      for (size_t e = 0; e < c.w.size(); ++e)
        if (c.w[e] != 0.0f) {
          values.push_back(c.w[e]);
          indices.push_back(static_cast<int64_t>(e));
        }
      onnx::SparseTensorProto* sp = gp->add_sparse_initializer();
      for (int64_t d : c.report.shape) sp->add_dims(d);
      onnx::TensorProto* v = sp->mutable_values();
      v->set_name(tp->name());
      v->set_data_type(onnx::TensorProto::FLOAT);
      v->add_dims(static_cast<int64_t>(values.size()));
      WriteRaw(v, values.data(), values.size() * sizeof(float));
      onnx::TensorProto* ix = sp->mutable_indices();
      ix->set_data_type(onnx::TensorProto::INT64);
      ix->add_dims(static_cast<int64_t>(indices.size()));
      WriteRaw(ix, indices.data(), indices.size() * sizeof(int64_t));
      to_remove.insert(c.init_index);
    }
    rep.layers.push_back(std::move(c.report));
  }
  for (auto it = to_remove.rbegin(); it != to_remove.rend(); ++it)
    gp->mutable_initializer()->DeleteSubrange(*it, 1);
  // sparse_initializer exists from IR version 6 (ONNX 1.6).
  if (opt.sparse_initializers && model->ir_version() < 6) model->set_ir_version(6);
  return rep;
}

StatusOr<PruneReport> PruneModelFile(const std::string& in, const std::string& out,
                                     const PruneOptions& options) {
  onnx::ModelProto mp;
  ONYX_RETURN_IF_ERROR(engine::ReadModelProto(in, ResolveLimits(), &mp));
  ONYX_ASSIGN_OR_RETURN(PruneReport rep, PruneModel(&mp, options));
  std::ofstream f(out, std::ios::binary);
  if (!f || !mp.SerializeToOstream(&f)) return IoError("cannot write '", out, "'");
  return rep;
}

}  // namespace onyx::prune
