// StallWatch's rules on a clock of the test's own: nothing before the first step, a run-wide
// stall at half the collective timeout, said once and again only after a step, a rank silent
// while the others step, a rank that never steps never called silent, gauges not progress (the
// controller feeds only progress), the limit stretched by a run's own long gaps, and end().
#include <QSignalSpy>
#include <QtTest>

#include "hang/stall_watch.h"
#include "qt_test_main.h"

using namespace ddpdesk;

class TestStallWatch : public QObject {
  Q_OBJECT
  qint64 now = 0;

  void make(StallWatch& w, int world, double timeoutS) {
    w.setClock([this] { return now; });
    now = 1000;
    w.begin(world, timeoutS);
  }

 private Q_SLOTS:
  void limitIsHalfTheCollectiveTimeoutOrThreeLongestGaps() {
    QCOMPARE(stallLimitMs(60.0, 0), qint64(30000));
    QCOMPARE(stallLimitMs(6.0, 900), qint64(3000));
    QCOMPARE(stallLimitMs(6.0, 1500), qint64(4500));
  }

  void nothingBeforeTheFirstStep() {
    StallWatch w;
    QSignalSpy spy(&w, &StallWatch::stalled);
    make(w, 2, 6.0);
    now += 100000;
    w.check();
    // Events (started, a resume's detail) but no step yet: a long first step is no stall.
    w.heard(0, false);
    w.heard(1, false);
    now += 100000;
    w.check();
    QCOMPARE(spy.count(), 0);
    QCOMPARE(w.limitMs(), qint64(3000));  // and the wait for the first step is no gap
    w.heard(0, true);
    now += 3000;
    w.check();
    QCOMPARE(spy.count(), 1);
  }

  void noStepFromAnyRankIsSaidOnceAtTheLimit() {
    StallWatch w;
    QSignalSpy spy(&w, &StallWatch::stalled);
    make(w, 2, 6.0);
    for (int i = 0; i < 5; ++i) {
      w.heard(0, true);
      w.heard(1, true);
      now += 100;
      w.check();
    }
    // Last steps at 1400: the limit is 3 s.
    now = 1400 + 2999;
    w.check();
    QCOMPARE(spy.count(), 0);
    now = 1400 + 3000;
    w.check();
    QCOMPARE(spy.count(), 1);
    QCOMPARE(spy.at(0).at(0).toString(),
             QStringLiteral("no optimizer step from any rank for 3.0 s (half the collective "
                            "timeout of 6 s)"));
    // An event is not a step: the stall stands and is not said again.
    w.heard(0, false);
    now += 10000;
    w.check();
    QCOMPARE(spy.count(), 1);
    // Steps resume: armed again, said again at the next stall.
    w.heard(0, true);
    w.heard(1, true);
    now += 2000;
    w.check();
    QCOMPARE(spy.count(), 1);
    now += 1000;
    w.check();
    QCOMPARE(spy.count(), 2);
  }

  void aSilentRankWhileTheOthersStep() {
    StallWatch w;
    QSignalSpy spy(&w, &StallWatch::stalled);
    make(w, 3, 6.0);
    w.heard(0, true);
    w.heard(1, true);
    w.heard(2, true);
    // Ranks 0 and 2 step every 100 ms; rank 1 is quiet from now on.
    const qint64 quietSince = now;
    while (now < quietSince + 2900) {
      now += 100;
      w.heard(0, true);
      w.heard(2, true);
      w.check();
    }
    QCOMPARE(spy.count(), 0);
    now = quietSince + 3000;
    w.heard(0, true);
    w.check();
    QCOMPARE(spy.count(), 1);
    QCOMPARE(spy.at(0).at(0).toString(),
             QStringLiteral("rank 1 has been silent for 3.0 s while the others step (half the "
                            "collective timeout of 6 s)"));
    for (int i = 0; i < 5; ++i) {
      now += 100;
      w.heard(0, true);
      w.heard(2, true);
      w.check();
    }
    QCOMPARE(spy.count(), 1);  // once
    w.heard(1, true);          // back; silent again later: said again
    for (int i = 0; i < 31; ++i) {
      now += 100;
      w.heard(0, true);
      w.heard(2, true);
      w.check();
    }
    QCOMPARE(spy.count(), 2);
  }

  void aRankThatNeverStepsIsNeverSilent() {
    // A script that logs from rank 0 only: rank 1 said hello-like events but never a step.
    StallWatch w;
    QSignalSpy spy(&w, &StallWatch::stalled);
    make(w, 2, 6.0);
    w.heard(1, false);
    for (int i = 0; i < 100; ++i) {
      now += 100;
      w.heard(0, true);
      w.check();
    }
    QCOMPARE(spy.count(), 0);
  }

  void longGapsOfTheRunStretchTheLimit() {
    // Reports every 2 s (a long log interval): the limit is 6 s, not 3.
    StallWatch w;
    QSignalSpy spy(&w, &StallWatch::stalled);
    make(w, 1, 6.0);
    for (int i = 0; i < 4; ++i) {
      w.heard(0, true);
      now += 2000;
      w.check();
    }
    w.heard(0, true);
    QCOMPARE(w.limitMs(), qint64(6000));
    now += 5900;
    w.check();
    QCOMPARE(spy.count(), 0);
    now += 100;
    w.check();
    QCOMPARE(spy.count(), 1);
    QVERIFY2(spy.at(0).at(0).toString().contains(
                 QStringLiteral("three times the run's longest gap between reports, 2.0 s")),
             qPrintable(spy.at(0).at(0).toString()));
  }

  void endedSaysNothingAndBeginForgets() {
    StallWatch w;
    QSignalSpy spy(&w, &StallWatch::stalled);
    make(w, 2, 6.0);
    w.heard(0, true);
    w.end();
    QVERIFY(!w.watching());
    now += 10000;
    w.check();
    QCOMPARE(spy.count(), 0);
    // A restart: the long gap of the old run is forgotten, and nothing is armed yet.
    w.begin(2, 6.0);
    QCOMPARE(w.limitMs(), qint64(3000));
    now += 10000;
    w.check();
    QCOMPARE(spy.count(), 0);
  }

  void theTimerChecksByItself() {
    StallWatch w;
    QSignalSpy spy(&w, &StallWatch::stalled);
    make(w, 1, 1.0);  // limit 0.5 s
    w.heard(0, true);
    now += 600;
    QVERIFY(spy.wait(5000));
  }
};

DDPDESK_TEST_GUILESS_MAIN(TestStallWatch)
#include "test_stall_watch.moc"
