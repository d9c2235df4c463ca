#include "batch_fit.h"

#include <ATen/CPUGeneratorImpl.h>
#include <c10/util/Exception.h>
#include <torch/utils.h>

#include <mutex>
#include <stdexcept>

#include "communicator.h"
#include "dataset.h"
#include "device_batch.h"
#include "fault_injection.h"
#include "gpu_memory.h"
#include "grad_sync.h"

namespace ddpdesk {

std::vector<std::int64_t> fit_candidates(std::int64_t batch, std::int64_t accum) {
  const std::int64_t total = batch * accum;
  std::vector<std::int64_t> sizes;
  for (std::int64_t m = batch; m >= 1; --m)
    if (total % m == 0) sizes.push_back(m);
  return sizes;
}

std::vector<double> local_fits(const std::vector<std::int64_t>& sizes,
                               const std::function<void(std::int64_t)>& trial) {
  std::vector<double> fits(sizes.size(), 0.0);
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    try {
      trial(sizes[i]);
    } catch (const std::exception& e) {
      if (!is_out_of_memory(e)) throw;
      continue;
    }
    for (std::size_t j = i; j < sizes.size(); ++j) fits[j] = 1.0;
    break;
  }
  return fits;
}

namespace {

// One try: a forward and backward of the first `size` samples of this rank's epoch, as a
// training micro-step would run them, then everything it changed put back.
void try_micro_batch(const FitTrial& t, std::int64_t size) {
  std::vector<NamedTensor> buffers = t.task->buffers();
  std::vector<torch::Tensor> saved;
  for (const auto& b : buffers) saved.push_back(b.tensor.clone());
  // torch's CPU generator (dropout on the CPU, any sampling): as it was before the try. A task
  // drawing random numbers on a GPU has its generators reseeded at every optimizer step anyway.
  at::Generator gen = at::detail::getDefaultCPUGenerator();
  torch::Tensor rng;
  {
    std::lock_guard<std::mutex> lock(gen.mutex());
    rng = gen.get_state();
  }
  auto restore = [&] {
    t.sync->zero_grads();
    torch::NoGradGuard no_grad;
    for (std::size_t i = 0; i < buffers.size(); ++i) buffers[i].tensor.copy_(saved[i]);
    std::lock_guard<std::mutex> lock(gen.mutex());
    gen.set_state(rng);
  };
  try {
    const auto n = std::min<std::int64_t>(size, static_cast<std::int64_t>(t.indices->size()));
    std::vector<std::int64_t> first(t.indices->begin(), t.indices->begin() + n);
    Batch batch = to_device(t.task->train_data().batch(first), t.device);
    t.faults->out_of_memory(batch.size, t.step);
    // The gradient buckets are not armed (set_boundary(false)): the backward launches nothing.
    t.sync->set_boundary(false);
    t.task->loss_sum(precision_forward(*t.task, batch, t.precision, t.device), batch).backward();
  } catch (const std::exception& e) {
    if (!is_out_of_memory(e)) throw;
    restore();
    release_cached_gpu_memory(t.device);
    throw;
  }
  restore();
}

}  // namespace

BatchFit fit_batch(const FitTrial& t, std::int64_t batch, std::int64_t accum) {
  const std::vector<std::int64_t> sizes = fit_candidates(batch, accum);
  std::vector<double> fits =
      local_fits(sizes, [&](std::int64_t size) { try_micro_batch(t, size); });
  release_cached_gpu_memory(t.device);
  // One sum-allreduce: per size, how many ranks it fits; then per rank, 1 where nothing fits.
  std::vector<double> votes = fits;
  votes.resize(sizes.size() + static_cast<std::size_t>(t.world), 0.0);
  if (fits.back() == 0) votes[sizes.size() + static_cast<std::size_t>(t.rank)] = 1.0;
  if (t.comm) {
    torch::Tensor v = torch::tensor(votes, torch::kDouble).to(t.device);
    t.comm->allreduce_sum(v);
    v = v.to(torch::kCPU).contiguous();
    votes.assign(v.data_ptr<double>(), v.data_ptr<double>() + v.numel());
  }
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (votes[i] < t.world) continue;
    BatchFit f;
    f.micro = sizes[i];
    f.accum = batch * accum / sizes[i];
    f.line = "micro-batch " + std::to_string(f.micro) + " × " + std::to_string(f.accum) +
             " accumulation steps fits (asked " + std::to_string(batch) + " × " +
             std::to_string(accum) + ")";
    return f;
  }
  std::string ranks;
  for (int r = 0; r < t.world; ++r)
    if (votes[sizes.size() + static_cast<std::size_t>(r)] > 0)
      ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
  throw std::runtime_error("out of memory on rank " + ranks +
                           " even in a micro-batch of 1 sample (--fit-batch): the model needs "
                           "more memory than the rank has");
}

}  // namespace ddpdesk
