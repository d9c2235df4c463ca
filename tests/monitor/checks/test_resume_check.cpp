// A resume the real ddpdesk-worker would reject is bad input found before anything starts: one
// line, exit 2, and the run directory byte for byte as it was (before, the ranks found it: a
// run failed with exit 1 and rewrote the run's spec and status, deleted its exit records and
// appended to its metrics). The dry run (`--check --resume`) loads the checkpoint as the ranks
// would. A good resume still runs on. Only built with the engine.
#include <QCryptographicHash>
#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include "monitor_test_util.h"
#include "qt_test_main.h"

using namespace ddpdesk::test;

namespace {
constexpr int kTimeout = kRealWorkerTimeoutMs;

// Every file under `dir` with a hash of its bytes: equal listings mean nothing was touched.
QStringList snapshot(const QString& dir) {
  QStringList out;
  QDirIterator it(dir, QDir::Files | QDir::Hidden, QDirIterator::Subdirectories);
  while (it.hasNext()) {
    const QString path = it.next();
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) return {QStringLiteral("unreadable ") + path};
    out << QDir(dir).relativeFilePath(path) + QLatin1Char(' ') +
               QString::fromLatin1(
                   QCryptographicHash::hash(f.readAll(), QCryptographicHash::Sha1).toHex());
  }
  out.sort();
  return out;
}
}  // namespace

class TestResumeCheck : public QObject {
  Q_OBJECT
  QTemporaryDir data;
  QString run;  // a finished two-epoch seed run with its checkpoint

  ProcessResult headless(const QStringList& args) {
    auto p = startRealHeadless(data.path(), args);
    return finishProcess(*p, kTimeout);
  }

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(data.isValid());
    run = data.filePath(QStringLiteral("run"));
    const ProcessResult r = headless({"--task", "seed", "--dataset-size", "40", "--epochs", "2",
                                      "--system-interval", "0", "--run-dir", run});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY(!QDir(run + QStringLiteral("/checkpoints")).entryList(QDir::Files).isEmpty());
  }

  void rejectedResumesExitTwoAndLeaveTheRunAlone_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("said");
    QTest::newRow("already past the epochs")
        << QStringList{"--epochs", "1"}
        << "invalid --epochs '1': the checkpoint is already past it";
    QTest::newRow("another model")
        << QStringList{"--task", "fmnist-mlp"} << "it holds 2 model tensors, this task has 6";
  }
  void rejectedResumesExitTwoAndLeaveTheRunAlone() {
    QFETCH(QStringList, args);
    QFETCH(QString, said);
    const QStringList before = snapshot(run);
    const ProcessResult r = headless(QStringList{"--resume", run} + args);
    QCOMPARE(r.code, 2);
    const QStringList lines = r.err.split('\n', Qt::SkipEmptyParts);
    QCOMPARE(lines.size(), 1);
    QVERIFY2(lines[0].contains(said), qPrintable(lines[0]));
    QCOMPARE(snapshot(run), before);
    QVERIFY(!QDir(data.filePath(QStringLiteral("ddpdesk/runs"))).exists());
  }

  void aTornCheckpointIsBadInputToo() {
    QTemporaryDir copyRoot;
    const QString copy = copyRoot.filePath(QStringLiteral("run"));
    QVERIFY(QProcess::execute(QStringLiteral("cp"), {"-a", run, copy}) == 0);
    const QString ckpt =
        copy + QStringLiteral("/checkpoints/") +
        QDir(copy + QStringLiteral("/checkpoints")).entryList(QDir::Files).constLast();
    QFile f(ckpt);
    QVERIFY(f.resize(f.size() / 2));
    const QStringList before = snapshot(copy);
    const ProcessResult r = headless({"--resume", copy, "--epochs", "3"});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains(QLatin1String("cannot load checkpoint")), qPrintable(r.err));
    QCOMPARE(snapshot(copy), before);
  }

  void aMissingRunIsBadInputAndNothingIsWritten() {
    const ProcessResult r = headless({"--resume", data.filePath(QStringLiteral("nowhere"))});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains(QLatin1String("no such run directory or file")), qPrintable(r.err));
    QVERIFY(!QDir(data.filePath(QStringLiteral("ddpdesk/runs"))).exists());
  }

  // The check passes a resume the ranks take: the run goes on to its new last epoch.
  void aGoodResumeRunsOn() {
    const ProcessResult r = headless({"--resume", run, "--epochs", "3"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY2(r.out.contains(QLatin1String("epoch 3/3")), qPrintable(r.out));
  }
};

DDPDESK_TEST_MAIN(TestResumeCheck)
#include "test_resume_check.moc"
