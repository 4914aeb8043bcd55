// Resolving onyx::Limits: explicit values, then ONYX_MAX_* environment variables, then defaults.
#include "onyx/limits.h"

#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace onyx {
namespace {

constexpr int64_t kDefaultMaxNodes = 1'000'000;
constexpr int64_t kDefaultMaxNesting = 64;
constexpr int64_t kDefaultMaxInitializers = 1'000'000;
constexpr int64_t kDefaultMaxShapePlans = 16;
constexpr uint64_t kDefaultMaxShapePlanBytes = uint64_t{256} << 20;
constexpr int64_t kDefaultSpecializeAfterRuns = 8;
constexpr uint64_t kFallbackMemoryBytes = uint64_t{16} << 30;  // when sysconf cannot tell

uint64_t PhysicalMemoryBytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return kFallbackMemoryBytes;
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page);
}

// "123", "64M", "2G": a positive number of units; 0 when unset or malformed.
uint64_t FromEnvironment(const char* name, bool sized) {
  const char* text = std::getenv(name);
  if (!text || !*text) return 0;
  const std::string s(text);
  size_t digits = 0;
  while (digits < s.size() && std::isdigit(static_cast<unsigned char>(s[digits]))) ++digits;
  uint64_t value = 0;
  bool ok = digits > 0 && digits <= 19;
  if (ok) value = std::strtoull(s.substr(0, digits).c_str(), nullptr, 10);
  int shift = 0;
  if (ok && digits < s.size()) {
    const std::string unit = s.substr(digits);
    const char u = static_cast<char>(std::toupper(static_cast<unsigned char>(unit[0])));
    ok = sized && (unit.size() == 1 ||
                   (unit.size() == 3 && (unit.substr(1) == "iB" || unit.substr(1) == "IB")));
    shift = u == 'K' ? 10 : u == 'M' ? 20 : u == 'G' ? 30 : u == 'T' ? 40 : -1;
    ok = ok && shift >= 0;
  }
  if (ok && shift > 0 && value > (~uint64_t{0} >> shift)) ok = false;
  if (!ok || value == 0) {
    std::fprintf(stderr, "onyx: ignoring %s='%s': expected a positive number%s\n", name, text,
                 sized ? " (optionally with K, M, G or T)" : "");
    return 0;
  }
  return value << shift;
}

template <typename T>
void Resolve(T& field, const char* env, bool sized, T fallback) {
  if (field > 0) return;
  const uint64_t from_env = FromEnvironment(env, sized);
  field = from_env > 0 ? static_cast<T>(from_env) : fallback;
  if (field <= 0) field = fallback;
}

}  // namespace

Limits ResolveLimits(const Limits& requested) {
  Limits l = requested;
  const uint64_t memory = PhysicalMemoryBytes();
  Resolve<uint64_t>(l.max_tensor_bytes, "ONYX_MAX_TENSOR_BYTES", true, memory);
  Resolve<uint64_t>(l.max_arena_bytes, "ONYX_MAX_ARENA_BYTES", true, memory);
  Resolve<int64_t>(l.max_nodes, "ONYX_MAX_NODES", false, kDefaultMaxNodes);
  Resolve<int64_t>(l.max_nesting, "ONYX_MAX_NESTING", false, kDefaultMaxNesting);
  Resolve<int64_t>(l.max_initializers, "ONYX_MAX_INITIALIZERS", false, kDefaultMaxInitializers);
  Resolve<int64_t>(l.max_shape_plans, "ONYX_MAX_SHAPE_PLANS", false, kDefaultMaxShapePlans);
  Resolve<uint64_t>(l.max_shape_plan_bytes, "ONYX_MAX_SHAPE_PLAN_BYTES", true,
                    kDefaultMaxShapePlanBytes);
  Resolve<int64_t>(l.specialize_after_runs, "ONYX_SPECIALIZE_AFTER_RUNS", false,
                   kDefaultSpecializeAfterRuns);
  return l;
}

}  // namespace onyx
