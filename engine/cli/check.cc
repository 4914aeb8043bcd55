// `onyx check MODEL`: the report of onyx/check.h as a table, and as JSON with --json.
#include "engine/cli/check.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <set>

#include "engine/cli/cli_util.h"
#include "engine/tensor_proto.h"
#include "onyx/check.h"

namespace onyx::cli {

const char* const kCheckHelp =
    "usage: onyx check MODEL [IN.pb ...] [options]\n"
    "\n"
    "Runs the model once on its optimised plan (fusion, channels-last layout, fast kernels), then\n"
    "each step's model nodes on the reference kernels with the step's inputs as the optimised run\n"
    "made them, and prints per step the largest absolute, relative and ulp difference, the bound\n"
    "it is held to and OK or FLAG (docs/check.md). Exits 1 when a step is above its bound.\n"
    "\n"
    "options:\n"
    "  IN.pb ...              bind, in order, the inputs without initializers (as onyx run)\n"
    "  --input NAME=FILE.pb   bind a named input (repeatable); others are generated at random\n"
    "  --shape NAME=1x3x224x224  shape for generated inputs (symbolic dims default to 1)\n"
    "  --json FILE            also write the report as JSON\n"
    "  --flagged              print only the steps above their bound\n"
    "  --optimization L       none | basic | all (default all)\n"
    "  --conv-algorithm A     auto (Winograd for 3x3 convolutions where faster) | direct\n"
    "  --threads N            intra-op threads of the optimised run (default: one per core)\n";

namespace {

int Fail(const Status& s) {
  std::cerr << "onyx check: error: " << s.message() << "\n";
  return s.code() == ErrorCode::kInvalidArgument ? 2 : 1;
}

}  // namespace

int CheckMain(int argc, char** argv) {
  auto a = ParseArgs(argc, argv, 2, {"flagged"},
                     {"input", "shape", "json", "optimization", "conv-algorithm", "threads"});
  if (!a.ok()) return Fail(a.status());
  if (a->positional.empty()) return Fail(InvalidArgument("missing MODEL (see onyx check --help)"));
  const std::string model = a->positional[0];
  CheckOptions options;
  if (a->has("threads")) {
    auto t = ParseInt("--threads", a->get("threads"), 1);
    if (!t.ok()) return Fail(t.status());
    options.threads = *t;
  }
  if (a->has("optimization")) {
    auto o = ParseOptimizationLevel(a->get("optimization"));
    if (!o.ok()) return Fail(o.status());
    options.optimization = *o;
  }
  if (a->has("conv-algorithm")) {
    const std::string c = a->get("conv-algorithm");
    if (c != "auto" && c != "direct")
      return Fail(InvalidArgument("--conv-algorithm must be auto or direct; got '", c, "'"));
    options.winograd = c == "auto";
  }
  auto parsed_shapes = ParseShapes(*a);
  if (!parsed_shapes.ok()) return Fail(parsed_shapes.status());
  const std::map<std::string, Shape>& shapes = *parsed_shapes;

  // A session on the reference kernels only to read the declared inputs and generate feeds.
  SessionOptions so;
  so.reference_kernels = true;
  so.optimization = OptimizationLevel::kNone;
  so.intra_op_threads = 1;
  auto session = Session::Create(model, so);
  if (!session.ok()) return Fail(session.status());
  NamedValues feeds;
  std::set<std::string> given;
  // Positional .pb files bind, in order, to the inputs without initializers (as in onyx run).
  const auto required = session->required_inputs();
  std::vector<IoInfo> free_inputs;
  for (const auto& in : session->inputs())
    if (std::find(required.begin(), required.end(), in.name) != required.end())
      free_inputs.push_back(in);
  for (size_t k = 1; k < a->positional.size(); ++k) {
    if (k - 1 >= free_inputs.size())
      return Fail(InvalidArgument("got ", a->positional.size() - 1,
                                  " input files but the model has ", free_inputs.size(),
                                  " inputs without initializers"));
    const IoInfo& in = free_inputs[k - 1];
    auto v = engine::ReadValueFile(a->positional[k], in.type);
    if (!v.ok()) return Fail(v.status().WithContext("input '" + in.name + "': "));
    feeds.push_back({in.name, std::move(v).value()});
    given.insert(in.name);
  }
  for (const std::string& spec : a->all("input")) {
    const size_t eq = spec.find('=');
    if (eq == std::string::npos)
      return Fail(InvalidArgument("--input expects NAME=FILE.pb, got '", spec, "'"));
    const std::string name = spec.substr(0, eq);
    const IoInfo* info = nullptr;
    for (const auto& in : session->inputs())
      if (in.name == name) info = &in;
    if (!info) return Fail(InvalidArgument("--input names unknown input '", name, "'"));
    auto v = engine::ReadValueFile(spec.substr(eq + 1), info->type);
    if (!v.ok()) return Fail(v.status().WithContext("input '" + name + "': "));
    feeds.push_back({name, std::move(v).value()});
    given.insert(name);
  }
  auto generated = GenerateInputs(*session, "random", shapes, 42, given);
  if (!generated.ok()) return Fail(generated.status());
  SetIndexSafeIntegers(&*generated);
  for (auto& f : *generated) feeds.push_back(std::move(f));

  auto report = CheckModel(model, feeds, options);
  if (!report.ok()) return Fail(report.status());
  std::cout << report->ToText(!a->has("flagged"));
  if (a->has("json")) {
    std::ofstream f(a->get("json"));
    f << report->ToJson();
    if (!f) return Fail(IoError("cannot write --json '", a->get("json"), "'"));
  }
  return report->flagged > 0 ? 1 : 0;
}

}  // namespace onyx::cli
