// Quoting a word for bash, shared by the launch commands the GUI copies and the Slurm batch
// script the monitor writes.
#pragma once

#include <QString>

namespace ddpdesk {

// The word as it is when it needs no quoting, else in single quotes ('it'\''s').
QString shellQuote(const QString& word);

}  // namespace ddpdesk
