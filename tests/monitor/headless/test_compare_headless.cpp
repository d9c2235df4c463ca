// `ddpdesk --headless --compare` on hand-made run directories: the table and the differences
// against the first run on stdout, the CSV written, and one line with exit code 2 (nothing
// written) for a directory that is not a run or an unknown --x; a corrupt TensorBoard log is
// compared as far as it reads, with a warning line naming the file and the record; --tag names
// the series it compares, and is refused (one line, exit 2) where no input is a TensorBoard log.
#include <QTemporaryDir>
#include <QtTest>

#include "compare_fixture.h"
#include "qt_test_main.h"
#include "tensorboard_fixture.h"

using namespace ddpdesk;
using namespace ddpdesk::testing;

namespace {

ProcessResult compare(const QStringList& args) {
  return runProgram(QStringLiteral(DDPDESK_BIN), QStringList{"--headless", "--compare"} + args);
}

}  // namespace

class TestCompareHeadless : public QObject {
  Q_OBJECT

  std::unique_ptr<QTemporaryDir> tmp;
  QString a, b;

 private Q_SLOTS:
  void init() {
    tmp = std::make_unique<QTemporaryDir>();
    QVERIFY(tmp->isValid());
    a = tmp->filePath(QStringLiteral("run-a"));
    b = tmp->filePath(QStringLiteral("run-b"));
    // B every second step: the step-axis difference is the one test_run_comparison works out
    // (at B's steps 2 and 4: max 0.1 at step 2, RMS sqrt(0.005) = 0.0707).
    QVERIFY(writeRun(a, compareSpec(32, 1),
                     lossCurve({{1, 1.0}, {2, 0.8}, {3, 0.6}, {4, 0.4}, {5, 0.2}})));
    QVERIFY(writeRun(b, compareSpec(16, 2), lossCurve({{2, 0.9}, {4, 0.4}, {6, 0.0}}, 16)));
  }
  void cleanup() { tmp.reset(); }

  void printsTheTableAndTheDifferences() {
    const QString csv = tmp->filePath(QStringLiteral("out.csv"));
    const ProcessResult r = compare({a, b, "--csv", csv});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    const QStringList lines = r.out.split(QLatin1Char('\n'));
    QVERIFY2(lines[0].simplified().startsWith(
                 QStringLiteral("run accum_steps batch_size global batch state steps final loss")),
             qPrintable(r.out));
    QCOMPARE(lines[1].simplified(), QStringLiteral("run-a 1 32 32 5 0.2 0.2 320 0.50"));
    QCOMPARE(lines[2].simplified(), QStringLiteral("run-b 2 16 32 6 0 0 160 0.60"));
    QVERIFY2(r.out.contains(QStringLiteral("global loss against run-a, x = optimizer step")),
             qPrintable(r.out));
    QVERIFY2(
        r.out.contains(QStringLiteral(
            "  run-b: max |difference| 0.1 at step 2, RMS 0.0707 over 2 points (step 2 to 4)")),
        qPrintable(r.out));
    QVERIFY(QFileInfo(csv).size() > 0);
    // Exact matching: shared steps 2 and 4 only.
    const ProcessResult e = compare({a, b, "--match", "exact"});
    QVERIFY2(e.out.contains(
                 QStringLiteral("run-b: max |difference| 0.1 at step 2, RMS 0.0707 over 2 points")),
             qPrintable(e.out));
    // On samples: the numbers test_run_comparison works out (max 0.6 at 96).
    const ProcessResult s = compare({a, b, "--x", "samples"});
    QVERIFY2(s.out.contains(QStringLiteral("run-b: max |difference| 0.6 at samples 96, RMS 0.42")),
             qPrintable(s.out));
  }

