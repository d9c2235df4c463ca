#include "headless/headless_message.h"

#include <iostream>

namespace ddpdesk {

void printHeadlessMessage(const QString& text) {
  std::cerr << "ddpdesk: " << text.toStdString() << std::endl;
}

}  // namespace ddpdesk
