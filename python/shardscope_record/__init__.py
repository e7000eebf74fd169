"""Record, per rank, PyTorch's own records of a few training steps into one directory, for
`shardscope view DIRECTORY` to open later.

Two lines in a training loop run under torchrun::

    rec = shardscope_record.start("job")   # before the first step
    ...
        rec.step()                          # at the end of every training step
    rec.stop()                              # after the loop (writes a window cut short)

Every rank R writes into DIRECTORY:

    rank-R.pt.trace.json       torch.profiler's Chrome trace of the active steps: CPU ops with
                               shapes (the c10d collectives and their sizes among them), the
                               "ProfilerStep#k" spans, "[memory]" allocation events, and on CUDA
                               the kernels; its distributedInfo names rank and world size.
    rank-R.memory.pickle       CUDA only (memory_snapshot=True): the caching allocator's snapshot
                               with every allocation's history and stack, taken when the active
                               steps end. On CPU there is no such allocator, so nothing is written.
    rank-R.shardscope.json     what the other two cannot say: which training steps the window
                               holds, on which devices, under which torch, and (given the model
                               and optimizer) what the rank held when the window began: the
                               storage bytes of its parameters, gradients and optimizer state,
                               allocated before the profiler could see them. Written last, so
                               its presence means the rank's files are complete.

Each file is written under a hidden temporary name in DIRECTORY and renamed into place, so a
rank killed while writing never leaves half a file under the final name.

Nothing in PyTorch is patched: the recorder only drives torch.profiler.profile with a schedule
and torch.cuda.memory's snapshot functions, as a user would by hand.
"""
import contextlib
import json
import os

import torch
import torch.distributed as dist
from torch.profiler import ProfilerActivity, profile, schedule

__all__ = ["Recorder", "start"]
__version__ = "0.1.0"

# The CUDA allocator keeps the newest entries in a ring of this many; enough for a few steps of
# an ordinary model while bounding the snapshot's size and the host memory it holds.
_MEMORY_HISTORY_ENTRIES = 100000


class Recorder:
    """Profiles training steps wait+warmup .. wait+warmup+active-1 (0-based) of this rank.

    The first `wait` steps are not profiled (they include one-off work such as DDP's bucket
    rebuild after its first backward and FSDP's lazy initialisation), the next `warmup` steps run
    the profiler without keeping what it sees (its own start-up cost stays out), and the next
    `active` steps are kept. When the last active step ends, the trace, the memory snapshot and
    the step metadata are written, and the profiler is closed, so later steps run unobserved.

    The profiler's own step spans, "ProfilerStep#k", then carry the 0-based index k of the
    training step, provided step() is called once at the end of every step from the first on.

    memory_snapshot: on CUDA, record the caching allocator's history from start() on and dump it
    when the active steps end. Ignored (silently) where CUDA is not available.

    model, optimizer: the job's (optional). When the active steps begin, the recorder counts what
    they hold then (the profiler sees only what is allocated after it starts): the storage bytes
    of the model's parameters (this rank's shards under FSDP2) and of their gradients where set,
    and of the optimizer's state tensors, each storage once, per device. shardscope shows them as
    held from the window's start, in their roles.
    """

    def __init__(self, directory, wait=1, warmup=1, active=3, memory_snapshot=True, model=None,
                 optimizer=None):
        if wait < 0 or warmup < 0 or active < 1:
            raise ValueError("Recorder needs wait >= 0, warmup >= 0 and active >= 1")
        self.directory = os.fspath(directory)
        self.wait, self.warmup, self.active = wait, warmup, active
        self._cuda = torch.cuda.is_available()
        self._snapshot = bool(memory_snapshot) and self._cuda
        self._profiler = None
        self._steps_done = 0    # training steps ended by step()
        self._written = False   # the window's files are written
        self._model, self._optimizer = model, optimizer
        self._held = None       # what the rank held when the active steps began, by role

    # ---- lifecycle ---------------------------------------------------------------------------

    def start(self):
        """Starts the profiler (and the CUDA memory history); call right before the first step."""
        if self._profiler is not None or self._written:
            raise RuntimeError("Recorder already started")
        os.makedirs(self.directory, exist_ok=True)
        if self._snapshot:
            torch.cuda.memory._record_memory_history(max_entries=_MEMORY_HISTORY_ENTRIES)
        activities = [ProfilerActivity.CPU]
        if self._cuda:
            activities.append(ProfilerActivity.CUDA)
        # repeat=1: one window; a trace of many windows would only overwrite this rank's file.
        self._profiler = profile(
            activities=activities,
            schedule=schedule(wait=self.wait, warmup=self.warmup, active=self.active, repeat=1),
            profile_memory=True,
            record_shapes=True,
            on_trace_ready=self._write,
        )
        self._profiler.start()
        self._count_held_if_active()
        return self

    def step(self):
        """Marks the end of one training step; call once per step, after optimizer.step()."""
        self._steps_done += 1
        if self._profiler is None:
            return
        self._profiler.step()   # calls _write when this step ends the active window
        if self._written:
            self._close()
        else:
            self._count_held_if_active()

    def stop(self):
        """Stops recording. A window still open is written with the steps it has (the step in
        progress included); one not reached yet writes nothing. Safe to call more than once."""
        self._close()
        self._stop_memory_history()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False

    # ---- writing -----------------------------------------------------------------------------

    def _write(self, prof):
        """on_trace_ready: the active window has ended (or stop() cut it short)."""
        rank = _global_rank()
        # The snapshot first: it shows the allocator as the last active step left it.
        if self._snapshot:
            _write_atomically(self._path(rank, "memory.pickle"), torch.cuda.memory._dump_snapshot)
            self._stop_memory_history()
        _write_atomically(self._path(rank, "pt.trace.json"), prof.export_chrome_trace)
        _write_atomically(self._path(rank, "shardscope.json"),
                          lambda path: _write_json(path, self._metadata(rank)))
        self._written = True

    def _count_held_if_active(self):
        """Right as the profiler starts keeping what it sees (the first active step)."""
        if self._steps_done == self.wait + self.warmup and self._held is None:
            self._held = _held_by_role(self._model, self._optimizer)

    def _metadata(self, rank):
        first = self.wait + self.warmup
        # A full window ends with step first+active-1; a window cut short by stop() holds the
        # steps ended before it, and at least the first one (then in progress).
        last = max(first, min(self._steps_done, first + self.active) - 1)
        return {
            "rank": rank,
            "world_size": _world_size(),
            "torch_version": torch.__version__,
            "steps_recorded": [first, last],
            "devices": "cuda" if self._cuda else "cpu",
            **({"held_when_recording_began": self._held} if self._held is not None else {}),
        }

    def _path(self, rank, suffix):
        return os.path.join(self.directory, f"rank-{rank}.{suffix}")

    def _close(self):
        if self._profiler is not None:
            profiler, self._profiler = self._profiler, None
            profiler.stop()     # writes the window if it is still open

    def _stop_memory_history(self):
        if self._snapshot:
            self._snapshot = False
            torch.cuda.memory._record_memory_history(enabled=None)


