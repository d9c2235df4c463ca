#include "headless/signal_notifier.h"

#include <atomic>
#include <cstdint>
#include <ctime>

#include <fcntl.h>
#include <unistd.h>
#include <QSocketNotifier>
#include <cerrno>

#include "signal_repeat.h"

namespace ddpdesk {
namespace {

int g_pipe[2] = {-1, -1};

// One Ctrl+C can arrive twice within microseconds (signal_repeat.h): a repeat this soon is the
// same request, so "Ctrl+C again" (kill the ranks) needs a second press. Measured as the signals
// arrive, not as the (maybe busy) event loop reads them.
std::atomic<std::int64_t> g_last_ns[NSIG];
static_assert(std::atomic<std::int64_t>::is_always_lock_free, "used in a signal handler");

extern "C" void onSignal(int signo) {
  const int saved = errno;
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);  // async-signal-safe
  const std::int64_t ns = std::int64_t(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
  const std::int64_t last = g_last_ns[signo].exchange(ns);
  if (!is_same_signal(last, ns)) {
    const unsigned char byte = static_cast<unsigned char>(signo);
    [[maybe_unused]] ssize_t n = ::write(g_pipe[1], &byte, 1);  // full pipe: already pending
  }
  errno = saved;
}

}  // namespace

SignalNotifier::SignalNotifier(std::initializer_list<int> signos, QObject* parent)
    : QObject(parent) {
  // CLOEXEC: the worker processes must not inherit the pipe.
  if (::pipe2(g_pipe, O_CLOEXEC | O_NONBLOCK) != 0) return;
  notifier_ = new QSocketNotifier(g_pipe[0], QSocketNotifier::Read, this);
  connect(notifier_, &QSocketNotifier::activated, this, &SignalNotifier::drain);
  for (int signo : signos) {
    struct sigaction current = {};
    if (signo == SIGHUP && ::sigaction(signo, nullptr, &current) == 0 &&
        current.sa_handler == SIG_IGN)
      continue;            // nohup: the terminal's end is not for this process
    g_last_ns[signo] = 0;  // an earlier notifier's signals are not this one's
    struct sigaction sa = {};
    sa.sa_handler = onSignal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    struct sigaction old = {};
    if (::sigaction(signo, &sa, &old) == 0) previous_.emplace_back(signo, old);
  }
}

SignalNotifier::~SignalNotifier() {
  for (const auto& [signo, old] : previous_) ::sigaction(signo, &old, nullptr);
  delete notifier_;
  if (g_pipe[0] >= 0) {
    ::close(g_pipe[0]);
    ::close(g_pipe[1]);
    g_pipe[0] = g_pipe[1] = -1;
  }
}

void SignalNotifier::drain() {
  unsigned char buf[64];
  ssize_t n;
  while ((n = ::read(g_pipe[0], buf, sizeof buf)) > 0)
    for (ssize_t i = 0; i < n; ++i) Q_EMIT received(int(buf[i]));
}

}  // namespace ddpdesk
