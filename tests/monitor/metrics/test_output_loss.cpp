// Losses read from a rank's output (metrics/output_loss.h): the forms scripts print (key=value,
// key: value, a printed dict, a tensor, a tqdm bar with '\r' redraws), the step taken from the
// line or counted, other losses (val_loss) left alone, and a custom pattern.
#include <QtTest>
#include <cmath>

#include "metrics/output_loss.h"
#include "qt_test_main.h"

using namespace ddpdesk;

namespace {
// "step:loss" for each point, to compare a line's points in one string.
QString points(OutputLossReader& r, const QString& line) {
  QStringList out;
  for (const OutputLoss& p : r.read(line))
    out << QString::number(p.step) + QLatin1Char(':') + QString::number(p.loss);
  return out.join(QLatin1Char(' '));
}
}  // namespace

class TestOutputLoss : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void readsTheCommonForms_data() {
    QTest::addColumn<QString>("line");
    QTest::addColumn<QString>("expected");  // "step:loss ...", empty for none
    QTest::newRow("key=value") << "loss=0.53"
                               << "1:0.53";
    QTest::newRow("key: value") << "epoch 0 loss: 0.25"
                                << "1:0.25";
    QTest::newRow("spaces") << "loss = 1e-3"
                            << "1:0.001";
    QTest::newRow("train_loss") << "train_loss=0.4 val_loss=0.9"
                                << "1:0.4";
    QTest::newRow("step words") << "Step 12 | loss 0.5"
                                << "";  // "loss 0.5": no = or :
    QTest::newRow("step=") << "step=12 loss=0.5"
                           << "12:0.5";
    QTest::newRow("Step [n/N]") << "Epoch [1/3], Step [40/600], Loss: 0.7310"
                                << "40:0.731";
    QTest::newRow("global_step") << "global_step: 7, loss: 2.5"
                                 << "7:2.5";
    QTest::newRow("trainer dict")
        << "{'loss': 0.6931, 'grad_norm': 1.2, 'learning_rate': 5e-05, 'epoch': 0.1}"
        << "1:0.6931";
    QTest::newRow("json dict") << R"({"step": 30, "loss": 0.125})"
                               << "30:0.125";
    QTest::newRow("tensor") << "loss = tensor(0.5300, grad_fn=<NllLossBackward0>)"
                            << "1:0.53";
    QTest::newRow("nan") << "loss=nan"
                         << "1:nan";
    QTest::newRow("only val_loss") << "val_loss=0.9 eval_loss: 0.8"
                                   << "";
    QTest::newRow("lossy word") << "glossary: 3"
                                << "";
    QTest::newRow("no number") << "loss=unknown"
                               << "";
    QTest::newRow("max_steps is no step") << "max_steps=100 loss=0.2"
                                          << "1:0.2";
  }
  void readsTheCommonForms() {
    QFETCH(QString, line);
    QFETCH(QString, expected);
    OutputLossReader r;
    QVERIFY(r.valid());
    QCOMPARE(points(r, line), expected);
  }

  void stepsAreCountedWhenTheLineHasNone() {
    OutputLossReader r;
    QCOMPARE(points(r, "loss=1"), QStringLiteral("1:1"));
    QCOMPARE(points(r, "nothing here"), QString());
    QCOMPARE(points(r, "loss=0.5"), QStringLiteral("2:0.5"));
    QCOMPARE(points(r, "step 10 loss=0.4"), QStringLiteral("10:0.4"));
    QCOMPARE(points(r, "loss=0.3"), QStringLiteral("11:0.3"));
  }

  // tqdm redraws with '\r' and no '\n' until the bar ends; an unchanged redraw is no new point,
  // and a bar per epoch continues the count.
  void tqdmBars() {
    OutputLossReader r;
    const QString bar = QStringLiteral(
        "\r 10%|#         | 10/100 [00:01<00:09, 9.9it/s, loss=0.9]"
        "\r 10%|#         | 10/100 [00:01<00:09, 9.9it/s, loss=0.9]"
        "\r 20%|##        | 20/100 [00:02<00:08, 9.9it/s, loss=0.7]");
    QCOMPARE(points(r, bar), QStringLiteral("10:0.9 20:0.7"));
    QCOMPARE(points(r, QStringLiteral("\rEpoch 1: 5/100 [00:00<00:05, v_num=0, train_loss=0.6]")),
             QStringLiteral("25:0.6"));
  }

  void customPattern() {
    OutputLossReader r(QStringLiteral(R"(it (?<step>\d+): objective (?<loss>[0-9.]+))"));
    QVERIFY2(r.valid(), qPrintable(r.error()));
    QCOMPARE(points(r, "it 3: objective 0.25 loss=9"), QStringLiteral("3:0.25"));
    QCOMPARE(points(r, "loss=9"), QString());  // the built-in forms are replaced
    OutputLossReader noStep(QStringLiteral(R"(obj=(?<loss>\S+))"));
    QCOMPARE(points(noStep, "obj=0.5"), QStringLiteral("1:0.5"));
    QCOMPARE(points(noStep, "obj=words"), QString());  // not a number: no point
    OutputLossReader broken(QStringLiteral("loss=(?<loss>[0-9"));
    QVERIFY(!broken.valid());
    QVERIFY2(broken.error().startsWith(QStringLiteral("is no regular expression: ")),
             qPrintable(broken.error()));
    OutputLossReader unnamed(QStringLiteral("loss=([0-9.]+)"));
    QVERIFY(!unnamed.valid());
    QVERIFY(unnamed.error().contains(QStringLiteral("no group named loss")));
  }
};

DDPDESK_TEST_APPLESS_MAIN(TestOutputLoss)
#include "test_output_loss.moc"
