#include "store.h"

#include "communicator.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <thread>

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

namespace ddpdesk {
namespace {

using Clock = std::chrono::steady_clock;

bool stopping(const std::atomic<bool>* stop) {
  return stop != nullptr && stop->load();
}

std::chrono::milliseconds to_ms(double seconds) {
  return std::chrono::milliseconds(static_cast<std::int64_t>(seconds * 1000));
}

std::string first_line(const std::string& s) {
  return s.substr(0, s.find('\n'));
}

// Whether something accepts TCP connections at MASTER_ADDR:MASTER_PORT before the deadline
// (true too when the host cannot be resolved: c10d then says why); throws StopRequested when
// `watch` says a stop has waited long enough. Each connect is given up to the deadline, polled in
// kStopPoll slices.
bool await_listener(const RankEnv& env, Clock::time_point deadline, StopWatch& watch) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(env.master_addr.c_str(), std::to_string(env.master_port).c_str(), &hints,
                    &found) != 0)
    return true;
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> addrs(found, &::freeaddrinfo);
  while (Clock::now() < deadline) {
    for (const addrinfo* a = addrs.get(); a != nullptr; a = a->ai_next) {
      const int fd =
          ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
      if (fd < 0) continue;
      bool connected = ::connect(fd, a->ai_addr, a->ai_addrlen) == 0;
      if (!connected && errno == EINPROGRESS) {
        pollfd p{fd, POLLOUT, 0};
        while (!connected && Clock::now() < deadline) {
          try {
            watch.check();
          } catch (const StopRequested&) {
            ::close(fd);
            throw;
          }
          const int r = ::poll(&p, 1, static_cast<int>(kStopPoll.count()));
          if (r < 0 && errno == EINTR) continue;
          if (r != 0) {
            int err = 0;
            socklen_t len = sizeof err;
            ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
            connected = r > 0 && err == 0;
            break;
          }
        }
      }
      ::close(fd);
      if (connected) return true;
    }
    // Nobody listens yet: try again shortly.
    for (auto until = Clock::now() + kStopPoll; Clock::now() < until;) {
      watch.check();
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  return false;
}

}  // namespace

void StopWatch::check() {
  if (!stopping(stop_)) return;
  const auto now = Clock::now();
  if (!seen_) {
    seen_ = true;
    since_ = now;
  }
  if (now - since_ >= kStopGrace) throw StopRequested();
}

bool interrupted_by_signal(const std::exception& e) {
  return std::strstr(e.what(), std::strerror(EINTR)) != nullptr;
}

c10::intrusive_ptr<c10d::Store> connect_store(const RankEnv& env, double timeout_s,
                                              const std::atomic<bool>* stop) {
  c10d::TCPStoreOptions opts;
  opts.port = static_cast<std::uint16_t>(env.master_port);
  opts.isServer = !env.agent_store && env.rank == 0;
  opts.numWorkers = env.agent_store ? c10::nullopt : c10::optional<std::size_t>(env.world);
  opts.waitWorkers = false;  // gloo's full-mesh connect waits for everyone, with our timeout
  const auto timeout = to_ms(timeout_s);
  const auto deadline = Clock::now() + timeout;
  c10::intrusive_ptr<c10d::Store> store;
  StopWatch watch(stop);
  for (;;) {
    watch.check();
    // A client waits for the host (rank 0 may still be loading its data) here, watching the
    // stop flag; c10d's own connect loop would wait out the whole timeout. Short c10d timeouts
    // are no way round it: c10d 1.13 retries a refused connect once a second, and under a
    // timeout shorter than that not at all.
    const bool listening = opts.isServer || stop == nullptr || await_listener(env, deadline, watch);
    // Past the deadline with no host: one last short try, for c10d's own message.
    opts.timeout = listening ? timeout : std::chrono::milliseconds(1000);
    try {
      store = c10::make_intrusive<c10d::TCPStore>(env.master_addr, opts);
      store->setTimeout(timeout);
      break;
    } catch (const std::exception& e) {
      if (stopping(stop)) throw StopRequested();
      if (interrupted_by_signal(e) && Clock::now() < deadline) continue;
      throw std::runtime_error(std::string(opts.isServer ? "cannot host" : "cannot reach") +
                               " the rendezvous store at " + env.master_addr + ":" +
                               std::to_string(env.master_port) + ": " + first_line(e.what()));
    }
  }
  std::string prefix = "ddpdesk";
  if (env.agent_store)  // what torch.distributed does under torchrun's agent store
    prefix = "/worker/attempt_" + std::to_string(env.restart_count) + "/ddpdesk";
  return c10::make_intrusive<c10d::PrefixStore>(prefix, store);
}

void wait_for_keys(c10d::Store& store, const std::vector<std::string>& keys, double timeout_s,
                   const std::atomic<bool>* stop) {
  const auto deadline = Clock::now() + to_ms(timeout_s);
  StopWatch watch(stop);
  auto pause = std::chrono::milliseconds(1);
  for (;;) {
    // Keys first: a rank whose peers are all there goes on even when asked to stop, and stops
    // with them at the first step, where the ranks agree on it.
    try {
      if (store.check(keys)) return;
    } catch (const std::exception& e) {
      // The store's host (rank 0) leaves when it is stopped: for a stopping rank that is no
      // failure. Nor is a signal that only cut a read short.
      if (stopping(stop)) throw StopRequested();
      if (!interrupted_by_signal(e)) throw;
    }
    watch.check();
    if (Clock::now() >= deadline) {
      std::string names;
      for (const auto& k : keys) names += (names.empty() ? "'" : ", '") + k + "'";
      throw std::runtime_error("timed out after " + std::to_string(static_cast<int>(timeout_s)) +
                               " s waiting for the other ranks at the rendezvous (store key " +
                               names + "; --collective-timeout)");
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, kStopPoll);
  }
}

std::vector<std::uint8_t> get_when_set(c10d::Store& store, const std::string& key, double timeout_s,
                                       const std::atomic<bool>* stop) {
  wait_for_keys(store, {key}, timeout_s, stop);
  for (;;) {
    try {
      return store.get(key);
    } catch (const std::exception& e) {
      if (stopping(stop)) throw StopRequested();
      if (!interrupted_by_signal(e)) throw;
    }
  }
}

c10::intrusive_ptr<c10d::Store> store_for(const CommOptions& o) {
  return o.store ? o.store : connect_store(o.env, o.timeout_s, o.stop);
}

}  // namespace ddpdesk
