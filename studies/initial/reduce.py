"""gamma'(0): the closed form, the scalar ODE and the n-particle system, every scheme."""
import numpy as np
import pandas as pd

import nadyn
from nadyn.study import run_parameters

TITLE = "Initial velocity gamma'(0), symmetric orthogonal start"
TABLE_BETA = 5.0
SCIENTIFIC = ".12e"
FORMATS = {"closed_form": SCIENTIFIC, "reduced": SCIENTIFIC, "particles": SCIENTIFIC,
           "rel_error_reduced": ".3e", "rel_error_particles": ".3e", "beta": "g"}
NOTE = """\
`closed_form`: docs/model.md §3.4 (the library's `initial_velocity_closed_form`, compiled);
`reduced`: the scalar ODE's right-hand side at t = 0 (`nadyn reduced`); `particles`: the
velocity observable of the n-particle run at its first frame (the sweep); relative errors
against the closed form. `initial_velocity_beta.csv` has the closed form and the particles
at every beta of the sweep (figure 3).
"""


def table_beta(betas):
    """The table's beta: 5 when the sweep has it, else the sweep's only beta."""
    if np.any(betas == TABLE_BETA):
        return TABLE_BETA
    if betas.size == 1:
        return float(betas[0])
    raise ValueError(f"the initial-velocity table is at beta = {TABLE_BETA:g}: add it to "
                     "sweep.beta, or sweep a single beta")


def closed_form(scheme, p, beta):
    return nadyn._core.closed_forms.initial_velocity(
        scheme, float(p["n"]), float(beta), r0=float(p["r0"]), alpha=float(p["alpha"]),
        t_switch=float(p["t_switch"]))


def reduced(scheme, p, beta):
    ode = nadyn.reduced(scheme, float(p["n"]), float(beta), r0=float(p["r0"]),
                        alpha=float(p["alpha"]), t_switch=float(p["t_switch"]), times=[0.0])
    return float(ode["velocity"][0])


def reduce(data):
    if not (data.status == 1).all():
        raise ValueError("the initial-velocity sweep has runs that did not complete")
    particles = data.velocity.isel(time=0)
    beta = table_beta(data.beta.values)
    rows, points = [], []
    for scheme in data.scheme.values:
        p = run_parameters(data, scheme=scheme, beta=beta)
        closed = closed_form(scheme, p, beta)
        ode = reduced(scheme, p, beta)
        moved = float(particles.sel(scheme=scheme, beta=beta))
        rows.append({"scheme": scheme, "closed_form": closed, "reduced": ode, "particles": moved,
                     "rel_error_reduced": abs(ode - closed) / abs(closed),
                     "rel_error_particles": abs(moved - closed) / abs(closed)})
        for b in data.beta.values:
            q = run_parameters(data, scheme=scheme, beta=b)
            points.append({"scheme": scheme, "beta": float(b), "closed_form": closed_form(scheme, q, b),
                           "particles": float(particles.sel(scheme=scheme, beta=b))})
    return {"initial_velocity": pd.DataFrame(rows), "initial_velocity_beta": pd.DataFrame(points)}
