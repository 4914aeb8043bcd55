// ThreadChoice: probes of neighbouring thread counts, the fastest recent count kept.
#include "engine/thread_choice.h"

#include <algorithm>
#include <cmath>

namespace onyx::engine {

double ThreadChoice::Times::Typical(int n) const {
  n = std::min(n, count);
  if (n <= 0) return 0;
  double sum = 0, slowest = 0;
  for (int k = 0; k < n; ++k) {
    const double v = latest[(next - 1 - k + kKept) % kKept];
    sum += v;
    slowest = std::max(slowest, v);
  }
  return n >= 3 ? (sum - slowest) / (n - 1) : sum / n;
}

ThreadChoice::ThreadChoice(int max_threads, int start_threads, std::shared_ptr<Probes> probes)
    : probes_(probes ? std::move(probes) : std::make_shared<Probes>()) {
  for (int t = std::max(1, max_threads);; t /= 2) {
    ladder_.push_back(t);
    if (t == 1) break;
  }
  times_.resize(ladder_.size());
  // The ladder's count nearest below start_threads.
  while (current_ + 1 < ladder_.size() && ladder_[current_] > start_threads && start_threads > 0)
    ++current_;
}

size_t ThreadChoice::IndexOf(int threads) const {
  for (size_t i = 0; i < ladder_.size(); ++i)
    if (ladder_[i] == threads) return i;
  return ladder_.size();
}

ThreadChoice::Direction& ThreadChoice::DirectionOf(size_t i) {
  return i > current_ ? probes_->down : probes_->up;
}

void ThreadChoice::SwitchTo(size_t i) {
  const size_t left = current_;
  // A switch on fewer than a full set of the current count's runs may have answered a load that
  // passes at once: the count left is probed again soon.
  const bool hasty = times_[left].fresh < Times::kKept;
  current_ = i;
  probes_->down = probes_->up = Direction{probes_->runs + kMinInterval, kMinInterval};
  hasty_from_ = hasty ? static_cast<int>(left) : -1;
  back_ = nullptr;
  if (hasty) DirectionOf(left).next = probes_->runs + kConfirmAfter;
  for (Times& t : times_) t.wins = t.fresh = 0;
}

void ThreadChoice::AmortizeSwitchCost(Direction& d, double now) {
  if (switch_cost_ <= 0 || now <= 0) return;
  const double runs = std::ceil(switch_cost_ / (kSwitchCostShare * now));
  const int64_t wanted = runs >= kMaxDownInterval ? kMaxDownInterval : static_cast<int64_t>(runs);
  if (wanted <= d.interval) return;
  d.next += wanted - d.interval;
  d.interval = wanted;
}

void ThreadChoice::ProbeSoon(size_t i) {
  pending_ = static_cast<int>(i);
  DirectionOf(i).next = probes_->runs + 1;
}

int ThreadChoice::Next() {
  std::lock_guard<std::mutex> lock(mu_);
  std::lock_guard<std::mutex> lock_probes(probes_->mu);
  const int64_t runs = ++probes_->runs;
  size_t pick = current_;
  if (burst_left_ > 0) {
    pick = burst_;
    --burst_left_;
  } else if (ladder_.size() > 1 && times_[current_].count > 0) {
    // A pending probe first, then fewer threads, then more, each when due; only on a plan with
    // a time at its current count to compare with (a plan new to the session has none).
    size_t probe = SIZE_MAX;
    if (pending_ >= 0 && runs >= DirectionOf(static_cast<size_t>(pending_)).next) {
      probe = static_cast<size_t>(pending_);
      pending_ = -1;
    } else if (current_ + 1 < ladder_.size() && runs >= probes_->down.next) {
      probe = current_ + 1;
    } else if (current_ > 0 && runs >= probes_->up.next) {
      probe = current_ - 1;
    }
    if (probe != SIZE_MAX) {
      pick = burst_ = probe;
      burst_left_ = 1;  // the second run of the probe is its sample
      // Until its result comes back (Record), no other probe this way.
      Direction& d = DirectionOf(probe);
      d.next = runs + d.interval;
    }
  }
  if (pick != last_) ++times_[pick].skip;
  last_ = pick;
  ++times_[pick].runs;
  return ladder_[pick];
}

int ThreadChoice::current() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ladder_[current_];
}

