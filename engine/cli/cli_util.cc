// Argument parsing, generated inputs and value comparison for the CLI.
#include "engine/cli/cli_util.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

namespace onyx::cli {

std::string Args::get(const std::string& k, const std::string& def) const {
  auto it = options.find(k);
  return it == options.end() ? def : it->second;
}

std::vector<std::string> Args::all(const std::string& k) const {
  std::vector<std::string> out;
  auto [a, b] = options.equal_range(k);
  for (auto it = a; it != b; ++it) out.push_back(it->second);
  return out;
}

StatusOr<Args> ParseArgs(int argc, char** argv, int first, const std::vector<std::string>& flags,
                         const std::vector<std::string>& valued) {
  Args a;
  for (int i = first; i < argc; ++i) {
    std::string s = argv[i];
    if (s.size() > 2 && s.compare(0, 2, "--") == 0) {
      std::string key = s.substr(2), value;
      const size_t eq = key.find('=');
      bool has_value = false;
      if (eq != std::string::npos) {
        value = key.substr(eq + 1);
        key = key.substr(0, eq);
        has_value = true;
      }
      if (std::find(flags.begin(), flags.end(), key) != flags.end()) {
        a.options.emplace(key, "1");
        continue;
      }
      if (std::find(valued.begin(), valued.end(), key) == valued.end())
        return InvalidArgument("unknown option --", key, " (see --help)");
      if (!has_value) {
        if (i + 1 >= argc) return InvalidArgument("option --", key, " needs a value");
        value = argv[++i];
      }
      a.options.emplace(key, value);
    } else {
      a.positional.push_back(s);
    }
  }
  return a;
}

namespace {
// The largest count or dim an option may give; the session's own size ceilings still apply.
constexpr int64_t kMaxOptionInt = 1000000000;

// `s` as a whole decimal integer in [lo, hi], or false.
bool ParseOptionInt(const std::string& s, int64_t lo, int64_t hi, int64_t* v) {
  char* end = nullptr;
  errno = 0;
  const long long parsed = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || errno == ERANGE || parsed < lo || parsed > hi) return false;
  *v = parsed;
  return true;
}
}  // namespace

StatusOr<int> ParseInt(const std::string& what, const std::string& s, int min_value) {
  int64_t v = 0;
  if (!ParseOptionInt(s, min_value, kMaxOptionInt, &v))
    return InvalidArgument(what, " must be an integer >= ", min_value, ", got '", s, "'");
  return static_cast<int>(v);
}

StatusOr<Shape> ParseShape(const std::string& s) {
  Shape shape;
  if (s.empty() || s == "scalar") return shape;
  std::stringstream ss(s);
  std::string part;
  while (std::getline(ss, part, 'x')) {
    int64_t v = 0;
    if (!ParseOptionInt(part, 0, INT64_MAX, &v))
      return InvalidArgument("bad shape '", s, "': expected dims like 1x3x224x224");
    shape.push_back(v);
  }
  return shape;
}

StatusOr<std::map<std::string, Shape>> ParseShapes(const Args& a) {
  std::map<std::string, Shape> shapes;
  for (const std::string& s : a.all("shape")) {
    const size_t eq = s.find('=');
    if (eq == std::string::npos)
      return InvalidArgument("--shape expects NAME=1x3x224x224, got '", s, "'");
    ONYX_ASSIGN_OR_RETURN(Shape shape, ParseShape(s.substr(eq + 1)));
    shapes[s.substr(0, eq)] = shape;
  }
  return shapes;
}

