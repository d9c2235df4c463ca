// The Queue tab in the window, driving the real RunController with the fake worker: specs added
// from the form run one after another; Up, Down, Remove and Pause act on the queue and its file;
// an entry the app was running when it died shows as interrupted, the window does not start it
// by itself, and Resume queue continues it from its checkpoint; the sweep dialog previews the
// runs (and the skipped combinations, or the one bad field) and queues them with their sweep
// directory.
#include <QApplication>
#include <QCheckBox>
#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QPushButton>
#include <QTableView>
#include <QTemporaryDir>
#include <QtTest>

#include "checks/pre_start_check.h"
#include "form/run_spec_form.h"
#include "monitor_test_util.h"
#include "qt_test_main.h"
#include "queue/queue_panel.h"
#include "queue/run_queue.h"
#include "queue/sweep_dialog.h"
#include "queue/sweep_directory.h"
#include "run/run_directory.h"
#include "window/main_window.h"

using namespace ddpdesk;
using namespace ddpdesk::test;
using EntryState = QueueEntry::State;

namespace {
constexpr int kTimeout = 60000;  // small shared CI machines: never a timing test
}

class TestQueuePanel : public QObject {
  Q_OBJECT
  std::unique_ptr<QTemporaryDir> home;
  std::unique_ptr<MainWindow> w;
  QStringList errors;

  void make() {
    w = std::make_unique<MainWindow>();
    w->controller()->setWorkerProgram(fakeWorker());
    w->controller()->setExtraEnvironment(fakeEnv({{"FAKE_STEPS", "6"}}));
    w->setErrorSink([this](const QString& e) { errors << e; });
    w->form()->setSpec(fakeSpec(2));
    w->show();
    QVERIFY(QTest::qWaitForWindowExposed(w.get()));
  }
  QString stateShown(int row) const {
    const auto* m = w->queuePanel()->model();
    return m->data(m->index(row, QueueTableModel::State), Qt::DisplayRole).toString();
  }
  QList<int> ids() const {
    QList<int> out;
    for (const auto& e : w->queue()->entries()) out << e.id;
    return out;
  }
  bool allFinished() const {
    for (const auto& e : w->queue()->entries())
      if (e.state != EntryState::Finished) return false;
    return !w->controller()->isActive();
  }

 private Q_SLOTS:
  void initTestCase() {
    QCoreApplication::setOrganizationName("ddpdesk-test");
    QCoreApplication::setApplicationName("ddpdesk-test");
  }
  void init() {
    home = std::make_unique<QTemporaryDir>();
    QVERIFY(home->isValid());
    qputenv("XDG_DATA_HOME", home->filePath("data").toUtf8());
    qputenv("XDG_CONFIG_HOME", home->filePath("config").toUtf8());
  }
  void cleanup() {
    if (w) w->setCloseQuestion([] { return true; });
    w.reset();
    errors.clear();
    home.reset();
  }

  void specsAddedFromTheFormRunOneAfterAnother() {
    make();
    QTest::mouseClick(w->queuePanel()->addButton(), Qt::LeftButton);
    RunSpec other = fakeSpec(1);
    other.batch_size = 3;
    w->form()->setSpec(other);
    QTest::mouseClick(w->queuePanel()->addButton(), Qt::LeftButton);
    QCOMPARE(int(w->queue()->entries().size()), 2);
    QTRY_VERIFY_WITH_TIMEOUT(allFinished(), kTimeout);
    QCOMPARE(stateShown(0), QStringLiteral("finished"));
    QCOMPARE(stateShown(1), QStringLiteral("finished"));
    QCOMPARE(w->queue()->entries()[1].spec.batch_size, 3);
    QVERIFY(w->queue()->entries()[0].runDir != w->queue()->entries()[1].runDir);
    QVERIFY(errors.isEmpty());
    // Kept in the data directory.
    QFile f(RunQueue::defaultPath());
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QJsonArray entries =
        QJsonDocument::fromJson(f.readAll()).object().value(QLatin1String("entries")).toArray();
    QCOMPARE(entries.size(), 2);
    QCOMPARE(entries[1].toObject().value(QLatin1String("state")).toString(),
             QStringLiteral("finished"));
  }

