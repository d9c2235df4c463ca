#!/usr/bin/env bash
# Installs the Debian packages ddpdesk needs. Without arguments only what building and running
# it need (scripts/start.sh); with --tests also what its test suite needs: the test framework,
# clang for the sanitizers and fuzzers, a private single-node Slurm, an ssh server the ssh tests
# start on a port of their own, the GUI screenshot tools (scripts/test.sh). Safe to re-run: when
# all packages are already present it only checks and returns.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config git
  clang                                      # the compiler scripts/build.sh uses (faster than GCC here)
  qt6-base-dev libqcustomplot-dev            # monitor + GUI (QCustomPlot's Qt 6 build)
  libtorch-dev libgloo-dev                   # engine: LibTorch 1.13 (CPU) and Gloo collectives
  libopenblas0-pthread                       # fast BLAS behind libblas.so.3 (LibTorch links it)
  libdnnl-dev                                # oneDNN headers: LibTorch's matrix products on oneDNN (engine/gemm)
  nlohmann-json3-dev libcli11-dev zlib1g-dev # wire format, CLI flags, gzip'd idx files
  libsimdjson-dev                            # wire decoding in the monitor (On-Demand API)
  dataset-fashion-mnist                      # real training data (the demo run's)
  # Runs of your own Python training script: Debian's PyTorch binding over the same LibTorch
  # libtorch-dev installs, so it adds little. Also the tests' PyTorch references.
  python3-torch
  openssh-client                             # following a run on another host (ssh://)
)
test_packages=(
  libgtest-dev                               # engine unit tests (Torch code cannot use Qt Test)
  libclang-rt-14-dev                         # libFuzzer targets and sanitizers
  xvfb x11-apps imagemagick                  # GUI screenshots under a virtual display
  procps psmisc                              # pgrep/pkill in tests
  slurm-wlm munge                            # srun tests under a private single-node Slurm
  openssh-server                             # the ssh tests run a private sshd
  desktop-file-utils                         # the install test validates ddpdesk.desktop
  dbus-daemon                                # notifications on a private D-Bus session bus
  gdb elfutils                               # the hang doctor's native stacks (eu-stack too)
)
case "${1:-}" in
  "") ;;
  --tests) packages+=("${test_packages[@]}") ;;
  *) echo "install-deps: invalid argument '$1': only --tests is known" >&2; exit 2 ;;
esac

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
