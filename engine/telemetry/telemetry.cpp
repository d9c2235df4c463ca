#include "telemetry.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <stdexcept>

namespace ddpdesk {
namespace {

double now_s() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

int connect_unix(const std::string& path) {
  sockaddr_un addr{};
  if (path.size() >= sizeof addr.sun_path) return -1;
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

Telemetry::Telemetry(Options o) : opts_(std::move(o)) {
  if (!opts_.tensorboard_dir.empty())
    tb_ = std::make_unique<TensorBoardSink>(opts_.tensorboard_dir, opts_.hello.rank);
  if (!opts_.metrics_file.empty()) {
    file_ = ::open(opts_.metrics_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (file_ < 0)
      throw std::runtime_error("cannot write --metrics-file '" + opts_.metrics_file +
                               "': " + std::strerror(errno));
    file_buf_ = wire::encode(opts_.hello) + "\n";
    flush_file();
  }
  if (!opts_.monitor_path.empty()) sender_ = std::thread([this] { sender_loop(); });
}

Telemetry::~Telemetry() {
  close(1.0);
}

void Telemetry::send(const wire::Message& m) {
  if (tb_) tb_->push(m);
  std::string line = wire::encode(m);
  line.push_back('\n');
  if (file_ >= 0) {
    file_buf_ += line;
    // Flush on events, on 32 KiB and at least every 100 ms: a killed rank loses at most that.
    double t = now_s();
    if (!std::holds_alternative<wire::Step>(m) || t - last_flush_ > 0.1 ||
        file_buf_.size() > (32u << 10)) {
      flush_file();
      last_flush_ = t;
    }
  }
  if (!sender_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (queue_.size() >= opts_.queue_limit) {
      ++dropped_;
      return;
    }
    queue_.push_back(std::move(line));
  }
  cv_.notify_one();
}

bool Telemetry::write_all(int fd, const std::string& data) {
  std::size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    off += static_cast<std::size_t>(n);
  }
  return true;
}

void Telemetry::sender_loop() {
  int fd = connect_unix(opts_.monitor_path);
  fd_ = fd;
  if (fd >= 0) {
    std::string hello = wire::encode(opts_.hello) + "\n";
    if (write_all(fd, hello)) {
      connected_ = true;
    } else {
      ::close(fd);
      fd = -1;
    }
  }
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return closing_ || !queue_.empty(); });
    if (queue_.empty() && closing_) break;
    // Take everything queued and write it as one batch: fewer syscalls when the rank is fast.
    std::string batch;
    while (!queue_.empty() && batch.size() < (1 << 16)) {
      batch += queue_.front();
      queue_.pop_front();
    }
    busy_ = true;
    lock.unlock();
    if (fd >= 0 && !write_all(fd, batch)) {
      fd_ = -1;
      ::close(fd);  // the monitor went away: keep training, keep the file
      fd = -1;
      connected_ = false;
    }
    lock.lock();
    busy_ = false;
    cv_.notify_all();  // close() may be waiting for the queue to drain
  }
  fd_ = -1;
  if (fd >= 0) ::close(fd);
}

// Whole lines in one write(): ranks sharing one file under O_APPEND never split each other's lines.
void Telemetry::flush_file() {
  std::size_t off = 0;
  while (off < file_buf_.size()) {
    ssize_t n = ::write(file_, file_buf_.data() + off, file_buf_.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // disk full or similar: keep training, the socket still has the data
    off += static_cast<std::size_t>(n);
  }
  file_buf_.clear();
}

void Telemetry::close(double drain_s) {
  if (file_ >= 0) {
    flush_file();
    ::close(file_);
    file_ = -1;
  }
  if (tb_) tb_->close();
  if (!sender_.joinable()) return;
  bool drained = false;
  {
    std::unique_lock<std::mutex> lock(mu_);
    drained = cv_.wait_for(lock, std::chrono::duration<double>(drain_s),
                           [&] { return queue_.empty() && !busy_; });
    dropped_ += static_cast<std::int64_t>(queue_.size());
    queue_.clear();
    closing_ = true;
  }
  cv_.notify_all();
  // A stalled monitor must not hold the rank at exit: unblock a send() stuck on a full socket.
  if (int fd = fd_.load(); fd >= 0 && !drained) ::shutdown(fd, SHUT_RDWR);
  sender_.join();
}

}  // namespace ddpdesk
