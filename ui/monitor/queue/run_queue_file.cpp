// RunQueue's file (run_queue.h): queue.json read with every key and value checked (one line
// naming the JSON path of what is wrong), and written atomically after every change.
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <nlohmann/json.hpp>

#include "queue/run_queue.h"
#include "run/atomic_file.h"

namespace ddpdesk {

// A queue file's value as text: field_value_text, the one rule, on its JSON.
QString queueValueText(const QJsonValue& v) {
  const QByteArray text = QJsonDocument(QJsonArray{v}).toJson(QJsonDocument::Compact);
  return QString::fromStdString(field_value_text(nlohmann::json::parse(text.toStdString())[0]));
}

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

}  // namespace

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
        return fail(invalid(it.key(), queueValueText(it.value()),
                            QStringLiteral("is not a queue key (%1)").arg(kFileKeys.join(", "))));
    if (o.contains(QLatin1String("version")) && o.value(QLatin1String("version")).toInt() != 1)
      return fail(invalid(QStringLiteral("version"),
                          queueValueText(o.value(QLatin1String("version"))),
                          QStringLiteral("must be 1")));
    for (const char* key : {"paused", "stop_on_failure"}) {
      const QJsonValue v = o.value(QLatin1String(key));
      if (!v.isUndefined() && !v.isBool())
        return fail(invalid(QLatin1String(key), queueValueText(v),
                            QStringLiteral("must be true or false")));
    }
    paused = o.value(QLatin1String("paused")).toBool();
    stopOnFailure = o.value(QLatin1String("stop_on_failure")).toBool();
    if (o.contains(QLatin1String("sweep")))
      extra.insert(QStringLiteral("sweep"), o.value(QLatin1String("sweep")));
    const QJsonValue list = o.value(QLatin1String("entries"));
    if (!list.isArray())
      return fail(invalid(QStringLiteral("entries"), queueValueText(list),
                          QStringLiteral("must be a list of {\"spec\": {...}} objects")));
    const QJsonArray array = list.toArray();
    for (int i = 0; i < array.size(); ++i) {
      const QString where = QStringLiteral("entries[%1]").arg(i);
      if (!array[i].isObject())
        return fail(invalid(where, queueValueText(array[i]),
                            QStringLiteral("must be an object with \"spec\"")));
      const QJsonObject e = array[i].toObject();
      for (auto it = e.begin(); it != e.end(); ++it)
        if (!kEntryKeys.contains(it.key()))
          return fail(
              invalid(where + '.' + it.key(), queueValueText(it.value()),
                      QStringLiteral("is not a queue entry key (%1)").arg(kEntryKeys.join(", "))));
      QueueEntry entry;
      const QJsonValue spec = e.value(QLatin1String("spec"));
      if (!spec.isObject())
        return fail(invalid(where + QStringLiteral(".spec"), queueValueText(spec),
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
          return fail(invalid(where + QStringLiteral(".state"), queueValueText(state),
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

bool RunQueue::claim(QString* error) {
  auto fail = [&](const QString& line) {
    if (error) *error = line;
    return false;
  };
  if (const QString why = atomicWriteProblem(path_); !why.isEmpty())
    return fail(QStringLiteral("cannot run queue %1: %2 (each run's state is written back into "
                               "it)")
                    .arg(path_, why));
  bool held = false;
  if (const QString why = lock_.acquire(path_ + QStringLiteral(".lock"), &held); !why.isEmpty())
    return fail(held ? QStringLiteral("queue %1 is already being run by %2 (wait for it, or stop "
                                      "it there)")
                           .arg(path_, why)
                     : QStringLiteral("cannot run queue %1: %2").arg(path_, why));
  return true;
}

void RunQueue::persist() {
  QString error;
  if (!save(&error)) Q_EMIT message(error);
  Q_EMIT changed();
}

}  // namespace ddpdesk
