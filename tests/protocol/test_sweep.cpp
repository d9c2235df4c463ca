// Sweep definitions: expansion order, the constant effective batch (derived field, skipped
// combinations with their reason), and one line naming the field for every bad definition.
#include <QtTest>

#include "qt_test_main.h"
#include "sweep.h"

using namespace ddpdesk;

class TestSweep : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void expandsTheGridInWrittenOrderLastKeyFastest() {
    const SweepPlan p = parse_sweep(
        R"({"name":"g","base":{"task":"seed"},"grid":{"seed":[7,8],"lr":[0.1,0.01,0.001]}})");
    QVERIFY2(p.ok(), p.error.c_str());
    QCOMPARE(p.runs.size(), std::size_t(6));
    QCOMPARE(p.runs[0].spec.seed, std::int64_t(7));
    QCOMPARE(p.runs[0].spec.lr, 0.1);
    QCOMPARE(p.runs[1].spec.seed, std::int64_t(7));
    QCOMPARE(p.runs[1].spec.lr, 0.01);
    QCOMPARE(p.runs[3].spec.seed, std::int64_t(8));
    QCOMPARE(p.runs[5].spec.lr, 0.001);
    QCOMPARE(p.runs[4].spec.name, std::string("g-5"));
    QCOMPARE(p.runs[4].fields["seed"].get<int>(), 8);
    QVERIFY(p.skipped.empty());
  }

  void keepsTheEffectiveBatchByDerivingBatchSize() {
    const SweepPlan p = parse_sweep(
        R"({"base":{"nproc":2,"batch_size":32,"accum_steps":1},"grid":{"accum_steps":[1,2,4]},"effective_batch":true})");
    QVERIFY2(p.ok(), p.error.c_str());
    QCOMPARE(p.runs.size(), std::size_t(3));
    const int batches[] = {32, 16, 8};
    for (int i = 0; i < 3; ++i) {
      QCOMPARE(p.runs[i].spec.effective_batch(), std::int64_t(64));
      QCOMPARE(p.runs[i].spec.batch_size, batches[i]);
      QCOMPARE(p.runs[i].fields["batch_size"].get<int>(), batches[i]);
    }
  }

  void skipsCombinationsThatDoNotDivideWithTheReason() {
    const SweepPlan p = parse_sweep(
        R"({"base":{"batch_size":8},"grid":{"nproc":[1,3],"batch_size":[8,5]},"effective_batch":48,"derive":"accum_steps"})");
    QVERIFY2(p.ok(), p.error.c_str());
    // 1x8 -> accum 6; 1x5 no; 3x8 -> accum 2; 3x5 no.
    QCOMPARE(p.runs.size(), std::size_t(2));
    QCOMPARE(p.runs[0].spec.accum_steps, 6);
    QCOMPARE(p.runs[1].spec.accum_steps, 2);
    QCOMPARE(p.runs[1].spec.nproc, 3);
    QCOMPARE(p.skipped.size(), std::size_t(2));
    QCOMPARE(p.skipped[1].reason,
             std::string("effective batch 48 is not a multiple of nproc 3 x batch_size 5 = 15"));
    QCOMPARE(p.skipped[1].fields["nproc"].get<int>(), 3);
  }

  void badDefinitionsGiveOneLineNamingTheField_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<QString>("message");
    QTest::newRow("not JSON") << "{grid:"
                              << "invalid sweep: not valid JSON";
    QTest::newRow("unknown field") << R"({"grid":{"bach_size":[1,2]}})"
                                   << "invalid grid.bach_size '[1,2]': is not a run spec field";
    QTest::newRow("text field") << R"({"grid":{"task":["seed"]}})"
                                << "invalid grid.task '[\"seed\"]': cannot be swept";
    QTest::newRow("empty grid") << R"({"grid":{}})"
                                << "invalid grid '{}': must be an object";
    QTest::newRow("no grid") << R"({"base":{}})"
                             << "invalid grid '(missing)'";
    QTest::newRow("empty list") << R"({"grid":{"lr":[]}})"
                                << "invalid grid.lr '[]': must be a non-empty list of values";
    QTest::newRow("out of range")
        << R"({"grid":{"batch_size":[4,0]}})"
        << "invalid grid.batch_size '0': must be an integer from 1 to 65536";
    QTest::newRow("not an integer") << R"({"grid":{"accum_steps":[1.5]}})"
                                    << "invalid grid.accum_steps '1.5': must be an integer";
    QTest::newRow("lr out of range") << R"({"grid":{"lr":[20]}})"
                                     << "invalid grid.lr '20': must be a number greater than 0";
    QTest::newRow("bad base") << R"({"base":{"epochs":0},"grid":{"lr":[0.1]}})"
                              << "invalid base.epochs '0': must be an integer from 1 to 100000";
    QTest::newRow("base run_dir") << R"({"base":{"run_dir":"/x"},"grid":{"lr":[0.1]}})"
                                  << "invalid base.run_dir '/x': is set by the sweep";
    QTest::newRow("unknown key") << R"({"grid":{"lr":[0.1]},"repeat":3})"
                                 << "invalid repeat '3': is not a sweep key";
    QTest::newRow("derive in grid")
        << R"({"grid":{"batch_size":[2,4]},"effective_batch":16})"
        << "invalid derive 'batch_size': is derived from effective_batch";
    QTest::newRow("derive choice") << R"({"grid":{"nproc":[1]},"effective_batch":8,"derive":"lr"})"
                                   << "invalid derive 'lr': must be batch_size or accum_steps";
    QTest::newRow("nothing divides")
        << R"({"grid":{"nproc":[3]},"effective_batch":16})"
        << "invalid effective_batch '16': leaves no run: every combination was skipped";
    QTest::newRow("derived too large")
        << R"({"grid":{"nproc":[1]},"effective_batch":1000000})"
        << "run 1 (nproc=1): invalid batch_size '1000000' (derived from effective_batch 1000000)";
    QTest::newRow("cross-field rule")
        << R"({"base":{"dataset_size":2},"grid":{"nproc":[1,4]}})"
        << "run 2 (nproc=4): invalid dataset_size '2': must be 0 or at least nproc (4)";
    QTest::newRow("too many runs")
        << R"({"grid":{"seed":[1,2,3,4,5,6,7,8,9,10,11],"epochs":[1,2,3,4,5,6,7,8,9,10],"lr":[0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9,1.0]}})"
        << "expands to more than 1000 runs";
  }
  void badDefinitionsGiveOneLineNamingTheField() {
    QFETCH(QString, text);
    QFETCH(QString, message);
    const SweepPlan p = parse_sweep(text.toStdString());
    QVERIFY(!p.ok());
    QVERIFY2(QString::fromStdString(p.error).contains(message), p.error.c_str());
    QVERIFY(!QString::fromStdString(p.error).contains('\n'));
  }

  // The grid's fields come from the RunSpec's own table: every numeric field can be swept.
  void everyNumericRunSpecFieldCanBeSwept() {
    int numeric = 0;
    for (const FieldInfo& f : run_spec_fields()) {
      if (!f.numeric) continue;
      ++numeric;
      const std::string def = "{\"grid\":{\"" + std::string(f.key) + "\":[1]}}";
      const SweepPlan p = parse_sweep(def);
      QVERIFY2(p.ok(), p.error.c_str());
      QCOMPARE(p.runs.size(), std::size_t(1));
    }
    QVERIFY(numeric >= 10);
  }
};

DDPDESK_TEST_APPLESS_MAIN(TestSweep)
#include "test_sweep.moc"
