// `ddpdesk --headless`: the monitor with a terminal front end. Takes the worker's flags (one
// SpecFlags binding, one error policy) plus --nproc, runs the controller under a
// QCoreApplication (no display), prints a live progress line and a per-rank summary.
#pragma once

namespace ddpdesk {

// Exit codes: 0 finished, 1 failed (or could not launch), 2 bad input (one line per invalid
// field, nothing spawned or written), 128+signal when stopped by Ctrl+C (130) or SIGTERM (143).
// Ctrl+C stops gracefully like the Stop button; a second Ctrl+C kills the ranks.
int runHeadless(int argc, char** argv);

}  // namespace ddpdesk
