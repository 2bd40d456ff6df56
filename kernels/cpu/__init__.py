"""CPU emulator backend of the kernels runtime (fibers with CUDA semantics)."""
from .module import CpuFunction, CpuModule
from .build import clear_cache, cache_dir

__all__ = ["CpuModule", "CpuFunction", "clear_cache", "cache_dir"]
