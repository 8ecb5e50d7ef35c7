"""Terminal velocity: the predicted decay law fitted on the scalar ODE and on particle runs."""
import numpy as np
import pandas as pd

import nadyn
from nadyn.study import run_parameters

TITLE = "Terminal velocity gamma'(t) for large t: the predicted law, fitted"


def paper_schemes():
    """The paper's six schemes, in the order of its table (the library's list)."""
    return [s["name"] for s in nadyn._core.schemes() if s["in_paper_tables"]]


# The scalar ODE of the symmetric start (docs/model.md §3.3) at the initial table's setting.
N_REDUCED, BETA_REDUCED, RTOL_REDUCED = 256.0, 5.0, 1e-12
FORMATS = {"theory": "g", "fit_reduced": ".6f", "fit_particles": ".6f",
           "window_start": ".6g", "window_end": ".6g"}
TABLE_FORMATS = {
    "data/terminal_series": {"t": ".10g", "velocity": ".17g", "gap": ".17g"},
    "data/terminal_fits": {"parameter": ".10g", "log_prefactor": ".10g",
                           "window_start": ".10g", "window_end": ".10g"},
}
NOTE = """\
`fit_reduced`, `fit_particles`: the predicted law's parameter (a, p or c) fitted by least
squares on log gamma' over the window; the window columns are the scalar ODE's (the
particles' windows and every fit are in `data/terminal_fits.csv`). The scalar ODE: symmetric
start, n = 256, beta = 5, integrated in the gap u = 1 - gamma (so it follows u below
1e-250). The particles: n = 32, d = 3, beta = 1, a cap of radius 0.5, seed 1, rk4 with fixed
steps per law (the experiments). The window starts where the tokens are near one cluster
(gap < 1e-3) and past a twentieth of its end, and ends where the gap reaches round-off
(1e-280 for the ODE, 1e-18 for the particles, whose directions are O(1) doubles). `best`:
the law of smallest residual when all three are fitted on the same window.
"""


def reduced_times(law):
    """Horizons where each law has fallen far (the gap is the ODE's state, so 1e-250 is fine)."""
    samples = 600
    if law == "exponential":
        return [300.0 * i / samples for i in range(samples + 1)]
    if law == "stretched":
        roots = [1.0 + 149.0 * i / samples for i in range(samples + 1)]  # sqrt(t + 1): 1 to 150
        return [0.0 if i == 0 else r * r - 1.0 for i, r in enumerate(roots)]
    return [0.0] + [10.0 ** (-2.0 + 7.0 * i / samples) for i in range(samples + 1)]


def reduce(data):
    fits = nadyn._core.fits
    rows, series, fitted = [], [], []
    for scheme in paper_schemes():
        law, theory = fits.predicted(scheme)
        runs = data[law]
        if not (runs.status == 1).all():
            raise ValueError(f"the {law} experiment has runs that did not complete")
        p = run_parameters(runs, scheme=scheme)
        ode = nadyn.reduced(scheme, N_REDUCED, BETA_REDUCED, r0=float(p["r0"]),
                            alpha=float(p["alpha"]), t_switch=float(p["t_switch"]),
                            times=reduced_times(law), rtol=RTOL_REDUCED)
        run = runs.sel(scheme=scheme)
        sources = {
            "reduced": (ode["t"], ode["velocity"], ode["gap"], 1e-280, 1e-280),
            # The particles' gap is a mean of squared differences of O(1) coordinates,
            # accurate while the differences (~ sqrt gap) stay far above 1e-16.
            "particles": (run.time.values, run.velocity.values, run.gap.values, 1e-300, 1e-18),
        }
        result = {}
        for source, (t, v, gap, v_floor, gap_floor) in sources.items():
            t, v, gap = (np.asarray(a, dtype=float) for a in (t, v, gap))
            window = fits.choose_window(t, v, gap, v_floor, gap_floor)
            if window is None:
                raise ValueError(f"no fit window for {scheme} ({source})")
            fit = fits.fit_law(law, t, v, *window)
            best = fits.rank_laws(t, v, *window)[0]["law"]
            result[source] = (window, fit, best)
            series += [{"scheme": scheme, "source": source, "t": ti, "velocity": vi, "gap": gi}
                       for ti, vi, gi in zip(t, v, gap)]
            fitted.append({"scheme": scheme, "source": source, "law": law,
                           "parameter": fit["parameter"], "log_prefactor": fit["log_prefactor"],
                           "window_start": window[0], "window_end": window[1]})
        (window, reduced_fit, best_reduced) = result["reduced"]
        (_, particles_fit, best_particles) = result["particles"]
        rows.append({"scheme": scheme, "law": law, "theory": theory,
                     "fit_reduced": reduced_fit["parameter"],
                     "fit_particles": particles_fit["parameter"],
                     "window_start": window[0], "window_end": window[1],
                     "best_reduced": best_reduced, "best_particles": best_particles})
    table = pd.DataFrame(rows)
    return {"terminal_velocity": table,
            "data/terminal_series": pd.DataFrame(series),
            "data/terminal_fits": pd.DataFrame(fitted)}
