// Greedy-by-size offset assignment over liveness intervals (the classic best results for static
// DNN memory planning), with the max-live lower bound and the no-reuse sum for comparison.
#include "planner/arena_plan.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <map>
#include <numeric>
#include <string>

#include "memory/aligned_alloc.h"

namespace onyx::planner {
namespace {

// Sums saturate at SIZE_MAX: a layout that does not fit 64 bits then fails the arena ceiling
// instead of wrapping to a small block that kernels would write past.
size_t SatAdd(size_t a, size_t b) {
  size_t r;
  return __builtin_add_overflow(a, b, &r) ? SIZE_MAX : r;
}

// The placed intervals, for greedy placement's question "which of them overlap [a, b]?": those
// live at step a (a segment tree over steps whose nodes list the intervals covering them whole)
// and those starting in (a, b]. Output-sensitive; scanning every placed interval was quadratic
// in the model's length.
class PlacedIntervals {
 public:
  PlacedIntervals(int first_step, int last_step)
      : base_(first_step), steps_(std::max(1, last_step - first_step + 1)), cover_(4 * steps_) {}

  void Add(size_t id, const Interval& i) {
    Insert(1, 0, steps_ - 1, i.first - base_, i.last - base_, id);
    starts_.emplace(i.first, id);
  }

  template <typename Fn>
  void ForEachOverlap(const Interval& i, Fn&& fn) const {
    const int a = i.first - base_;
    for (int node = 1, lo = 0, hi = steps_ - 1;;) {
      for (size_t id : cover_[node]) fn(id);
      if (lo == hi) break;
      const int mid = lo + (hi - lo) / 2;
      if (a <= mid) {
        node = 2 * node;
        hi = mid;
      } else {
        node = 2 * node + 1;
        lo = mid + 1;
      }
    }
    for (auto it = starts_.upper_bound(i.first); it != starts_.end() && it->first <= i.last; ++it)
      fn(it->second);
  }

 private:
  void Insert(int node, int lo, int hi, int first, int last, size_t id) {
    if (last < lo || hi < first) return;
    if (first <= lo && hi <= last) {
      cover_[node].push_back(id);
      return;
    }
    const int mid = lo + (hi - lo) / 2;
    Insert(2 * node, lo, mid, first, last, id);
    Insert(2 * node + 1, mid + 1, hi, first, last, id);
  }

  int base_, steps_;
  std::vector<std::vector<size_t>> cover_;
  std::multimap<int, size_t> starts_;
};

}  // namespace

ArenaLayout PlanArena(const std::vector<Interval>& iv) {
  ArenaLayout out;
  const size_t n = iv.size();
  out.offsets.assign(n, 0);
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (iv[a].bytes != iv[b].bytes) return iv[a].bytes > iv[b].bytes;
    return iv[a].first < iv[b].first;
  });
  int first_step = 0, last_step = 0;
  for (size_t k = 0; k < n; ++k) {
    first_step = std::min(first_step, iv[k].first);
    last_step = std::max(last_step, iv[k].last);
  }
  PlacedIntervals placed(first_step, last_step);
  std::vector<std::pair<size_t, size_t>> busy;
  for (size_t idx : order) {
    const Interval& cur = iv[idx];
    // The byte ranges of placed values that are live at the same time, sorted by offset.
    busy.clear();
    placed.ForEachOverlap(cur, [&](size_t p) {
      busy.push_back({out.offsets[p], SatAdd(out.offsets[p], iv[p].bytes)});
    });
    std::sort(busy.begin(), busy.end());
    size_t offset = 0;
    for (const auto& [lo, hi] : busy) {
      if (SatAdd(offset, cur.bytes) <= lo) break;  // fits in the gap before this range
      offset = std::max(offset, hi);
    }
    out.offsets[idx] = offset;
    out.arena_bytes = std::max(out.arena_bytes, SatAdd(offset, cur.bytes));
    placed.Add(idx, cur);
  }
  int max_step = -1;
  for (const Interval& i : iv) {
    out.no_reuse_bytes = SatAdd(out.no_reuse_bytes, i.bytes);
    max_step = std::max(max_step, i.last);
  }
  // Max-live: sweep over steps (events sorted), the lower bound any placement must meet.
  // Sizes are capped so that the signed sums below cannot overflow (a capped layout fails the
  // arena ceiling anyway).
  const long long cap = LLONG_MAX / static_cast<long long>(std::max<size_t>(1, iv.size()));
  std::vector<std::pair<int, long long>> events;
  for (const Interval& i : iv) {
    const long long b = i.bytes > static_cast<size_t>(cap) ? cap : static_cast<long long>(i.bytes);
    events.push_back({i.first, b});
    events.push_back({i.last + 1, -b});
  }
  std::sort(events.begin(), events.end(), [](const auto& a, const auto& b) {
    if (a.first != b.first) return a.first < b.first;
    return a.second < b.second;  // frees before allocations at the same step
  });
  long long live = 0, best = 0;
  for (const auto& [step, delta] : events) {
    live += delta;
    best = std::max(best, live);
  }
  out.max_live_bytes = static_cast<size_t>(best);
  return out;
}

