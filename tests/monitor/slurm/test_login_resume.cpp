// Resuming a login-node Slurm run from its directory on the cluster (login_resume.h), against a
// private sshd (tests/ssh/with_sshd.sh; the cases that need it skip without it): the directory's
// spec.json is read over ssh and becomes the spec (flags given as well change just those fields,
// the run directory there is not taken as a local one), submitting through the URL's host into
// that directory, whose ranks resume there; a directory that holds no login-node Slurm run is
// one line saying why. Also the remote stop file script, and what the worker's --resume is.
#include <CLI/CLI.hpp>
#include <QDir>
#include <QEventLoop>
#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include "qt_test_main.h"
#include "run/monitor_settings.h"
#include "slurm/cluster_command.h"
#include "slurm/login_resume.h"
#include "slurm/slurm_login_scripts.h"
#include "spec_flags.h"

using namespace ddpdesk;

namespace {

QString url(const QString& path) {
  return QStringLiteral("ssh://root@127.0.0.1:%1%2")
      .arg(qEnvironmentVariable("DDPDESK_SSH_PORT"), path);
}

void writeText(const QString& path, const QByteArray& text) {
  QFile f(path);
  QVERIFY(f.open(QIODevice::WriteOnly));
  f.write(text);
}

RunSpec loginRun(const QString& remoteDir) {
  RunSpec s;
  s.task = "fmnist-mlp";
  s.epochs = 2;
  s.launcher = "slurm";
  s.slurm_login = "someone@login1";
  s.slurm_remote_dir = remoteDir.toStdString();
  s.run_dir = remoteDir.toStdString();
  return s;
}

// `ddpdesk ARGS...` through SpecFlags and buildSpecFromCommandLine.
std::vector<std::string> build(const QStringList& args, RunSpec* out) {
  CLI::App cli;
  SpecFlags flags(cli, true);
  std::vector<std::string> words{"ddpdesk"};
  for (const QString& a : args) words.push_back(a.toStdString());
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  cli.parse(int(argv.size()), argv.data());
  return buildSpecFromCommandLine(flags, out);
}

}  // namespace

