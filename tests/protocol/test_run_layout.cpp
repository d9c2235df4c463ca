// The run directory's file names (run_layout.h), as the worker and the monitor both spell them:
// each file where docs/monitor.md says it is, checkpoints named so their order is the steps'.
#include <QtTest>

#include "qt_test_main.h"
#include "run_layout.h"

using namespace ddpdesk;

class TestRunLayout : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void filesOfARun() {
    const std::string d = "/runs/a";
    QCOMPARE(run_layout::spec_file(d), std::string("/runs/a/spec.json"));
    QCOMPARE(run_layout::metrics_file(d), std::string("/runs/a/metrics.jsonl"));
    QCOMPARE(run_layout::status_file(d), std::string("/runs/a/status.json"));
    QCOMPARE(run_layout::monitor_log(d), std::string("/runs/a/monitor.log"));
    QCOMPARE(run_layout::rank_log(d, 3), std::string("/runs/a/rank-3.log"));
    QCOMPARE(run_layout::exit_record(d, 12), std::string("/runs/a/rank-12.exit.json"));
    QCOMPARE(run_layout::rank_metrics(d, 0), std::string("/runs/a/metrics/rank-0.jsonl"));
    QCOMPARE(run_layout::system_metrics(d), std::string("/runs/a/metrics/system.jsonl"));
    QCOMPARE(run_layout::checkpoints_dir("/runs/a/"), std::string("/runs/a/checkpoints"));
  }
  void checkpointNamesSortByStep() {
    QCOMPARE(run_layout::checkpoint_name(120), std::string("step-00000120.pt"));
    QVERIFY(run_layout::checkpoint_name(99) < run_layout::checkpoint_name(100));
    QVERIFY(run_layout::is_checkpoint_name("step-00000120.pt"));
    QVERIFY(!run_layout::is_checkpoint_name("step-00000120.pt.tmp-4242"));  // a torn write
    QVERIFY(!run_layout::is_checkpoint_name("model.pt"));
    QVERIFY(!run_layout::is_checkpoint_name("step-.pt"));
  }
};

DDPDESK_TEST_APPLESS_MAIN(TestRunLayout)
#include "test_run_layout.moc"
