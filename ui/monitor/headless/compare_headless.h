// `ddpdesk --headless --compare DIR1 DIR2 [...] [--x step|samples|time] [--match interp|exact]
// [--tag NAME] [--csv FILE]`: the comparison view in the terminal. Prints the table of runs
// (run_comparison.h) and, for every run after the first, the difference of its curves (global
// loss, validation loss, validation accuracy) against the first run's.
#pragma once

namespace ddpdesk {

// True when the command line asks for a comparison (it holds --compare).
bool wantsCompare(int argc, char** argv);
// Exit codes: 0 printed; 2 bad input (one line: a directory that is not a run, an unknown --x,
// a CSV that cannot be written; nothing written); no run is started.
int runCompareHeadless(int argc, char** argv);

}  // namespace ddpdesk
