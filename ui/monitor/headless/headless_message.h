// How every headless front end (a run, a queue, a comparison) tells the user something outside
// the progress line (a problem, a warning, a run started): one line on stderr, "ddpdesk: <text>".
#pragma once

#include <QString>

namespace ddpdesk {

void printHeadlessMessage(const QString& text);

}  // namespace ddpdesk
