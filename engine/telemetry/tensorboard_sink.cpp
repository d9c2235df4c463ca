#include "tensorboard_sink.h"

#include <chrono>

#include "event_writer.h"

namespace ddpdesk {

TensorBoardSink::TensorBoardSink(const std::string& dir, int rank, Options o) : opts_(o) {
  rank_file_ = std::make_unique<tb::EventFileWriter>(dir + "/rank-" + std::to_string(rank),
                                                     opts_.flush_interval_s);
  if (rank == 0)
    global_file_ = std::make_unique<tb::EventFileWriter>(dir + "/global", opts_.flush_interval_s);
  thread_ = std::thread([this] { loop(); });
}

TensorBoardSink::~TensorBoardSink() {
  close();
}

void TensorBoardSink::push(const wire::Message& m) {
  if (!std::holds_alternative<wire::Step>(m) && !std::holds_alternative<wire::Eval>(m) &&
      !std::holds_alternative<wire::Gauge>(m))
    return;
  const double wall = tb::unix_time_now();
  std::lock_guard<std::mutex> lock(mu_);
  if (closing_) return;
  if (queue_.size() >= opts_.queue_limit) {
    ++dropped_;
    return;
  }
  // No notify: the thread wakes on its own timer, so a step costs no futex call.
  queue_.push_back({wall, m});
}

std::int64_t TensorBoardSink::dropped() const {
  std::lock_guard<std::mutex> lock(mu_);
  return dropped_;
}

void TensorBoardSink::loop() {
  std::deque<Item> batch;
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait_for(lock, std::chrono::duration<double>(opts_.wake_interval_s),
                 [&] { return closing_; });
    batch.swap(queue_);  // O(1): a push never waits for the batch to be taken
    const bool last = closing_;
    lock.unlock();
    for (const Item& item : batch) write(item);
    batch.clear();
    if (last) {
      rank_file_->close();
      if (global_file_) global_file_->close();
      return;
    }
    rank_file_->flush_if_due();
    if (global_file_) global_file_->flush_if_due();
    lock.lock();
  }
}

void TensorBoardSink::write(const Item& item) {
  const double wall = item.wall_time;
  tb::EventFileWriter& own = *rank_file_;
  if (const auto* s = std::get_if<wire::Step>(&item.message)) {
    own.add_scalar("loss", s->loss, s->step, wall);
    own.add_scalar("samples_per_s", s->samples_per_s, s->step, wall);
    own.add_scalar("lr", s->lr, s->step, wall);
    if (s->times) {
      const wire::StepTimes& t = *s->times;
      const std::pair<const char*, double> parts[] = {{"time_ms/data", t.data},
                                                      {"time_ms/forward", t.forward},
                                                      {"time_ms/backward", t.backward},
                                                      {"time_ms/comm", t.comm},
                                                      {"time_ms/optimizer", t.optimizer},
                                                      {"time_ms/telemetry", t.telemetry},
                                                      {"time_ms/step", t.step}};
      for (const auto& [tag, ms] : parts) own.add_scalar(tag, ms, s->step, wall);
    }
    if (global_file_) global_file_->add_scalar("loss", s->global_loss, s->step, wall);
  } else if (const auto* e = std::get_if<wire::Eval>(&item.message)) {
    if (!global_file_) return;  // validation is global; rank 0 reports it
    global_file_->add_scalar("validation/loss", e->loss, e->step, wall);
    if (e->accuracy) global_file_->add_scalar("validation/accuracy", *e->accuracy, e->step, wall);
  } else if (const auto* g = std::get_if<wire::Gauge>(&item.message)) {
    own.add_scalar(g->name, g->value, g->step, wall);
  }
}

void TensorBoardSink::close() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closing_ && !thread_.joinable()) return;
    closing_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

}  // namespace ddpdesk