StatusOr<NamedValues> GenerateInputs(const Session& s, const std::string& kind,
                                     const std::map<std::string, Shape>& shapes, uint64_t seed,
                                     const std::set<std::string>& given) {
  if (kind != "ramp" && kind != "random")
    return InvalidArgument("--generate must be ramp or random, got '", kind, "'");
  NamedValues feeds;
  std::mt19937_64 rng(seed);
  const auto required = s.required_inputs();
  for (const IoInfo& in : s.inputs()) {
    if (std::find(required.begin(), required.end(), in.name) == required.end()) continue;
    if (given.count(in.name)) continue;
    if (!in.type.is_tensor())
      return Unsupported("input '", in.name, "' is not a tensor; give it as a .pb file");
    Shape shape;
    auto it = shapes.find(in.name);
    if (it != shapes.end()) {
      shape = it->second;
    } else {
      if (!in.type.has_shape)
        return InvalidArgument("input '", in.name, "' has no declared shape; pass --shape ",
                               in.name, "=...");
      for (const Dim& d : in.type.dims) shape.push_back(d.known() ? d.value : 1);
    }
    const DType t = in.type.elem;
    if (t == DType::kString) return Unsupported("cannot generate string input '", in.name, "'");
    Tensor x = Tensor::Allocate(t, shape);
    const int64_t n = x.numel();
    std::uniform_real_distribution<double> uni(0.0, 1.0);
    for (int64_t i = 0; i < n; ++i) {
      double v;
      if (kind == "ramp") {
        v = static_cast<double>(static_cast<float>(i) / static_cast<float>(n));
      } else {
        v = IsFloatingPoint(t) ? uni(rng) : std::floor(uni(rng) * 4);
      }
      StoreFromDouble(t, x.raw_data(), i, v);
    }
    if (kind == "ramp" && t == DType::kFloat)  // exactly numpy's (arange(n) / n).astype(float32)
      for (int64_t i = 0; i < n; ++i)
        x.data<float>()[i] = static_cast<float>(static_cast<double>(i) / static_cast<double>(n));
    feeds.push_back({in.name, Value(x)});
  }
  return feeds;
}

namespace {

StatusOr<int64_t> ParseSweepInt(const std::string& spec, const std::string& what,
                                const std::string& token) {
  int64_t v = 0;
  if (!ParseOptionInt(token, -kMaxOptionInt, kMaxOptionInt, &v))
    return InvalidArgument("--shapes '", spec, "': ", what, " '", token, "' is not an integer");
  return v;
}

StatusOr<int64_t> ParseSweepDim(const std::string& spec, const std::string& what,
                                const std::string& token) {
  ONYX_ASSIGN_OR_RETURN(int64_t v, ParseSweepInt(spec, what, token));
  if (v < 0) return InvalidArgument("--shapes '", spec, "': ", what, " ", v, " is negative");
  return v;
}

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t p = s.find(sep, start);
    parts.push_back(s.substr(start, p == std::string::npos ? std::string::npos : p - start));
    if (p == std::string::npos) return parts;
    start = p + 1;
  }
}

std::string DimsLabel(const Shape& shape) {
  std::string out;
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? "x" : "") + std::to_string(shape[i]);
  return out.empty() ? "scalar" : out;
}

// One factor of the sweep: the values of a symbolic dim, or whole shapes of one input.
struct SweepAxis {
  std::string name;
  bool is_input = false;
  std::vector<int64_t> values;  // symbolic dim
  std::vector<Shape> shapes;    // input
  size_t size() const { return is_input ? shapes.size() : values.size(); }
};

}  // namespace

