"""The FlashInfer target: the adapter over its wrappers (CUDA, and the ROCm fork by the same API),
the library facade, what each backend supports, its matrix, and the JIT prebuild (docs/flashinfer-adapter.md)."""
