"""flashinfer.cudnn of the upstream model (a CPU stand-in)."""

__attncheck_standin__ = "flashinfer-upstream"
