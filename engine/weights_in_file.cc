#include "engine/weights_in_file.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <vector>

#include "engine/tensor_proto.h"

namespace onyx::engine {
namespace {

// Field numbers of onnx.proto (ModelProto.graph, GraphProto.initializer, TensorProto's fields).
constexpr uint32_t kModelGraph = 7;
constexpr uint32_t kGraphNode = 1, kGraphInitializer = 5;
constexpr uint32_t kNodeAttribute = 5, kAttributeTensor = 5;
constexpr uint32_t kTensorDims = 1, kTensorDataType = 2, kTensorSegment = 3, kTensorRawData = 9;
constexpr uint32_t kTensorExternalData = 13, kTensorDataLocation = 14;
constexpr uint32_t kEntryKey = 1, kEntryValue = 2;
constexpr int kWireVarint = 0, kWireFixed64 = 1, kWireLen = 2, kWireFixed32 = 5;

// Sequential reads of a region of the file through a window, so that the many small fields
// between the weights cost few system calls. Malformed input makes a read return false; an I/O
// error is kept in `status`.
class WireCursor {
 public:
  explicit WireCursor(const memory::RegularFile& file) : file_(file), buf_(kWindow) {}

  uint64_t pos() const { return pos_; }
  void Seek(uint64_t pos) { pos_ = pos; }

  bool Byte(uint8_t* b) {
    if (pos_ >= file_.size()) return false;
    if (pos_ < buf_start_ || pos_ >= buf_start_ + buf_len_) {
      buf_start_ = pos_;
      buf_len_ = static_cast<size_t>(std::min<uint64_t>(kWindow, file_.size() - pos_));
      status = file_.ReadAt(buf_start_, buf_.data(), buf_len_);
      if (!status.ok()) {
        buf_len_ = 0;
        return false;
      }
    }
    *b = buf_[pos_ - buf_start_];
    ++pos_;
    return true;
  }

  bool Varint(uint64_t* v) {
    *v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      uint8_t b;
      if (!Byte(&b)) return false;
      *v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return true;
    }
    return false;
  }

  // Appends the n bytes at pos() to `out` and moves past them.
  bool CopyTo(uint64_t n, std::string* out) {
    if (n > file_.size() - std::min(pos_, file_.size())) return false;
    const size_t at = out->size();
    out->resize(at + n);
    char* dst = &(*out)[at];
    if (pos_ >= buf_start_ && pos_ + n <= buf_start_ + buf_len_) {
      std::memcpy(dst, buf_.data() + (pos_ - buf_start_), n);
    } else {
      status = file_.ReadAt(pos_, dst, n);
      if (!status.ok()) return false;
    }
    pos_ += n;
    return true;
  }

  Status status;