StatusOr<std::vector<ShapePoint>> ExpandShapeSweep(const Session& s,
                                                   const std::vector<std::string>& specs,
                                                   const std::map<std::string, Shape>& fixed,
                                                   bool zip, size_t max_points) {
  // Which required inputs declare each named symbolic dim.
  const auto required = s.required_inputs();
  std::map<std::string, std::set<std::string>> symbol_inputs;
  std::map<std::string, const IoInfo*> inputs;
  for (const IoInfo& in : s.inputs()) {
    if (std::find(required.begin(), required.end(), in.name) == required.end()) continue;
    inputs[in.name] = &in;
    if (!in.type.is_tensor() || !in.type.has_shape) continue;
    for (const Dim& d : in.type.dims)
      if (!d.known() && !d.symbol.empty()) symbol_inputs[d.symbol].insert(in.name);
  }
  auto known_names = [&] {
    std::string out;
    for (const auto& [sym, unused] : symbol_inputs) out += (out.empty() ? "" : ", ") + sym;
    std::string ins;
    for (const auto& [name, unused] : inputs) ins += (ins.empty() ? "" : ", ") + name;
    return StrCat("symbolic dims: ", out.empty() ? "none" : out,
                  "; inputs: ", ins.empty() ? "none" : ins);
  };

  std::vector<SweepAxis> axes;
  // input -> (set whole by an input spec, the spec): several dim specs may share an input.
  std::map<std::string, std::pair<bool, std::string>> owner;
  size_t total = 1;
  for (const std::string& spec : specs) {
    const size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
      return InvalidArgument("--shapes expects NAME=LO:HI[:STEP], NAME=V1,V2,... or ",
                             "INPUT=1x3x96x96,...; got '", spec, "'");
    SweepAxis axis;
    axis.name = spec.substr(0, eq);
    const std::string body = spec.substr(eq + 1);
    const bool is_symbol = symbol_inputs.count(axis.name) > 0;
    const bool is_input = inputs.count(axis.name) > 0;
    if (!is_symbol && !is_input)
      return InvalidArgument("--shapes '", spec, "': '", axis.name,
                             "' is neither a symbolic dim of the model's inputs nor an input (",
                             known_names(), ")");
    // A name that is both: a value written as dims (1x3x...) means the input.
    axis.is_input = is_input && (!is_symbol || body.find('x') != std::string::npos);
    for (const SweepAxis& other : axes)
      if (other.name == axis.name && other.is_input == axis.is_input)
        return InvalidArgument("--shapes gives '", axis.name, "' twice");
    if (axis.is_input) {
      if (body.find(':') != std::string::npos)
        return InvalidArgument("--shapes '", spec, "': input '", axis.name,
                               "' takes a list of shapes like 1x3x96x96,1x3x128x128, not a range");
      for (const std::string& item : Split(body, ',')) {
        auto shape = ParseShape(item);
        if (item.empty() || !shape.ok())
          return InvalidArgument("--shapes '", spec, "': '", item,
                                 "' is not a shape like 1x3x96x96");
        axis.shapes.push_back(*shape);
      }
    } else if (body.find(':') != std::string::npos) {
      const auto parts = Split(body, ':');
      if (parts.size() != 2 && parts.size() != 3)
        return InvalidArgument("--shapes '", spec, "': a range is LO:HI or LO:HI:STEP");
      ONYX_ASSIGN_OR_RETURN(int64_t lo, ParseSweepDim(spec, "LO", parts[0]));
      ONYX_ASSIGN_OR_RETURN(int64_t hi, ParseSweepDim(spec, "HI", parts[1]));
      int64_t step = 1;
      if (parts.size() == 3) {
        ONYX_ASSIGN_OR_RETURN(step, ParseSweepInt(spec, "STEP", parts[2]));
      }
      if (step <= 0) return InvalidArgument("--shapes '", spec, "': STEP must be > 0, got ", step);
      if (lo > hi) return InvalidArgument("--shapes '", spec, "': LO ", lo, " > HI ", hi);
      const int64_t count = (hi - lo) / step + 1;
      if (static_cast<uint64_t>(count) > max_points)
        return InvalidArgument("--shapes '", spec, "' gives ", count, " shapes; at most ",
                               max_points);
      for (int64_t v = lo; v <= hi; v += step) axis.values.push_back(v);
    } else {
      for (const std::string& item : Split(body, ',')) {
        ONYX_ASSIGN_OR_RETURN(int64_t v, ParseSweepDim(spec, "value", item));
        axis.values.push_back(v);
      }
    }
    if (zip) {
      if (!axes.empty() && axis.size() != total)
        return InvalidArgument("--zip: --shapes '", spec, "' gives ", axis.size(),
                               " values but the first --shapes gives ", total);
      total = axis.size();
    } else {
      if (axis.size() > max_points / total)
        return InvalidArgument("--shapes gives more than ", max_points,
                               " shapes in all (the product of every --shapes)");
      total *= axis.size();
    }
    // Each input's shape comes from one place: --shape, an input spec, or dim specs.
    const std::set<std::string> touched =
        axis.is_input ? std::set<std::string>{axis.name} : symbol_inputs[axis.name];
    for (const std::string& in : touched) {
      if (fixed.count(in))
        return InvalidArgument("--shapes '", spec, "' sets the shape of input '", in,
                               "', which --shape also gives");
      auto it = owner.find(in);
      if (it != owner.end() && (axis.is_input || it->second.first))
        return InvalidArgument("--shapes '", spec, "' and --shapes '", it->second.second,
                               "' both set the shape of input '", in, "'");
      owner[in] = {axis.is_input, spec};
    }
    axes.push_back(std::move(axis));
  }

  std::vector<ShapePoint> points;
  points.reserve(total);
  std::vector<size_t> idx(axes.size(), 0);
  for (size_t p = 0; p < total; ++p) {
    ShapePoint pt;
    pt.shapes = fixed;
    // Declared dims first (symbolic ones 1), then the swept ones.
    for (const auto& [in, unused] : owner) {
      Shape shape;
      for (const Dim& d : inputs[in]->type.dims) shape.push_back(d.known() ? d.value : 1);
      pt.shapes[in] = shape;
    }
    for (size_t a = 0; a < axes.size(); ++a) {
      const SweepAxis& axis = axes[a];
      pt.label += pt.label.empty() ? "" : " ";
      if (axis.is_input) {
        pt.shapes[axis.name] = axis.shapes[idx[a]];
        pt.label += axis.name + "=" + DimsLabel(axis.shapes[idx[a]]);
        continue;
      }
      const int64_t v = axis.values[idx[a]];
      pt.label += axis.name + "=" + std::to_string(v);
      for (const std::string& in : symbol_inputs[axis.name]) {
        const auto& dims = inputs[in]->type.dims;
        for (size_t i = 0; i < dims.size(); ++i)
          if (!dims[i].known() && dims[i].symbol == axis.name) pt.shapes[in][i] = v;
      }
    }
    points.push_back(std::move(pt));
    if (zip) {
      for (size_t& i : idx) ++i;
      continue;
    }
    // Next index, last axis fastest.
    for (size_t a = axes.size(); a-- > 0;) {
      if (++idx[a] < axes[a].size()) break;
      idx[a] = 0;
    }
  }
  return points;
}

