#!/bin/sh
# check_torch.py where torch is not installed.
echo '{"schema": "gpunode.dev/frameworks/v1", "python": "3.12.3", "unavailable": "torch", "reason": "PyTorch is not importable by /usr/bin/python3: No module named '"'"'torch'"'"'"}'
