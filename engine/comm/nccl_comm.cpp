// NcclComm (nccl_comm.h): the set-up, the queueing of collectives, the watchdog and the release
// of one rank's NCCL communicator, each after ProcessGroupNCCL's (named where it is followed).
#include "nccl_comm.h"

#include <c10/cuda/CUDAStream.h>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "communicator.h"
#include "store.h"

namespace ddpdesk {
namespace {

using Clock = std::chrono::steady_clock;
// How often the watchdog looks (ProcessGroupNCCL's every second; the timeout may be half of one).
constexpr std::chrono::milliseconds kWatchPeriod{100};
// How often a joining or finalizing communicator is polled (NCCL 2.14+).
[[maybe_unused]] constexpr std::chrono::milliseconds kPoll{10};
// Beyond the collective timeout, how long the watchdog lets an NCCL call hold the communicator
// before it gives up aborting it and ends the process.
constexpr std::chrono::seconds kAbortGrace{10};

void check_cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}
std::string nccl_error(ncclResult_t r) {
  std::string msg = ncclGetErrorString(r);
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 13, 0)
  if (const char* last = ncclGetLastError(nullptr); last && *last)
    msg += std::string(" (") + last + ")";
#endif
  return msg;
}
// Whether a non-blocking communicator (NCCL 2.14+) is still at what it was asked.
bool in_progress(ncclResult_t r) {
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 14, 0)
  return r == ncclInProgress;
#else
  (void)r;
  return false;
#endif
}
// The communicator's state: ncclSuccess, ncclInProgress, or the error it met.
ncclResult_t async_state(ncclComm_t comm) {
  ncclResult_t state = ncclSuccess;
  const ncclResult_t r = ncclCommGetAsyncError(comm, &state);
  return r != ncclSuccess ? r : state;
}
std::string seconds(std::chrono::milliseconds d) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", static_cast<double>(d.count()) / 1000);
  return text;
}

}  // namespace

NcclComm::NcclComm(const CommOptions& o, ncclUniqueId id)
    : rank_(o.env.rank),
      device_(o.cuda_device),
      timeout_(static_cast<std::int64_t>(o.timeout_s * 1000)) {
  join(o, id);
  try {
    check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    watchdog_ = std::thread([this] { watch(); });
  } catch (...) {
    if (stream_) cudaStreamDestroy(stream_);
    ncclCommAbort(comm_);
    throw;
  }
}

// ncclCommInitRank waits forever for a rank that never calls it. NCCL 2.14+ builds the
// communicator non-blocking (ProcessGroupNCCL with TORCH_NCCL_USE_COMM_NONBLOCKING=1): polled
// here against the collective timeout and the stop flag, and aborted when either ends the wait.
void NcclComm::join(const CommOptions& o, ncclUniqueId id) {
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 14, 0)
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclResult_t r = ncclCommInitRankConfig(&comm_, o.env.world, id, o.env.rank, &config);
  try {
    StopWatch stop(o.stop);
    const auto deadline = Clock::now() + timeout_;
    while (in_progress(r)) {
      if (Clock::now() >= deadline)
        throw std::runtime_error("NCCL: not every rank joined the communicator within " +
                                 seconds(timeout_) + " s (collective_timeout)");
      stop.check();
      std::this_thread::sleep_for(kPoll);
      r = async_state(comm_);
    }
    if (r != ncclSuccess) throw std::runtime_error("ncclCommInitRankConfig: " + nccl_error(r));
  } catch (...) {
    if (comm_) ncclCommAbort(comm_);
    throw;
  }
#else
  // No non-blocking set-up before NCCL 2.14: a rank that never comes holds this one here.
  const ncclResult_t r = ncclCommInitRank(&comm_, o.env.world, id, o.env.rank);
  if (r != ncclSuccess) throw std::runtime_error("ncclCommInitRank: " + nccl_error(r));
#endif
}

