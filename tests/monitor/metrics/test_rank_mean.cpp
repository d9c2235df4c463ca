// The run's curve of printed losses (metrics/rank_mean.h): a step goes out once every rank
// printed it, each point carrying the ranks' mean; ranks at different steps, a rank printing
// every few steps, a rank that never prints (waited for kWaitS once), one that comes back, a
// flood (at most kMaxHeldSteps held), a dropped rank, a late point, a redrawn step, flush and
// reset.
#include <QtTest>

#include "metrics/rank_mean.h"
#include "qt_test_main.h"

using namespace ddpdesk;

namespace {

wire::Step point(int rank, std::int64_t step, double loss) {
  wire::Step s;
  s.rank = rank;
  s.step = step;
  s.loss = loss;
  s.global_loss = -1;  // never what goes out
  return s;
}

// "rank:step:loss:global" for each step message, to compare what went out in one string.
QString sent(std::vector<wire::Message>& out) {
  QStringList parts;
  for (const wire::Message& m : out) {
    const auto& s = std::get<wire::Step>(m);
    parts << QStringLiteral("%1:%2:%3:%4").arg(s.rank).arg(s.step).arg(s.loss).arg(s.global_loss);
  }
  out.clear();
  return parts.join(QLatin1Char(' '));
}

}  // namespace

