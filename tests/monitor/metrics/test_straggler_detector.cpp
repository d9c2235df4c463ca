// The straggler detector on its own: flags a rank whose compute stays over the others' median for
// N intervals and a minimum of wall time, names the rank and the part that grew, clears after N
// intervals back in line, and lets single spikes, short bursts, waiting ranks and missing
// breakdowns pass.
#include <QtTest>

#include "breakdown_test_util.h"
#include "metrics/straggler_detector.h"
#include "qt_test_main.h"

using namespace ddpdesk;
using namespace ddpdesk::test;

class TestStragglerDetector : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void flagsAfterNIntervalsAndExplains() {
    StragglerDetector d;
    // Rank 1 spends 20 ms more per step loading data: compute 26.9 ms against 6.9 ms.
    const auto slow = interval(2, 1, &wire::StepTimes::data, 20.0);
    QVERIFY(d.addInterval(slow).empty());
    QVERIFY(d.addInterval(slow).empty());
    QVERIFY(!d.isFlagged(1));
    const auto changes = d.addInterval(slow);
    QCOMPARE(changes.size(), std::size_t(1));
    QCOMPARE(changes[0].rank, 1);
    QVERIFY(changes[0].flagged);
    QCOMPARE(changes[0].text,
             QStringLiteral("rank 1 is a straggler: compute 26.9 ms vs 6.9 ms median of the "
                            "others (+290%), mostly data (+20.0 ms)"));
    QVERIFY(d.isFlagged(1));
    QVERIFY(!d.isFlagged(0));  // the rank that waits for it is not the culprit
    QCOMPARE(d.flaggedRanks(), std::vector<int>{1});
    QCOMPARE(d.explanation(1), changes[0].text);
    QVERIFY(d.explanation(0).isEmpty());
    QCOMPARE(d.intervals(), qint64(3));
    // Still slow: no second flag.
    QVERIFY(d.addInterval(slow).empty());
  }

  void clearsAfterNIntervalsInLine() {
    StragglerDetector d;
    const auto slow = interval(2, 1, &wire::StepTimes::data, 20.0);
    for (int i = 0; i < 3; ++i) d.addInterval(slow);
    QVERIFY(d.isFlagged(1));
    QVERIFY(d.addInterval(interval(2)).empty());
    QVERIFY(d.addInterval(interval(2)).empty());
    QVERIFY(d.isFlagged(1));
    const auto changes = d.addInterval(interval(2));
    QCOMPARE(changes.size(), std::size_t(1));
    QCOMPARE(changes[0].rank, 1);
    QVERIFY(!changes[0].flagged);
    QVERIFY(changes[0].text.startsWith(QStringLiteral("rank 1 is no longer a straggler: ")));
    QVERIFY(!d.isFlagged(1));
    QVERIFY(d.flaggedRanks().empty());
    QVERIFY(d.explanation(1).isEmpty());
  }

  void aSlowIntervalInBetweenKeepsTheFlag() {
    StragglerDetector d;
    const auto slow = interval(2, 1, &wire::StepTimes::data, 20.0);
    for (int i = 0; i < 3; ++i) d.addInterval(slow);
    d.addInterval(interval(2));
    d.addInterval(interval(2));
    d.addInterval(slow);  // back over: the count of intervals in line starts again
    d.addInterval(interval(2));
    d.addInterval(interval(2));
    QVERIFY(d.isFlagged(1));
    QCOMPARE(d.addInterval(interval(2)).size(), std::size_t(1));
    QVERIFY(!d.isFlagged(1));
  }

  void ignoresSpikes() {
    StragglerDetector d;
    const auto slow = interval(2, 1, &wire::StepTimes::data, 20.0);
    // Over twice, in line once, over twice: never three in a row.
    for (const auto& iv : {slow, slow, interval(2), slow, slow, interval(2), slow}) {
      QVERIFY(d.addInterval(iv).empty());
      QVERIFY(!d.isFlagged(1));
    }
    QCOMPARE(d.intervals(), qint64(7));
  }

  void balancedRanksWithNoiseAreNotFlagged() {
    // Two ranks of equal work, each interval one of them up to 15% slower by turns (as a busy
    // core makes it): under the 20% margin, so hundreds of intervals flag nobody. A detector
    // that compared with the mean of all ranks, or with the fastest, or ignored the margin
    // would flag one of them here.
    StragglerDetector d;
    for (int i = 0; i < 300; ++i) {
      auto iv = interval(2);
      const double extra = 0.15 * 6.9 * ((i % 7) / 6.0);  // 0 .. 15% of the compute
      const int slow = (i / 3) % 2;                       // three in a row each, then the other
      iv[slow]->backward += extra;
      iv[slow]->step += extra;
      QVERIFY(d.addInterval(iv).empty());
    }
    QVERIFY(d.flaggedRanks().empty());
  }

  void twoRanksEitherOneSlow() {
    StragglerDetector d;
    const auto slow0 = interval(2, 0, &wire::StepTimes::forward, 5.0);
    for (int i = 0; i < 3; ++i) d.addInterval(slow0);
    QCOMPARE(d.flaggedRanks(), std::vector<int>{0});
    QVERIFY(d.explanation(0).contains(QStringLiteral("mostly forward (+5.0 ms)")));
  }

  void eightRanksOneSlow() {
    StragglerDetector d;
    const auto slow = interval(8, 5, &wire::StepTimes::backward, 4.0);
    std::vector<StragglerDetector::Change> changes;
    for (int i = 0; i < 3; ++i) changes = d.addInterval(slow);
    QCOMPARE(changes.size(), std::size_t(1));
    QCOMPARE(changes[0].rank, 5);
    QCOMPARE(d.flaggedRanks(), std::vector<int>{5});
    // 10.9 ms against the median 6.9 ms of the seven others: +58%.
    QCOMPARE(d.explanation(5),
             QStringLiteral("rank 5 is a straggler: compute 10.9 ms vs 6.9 ms median of the "
                            "others (+58%), mostly backward (+4.0 ms)"));
  }

  void waitingIsNotCompute() {
    // A rank that waits 20 ms in comm is the victim, not the straggler.
    StragglerDetector d;
    const auto waits = interval(4, 2, &wire::StepTimes::comm, 20.0);
    for (int i = 0; i < 5; ++i) QVERIFY(d.addInterval(waits).empty());
    QVERIFY(d.flaggedRanks().empty());
  }

  void marginIsRelativeAndAbsolute() {
    // +17% (1.2 ms over 6.9): more than 1 ms, but under the default 20%.
    {
      StragglerDetector d;
      for (int i = 0; i < 5; ++i) d.addInterval(interval(2, 1, &wire::StepTimes::data, 1.2));
      QVERIFY(d.flaggedRanks().empty());
    }
    // The same with a 10% margin: flagged.
    {
      StragglerOptions o;
      o.margin = 0.10;
      StragglerDetector d(o);
      for (int i = 0; i < 3; ++i) d.addInterval(interval(2, 1, &wire::StepTimes::data, 1.2));
      QCOMPARE(d.flaggedRanks(), std::vector<int>{1});
    }
    // +0.8 ms on a tiny step (+100%): under the 1 ms floor.
    {
      auto tiny = [](double data) {
        wire::StepTimes t;
        t.data = data;
        t.forward = 0.4;
        t.step = data + 0.4;
        t.steps = 2000;  // 1.6 ms a step: three intervals cover the minimum duration
        return std::optional<wire::StepTimes>(t);
      };
      StragglerDetector d;
      for (int i = 0; i < 5; ++i) d.addInterval({tiny(0.4), tiny(1.2)});
      QVERIFY(d.flaggedRanks().empty());
      StragglerOptions o;
      o.minMs = 0.5;
      StragglerDetector lower(o);
      for (int i = 0; i < 3; ++i) lower.addInterval({tiny(0.4), tiny(1.2)});
      QCOMPARE(lower.flaggedRanks(), std::vector<int>{1});
    }
  }

  void intervalCountIsConfigurable() {
    StragglerOptions o;
    o.intervals = 5;
    StragglerDetector d(o);
    const auto slow = interval(2, 1, &wire::StepTimes::data, 20.0);
    for (int i = 0; i < 4; ++i) QVERIFY(d.addInterval(slow).empty());
    QCOMPARE(d.addInterval(slow).size(), std::size_t(1));
    QVERIFY(d.isFlagged(1));
  }

  void shortIntervalsNeedTheMinimumDuration() {
    // Intervals of 5 steps: the slowed rank's 28 ms steps make 0.14 s an interval, so three in a
    // row are a burst (a shared machine's busy moment), not a straggler. Flagged once the
    // intervals over the margin cover 2 s: 15 of them (14 make 1.96 s).
    StragglerDetector d;
    const auto slow = interval(2, 1, &wire::StepTimes::data, 20.0, 5);
    for (int i = 1; i <= 14; ++i) {
      QVERIFY2(d.addInterval(slow).empty(), qPrintable(QString::number(i)));
      QVERIFY(!d.isFlagged(1));
    }
    const auto changes = d.addInterval(slow);
    QCOMPARE(changes.size(), std::size_t(1));
    QCOMPARE(changes[0].rank, 1);
    QVERIFY(changes[0].flagged);
    QVERIFY(d.isFlagged(1));
  }

  void anIntervalInLineRestartsTheDuration() {
    // 10 short slow intervals (1.4 s), one in line, 10 more: never 2 s in a row.
    StragglerDetector d;
    const auto slow = interval(2, 1, &wire::StepTimes::data, 20.0, 5);
    for (int i = 0; i < 10; ++i) QVERIFY(d.addInterval(slow).empty());
    QVERIFY(d.addInterval(interval(2, -1, nullptr, 0, 5)).empty());
    for (int i = 0; i < 10; ++i) QVERIFY(d.addInterval(slow).empty());
    QVERIFY(d.flaggedRanks().empty());
    // Five more make 15 in a row: flagged.
    for (int i = 0; i < 5; ++i) d.addInterval(slow);
    QCOMPARE(d.flaggedRanks(), std::vector<int>{1});
  }

  void minimumDurationIsConfigurable() {
    // Without a minimum, the count alone decides: three short intervals flag.
    StragglerOptions o;
    o.minSeconds = 0;
    StragglerDetector d(o);
    const auto slow = interval(2, 1, &wire::StepTimes::data, 20.0, 5);
    QVERIFY(d.addInterval(slow).empty());
    QVERIFY(d.addInterval(slow).empty());
    QCOMPARE(d.addInterval(slow).size(), std::size_t(1));
    // A breakdown without a step count covers one step: 28 ms an interval.
    o.minSeconds = 0.1;
    StragglerDetector uncounted(o);
    auto none = interval(2, 1, &wire::StepTimes::data, 20.0, 0);
    for (int i = 1; i <= 3; ++i) QVERIFY(uncounted.addInterval(none).empty());
    QCOMPARE(uncounted.addInterval(none).size(), std::size_t(1));  // 4 x 28 ms = 0.112 s
  }

  void noBreakdownNothing() {
    StragglerDetector d;
    const std::vector<std::optional<wire::StepTimes>> none(4);
    for (int i = 0; i < 5; ++i) QVERIFY(d.addInterval(none).empty());
    // One rank with a breakdown has nobody to be compared with.
    std::vector<std::optional<wire::StepTimes>> one(4);
    one[1] = slowTimes(&wire::StepTimes::data, 20.0);
    for (int i = 0; i < 5; ++i) QVERIFY(d.addInterval(one).empty());
    QCOMPARE(d.intervals(), qint64(0));
    QVERIFY(d.flaggedRanks().empty());
  }

  void aRankWithoutBreakdownIsLeftOut() {
    // Rank 2 sent none: ranks 0, 1 and 3 are still compared among themselves.
    StragglerDetector d;
    auto iv = interval(4, 3, &wire::StepTimes::optimizer, 10.0);
    iv[2].reset();
    for (int i = 0; i < 3; ++i) d.addInterval(iv);
    QCOMPARE(d.flaggedRanks(), std::vector<int>{3});
    QVERIFY(d.explanation(3).contains(QStringLiteral("mostly optimizer")));
  }

  void resetForgets() {
    StragglerDetector d;
    for (int i = 0; i < 3; ++i) d.addInterval(interval(2, 1, &wire::StepTimes::data, 20.0));
    QVERIFY(d.isFlagged(1));
    d.reset();
    QVERIFY(!d.isFlagged(1));
    QCOMPARE(d.intervals(), qint64(0));
  }
};

DDPDESK_TEST_GUILESS_MAIN(TestStragglerDetector)
#include "test_straggler_detector.moc"
