#include "replica_sync.h"

#include <map>

#include "communicator.h"

namespace ddpdesk {
namespace {

// One broadcast of rank 0's values for tensors of one dtype, through a flat copy.
void broadcast_group(Communicator& comm, const std::vector<torch::Tensor>& group) {
  std::vector<torch::Tensor> flat;
  for (const auto& t : group) flat.push_back(t.detach().reshape(-1));
  torch::Tensor all = torch::cat(flat).contiguous();
  comm.broadcast(all, 0);
  std::int64_t off = 0;
  for (const auto& t : group) {
    t.detach().copy_(all.narrow(0, off, t.numel()).view(t.sizes()));
    off += t.numel();
  }
}

}  // namespace

void broadcast_parameters(Communicator& comm, const std::vector<torch::Tensor>& params) {
  if (params.empty()) return;
  torch::NoGradGuard no_grad;
  broadcast_group(comm, params);
}

void broadcast_buffers(Communicator& comm, const std::vector<NamedTensor>& buffers) {
  if (buffers.empty()) return;
  torch::NoGradGuard no_grad;
  std::map<torch::ScalarType, std::vector<torch::Tensor>> by_type;
  for (const auto& b : buffers) by_type[b.tensor.scalar_type()].push_back(b.tensor);
  for (const auto& [type, group] : by_type) broadcast_group(comm, group);
}

}  // namespace ddpdesk