class TestRankMean : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void aStepGoesOutWithTheMeanOnceEveryRankPrintedIt() {
    RankMean m(2);
    std::vector<wire::Message> out;
    m.add(point(0, 1, 1.0), 0.0, out);
    m.add(point(0, 2, 2.0), 0.1, out);
    QCOMPARE(sent(out), QString());  // rank 1 is behind: both steps wait
    QCOMPARE(int(m.heldSteps()), 2);
    m.add(point(1, 1, 3.0), 0.2, out);
    QCOMPARE(sent(out), QStringLiteral("0:1:1:2 1:1:3:2"));
    m.add(point(1, 2, 5.0), 0.3, out);
    QCOMPARE(sent(out), QStringLiteral("0:2:2:3.5 1:2:5:3.5"));
    QCOMPARE(int(m.heldSteps()), 0);
  }

  // A rank that prints every second step: the steps it skips are the others' mean once it has
  // passed them.
  void aRankThatSkipsStepsCountsWhereItPrinted() {
    RankMean m(2);
    std::vector<wire::Message> out;
    m.add(point(0, 1, 1.0), 0.0, out);
    m.add(point(0, 2, 2.0), 0.0, out);
    m.add(point(1, 2, 4.0), 0.0, out);
    QCOMPARE(sent(out), QStringLiteral("0:1:1:1 0:2:2:3 1:2:4:3"));
  }

  // Only rank 0 prints: its first step waits kWaitS for rank 1, later steps do not; rank 1
  // printing at last is waited for again, and its point for a step already out goes out alone.
  void aSilentRankIsWaitedForOnceThenAgainWhenItPrints() {
    RankMean m(2, 5.0);
    std::vector<wire::Message> out;
    m.add(point(0, 1, 1.0), 10.0, out);
    m.expire(14.9, out);
    QCOMPARE(sent(out), QString());
    m.expire(15.0, out);
    QCOMPARE(sent(out), QStringLiteral("0:1:1:1"));
    m.add(point(0, 2, 2.0), 15.5, out);
    QCOMPARE(sent(out), QStringLiteral("0:2:2:2"));
    m.add(point(1, 2, 6.0), 15.6, out);  // late: step 2 is out
    QCOMPARE(sent(out), QStringLiteral("1:2:6:6"));
    m.add(point(0, 3, 3.0), 15.7, out);
    QCOMPARE(sent(out), QString());  // rank 1 prints again: waited for
    m.add(point(1, 3, 5.0), 15.8, out);
    QCOMPARE(sent(out), QStringLiteral("0:3:3:4 1:3:5:4"));
  }

  // A flood of steps from one rank while the other is silent: at most kMaxHeldSteps wait.
  void aFloodHoldsAtMostTheLimit() {
    RankMean m(2);
    std::vector<wire::Message> out;
    const auto limit = std::int64_t(RankMean::kMaxHeldSteps);
    for (std::int64_t k = 1; k <= limit; ++k) m.add(point(0, k, 1.0), 0.0, out);
    QVERIFY(out.empty());
    QCOMPARE(m.heldSteps(), RankMean::kMaxHeldSteps);
    m.add(point(0, limit + 1, 1.0), 0.0, out);  // rank 1 is given up on: everything goes out
    QCOMPARE(int(out.size()), int(limit) + 1);
    QCOMPARE(int(m.heldSteps()), 0);
  }

  // A dropped rank (ended, or reporting through the client) is never waited for again, even
  // when a late line of it is read.
  void aDroppedRankIsNotWaitedFor() {
    RankMean m(3);
    std::vector<wire::Message> out;
    m.add(point(0, 1, 1.0), 0.0, out);
    m.add(point(1, 1, 2.0), 0.0, out);
    m.drop(2, out);
    QCOMPARE(sent(out), QStringLiteral("0:1:1:1.5 1:1:2:1.5"));
    m.add(point(2, 2, 9.0), 0.0, out);
    m.add(point(0, 2, 1.0), 0.0, out);
    QCOMPARE(sent(out), QString());  // rank 1 is still waited for
    m.add(point(1, 2, 2.0), 0.0, out);
    QCOMPARE(sent(out), QStringLiteral("2:2:9:4 0:2:1:4 1:2:2:4"));
  }

  // A step printed twice by a rank (a progress bar redrawn) counts with its last loss; flush
  // sends what is held as it is; after reset the steps start again.
  void redrawsFlushAndReset() {
    RankMean m(2);
    std::vector<wire::Message> out;
    m.add(point(0, 1, 1.0), 0.0, out);
    m.add(point(0, 1, 3.0), 0.0, out);
    m.add(point(1, 1, 5.0), 0.0, out);
    QCOMPARE(sent(out), QStringLiteral("0:1:1:4 0:1:3:4 1:1:5:4"));
    m.add(point(0, 2, 2.0), 0.0, out);
    m.flush(out);
    QCOMPARE(sent(out), QStringLiteral("0:2:2:2"));
    m.reset();
    m.add(point(0, 1, 7.0), 0.0, out);
    QCOMPARE(sent(out), QString());  // not late: the steps started again
    m.add(point(1, 1, 9.0), 0.0, out);
    QCOMPARE(sent(out), QStringLiteral("0:1:7:8 1:1:9:8"));
  }

  // Event files' losses (WaitFor::Reporters): a rank is waited for only once it has reported, so
  // rank 0's files alone go out at once; once rank 1's appear, steps wait for it too; a reset
  // forgets who reported.
  void reportersAreWaitedForOnceTheyReported() {
    RankMean m(2, 5.0, RankMean::WaitFor::Reporters);
    std::vector<wire::Message> out;
    m.add(point(0, 1, 1.0), 0.0, out);
    m.add(point(0, 2, 2.0), 0.0, out);
    QCOMPARE(sent(out), QStringLiteral("0:1:1:1 0:2:2:2"));
    m.add(point(1, 3, 4.0), 0.0, out);
    QCOMPARE(sent(out), QString());  // rank 0 has not reached step 3
    m.add(point(0, 3, 2.0), 0.0, out);
    QCOMPARE(sent(out), QStringLiteral("1:3:4:3 0:3:2:3"));
    m.add(point(0, 4, 1.0), 1.0, out);
    QCOMPARE(sent(out), QString());  // rank 1 reports now: waited for
    m.expire(6.0, out);
    QCOMPARE(sent(out), QStringLiteral("0:4:1:1"));
    m.reset();
    m.add(point(0, 1, 5.0), 7.0, out);
    QCOMPARE(sent(out), QStringLiteral("0:1:5:5"));
  }
};

DDPDESK_TEST_APPLESS_MAIN(TestRankMean)
#include "test_rank_mean.moc"
