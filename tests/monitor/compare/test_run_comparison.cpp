// The comparison core on hand-made run directories whose curves are known point by point: the
// max and RMS differences below are worked out by hand (see each case), including runs whose
// steps do not line up; plus the table's differing fields and summaries, the CSV, a TensorBoard
// log taken as a run, and the one-line refusals.
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>

#include "compare/run_comparison.h"
#include "compare_fixture.h"
#include "event_writer.h"
#include "metrics/metrics_store.h"
#include "qt_test_main.h"
#include "tensorboard_fixture.h"

using namespace ddpdesk;
using namespace ddpdesk::testing;

namespace {

bool near(double a, double b) {
  return std::abs(a - b) < 1e-12;
}

// Run A: steps 1..5, loss 1.0 0.8 0.6 0.4 0.2, 32 samples and 0.1 s a step.
std::vector<wire::Message> runA() {
  auto m = lossCurve({{1, 1.0}, {2, 0.8}, {3, 0.6}, {4, 0.4}, {5, 0.2}}, 32);
  m.push_back(evalMessage(5, 0.3, 0.9));
  return m;
}
// Run B: every second step (2, 4, 6), loss 0.9 0.4 0.0, 16 samples a step.
std::vector<wire::Message> runB() {
  return lossCurve({{2, 0.9}, {4, 0.4}, {6, 0.0}}, 16);
}

}  // namespace

class TestRunComparison : public QObject {
  Q_OBJECT

  std::unique_ptr<QTemporaryDir> tmp;
  QString a, b;

  std::vector<ComparedRun> load(const QStringList& dirs) {
    std::vector<ComparedRun> runs;
    for (const QString& d : dirs) {
      QString error;
      auto r = loadComparedRun(d, {}, &error);
      if (!r) qWarning("%s", qPrintable(error));
      if (r) runs.push_back(std::move(*r));
    }
    return runs;
  }

  CurveDiff diffAB(CompareX axis, Matching m, CompareMetric metric = CompareMetric::Loss) {
    const auto runs = load({a, b});
    if (runs.size() != 2) return {};
    return diffCurves(extractCurve(*runs[0].store, metric, axis),
                      extractCurve(*runs[1].store, metric, axis), m);
  }

 private Q_SLOTS:
  void init() {
    tmp = std::make_unique<QTemporaryDir>();
    QVERIFY(tmp->isValid());
    a = tmp->filePath(QStringLiteral("run-a"));
    b = tmp->filePath(QStringLiteral("run-b"));
    QVERIFY(writeRun(a, compareSpec(32, 1, "/runs/a"), runA()));
    QVERIFY(writeRun(b, compareSpec(16, 2, "/runs/b"), runB()));
  }
  void cleanup() { tmp.reset(); }

  void theSparserRunsStepsAreCompared() {
    // Common range: steps 2..5, where A has 4 points (2, 3, 4, 5) and B 2 (2, 4): compared at
    // B's 2 and 4, where A has points of its own. B - A: 0.9-0.8 = 0.1, 0.4-0.4 = 0.
    // max 0.1 at step 2; RMS = sqrt(0.01 / 2) = sqrt(0.005).
    const CurveDiff d = diffAB(CompareX::Step, Matching::Interpolate);
    QCOMPARE(d.points, std::size_t(2));
    QCOMPARE(d.xFrom, 2.0);
    QCOMPARE(d.xTo, 4.0);
    QVERIFY2(near(d.maxAbs, 0.1), qPrintable(QString::number(d.maxAbs, 'g', 17)));
    QCOMPARE(d.maxAt, 2.0);
    QVERIFY2(near(d.rms, std::sqrt(0.005)), qPrintable(QString::number(d.rms, 'g', 17)));
    QCOMPARE(d.delta.x, (std::vector<double>{2, 4}));
  }

