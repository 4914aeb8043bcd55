// Shared pieces of the `onyx` command-line tool: argument parsing, generated inputs, comparing
// values against expected ones, printing tensors.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "onyx/session.h"

namespace onyx::cli {

// argv after the subcommand: positionals and --name value / --name=value options. Flags listed in
// `flags` take no value.
struct Args {
  std::vector<std::string> positional;
  std::multimap<std::string, std::string> options;
  bool has(const std::string& k) const { return options.count(k) > 0; }
  std::string get(const std::string& k, const std::string& def = "") const;
  std::vector<std::string> all(const std::string& k) const;
};
StatusOr<Args> ParseArgs(int argc, char** argv, int first, const std::vector<std::string>& flags,
                         const std::vector<std::string>& valued);
StatusOr<int> ParseInt(const std::string& what, const std::string& s, int min_value);
// "1x3x224x224" → {1,3,224,224}; "NAME=1x3x224x224" handled by the caller.
StatusOr<Shape> ParseShape(const std::string& s);
// Every --shape NAME=1x3x224x224 flag, by input name.
StatusOr<std::map<std::string, Shape>> ParseShapes(const Args& a);

// Inputs for a model: `ramp` is the ONNX backend runner's dummy data (arange(n)/n as float32),
// `random` is uniform [0,1) (floats) or small integers, seeded. Symbolic dims become 1 unless
// `shapes` names them. Inputs named in `given` (fed from files) are skipped, so their declared
// type need not allow generating them.
StatusOr<NamedValues> GenerateInputs(const Session& s, const std::string& kind,
                                     const std::map<std::string, Shape>& shapes, uint64_t seed,
                                     const std::set<std::string>& given = {});

// Integer and bool inputs become 1 where the name contains "mask" (attention masks: attend to
// everything) and 0 elsewhere, a valid index for any embedding table (token ids, token types,
// positions); random small integers can exceed a vocabulary of 2 such as BERT's token types.
void SetIndexSafeIntegers(NamedValues* feeds);

// One point of `onyx bench --shapes`: the shape of every generated input that the sweep sets, and
// a label such as "batch=2 seq=16" (or "x=1x3x96x96").
struct ShapePoint {
  std::string label;
  std::map<std::string, Shape> shapes;
};

// Expands `--shapes` specs into their points, first spec outermost (a cartesian product when
// several are given). A spec is NAME=LO:HI[:STEP] or NAME=V1,V2,... where NAME is a symbolic dim
// (dim_param) of the required inputs, set in every input that declares it, or NAME=SHAPE,SHAPE,...
// where NAME is an input (SHAPE like 1x3x96x96). Inputs in `fixed` (--shape) keep that shape and
// may not contain a swept dim; other symbolic dims are 1. With `zip` the specs advance together
// (same counts) instead, for dims tied to each other such as past_seq and total_seq = past_seq+1.
// More than `max_points` is an error.
StatusOr<std::vector<ShapePoint>> ExpandShapeSweep(const Session& s,
                                                   const std::vector<std::string>& specs,
                                                   const std::map<std::string, Shape>& fixed,
                                                   bool zip, size_t max_points);

// A "VmRSS"/"VmHWM"-style field of /proc/self/status in bytes; -1 where unavailable.
int64_t ProcStatusBytes(const std::string& field);

// Compares like numpy.testing.assert_allclose (|a-b| <= atol + rtol*|b|, NaN equal NaN); exact for
// integers, bools and strings; dtypes and shapes must match. Returns a description of the first
// difference, or Ok.
Status CompareValues(const Value& expected, const Value& actual, double rtol, double atol);

// Only element types, shapes and sequence lengths must match (outputs of random operators).
Status CompareTypesAndShapes(const Value& expected, const Value& actual);

// One line describing a value: "float[1,1000] min .. max .." or a sequence summary.
std::string Summarize(const Value& v);
// Characters outside [A-Za-z0-9._-] become '_' so a value name is a safe file name.
std::string SafeFileName(const std::string& name);

}  // namespace onyx::cli
