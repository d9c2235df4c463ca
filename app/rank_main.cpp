// ddpdesk-rank: runs a command as a torchrun rank under srun (torchrun_rank.h).
#include "torchrun_rank.h"

int main(int argc, char** argv) {
  return ddpdesk::torchrun_rank_main(argc, argv);
}
