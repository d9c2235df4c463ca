// SignalNotifier: turns POSIX signals (Ctrl+C's SIGINT, SIGTERM, a closed terminal's SIGHUP) into
// a Qt signal on the event loop, through the self-pipe trick: the handler only write()s one byte,
// a QSocketNotifier reads it. Headless mode and the window use it to stop a run gracefully, like
// the Stop button. A signal repeated within 500 ms of the same one is dropped (signal_repeat.h):
// one Ctrl+C delivered twice (GNU timeout signals its child and then its process group) must not
// read as "Ctrl+C again". A SIGHUP ignored when the process started (nohup) stays ignored.
#pragma once

#include <QObject>
#include <csignal>
#include <initializer_list>
#include <vector>

class QSocketNotifier;

namespace ddpdesk {

class SignalNotifier : public QObject {
  Q_OBJECT
 public:
  // One instance per process at a time; restores the previous handlers when destroyed.
  explicit SignalNotifier(std::initializer_list<int> signos, QObject* parent = nullptr);
  ~SignalNotifier() override;

 Q_SIGNALS:
  void received(int signo);

 private:
  void drain();

  QSocketNotifier* notifier_ = nullptr;
  std::vector<std::pair<int, struct sigaction>> previous_;
};

}  // namespace ddpdesk
