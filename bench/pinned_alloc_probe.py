#!/usr/bin/env python3
"""How fast this GPU machine pins host memory: what --offload cpu's first step pays.

Under --offload cpu a rank's gradient shards go to pinned host blocks that the CUDA host
allocator makes (cudaHostAlloc) in the first backward and reuses from its cache afterwards, as
FSDP2's CPUOffloadPolicy does; the time that takes is the driver's page pinning, not the
engine's. This times --count cudaHostAlloc calls of --mib MiB each (the 1B GPT's block unit is
201 MiB of fp32 per rank at world 1) in a fresh process per configuration: alone, and beside a
thread doing what a recorded GPU rank's clock thread does (cudaEventQuery every 2 ms, and every
20 ms an NVML process-memory query or cudaMemGetInfo), to tell the driver's rate from any
contention with the recording. ctypes releases the GIL, so the threads run side by side.

Needs a CUDA GPU (run it on the device machine; nothing to build):
    python3 bench/pinned_alloc_probe.py [--count 12] [--mib 201]
"""
import argparse
import ctypes
import subprocess
import sys
import threading
import time

CONFIGS = ["alone", "poll", "poll+meminfo", "poll+nvml", "device15g", "device15g+poll+nvml", "alone"]


def cuda_runtime():
    import torch  # loads the CUDA runtime its wheel ships
    if not torch.cuda.is_available():
        sys.exit("pinned_alloc_probe: no CUDA GPU is visible here; run it on a GPU machine.")
    torch.cuda.init()
    for name in ("libcudart.so.13", "libcudart.so.12", "libcudart.so"):
        try:
            return ctypes.CDLL(name)
        except OSError:
            pass
    sys.exit("pinned_alloc_probe: torch is loaded but no libcudart.so.13/12 can be opened by name.")


def nvml_process_query():
    nvml = ctypes.CDLL("libnvidia-ml.so.1")
    if nvml.nvmlInit_v2() != 0:
        sys.exit("pinned_alloc_probe: nvmlInit failed")
    handle = ctypes.c_void_p()
    nvml.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(handle))
    infos = (ctypes.c_byte * (64 * 64))()

    def query():
        count = ctypes.c_uint(64)
        nvml.nvmlDeviceGetComputeRunningProcesses_v3(handle, ctypes.byref(count), infos)
    return query


def check(status, what):
    if status != 0:
        sys.exit(f"pinned_alloc_probe: {what} returned CUDA error {status}")


def probe(config, count, mib):
    rt = cuda_runtime()
    stop = threading.Event()
    if "device15g" in config:  # a model's worth of device memory in use, as in the traced run
        block = ctypes.c_void_p()
        check(rt.cudaMalloc(ctypes.byref(block), ctypes.c_size_t(15 << 30)), "cudaMalloc")
    poller = None
    if "poll" in config:
        event = ctypes.c_void_p()
        check(rt.cudaEventCreate(ctypes.byref(event)), "cudaEventCreate")
        check(rt.cudaEventRecord(event, None), "cudaEventRecord")
        periodic = nvml_process_query() if "nvml" in config else None
        if "meminfo" in config:
            free, total = ctypes.c_size_t(), ctypes.c_size_t()
            periodic = lambda: rt.cudaMemGetInfo(ctypes.byref(free), ctypes.byref(total))  # noqa: E731

        def poll():
            rt.cudaSetDevice(0)
            polls = 0
            while not stop.is_set():
                rt.cudaEventQuery(event)
                polls += 1
                if periodic and polls % 10 == 0:
                    periodic()
                time.sleep(0.002)
        poller = threading.Thread(target=poll, daemon=True)
        poller.start()
        time.sleep(0.1)
    seconds = []
    for _ in range(count):
        host = ctypes.c_void_p()
        start = time.perf_counter()
        check(rt.cudaHostAlloc(ctypes.byref(host), ctypes.c_size_t(mib << 20), 0), "cudaHostAlloc")
        seconds.append(time.perf_counter() - start)
    stop.set()
    total = sum(seconds)
    print(f"{config:22s} {count} x {mib} MiB pinned: {total:6.2f} s, {count * mib / 1024 / total:5.2f} GiB/s, "
          f"first {seconds[0] * 1e3:.0f} ms, median {sorted(seconds)[count // 2] * 1e3:.0f} ms", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=12, help="blocks pinned per configuration [12]")
    ap.add_argument("--mib", type=int, default=201, help="MiB per block [201: the 1B GPT's block unit]")
    ap.add_argument("--config", choices=sorted(set(CONFIGS)), help=argparse.SUPPRESS)  # one child process
    args = ap.parse_args()
    if args.count < 1 or args.mib < 1:
        sys.exit(f"--count {args.count} --mib {args.mib}: both must be at least 1")
    if args.config:
        return probe(args.config, args.count, args.mib)
    cuda_runtime()  # fails here, once, where there is no GPU
    for config in CONFIGS:  # a fresh process each: the host allocator's cache must be empty
        subprocess.run([sys.executable, __file__, "--config", config, "--count", str(args.count),
                        "--mib", str(args.mib)], check=False, timeout=120)


if __name__ == "__main__":
    main()
