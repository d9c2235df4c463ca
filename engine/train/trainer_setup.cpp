// Setting a rank's run up (trainer.h's first phase; the Trainer's state: trainer_impl.h): the data
// plan, the optimizer, a resume, the communicator and rank 0's weights, --fit-batch and
// --cuda-graph; and the ending of an out-of-memory, which writes the last step's checkpoint.
#include <cstdio>
#include <thread>

#include "batch_fit.h"
#include "communicator_choice.h"
#include "gpu_memory.h"
#include "oom_report.h"
#include "replica_sync.h"
#include "resume.h"
#include "trainer_impl.h"

namespace ddpdesk {

Trainer::Trainer(const TrainerOptions& o)
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

void Trainer::set_up() {
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
  // A recorded step trains on a stream of its own from before the gradient accumulators are
  // made (cuda_graph.h: CaptureStream).
  if (spec_.cuda_graph && cuda && task_.capturable())
    capture_stream_ = std::make_unique<CaptureStream>(device_.index());
  sync_ = std::make_unique<GradSync>(params_, comm_.get(), overlap);
  if (spec_.fit_batch) fit_micro_batch();
  set_up_cuda_graphs();
}

// --cuda-graph (graphed_step.h), where the task allows a recording; the reason where it runs
// unrecorded. The test-only DDPDESK_FAULT_GRAPHED_CPU takes the same path unrecorded on a CPU.
void Trainer::set_up_cuda_graphs() {
  const char* unrecorded = nullptr;
  if (spec_.cuda_graph && !task_.capturable())
    unrecorded =
        "the model draws random numbers (dropout and the like), which a recording would "
        "draw alike at every step";
  else if (spec_.cuda_graph || faults_.graphed_cpu())
    graphed_ = std::make_unique<GraphedStep>(task_, device_, precision_, *optimizer_, plan_.batch,
                                             spec_.cuda_graph);
  if (spec_.cuda_graph && graphed_ && !graphed_->recording())
    unrecorded = "this worker was built without CUDA";
  if (unrecorded && env_.rank == 0)
    std::fprintf(stderr, "ddpdesk-worker[0] CUDA graphs: %s; the step runs unrecorded\n",
                 unrecorded);
}

void Trainer::fit_micro_batch() {
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

TrainResult Trainer::out_of_memory() {
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

}  // namespace ddpdesk
