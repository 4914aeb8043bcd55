// `onyx conformance`: runs every ONNX backend node test under a directory, each in a forked child
// with a timeout, so a crash or a hang is reported as such and the run goes on.
#include "engine/cli/conformance.h"

#include <dirent.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <regex>
#include <set>
#include <sstream>

#include "engine/cli/cli_util.h"
#include "engine/tensor_proto.h"
#include "onnx/onnx-ml.pb.h"
#include "planner/execution_plan.h"

namespace onyx::cli {
namespace {

constexpr double kRtol = 1e-3;  // as the ONNX backend tests compare
constexpr double kAtol = 1e-7;

bool IsDir(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}
bool IsFile(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::vector<std::string> ListDir(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != "..") names.push_back(n);
    }
    closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

// Files named prefix_<k>.pb in order of k.
std::vector<std::string> NumberedFiles(const std::string& dir, const std::string& prefix) {
  std::vector<std::string> out;
  for (int k = 0;; ++k) {
    const std::string p = dir + "/" + prefix + "_" + std::to_string(k) + ".pb";
    if (!IsFile(p)) break;
    out.push_back(p);
  }
  return out;
}

struct Outcome {
  std::string status;  // pass | fail | unsupported | error | crash | timeout
  std::string message;
};

struct RunConfig {
  bool symbolic_inputs = false;  // every input dim made a distinct dim_param before loading
  bool verbose = false;          // report the plan kind and the impls that ran, per test
};

// Makes every dim of a (possibly nested) tensor type a distinct symbol, keeping the rank, so the
// session plans for unknown shapes as it would for a model exported with dynamic axes.
void MakeDimsSymbolic(onnx::TypeProto* t, const std::string& prefix) {
  if (t->has_tensor_type() && t->tensor_type().has_shape()) {
    auto* shape = t->mutable_tensor_type()->mutable_shape();
    for (int j = 0; j < shape->dim_size(); ++j)
      shape->mutable_dim(j)->set_dim_param(StrCat(prefix, "_", j));
  } else if (t->has_sequence_type() && t->sequence_type().has_elem_type()) {
    MakeDimsSymbolic(t->mutable_sequence_type()->mutable_elem_type(), prefix);
  } else if (t->has_optional_type() && t->optional_type().has_elem_type()) {
    MakeDimsSymbolic(t->mutable_optional_type()->mutable_elem_type(), prefix);
  }
}

// The model file with every graph input's dims replaced by "d<input>_<dim>"; outputs and
// value_info keep whatever they declare (static shapes there are legal with dynamic inputs).
StatusOr<std::string> SymbolicInputsModel(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return InvalidArgument("cannot read '", path, "'");
  std::ostringstream bytes;
  bytes << f.rdbuf();
  onnx::ModelProto m;
  if (!m.ParseFromString(bytes.str()))
    return InvalidArgument("'", path, "' is not a valid ModelProto");
  for (int i = 0; i < m.graph().input_size(); ++i) {
    auto* in = m.mutable_graph()->mutable_input(i);
    if (in->has_type()) MakeDimsSymbolic(in->mutable_type(), StrCat("d", i));
  }
  std::string out;
  if (!m.SerializeToString(&out)) return InvalidArgument("cannot re-serialize '", path, "'");
  return out;
}

// Runs one test directory in this process.
Outcome RunTest(const std::string& dir, const RunConfig& cfg) {
  SessionOptions options;
  options.intra_op_threads = 1;
  options.optimization = OptimizationLevel::kAll;
  const std::string path = dir + "/model.onnx";
  auto bytes = cfg.symbolic_inputs ? SymbolicInputsModel(path) : StatusOr<std::string>("");
  if (!bytes.ok()) return {"error", bytes.status().message()};
  auto session = cfg.symbolic_inputs ? Session::CreateFromBytes(*bytes, options)
                                     : Session::Create(path, options);
  if (!session.ok()) {
    const bool unsup = session.status().code() == ErrorCode::kUnsupported;
    return {unsup ? "unsupported" : "error", session.status().message()};
  }
  const auto required = session->required_inputs();
  std::vector<IoInfo> ins;
  for (const auto& in : session->inputs())
    if (std::find(required.begin(), required.end(), in.name) != required.end()) ins.push_back(in);
  int sets = 0;
  // --verbose: which plan each data set ran on (from the shape-plan counters) and the impls.
  std::set<std::string> impls;
  std::vector<std::string> plan_kinds;
  RunOptions run_options;
  if (cfg.verbose)
    run_options.step_observer = [&impls](const StepEvent& e) {
      impls.insert(StrCat(e.domain.empty() ? "" : StrCat(e.domain, ":"), e.op_type, "=", e.impl));
    };
  const auto describe = [&]() -> std::string {
    if (!cfg.verbose) return "";
    std::string d = " [plan:";
    for (const auto& k : plan_kinds) d += " " + k;
    d += "; impls:";
    for (const auto& i : impls) d += " " + i;
    return d + "]";
  };
  for (const std::string& name : ListDir(dir)) {
    if (name.rfind("test_data_set_", 0) != 0) continue;
    const std::string set = dir + "/" + name;
    ++sets;
    const auto in_files = NumberedFiles(set, "input");
    const auto out_files = NumberedFiles(set, "output");
    NamedValues feeds;
    // Input files bind in order to the inputs without initializers; a file count lower than the
    // input count leaves optional trailing inputs unfed.
    for (size_t k = 0; k < in_files.size(); ++k) {
      if (k >= ins.size())
        return {"error",
                StrCat(name, ": ", in_files.size(), " input files for ", ins.size(), " inputs")};
      auto v = engine::ReadValueFile(in_files[k], ins[k].type);
      if (!v.ok()) return {"error", v.status().message()};
      feeds.push_back({ins[k].name, std::move(v).value()});
    }
    NamedValues outs;
    const ShapePlanStats before = session->shape_plan_stats();
    Status s = session->Run(feeds, run_options, &outs);
    if (cfg.verbose) {
      // generic: the shape-generic plan ran; fallback: it failed and a specialised plan was
      // built and run instead (Session::Run's retry); specialised: a plan for these shapes.
      const ShapePlanStats after = session->shape_plan_stats();
      const bool generic = after.generic_runs > before.generic_runs;
      plan_kinds.push_back(!generic                       ? "specialised"
                           : after.builds > before.builds ? "fallback"
                                                          : "generic");
    }
    if (!s.ok()) {
      const bool unsup = s.code() == ErrorCode::kUnsupported;
      return {unsup ? "unsupported" : "error", s.message() + describe()};
    }
    if (out_files.size() > outs.size())
      return {"fail", StrCat(name, ": model produced ", outs.size(), " outputs, expected ",
                             out_files.size(), describe())};
    // Random operators (RandomNormal, Bernoulli, ...) cannot reproduce numpy's generator: their
    // tests are checked for element type and shape only, as the ONNX spec promises no values.
    const bool exact = session->deterministic();
    for (size_t k = 0; k < out_files.size(); ++k) {
      auto e = engine::ReadValueFile(out_files[k], session->outputs()[k].type);
      if (!e.ok()) return {"error", e.status().message()};
      Status c = exact ? CompareValues(*e, outs[k].second, kRtol, kAtol)
                       : CompareTypesAndShapes(*e, outs[k].second);
      if (!c.ok())
        return {"fail",
                StrCat(name, ": output ", k, " '", outs[k].first, "': ", c.message(), describe())};
    }
  }
  if (sets == 0) return {"error", "no test_data_set_* directory"};
  return {"pass", cfg.verbose ? describe().substr(1) : ""};
}

// Forks, runs the test in the child and reads its outcome back through a pipe.
Outcome RunIsolated(const std::string& dir, int timeout_s, const RunConfig& cfg) {
  int fds[2];
  if (pipe(fds) != 0) return {"error", "pipe() failed"};
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) return {"error", "fork() failed"};
  if (pid == 0) {
    close(fds[0]);
    Outcome o = RunTest(dir, cfg);
    std::string msg = o.status + "\n" + o.message;
    size_t off = 0;
    while (off < msg.size()) {
      ssize_t w = write(fds[1], msg.data() + off, msg.size() - off);
      if (w <= 0) break;
      off += static_cast<size_t>(w);
    }
    close(fds[1]);
    _exit(0);
  }
  close(fds[1]);
  std::string data;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  bool timed_out = false;
  char buf[4096];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    int r = poll(&p, 1, static_cast<int>(left));
    if (r == 0) {
      timed_out = true;
      break;
    }
    if (r < 0) continue;
    ssize_t n = read(fds[0], buf, sizeof buf);
    if (n <= 0) break;
    data.append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  if (timed_out) {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    return {"timeout", StrCat("no result after ", timeout_s, " s")};
  }
  int wstatus = 0;
  waitpid(pid, &wstatus, 0);
  if (WIFSIGNALED(wstatus))
    return {"crash", StrCat("killed by signal ", WTERMSIG(wstatus), " (",
                            strsignal(WTERMSIG(wstatus)), ")")};
  const size_t nl = data.find('\n');
  if (nl == std::string::npos) return {"crash", "the test process exited without a result"};
  return {data.substr(0, nl), data.substr(nl + 1)};
}

}  // namespace

