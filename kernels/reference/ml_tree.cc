// Flat tree-ensemble layout and its blocked, threaded evaluation (see ml_tree.h).
#include "kernels/reference/ml_tree.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <type_traits>
#include <unordered_map>
#include <utility>

#include "kernels/op_helpers.h"

namespace onyx::kernels::reference {
namespace {

struct PairHash {
  size_t operator()(const std::pair<int64_t, int64_t>& p) const {
    // Unsigned: tree and node ids are user data and may be anything.
    const uint64_t mixed =
        static_cast<uint64_t>(p.first) * 1000003u ^ static_cast<uint64_t>(p.second);
    return std::hash<uint64_t>()(mixed);
  }
};

template <typename T>
T LeafBits(int32_t index) {
  // A multi-target leaf's header index in `weights`, kept in the bytes of the unused threshold.
  T v{};
  std::memcpy(&v, &index, sizeof(index));
  return v;
}

template <typename T>
int32_t LeafIndex(T v) {
  int32_t index;
  std::memcpy(&index, &v, sizeof(index));
  return index;
}

}  // namespace

template <typename T>
StatusOr<Forest<T>> CompileForest(const TreeEnsembleSpec& s) {
  const size_t n = s.tree_ids.size();
  Forest<T> f;
  f.n_targets = s.n_targets;
  if (n == 0) return InvalidModel("attribute 'nodes_treeids' is empty");
  if (n > static_cast<size_t>(std::numeric_limits<int32_t>::max() / 2))
    return LimitExceeded("the ensemble has ", n, " nodes, more than this kernel indexes");
  std::unordered_map<std::pair<int64_t, int64_t>, int64_t, PairHash> index;
  index.reserve(n);
  std::vector<int64_t> tree_first;  // the first node listed for each tree: its root (as ORT)
  std::unordered_map<int64_t, size_t> tree_pos;
  for (size_t i = 0; i < n; ++i) {
    if (!index.emplace(std::make_pair(s.tree_ids[i], s.node_ids[i]), i).second)
      return InvalidModel("node ", s.node_ids[i], " of tree ", s.tree_ids[i],
                          " appears twice in 'nodes_nodeids'");
    if (tree_pos.emplace(s.tree_ids[i], tree_first.size()).second)
      tree_first.push_back(static_cast<int64_t>(i));
  }
  if (!s.roots.empty()) {
    for (int64_t r : s.roots)
      if (r < 0 || r >= static_cast<int64_t>(n))
        return InvalidModel("tree root ", r, " is outside [0, ", n, ")");
    tree_first = s.roots;
  }
  // Leaf weights, grouped per node.
  std::vector<std::vector<std::pair<int32_t, T>>> node_weights(n);
  for (size_t w = 0; w < s.weights.size(); ++w) {
    auto it = index.find({s.weight_tree_ids[w], s.weight_node_ids[w]});
    if (it == index.end())
      return InvalidModel("weight ", w, " is for node ", s.weight_node_ids[w], " of tree ",
                          s.weight_tree_ids[w], ", which 'nodes_nodeids' does not list");
    const int64_t target = s.weight_targets[w];
    if (target < 0 || target >= s.n_targets)
      return InvalidModel("weight ", w, " is for target/class ", target, ", outside [0, ",
                          s.n_targets, ")");
    node_weights[it->second].push_back(
        {static_cast<int32_t>(target), static_cast<T>(s.weights[w])});
  }
  f.single_weight = s.n_targets == 1;
  bool any_interior = false;
  f.uniform = true;
  for (size_t i = 0; i < n; ++i) {
    if (s.modes[i] == TreeMode::kLeaf) continue;
    if (!any_interior) f.mode = s.modes[i];
    any_interior = true;
    if (s.modes[i] != f.mode || s.modes[i] == TreeMode::kMember ||
        (!s.missing_true.empty() && s.missing_true[i]))
      f.uniform = false;
    if (s.feature_ids[i] < 0 || s.feature_ids[i] > std::numeric_limits<int32_t>::max())
      return InvalidModel("attribute 'nodes_featureids' [", i, "] = ", s.feature_ids[i],
                          " is outside [0, 2^31)");
    f.max_feature = std::max(f.max_feature, s.feature_ids[i]);
  }

  // Depth-first layout per tree (true child first); a node reached twice keeps one copy.
  enum : uint8_t { kNew, kOnPath, kDone };
  std::vector<uint8_t> state(n, kNew);
  std::vector<int32_t> flat(n, -1);
  f.nodes.reserve(n);
  f.flags.reserve(n);
  const auto child_of = [&](size_t i, int side) -> StatusOr<int64_t> {
    const int64_t id = side == 0 ? s.true_ids[i] : s.false_ids[i];
    auto it = index.find({s.tree_ids[i], id});
    if (it == index.end())
      return InvalidModel("attribute '", side == 0 ? "nodes_truenodeids" : "nodes_falsenodeids",
                          "' [", i, "] = ", id, " names no node of tree ", s.tree_ids[i]);
    return it->second;
  };
  struct Frame {
    int64_t node;
    int side;  // next child to visit
  };
  std::vector<Frame> stack;
  for (const int64_t root : tree_first) {
    if (state[root] == kDone) {
      f.roots.push_back(flat[root]);
      f.depths.push_back(-1);
      continue;
    }
    int32_t depth = 0;    // edges on the longest path from the root
    bool shared = false;  // a node reached twice: paths through it are not counted
    stack.push_back({root, 0});
    state[root] = kOnPath;
    while (!stack.empty()) {
      Frame& fr = stack.back();
      const size_t i = static_cast<size_t>(fr.node);
      if (fr.side == 0) {
        // Pre-order: place the node before its children.
        flat[i] = static_cast<int32_t>(f.nodes.size());
        depth = std::max(depth, static_cast<int32_t>(stack.size()) - 1);
        ForestNode<T> node{};
        const bool leaf = s.modes[i] == TreeMode::kLeaf;
        node.feature = leaf ? 0 : static_cast<int32_t>(s.feature_ids[i]);
        node.next[0] = node.next[1] = flat[i];
        if (leaf) {
          const auto& ws = node_weights[i];
          if (f.single_weight) {
            // One target: the weights' sum is the leaf's value (none gives 0).
            T sum = 0;
            for (const auto& w : ws) sum += w.second;
            node.value = sum;
          } else {
            // A header entry (target = the count) right before the leaf's weights: one cache
            // line holds both.
            node.value = LeafBits<T>(static_cast<int32_t>(f.weights.size()));
            f.weights.push_back({static_cast<int32_t>(ws.size()), T(0)});
            for (const auto& w : ws) f.weights.push_back({w.first, w.second});
          }
        } else if (s.modes[i] == TreeMode::kMember) {
          node.value = LeafBits<T>(static_cast<int32_t>(f.member_begin.size()));
          f.member_begin.push_back(static_cast<int32_t>(f.members.size()));
          if (i < s.members.size())
            for (double m : s.members[i]) f.members.push_back(static_cast<T>(m));
        } else {
          node.value = static_cast<T>(s.thresholds[i]);
        }
        f.nodes.push_back(node);
        f.flags.push_back(
            static_cast<uint8_t>(static_cast<uint8_t>(s.modes[i]) |
                                 ((!s.missing_true.empty() && s.missing_true[i]) ? 0x10 : 0)));
        if (leaf) {
          state[i] = kDone;
          stack.pop_back();
          continue;
        }
      }
      if (fr.side == 2) {
        state[i] = kDone;
        stack.pop_back();
        continue;
      }
      const int side = fr.side++;
      ONYX_ASSIGN_OR_RETURN(const int64_t c, child_of(i, side));
      if (state[c] == kOnPath)
        return InvalidModel("the nodes of tree ", s.tree_ids[i], " form a cycle through node ",
                            s.node_ids[c]);
      if (state[c] == kDone) {
        f.nodes[flat[i]].next[side] = flat[c];
        shared = true;
        continue;
      }
      state[c] = kOnPath;
      // The child's flat index is the next one placed.
      f.nodes[flat[i]].next[side] = static_cast<int32_t>(f.nodes.size());
      stack.push_back({c, 0});
    }
    f.roots.push_back(flat[root]);
    f.depths.push_back(shared ? -1 : depth);
  }
  f.member_begin.push_back(static_cast<int32_t>(f.members.size()));  // the last set's end
  if (f.weights.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max()) ||
      f.members.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max()))
    return LimitExceeded("the ensemble has ", f.weights.size(), " leaf weights and ",
                         f.members.size(), " set members, too many");
  return f;
}

