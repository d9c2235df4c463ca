// A run directory on a file system that fills up, or that is read-only: status.json is the old
// one or the new one, never empty; metrics.jsonl ends in a whole line; the monitor warns once and
// the end summary says the file is incomplete; a read-only run directory is bad input (exit 2).
// Each case mounts a small tmpfs of its own, so it needs root and mount(8): without them the
// entry shows as Skipped.
#include <unistd.h>
#include <QDir>
#include <QJsonDocument>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include "monitor_test_util.h"
#include "qt_test_main.h"
#include "run/atomic_file.h"
#include "run/run_directory.h"

using namespace ddpdesk;
using namespace ddpdesk::test;

namespace {

// A tmpfs of `options` mounted at `dir` for the life of the object.
class Tmpfs {
 public:
  Tmpfs(const QString& dir, const QString& options) : dir_(dir) {
    QDir().mkpath(dir);
    mounted_ = ::geteuid() == 0 && QProcess::execute(QStringLiteral("mount"),
                                                     {QStringLiteral("-t"), QStringLiteral("tmpfs"),
                                                      QStringLiteral("-o"), options,
                                                      QStringLiteral("tmpfs"), dir}) == 0;
  }
  ~Tmpfs() {
    if (mounted_) QProcess::execute(QStringLiteral("umount"), {QStringLiteral("-l"), dir_});
  }
  bool mounted() const { return mounted_; }

 private:
  QString dir_;
  bool mounted_ = false;
};

#define MOUNT_OR_SKIP(fs)                                                              \
  do {                                                                                 \
    if (!(fs).mounted()) QSKIP("needs root and mount(8) to mount a small tmpfs here"); \
  } while (0)

// Fills the file system at `dir` to the last byte.
void fill(const QString& dir) {
  QFile f(dir + QStringLiteral("/filler"));
  QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Unbuffered));
  const QByteArray block(4096, 'x');
  while (f.write(block) == block.size()) {
  }
  const QByteArray byte(1, 'x');
  while (f.write(byte) == 1) {
  }
}

QByteArray readAll(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

}  // namespace

class TestFullDisk : public QObject {
  Q_OBJECT
  QTemporaryDir tmp;

 private Q_SLOTS:
  void initTestCase() { QVERIFY(tmp.isValid()); }

  // The old status.json stays whole when the new one does not fit; appends that do not fit
  // leave metrics.jsonl as it was, and say why once.
  void aFullDiskLeavesNoHalfWrittenFile() {
    const QString mnt = tmp.filePath(QStringLiteral("full"));
    Tmpfs fs(mnt, QStringLiteral("size=64k"));
    MOUNT_OR_SKIP(fs);
    RunDirectory dir;
    QString error;
    QVERIFY2(dir.open(mnt + QStringLiteral("/run"), &error), qPrintable(error));
    RunStatus first;
    first.state = QStringLiteral("Stopped");
    QVERIFY(dir.writeStatus(first));
    const QByteArray line = "{\"type\":\"step\",\"rank\":0}\n";
    QVERIFY(dir.appendMetrics(line));
    fill(mnt);

    RunStatus second;
    second.state = QStringLiteral("Finished");
    second.reason = QString(8192, QLatin1Char('r'));  // more than any slack the disk has left
    QVERIFY(!dir.writeStatus(second, &error));
    QVERIFY2(error.contains(QLatin1String("status.json")), qPrintable(error));
    const auto status = RunDirectory::readStatus(dir.path());
    QVERIFY2(status, readAll(RunDirectory::statusPath(dir.path())).constData());
    QCOMPARE(status->state, QStringLiteral("Stopped"));
    QCOMPARE(QDir(dir.path()).entryList(QDir::Files | QDir::Hidden).filter("status").size(), 1);

    QVERIFY(!dir.appendMetrics(QByteArray(8192, 'm') + '\n'));
    QVERIFY2(
        dir.metricsError().startsWith(QStringLiteral("cannot write %1: No space left on device")
                                          .arg(RunDirectory::metricsPath(dir.path()))),
        qPrintable(dir.metricsError()));
    QCOMPARE(readAll(RunDirectory::metricsPath(dir.path())), line);
    QFile::remove(mnt + QStringLiteral("/filler"));
    QVERIFY(!dir.appendMetrics(line));  // nothing more: the file stays whole lines up to there
    QCOMPARE(readAll(RunDirectory::metricsPath(dir.path())), line);
  }

