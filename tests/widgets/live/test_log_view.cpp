// Log view: tagged lines, filter by rank, batched onto the screen, failure banner.
#include <QLabel>
#include <QtTest>

#include "live/log_view.h"
#include "qt_test_main.h"

using namespace ddpdesk;

class TestLogView : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void bufferTagsAndFilters() {
    LogBuffer b(4);
    b.append(0, false, "a");
    b.append(1, true, "b");
    b.append(LogBuffer::kMonitor, true, "c");
    QCOMPARE(b.filtered(LogBuffer::kAll), (QStringList{"[rank 0] a", "[rank 1] b", "[monitor] c"}));
    QCOMPARE(b.filtered(1), (QStringList{"[rank 1] b"}));
    QCOMPARE(b.filtered(LogBuffer::kMonitor), (QStringList{"[monitor] c"}));
    b.append(0, false, "d");
    b.append(0, false, "e");  // over capacity: the oldest goes
    QCOMPARE(b.size(), std::size_t(4));
    QCOMPARE(b.filtered(0), (QStringList{"[rank 0] d", "[rank 0] e"}));
  }

  void viewBatchesAndFilters() {
    LogView v;
    v.setWorld(2);
    v.appendLine(0, false, "zero");
    v.appendLine(1, true, "one");
    QVERIFY(v.visibleText().isEmpty());  // not yet: lines go out in batches
    v.flush();
    QCOMPARE(v.visibleText(), QStringLiteral("[rank 0] zero\n[rank 1] one"));
    v.setFilter(1);
    QCOMPARE(v.filter(), 1);
    QCOMPARE(v.visibleText(), QStringLiteral("[rank 1] one"));
    v.appendLine(0, false, "hidden");
    v.appendLine(1, false, "shown");
    v.flush();
    QCOMPARE(v.visibleText(), QStringLiteral("[rank 1] one\n[rank 1] shown"));
    v.setFilter(LogBuffer::kAll);
    QCOMPARE(v.visibleText().count('\n'), 3);
    // The timer flushes by itself.
    v.appendLine(0, false, "later");
    QTRY_VERIFY(v.visibleText().endsWith(QLatin1String("later")));
  }

  // A flood (a script printing 100,000 lines a second) is shown as its last lines of each flush
  // and a count of the rest; the buffer keeps them all, and a refilter shows them.
  void aFloodIsSkippedOnScreenWithACount() {
    LogView v;
    v.setWorld(1);
    for (int i = 0; i < 2000; ++i) v.appendLine(0, false, QStringLiteral("line %1").arg(i));
    v.flush();
    const QStringList shown = v.visibleText().split(QLatin1Char('\n'));
    QCOMPARE(shown.size(), 501);
    QVERIFY2(shown.front().startsWith(QStringLiteral("[monitor] … 1500 lines not shown")),
             qPrintable(shown.front()));
    QCOMPARE(shown.at(1), QStringLiteral("[rank 0] line 1500"));
    QCOMPARE(shown.back(), QStringLiteral("[rank 0] line 1999"));
    QCOMPARE(int(v.buffer().filtered(LogBuffer::kAll).size()), 2000);
    v.setFilter(0);  // a refilter shows what the buffer has
    QCOMPARE(v.visibleText().count(QLatin1Char('\n')), 1999);
  }

  void failureBanner() {
    LogView v;
    v.show();
    QVERIFY(!v.failureShown());
    v.showFailure("Run failed",
                  "rank 1 exited with code 3: boom\nlast stderr lines of rank 1:\n  x <y>");
    QVERIFY(v.failureShown());
    auto* banner = v.findChild<QLabel*>("failureBanner");
    QVERIFY(banner && banner->isVisible());
    QVERIFY(banner->text().contains("rank 1 exited with code 3: boom"));
    QVERIFY(banner->text().contains("x &lt;y&gt;"));  // escaped, shown as text
    v.clearFailure();
    QVERIFY(!v.failureShown());
  }
};

DDPDESK_TEST_MAIN(TestLogView)
#include "test_log_view.moc"