  void aCorruptTensorBoardLogIsComparedInPartWithAWarning() {
    const QString log = tmp->filePath(QStringLiteral("corrupt"));
    const QString file = tensorBoardLog(log, 20, 200);
    QVERIFY(!file.isEmpty());
    const ProcessResult r = compare({a, log});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QCOMPARE(r.err.count(QLatin1Char('\n')), 1);
    QVERIFY2(r.err.startsWith(QStringLiteral("ddpdesk: warning: ") +
                              QFileInfo(file).absoluteFilePath() + QStringLiteral(": record ")) &&
                 r.err.contains(QStringLiteral("data CRC mismatch")),
             qPrintable(r.err));
    QVERIFY2(r.out.contains(QStringLiteral(
                 "corrupt/train/loss (TensorBoard series 'train/loss'): max |difference|")),
             qPrintable(r.out));
  }

  void aTagNamesTheSeriesItCompares() {
    const QString log = tmp->filePath(QStringLiteral("pytorch"));
    {
      tb::EventFileWriter w(log.toStdString());
      for (int i = 1; i <= 5; ++i) {
        w.add_scalar("train/loss", 1.2 - 0.2 * i, i, 100.0 + i);
        w.add_scalar("validation/loss", 1.3 - 0.2 * i, i, 100.0 + i);
      }
    }
    // The log first: its series heads the differences.
    const ProcessResult first = compare({log, a, "--tag", "validation/loss"});
    QVERIFY2(first.code == 0, qPrintable(first.err));
    QVERIFY2(first.out.contains(QStringLiteral(
                 "\nTensorBoard series 'validation/loss' against pytorch/validation/loss, x = ")),
             qPrintable(first.out));
    QVERIFY2(first.out.contains(QStringLiteral("  run-a (global loss): max |difference| 0.1 ")),
             qPrintable(first.out));
    QVERIFY(!first.out.contains(QStringLiteral("global loss against")));
    // A run first: the log's line names its series.
    const ProcessResult second = compare({a, log, "--tag", "validation/loss"});
    QVERIFY2(second.out.contains(QStringLiteral(
                 "  pytorch/validation/loss (TensorBoard series 'validation/loss'): max ")),
             qPrintable(second.out));
  }

  void aTagWithoutATensorBoardLogIsOneLineAndExit2() {
    const ProcessResult r = compare({a, b, "--tag", "validation/loss"});
    QCOMPARE(r.code, 2);
    QCOMPARE(r.err, QStringLiteral("ddpdesk: invalid --tag 'validation/loss': applies to "
                                   "TensorBoard logs only, and none of the --compare directories "
                                   "is one\n"));
    QCOMPARE(r.out, QString());
  }

  void aDirectoryThatIsNotARunIsOneLineAndExit2() {
    const QString csv = tmp->filePath(QStringLiteral("out.csv"));
    const QString empty = tmp->filePath(QStringLiteral("nothing-here"));
    QVERIFY(QDir().mkpath(empty));
    const ProcessResult r = compare({a, empty, "--csv", csv});
    QCOMPARE(r.code, 2);
    QCOMPARE(r.err.count(QLatin1Char('\n')), 1);
    QVERIFY2(r.err.startsWith(QStringLiteral("ddpdesk: invalid --compare: '") + empty +
                              QStringLiteral("' is not a run: no spec.json")),
             qPrintable(r.err));
    QCOMPARE(r.out, QString());
    QVERIFY(!QFile::exists(csv));
  }

  void anUnwritableCsvIsOneLineAndExit2() {
    const QString csv = tmp->filePath(QStringLiteral("no-such-dir/out.csv"));
    const ProcessResult r = compare({a, b, "--csv", csv});
    QCOMPARE(r.code, 2);
    QCOMPARE(r.err.count(QLatin1Char('\n')), 1);
    QVERIFY2(r.err.startsWith(QStringLiteral("ddpdesk: invalid --csv: cannot write '") + csv),
             qPrintable(r.err));
    QCOMPARE(r.out, QString());  // no table either
  }

  void anUnknownAxisIsOneLineAndExit2() {
    const ProcessResult r = compare({a, b, "--x", "epochs"});
    QCOMPARE(r.code, 2);
    QCOMPARE(r.err,
             QStringLiteral("ddpdesk: invalid --x 'epochs': must be step, samples or time\n"));
  }
};

DDPDESK_TEST_GUILESS_MAIN(TestCompareHeadless)
#include "test_compare_headless.moc"