  // The same run logged at every step and at every 10th: the same losses where both logged, so
  // no difference (interpolating the sparse one between its points would make one up).
  void aDenseAndASparseLogOfTheSameRunDoNotDiffer() {
    std::vector<std::pair<int, double>> dense, sparse;
    for (int s = 1; s <= 40; ++s) {
      const double loss = 1.0 / s + 0.05 * (s % 3);  // not linear between the sparse points
      dense.push_back({s, loss});
      if (s % 10 == 0) sparse.push_back({s, loss});
    }
    const QString d = tmp->filePath(QStringLiteral("dense"));
    const QString s = tmp->filePath(QStringLiteral("sparse"));
    QVERIFY(writeRun(d, compareSpec(32, 1, "/runs/dense"), lossCurve(dense)));
    QVERIFY(writeRun(s, compareSpec(32, 1, "/runs/sparse"), lossCurve(sparse)));
    const auto runs = load({d, s});
    QCOMPARE(runs.size(), std::size_t(2));
    for (CompareX axis : {CompareX::Step, CompareX::Samples, CompareX::Time}) {
      const Curve cd = extractCurve(*runs[0].store, CompareMetric::Loss, axis);
      const Curve cs = extractCurve(*runs[1].store, CompareMetric::Loss, axis);
      for (const CurveDiff& diff : {diffCurves(cd, cs), diffCurves(cs, cd)}) {
        QCOMPARE(diff.points, std::size_t(4));  // steps 10, 20, 30, 40
        QCOMPARE(diff.maxAbs, 0.0);
      }
    }
  }

  void theDenserRunIsInterpolatedAtTheSparsersSteps() {
    // (Q against P first: a tie, then Q2 against P: the sparser's steps.)
    // P every second step: 2, 4, 6, 8, 10, loss 1 - 0.1 * step (0.8, 0.6, 0.4, 0.2, 0.0).
    // Q every third: 3, 6, 9, loss 0.5, 0.1, 0.3. Common range 3..9: P has 3 points there (4, 6,
    // 8), Q 3 (3, 6, 9): equally many, so every x of either: 3, 4, 6, 8, 9.
    //   P at 3 = (0.8 + 0.6) / 2 = 0.7, at 9 = (0.2 + 0.0) / 2 = 0.1;
    //   Q at 4 = 0.5 + (0.1 - 0.5) / 3 = 0.5 - 0.4 / 3, at 8 = 0.1 + 2 * (0.3 - 0.1) / 3.
    // With Q2 at 3 and 9 only (loss 0.6, 0.3): Q2 has 2 points in 3..9, P 3: compared at 3 and
    // 9, P interpolated there: Q2 - P = 0.6 - 0.7 = -0.1 and 0.3 - 0.1 = 0.2; max 0.2 at step 9,
    // RMS sqrt((0.01 + 0.04) / 2) = sqrt(0.025).
    const QString p = tmp->filePath(QStringLiteral("p"));
    const QString q = tmp->filePath(QStringLiteral("q"));
    const QString q2 = tmp->filePath(QStringLiteral("q2"));
    QVERIFY(writeRun(p, compareSpec(32, 1, "/runs/p"),
                     lossCurve({{2, 0.8}, {4, 0.6}, {6, 0.4}, {8, 0.2}, {10, 0.0}})));
    QVERIFY(writeRun(q, compareSpec(32, 1, "/runs/q"), lossCurve({{3, 0.5}, {6, 0.1}, {9, 0.3}})));
    QVERIFY(writeRun(q2, compareSpec(32, 1, "/runs/q2"), lossCurve({{3, 0.6}, {9, 0.3}})));
    const auto runs = load({p, q, q2});
    QCOMPARE(runs.size(), std::size_t(3));
    const auto curve = [&](int i) {
      return extractCurve(*runs[std::size_t(i)].store, CompareMetric::Loss, CompareX::Step);
    };
    const CurveDiff pq = diffCurves(curve(0), curve(1));
    QCOMPARE(pq.delta.x, (std::vector<double>{3, 4, 6, 8, 9}));
    // Q - P: -0.2, (0.5 - 0.4/3) - 0.6, 0.1 - 0.4, (0.1 + 0.4/3) - 0.2, 0.3 - 0.1.
    const double expected[] = {-0.2, -0.1 - 0.4 / 3, -0.3, -0.1 + 0.4 / 3, 0.2};
    for (int i = 0; i < 5; ++i)
      QVERIFY2(near(pq.delta.y[std::size_t(i)], expected[i]),
               qPrintable(QString::number(pq.delta.y[std::size_t(i)], 'g', 17)));
    QVERIFY(near(pq.maxAbs, 0.3));
    QCOMPARE(pq.maxAt, 6.0);
    const CurveDiff pq2 = diffCurves(curve(0), curve(2));
    QCOMPARE(pq2.delta.x, (std::vector<double>{3, 9}));
    QVERIFY(near(pq2.delta.y[0], -0.1) && near(pq2.delta.y[1], 0.2));
    QVERIFY(near(pq2.maxAbs, 0.2));
    QCOMPARE(pq2.maxAt, 9.0);
    QVERIFY(near(pq2.rms, std::sqrt(0.025)));
  }

