// One piece of GPU work recorded once as a CUDA graph and replayed as a single launch
// (--cuda-graph, graphed_step.h), and the stream such a rank trains on. The work is a function
// that only queues device operations on fixed tensors: recording runs its host code once more
// without running its kernels, so it must change no host state and read nothing back. CUDA
// builds only (DDPDESK_HAVE_CUDA); elsewhere available() is false, nothing is recorded and a
// CaptureStream does nothing.
#pragma once

#include <functional>
#include <memory>
#include <stdexcept>

namespace ddpdesk {

// The recording failed (work that reads a value back, or an operation CUDA cannot record). The
// run ends with it: after a failed recording LibTorch's caching allocator (before 2.12) still
// counts the recording as under way, so nothing on that device can be trusted to go on.
class CaptureFailed : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A stream of its own, made the calling thread's current one on GPU `device` for the life of
// this object (after everything queued before has finished). A --cuda-graph rank trains on it
// from before its gradient accumulators are made: autograd runs each accumulator on the stream
// that was current when it was made, and a recording on any other stream than theirs would need
// the default stream to wait on it, which CUDA refuses during a recording. PyTorch asks the same
// of DDP under CUDA graphs (its reducer made on a side stream). device < 0: nothing.
class CaptureStream {
 public:
  explicit CaptureStream(int device);
  ~CaptureStream();
  CaptureStream(const CaptureStream&) = delete;
  CaptureStream& operator=(const CaptureStream&) = delete;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

class CudaGraph {
 public:
  // Whether this build can record graphs at all.
  static bool available();

  CudaGraph();
  ~CudaGraph();
  CudaGraph(const CudaGraph&) = delete;
  CudaGraph& operator=(const CudaGraph&) = delete;

  // Runs `work` for real, then records it, both on the current stream of GPU `device` (a
  // CaptureStream's: recording on the legacy default stream is not possible), each after
  // everything queued before has finished. The real run's errors are thrown as they are; a
  // failed recording as CaptureFailed, its stream's recording ended.
  void run_then_capture(int device, const std::function<void()>& work);
  bool captured() const;
  // Queues the recorded work once more on the current stream.
  void replay();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ddpdesk
