#!/bin/sh
# A stand-in for python3: checks that it was handed the embedded script, then prints what
# check_torch.py prints on a healthy one-GPU node (a library's line first).
grep -q 'gpunode.dev/frameworks/v1' "$1" || { echo "not the embedded script: $1" >&2; exit 9; }
[ "$2" = "--timeout" ] || { echo "no --timeout" >&2; exit 9; }
[ "$CUDA_DEVICE_ORDER" = "PCI_BUS_ID" ] || { echo "CUDA_DEVICE_ORDER is not PCI_BUS_ID" >&2; exit 9; }
echo "some library banner on stdout"
echo "a warning on stderr" >&2
cat <<'JSON'
{"schema": "gpunode.dev/frameworks/v1", "python": "3.12.3", "torch": "2.11.0", "cuda": "13.0", "nccl": "2.27.7", "gpus": ["NVIDIA H200"], "tests": [{"name": "allocate", "status": "pass", "message": "1 GiB allocated, written and read back on 1 GPUs", "seconds": 0.41, "gpus": [{"index": 0, "status": "pass", "message": "1 GiB allocated and read back (142000 of 143771 MiB free)"}]}, {"name": "matmul", "status": "pass", "message": "2048x2048 float32 matmul on 1 GPUs matches a float64 CPU reference within the rounding bound", "seconds": 1.2, "gpus": [{"index": 0, "status": "pass", "message": "within 0.012 of the rounding bound, 48.1 TFLOP/s", "tflops": 48.1}]}, {"name": "all-reduce", "status": "skip", "message": "one GPU: an all-reduce across local GPUs needs at least two", "seconds": 0.0}, {"name": "checkpoint", "status": "pass", "message": "model and optimizer checkpoint saved and restored bit for bit on 1 GPUs", "seconds": 0.3, "gpus": [{"index": 0, "status": "pass", "message": "model and AdamW state (3081 KiB) saved and restored bit for bit"}]}]}
JSON
