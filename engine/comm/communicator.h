// Collectives the trainer needs, behind one small interface with a Gloo (CPU) and an NCCL (CUDA)
// implementation. Gradient buckets use prepared allreduces: set up once per buffer and started
// many times, so the hot path allocates nothing and, on Gloo, skips c10d's per-call overhead.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

#include <torch/types.h>

#include <torch/csrc/distributed/c10d/Store.hpp>
#include "rank_env.h"

#include "store.h"

namespace ddpdesk {

// A collective failed because a peer rank is gone (its process died, or a peer found it so):
// which one travels with the failure (the rank's `error` message's `peer`), so the monitor can
// name the rank that failed first without reading it back from the text.
class PeerLost : public std::runtime_error {
 public:
  PeerLost(int peer, const std::string& what) : std::runtime_error(what), peer_(peer) {}
  int peer() const { return peer_; }

 private:
  int peer_;
};

// A sum-allreduce over one fixed buffer. start() returns at once; wait() blocks until the sum is
// in the buffer (Gloo) or until the compute stream is ordered after it (NCCL).
class PreparedAllreduce {
 public:
  virtual ~PreparedAllreduce() = default;
  virtual void start() = 0;
  virtual void wait() = 0;
  // start() + wait() on the calling thread. For the last bucket of a backward there is nothing
  // left to overlap with, and skipping the hand-off to the comm thread saves most of the latency
  // of small (seed-task) allreduces. Only call when no earlier collective is still in flight.
  virtual void run_now() {
    start();
    wait();
  }
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int world() const = 0;
  virtual std::string backend() const = 0;

  // `buffer`: contiguous float32 on this communicator's device, alive while the result lives.
  // Every rank must prepare the same buffers in the same order.
  virtual std::unique_ptr<PreparedAllreduce> prepare_allreduce(torch::Tensor buffer) = 0;
  // Blocking sum-allreduce of a small contiguous float32/float64 tensor (validation sums).
  virtual void allreduce_sum(torch::Tensor t) = 0;
  virtual void broadcast(torch::Tensor t, int root) = 0;
  virtual void barrier() = 0;
  // Throws the reason when a collective failed after its call returned (NCCL: its watchdog found
  // an error or a timeout and aborted the communicator, which also ends the waits on it). Call
  // after reading a reduced value back to the host, so a partial sum is never taken for one.
  virtual void throw_if_failed() {}

  // Collectives started since creation (each prepared start() counts once). Tests use it to check
  // that non-boundary micro-steps issue none.
  std::int64_t collectives() const { return collectives_; }

 protected:
  std::int64_t collectives_ = 0;
};

struct CommOptions {
  RankEnv env;
  double timeout_s = 60.0;
  int cuda_device = -1;  // NCCL only
  // Gloo only (WorkerSettings): the network card to use, and the pair mode (auto|async|sync|busy).
  std::string gloo_socket_ifname;
  std::string gloo_mode = "auto";
  // A store already connected (make_cpu_communicator's, which agreed on the backend through
  // it); empty: the communicator connects its own.
  c10::intrusive_ptr<c10d::Store> store;
  // The rank's stop flag: the rendezvous gives up waiting for peers once it is set (throwing
  // StopRequested, store.h). Null: it waits until the timeout.
  const std::atomic<bool>* stop = nullptr;
};

// The store to rendezvous through: the one given in `o`, else a fresh connection.
c10::intrusive_ptr<c10d::Store> store_for(const CommOptions& o);

// Rendezvous through a c10d TCPStore (hosted by rank 0, or by torchrun's agent), then builds the
// Gloo or NCCL communicator. Throws std::runtime_error with a one-line reason.
std::unique_ptr<Communicator> make_gloo_communicator(const CommOptions& o);
std::unique_ptr<Communicator> make_nccl_communicator(const CommOptions& o);
// Shared memory between ranks of one machine (CPU only); see shm_communicator.cpp.
std::unique_ptr<Communicator> make_shm_communicator(const CommOptions& o);
bool gloo_available();
bool nccl_available();

}  // namespace ddpdesk