bool ThreadChoice::Record(int threads, double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  std::lock_guard<std::mutex> lock_probes(probes_->mu);
  const int64_t runs = probes_->runs;
  const size_t i = IndexOf(threads);
  if (i == ladder_.size()) return false;
  Times& t = times_[i];
  // The current count's runs since the last switch too, once it has some: the runs before it
  // measured the load the switch answered.
  const Times& cur = times_[current_];
  const auto current_time = [&] { return cur.Typical(cur.fresh > 0 ? cur.fresh : Times::kKept); };
  if (t.skip > 0) {  // the first run after a change of count
    --t.skip;
    if (i != current_) {
      probe_first_ = seconds;
    } else if (back_ != nullptr) {  // back from a probe: the team changes again
      const double now = current_time();
      switch_cost_ += std::max(0.0, seconds - now);
      AmortizeSwitchCost(*back_, now);
      back_ = nullptr;
    }
    return false;
  }
  const size_t before = current_;
  t.latest[t.next] = seconds;
  t.next = (t.next + 1) % Times::kKept;
  t.count = std::min(t.count + 1, Times::kKept);
  t.fresh = std::min(t.fresh + 1, Times::kKept);
  const double now = current_time();
  if (i != current_) {  // a probe's result
    // Judged on the probed count's runs since the last switch: the older ones measured the load
    // the switch left (two threads slowed by another engine's spinning threads kept a plan that
    // had moved to one thread there for 15 runs after the load was gone).
    const double probed = t.Typical(t.fresh);
    // The count a hasty switch left (see SwitchTo), probed again: one faster run undoes it.
    const bool undo = static_cast<int>(i) == hasty_from_;
    if (undo) hasty_from_ = -1;  // faster or not, the switch has had its second look
    if (now > 0 && Faster(probed, now)) {
      if (++t.wins >= 2 || undo || Faster(probed, now, kSureGain)) {
        SwitchTo(i);
      } else {  // confirm after a few fresh runs of the current count
        pending_ = static_cast<int>(i);
        DirectionOf(i).next = runs + kConfirmAfter;
      }
    } else if (now > 0 && Faster(seconds, now)) {
      // Faster than the current count although its older runs were not: they are stale (the
      // machine's load changed). Probe it again at once.
      ProbeSoon(i);
    } else {
      t.wins = 0;
      // A probe that cost much (two threads on a busy host, one on a quiet one) backs off
      // faster: its runs are the slow ones a caller sees.
      Direction& d = DirectionOf(i);
      const int64_t cap = i > current_        ? kMaxDownInterval
                          : runs < kEarlyRuns ? kEarlyUpInterval
                                              : kMaxUpInterval;
      d.interval = std::min(d.interval * (seconds > 1.5 * now ? 4 : 2), cap);
      d.next = runs + d.interval;
      // Its first run's time past its second is what the change of count cost.
      switch_cost_ = std::max(0.0, probe_first_ - seconds);
      AmortizeSwitchCost(d, now);
      back_ = &d;
    }
    return current_ != before;
  }
  // The current count slowed down past another count's latest runs: switch; a later probe of the
  // count left puts it back if the slowdown was the plan's and not the machine's. Only on a full
  // set of runs since the last switch, so that two slow runs just after another engine's threads
  // ran are outvoted.
  if (t.fresh < Times::kKept) return false;
  for (size_t j = 0; j < times_.size(); ++j)
    if (j != current_ && times_[j].count > 0 && Faster(times_[j].Typical(), now, kSlowdownGain)) {
      SwitchTo(j);
      break;
    }
  return current_ != before;
}

std::map<int, int64_t> ThreadChoice::runs() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<int, int64_t> out;
  for (size_t i = 0; i < ladder_.size(); ++i)
    if (times_[i].runs > 0) out[ladder_[i]] = times_[i].runs;
  return out;
}

}  // namespace onyx::engine
