#include "slurm/slurm_submit_check.h"

#include <QDir>
#include <QEventLoop>
#include <QFile>
#include <QFileInfo>
#include <QTemporaryFile>

#include "slurm/slurm_script.h"

namespace ddpdesk {

QString sbatchFailure(const ClusterCommand::Result& r) {
  // Through a login node: ssh's own failure (no client, exit 255) is not sbatch's, and the
  // remote shell's "command not found" (127) names where sbatch is missing.
  if (!r.via.isEmpty() && (!r.started || (!r.timedOut && r.exitCode == 255))) return r.problem();
  if (!r.via.isEmpty() && !r.timedOut && r.exitCode == 127)
    return QStringLiteral("sbatch: not found on the login node %1").arg(r.via);
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
  const QString remoteDir = QString::fromStdString(spec.slurm_remote_dir);
  const QString runDir =
      spec.is_slurm_via_login()
          ? (remoteDir.startsWith(QLatin1Char('/')) ? remoteDir
                                                    : QStringLiteral("/tmp/ddpdesk-run"))
      : spec.run_dir.empty() ? QDir::tempPath() + QStringLiteral("/ddpdesk-run")
                             : QFileInfo(QString::fromStdString(spec.run_dir)).absoluteFilePath();
  const QByteArray script =
      slurmBatchScript(spec, runDir, worker, QString::fromStdString(spec.resume)).toUtf8();
  auto answer = [this](const ClusterCommand::Result& r) {
    if (!script_.isEmpty()) QFile::remove(script_);
    script_.clear();
    SlurmSubmitVerdict v;
    if (r.timedOut)
      v.warning = QStringLiteral("sbatch --test-only did not answer: ") + r.problem();
    else if (!r.ok())
      v.problem = sbatchFailure(r);
    Q_EMIT finished(v);
  };
  if (spec.is_slurm_via_login()) {
    // On the login node, before anything is written there: sbatch reads the script from its
    // standard input, so the check leaves nothing behind on the cluster either.
    commands_->setRemote(SshTarget::fromLogin(QString::fromStdString(spec.slurm_login), {}));
    commands_->run({QStringLiteral("sbatch"), QStringLiteral("--test-only")}, answer, script);
    return;
  }
  QTemporaryFile file(QDir::tempPath() + QStringLiteral("/ddpdesk-check-XXXXXX.sbatch"));
  file.setAutoRemove(false);
  if (!file.open() || file.write(script) < 0) {
    SlurmSubmitVerdict fail;
    fail.warning = QStringLiteral("could not write a batch script to check: ") + file.errorString();
    QMetaObject::invokeMethod(
        this, [this, fail] { Q_EMIT finished(fail); }, Qt::QueuedConnection);
    return;
  }
  file.close();
  script_ = file.fileName();
  commands_->run({QStringLiteral("sbatch"), QStringLiteral("--test-only"), script_}, answer);
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
