#include "headless/progress_printer.h"

#include <unistd.h>
#include <iostream>

#include "run/progress_text.h"

namespace ddpdesk {

ProgressPrinter::ProgressPrinter(int totalEpochs)
    : epochs_(totalEpochs), tty_(::isatty(STDOUT_FILENO) == 1) {
  since_.start();
}

void ProgressPrinter::update(const RunProgress& p) {
  if (p.step == 0) return;  // nothing trained yet: the line would be all blanks
  const bool newEpoch = p.epoch != lastEpoch_;
  if (!printed_ || since_.elapsed() >= (tty_ ? 200 : 5000) || newEpoch) print(p);
}

void ProgressPrinter::finish(const RunProgress& p) {
  if (p.step > 0 && formatProgressLine(p, epochs_) != last_) print(p);
  if (tty_ && printed_) std::cout << std::endl;
}

void ProgressPrinter::breakLine() {
  if (tty_ && printed_) std::cout << std::endl;
}

void ProgressPrinter::print(const RunProgress& p) {
  last_ = formatProgressLine(p, epochs_);
  const std::string line = last_.toStdString();
  if (tty_)
    std::cout << "\r" << line << "\x1b[K" << std::flush;
  else
    std::cout << line << std::endl;
  printed_ = true;
  lastEpoch_ = p.epoch;
  since_.restart();
}

}  // namespace ddpdesk