  void exactMatchingUsesSharedStepsOnly() {
    // Shared steps 2 and 4: deltas 0.1 and 0; RMS = sqrt(0.01 / 2).
    const CurveDiff d = diffAB(CompareX::Step, Matching::Exact);
    QCOMPARE(d.points, std::size_t(2));
    QVERIFY(near(d.maxAbs, 0.1));
    QVERIFY(near(d.rms, std::sqrt(0.005)));
  }

  void differenceIsAntisymmetric() {
    const auto runs = load({a, b});
    QCOMPARE(runs.size(), std::size_t(2));
    const Curve ca = extractCurve(*runs[0].store, CompareMetric::Loss, CompareX::Step);
    const Curve cb = extractCurve(*runs[1].store, CompareMetric::Loss, CompareX::Step);
    const CurveDiff ab = diffCurves(ca, cb), ba = diffCurves(cb, ca);
    QCOMPARE(ab.points, ba.points);
    QCOMPARE(ab.rms, ba.rms);
    for (std::size_t i = 0; i < ab.points; ++i) QCOMPARE(ab.delta.y[i], -ba.delta.y[i]);
  }

  void samplesAxisLinesUpDifferentBatches() {
    // A at samples 32, 64, 96, 128, 160; B (16 a step) at 32, 64, 96. Common range 32..96:
    // B - A = 0.9-1.0, 0.4-0.8, 0.0-0.6 = -0.1, -0.4, -0.6; max 0.6 at 96;
    // RMS = sqrt((0.01 + 0.16 + 0.36) / 3).
    const CurveDiff d = diffAB(CompareX::Samples, Matching::Interpolate);
    QCOMPARE(d.points, std::size_t(3));
    QVERIFY(near(d.maxAbs, 0.6));
    QCOMPARE(d.maxAt, 96.0);
    QVERIFY(near(d.rms, std::sqrt(0.53 / 3)));
  }

  void timeAxisInterpolatesBetweenTimes() {
    // 0.1 s a step for both: the step-axis numbers, at B's 0.2 and 0.4 s.
    const CurveDiff d = diffAB(CompareX::Time, Matching::Interpolate);
    QCOMPARE(d.points, std::size_t(2));
    QVERIFY(near(d.maxAbs, 0.1));
    QVERIFY(near(d.maxAt, 0.2));
    QVERIFY(near(d.rms, std::sqrt(0.005)));
  }

