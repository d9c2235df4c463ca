// See stop_signals.h: SIGINT and SIGTERM blocked everywhere, taken by one thread with sigwait.
#include "stop_signals.h"

#include <pthread.h>
#include <signal.h>

#include <csignal>
#include <ctime>
#include <thread>
#include <utility>

#include "signal_repeat.h"

namespace ddpdesk {
namespace {

sigset_t stop_set() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

}  // namespace

void block_stop_signals() {
  const sigset_t set = stop_set();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

void unblock_stop_signals() {
  const sigset_t set = stop_set();
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
}

void take_stop_signals(std::function<void(int, pid_t)> on_signal) {
  block_stop_signals();  // the new thread inherits it: sigwait needs the signals blocked
  // SIG_IGN survives exec (the Slurm batch script starts ranks with both ignored until they get
  // here), and an ignored signal that is not blocked is thrown away when sent. Linux keeps a
  // blocked one pending even so; POSIX leaves that open. Back to the default, which never acts
  // on a signal that is blocked everywhere and waited for.
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  std::thread([on_signal = std::move(on_signal)] {
    pthread_setname_np(pthread_self(), kStopSignalThreadName);
    const sigset_t set = stop_set();
    for (;;) {
      siginfo_t info{};
      const int sig = sigwaitinfo(&set, &info);
      if (sig > 0) on_signal(sig, info.si_code == SI_USER ? info.si_pid : 0);
    }
  }).detach();
}

StopRequests::Action StopRequests::take(int signal, pid_t sender, std::int64_t now_ns) {
  std::int64_t& last = last_ns_[signal > 0 && signal < 65 ? signal : 0];
  const bool again = is_same_signal(last, now_ns);
  last = now_ns;
  if (!stopping_) {
    stopping_ = true;
    return Action::Stop;
  }
  if (again || (sender != 0 && sender == parent_)) return Action::Repeat;
  return Action::ExitNow;
}

std::int64_t monotonic_ns() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return std::int64_t(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
}

}  // namespace ddpdesk
