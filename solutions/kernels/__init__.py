"""Reference (speed-of-light) CUDA kernels for the course: sources + dispatcher."""
