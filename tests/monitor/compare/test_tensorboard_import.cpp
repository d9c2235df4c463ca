// Importing a TensorBoard log directory: every event file below it (written at test time with
// ddpdesk_tensorboard's writer, and by tests/tensorboard/py/tb_events.py in PyTorch's layout), one
// series per (directory, tag), steps ascending with the value written last for a step written
// twice, problems named per file (a half-written last record, a corrupt record) with the points
// before them kept, and a series filled into a MetricsStore as the charts draw it.
#include <QDir>
#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include "compare/tensorboard_import.h"
#include "event_writer.h"
#include "metrics/metrics_store.h"
#include "qt_test_main.h"

using namespace ddpdesk;

namespace {

// Writes `n` points of `tag` (steps first, first + 1, ...; value = step * scale) into `dir`.
QString writeSeries(const QString& dir, const std::string& tag, int first, int n, double scale,
                    double wall0 = 1.7e9) {
  tb::EventFileWriter w(dir.toStdString());
  for (int i = 0; i < n; ++i) w.add_scalar(tag, (first + i) * scale, first + i, wall0 + i);
  w.close();
  return QString::fromStdString(w.path());
}

}  // namespace

class TestTensorBoardImport : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void oneSeriesPerDirectoryAndTag() {
    QTemporaryDir root;
    writeSeries(root.path(), "loss", 1, 100, 0.5);
    writeSeries(root.filePath("rank-0"), "lr", 1, 10, 1e-3);
    writeSeries(root.filePath("x/y"), "acc", 0, 5, 0.1);
    QFile other(root.filePath("metrics.jsonl"));  // not an event file: left alone
    QVERIFY(other.open(QIODevice::WriteOnly));
    other.write("{}\n");
    other.close();

