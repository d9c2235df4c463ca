// NCCL, called directly, one GPU per rank. Collectives run on a dedicated non-blocking stream;
// events order them after the gradients (produced on LibTorch's default stream) and order the
// optimizer step after them, so communication overlaps the rest of backward. Uses only the CUDA
// runtime API, so it builds against CPU-only LibTorch headers too (CI has no GPU).
#include <cuda_runtime.h>
#include <nccl.h>
#include <unistd.h>

#include <stdexcept>
#include <string>

#include <torch/csrc/distributed/c10d/Store.hpp>

#include "communicator.h"
#include "store.h"

namespace ddpdesk {
namespace {

void check_cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}
void check_nccl(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) {
    std::string msg = std::string(what) + ": " + ncclGetErrorString(r);
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 13, 0)
    if (const char* last = ncclGetLastError(nullptr); last && *last)
      msg += std::string(" (") + last + ")";
#endif
    throw std::runtime_error(msg);
  }
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

// LibTorch's default CUDA stream is the legacy null stream.
constexpr cudaStream_t kComputeStream = nullptr;

class NcclAllreduce : public PreparedAllreduce {
 public:
  NcclAllreduce(ncclComm_t comm, cudaStream_t stream, torch::Tensor buf, std::int64_t& counter)
      : comm_(comm), stream_(stream), buffer_(std::move(buf)), counter_(counter) {
    check_cuda(cudaEventCreateWithFlags(&ready_, cudaEventDisableTiming), "cudaEventCreate");
    check_cuda(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming), "cudaEventCreate");
  }
  ~NcclAllreduce() override {
    cudaEventDestroy(ready_);
    cudaEventDestroy(done_);
  }
  void start() override {
    ++counter_;
    check_cuda(cudaEventRecord(ready_, kComputeStream), "cudaEventRecord");
    check_cuda(cudaStreamWaitEvent(stream_, ready_, 0), "cudaStreamWaitEvent");
    check_nccl(ncclAllReduce(buffer_.data_ptr(), buffer_.data_ptr(), buffer_.numel(), ncclFloat32,
                             ncclSum, comm_, stream_),
               "ncclAllReduce");
    check_cuda(cudaEventRecord(done_, stream_), "cudaEventRecord");
  }
  void wait() override {
    check_cuda(cudaStreamWaitEvent(kComputeStream, done_, 0), "cudaStreamWaitEvent");
  }

 private:
  ncclComm_t comm_;
  cudaStream_t stream_;
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
    check_nccl(ncclCommInitRank(&comm_, o.env.world, id, o.env.rank), "ncclCommInitRank");
    check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
  }
  ~NcclCommunicator() override {
    if (stream_) cudaStreamDestroy(stream_);
    if (comm_) ncclCommDestroy(comm_);
  }

  int rank() const override { return env_.rank; }
  int world() const override { return env_.world; }
  std::string backend() const override { return "nccl"; }

  std::unique_ptr<PreparedAllreduce> prepare_allreduce(torch::Tensor buffer) override {
    if (!buffer.is_cuda() || !buffer.is_contiguous() || buffer.scalar_type() != torch::kFloat)
      throw std::logic_error("nccl buckets must be contiguous float32 CUDA tensors");
    return std::make_unique<NcclAllreduce>(comm_, stream_, buffer, collectives_);
  }

  void allreduce_sum(torch::Tensor t) override {
    ++collectives_;
    run_blocking([&] {
      check_nccl(ncclAllReduce(t.data_ptr(), t.data_ptr(), t.numel(), nccl_type(t), ncclSum, comm_,
                               stream_),
                 "ncclAllReduce");
    });
  }
  void broadcast(torch::Tensor t, int root) override {
    ++collectives_;
    run_blocking([&] {
      std::size_t n = t.numel() * (nccl_type(t) == ncclInt8 ? t.element_size() : 1);
      check_nccl(ncclBroadcast(t.data_ptr(), t.data_ptr(), n, nccl_type(t), root, comm_, stream_),
                 "ncclBroadcast");
    });
  }
  void barrier() override {
    auto t = torch::zeros({1}, torch::TensorOptions().device(torch::kCUDA).dtype(torch::kFloat));
    allreduce_sum(t);
  }

 private:
  template <typename F>
  void run_blocking(F&& f) {
    check_cuda(cudaStreamSynchronize(kComputeStream), "cudaStreamSynchronize");
    f();
    check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  }

  RankEnv env_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
};

}  // namespace

bool nccl_available() {
  return true;
}

std::unique_ptr<Communicator> make_nccl_communicator(const CommOptions& o) {
  return std::make_unique<NcclCommunicator>(o);
}

}  // namespace ddpdesk
