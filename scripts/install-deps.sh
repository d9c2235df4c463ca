#!/usr/bin/env bash
# Installs every Debian package ddpdesk needs to build, test and run. Safe to re-run: when all
# packages are already present it only checks and returns.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config git
  qt6-base-dev libqcustomplot-dev            # monitor + GUI (QCustomPlot's Qt 6 build)
  libtorch-dev libgloo-dev                   # engine: LibTorch 1.13 (CPU) and Gloo collectives
  libopenblas0-pthread                       # fast BLAS behind libblas.so.3 (LibTorch links it)
  libdnnl-dev                                # oneDNN headers: LibTorch's matrix products on oneDNN (engine/gemm)
  nlohmann-json3-dev libcli11-dev zlib1g-dev # wire format, CLI flags, gzip'd idx files
  libsimdjson-dev                            # wire decoding in the monitor (On-Demand API)
  libgtest-dev                               # engine unit tests (Torch code cannot use Qt Test)
  clang libclang-rt-14-dev                   # libFuzzer targets and sanitizers
  dataset-fashion-mnist                      # real training data
  python3-torch                              # torchrun compatibility test, sampler reference
  xvfb x11-apps imagemagick                  # GUI screenshots under a virtual display
  procps psmisc                              # pgrep/pkill in tests
  slurm-wlm munge                            # srun tests under a private single-node Slurm
  openssh-client openssh-server              # following a run on another host; its tests run a private sshd
  desktop-file-utils                         # the install test validates ddpdesk.desktop
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
