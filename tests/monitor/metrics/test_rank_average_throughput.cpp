// Each rank's own average training throughput (RankAverageThroughput, kept in the store's
// RankInfo), the evaluation time the store reports apart, and the summary line built from them: a
// rank that is slower gets its own lower figure (not the global rate divided by the world size),
// time spent evaluating does not count as training, a resumed rank's first interval is left out,
// and messages without a step breakdown fall back to the rank's clock.
#include <QtTest>

#include "metrics/metrics_store.h"
#include "metrics/rank_average_throughput.h"
#include "qt_test_main.h"
#include "run/progress_text.h"

using namespace ddpdesk;

namespace {

constexpr int kWorld = 2;
constexpr std::int64_t kGlobalBatch = 128;  // 64 samples per rank per step

// Step n of a rank whose steps take stepMs each, reported every `interval` steps; its clock
// also ran `extraSeconds` of non-training time (evaluations) before this message.
wire::Step step(int rank, std::int64_t n, long interval, double stepMs, double clock) {
  wire::Step s;
  s.rank = rank;
  s.step = n;
  s.samples = n * kGlobalBatch;
  s.time = clock;
  s.samples_per_s = 99999;  // the last interval's global rate: must not be what is reported
  wire::StepTimes t;
  t.forward = stepMs;
  t.step = stepMs;
  t.steps = interval;
  s.times = t;
  return s;
}

}  // namespace

class TestRankAverageThroughput : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void eachRankIsMeasuredOnItsOwnClock() {
    MetricsStore store;
    store.setWorld(kWorld);
    // Rank 0 takes 10 ms a step, rank 1 20 ms; 10 messages of 5 steps each.
    for (int m = 1; m <= 10; ++m) {
      store.ingest(step(0, m * 5, 5, 10.0, m * 0.05));
      store.ingest(step(1, m * 5, 5, 20.0, m * 0.1));
    }
    // 64 own samples per 10 ms = 6400/s; per 20 ms = 3200/s.
    QCOMPARE(store.rankInfo(0).training.perRankSamplesPerSec(kWorld), 6400.0);
    QCOMPARE(store.rankInfo(1).training.perRankSamplesPerSec(kWorld), 3200.0);
    QCOMPARE(store.rankInfo(0).training.samples(), 50.0 * kGlobalBatch);
    QCOMPARE(store.rankInfo(1).training.seconds(), 1.0);
    QCOMPARE(formatThroughputLine(store),
             QStringLiteral("training 4800 samples/s per rank (9600 in all)"));
  }

  void evaluationIsNotTrainingAndIsReportedApart() {
    MetricsStore store;
    store.setWorld(kWorld);
    // Two epochs of 10 steps at 10 ms; after each, an evaluation of 1.5 s on rank 0's clock.
    double clock = 0;
    for (int epoch = 0; epoch < 2; ++epoch) {
      for (int n = epoch * 10 + 1; n <= epoch * 10 + 10; ++n) {
        clock += 0.01;
        for (int r = 0; r < kWorld; ++r) store.ingest(step(r, n, 1, 10.0, clock));
      }
      clock += 1.5;
      wire::Eval e;
      e.epoch = epoch;
      e.step = (epoch + 1) * 10;
      e.loss = 0.5;
      e.time = clock;
      store.ingest(e);
      // Another rank reporting the same evaluation does not count it twice.
      e.rank = 1;
      store.ingest(e);
    }
    QCOMPARE(store.rankInfo(0).training.perRankSamplesPerSec(kWorld), 6400.0);
    QVERIFY(std::abs(store.progress().evalSeconds - 3.0) < 1e-9);
    QCOMPARE(formatThroughputLine(store),
             QStringLiteral("training 6400 samples/s per rank (12800 in all); evaluation 3.0s"));
  }

  void aResumedRanksFirstIntervalIsLeftOut() {
    RankAverageThroughput t;
    t.add(step(0, 5, 5, 10.0, 0.05), 1);  // from the start: counted
    t.add(step(0, 10, 5, 10.0, 0.10), 1);
    // Resumed at step 10 (a new session): its first message covers steps 11..15, whose start
    // count this message does not say; then intervals are counted again.
    t.add(step(0, 15, 5, 30.0, 0.25), 2);
    t.add(step(0, 20, 5, 10.0, 0.30), 2);
    QCOMPARE(t.samples(), 15.0 * kGlobalBatch);
    QVERIFY(std::abs(t.seconds() - 0.15) < 1e-12);
    QVERIFY(std::abs(t.perRankSamplesPerSec(kWorld) - 6400.0) < 1e-6);
  }

  void withoutABreakdownTheRanksClockIsUsed() {
    RankAverageThroughput t;
    for (int n = 1; n <= 5; ++n) {
      wire::Step s = step(0, n, 1, 10.0, 0.02 * n);
      s.times.reset();
      t.add(s, 1);
    }
    // The first message only sets the start (its interval's length is unknown).
    QCOMPARE(t.samples(), 4.0 * kGlobalBatch);
    QVERIFY(std::abs(t.perRankSamplesPerSec(kWorld) - 3200.0) < 1e-6);
  }

  void nothingCountedNothingShown() {
    MetricsStore store;
    QCOMPARE(formatThroughputLine(store), QString());
    QCOMPARE(RankAverageThroughput().perRankSamplesPerSec(kWorld), 0.0);
  }
};

DDPDESK_TEST_MAIN(TestRankAverageThroughput)
#include "test_rank_average_throughput.moc"
