"""gpunode L5 "real frameworks" acceptance: PyTorch on every local GPU.

Run by `gpunode accept --layers frameworks` (embedded in the binary); also runnable by hand:
    python3 check_torch.py [--timeout SECONDS]
    python3 check_torch.py --self-test-cpu N   # the same tests on the CPU, N gloo ranks:
                                               # checks this script where there is no GPU
    ... --self-test-corrupt matmul   # one wrong matmul element on the last device: its check must fail
Prints one JSON object on stdout (schema gpunode.dev/frameworks/v1) and exits 0 when the
report was written, whatever the tests found; diagnostics go to stderr.

Tests:
  allocate     a 1 GiB tensor on every GPU, filled and read back
  matmul       a float32 matmul on every GPU (TF32 off) against a float64 CPU reference,
               every element within the worst-case rounding bound n*eps*(|A||B|)
  all-reduce   one process per GPU, torch.distributed with NCCL: a sum of known values,
               then a timed 256 MiB all-reduce (bus bandwidth); one GPU: skipped
  checkpoint   a model and optimizer state saved with torch.save, loaded with torch.load
               (weights_only) onto the GPU, every tensor compared bit for bit
"""

import json
import os
import pickle
import platform
import sys
import tempfile
import time
import traceback

SCHEMA = "gpunode.dev/frameworks/v1"
MATMUL_N = 2048
ALLREDUCE_BYTES = 256 << 20
ALLOC_BYTES = 1 << 30

# CPU is the self-test mode (--self-test-cpu): every "GPU" is the CPU, the all-reduce uses gloo.
CPU = {"on": False}


def device(i):
    return "cpu" if CPU["on"] else "cuda:%d" % i


def on(n):
    """'8 GPUs', or '2 CPU ranks' in the self-test."""
    if CPU["on"]:
        return "%d CPU ranks" % n
    return "%d GPU%s" % (n, "" if n == 1 else "s")


def matmul_n():
    return 512 if CPU["on"] else MATMUL_N


def sync(torch, i):
    if not CPU["on"]:
        torch.cuda.synchronize(i)


def result(name, status, message, started, gpus=None, metrics=None):
    r = {"name": name, "status": status, "message": message,
         "seconds": round(time.monotonic() - started, 4)}
    if gpus:
        r["gpus"] = gpus
    if metrics:
        r["metrics"] = metrics
    return r


def fold(name, started, gpus, ok_msg):
    bad = [g for g in gpus if g["status"] == "fail"]
    if bad:
        first = bad[0]
        msg = "GPU %d: %s" % (first["index"], first["message"])
        if len(bad) > 1:
            msg += " (and %d more GPUs)" % (len(bad) - 1)
        return result(name, "fail", msg, started, gpus)
    return result(name, "pass", ok_msg, started, gpus)


def test_allocate(torch, n):
    started = time.monotonic()
    gpus = []
    elems = (ALLOC_BYTES >> 4 if CPU["on"] else ALLOC_BYTES) // 4
    for i in range(n):
        try:
            x = torch.empty(elems, dtype=torch.float32, device=device(i))
            x.fill_(1.5)
            ok = bool(torch.all(x == 1.5).item())
            free_msg = ""
            if not CPU["on"]:
                free, total = torch.cuda.mem_get_info(i)
                free_msg = " (%d of %d MiB free)" % (free >> 20, total >> 20)
            del x
            if not CPU["on"]:
                torch.cuda.empty_cache()
            if ok:
                gpus.append({"index": i, "status": "pass",
                             "message": "%d MiB allocated and read back%s" % (elems >> 18, free_msg)})
            else:
                gpus.append({"index": i, "status": "fail", "message": "%d MiB filled with 1.5 read back different values" % (elems >> 18)})
        except Exception as e:  # noqa: BLE001 - every failure is a finding
            gpus.append({"index": i, "status": "fail", "message": "%s: %s" % (type(e).__name__, e)})
    return fold("allocate", started, gpus, "%d MiB allocated, written and read back on %s" % (elems >> 18, on(n)))