template StatusOr<Forest<float>> CompileForest<float>(const TreeEnsembleSpec&);
template StatusOr<Forest<double>> CompileForest<double>(const TreeEnsembleSpec&);

namespace {

// Rows walked through one tree in lockstep: independent chains of loads that the core overlaps
// (on the 300-tree forest: 4 rows 127 ms, 8 rows 83 ms, 16 rows 70 ms, 32 rows 87 ms).
constexpr int kGroup = 16;
// A block of rows passes through one tree before the next: the tree stays in cache while the
// rows stream, so the forest is read from memory once per block. Blocks are as large as the
// accumulators allow (one per thread when the rows fit): on a 300-tree, 735k-node forest and
// 10,000 rows, 128-row blocks took 170 ms, 2048-row blocks 103 ms, one block 83 ms.
constexpr int64_t kMaxBlockScores = int64_t{1} << 18;  // rows x targets per block
constexpr int64_t kMinBlockRows = 2 * kGroup;          // below this a thread is not worth its start

template <TreeMode M, typename T>
inline bool Test(T x, T v) {
  if constexpr (M == TreeMode::kLeq) return x <= v;
  if constexpr (M == TreeMode::kLt) return x < v;
  if constexpr (M == TreeMode::kGte) return x >= v;
  if constexpr (M == TreeMode::kGt) return x > v;
  if constexpr (M == TreeMode::kEq) return x == v;
  return x != v;  // kNeq
}

template <typename T>
inline bool TestAny(const Forest<T>& f, uint8_t flags, T x, T v) {
  if ((flags & 0x10) && std::isnan(x)) return true;
  switch (static_cast<TreeMode>(flags & 0x0F)) {
    case TreeMode::kMember: {
      const int32_t set = LeafIndex(v);
      const T* begin = f.members.data() + f.member_begin[set];
      const T* end = f.members.data() + f.member_begin[set + 1];
      return std::find(begin, end, x) != end;
    }
    case TreeMode::kLeq:
      return x <= v;
    case TreeMode::kLt:
      return x < v;
    case TreeMode::kGte:
      return x >= v;
    case TreeMode::kGt:
      return x > v;
    case TreeMode::kEq:
      return x == v;
    case TreeMode::kNeq:
      return x != v;
    case TreeMode::kLeaf:
      return true;  // both sides are the leaf itself
  }
  return true;
}

// Trees at most this deep are walked a fixed number of steps (rows at a leaf early stay on it),
// with no test for the end: the step that finds nothing moved would cost a quarter of a
// depth-3 tree's walk.
constexpr int32_t kMaxFixedDepth = 10;

// Walks G rows (row g at x + g * stride) from `root` to their leaves; ids gets the leaves.
// depth >= 0: exactly that many steps; -1: until no row moves.
template <int G, TreeMode M, typename T>
inline void WalkUniform(const ForestNode<T>* nodes, int32_t root, int32_t depth, const T* x,
                        int64_t stride, int32_t* ids) {
  for (int g = 0; g < G; ++g) ids[g] = root;
  if (depth >= 0) {
    for (int32_t d = 0; d < depth; ++d) {
      for (int g = 0; g < G; ++g) {
        const ForestNode<T>& nd = nodes[ids[g]];
        ids[g] = nd.next[Test<M>(x[g * stride + nd.feature], nd.value) ? 0 : 1];
      }
    }
    return;
  }
  if constexpr (G == 1) {
    // One row: a branch per node, so that the core speculates down the predicted side and
    // starts the next node's load early (a select would wait for each compare); about 2x on a
    // forest that does not fit in cache.
    int32_t id = root;
    while (true) {
      const ForestNode<T>& nd = nodes[id];
      int32_t next;
      if (Test<M>(x[nd.feature], nd.value)) {
        next = nd.next[0];
      } else {
        next = nd.next[1];
      }
      if (next == id) break;
      id = next;
    }
    ids[0] = id;
    return;
  }
  bool moved = true;
  while (moved) {
    moved = false;
    for (int g = 0; g < G; ++g) {
      const ForestNode<T>& nd = nodes[ids[g]];
      const int32_t next = nd.next[Test<M>(x[g * stride + nd.feature], nd.value) ? 0 : 1];
      moved |= next != ids[g];
      ids[g] = next;
    }
  }
}

template <int G, typename T>
inline void WalkMixed(const Forest<T>& f, int32_t root, const T* x, int64_t stride, int32_t* ids) {
  const ForestNode<T>* nodes = f.nodes.data();
  const uint8_t* flags = f.flags.data();
  for (int g = 0; g < G; ++g) ids[g] = root;
  bool moved = true;
  while (moved) {
    moved = false;
    for (int g = 0; g < G; ++g) {
      const int32_t id = ids[g];
      const ForestNode<T>& nd = nodes[id];
      const int32_t next =
          nd.next[TestAny(f, flags[id], x[g * stride + nd.feature], nd.value) ? 0 : 1];
      moved |= next != id;
      ids[g] = next;
    }
  }
}

// Accumulates one leaf into a row's accumulators.
template <typename T>
struct Accumulate {
  const Forest<T>& f;
  TreeAggregate agg;
  inline void One(T w, T* score, uint8_t* has) const {
    switch (agg) {
      case TreeAggregate::kSum:
      case TreeAggregate::kAverage:
        *score += w;
        break;
      case TreeAggregate::kMin:
        *score = (!*has || w < *score) ? w : *score;
        break;
      case TreeAggregate::kMax:
        *score = (!*has || w > *score) ? w : *score;
        break;
    }
    *has = 1;
  }
  inline void Leaf(const ForestNode<T>& leaf, T* score, uint8_t* has) const {
    if (f.single_weight) {
      One(leaf.value, score, has);
      return;
    }
    const int32_t header = LeafIndex(leaf.value);
    const int32_t end = header + 1 + f.weights[header].target;
    for (int32_t k = header + 1; k < end; ++k) {
      const auto& w = f.weights[k];
      One(w.value, score + w.target, has + w.target);
    }
  }
};

// Walks G rows from tree `t`'s root to their leaves (ids gets the leaves).
template <int G, typename T>
inline void Walk(const Forest<T>& f, size_t t, const T* x, int64_t stride, int32_t* ids) {
  const ForestNode<T>* nodes = f.nodes.data();
  const int32_t root = f.roots[t];
  if (!f.uniform) {
    WalkMixed<G>(f, root, x, stride, ids);
    return;
  }
  const int32_t depth = f.depths[t] <= kMaxFixedDepth ? f.depths[t] : -1;
  switch (f.mode) {
    case TreeMode::kLeq:
      return WalkUniform<G, TreeMode::kLeq>(nodes, root, depth, x, stride, ids);
    case TreeMode::kLt:
      return WalkUniform<G, TreeMode::kLt>(nodes, root, depth, x, stride, ids);
    case TreeMode::kGte:
      return WalkUniform<G, TreeMode::kGte>(nodes, root, depth, x, stride, ids);
    case TreeMode::kGt:
      return WalkUniform<G, TreeMode::kGt>(nodes, root, depth, x, stride, ids);
    case TreeMode::kEq:
      return WalkUniform<G, TreeMode::kEq>(nodes, root, depth, x, stride, ids);
    default:
      return WalkUniform<G, TreeMode::kNeq>(nodes, root, depth, x, stride, ids);
  }
}

template <typename T>
void EvaluateBlock(const Forest<T>& f, TreeAggregate agg, const T* x, int64_t stride, int64_t rows,
                   T* score, uint8_t* has) {
  const int64_t k = f.n_targets;
  std::fill(score, score + rows * k, T(0));
  std::fill(has, has + rows * k, uint8_t{0});
  const Accumulate<T> acc{f, agg};
  const int64_t full = rows / kGroup * kGroup;
  int32_t ids[kGroup];
  for (size_t t = 0; t < f.roots.size(); ++t) {
    for (int64_t r0 = 0; r0 < full; r0 += kGroup) {
      Walk<kGroup>(f, t, x + r0 * stride, stride, ids);
      for (int64_t g = 0; g < kGroup; ++g)
        acc.Leaf(f.nodes[ids[g]], score + (r0 + g) * k, has + (r0 + g) * k);
    }
    // The last rows one at a time (a single row, for one-row requests).
    for (int64_t r = full; r < rows; ++r) {
      Walk<1>(f, t, x + r * stride, stride, ids);
      acc.Leaf(f.nodes[ids[0]], score + r * k, has + r * k);
    }
  }
}

}  // namespace

