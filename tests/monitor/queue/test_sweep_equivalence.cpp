// The question ddpdesk answers, end to end with the real ddpdesk-worker: a sweep over
// accumulation 1, 2 and 4 at a constant effective batch (two CPU ranks, the seed task, batch
// derived: 16, 8, 4) gives three run directories whose per-step global losses, read from each
// run's metrics.jsonl, agree to float tolerance — and the comparison view's own numbers (the
// core behind `--compare` and the comparison window) say so. Only built with the engine.
#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>
#include <map>

#include "compare/curve_compare.h"
#include "compare/run_comparison.h"
#include "qt_test_main.h"
#include "run/run_directory.h"

using namespace ddpdesk;

namespace {
constexpr int kTimeout = 300000;  // LibTorch start-up and rendezvous on a loaded 2-core box
}

class TestSweepEquivalence : public QObject {
  Q_OBJECT
  QTemporaryDir data;

  // Rank 0's global loss per optimizer step.
  static std::map<qint64, double> globalLosses(const QString& dir) {
    std::map<qint64, double> out;
    QFile f(RunDirectory::metricsPath(dir));
    if (!f.open(QIODevice::ReadOnly)) return out;
    for (const QByteArray& line : f.readAll().split('\n')) {
      const QJsonObject o = QJsonDocument::fromJson(line).object();
      if (o.value(QLatin1String("type")).toString() == QLatin1String("step") &&
          o.value(QLatin1String("rank")).toInt() == 0)
        out[o.value(QLatin1String("step")).toInteger()] =
            o.value(QLatin1String("global_loss")).toDouble();
    }
    return out;
  }

 private Q_SLOTS:
  void initTestCase() { QVERIFY(data.isValid()); }

  void accumulationOneTwoFourAtOneEffectiveBatchGiveOneCurve() {
    QFile def(data.filePath(QStringLiteral("sweep.json")));
    QVERIFY(def.open(QIODevice::WriteOnly));
    def.write(R"({"name": "accum", "base": {"task": "seed", "nproc": 2, "batch_size": 16,)"
              R"( "dataset_size": 256, "epochs": 2, "system_interval": 0},)"
              R"( "grid": {"accum_steps": [1, 2, 4]}, "effective_batch": true})");
    def.close();
    QProcess p;
    QProcessEnvironment e = QProcessEnvironment::systemEnvironment();
    e.insert(QStringLiteral("XDG_DATA_HOME"), data.path());
    e.insert(QStringLiteral("DDPDESK_WORKER"), QStringLiteral(DDPDESK_REAL_WORKER));
    p.setProcessEnvironment(e);
    p.start(QStringLiteral(DDPDESK_BIN), {"--headless", "--sweep", def.fileName()});
    QVERIFY(p.waitForFinished(kTimeout));
    QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());

    const QDir sweeps(data.filePath(QStringLiteral("ddpdesk/sweeps")));
    const QStringList made = sweeps.entryList(QDir::Dirs | QDir::NoDotAndDotDot);
    QCOMPARE(made.size(), 1);
    QFile indexFile(sweeps.absoluteFilePath(made[0]) + QStringLiteral("/index.json"));
    QVERIFY(indexFile.open(QIODevice::ReadOnly));
    const QJsonArray runs = QJsonDocument::fromJson(indexFile.readAll())
                                .object()
                                .value(QLatin1String("runs"))
                                .toArray();
    QCOMPARE(runs.size(), 3);

    std::vector<std::map<qint64, double>> curves;
    QStringList dirs;
    const int accum[] = {1, 2, 4};
    for (int i = 0; i < 3; ++i) {
      const QString dir = runs[i].toObject().value(QLatin1String("run_dir")).toString();
      const auto record = RunDirectory::readRecord(dir);
      QVERIFY(record && record->specValid);
      QCOMPARE(record->spec.accum_steps, accum[i]);
      QCOMPARE(record->spec.effective_batch(), qint64(32));
      dirs << dir;
      curves.push_back(globalLosses(dir));
    }
    dirs.removeDuplicates();
    QCOMPARE(dirs.size(), 3);
    // 256 samples / 32 per optimizer step, two epochs.
    for (const auto& c : curves) QCOMPARE(int(c.size()), 16);
    double maxRel = 0;
    for (const auto& [step, loss] : curves[0])
      for (int k = 1; k < 3; ++k) {
        QVERIFY(curves[k].count(step));
        maxRel = std::max(maxRel, std::fabs(curves[k].at(step) - loss) / std::fabs(loss));
      }
    QVERIFY2(maxRel < 1e-5, qPrintable(QString::number(maxRel)));
    // And it is a training curve, not a constant that would agree trivially.
    QVERIFY(curves[0].rbegin()->second < 0.9 * curves[0].begin()->second);

    // The comparison's numbers: every step compared, max and RMS difference at float tolerance
    // of the loss, on the step axis and on the samples axis.
    std::vector<ComparedRun> compared;
    for (const QString& dir : dirs) {
      QString error;
      auto run = loadComparedRun(dir, QString(), &error);
      QVERIFY2(run, qPrintable(error));
      compared.push_back(std::move(*run));
    }
    const double scale = std::fabs(curves[0].begin()->second);
    for (const CompareX axis : {CompareX::Step, CompareX::Samples}) {
      const Curve reference = extractCurve(*compared[0].store, CompareMetric::Loss, axis);
      QCOMPARE(int(reference.size()), 16);
      for (int k = 1; k < 3; ++k) {
        const CurveDiff d =
            diffCurves(reference, extractCurve(*compared[k].store, CompareMetric::Loss, axis),
                       Matching::Exact);
        QCOMPARE(int(d.points), 16);
        QVERIFY2(d.maxAbs < 1e-5 * scale, qPrintable(describeDiff(d, axis)));
        QVERIFY(d.rms <= d.maxAbs);
      }
    }
  }
};

DDPDESK_TEST_GUILESS_MAIN(TestSweepEquivalence)
#include "test_sweep_equivalence.moc"
