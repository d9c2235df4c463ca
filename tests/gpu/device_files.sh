#!/usr/bin/env bash
# Gathers, on this Debian machine, what run_gpu_check.sh needs on a GPU machine where nothing can
# be installed: Debian's header-only nlohmann/ and CLI/ (the worker's build) and the Fashion-MNIST
# files, into build/gpu-files (about 32 MiB; ignored by git). Carry that folder to the GPU machine
# and run there, from the repository root:
#   DDPDESK_EXTRA_INCLUDE=$PWD/build/gpu-files/include DDPDESK_FMNIST_DIR=$PWD/build/gpu-files/fmnist \
#     timeout 570 tests/gpu/run_gpu_check.sh
# (with the device tool: carry ["build/gpu-files"]; docs/development.md, "The GPU check").
#   tests/gpu/device_files.sh      (from anywhere; needs nlohmann-json3-dev, libcli11-dev and
#                                   dataset-fashion-mnist, which scripts/install-deps.sh installs)
set -euo pipefail
cd "$(dirname "$0")/../.."
out=build/gpu-files
for need in /usr/include/nlohmann/json.hpp /usr/include/CLI/CLI.hpp \
  /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz; do
  [ -e "$need" ] || { echo "device_files.sh: no $need (run scripts/install-deps.sh)" >&2; exit 1; }
done
rm -rf "$out"
mkdir -p "$out/include" "$out/fmnist"
cp -rL /usr/include/nlohmann /usr/include/CLI "$out/include/"
cp -L /usr/share/datasets/fashion-mnist/*.gz "$out/fmnist/"
echo "device_files.sh: $out ($(du -sh "$out" | cut -f1)): carry it to the GPU machine"
