// LodSeries: every point kept; what a redraw gets is bounded by the pixels and shows the same
// vertical extent per pixel column as the raw points would.
#include <QtTest>
#include <cmath>
#include <random>

#include <qcustomplot.h>

#include "plot/lod_series.h"
#include "qt_test_main.h"

using namespace ddpdesk;

namespace {

LodSeries noisy(std::size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<double> noise(0.0, 1.0);
  LodSeries s;
  for (std::size_t i = 0; i < n; ++i) s.append(double(i), 10.0 / (1.0 + 1e-3 * i) + noise(gen));
  return s;
}

}  // namespace

class TestLodSeries : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void fewPointsAreDrawnAsTheyAre() {
    LodSeries s = noisy(1000, 1);
    QVector<QCPGraphData> out;
    s.points(100, 200, 800, &out);
    QCOMPARE(s.lastLevel(), -1);
    QCOMPARE(out.size(), 103);  // 100..200 and one neighbour each side
    QCOMPARE(out.front().key, 99.0);
    QCOMPARE(out.back().key, 201.0);
    QCOMPARE(out[1].value, s.value(100));
  }

  void manyPointsAreBoundedByThePixels_data() {
    QTest::addColumn<int>("n");
    QTest::addColumn<int>("pixels");
    QTest::newRow("1M on 1400") << 1000000 << 1400;
    QTest::newRow("300k on 700") << 300000 << 700;
    QTest::newRow("100k on 200") << 100000 << 200;
  }
  void manyPointsAreBoundedByThePixels() {
    QFETCH(int, n);
    QFETCH(int, pixels);
    LodSeries s = noisy(std::size_t(n), 2);
    QCOMPARE(s.size(), std::size_t(n));
    QVector<QCPGraphData> out;
    s.points(0, n - 1, pixels, &out);
    QVERIFY(s.lastLevel() >= 0);
    // One vertical stroke per pixel column (plus the neighbours outside on each side).
    QVERIFY2(out.size() <= 2 * (pixels + 2), qPrintable(QString::number(out.size())));
    QVERIFY(out.size() >= pixels);
    for (int i = 1; i < out.size(); ++i) QVERIFY(out[i - 1].key <= out[i].key);
    // Per pixel column, the drawn extent equals the raw points' extent (what adaptive sampling
    // draws): every raw point of a column lies within the envelope's min/max of that column,
    // give or take the columns that buckets straddle.
    const double perPx = double(n) / pixels;
    std::vector<double> rawMin(pixels, INFINITY), rawMax(pixels, -INFINITY);
    std::vector<double> envMin(pixels + 1, INFINITY), envMax(pixels + 1, -INFINITY);
    for (int i = 0; i < n; ++i) {
      const int c = std::min(pixels - 1, int(i / perPx));
      rawMin[c] = std::min(rawMin[c], s.value(std::size_t(i)));
      rawMax[c] = std::max(rawMax[c], s.value(std::size_t(i)));
    }
    for (const auto& p : out) {
      const int c = std::min(pixels - 1, int(p.key / perPx));
      envMin[c] = std::min(envMin[c], p.value);
      envMax[c] = std::max(envMax[c], p.value);
    }
    double globalRawMin = INFINITY, globalEnvMin = INFINITY;
    for (int c = 0; c < pixels; ++c) {
      globalRawMin = std::min(globalRawMin, rawMin[c]);
      globalEnvMin = std::min(globalEnvMin, envMin[c]);
      // The extreme of a column is a point of the envelope, in that column or a neighbour.
      const double lo = std::min({envMin[c], c > 0 ? envMin[c - 1] : INFINITY, envMin[c + 1]});
      const double hi = std::max({envMax[c], c > 0 ? envMax[c - 1] : -INFINITY, envMax[c + 1]});
      QVERIFY(lo <= rawMin[c] && hi >= rawMax[c]);
    }
    QCOMPARE(globalEnvMin, globalRawMin);  // peaks are never lost
  }

  // An envelope point sits in the middle of its pixel column, at most two per column, and from
  // one column to the next the line starts at the end nearest to where the last one ended.
  void envelopeIsOneStrokePerColumn() {
    const int n = 200000, pixels = 500;
    LodSeries s = noisy(std::size_t(n), 4);
    QVector<QCPGraphData> out;
    s.points(0, n - 1, pixels, &out);
    QVERIFY(s.lastLevel() >= 0);
    const double perPx = double(n - 1) / pixels;
    QHash<int, int> perColumn;
    for (const auto& p : out) {
      const double c = p.key / perPx;
      QVERIFY2(std::fabs(c - std::floor(c) - 0.5) < 1e-6, qPrintable(QString::number(c)));
      ++perColumn[int(std::floor(c))];
    }
    for (int count : perColumn) QVERIFY(count <= 2);
    for (int i = 2; i < out.size(); ++i) {
      if (out[i].key != out[i - 1].key || out[i - 1].key == out[i - 2].key) continue;
      // out[i - 1] starts a column of two: its first point is the end nearer to out[i - 2].
      QVERIFY(std::fabs(out[i - 1].value - out[i - 2].value) <=
              std::fabs(out[i].value - out[i - 2].value));
    }
  }

  void zoomingInShowsRawPointsAgain() {
    LodSeries s = noisy(1000000, 3);
    QVector<QCPGraphData> out;
    s.points(500000, 500000 + 10000, 1400, &out);
    QCOMPARE(s.lastLevel(), -1);
    QCOMPARE(out.size(), 10003);
    s.points(0, 999999, 1400, &out);
    QVERIFY(s.lastLevel() > 0);
  }

  void appendedPointsReachEveryLevel() {
    LodSeries s;
    for (int i = 0; i < 100000; ++i) s.append(i, 1.0);
    s.append(100000, 50.0);  // a spike in the last, partial bucket
    QVector<QCPGraphData> out;
    s.points(0, 100000, 100, &out);
    QVERIFY(s.lastLevel() >= 0);
    double top = 0;
    for (const auto& p : out) top = std::max(top, p.value);
    QCOMPARE(top, 50.0);
  }

  void unsortedKeysFallBackToEveryPoint() {
    LodSeries s;
    for (int i = 0; i < 100; ++i) s.append(i, i);
    s.append(50, 0);  // a resume from an older checkpoint repeats steps
    QVERIFY(!s.sorted());
    QVector<QCPGraphData> out;
    s.points(0, 10, 10, &out);
    QCOMPARE(out.size(), 101);
  }

  void nonFiniteValuesAreSkippedInBuckets() {
    LodSeries s;
    for (int i = 0; i < 10000; ++i) s.append(i, i % 7 == 0 ? NAN : 1.0 + (i % 3));
    QVector<QCPGraphData> out;
    s.points(0, 9999, 20, &out);
    for (const auto& p : out) QVERIFY(std::isfinite(p.value));
  }
};

DDPDESK_TEST_GUILESS_MAIN(TestLodSeries)
#include "test_lod_series.moc"
