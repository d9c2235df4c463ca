// The straggler banner: an amber strip above the charts, shown while a StragglerWatch has a rank
// flagged, in the detector's words ("rank 1 is a straggler: compute 26.9 ms vs 6.9 ms median of
// the others (+290%), mostly data (+20.0 ms)"); hidden again when the rank is back in line.
// Once the run has ended the flag stays (it is how the run went) but is headed as the state at
// the end, not as something going on.
// Styled like the failure banner over the log, in amber: the run goes on, only slower.
#pragma once

#include <QLabel>
#include <QPointer>

namespace ddpdesk {

class StragglerWatch;

class StragglerBanner : public QLabel {
  Q_OBJECT
 public:
  explicit StragglerBanner(QWidget* parent = nullptr);

  // Follows `watch` (nullptr: nothing, hidden).
  void setWatch(const StragglerWatch* watch);
  // Whether the watched run has ended (stopped, finished or failed); false again for a new run.
  void setRunEnded(bool ended);
  // What the banner says (the watch's summary), empty while hidden.
  QString summary() const { return summary_; }

 private:
  void refresh();

  QPointer<const StragglerWatch> watch_;
  QMetaObject::Connection conn_;
  QString summary_;
  bool ended_ = false;
};

}  // namespace ddpdesk