def test_matmul(torch, n):
    started = time.monotonic()
    # Plain float32: with TF32 (a 10-bit mantissa) this would not test float32 arithmetic.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    size = matmul_n()
    g = torch.Generator().manual_seed(20261129)
    a = torch.rand(size, size, generator=g, dtype=torch.float32) * 2 - 1
    b = torch.rand(size, size, generator=g, dtype=torch.float32) * 2 - 1
    ref = a.double() @ b.double()
    # Worst-case error of a float32 dot product of length n in any summation order:
    # gamma_n * (|a| @ |b|), gamma_n = n*u/(1-n*u), u = 2^-24.
    u = 2.0 ** -24
    gamma = size * u / (1 - size * u)
    bound = gamma * (a.double().abs() @ b.double().abs())
    gpus = []
    for i in range(n):
        try:
            dev = device(i)
            ad, bd = a.to(dev), b.to(dev)
            c = ad @ bd
            sync(torch, i)
            t0 = time.monotonic()
            reps = 1 if CPU["on"] else 5
            for _ in range(reps):
                c = ad @ bd
            sync(torch, i)
            secs = time.monotonic() - t0
            if CPU.get("corrupt") and i == n - 1:  # self-test of the check: one wrong element on the last device
                c[7, 11] += 1.0
            tflops = 2 * size ** 3 * reps / secs / 1e12 if secs > 0 else 0.0
            err = (c.double().cpu() - ref).abs()
            over = int((err > bound).sum().item())
            worst = float((err / bound.clamp_min(1e-300)).max().item())
            if over:
                gpus.append({"index": i, "status": "fail",
                             "message": "%d of %d elements beyond the float32 rounding bound (worst %.1fx the bound)" % (over, size * size, worst)})
            else:
                gpus.append({"index": i, "status": "pass",
                             "message": "%dx%d float32 matmul within %.3f of the rounding bound, %.2f TFLOP/s" % (size, size, worst, tflops),
                             "tflops": round(tflops, 2)})
        except Exception as e:  # noqa: BLE001
            gpus.append({"index": i, "status": "fail", "message": "%s: %s" % (type(e).__name__, e)})
    return fold("matmul", started, gpus, "%dx%d float32 matmul on %s matches a float64 CPU reference within the rounding bound" % (size, size, on(n)))


