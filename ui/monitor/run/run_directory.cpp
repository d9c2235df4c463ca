#include "run/run_directory.h"

#include "run/atomic_file.h"
#include "run/exit_record_status.h"
#include "run/jsonl_append.h"
#include "run_layout.h"

#include <sys/stat.h>
#include <unistd.h>

#include <QDir>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QStandardPaths>
#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstring>

namespace ddpdesk {
namespace {

const char* const kStampFormat = "yyyyMMdd-HHmmss";

// Creates `path` and its missing parents (as mkdir -p); false with *why, the failing mkdir's
// strerror ("Not a directory", "Read-only file system", "File name too long").
bool makePath(const QString& path, QString* why) {
  const QByteArray p = QFile::encodeName(QDir::cleanPath(QFileInfo(path).absoluteFilePath()));
  for (qsizetype i = 1; i <= p.size(); ++i) {
    if (i < p.size() && p[i] != '/') continue;
    const QByteArray part = p.left(i);
    if (::mkdir(part.constData(), 0777) == 0) continue;
    const int err = errno;
    struct stat st {};
    if (::stat(part.constData(), &st) == 0 && S_ISDIR(st.st_mode)) continue;  // already there
    *why = QString::fromLocal8Bit(std::strerror(err == EEXIST ? ENOTDIR : err));
    return false;
  }
  return true;
}

// One line of monitor.log: a timestamp and the text, line breaks shown as " | ".
QByteArray eventLine(const QString& text) {
  QString line = text;
  line.replace(QLatin1Char('\n'), QLatin1String(" | "));  // one line per event
  return (QDateTime::currentDateTime().toString(Qt::ISODateWithMs) + QLatin1Char(' ') + line +
          QLatin1Char('\n'))
      .toUtf8();
}

// Directory names stay portable and shell-friendly whatever the run is called.
QString safeName(const QString& text) {
  QString out;
  for (QChar c : text) {
    const bool keep =
        (c.unicode() < 128 && c.isLetterOrNumber()) || c == '-' || c == '_' || c == '.';
    out += keep ? c : QChar('_');
  }
  while (out.startsWith('.')) out.remove(0, 1);
  return out.left(64);
}

QJsonArray toArray(const QList<int>& v) {
  QJsonArray a;
  for (int x : v) a.append(x);
  return a;
}

QList<int> fromArray(const QJsonValue& v) {
  QList<int> out;
  for (const auto& x : v.toArray()) out.append(x.toInt());
  return out;
}

// The engine's checkpoints (run_layout.h): zero-padded, so name order is step order.
QStringList findCheckpoints(const QString& dir) {
  QDir d(QString::fromStdString(run_layout::checkpoints_dir(dir.toStdString())));
  QStringList out;
  for (const auto& n : d.entryList(QDir::Files, QDir::Name | QDir::Reversed))
    if (run_layout::is_checkpoint_name(n.toStdString())) out.append(d.absoluteFilePath(n));
  return out;
}

}  // namespace

RunDirectory::RunDirectory() = default;
RunDirectory::~RunDirectory() = default;

QString RunDirectory::runsRoot() {
  return QStandardPaths::writableLocation(QStandardPaths::GenericDataLocation) +
         QStringLiteral("/ddpdesk/runs");
}

QString RunDirectory::newRunPath(const RunSpec& spec, const QDateTime& now, const QString& root) {
  QString label = safeName(QString::fromStdString(spec.name.empty() ? spec.task : spec.name));
  if (label.isEmpty()) label = QStringLiteral("run");
  const QString base = root + '/' + now.toString(QLatin1String(kStampFormat)) + '-' + label;
  QString path = base;
  for (int n = 2; QFileInfo::exists(path); ++n) path = base + '-' + QString::number(n);
  return path;
}

QString RunDirectory::continuedPath(const RunSpec& spec) {
  if (!spec.run_dir.empty()) return QString::fromStdString(spec.run_dir);
  const QString resume = QString::fromStdString(spec.resume);
  if (!resume.isEmpty() && QFileInfo(resume).isDir() && QFileInfo::exists(specPath(resume)))
    return QFileInfo(resume).absoluteFilePath();
  return {};
}

bool RunDirectory::create(const RunSpec& spec, QString* error) {
  const QString path = spec.run_dir.empty()
                           ? newRunPath(spec, QDateTime::currentDateTime())
                           : QFileInfo(QString::fromStdString(spec.run_dir)).absoluteFilePath();
  return open(path, error);
}

bool RunDirectory::open(const QString& path, QString* error) {
  close();
  if (QString why; !makePath(path, &why)) {
    if (error) *error = QStringLiteral("cannot create run directory %1: %2").arg(path, why);
    return false;
  }
  bool held = false;
  if (const QString why = lock_.acquire(monitorLockPath(path), &held); !why.isEmpty()) {
    if (error)
      *error = held ? QStringLiteral("run directory %1 is in use by %2, the monitor of its run")
                          .arg(path, why)
                    : why;
    return false;
  }
  // Unbuffered: each append is one write(2) of whole lines, so a crash of the monitor leaves a
  // file of complete lines that loads back; one killed mid-write leaves a half line, ended here.
  auto f = std::make_unique<QFile>(metricsPath(path));
  bool endedHalfLine = false;
  if (!openJsonlForAppend(*f, QIODevice::Unbuffered, error, &endedHalfLine)) {
    lock_.release();
    return false;
  }
  metrics_ = std::move(f);
  path_ = QFileInfo(path).absoluteFilePath();
  ended_half_lines_ = endedHalfLine ? 1 : 0;
  if (endedHalfLine)
    logEvent(
        QStringLiteral("metrics.jsonl ended in half a line (its writer was killed "
                       "mid-write); ended it there, to be read as one malformed line"));
  return true;
}

QString RunDirectory::unusableReason(const QString& path) {
  const QByteArray p = QFile::encodeName(QDir::cleanPath(QFileInfo(path).absoluteFilePath()));
  auto because = [](const char* what, int err) {
    return QStringLiteral("%1: %2").arg(QLatin1String(what),
                                        QString::fromLocal8Bit(std::strerror(err)));
  };
  for (const QByteArray& name : p.split('/'))
    if (name.size() > NAME_MAX) return because("cannot create it", ENAMETOOLONG);
  if (p.size() >= PATH_MAX) return because("cannot create it", ENAMETOOLONG);
  // The deepest part of the path that exists: the run directory itself, or where it would be made.
  QByteArray existing = p;
  struct stat st {};
  while (::stat(existing.constData(), &st) != 0) {
    if (errno != ENOENT) return because("cannot create it", errno);
    existing.truncate(std::max<qsizetype>(1, existing.lastIndexOf('/')));
  }
  const bool itself = existing == p;
  if (!S_ISDIR(st.st_mode)) return because("cannot create it", ENOTDIR);
  if (::access(existing.constData(), W_OK | X_OK) != 0)
    return because(itself ? "cannot write in it" : "cannot create it", errno);
  return {};
}

void RunDirectory::close() {
  metrics_.reset();
  log_.reset();
  path_.clear();
  lock_.release();
  metrics_error_.clear();
  ended_half_lines_ = 0;
}

bool RunDirectory::writeSpec(const RunSpec& spec, QString* error) {
  return writeFileAtomically(specPath(path_), QByteArray::fromStdString(to_json_text(spec) + "\n"),
                             error);
}

bool RunDirectory::appendMetrics(const QByteArray& lines) {
  if (!metrics_ || !metrics_error_.isEmpty()) return false;
  // write(2) itself: QFile reports a write cut short by a full disk as "Unknown error".
  const int fd = metrics_->handle();
  struct stat st {};
  const off_t before = ::fstat(fd, &st) == 0 ? st.st_size : -1;
  const char* at = lines.constData();
  qsizetype left = lines.size();
  int err = 0;
  while (left > 0) {
    const ssize_t n = ::write(fd, at, size_t(left));
    if (n > 0) {
      at += n;
      left -= n;
    } else if (n < 0 && errno != EINTR) {
      err = errno;
      break;
    }
  }
  if (left == 0) return true;
  metrics_error_ = QStringLiteral("cannot write %1: %2")
                       .arg(metrics_->fileName(), QString::fromLocal8Bit(std::strerror(err)));
  // No half line: the file ends where the last whole write ended.
  if (before >= 0) (void)::ftruncate(fd, before);
  return false;
}

bool RunDirectory::writeStatus(const RunStatus& s, QString* error) {
  QJsonObject o;
  o[QStringLiteral("state")] = s.state;
  o[QStringLiteral("reason")] = s.reason;
  o[QStringLiteral("exit_codes")] = toArray(s.exitCodes);
  o[QStringLiteral("signals")] = toArray(s.termSignals);
  o[QStringLiteral("started_at")] = s.startedAt.toString(Qt::ISODateWithMs);
  o[QStringLiteral("ended_at")] = s.endedAt.toString(Qt::ISODateWithMs);
  o[QStringLiteral("last_step")] = s.lastStep;
  o[QStringLiteral("total_steps")] = s.totalSteps;
  o[QStringLiteral("last_loss")] =
      std::isfinite(s.lastLoss) ? QJsonValue(s.lastLoss) : QJsonValue();
  o[QStringLiteral("malformed_lines")] = s.malformedLines;
  o[QStringLiteral("ignored_lines")] = s.ignoredLines;
  o[QStringLiteral("unknown_fields")] = s.unknownFields;
  o[QStringLiteral("dropped_connections")] = s.droppedConnections;
  o[QStringLiteral("restarts")] = s.restarts;
  if (!s.metricsIncomplete.isEmpty()) o[QStringLiteral("metrics_incomplete")] = s.metricsIncomplete;
  return writeFileAtomically(statusPath(path_), QJsonDocument(o).toJson(), error);
}

namespace {
// A file of the run directory's layout (run_layout.h), as a QString.
QString layoutPath(std::string (*name)(const std::string&), const QString& dir) {
  return QString::fromStdString(name(dir.toStdString()));
}
}  // namespace

bool RunDirectory::hasCheckpoint(const QString& dir) {
  return !findCheckpoints(dir).isEmpty();
}

QString RunDirectory::specPath(const QString& dir) {
  return layoutPath(run_layout::spec_file, dir);
}
QString RunDirectory::metricsPath(const QString& dir) {
  return layoutPath(run_layout::metrics_file, dir);
}
QString RunDirectory::statusPath(const QString& dir) {
  return layoutPath(run_layout::status_file, dir);
}
QString RunDirectory::logPath(const QString& dir, int rank) {
  return QString::fromStdString(run_layout::rank_log(dir.toStdString(), rank));
}
QString RunDirectory::monitorLogPath(const QString& dir) {
  return layoutPath(run_layout::monitor_log, dir);
}
QString RunDirectory::rankMetricsDir(const QString& dir) {
  return layoutPath(run_layout::rank_metrics_dir, dir);
}
QString RunDirectory::rankMetricsPath(const QString& dir, int rank) {
  return QString::fromStdString(run_layout::rank_metrics(dir.toStdString(), rank));
}

QString RunDirectory::systemMetricsPath(const QString& dir) {
  return layoutPath(run_layout::system_metrics, dir);
}

QString RunDirectory::monitorLockPath(const QString& dir) {
  return dir + QStringLiteral("/monitor.lock");  // the monitor's alone: not in run_layout.h
}

QString RunDirectory::liveMonitor(const QString& dir) {
  return FileLock::holder(monitorLockPath(dir));
}

void RunDirectory::logEvent(const QString& text) {
  if (path_.isEmpty()) return;
  if (!log_) {
    auto f = std::make_unique<QFile>(monitorLogPath(path_));
    if (!f->open(QIODevice::WriteOnly | QIODevice::Append | QIODevice::Unbuffered)) return;
    log_ = std::move(f);
  }
  log_->write(eventLine(text));
}

void RunDirectory::appendEvent(const QString& dir, const QString& text) {
  if (dir.isEmpty() || !QFileInfo(dir).isDir()) return;
  QFile f(monitorLogPath(dir));
  if (f.open(QIODevice::WriteOnly | QIODevice::Append | QIODevice::Unbuffered))
    f.write(eventLine(text));
}

void RunDirectory::forgetEnding() {
  QFile::remove(statusPath(path_));
  // Every rank's, not just this run's: the previous run may have had more ranks.
  QDir dir(path_);
  for (const QString& name : dir.entryList({QStringLiteral("rank-*.exit.json")}, QDir::Files))
    dir.remove(name);
}

std::optional<RunStatus> RunDirectory::readStatus(const QString& dir) {
  QFile f(statusPath(dir));
  if (!f.open(QIODevice::ReadOnly)) return std::nullopt;
  const QJsonDocument doc = QJsonDocument::fromJson(f.readAll());
  if (!doc.isObject()) return std::nullopt;
  const QJsonObject o = doc.object();
  RunStatus s;
  s.state = o.value(QStringLiteral("state")).toString();
  s.reason = o.value(QStringLiteral("reason")).toString();
  s.exitCodes = fromArray(o.value(QStringLiteral("exit_codes")));
  s.termSignals = fromArray(o.value(QStringLiteral("signals")));
  s.startedAt =
      QDateTime::fromString(o.value(QStringLiteral("started_at")).toString(), Qt::ISODateWithMs);
  s.endedAt =
      QDateTime::fromString(o.value(QStringLiteral("ended_at")).toString(), Qt::ISODateWithMs);
  s.lastStep = o.value(QStringLiteral("last_step")).toInteger();
  s.totalSteps = o.value(QStringLiteral("total_steps")).toInteger();
  const QJsonValue loss = o.value(QStringLiteral("last_loss"));
  s.lastLoss = loss.isDouble() ? loss.toDouble() : std::nan("");
  s.malformedLines = o.value(QStringLiteral("malformed_lines")).toInteger();
  s.ignoredLines = o.value(QStringLiteral("ignored_lines")).toInteger();
  s.unknownFields = o.value(QStringLiteral("unknown_fields")).toInteger();
  s.droppedConnections = o.value(QStringLiteral("dropped_connections")).toInteger();
  s.restarts = o.value(QStringLiteral("restarts")).toInt();
  s.metricsIncomplete = o.value(QStringLiteral("metrics_incomplete")).toString();
  return s;
}

std::optional<RunRecord> RunDirectory::readRecord(const QString& dir) {
  QFile f(specPath(dir));
  if (!f.open(QIODevice::ReadOnly)) return std::nullopt;
  RunRecord r;
  r.path = QFileInfo(dir).absoluteFilePath();
  r.id = QFileInfo(dir).fileName();
  SpecResult parsed = parse_run_spec(f.readAll().toStdString());
  r.spec = parsed.spec;
  r.specValid = parsed.ok();
  r.status = readStatus(dir);
  if (!r.status && r.specValid) r.status = statusFromExitRecords(dir, r.spec.world_size());
  r.created = QDateTime::fromString(r.id.left(15), QLatin1String(kStampFormat));
  if (!r.created.isValid()) r.created = QFileInfo(f).lastModified();
  r.checkpoints = findCheckpoints(dir);
  r.monitor = liveMonitor(dir);
  return r;
}

std::vector<RunRecord> RunDirectory::listRuns(const QString& root) {
  std::vector<RunRecord> out;
  const QFileInfoList dirs = QDir(root).entryInfoList(QDir::Dirs | QDir::NoDotAndDotDot);
  for (const auto& d : dirs)
    if (auto r = readRecord(d.absoluteFilePath())) out.push_back(std::move(*r));
  std::sort(out.begin(), out.end(), [](const RunRecord& a, const RunRecord& b) {
    return a.created != b.created ? a.created > b.created : a.id > b.id;
  });
  return out;
}

}  // namespace ddpdesk