def start(directory, **kwargs):
    """Creates a Recorder for DIRECTORY (keyword arguments as Recorder's) and starts it."""
    return Recorder(directory, **kwargs).start()


# ---- helpers ---------------------------------------------------------------------------------


def _held_by_role(model, optimizer):
    """{device type: {role: bytes}}: the storages of the model's parameters ("param_shard": a
    DTensor's local shard, or DDP's whole replica), their gradients where set ("grad_shard" for a
    DTensor, else "grad_full") and the optimizer's state tensors ("optimizer_state"), each
    storage counted once (FSDP2's shards are views of one padded buffer per parameter)."""
    held, seen = {}, set()

    def add(role, tensor):
        if tensor is None or not torch.is_tensor(tensor):
            return
        local = tensor.to_local() if hasattr(tensor, "to_local") else tensor   # DTensor
        storage = local.untyped_storage()
        key = (str(storage.device), storage.data_ptr())
        if storage.nbytes() == 0 or key in seen:
            return
        seen.add(key)
        by_role = held.setdefault(storage.device.type, {})
        by_role[role] = by_role.get(role, 0) + storage.nbytes()

    if model is not None:
        for p in model.parameters():
            add("param_shard", p)
            add("grad_shard" if hasattr(p.grad, "to_local") else "grad_full", p.grad)
    if optimizer is not None:
        for state in optimizer.state.values():
            for value in state.values():
                add("optimizer_state", value)
    return held


def _global_rank():
    """The global rank: the process group's when there is one (it may be initialised after the
    recorder started, or already destroyed), else torchrun's RANK, else 0."""
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank()
    return int(os.environ.get("RANK", "0"))


def _world_size():
    if dist.is_available() and dist.is_initialized():
        return dist.get_world_size()
    return int(os.environ.get("WORLD_SIZE", "1"))


def _write_atomically(path, write):
    """write(tmp) then rename tmp to path. The temporary name is hidden and ends in .tmp, so a
    reader looking for rank-*.pt.trace.json never picks up a file a killed rank left behind."""
    directory, name = os.path.split(path)
    tmp = os.path.join(directory, f".{name}.{os.getpid()}.tmp")
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise


def _write_json(path, value):
    with open(path, "w") as f:
        json.dump(value, f, indent=1)
        f.write("\n")
