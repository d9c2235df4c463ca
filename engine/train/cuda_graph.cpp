#include "cuda_graph.h"

#include <optional>
#include <stdexcept>
#include <string>

#ifdef DDPDESK_HAVE_CUDA
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/version.h>
#endif

namespace ddpdesk {

#ifdef DDPDESK_HAVE_CUDA

struct CaptureStream::Impl {
  std::optional<c10::cuda::CUDAStreamGuard> guard;
};

CaptureStream::CaptureStream(int device) {
  if (device < 0) return;
  c10::cuda::CUDAGuard on_device(static_cast<c10::DeviceIndex>(device));
  c10::cuda::device_synchronize();  // what the default stream queued (the model, its weights)
  impl_ = std::make_unique<Impl>();
  impl_->guard.emplace(c10::cuda::getStreamFromPool(false, static_cast<c10::DeviceIndex>(device)));
}

CaptureStream::~CaptureStream() {
  if (impl_) c10::cuda::device_synchronize();
}

struct CudaGraph::Impl {
  std::unique_ptr<at::cuda::CUDAGraph> graph;  // made at the recording, on its device
  bool captured = false;
};

bool CudaGraph::available() {
  return true;
}

CudaGraph::CudaGraph() : impl_(std::make_unique<Impl>()) {}
CudaGraph::~CudaGraph() = default;

void CudaGraph::run_then_capture(int device, const std::function<void()>& work) {
  if (impl_->captured) throw std::logic_error("CudaGraph: already captured");
  const auto index = static_cast<c10::DeviceIndex>(device);
  c10::cuda::CUDAGuard on_device(index);
  if (c10::cuda::getCurrentCUDAStream(index) == c10::cuda::getDefaultCUDAStream(index))
    throw std::logic_error("CudaGraph: record on a CaptureStream, not the default stream");
  // Whole-device synchronisation around both, once per graph: simpler than events.
  c10::cuda::device_synchronize();
  work();
  c10::cuda::device_synchronize();
  impl_->graph = std::make_unique<at::cuda::CUDAGraph>();
  // Thread-local where LibTorch can ask for it (2.1 on): the recording then forbids risky CUDA
  // calls on this thread only, not on the telemetry's or the communicator's threads. Backward's
  // kernels, queued by autograd's own thread onto this stream, are recorded either way.
  try {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
    impl_->graph->capture_begin({0, 0}, cudaStreamCaptureModeThreadLocal);
#else
    impl_->graph->capture_begin();
#endif
  } catch (const std::exception& e) {
    throw CaptureFailed(e.what());
  }
  try {
    work();
  } catch (const std::exception& e) {
    try {
      impl_->graph->capture_end();  // ends the stream's recording; the error to report is work's
    } catch (...) {
    }
    throw CaptureFailed(e.what());
  }
  try {
    impl_->graph->capture_end();
  } catch (const std::exception& e) {
    throw CaptureFailed(e.what());
  }
  c10::cuda::device_synchronize();
  impl_->captured = true;
}

bool CudaGraph::captured() const {
  return impl_->captured;
}

void CudaGraph::replay() {
  if (!impl_->captured) throw std::logic_error("CudaGraph: replay before capture");
  impl_->graph->replay();
}

#else

struct CaptureStream::Impl {};

CaptureStream::CaptureStream(int) {}
CaptureStream::~CaptureStream() = default;

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