  void curvesWithoutOverlapHaveNothingToCompare() {
    const QString c = tmp->filePath(QStringLiteral("run-c"));
    QVERIFY(writeRun(c, compareSpec(32, 1, "/runs/c"), lossCurve({{7, 1.0}, {8, 0.5}})));
    const auto runs = load({a, c});
    QCOMPARE(runs.size(), std::size_t(2));
    const CurveDiff d =
        diffCurves(extractCurve(*runs[0].store, CompareMetric::Loss, CompareX::Step),
                   extractCurve(*runs[1].store, CompareMetric::Loss, CompareX::Step));
    QCOMPARE(d.points, std::size_t(0));
    QVERIFY(std::isnan(d.rms));
    QCOMPARE(describeDiff(d, CompareX::Step), QStringLiteral("no common step range"));
  }

  void resumedSessionsJoinTheClockAndTheLastPointOfAStepCounts() {
    // Session 1: steps 1-3 at 0.1 s a step; session 2 resumes from step 1 with its clock at 0:
    // steps 2, 3 again (new losses) at 0.05 and 0.15 s.
    std::vector<wire::Message> m;
    wire::Hello h;
    h.world = 1;
    m.push_back(h);
    for (const auto& s : lossCurve({{1, 0.9}, {2, 0.8}, {3, 0.7}})) m.push_back(s);
    m.push_back(h);
    m.push_back(stepMessage(2, 0.6, 64, 0.05));
    m.push_back(stepMessage(3, 0.5, 96, 0.15));
    m.push_back(evalMessage(2, 0.55, 0.75));
    const QString c = tmp->filePath(QStringLiteral("run-c"));
    QVERIFY(writeRun(c, compareSpec(32, 1, "/runs/c"), m));
    const auto runs = load({c});
    QCOMPARE(runs.size(), std::size_t(1));
    const MetricsStore& store = *runs[0].store;
    const Curve byStep = extractCurve(store, CompareMetric::Loss, CompareX::Step);
    QCOMPARE(byStep.x, (std::vector<double>{1, 2, 3}));
    QCOMPARE(byStep.y, (std::vector<double>{0.9, 0.6, 0.5}));
    // Clock: 0.1 0.2 0.3, then the new session's 0.05 and 0.15 after the first one's end: 0.35
    // and 0.45 (session_clock.h, as the charts' wall-time axis).
    const Curve byTime = extractCurve(store, CompareMetric::Loss, CompareX::Time);
    QCOMPARE(byTime.size(), std::size_t(5));
    QVERIFY(near(byTime.x[2], 0.3));
    QVERIFY(near(byTime.x[3], 0.35));
    QVERIFY(near(byTime.x.back(), 0.45));
    QCOMPARE(byTime.y.back(), 0.5);
    QCOMPARE(byTime.y[3], 0.6);
    // The validation at step 2 sits where the last training point of step 2 sits: 64 samples.
    const Curve eval = extractCurve(store, CompareMetric::EvalAccuracy, CompareX::Samples);
    QCOMPARE(eval.x, (std::vector<double>{64}));
    QCOMPARE(eval.y, (std::vector<double>{0.75}));
  }

  void tableListsTheFieldsThatDifferAndEachRunsFigures() {
    const auto runs = load({a, b});
    QCOMPARE(runs.size(), std::size_t(2));
    const ComparisonTable t = buildTable(runs);
    // batch_size and accum_steps differ; run_dir differs too but only places a run.
    QCOMPARE(t.fields, (QStringList{QStringLiteral("accum_steps"), QStringLiteral("batch_size")}));
    QCOMPARE(t.rows[0].fields, (QStringList{QStringLiteral("1"), QStringLiteral("32")}));
    QCOMPARE(t.rows[1].fields, (QStringList{QStringLiteral("2"), QStringLiteral("16")}));
    QCOMPARE(t.rows[0].globalBatch, qint64(32));
    QCOMPARE(t.rows[1].globalBatch, qint64(32));
    QCOMPARE(t.rows[0].steps, qint64(5));
    QCOMPARE(t.rows[0].finalLoss, 0.2);
    QCOMPARE(t.rows[0].bestLoss, 0.2);
    QCOMPARE(t.rows[0].valLoss, 0.3);
    QCOMPARE(t.rows[0].accuracy, 0.9);
    QVERIFY(near(t.rows[0].wallTime, 0.5));
    QVERIFY(near(t.rows[0].samplesPerSec, 160 / 0.5));
    QCOMPARE(t.rows[1].steps, qint64(6));
    QCOMPARE(t.rows[1].finalLoss, 0.0);
    QVERIFY(near(t.rows[1].samplesPerSec, 96 / 0.6));
    QVERIFY(std::isnan(t.rows[1].accuracy));
    QCOMPARE(t.header().size(), t.cells(0).size());
    QCOMPARE(t.cells(1).at(t.header().indexOf(QStringLiteral("accuracy"))), QString());
  }