NcclComm::~NcclComm() {
  {
    std::lock_guard<std::mutex> lock(quit_mu_);
    quit_ = true;
  }
  quit_cv_.notify_one();
  watchdog_.join();
  std::lock_guard<std::mutex> lock(mu_);
  if (failed_.load() || !check_locked().empty() || !in_flight_.empty() || !finalize_locked())
    abort_locked();
  for (const InFlight& w : in_flight_) spare_.insert(spare_.end(), {w.start, w.end});
  for (cudaEvent_t e : spare_) cudaEventDestroy(e);
  cudaStreamDestroy(stream_);
}

void NcclComm::enqueue(cudaEvent_t ready, cudaEvent_t done, const Collective& collective,
                       const char* what) {
  // ProcessGroupNCCL's syncStreams: the NCCL stream waits for the current stream, the one
  // LibTorch queued the inputs' kernels on (the default stream unless a guard set another).
  const cudaStream_t compute =
      c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device_)).stream();
  check_cuda(cudaEventRecord(ready, compute), "cudaEventRecord");
  check_cuda(cudaStreamWaitEvent(stream_, ready, 0), "cudaStreamWaitEvent");
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  check_cuda(cudaStreamIsCapturing(compute, &capture), "cudaStreamIsCapturing");

  std::lock_guard<std::mutex> lock(mu_);
  throw_if_failed();
  // The watchdog's events around the collective: once `start` is done the NCCL stream has
  // reached it (its inputs are ready, the collective before it is over), and from then on it
  // waits only for the peers. A collective captured into a CUDA graph runs later, when the graph
  // is replayed: nothing to watch now (ProcessGroupNCCL does not watch those either).
  InFlight w{};
  const bool watched = capture == cudaStreamCaptureStatusNone;
  if (watched) {
    w = {take_event(), take_event()};
    check_cuda(cudaEventRecord(w.start, stream_), "cudaEventRecord");
  }
  ncclResult_t r = collective(comm_, stream_);
  // A non-blocking communicator may still be queuing it (connecting to the peers, which NCCL
  // 2.22+ does at a first collective); NCCL's rule is to wait before the next call.
  const auto deadline = Clock::now() + timeout_;
  while (in_progress(r) && Clock::now() < deadline) {
    std::this_thread::yield();
    r = async_state(comm_);
  }
  if (r != ncclSuccess) {
    if (watched) spare_.insert(spare_.end(), {w.start, w.end});
    fail(in_progress(r) ? std::string(what) + " was not queued within " + seconds(timeout_) +
                              " s (collective_timeout): a peer rank is gone or stalled"
                        : std::string(what) + ": " + nccl_error(r));
    abort_locked();
    throw_if_failed();
  }
  check_cuda(cudaEventRecord(done, stream_), "cudaEventRecord");
  if (watched) {
    check_cuda(cudaEventRecord(w.end, stream_), "cudaEventRecord");
    in_flight_.push_back(w);
  }
}

void NcclComm::wait_host(cudaEvent_t done) {
  for (;;) {
    const cudaError_t e = cudaEventQuery(done);
    if (e == cudaSuccess) break;
    if (e != cudaErrorNotReady) check_cuda(e, "cudaEventQuery");
    if (failed_.load()) {
      // The failure is recorded just before the abort, both under mu_. ncclCommAbort frees what
      // the kernels use, so it returns after they end: once mu_ is free, the caller may free
      // its tensor.
      std::lock_guard<std::mutex> lock(mu_);
      throw_if_failed();
    }
    std::this_thread::yield();
  }
  throw_if_failed();  // an abort ends the wait too
}

void NcclComm::throw_if_failed() const {
  if (!failed_.load()) return;
  std::lock_guard<std::mutex> lock(failure_mu_);
  throw std::runtime_error(failure_);
}

