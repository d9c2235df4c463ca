#include "telemetry.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>

namespace ddpdesk {
namespace {

double now_s() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

std::chrono::steady_clock::time_point steady_at(double s) {
  using namespace std::chrono;
  return steady_clock::time_point(duration_cast<steady_clock::duration>(duration<double>(s)));
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
    // Read and write: the last byte is read back below (a write-only descriptor fails pread);
    // write-only where the file may not be read.
    const char* path = opts_.metrics_file.c_str();
    file_ = ::open(path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (file_ < 0 && errno == EACCES) file_ = ::open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
    if (file_ < 0)
      throw std::runtime_error("cannot write --metrics-file '" + opts_.metrics_file +
                               "': " + std::strerror(errno));
    // A rank that died mid-line left half a line at the end: end it, so this run's hello is a
    // line of its own for whoever follows the file.
    char last = '\n';
    const off_t size = ::lseek(file_, 0, SEEK_END);
    if (size > 0 && ::pread(file_, &last, 1, size - 1) == 1 && last != '\n') file_buf_ = "\n";
    file_buf_ += wire::encode(opts_.hello) + "\n";
    write_file_batch();
  }
  const std::string& device = opts_.hello.device;
  if (opts_.system.gpu_index < 0 && device.rfind("cuda:", 0) == 0)
    opts_.system.gpu_index = std::atoi(device.c_str() + 5);
  // The file is written by the sender thread too, so a slow disk (an NFS run directory) never
  // holds the training thread.
  file_async_ = file_ >= 0;
  if (!opts_.monitor_path.empty() || opts_.system_interval > 0 || file_async_)
    sender_ = std::thread([this] { sender_loop(); });
}

Telemetry::~Telemetry() {
  close(1.0);
}

void Telemetry::send(const wire::Message& m) {
  send_from(m, /*on_sender=*/false);
}

// on_sender: called on the sender thread (its system samples), which writes the file itself. The
// caller says so: asking sender_ which thread it runs would read the std::thread object that the
// constructor assigns after the thread has started (a data race with its first sample).
void Telemetry::send_from(const wire::Message& m, bool on_sender) {
  if (tb_) tb_->push(m);
  if (opts_.system_interval > 0) note_clock(m);
  // No socket and no file (a rank started by hand, or a benchmark): nobody reads the line, so it
  // is not built. Encoding a step message is about 9 us, several % of a small task's step.
  if (opts_.monitor_path.empty() && !file_async_) return;
  std::string line = wire::encode(m);
  line.push_back('\n');
  bool write_now = false;
  {
    std::lock_guard<std::mutex> lock(file_mu_);
    if (file_ >= 0) {
      file_buf_ += line;
      // Flush on events, on 32 KiB and at least every 100 ms: a killed rank loses at most that.
      // (A system sample's gauges are flushed together by sample_system().)
      double t = now_s();
      const bool periodic =
          std::holds_alternative<wire::Step>(m) || std::holds_alternative<wire::Gauge>(m);
      if (!periodic || t - last_flush_ > 0.1 || file_buf_.size() > (32u << 10)) {
        last_flush_ = t;
        if (file_async_ && !on_sender)
          file_due_ = true;  // the sender writes it (notified below)
        else
          write_now = true;
      }
    }
  }
  if (write_now) write_file_batch();
  if (file_due_.load()) {
    { std::lock_guard<std::mutex> lock(mu_); }  // the sender is waiting, or sees it next round
    cv_.notify_one();
  }
  if (opts_.monitor_path.empty()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (sender_done_) return;  // closed: nothing will write it any more
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

void Telemetry::note_clock(const wire::Message& m) {
  double time = 0;
  std::int64_t step = 0;
  if (const auto* s = std::get_if<wire::Step>(&m)) {
    time = s->time;
    step = s->step;
  } else if (const auto* e = std::get_if<wire::Event>(&m)) {
    time = e->time;
    step = e->step;
  } else {
    return;
  }
  if (!std::isfinite(time)) return;
  std::lock_guard<std::mutex> lock(clock_mu_);
  clock_time_ = time;
  clock_at_ = now_s();
  clock_step_ = step;
}

// One system sample as gauge messages, on the training clock: extrapolated from the last message
// that carried it (before training starts: time 0, step 0).
void Telemetry::sample_system(SystemSampler& sampler) {
  const double now = now_s();
  std::vector<SystemSampler::Value> values = sampler.sample(now);
  if (opts_.more_system)
    for (const SystemSampler::Value& v : opts_.more_system()) values.push_back(v);
  double time = 0;
  std::int64_t step = 0;
  {
    std::lock_guard<std::mutex> lock(clock_mu_);
    if (clock_at_ >= 0) time = clock_time_ + (now - clock_at_);
    step = clock_step_;
  }
  for (const SystemSampler::Value& v : values)
    send_from(wire::Gauge{opts_.hello.rank, v.name, v.value, v.unit, time, step},
              /*on_sender=*/true);
  write_file_batch();
}

void Telemetry::sender_loop() {
  int fd = opts_.monitor_path.empty() ? -1 : connect_unix(opts_.monitor_path);
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
  // NVML's library loads and initialises here, off the training thread, and after the hello:
  // on a GPU machine that can take a while, and the monitor waits for the hello.
  std::unique_ptr<SystemSampler> sampler;
  if (opts_.system_interval > 0) sampler = std::make_unique<SystemSampler>(opts_.system);
  double next_sample = now_s();
  bool final_sample = false;  // taken as the rank closes, so even a short run has one

  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    auto ready = [&] { return closing_ || !queue_.empty() || file_due_.load(); };
    if (sampler)
      cv_.wait_until(lock, steady_at(next_sample), ready);
    else
      cv_.wait(lock, ready);
    const bool due = sampler && !closing_ && now_s() >= next_sample;
    const bool last = sampler && closing_ && queue_.empty() && !final_sample;
    if (due || last) {
      final_sample = final_sample || last;
      lock.unlock();
      sample_system(*sampler);  // queues the gauges through send()
      lock.lock();
      // Keeps the cadence, but never catches up with a burst of samples after a stall.
      next_sample =
          std::max(next_sample + opts_.system_interval, now_s() + opts_.system_interval / 2);
      continue;
    }
    if (file_due_.exchange(false)) {
      lock.unlock();
      write_file_batch();
      lock.lock();
      continue;
    }
    if (queue_.empty() && closing_) break;
    if (queue_.empty()) continue;
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
  sender_done_ = true;
  fd_ = -1;
  if (fd >= 0) ::close(fd);
}

// On the sender thread: takes what send() buffered and writes it, outside the lock that send()
// takes, so the training thread only ever appends to a string.
// Batches are taken and written under one lock, so they reach the file in the order taken.
void Telemetry::write_file_batch() {
  std::lock_guard<std::mutex> write_lock(file_write_mu_);
  std::string batch;
  {
    std::lock_guard<std::mutex> lock(file_mu_);
    batch.swap(file_buf_);
  }
  if (!batch.empty() && file_ >= 0) write_whole(batch);
}

// Whole lines in one write(): ranks sharing one file under O_APPEND never split each other's lines.
void Telemetry::write_whole(const std::string& data) {
  std::size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::write(file_, data.data() + off, data.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // disk full or similar: keep training, the socket still has the data
    off += static_cast<std::size_t>(n);
  }
}

void Telemetry::close(double drain_s) {
  write_file_batch();
  if (sender_.joinable()) close_sender(drain_s);
  if (tb_) tb_->close();  // after the sender's last system sample
  // Only now: the sender's last system sample goes to the file too.
  write_file_batch();
  std::lock_guard<std::mutex> write_lock(file_write_mu_);
  std::lock_guard<std::mutex> lock(file_mu_);
  if (file_ >= 0) {
    ::close(file_);
    file_ = -1;
  }
}

void Telemetry::close_sender(double drain_s) {
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
