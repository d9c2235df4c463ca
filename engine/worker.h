// ddpdesk-worker's whole behaviour behind a function, so the main stays a one-liner.
#pragma once

namespace ddpdesk {

// Exit codes: 0 finished or stopped gracefully, 1 failed, 2 bad input.
int worker_main(int argc, char** argv);

}  // namespace ddpdesk
