"""CPU stand-ins for attention libraries that cannot be imported here, and how to recognise one.

A stand-in reproduces a library's documented API surface (names, signatures, routing, reason
strings, errors) with plain-torch numerics, so the adapter's code paths for that library run on
a CPU. Its results say the adapter hands the library the right problem and reads back what the
library reports; they say nothing about the library's kernels. So a stand-in is always labelled:
every one of its modules carries `__attncheck_standin__` (its name, read by
kernels/standin_label.py), `kernels.flashinfer.lib` reports it in LibFacts and in the target's
versions ("stand-in: <name>"), and a run whose header names a stand-in is never counted as a
conformance result (conformance/parity_run.py).

    rocm_flashinfer/   the ROCm FlashInfer fork (AMD-Ecosystem/flashinfer) as module tree
    rocm_fork.py       install() / installed(): point `import flashinfer` at it, patch its probes
"""
