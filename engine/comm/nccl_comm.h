// One rank's NCCL communicator with its stream and its health: what nccl_communicator.cpp's
// collectives go through. Reviewed against PyTorch's ProcessGroupNCCL (docs/gpu.md, "NCCL,
// reviewed against PyTorch's ProcessGroupNCCL").
//
// A dying rank never leaves a hung run. The communicator is built non-blocking (NCCL 2.14+) and
// polled against the collective timeout and the stop flag, so a rank that never comes fails the
// set-up. A watchdog thread aborts it when NCCL reports an error, or when a collective has waited
// for its peers at the head of the NCCL stream longer than the collective timeout: the kernels
// waiting for a dead peer end, and with them every wait on them; every later call throws why.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace ddpdesk {

struct CommOptions;

class NcclComm {
 public:
  // Joins the other ranks (all calling it with the same id) on o.cuda_device, the current device.
  NcclComm(const CommOptions& o, ncclUniqueId id);
  // With every collective done and no failure: ncclCommFinalize, then ncclCommDestroy; else
  // ncclCommAbort, which never waits for a peer.
  ~NcclComm();
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;

  int device() const { return device_; }
  // The stream the collectives run on (non-blocking, this communicator's own).
  cudaStream_t stream() const { return stream_; }

  // Queues `collective(comm, stream)` on stream() after the work queued so far on the calling
  // thread's current CUDA stream (through `ready`), then records `done` after it. Throws the
  // communicator's failure instead once it has failed.
  using Collective = std::function<ncclResult_t(ncclComm_t, cudaStream_t)>;
  void enqueue(cudaEvent_t ready, cudaEvent_t done, const Collective& collective, const char* what);
  // Blocks until `done` (recorded by enqueue) has happened; throws if the communicator failed.
  void wait_host(cudaEvent_t done);
  void throw_if_failed() const;

 private:
  // A collective the watchdog times: events recorded around it on the NCCL stream.
  struct InFlight {
    cudaEvent_t start{}, end{};
    bool started = false;
    std::chrono::steady_clock::time_point since{};  // when the watchdog first saw it started
  };

  void join(const CommOptions& o, ncclUniqueId id);
  void watch();
  std::string check_locked();
  void fail(const std::string& why);
  void abort_locked();
  bool finalize_locked();
  cudaEvent_t take_event();

  const int rank_;
  const int device_;
  const std::chrono::milliseconds timeout_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;

  std::mutex mu_;                   // NCCL calls on comm_, its release, in_flight_, spare_
  bool released_ = false;           // comm_ aborted or destroyed
  std::deque<InFlight> in_flight_;  // in stream order: only the front can be running
  std::vector<cudaEvent_t> spare_;

  mutable std::mutex failure_mu_;
  std::atomic<bool> failed_{false};
  std::string failure_;  // the first failure; set before the abort that ends the waits

  std::mutex quit_mu_;
  std::condition_variable quit_cv_;
  bool quit_ = false;
  std::thread watchdog_;
};

}  // namespace ddpdesk