template <typename T>
void EvaluateForest(const Forest<T>& f, TreeAggregate agg, const Tensor& x, int threads,
                    const ForestBlockFn<T>& block_fn) {
  const int64_t n = x.dim(0);
  const int64_t cols = x.dim(1);
  const int64_t k = f.n_targets;
  if (n == 0) return;
  const int64_t max_rows = std::max<int64_t>(kGroup, kMaxBlockScores / k);
  int64_t blocks =
      std::max<int64_t>((n + max_rows - 1) / max_rows,
                        std::min<int64_t>(threads, (n + kMinBlockRows - 1) / kMinBlockRows));
  blocks = std::max<int64_t>(blocks, 1);
  const int64_t block_rows = ((n + blocks - 1) / blocks + kGroup - 1) / kGroup * kGroup;
  blocks = (n + block_rows - 1) / block_rows;
  // Rows are read in place when X already has the forest's type; otherwise they are converted
  // into a per-block buffer.
  const bool direct = x.dtype() == (std::is_same_v<T, float> ? DType::kFloat : DType::kDouble);
  // A forest of only leaves reads column 0 of a padded row: never outside the buffer.
  const int64_t stride = std::max<int64_t>(cols, 1);
  const int64_t work = static_cast<int64_t>(f.nodes.size()) * 4 + f.roots.size() * block_rows * 8;
  ParallelFor(blocks, work, threads, [&](int64_t b0, int64_t b1) {
    std::vector<T> score(block_rows * k);
    std::vector<uint8_t> has(block_rows * k);
    std::vector<T> buf;
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t r0 = b * block_rows;
      const int64_t rows = std::min(block_rows, n - r0);
      const T* src;
      if (direct && cols > 0) {
        src = x.data<T>() + r0 * cols;
      } else {
        buf.assign(rows * stride, T(0));
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t c = 0; c < cols; ++c)
            buf[r * stride + c] = static_cast<T>(ElementAsDouble(x, (r0 + r) * cols + c));
        src = buf.data();
      }
      EvaluateBlock(f, agg, src, stride, rows, score.data(), has.data());
      block_fn(r0, rows, score.data(), has.data());
    }
  });
}

