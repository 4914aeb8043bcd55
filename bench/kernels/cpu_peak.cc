// CPU identification and the FMA-throughput loops. The loops keep 12 independent accumulator
// chains per thread: with 2 FMA pipes and a 4-cycle FMA latency, 8 chains are the minimum that
// keeps both pipes busy every cycle. The accumulators must live in registers, which needs an
// optimized build (Release); at -O0 the loop measures store-to-load latency instead.
#include "bench/kernels/cpu_peak.h"

#include <cpuid.h>
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <sstream>
#include <thread>
#include <vector>

namespace onyx::bench {
namespace {

constexpr int kChains = 12;

__attribute__((target("avx512f"))) float FmaLoopAvx512(int64_t iters) {
  __m512 acc[kChains];
  for (int k = 0; k < kChains; ++k) acc[k] = _mm512_set1_ps(static_cast<float>(k));
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-6f);
  for (int64_t i = 0; i < iters; ++i)
    for (int k = 0; k < kChains; ++k) acc[k] = _mm512_fmadd_ps(acc[k], a, b);
  __m512 s = acc[0];
  for (int k = 1; k < kChains; ++k) s = _mm512_add_ps(s, acc[k]);
  float out[16];
  _mm512_storeu_ps(out, s);
  return out[0] + out[15];
}

__attribute__((target("avx2,fma"))) float FmaLoopAvx2(int64_t iters) {
  __m256 acc[kChains];
  for (int k = 0; k < kChains; ++k) acc[k] = _mm256_set1_ps(static_cast<float>(k));
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-6f);
  for (int64_t i = 0; i < iters; ++i)
    for (int k = 0; k < kChains; ++k) acc[k] = _mm256_fmadd_ps(acc[k], a, b);
  __m256 s = acc[0];
  for (int k = 1; k < kChains; ++k) s = _mm256_add_ps(s, acc[k]);
  float out[8];
  _mm256_storeu_ps(out, s);
  return out[0] + out[7];
}

volatile float g_sink;

// GFLOP/s of `threads` threads running the widest loop at once. On a shared machine (or a vCPU
// whose SMT sibling belongs to someone else) a long run measures the neighbours too, so each
// thread takes many ~1 ms samples and keeps its best; the threads' bests are added.
double MeasureFma(bool avx512, int threads, int samples) {
  const int lanes = avx512 ? 16 : 8;
  const double flops_per_iter = 2.0 * lanes * kChains;
  auto loop = [avx512](int64_t n) { g_sink = avx512 ? FmaLoopAvx512(n) : FmaLoopAvx2(n); };
  auto seconds = [&](int64_t n) {
    const auto t0 = std::chrono::steady_clock::now();
    loop(n);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  int64_t iters = 1 << 12;
  while (seconds(iters) < 1e-3) iters *= 2;
  std::vector<double> best(threads, 0.0);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      for (int i = 0; i < samples; ++i)
        best[t] = std::max(best[t], flops_per_iter * iters / seconds(iters) / 1e9);
    });
  for (auto& t : pool) t.join();
  double sum = 0;
  for (double b : best) sum += b;
  return sum;
}

double ClockGhzFromProcCpuinfo() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("cpu MHz", 0) == 0) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) return std::stod(line.substr(colon + 1)) / 1000.0;
    }
  return 0;
}

}  // namespace

double CpuPeak::PeakGflops(int threads) const {
  return std::max(DerivedCoreGflops(), measured_core_gflops) * threads;
}

double CpuPeak::MeasuredGflops(int threads) const {
  if (threads >= cores && measured_all_gflops > 0) return measured_all_gflops;
  return measured_core_gflops * threads;
}

std::string CpuPeak::Describe() const {
  std::ostringstream o;
  o.setf(std::ios::fixed);
  o.precision(1);
  o << "CPU: " << brand << " (" << vendor << " family 0x" << std::hex << family << " model 0x"
    << model << std::dec << (microarch.empty() ? "" : ", " + microarch) << "), " << cores
    << " cores, " << isa << "\n";
  o << "fp32 peak (derived) = cores x FMA units x SIMD lanes x 2 flops x clock\n"
    << "                    = " << cores << " x " << fma_units << " x " << lanes << " x 2 x "
    << std::setprecision(3) << ghz << std::setprecision(1)
    << " GHz = " << DerivedCoreGflops() * cores << " GFLOP/s (" << DerivedCoreGflops()
    << " per core)\n";
  o << "  FMA units / lanes: " << reasoning << "\n";
  o << "  clock: " << clock_source << "\n";
  if (measured_core_gflops > 0) {
    o << "fp32 peak (measured: FMA loop, " << kChains
      << " independent chains per thread, best ~1 ms sample): " << measured_core_gflops
      << " GFLOP/s on 1 thread, " << measured_all_gflops << " GFLOP/s on " << cores
      << " threads\n  = " << fma_units << " x " << lanes << " x 2 flops per cycle at "
      << measured_core_gflops / (fma_units * lanes * 2.0)
      << " GHz effective (boost above the nominal clock when higher)\n";
  }
  o << "peak% below divides by max(derived, measured one-thread) x threads = " << PeakGflops(1)
    << " GFLOP/s per thread; meas% divides by the measured figure for the same thread count\n";
  return o.str();
}

