#include "headless_line.h"

#include <iostream>

namespace ddpdesk {

void printHeadlessLine(const QString& text) {
  std::cerr << "ddpdesk: " << text.toStdString() << std::endl;
}

}  // namespace ddpdesk
