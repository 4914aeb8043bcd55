// The grid's cases and tolerances (see kernel_grid.h). Shapes are small (the test runs every case
// under every ISA level in seconds) but chosen so that each kernel meets a vector tail (sizes
// such as 33, 37, 67 against 4-, 8- and 16-lane vectors), a broadcast, and the non-finite values
// the operator defines.
#include "tests/kernels/kernel_grid.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <sstream>

#include "onyx/tensor.h"

namespace onyx::testing {

GridInput F32(const Shape& shape, double lo, double hi) {
  GridInput in;
  in.dtype = DType::kFloat;
  in.shape = shape;
  in.lo = lo;
  in.hi = hi;
  return in;
}

GridInput Specials(const Shape& shape) {
  GridInput in = F32(shape);
  in.fill = Fill::kSpecials;
  return in;
}

GridInput Ints(DType dtype, const Shape& shape, double lo, double hi) {
  GridInput in;
  in.dtype = dtype;
  in.shape = shape;
  in.lo = lo;
  in.hi = hi;
  return in;
}

GridInput Values(DType dtype, const Shape& shape, const std::vector<double>& values) {
  GridInput in;
  in.dtype = dtype;
  in.shape = shape;
  in.fill = Fill::kValues;
  in.values = values;
  in.constant = true;  // axes, shapes, scales: initializers in real models
  return in;
}

GridInput SparseF32(const Shape& shape) {
  GridInput in = F32(shape, -1, 1);
  in.fill = Fill::kSparse;
  in.constant = true;
  return in;
}

GridInput Const(GridInput in) {
  in.constant = true;
  return in;
}

GridInput Omitted() {
  return GridInput{};
}

namespace {

using ir::Attribute;
using ir::FloatAttr;
using ir::FloatsAttr;
using ir::IntAttr;
using ir::IntsAttr;
using ir::StringAttr;

constexpr const char* kOnyx = "com.onyx";
constexpr const char* kMs = "com.microsoft";
constexpr DType kU8 = DType::kUInt8;
constexpr DType kI8 = DType::kInt8;
constexpr DType kI32 = DType::kInt32;
constexpr DType kI64 = DType::kInt64;

Attribute TensorAttr(const std::string& name, const Tensor& t) {
  Attribute a;
  a.name = name;
  a.type = ir::AttrType::kTensor;
  a.t = t;
  return a;
}

Tensor FloatValues(const Shape& shape, const std::vector<float>& v) {
  return FloatTensor(shape, v);
}

// The grid under construction.
class Grid {
 public:
  GridCase& Add(const std::string& domain, const std::string& op, const std::string& name,
                std::vector<Attribute> attrs, std::vector<GridInput> inputs, int outputs = 1,
                int64_t min_opset = 1, int64_t max_opset = 1000) {
    GridCase c;
    c.name = name;
    c.domain = domain;
    c.op = op;
    c.attrs = std::move(attrs);
    c.inputs = std::move(inputs);
    c.outputs = outputs;
    c.min_opset = min_opset;
    c.max_opset = max_opset;
    cases_.push_back(std::move(c));
    return cases_.back();
  }
  std::vector<GridCase> Take() { return std::move(cases_); }

