#include "event_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "event.h"
#include "tfrecord.h"

namespace ddpdesk::tb {
namespace {

double monotonic_s() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

std::string host_name() {
  char host[256] = {0};
  if (gethostname(host, sizeof host - 1) != 0 || !host[0]) return "localhost";
  return host;
}

}  // namespace

double unix_time_now() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

EventFileWriter::EventFileWriter(const std::string& dir, double flush_interval_s)
    : interval_s_(flush_interval_s) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw std::runtime_error("cannot create " + dir + ": " + ec.message());
  const double now = unix_time_now();
  const std::string base = dir + "/events.out.tfevents." +
                           std::to_string(static_cast<long long>(std::floor(now))) + "." +
                           host_name();
  for (int attempt = 0; fd_ < 0; ++attempt) {
    path_ = attempt == 0   ? base
            : attempt == 1 ? base + "." + std::to_string(getpid())
                           : base + "." + std::to_string(getpid()) + "." + std::to_string(attempt);
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
    if (fd_ < 0 && (errno != EEXIST || attempt > 100))
      throw std::runtime_error("cannot create " + path_ + ": " + std::strerror(errno));
  }
  append_record(buf_, encode_file_version_event(now));
  flush();  // the file is a valid event file from the start
}

EventFileWriter::~EventFileWriter() {
  close();
}

void EventFileWriter::add_scalar(std::string_view tag, double value, std::int64_t step,
                                 double wall_time) {
  if (fd_ < 0 || failed_) return;
  append_scalar_record(buf_, wall_time, step, tag, static_cast<float>(value));
  if (buf_.size() >= (64u << 10)) flush();
}

void EventFileWriter::flush_if_due() {
  if (!buf_.empty() && monotonic_s() - last_write_ >= interval_s_) flush();
}

void EventFileWriter::flush() {
  last_write_ = monotonic_s();
  if (fd_ < 0 || failed_) {
    buf_.clear();
    return;
  }
  std::size_t off = 0;
  while (off < buf_.size()) {
    const ssize_t n = ::write(fd_, buf_.data() + off, buf_.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      failed_ = true;
      break;
    }
    off += static_cast<std::size_t>(n);
  }
  buf_.clear();
}

void EventFileWriter::close() {
  if (fd_ < 0) return;
  flush();
  ::close(fd_);
  fd_ = -1;
}

}  // namespace ddpdesk::tb