class TestLoginResume : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void theWorkerResumesInTheDirectoryOnTheCluster() {
    RunSpec s = loginRun(QStringLiteral("/scratch/r"));
    s.resume = "ssh://me@login/scratch/r";
    QCOMPARE(loginWorkerResume(s, QStringLiteral("/home/me/rec"), QStringLiteral("/scratch/r")),
             QStringLiteral("/scratch/r"));
    s.resume = "/home/me/rec";  // the local record of the run: its directory there
    QCOMPARE(loginWorkerResume(s, QStringLiteral("/home/me/rec"), QStringLiteral("/scratch/r")),
             QStringLiteral("/scratch/r"));
    s.resume = "/scratch/other/checkpoints/step-5.pt";  // a path there, as given
    QCOMPARE(loginWorkerResume(s, QStringLiteral("/home/me/rec"), QStringLiteral("/scratch/r")),
             QStringLiteral("/scratch/other/checkpoints/step-5.pt"));
  }

  void onlyALoginNodeSlurmRunIsResumedFromThere() {
    QVERIFY(loginResumeProblem(QString::fromStdString(to_json_text(loginRun("/x")))).isEmpty());
    QVERIFY(loginResumeProblem(R"({"task":"seed"})").contains("launcher 'local'"));
    QVERIFY(loginResumeProblem(R"({"launcher":"slurm"})").contains("on the cluster itself"));
    QVERIFY(loginResumeProblem("[1]").contains("not a JSON object"));
  }

  void theClustersSpecIsReadOverSsh() {
    if (qEnvironmentVariableIsEmpty("DDPDESK_SSH_PORT"))
      QSKIP("needs a private sshd: run under tests/ssh/with_sshd.sh");
    QTemporaryDir dir;
    writeText(dir.filePath("spec.json"),
              QByteArray::fromStdString(to_json_text(loginRun(dir.path()))));
    const LoginResumeSource source = readLoginResumeNow(url(dir.path()));
    QVERIFY2(source.problem.isEmpty(), qPrintable(source.problem));
    QCOMPARE(source.target.path, dir.path());

    RunSpec spec;
    const auto problems = build({"--resume", url(dir.path()), "--epochs", "5"}, &spec);
    QVERIFY2(problems.empty(), problems.empty() ? "" : problems.front().c_str());
    QCOMPARE(spec.task, std::string("fmnist-mlp"));  // the cluster's spec
    QCOMPARE(spec.epochs, 5);                        // a flag changes just that
    QVERIFY(spec.run_dir.empty());                   // a new local record, not the path there
    QCOMPARE(spec.slurm_login,
             "root@127.0.0.1:" + qEnvironmentVariable("DDPDESK_SSH_PORT").toStdString());
    QCOMPARE(spec.slurm_remote_dir, dir.path().toStdString());
    QCOMPARE(spec.resume, url(dir.path()).toStdString());

    // A launcher flag that would run it elsewhere.
    const auto local = build({"--resume", url(dir.path()), "--launcher", "local"}, &spec);
    QCOMPARE(local.size(), size_t(1));
    QVERIFY2(QString::fromStdString(local.front()).startsWith("invalid --launcher 'local' with"),
             local.front().c_str());
  }

  void whatCannotBeResumedIsOneLine() {
    if (qEnvironmentVariableIsEmpty("DDPDESK_SSH_PORT"))
      QSKIP("needs a private sshd: run under tests/ssh/with_sshd.sh");
    QTemporaryDir dir;
    QDir(dir.path()).mkpath("empty");
    QDir(dir.path()).mkpath("local");
    writeText(dir.filePath("local/spec.json"), R"({"task": "seed"})");
    const auto problem = [&](const QString& sub) {
      return readLoginResumeNow(url(dir.filePath(sub))).problem;
    };
    QCOMPARE(problem("missing"), QStringLiteral("cannot resume %1: no such directory there")
                                     .arg(url(dir.filePath("missing"))));
    QVERIFY2(problem("empty").endsWith(": no spec.json there: not a ddpdesk run directory"),
             qPrintable(problem("empty")));
    QVERIFY2(problem("local").contains(": it holds a run of launcher 'local'"),
             qPrintable(problem("local")));
    QVERIFY(!problem("local").contains('\n'));
    const MonitorSettings usual = monitorSettings();
    MonitorSettings other = usual;
    other.sshCommand = QProcess::splitCommand(qEnvironmentVariable("DDPDESK_SSH_REFUSED"));
    setMonitorSettings(other);
    const QString refused = problem("local");
    setMonitorSettings(usual);
    QVERIFY2(refused.contains("Permission denied"), qPrintable(refused));
  }

  // The stop file a graceful stop writes there, and the next job's write removing it.
  void theStopFileIsWrittenThereAndClearedForTheNextJob() {
    if (qEnvironmentVariableIsEmpty("DDPDESK_SSH_PORT"))
      QSKIP("needs a private sshd: run under tests/ssh/with_sshd.sh");
    QTemporaryDir dir;
    ClusterCommand commands;
    commands.setRemote(SshTarget::parse(url(dir.path())).value());
    auto run = [&](const QStringList& argv, const QByteArray& input = {}) {
      ClusterCommand::Result result;
      bool done = false;
      QEventLoop wait;  // the command's own time limit ends it
      commands.run(
          argv,
          [&](const ClusterCommand::Result& r) {
            result = r;
            done = true;
            wait.quit();
          },
          input);
      if (!done) wait.exec();
      return result;
    };
    QVERIFY(run(remoteStopCommand(dir.path())).ok());
    QVERIFY(QFileInfo::exists(dir.filePath("stop-requested")));
    QVERIFY(run(remoteWriteCommand(dir.path(), "1", "{}"), "#!/bin/bash\n").ok());
    QVERIFY(!QFileInfo::exists(dir.filePath("stop-requested")));
    QVERIFY(QFileInfo::exists(dir.filePath("job.sbatch")));
  }
};

DDPDESK_TEST_GUILESS_MAIN(TestLoginResume)
#include "test_login_resume.moc"
