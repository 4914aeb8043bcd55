// This machine's fp32 peak, two ways: derived from the CPU (cores × FMA units × SIMD lanes × 2
// flops per FMA × clock) and measured with an FMA-throughput loop. The micro-benchmarks report
// their GFLOP/s as a fraction of it.
#pragma once

#include <string>

namespace onyx::bench {

struct CpuPeak {
  std::string vendor;  // "AuthenticAMD", "GenuineIntel", ...
  std::string brand;   // CPUID brand string
  int family = 0, model = 0;
  std::string microarch;  // "Zen 5", ... or "" when not recognised
  std::string isa;        // widest vector ISA used for the figures: "AVX-512", "AVX2", "SSE"
  int cores = 1;          // online logical CPUs
  int fma_units = 2;      // FMA pipes per core
  int lanes = 4;          // fp32 lanes each pipe retires per cycle
  double ghz = 0;         // nominal clock
  std::string clock_source;
  std::string reasoning;  // why fma_units and lanes are what they are

  double measured_core_gflops = 0;  // FMA loop on one thread
  double measured_all_gflops = 0;   // FMA loop on every core at once

  double DerivedCoreGflops() const { return fma_units * lanes * 2.0 * ghz; }
  // The peak the benchmarks divide by for `threads` threads: the larger of the derived and the
  // measured per-core figure (the clock may boost above nominal), times the threads.
  double PeakGflops(int threads) const;
  // What the FMA loop reached on `threads` threads (0 when not measured): the attainable peak
  // on this machine as it is loaded now.
  double MeasuredGflops(int threads) const;
  // Several lines: the CPU, the derivation with its numbers, the measured figures.
  std::string Describe() const;
};

// Reads CPUID and /proc/cpuinfo; with `measure`, also runs the FMA loops (about a second).
CpuPeak ProbeCpuPeak(bool measure);

}  // namespace onyx::bench