 private:
  std::vector<GridCase> cases_;
};

// ---- elementwise ----
void AddUnary(Grid& g, const std::string& domain, const std::string& op,
              std::vector<Attribute> attrs = {}, int64_t min_opset = 1) {
  // Non-finite values and odd sizes; a long row; one element; a 0-d scalar.
  g.Add(domain, op, "specials_3x37", attrs, {Specials({3, 37})}, 1, min_opset).scale_dim = 1;
  g.Add(domain, op, "uniform_2x5x67", attrs, {F32({2, 5, 67})}, 1, min_opset).scale_dim = 2;
  g.Add(domain, op, "one", attrs, {F32({1})}, 1, min_opset);
  g.Add(domain, op, "scalar", attrs, {F32({})}, 1, min_opset);
}

void AddBinary(Grid& g, const std::string& op, int64_t broadcast_from) {
  // Same shapes (every opset, legacy ones included) with non-finite values.
  g.Add("", op, "same_specials", {}, {Specials({2, 3, 37}), Specials({2, 3, 37})}).scale_dim = 2;
  g.Add("", op, "same_long", {}, {F32({4, 67}), F32({4, 67}, 0.5, 3)}).scale_dim = 1;
  // Numpy broadcasting: per channel, last axis, scalar, both sides, input 0 the smaller.
  g.Add("", op, "bcast_channel", {}, {F32({2, 16, 5, 9}), F32({1, 16, 1, 1}, 0.5, 2)}, 1,
        broadcast_from);
  g.Add("", op, "bcast_last", {}, {Specials({4, 33}), F32({33}, 0.5, 2)}, 1, broadcast_from)
      .scale_dim = 0;
  g.Add("", op, "bcast_scalar", {}, {F32({5, 7}), F32({}, 0.5, 2)}, 1, broadcast_from);
  g.Add("", op, "bcast_scalar_first", {}, {F32({}), F32({5, 7}, 0.5, 2)}, 1, broadcast_from);
  g.Add("", op, "bcast_both", {}, {F32({3, 1, 5}), F32({1, 4, 1}, 0.5, 2)}, 1, broadcast_from);
  g.Add("", op, "bcast_input0_smaller", {}, {F32({9}), F32({2, 3, 9}, 0.5, 2)}, 1, broadcast_from);
}

void AddVariadic(Grid& g, const std::string& op) {
  g.Add("", op, "one_input", {}, {Specials({3, 37})});
  g.Add("", op, "two_same", {}, {Specials({3, 37}), F32({3, 37})}).scale_dim = 1;
  g.Add("", op, "three_same", {}, {F32({2, 67}), F32({2, 67}), Specials({2, 67})});
  g.Add("", op, "bcast", {}, {F32({2, 3, 33}), F32({33}), F32({3, 1})}, 1, 8);
}

void AddElementwise(Grid& g) {
  for (const char* op :
       {"Abs", "Neg", "Reciprocal", "Sqrt", "Exp", "Log", "Tanh", "Sigmoid", "Relu", "Softplus"})
    AddUnary(g, "", op);
  AddUnary(g, "", "LeakyRelu", {FloatAttr("alpha", 0.07f)});
  g.Add("", "LeakyRelu", "default_alpha", {}, {Specials({3, 37})});
  g.Add("", "Elu", "alpha", {FloatAttr("alpha", 0.7f)}, {Specials({3, 37})});
  AddUnary(g, "", "Elu");
  AddUnary(g, "", "HardSigmoid", {FloatAttr("alpha", 0.3f), FloatAttr("beta", 0.4f)});
  AddUnary(g, "", "HardSwish", {}, 14);
  AddUnary(g, "", "Erf", {}, 9);
  AddUnary(g, "", "Gelu", {}, 20);
  g.Add("", "Gelu", "tanh_specials", {StringAttr("approximate", "tanh")}, {Specials({3, 37})}, 1,
        20);
  AddUnary(g, "", "Mish", {}, 18);
  // Clip: bounds as attributes before opset 11, as optional inputs from 11.
  g.Add("", "Clip", "attrs", {FloatAttr("min", -1.5f), FloatAttr("max", 2.f)}, {Specials({3, 37})},
        1, 6, 10);
  g.Add("", "Clip", "default_bounds", {}, {Specials({3, 37})}, 1, 6);
  g.Add("", "Clip", "inputs", {},
        {Specials({3, 37}), Values(DType::kFloat, {}, {-1.5}), Values(DType::kFloat, {}, {2})}, 1,
        11)
      .scale_dim = 1;
  g.Add("", "Clip", "min_only", {}, {F32({2, 67}), Values(DType::kFloat, {}, {0})}, 1, 11);
  g.Add("", "Clip", "max_only", {}, {F32({2, 67}), Omitted(), Values(DType::kFloat, {}, {0.5})}, 1,
        11);
  for (const char* op : {"Add", "Sub", "Mul", "Div"}) AddBinary(g, op, 7);
  // Pow: exponents that are integers, halves and general values, and a broadcast exponent.
  g.Add("", "Pow", "general", {}, {F32({3, 37}, 0.1, 4), F32({3, 37}, -3, 3)}, 1, 7).scale_dim = 1;
  g.Add("", "Pow", "square", {}, {Specials({3, 37}), Values(DType::kFloat, {}, {2})}, 1, 7);
  g.Add("", "Pow", "sqrt", {}, {F32({2, 67}, 0, 9), Values(DType::kFloat, {}, {0.5})}, 1, 7);
  g.Add("", "Pow", "cube", {}, {F32({2, 67}), Values(DType::kFloat, {1}, {3})}, 1, 7);
  g.Add("", "Pow", "negative_base", {}, {F32({3, 37}, -3, 3), F32({37}, -2, 2)}, 1, 7);
  for (const char* op : {"Max", "Min", "Sum"}) AddVariadic(g, op);
  // PRelu: a slope per channel, per last-axis element, one for all, of X's own shape, and one
  // over two middle axes.
  g.Add("", "PRelu", "channel_slope", {}, {Specials({2, 5, 7, 9}), Const(F32({5, 1, 1}, 0, 1))}, 1,
        7)
      .scale_dim = 3;
  g.Add("", "PRelu", "last_axis_slope", {}, {Specials({3, 37}), F32({37}, -1, 1)}, 1, 7);
  g.Add("", "PRelu", "scalar_slope", {}, {F32({2, 67}), Const(F32({1}, 0, 1))}, 1, 7);
  g.Add("", "PRelu", "same_shape", {}, {F32({4, 33}), F32({4, 33}, -1, 1)}, 1, 7);
  g.Add("", "PRelu", "middle_slope", {}, {F32({2, 3, 4, 5}), Const(F32({3, 4, 1}, 0, 1))}, 1, 7);
}

// ---- softmax, reductions, normalization ----
void AddSoftmax(Grid& g) {
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    g.Add("", op, "last_axis_37", {IntAttr("axis", -1)}, {F32({3, 37}, -8, 8)}, 1, 11).scale_dim =
        1;
    g.Add("", op, "last_axis_default", {}, {F32({4, 67}, -8, 8)}, 1, 13);
    g.Add("", op, "coerced_2d", {IntAttr("axis", 1)}, {F32({2, 5, 7})}, 1, 1, 12);
    g.Add("", op, "middle_axis", {IntAttr("axis", 1)}, {F32({2, 5, 7})}, 1, 13);
    g.Add("", op, "first_axis", {IntAttr("axis", 0)}, {F32({6, 11})}, 1, 13);
    g.Add("", op, "one_element_rows", {IntAttr("axis", -1)}, {F32({5, 1})}, 1, 11);
    g.Add("", op, "large_values", {IntAttr("axis", -1)}, {F32({3, 19}, 80, 120)}, 1, 11);
    g.Add("", op, "specials", {IntAttr("axis", -1)}, {Specials({4, 37})}, 1, 11);
    g.Add("", op, "neg_inf", {IntAttr("axis", -1)},
          {Values(DType::kFloat, {2, 3}, {-INFINITY, 0, 1, -INFINITY, -INFINITY, 2})}, 1, 11)
        .inputs[0]
        .constant = false;
  }
}

void AddReductions(Grid& g) {
  struct Op {
    const char* name;
    int64_t axes_input_from;  // opset where axes became an input
  };
  for (const Op op : {Op{"ReduceSum", 13}, Op{"ReduceMean", 18}, Op{"ReduceMax", 18},
                      Op{"ReduceMin", 18}, Op{"ReduceL2", 18}, Op{"ReduceSumSquare", 18}}) {
    struct Axes {
      const char* name;
      std::vector<int64_t> axes;  // empty: all
      int64_t keepdims;
    };
    for (const Axes& a :
         {Axes{"last", {-1}, 1}, Axes{"middle_nokeep", {1}, 0}, Axes{"outer_two", {0, 2}, 1},
          Axes{"all", {}, 0}, Axes{"first", {0}, 0}}) {
      const std::vector<GridInput> x = {std::string(op.name) == "ReduceMax" ||
                                                std::string(op.name) == "ReduceMin"
                                            ? Specials({3, 5, 37})
                                            : F32({3, 5, 37})};
      std::vector<Attribute> attrs = {IntAttr("keepdims", a.keepdims)};
      std::vector<Attribute> with_axes = attrs;
      if (!a.axes.empty()) with_axes.push_back(IntsAttr("axes", a.axes));
      g.Add("", op.name, std::string(a.name) + "_attr", with_axes, x, 1, 1, op.axes_input_from - 1);
      std::vector<GridInput> in = x;
      if (!a.axes.empty())
        in.push_back(Values(kI64, {static_cast<int64_t>(a.axes.size())},
                            std::vector<double>(a.axes.begin(), a.axes.end())));
      g.Add("", op.name, std::string(a.name) + "_input", attrs, in, 1, op.axes_input_from);
    }
    g.Add("", op.name, "specials_attr", {IntsAttr("axes", {1})}, {Specials({3, 37})}, 1, 1,
          op.axes_input_from - 1);
    g.Add("", op.name, "specials_input", {}, {Specials({3, 37}), Values(kI64, {1}, {1})}, 1,
          op.axes_input_from);
    g.Add("", op.name, "odd_row_attr", {IntsAttr("axes", {1})}, {F32({2, 67})}, 1, 1,
          op.axes_input_from - 1);
    g.Add("", op.name, "odd_row_input", {}, {F32({2, 67}), Values(kI64, {1}, {1})}, 1,
          op.axes_input_from)
        .scale_dim = 1;
  }
}

void AddNormalization(Grid& g) {
  // Variance positive; mean, scale and bias per channel, constants as in models.
  const std::vector<GridInput> bn = {F32({2, 5, 7, 9}), Const(F32({5})), Const(F32({5})),
                                     Const(F32({5})), Const(F32({5}, 0.1, 2))};
  g.Add("", "BatchNormalization", "nchw_odd", {FloatAttr("epsilon", 1e-3f)}, bn, 1, 7);
  g.Add(
      "", "BatchNormalization", "rank3", {},
      {F32({3, 6, 37}), Const(F32({6})), Const(F32({6})), Const(F32({6})), Const(F32({6}, 0.1, 2))},
      1, 7);
  g.Add("", "BatchNormalization", "runtime_stats", {},
        {Specials({2, 4, 3, 5}), F32({4}), F32({4}), F32({4}), F32({4}, 0.1, 2)}, 1, 7);
  g.Add("", "LayerNormalization", "last_axis_33", {FloatAttr("epsilon", 1e-5f)},
        {F32({3, 5, 33}), Const(F32({33})), Const(F32({33}))}, 1, 17)
      .scale_dim = 0;
  g.Add("", "LayerNormalization", "no_bias", {IntAttr("axis", -1)},
        {F32({4, 67}), Const(F32({67}))}, 1, 17);
  g.Add("", "LayerNormalization", "two_axes", {IntAttr("axis", 1)},
        {F32({2, 3, 11}), Const(F32({3, 11})), Const(F32({3, 11}))}, 1, 17);
  g.Add("", "LayerNormalization", "small_variance", {FloatAttr("epsilon", 1e-4f)},
        {F32({3, 37}, -0.01, 0.01), Const(F32({37})), Const(F32({37}))}, 1, 17);
  g.Add("", "LayerNormalization", "specials", {}, {Specials({2, 37}), F32({37}), F32({37})}, 1, 17);
  g.Add("", "LRN", "size3",
        {IntAttr("size", 3), FloatAttr("alpha", 1e-3f), FloatAttr("beta", 0.75f),
         FloatAttr("bias", 1.f)},
        {F32({2, 5, 7, 9})});
  g.Add("", "LRN", "size5_defaults", {IntAttr("size", 5)}, {F32({1, 8, 6, 5})});
  g.Add(kOnyx, "NhwcLRN", "size3",
        {IntAttr("size", 3), FloatAttr("alpha", 1e-3f), FloatAttr("beta", 0.75f),
         FloatAttr("bias", 1.f)},
        {F32({2, 7, 9, 5})});
  g.Add(kOnyx, "NhwcLRN", "size5_defaults", {IntAttr("size", 5)}, {F32({1, 6, 5, 8})});
}

// ---- data movement ----
void AddDataMovement(Grid& g) {
  // Cast to float (opset 6+: 'to' is an int; before, its name).
  for (auto [name, dtype, lo, hi] :
       {std::tuple{"from_int32", kI32, -1e6, 1e6}, std::tuple{"from_uint8", kU8, 0., 256.},
        std::tuple{"from_int8", kI8, -128., 128.}, std::tuple{"from_int64", kI64, -1e6, 1e6},
        std::tuple{"from_bool", DType::kBool, 0., 2.}}) {
    g.Add("", "Cast", name, {IntAttr("to", 1)}, {Ints(dtype, {3, 37}, lo, hi)}, 1, 6);
    g.Add("", "Cast", std::string(name) + "_to_string_attr", {StringAttr("to", "FLOAT")},
          {Ints(dtype, {3, 37}, lo, hi)}, 1, 1, 5);
  }
  g.Add("", "Cast", "to_double", {IntAttr("to", 11)}, {Ints(kI32, {2, 9}, -100, 100)}, 1, 6);
  g.Add("", "Cast", "float_to_int32", {IntAttr("to", 6)}, {F32({2, 9}, -100, 100)}, 1, 6);
  g.Add("", "Concat", "axis1", {IntAttr("axis", 1)}, {F32({2, 3, 5}), F32({2, 4, 5})});
  g.Add("", "Concat", "last_three", {IntAttr("axis", 2)},
        {F32({3, 2, 7}), F32({3, 2, 1}), Specials({3, 2, 9})});
  g.Add("", "Concat", "negative_axis", {IntAttr("axis", -1)}, {F32({3, 7}), F32({3, 9})}, 1, 11);
  g.Add("", "Concat", "int64_axis0", {IntAttr("axis", 0)},
        {Ints(kI64, {2, 5}, -9, 9), Ints(kI64, {1, 5}, -9, 9)});
  g.Add("", "Concat", "uint8", {IntAttr("axis", 1)},
        {Ints(kU8, {2, 3}, 0, 256), Ints(kU8, {2, 37}, 0, 256)});
  g.Add("", "Gather", "axis0", {IntAttr("axis", 0)}, {F32({5, 37}), Values(kI64, {3}, {4, 0, 2})});
  g.Add("", "Gather", "negative_indices", {IntAttr("axis", 1)},
        {F32({3, 7, 5}), Values(kI64, {2, 2}, {-1, 0, 6, -7})}, 1, 11);
  g.Add("", "Gather", "scalar_index", {}, {Ints(kI64, {4, 3}, -5, 5), Values(kI64, {}, {2})});
  g.Add("", "Gather", "int32_indices", {IntAttr("axis", 0)},
        {F32({6, 9}), Values(kI32, {4}, {5, 5, 1, 0})});
  g.Add("", "Slice", "attrs",
        {IntsAttr("starts", {1}), IntsAttr("ends", {8}), IntsAttr("axes", {1})}, {F32({4, 9, 7})},
        1, 1, 9);
  g.Add("", "Slice", "step2", {},
        {F32({4, 9, 7}), Values(kI64, {1}, {1}), Values(kI64, {1}, {8}), Values(kI64, {1}, {1}),
         Values(kI64, {1}, {2})},
        1, 10);
  g.Add("", "Slice", "negative_step", {},
        {F32({4, 9, 7}), Values(kI64, {2}, {-1, 5}), Values(kI64, {2}, {-100, 0}),
         Values(kI64, {2}, {2, 0}), Values(kI64, {2}, {-1, -2})},
        1, 10);
  g.Add("", "Slice", "inner_window", {},
        {F32({3, 5, 37}), Values(kI64, {2}, {1, 3}), Values(kI64, {2}, {4, 36})}, 1, 10);
  g.Add("", "Slice", "clamped_ends", {},
        {Ints(kI64, {6, 4}, -9, 9), Values(kI64, {1}, {-4}), Values(kI64, {1}, {1000})}, 1, 10);
  g.Add("", "Split", "attr_sizes", {IntAttr("axis", 1), IntsAttr("split", {2, 4})},
        {F32({2, 6, 5})}, 2, 1, 12);
  g.Add("", "Split", "equal", {IntAttr("axis", 1)}, {F32({2, 6, 5})}, 2, 2, 17);
  g.Add("", "Split", "input_sizes", {IntAttr("axis", -1)},
        {F32({3, 37}), Values(kI64, {3}, {1, 30, 6})}, 3, 13);
  g.Add("", "Split", "num_outputs_uneven", {IntAttr("axis", 1), IntAttr("num_outputs", 3)},
        {F32({2, 7, 5})}, 3, 18);
  g.Add("", "Transpose", "nchw_to_nhwc", {IntsAttr("perm", {0, 2, 3, 1})}, {F32({2, 5, 7, 9})});
  g.Add("", "Transpose", "2d_odd", {IntsAttr("perm", {1, 0})}, {Specials({33, 17})});
  g.Add("", "Transpose", "default_reverse", {}, {F32({3, 4, 5})});
  g.Add("", "Transpose", "int64_middle", {IntsAttr("perm", {0, 2, 1, 3})},
        {Ints(kI64, {2, 3, 5, 4}, -99, 99)});
  g.Add("", "Transpose", "uint8_big", {IntsAttr("perm", {1, 0})}, {Ints(kU8, {40, 70}, 0, 256)});
  g.Add("", "Reshape", "infer_dim", {}, {F32({2, 3, 4}), Values(kI64, {2}, {4, -1})}, 1, 5);
  g.Add("", "Reshape", "copy_zero", {}, {F32({2, 3, 4}), Values(kI64, {2}, {0, 12})}, 1, 5);
  g.Add("", "Flatten", "axis1", {}, {F32({2, 3, 4})});
  g.Add("", "Flatten", "axis0", {IntAttr("axis", 0)}, {F32({2, 3, 4})});
  g.Add("", "Flatten", "negative_axis", {IntAttr("axis", -1)}, {F32({2, 3, 4})}, 1, 11);
  g.Add("", "Squeeze", "axes_input", {}, {F32({3, 1, 5}), Values(kI64, {1}, {1})}, 1, 13);
  g.Add("", "Squeeze", "all_ones", {}, {F32({1, 3, 1})}, 1, 13);
  g.Add("", "Unsqueeze", "two_axes", {}, {F32({3, 5}), Values(kI64, {2}, {0, -1})}, 1, 13);
}

// ---- quantization ----
void AddQuantization(Grid& g) {
  for (DType t : {kU8, kI8}) {
    const std::string tn = t == kU8 ? "u8" : "i8";
    const double lo = t == kU8 ? 0 : -128, hi = t == kU8 ? 256 : 128;
    g.Add("", "DequantizeLinear", "per_tensor_" + tn, {},
          {Ints(t, {3, 37}, lo, hi), Values(DType::kFloat, {}, {0.05}),
           Values(t, {}, {t == kU8 ? 128.0 : -3.0})},
          1, 10)
        .scale_dim = 1;
    g.Add("", "DequantizeLinear", "no_zero_point_" + tn, {},
          {Ints(t, {2, 67}, lo, hi), Values(DType::kFloat, {}, {0.3})}, 1, 10);
    g.Add("", "DequantizeLinear", "per_axis_" + tn, {IntAttr("axis", 1)},
          {Ints(t, {2, 3, 9}, lo, hi), Values(DType::kFloat, {3}, {0.1, 0.02, 1.5}),
           Values(t, {3}, {1, 0, 7})},
          1, 13);
    g.Add("", "QuantizeLinear", "per_tensor_" + tn, {},
          {F32({3, 37}, -30, 30), Values(DType::kFloat, {}, {0.05}),
           Values(t, {}, {t == kU8 ? 128.0 : -3.0})},
          1, 10)
        .scale_dim = 1;
    // Saturation at both ends, and halves (round to nearest even).
    g.Add("", "QuantizeLinear", "saturate_and_halves_" + tn, {},
          {Values(DType::kFloat, {2, 9},
                  {-1000, -2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 1000, 3.5, 4.5, 0, 127.5, -128.5, 254.5,
                   255.5, 7.49, -7.51, 100}),
           Values(DType::kFloat, {}, {1}), Values(t, {}, {0})},
          1, 10)
        .inputs[0]
        .constant = false;
    g.Add("", "QuantizeLinear", "per_axis_" + tn, {IntAttr("axis", 1)},
          {F32({2, 3, 9}, -20, 20), Values(DType::kFloat, {3}, {0.1, 0.2, 0.3}),
           Values(t, {3}, {1, 0, 7})},
          1, 13);
  }
  // Blocked scales (opset 21): blocks of 3 along axis 1.
  g.Add("", "DequantizeLinear", "blocked_i8", {IntAttr("axis", 1), IntAttr("block_size", 3)},
        {Ints(kI8, {4, 6}, -128, 128), Const(F32({4, 2}, 0.01, 0.1)),
         Const(Ints(kI8, {4, 2}, -9, 9))},
        1, 21);
  g.Add("", "QuantizeLinear", "blocked_u8", {IntAttr("axis", 1), IntAttr("block_size", 3)},
        {F32({4, 6}, -5, 5), Const(F32({4, 2}, 0.01, 0.1)), Const(Ints(kU8, {4, 2}, 100, 150))}, 1,
        21);
  g.Add("", "QuantizeLinear", "default_uint8", {},
        {F32({3, 37}, -5, 5), Values(DType::kFloat, {}, {0.05})}, 1, 10);
  g.Add("", "DynamicQuantizeLinear", "odd", {}, {F32({3, 37}, -3, 5)}, 3, 11).scale_dim = 1;
  g.Add("", "DynamicQuantizeLinear", "all_positive", {}, {F32({2, 67}, 0.5, 2)}, 3, 11);
  g.Add("", "DynamicQuantizeLinear", "all_negative", {}, {F32({5, 9}, -9, -1)}, 3, 11);
  // QLinearLookup: a table of 256 entries indexed by X's byte.
  for (DType t : {kU8, kI8}) {
    const std::string tn = t == kU8 ? "u8" : "i8";
    const double lo = t == kU8 ? 0 : -128, hi = t == kU8 ? 256 : 128;
    g.Add(kOnyx, "QLinearLookup", "odd_" + tn, {},
          {Ints(t, {3, 67}, lo, hi), Const(Ints(t, {256}, lo, hi))})
        .scale_dim = 1;
    g.Add(kOnyx, "QLinearLookup", "long_" + tn, {},
          {Ints(t, {2, 200}, lo, hi), Const(Ints(t, {256}, lo, hi))});
    g.Add(kOnyx, "QLinearLookup", "short_" + tn, {},
          {Ints(t, {5}, lo, hi), Const(Ints(t, {256}, lo, hi))});
  }
}

// ---- convolution and pooling ----
void AddConvPool(Grid& g) {
  const std::vector<Attribute> pad1 = {IntsAttr("pads", {1, 1, 1, 1})};
  for (const char* op : {"Conv", "FusedConv"}) {
    const std::string domain = std::string(op) == "Conv" ? "" : kOnyx;
    g.Add(domain, op, "3x3_pad_bias", pad1,
          {F32({1, 3, 9, 11}, -1, 1), Const(F32({4, 3, 3, 3}, -1, 1)), Const(F32({4}, -1, 1))})
        .scale_dim = 2;
    g.Add(domain, op, "strided_grouped_dilated",
          {IntAttr("group", 2), IntsAttr("strides", {2, 2}), IntsAttr("dilations", {2, 1}),
           IntsAttr("pads", {2, 1, 1, 0})},
          {F32({2, 4, 9, 8}, -1, 1), Const(F32({6, 2, 3, 3}, -1, 1))});
    g.Add(domain, op, "1x1_odd_channels", {},
          {F32({1, 13, 5, 7}, -1, 1), Const(F32({17, 13, 1, 1}, -1, 1)), Const(F32({17}, -1, 1))});
    g.Add(domain, op, "runtime_weights", pad1,
          {F32({1, 3, 6, 6}, -1, 1), F32({5, 3, 3, 3}, -1, 1), F32({5}, -1, 1)});
    g.Add(domain, op, "1d", {IntsAttr("pads", {1, 2})},
          {F32({2, 5, 19}, -1, 1), Const(F32({7, 5, 4}, -1, 1))});
    g.Add(domain, op, "depthwise", {IntAttr("group", 8), IntsAttr("pads", {1, 1, 1, 1})},
          {F32({1, 8, 9, 9}, -1, 1), Const(F32({8, 1, 3, 3}, -1, 1)), Const(F32({8}, -1, 1))});
    // Few output positions (the small-convolution kernel): one 3x3 window, a 1-D row of five.
    g.Add(domain, op, "one_position", {},
          {F32({2, 5, 3, 3}, -1, 1), Const(F32({6, 5, 3, 3}, -1, 1)), Const(F32({6}, -1, 1))});
    g.Add(domain, op, "few_positions_1d", {},
          {F32({1, 9, 7}, -1, 1), Const(F32({10, 9, 3}, -1, 1))});
    g.Add(domain, op, "auto_pad_same",
          {StringAttr("auto_pad", "SAME_UPPER"), IntsAttr("strides", {2, 2})},
          {F32({1, 3, 8, 7}, -1, 1), Const(F32({4, 3, 3, 3}, -1, 1))});
  }
  // Fused epilogues: a residual and each activation family.
  struct Act {
    const char* name;
    std::vector<float> params;
  };
  for (const Act& a :
       {Act{"Relu", {}}, Act{"LeakyRelu", {0.1f}}, Act{"Clip", {-0.5f, 0.7f}}, Act{"Sigmoid", {}},
        Act{"HardSwish", {}}, Act{"Gelu", {0}}, Act{"Softplus", {}}, Act{"Tanh", {}},
        Act{"Elu", {0.8f}}, Act{"HardSigmoid", {0.2f, 0.5f}}, Act{"Mish", {}}}) {
    std::vector<Attribute> attrs = {IntsAttr("pads", {1, 1, 1, 1}),
                                    StringAttr("activation", a.name)};
    if (!a.params.empty()) attrs.push_back(FloatsAttr("activation_params", a.params));
    g.Add(kOnyx, "FusedConv", std::string("act_") + a.name, attrs,
          {F32({1, 3, 6, 7}, -1, 1), Const(F32({4, 3, 3, 3}, -1, 1)), Const(F32({4}, -1, 1)),
           F32({1, 4, 6, 7}, -1, 1)});
    std::vector<Attribute> mm = {StringAttr("activation", a.name)};
    if (!a.params.empty()) mm.push_back(FloatsAttr("activation_params", a.params));
    g.Add(kOnyx, "FusedMatMul", std::string("act_") + a.name, mm,
          {F32({3, 37}, -1, 1), Const(F32({37, 17}, -1, 1)), Const(F32({17}, -1, 1)),
           F32({3, 17}, -1, 1)});
    g.Add(kOnyx, "ChannelAffine", std::string("act_") + a.name, mm,
          {F32({2, 5, 3, 7}), Const(F32({5})), Const(F32({5}))});
  }
  // Channels-last convolutions: the Winograd shape (3x3, stride 1, >= 64 output channels, >= 25
  // tiles), depthwise, sparse 1x1, a residual written in place.
  g.Add(kOnyx, "NhwcConv", "3x3_winograd", pad1,
        {F32({1, 10, 10, 8}, -1, 1), Const(F32({64, 8, 3, 3}, -1, 1)), Const(F32({64}, -1, 1))});
  g.Add(kOnyx, "NhwcConv", "3x3_winograd_odd_residual",
        {IntsAttr("pads", {1, 1, 1, 1}), StringAttr("activation", "Relu")},
        {F32({1, 11, 9, 9}, -1, 1), Const(F32({64, 9, 3, 3}, -1, 1)), Const(F32({64}, -1, 1)),
         F32({1, 11, 9, 64}, -1, 1)});
  g.Add(kOnyx, "NhwcConv", "depthwise", {IntAttr("group", 8), IntsAttr("pads", {1, 1, 1, 1})},
        {F32({1, 9, 9, 8}, -1, 1), Const(F32({8, 1, 3, 3}, -1, 1)), Const(F32({8}, -1, 1))});
  g.Add(kOnyx, "NhwcConv", "depthwise_strided_odd",
        {IntAttr("group", 13), IntsAttr("strides", {2, 2}), IntsAttr("pads", {1, 0, 1, 1})},
        {F32({2, 8, 7, 13}, -1, 1), Const(F32({13, 1, 3, 3}, -1, 1))});
  g.Add(kOnyx, "NhwcConv", "depthwise_residual_relu",
        {IntAttr("group", 16), IntsAttr("pads", {1, 1, 1, 1}), StringAttr("activation", "Relu")},
        {F32({1, 6, 7, 16}, -1, 1), Const(F32({16, 1, 3, 3}, -1, 1)), Const(F32({16}, -1, 1)),
         F32({1, 6, 7, 16}, -1, 1)});
  g.Add(kOnyx, "NhwcConv", "sparse_1x1", {},
        {F32({1, 5, 5, 48}, -1, 1), SparseF32({40, 48, 1, 1}), Const(F32({40}, -1, 1))});
  g.Add(kOnyx, "NhwcConv", "sparse_1x1_residual", {StringAttr("activation", "Relu")},
        {F32({2, 3, 5, 32}, -1, 1), SparseF32({48, 32, 1, 1}), Const(F32({48}, -1, 1)),
         F32({2, 3, 5, 48}, -1, 1)});
  g.Add(kOnyx, "NhwcConv", "3x3_pad", pad1,
        {F32({1, 9, 11, 3}, -1, 1), Const(F32({4, 3, 3, 3}, -1, 1)), Const(F32({4}, -1, 1))});
  g.Add(kOnyx, "NhwcConv", "1x1_residual", {},
        {F32({1, 5, 7, 13}, -1, 1), Const(F32({17, 13, 1, 1}, -1, 1)), Omitted(),
         F32({1, 5, 7, 17}, -1, 1)});
  g.Add(kOnyx, "NhwcConv", "few_positions_1d_residual", {StringAttr("activation", "Tanh")},
        {F32({1, 7, 9}, -1, 1), Const(F32({10, 9, 3}, -1, 1)), Const(F32({10}, -1, 1)),
         F32({1, 5, 10}, -1, 1)});
  g.Add(kOnyx, "NhwcConv", "one_position", {},
        {F32({2, 3, 3, 5}, -1, 1), Const(F32({6, 5, 3, 3}, -1, 1)), Const(F32({6}, -1, 1))});
  g.Add("", "ConvTranspose", "strided_output_padding",
        {IntsAttr("strides", {2, 2}), IntsAttr("pads", {1, 1, 1, 1}),
         IntsAttr("output_padding", {1, 0})},
        {F32({1, 4, 5, 5}, -1, 1), Const(F32({4, 3, 3, 3}, -1, 1)), Const(F32({3}, -1, 1))});
  g.Add("", "ConvTranspose", "grouped", {IntAttr("group", 2)},
        {F32({2, 4, 3, 4}, -1, 1), Const(F32({4, 3, 2, 2}, -1, 1))});
  // Pools, channels first and last.
  for (const char* op : {"MaxPool", "AveragePool", "NhwcMaxPool", "NhwcAveragePool"}) {
    const bool nhwc = std::string(op).rfind("Nhwc", 0) == 0;
    const std::string domain = nhwc ? kOnyx : "";
    const Shape x = nhwc ? Shape{2, 9, 11, 3} : Shape{2, 3, 9, 11};
    g.Add(domain, op, "3x3_s2_pad",
          {IntsAttr("kernel_shape", {3, 3}), IntsAttr("strides", {2, 2}),
           IntsAttr("pads", {1, 1, 1, 1})},
          {F32(x)});
    g.Add(domain, op, "2x2_s2", {IntsAttr("kernel_shape", {2, 2}), IntsAttr("strides", {2, 2})},
          {F32(x)});
    g.Add(domain, op, "specials_3x3", {IntsAttr("kernel_shape", {3, 3})}, {Specials(x)});
    g.Add(domain, op, "ceil_mode",
          {IntsAttr("kernel_shape", {3, 3}), IntsAttr("strides", {2, 2}), IntAttr("ceil_mode", 1)},
          {F32(x)}, 1, nhwc ? 1 : 10);
    if (std::string(op).find("Average") != std::string::npos)
      g.Add(domain, op, "count_include_pad",
            {IntsAttr("kernel_shape", {3, 3}), IntsAttr("pads", {1, 1, 1, 1}),
             IntAttr("count_include_pad", 1)},
            {F32(x)});
    if (!nhwc)
      g.Add(domain, op, "1d", {IntsAttr("kernel_shape", {3}), IntsAttr("pads", {1, 1})},
            {F32({2, 5, 17})});
  }
  for (const char* op : {"GlobalAveragePool", "GlobalMaxPool"}) {
    g.Add("", op, "nchw_odd", {}, {F32({2, 5, 7, 9})});
    g.Add("", op, "one_pixel", {}, {F32({3, 37, 1, 1})});
    g.Add("", op, "channels_16", {}, {F32({2, 16, 5, 5})});
    g.Add("", op, "channels_64", {}, {F32({1, 64, 3, 3})});
    g.Add("", op, "specials", {}, {Specials({2, 3, 5, 7})});
    g.Add("", op, "1d_long", {}, {F32({2, 3, 67})}).scale_dim = 2;
  }
  // Integer convolutions.
  g.Add("", "ConvInteger", "u8_zero_points", pad1,
        {Ints(kU8, {1, 3, 7, 7}, 0, 256), Const(Ints(kU8, {4, 3, 3, 3}, 0, 256)),
         Values(kU8, {}, {131}), Values(kU8, {}, {120})},
        1, 10);
  g.Add("", "ConvInteger", "i8_weights", {},
        {Ints(kU8, {1, 5, 5, 6}, 0, 256), Const(Ints(kI8, {3, 5, 1, 1}, -128, 128))}, 1, 10);
  for (const char* op : {"QLinearConv", "NhwcQLinearConv"}) {
    const bool nhwc = std::string(op) == "NhwcQLinearConv";
    const std::string domain = nhwc ? kOnyx : "";
    const Shape x = nhwc ? Shape{1, 7, 9, 3} : Shape{1, 3, 7, 9};
    g.Add(domain, op, "u8_i8_bias", pad1,
          {Ints(kU8, x, 0, 256), Values(DType::kFloat, {}, {0.02}), Values(kU8, {}, {128}),
           Const(Ints(kI8, {5, 3, 3, 3}, -128, 128)), Values(DType::kFloat, {}, {0.01}),
           Values(kI8, {}, {0}), Values(DType::kFloat, {}, {0.05}), Values(kU8, {}, {100}),
           Const(Ints(kI32, {5}, -500, 500))},
          1, 10);
    g.Add(domain, op, "per_channel_i8_out", {IntsAttr("strides", {2, 2})},
          {Ints(kU8, x, 0, 256), Values(DType::kFloat, {}, {0.03}), Values(kU8, {}, {10}),
           Const(Ints(kI8, {4, 3, 2, 2}, -128, 128)),
           Values(DType::kFloat, {4}, {0.01, 0.02, 0.005, 0.03}), Values(kI8, {4}, {0, 0, 0, 0}),
           Values(DType::kFloat, {}, {0.04}), Values(kI8, {}, {-5})},
          1, 10);
  }
}

// ---- matrix products ----
void AddProducts(Grid& g) {
  g.Add("", "MatMul", "odd_2d", {}, {F32({3, 37}, -1, 1), Const(F32({37, 17}, -1, 1))}).scale_dim =
      0;
  g.Add("", "MatMul", "batched_a", {}, {F32({2, 3, 5, 16}, -1, 1), Const(F32({16, 9}, -1, 1))});
  g.Add("", "MatMul", "batched_both", {}, {F32({2, 4, 7}, -1, 1), F32({2, 7, 5}, -1, 1)});
  g.Add("", "MatMul", "broadcast_batch", {}, {F32({3, 1, 4, 6}, -1, 1), F32({2, 6, 5}, -1, 1)});
  g.Add("", "MatMul", "vector_row", {}, {F32({1, 67}, -1, 1), Const(F32({67, 33}, -1, 1))});
  g.Add("", "MatMul", "runtime_b", {}, {F32({5, 9}, -1, 1), F32({9, 6}, -1, 1)});
  g.Add("", "MatMul", "sparse_b", {}, {F32({5, 48}, -1, 1), SparseF32({48, 40})});
  g.Add("", "MatMul", "sparse_b_batched", {}, {F32({2, 3, 32}, -1, 1), SparseF32({32, 33})});
  g.Add("", "Gemm", "bias_alpha_beta", {FloatAttr("alpha", 0.5f), FloatAttr("beta", 2.f)},
        {F32({5, 7}, -1, 1), Const(F32({7, 9}, -1, 1)), Const(F32({9}, -1, 1))})
      .scale_dim = 0;
  g.Add("", "Gemm", "trans_b_bias_row", {IntAttr("transB", 1)},
        {F32({4, 33}, -1, 1), Const(F32({17, 33}, -1, 1)), Const(F32({1, 17}, -1, 1))});
  g.Add("", "Gemm", "trans_a_full_c", {IntAttr("transA", 1)},
        {F32({6, 3}, -1, 1), F32({6, 5}, -1, 1), F32({3, 5}, -1, 1)});
  g.Add("", "Gemm", "no_c", {}, {F32({2, 11}, -1, 1), Const(F32({11, 13}, -1, 1))}, 1, 11);
  g.Add("", "Gemm", "sparse_b", {IntAttr("transB", 1)},
        {F32({5, 48}, -1, 1), SparseF32({40, 48}), Const(F32({40}, -1, 1))}, 1, 11);
  g.Add(kOnyx, "FusedMatMul", "bias_residual_relu", {StringAttr("activation", "Relu")},
        {F32({2, 3, 37}, -1, 1), Const(F32({37, 17}, -1, 1)), Const(F32({17}, -1, 1)),
         F32({2, 3, 17}, -1, 1)});
  g.Add(kOnyx, "FusedMatMul", "trans_alpha", {IntAttr("transB", 1), FloatAttr("alpha", 0.25f)},
        {F32({4, 9}, -1, 1), Const(F32({6, 9}, -1, 1))});
  g.Add(kOnyx, "FusedMatMul", "sparse_b_residual_leaky",
        {StringAttr("activation", "LeakyRelu"), FloatsAttr("activation_params", {0.2f})},
        {F32({2, 3, 48}, -1, 1), SparseF32({48, 40}), Const(F32({40}, -1, 1)),
         F32({2, 3, 40}, -1, 1)});
  g.Add("", "Gemm", "sparse_b_no_c", {}, {F32({7, 32}, -1, 1), SparseF32({32, 33})}, 1, 11);
  g.Add(kOnyx, "FusedMatMul", "sparse_b_bias", {},
        {F32({5, 48}, -1, 1), SparseF32({48, 40}), Const(F32({40}, -1, 1))});
  g.Add("", "MatMulInteger", "u8_i8_zero_points", {},
        {Ints(kU8, {3, 37}, 0, 256), Const(Ints(kI8, {37, 17}, -128, 128)), Values(kU8, {}, {128}),
         Values(kI8, {}, {3})},
        1, 10);
  g.Add("", "MatMulInteger", "batched_no_zero_points", {},
        {Ints(kU8, {2, 3, 16}, 0, 256), Const(Ints(kU8, {16, 9}, 0, 256))}, 1, 10);
  g.Add(kMs, "MatMulIntegerToFloat", "bias", {},
        {Ints(kU8, {3, 37}, 0, 256), Const(Ints(kI8, {37, 17}, -128, 128)),
         Values(DType::kFloat, {}, {0.02}), Values(DType::kFloat, {}, {0.01}),
         Values(kU8, {}, {128}), Values(kI8, {}, {0}), Const(F32({17}))});
  g.Add(kMs, "MatMulIntegerToFloat", "per_column_scale", {},
        {Ints(kU8, {2, 5, 9}, 0, 256), Const(Ints(kI8, {9, 4}, -128, 128)),
         Values(DType::kFloat, {}, {0.02}), Values(DType::kFloat, {4}, {0.01, 0.02, 0.03, 0.04})});
  g.Add(kMs, "QGemm", "u8_out", {IntAttr("transB", 1)},
        {Ints(kU8, {3, 37}, 0, 256), Values(DType::kFloat, {}, {0.02}), Values(kU8, {}, {128}),
         Const(Ints(kI8, {17, 37}, -128, 128)), Values(DType::kFloat, {}, {0.01}),
         Values(kI8, {}, {0}), Const(Ints(kI32, {17}, -1000, 1000)),
         Values(DType::kFloat, {}, {0.1}), Values(kU8, {}, {120})});
  g.Add(kMs, "QGemm", "float_out_alpha", {FloatAttr("alpha", 0.5f)},
        {Ints(kU8, {4, 9}, 0, 256), Values(DType::kFloat, {}, {0.02}), Values(kU8, {}, {100}),
         Const(Ints(kI8, {9, 5}, -128, 128)), Values(DType::kFloat, {}, {0.01}),
         Values(kI8, {}, {0})});
  // MatMulNBits: 4 and 8 bits, a K that leaves a partial block, bias, zero points.
  for (int64_t bits : {4, 8}) {
    const int64_t k = 40, n = 9, block = 16, kb = (k + block - 1) / block;
    const std::string b = std::to_string(bits);
    g.Add(kMs, "MatMulNBits", "bits" + b,
          {IntAttr("K", k), IntAttr("N", n), IntAttr("bits", bits), IntAttr("block_size", block)},
          {F32({3, k}, -1, 1), Const(Ints(kU8, {n, kb, block * bits / 8}, 0, 256)),
           Const(F32({n * kb}, 0.01, 0.1))});
    g.Add(kMs, "MatMulNBits", "bits" + b + "_bias_zero_points",
          {IntAttr("K", k), IntAttr("N", n), IntAttr("bits", bits), IntAttr("block_size", block)},
          {F32({2, 5, k}, -1, 1), Const(Ints(kU8, {n, kb, block * bits / 8}, 0, 256)),
           Const(F32({n * kb}, 0.01, 0.1)),
           Const(Ints(kU8, {bits == 8 ? n * kb : n * ((kb + 1) / 2)}, 0, 256)), Omitted(),
           Const(F32({n}))});
  }
}

// ---- recurrent ----
void AddRecurrent(Grid& g) {
  struct Rnn {
    const char* op;
    int64_t gates;
  };
  for (const Rnn r : {Rnn{"LSTM", 4}, Rnn{"GRU", 3}, Rnn{"RNN", 1}}) {
    const int outputs = r.gates == 4 ? 3 : 2;
    const int64_t t = 4, b = 3, in = 5, h = 13;
    for (const char* dir : {"forward", "reverse", "bidirectional"}) {
      const int64_t d = std::string(dir) == "bidirectional" ? 2 : 1;
      std::vector<GridInput> inputs = {F32({t, b, in}, -1, 1),
                                       Const(F32({d, r.gates * h, in}, -0.5, 0.5)),
                                       Const(F32({d, r.gates * h, h}, -0.5, 0.5)),
                                       Const(F32({d, 2 * r.gates * h}, -0.5, 0.5)),
                                       Omitted(),
                                       F32({d, b, h}, -1, 1)};
      if (r.gates == 4) inputs.push_back(F32({d, b, h}, -1, 1));
      g.Add("", r.op, std::string(dir) + "_h13",
            {IntAttr("hidden_size", h), StringAttr("direction", dir)}, inputs, outputs, 7);
    }
    g.Add("", r.op, "streaming_step_no_bias", {IntAttr("hidden_size", 33)},
          {F32({1, 1, 16}, -1, 1), Const(F32({1, r.gates * 33, 16}, -0.5, 0.5)),
           Const(F32({1, r.gates * 33, 33}, -0.5, 0.5))},
          outputs, 7);
    g.Add("", r.op, "sequence_lens", {IntAttr("hidden_size", 8)},
          {F32({5, 3, 4}, -1, 1), Const(F32({1, r.gates * 8, 4}, -0.5, 0.5)),
           Const(F32({1, r.gates * 8, 8}, -0.5, 0.5)), Omitted(), Values(kI32, {3}, {5, 2, 4})},
          outputs, 7);
    // Opsets before 7 (the same inputs; GRU-1's and LSTM-1's other defaults are not exercised).
    g.Add("", r.op, "legacy_opset", {IntAttr("hidden_size", 6)},
          {F32({3, 2, 4}, -1, 1), Const(F32({1, r.gates * 6, 4}, -0.5, 0.5)),
           Const(F32({1, r.gates * 6, 6}, -0.5, 0.5)), Const(F32({1, 2 * r.gates * 6}, -0.5, 0.5))},
          outputs, 1, 6);
  }
  g.Add("", "GRU", "linear_before_reset",
        {IntAttr("hidden_size", 9), IntAttr("linear_before_reset", 1)},
        {F32({3, 2, 5}, -1, 1), Const(F32({1, 27, 5}, -0.5, 0.5)),
         Const(F32({1, 27, 9}, -0.5, 0.5)), Const(F32({1, 54}, -0.5, 0.5))},
        2, 7);
}

// ---- attention and transformer blocks ----
void AddTransformer(Grid& g) {
  g.Add("", "Attention", "4d", {},
        {F32({2, 3, 5, 8}, -1, 1), F32({2, 3, 7, 8}, -1, 1), F32({2, 3, 7, 8}, -1, 1)}, 1, 23);
  g.Add(
      "", "Attention", "3d_heads_mask", {IntAttr("q_num_heads", 2), IntAttr("kv_num_heads", 2)},
      {F32({2, 5, 16}, -1, 1), F32({2, 7, 16}, -1, 1), F32({2, 7, 12}, -1, 1), F32({5, 7}, -2, 0)},
      1, 23);
  g.Add("", "Attention", "scale_odd_head", {FloatAttr("scale", 0.3f)},
        {F32({1, 2, 3, 13}, -1, 1), F32({1, 2, 9, 13}, -1, 1), F32({1, 2, 9, 5}, -1, 1)}, 1, 23);
  g.Add(kMs, "Attention", "mask_index", {IntAttr("num_heads", 3)},
        {F32({2, 7, 12}, -1, 1), Const(F32({12, 72}, -0.5, 0.5)), Const(F32({72}, -0.5, 0.5)),
         Values(kI32, {2, 7}, {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0})});
  g.Add(kMs, "Attention", "unidirectional", {IntAttr("num_heads", 2), IntAttr("unidirectional", 1)},
        {F32({1, 5, 8}, -1, 1), Const(F32({8, 48}, -0.5, 0.5)), Const(F32({48}, -0.5, 0.5))});
  g.Add(kMs, "MultiHeadAttention", "cross_key_lengths", {IntAttr("num_heads", 2)},
        {F32({2, 5, 16}, -1, 1), F32({2, 9, 16}, -1, 1), F32({2, 9, 16}, -1, 1), Omitted(),
         Values(kI32, {2}, {9, 4})});
  g.Add(kMs, "MultiHeadAttention", "self_odd_head", {IntAttr("num_heads", 3)},
        {F32({1, 6, 15}, -1, 1), F32({1, 6, 15}, -1, 1), F32({1, 6, 15}, -1, 1)});
  for (int64_t s : {1, 3}) {
    for (int64_t window : {-1, 4}) {
      const int64_t b = 2, heads = 4, kv = 2, d = 16, past = 6;
      const double total = static_cast<double>(past + s);
      g.Add(kMs, "GroupQueryAttention",
            "s" + std::to_string(s) + (window > 0 ? "_window_softcap" : ""),
            {IntAttr("num_heads", heads), IntAttr("kv_num_heads", kv),
             IntAttr("local_window_size", window), FloatAttr("softcap", window > 0 ? 3.f : 0.f)},
            {F32({b, s, (heads + 2 * kv) * d}, -1, 1), Omitted(), Omitted(),
             F32({b, kv, past, d}, -1, 1), F32({b, kv, past, d}, -1, 1),
             Values(kI32, {b}, {total - 1, total - 3}), Values(kI32, {}, {total})},
            3);
    }
  }
  for (const char* domain : {kMs, kOnyx}) {
    g.Add(domain, "SkipLayerNormalization", "bias_beta_33", {FloatAttr("epsilon", 1e-5f)},
          {F32({2, 5, 33}), F32({2, 5, 33}), Const(F32({33})), Const(F32({33})), Const(F32({33}))},
          std::string(domain) == kMs ? 4 : 1)
        .scale_dim = 1;
    g.Add(domain, "SkipLayerNormalization", "no_beta_long", {},
          {F32({3, 67}), F32({3, 67}), Const(F32({67}))});
    g.Add(domain, "SkipLayerNormalization", "specials", {},
          {Specials({2, 37}), F32({2, 37}), Const(F32({37})), Const(F32({37}))});
  }
  // Rows of small variance, where epsilon is a large part of the denominator.
  for (const char* domain : {kMs, kOnyx})
    g.Add(
        domain, "SkipLayerNormalization", "small_variance", {FloatAttr("epsilon", 1e-4f)},
        {F32({3, 37}, -0.01, 0.01), F32({3, 37}, -0.01, 0.01), Const(F32({37})), Const(F32({37}))});
  g.Add(kMs, "SkipSimplifiedLayerNormalization", "small_variance", {FloatAttr("epsilon", 1e-4f)},
        {F32({3, 37}, -0.01, 0.01), F32({3, 37}, -0.01, 0.01), Const(F32({37}))});
  g.Add(kMs, "SkipLayerNormalization", "broadcast_skip", {},
        {F32({2, 5, 33}), F32({5, 33}), Const(F32({33})), Const(F32({33}))}, 4);
  g.Add(kMs, "SkipSimplifiedLayerNormalization", "bias_33", {FloatAttr("epsilon", 1e-6f)},
        {F32({2, 5, 33}), F32({5, 33}), Const(F32({33})), Const(F32({33}))}, 4);
  g.Add(kMs, "SkipSimplifiedLayerNormalization", "long", {},
        {F32({3, 67}), F32({3, 67}), Const(F32({67}))});
  g.Add(kMs, "EmbedLayerNormalization", "segments_mask", {FloatAttr("epsilon", 1e-5f)},
        {Ints(kI32, {2, 5}, 0, 11), Ints(kI32, {2, 5}, 0, 2), Const(F32({11, 16}, -1, 1)),
         Const(F32({8, 16}, -1, 1)), Const(F32({2, 16}, -1, 1)), Const(F32({16})), Const(F32({16})),
         Values(kI32, {2, 5}, {1, 1, 1, 1, 1, 1, 1, 1, 0, 0})},
        2);
  g.Add(kMs, "EmbedLayerNormalization", "no_segments_odd", {},
        {Ints(kI32, {1, 7}, 0, 30), Omitted(), Const(F32({30, 33}, -1, 1)),
         Const(F32({9, 33}, -1, 1)), Omitted(), Const(F32({33})), Const(F32({33}))},
        2);
  g.Add(kMs, "Gelu", "specials", {}, {Specials({3, 37})});
  g.Add(kMs, "Gelu", "long", {}, {F32({2, 5, 67})}).scale_dim = 2;
  g.Add(kMs, "BiasGelu", "bias_65", {}, {F32({3, 7, 65}), F32({65})});
  g.Add(kMs, "BiasGelu", "specials", {}, {Specials({2, 37}), F32({37})});
  g.Add(kMs, "FastGelu", "bias_65", {}, {F32({3, 7, 65}), F32({65})});
  g.Add(kMs, "FastGelu", "no_bias_specials", {}, {Specials({2, 37})});
  g.Add(kMs, "QuickGelu", "alpha", {FloatAttr("alpha", 1.3f)}, {Specials({3, 37})});
  g.Add(kMs, "QuickGelu", "default_long", {}, {F32({2, 5, 67})});
}

// ---- other com.onyx ops ----
void AddOnyxMisc(Grid& g) {
  g.Add(kOnyx, "ChannelAffine", "nchw_odd", {},
        {Specials({2, 5, 7, 9}), Const(F32({5})), Const(F32({5}))})
      .scale_dim = 3;
  g.Add(kOnyx, "ChannelAffine", "rank2", {}, {F32({3, 37}), Const(F32({37})), Const(F32({37}))});
  g.Add(kOnyx, "ChannelAffine", "relu", {StringAttr("activation", "Relu")},
        {F32({1, 16, 3, 3}), Const(F32({16})), Const(F32({16}))});
  g.Add(kOnyx, "NhwcChannelAffine", "odd_channels", {},
        {Specials({2, 7, 9, 5}), Const(F32({5})), Const(F32({5}))});
  g.Add(kOnyx, "NhwcChannelAffine", "channels_37_relu", {StringAttr("activation", "Relu")},
        {F32({1, 3, 2, 37}), Const(F32({37})), Const(F32({37}))});
  g.Add(kOnyx, "ReplaceNaN", "specials", {FloatAttr("value", -7.f)}, {Specials({3, 37})});
  g.Add(kOnyx, "ReplaceNaN", "default_long", {}, {Specials({2, 5, 67})}).scale_dim = 2;
  g.Add(kOnyx, "ReplaceNaN", "neg_inf", {FloatAttr("value", -INFINITY)}, {Specials({7})});
}

// ---- ai.onnx.ml ----
void AddMl(Grid& g) {
  // Two trees: (x0 <= 0 ? leaf0 : (x2 <= 0.5 ? leaf1 : leaf2)) and (x1 <= -1 ? leaf3 : leaf4);
  // NaN goes to the true branch at node 0 (missing_value_tracks_true).
  const Tensor modes = [] {
    Tensor t = Tensor::Allocate(kU8, {3});
    std::memset(t.raw_data(), 0, 3);
    return t;
  }();
  std::vector<Attribute> attrs = {
      IntsAttr("nodes_featureids", {0, 2, 1}),
      IntsAttr("nodes_truenodeids", {0, 1, 3}),
      IntsAttr("nodes_falsenodeids", {1, 2, 4}),
      IntsAttr("nodes_trueleafs", {1, 1, 1}),
      IntsAttr("nodes_falseleafs", {0, 1, 1}),
      TensorAttr("nodes_modes", modes),
      TensorAttr("nodes_splits", FloatValues({3}, {0.f, 0.5f, -1.f})),
      IntsAttr("nodes_missing_value_tracks_true", {1, 0, 0}),
      IntsAttr("leaf_targetids", {0, 1, 0, 1, 0}),
      TensorAttr("leaf_weights", FloatValues({5}, {1.5f, -2.f, 0.25f, 3.f, -0.5f})),
      IntAttr("n_targets", 2),
      IntsAttr("tree_roots", {0, 2}),
  };
  g.Add("ai.onnx.ml", "TreeEnsemble", "two_trees_sum", attrs, {Specials({9, 3})}, 1, 5);
  attrs.push_back(IntAttr("aggregate_function", 0));  // AVERAGE
  attrs.push_back(IntAttr("post_transform", 2));      // SOFTMAX
  g.Add("ai.onnx.ml", "TreeEnsemble", "average_softmax", attrs, {F32({17, 3}, -2, 2)}, 1, 5);
}

std::vector<GridCase> BuildGrid() {
  Grid g;
  AddElementwise(g);
  AddSoftmax(g);
  AddReductions(g);
  AddNormalization(g);
  AddDataMovement(g);
  AddQuantization(g);
  AddConvPool(g);
  AddProducts(g);
  AddRecurrent(g);
  AddTransformer(g);
  AddOnyxMisc(g);
  AddMl(g);
  return g.Take();
}

// Fills `t` (any plain numeric dtype) from doubles.
void StoreValues(Tensor& t, const std::vector<double>& v) {
  for (int64_t i = 0; i < t.numel(); ++i) {
    const double x = v[static_cast<size_t>(i) % v.size()];
    switch (t.dtype()) {
      case DType::kFloat:
        t.data<float>()[i] = static_cast<float>(x);
        break;
      case DType::kDouble:
        t.data<double>()[i] = x;
        break;
      case DType::kInt64:
        t.data<int64_t>()[i] = static_cast<int64_t>(x);
        break;
      case DType::kInt32:
        t.data<int32_t>()[i] = static_cast<int32_t>(x);
        break;
      case DType::kInt8:
        t.data<int8_t>()[i] = static_cast<int8_t>(x);
        break;
      case DType::kUInt8:
        t.data<uint8_t>()[i] = static_cast<uint8_t>(x);
        break;
      case DType::kBool:
        t.data<bool>()[i] = x != 0;
        break;
      default:
        break;
    }
  }
}

// Element i of a plain numeric tensor as a double.
double Element(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::kFloat:
      return t.data<float>()[i];
    case DType::kDouble:
      return t.data<double>()[i];
    case DType::kInt64:
      return static_cast<double>(t.data<int64_t>()[i]);
    case DType::kInt32:
      return t.data<int32_t>()[i];
    case DType::kInt8:
      return t.data<int8_t>()[i];
    case DType::kUInt8:
      return t.data<uint8_t>()[i];
    case DType::kBool:
      return t.data<bool>()[i] ? 1 : 0;
    default:
      return std::numeric_limits<double>::quiet_NaN();
  }
}

}  // namespace

