"""CPU stand-ins for attention libraries that cannot be imported here, and how to recognise one.

A stand-in reproduces a library's documented API surface (names, signatures, routing, reason
strings, errors) with plain-torch numerics, so the adapter's code paths for that library run on
a CPU. Its results say the adapter hands the library the right problem and reads back what the
library reports; they say nothing about the library's kernels. So a stand-in is always labelled:
every one of its modules carries `__attncheck_standin__` (its name, read by
kernels/standin_label.py), `kernels.flashinfer.lib` reports it in LibFacts and in the target's
versions ("stand-in: <name>"), and a run whose header names a stand-in is never counted as a
conformance result (conformance/parity_run.py).

    upstream_flashinfer/  upstream FlashInfer (0.7.2.post1) as module tree: the model the others build on
    upstream.py           install() / installed(): point `import flashinfer` at it (sm90, cudnn probes)
    rocm_flashinfer/      the ROCm FlashInfer fork (AMD-Ecosystem/flashinfer), layered on the upstream model
    rocm_fork.py          install() / installed(): point `import flashinfer` at it, patch its probes
    faults.py             the seed defects, each a patch of one seam of the fork (install(fault=NAME))
    _kernels.py, _launch.py, _install.py  the shared numerics, graph recorder, and install/undo
"""
