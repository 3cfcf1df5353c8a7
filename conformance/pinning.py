"""One pytest-xdist worker per GPU: which device each worker may see, through *_VISIBLE_DEVICES.

`pytest -n 2 --gpus auto` (or `--gpus 0,1`): the controller gives worker gwN the N-th device of
the list, and the worker sets its vendor's variable before anything initialises the GPU, so its
torch sees exactly one device, as cuda:0. NVIDIA builds read CUDA_VISIBLE_DEVICES and ROCm builds
HIP_VISIBLE_DEVICES. Only that one is set, and on ROCm an inherited CUDA_VISIBLE_DEVICES is
removed: HIP honours both and applies CUDA_VISIBLE_DEVICES on top of HIP_VISIBLE_DEVICES, so
"1" in both would leave the worker no device at all. Ids are those of the controller's
environment (relative to ROCR_VISIBLE_DEVICES where that is set). More workers than devices is
refused: two workers on one GPU is what pinning exists to prevent.
"""

from __future__ import annotations

import re
from typing import Any, Mapping, MutableMapping, Optional

from scenarios.errors import InvalidValue

CUDA_VAR = "CUDA_VISIBLE_DEVICES"
HIP_VAR = "HIP_VISIBLE_DEVICES"
WORKER_KEY = "attncheck_gpu"  # the key of xdist's workerinput that carries a worker's device
_LIST = re.compile(r"^\d+(,\d+)*$")


def variable(rocm: bool) -> str:
    return HIP_VAR if rocm else CUDA_VAR


def device_list(spec: str, env: Mapping[str, str], count: int, rocm: bool) -> list[str]:
    """The devices workers are pinned to: `auto` = what the controller sees, or an explicit list."""
    if spec == "auto":
        inherited = env.get(variable(rocm), "").strip()
        if inherited:
            return [d.strip() for d in inherited.split(",") if d.strip()]
        return [str(i) for i in range(count)]
    if not _LIST.match(spec):
        raise InvalidValue("--gpus", spec, "auto, or device ids separated by commas", "pass e.g. --gpus 0,1")
    ids = spec.split(",")
    if len(set(ids)) != len(ids):
        raise InvalidValue("--gpus", spec, "each device once", "drop the repeated id: one worker per GPU")
    return ids


def assign(workers: int, devices: list[str]) -> dict[str, str]:
    """Worker id (gw0, gw1, ...) -> device id; refused when there are more workers than devices."""
    if not devices:
        raise InvalidValue("--gpus", "", "at least one visible GPU", "run on a GPU runner, or drop --gpus")
    if workers > len(devices):
        raise InvalidValue(
            "-n",
            workers,
            f"at most {len(devices)} workers, one per GPU ({','.join(devices)})",
            f"pass -n {len(devices)}",
        )
    return {f"gw{i}": devices[i] for i in range(workers)}


def pin(env: MutableMapping[str, str], device: str, rocm: bool) -> None:
    """Make `device` the only GPU this process sees; call before the GPU is initialised."""
    env[variable(rocm)] = device
    if rocm:
        env.pop(CUDA_VAR, None)


def worker_pin(workerinput: Optional[Mapping[str, Any]]) -> Optional[tuple[str, bool]]:
    """(device, rocm) the controller handed this worker, if any (the worker need not import torch to know)."""
    value = (workerinput or {}).get(WORKER_KEY)
    return (str(value["device"]), bool(value["rocm"])) if value is not None else None
