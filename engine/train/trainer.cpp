#include "trainer.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <thread>

#include <torch/utils.h>

#include "batch_fit.h"
#include "checkpoint.h"
#include "communicator.h"
#include "communicator_choice.h"
#include "dataset.h"
#include "device_batch.h"
#include "evaluation.h"
#include "fault_injection.h"
#include "fused_adam.h"
#include "gpu_memory.h"
#include "grad_sync.h"
#include "mixed_precision.h"
#include "oom_report.h"
#include "replica_sync.h"
#include "resume.h"
#include "run_checkpoints.h"
#include "run_report.h"
#include "sampler.h"
#include "step_clock.h"
#include "step_diagnostics.h"
#include "task.h"
#include "telemetry.h"
#include "window_plan.h"

namespace ddpdesk {
namespace {

double now_s() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

}  // namespace

// The training loop and the run's bookkeeping; everything with a purpose of its own lives in
// the files named in trainer.h. In this file, in order: run() (the never-throwing outcome),
// set_up() and --fit-batch, an out-of-memory's ending, train() (epochs), train_window() (one
// optimizer step: micro-batches, sync, fp16's scale, the stop vote), the step message,
// validation, checkpoints, the stop, the progress and summary lines, then the members.
class Trainer {
 public:
  explicit Trainer(const TrainerOptions& o)
      : o_(o),
        spec_(o.spec),
        env_(o.env),
        task_(*o.task),
        device_(o.device),
        faults_(o.settings.faults, o.env.rank),
        precision_(parse_precision(o.spec.precision)),
        scaler_(precision_ == Precision::FP16),
        checkpoints_(o.spec, now_s(), faults_.kill_in_checkpoint()) {
    set_up();
  }

