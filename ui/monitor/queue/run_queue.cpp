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

constexpr State kStates[] = {State::Queued, State::Running, State::Finished,
                             State::Failed, State::Stopped, State::Interrupted};

// Keys of the file and of an entry; anything else is a typo worth naming.
const QStringList kFileKeys = {QStringLiteral("version"), QStringLiteral("paused"),
                               QStringLiteral("stop_on_failure"), QStringLiteral("entries"),
                               QStringLiteral("sweep")};
const QStringList kEntryKeys = {QStringLiteral("id"),     QStringLiteral("spec"),
                                QStringLiteral("state"),  QStringLiteral("run_dir"),
                                QStringLiteral("reason"), QStringLiteral("fields"),
                                QStringLiteral("sweep"),  QStringLiteral("sweep_run")};
const QStringList kExtraEntryKeys = {QStringLiteral("fields"), QStringLiteral("sweep"),
                                     QStringLiteral("sweep_run")};

// A queue file's fields are named by their JSON path ("entries[2].spec.lr").
QString invalid(const QString& field, const QString& value, const QString& allowed) {
  return QString::fromStdString(format_error(
      {field.toStdString(), value.toStdString(), allowed.toStdString()}, Spelling::JsonKey));
}

// A queue file's value as text: field_value_text, the one rule, on its JSON.
QString valueText(const QJsonValue& v) {
  const QByteArray text = QJsonDocument(QJsonArray{v}).toJson(QJsonDocument::Compact);
  return QString::fromStdString(field_value_text(nlohmann::json::parse(text.toStdString())[0]));
}

bool hasCheckpoint(const QString& runDir) {
  return !runDir.isEmpty() && !QDir(runDir + QStringLiteral("/checkpoints"))
                                   .entryList({QStringLiteral("step-*.pt")}, QDir::Files)
                                   .isEmpty();
}

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
      parts << it.key() + '=' + valueText(it.value());
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