void SetIndexSafeIntegers(NamedValues* feeds) {
  for (auto& [name, v] : *feeds) {
    if (!v.is_tensor()) continue;
    Tensor& t = v.tensor();
    if (!IsInteger(t.dtype()) && t.dtype() != DType::kBool) continue;
    std::string lower = name;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const double fill = lower.find("mask") != std::string::npos ? 1.0 : 0.0;
    for (int64_t i = 0; i < t.numel(); ++i) StoreFromDouble(t.dtype(), t.raw_data(), i, fill);
  }
}

int64_t ProcStatusBytes(const std::string& field) {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.compare(0, field.size() + 1, field + ":") != 0) continue;
    std::istringstream is(line.substr(field.size() + 1));
    int64_t kb = -1;
    std::string unit;
    if (is >> kb >> unit && unit == "kB") return kb * 1024;
    return -1;
  }
  return -1;
}

namespace {
Status CompareTensors(const Tensor& e, const Tensor& a, double rtol, double atol) {
  if (e.dtype() != a.dtype())
    return RuntimeError("element type ", DTypeName(a.dtype()), ", expected ", DTypeName(e.dtype()));
  if (e.shape() != a.shape())
    return RuntimeError("shape ", ShapeToString(a.shape()), ", expected ",
                        ShapeToString(e.shape()));
  const int64_t n = e.numel();
  if (e.dtype() == DType::kString) {
    for (int64_t i = 0; i < n; ++i)
      if (e.strings()[i] != a.strings()[i])
        return RuntimeError("element ", i, " is '", a.strings()[i], "', expected '", e.strings()[i],
                            "'");
    return Status::Ok();
  }
  const bool fp = IsFloatingPoint(e.dtype()) || e.dtype() == DType::kComplex64 ||
                  e.dtype() == DType::kComplex128;
  // bfloat16 keeps 8 significant bits: onnx's runner (1.23) allows two of its ulps, 2^-6.
  if (e.dtype() == DType::kBFloat16) rtol = std::max(rtol, 1.0 / 64);
  const int64_t m = e.dtype() == DType::kComplex64 ? 2 * n : n;
  int64_t bad = 0, first = -1;
  double worst = 0;
  for (int64_t i = 0; i < m; ++i) {
    double x, y;
    if (e.dtype() == DType::kComplex64) {
      x = e.data<float>()[i];
      y = a.data<float>()[i];
    } else if (e.dtype() == DType::kComplex128) {
      x = e.data<double>()[i];
      y = a.data<double>()[i];
    } else if (e.dtype() == DType::kInt64 || e.dtype() == DType::kUInt64) {
      if (std::memcmp(static_cast<const char*>(e.raw_data()) + i * 8,
                      static_cast<const char*>(a.raw_data()) + i * 8, 8) != 0) {
        if (first < 0) first = i;
        ++bad;
      }
      continue;
    } else {
      x = LoadAsDouble(e.dtype(), e.raw_data(), i);
      y = LoadAsDouble(a.dtype(), a.raw_data(), i);
    }
    bool ok;
    if (!fp) {
      ok = x == y;
    } else if (std::isnan(x) || std::isnan(y)) {
      ok = std::isnan(x) && std::isnan(y);
    } else if (std::isinf(x) || std::isinf(y)) {
      ok = x == y;
    } else {
      ok = std::fabs(x - y) <= atol + rtol * std::fabs(x);
    }
    if (!ok) {
      if (first < 0) first = i;
      ++bad;
      if (fp && std::isfinite(x) && std::isfinite(y)) worst = std::max(worst, std::fabs(x - y));
    }
  }
  if (bad == 0) return Status::Ok();
  std::ostringstream os;
  os << bad << " of " << m << " elements differ; first at flat index " << first << ": got ";
  if (e.dtype() == DType::kInt64)
    os << a.data<int64_t>()[first] << ", expected " << e.data<int64_t>()[first];
  else if (e.dtype() == DType::kUInt64)
    os << a.data<uint64_t>()[first] << ", expected " << e.data<uint64_t>()[first];
  else if (e.dtype() == DType::kComplex64)
    os << a.data<float>()[first] << ", expected " << e.data<float>()[first];
  else if (e.dtype() == DType::kComplex128)
    os << a.data<double>()[first] << ", expected " << e.data<double>()[first];
  else
    os << LoadAsDouble(a.dtype(), a.raw_data(), first) << ", expected "
       << LoadAsDouble(e.dtype(), e.raw_data(), first);
  if (worst > 0) os << " (max abs diff " << worst << ")";
  return RuntimeError(os.str());
}
}  // namespace

