#include "cuda_graph.h"

#include <stdexcept>

#ifdef DDPDESK_HAVE_CUDA
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/version.h>
#endif

namespace ddpdesk {

#ifdef DDPDESK_HAVE_CUDA

struct CudaGraph::Impl {
  at::cuda::CUDAGraph graph;
  bool captured = false;
};

bool CudaGraph::available() {
  return true;
}

CudaGraph::CudaGraph() : impl_(std::make_unique<Impl>()) {}
CudaGraph::~CudaGraph() = default;

void CudaGraph::run_then_capture(int device, const std::function<void()>& work) {
  if (impl_->captured) throw std::logic_error("CudaGraph: already captured");
  c10::cuda::CUDAGuard on_device(static_cast<c10::DeviceIndex>(device));
  // Whole-device synchronisation around both, once per graph: simpler than events, and the side
  // stream then starts after everything the default stream queued and leaves nothing behind.
  c10::cuda::device_synchronize();
  {
    c10::cuda::CUDAStreamGuard on_side(
        c10::cuda::getStreamFromPool(false, static_cast<c10::DeviceIndex>(device)));
    work();
    c10::cuda::device_synchronize();
    // Thread-local where LibTorch can ask for it (2.1 on): the recording then forbids risky CUDA
    // calls on this thread only, not on the telemetry's or the communicator's threads (in the
    // global mode a CUDA call there would end the recording with an error). Backward's kernels,
    // queued by autograd's own thread onto this stream, are recorded either way.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
    impl_->graph.capture_begin({0, 0}, cudaStreamCaptureModeThreadLocal);
#else
    impl_->graph.capture_begin();
#endif
    try {
      work();
    } catch (const std::exception& e) {
      try {
        impl_->graph.capture_end();  // ends the stream's recording; the error to report is work's
      } catch (...) {
      }
      throw CaptureFailed(e.what());
    }
    try {
      impl_->graph.capture_end();
    } catch (const std::exception& e) {
      throw CaptureFailed(e.what());
    }
  }
  c10::cuda::device_synchronize();
  impl_->captured = true;
}

bool CudaGraph::captured() const {
  return impl_->captured;
}

void CudaGraph::replay() {
  if (!impl_->captured) throw std::logic_error("CudaGraph: replay before capture");
  impl_->graph.replay();
}

#else

struct CudaGraph::Impl {};

bool CudaGraph::available() {
  return false;
}

CudaGraph::CudaGraph() = default;
CudaGraph::~CudaGraph() = default;

void CudaGraph::run_then_capture(int, const std::function<void()>&) {
  throw std::logic_error("CudaGraph: this build has no CUDA");
}

bool CudaGraph::captured() const {
  return false;
}

void CudaGraph::replay() {
  throw std::logic_error("CudaGraph: this build has no CUDA");
}

#endif

}  // namespace ddpdesk
