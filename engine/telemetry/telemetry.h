// Where a rank's wire messages go: the monitor's Unix socket (DDPDESK_MONITOR), a JSONL file
// (--metrics-file, or <run_dir>/metrics/rank-N.jsonl, written by the sender thread), TensorBoard
// event files (--tensorboard: tensorboard_sink.h) and nowhere else. Training never waits for the
// monitor: socket writes happen on a sender thread fed by a bounded queue, and when the queue is
// full messages for the socket are dropped (and counted) while the file still receives every one.
// The sender thread also samples the process's system metrics (system_sampler.h) and sends them as
// gauge messages, through send() like any other message, so they reach every sink.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "system_sampler.h"
#include "tensorboard_sink.h"
#include "wire.h"

namespace ddpdesk {

class Telemetry {
 public:
  struct Options {
    wire::Hello hello;         // sent first on the socket and written first to the file
    std::string monitor_path;  // empty: no socket
    std::string metrics_file;  // empty: no file
    std::size_t queue_limit = 1 << 16;
    std::string tensorboard_dir;  // empty: no TensorBoard files; else <run_dir>/tb
    // Seconds between system metric samples, taken on the sender thread; 0: none. A CUDA
    // device in hello.device ("cuda:N") sets system.gpu_index to N.
    double system_interval = 0;
    SystemSampler::Options system;
    // More values for each system sample, called on the sender thread (the worker's: the CUDA
    // caching allocator's figures, gpu_memory.h); empty: none.
    std::function<std::vector<SystemSampler::Value>()> more_system;
  };
  // Throws std::runtime_error when the metrics file cannot be opened.
  explicit Telemetry(Options o);
  ~Telemetry();
  Telemetry(const Telemetry&) = delete;
  Telemetry& operator=(const Telemetry&) = delete;

  // Called by the training thread. (The sender thread's system samples take the same path
  // through send_from(), which is told that it runs on the sender.)
  void send(const wire::Message& m);
  // Flushes the file and gives the sender up to `drain_s` seconds to empty its queue.
  void close(double drain_s = 3.0);

  std::int64_t dropped() const { return dropped_.load(); }
  bool monitor_connected() const { return connected_.load(); }

 private:
  void send_from(const wire::Message& m, bool on_sender);
  void sender_loop();
  void close_sender(double drain_s);
  void sample_system(SystemSampler& sampler);
  void note_clock(const wire::Message& m);
  void write_file_batch();
  void write_whole(const std::string& data);
  bool write_all(int fd, const std::string& data);

  Options opts_;
  std::mutex file_mu_;  // file_buf_, last_flush_: send_from() runs on two threads
  int file_ = -1;
  std::string file_buf_;
  double last_flush_ = 0;
  bool file_async_ = false;            // a file is open; the sender thread writes it
  std::atomic<bool> file_due_{false};  // send() has buffered lines for it to write
  std::mutex file_write_mu_;           // one write of whole lines at a time, in order
  // The training clock and step as of the last message that carried them, for gauges' time and
  // step: time = clock_time_ + (now - clock_at_).
  std::mutex clock_mu_;
  double clock_time_ = 0;
  double clock_at_ = -1;
  std::int64_t clock_step_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> queue_;
  bool closing_ = false;
  bool busy_ = false;         // the sender is writing a batch it already took off the queue
  bool sender_done_ = false;  // the sender has left its loop: queueing is pointless
  std::atomic<std::int64_t> dropped_{0};
  std::atomic<bool> connected_{false};
  std::atomic<int> fd_{-1};
  std::thread sender_;
  std::unique_ptr<TensorBoardSink> tb_;  // fed by send() from any thread; closed last
};

}  // namespace ddpdesk