def allreduce_worker(rank, world, init_file, out_dir, cpu):
    """One rank of the all-reduce test; writes its outcome to out_dir/rank-N.json."""
    import torch
    import torch.distributed as dist
    CPU["on"] = cpu
    out = {"rank": rank, "status": "fail", "message": ""}
    try:
        if not cpu:
            torch.cuda.set_device(rank)
        dist.init_process_group("gloo" if cpu else "nccl", init_method="file://" + init_file, rank=rank, world_size=world)
        x = torch.full((1024,), float(rank + 1), device=device(rank))
        dist.all_reduce(x)
        want = world * (world + 1) / 2
        if not bool(torch.all(x == want).item()):
            out["message"] = "sum of ranks 1..%d gave %s, want %s" % (world, x[0].item(), want)
        else:
            big = torch.ones((ALLREDUCE_BYTES >> 4 if cpu else ALLREDUCE_BYTES) // 4, device=device(rank))
            dist.all_reduce(big)
            sync(torch, rank)
            reps = 10
            dist.barrier()
            t0 = time.monotonic()
            for _ in range(reps):
                dist.all_reduce(big)
            sync(torch, rank)
            secs = (time.monotonic() - t0) / reps
            # nccl-tests' bus bandwidth for all-reduce: size/time * 2(n-1)/n.
            busbw = big.numel() * 4 / secs / 1e9 * 2 * (world - 1) / world
            out.update(status="pass", message="ok", busbwGBps=round(busbw, 2))
        dist.destroy_process_group()
    except Exception as e:  # noqa: BLE001
        out["message"] = "%s: %s" % (type(e).__name__, e)
    with open(os.path.join(out_dir, "rank-%d.json" % rank), "w") as f:
        json.dump(out, f)


def test_allreduce(torch, n, timeout):
    started = time.monotonic()
    if n < 2:
        return result("all-reduce", "skip", "one GPU: an all-reduce across local GPUs needs at least two", started)
    import torch.distributed as dist
    if not dist.is_available() or not (CPU["on"] or dist.is_nccl_available()):
        return result("all-reduce", "fail", "torch.distributed with NCCL is not available in this PyTorch build", started)
    import torch.multiprocessing as mp
    with tempfile.TemporaryDirectory(prefix="gpunode-nccl-") as d:
        ctx = mp.get_context("spawn")
        procs = [ctx.Process(target=allreduce_worker, args=(r, n, os.path.join(d, "rendezvous"), d, CPU["on"])) for r in range(n)]
        for p in procs:
            p.start()
        deadline = time.monotonic() + timeout
        for p in procs:
            p.join(max(0.0, deadline - time.monotonic()))
        hung = [r for r, p in enumerate(procs) if p.is_alive()]
        for p in procs:
            if p.is_alive():
                p.kill()
        gpus = []
        for r in range(n):
            path = os.path.join(d, "rank-%d.json" % r)
            if r in hung:
                gpus.append({"index": r, "status": "fail", "message": "rank did not finish within %.0f s (NCCL hang?)" % timeout})
            elif not os.path.exists(path):
                gpus.append({"index": r, "status": "fail", "message": "rank exited with code %s without a result" % procs[r].exitcode})
            else:
                with open(path) as f:
                    o = json.load(f)
                g = {"index": r, "status": o["status"], "message": o["message"]}
                if "busbwGBps" in o:
                    g["busbwGBps"] = o["busbwGBps"]
                gpus.append(g)
    bw = [g["busbwGBps"] for g in gpus if "busbwGBps" in g]
    msg = "%s all-reduce across %s summed correctly" % ("gloo" if CPU["on"] else "NCCL", on(n))
    metrics = None
    if bw:
        msg += ", %d MiB bus bandwidth %.1f GB/s" % ((ALLREDUCE_BYTES >> 4 if CPU["on"] else ALLREDUCE_BYTES) >> 20, min(bw))
        metrics = {"busbwGBps": min(bw)}
    r = fold("all-reduce", started, gpus, msg)
    if metrics and r["status"] == "pass":
        r["metrics"] = metrics
    return r


def test_checkpoint(torch, n):
    started = time.monotonic()
    gpus = []
    for i in range(n):
        dev = device(i)
        try:
            torch.manual_seed(i)
            model = torch.nn.Sequential(torch.nn.Linear(512, 512), torch.nn.ReLU(), torch.nn.Linear(512, 64)).to(dev)
            opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
            loss = model(torch.randn(32, 512, device=dev)).square().mean()
            loss.backward()
            opt.step()
            state = {"model": model.state_dict(), "optimizer": opt.state_dict(), "step": 1}
            with tempfile.TemporaryDirectory(prefix="gpunode-ckpt-") as d:
                path = os.path.join(d, "checkpoint.pt")
                torch.save(state, path)
                size = os.path.getsize(path)
                how = "weights_only"
                try:
                    back = torch.load(path, map_location=dev, weights_only=True)
                except TypeError:  # PyTorch before 1.13 has no weights_only
                    back, how = torch.load(path, map_location=dev), "full unpickler"
                except pickle.UnpicklingError:
                    # Older weights-only unpicklers refuse plain floats in optimizer state; the
                    # file is our own, written a moment ago into a private folder.
                    back, how = torch.load(path, map_location=dev, weights_only=False), "full unpickler"
            diffs = compare(torch, state, back, "")
            if diffs:
                gpus.append({"index": i, "status": "fail", "message": "restored checkpoint differs: " + "; ".join(diffs[:3])})
            else:
                gpus.append({"index": i, "status": "pass", "message": "model and AdamW state (%d KiB) saved and restored bit for bit (%s)" % (size >> 10, how)})
        except Exception as e:  # noqa: BLE001
            gpus.append({"index": i, "status": "fail", "message": "%s: %s" % (type(e).__name__, e)})
    return fold("checkpoint", started, gpus, "model and optimizer checkpoint saved and restored bit for bit on " + on(n))


def compare(torch, a, b, path):
    """Lists where two nested checkpoint structures differ."""
    if isinstance(a, torch.Tensor):
        if not isinstance(b, torch.Tensor):
            return ["%s: tensor became %s" % (path, type(b).__name__)]
        # map_location puts every tensor on the GPU, CPU ones (AdamW's step) included; a GPU
        # tensor must come back on its own GPU.
        if a.shape != b.shape or a.dtype != b.dtype or (a.is_cuda and a.device != b.device):
            return ["%s: %s %s on %s became %s %s on %s" % (path, a.dtype, tuple(a.shape), a.device, b.dtype, tuple(b.shape), b.device)]
        if not torch.equal(a.cpu(), b.cpu()):
            return ["%s: values differ" % path]
        return []
    if isinstance(a, dict):
        if not isinstance(b, dict) or set(a) != set(b):
            return ["%s: keys differ" % path]
        out = []
        for k in a:
            out += compare(torch, a[k], b[k], "%s/%s" % (path, k))
        return out
    if isinstance(a, (list, tuple)):
        if not isinstance(b, (list, tuple)) or len(a) != len(b):
            return ["%s: length differs" % path]
        out = []
        for i, (x, y) in enumerate(zip(a, b)):
            out += compare(torch, x, y, "%s[%d]" % (path, i))
        return out
    return [] if a == b else ["%s: %r became %r" % (path, a, b)]


def main(argv):
    timeout, self_test = 120.0, 0
    args = argv[1:]
    while len(args) >= 2:
        if args[0] == "--timeout":
            timeout = float(args[1])
        elif args[0] == "--self-test-cpu":
            self_test = int(args[1])
        elif args[0] == "--self-test-corrupt" and args[1] == "matmul":
            CPU["corrupt"] = True
        else:
            break
        args = args[2:]
    report = {"schema": SCHEMA, "python": platform.python_version()}
    try:
        import torch
    except Exception as e:  # noqa: BLE001 - ImportError, or a broken install
        report["unavailable"] = "torch"
        report["reason"] = "PyTorch is not importable by %s: %s" % (sys.executable, e)
        print(json.dumps(report))
        return 0
    report["torch"] = torch.__version__
    report["cuda"] = torch.version.cuda
    if self_test > 0:
        CPU["on"] = True
        n = self_test
        report["gpus"] = ["cpu"] * n
        report["tests"] = run_tests(torch, n, timeout)
        print(json.dumps(report))
        return 0
    if not torch.cuda.is_available():
        report["unavailable"] = "cuda"
        report["reason"] = "torch %s sees no CUDA GPU (torch.cuda.is_available() is False; built for CUDA %s)" % (torch.__version__, torch.version.cuda)
        print(json.dumps(report))
        return 0
    n = torch.cuda.device_count()
    report["gpus"] = [torch.cuda.get_device_name(i) for i in range(n)]
    try:
        v = torch.cuda.nccl.version()
        report["nccl"] = ".".join(str(x) for x in v) if isinstance(v, (tuple, list)) else str(v)
    except Exception:  # noqa: BLE001 - NCCL missing shows in the all-reduce test
        pass
    report["tests"] = run_tests(torch, n, timeout)
    print(json.dumps(report))
    return 0


def run_tests(torch, n, timeout):
    tests = []
    for fn, args in ((test_allocate, (torch, n)), (test_matmul, (torch, n)),
                     (test_allreduce, (torch, n, timeout)), (test_checkpoint, (torch, n))):
        started = time.monotonic()
        try:
            tests.append(fn(*args))
        except Exception as e:  # noqa: BLE001 - a crashed test is a failed test
            traceback.print_exc(file=sys.stderr)
            name = fn.__name__.replace("test_", "").replace("allreduce", "all-reduce")
            tests.append(result(name, "fail", "crashed: %s: %s" % (type(e).__name__, e), started))
    return tests


if __name__ == "__main__":
    sys.exit(main(sys.argv))
