// ddpdesk-worker: one rank of a training run (under ddpdesk, torchrun or srun).
#include "worker.h"

int main(int argc, char** argv) {
  return ddpdesk::worker_main(argc, argv);
}
