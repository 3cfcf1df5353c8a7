"""The `torch` target: SDPA's backends, SDPA's own choice ("auto") and FlexAttention.

    TARGET.backends("cpu")  == ("math", "flash", "auto", "flex")
    TARGET.backends("cuda") == ("math", "flash", "efficient", "cudnn", "auto", "flex")
    TARGET.make("flash", "cpu") -> SdpaKernel;  TARGET.make("flex", "cuda") -> FlexKernel

The adapters live in kernels/torch_sdpa.py and kernels/torch_flex.py; this module only names
them, so `kernels.get_target("torch")` stays cheap.
"""

from __future__ import annotations

from kernels import _env, skips
from kernels.errors import UnknownBackend
from kernels.protocol import AttentionKernel, Support
from kernels.torch_flex import BACKEND as FLEX
from kernels.torch_flex import FlexKernel
from kernels.torch_sdpa import SdpaKernel, backends_for


class TorchTarget:
    name = "torch"

    def backends(self, device: str) -> tuple[str, ...]:
        sdpa = backends_for(device)
        return sdpa + (FLEX,) if sdpa else ()

    def available(self, device: str) -> Support:
        kind = _env.device_type(device)
        if kind == "cpu":
            return Support.yes()
        if kind == "cuda":
            if _env.cuda_available():
                return Support.yes()
            return Support.no(skips.detail(skips.DEVICE_BACKEND, f"{device}: torch sees no CUDA device"))
        return Support.no(skips.detail(skips.DEVICE_BACKEND, f"{device}: the torch target serves cpu and cuda"))

    def make(self, backend: str, device: str) -> AttentionKernel:
        offered = self.backends(device)
        if backend not in offered:
            raise UnknownBackend(self.name, backend, offered, device)
        if backend == FLEX:
            return FlexKernel(device)
        return SdpaKernel(backend, device)

    def versions(self) -> dict[str, str]:
        return _env.library_versions()


TARGET = TorchTarget()
