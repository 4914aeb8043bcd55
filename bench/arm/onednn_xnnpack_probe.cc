// Standalone probe behind the choice of XNNPACK over oneDNN on AArch64 (docs/platforms.md): times
// one 3x3 convolution and one fully-connected layer in Debian's arm64 oneDNN 2.6 and XNNPACK,
// f32, one thread, under qemu-user. Not part of the build; compile and run by hand:
//   aarch64-linux-gnu-g++ -O2 -std=c++17 bench/arm/onednn_xnnpack_probe.cc \
//     -I$DNNL/usr/include -I/opt/onyx-arm64/usr/include -L$DNNL/usr/lib/aarch64-linux-gnu \
//     -L/opt/onyx-arm64/usr/lib/aarch64-linux-gnu -ldnnl -lXNNPACK -lpthreadpool \
//     -Wl,-rpath,$DNNL/usr/lib/aarch64-linux-gnu:/opt/onyx-arm64/usr/lib/aarch64-linux-gnu \
//     -o probe
//   OMP_NUM_THREADS=1 QEMU_LD_PREFIX=/usr/aarch64-linux-gnu QEMU_CPU=neoverse-n1 qemu-aarch64
//   ./probe
// ($DNNL: libdnnl-dev:arm64 and libdnnl2:arm64 unpacked with `apt-get download` + `dpkg -x`.)
// Emulated time says little about native speed (qemu emulates a NEON FMA at a cost unrelated to
// its native cost), so the probe also runs one kernel of one library `reps` times, for counting
// guest instructions: `probe KERNEL LIBRARY REPS` with KERNEL conv|fc1|fc16 and LIBRARY
// xnnpack|onednn, under `qemu-aarch64 -singlestep -d nochain,exec -D /dev/stdout`, one log line
// per executed instruction; the difference between two REPS values gives the count per run.
#include <xnnpack.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "oneapi/dnnl/dnnl.hpp"

namespace {

using Clock = std::chrono::steady_clock;

// Median of `reps` timed runs after one warm-up, in milliseconds.
double TimeMs(const std::function<void()>& fn, int reps) {
  fn();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = Clock::now();
    fn();
    t.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

std::vector<float> Random(size_t n) {
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(std::rand()) / RAND_MAX - 0.5f;
  return v;
}

struct ConvShape {
  int64_t c, k, h, w;  // 3x3, stride 1, pad 1, batch 1
};
struct FcShape {
  int64_t m, k, n;  // [m, k] x [k, n]
};

double MaxDiff(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, static_cast<double>(std::abs(a[i] - b[i])));
  return m;
}

// When `only` is set, runs only that library's kernel `reps` times, untimed.
void Conv(const ConvShape& s, int reps, const char* only = nullptr) {
  using namespace dnnl;
  const auto x = Random(s.h * s.w * s.c);         // NHWC
  const auto w_ohwi = Random(s.k * 3 * 3 * s.c);  // XNNPACK's layout
  const auto bias = Random(s.k);
  std::vector<float> y_xnn(s.h * s.w * s.k), y_dnnl(s.h * s.w * s.k);

  xnn_operator_t op = nullptr;
  if (xnn_create_convolution2d_nhwc_f32(
          1, 1, 1, 1, 3, 3, 1, 1, 1, 1, 1, s.c, s.k, s.c, s.k, w_ohwi.data(), bias.data(),
          -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::infinity(), 0,
          &op) != xnn_status_success ||
      xnn_setup_convolution2d_nhwc_f32(op, 1, s.h, s.w, x.data(), y_xnn.data(), nullptr) !=
          xnn_status_success) {
    std::printf("xnnpack conv setup failed\n");
    std::exit(1);
  }
  if (only && std::string(only) == "xnnpack") {
    for (int i = 0; i < reps; ++i) xnn_run_operator(op, nullptr);
    return;
  }
  const double t_xnn = only ? 0 : TimeMs([&] { xnn_run_operator(op, nullptr); }, reps);
  xnn_delete_operator(op);

  engine eng(engine::kind::cpu, 0);
  stream strm(eng);
  const memory::dims src_dims{1, s.c, s.h, s.w}, wei_dims{s.k, s.c, 3, 3},
      dst_dims{1, s.k, s.h, s.w};
  memory::desc src_md(src_dims, memory::data_type::f32, memory::format_tag::nhwc);
  memory::desc dst_md(dst_dims, memory::data_type::f32, memory::format_tag::nhwc);
  memory::desc wei_any(wei_dims, memory::data_type::f32, memory::format_tag::any);
  memory::desc bias_md({s.k}, memory::data_type::f32, memory::format_tag::x);
  convolution_forward::desc cd(prop_kind::forward_inference, algorithm::convolution_direct, src_md,
                               wei_any, bias_md, dst_md, {1, 1}, {1, 1}, {1, 1});
  convolution_forward::primitive_desc pd(cd, eng);
  // OHWI weights into whatever layout the chosen implementation wants (not timed).
  memory wei_user({wei_dims, memory::data_type::f32, memory::format_tag::ohwi}, eng,
                  const_cast<float*>(w_ohwi.data()));
  memory wei(pd.weights_desc(), eng);
  reorder(wei_user, wei).execute(strm, wei_user, wei);
  memory src(src_md, eng, const_cast<float*>(x.data())), dst(dst_md, eng, y_dnnl.data());
  memory b(bias_md, eng, const_cast<float*>(bias.data()));
  convolution_forward conv(pd);
  const auto run = [&] {
    conv.execute(
        strm,
        {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_BIAS, b}, {DNNL_ARG_DST, dst}});
    strm.wait();
  };
  if (only) {
    for (int i = 0; i < reps; ++i) run();
    return;
  }
  const double t_dnnl = TimeMs(run, reps);
  std::printf(
      "conv3x3 C=%ld K=%ld %ldx%ld: xnnpack %.1f ms, onednn %.1f ms (%s), max |diff| %.2g\n",
      static_cast<long>(s.c), static_cast<long>(s.k), static_cast<long>(s.h),
      static_cast<long>(s.w), t_xnn, t_dnnl, pd.impl_info_str(), MaxDiff(y_xnn, y_dnnl));
}

