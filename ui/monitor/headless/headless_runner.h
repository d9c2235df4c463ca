// `ddpdesk --headless`: the monitor with a terminal front end. Takes the worker's flags (one
// SpecFlags binding, one error policy) plus --nproc, runs the controller under a
// QCoreApplication (no display), prints a live progress line and a per-rank summary.
#pragma once

namespace ddpdesk {

// Exit codes: 0 finished, 1 failed (or could not launch), 2 bad input (one line per invalid
// field, nothing spawned or written), 128+signal when stopped by Ctrl+C (130) or SIGTERM (143).
// Ctrl+C stops gracefully like the Stop button; a second Ctrl+C kills the ranks.
int runHeadless(int argc, char** argv);

class RunController;
// Before ddpdesk exits: the on_end commands of runs that ended (end_command.h) still running are
// waited for, at most their time limit (then they are killed), so a mail is not cut short. One
// line says so when there is one to wait for.
void waitForEndCommands(RunController& controller);

}  // namespace ddpdesk
