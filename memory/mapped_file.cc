// Regular files read with pread into owned memory (why not mmap: see mapped_file.h).
#include "memory/mapped_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>

namespace onyx::memory {
namespace {

const char* FileKind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

}  // namespace

StatusOr<RegularFile> RegularFile::Open(const std::string& path) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer. It changes
  // nothing for the regular files that are read afterwards.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return NotFound("cannot open '", path, "': ", std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return IoError("cannot stat '", path, "': ", std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return NotFound("'", path, "' is ", FileKind(st.st_mode), "; expected a regular file");
  }
  RegularFile f;
  f.fd_ = fd;
  f.size_ = static_cast<uint64_t>(st.st_size);
  f.path_ = path;
  return f;
}

RegularFile::RegularFile(RegularFile&& other) noexcept
    : fd_(other.fd_), size_(other.size_), path_(std::move(other.path_)) {
  other.fd_ = -1;
}

RegularFile& RegularFile::operator=(RegularFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    size_ = other.size_;
    path_ = std::move(other.path_);
    other.fd_ = -1;
  }
  return *this;
}

RegularFile::~RegularFile() {
  if (fd_ >= 0) ::close(fd_);
}

Status RegularFile::ReadAt(uint64_t offset, void* dst, size_t n) const {
  auto* out = static_cast<uint8_t*>(dst);
  size_t done = 0;
  while (done < n) {
    // pread takes at most SSIZE_MAX and Linux moves at most ~2 GiB per call.
    const size_t chunk = std::min<size_t>(n - done, size_t{1} << 30);
    const ssize_t got = ::pread(fd_, out + done, chunk, static_cast<off_t>(offset + done));
    if (got < 0) {
      if (errno == EINTR) continue;
      return IoError("reading '", path_, "' at offset ", offset + done,
                     " failed: ", std::strerror(errno));
    }
    if (got == 0)
      return IoError("'", path_, "' ended at ", offset + done, " bytes while reading [", offset,
                     ", ", offset + n, "); was it truncated while being read?");
    done += static_cast<size_t>(got);
  }
  return Status::Ok();
}

StatusOr<FileBytes> ReadAll(const RegularFile& file) {
  FileBytes b;
  b.size = static_cast<size_t>(file.size());
  if (b.size == 0) return b;
  b.data.reset(new (std::nothrow) uint8_t[b.size]);
  if (!b.data) return IoError("cannot allocate ", b.size, " bytes to read '", file.path(), "'");
  ONYX_RETURN_IF_ERROR(file.ReadAt(0, b.data.get(), b.size));
  return b;
}

}  // namespace onyx::memory
