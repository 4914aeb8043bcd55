// Reference kernels for the string operators (see text.h).
#include "kernels/reference/text.h"

#include <locale.h>
#include <wctype.h>

#include <algorithm>

#include "kernels/op_helpers.h"

namespace onyx::kernels::reference {
namespace {

// The C.UTF-8 locale for towlower_l/towupper_l, created once; null when the system lacks it.
locale_t Utf8Locale() {
  static const locale_t loc = [] {
    locale_t l = newlocale(LC_CTYPE_MASK, "C.UTF-8", static_cast<locale_t>(nullptr));
    if (!l) l = newlocale(LC_CTYPE_MASK, "C.utf8", static_cast<locale_t>(nullptr));
    return l;
  }();
  return loc;
}

// Decodes the UTF-8 sequence at s[i]; returns its length, or 0 when it is not valid UTF-8.
size_t DecodeUtf8(const std::string& s, size_t i, uint32_t* cp) {
  const auto byte = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  const uint8_t b0 = byte(i);
  size_t len = 0;
  uint32_t v = 0;
  if (b0 < 0x80) {
    *cp = b0;
    return 1;
  } else if ((b0 & 0xE0) == 0xC0) {
    len = 2;
    v = b0 & 0x1F;
  } else if ((b0 & 0xF0) == 0xE0) {
    len = 3;
    v = b0 & 0x0F;
  } else if ((b0 & 0xF8) == 0xF0) {
    len = 4;
    v = b0 & 0x07;
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  for (size_t k = 1; k < len; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    v = (v << 6) | (byte(i + k) & 0x3F);
  }
  // Reject overlong encodings, surrogates and values past U+10FFFF.
  static const uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (v < kMin[len] || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return 0;
  *cp = v;
  return len;
}

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

uint32_t MapCase(uint32_t cp, CaseChange action, locale_t loc) {
  const bool lower = action == CaseChange::kLower;
  if (cp < 0x80 || !loc) {
    if (lower && cp >= 'A' && cp <= 'Z') return cp + ('a' - 'A');
    if (!lower && cp >= 'a' && cp <= 'z') return cp - ('a' - 'A');
    return cp;
  }
  const wint_t w = static_cast<wint_t>(cp);
  const wint_t r = lower ? towlower_l(w, loc) : towupper_l(w, loc);
  return static_cast<uint32_t>(r);
}

// Python's str.isspace() for ASCII: space, \t \n \v \f \r and the separators \x1c-\x1f.
bool IsSpace(char c) {
  const unsigned char u = static_cast<unsigned char>(c);
  return u == ' ' || (u >= '\t' && u <= '\r') || (u >= 0x1C && u <= 0x1F);
}

}  // namespace

std::string ChangeCase(const std::string& s, CaseChange action) {
  if (action == CaseChange::kNone) return s;
  const locale_t loc = Utf8Locale();
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    uint32_t cp = 0;
    const size_t len = DecodeUtf8(s, i, &cp);
    if (len == 0) {  // not UTF-8: keep the byte as it is
      out.push_back(s[i]);
      ++i;
      continue;
    }
    AppendUtf8(MapCase(cp, action, loc), &out);
    i += len;
  }
  return out;
}

std::vector<std::string> StringNormalize(const std::string* src, int64_t n,
                                         const std::vector<std::string>& stopwords,
                                         bool case_sensitive, CaseChange action) {
  std::vector<std::string> stops = stopwords;
  if (!case_sensitive)
    for (std::string& w : stops) w = ChangeCase(w, CaseChange::kLower);
  std::sort(stops.begin(), stops.end());
  std::vector<std::string> out;
  for (int64_t i = 0; i < n; ++i) {
    const std::string key = case_sensitive ? src[i] : ChangeCase(src[i], CaseChange::kLower);
    if (std::binary_search(stops.begin(), stops.end(), key)) continue;
    out.push_back(ChangeCase(src[i], action));
  }
  return out;
}

void StringConcat(const Tensor& x, const Tensor& y, Tensor* z) {
  const std::vector<std::vector<int64_t>> strides = {BroadcastStrides(x.shape(), z->shape()),
                                                     BroadcastStrides(y.shape(), z->shape())};
  const std::string* xs = x.strings();
  const std::string* ys = y.strings();
  std::string* zs = z->strings();
  ForEachBroadcast(z->shape(), strides, [&](int64_t i, const int64_t* off) {
    zs[i] = xs[off[0]];
    zs[i] += ys[off[1]];
  });
}

std::vector<std::string> SplitString(const std::string& s, const std::string& delimiter,
                                     int64_t maxsplit) {
  std::vector<std::string> parts;
  const bool unlimited = maxsplit < 0;
  if (delimiter.empty()) {
    size_t i = 0;
    while (true) {
      while (i < s.size() && IsSpace(s[i])) ++i;
      if (i == s.size()) break;
      if (!unlimited && static_cast<int64_t>(parts.size()) == maxsplit) {
        // The remainder keeps its trailing whitespace, as in Python.
        parts.push_back(s.substr(i));
        break;
      }
      size_t j = i;
      while (j < s.size() && !IsSpace(s[j])) ++j;
      parts.push_back(s.substr(i, j - i));
      i = j;
    }
    return parts;
  }
  size_t start = 0;
  while (true) {
    if (!unlimited && static_cast<int64_t>(parts.size()) == maxsplit) break;
    const size_t pos = s.find(delimiter, start);
    if (pos == std::string::npos) break;
    parts.push_back(s.substr(start, pos - start));
    start = pos + delimiter.size();
  }
  parts.push_back(s.substr(start));
  return parts;
}

void RegexFullMatch(const std::regex& re, const std::string* src, bool* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = std::regex_match(src[i], re);
}

namespace {

template <typename Item>
void CountRow(const TfIdfModel& model,
              const std::map<int64_t, std::map<std::vector<Item>, int64_t>>& grams, const Item* row,
              int64_t cols, std::vector<int64_t>* counts) {
  std::vector<Item> key;
  for (const auto& [n, table] : grams) {
    // A unigram is the same whatever the skip, so it is counted once.
    const int64_t max_skip = n == 1 ? 0 : model.max_skip_count;
    for (int64_t skip = 0; skip <= max_skip; ++skip) {
      const int64_t step = skip + 1;
      const int64_t span = (n - 1) * step;  // distance from the first item to the last
      for (int64_t start = 0; start + span < cols; ++start) {
        key.assign(static_cast<size_t>(n), Item());
        for (int64_t k = 0; k < n; ++k) key[k] = row[start + k * step];
        auto it = table.find(key);
        if (it != table.end()) ++(*counts)[it->second];
      }
    }
  }
}

}  // namespace

void TfIdfVectorize(const TfIdfModel& model, const Tensor& x, int64_t rows, int64_t cols,
                    float* y) {
  std::vector<int64_t> counts(static_cast<size_t>(model.output_size));
  std::vector<int64_t> ints;
  for (int64_t r = 0; r < rows; ++r) {
    std::fill(counts.begin(), counts.end(), 0);
    if (model.strings) {
      CountRow(model, model.string_grams, x.strings() + r * cols, cols, &counts);
    } else {
      ints.resize(static_cast<size_t>(cols));
      for (int64_t c = 0; c < cols; ++c) {
        ints[c] = x.dtype() == DType::kInt32 ? x.data<int32_t>()[r * cols + c]
                                             : x.data<int64_t>()[r * cols + c];
      }
      CountRow(model, model.int_grams, ints.data(), cols, &counts);
    }
    float* dst = y + r * model.output_size;
    for (int64_t c = 0; c < model.output_size; ++c) {
      // ONNX Runtime and the ONNX reference index the weights by output column.
      const float w = model.weights.empty() ? 1.0f : model.weights[c];
      const float count = static_cast<float>(counts[c]);
      switch (model.mode) {
        case TfIdfModel::Mode::kTf:
          dst[c] = count;
          break;
        case TfIdfModel::Mode::kIdf:
          dst[c] = counts[c] > 0 ? w : 0.0f;
          break;
        case TfIdfModel::Mode::kTfIdf:
          dst[c] = w * count;
          break;
      }
    }
  }
}

}  // namespace onyx::kernels::reference
