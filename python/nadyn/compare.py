"""Distances between a particle run and a density run: how far n tokens are from their
mean-field limit.

    ds = nadyn.simulate(n=4096, d=2, beta=5, init="perturbed:3,0.1", T=2).to_xarray()
    rho = nadyn.meanfield(beta=5, points=256, init="perturbed:3,0.1", T=2)
    nadyn.compare(ds, rho)     # W1 on the circle at every common frame time

The metric follows the density file's geometry (its attribute ``geometry``):

circle  the exact Wasserstein-1 distance on S^1 with the arc-length metric,
        W1(mu, nu) = min_c integral_0^{2 pi} |F_mu(s) - F_nu(s) - c| ds (Rabin, Delon and
        Gousseau 2011; Cabrelli and Molter 1995), c the median of F_mu - F_nu.
sphere  the sliced W1: the mean over `directions` unit vectors u of the 1-D W1 between the
        laws of <x, u> under the two measures (u drawn uniformly from the seed).
zonal   the 1-D W1 between the laws of x_{d-1}: only the zonal marginal is compared (a zonal
        density is a function of x_{d-1} alone; the particles' other coordinates are ignored).

The density's CDFs are those of its band-limited interpolant, integrated in closed form:
the trigonometric interpolant of the circle's equispaced values (its Fourier series
integrates term by term), the Legendre series of S^2 projected on u (Funk-Hecke:
rho_u(t) = sum_l f_l(u) P_l(t), f_l(u) = (2l+1) sum_i w_i rho_i P_l(<x_i, u>), exact for the
Gauss grid), and the Gegenbauer series of a zonal density in x_{d-1}. Those CDFs are exact at
the points of a fine grid (`grid` points) and linear between them; |F_mu - F_nu - c| is
integrated exactly for that piecewise-linear CDF and the particles' step CDF, so the error
is at most L h^2 max|rho'| / 8 (h the grid spacing, L the length of the domain).
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np
import xarray as xr
from scipy import special

__all__ = ["compare", "circle_w1", "TIME_TOLERANCE"]

# Particle and density frames are matched when their times differ by at most this.
TIME_TOLERANCE = 1e-9
TWO_PI = 2.0 * math.pi


# ---- the L1 distance of a piecewise-linear function to a constant ----------------------------

def _cell_l1(a: np.ndarray, b: np.ndarray, length: np.ndarray, c: float) -> float:
    """sum over cells of integral |g - c|, g linear on each cell from a to b."""
    a, b = a - c, b - c
    same_side = a * b >= 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        crossing = length * (a * a + b * b) / (2.0 * np.abs(b - a))
    return float(np.sum(np.where(same_side, length * np.abs(a + b) / 2.0, crossing)))


def _median(a: np.ndarray, b: np.ndarray, length: np.ndarray) -> float:
    """A median of g under the length measure (g linear from a to b on each cell): the c with
    |{g < c}| <= L/2 <= |{g <= c}|, by bisection to the last bit."""
    low_end, high_end = np.minimum(a, b), np.maximum(a, b)
    span = high_end - low_end
    half = 0.5 * float(np.sum(length))
    flat = span == 0.0

    def below(c: float) -> float:  # |{g < c}|
        with np.errstate(divide="ignore", invalid="ignore"):
            fraction = np.where(flat, (low_end < c).astype(float), np.clip((c - low_end) / span, 0.0, 1.0))
        return float(np.sum(length * fraction))

    lo, hi = float(low_end.min()), float(high_end.max())
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            break
        if below(mid) < half:
            lo = mid
        else:
            hi = mid
    return hi


def _step_vs_linear(breaks: np.ndarray, values: np.ndarray, samples: np.ndarray, lower: float,
                    upper: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Cells of F_emp - F on [lower, upper]: F exact at `breaks` (sorted, from lower to upper)
    and linear between, F_emp the step CDF of `samples` (right-continuous). Returns the values
    at each cell's two ends (a, b) and the cells' lengths."""
    samples = np.sort(samples)
    x = np.union1d(breaks, np.clip(samples, lower, upper))
    F = np.interp(x, breaks, values)
    # F_emp on (x_i, x_{i+1}): the fraction of samples <= x_i.
    empirical = np.searchsorted(samples, x[:-1], side="right") / samples.size
    return empirical - F[:-1], empirical - F[1:], np.diff(x)


