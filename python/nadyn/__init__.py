"""nadyn from Python: read trajectory and sweep files as xarray Datasets, and plot them.

    import nadyn
    t = nadyn.simulate(scheme="pre-ln", n=32, T=10)   # compiled bindings: a Trajectory
    ds = nadyn.open("run.h5")          # xarray.Dataset: dims time, token, dim
    rho = nadyn.meanfield(beta=5, T=10)   # the density solver: dims time, point, dim
    nadyn.compare(ds, rho)             # W1 of the particles' empirical measure to the density
    ds.mean_cos.plot()
    import nadyn.plot
    nadyn.plot.sphere(ds, times=[0, 5, 20])

This part is pure Python (h5py, numpy, xarray, matplotlib). The compiled bindings, when
built, live in the submodule ``nadyn._core``; their functions are re-exported here, and
``nadyn.has_core`` says whether they are available.
"""

from . import closed_forms, clusters, laws
from .compare import compare
from .closed_forms import initial_velocity
from .io import frame_count, open

__all__ = ["open", "frame_count", "compare", "initial_velocity", "closed_forms", "clusters", "laws", "has_core"]
__version__ = "0.1.0"

import importlib as _importlib
import importlib.util as _importlib_util

# The compiled module is optional: files made on a cluster are readable without it.
_core = None
has_core = False
if _importlib_util.find_spec(__name__ + "._core") is not None:
    try:
        _core = _importlib.import_module(__name__ + "._core")
    except ImportError as _error:  # present but not loadable (e.g. built for another Python)
        import warnings as _warnings

        _warnings.warn(f"nadyn's compiled module is present but cannot be loaded ({_error}); "
                       "reading and plotting files still work", stacklevel=2)
    else:
        has_core = True
        try:  # the Python side of the bindings (a stand-in _core may lack what it needs)
            from .bindings import (NumericalFault, meanfield, parameters, reduced, resume_sweep, simulate,
                                   sweep, table)
            from .trajectory import Trajectory
            from .plateaus import plateaus
        except (ImportError, AttributeError):
            pass
        else:
            __all__ += ["simulate", "meanfield", "sweep", "resume_sweep", "reduced", "table", "parameters", "Trajectory",
                        "NumericalFault", "plateaus"]
        for _name in getattr(_core, "__all__", [n for n in dir(_core) if not n.startswith("_")]):
            if _name not in globals():
                globals()[_name] = getattr(_core, _name)
                __all__.append(_name)
