// Reference kernels for the string operators: StringNormalizer, StringConcat, StringSplit,
// RegexFullMatch and TfIdfVectorizer (ONNX opsets 9-20).
#pragma once

#include <cstdint>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "onyx/tensor.h"

namespace onyx::kernels::reference {

enum class CaseChange { kNone, kLower, kUpper };

// Lower- or upper-cases a UTF-8 string code point by code point with the C.UTF-8 locale's simple
// case mappings (ASCII only when that locale is unavailable). Bytes that are not valid UTF-8 are
// copied unchanged.
std::string ChangeCase(const std::string& s, CaseChange action);

// StringNormalizer-10: drops the elements of src[0..n) that equal a stop word (compared after
// lower-casing both when !case_sensitive), then applies `action` to the survivors. Returns the
// survivors in order (possibly none; the caller substitutes the single empty string).
std::vector<std::string> StringNormalize(const std::string* src, int64_t n,
                                         const std::vector<std::string>& stopwords,
                                         bool case_sensitive, CaseChange action);

// StringConcat-20: z = x + y elementwise with numpy broadcasting. z is allocated with the
// broadcast shape of x and y.
void StringConcat(const Tensor& x, const Tensor& y, Tensor* z);

// StringSplit-20 on one string, following Python's str.split: with an empty delimiter, runs of
// whitespace separate the pieces and leading/trailing whitespace is dropped (so "" gives no
// pieces); otherwise every delimiter occurrence splits (so "" gives one empty piece). At most
// `maxsplit` splits are made when maxsplit >= 0; the rest of the string is the last piece.
std::vector<std::string> SplitString(const std::string& s, const std::string& delimiter,
                                     int64_t maxsplit);

// RegexFullMatch-20: dst[i] = whether `re` matches all of src[i].
void RegexFullMatch(const std::regex& re, const std::string* src, bool* dst, int64_t n);

// TfIdfVectorizer-9 model: the pool's n-grams and where each one is counted in the output row.
struct TfIdfModel {
  enum class Mode { kTf, kIdf, kTfIdf };
  Mode mode = Mode::kTf;
  int64_t min_gram_length = 1;
  int64_t max_gram_length = 1;
  int64_t max_skip_count = 0;
  int64_t output_size = 0;     // max(ngram_indexes) + 1
  std::vector<float> weights;  // per output column; empty means all ones
  // n-gram (its items, each an int64 or a string) -> output column, one map per n-gram length.
  // Only lengths within [min_gram_length, max_gram_length] are present.
  std::map<int64_t, std::map<std::vector<int64_t>, int64_t>> int_grams;
  std::map<int64_t, std::map<std::vector<std::string>, int64_t>> string_grams;
  bool strings = false;  // pool_strings (string input) instead of pool_int64s
};

// Counts the model's n-grams in each of `rows` rows of `cols` items (x is int32, int64 or string)
// and writes the weighted counts to y ([rows, output_size] floats). Unigrams are counted once;
// longer n-grams once for every skip in [0, max_skip_count].
void TfIdfVectorize(const TfIdfModel& model, const Tensor& x, int64_t rows, int64_t cols, float* y);

}  // namespace onyx::kernels::reference