// ProcessGroupNCCL's watchdog, smaller: NCCL's asynchronous errors, and the collective at the
// head of the NCCL stream, which may not wait for its peers longer than the timeout. Either
// fails the communicator and aborts it, so the kernels waiting for a dead peer end and with them
// every wait on the stream (a host wait, the compute stream's wait for a bucket).
void NcclComm::watch() {
  cudaSetDevice(device_);
  // Never barred by a CUDA graph being recorded on another thread (--cuda-graph): in the global
  // capture mode (LibTorch before 2.1) this thread's event queries would fail, ending the
  // recording and the run. Relaxed: its queries touch only the communicator's own stream.
  cudaStreamCaptureMode relaxed = cudaStreamCaptureModeRelaxed;
  cudaThreadExchangeStreamCaptureMode(&relaxed);
  auto held_since = Clock::now();  // when the watchdog last had mu_
  std::unique_lock<std::mutex> quit(quit_mu_);
  while (!quit_cv_.wait_for(quit, kWatchPeriod, [this] { return quit_; })) {
    std::unique_lock<std::mutex> lock(mu_, std::try_to_lock);
    if (!lock) {
      // An NCCL call has held the communicator well past the timeout (its launch stuck behind a
      // hung kernel, say): aborting under it would free what it uses. Leave rather than hang.
      if (Clock::now() - held_since > timeout_ + kAbortGrace) {
        std::fprintf(stderr,
                     "ddpdesk-worker[%d] NCCL: a call on the communicator has not returned for "
                     "%s s and it cannot be aborted: exiting\n",
                     rank_, seconds(timeout_ + kAbortGrace).c_str());
        std::fflush(stderr);
        std::_Exit(1);
      }
      continue;
    }
    held_since = Clock::now();
    if (failed_.load()) continue;  // aborted already
    const std::string why = check_locked();
    if (!why.empty()) {
      fail(why);
      abort_locked();
    }
  }
}

// Why the communicator failed, or "" while it is healthy; drops the collectives that are done.
// Called under mu_.
std::string NcclComm::check_locked() {
  const ncclResult_t r = async_state(comm_);
  if (r != ncclSuccess && !in_progress(r)) return "NCCL: " + nccl_error(r);
  const auto now = Clock::now();
  while (!in_flight_.empty()) {
    InFlight& w = in_flight_.front();
    if (!w.started) {
      const cudaError_t e = cudaEventQuery(w.start);
      if (e == cudaErrorNotReady) break;  // it still waits for this rank's own work
      if (e != cudaSuccess) return std::string("CUDA: ") + cudaGetErrorString(e);
      w.started = true;
      w.since = now;
    }
    const cudaError_t e = cudaEventQuery(w.end);
    if (e == cudaErrorNotReady) {
      if (now - w.since > timeout_)
        return "NCCL: a collective waited more than " + seconds(timeout_) +
               " s for the other ranks (collective_timeout): a peer rank is gone or stalled";
      break;
    }
    if (e != cudaSuccess) return std::string("CUDA: ") + cudaGetErrorString(e);
    spare_.insert(spare_.end(), {w.start, w.end});
    in_flight_.pop_front();
  }
  return {};
}

void NcclComm::fail(const std::string& why) {
  std::lock_guard<std::mutex> lock(failure_mu_);
  if (failed_.load()) return;
  failure_ = why;
  failed_.store(true);
}

// Called under mu_. Local: never waits for a peer (ProcessGroupNCCL's abort).
void NcclComm::abort_locked() {
  if (released_) return;
  released_ = true;
  ncclCommAbort(comm_);
}

// ncclCommFinalize (it flushes what the peers may still be receiving), polled against the
// timeout, then ncclCommDestroy; false, nothing released, where it did not finish. Called under
// mu_.
bool NcclComm::finalize_locked() {
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 14, 0)
  if (released_) return true;
  ncclResult_t r = ncclCommFinalize(comm_);
  const auto deadline = Clock::now() + timeout_;
  while (in_progress(r) && Clock::now() < deadline) {
    std::this_thread::sleep_for(kPoll);
    r = async_state(comm_);
  }
  if (r != ncclSuccess) return false;
  released_ = true;
  ncclCommDestroy(comm_);
  return true;
#else
  return false;  // blocking, it could wait forever for a peer: abort instead
#endif
}

// Called under mu_.
cudaEvent_t NcclComm::take_event() {
  if (!spare_.empty()) {
    cudaEvent_t e = spare_.back();
    spare_.pop_back();
    return e;
  }
  cudaEvent_t e{};
  check_cuda(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate");
  return e;
}

}  // namespace ddpdesk