const std::vector<GridCase>& KernelGrid() {
  static const std::vector<GridCase> grid = BuildGrid();
  return grid;
}

Tolerance ToleranceFor(const std::string& domain, const std::string& op) {
  // Exact: data movement, selections (max, min, clip, ReLU, NaN replacement, lookups, max
  // pooling) and integer arithmetic have one right answer; so do single IEEE operations (add,
  // multiply, divide, square root, negate), which SIMD units round as scalar code does.
  static const Tolerance kExact{"exact", 0, 0};
  // Polynomial or rational approximations of exp, log, tanh, erf (Highway's and the kernels' own
  // vs the C library's): a few ulp of relative error, plus an absolute floor for results near 0
  // (where a relative bound on, e.g., tanh(x) - x cancels).
  static const Tolerance kTranscendental{"transcendental", 1e-6, 4e-6};
  // Sums of tens of terms in another order or width (reductions, normalizations, softmax):
  // float32 rounding grows with the term count.
  static const Tolerance kFloatSum{"float_sum", 1e-5, 1e-5};
  // Products and convolutions (oneDNN's blocked and Winograd algorithms, packed panels) of
  // inputs in [-1, 1] with up to ~600 terms: rounding of a float32 dot product, and Winograd's
  // transforms roughly triple it.
  static const Tolerance kFloatProduct{"float_product", 1e-4, 1e-4};
  // Requantized 8-bit outputs: a float32 intermediate that lands within rounding of a .5 boundary
  // may round to the neighbouring integer.
  static const Tolerance kQuantized{"quantized_off_by_one", 1, 0};
  // Max pooling on oneDNN: exact on numbers and infinities, but its max instruction (maxps)
  // returns the other operand when one is NaN, so a window holding NaN may give the window's
  // largest number where the reference (and numpy) gives NaN. ONNX leaves NaN in MaxPool
  // unspecified; ONNX Runtime's MLAS pools behave the same way.
  static const Tolerance kMaxIgnoringNan{"exact_nan_unordered", 0, 0, true};
  static const std::map<std::string, const Tolerance*> by_op = {
      {"Cast", &kExact},
      {"Concat", &kExact},
      {"Gather", &kExact},
      {"Slice", &kExact},
      {"Split", &kExact},
      {"Transpose", &kExact},
      {"Reshape", &kExact},
      {"Flatten", &kExact},
      {"Squeeze", &kExact},
      {"Unsqueeze", &kExact},
      {"Abs", &kExact},
      {"Neg", &kExact},
      {"Relu", &kExact},
      {"LeakyRelu", &kExact},
      {"PRelu", &kExact},
      {"Clip", &kExact},
      {"Max", &kExact},
      {"Min", &kExact},
      {"Add", &kExact},
      {"Sub", &kExact},
      {"Mul", &kExact},
      {"Div", &kExact},
      {"Sqrt", &kExact},
      {"Reciprocal", &kExact},
      {"ReplaceNaN", &kExact},
      {"QLinearLookup", &kExact},
      {"MaxPool", &kMaxIgnoringNan},
      {"NhwcMaxPool", &kMaxIgnoringNan},
      {"GlobalMaxPool", &kExact},
      {"ReduceMax", &kExact},
      {"ReduceMin", &kExact},
      {"MatMulInteger", &kExact},
      {"ConvInteger", &kExact},
      {"DequantizeLinear", &kExact},
      {"QuantizeLinear", &kExact},
      {"Exp", &kTranscendental},
      {"Log", &kTranscendental},
      {"Tanh", &kTranscendental},
      {"Sigmoid", &kTranscendental},
      {"Erf", &kTranscendental},
      {"Gelu", &kTranscendental},
      {"Elu", &kTranscendental},
      {"Softplus", &kTranscendental},
      {"Mish", &kTranscendental},
      {"HardSigmoid", &kTranscendental},
      {"HardSwish", &kTranscendental},
      {"Pow", &kTranscendental},
      {"BiasGelu", &kTranscendental},
      {"FastGelu", &kTranscendental},
      {"QuickGelu", &kTranscendental},
      {"QLinearConv", &kQuantized},
      {"NhwcQLinearConv", &kQuantized},
      {"QGemm", &kQuantized},
      {"DynamicQuantizeLinear", &kQuantized},
  };
  (void)domain;
  auto it = by_op.find(op);
  if (it != by_op.end()) return *it->second;
  static const std::map<std::string, const Tolerance*> products = {
      {"Conv", &kFloatProduct},
      {"FusedConv", &kFloatProduct},
      {"NhwcConv", &kFloatProduct},
      {"ConvTranspose", &kFloatProduct},
      {"MatMul", &kFloatProduct},
      {"Gemm", &kFloatProduct},
      {"FusedMatMul", &kFloatProduct},
      {"MatMulIntegerToFloat", &kFloatProduct},
      {"MatMulNBits", &kFloatProduct},
      {"Attention", &kFloatProduct},
      {"MultiHeadAttention", &kFloatProduct},
      {"GroupQueryAttention", &kFloatProduct},
      {"LSTM", &kFloatProduct},
      {"GRU", &kFloatProduct},
      {"RNN", &kFloatProduct},
  };
  auto p = products.find(op);
  if (p != products.end()) return *p->second;
  return kFloatSum;  // reductions, softmax, normalizations, average pools, LRN, trees
}

