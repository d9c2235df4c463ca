// RunController's hang doctor (run_controller.h, hang/hang_doctor.h): a stall is said, every
// rank's stack taken, and the verdict said and logged.
#include "hang/hang_doctor.h"
#include "hang/stall_watch.h"
#include "run/run_controller.h"
#include "run/run_directory.h"

namespace ddpdesk {

void RunController::setUpHangDoctor() {
  doctor_ = new HangDoctor(*this);
  connect(stall_watch_, &StallWatch::stalled, this, &RunController::onStall);
  connect(doctor_, &HangDoctor::examined, this, &RunController::onStacksExamined);
}

bool RunController::takeStacks() {
  return isActive() && doctor_->examine(QString());
}

bool RunController::takingStacks() const {
  return doctor_->busy();
}

void RunController::onStall(const QString& why) {
  if (state_ != State::Running && state_ != State::Starting) return;
  const bool taking = doctor_->examine(why);
  Q_EMIT warning(why + (taking ? QStringLiteral("; taking every rank's stack")
                               : QStringLiteral("; stacks are being taken already")));
}

void RunController::onStacksExamined(const QString& why, const QString& verdict,
                                     const QString& path) {
  const QString where = path.isEmpty() ? QStringLiteral("the stacks file could not be written")
                                       : QStringLiteral("stacks in ") + path;
  if (dir_) dir_->logEvent(QStringLiteral("hang doctor: %1 (%2)").arg(verdict, where));
  Q_EMIT stacksTaken(why, verdict, path);
  if (!why.isEmpty()) Q_EMIT stalled(why + QStringLiteral(": ") + verdict);
}

}  // namespace ddpdesk
