// TensorBoard event files for one rank, written from its wire messages (--tensorboard):
//   <dir>/rank-<r>/  this rank's loss, samples_per_s, lr, step breakdown (time_ms/...) and gauges
//                    (system metrics, tag = the gauge's name)
//   <dir>/global/    rank 0 only: the global loss and the validation loss and accuracy
// x is the optimizer step, wall_time the real time at which the message was sent.
// The training thread pays a copy into a queue under a mutex, no system call: a thread of the
// sink's own wakes a few times a second, encodes and writes. It has its own thread rather than
// the socket's sender because a stalled monitor blocks that one, and the event files, like the
// metrics file, should get every message whatever the monitor does.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "wire.h"

namespace ddpdesk {

namespace tb {
class EventFileWriter;
}

class TensorBoardSink {
 public:
  struct Options {
    double wake_interval_s = 0.2;   // how often the thread looks for messages
    double flush_interval_s = 1.0;  // how often buffered records go to the files
    std::size_t queue_limit = 1 << 16;
  };
  // Creates the directories and the event files. Throws std::runtime_error naming the path when
  // it cannot.
  TensorBoardSink(const std::string& dir, int rank, Options o);
  TensorBoardSink(const std::string& dir, int rank) : TensorBoardSink(dir, rank, Options()) {}
  ~TensorBoardSink();
  TensorBoardSink(const TensorBoardSink&) = delete;
  TensorBoardSink& operator=(const TensorBoardSink&) = delete;

  // Any thread. Messages without scalars (hello, event, error) are not even queued.
  void push(const wire::Message& m);
  // Writes everything queued, closes the files; later pushes are ignored.
  void close();
  // Messages lost to a full queue (the disk far slower than training).
  std::int64_t dropped() const;

 private:
  struct Item {
    double wall_time;
    wire::Message message;
  };
  void loop();
  void write(const Item& item);

  Options opts_;
  std::unique_ptr<tb::EventFileWriter> rank_file_;
  std::unique_ptr<tb::EventFileWriter> global_file_;  // rank 0 only
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Item> queue_;
  bool closing_ = false;
  std::int64_t dropped_ = 0;
  std::thread thread_;
};

}  // namespace ddpdesk
