// Run history: lists run directories with their state; open, overlay and resume requests.
#include <unistd.h>

#include <QDir>
#include <QPushButton>
#include <QSignalSpy>
#include <QTableView>
#include <QTemporaryDir>
#include <QtTest>

#include "history/history_panel.h"
#include "qt_test_main.h"

using namespace ddpdesk;

namespace {

QString makeRun(const QString& root, const QString& name, const QString& state, bool checkpoint) {
  const QString path = root + "/" + name;
  RunDirectory d;
  RunSpec s;
  s.nproc = 2;
  s.batch_size = 8;
  s.run_dir = path.toStdString();
  if (!d.create(s) || !d.writeSpec(s)) return {};
  if (!state.isEmpty()) {
    RunStatus st;
    st.state = state;
    st.reason = state == "Failed" ? "rank 1 exited with code 3\nmore" : QString();
    st.lastStep = 10;
    st.totalSteps = 20;
    st.lastLoss = 0.5;
    st.restarts = state == "Finished" ? 2 : 0;
    st.startedAt = QDateTime::currentDateTime();
    st.endedAt = st.startedAt;
    d.writeStatus(st);
  }
  if (checkpoint) {
    QDir(path).mkpath("checkpoints");
    QFile f(path + "/checkpoints/step-00000010.pt");
    f.open(QIODevice::WriteOnly);
    f.write("x");
  }
  d.close();
  return path;
}

}  // namespace

class TestHistoryPanel : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void listsAndRequests() {
    QTemporaryDir root;
    const QString finished = makeRun(root.path(), "20260101-100000-a", "Finished", true);
    const QString stopped = makeRun(root.path(), "20260101-110000-b", "Stopped", true);
    const QString failed = makeRun(root.path(), "20260101-120000-c", "Failed", false);
    const QString active = makeRun(root.path(), "20260101-130000-d", "", false);
    QVERIFY(!finished.isEmpty() && !active.isEmpty());

    HistoryPanel panel;
    panel.setRoot(root.path());
    panel.refresh();
    RunHistoryModel* m = panel.model();
    QCOMPARE(m->rowCount(), 4);
    auto cell = [&](const QString& path, int col) {
      return m->data(m->index(m->rowOf(path), col), Qt::DisplayRole).toString();
    };
    QCOMPARE(cell(stopped, RunHistoryModel::State), QStringLiteral("Stopped"));
    QCOMPARE(cell(finished, RunHistoryModel::State), QStringLiteral("Finished (2 restarts)"));
    QCOMPARE(cell(active, RunHistoryModel::State), QStringLiteral("active / interrupted"));
    QCOMPARE(cell(stopped, RunHistoryModel::Steps), QStringLiteral("10 / 20"));
    QCOMPARE(cell(stopped, RunHistoryModel::Batch), QStringLiteral("16"));

    QVERIFY(!RunHistoryModel::canResume(*m->record(m->rowOf(finished))));
    QVERIFY(RunHistoryModel::canResume(*m->record(m->rowOf(stopped))));
    QVERIFY(!RunHistoryModel::canResume(*m->record(m->rowOf(failed))));  // no checkpoint

    QSignalSpy open(&panel, &HistoryPanel::openRequested);
    QSignalSpy resume(&panel, &HistoryPanel::resumeRequested);
    auto* openButton = panel.findChild<QPushButton*>("openRun");
    auto* resumeButton = panel.findChild<QPushButton*>("resumeRun");
    QVERIFY(openButton && resumeButton);
    panel.selectPaths({stopped});
    QVERIFY(resumeButton->isEnabled());
    resumeButton->click();
    QCOMPARE(resume.count(), 1);
    QCOMPARE(resume.first().first().toString(), stopped);
    // While a run is active nothing else can be resumed.
    panel.setActiveRun(active);
    QVERIFY(!resumeButton->isEnabled());
    panel.setActiveRun(QString());

    panel.selectPaths({finished, stopped, failed});
    QCOMPARE(openButton->text(), QStringLiteral("Overlay 3 runs"));
    openButton->click();
    QCOMPARE(open.count(), 1);
    QCOMPARE(open.first().first().toStringList().size(), 3);
    // Selection survives a refresh.
    panel.refresh();
    QCOMPARE(panel.selectedPaths().size(), 3);
  }

  // A stopped run another monitor has taken up again (a headless --resume, another window) is
  // that monitor's: listed as active with it, and not offered for resuming here.
  void aRunWhoseMonitorIsAliveIsNotResumable() {
    QTemporaryDir root;
    const QString stopped = makeRun(root.path(), "20260101-110000-b", "Stopped", true);
    QVERIFY(!stopped.isEmpty());
    HistoryPanel panel;
    panel.setRoot(root.path());
    auto* resumeButton = panel.findChild<QPushButton*>("resumeRun");
    QVERIFY(resumeButton);
    RunDirectory monitor;  // what a monitor holds while its run goes on
    QVERIFY(monitor.open(stopped));
    panel.refresh();
    RunHistoryModel* m = panel.model();
    const QString state =
        m->data(m->index(m->rowOf(stopped), RunHistoryModel::State), Qt::DisplayRole).toString();
    QVERIFY2(state.startsWith(QStringLiteral("active (ddpdesk pid %1 on ").arg(getpid())),
             qPrintable(state));
    QVERIFY(!RunHistoryModel::canResume(*m->record(m->rowOf(stopped))));
    panel.selectPaths({stopped});
    QVERIFY(!resumeButton->isEnabled());
    // Once that monitor lets go (its run ended, it died), the run can be resumed again.
    monitor.close();
    panel.refresh();
    panel.selectPaths({stopped});
    QVERIFY(resumeButton->isEnabled());
  }
};

DDPDESK_TEST_MAIN(TestHistoryPanel)
#include "test_history_panel.moc"
