// The rendezvous store: a c10d TCPStore at MASTER_ADDR:MASTER_PORT, hosted by rank 0 unless
// torchrun's agent already hosts it. Keys of one run share a prefix so runs never collide.
#pragma once

#include <c10/util/intrusive_ptr.h>

#include "rank_env.h"

namespace c10d {
class Store;
}

namespace ddpdesk {

c10::intrusive_ptr<c10d::Store> connect_store(const RankEnv& env, double timeout_s);

}  // namespace ddpdesk
