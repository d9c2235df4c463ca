// The comparison's own numbers on real runs (`ddpdesk --headless` with the real worker, seed
// task, CPU, 128 samples, 2 epochs, a few seconds): the same spec and seed twice differs by
// exactly 0; accumulation 1 on one rank against accumulation 2 on two ranks at the same effective
// batch (8) differs only at float tolerance over every step; another seed differs plainly, so the
// comparison is not blind.
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>

#include "compare_fixture.h"
#include "qt_test_main.h"

using namespace ddpdesk::testing;

namespace {

ProcessResult runDdpdesk(const QStringList& args, const QString& dataHome) {
  QProcessEnvironment env;
  env.insert(QStringLiteral("XDG_DATA_HOME"), dataHome);
  env.insert(QStringLiteral("DDPDESK_WORKER"), QStringLiteral(DDPDESK_REAL_WORKER));
  return runProgram(QStringLiteral(DDPDESK_BIN), QStringList{"--headless"} + args, env);
}

}  // namespace

class TestCompareReal : public QObject {
  Q_OBJECT

  std::unique_ptr<QTemporaryDir> tmp;

  bool train(const QString& name, const QStringList& flags) {
    const ProcessResult r =
        runDdpdesk(QStringList{"--task", "seed", "--dataset-size", "128", "--epochs", "2",
                               "--run-dir", tmp->filePath(name)} +
                       flags,
                   tmp->path());
    if (r.code != 0) qWarning("%s: %s", qPrintable(name), qPrintable(r.err));
    return r.code == 0;
  }

 private Q_SLOTS:
  void init() {
    tmp = std::make_unique<QTemporaryDir>();
    QVERIFY(tmp->isValid());
  }
  void cleanup() { tmp.reset(); }

  void accumulationAndRepeatsGiveTheSameCurve() {
    QVERIFY(train("accum1", {"--nproc", "1", "--batch-size", "8", "--accum-steps", "1"}));
    QVERIFY(train("accum2", {"--nproc", "2", "--batch-size", "2", "--accum-steps", "2"}));
    QVERIFY(train("again", {"--nproc", "1", "--batch-size", "8", "--accum-steps", "1"}));
    QVERIFY(train("seed7", {"--nproc", "1", "--batch-size", "8", "--seed", "7"}));
    const QString csv = tmp->filePath(QStringLiteral("table.csv"));
    const ProcessResult r =
        runDdpdesk({"--compare", tmp->filePath("accum1"), tmp->filePath("accum2"),
                    tmp->filePath("again"), tmp->filePath("seed7"), "--csv", csv},
                   tmp->path());
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QFile f(csv);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QStringList lines = QString::fromUtf8(f.readAll()).trimmed().split(QLatin1Char('\n'));
    QCOMPARE(lines.size(), 5);
    const QStringList header = lines[0].split(QLatin1Char(','));
    auto cell = [&](int row, const char* name) {
      return lines[row].split(QLatin1Char(',')).value(header.indexOf(QLatin1String(name)));
    };
    // 128 samples / 8 per step = 16 steps an epoch: every one of the 32 compared.
    for (int row = 2; row <= 4; ++row) QCOMPARE(cell(row, "diff_points"), QStringLiteral("32"));
    QCOMPARE(cell(1, "global_batch"), QStringLiteral("8"));
    QCOMPARE(cell(2, "global_batch"), QStringLiteral("8"));
    QCOMPARE(cell(2, "accum_steps"), QStringLiteral("2"));
    const double scale = cell(1, "best_loss").toDouble();  // losses here are in the thousands
    QVERIFY(scale > 0);
    // Same spec, same seed: bit for bit.
    QCOMPARE(cell(3, "loss_max_diff"), QStringLiteral("0"));
    QCOMPARE(cell(3, "loss_rms_diff"), QStringLiteral("0"));
    // Accumulation 2 on two ranks: float tolerance relative to the losses.
    const double accumMax = cell(2, "loss_max_diff").toDouble();
    QVERIFY2(accumMax <= 1e-5 * scale,
             qPrintable(QStringLiteral("max %1 against losses of %2").arg(accumMax).arg(scale)));
    // Another seed: far apart.
    QVERIFY2(cell(4, "loss_max_diff").toDouble() > 1e-2 * scale, qPrintable(lines[4]));
    // The printed differences say the same.
    QVERIFY2(
        r.out.contains(QStringLiteral("again: max |difference| 0 at step 1, RMS 0 over 32 points")),
        qPrintable(r.out));
  }
};

DDPDESK_TEST_GUILESS_MAIN(TestCompareReal)
#include "test_compare_real.moc"
