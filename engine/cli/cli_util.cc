// Argument parsing, generated inputs and value comparison for the CLI.
#include "engine/cli/cli_util.h"

#include <algorithm>
#include <cmath>
#include <cstring>
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

StatusOr<int> ParseInt(const std::string& what, const std::string& s, int min_value) {
  char* end = nullptr;
  long v = std::strtol(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || v < min_value || v > 1000000000)
    return InvalidArgument(what, " must be an integer >= ", min_value, ", got '", s, "'");
  return static_cast<int>(v);
}

StatusOr<Shape> ParseShape(const std::string& s) {
  Shape shape;
  if (s.empty() || s == "scalar") return shape;
  std::stringstream ss(s);
  std::string part;
  while (std::getline(ss, part, 'x')) {
    char* end = nullptr;
    long long v = std::strtoll(part.c_str(), &end, 10);
    if (part.empty() || *end != '\0' || v < 0)
      return InvalidArgument("bad shape '", s, "': expected dims like 1x3x224x224");
    shape.push_back(v);
  }
  return shape;
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
