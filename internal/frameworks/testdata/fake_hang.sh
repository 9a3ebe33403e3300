#!/bin/sh
# A hung NCCL rendezvous: a worker that never ends, and the script waiting for it.
echo "waiting for rank 1" >&2
sleep 60 &
wait