int ConformanceMain(const Args& args) {
  const std::string data = args.get("data");
  if (data.empty() || !IsDir(data)) {
    std::cerr << "onyx conformance: --data DIR is required and must be a directory (e.g. "
                 "build/node-tests/newest, which scripts/setup.sh writes)\n";
    return 2;
  }
  std::regex filter;
  const bool use_filter = args.has("filter");
  try {
    if (use_filter) filter = std::regex(args.get("filter"), std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    std::cerr << "onyx conformance: bad --filter regex: " << e.what() << "\n";
    return 2;
  }
  auto timeout = ParseInt("--timeout", args.get("timeout", "60"), 1);
  if (!timeout.ok()) {
    std::cerr << "onyx conformance: " << timeout.status().message() << "\n";
    return 2;
  }
  std::vector<std::regex> expected;
  std::vector<std::string> expected_src;
  if (args.has("expected")) {
    std::ifstream f(args.get("expected"));
    if (!f) {
      std::cerr << "onyx conformance: cannot read --expected file '" << args.get("expected")
                << "'\n";
      return 2;
    }
    std::string line;
    while (std::getline(f, line)) {
      const size_t hash = line.find('#');
      if (hash != std::string::npos) line = line.substr(0, hash);
      line.erase(line.find_last_not_of(" \t\r") + 1);
      line.erase(0, line.find_first_not_of(" \t"));
      if (line.empty()) continue;
      expected.emplace_back(line);
      expected_src.push_back(line);
    }
  }
  const bool quiet = args.has("quiet");
  RunConfig cfg;
  cfg.symbolic_inputs = args.has("symbolic-inputs");
  cfg.verbose = args.has("verbose");
  std::map<std::string, int> counts;
  std::vector<std::tuple<std::string, std::string, std::string>> results;
  int total = 0;
  for (const std::string& name : ListDir(data)) {
    const std::string dir = data + "/" + name;
    if (!IsFile(dir + "/model.onnx")) continue;
    if (use_filter && !std::regex_search(name, filter)) continue;
    ++total;
    Outcome o = RunIsolated(dir, *timeout, cfg);
    ++counts[o.status];
    if (!quiet || o.status != "pass") {
      std::string msg = o.message;
      std::replace(msg.begin(), msg.end(), '\n', ' ');
      if (msg.size() > 400 && !cfg.verbose) msg = msg.substr(0, 400) + "...";
      std::cout << o.status << " " << name << (msg.empty() ? "" : ": " + msg) << "\n";
    }
    results.emplace_back(name, o.status, o.message);
  }
  std::cout << "conformance: " << total << " tests, " << counts["pass"] << " pass, "
            << counts["fail"] << " wrong result, " << counts["unsupported"] << " unsupported, "
            << counts["error"] << " error, " << counts["crash"] << " crash, " << counts["timeout"]
            << " timeout\n";
  if (args.has("json")) {
    std::ofstream f(args.get("json"));
    f << "{\n  \"total\": " << total << ",\n  \"counts\": {";
    bool first = true;
    for (const auto& [k, v] : counts) {
      f << (first ? "" : ", ") << "\"" << k << "\": " << v;
      first = false;
    }
    f << "},\n  \"tests\": [";
    for (size_t i = 0; i < results.size(); ++i) {
      const auto& [n, st, msg] = results[i];
      f << (i ? "," : "") << "\n    {\"name\": \"" << planner::JsonEscape(n) << "\", \"status\": \""
        << st << "\", \"message\": \"" << planner::JsonEscape(msg) << "\"}";
    }
    f << "\n  ]\n}\n";
  }
  int regressions = 0;
  if (!expected.empty()) {
    std::vector<int> matched(expected.size(), 0);
    for (const auto& [n, st, msg] : results) {
      for (size_t k = 0; k < expected.size(); ++k) {
        if (!std::regex_match(n, expected[k])) continue;
        ++matched[k];
        if (st != "pass") {
          ++regressions;
          std::cout << "REGRESSION " << n << " (expected to pass, got " << st << ")\n";
        }
        break;
      }
    }
    if (!use_filter)
      for (size_t k = 0; k < expected.size(); ++k)
        if (matched[k] == 0) {
          ++regressions;
          std::cout << "REGRESSION expected test '" << expected_src[k] << "' was not found\n";
        }
    std::cout << "expected-pass check: " << regressions << " regressions\n";
  }
  if (regressions > 0) return 1;
  return 0;
}

}  // namespace onyx::cli
