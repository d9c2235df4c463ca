#include "local_start_check.h"

#include <unistd.h>

#include <QDir>
#include <QFileInfo>
#include <string>

#include "run_directory.h"
#include "worker_settings.h"

namespace ddpdesk {
namespace {

QString invalid(const char* field, const std::string& value, const QString& why) {
  return QStringLiteral("invalid %1 '%2': %3")
      .arg(QString::fromStdString(field_label(field, Spelling::Flag)),
           QString::fromStdString(value), why);
}

// Whether `path` is `dir` or lies inside it.
bool within(const QString& path, const QString& dir) {
  const QString p = QDir::cleanPath(QFileInfo(path).absoluteFilePath());
  const QString d = QDir::cleanPath(QFileInfo(dir).absoluteFilePath());
  return p == d || p.startsWith(d + QLatin1Char('/'));
}

}  // namespace

QString localStartProblem(const RunSpec& spec, const QProcessEnvironment& rankEnvironment) {
  // The values must outlive the lookup's returned pointers until read_worker_settings copies
  // them: one string per call, kept here.
  std::string held;
  const WorkerSettingsResult settings = read_worker_settings([&](const char* name) -> const char* {
    const QString key = QString::fromLatin1(name);
    if (!rankEnvironment.contains(key)) return nullptr;
    held = rankEnvironment.value(key).toStdString();
    return held.c_str();
  });
  if (!settings.ok()) return QString::fromStdString(settings.error);

  // Slurm runs place their directory on the cluster; the launcher checks that side.
  if (!spec.run_dir.empty() && !spec.is_slurm()) {
    const QString dir = QString::fromStdString(spec.run_dir);
    const bool continuing =
        !spec.resume.empty() && within(QString::fromStdString(spec.resume), dir);
    if (QFileInfo::exists(RunDirectory::specPath(dir)) && !continuing)
      return invalid("run_dir", spec.run_dir,
                     QStringLiteral("it holds another run (spec.json); resume that run "
                                    "(--resume) or choose another directory"));
  }

  if (!spec.metrics_file.empty()) {
    const QFileInfo file(QString::fromStdString(spec.metrics_file));
    const QFileInfo parent(file.absolutePath());
    if (!parent.isDir())
      return invalid("metrics_file", spec.metrics_file,
                     QStringLiteral("its directory %1 does not exist").arg(parent.filePath()));
    if (::access(QFile::encodeName(parent.filePath()).constData(), W_OK) != 0)
      return invalid("metrics_file", spec.metrics_file,
                     QStringLiteral("its directory %1 is not writable").arg(parent.filePath()));
  }
  return {};
}

}  // namespace ddpdesk
