"""The one launch helper of the runtime test suites (imported by conftest and the test files)."""
import numpy as np

import kernels


def launch(src, name, grid, block, args, shared_mem=0, name_expressions=None, options=()):
    """Compile `src`, launch `name` with numpy inputs and return all arguments as
    numpy (arrays copied back from the device)."""
    mod = kernels.RawModule(code=src, options=tuple(options), name_expressions=list(name_expressions or []))
    fn = mod.get_function(name)
    dev = [kernels.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
    fn(grid, block, tuple(dev), shared_mem=shared_mem)
    kernels.synchronize()
    return [kernels.asnumpy(d) if isinstance(a, np.ndarray) else a for a, d in zip(args, dev)]