NodeSpec SpecOf(const GridCase& c, int64_t opset) {
  NodeSpec spec(c.op, opset, c.attrs, c.outputs);
  spec.domain = c.domain;
  return spec;
}

std::vector<Tensor> InputsOf(const GridCase& c, uint32_t seed, int scale) {
  std::mt19937 rng(seed);
  std::vector<Tensor> out;
  for (const GridInput& in : c.inputs) {
    if (in.dtype == DType::kUndefined) {
      out.emplace_back();
      continue;
    }
    Shape shape = in.shape;
    // Graph inputs of input 0's rank grow together (same-shape operands stay equal; a
    // broadcast operand of lower rank keeps its shape).
    if (scale > 1 && !in.constant && c.scale_dim >= 0 && shape.size() == c.inputs[0].shape.size() &&
        static_cast<int>(shape.size()) > c.scale_dim)
      shape[c.scale_dim] *= scale;
    Tensor t = Tensor::Allocate(in.dtype, shape);
    if (in.fill == Fill::kValues) {
      StoreValues(t, in.values);
    } else if (in.dtype == DType::kFloat) {
      t = RandomFloats(shape, rng, static_cast<float>(in.lo), static_cast<float>(in.hi));
      if (in.fill == Fill::kSpecials) InjectSpecials(t);
      if (in.fill == Fill::kSparse && shape.size() >= 2) {
        // Zero 3 of every 4 tiles of 16x16 of the [dim 0, rest] view, so that blocks of 16
        // along either axis (the kernels' weight panels, transposed or not) are zero.
        const int64_t rows = shape[0], cols = t.numel() / shape[0];
        float* p = t.data<float>();
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t col = 0; col < cols; ++col)
            if ((r / 16 + col / 16) % 4 != 0) p[r * cols + col] = 0.f;
      }
    } else {
      std::vector<double> v(static_cast<size_t>(std::max<int64_t>(t.numel(), 1)));
      std::uniform_int_distribution<int64_t> dist(static_cast<int64_t>(in.lo),
                                                  static_cast<int64_t>(in.hi) - 1);
      for (double& x : v) x = static_cast<double>(dist(rng));
      StoreValues(t, v);
    }
    out.push_back(t);
  }
  return out;
}

