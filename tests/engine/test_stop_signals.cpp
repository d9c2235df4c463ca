// How a rank takes its stop signals (engine/runtime/stop_signals.h): blocked in every thread,
// taken by one thread of their own, so no signal frame ever lands on a thread that computes.
// Each case runs in a child process: blocking SIGINT/SIGTERM in the test runner itself would
// keep CTest's timeout from ending it.
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#ifdef DDPDESK_TEST_DNNL
#include <oneapi/dnnl/dnnl.h>
#endif

#include "stop_signals.h"

namespace ddpdesk {
namespace {

// Runs body() in a child and returns its wait status; the child exits with body()'s result.
int in_child(const std::function<int()>& body) {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(body());
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

std::string describe(int status) {
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  return "exit " + std::to_string(WEXITSTATUS(status));
}

bool blocks_stop_signals() {
  sigset_t now;
  pthread_sigmask(SIG_BLOCK, nullptr, &now);
  return sigismember(&now, SIGINT) == 1 && sigismember(&now, SIGTERM) == 1;
}

std::string thread_name() {
  char name[32] = {0};
  pthread_getname_np(pthread_self(), name, sizeof name);
  return name;
}

}  // namespace

TEST(StopSignals, ThreadsStartedAfterTheBlockInheritIt) {
  const int status = in_child([] {
    block_stop_signals();
    bool inherited = false;
    std::thread([&] { inherited = blocks_stop_signals(); }).join();
    return inherited ? 0 : 3;
  });
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << describe(status);
}

// A signal sent before the taking thread starts is not lost (a stop during start-up), and each
// is taken on that thread, under its name.
TEST(StopSignals, TakenOnTheirOwnThreadIncludingOnesThatCameBefore) {
  const int status = in_child([] {
    block_stop_signals();
    ::kill(::getpid(), SIGTERM);  // pending: blocked everywhere, not yet taken
    std::atomic<int> taken{0};
    std::atomic<bool> wrong_thread{false};
    take_stop_signals([&](int sig, pid_t) {
      if (thread_name() != kStopSignalThreadName) wrong_thread = true;
      taken.fetch_add(sig == SIGTERM ? 1 : sig == SIGINT ? 100 : 10000);
    });
    for (int i = 0; i < 2000 && taken < 1; ++i) ::usleep(1000);
    ::kill(::getpid(), SIGINT);
    for (int i = 0; i < 2000 && taken < 101; ++i) ::usleep(1000);
    if (wrong_thread) return 4;
    return taken == 101 ? 0 : 5;
  });
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << describe(status);
}

// Each signal comes with the pid that sent it (the worker tells a launcher's repeat from a
// person's second request by it).
TEST(StopSignals, TheSenderIsNamed) {
  const int status = in_child([] {
    block_stop_signals();
    std::atomic<pid_t> sender{-1};
    take_stop_signals([&](int, pid_t from) { sender = from; });
    ::kill(::getpid(), SIGTERM);
    for (int i = 0; i < 2000 && sender.load() == -1; ++i) ::usleep(1000);
    return sender.load() == ::getpid() ? 0 : 9;
  });
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << describe(status);
}

// The first stop signal stops; the same request delivered again (the same signal within half a
// second, or a repeat from the rank's parent) is nothing; a later one from anyone else exits.
TEST(StopSignals, StopRequestsTellARepeatFromASecondRequest) {
  using A = StopRequests::Action;
  constexpr std::int64_t ms = 1'000'000;
  StopRequests r(/*parent=*/100);
  EXPECT_EQ(r.take(SIGTERM, 100, 1000 * ms), A::Stop);
  EXPECT_EQ(r.take(SIGTERM, 100, 1001 * ms), A::Repeat);  // the parent-death signal again
  EXPECT_EQ(r.take(SIGTERM, 100, 5000 * ms), A::Repeat);  // from the parent, however late
  EXPECT_EQ(r.take(SIGINT, 300, 6000 * ms), A::ExitNow);  // a person's second request
  StopRequests t(100);
  EXPECT_EQ(t.take(SIGINT, 0, 1000 * ms), A::Stop);
  EXPECT_EQ(t.take(SIGINT, 0, 1400 * ms), A::Repeat);   // one Ctrl+C delivered twice
  EXPECT_EQ(t.take(SIGINT, 0, 1950 * ms), A::ExitNow);  // Ctrl+C again
  StopRequests u(100);
  EXPECT_EQ(u.take(SIGTERM, 0, 1000 * ms), A::Stop);
  EXPECT_EQ(u.take(SIGINT, 0, 1001 * ms), A::ExitNow);  // another signal is no repeat
}

// The Slurm batch script starts ranks with both signals ignored until they can take them (an
// ignored signal that is not blocked is discarded when sent): once the taking thread runs, they
// reach it.
TEST(StopSignals, InheritedIgnoredSignalsAreTakenOnceTheThreadRuns) {
  const int status = in_child([] {
    std::signal(SIGTERM, SIG_IGN);
    std::signal(SIGINT, SIG_IGN);
    block_stop_signals();
    std::atomic<int> taken{0};
    take_stop_signals([&](int, pid_t) { taken.fetch_add(1); });
    ::kill(::getpid(), SIGTERM);
    for (int i = 0; i < 2000 && taken < 1; ++i) ::usleep(1000);
    ::kill(::getpid(), SIGINT);
    for (int i = 0; i < 2000 && taken < 2; ++i) ::usleep(1000);
    return taken == 2 ? 0 : 8;
  });
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << describe(status);
}

// The fault behind a stop that lost the run: oneDNN's JIT matrix products keep live data below
// the stack pointer, and a signal handler's frame on that thread overwrites it (with a handler
// installed by sigaction instead, this child aborts with glibc's "corrupted size vs. prev_size"
// within a few hundred signals). Taken on their own thread, a stream of stop signals leaves every
// product exact and the heap whole.
TEST(StopSignals, AStreamOfThemLeavesOneDnnProductsExact) {
#ifndef DDPDESK_TEST_DNNL
  GTEST_SKIP() << "built without oneDNN's headers: LibTorch's products are not on oneDNN";
#else
  const int status = in_child([] {
    block_stop_signals();
    std::atomic<long> taken{0};
    take_stop_signals([&](int, pid_t) { taken.fetch_add(1); });
    const int m = 64, n = 512, k = 784;  // fmnist-mlp's first layer, batch 64
    std::vector<float> a(m * k), b(k * n), c(m * n), want(m * n);
    unsigned seed = 1;
    for (auto* v : {&a, &b})
      for (auto& x : *v)
        x = static_cast<float>(rand_r(&seed)) / static_cast<float>(RAND_MAX) - 0.5f;
    dnnl_sgemm('N', 'N', m, n, k, 1.f, a.data(), k, b.data(), n, 0.f, want.data(), n);
    std::atomic<bool> done{false};
    std::thread sender([&] {
      while (!done) {
        ::kill(::getpid(), SIGTERM);  // to the process, as the monitor and Slurm send it
        ::usleep(20);
      }
    });
    int wrong = 0;
    for (int i = 0; i < 1000; ++i) {
      auto* churn = new std::vector<float>(1000 + i % 777, 1.f);  // the heap in use meanwhile
      dnnl_sgemm('N', 'N', m, n, k, 1.f, a.data(), k, b.data(), n, 0.f, c.data(), n);
      if (std::memcmp(c.data(), want.data(), c.size() * sizeof(float)) != 0) ++wrong;
      delete churn;
    }
    done = true;
    sender.join();
    if (wrong > 0) return 6;
    return taken > 100 ? 0 : 7;  // the stream really arrived
  });
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << describe(status);
#endif
}

}  // namespace ddpdesk
