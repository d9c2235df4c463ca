// Stand-ins for communicators this build was configured without; they fail with a clear reason.
#include <stdexcept>

#include "communicator.h"

namespace ddpdesk {
#ifndef DDPDESK_HAVE_GLOO
bool gloo_available() {
  return false;
}
std::unique_ptr<Communicator> make_gloo_communicator(const CommOptions&) {
  throw std::runtime_error("this ddpdesk-worker was built without Gloo: --device cpu needs it");
}
#endif
#ifndef DDPDESK_HAVE_NCCL
bool nccl_available() {
  return false;
}
std::unique_ptr<Communicator> make_nccl_communicator(const CommOptions&) {
  throw std::runtime_error("this ddpdesk-worker was built without NCCL: --device cuda needs it");
}
#endif
}  // namespace ddpdesk
