// ShownRuns: which runs the charts show. The live run (the controller's store), runs opened from
// the history (read on a worker thread by PastRunLoader, the live one taken from memory), or runs
// compared in a window of their own (ComparisonWindow, a child of the main window).
#pragma once

#include <QObject>
#include <QStringList>

class QWidget;

namespace ddpdesk {

class ChartsPanel;
class ComparisonWindow;
class RunController;
class PastRunLoader;

class ShownRuns : public QObject {
  Q_OBJECT
 public:
  // `window`: the comparison windows' parent.
  ShownRuns(RunController* controller, ChartsPanel* charts, QWidget* window);

  // Back to the live run (none yet: empty charts); an open still reading is dropped.
  void showLive();
  // Shows runs from the history: one, or several overlaid, once their files are read.
  void open(const QStringList& paths);
  ComparisonWindow* compare(const QStringList& paths);

 Q_SIGNALS:
  void message(const QString& text);

 private:
  RunController* controller_;
  ChartsPanel* charts_;
  QWidget* window_;
  PastRunLoader* opener_;
};

}  // namespace ddpdesk