  TrainResult run() {
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

 private:
  void set_up() {
    const Dataset& train = task_.train_data();
    if (train.size() < env_.world)
      throw BadInput({"dataset_size", std::to_string(train.size()),
                      "must be at least the world size " + std::to_string(env_.world)});
    sampler_.dataset_size = train.size();
    sampler_.world = env_.world;
    sampler_.rank = env_.rank;
    sampler_.seed = spec_.seed;
    plan_.per_rank = samples_per_rank(sampler_);
    plan_.batch = spec_.batch_size;
    plan_.accum = spec_.accum_steps;

    params_ = task_.parameters();
    buffers_ = task_.buffers();
    seed_rng_ = task_.draws_random_numbers();
    AdamOptions adam;
    adam.lr = spec_.lr;
    adam.weight_decay = spec_.weight_decay;
    optimizer_ = std::make_unique<FusedAdam>(params_, adam);

    if (!spec_.resume.empty()) {
      ResumePoint from = resume_run(spec_, task_, *optimizer_);
      pos_ = from.position;
      resumed_from_ = from.checkpoint;
      if (pos_.loss_scale > 0)
        scaler_.restore({pos_.loss_scale, pos_.scale_growth, pos_.skipped_steps});
      resumed_samples_ = last_log_samples_ = pos_.samples;
      last_log_time_ = pos_.train_seconds;
    }

    const bool cuda = device_.is_cuda();
    CommOptions co;
    co.env = env_;
    co.timeout_s = spec_.collective_timeout;
    co.cuda_device = cuda ? device_.index() : -1;
    co.gloo_socket_ifname = o_.settings.gloo_socket_ifname;
    co.gloo_mode = o_.settings.gloo_mode;
    co.stop = o_.stop_requested;
    comm_ = make_communicator(choose_transport(env_, cuda, o_.settings), co);
    if (comm_) {
      broadcast_parameters(*comm_, params_);
      broadcast_buffers(*comm_, buffers_);
    }
    const bool overlap =
        overlap_communication(env_, cuda, o_.settings, std::thread::hardware_concurrency());
    sync_ = std::make_unique<GradSync>(params_, comm_.get(), overlap);
    if (spec_.fit_batch) fit_micro_batch();
  }

  // --fit-batch (batch_fit.h): the micro-batch and accumulation every rank agreed on. A resumed
  // run fits again (it may run on other GPUs); the windows hold the same samples either way.
  void fit_micro_batch() {
    FitTrial t;
    t.task = &task_;
    t.device = device_;
    const auto indices = distributed_indices(sampler_, pos_.epoch);
    t.indices = &indices;
    t.sync = sync_.get();
    t.faults = &faults_;
    t.step = pos_.step + 1;
    t.comm = comm_.get();
    t.rank = env_.rank;
    t.world = env_.world;
    t.precision = precision_;
    const BatchFit fit = fit_batch(t, spec_.batch_size, spec_.accum_steps);
    plan_.batch = fit.micro;
    plan_.accum = fit.accum;
    fit_line_ = fit.line;
    if (env_.rank == 0) std::fprintf(stderr, "ddpdesk-worker[0] %s\n", fit_line_.c_str());
  }

  // An out-of-memory in a forward or backward leaves the parameters and optimizer state those of
  // the last optimizer step, equal on every rank: this rank writes that step's checkpoint itself
  // (its peers fail when it is gone). Anywhere else (the optimizer) nothing is claimed.
  TrainResult out_of_memory() {
    OomReport o;
    o.rank = env_.rank;
    o.micro = micro_n_;
    o.step = pos_.step + 1;
    if (const auto m = gpu_memory(device_)) o.peak = m->peak;
    o.fit_batch = spec_.fit_batch;
    if (micro_n_ == 0) {
      o.checkpoint = "not in a forward or backward, so no checkpoint";
    } else if (!checkpoints_.enabled()) {
      o.checkpoint = "no checkpoint (no --run-dir)";
    } else if (pos_.step == 0) {
      o.checkpoint = "no step finished, so no checkpoint";
    } else {
      o.checkpoint = checkpoints_.write_alone(task_, *optimizer_, checkpoint_position());
      if (checkpoints_.last() == checkpoint_path(spec_.run_dir, pos_.step)) {
        auto e = event("checkpoint");
        e.path = checkpoints_.last();
        send(e);
      }
    }
    TrainResult failed{TrainResult::Failed, oom_line(o)};
    failed.out_of_memory = true;
    return failed;
  }

  void send(const wire::Message& m) {
    if (o_.telemetry) o_.telemetry->send(m);
  }
  double run_time() const { return pos_.train_seconds + (now_s() - t0_); }

  wire::Event event(const char* name) {
    wire::Event e;
    e.rank = env_.rank;
    e.event = name;
    e.epoch = static_cast<int>(pos_.epoch);
    e.step = pos_.step;
    e.time = run_time();
    return e;
  }

  TrainResult train() {
    t0_ = now_s();
    const std::int64_t total_steps = plan_.windows() * spec_.epochs;
    auto started = event("started");
    started.total_steps = total_steps;
    if (!resumed_from_.empty()) started.detail = "resumed from " + resumed_from_;
    if (!fit_line_.empty()) started.detail += (started.detail.empty() ? "" : "; ") + fit_line_;
    send(started);
    for (; pos_.epoch < spec_.epochs; ++pos_.epoch, pos_.window = 0) {
      auto indices = distributed_indices(sampler_, pos_.epoch);
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

  enum class StepOutcome { Ok, Stop, NonFinite };

  StepOutcome train_window(const std::vector<std::int64_t>& indices) {
    const std::int64_t m0 = plan_.first_micro(pos_.window);
    const std::int64_t m1 = plan_.end_micro(pos_.window);
    const std::int64_t local_n = plan_.window_samples(pos_.window);
    const std::int64_t global_n = local_n * env_.world;  // every rank's window is the same size
    const double scale = 1.0 / static_cast<double>(global_n);
    const double t_window = now_s();
    clock_.begin();

    if (seed_rng_) torch::manual_seed(step_seed(spec_.seed, env_.rank, pos_.step));
    torch::Tensor window_loss = torch::zeros({}, torch::TensorOptions().device(device_));
    for (std::int64_t m = m0; m < m1; ++m) {
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
          task_.loss_sum(precision_forward(task_, batch, precision_, device_), batch),
          pos_.step + 1);
      window_loss += loss.detach();
      clock_.mark(StepClock::Forward);
      const bool boundary = m + 1 == m1;
      if (boundary) {
        // Contributions that ride along with the last gradient bucket's allreduce.
        torch::Tensor extras = sync_->extras();
        extras[GradSync::kLossSum].copy_(window_loss);
        extras[GradSync::kStopVotes].fill_(o_.stop_requested && o_.stop_requested->load() ? 1 : 0);
      }
      sync_->set_boundary(boundary);
      (loss * (scale * scaler_.scale())).backward();
      clock_.mark(StepClock::Backward);
    }
    micro_n_ = 0;
    sync_->finish_window();
    clock_.mark(StepClock::Comm);
    // fp16: every rank holds the same reduced gradients, so every rank skips alike.
    const bool finite = scaler_.unscale(sync_->gradient_buffers());
    if (finite) optimizer_->step();
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

  void send_step(const torch::Tensor& window_loss, std::int64_t local_n, double global_sum,
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

  void validate() {
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

  // What a checkpoint keeps of where training stands: the position, the clock, fp16's scale.
  TrainPosition checkpoint_position() const {
    TrainPosition p = pos_;
    p.train_seconds = run_time();
    if (scaler_.enabled()) {
      p.loss_scale = scaler_.state().scale;
      p.scale_growth = scaler_.state().growth;
      p.skipped_steps = scaler_.state().skipped;
    }
    return p;
  }

  void write_checkpoint() {
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

  TrainResult stop() {
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

  void progress(const wire::Step& s) {
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

  // One machine-readable line on stdout for scripts and benchmarks.
  void summary() {
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

  TrainerOptions o_;
  RunSpec spec_;
  RankEnv env_;
  Task& task_;
  torch::Device device_;
  FaultInjection faults_;
  Precision precision_;
  LossScaler scaler_;
  RunCheckpoints checkpoints_;
  SamplerOptions sampler_;
  WindowPlan plan_;
  std::vector<torch::Tensor> params_;
  std::vector<NamedTensor> buffers_;
  bool seed_rng_ = false;
  StepClock clock_;
  std::unique_ptr<FusedAdam> optimizer_;
  std::unique_ptr<Communicator> comm_;
  std::unique_ptr<GradSync> sync_;  // declared after comm_: destroyed first
  TrainPosition pos_;
  std::string resumed_from_;
  std::string fit_line_;      // --fit-batch's outcome, for the started event
  std::int64_t micro_n_ = 0;  // samples of the micro-batch in forward or backward; 0: none
  std::int64_t resumed_samples_ = 0;
  double t0_ = 0, train_time_ = 0, last_progress_ = 0, last_log_time_ = 0;
  std::int64_t last_log_samples_ = 0;
  double last_global_loss_ = 0;
  EvalFigures eval_;
};

TrainingRun::TrainingRun(const TrainerOptions& options)
    : trainer_(std::make_unique<Trainer>(options)) {}
TrainingRun::~TrainingRun() = default;

TrainResult TrainingRun::run() {
  return trainer_->run();
}

}  // namespace ddpdesk