void Fc(const FcShape& s, int reps, const char* only = nullptr) {
  using namespace dnnl;
  const auto x = Random(s.m * s.k);
  const auto w_nk = Random(s.n * s.k);  // [n, k]: XNNPACK's and oneDNN's "oi"
  const auto bias = Random(s.n);
  std::vector<float> y_xnn(s.m * s.n), y_dnnl(s.m * s.n);

  xnn_operator_t op = nullptr;
  if (xnn_create_fully_connected_nc_f32(
          s.k, s.n, s.k, s.n, w_nk.data(), bias.data(), -std::numeric_limits<float>::infinity(),
          std::numeric_limits<float>::infinity(), 0, &op) != xnn_status_success ||
      xnn_setup_fully_connected_nc_f32(op, s.m, x.data(), y_xnn.data(), nullptr) !=
          xnn_status_success) {
    std::printf("xnnpack fc setup failed\n");
    std::exit(1);
  }
  if (only && std::string(only) == "xnnpack") {
    for (int i = 0; i < reps; ++i) xnn_run_operator(op, nullptr);
    return;
  }
  const double t_xnn = only ? 0 : TimeMs([&] { xnn_run_operator(op, nullptr); }, reps);
  xnn_delete_operator(op);

  engine eng(engine::kind::cpu, 0);
  stream strm(eng);
  memory::desc src_md({s.m, s.k}, memory::data_type::f32, memory::format_tag::nc);
  memory::desc wei_any({s.n, s.k}, memory::data_type::f32, memory::format_tag::any);
  memory::desc bias_md({s.n}, memory::data_type::f32, memory::format_tag::x);
  memory::desc dst_md({s.m, s.n}, memory::data_type::f32, memory::format_tag::nc);
  inner_product_forward::desc ipd(prop_kind::forward_inference, src_md, wei_any, bias_md, dst_md);
  inner_product_forward::primitive_desc pd(ipd, eng);
  memory wei_user({{s.n, s.k}, memory::data_type::f32, memory::format_tag::oi}, eng,
                  const_cast<float*>(w_nk.data()));
  memory wei(pd.weights_desc(), eng);
  reorder(wei_user, wei).execute(strm, wei_user, wei);
  memory src(src_md, eng, const_cast<float*>(x.data())), dst(dst_md, eng, y_dnnl.data());
  memory b(bias_md, eng, const_cast<float*>(bias.data()));
  inner_product_forward ip(pd);
  const auto run = [&] {
    ip.execute(
        strm,
        {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_BIAS, b}, {DNNL_ARG_DST, dst}});
    strm.wait();
  };
  if (only) {
    for (int i = 0; i < reps; ++i) run();
    return;
  }
  const double t_dnnl = TimeMs(run, reps);
  std::printf("fc M=%ld K=%ld N=%ld: xnnpack %.1f ms, onednn %.1f ms (%s), max |diff| %.2g\n",
              static_cast<long>(s.m), static_cast<long>(s.k), static_cast<long>(s.n), t_xnn, t_dnnl,
              pd.impl_info_str(), MaxDiff(y_xnn, y_dnnl));
}

}  // namespace

int main(int argc, char** argv) {
  if (xnn_initialize(nullptr) != xnn_status_success) {
    std::printf("xnn_initialize failed (unsupported CPU?)\n");
    return 1;
  }
  const ConvShape conv{32, 32, 28, 28};
  const FcShape fc1{1, 1024, 1024}, fc16{16, 512, 512};
  if (argc == 4) {
    const std::string kernel = argv[1];
    const int reps = std::atoi(argv[3]);
    if (kernel == "conv") Conv(conv, reps, argv[2]);
    if (kernel == "fc1") Fc(fc1, reps, argv[2]);
    if (kernel == "fc16") Fc(fc16, reps, argv[2]);
    return 0;
  }
  Conv(conv, 5);
  Fc(fc1, 5);
  Fc(fc16, 5);
  return 0;
}