  // A headless run that fills its disk: one warning naming the file and the reason, the end
  // summary says metrics.jsonl is incomplete, and neither file is cut mid-line or empty.
  void headlessWarnsOnceAndSaysTheFileIsIncomplete() {
    const QString mnt = tmp.filePath(QStringLiteral("headless"));
    Tmpfs fs(mnt, QStringLiteral("size=48k"));
    MOUNT_OR_SKIP(fs);
    const QString runDir = mnt + QStringLiteral("/r");
    const QString data = tmp.filePath(QStringLiteral("data"));
    auto p = startHeadless(
        QStringLiteral(DDPDESK_BIN), fakeWorker(), data,
        {QStringLiteral("--nproc"), QStringLiteral("2"), QStringLiteral("--task"),
         QStringLiteral("seed"), QStringLiteral("--run-dir"), runDir},
        fakeEnv({{"FAKE_STEPS", QStringLiteral("1500")}, {"FAKE_STEP_MS", QStringLiteral("0")}}));
    const ProcessResult r = finishProcess(*p, 120000);
    QVERIFY2(r.code == 0, qPrintable(r.err));
    const QString metrics = RunDirectory::metricsPath(runDir);
    QCOMPARE(r.err.count(
                 QStringLiteral("warning: cannot write %1: No space left on device").arg(metrics)),
             1);
    QVERIFY2(
        r.out.contains(QStringLiteral("metrics.jsonl is incomplete: cannot write %1").arg(metrics)),
        qPrintable(r.out));
    const QByteArray written = readAll(metrics);
    QVERIFY(!written.isEmpty());
    QVERIFY(written.endsWith('\n'));
    for (const QByteArray& l : written.trimmed().split('\n'))
      QVERIFY2(!QJsonDocument::fromJson(l).isNull(), l.constData());
    // status.json: absent (it did not fit either) or whole, never empty.
    const QString statusPath = RunDirectory::statusPath(runDir);
    if (QFile::exists(statusPath)) {
      const auto status = RunDirectory::readStatus(runDir);
      QVERIFY2(status, readAll(statusPath).constData());
      QVERIFY(status->metricsIncomplete.contains(QLatin1String("No space left on device")));
    } else {
      QVERIFY2(r.err.contains(QStringLiteral("cannot write %1").arg(statusPath)),
               qPrintable(r.err));
    }
  }

  // A run directory on a read-only file system is bad input: one line saying so, exit 2.
  void readOnlyRunDirectoryIsBadInput() {
    const QString mnt = tmp.filePath(QStringLiteral("ro"));
    Tmpfs fs(mnt, QStringLiteral("size=64k,ro"));
    MOUNT_OR_SKIP(fs);
    const QString data = tmp.filePath(QStringLiteral("data-ro"));
    for (const QString& runDir : {mnt, mnt + QStringLiteral("/r")}) {
      auto p =
          startHeadless(QStringLiteral(DDPDESK_BIN), fakeWorker(), data,
                        {QStringLiteral("--nproc"), QStringLiteral("1"), QStringLiteral("--task"),
                         QStringLiteral("seed"), QStringLiteral("--run-dir"), runDir});
      const ProcessResult r = finishProcess(*p, 120000);
      QCOMPARE(r.code, 2);
      QVERIFY2(r.err.trimmed().count(QLatin1Char('\n')) == 0, qPrintable(r.err));
      QVERIFY2(r.err.contains(QStringLiteral("invalid --run-dir '%1'").arg(runDir)) &&
                   r.err.contains(QLatin1String("Read-only file system")),
               qPrintable(r.err));
    }
  }
};

DDPDESK_TEST_GUILESS_MAIN(TestFullDisk)
#include "test_full_disk.moc"
