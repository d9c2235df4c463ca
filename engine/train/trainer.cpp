// The training loop (the Trainer's state and a map of its files: trainer_impl.h): run()'s
// never-throwing outcome, the epochs, one optimizer step, the coordinated stop.
#include "trainer.h"

#include <cmath>
#include <cstdio>

#include "dataset.h"
#include "device_batch.h"
#include "gpu_memory.h"
#include "replica_sync.h"
#include "step_diagnostics.h"
#include "trainer_impl.h"

namespace ddpdesk {

TrainResult Trainer::run() {
  TrainResult r;
  try {
    r = train();
  } catch (const c10::OutOfMemoryError&) {
    r = out_of_memory();
  } catch (const PeerLost& e) {
    const std::string what = e.what();
    r = {TrainResult::Failed, what.substr(0, what.find('\n'))};
    r.peer_lost = e.peer();
  } catch (const std::exception& e) {
    if (is_out_of_memory(e)) {  // raised in a TorchScript module: its interpreter's error
      r = out_of_memory();
    } else {
      const std::string what = e.what();
      r = {TrainResult::Failed, what.substr(0, what.find('\n'))};
    }
  } catch (...) {
    r = {TrainResult::Failed, "unknown error"};
  }
  r.step = pos_.step;
  r.epoch = static_cast<int>(pos_.epoch);
  r.checkpoint = checkpoints_.last();
  return r;
}

TrainResult Trainer::train() {
  t0_ = now_s();
  const std::int64_t total_steps = plan_.windows() * spec_.epochs;
  auto started = event("started");
  started.total_steps = total_steps;
  if (!resumed_from_.empty()) started.detail = "resumed from " + resumed_from_;
  if (!fit_line_.empty()) started.detail += (started.detail.empty() ? "" : "; ") + fit_line_;
  send(started);
  for (; pos_.epoch < spec_.epochs; ++pos_.epoch, pos_.window = 0) {
    auto indices = distributed_indices(sampler_, pos_.epoch);
    if (graphed_) graphed_->set_order(indices);
    for (; pos_.window < plan_.windows();) {
      StepOutcome out = train_window(indices);
      if (out == StepOutcome::NonFinite)
        return {TrainResult::Failed, "non-finite loss at step " + std::to_string(pos_.step) +
                                         " (epoch " + std::to_string(pos_.epoch + 1) +
                                         "): stopping the run"};
      if (out == StepOutcome::Stop) return stop();
    }
    validate();
    if (env_.rank == 0) send(event("epoch"));
  }
  if (env_.rank == 0 && checkpoints_.enabled()) write_checkpoint();
  send(event("finished"));
  summary();
  return {TrainResult::Finished, {}};
}

Trainer::StepOutcome Trainer::train_window(const std::vector<std::int64_t>& indices) {
  const std::int64_t m0 = plan_.first_micro(pos_.window);
  const std::int64_t m1 = plan_.end_micro(pos_.window);
  const std::int64_t local_n = plan_.window_samples(pos_.window);
  const std::int64_t global_n = local_n * env_.world;  // every rank's window is the same size
  const double scale = 1.0 / static_cast<double>(global_n);
  const double t_window = now_s();
  clock_.begin();

  if (seed_rng_) torch::manual_seed(step_seed(spec_.seed, env_.rank, pos_.step));
  torch::Tensor window_loss = graphed_ ? graphed_window(m0, m1, scale)
                                       : torch::zeros({}, torch::TensorOptions().device(device_));
  for (std::int64_t m = m0; m < m1 && !graphed_; ++m) {
    auto first = indices.begin() + plan_.micro_begin(m);
    auto last = indices.begin() + plan_.micro_end(m);
    micro_n_ = last - first;  // for an out-of-memory's line (the batch's copy to the GPU too)
    Batch batch =
        to_device(task_.train_data().batch(std::vector<std::int64_t>(first, last)), device_);
    faults_.slow_data();
    faults_.hold_data_loading(pos_.step + 1);
    faults_.out_of_memory(micro_n_, pos_.step + 1);
    clock_.mark(StepClock::Data);
    torch::Tensor loss = faults_.poison_loss(
        task_.loss_sum(precision_forward(task_, batch, precision_, device_), batch), pos_.step + 1);
    window_loss += loss.detach();
    clock_.mark(StepClock::Forward);
    const bool boundary = m + 1 == m1;
    if (boundary) set_extras(window_loss);
    sync_->set_boundary(boundary);
    (loss * (scale * scaler_.scale())).backward();
    clock_.mark(StepClock::Backward);
  }
  micro_n_ = 0;
  if (graphed_) {  // the buckets' hooks stayed disarmed: every bucket is reduced now
    set_extras(window_loss);
    sync_->set_boundary(true);
  }
  sync_->finish_window();
  clock_.mark(StepClock::Comm);
  // fp16: every rank holds the same reduced gradients, so every rank skips alike.
  const bool finite = scaler_.unscale(sync_->gradient_buffers());
  if (finite && graphed_) {
    graphed_->optimizer_step();
    if (const std::string line = graphed_->take_line(); !line.empty() && env_.rank == 0)
      std::fprintf(stderr, "ddpdesk-worker[0] %s\n", line.c_str());
  } else if (finite) {
    optimizer_->step();
  }
  clock_.mark(StepClock::Optimizer);
  if (comm_) broadcast_buffers(*comm_, buffers_);

  ++pos_.window;
  ++pos_.step;
  pos_.samples += global_n;
  if (scaler_.enabled()) {
    scaler_.update(finite);
    if (!finite && env_.rank == 0)
      std::fprintf(stderr, "ddpdesk-worker[0] %s\n", scaler_.skipped_line(pos_.step).c_str());
  }
  // On CUDA, reading values back costs a device sync: do it on log steps only (every rank alike,
  // so the stop agreement still holds). On CPU it is free, so every step.
  const bool log_step = pos_.step % spec_.log_interval == 0 || pos_.window == plan_.windows();
  const bool check = device_.is_cpu() || log_step;
  StepOutcome outcome = StepOutcome::Ok;
  double global_sum = 0;
  if (check) {
    torch::Tensor ex = sync_->extras().to(torch::kCPU);
    if (comm_) comm_->throw_if_failed();
    global_sum = ex[GradSync::kLossSum].item<double>();
    const double votes = ex[GradSync::kStopVotes].item<double>();
    if (!std::isfinite(global_sum))
      outcome = StepOutcome::NonFinite;
    else if (votes > 0)
      outcome = StepOutcome::Stop;
  }
  clock_.mark(StepClock::Comm);
  sync_->zero_grads();
  clock_.mark(StepClock::Optimizer);
  // The message goes out once the step's parts are all known; building and sending it counts
  // as telemetry of the next interval.
  if (check && (log_step || outcome != StepOutcome::Ok)) {
    clock_.end();
    send_step(window_loss, local_n, global_sum, global_n);
    clock_.mark(StepClock::Telemetry);
  } else {
    clock_.end();
  }
  train_time_ += now_s() - t_window;
  if (outcome == StepOutcome::Ok && env_.rank == 0 && checkpoints_.due(pos_.step, now_s()))
    write_checkpoint();
  return outcome;
}

void Trainer::set_extras(const torch::Tensor& window_loss) {
  torch::Tensor extras = sync_->extras();
  extras[GradSync::kLossSum].copy_(window_loss);
  extras[GradSync::kStopVotes].fill_(o_.stop_requested && o_.stop_requested->load() ? 1 : 0);
}

torch::Tensor Trainer::graphed_window(std::int64_t m0, std::int64_t m1, double scale) {
  graphed_->begin_window(scale * scaler_.scale());
  for (std::int64_t m = m0; m < m1; ++m) {
    micro_n_ = plan_.micro_end(m) - plan_.micro_begin(m);
    faults_.out_of_memory(micro_n_, pos_.step + 1);
    graphed_->micro_step(plan_.micro_begin(m), plan_.micro_end(m));
    clock_.mark(StepClock::Backward);
  }
  return graphed_->window_loss();
}

TrainResult Trainer::stop() {
  auto e = event("stopping");
  e.detail = "stop requested; agreed at step " + std::to_string(pos_.step);
  send(e);
  if (env_.rank == 0) {
    if (checkpoints_.enabled()) {
      write_checkpoint();
    } else {
      std::fprintf(stderr, "ddpdesk-worker[0] stopping without a checkpoint (no --run-dir)\n");
    }
  }
  send(event("stopped"));
  std::fprintf(stderr, "ddpdesk-worker[%d] stopped at step %lld\n", env_.rank,
               static_cast<long long>(pos_.step));
  return {TrainResult::Stopped, {}};
}

TrainingRun::TrainingRun(const TrainerOptions& options)
    : trainer_(std::make_unique<Trainer>(options)) {}
TrainingRun::~TrainingRun() = default;

TrainResult TrainingRun::run() {
  return trainer_->run();
}

}  // namespace ddpdesk
