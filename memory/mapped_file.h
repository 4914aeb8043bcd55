// Read-only memory-mapped files for external weights, with bounds checks against the file size.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "onyx/status.h"

namespace onyx::memory {

class MappedFile {
 public:
  static StatusOr<std::shared_ptr<MappedFile>> Open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  MappedFile() = default;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace onyx::memory