# ---- the circle ---------------------------------------------------------------------------

def circle_w1(a: Any, b: Any) -> float:
    """The exact W1 distance on the unit circle (arc-length metric) between the uniform
    measures on two finite sets of angles (radians, any range; equal weight per angle within
    each set; the sets may have different sizes): min_c integral |F_a - F_b - c|."""
    a = np.mod(np.asarray(a, dtype=float).ravel(), TWO_PI)
    b = np.mod(np.asarray(b, dtype=float).ravel(), TWO_PI)
    if a.size == 0 or b.size == 0:
        raise ValueError("circle_w1 needs at least one angle in each set")
    x = np.union1d(np.union1d(a, b), [0.0, TWO_PI])
    g = (np.searchsorted(np.sort(a), x[:-1], side="right") / a.size
         - np.searchsorted(np.sort(b), x[:-1], side="right") / b.size)
    length = np.diff(x)
    return _cell_l1(g, g, length, _median(g, g, length))


class _CircleCDF:
    """F(u) = (1/2 pi) integral_0^u rho(phi0 + s) ds of the trigonometric interpolant of
    rho on the N equispaced nodes phi0 + 2 pi j / N, exact on a grid of M = m N points."""

    def __init__(self, angles: np.ndarray, grid: int | None):
        order = np.argsort(angles)
        count = angles.size
        spacing = np.diff(np.concatenate([angles[order], [angles[order][0] + TWO_PI]]))
        if not np.allclose(spacing, TWO_PI / count, rtol=0, atol=1e-9):
            raise ValueError("the circle's nodes are not equispaced")
        self.order, self.count, self.phi0 = order, count, float(angles[order][0])
        refine = max(1, math.ceil((grid or max(8 * count, 1 << 15)) / count))
        self.size = refine * count
        self.u = np.linspace(0.0, TWO_PI, self.size + 1)

    def __call__(self, rho: np.ndarray) -> np.ndarray:
        N, M = self.count, self.size
        c = np.fft.fft(rho[self.order]) / N
        k = np.fft.fftfreq(N, 1.0 / N)  # 0, 1, .., N/2 - 1, -N/2, .., -1
        spectrum = np.zeros(M, dtype=complex)
        positive = (k > 0) & (k < N / 2)
        negative = k < 0
        if N % 2 == 0:
            # The Nyquist term c_{N/2} cos(N/2 u): half at +N/2 and half at -N/2.
            negative &= k > -N / 2
            nyquist = c[N // 2] / 2.0
            spectrum[N // 2] += nyquist / (1j * (N / 2))
            spectrum[M - N // 2] += nyquist / (-1j * (N / 2))
        spectrum[k[positive].astype(int)] = c[positive] / (1j * k[positive])
        spectrum[M + k[negative].astype(int)] = c[negative] / (1j * k[negative])
        periodic = np.real(np.fft.ifft(spectrum) * M)  # sum_{k != 0} c_k e^{iku} / (ik)
        periodic = np.concatenate([periodic, periodic[:1]])
        return (np.real(c[0]) * self.u + periodic - periodic[0]) / TWO_PI


def _circle_distances(angles: list[np.ndarray], rho: np.ndarray, density_angles: np.ndarray,
                      grid: int | None) -> np.ndarray:
    cdf = _CircleCDF(density_angles, grid)
    out = np.empty(len(angles))
    for i, (phi, values) in enumerate(zip(angles, rho)):
        F = cdf(values)
        # Masses renormalised to 1 (the solver keeps the mass at 1 to rounding).
        F = F / F[-1]
        u = np.mod(phi - cdf.phi0, TWO_PI)
        a, b, length = _step_vs_linear(cdf.u, F, u, 0.0, TWO_PI)
        out[i] = _cell_l1(a, b, length, _median(a, b, length))
    return out


# ---- series in Gegenbauer polynomials on [-1, 1] (the sphere's projections, zonal marginals) --

class _SeriesCDF:
    """CDFs on [-1, 1] of densities q(t) = c_lambda (1 - t^2)^(lambda - 1/2) sum_k a_k C_k(t),
    C_k the Gegenbauer polynomials C_k^lambda (Chebyshev T_k for lambda = 0), the weight
    normalised to a probability: the marginal of x_{d-1} on S^{d-1}, lambda = (d - 2)/2.
    The antiderivatives in closed form: integral_{-1}^t c (1-s^2)^(lambda-1/2) C_k^lambda(s) ds
    = -c (2 lambda / (k (k + 2 lambda))) (1 - t^2)^(lambda + 1/2) C_{k-1}^(lambda+1)(t),
    k >= 1; for k = 0 the regularised incomplete beta function."""

    def __init__(self, lam: float, degree: int, grid: int):
        self.lam, self.degree = lam, degree
        # Equispaced in the angle: fine where the weight (1-t^2)^(lambda-1/2) is steep.
        self.t = -np.cos(np.linspace(0.0, math.pi, grid + 1))
        self.t[0], self.t[-1] = -1.0, 1.0
        t = self.t
        rows = [special.betainc(lam + 0.5, lam + 0.5, (t + 1.0) / 2.0)]
        if lam == 0.0:
            theta = np.arccos(np.clip(t, -1.0, 1.0))
            rows += [-np.sin(k * theta) / (math.pi * k) for k in range(1, degree + 1)]
        else:
            c = math.exp(special.gammaln(lam + 1.0) - special.gammaln(lam + 0.5)) / math.sqrt(math.pi)
            power = (1.0 - t * t) ** (lam + 0.5)
            rows += [-c * (2.0 * lam / (k * (k + 2.0 * lam))) * power
                     * special.eval_gegenbauer(k - 1, lam + 1.0, t) for k in range(1, degree + 1)]
        self.antiderivatives = np.array(rows)  # (degree + 1, grid + 1)

    def polynomials(self, x: np.ndarray) -> np.ndarray:
        """C_0(x) .. C_degree(x), stacked on a first axis."""
        if self.lam == 0.0:
            return np.array([special.eval_chebyt(k, x) for k in range(self.degree + 1)])
        return np.array([special.eval_gegenbauer(k, self.lam, x) for k in range(self.degree + 1)])

    def __call__(self, coefficients: np.ndarray) -> np.ndarray:
        F = coefficients @ self.antiderivatives
        return F / F[..., -1:]


def _w1_1d(samples: np.ndarray, cdf_values: np.ndarray, breaks: np.ndarray) -> float:
    a, b, length = _step_vs_linear(breaks, cdf_values, samples, -1.0, 1.0)
    return _cell_l1(a, b, length, 0.0)


def _zonal_distances(cosines: list[np.ndarray], rho: np.ndarray, nodes: np.ndarray,
                     weights: np.ndarray, d: int, grid: int | None) -> np.ndarray:
    series = _SeriesCDF((d - 2) / 2.0, nodes.size - 1, grid or 1 << 14)
    C = series.polynomials(nodes)  # (K + 1, rings)
    norms = (C * C) @ weights  # h_k, exact: the rings are a Gauss rule of degree 2K + 1
    coefficients = (rho * weights) @ C.T / norms  # (frames, K + 1)
    F = series(coefficients)
    return np.array([_w1_1d(x, F[i], series.t) for i, x in enumerate(cosines)])


def _sphere_distances(frames: list[np.ndarray], rho: np.ndarray, nodes: np.ndarray,
                      weights: np.ndarray, degree: int, directions: np.ndarray,
                      grid: int | None) -> np.ndarray:
    series = _SeriesCDF(0.5, degree, grid or 1 << 13)
    cosines = np.clip(directions @ nodes.T, -1.0, 1.0)  # (M, points)
    weighted = rho * weights  # (frames, points)
    # f_l(u) = (2l+1) sum_i w_i rho_i P_l(<x_i, u>) by the three-term recurrence.
    coefficients = np.empty((rho.shape[0], directions.shape[0], degree + 1))
    previous, current = np.ones_like(cosines), cosines.copy()
    coefficients[:, :, 0] = weighted @ previous.T
    if degree >= 1:
        coefficients[:, :, 1] = 3.0 * (weighted @ current.T)
    for l in range(1, degree):
        previous, current = current, ((2 * l + 1) * cosines * current - l * previous) / (l + 1)
        coefficients[:, :, l + 1] = (2 * l + 3) * (weighted @ current.T)
    out = np.empty(len(frames))
    for i, theta in enumerate(frames):
        F = series(coefficients[i])
        projections = theta @ directions.T  # (n, M)
        out[i] = np.mean([_w1_1d(projections[:, j], F[j], series.t)
                          for j in range(directions.shape[0])])
    return out


# ---- compare --------------------------------------------------------------------------------

def _particle_frames(particles: Any, times: Any) -> tuple[np.ndarray | None, np.ndarray]:
    """(times or None for one frame valid at every time, positions (frames, n, d))."""
    if isinstance(particles, xr.Dataset):
        if "theta" not in particles:
            raise ValueError("compare needs the particles' positions (theta); this dataset has "
                             "none (written with --positions none?)")
        return np.asarray(particles["time"].values, dtype=float), np.asarray(particles["theta"].values)
    if hasattr(particles, "ys") and hasattr(particles, "ts"):  # a nadyn.Trajectory
        if particles.ys is None:
            raise ValueError("compare needs the particles' positions; this run kept none")
        return np.asarray(particles.ts, dtype=float), np.asarray(particles.ys)
    theta = np.asarray(particles, dtype=float)
    if theta.ndim == 2:
        return (None if times is None else np.atleast_1d(np.asarray(times, dtype=float)),
                theta[None] if times is None else np.broadcast_to(theta, (np.size(times),) + theta.shape))
    if theta.ndim == 3:
        if times is None or np.size(times) != theta.shape[0]:
            raise ValueError("compare: an array of frames (frames, n, d) needs `times`, one per frame")
        return np.asarray(times, dtype=float).ravel(), theta
    raise ValueError(f"compare: particles must be (n, d) or (frames, n, d), got shape {theta.shape}")


def _directions(directions: Any, seed: int) -> np.ndarray:
    if isinstance(directions, numbers.Integral):
        if directions < 1:
            raise ValueError("compare: directions must be >= 1")
        u = np.random.default_rng(seed).standard_normal((int(directions), 3))
    else:
        u = np.asarray(directions, dtype=float).reshape(-1, 3)
    return u / np.linalg.norm(u, axis=1, keepdims=True)


def compare(particles: Any, density: xr.Dataset, *, times: Any = None, directions: Any = 64,
            seed: int = 0, grid: int | None = None) -> xr.DataArray:
    """The distance between the particles' empirical measure and the density at every frame
    time the two share (to TIME_TOLERANCE = 1e-9; nothing is interpolated in time).

    particles   a particle Dataset (nadyn.open, Trajectory.to_xarray(): theta on time, token,
                dim), a nadyn.Trajectory, or an array: (n, d) for one configuration compared
                with every density frame (or at `times`), (frames, n, d) with `times`
    density     a density Dataset (nadyn.open of a `nadyn meanfield` file, nadyn.meanfield)
    directions  sphere only: the number of random directions of the sliced W1 (drawn
                uniformly on S^2 with numpy's default_rng(seed)), or an (M, 3) array of them
    grid        points of the fine grid on which the density's CDF is exact (default: 8 per
                node and at least 2^15 on the circle, 2^13 for the sphere's projections, 2^14
                for zonal marginals)

    Returns an xarray.DataArray on ``time`` (the density's times that have a particle frame):
    ``w1`` (circle: the exact W1 on S^1 with the arc-length metric; zonal: the W1 of the laws
    of x_{d-1}, which compares only the zonal marginal) or ``sliced_w1`` (sphere: the mean over
    the directions u of the W1 of the laws of <x, u>). Its attrs say which (``metric``), with
    the particle count, the geometry and, for the sphere, the directions' count and seed.

    The density's CDFs are those of its band-limited interpolant integrated in closed form
    (circle: the trigonometric interpolant of the equispaced values, its Fourier series
    integrated term by term; S^2: the Legendre series of the projection on u by Funk-Hecke;
    zonal: the Gegenbauer series in x_{d-1}), exact at the `grid` points and linear between;
    the integrals of |F_mu - F_nu - c| are then exact, so the error is at most
    L h^2 max|rho'| / 8 (h the grid spacing, L = 2 pi or 2). The circle's c is the median of
    F_mu - F_nu (bisection to the last bit).
    """
    if not isinstance(density, xr.Dataset) or "density" not in density:
        raise ValueError("compare: `density` must be a density Dataset (nadyn.open of a "
                         "density file, or nadyn.meanfield), with its `density` variable")
    geometry = density.attrs.get("geometry")
    nodes = np.asarray(density["points"].values, dtype=float)
    weights = np.asarray(density["weights"].values, dtype=float)
    d = nodes.shape[1]
    particle_times, theta = _particle_frames(particles, times)
    if theta.shape[-1] != d:
        raise ValueError(f"compare: the particles live in R^{theta.shape[-1]}, the density on "
                         f"S^{d - 1}")
    density_times = np.asarray(density["time"].values, dtype=float)
    if particle_times is None:
        pairs = [(j, 0) for j in range(density_times.size)]
    else:
        pairs = []
        for j, t in enumerate(density_times):
            gaps = np.abs(particle_times - t)
            if gaps.size and gaps.min() <= TIME_TOLERANCE:
                pairs.append((j, int(np.argmin(gaps))))
        if not pairs:
            raise ValueError("compare: the particles and the density share no frame time "
                             f"(to {TIME_TOLERANCE:g})")
    rho = np.asarray(density["density"].values, dtype=float)[[j for j, _ in pairs]]
    frames = [theta[i] for _, i in pairs]
    n = theta.shape[1]
    attrs: dict[str, Any] = {"geometry": geometry, "particles": int(n)}
    if geometry == "circle":
        angles = [np.mod(np.arctan2(x[:, 1], x[:, 0]), TWO_PI) for x in frames]
        node_angles = np.mod(np.arctan2(nodes[:, 1], nodes[:, 0]), TWO_PI)
        values = _circle_distances(angles, rho, node_angles, grid)
        name = "w1"
        attrs["metric"] = ("exact W1 on the circle, arc-length metric: min_c integral |F_mu - "
                           "F_nu - c| ds, the density's CDF from its trigonometric interpolant")
    elif geometry == "sphere":
        u = _directions(directions, seed)
        degree = int(density.attrs.get("degree", 0)) or int(round(math.sqrt(nodes.shape[0] / 2) - 1))
        values = _sphere_distances(frames, rho, nodes, weights, degree, u, grid)
        name = "sliced_w1"
        attrs["metric"] = ("sliced W1 on S^2: mean over unit vectors u of the 1-D W1 between the "
                           "laws of <x, u>, the density's from its Legendre series (Funk-Hecke)")
        attrs["directions"] = int(u.shape[0])
        attrs["seed"] = int(seed) if isinstance(directions, numbers.Integral) else "given"
    elif geometry == "zonal":
        cosines = [x[:, d - 1] for x in frames]
        values = _zonal_distances(cosines, rho, nodes[:, d - 1], weights, d, grid)
        name = "w1"
        attrs["metric"] = ("W1 of the laws of x_{d-1} only (the zonal marginal), the density's "
                           "from its Gegenbauer series")
    else:
        raise ValueError(f"compare: unknown density geometry {geometry!r} (circle, sphere, zonal)")
    time = density_times[[j for j, _ in pairs]]
    return xr.DataArray(values, dims=("time",), coords={"time": time}, name=name, attrs=attrs)
