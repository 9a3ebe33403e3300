"""PyTorch reference for `gpunode stress` at the same sizes (run on a GPU machine).

Prints one JSON object: device-to-device copy_ of 4 GiB (GB/s counting bytes read plus
written, as the hbm test), pinned host<->device copy_ of 1 GiB (bytes moved once, as the
pcie test), GPU-to-GPU copy_ of 1 GiB for every ordered pair (as the p2p test) and, for
context, an FP32 matmul without TF32. Each rate is timed with CUDA events after warm-up.
"""
import json
import sys

import torch

GIB = 1 << 30


def timed(fn, iters, stream_dev):
    torch.cuda.synchronize()
    fn()
    torch.cuda.synchronize()
    with torch.cuda.device(stream_dev):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iters):
            fn()
        stop.record()
        stop.synchronize()
    return start.elapsed_time(stop) / 1e3


def main():
    out = {"torch": torch.__version__, "devices": []}
    n = torch.cuda.device_count()
    for d in range(n):
        dev = torch.device("cuda", d)
        r = {"index": d, "name": torch.cuda.get_device_name(d)}
        src = torch.empty(4 * GIB, dtype=torch.uint8, device=dev).fill_(7)
        dst = torch.empty_like(src)
        iters = 50
        secs = timed(lambda: dst.copy_(src), iters, d)
        r["d2d_copy_GBps_read_plus_write"] = 2 * 4 * GIB * iters / secs / 1e9
        del src, dst
        host = torch.empty(GIB, dtype=torch.uint8).pin_memory()
        host_out = torch.empty(GIB, dtype=torch.uint8).pin_memory()
        devbuf = torch.empty(GIB, dtype=torch.uint8, device=dev)
        iters = 10
        r["h2d_pinned_GBps"] = GIB * iters / timed(lambda: devbuf.copy_(host, non_blocking=True), iters, d) / 1e9
        r["d2h_pinned_GBps"] = GIB * iters / timed(lambda: host_out.copy_(devbuf, non_blocking=True), iters, d) / 1e9
        del devbuf
        torch.backends.cuda.matmul.allow_tf32 = False
        a = torch.randn(8192, 8192, device=dev)
        b = torch.randn(8192, 8192, device=dev)
        iters = 10
        r["fp32_matmul_noTF32_TFLOPs"] = 2 * 8192**3 * iters / timed(lambda: torch.mm(a, b), iters, d) / 1e12
        del a, b
        torch.cuda.empty_cache()
        out["devices"].append(r)
    pairs = []
    for s in range(n):
        for t in range(n):
            if s == t:
                continue
            a = torch.empty(GIB, dtype=torch.uint8, device=f"cuda:{s}").fill_(3)
            b = torch.empty(GIB, dtype=torch.uint8, device=f"cuda:{t}")
            iters = 10
            secs = timed(lambda: b.copy_(a, non_blocking=True), iters, s)
            small_a, small_b = a[:4], b[:4]
            lat = timed(lambda: small_b.copy_(small_a, non_blocking=True), 1000, s) / 1000
            pairs.append({"src": s, "dst": t, "peer_access": torch.cuda.can_device_access_peer(t, s),
                          "GBps": GIB * iters / secs / 1e9, "latency_us_4B": lat * 1e6})
            del a, b
            torch.cuda.empty_cache()
    out["pairs"] = pairs
    json.dump(out, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