  // Peak memory: the largest rank's resident memory, and GPU memory (the allocator's peak where
  // the worker sent it, else the process's on the device); a column only where a run has it,
  // always in the CSV.
  void peakMemoryOfTheLargestRank() {
    auto gauge = [](int rank, const char* name, double value) {
      wire::Gauge g;
      g.rank = rank;
      g.name = name;
      g.value = value;
      return wire::Message(g);
    };
    constexpr double MiB = 1024.0 * 1024.0;
    auto m = runA();
    m.push_back(gauge(0, "rss_bytes", 300 * MiB));
    m.push_back(gauge(1, "rss_bytes", 500 * MiB));
    m.push_back(gauge(1, "rss_bytes", 400 * MiB));
    m.push_back(gauge(0, "gpu_process_memory_bytes", 900 * MiB));
    m.push_back(gauge(0, "gpu_peak_bytes", 700 * MiB));  // the allocator's: preferred
    const QString c = tmp->filePath(QStringLiteral("run-c"));
    QVERIFY(writeRun(c, compareSpec(32, 1, "/runs/c"), m));
    auto t = buildTable(load({c, b}));
    QCOMPARE(t.rows[0].peakRss, 500 * MiB);
    QCOMPARE(t.rows[0].peakGpu, 700 * MiB);
    QVERIFY(std::isnan(t.rows[1].peakRss));
    const QStringList header = t.header();
    QCOMPARE(header.mid(header.size() - 2),
             (QStringList{QStringLiteral("peak RSS MiB"), QStringLiteral("peak GPU MiB")}));
    QCOMPARE(t.cells(0).mid(header.size() - 2), (QStringList{"500", "700"}));
    QCOMPARE(t.cells(1).mid(header.size() - 2), (QStringList{"", ""}));

    // NVML's figure where the worker sent no allocator peak (a script's rank).
    auto n = runB();
    n.push_back(gauge(1, "gpu_process_memory_bytes", 256 * MiB));
    const QString d = tmp->filePath(QStringLiteral("run-d"));
    QVERIFY(writeRun(d, compareSpec(16, 2, "/runs/d"), n));
    QCOMPARE(buildTable(load({d})).rows[0].peakGpu, 256 * MiB);

    // No run with a figure: no column.
    t = buildTable(load({a, b}));
    QVERIFY(!t.header().contains(QStringLiteral("peak RSS MiB")));
    QVERIFY(!t.header().contains(QStringLiteral("peak GPU MiB")));
    QCOMPARE(t.header().size(), t.cells(0).size());

    // The CSV: bytes, exact, the columns always there.
    const QByteArray csv = tableCsv(load({c, b}), CompareX::Step, Matching::Interpolate);
    const QList<QByteArray> lines = csv.split('\n');
    const QList<QByteArray> h = lines[0].split(',');
    const int rss = int(h.indexOf("peak_rss_bytes")), gpu = int(h.indexOf("peak_gpu_bytes"));
    QVERIFY(rss > 0 && gpu > 0);
    QCOMPARE(lines[1].split(',').at(rss).toDouble(), 500 * MiB);
    QCOMPARE(lines[1].split(',').at(gpu).toDouble(), 700 * MiB);
    QCOMPARE(lines[2].split(',').at(rss), QByteArray());
  }