CpuPeak ProbeCpuPeak(bool measure) {
  CpuPeak p;
  unsigned a = 0, b = 0, c = 0, d = 0;
  char vendor[13] = {};
  __get_cpuid(0, &a, &b, &c, &d);
  std::memcpy(vendor, &b, 4);
  std::memcpy(vendor + 4, &d, 4);
  std::memcpy(vendor + 8, &c, 4);
  p.vendor = vendor;
  __get_cpuid(1, &a, &b, &c, &d);
  const int base_family = (a >> 8) & 0xf;
  p.family = base_family == 0xf ? base_family + ((a >> 20) & 0xff) : base_family;
  p.model = ((a >> 4) & 0xf) | (base_family >= 0x6 ? ((a >> 16) & 0xf) << 4 : 0);
  char brand[49] = {};
  if (__get_cpuid_max(0x80000000, nullptr) >= 0x80000004)
    for (unsigned i = 0; i < 3; ++i)
      __get_cpuid(0x80000002 + i, reinterpret_cast<unsigned*>(brand + 16 * i),
                  reinterpret_cast<unsigned*>(brand + 16 * i + 4),
                  reinterpret_cast<unsigned*>(brand + 16 * i + 8),
                  reinterpret_cast<unsigned*>(brand + 16 * i + 12));
  p.brand = brand;
  while (!p.brand.empty() && p.brand.back() == ' ') p.brand.pop_back();
  p.cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));

  const bool avx512 = __builtin_cpu_supports("avx512f");
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  p.isa = avx512 ? "AVX-512" : avx2 ? "AVX2+FMA" : "SSE";
  const bool amd = p.vendor == "AuthenticAMD";
  p.fma_units = 2;
  if (amd && p.family == 0x1a) {
    p.microarch = "Zen 5";
    p.lanes = avx512 ? 16 : 8;
    p.reasoning =
        "Zen 5 has 2 FMA pipes with a native 512-bit datapath (server and desktop parts): 2 x 16";
  } else if (amd && p.family == 0x19 && avx512) {
    p.microarch = "Zen 4";
    p.lanes = 8;
    p.reasoning = "Zen 4 has 2 256-bit FMA pipes and runs a 512-bit FMA as two halves: 2 x 8";
  } else if (amd && (p.family == 0x17 || p.family == 0x19)) {
    p.microarch = p.family == 0x17 ? "Zen 1/2" : "Zen 3";
    p.lanes = 8;
    p.reasoning = "2 256-bit FMA pipes: 2 x 8";
  } else if (avx512) {
    p.lanes = 16;
    p.reasoning = "AVX-512 server core assumed to have 2 512-bit FMA units (some have 1): 2 x 16";
  } else if (avx2) {
    p.lanes = 8;
    p.reasoning = "2 256-bit FMA units assumed: 2 x 8";
  } else {
    p.lanes = 4;
    p.reasoning = "no FMA: 2 SSE pipes (mul + add) assumed: 2 x 4";
  }
  p.ghz = ClockGhzFromProcCpuinfo();
  p.clock_source = "'cpu MHz' in /proc/cpuinfo (nominal; under a hypervisor the TSC rate)";
  if (p.ghz <= 0) {
    __get_cpuid(0x16, &a, &b, &c, &d);
    p.ghz = (a & 0xffff) / 1000.0;
    p.clock_source = "CPUID leaf 0x16 base frequency";
  }
  if (measure && (avx512 || avx2)) {
    p.measured_core_gflops = MeasureFma(avx512, 1, 300);
    p.measured_all_gflops = MeasureFma(avx512, p.cores, 300);
  }
  return p;
}

}  // namespace onyx::bench
