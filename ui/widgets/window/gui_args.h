// Splitting `ddpdesk`'s command line between Qt and ddpdesk. Qt takes some options of its own
// out of argv (-geometry, -style, -platform, and --name, which would otherwise eat the run spec's
// --name), so ddpdesk's options are taken out first and Qt gets only the rest.
#pragma once

#include <string>
#include <vector>

namespace ddpdesk {

struct SplitArguments {
  std::vector<std::string> ours;  // argv[0], then ddpdesk's options with their values
  std::vector<std::string> qt;    // argv[0], then everything else
};

// Ours: every run spec flag (--batch-size 4, --batch-size=4), --config, --attach, and the switches
// --start and --headless.
SplitArguments splitArguments(int argc, const char* const* argv);

}  // namespace ddpdesk
