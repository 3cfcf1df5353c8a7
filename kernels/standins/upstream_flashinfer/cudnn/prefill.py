"""flashinfer.cudnn.prefill of the upstream model (a CPU stand-in): whether cuDNN prefill is there."""

__attncheck_standin__ = "flashinfer-upstream"

CUDNN_AVAILABLE = False  # install(cudnn=True) patches it
