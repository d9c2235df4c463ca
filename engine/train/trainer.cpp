#include "trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <stdexcept>
#include <thread>

#include <torch/cuda.h>
#include <torch/utils.h>

#include "checkpoint.h"
#include "communicator.h"
#include "dataset.h"
#include "fused_adam.h"
#include "grad_sync.h"
#include "sampler.h"
#include "step_clock.h"
#include "task.h"
#include "telemetry.h"
#include "window_plan.h"

namespace ddpdesk {
namespace {

double now_s() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

std::string hash_params(const std::vector<torch::Tensor>& params) {
  std::uint64_t h = 1469598103934665603ULL;  // FNV-1a over every parameter's bytes
  for (const auto& p : params) {
    torch::Tensor c = p.detach().to(torch::kCPU).contiguous();
    auto* bytes = static_cast<const unsigned char*>(c.data_ptr());
    for (std::int64_t i = 0, n = c.numel() * c.element_size(); i < n; ++i) {
      h ^= bytes[i];
      h *= 1099511628211ULL;
    }
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

Batch to_device(Batch b, const torch::Device& d) {
  if (d.is_cpu()) return b;
  b.input = b.input.to(d, /*non_blocking=*/true);
  if (b.lengths.defined()) b.lengths = b.lengths.to(d, true);
  b.target = b.target.to(d, true);
  return b;
}

// CPU collectives: shared memory when every rank is on this machine (torchrun's
// LOCAL_WORLD_SIZE == WORLD_SIZE), Gloo over TCP otherwise. DDPDESK_COMM=gloo|shm overrides.
std::unique_ptr<Communicator> make_cpu_communicator(const CommOptions& co) {
  const char* forced = std::getenv("DDPDESK_COMM");
  const std::string choice = forced && *forced ? forced : "auto";
  if (choice == "shm" || (choice == "auto" && co.env.local_world == co.env.world))
    return make_shm_communicator(co);
  return make_gloo_communicator(co);
}

class Trainer {
 public:
  explicit Trainer(const TrainerOptions& o)
      : o_(o), spec_(o.spec), env_(o.env), task_(*o.task), device_(o.device) {
    // Test-only fault injection: a NaN loss on rank 0 at this optimizer step.
    if (const char* f = std::getenv("DDPDESK_FAULT_NAN_AT_STEP")) nan_at_step_ = std::atoll(f);
    // Test-only fault: "RANK:MS" makes that rank's data loading MS milliseconds slower per
    // micro-step, a straggler whose cause the step breakdown must show.
    if (const char* f = std::getenv("DDPDESK_FAULT_SLOW_RANK")) {
      const char* colon = std::strchr(f, ':');
      if (colon && std::atoi(f) == env_.rank) slow_ms_ = std::atof(colon + 1);
    }
  }

  TrainResult run() {
    setup();
    return train();
  }
  // Where the run stood when it ended, for the rank's exit record.
  void describe_end(TrainResult* r) const {
    r->step = pos_.step;
    r->epoch = static_cast<int>(pos_.epoch);
    r->checkpoint = last_checkpoint_path_;
  }

 private:
  void setup() {
    const Dataset& train = task_.train_data();
    if (train.size() < env_.world)
      throw BadInput("dataset_size", "invalid --dataset-size '" + std::to_string(train.size()) +
                                         "': must be at least the world size " +
                                         std::to_string(env_.world));
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
      std::string path;
      try {
        path = resolve_checkpoint(spec_.resume);
        load_checkpoint(path, task_.state(), *optimizer_, pos_);
      } catch (const std::runtime_error& e) {
        throw BadInput("resume", e.what());  // a bad --resume is bad input
      }
      resumed_from_ = path;
      resumed_samples_ = last_log_samples_ = pos_.samples;
      last_log_time_ = pos_.train_seconds;
      if (pos_.epoch > spec_.epochs || (pos_.epoch == spec_.epochs && pos_.window > 0))
        throw BadInput("epochs", "invalid --epochs '" + std::to_string(spec_.epochs) +
                                     "': the checkpoint is already past it");
    }

    // DDPDESK_FORCE_COMM=1 builds the communicator even for one rank, so a one-GPU machine can
    // still exercise the NCCL path (tests/gpu).
    const char* force = std::getenv("DDPDESK_FORCE_COMM");
    if (env_.world > 1 || (force && std::string(force) == "1")) {
      CommOptions co;
      co.env = env_;
      co.timeout_s = spec_.collective_timeout;
      co.cuda_device = device_.is_cuda() ? device_.index() : -1;
      comm_ = device_.is_cuda() ? make_nccl_communicator(co) : make_cpu_communicator(co);
      broadcast_parameters();
      broadcast_buffers();
    }
    sync_ = std::make_unique<GradSync>(params_, comm_.get(), overlap_communication());
  }

  // Overlapping the allreduce with backward needs a core for the comm thread: NCCL always has
  // one (the GPU), CPU ranks only when this machine has at least two cores per rank (measured:
  // on 2 cores with 2 ranks, inline reduction is ~1.5x faster). DDPDESK_OVERLAP=0|1 overrides.
  bool overlap_communication() const {
    if (const char* ov = std::getenv("DDPDESK_OVERLAP"); ov && *ov) return std::string(ov) != "0";
    if (device_.is_cuda()) return true;
    return std::thread::hardware_concurrency() >= 2u * static_cast<unsigned>(env_.local_world);
  }

  // Rank 0's parameters win, so every rank starts bitwise equal (one collective for all).
  void broadcast_parameters() {
    torch::NoGradGuard no_grad;
    std::vector<torch::Tensor> flat;
    for (auto& p : params_) flat.push_back(p.detach().reshape(-1));
    torch::Tensor all = torch::cat(flat).contiguous();
    comm_->broadcast(all, 0);
    std::int64_t off = 0;
    for (auto& p : params_) {
      p.detach().copy_(all.narrow(0, off, p.numel()).view(p.sizes()));
      off += p.numel();
    }
  }

  // PyTorch DDP's default (broadcast_buffers=True): rank 0's buffers (BatchNorm running
  // statistics) win. DDP sends them before the first forward of each window; sending them after
  // the window's last forward instead is the same for every later forward, and also leaves the
  // ranks equal for validation, checkpoints and the step's buffer hash. One broadcast per dtype.
  void broadcast_buffers() {
    if (!comm_ || buffers_.empty()) return;
    torch::NoGradGuard no_grad;
    std::map<torch::ScalarType, std::vector<torch::Tensor>> by_type;
    for (const auto& b : buffers_) by_type[b.tensor.scalar_type()].push_back(b.tensor);
    for (auto& [type, group] : by_type) {
      std::vector<torch::Tensor> flat;
      for (const auto& t : group) flat.push_back(t.reshape(-1));
      torch::Tensor all = torch::cat(flat).contiguous();
      comm_->broadcast(all, 0);
      std::int64_t off = 0;
      for (auto& t : group) {
        t.copy_(all.narrow(0, off, t.numel()).view(t.sizes()));
        off += t.numel();
      }
    }
  }

  // Dropout and any other randomness in the model: a stream per rank (masks differ between
  // ranks, as they do under PyTorch DDP) and per optimizer step, so a resumed run draws exactly
  // what an uninterrupted one would, without carrying every rank's generator state.
  void seed_step_rng() const {
    std::uint64_t x = static_cast<std::uint64_t>(spec_.seed) * 0x9E3779B97F4A7C15ULL ^
                      (static_cast<std::uint64_t>(env_.rank) << 32) ^
                      static_cast<std::uint64_t>(pos_.step);
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;  // splitmix64's finaliser
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    torch::manual_seed(x ^ (x >> 31));
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
    send(started);
    for (; pos_.epoch < spec_.epochs; ++pos_.epoch, pos_.window = 0) {
      auto indices = distributed_indices(sampler_, pos_.epoch);
      for (; pos_.window < plan_.windows();) {
        StepOutcome out = train_window(indices);
        if (out == StepOutcome::NonFinite) {
          TrainResult r{TrainResult::Failed,
                        "non-finite loss at step " + std::to_string(pos_.step) + " (epoch " +
                            std::to_string(pos_.epoch + 1) + "): stopping the run"};
          return r;
        }
        if (out == StepOutcome::Stop) return stop();
      }
      evaluate();
      if (env_.rank == 0) send(event("epoch"));
    }
    if (env_.rank == 0 && !spec_.run_dir.empty()) write_checkpoint();
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

    if (seed_rng_) seed_step_rng();
    torch::Tensor window_loss = torch::zeros({}, torch::TensorOptions().device(device_));
    for (std::int64_t m = m0; m < m1; ++m) {
      auto first = indices.begin() + plan_.micro_begin(m);
      auto last = indices.begin() + plan_.micro_end(m);
      Batch batch =
          to_device(task_.train_data().batch(std::vector<std::int64_t>(first, last)), device_);
      if (slow_ms_ > 0)
        std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(slow_ms_));
      clock_.mark(StepClock::Data);
      torch::Tensor loss = task_.loss_sum(task_.forward(batch), batch);
      if (nan_at_step_ == pos_.step + 1 && env_.rank == 0)
        loss = loss * std::numeric_limits<float>::quiet_NaN();  // fault injection for tests
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
      (loss * scale).backward();
      clock_.mark(StepClock::Backward);
    }
    sync_->finish_window();
    clock_.mark(StepClock::Comm);
    optimizer_->step();
    clock_.mark(StepClock::Optimizer);
    broadcast_buffers();

    ++pos_.window;
    ++pos_.step;
    pos_.samples += global_n;
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
    if (outcome == StepOutcome::Ok && env_.rank == 0 && !spec_.run_dir.empty()) {
      const bool by_steps = spec_.checkpoint_every > 0 && pos_.step % spec_.checkpoint_every == 0;
      const bool by_time = spec_.checkpoint_minutes > 0 &&
                           now_s() - last_checkpoint_ >= spec_.checkpoint_minutes * 60;
      if (by_steps || by_time) write_checkpoint();
    }
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
    if (o_.debug_steps) {
      s.collectives = comm_ ? comm_->collectives() : 0;
      s.param_hash = hash_params(params_);
      if (!buffers_.empty()) {
        std::vector<torch::Tensor> b;
        for (const auto& nb : buffers_) b.push_back(nb.tensor);
        s.buffer_hash = hash_params(b);
      }
    }
    last_global_loss_ = s.global_loss;
    send(s);
    progress(s);
  }

  void evaluate() {
    const Dataset* eval = task_.eval_data();
    if (!eval) return;
    torch::NoGradGuard no_grad;
    const double t = now_s();
    double loss_sum = 0, correct = 0, count = 0;
    std::vector<std::int64_t> mine;
    for (std::int64_t i = env_.rank; i < eval->size(); i += env_.world) mine.push_back(i);
    const std::size_t eval_batch = static_cast<std::size_t>(task_.eval_batch());
    task_.set_training(false);
    for (std::size_t s = 0; s < mine.size(); s += eval_batch) {
      auto end = mine.begin() + std::min(mine.size(), s + eval_batch);
      Batch b = to_device(eval->batch(std::vector<std::int64_t>(mine.begin() + s, end)), device_);
      torch::Tensor out = task_.forward(b);
      loss_sum += task_.loss_sum(out, b).item<double>();
      const double c = task_.correct(out, b);
      if (c >= 0) correct += c;
      count += static_cast<double>(b.size);
    }
    task_.set_training(true);
    torch::Tensor sums = torch::tensor({loss_sum, correct, count}, torch::kDouble);
    if (comm_) {
      sums = sums.to(device_);
      comm_->allreduce_sum(sums);
      sums = sums.to(torch::kCPU);
    }
    const double n = sums[2].item<double>();
    last_eval_loss_ = sums[0].item<double>() / n;
    if (task_.classification()) last_eval_acc_ = sums[1].item<double>() / n;
    if (env_.rank == 0) {
      wire::Eval e;
      e.rank = 0;
      e.epoch = static_cast<int>(pos_.epoch);
      e.step = pos_.step;
      e.loss = last_eval_loss_;
      if (task_.classification()) e.accuracy = last_eval_acc_;
      e.samples = static_cast<std::int64_t>(n);
      e.time = run_time();
      send(e);
      std::fprintf(
          stderr, "ddpdesk-worker[0] eval epoch %lld: loss %.5g%s (%.2fs)\n",
          static_cast<long long>(pos_.epoch + 1), last_eval_loss_,
          task_.classification() ? (" accuracy " + std::to_string(last_eval_acc_)).c_str() : "",
          now_s() - t);
    }
  }

  void write_checkpoint() {
    TrainPosition p = pos_;
    p.train_seconds = run_time();
    const std::string path = checkpoint_path(spec_.run_dir, p.step);
    last_checkpoint_ = now_s();
    save_checkpoint(path, task_.state(), *optimizer_, p, to_json_text(spec_));
    last_checkpoint_path_ = path;
    prune_checkpoints(spec_.run_dir, spec_.keep_checkpoints);
    auto e = event("checkpoint");
    e.path = path;
    send(e);
    // The trained model in a form a person can load elsewhere, next to every checkpoint.
    const std::string model_path = spec_.run_dir + "/model.pt";
    if (task_.export_model(model_path)) {
      auto m = event("model");
      m.path = model_path;
      send(m);
    }
  }

  TrainResult stop() {
    auto e = event("stopping");
    e.detail = "stop requested; agreed at step " + std::to_string(pos_.step);
    send(e);
    if (env_.rank == 0) {
      if (!spec_.run_dir.empty()) {
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
    std::fprintf(stderr,
                 "ddpdesk-worker[0] epoch %lld/%d step %lld/%lld loss %.5g global %.5g "
                 "%.0f samples/s\n",
                 static_cast<long long>(pos_.epoch + 1), spec_.epochs,
                 static_cast<long long>(s.step),
                 static_cast<long long>(plan_.windows() * spec_.epochs), s.loss, s.global_loss,
                 s.samples_per_s);
  }

  // One machine-readable line on stdout for scripts and benchmarks.
  void summary() {
    if (env_.rank != 0) return;
    const std::int64_t trained = pos_.samples - resumed_samples();
    std::printf(
        "ddpdesk-worker task=%s device=%s world=%d batch=%d accum=%d epochs=%d steps=%lld "
        "train_time=%.3fs samples_per_s=%.1f final_loss=%.6g",
        spec_.task.c_str(), spec_.device.c_str(), env_.world, spec_.batch_size, spec_.accum_steps,
        spec_.epochs, static_cast<long long>(pos_.step), train_time_,
        train_time_ > 0 ? static_cast<double>(trained) / train_time_ : 0.0, last_global_loss_);
    if (task_.eval_data()) {  // a run without validation data has no figures to show
      std::printf(" eval_loss=%.6g", last_eval_loss_);
      if (task_.classification()) std::printf(" test_acc=%.4f", last_eval_acc_);
    }
    std::printf("\n");
    std::fflush(stdout);
  }
  std::int64_t resumed_samples() const { return resumed_samples_; }

  TrainerOptions o_;
  RunSpec spec_;
  RankEnv env_;
  Task& task_;
  torch::Device device_;
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
  std::string last_checkpoint_path_;
  std::int64_t resumed_samples_ = 0;
  double last_checkpoint_ = now_s();
  double t0_ = 0, train_time_ = 0, last_progress_ = 0, last_log_time_ = 0;
  std::int64_t last_log_samples_ = 0;
  std::int64_t nan_at_step_ = -1;
  double slow_ms_ = 0;
  double last_global_loss_ = 0, last_eval_loss_ = 0, last_eval_acc_ = 0;
};

}  // namespace

torch::Device choose_device(const RunSpec& spec, const RankEnv& env) {
  if (spec.device != "cuda") return torch::Device(torch::kCPU);
  if (!torch::cuda::is_available())
    throw BadInput("device", "invalid --device 'cuda': no CUDA GPU is available to this worker");
  const int n = static_cast<int>(torch::cuda::device_count());
  if (env.local_rank >= n)
    throw BadInput("device", "invalid --device 'cuda': local rank " +
                                 std::to_string(env.local_rank) + " needs GPU " +
                                 std::to_string(env.local_rank) + " but only " + std::to_string(n) +
                                 " GPU(s) exist (one GPU per rank)");
  return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(env.local_rank));
}

TrainResult run_training(const TrainerOptions& options) {
  Trainer t(options);
  TrainResult r;
  try {
    r = t.run();
  } catch (const std::invalid_argument&) {
    throw;
  } catch (const std::exception& e) {
    std::string what = e.what();
    r = {TrainResult::Failed, what.substr(0, what.find('\n'))};
  }
  t.describe_end(&r);
  return r;
}

}  // namespace ddpdesk
