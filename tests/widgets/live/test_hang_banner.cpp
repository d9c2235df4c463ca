// The hang banner: hidden until stacks were taken; "Stalled:" with the verdict and why after a
// stall, "Stacks:" when asked for; "Was stalled" once the run steps past the stall; the Open
// stacks button opens the file (disabled without one); a new run hides it.
#include <QLabel>
#include <QPushButton>
#include <QtTest>

#include "live/hang_banner.h"
#include "qt_test_main.h"

using namespace ddpdesk;

class TestHangBanner : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void saysTheVerdictAndOpensTheFile() {
    QWidget window;
    auto* banner = new HangBanner(&window);
    QStringList opened;
    banner->setOpener([&](const QString& p) { opened << p; });
    window.show();
    QVERIFY(!banner->isVisible());

    const QString verdict =
        QStringLiteral("rank 1 is in its data loading; rank 0 waits for it in an allreduce");
    banner->showVerdict(QStringLiteral("no optimizer step from any rank for 8.0 s"), verdict,
                        QStringLiteral("/runs/a/stacks-20261207-024000.txt"), 4);
    QVERIFY(banner->isVisible());
    QVERIFY2(banner->text().startsWith(QStringLiteral("<b>Stalled:</b> ") + verdict),
             qPrintable(banner->text()));
    QVERIFY(banner->text().contains(QLatin1String("no optimizer step from any rank")));
    QVERIFY(banner->openButton()->isEnabled());
    QTest::mouseClick(banner->openButton(), Qt::LeftButton);
    QCOMPARE(opened, QStringList{QStringLiteral("/runs/a/stacks-20261207-024000.txt")});

    banner->noteStep(4);  // not past the stall
    QVERIFY(banner->text().startsWith(QLatin1String("<b>Stalled:</b>")));
    banner->noteStep(5);
    QVERIFY2(banner->text().startsWith(QLatin1String("<b>Was stalled (stepping again):</b>")),
             qPrintable(banner->text()));

    banner->reset();
    QVERIFY(!banner->isVisible());
    QVERIFY(banner->path().isEmpty());
  }

  void askedForAndWithoutAFile() {
    QWidget window;
    auto* banner = new HangBanner(&window);
    QStringList opened;
    banner->setOpener([&](const QString& p) { opened << p; });
    window.show();
    banner->showVerdict(QString(), QStringLiteral("no rank waits in a collective"), QString(), 9);
    QVERIFY(banner->isVisible());
    QVERIFY(banner->text().startsWith(QLatin1String("<b>Stacks:</b> no rank waits")));
    QVERIFY(!banner->openButton()->isEnabled());
    banner->openStacks();
    QVERIFY(opened.isEmpty());
    banner->noteStep(20);  // asked for: no stall to be over
    QVERIFY(banner->text().startsWith(QLatin1String("<b>Stacks:</b>")));
  }
};

DDPDESK_TEST_MAIN(TestHangBanner)
#include "test_hang_banner.moc"
