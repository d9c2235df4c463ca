#include "checks/local_start_check.h"

#include <unistd.h>

#include <QDir>
#include <QFileInfo>
#include <QStandardPaths>
#include <optional>
#include <string>

#include "fmnist_files.h"
#include "local/script_rank.h"
#include "metrics/output_loss.h"
#include "run/run_directory.h"
#include "worker_settings.h"

namespace ddpdesk {
namespace {

QString invalid(const char* field, const std::string& value, const QString& why) {
  return QString::fromStdString(format_error({field, value, why.toStdString()}, Spelling::Flag));
}

// Whether `path` is `dir` or lies inside it.
bool within(const QString& path, const QString& dir) {
  const QString p = QDir::cleanPath(QFileInfo(path).absoluteFilePath());
  const QString d = QDir::cleanPath(QFileInfo(dir).absoluteFilePath());
  return p == d || p.startsWith(d + QLatin1Char('/'));
}

// The spec a resumed run was started with: its directory's spec.json, for --resume DIR or
// --resume DIR/checkpoints/step-N.pt. None when there is no such file.
std::optional<RunSpec> resumedSpec(const QString& resume) {
  const QFileInfo info(resume);
  const QString dir = info.isDir() ? info.absoluteFilePath() : info.dir().absolutePath() + "/..";
  QFile f(RunDirectory::specPath(QDir::cleanPath(dir)));
  if (!f.open(QIODevice::ReadOnly)) return std::nullopt;
  const SpecResult r = parse_run_spec(f.readAll().toStdString());
  if (!r.ok()) return std::nullopt;
  return r.spec;
}

// A resume continues the run's plan: the epoch and the optimizer step within it that the
// checkpoint holds mean other samples, and other step totals, under another world size, batch,
// accumulation or data set.
QString planChange(const RunSpec& spec, const RunSpec& was) {
  auto changed = [&](const char* field, std::int64_t now, std::int64_t before) {
    return invalid(field, std::to_string(now),
                   QStringLiteral("the resumed run trains with %1 (where it stands depends on "
                                  "it); start a new run to change it")
                       .arg(before));
  };
  if (!spec.is_slurm() && !was.is_slurm() && spec.nproc != was.nproc)
    return changed("nproc", spec.nproc, was.nproc);
  if (spec.batch_size != was.batch_size)
    return changed("batch_size", spec.batch_size, was.batch_size);
  if (spec.accum_steps != was.accum_steps)
    return changed("accum_steps", spec.accum_steps, was.accum_steps);
  if (spec.resolved_dataset_size() != was.resolved_dataset_size())
    return changed("dataset_size", spec.resolved_dataset_size(), was.resolved_dataset_size());
  return {};
}

}  // namespace

namespace {

// The script's files on this machine: the script, the interpreter, the working and log folders.
// A Slurm job's nodes see the same files (a shared file system) but their own PATH: `python3`
// is looked for there, a path here.
QString scriptFileProblem(const RunSpec& spec, const QProcessEnvironment& env) {
  const QFileInfo script(QString::fromStdString(spec.script));
  if (!script.exists()) return invalid("script", spec.script, QStringLiteral("no such file"));
  if (!script.isFile() || !script.isReadable())
    return invalid("script", spec.script, QStringLiteral("is not a readable file"));
  const QString python =
      spec.python.empty() ? QStringLiteral("python3") : QString::fromStdString(spec.python);
  QString found = python;
  // A Slurm job's `python3` is the nodes': a missing one is its rank's failure, named in its
  // output.
  if (!python.contains(QLatin1Char('/')) && !spec.is_slurm()) {
    found = QStandardPaths::findExecutable(
        python, env.value(QStringLiteral("PATH")).split(QLatin1Char(':'), Qt::SkipEmptyParts));
    if (found.isEmpty())
      return spec.python.empty()
                 ? invalid("python", "python3",
                           QStringLiteral("no python3 on PATH; name the "
                                          "interpreter with --python"))
                 : invalid("python", spec.python, QStringLiteral("not found on PATH"));
  }
  const QFileInfo interpreter(found);
  if (found.contains(QLatin1Char('/')) && (!interpreter.isFile() || !interpreter.isExecutable()))
    return invalid("python", spec.python.empty() ? "python3" : spec.python,
                   QStringLiteral("is not an executable file"));
  if (!spec.workdir.empty() && !QFileInfo(QString::fromStdString(spec.workdir)).isDir())
    return invalid("workdir", spec.workdir, QStringLiteral("no such directory"));
  // The log directory may not exist yet: the script creates it. Its parent must.
  if (!spec.logdir.empty()) {
    const QFileInfo logdir(QString::fromStdString(spec.logdir));
    if (logdir.exists() && !logdir.isDir())
      return invalid("logdir", spec.logdir, QStringLiteral("is not a directory"));
  }
  return {};
}

// A Python-script run: its files (but through a login node, where they are the cluster's),
// arguments a shell could split, and a loss pattern that compiles.
QString scriptProblem(const RunSpec& spec, const QProcessEnvironment& env) {
  // Through a login node the files are the cluster's (the spec's rule: absolute paths there).
  if (!spec.is_slurm_via_login())
    if (const QString problem = scriptFileProblem(spec, env); !problem.isEmpty()) return problem;
  QString why;
  splitShellWords(QString::fromStdString(spec.script_args), &why);
  if (!why.isEmpty()) return invalid("script_args", spec.script_args, why);
  if (!spec.loss_pattern.empty()) {
    const OutputLossReader reader(QString::fromStdString(spec.loss_pattern));
    if (!reader.valid()) return invalid("loss_pattern", spec.loss_pattern, reader.error());
  }
  return {};
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
  // The Fashion-MNIST files, where the ranks would look for them (fmnist_files.h). A Slurm job's
  // nodes look in their own file system.
  if (uses_fmnist(spec) && !spec.is_slurm())
    if (const std::string missing = fmnist_missing(settings.settings.fmnist_dir); !missing.empty())
      return QString::fromStdString(missing);

  // A run whose monitor is alive (here or on a machine sharing the directory) is its monitor's:
  // a second set of ranks there would fight the first over checkpoints and metrics.
  if (const QString dir = RunDirectory::continuedPath(spec); !dir.isEmpty())
    if (const QString monitor = RunDirectory::liveMonitor(dir); !monitor.isEmpty()) {
      const bool resuming = !spec.resume.empty();
      return invalid(resuming ? "resume" : "run_dir", resuming ? spec.resume : spec.run_dir,
                     QStringLiteral("its run is still going, watched by %1 (stop it there "
                                    "first, or follow it with --attach %2)")
                         .arg(monitor, dir));
    }

  // Slurm runs place their directory on the cluster; the launcher checks that side.
  if (!spec.run_dir.empty() && !spec.is_slurm()) {
    const QString dir = QString::fromStdString(spec.run_dir);
    const bool continuing =
        !spec.resume.empty() && within(QString::fromStdString(spec.resume), dir);
    if (QFileInfo::exists(RunDirectory::specPath(dir)) && !continuing)
      return invalid("run_dir", spec.run_dir,
                     QStringLiteral("it holds another run (spec.json); resume that run "
                                    "(--resume) or choose another directory"));
    if (const QString why = RunDirectory::unusableReason(dir); !why.isEmpty())
      return invalid("run_dir", spec.run_dir, why);
  }

  if (!spec.resume.empty()) {
    if (const std::optional<RunSpec> was = resumedSpec(QString::fromStdString(spec.resume)))
      if (const QString problem = planChange(spec, *was); !problem.isEmpty()) return problem;
  }

  if (const TaskInfo* task = find_task(spec.task); task && task->python_script)
    if (const QString problem = scriptProblem(spec, rankEnvironment); !problem.isEmpty())
      return problem;

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
