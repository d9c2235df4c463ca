#include "slurm_submit_check.h"

#include <QDir>
#include <QEventLoop>
#include <QFile>
#include <QFileInfo>
#include <QTemporaryFile>

#include "slurm_script.h"

namespace ddpdesk {

QString sbatchFailure(const ClusterCommand::Result& r) {
  const QString p = r.problem();
  return p.startsWith(QLatin1String("sbatch")) ? p : QStringLiteral("sbatch: ") + p;
}

SlurmSubmitCheck::SlurmSubmitCheck(QObject* parent)
    : QObject(parent), commands_(new ClusterCommand(this)) {}

SlurmSubmitCheck::~SlurmSubmitCheck() {
  if (!script_.isEmpty()) QFile::remove(script_);
}

void SlurmSubmitCheck::start(const RunSpec& spec, const QString& worker) {
  // The run directory may not exist yet (it is made on submission); sbatch --test-only reads
  // the #SBATCH lines and writes nothing, so where --output would point does not matter.
  const QString runDir = spec.run_dir.empty()
                             ? QDir::tempPath() + QStringLiteral("/ddpdesk-run")
                             : QFileInfo(QString::fromStdString(spec.run_dir)).absoluteFilePath();
  QTemporaryFile file(QDir::tempPath() + QStringLiteral("/ddpdesk-check-XXXXXX.sbatch"));
  file.setAutoRemove(false);
  SlurmSubmitVerdict fail;
  if (!file.open() ||
      file.write(
          slurmBatchScript(spec, runDir, worker, QString::fromStdString(spec.resume)).toUtf8()) <
          0) {
    fail.warning = QStringLiteral("could not write a batch script to check: ") + file.errorString();
    QMetaObject::invokeMethod(
        this, [this, fail] { Q_EMIT finished(fail); }, Qt::QueuedConnection);
    return;
  }
  file.close();
  script_ = file.fileName();
  commands_->run({QStringLiteral("sbatch"), QStringLiteral("--test-only"), script_},
                 [this](const ClusterCommand::Result& r) {
                   QFile::remove(script_);
                   script_.clear();
                   SlurmSubmitVerdict v;
                   if (r.timedOut)
                     v.warning =
                         QStringLiteral("sbatch --test-only did not answer: ") + r.problem();
                   else if (!r.ok())
                     v.problem = sbatchFailure(r);
                   Q_EMIT finished(v);
                 });
}

SlurmSubmitVerdict SlurmSubmitCheck::checkNow(const RunSpec& spec, const QString& worker) {
  SlurmSubmitCheck check;
  SlurmSubmitVerdict verdict;
  QEventLoop loop;
  connect(&check, &SlurmSubmitCheck::finished, &loop, [&](const SlurmSubmitVerdict& v) {
    verdict = v;
    loop.quit();
  });
  check.start(spec, worker);
  loop.exec();
  return verdict;
}

}  // namespace ddpdesk