  // 0 means "the task's default": the table shows the size that ran, so 0 and an explicit
  // 60000 are the same run, and 0 against 12000 reads 60000 against 12000.
  void datasetSizeShowsTheSizeThatRan() {
    auto pair = [](std::int64_t second) {
      std::vector<ComparedRun> runs(2);
      for (ComparedRun& r : runs) r.spec = compareSpec(32, 1, {}, "fmnist-mlp");
      runs[1].spec->dataset_size = second;
      return buildTable(runs);
    };
    QCOMPARE(pair(60000).fields, QStringList());
    const ComparisonTable t = pair(12000);
    QCOMPARE(t.fields, QStringList{QStringLiteral("dataset_size")});
    QCOMPARE(t.rows[0].fields, QStringList{QStringLiteral("60000")});
    QCOMPARE(t.rows[1].fields, QStringList{QStringLiteral("12000")});
  }

  void csvHoldsTheTableAndTheDifferences() {
    const auto runs = load({a, b});
    const QString path = tmp->filePath(QStringLiteral("table.csv"));
    QString error;
    QVERIFY2(writeTableCsv(runs, CompareX::Step, Matching::Interpolate, path, &error),
             qPrintable(error));
    QFile f(path);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QStringList lines = QString::fromUtf8(f.readAll()).split(QLatin1Char('\n'));
    QCOMPARE(lines.size(), 4);  // header, two rows, the empty rest after the last newline
    QCOMPARE(lines[3], QString());
    const QStringList header = lines[0].split(QLatin1Char(','));
    QCOMPARE(header.mid(0, 4), (QStringList{"run", "path", "accum_steps", "batch_size"}));
    const QStringList ra = lines[1].split(QLatin1Char(',')), rb = lines[2].split(QLatin1Char(','));
    QCOMPARE(ra.size(), header.size());
    QCOMPARE(rb.size(), header.size());
    auto cell = [&](const QStringList& row, const char* name) {
      return row.at(header.indexOf(QLatin1String(name)));
    };
    QCOMPARE(cell(ra, "run"), QStringLiteral("run-a"));
    QCOMPARE(cell(ra, "path"), QFileInfo(a).absoluteFilePath());
    QCOMPARE(cell(ra, "final_loss").toDouble(), 0.2);
    QCOMPARE(cell(ra, "accuracy").toDouble(), 0.9);
    QCOMPARE(cell(ra, "loss_max_diff"), QString());  // the reference itself
    QCOMPARE(cell(rb, "batch_size"), QStringLiteral("16"));
    QCOMPARE(cell(rb, "global_batch"), QStringLiteral("32"));
    QVERIFY(near(cell(rb, "loss_max_diff").toDouble(), 0.1));
    QVERIFY(near(cell(rb, "loss_rms_diff").toDouble(), std::sqrt(0.005)));
    QCOMPARE(cell(rb, "diff_points"), QStringLiteral("2"));
    QCOMPARE(cell(rb, "accuracy"), QString());
  }

