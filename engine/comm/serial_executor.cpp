#include "serial_executor.h"

namespace ddpdesk {

SerialExecutor::SerialExecutor() : thread_([this] { loop(); }) {}

SerialExecutor::~SerialExecutor() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    quit_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

std::uint64_t SerialExecutor::submit(std::function<void()> job) {
  std::uint64_t ticket;
  {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_.push_back(std::move(job));
    ticket = ++submitted_;
  }
  cv_.notify_all();
  return ticket;
}

void SerialExecutor::wait(std::uint64_t ticket) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return done_ >= ticket || error_; });
  if (error_) std::rethrow_exception(error_);
}

void SerialExecutor::loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return quit_ || !jobs_.empty(); });
    if (jobs_.empty()) return;  // quit requested and nothing left
    auto job = std::move(jobs_.front());
    jobs_.pop_front();
    lock.unlock();
    std::exception_ptr failure;
    try {
      if (!error_) job();  // after a failure the collectives are out of step: skip the rest
    } catch (...) {
      failure = std::current_exception();
    }
    lock.lock();
    if (failure && !error_) error_ = failure;
    ++done_;
    cv_.notify_all();
  }
}

}  // namespace ddpdesk
