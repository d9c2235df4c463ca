#!/usr/bin/env bash
# GPU check, for a machine with an NVIDIA GPU and PyTorch 2.x but no Qt and no package access.
# Builds ddpdesk-worker against that PyTorch's LibTorch (NCCL on), then runs fmnist-cnn with
# --device cuda (world=1 through the NCCL communicator) beside the Python reference on the same
# GPU and prints both throughputs; checks that a CUDA rank sends its GPU's system gauges (NVML),
# and that two ranks on one GPU fail with a clear error.
#
# Needs, carried from a Debian machine (nothing can be installed there):
#   DDPDESK_EXTRA_INCLUDE  a directory with nlohmann/ and CLI/ headers (copies of /usr/include's)
#   DDPDESK_FMNIST_DIR     a directory with the four Fashion-MNIST .gz files
# Usage: tests/gpu/run_gpu_check.sh      (from the repository root; a few minutes)
set -euo pipefail
cd "$(dirname "$0")/../.."
: "${DDPDESK_EXTRA_INCLUDE:?set it to a folder holding nlohmann/json.hpp and CLI/CLI.hpp}"
: "${DDPDESK_FMNIST_DIR:?set it to a folder holding the Fashion-MNIST .gz files}"
export DDPDESK_FMNIST_DIR
prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name(0))'
nccl_home=$(python3 -c 'import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__) + "/nccl")' 2>/dev/null || true)
cuda_home=${CUDA_HOME:-/usr/local/cuda}
gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
cmake -S . -B build-gpu "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DDDPDESK_MONITOR=OFF \
  -DDDPDESK_GUI=OFF -DDDPDESK_TESTS=OFF -DDDPDESK_NCCL=ON -DCMAKE_PREFIX_PATH="$prefix" \
  -DDDPDESK_EXTRA_INCLUDE="$DDPDESK_EXTRA_INCLUDE" \
  -DNCCL_INCLUDE_DIR="${NCCL_INCLUDE_DIR:-${nccl_home:-$cuda_home}/include}" \
  -DNCCL_LIBRARY="${NCCL_LIBRARY:-$(ls "${nccl_home:-$cuda_home}"/lib/libnccl.so* "$cuda_home"/lib64/libnccl.so* 2>/dev/null | head -n 1)}" \
  -DCUDART_INCLUDE_DIR="$cuda_home/include" -DCUDART_LIBRARY="$(ls "$cuda_home"/lib64/libcudart.so | head -n 1)"
cmake --build build-gpu --parallel "$(nproc)" --target ddpdesk-worker
w=build-gpu/app/ddpdesk-worker
echo "== probe"; "$w" --probe
echo "== ddpdesk-worker fmnist-cnn, cuda, world=1 (NCCL communicator forced)"
MASTER_ADDR=127.0.0.1 MASTER_PORT=29531 RANK=0 WORLD_SIZE=1 DDPDESK_FORCE_COMM=1 \
  "$w" --task fmnist-cnn --device cuda --batch-size 64 --epochs 2 --lr 1e-3
echo "== Python DDP reference, same GPU"
MASTER_ADDR=127.0.0.1 MASTER_PORT=29532 RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 \
  python3 tests/gpu/fmnist_cuda_ref.py "$DDPDESK_FMNIST_DIR" 2
echo "== user task (task script): the example's TorchScript MLP on CUDA, then the model on CPU"
user=$(mktemp -d)
python3 examples/make_user_task.py --out "$user" --data fmnist --model mlp
"$w" --check --task script --device cuda --model "$user/model.pt" \
  --train-data "$user/train.safetensors" --eval-data "$user/eval.safetensors"
MASTER_ADDR=127.0.0.1 MASTER_PORT=29533 RANK=0 WORLD_SIZE=1 DDPDESK_FORCE_COMM=1 \
  "$w" --task script --device cuda --model "$user/model.pt" --train-data "$user/train.safetensors" \
  --eval-data "$user/eval.safetensors" --batch-size 64 --accum-steps 2 --epochs 1 --run-dir "$user/run"
python3 -c "import torch,sys; m=torch.jit.load(sys.argv[1]); print('model.pt loads on CPU:', sum(p.numel() for p in m.parameters()), 'parameters')" "$user/run/model.pt"
echo "== system gauges of a CUDA rank: the GPU's values through NVML (dlopen) in the metrics file"
MASTER_ADDR=127.0.0.1 MASTER_PORT=29534 RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 \
  "$w" --task fmnist-cnn --device cuda --epochs 1 --dataset-size 4096 \
  --metrics-file "$user/system.jsonl" >/dev/null
grep '"type":"gauge"' "$user/system.jsonl" | tail -n 8
grep -q '"name":"gpu_memory_used_bytes"' "$user/system.jsonl" ||
  { echo "no GPU gauges: the NVML path failed on a GPU machine"; exit 1; }
echo "== two ranks on one GPU must fail clearly"
set +e
scripts/launch-local.sh 2 "$w" --task fmnist-cnn --device cuda --epochs 1 --dataset-size 256 2>&1 | grep -m1 -E "GPU|error"
echo "exit $?"