  void tensorBoardLogIsComparedAsALossCurve() {
    // The same losses as run A, logged under "train/loss" (and another tag that is not a loss).
    const QString log = tmp->filePath(QStringLiteral("pytorch"));
    {
      tb::EventFileWriter w(log.toStdString());
      const double loss[] = {1.0, 0.8, 0.6, 0.4, 0.2};
      for (int i = 0; i < 5; ++i) {
        w.add_scalar("train/loss", loss[i], i + 1, 1000.0 + 0.5 * i);
        w.add_scalar("lr", 1e-3, i + 1, 1000.0 + 0.5 * i);
      }
    }
    const auto runs = load({a, log});
    QCOMPARE(runs.size(), std::size_t(2));
    QVERIFY(runs[1].imported);
    QCOMPARE(runs[1].label, QStringLiteral("pytorch/train/loss"));
    const CurveDiff d =
        diffCurves(extractCurve(*runs[0].store, CompareMetric::Loss, CompareX::Step),
                   extractCurve(*runs[1].store, CompareMetric::Loss, CompareX::Step));
    QCOMPARE(d.points, std::size_t(5));
    QVERIFY2(d.maxAbs < 1e-7, qPrintable(QString::number(d.maxAbs)));  // stored as float32
    // No sample counts in a TensorBoard series: nothing on the samples axis.
    QVERIFY(extractCurve(*runs[1].store, CompareMetric::Loss, CompareX::Samples).empty());
    // Wall time from the series' first point: 0 .. 2 s.
    QCOMPARE(extractCurve(*runs[1].store, CompareMetric::Loss, CompareX::Time).x.back(), 2.0);
    const ComparisonTable t = buildTable(runs);
    QCOMPARE(t.fields, QStringList());  // only one run has a spec: nothing differs
    QVERIFY(std::isnan(t.rows[1].samplesPerSec));
    // Another series by name; a name the log does not have is refused, naming what it has.
    QString error;
    auto lr = loadComparedRun(log, QStringLiteral("lr"), &error);
    QVERIFY(lr);
    QCOMPARE(lr->label, QStringLiteral("pytorch/lr"));
    QVERIFY(!loadComparedRun(log, QStringLiteral("nope"), &error));
    QVERIFY2(error.contains(QStringLiteral("no series 'nope' (it has: lr, train/loss)")),
             qPrintable(error));
  }

  void aCorruptTensorBoardLogIsReadInPartAndSaysWhy() {
    // Byte 200 lies a few records in: the points before the corrupt record are compared, and the
    // run carries a warning naming the file and the record.
    const QString log = tmp->filePath(QStringLiteral("corrupt"));
    const QString file = tensorBoardLog(log, 20, 200);
    QVERIFY(!file.isEmpty());
    QString error;
    const auto run = loadComparedRun(log, {}, &error);
    QVERIFY2(run, qPrintable(error));
    const std::size_t kept = run->store->global().size();
    QVERIFY2(kept > 0 && kept < 20, qPrintable(QString::number(kept)));
    QCOMPARE(run->warnings.size(), 1);
    QVERIFY2(run->warnings[0].startsWith(QFileInfo(file).absoluteFilePath() +
                                         QStringLiteral(": record ")) &&
                 run->warnings[0].contains(QStringLiteral("CRC mismatch")),
             qPrintable(run->warnings[0]));
    // A whole log and a run directory carry none.
    const QString whole = tmp->filePath(QStringLiteral("whole"));
    QVERIFY(!tensorBoardLog(whole, 20).isEmpty());
    QVERIFY(loadComparedRun(whole, {}, &error)->warnings.isEmpty());
    QVERIFY(loadComparedRun(a, {}, &error)->warnings.isEmpty());
  }

  void whatIsNotARunIsRefusedInOneLine() {
    QString error;
    QVERIFY(!loadComparedRun(tmp->filePath(QStringLiteral("missing")), {}, &error));
    QVERIFY2(error.endsWith(QStringLiteral("is not a run: no such directory")), qPrintable(error));
    const QString empty = tmp->filePath(QStringLiteral("empty"));
    QVERIFY(QDir().mkpath(empty));
    QVERIFY(!loadComparedRun(empty, {}, &error));
    QVERIFY2(error.contains(QStringLiteral("no spec.json")), qPrintable(error));
    QFile bad(RunDirectory::specPath(empty));
    QVERIFY(bad.open(QIODevice::WriteOnly));
    bad.write("{\"batch_size\": 0}");
    bad.close();
    QVERIFY(!loadComparedRun(empty, {}, &error));
    QVERIFY2(error.contains(QStringLiteral("spec.json is not a valid run spec")),
             qPrintable(error));
    QVERIFY(!error.contains(QLatin1Char('\n')));
  }
};

DDPDESK_TEST_GUILESS_MAIN(TestRunComparison)
#include "test_run_comparison.moc"
