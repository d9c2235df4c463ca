// The straggler banner: hidden until a rank is flagged, then the detector's words; hidden again
// once the rank is back in line, or when the run's store is cleared.
#include <QtTest>

#include "breakdown_test_util.h"
#include "live/straggler_banner.h"
#include "metrics/metrics_store.h"
#include "metrics/straggler_watch.h"
#include "qt_test_main.h"

using namespace ddpdesk;
using namespace ddpdesk::test;

namespace {

void ingestIntervals(MetricsStore& store, int first, int count, int slow) {
  for (int i = first; i < first + count; ++i)
    for (int r = 0; r < 2; ++r)
      store.ingest(stepMessage(r, 5 * i,
                               r == slow ? slowTimes(&wire::StepTimes::data, 20.0, kStragglerSteps)
                                         : normalTimes(kStragglerSteps)));
}

}  // namespace

class TestStragglerBanner : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void showsWhileARankIsFlagged() {
    MetricsStore store;
    store.setWorld(2);
    StragglerWatch watch;
    watch.setStore(&store);
    QWidget window;
    auto* banner = new StragglerBanner(&window);
    banner->setWatch(&watch);
    window.show();
    QVERIFY(!banner->isVisible());

    ingestIntervals(store, 1, 2, 1);
    store.flush();
    QVERIFY(!banner->isVisible());
    ingestIntervals(store, 3, 1, 1);  // the third slow interval, through the store's timer
    QTRY_VERIFY(banner->isVisible());
    QVERIFY(banner->summary().startsWith(QStringLiteral("rank 1 is a straggler")));
    QVERIFY(banner->text().contains(QStringLiteral("mostly data (+20.0 ms)")));

    ingestIntervals(store, 4, 3, -1);
    QTRY_VERIFY(!banner->isVisible());
    QVERIFY(banner->summary().isEmpty());

    ingestIntervals(store, 7, 3, 0);
    QTRY_VERIFY(banner->isVisible());
    QVERIFY(banner->summary().startsWith(QStringLiteral("rank 0 is a straggler")));
    QVERIFY(banner->text().startsWith(QStringLiteral("<b>Straggler:</b>")));
    // The run ends with the rank still flagged: the banner stays, as the state at the end.
    banner->setRunEnded(true);
    QVERIFY(banner->isVisible());
    QVERIFY2(banner->text().startsWith(QStringLiteral("<b>Straggler when the run ended:</b>")),
             qPrintable(banner->text()));
    banner->setRunEnded(false);
    QVERIFY(banner->text().startsWith(QStringLiteral("<b>Straggler:</b>")));
    store.clear();
    QVERIFY(!banner->isVisible());
  }

  void followsNothing() {
    StragglerBanner banner;
    banner.setWatch(nullptr);
    QVERIFY(banner.isHidden());
    QVERIFY(banner.summary().isEmpty());
  }
};

DDPDESK_TEST_MAIN(TestStragglerBanner)
#include "test_straggler_banner.moc"
