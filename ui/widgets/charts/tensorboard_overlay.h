// "Open TensorBoard log…": compares a run with one logged elsewhere (PyTorch's SummaryWriter, or
// another ddpdesk run's --tensorboard files). Reads a log directory on a worker thread
// (loadTensorBoardLog), asks which series to show (suggested: a tag containing "loss"), and adds
// it to the charts as a curve of its own, x = step, beside whatever they show. The stores of the
// series shown live here; those the charts no longer show are freed at the next import.
#pragma once

#include <QObject>
#include <QPointer>
#include <QString>
#include <QStringList>
#include <functional>
#include <memory>
#include <vector>

class QWidget;

namespace ddpdesk {

class ChartsPanel;
class MetricsStore;
struct TensorBoardLog;

class TensorBoardOverlay : public QObject {
  Q_OBJECT
 public:
  TensorBoardOverlay(ChartsPanel* charts, QWidget* dialogParent);
  ~TensorBoardOverlay() override;

  // The dialogs, replaceable by tests: the directory to read (empty: cancelled), and the series
  // to show among `names` (empty: cancelled).
  void setDirectoryChooser(std::function<QString()> choose) { chooseDir_ = std::move(choose); }
  void setSeriesChooser(
      std::function<QString(const QStringList& names, const QString& suggested)> choose) {
    chooseSeries_ = std::move(choose);
  }
  bool busy() const { return busy_; }

 public Q_SLOTS:
  // Asks for a directory, then load()s it.
  void openDialog();
  // Reads `dir` without blocking; the series chooser is asked once it is read.
  void load(const QString& dir);

 Q_SIGNALS:
  // One line for the status bar: what was added, or why nothing was.
  void message(const QString& text);
  // A series was added to the charts under this legend label.
  void overlaid(const QString& label);

 private:
  void show(const TensorBoardLog& log);

  QPointer<ChartsPanel> charts_;
  QWidget* parent_;
  std::function<QString()> chooseDir_;
  std::function<QString(const QStringList&, const QString&)> chooseSeries_;
  std::vector<std::unique_ptr<MetricsStore>> stores_;
  bool busy_ = false;
  quint64 generation_ = 0;  // a newer load() supersedes one still reading
};

}  // namespace ddpdesk
