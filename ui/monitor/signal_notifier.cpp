#include "signal_notifier.h"

#include <fcntl.h>
#include <unistd.h>
#include <QSocketNotifier>
#include <cerrno>

namespace ddpdesk {
namespace {

int g_pipe[2] = {-1, -1};

extern "C" void onSignal(int signo) {
  const int saved = errno;
  const unsigned char byte = static_cast<unsigned char>(signo);
  [[maybe_unused]] ssize_t n = ::write(g_pipe[1], &byte, 1);  // full pipe: signal already pending
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