  void buttonsReorderRemovePauseAndSetStopOnFailure() {
    make();
    QueuePanel* panel = w->queuePanel();
    QTest::mouseClick(panel->pauseButton(), Qt::LeftButton);
    QVERIFY(w->queue()->isPaused());
    QCOMPARE(panel->pauseButton()->text(), QStringLiteral("Resume queue"));
    for (int i = 0; i < 3; ++i) QTest::mouseClick(panel->addButton(), Qt::LeftButton);
    const QList<int> before = ids();
    QCOMPARE(before.size(), 3);
    QVERIFY(!w->controller()->isActive());  // paused: nothing started
    panel->selectId(before[2]);
    QVERIFY(panel->upButton()->isEnabled());
    QTest::mouseClick(panel->upButton(), Qt::LeftButton);
    QCOMPARE(ids(), (QList<int>{before[0], before[2], before[1]}));
    QCOMPARE(panel->selectedId(), before[2]);
    QTest::mouseClick(panel->downButton(), Qt::LeftButton);
    QCOMPARE(ids(), before);
    panel->selectId(before[0]);
    QTest::mouseClick(panel->removeButton(), Qt::LeftButton);
    QCOMPARE(ids(), (QList<int>{before[1], before[2]}));
    panel->stopOnFailureBox()->setChecked(true);
    QVERIFY(w->queue()->stopOnFailure());
    // The file has it all.
    RunController other;
    RunQueue again(&other);
    QVERIFY(again.load(RunQueue::defaultPath()));
    QCOMPARE(int(again.entries().size()), 2);
    QCOMPARE(again.entries()[0].id, before[1]);
    QVERIFY(again.isPaused());
    QVERIFY(again.stopOnFailure());
    // Resumed: the rest runs.
    QTest::mouseClick(panel->pauseButton(), Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(allFinished(), kTimeout);
  }

  void anInterruptedRunIsShownAndResumedOnlyWhenAsked() {
    // What a crashed app left: an entry running, its run directory holding a checkpoint.
    const QString dir = home->filePath("data/ddpdesk/runs/cut-short");
    QVERIFY(QDir().mkpath(dir + "/checkpoints"));
    QFile spec(RunDirectory::specPath(dir));
    QVERIFY(spec.open(QIODevice::WriteOnly));
    spec.write(QByteArray::fromStdString(to_json_text(fakeSpec(2))));
    spec.close();
    QFile ckpt(dir + "/checkpoints/step-00000003.pt");
    QVERIFY(ckpt.open(QIODevice::WriteOnly));
    ckpt.write("step 3\n");
    ckpt.close();
    const QJsonObject specJson =
        QJsonDocument::fromJson(QByteArray::fromStdString(to_json_text(fakeSpec(2)))).object();
    QFile q(RunQueue::defaultPath());
    QVERIFY(q.open(QIODevice::WriteOnly));
    q.write(QJsonDocument(QJsonObject{{"entries", QJsonArray{QJsonObject{{"spec", specJson},
                                                                         {"state", "running"},
                                                                         {"run_dir", dir}}}}})
                .toJson());
    q.close();

    make();
    QCOMPARE(stateShown(0), QStringLiteral("interrupted"));
    QVERIFY(w->queue()->isPaused());
    // Whatever opening the window left for the event loop has run: still paused, and the entry is
    // neither being checked (its resume's dry run) nor running.
    for (int i = 0; i < 3; ++i) QCoreApplication::processEvents();
    QVERIFY(w->queue()->isPaused());
    const auto* check = w->queue()->findChild<PreStartCheck*>();
    QVERIFY(check);
    QVERIFY(!check->running());
    QVERIFY(!w->controller()->isActive());
    QCOMPARE(stateShown(0), QStringLiteral("interrupted"));
    QTest::mouseClick(w->queuePanel()->pauseButton(), Qt::LeftButton);
    // Once the worker's dry run has passed the checkpoint it resumes from.
    QTRY_COMPARE_WITH_TIMEOUT(w->controller()->runDirectory(), QFileInfo(dir).absoluteFilePath(),
                              kTimeout);
    QCOMPARE(QString::fromStdString(w->controller()->spec().resume), dir);
    QTRY_VERIFY_WITH_TIMEOUT(allFinished(), kTimeout);
    QCOMPARE(stateShown(0), QStringLiteral("finished"));
  }

  void theSweepDialogPreviewsAndQueuesTheRuns() {
    make();
    RunSpec base = fakeSpec(2);
    base.batch_size = 8;
    base.accum_steps = 1;
    SweepDialog dialog(base);
    // Opened with nothing chosen: what to do, not an error, and nothing to queue.
    QVERIFY2(dialog.preview().startsWith(QLatin1String("Choose a field")),
             qPrintable(dialog.preview()));
    QVERIFY(!dialog.canAccept());
    dialog.setName("acc");
    dialog.setRow(0, "accum_steps", "1, 2, 3, 4");
    dialog.setEffectiveBatch(16, "batch_size");
    QVERIFY2(dialog.canAccept(), qPrintable(dialog.preview()));
    QCOMPARE(dialog.plan().runs.size(), std::size_t(3));
    QVERIFY2(dialog.preview().contains(QLatin1String("skipped {\"accum_steps\":3}")),
             qPrintable(dialog.preview()));
    dialog.setRow(1, "lr", "0.1, 20");
    QVERIFY(!dialog.canAccept());
    QVERIFY2(dialog.preview().contains(QLatin1String("invalid grid.lr '20'")),
             qPrintable(dialog.preview()));
    dialog.setRow(1, QString(), QString());
    QVERIFY(dialog.canAccept());

    QVERIFY(w->queueSweep(dialog.plan(), dialog.definition()));
    QCOMPARE(int(w->queue()->entries().size()), 3);
    QTRY_VERIFY_WITH_TIMEOUT(allFinished(), kTimeout);
    const QStringList made =
        QDir(SweepDirectory::sweepsRoot()).entryList(QDir::Dirs | QDir::NoDotAndDotDot);
    QCOMPARE(made.size(), 1);
    QFile index(SweepDirectory::indexPath(SweepDirectory::sweepsRoot() + '/' + made[0]));
    QVERIFY(index.open(QIODevice::ReadOnly));
    const QJsonArray runs =
        QJsonDocument::fromJson(index.readAll()).object().value(QLatin1String("runs")).toArray();
    QCOMPARE(runs.size(), 3);
    for (int i = 0; i < 3; ++i) {
      QCOMPARE(runs[i].toObject().value(QLatin1String("state")).toString(),
               QStringLiteral("finished"));
      QCOMPARE(runs[i].toObject().value(QLatin1String("run_dir")).toString(),
               w->queue()->entries()[i].runDir);
      QCOMPARE(w->queue()->entries()[i].spec.effective_batch(), qint64(16));
    }
    QCOMPARE(w->queue()->entries()[2].spec.batch_size, 2);
  }
};

DDPDESK_TEST_MAIN(TestQueuePanel)
#include "test_queue_panel.moc"
