// The `onyx` command-line tool: run | plan | info | bench | conformance | ops | prune.
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <numeric>
#include <set>
#include <sstream>
#include <thread>

#include "engine/cli/check.h"
#include "engine/cli/cli_util.h"
#include "engine/cli/conformance.h"
#include "engine/cli/cpu_report.h"
#include "engine/cli/prune.h"
#include "engine/cli/step_profile.h"
#include "engine/tensor_proto.h"
#include "kernels/op_registry.h"
#include "onyx/session.h"
#include "planner/execution_plan.h"

namespace onyx::cli {
namespace {

constexpr const char* kUsage =
    "usage: onyx <command> [options]\n"
    "\n"
    "commands:\n"
    "  run          run a model on .pb inputs (or generated ones) and print or write its outputs\n"
    "  plan         print the execution plan: schedule, arena offsets and sizes\n"
    "  info         print the model's IR version, opsets, inputs, outputs and operators\n"
    "  bench        time a model on generated inputs (median and p90 latency)\n"
    "  conformance  run the ONNX backend node tests under a directory\n"
    "  ops          list the registered operators, their opset ranges and kernels\n"
    "  prune        zero the smallest weights (no retraining) and report the accuracy cost\n"
    "  check        compare each optimised step with the reference kernels (per-node error "
    "report)\n"
    "\n"
    "`onyx <command> --help` describes each command.\n";

constexpr const char* kRunHelp =
    "usage: onyx run MODEL [IN.pb ...] [options]\n"
    "\n"
    "Positional .pb files bind, in order, to the graph inputs that have no initializer (the "
    "layout\n"
    "of the ONNX backend test data). They may hold a TensorProto, SequenceProto or OptionalProto.\n"
    "\n"
    "options:\n"
    "  --input NAME=FILE.pb   bind a named input (repeatable)\n"
    "  --generate ramp|random generate the inputs not given (ramp: the ONNX test runner's "
    "arange/n)\n"
    "  --shape NAME=1x3x224x224  shape for generated inputs (symbolic dims default to 1)\n"
    "  --output-dir DIR       write each output as DIR/<name>.pb\n"
    "  --dump-dir DIR         write every intermediate value as DIR/<name>.pb\n"
    "  --top K                print the K largest values (and indices) of each output\n"
    "  --repeat N             run N times and report the median latency (default 1)\n"
    "  --optimization L       none | basic | all (default all)\n"
    "  --kernels K            auto (fastest available) | reference (default auto)\n"
    "  --precision P          fp32 | bf16: bfloat16 operands in convolutions and matrix products\n"
    "                         (AVX512-BF16 or AMX); prints each output's difference from fp32\n"
    "  --conv-algorithm A     auto (Winograd for 3x3 convolutions where faster) | direct\n"
    "                         (default auto)\n"
    "  --threads N            intra-op threads (default: one per core)\n"
    "  --deterministic        bitwise-identical outputs at every thread count and run\n"
    "                         (docs/determinism.md)\n"
    "  --max-isa LEVEL        highest ISA level kernels may use, below ONYX_ISA's (docs/isa.md)\n"
    "  --timeout-ms N         stop each run after N ms with a \"run cancelled\" error (default 0:\n"
    "                         no limit)\n";

constexpr const char* kPlanHelp =
    "usage: onyx plan MODEL [--shape NAME=1x3x224x224 ...] [--optimization L] [--kernels K]\n"
    "                 [--conv-algorithm A] [--deterministic] [--max-isa LEVEL] [--why] [--json]\n"
    "                 [--generic]\n"
    "\n"
    "Prints the schedule (nodes after all passes) with each step's kernel and the ISA level it\n"
    "runs at (isa=...; --why also lists the kernels passed over and why; --max-isa caps the level\n"
    "below ONYX_ISA's, docs/isa.md), each value's storage, arena offset and size, and\n"
    "arena_bytes / no_reuse_bytes / max_live_bytes, and the weight bytes (initializers, packed,\n"
    "derived; one copy for every shape). Symbolic input dims default to 1. --generic prints the\n"
    "plan made for the declared (symbolic) shapes instead, which new shapes run on until they\n"
    "get plans of their own (docs/dynamic_shapes.md), and whether they do. --deterministic\n"
    "shows the kernels deterministic mode picks (docs/determinism.md).\n";

constexpr const char* kInfoHelp =
    "usage: onyx info MODEL\n"
    "       onyx info --cpu\n"
    "\n"
    "Prints the IR version, opset imports, inputs, outputs, operator counts and the operators "
    "onyx\n"
    "cannot run yet. --cpu prints this CPU's features, its ISA levels, the cap (ONYX_ISA) and\n"
    "the level Highway's and oneDNN's kernels dispatch to (docs/isa.md).\n";

constexpr const char* kBenchHelp =
    "usage: onyx bench MODEL [options]\n"
    "\n"
    "options:\n"
    "  --threads N         intra-op threads (default: one per core)\n"
    "  --max-isa LEVEL     highest ISA level kernels may use, below ONYX_ISA's (docs/isa.md)\n"
    "  --warmup W          untimed runs first (default 3)\n"
    "  --runs R            timed runs (default 20)\n"
    "  --pause-ms P        sleep P ms before each timed run, as between a server's requests\n"
    "                      (worker threads may fall asleep; see docs/threading.md)\n"
    "  --shape NAME=1x3x224x224  input shape (symbolic dims default to 1)\n"
    "  --optimization L    none | basic | all (default all); a list such as none,all times\n"
    "                      one session per level in alternating runs and prints the speed-ups\n"
    "  --kernels K         auto | reference (default auto)\n"
    "  --precision P       fp32 (default) | bf16: bfloat16 operands in convolutions and matrix\n"
    "                      products (AVX512-BF16 or AMX); prints each output's difference from "
    "fp32\n"
    "  --conv-algorithm A  auto | direct (default auto: Winograd for 3x3 convolutions where\n"
    "                      faster)\n"
    "  --deterministic     deterministic mode: bitwise-identical outputs at every thread\n"
    "                      count and run (docs/determinism.md)\n"
    "  --profile FILE      time every step of the timed runs: write them to FILE as Chrome\n"
    "                      trace-event JSON (open in Perfetto or chrome://tracing) and print\n"
    "                      time, share and calls per operator type\n"
    "  --json              print {median_ms, p90_ms, min_ms, session_create_ms, runs, threads}\n"
    "                      (with --profile also \"profile\": [{op, total_ms, share, calls}])\n"
    "\n"
    "shape sweep (inputs whose shape changes from call to call):\n"
    "  --shapes DIM=LO:HI[:STEP]  run at DIM = LO, LO+STEP, ... <= HI, where DIM is a symbolic\n"
    "                      dim (dim_param such as seq or batch) of the inputs; it is set in every\n"
    "                      input that declares it. STEP defaults to 1\n"
    "  --shapes DIM=V1,V2,...     the same for a list of values\n"
    "  --shapes INPUT=1x3x96x96,1x3x128x128  whole shapes of one input, in order\n"
    "                      Repeat --shapes to sweep the product (first one outermost, e.g.\n"
    "                      --shapes batch=1,4 --shapes seq=8:256:8); at most 100000 shapes.\n"
    "  --zip               advance every --shapes together instead (equal counts), for tied\n"
    "                      dims: --zip --shapes past_seq=0:31 --shapes total_seq=1:32\n"
    "                      Other symbolic dims are 1 unless --shape gives that input. For each\n"
    "                      shape, in order: the first call (a shape not seen before) is timed\n"
    "                      alone, then --runs R (default 5) calls give the steady median;\n"
    "                      --warmup is not used, so the very first call also pays one-time\n"
    "                      start-up (threads, kernel code). Prints per shape the first-call\n"
    "                      ms, the median ms and the first-call cost (first - median); the\n"
    "                      median and max cost; the first pass (sum of first calls) and the\n"
    "                      steady pass (sum of medians); resident memory (VmRSS) after the\n"
    "                      first call at the first shape and after the sweep, and its peak\n"
    "                      (VmHWM).\n"
    "                      Inputs: floats random in [0,1); integers and bools 0 (a valid index\n"
    "                      for any embedding: ids, token types, positions), 1 for inputs whose\n"
    "                      name contains \"mask\".\n"
    "                      --json prints {shapes: [{shape, inputs, first_ms, median_ms,\n"
    "                      first_call_cost_ms}], first_call_cost_median_ms,\n"
    "                      first_call_cost_max_ms, first_pass_ms, steady_pass_ms,\n"
    "                      rss_first_shape_bytes, rss_after_sweep_bytes, rss_peak_bytes, ...}\n";

constexpr const char* kConformanceHelp =
    "usage: onyx conformance --data DIR [--filter REGEX] [--json FILE] [--expected FILE]\n"
    "                        [--timeout SEC] [--quiet] [--symbolic-inputs] [--verbose]\n"
    "\n"
    "Runs every ONNX backend node test under DIR (each directory with model.onnx and\n"
    "test_data_set_*/input_*.pb, output_*.pb), each in its own process, and reports pass / wrong\n"
    "result / unsupported / error / crash / timeout per test with a summary line. Outputs are\n"
    "compared as onnx's runner does: rtol 1e-3 (2^-6 for bfloat16), atol 1e-7. --expected FILE\n"
    "lists regexes of tests that must pass; the exit code is 1 when one of them does not.\n"
    "\n"
    "  --symbolic-inputs  before loading each model, make every dim of every graph input a\n"
    "                     distinct symbol (\"d<input>_<dim>\", rank kept; outputs and\n"
    "                     value_info unchanged), so the first runs go through the shape-generic\n"
    "                     plan (docs/dynamic_shapes.md; ONYX_SPECIALIZE_AFTER_RUNS=1 forces\n"
    "                     specialised plans instead). The tests that must pass this way:\n"
    "                     tests/conformance/expected_pass_symbolic.txt.\n"
    "  --verbose          append to each result the plan each data set ran on (generic,\n"
    "                     fallback: the generic plan failed and a specialised one ran,\n"
    "                     specialised) and the op=impl pairs that ran.\n";

constexpr const char* kOpsHelp =
    "usage: onyx ops [--json]\n"
    "\n"
    "Lists every registered operator: domain, op type, the opset range each definition covers\n"
    "and its kernel implementations in selection order, each as name@level[/library]: the lowest\n"
    "ISA level it needs and the library that picks its code at run time (docs/isa.md).\n";

int Fail(const std::string& cmd, const Status& s) {
  std::cerr << "onyx " << cmd << ": error: " << s.message() << "\n";
  return 1;
}

bool WantsHelp(int argc, char** argv) {
  for (int i = 2; i < argc; ++i)
    if (std::string(argv[i]) == "--help" || std::string(argv[i]) == "-h") return true;
  return false;
}

StatusOr<SessionOptions> ParseSessionOptions(const Args& a) {
  SessionOptions o;
  if (a.has("threads")) {
    ONYX_ASSIGN_OR_RETURN(o.intra_op_threads, ParseInt("--threads", a.get("threads"), 1));
  }
  if (a.has("optimization")) {
    ONYX_ASSIGN_OR_RETURN(o.optimization, ParseOptimizationLevel(a.get("optimization")));
  }
  if (a.has("kernels")) {
    const std::string k = a.get("kernels");
    if (k != "auto" && k != "reference")
      return InvalidArgument("--kernels must be auto or reference; got '", k, "'");
    o.reference_kernels = k == "reference";
  }
  if (a.has("conv-algorithm")) {
    const std::string c = a.get("conv-algorithm");
    if (c != "auto" && c != "direct")
      return InvalidArgument("--conv-algorithm must be auto or direct; got '", c, "'");
    o.winograd = c == "auto";
  }
  if (a.has("precision")) {
    const std::string p = a.get("precision");
    if (p != "fp32" && p != "bf16")
      return InvalidArgument("--precision must be fp32 or bf16; got '", p, "'");
    o.bf16 = p == "bf16";
  }
  o.deterministic = a.has("deterministic");
  if (a.has("max-isa")) o.max_isa = a.get("max-isa");  // checked by Session::Create
  return o;
}

// With --precision bf16: each float output's largest difference from a float32 session of the
// same model on the same feeds, relative to the float32 output's largest magnitude.
StatusOr<std::vector<std::pair<std::string, double>>> Bf16Differences(const std::string& model,
                                                                      SessionOptions opts,
                                                                      const NamedValues& feeds,
                                                                      const NamedValues& outs) {
  opts.bf16 = false;
  ONYX_ASSIGN_OR_RETURN(Session fp32, Session::Create(model, opts));
  NamedValues want;
  ONYX_RETURN_IF_ERROR(fp32.Run(feeds, {}, &want));
  std::vector<std::pair<std::string, double>> diffs;
  for (size_t i = 0; i < outs.size() && i < want.size(); ++i) {
    const Value& g = outs[i].second;
    const Value& w = want[i].second;
    if (!g.is_tensor() || !w.is_tensor() || g.tensor().dtype() != DType::kFloat ||
        w.tensor().dtype() != DType::kFloat || g.tensor().numel() != w.tensor().numel())
      continue;
    const float* gd = g.tensor().data<float>();
    const float* wd = w.tensor().data<float>();
    double diff = 0, scale = 0;
    for (int64_t k = 0; k < w.tensor().numel(); ++k) {
      diff = std::max(diff, std::fabs(static_cast<double>(gd[k]) - wd[k]));
      scale = std::max(scale, std::fabs(static_cast<double>(wd[k])));
    }
    diffs.push_back({outs[i].first, scale > 0 ? diff / scale : diff});
  }
  return diffs;
}

bool EnsureDir(const std::string& d) {
  struct stat st;
  if (stat(d.c_str(), &st) == 0) return S_ISDIR(st.st_mode);
  return mkdir(d.c_str(), 0755) == 0;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double Percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  const size_t idx = std::min(v.size() - 1, static_cast<size_t>(p * (v.size() - 1) + 0.5));
  return v[idx];
}

void PrintTop(const Value& v, int k) {
  if (!v.is_tensor() || v.tensor().dtype() == DType::kString) return;
  const Tensor& t = v.tensor();
  std::vector<int64_t> idx(static_cast<size_t>(t.numel()));
  std::iota(idx.begin(), idx.end(), 0);
  auto val = [&](int64_t i) { return LoadAsDouble(t.dtype(), t.raw_data(), i); };
  const size_t kk = std::min<size_t>(static_cast<size_t>(k), idx.size());
  std::partial_sort(idx.begin(), idx.begin() + kk, idx.end(), [&](int64_t a, int64_t b) {
    return val(a) > val(b) || (val(a) == val(b) && a < b);
  });
  for (size_t i = 0; i < kk; ++i)
    std::printf("    #%zu  index %lld  value %.6g\n", i + 1, static_cast<long long>(idx[i]),
                val(idx[i]));
}

int RunMain(int argc, char** argv) {
  auto a = ParseArgs(
      argc, argv, 2, {"deterministic"},
      {"input", "output-dir", "dump-dir", "optimization", "threads", "kernels", "conv-algorithm",
       "generate", "shape", "top", "repeat", "timeout-ms", "precision", "max-isa"});
  if (!a.ok()) return Fail("run", a.status());
  if (a->positional.empty())
    return Fail("run", InvalidArgument("missing MODEL (see onyx run --help)"));
  auto opts = ParseSessionOptions(*a);
  if (!opts.ok()) return Fail("run", opts.status());
  auto shapes = ParseShapes(*a);
  if (!shapes.ok()) return Fail("run", shapes.status());
  auto repeat = ParseInt("--repeat", a->get("repeat", "1"), 1);
  if (!repeat.ok()) return Fail("run", repeat.status());
  auto top = ParseInt("--top", a->get("top", "0"), 0);
  if (!top.ok()) return Fail("run", top.status());
  auto timeout_ms = ParseInt("--timeout-ms", a->get("timeout-ms", "0"), 0);
  if (!timeout_ms.ok()) return Fail("run", timeout_ms.status());

  const std::string model = a->positional[0];
  auto session = Session::Create(model, *opts);
  if (!session.ok()) return Fail("run", session.status());
  const auto required = session->required_inputs();
  NamedValues feeds;
  // Positional .pb files bind to the inputs without initializers, in order.
  std::vector<IoInfo> free_inputs;
  for (const auto& in : session->inputs())
    if (std::find(required.begin(), required.end(), in.name) != required.end())
      free_inputs.push_back(in);
  for (size_t k = 1; k < a->positional.size(); ++k) {
    if (k - 1 >= free_inputs.size())
      return Fail("run", InvalidArgument("got ", a->positional.size() - 1,
                                         " input files but the model has ", free_inputs.size(),
                                         " inputs without initializers"));
    auto v = engine::ReadValueFile(a->positional[k], free_inputs[k - 1].type);
    if (!v.ok())
      return Fail("run", v.status().WithContext("input '" + free_inputs[k - 1].name + "': "));
    feeds.push_back({free_inputs[k - 1].name, std::move(v).value()});
  }
  for (const std::string& spec : a->all("input")) {
    const size_t eq = spec.find('=');
    if (eq == std::string::npos)
      return Fail("run", InvalidArgument("--input expects NAME=FILE.pb, got '", spec, "'"));
    const std::string name = spec.substr(0, eq);
    TypeInfo hint;
    bool known = false;
    for (const auto& in : session->inputs())
      if (in.name == name) {
        hint = in.type;
        known = true;
      }
    if (!known) return Fail("run", InvalidArgument("--input names unknown input '", name, "'"));
    auto v = engine::ReadValueFile(spec.substr(eq + 1), hint);
    if (!v.ok()) return Fail("run", v.status().WithContext("input '" + name + "': "));
    feeds.push_back({name, std::move(v).value()});
  }
  if (a->has("generate")) {
    // Only the inputs no file gave: one given as a file may have a type that cannot be generated
    // (no declared shape, strings) or a declared shape too large to build.
    std::set<std::string> given;
    for (const auto& f : feeds) given.insert(f.first);
    auto gen = GenerateInputs(*session, a->get("generate"), *shapes, 0, given);
    if (!gen.ok()) return Fail("run", gen.status());
    for (auto& [name, v] : *gen) feeds.push_back({name, std::move(v)});
  }
  RunOptions ro;
  ro.timeout_ms = *timeout_ms;
  const std::string dump = a->get("dump-dir");
  Status dump_status;
  if (!dump.empty()) {
    if (!EnsureDir(dump)) return Fail("run", IoError("cannot create --dump-dir '", dump, "'"));
    ro.observer = [&](const std::string& name, const Value& v) {
      Status s =
          engine::WriteValueFile(dump + "/" + SafeFileName(name) + ".pb", name, v, TypeInfo());
      if (!s.ok() && dump_status.ok()) dump_status = s;
    };
  }
  NamedValues outs;
  std::vector<double> times;
  for (int r = 0; r < *repeat; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    RunOptions later;  // the observer dumps the first run only
    later.timeout_ms = ro.timeout_ms;
    Status s = session->Run(feeds, r == 0 ? ro : later, &outs);
    const auto t1 = std::chrono::steady_clock::now();
    if (!s.ok()) return Fail("run", s);
    times.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  if (!dump_status.ok()) return Fail("run", dump_status);
  const std::string out_dir = a->get("output-dir");
  if (!out_dir.empty() && !EnsureDir(out_dir))
    return Fail("run", IoError("cannot create --output-dir '", out_dir, "'"));
  for (size_t i = 0; i < outs.size(); ++i) {
    const auto& [name, v] = outs[i];
    std::cout << "output '" << name << "': " << Summarize(v) << "\n";
    if (*top > 0) PrintTop(v, *top);
    if (!out_dir.empty()) {
      Status s = engine::WriteValueFile(out_dir + "/" + SafeFileName(name) + ".pb", name, v,
                                        session->outputs()[i].type);
      if (!s.ok()) return Fail("run", s);
    }
  }
  const int threads = session->intra_op_threads();
  std::printf("latency: %.3f ms (median of %d run%s, %d thread%s)\n", Median(times), *repeat,
              *repeat == 1 ? "" : "s", threads, threads == 1 ? "" : "s");
  if (opts->bf16) {
    auto diffs = Bf16Differences(a->positional[0], *opts, feeds, outs);
    if (!diffs.ok()) return Fail("run", diffs.status());
    for (const auto& [name, d] : *diffs)
      std::printf(
          "bf16 vs fp32: output '%s': max difference %.3g (relative to its largest value)\n",
          name.c_str(), d);
  }
  return 0;
}

int PlanMain(int argc, char** argv) {
  auto a = ParseArgs(argc, argv, 2, {"json", "generic", "deterministic", "why"},
                     {"shape", "optimization", "threads", "kernels", "conv-algorithm", "max-isa"});
  if (!a.ok()) return Fail("plan", a.status());
  if (a->positional.size() != 1)
    return Fail("plan", InvalidArgument("expected exactly one MODEL (see onyx plan --help)"));
  auto opts = ParseSessionOptions(*a);
  if (!opts.ok()) return Fail("plan", opts.status());
  auto shapes = ParseShapes(*a);
  if (!shapes.ok()) return Fail("plan", shapes.status());
  auto session = Session::Create(a->positional[0], *opts);
  if (!session.ok()) return Fail("plan", session.status());
  if (a->has("generic")) {
    if (!shapes->empty())
      return Fail("plan", InvalidArgument("--generic prints the plan for the declared shapes; "
                                          "it does not take --shape"));
    std::cout << session->DescribeGenericPlan(a->has("json"));
    return 0;
  }
  auto text = session->DescribePlan(*shapes, a->has("json"), a->has("why"));
  if (!text.ok()) return Fail("plan", text.status());
  std::cout << *text;
  return 0;
}

int InfoMain(int argc, char** argv) {
  auto a = ParseArgs(argc, argv, 2, {"cpu"}, {});
  if (!a.ok()) return Fail("info", a.status());
  if (a->has("cpu")) {
    if (!a->positional.empty())
      return Fail("info", InvalidArgument("--cpu takes no MODEL (see onyx info --help)"));
    std::cout << CpuReport();
    return 0;
  }
  if (a->positional.size() != 1)
    return Fail("info", InvalidArgument("expected exactly one MODEL (see onyx info --help)"));
  const std::string path = a->positional[0];
  auto missing = UnsupportedNodes(path);
  if (!missing.ok()) return Fail("info", missing.status());
  auto session = Session::Create(path);
  if (session.ok()) {
    std::cout << "model: " << session->model_name() << "\nir_version: " << session->ir_version()
              << "\nopsets:";
    for (const auto& [d, v] : session->opsets())
      std::cout << " " << (d.empty() ? "ai.onnx" : d) << "=" << v;
    std::cout << "\ninputs:\n";
    for (const auto& in : session->inputs())
      std::cout << "  " << in.name << ": " << in.type.ToString() << "\n";
    std::cout << "outputs:\n";
    for (const auto& out : session->outputs())
      std::cout << "  " << out.name << ": " << out.type.ToString() << "\n";
    std::cout << "operators:\n";
    for (const auto& [op, n] : session->operator_counts())
      std::cout << "  " << op << ": " << n << "\n";
    std::cout << "unsupported: none\n";
    return 0;
  }
  std::cout << "model: " << path << "\n";
  if (missing->empty()) return Fail("info", session.status());
  std::cout << "unsupported (" << missing->size() << " nodes):\n";
  for (const auto& m : *missing) std::cout << "  " << m << "\n";
  return 0;
}

// `onyx bench --optimization none,all`: one session per level, warmed up, then timed in
// alternating runs so that machine noise hits every level alike; prints each median and the
// speed-up of each level over the first.
int BenchLevels(const Args& a, const std::vector<std::string>& levels) {
  Args one = a;
  one.options.erase("optimization");
  auto base = ParseSessionOptions(one);
  if (!base.ok()) return Fail("bench", base.status());
  auto shapes = ParseShapes(a);
  if (!shapes.ok()) return Fail("bench", shapes.status());
  auto warmup = ParseInt("--warmup", a.get("warmup", "3"), 0);
  auto runs = ParseInt("--runs", a.get("runs", "20"), 1);
  if (!warmup.ok()) return Fail("bench", warmup.status());
  if (!runs.ok()) return Fail("bench", runs.status());
  std::vector<Session> sessions;
  for (const std::string& level : levels) {
    SessionOptions o = *base;
    auto parsed = ParseOptimizationLevel(level);
    if (!parsed.ok()) return Fail("bench", parsed.status());
    o.optimization = *parsed;
    auto s = Session::Create(a.positional[0], o);
    if (!s.ok()) return Fail("bench", s.status());
    sessions.push_back(std::move(*s));
  }
  auto feeds = GenerateInputs(sessions[0], "random", *shapes, 42);
  if (!feeds.ok()) return Fail("bench", feeds.status());
  SetIndexSafeIntegers(&*feeds);
  NamedValues outs;
  std::vector<std::vector<double>> times(levels.size());
  for (int i = 0; i < *warmup + *runs; ++i) {
    for (size_t l = 0; l < levels.size(); ++l) {
      const auto t0 = std::chrono::steady_clock::now();
      Status st = sessions[l].Run(*feeds, {}, &outs);
      const auto t1 = std::chrono::steady_clock::now();
      if (!st.ok()) return Fail("bench", st);
      if (i >= *warmup)
        times[l].push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    }
  }
  const std::string name = planner::JsonEscape(sessions[0].model_name());
  const double first = Median(times[0]);
  if (a.has("json")) {
    std::printf("{\"model\": \"%s\", \"threads\": %d, \"runs\": %d, \"levels\": [", name.c_str(),
                sessions[0].intra_op_threads(), *runs);
    for (size_t l = 0; l < levels.size(); ++l)
      std::printf("%s{\"optimization\": \"%s\", \"median_ms\": %.4f, \"speedup\": %.4f}",
                  l ? ", " : "", levels[l].c_str(), Median(times[l]), first / Median(times[l]));
    std::printf("]}\n");
  } else {
    std::printf("%s: %d alternating runs, %d threads\n", sessions[0].model_name().c_str(), *runs,
                sessions[0].intra_op_threads());
    for (size_t l = 0; l < levels.size(); ++l)
      std::printf("  --optimization %-5s median %.3f ms  (%.2fx of %s)\n", levels[l].c_str(),
                  Median(times[l]), first / Median(times[l]), levels[0].c_str());
  }
  return 0;
}

// Most shapes one `onyx bench --shapes` may sweep: a typo such as 1:100000000 fails at once
// rather than running for hours.
constexpr size_t kMaxSweepShapes = 100000;

std::string MiB(int64_t bytes) {
  if (bytes < 0) return "n/a";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return buf;
}

// `onyx bench --shapes`: one session fed a new shape per step, as a server with variable-length
// requests sees it. The first call at each shape pays for planning that shape; it is timed alone.
int BenchShapes(const Args& a) {
  if (a.has("profile"))
    return Fail("bench", InvalidArgument("--profile does not go with --shapes"));
  auto opts = ParseSessionOptions(a);
  if (!opts.ok()) return Fail("bench", opts.status());
  auto fixed = ParseShapes(a);
  if (!fixed.ok()) return Fail("bench", fixed.status());
  auto runs = ParseInt("--runs", a.get("runs", "5"), 1);
  auto pause_ms = ParseInt("--pause-ms", a.get("pause-ms", "0"), 0);
  if (!runs.ok()) return Fail("bench", runs.status());
  if (!pause_ms.ok()) return Fail("bench", pause_ms.status());
  const auto c0 = std::chrono::steady_clock::now();
  auto session = Session::Create(a.positional[0], *opts);
  const auto c1 = std::chrono::steady_clock::now();
  if (!session.ok()) return Fail("bench", session.status());
  const double create_ms = std::chrono::duration<double, std::milli>(c1 - c0).count();
  auto points = ExpandShapeSweep(*session, a.all("shapes"), *fixed, a.has("zip"), kMaxSweepShapes);
  if (!points.ok()) return Fail("bench", points.status());

  struct Row {
    double first_ms, median_ms;
    std::vector<std::pair<std::string, Shape>> shapes;  // of every generated input
  };
  std::vector<Row> rows;
  rows.reserve(points->size());
  int64_t rss_first = -1;
  NamedValues outs;
  auto timed_run = [&](const NamedValues& feeds, double* ms) {
    if (*pause_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(*pause_ms));
    const auto t0 = std::chrono::steady_clock::now();
    Status st = session->Run(feeds, {}, &outs);
    *ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return st;
  };
  for (size_t p = 0; p < points->size(); ++p) {
    const ShapePoint& pt = (*points)[p];
    auto feeds = GenerateInputs(*session, "random", pt.shapes, 42);
    if (!feeds.ok()) return Fail("bench", feeds.status().WithContext("at " + pt.label + ": "));
    SetIndexSafeIntegers(&*feeds);
    Row row;
    Status st = timed_run(*feeds, &row.first_ms);
    if (!st.ok()) return Fail("bench", st.WithContext("at " + pt.label + ": "));
    if (p == 0) rss_first = ProcStatusBytes("VmRSS");
    std::vector<double> times(static_cast<size_t>(*runs));
    for (double& t : times) {
      st = timed_run(*feeds, &t);
      if (!st.ok()) return Fail("bench", st.WithContext("at " + pt.label + ": "));
    }
    row.median_ms = Median(times);
    for (const auto& [name, v] : *feeds)
      if (v.is_tensor()) row.shapes.push_back({name, v.tensor().shape()});
    rows.push_back(std::move(row));
  }
  outs.clear();
  const int64_t rss_after = ProcStatusBytes("VmRSS"), rss_peak = ProcStatusBytes("VmHWM");
  std::vector<double> costs;
  double first_pass = 0, steady_pass = 0;
  size_t worst = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    costs.push_back(rows[i].first_ms - rows[i].median_ms);
    first_pass += rows[i].first_ms;
    steady_pass += rows[i].median_ms;
    if (costs[i] > costs[worst]) worst = i;
  }
  const double cost_median = Median(costs);
  const int threads = session->intra_op_threads();
  if (a.has("json")) {
    std::printf(
        "{\"model\": \"%s\", \"threads\": %d, \"runs\": %d, \"session_create_ms\": %.3f, "
        "\"shapes\": [",
        planner::JsonEscape(session->model_name()).c_str(), threads, *runs, create_ms);
    for (size_t i = 0; i < rows.size(); ++i) {
      std::printf("%s\n  {\"shape\": \"%s\", \"inputs\": {", i ? "," : "",
                  planner::JsonEscape((*points)[i].label).c_str());
      bool first = true;
      for (const auto& [name, v] : rows[i].shapes) {
        std::printf("%s\"%s\": [", first ? "" : ", ", planner::JsonEscape(name).c_str());
        for (size_t d = 0; d < v.size(); ++d)
          std::printf("%s%lld", d ? ", " : "", static_cast<long long>(v[d]));
        std::printf("]");
        first = false;
      }
      std::printf("}, \"first_ms\": %.4f, \"median_ms\": %.4f, \"first_call_cost_ms\": %.4f}",
                  rows[i].first_ms, rows[i].median_ms, costs[i]);
    }
    std::printf(
        "],\n \"first_call_cost_median_ms\": %.4f, \"first_call_cost_max_ms\": %.4f, "
        "\"first_call_cost_max_shape\": \"%s\", \"first_pass_ms\": %.3f, \"steady_pass_ms\": "
        "%.3f, \"rss_first_shape_bytes\": %lld, \"rss_after_sweep_bytes\": %lld, "
        "\"rss_peak_bytes\": %lld}\n",
        cost_median, costs[worst], planner::JsonEscape((*points)[worst].label).c_str(), first_pass,
        steady_pass, static_cast<long long>(rss_first), static_cast<long long>(rss_after),
        static_cast<long long>(rss_peak));
    return 0;
  }
  std::printf(
      "%s: session create %.1f ms; %zu shapes, first call then %d run%s each, %d thread%s\n",
      session->model_name().c_str(), create_ms, rows.size(), *runs, *runs == 1 ? "" : "s", threads,
      threads == 1 ? "" : "s");
  size_t width = 5;
  for (const ShapePoint& pt : *points) width = std::max(width, pt.label.size());
  std::printf("  %-*s %12s %12s %12s\n", static_cast<int>(width), "shape", "first ms", "median ms",
              "cost ms");
  for (size_t i = 0; i < rows.size(); ++i)
    std::printf("  %-*s %12.3f %12.3f %12.3f\n", static_cast<int>(width),
                (*points)[i].label.c_str(), rows[i].first_ms, rows[i].median_ms, costs[i]);
  std::printf("first-call cost: median %.3f ms, max %.3f ms (%s)\n", cost_median, costs[worst],
              (*points)[worst].label.c_str());
  std::printf("first pass %.3f ms (sum of first calls); steady pass %.3f ms (sum of medians)\n",
              first_pass, steady_pass);
  std::printf("resident memory: %s after the first shape, %s after the sweep",
              MiB(rss_first).c_str(), MiB(rss_after).c_str());
  if (rss_first >= 0 && rss_after >= 0)
    std::printf(" (%+.1f MiB)", static_cast<double>(rss_after - rss_first) / (1024.0 * 1024.0));
  std::printf(", peak %s\n", MiB(rss_peak).c_str());
  return 0;
}

int BenchMain(int argc, char** argv) {
  auto a = ParseArgs(argc, argv, 2, {"json", "zip", "deterministic"},
                     {"threads", "warmup", "runs", "optimization", "shape", "kernels", "profile",
                      "max-isa", "conv-algorithm", "pause-ms", "shapes", "precision"});
  if (!a.ok()) return Fail("bench", a.status());
  if (a->positional.size() != 1)
    return Fail("bench", InvalidArgument("expected exactly one MODEL (see onyx bench --help)"));
  const std::string opt = a->get("optimization");
  if (a->has("zip") && !a->has("shapes"))
    return Fail("bench", InvalidArgument("--zip needs --shapes"));
  if (a->has("shapes")) {
    if (opt.find(',') != std::string::npos)
      return Fail("bench", InvalidArgument("--shapes takes a single --optimization level"));
    return BenchShapes(*a);
  }
  if (opt.find(',') != std::string::npos) {
    if (a->has("profile"))
      return Fail("bench", InvalidArgument("--profile takes a single --optimization level"));
    std::vector<std::string> levels;
    std::stringstream ss(opt);
    for (std::string l; std::getline(ss, l, ',');) levels.push_back(l);
    return BenchLevels(*a, levels);
  }
  auto opts = ParseSessionOptions(*a);
  if (!opts.ok()) return Fail("bench", opts.status());
  auto shapes = ParseShapes(*a);
  if (!shapes.ok()) return Fail("bench", shapes.status());
  auto warmup = ParseInt("--warmup", a->get("warmup", "3"), 0);
  auto runs = ParseInt("--runs", a->get("runs", "20"), 1);
  auto pause_ms = ParseInt("--pause-ms", a->get("pause-ms", "0"), 0);
  if (!warmup.ok()) return Fail("bench", warmup.status());
  if (!runs.ok()) return Fail("bench", runs.status());
  if (!pause_ms.ok()) return Fail("bench", pause_ms.status());
  const auto c0 = std::chrono::steady_clock::now();
  auto session = Session::Create(a->positional[0], *opts);
  const auto c1 = std::chrono::steady_clock::now();
  if (!session.ok()) return Fail("bench", session.status());
  const double create_ms = std::chrono::duration<double, std::milli>(c1 - c0).count();
  auto feeds = GenerateInputs(*session, "random", *shapes, 42);
  if (!feeds.ok()) return Fail("bench", feeds.status());
  SetIndexSafeIntegers(&*feeds);  // token ids and token types index embeddings of any size
  NamedValues outs;
  for (int i = 0; i < *warmup; ++i) {
    Status s = session->Run(*feeds, {}, &outs);
    if (!s.ok()) return Fail("bench", s);
  }
  const std::string profile_path = a->get("profile");
  StepProfile profile;
  RunOptions ro;
  if (!profile_path.empty()) ro.step_observer = profile.Observer();
  std::vector<double> times;
  for (int i = 0; i < *runs; ++i) {
    if (*pause_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(*pause_ms));
    if (!profile_path.empty()) profile.BeginRun(i);
    const auto t0 = std::chrono::steady_clock::now();
    Status s = session->Run(*feeds, ro, &outs);
    const auto t1 = std::chrono::steady_clock::now();
    if (!profile_path.empty()) profile.EndRun();
    if (!s.ok()) return Fail("bench", s);
    times.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  if (!profile_path.empty() &&
      !profile.WriteChromeTrace(profile_path, session->model_name(), session->intra_op_threads()))
    return Fail("bench", IoError("cannot write --profile file '", profile_path, "'"));
  const double med = Median(times), p90 = Percentile(times, 0.9);
  const double mn = *std::min_element(times.begin(), times.end());
  const std::string name = planner::JsonEscape(session->model_name());
  std::vector<std::pair<std::string, double>> bf16_diffs;
  if (opts->bf16) {
    auto diffs = Bf16Differences(a->positional[0], *opts, *feeds, outs);
    if (!diffs.ok()) return Fail("bench", diffs.status());
    bf16_diffs = *diffs;
  }
  // Runs by the thread count they got (SessionOptions::adapt_threads), warm-up included.
  std::string by_threads, by_threads_json;
  for (const auto& [t, n] : session->runs_by_threads()) {
    by_threads += StrCat(by_threads.empty() ? "" : ", ", n, " at ", t);
    by_threads_json += StrCat(by_threads_json.empty() ? "" : ", ", "\"", t, "\": ", n);
  }
  if (a->has("json")) {
    std::printf(
        "{\"model\": \"%s\", \"threads\": %d, \"runs\": %d, \"median_ms\": %.4f, \"p90_ms\": %.4f, "
        "\"min_ms\": %.4f, \"session_create_ms\": %.3f, \"runs_by_threads\": {%s}",
        name.c_str(), session->intra_op_threads(), *runs, med, p90, mn, create_ms,
        by_threads_json.c_str());
    if (opts->bf16) {
      std::printf(", \"bf16_max_rel_diff\": {");
      for (size_t i = 0; i < bf16_diffs.size(); ++i)
        std::printf("%s\"%s\": %.6g", i ? ", " : "",
                    planner::JsonEscape(bf16_diffs[i].first).c_str(), bf16_diffs[i].second);
      std::printf("}");
    }
    if (!profile_path.empty()) {
      const double kernel_ms = profile.KernelMs();
      std::printf(", \"profile\": [");
      bool first = true;
      for (const auto& op : profile.Summary()) {
        std::printf("%s{\"op\": \"%s\", \"total_ms\": %.4f, \"share\": %.4f, \"calls\": %lld}",
                    first ? "" : ", ", planner::JsonEscape(op.op).c_str(), op.total_ms,
                    kernel_ms > 0 ? op.total_ms / kernel_ms : 0.0,
                    static_cast<long long>(op.calls));
        first = false;
      }
      std::printf("]");
    }
    std::printf("}\n");
  } else {
    std::printf("%s: session create %.1f ms; %d runs: median %.3f ms, p90 %.3f ms, min %.3f ms\n",
                session->model_name().c_str(), create_ms, *runs, med, p90, mn);
    for (const auto& [out, d] : bf16_diffs)
      std::printf(
          "bf16 vs fp32: output '%s': max difference %.3g (relative to its largest value)\n",
          out.c_str(), d);
    if (session->intra_op_threads() > 1)
      std::printf("runs by threads (warm-up included): %s\n", by_threads.c_str());
    if (!profile_path.empty()) {
      profile.PrintSummary(stdout);
      std::printf("trace: %s\n", profile_path.c_str());
    }
  }
  return 0;
}

int OpsMain(int argc, char** argv) {
  auto a = ParseArgs(argc, argv, 2, {"json"}, {});
  if (!a.ok()) return Fail("ops", a.status());
  const bool json = a->has("json");
  std::vector<const kernels::OpDef*> defs = kernels::OpRegistry::Global().All();
  if (json) std::cout << "[";
  bool first = true;
  for (const kernels::OpDef* d : defs) {
    const std::string domain = d->domain.empty() ? "ai.onnx" : d->domain;
    const std::string until =
        d->until >= kernels::kLatestOpset ? "latest" : std::to_string(d->until);
    std::string impls;
    // name@level[/library]: the lowest ISA level each kernel needs (docs/isa.md).
    for (const auto& k : d->impls) {
      impls += (impls.empty() ? "" : ",") + k.name + "@" + kernels::IsaName(k.isa.min);
      if (*k.isa.library) impls += std::string("/") + k.isa.library;
    }
    if (json) {
      std::cout << (first ? "" : ",") << "\n  {\"domain\": \"" << planner::JsonEscape(domain)
                << "\", \"op\": \"" << planner::JsonEscape(d->op_type)
                << "\", \"since\": " << d->since
                << ", \"until\": " << (d->until >= kernels::kLatestOpset ? -1 : d->until)
                << ", \"shape_inference\": " << (d->infer ? "true" : "false") << ", \"impls\": \""
                << planner::JsonEscape(impls) << "\"}";
    } else {
      std::cout << domain << " " << d->op_type << " " << d->since << ".." << until << " [" << impls
                << "]\n";
    }
    first = false;
  }
  if (json) std::cout << "\n]\n";
  return 0;
}

}  // namespace
}  // namespace onyx::cli

int main(int argc, char** argv) {
  using namespace onyx::cli;
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h" ||
      std::string(argv[1]) == "help") {
    std::cout << kUsage;
    return argc < 2 ? 2 : 0;
  }
  const std::string cmd = argv[1];
  const bool help = WantsHelp(argc, argv);
  try {
    if (cmd == "run") return help ? (std::cout << kRunHelp, 0) : RunMain(argc, argv);
    if (cmd == "plan") return help ? (std::cout << kPlanHelp, 0) : PlanMain(argc, argv);
    if (cmd == "info") return help ? (std::cout << kInfoHelp, 0) : InfoMain(argc, argv);
    if (cmd == "bench") return help ? (std::cout << kBenchHelp, 0) : BenchMain(argc, argv);
    if (cmd == "ops") return help ? (std::cout << kOpsHelp, 0) : OpsMain(argc, argv);
    if (cmd == "prune") return help ? (std::cout << kPruneHelp, 0) : PruneMain(argc, argv);
    if (cmd == "check") return help ? (std::cout << kCheckHelp, 0) : CheckMain(argc, argv);
    if (cmd == "conformance") {
      if (help) return std::cout << kConformanceHelp, 0;
      auto a = ParseArgs(argc, argv, 2, {"quiet", "symbolic-inputs", "verbose"},
                         {"data", "filter", "json", "expected", "timeout"});
      if (!a.ok()) return Fail("conformance", a.status());
      return ConformanceMain(*a);
    }
  } catch (const std::exception& e) {
    std::cerr << "onyx " << cmd << ": error: " << e.what() << "\n";
    return 1;
  }
  std::cerr << "onyx: unknown command '" << cmd << "'\n\n" << kUsage;
  return 2;
}