    const TensorBoardLog log = loadTensorBoardLog(root.path());
    QVERIFY2(log.problems.isEmpty(), qPrintable(log.problems.join('\n')));
    QCOMPARE(log.files, 3);
    QCOMPARE(log.names(), (QStringList{"loss", "rank-0/lr", "x/y/acc"}));
    const TensorBoardSeries* loss = log.find("loss");
    QVERIFY(loss);
    QCOMPARE(int(loss->size()), 100);
    for (int i = 0; i < 100; ++i) {
      QCOMPARE(loss->step[std::size_t(i)], qint64(i + 1));
      QCOMPARE(loss->value[std::size_t(i)], double(float((i + 1) * 0.5)));
      QCOMPARE(loss->wallTime[std::size_t(i)], 1.7e9 + i);
    }
    QCOMPARE(log.find("x/y/acc")->run, QStringLiteral("x/y"));
    QCOMPARE(log.find("x/y/acc")->tag, QStringLiteral("acc"));
    QCOMPARE(log.suggested(), QStringLiteral("loss"));
  }

  void suggestsTheShallowestLossElseTheFirst() {
    QTemporaryDir a;
    writeSeries(a.filePath("rank-1"), "train/loss", 1, 3, 1);
    writeSeries(a.filePath("global"), "loss", 1, 3, 1);
    writeSeries(a.filePath("global/deeper"), "Loss", 1, 3, 1);
    writeSeries(a.filePath("global"), "lr", 1, 3, 1);
    QCOMPARE(loadTensorBoardLog(a.path()).suggested(), QStringLiteral("global/loss"));
    QTemporaryDir b;
    writeSeries(b.filePath("r"), "lr", 1, 3, 1);
    writeSeries(b.filePath("r"), "acc", 1, 3, 1);
    QCOMPARE(loadTensorBoardLog(b.path()).suggested(), QStringLiteral("r/acc"));
  }

  // A run resumed into the same directory writes a second file going over steps again: one point
  // per step, the later file's value (as TensorBoard shows it).
  void aStepWrittenTwiceKeepsTheLastValue() {
    QTemporaryDir root;
    writeSeries(root.path(), "loss", 1, 10, 1.0);
    writeSeries(root.path(), "loss", 6, 10, 2.0);  // same second: its name gets ".<pid>", later
    const TensorBoardLog log = loadTensorBoardLog(root.path());
    QCOMPARE(log.files, 2);
    const TensorBoardSeries* s = log.find("loss");
    QVERIFY(s);
    QCOMPARE(int(s->size()), 15);
    for (int i = 0; i < 15; ++i) {
      const int step = i + 1;
      QCOMPARE(s->step[std::size_t(i)], qint64(step));
      QCOMPARE(s->value[std::size_t(i)], step * (step <= 5 ? 1.0 : 2.0));
    }
  }

  void aHalfWrittenLastRecordIsReportedAndTheRestKept() {
    QTemporaryDir root;
    const QString path = writeSeries(root.filePath("run"), "loss", 1, 20, 1.0);
    QFile f(path);
    QVERIFY(f.resize(f.size() - 5));
    const TensorBoardLog log = loadTensorBoardLog(root.path());
    QCOMPARE(int(log.find("run/loss")->size()), 19);
    QCOMPARE(log.problems.size(), 1);
    const QString rel = QDir(root.path()).relativeFilePath(path);
    QVERIFY2(log.problems[0].startsWith(rel + ": last record incomplete"),
             qPrintable(log.problems[0]));
  }

  void aCorruptRecordIsNamedAndTheRecordsBeforeItKept() {
    QTemporaryDir root;
    const QString path = writeSeries(root.path(), "loss", 1, 20, 1.0);
    QFile f(path);
    QVERIFY(f.open(QIODevice::ReadWrite));
    QByteArray bytes = f.readAll();
    const qsizetype at = bytes.size() - 3 * 40;  // inside one of the last few records
    bytes[at] = char(bytes[at] ^ 0x01);
    f.seek(0);
    f.write(bytes);
    f.close();
    const TensorBoardLog log = loadTensorBoardLog(root.path());
    QCOMPARE(log.problems.size(), 1);
    QVERIFY2(log.problems[0].contains("CRC mismatch"), qPrintable(log.problems[0]));
    const int kept = int(log.find("loss")->size());
    QVERIFY2(kept >= 15 && kept < 20, qPrintable(QString::number(kept)));
  }

  void nothingToImportSaysWhy() {
    QTemporaryDir empty;
    TensorBoardLog log = loadTensorBoardLog(empty.path());
    QVERIFY(log.series.empty());
    QVERIFY2(log.problems.join(';').contains("no events.out.tfevents.* file"),
             qPrintable(log.problems.join(';')));
    log = loadTensorBoardLog(empty.filePath("missing"));
    QVERIFY(log.problems.join(';').contains("no such directory"));
    tb::EventFileWriter(empty.path().toStdString()).close();  // a file with no scalars
    log = loadTensorBoardLog(empty.path());
    QVERIFY(log.problems.join(';').contains("no scalars"));
  }

  // PyTorch's SummaryWriter layout (tensor scalars, float and double), from an independent
  // encoder: the import reads what the history will be asked to open.
  void readsThePyTorchLayout() {
    const QString python = QFile::exists("/usr/bin/python3")
                               ? QStringLiteral("/usr/bin/python3")
                               : QStandardPaths::findExecutable("python3");
    if (python.isEmpty()) QSKIP("no python3");
    QTemporaryDir root;
    QProcess p;
    p.start(python, {QStringLiteral(DDPDESK_TB_PY), root.path()});
    QVERIFY(p.waitForFinished(60000));
    QCOMPARE(p.exitCode(), 0);
    const TensorBoardLog log = loadTensorBoardLog(root.filePath("pytorch"));
    QCOMPARE(log.names(), (QStringList{"old/simple", "train/acc", "train/loss", "train/lr"}));
    QCOMPARE(log.suggested(), QStringLiteral("train/loss"));
    const TensorBoardSeries* lr = log.find("train/lr");
    QCOMPARE(int(lr->size()), 50);
    QCOMPARE(lr->step[49], qint64(490));
    QCOMPARE(lr->value[49], 0.001 * std::pow(0.99, 49));
    QCOMPARE(log.problems.size(), 1);  // the half record the script leaves at the end
  }

  void fillsAStoreAsOneGlobalCurve() {
    TensorBoardSeries s;
    s.tag = "loss";
    s.step = {0, 10, 20};
    s.value = {3.0, 2.0, 1.5};
    s.wallTime = {1000.0, 1001.5, 1004.0};
    MetricsStore store;
    store.ingest(wire::Step{});  // whatever was there goes
    fillStore(s, store);
    const GlobalSeries& g = store.global();
    QCOMPARE(int(g.size()), 3);
    QCOMPARE(g.step[2], 20.0);
    QCOMPARE(g.loss[1], 2.0);
    QCOMPARE(g.time[2], 4.0);  // seconds since the first point
    QCOMPARE(store.rankCount(), 1);
  }
};

DDPDESK_TEST_GUILESS_MAIN(TestTensorBoardImport)
#include "test_tensorboard_import.moc"
