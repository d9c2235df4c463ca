#include "store.h"

#include "communicator.h"

#include <stdexcept>

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

namespace ddpdesk {

c10::intrusive_ptr<c10d::Store> connect_store(const RankEnv& env, double timeout_s) {
  c10d::TCPStoreOptions opts;
  opts.port = static_cast<std::uint16_t>(env.master_port);
  opts.isServer = !env.agent_store && env.rank == 0;
  opts.numWorkers = env.agent_store ? c10::nullopt : c10::optional<std::size_t>(env.world);
  opts.waitWorkers = false;  // gloo's full-mesh connect waits for everyone, with our timeout
  opts.timeout = std::chrono::milliseconds(static_cast<std::int64_t>(timeout_s * 1000));
  c10::intrusive_ptr<c10d::Store> store;
  try {
    store = c10::make_intrusive<c10d::TCPStore>(env.master_addr, opts);
  } catch (const std::exception& e) {
    std::string what = e.what();
    what = what.substr(0, what.find('\n'));
    throw std::runtime_error(std::string(opts.isServer ? "cannot host" : "cannot reach") +
                             " the rendezvous store at " + env.master_addr + ":" +
                             std::to_string(env.master_port) + ": " + what);
  }
  std::string prefix = "ddpdesk";
  if (env.agent_store)  // what torch.distributed does under torchrun's agent store
    prefix = "/worker/attempt_" + std::to_string(env.restart_count) + "/ddpdesk";
  return c10::make_intrusive<c10d::PrefixStore>(prefix, store);
}

c10::intrusive_ptr<c10d::Store> store_for(const CommOptions& o) {
  return o.store ? o.store : connect_store(o.env, o.timeout_s);
}

}  // namespace ddpdesk
