// One background thread that runs jobs strictly in submission order. Gloo collectives block, so
// gradient buckets run here while backward keeps computing on the training thread; the order is
// the same on every rank, which is what keeps the ranks' collectives matched.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

namespace ddpdesk {

class SerialExecutor {
 public:
  SerialExecutor();
  ~SerialExecutor();
  SerialExecutor(const SerialExecutor&) = delete;
  SerialExecutor& operator=(const SerialExecutor&) = delete;

  // Returns a ticket; wait(ticket) returns when that job (and all before it) ran. A job's
  // exception is rethrown by the next wait().
  std::uint64_t submit(std::function<void()> job);
  void wait(std::uint64_t ticket);

 private:
  void loop();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  std::uint64_t submitted_ = 0;
  std::uint64_t done_ = 0;
  std::exception_ptr error_;
  bool quit_ = false;
  std::thread thread_;
};

}  // namespace ddpdesk
