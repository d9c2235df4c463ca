#include "file_sink.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <streambuf>

namespace ddpdesk {
namespace {

// A stream buffer over a file descriptor that always reports success (see file_sink.h) and
// keeps the errno of the first write that failed.
class FdSink : public std::streambuf {
 public:
  explicit FdSink(int fd) : fd_(fd) { setp(buf_, buf_ + sizeof buf_); }
  int error() const { return error_; }
  // Writes what is buffered; false once any write has failed.
  bool drain() {
    put(pbase(), static_cast<std::size_t>(pptr() - pbase()));
    setp(buf_, buf_ + sizeof buf_);
    return error_ == 0;
  }

 protected:
  int_type overflow(int_type c) override {
    drain();
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(c);
      pbump(1);
    }
    return traits_type::not_eof(c);
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    if (n <= epptr() - pptr()) {
      std::memcpy(pptr(), s, static_cast<std::size_t>(n));
      pbump(static_cast<int>(n));
    } else {
      drain();
      put(s, static_cast<std::size_t>(n));
    }
    return n;
  }
  int sync() override {
    drain();
    return 0;
  }

 private:
  void put(const char* p, std::size_t n) {
    while (n > 0 && error_ == 0) {
      const ssize_t w = ::write(fd_, p, n);
      if (w < 0) {
        if (errno != EINTR) error_ = errno;
        continue;
      }
      p += w;
      n -= static_cast<std::size_t>(w);
    }
  }

  int fd_;
  int error_ = 0;
  char buf_[1 << 16];
};

}  // namespace

void write_file_through(const std::string& path,
                        const std::function<void(std::ostream&)>& serialize) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error(std::strerror(errno));
  int error = 0;
  try {
    FdSink sink(fd);
    std::ostream out(&sink);
    serialize(out);
    out.flush();
    sink.drain();
    error = sink.error();
  } catch (...) {
    ::close(fd);
    throw;
  }
  // Some file systems report a full disk only when the data is flushed.
  if (error == 0 && ::fsync(fd) != 0) error = errno;
  if (::close(fd) != 0 && error == 0 && errno != EINTR) error = errno;
  if (error != 0) throw std::runtime_error(std::strerror(error));
}

}  // namespace ddpdesk
