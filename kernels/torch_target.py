"""The `torch` target: SDPA's backends, SDPA's own choice ("auto") and FlexAttention, called per
request (batch 1) and batched (B > 1: padded, nested/jagged, FlexAttention on a padded batch).

    TARGET.backends("cpu")  == ("math", "flash", "auto", "flex",
                                "padded-math", "padded-flash", "padded-auto", "nested-math", "nested-auto",
                                "flex-padded")
    TARGET.backends("cuda") == ("math", "flash", "efficient", "cudnn", "auto", "flex", "padded-math", ...)
    TARGET.make("flash", "cpu") -> SdpaKernel;  TARGET.make("flex", "cuda") -> FlexKernel
    TARGET.make("padded-auto", "cpu") -> PaddedSdpaKernel;  "nested-*" -> NestedSdpaKernel;
    TARGET.make("flex-padded", "cpu") -> FlexPaddedKernel

The per-request adapters live in kernels/torch_sdpa.py and kernels/torch_flex.py, the batched ones
in kernels/torch_padded.py, kernels/torch_nested.py and kernels/torch_flex_padded.py; this module
only names them, so `kernels.get_target("torch")` stays cheap.
"""

from __future__ import annotations

from kernels import _env, skips
from kernels.errors import UnknownBackend
from kernels.protocol import AttentionKernel, Support
from kernels.torch_flex import BACKEND as FLEX
from kernels.torch_flex import FlexKernel
from kernels.torch_flex_padded import BACKEND as FLEX_PADDED
from kernels.torch_flex_padded import FlexPaddedKernel
from kernels.torch_nested import NestedSdpaKernel
from kernels.torch_nested import backends_for as nested_backends_for
from kernels.torch_padded import PaddedSdpaKernel
from kernels.torch_padded import backends_for as padded_backends_for
from kernels.torch_sdpa import SdpaKernel, backends_for


def per_request_backends(device: str) -> tuple[str, ...]:
    """The backends that call torch with batch 1, one request at a time (SDPA's and flex)."""
    sdpa = backends_for(device)
    return sdpa + (FLEX,) if sdpa else ()


def batched_backends(device: str) -> tuple[str, ...]:
    """The backends that call torch once for the whole batch, B > 1."""
    padded = padded_backends_for(device)
    return padded + nested_backends_for(device) + (FLEX_PADDED,) if padded else ()


class TorchTarget:
    name = "torch"

    def backends(self, device: str) -> tuple[str, ...]:
        return per_request_backends(device) + batched_backends(device)

    def backend_groups(self, device: str) -> tuple[tuple[str, ...], ...]:
        """The per-request and the batched backends: they serve different batches (the batched from
        B = 2), so a slice of the matrix that every backend must run picks a case per group."""
        return tuple(g for g in (per_request_backends(device), batched_backends(device)) if g)

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
        if backend == FLEX_PADDED:
            return FlexPaddedKernel(device)
        if backend in padded_backends_for(device):
            return PaddedSdpaKernel(backend, device)
        if backend in nested_backends_for(device):
            return NestedSdpaKernel(backend, device)
        return SdpaKernel(backend, device)

    def versions(self) -> dict[str, str]:
        return _env.library_versions()


TARGET = TorchTarget()
