// Test helpers for following runs in the window. useTemporaryHome: settings and run history in
// `home`, not the person's. verifyFollowedToItsEnd: a window that follows a two-rank run of 50
// steps (File → Follow run…, local or over ssh) ends Finished, with both ranks' loss curves at 50
// points and the rank table showing their pids and 50 steps. Call it, then `if
// (QTest::currentTestFailed()) return;`.
#pragma once

#include <QTemporaryDir>
#include <QtTest>

#include "charts/charts_panel.h"
#include "charts/loss_chart.h"
#include "live/rank_table.h"
#include "run/run_controller.h"
#include "window/main_window.h"

namespace ddpdesk::test {

inline void useTemporaryHome(const QTemporaryDir& home) {
  QVERIFY(home.isValid());
  qputenv("XDG_DATA_HOME", home.filePath("data").toUtf8());
  qputenv("XDG_CONFIG_HOME", home.filePath("config").toUtf8());
  QCoreApplication::setOrganizationName("ddpdesk-test");
  QCoreApplication::setApplicationName("ddpdesk-test");
}

inline void verifyFollowedToItsEnd(MainWindow& w, const QList<qint64>& pids, int timeoutMs) {
  QTRY_VERIFY_WITH_TIMEOUT(RunController::isTerminal(w.controller()->state()), timeoutMs);
  QCOMPARE(w.controller()->state(), RunController::State::Finished);
  for (const char* name : {"rank 0", "rank 1"})
    QTRY_VERIFY_WITH_TIMEOUT(
        w.charts()->lossChart()->curve(name) && w.charts()->lossChart()->curve(name)->size() == 50,
        timeoutMs);
  w.refreshNow();
  const auto& rows = w.rankModel()->rows();
  QCOMPARE(rows.size(), std::size_t(2));
  for (int r = 0; r < 2; ++r) {
    QCOMPARE(rows[r].pid, pids[r]);
    QCOMPARE(rows[r].step, qint64(50));
  }
}

}  // namespace ddpdesk::test