bool RunQueue::load(const QString& path, QString* error) {
  auto fail = [&](const QString& line) {
    if (error) *error = line;
    return false;
  };
  std::vector<QueueEntry> entries;
  QJsonObject extra;
  bool paused = false, stopOnFailure = false;
  QFile f(path);
  if (f.exists()) {
    if (!f.open(QIODevice::ReadOnly))
      return fail(QStringLiteral("cannot read queue %1: %2").arg(path, f.errorString()));
    const QByteArray text = f.readAll();
    QJsonParseError parseError;
    const QJsonDocument doc = QJsonDocument::fromJson(text, &parseError);
    if (doc.isNull())
      return fail(QStringLiteral("invalid queue %1: not valid JSON (%2)")
                      .arg(path, parseError.errorString()));
    if (!doc.isObject())
      return fail(
          QStringLiteral("invalid queue %1: must be a JSON object with \"entries\"").arg(path));
    const QJsonObject o = doc.object();
    for (auto it = o.begin(); it != o.end(); ++it)
      if (!kFileKeys.contains(it.key()))
        return fail(invalid(it.key(), valueText(it.value()),
                            QStringLiteral("is not a queue key (%1)").arg(kFileKeys.join(", "))));
    if (o.contains(QLatin1String("version")) && o.value(QLatin1String("version")).toInt() != 1)
      return fail(invalid(QStringLiteral("version"), valueText(o.value(QLatin1String("version"))),
                          QStringLiteral("must be 1")));
    for (const char* key : {"paused", "stop_on_failure"}) {
      const QJsonValue v = o.value(QLatin1String(key));
      if (!v.isUndefined() && !v.isBool())
        return fail(
            invalid(QLatin1String(key), valueText(v), QStringLiteral("must be true or false")));
    }
    paused = o.value(QLatin1String("paused")).toBool();
    stopOnFailure = o.value(QLatin1String("stop_on_failure")).toBool();
    if (o.contains(QLatin1String("sweep")))
      extra.insert(QStringLiteral("sweep"), o.value(QLatin1String("sweep")));
    const QJsonValue list = o.value(QLatin1String("entries"));
    if (!list.isArray())
      return fail(invalid(QStringLiteral("entries"), valueText(list),
                          QStringLiteral("must be a list of {\"spec\": {...}} objects")));
    const QJsonArray array = list.toArray();
    for (int i = 0; i < array.size(); ++i) {
      const QString where = QStringLiteral("entries[%1]").arg(i);
      if (!array[i].isObject())
        return fail(
            invalid(where, valueText(array[i]), QStringLiteral("must be an object with \"spec\"")));
      const QJsonObject e = array[i].toObject();
      for (auto it = e.begin(); it != e.end(); ++it)
        if (!kEntryKeys.contains(it.key()))
          return fail(
              invalid(where + '.' + it.key(), valueText(it.value()),
                      QStringLiteral("is not a queue entry key (%1)").arg(kEntryKeys.join(", "))));
      QueueEntry entry;
      const QJsonValue spec = e.value(QLatin1String("spec"));
      if (!spec.isObject())
        return fail(invalid(where + QStringLiteral(".spec"), valueText(spec),
                            QStringLiteral("must be a JSON object of run spec fields")));
      // The one RunSpec reading and check, as for --config.
      const nlohmann::json fields = nlohmann::json::parse(
          QJsonDocument(spec.toObject()).toJson(QJsonDocument::Compact).toStdString());
      auto problems = apply_fields(fields, entry.spec);
      if (problems.empty()) problems = validate(entry.spec);
      if (!problems.empty())
        return fail(invalid(
            where + QStringLiteral(".spec.") + QString::fromStdString(problems.front().field),
            QString::fromStdString(problems.front().value),
            QString::fromStdString(problems.front().allowed)));
      const QJsonValue state = e.value(QLatin1String("state"));
      if (!state.isUndefined()) {
        bool known = false;
        for (State s : kStates)
          if (state.toString() == QueueEntry::stateName(s)) {
            entry.state = s;
            known = true;
          }
        if (!known)
          return fail(invalid(where + QStringLiteral(".state"), valueText(state),
                              QStringLiteral("must be queued, running, finished, failed, stopped "
                                             "or interrupted")));
      }
      // A run the app was watching when it died: its ranks checkpointed and stopped.
      if (entry.state == State::Running) entry.state = State::Interrupted;
      const QJsonValue id = e.value(QLatin1String("id"));
      entry.id = id.isDouble() ? id.toInt() : 0;
      entry.runDir = e.value(QLatin1String("run_dir")).toString();
      entry.reason = e.value(QLatin1String("reason")).toString();
      for (const QString& key : kExtraEntryKeys)
        if (e.contains(key)) entry.extra.insert(key, e.value(key));
      entries.push_back(std::move(entry));
    }
  }
  // Ids: those in the file where they are unique and positive, fresh ones for the rest.
  int next = 1;
  for (const auto& e : entries) next = std::max(next, e.id + 1);
  QList<int> seen;
  for (auto& e : entries) {
    if (e.id <= 0 || seen.contains(e.id)) e.id = next++;
    seen.append(e.id);
  }
  entries_ = std::move(entries);
  extra_ = extra;
  next_id_ = next;
  paused_ = paused;
  stop_on_failure_ = stopOnFailure;
  path_ = QFileInfo(path).absoluteFilePath();
  current_ = -1;
  Q_EMIT changed();
  return true;
}

bool RunQueue::save(QString* error) {
  if (path_.isEmpty()) return true;
  QJsonObject o = extra_;
  o[QStringLiteral("version")] = 1;
  o[QStringLiteral("paused")] = paused_;
  o[QStringLiteral("stop_on_failure")] = stop_on_failure_;
  QJsonArray list;
  for (const auto& e : entries_) {
    QJsonObject j = e.extra;
    j[QStringLiteral("id")] = e.id;
    j[QStringLiteral("spec")] =
        QJsonDocument::fromJson(QByteArray::fromStdString(to_json_text(e.spec, -1))).object();
    j[QStringLiteral("state")] = QueueEntry::stateName(e.state);
    j[QStringLiteral("run_dir")] = e.runDir;
    j[QStringLiteral("reason")] = e.reason;
    list.append(j);
  }
  o[QStringLiteral("entries")] = list;
  QDir().mkpath(QFileInfo(path_).absolutePath());
  return writeFileAtomically(path_, QJsonDocument(o).toJson(), error);
}

void RunQueue::persist() {
  QString error;
  if (!save(&error)) Q_EMIT message(error);
  Q_EMIT changed();
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
    const bool resume = next->state != State::Queued && hasCheckpoint(next->runDir);
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
