// What a rank's run tells (the Trainer's state: trainer_impl.h): the step message with its loss,
// speed and time breakdown, validation, checkpoints, the progress line and the summary line.
#include <cstdio>

#include "run_report.h"
#include "step_diagnostics.h"
#include "telemetry.h"
#include "trainer_impl.h"

namespace ddpdesk {

void Trainer::send(const wire::Message& m) {
  if (o_.telemetry) o_.telemetry->send(m);
}

wire::Event Trainer::event(const char* name) {
  wire::Event e;
  e.rank = env_.rank;
  e.event = name;
  e.epoch = static_cast<int>(pos_.epoch);
  e.step = pos_.step;
  e.time = run_time();
  return e;
}

void Trainer::send_step(const torch::Tensor& window_loss, std::int64_t local_n, double global_sum,
                        std::int64_t global_n) {
  wire::Step s;
  s.rank = env_.rank;
  s.epoch = static_cast<int>(pos_.epoch);
  s.step = pos_.step;
  s.loss = window_loss.item<double>() / static_cast<double>(local_n);
  s.global_loss = global_sum / static_cast<double>(global_n);
  s.samples = pos_.samples;
  s.lr = spec_.lr;
  s.time = run_time();
  const double dt = s.time - last_log_time_;
  s.samples_per_s = dt > 0 ? static_cast<double>(pos_.samples - last_log_samples_) / dt : 0;
  last_log_time_ = s.time;
  last_log_samples_ = pos_.samples;
  s.times = clock_.take();
  if (o_.settings.debug_steps) {
    s.collectives = comm_ ? comm_->collectives() : 0;
    s.param_hash = hash_tensors(params_);
    if (!buffers_.empty()) s.buffer_hash = hash_tensors(buffers_);
  }
  last_global_loss_ = s.global_loss;
  send(s);
  if (scaler_.enabled() && env_.rank == 0)
    for (const wire::Gauge& g : scaler_.gauges(s.time, s.step)) send(g);
  progress(s);
}

void Trainer::validate() {
  const Dataset* data = task_.eval_data();
  if (!data) return;
  const double t = now_s();
  eval_ = evaluate(task_, *data, device_, comm_.get(), env_.rank, env_.world, precision_);
  if (env_.rank != 0) return;
  wire::Eval e;
  e.rank = 0;
  e.epoch = static_cast<int>(pos_.epoch);
  e.step = pos_.step;
  e.loss = eval_.loss;
  if (eval_.accuracy >= 0) e.accuracy = eval_.accuracy;
  e.samples = eval_.samples;
  e.time = run_time();
  send(e);
  std::fprintf(stderr, "ddpdesk-worker[0] eval epoch %lld: loss %.5g%s (%.2fs)\n",
               static_cast<long long>(pos_.epoch + 1), eval_.loss,
               eval_.accuracy >= 0 ? (" accuracy " + std::to_string(eval_.accuracy)).c_str() : "",
               now_s() - t);
}

TrainPosition Trainer::checkpoint_position() const {
  TrainPosition p = pos_;
  p.train_seconds = run_time();
  if (scaler_.enabled()) {
    p.loss_scale = scaler_.state().scale;
    p.scale_growth = scaler_.state().growth;
    p.skipped_steps = scaler_.state().skipped;
  }
  return p;
}

void Trainer::write_checkpoint() {
  const TrainPosition p = checkpoint_position();
  const RunCheckpoints::Written w = checkpoints_.write(task_, *optimizer_, p, now_s());
  auto e = event("checkpoint");
  e.path = w.checkpoint;
  send(e);
  if (!w.model.empty()) {
    auto m = event("model");
    m.path = w.model;
    send(m);
  }
}

void Trainer::progress(const wire::Step& s) {
  if (env_.rank != 0) return;
  const double t = now_s();
  if (t - last_progress_ < 1.0 && pos_.window != plan_.windows()) return;
  last_progress_ = t;
  ProgressFigures p;
  p.epoch = pos_.epoch;
  p.epochs = spec_.epochs;
  p.step = s.step;
  p.total_steps = plan_.windows() * spec_.epochs;
  p.loss = s.loss;
  p.global_loss = s.global_loss;
  p.samples_per_s = s.samples_per_s;
  std::fprintf(stderr, "%s\n", progress_line(p).c_str());
}

void Trainer::summary() {
  if (env_.rank != 0) return;
  SummaryFigures f;
  f.task = spec_.task;
  f.device = spec_.device;
  f.world = env_.world;
  f.comm = comm_ ? comm_->backend() : "none";
  f.batch = plan_.batch;  // the fitted micro-batch under --fit-batch
  f.accum = plan_.accum;
  f.epochs = spec_.epochs;
  f.steps = pos_.step;
  f.trained_samples = pos_.samples - resumed_samples_;
  f.train_seconds = train_time_;
  f.final_loss = last_global_loss_;
  f.has_eval = task_.eval_data() != nullptr;
  f.eval_loss = eval_.loss;
  f.accuracy = task_.classification() ? eval_.accuracy : -1;
  std::printf("%s\n", summary_line(f).c_str());
  std::fflush(stdout);
}

}  // namespace ddpdesk