 private:
  static constexpr size_t kWindow = 256 * 1024;
  const memory::RegularFile& file_;
  std::vector<uint8_t> buf_;
  uint64_t buf_start_ = 0;
  size_t buf_len_ = 0;
  uint64_t pos_ = 0;
};

// One field of a message: where it starts (its tag) and ends, and its value (a varint's value, or
// where a length-delimited payload lies).
struct Field {
  uint32_t number = 0;
  int wire = 0;
  uint64_t start = 0, end = 0;
  uint64_t varint = 0;
  uint64_t payload = 0, length = 0;
};

// The next field of the message that ends at `end`; false at the end or when malformed (*bad).
bool NextField(WireCursor& c, uint64_t end, Field* f, bool* bad) {
  if (c.pos() >= end) return false;
  f->start = c.pos();
  uint64_t tag = 0;
  if (!c.Varint(&tag) || (tag >> 3) == 0 || (tag >> 3) > 0x1fffffff) return !(*bad = true);
  f->number = static_cast<uint32_t>(tag >> 3);
  f->wire = static_cast<int>(tag & 7);
  switch (f->wire) {
    case kWireVarint:
      if (!c.Varint(&f->varint)) return !(*bad = true);
      break;
    case kWireFixed64:
    case kWireFixed32:
      c.Seek(c.pos() + (f->wire == kWireFixed64 ? 8 : 4));
      break;
    case kWireLen:
      if (!c.Varint(&f->length)) return !(*bad = true);
      f->payload = c.pos();
      if (f->length > end - std::min(end, f->payload)) return !(*bad = true);
      c.Seek(f->payload + f->length);
      break;
    default:  // groups (3, 4) and invalid types: onnx.proto has none
      return !(*bad = true);
  }
  f->end = c.pos();
  if (f->end > end) return !(*bad = true);
  return true;
}

void AppendVarint(uint64_t v, std::string* out) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

void AppendLenField(uint32_t number, const std::string& payload, std::string* out) {
  AppendVarint((uint64_t{number} << 3) | kWireLen, out);
  AppendVarint(payload.size(), out);
  out->append(payload);
}

bool CopyField(WireCursor& c, const Field& f, std::string* out) {
  const uint64_t back = c.pos();
  c.Seek(f.start);
  const bool ok = c.CopyTo(f.end - f.start, out);
  c.Seek(back);
  return ok;
}

void AppendEntry(const std::string& key, const std::string& value, std::string* out) {
  std::string entry;
  AppendLenField(kEntryKey, key, &entry);
  AppendLenField(kEntryValue, value, &entry);
  AppendLenField(kTensorExternalData, entry, out);
}

// A TensorProto in [begin, end) into `out`: without its raw_data when that holds exactly the
// bytes of its dims and type and at least `min_bytes`, as it is otherwise.
bool WalkTensor(WireCursor& c, uint64_t begin, uint64_t end, uint64_t min_bytes, std::string* out) {
  bool bad = false, dims_ok = true, other_data = false;
  uint64_t elements = 1, data_type = 0, raw_fields = 0;
  Field raw, f;
  c.Seek(begin);
  while (NextField(c, end, &f, &bad)) {
    if (f.number == kTensorDims) {
      auto dim = [&](uint64_t d) {
        // Negative dims arrive as ten-byte varints, far above any real size.
        if (d > (uint64_t{1} << 62) || (d != 0 && elements > (uint64_t{1} << 62) / d))
          dims_ok = false;
        else
          elements *= d;
      };
      if (f.wire == kWireVarint) {
        dim(f.varint);
      } else if (f.wire == kWireLen) {  // packed
        const uint64_t back = c.pos();
        c.Seek(f.payload);
        uint64_t d = 0;
        while (c.pos() < f.payload + f.length && dims_ok) {
          if (!c.Varint(&d)) return false;
          dim(d);
        }
        if (c.pos() != f.payload + f.length) dims_ok = false;
        c.Seek(back);
      } else {
        dims_ok = false;
      }
    } else if (f.number == kTensorDataType) {
      if (f.wire != kWireVarint) dims_ok = false;
      data_type = f.varint;
    } else if (f.number == kTensorRawData) {
      if (f.wire != kWireLen) dims_ok = false;
      raw = f;
      ++raw_fields;
    } else if (f.number == kTensorSegment || f.number == kTensorExternalData ||
               f.number == kTensorDataLocation) {
      other_data = true;
    }
  }
  if (bad) return false;
  const uint64_t elem = data_type > static_cast<uint64_t>(INT32_MAX)
                            ? 0
                            : RawStorageElementBytes(static_cast<int32_t>(data_type));
  const bool leave = dims_ok && !other_data && raw_fields == 1 && elem != 0 &&
                     raw.length >= min_bytes && elements <= raw.length / elem &&
                     elements * elem == raw.length;
  c.Seek(begin);
  if (!leave) return c.CopyTo(end - begin, out);
  while (NextField(c, end, &f, &bad))
    if (f.number != kTensorRawData && !CopyField(c, f, out)) return false;
  if (bad) return false;
  AppendEntry(kInModelFileKey, "1", out);
  AppendEntry("offset", std::to_string(raw.payload), out);
  AppendEntry("length", std::to_string(raw.length), out);
  AppendVarint((uint64_t{kTensorDataLocation} << 3) | kWireVarint, out);
  AppendVarint(1, out);  // TensorProto.EXTERNAL
  return true;
}

using Walk = bool (*)(WireCursor&, uint64_t, uint64_t, uint64_t, std::string*);
struct FieldWalk {
  uint32_t field;
  Walk walk;
};

// A message in [begin, end) into `out`: each length-delimited field that `walks` names through
// its walk, every other field as it is.
bool WalkFields(WireCursor& c, uint64_t begin, uint64_t end, std::initializer_list<FieldWalk> walks,
                uint64_t min_bytes, std::string* out) {
  bool bad = false;
  Field f;
  c.Seek(begin);
  while (NextField(c, end, &f, &bad)) {
    Walk walk = nullptr;
    for (const FieldWalk& w : walks)
      if (f.number == w.field && f.wire == kWireLen) walk = w.walk;
    if (walk) {
      std::string inner;
      if (!walk(c, f.payload, f.end, min_bytes, &inner)) return false;
      AppendLenField(f.number, inner, out);
      c.Seek(f.end);
    } else if (!CopyField(c, f, out)) {
      return false;
    }
  }
  return !bad;
}

// An AttributeProto: its tensor `t` (a Constant node's value: some exporters hold weights there).
bool WalkAttribute(WireCursor& c, uint64_t begin, uint64_t end, uint64_t min_bytes,
                   std::string* out) {
  return WalkFields(c, begin, end, {{kAttributeTensor, WalkTensor}}, min_bytes, out);
}

bool WalkNode(WireCursor& c, uint64_t begin, uint64_t end, uint64_t min_bytes, std::string* out) {
  return WalkFields(c, begin, end, {{kNodeAttribute, WalkAttribute}}, min_bytes, out);
}

// A GraphProto: its initializers and its nodes' attribute tensors (subgraphs, inside attributes
// `g` and `graphs`, are kept as they are).
bool WalkGraph(WireCursor& c, uint64_t begin, uint64_t end, uint64_t min_bytes, std::string* out) {
  return WalkFields(c, begin, end, {{kGraphInitializer, WalkTensor}, {kGraphNode, WalkNode}},
                    min_bytes, out);
}

}  // namespace

Status ReadModelLeavingWeights(const memory::RegularFile& file, uint64_t min_bytes,
                               std::string* out, bool* plain) {
  out->clear();
  *plain = false;
  WireCursor c(file);
  const bool walked = WalkFields(c, 0, file.size(), {{kModelGraph, WalkGraph}}, min_bytes, out);
  if (!c.status.ok()) return c.status;
  if (!walked) {
    out->clear();
    return Status::Ok();
  }
  *plain = true;
  return Status::Ok();
}

}  // namespace onyx::engine