template void EvaluateForest<float>(const Forest<float>&, TreeAggregate, const Tensor&, int,
                                    const ForestBlockFn<float>&);
template void EvaluateForest<double>(const Forest<double>&, TreeAggregate, const Tensor&, int,
                                     const ForestBlockFn<double>&);

float MlLogistic(float v) {
  const float e = 1.0f / (1.0f + std::exp(-std::abs(v)));
  return v < 0 ? 1.0f - e : e;
}

float MlProbit(float v) {
  // sqrt(2) * erfinv(2v - 1), with the closed-form erf inverse (Winitzki, a = 0.147) that ONNX
  // Runtime uses, so results agree with it to float precision.
  const float y = 2.0f * v - 1.0f;
  const float sign = y < 0 ? -1.0f : 1.0f;
  const float ln = std::log((1.0f - y) * (1.0f + y));
  const float kA = 0.147f;
  const float kPi = 3.14159f;
  const float t = 2.0f / (kPi * kA) + 0.5f * ln;
  const float inv = sign * std::sqrt(-t + std::sqrt(t * t - ln / kA));
  return 1.41421356f * inv;
}

void MlSoftmax(float* v, int64_t n) {
  float mx = -std::numeric_limits<float>::max();
  for (int64_t i = 0; i < n; ++i) mx = std::max(mx, v[i]);
  float sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    v[i] = std::exp(v[i] - mx);
    sum += v[i];
  }
  for (int64_t i = 0; i < n; ++i) v[i] /= sum;
}

void MlSoftmaxZero(float* v, int64_t n) {
  float mx = -std::numeric_limits<float>::max();
  for (int64_t i = 0; i < n; ++i) mx = std::max(mx, v[i]);
  const float scale = std::exp(-mx);
  float sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (v[i] > 1e-7f || v[i] < -1e-7f) {
      v[i] = std::exp(v[i] - mx);
      sum += v[i];
    } else {
      v[i] *= scale;
    }
  }
  for (int64_t i = 0; i < n; ++i) v[i] /= sum;
}

void ApplyMlPostTransform(MlPostTransform t, float* v, int64_t n) {
  switch (t) {
    case MlPostTransform::kNone:
      return;
    case MlPostTransform::kLogistic:
      for (int64_t i = 0; i < n; ++i) v[i] = MlLogistic(v[i]);
      return;
    case MlPostTransform::kProbit:
      for (int64_t i = 0; i < n; ++i) v[i] = MlProbit(v[i]);
      return;
    case MlPostTransform::kSoftmax:
      MlSoftmax(v, n);
      return;
    case MlPostTransform::kSoftmaxZero:
      MlSoftmaxZero(v, n);
      return;
  }
}

}  // namespace onyx::kernels::reference
