// startedDetail (run/progress_text.h): what the run's latest session said as its ranks started
// (a resume's checkpoint, --fit-batch's micro-batch), read from the store's `started` events: the
// session that started furthest on, its lowest rank; empty when no rank said anything.
#include <QtTest>

#include "metrics/metrics_store.h"
#include "qt_test_main.h"
#include "run/progress_text.h"

using namespace ddpdesk;

namespace {

wire::Event started(int rank, qint64 step, const std::string& detail) {
  wire::Event e;
  e.rank = rank;
  e.event = "started";
  e.step = step;
  e.total_steps = 15;
  e.detail = detail;
  return e;
}

}  // namespace

class TestStartedDetail : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void theLatestSessionsLowestRank() {
    MetricsStore store;
    QCOMPARE(startedDetail(store), QString());
    store.ingest(started(1, 0, "rank 1's words"));
    QCOMPARE(startedDetail(store), QStringLiteral("rank 1's words"));
    store.ingest(started(0, 0, "micro-batch 4 × 8 accumulation steps fits (asked 16 × 2)"));
    QCOMPARE(startedDetail(store),
             QStringLiteral("micro-batch 4 × 8 accumulation steps fits (asked 16 × 2)"));
    // A resumed session (started at step 5) is the latest, whatever order the lines come in.
    store.ingest(started(1, 5,
                         "resumed from /r/step-5.pt; micro-batch 8 × 4 accumulation steps "
                         "fits (asked 16 × 2)"));
    store.ingest(started(0, 0, "an older session's line, arriving late"));
    QCOMPARE(startedDetail(store),
             QStringLiteral("resumed from /r/step-5.pt; micro-batch 8 × 4 accumulation steps "
                            "fits (asked 16 × 2)"));
    wire::Event other = started(0, 9, "not a start");
    other.event = "checkpoint";
    store.ingest(other);
    QVERIFY(startedDetail(store).startsWith(QStringLiteral("resumed from")));
  }

  void aStartWithoutDetailIsEmpty() {
    MetricsStore store;
    store.ingest(started(0, 0, ""));
    QCOMPARE(startedDetail(store), QString());
  }
};

DDPDESK_TEST_GUILESS_MAIN(TestStartedDetail)
#include "test_started_detail.moc"
