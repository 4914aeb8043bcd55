// ThreadChoice: probes of neighbouring thread counts, the fastest recent count kept.
#include "engine/thread_choice.h"

#include <algorithm>

namespace onyx::engine {

double ThreadChoice::Times::Median() const {
  if (count == 0) return 0;
  double v[kKept];
  std::copy(latest, latest + count, v);
  std::nth_element(v, v + count / 2, v + count);
  const double hi = v[count / 2];
  if (count % 2) return hi;
  return (*std::max_element(v, v + count / 2) + hi) / 2;
}

ThreadChoice::ThreadChoice(int max_threads) {
  for (int t = std::max(1, max_threads);; t /= 2) {
    ladder_.push_back(t);
    if (t == 1) break;
  }
  times_.resize(ladder_.size());
}

size_t ThreadChoice::IndexOf(int threads) const {
  for (size_t i = 0; i < ladder_.size(); ++i)
    if (ladder_[i] == threads) return i;
  return ladder_.size();
}

void ThreadChoice::SwitchTo(size_t i) {
  current_ = i;
  down_ = up_ = Direction{runs_ + kMinInterval, kMinInterval};
  for (Times& t : times_) t.wins = 0;
}

void ThreadChoice::ProbeSoon(size_t i) {
  pending_ = static_cast<int>(i);
  DirectionOf(i).next = runs_ + 1;
}

int ThreadChoice::Next() {
  std::lock_guard<std::mutex> lock(mu_);
  ++runs_;
  size_t pick = current_;
  if (burst_left_ > 0) {
    pick = burst_;
    --burst_left_;
  } else if (ladder_.size() > 1) {
    // A pending probe first, then fewer threads, then more, each when due.
    size_t probe = SIZE_MAX;
    if (pending_ >= 0 && runs_ >= DirectionOf(static_cast<size_t>(pending_)).next) {
      probe = static_cast<size_t>(pending_);
      pending_ = -1;
    } else if (current_ + 1 < ladder_.size() && runs_ >= down_.next) {
      probe = current_ + 1;
    } else if (current_ > 0 && runs_ >= up_.next) {
      probe = current_ - 1;
    }
    if (probe != SIZE_MAX) {
      pick = burst_ = probe;
      burst_left_ = 1;  // the second run of the probe is its sample
      // Until its result comes back (Record), no other probe this way.
      Direction& d = DirectionOf(probe);
      d.next = runs_ + d.interval;
    }
  }
  if (pick != last_) ++times_[pick].skip;
  last_ = pick;
  ++times_[pick].runs;
  return ladder_[pick];
}

void ThreadChoice::Record(int threads, double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  const size_t i = IndexOf(threads);
  if (i == ladder_.size()) return;
  Times& t = times_[i];
  if (t.skip > 0) {  // the first run after a change of count
    --t.skip;
    return;
  }
  t.latest[t.next] = seconds;
  t.next = (t.next + 1) % Times::kKept;
  t.count = std::min(t.count + 1, Times::kKept);
  const double now = times_[current_].Median();
  if (i != current_) {  // a probe's result
    if (now > 0 && Faster(t.Median(), now)) {
      if (++t.wins >= 2 || Faster(t.Median(), now, kSureGain)) {
        SwitchTo(i);
      } else {  // confirm after a few fresh runs of the current count
        pending_ = static_cast<int>(i);
        DirectionOf(i).next = runs_ + kConfirmAfter;
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
      const int64_t cap = i > current_         ? kMaxDownInterval
                          : runs_ < kEarlyRuns ? kEarlyUpInterval
                                               : kMaxUpInterval;
      d.interval = std::min(d.interval * (seconds > 1.5 * now ? 4 : 2), cap);
      d.next = runs_ + d.interval;
    }
    return;
  }
  // The current count slowed down past another count's latest runs: switch; a later probe of the
  // count left puts it back if the slowdown was the plan's and not the machine's. Only on a full
  // set of runs, so that two slow runs just after another engine's threads ran are outvoted.
  if (t.count < Times::kKept) return;
  for (size_t j = 0; j < times_.size(); ++j)
    if (j != current_ && times_[j].count > 0 && Faster(times_[j].Median(), now, kSlowdownGain)) {
      SwitchTo(j);
      break;
    }
}

std::map<int, int64_t> ThreadChoice::runs() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<int, int64_t> out;
  for (size_t i = 0; i < ladder_.size(); ++i)
    if (times_[i].runs > 0) out[ladder_[i]] = times_[i].runs;
  return out;
}

}  // namespace onyx::engine
