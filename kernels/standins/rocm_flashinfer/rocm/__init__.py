"""Stand-in for the ROCm fork's `flashinfer.rocm` package, built from rocm_fork.md.

A CPU stand-in, never the library. Submodules, at the fork's paths (rocm_fork.md section 1 names
the APIs; sections 2-4 the behaviour): arch_caps (section 3), prefill (sections 1, 2, 4),
decode (sections 1, 4), aiter_utils (section 4, probe failures); reason_text holds the texts.
"""

from __future__ import annotations

__attncheck_standin__ = "flashinfer-rocm-fork"
