// The Communicator over NCCL, called directly, one GPU per rank: the rendezvous through the store,
// prepared allreduces for the gradient buckets and the blocking collectives. The communicator
// itself, its stream, its watchdog and its release are NcclComm's (nccl_comm.h). Reviewed against
// PyTorch's ProcessGroupNCCL (docs/gpu.md, "NCCL, reviewed against PyTorch's ProcessGroupNCCL").
//
// Collectives run on NcclComm's non-blocking stream, after the work queued so far on the
// caller's current CUDA stream; wait() orders the current stream after them, so communication
// overlaps the rest of backward.
#include <cuda_runtime.h>
#include <nccl.h>
#include <unistd.h>

#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAStream.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <torch/csrc/distributed/c10d/Store.hpp>

#include "communicator.h"
#include "nccl_comm.h"
#include "store.h"

namespace ddpdesk {
namespace {

void check_cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}
void check_nccl(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) throw std::runtime_error(std::string(what) + ": " + ncclGetErrorString(r));
}

ncclDataType_t nccl_type(const torch::Tensor& t) {
  switch (t.scalar_type()) {
    case torch::kFloat:
      return ncclFloat32;
    case torch::kDouble:
      return ncclFloat64;
    default:
      return ncclInt8;  // broadcast of raw bytes
  }
}

cudaEvent_t new_event() {
  cudaEvent_t e{};
  check_cuda(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate");
  return e;
}

class NcclAllreduce : public PreparedAllreduce {
 public:
  NcclAllreduce(std::shared_ptr<NcclComm> comm, torch::Tensor buf, std::int64_t& counter)
      : comm_(std::move(comm)), buffer_(std::move(buf)), counter_(counter) {
    // The buffer is read and written on the NCCL stream: the caching allocator must not give its
    // memory to another tensor until the NCCL stream is done with it (ProcessGroupNCCL records
    // every input the same way).
    c10::cuda::CUDACachingAllocator::recordStream(
        buffer_.storage().data_ptr(),
        c10::cuda::getStreamFromExternal(comm_->stream(),
                                         static_cast<c10::DeviceIndex>(comm_->device())));
    ready_ = new_event();
    done_ = new_event();
  }
  ~NcclAllreduce() override {
    cudaEventDestroy(ready_);
    cudaEventDestroy(done_);
  }
  void start() override {
    ++counter_;
    comm_->enqueue(
        ready_, done_,
        [this](ncclComm_t c, cudaStream_t s) {
          return ncclAllReduce(buffer_.data_ptr(), buffer_.data_ptr(), buffer_.numel(), ncclFloat32,
                               ncclSum, c, s);
        },
        "ncclAllReduce");
  }
  void wait() override {
    comm_->throw_if_failed();
    const auto device = static_cast<c10::DeviceIndex>(comm_->device());
    check_cuda(cudaStreamWaitEvent(c10::cuda::getCurrentCUDAStream(device).stream(), done_, 0),
               "cudaStreamWaitEvent");
  }

 private:
  std::shared_ptr<NcclComm> comm_;
  torch::Tensor buffer_;
  std::int64_t& counter_;
  cudaEvent_t ready_{};
  cudaEvent_t done_{};
};

class NcclCommunicator : public Communicator {
 public:
  explicit NcclCommunicator(const CommOptions& o) : env_(o.env) {
    // choose_device (device_choice.h) already held the spec to one GPU per rank.
    check_cuda(cudaSetDevice(o.cuda_device), "cudaSetDevice");
    auto store = store_for(o);
    // Two ranks on one GPU would make NCCL fail or hang: refuse it with a clear message.
    cudaDeviceProp prop{};
    check_cuda(cudaGetDeviceProperties(&prop, o.cuda_device), "cudaGetDeviceProperties");
    char host[256] = {0};
    gethostname(host, sizeof host - 1);
    std::string me = std::string(host) + "/" + std::to_string(prop.pciDomainID) + ":" +
                     std::to_string(prop.pciBusID) + ":" + std::to_string(prop.pciDeviceID);
    store->set("gpu/" + std::to_string(o.env.rank), std::vector<uint8_t>(me.begin(), me.end()));
    for (int r = 0; r < o.env.world; ++r) {
      if (r == o.env.rank) continue;
      auto v = get_when_set(*store, "gpu/" + std::to_string(r), o.timeout_s, o.stop);
      if (std::string(v.begin(), v.end()) == me)
        throw std::runtime_error("ranks " + std::to_string(std::min(r, o.env.rank)) + " and " +
                                 std::to_string(std::max(r, o.env.rank)) +
                                 " would share one GPU (" + me + "): use one GPU per rank");
    }
    ncclUniqueId id;
    if (o.env.rank == 0) {
      check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
      store->set("nccl_id", std::vector<uint8_t>(reinterpret_cast<uint8_t*>(&id),
                                                 reinterpret_cast<uint8_t*>(&id) + sizeof id));
    } else {
      auto v = get_when_set(*store, "nccl_id", o.timeout_s, o.stop);
      if (v.size() != sizeof id) throw std::runtime_error("malformed NCCL id in the store");
      std::memcpy(&id, v.data(), sizeof id);
    }
    comm_ = std::make_shared<NcclComm>(o, id);
    ready_ = new_event();
    done_ = new_event();
  }
  ~NcclCommunicator() override {
    cudaEventDestroy(ready_);
    cudaEventDestroy(done_);
  }

  int rank() const override { return env_.rank; }
  int world() const override { return env_.world; }
  std::string backend() const override { return "nccl"; }

  std::unique_ptr<PreparedAllreduce> prepare_allreduce(torch::Tensor buffer) override {
    if (!buffer.is_cuda() || !buffer.is_contiguous() || buffer.scalar_type() != torch::kFloat)
      throw std::logic_error("nccl buckets must be contiguous float32 CUDA tensors");
    return std::make_unique<NcclAllreduce>(comm_, buffer, collectives_);
  }

  void allreduce_sum(torch::Tensor t) override {
    run_blocking(
        [&](ncclComm_t c, cudaStream_t s) {
          return ncclAllReduce(t.data_ptr(), t.data_ptr(), t.numel(), nccl_type(t), ncclSum, c, s);
        },
        "ncclAllReduce");
  }
  void broadcast(torch::Tensor t, int root) override {
    const std::size_t n = t.numel() * (nccl_type(t) == ncclInt8 ? t.element_size() : 1);
    run_blocking(
        [&](ncclComm_t c, cudaStream_t s) {
          return ncclBroadcast(t.data_ptr(), t.data_ptr(), n, nccl_type(t), root, c, s);
        },
        "ncclBroadcast");
  }
  void barrier() override {
    auto t = torch::zeros({1}, torch::TensorOptions().device(torch::kCUDA).dtype(torch::kFloat));
    allreduce_sum(t);
  }
  void throw_if_failed() override { comm_->throw_if_failed(); }

 private:
  // The host waits for the collective, so `t` outlives its use on the NCCL stream (no
  // recordStream needed) and work queued after the return is ordered after it.
  void run_blocking(const NcclComm::Collective& collective, const char* what) {
    ++collectives_;
    comm_->enqueue(ready_, done_, collective, what);
    comm_->wait_host(done_);
  }

  RankEnv env_;
  std::shared_ptr<NcclComm> comm_;
  cudaEvent_t ready_{};
  cudaEvent_t done_{};
};

}  // namespace

bool nccl_available() {
  return true;
}

std::unique_ptr<Communicator> make_nccl_communicator(const CommOptions& o) {
  return std::make_unique<NcclCommunicator>(o);
}

}  // namespace ddpdesk