std::vector<int> ConstantInputsOf(const GridCase& c) {
  std::vector<int> idx;
  for (size_t i = 0; i < c.inputs.size(); ++i)
    if (c.inputs[i].constant && c.inputs[i].dtype != DType::kUndefined)
      idx.push_back(static_cast<int>(i));
  return idx;
}

std::string CompareOutputs(const std::vector<Tensor>& got, const std::vector<Tensor>& want,
                           const Tolerance& tol) {
  for (size_t o = 0; o < want.size(); ++o) {
    const Tensor& e = want[o];
    if (!e.defined()) continue;  // an optional output the reference did not write
    std::ostringstream os;
    os.precision(9);
    os << "output " << o << ": ";
    if (o >= got.size() || !got[o].defined()) return os.str() + "missing";
    const Tensor& a = got[o];
    if (a.dtype() != e.dtype())
      return os.str() + "dtype " + DTypeName(a.dtype()) + " != " + DTypeName(e.dtype());
    if (a.shape() != e.shape())
      return os.str() + "shape " + ShapeToString(a.shape()) + " != " + ShapeToString(e.shape());
    for (int64_t i = 0; i < e.numel(); ++i) {
      const double x = Element(a, i), y = Element(e, i);
      const bool ok = std::isnan(y)   ? std::isnan(x) || tol.nan_unordered
                      : std::isinf(y) ? x == y
                                      : std::fabs(x - y) <= tol.atol + tol.rtol * std::fabs(y);
      if (!ok) {
        os << "element " << i << ": got " << x << ", expected " << y << " (tolerance " << tol.name
           << ")";
        return os.str();
      }
    }
  }
  return "";
}

}  // namespace onyx::testing
