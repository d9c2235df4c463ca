// The hang banner: a red strip above the charts with the hang doctor's verdict once a run's
// stacks were taken (RunController::stacksTaken): "Stalled: rank 1 is in its data loading; rank
// 0 waits for it in an allreduce" after a stall, "Stacks: ..." when they were asked for with the
// Stacks button, and an "Open stacks" button that opens the stacks file. When the run steps again
// after a stall the heading says it was stalled; the banner goes when a new run starts.
// Styled like the straggler banner, in red: a stall holds every rank.
#pragma once

#include <QFrame>
#include <functional>

class QLabel;
class QPushButton;

namespace ddpdesk {

class HangBanner : public QFrame {
  Q_OBJECT
 public:
  explicit HangBanner(QWidget* parent = nullptr);

  // The stacks were taken: `why` (empty: asked for), the verdict and the file (empty: none).
  void showVerdict(const QString& why, const QString& verdict, const QString& path, qint64 step);
  // The run's progress: a step past the stall's means the run goes on again.
  void noteStep(qint64 step);
  // A new run: hidden, nothing kept.
  void reset();
  // Opens a stacks file (default: the desktop's viewer through QDesktopServices; tests record).
  void setOpener(std::function<void(const QString&)> open) { open_ = std::move(open); }
  void openStacks() const;

  QString text() const;
  QString path() const { return path_; }
  QPushButton* openButton() const { return open_button_; }

 private:
  void render();

  QLabel* label_;
  QPushButton* open_button_;
  std::function<void(const QString&)> open_;
  QString why_, verdict_, path_;
  qint64 step_ = -1;
  bool resumed_ = false;
};

}  // namespace ddpdesk