void ChooseInPlace(ExecutionPlan& plan) {
  for (int i = 0; i < static_cast<int>(plan.steps.size()); ++i) {
    const PlanStep& st = plan.steps[i];
    const int k = st.op->inplace_input;
    if (k < 0 || k >= static_cast<int>(st.inputs.size()) || st.outputs.empty()) continue;
    const int in = st.inputs[k], out = st.outputs[0];
    if (in < 0 || out < 0) continue;
    ValueSlot& src = plan.slots[in];
    ValueSlot& dst = plan.slots[out];
    if (src.storage != Storage::kArena || dst.storage != Storage::kArena) continue;
    if (src.last_step != i || src.type.elem != dst.type.elem) continue;
    if (ShapeElementCount(src.type.static_shape()) != ShapeElementCount(dst.type.static_shape()))
      continue;
    // Another input of this step reading the same buffer is fine for elementwise ops (they read
    // element i first), not for the others (a conv's residual that is also its input).
    bool shared = false;
    for (size_t j = 0; j < st.inputs.size(); ++j)
      shared = shared || (static_cast<int>(j) != k && st.inputs[j] == in);
    if (k != 0 && shared) continue;
    dst.in_place_of = in;
  }
}

Status PlanArenaForPlan(ExecutionPlan& plan, uint64_t max_arena_bytes) {
  // Group in-place chains under their first value; a group is one buffer. Roots are memoised:
  // walking the chain from each of its values is quadratic in a long chain of in-place ops.
  std::vector<int> root_of(plan.slots.size(), -1);
  auto root = [&](int id) {
    int r = id;
    while (root_of[r] < 0 && plan.slots[r].in_place_of >= 0) r = plan.slots[r].in_place_of;
    if (root_of[r] >= 0) r = root_of[r];
    for (int x = id; root_of[x] < 0; x = plan.slots[x].in_place_of) {
      root_of[x] = r;
      if (x == r) break;
    }
    return r;
  };
  std::vector<int> group_ids;
  std::vector<Interval> iv;
  std::vector<int> group_of(plan.slots.size(), -1);
  for (int id = 0; id < static_cast<int>(plan.slots.size()); ++id) {
    ValueSlot& s = plan.slots[id];
    if (s.storage != Storage::kArena) continue;
    int64_t count = 0;
    uint64_t raw = 0;
    if (!CheckedElementCount(s.type.static_shape(), &count) ||
        !CheckedByteSize(s.type.elem, count, &raw) || raw > SIZE_MAX ||
        !memory::CheckedAlignUp(static_cast<size_t>(raw), &s.bytes))
      return LimitExceeded("value '", s.name, "' of type ", s.type.ToString(),
                           " has more bytes than 64 bits can count");
    const int r = root(id);
    if (group_of[r] < 0) {
      group_of[r] = static_cast<int>(iv.size());
      iv.push_back({s.def_step, std::max(s.last_step, s.def_step), 0});
      group_ids.push_back(r);
    }
    Interval& g = iv[group_of[r]];
    g.first = std::min(g.first, s.def_step);
    g.last = std::max(g.last, std::max(s.last_step, s.def_step));
    g.bytes = std::max(g.bytes, s.bytes);
  }
  ArenaLayout layout = PlanArena(iv);
  for (int id = 0; id < static_cast<int>(plan.slots.size()); ++id)
    if (plan.slots[id].storage == Storage::kArena)
      plan.slots[id].offset = layout.offsets[group_of[root(id)]];
  plan.arena_bytes = layout.arena_bytes;
  plan.arena_bytes_no_reuse = 0;
  const ValueSlot* largest = nullptr;
  for (const ValueSlot& s : plan.slots) {
    if (s.storage != Storage::kArena) continue;
    plan.arena_bytes_no_reuse = SatAdd(plan.arena_bytes_no_reuse, s.bytes);
    if (!largest || s.bytes > largest->bytes) largest = &s;
  }
  plan.arena_bytes_max_live = layout.max_live_bytes;
  if (plan.arena_bytes == SIZE_MAX || (max_arena_bytes != 0 && plan.arena_bytes > max_arena_bytes))
    return LimitExceeded("the plan's arena (intermediate values) needs ",
                         plan.arena_bytes == SIZE_MAX ? std::string("more than 2^64")
                                                      : std::to_string(plan.arena_bytes),
                         " bytes, more than the limit of ", max_arena_bytes,
                         " bytes; its largest value is '", largest ? largest->name : std::string(),
                         "' (", largest ? largest->bytes : 0,
                         " bytes). Raise the limit with SessionOptions::limits.max_arena_bytes or "
                         "ONYX_MAX_ARENA_BYTES");
  return Status::Ok();
}

}  // namespace onyx::planner
