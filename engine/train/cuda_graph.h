// One piece of GPU work recorded once as a CUDA graph and replayed as a single launch
// (--cuda-graph, graphed_step.h). The work is a function that only queues device operations on
// fixed tensors: recording runs its host code once more without running its kernels, so it must
// change no host state and read nothing back. CUDA builds only (DDPDESK_HAVE_CUDA); elsewhere
// available() is false and nothing is ever recorded.
#pragma once

#include <functional>
#include <memory>
#include <stdexcept>

namespace ddpdesk {

// The recording failed (work that reads a value back, or an operation CUDA cannot record); the
// real run before it had finished, so nothing of the step is lost.
class CaptureFailed : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class CudaGraph {
 public:
  // Whether this build can record graphs at all.
  static bool available();

  CudaGraph();
  ~CudaGraph();
  CudaGraph(const CudaGraph&) = delete;
  CudaGraph& operator=(const CudaGraph&) = delete;

  // Runs `work` for real, then records it. Both on a stream of their own, as PyTorch's
  // torch.cuda.graph does (the real run there initialises what a first use on that stream
  // initialises, so the recording holds none of it), ordered after everything queued before and
  // finished before this returns, on GPU `device`. The real run's errors are thrown as they
  // are; a failed recording as CaptureFailed, its stream's recording ended.
  void run_then_capture(int device, const std::function<void()>& work);
  bool captured() const;
  // Queues the recorded work once more on the current stream.
  void replay();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ddpdesk
