// RunQueue (run_queue.h): the queue's entries and the scheduler that starts them one after
// another; reading and writing the queue file is run_queue_file.cpp's.
#include "queue/run_queue.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QStandardPaths>
#include <QTimer>
#include <nlohmann/json.hpp>

#include "checks/pre_start_check.h"
#include "run/atomic_file.h"
#include "run/run_controller.h"
#include "run/run_directory.h"

namespace ddpdesk {
namespace {

using State = QueueEntry::State;

QString firstLine(const QString& text) {
  return text.section(QLatin1Char('\n'), 0, 0);
}

}  // namespace

bool QueueEntry::pending() const {
  return state == State::Queued || state == State::Stopped || state == State::Interrupted;
}

QString QueueEntry::stateName(State s) {
  switch (s) {
    case State::Queued:
      return QStringLiteral("queued");
    case State::Running:
      return QStringLiteral("running");
    case State::Finished:
      return QStringLiteral("finished");
    case State::Failed:
      return QStringLiteral("failed");
    case State::Stopped:
      return QStringLiteral("stopped");
    case State::Interrupted:
      return QStringLiteral("interrupted");
  }
  return {};
}

QString QueueEntry::label() const {
  const QJsonObject fields = extra.value(QLatin1String("fields")).toObject();
  if (!fields.isEmpty()) {
    QStringList parts;
    for (auto it = fields.begin(); it != fields.end(); ++it)
      parts << it.key() + '=' + queueValueText(it.value());
    return parts.join(QStringLiteral(", "));
  }
  // Entries added one by one often differ in the learning rate or the epochs only: those are in
  // the line too, and the run's name first when it has one.
  QString line = QStringLiteral("%1, %2 rank(s), batch %3 x accum %4, lr %5, %6 epoch(s)")
                     .arg(QString::fromStdString(spec.task))
                     .arg(spec.nproc)
                     .arg(spec.batch_size)
                     .arg(spec.accum_steps)
                     .arg(spec.lr)
                     .arg(spec.epochs);
  if (!spec.name.empty()) line = QString::fromStdString(spec.name) + QStringLiteral(": ") + line;
  return line;
}

RunQueue::RunQueue(RunController* controller, QObject* parent)
    : QObject(parent), controller_(controller), check_(new PreStartCheck(this)) {
  connect(check_, &PreStartCheck::finished, this, &RunQueue::onChecked);
  launcher_ = [this](const RunSpec& spec, QString* error) {
    return controller_->start(spec, error);
  };
  connect(controller_, &RunController::stateChanged, this, &RunQueue::onControllerState);
}

QString RunQueue::defaultPath() {
  return QStandardPaths::writableLocation(QStandardPaths::GenericDataLocation) +
         QStringLiteral("/ddpdesk/queue.json");
}

QueueEntry* RunQueue::find(int id) {
  const int i = indexOf(id);
  return i < 0 ? nullptr : &entries_[i];
}

int RunQueue::indexOf(int id) const {
  for (std::size_t i = 0; i < entries_.size(); ++i)
    if (entries_[i].id == id) return int(i);
  return -1;
}

int RunQueue::pendingCount() const {
  int n = 0;
  for (const auto& e : entries_) n += e.pending() ? 1 : 0;
  return n;
}

int RunQueue::add(const RunSpec& spec, const QJsonObject& extra) {
  QueueEntry e;
  e.id = next_id_++;
  e.spec = spec;
  e.extra = extra;
  entries_.push_back(e);
  persist();
  Q_EMIT entryChanged(entries_.back());
  return e.id;
}

bool RunQueue::remove(int id) {
  const int i = indexOf(id);
  if (i < 0 || id == current_) return false;
  if (id == checking_) {  // its check is no longer wanted
    check_->cancel();
    checking_ = -1;
    QTimer::singleShot(0, this, &RunQueue::startNext);
  }
  const QueueEntry gone = entries_[i];
  entries_.erase(entries_.begin() + i);
  persist();
  Q_EMIT entryChanged(gone);
  return true;
}

bool RunQueue::move(int id, int to) {
  const int from = indexOf(id);
  if (from < 0 || to < 0 || to >= int(entries_.size())) return false;
  if (from == to) return true;
  QueueEntry e = entries_[from];
  entries_.erase(entries_.begin() + from);
  entries_.insert(entries_.begin() + to, e);
  persist();
  return true;
}

void RunQueue::setPaused(bool paused) {
  if (paused == paused_) return;
  paused_ = paused;
  persist();
  if (!paused_) startNext();
}

void RunQueue::setStopOnFailure(bool stop) {
  if (stop == stop_on_failure_) return;
  stop_on_failure_ = stop;
  persist();
}

void RunQueue::startNext() {
  if (starting_) return;
  starting_ = true;
  while (!paused_ && current_ < 0 && checking_ < 0 && !controller_->isActive()) {
    QueueEntry* next = nullptr;
    for (auto& e : entries_)
      if (e.pending()) {
        next = &e;
        break;
      }
    if (!next) break;
    RunSpec spec = next->spec;
    // An interrupted or stopped run continues from its checkpoint, in its own directory; one
    // cut short before its first checkpoint starts again in a new one.
    const bool resume = next->state != State::Queued && !next->runDir.isEmpty() &&
                        RunDirectory::hasCheckpoint(next->runDir);
    if (resume) {
      spec.resume = next->runDir.toStdString();
      spec.run_dir.clear();
    }
    const int id = next->id;
    // The checks of any run before its ranks are spawned (a CUDA run this machine cannot hold,
    // user-task files the dry run rejects), in the background: the answer starts it or fails it.
    if (checked_ != id && needsPreStartCheck(spec)) {
      checking_ = id;
      check_->start(spec, controller_->workerProgram());
      if (checking_ >= 0) break;
      continue;  // answered at once (onChecked): start it, or go on to the next
    }
    checked_ = -1;
    QString error;
    current_ = id;  // set first: a run that fails at once ends through onControllerState
    if (!launcher_(spec, &error)) {
      current_ = -1;
      failToStart(id, error);
      continue;
    }
    next = find(id);
    if (current_ == id) {  // not already ended by a rank that failed at once
      next->state = State::Running;
      next->reason.clear();
    }
    next->runDir = controller_->runDirectory();
    persist();
    Q_EMIT entryChanged(*next);
    Q_EMIT entryStarted(id);
  }
  starting_ = false;
  if (current_ < 0 && checking_ < 0 && !controller_->isActive()) Q_EMIT idle();
}

void RunQueue::onChecked(const QString& problem, const QString& warning) {
  const int id = checking_;
  checking_ = -1;
  if (const QueueEntry* e = find(id); e && e->pending()) {
    if (!warning.isEmpty())
      Q_EMIT message(QStringLiteral("queue: run %1: warning: %2").arg(id).arg(warning));
    if (problem.isEmpty())
      checked_ = id;  // startNext() starts it without asking again
    else
      failToStart(id, problem);
  }
  // Inside startNext() when the answer came at once: its loop goes on.
  if (!starting_) QTimer::singleShot(0, this, &RunQueue::startNext);
}

void RunQueue::failToStart(int id, const QString& error) {
  QueueEntry* e = find(id);
  e->state = State::Failed;
  e->reason = QLatin1String(QueueEntry::kCouldNotStart) + firstLine(error);
  Q_EMIT message(QStringLiteral("queue: run %1 could not start: %2").arg(id).arg(error));
  if (stop_on_failure_) paused_ = true;
  persist();
  Q_EMIT entryChanged(*e);
  Q_EMIT entryEnded(id);
}

void RunQueue::onControllerState() {
  if (!RunController::isTerminal(controller_->state())) return;
  if (current_ < 0) {
    // A run started elsewhere (the Start button) ended: the queue waiting behind it goes on.
    QTimer::singleShot(0, this, &RunQueue::startNext);
    return;
  }
  const int id = current_;
  current_ = -1;
  if (QueueEntry* e = find(id)) {
    switch (controller_->state()) {
      case RunController::State::Finished:
        e->state = State::Finished;
        break;
      case RunController::State::Stopped:
        // Someone stopped it: the next run should not start on its heels.
        e->state = State::Stopped;
        paused_ = true;
        break;
      default:
        e->state = State::Failed;
        if (stop_on_failure_) paused_ = true;
        break;
    }
    e->runDir = controller_->runDirectory();
    e->reason = firstLine(controller_->reason());
    persist();
    Q_EMIT entryChanged(*e);
  }
  Q_EMIT entryEnded(id);
  // Not from inside the controller's own state change.
  QTimer::singleShot(0, this, &RunQueue::startNext);
}

}  // namespace ddpdesk