Status CompareValues(const Value& e, const Value& a, double rtol, double atol) {
  if (e.is_optional_none() || a.is_optional_none()) {
    if (e.is_optional_none() && a.is_optional_none()) return Status::Ok();
    return RuntimeError(a.is_optional_none() ? "got an empty optional, expected a value"
                                             : "got a value, expected an empty optional");
  }
  if (e.is_sequence() != a.is_sequence())
    return RuntimeError(a.is_sequence() ? "got a sequence, expected a tensor"
                                        : "got a tensor, expected a sequence");
  if (e.is_sequence()) {
    if (e.sequence().size() != a.sequence().size())
      return RuntimeError("sequence has ", a.sequence().size(), " items, expected ",
                          e.sequence().size());
    for (size_t i = 0; i < e.sequence().size(); ++i) {
      Status s = CompareTensors(e.sequence()[i], a.sequence()[i], rtol, atol);
      if (!s.ok()) return s.WithContext(StrCat("sequence item ", i, ": "));
    }
    return Status::Ok();
  }
  if (!a.is_tensor()) return RuntimeError("no value");
  return CompareTensors(e.tensor(), a.tensor(), rtol, atol);
}

Status CompareTypesAndShapes(const Value& e, const Value& a) {
  if (e.kind() != a.kind()) return RuntimeError("value kind differs from the expected one");
  auto check = [](const Tensor& x, const Tensor& y) -> Status {
    if (x.dtype() != y.dtype())
      return RuntimeError("element type ", DTypeName(y.dtype()), ", expected ",
                          DTypeName(x.dtype()));
    if (x.shape() != y.shape())
      return RuntimeError("shape ", ShapeToString(y.shape()), ", expected ",
                          ShapeToString(x.shape()));
    return Status::Ok();
  };
  if (e.is_tensor()) return check(e.tensor(), a.tensor());
  if (e.is_sequence()) {
    if (e.sequence().size() != a.sequence().size()) return RuntimeError("sequence length differs");
    for (size_t i = 0; i < e.sequence().size(); ++i)
      ONYX_RETURN_IF_ERROR(check(e.sequence()[i], a.sequence()[i]));
  }
  return Status::Ok();
}

std::string Summarize(const Value& v) {
  std::ostringstream os;
  if (v.is_optional_none()) return "empty optional";
  if (v.is_sequence()) {
    os << "sequence of " << v.sequence().size() << " tensors";
    return os.str();
  }
  if (v.is_map() || v.is_map_sequence()) {
    os << "map(" << DTypeName(v.map_key_type()) << "," << DTypeName(v.map_value_type()) << ")";
    if (v.is_map()) return os.str() + " of " + std::to_string(v.map_keys().numel()) + " items";
    return "sequence of " + std::to_string(v.maps().size()) + " " + os.str();
  }
  const Tensor& t = v.tensor();
  os << DTypeName(t.dtype()) << ShapeToString(t.shape());
  const int64_t n = t.numel();
  if (t.dtype() == DType::kString) {
    os << " [";
    for (int64_t i = 0; i < std::min<int64_t>(n, 6); ++i)
      os << (i ? ", " : "") << '"' << t.strings()[i] << '"';
    os << (n > 6 ? ", ...]" : "]");
    return os.str();
  }
  os << " [";
  for (int64_t i = 0; i < std::min<int64_t>(n, 6); ++i)
    os << (i ? ", " : "") << LoadAsDouble(t.dtype(), t.raw_data(), i);
  os << (n > 6 ? ", ...]" : "]");
  return os.str();
}

std::string SafeFileName(const std::string& name) {
  std::string s = name;
  for (char& c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) c = '_';
  if (s.empty() || s == "." || s == "..") s = "_" + s;
  return s;
}

}  // namespace onyx::cli
