"""The set-up of smoothed-aggregation multigrid, on the host (`multigrid.py` runs the cycles).

For a symmetric positive definite matrix A (SciPy CSR), level by level until a level has few
rows: rows are grouped into *aggregates* (each a row and its strongly coupled neighbours:
``|a_ij| >= theta * sqrt(|a_ii a_jj|)``) by the standard three passes, compiled; the tentative
prolongator T injects the constant vector of each aggregate (the near-null space of a
Laplacian: columns of ones, normalised); the prolongator is T smoothed by one damped Jacobi
step, ``P = (I - omega D^-1 A) T`` with ``omega = 4 / (3 rho)``, rho Gershgorin's bound of
the spectral radius of D^-1 A (the smoother's weight too); the next level's
matrix is ``P^T A P``. Rows with no strong neighbour (a Dirichlet row after elimination) are in
no aggregate: the smoother alone takes care of them.

Everything here is deterministic: the passes visit rows in order, the spectral bound is a
maximum over rows, and SciPy's sparse products add in
a fixed order; so every process, rank and target builds the same hierarchy.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..compiled import njit


@dataclass
class Level:
    A: object  # SciPy CSR, this level's matrix
    P: object = None  # SciPy CSR, from the next level to this one (None on the coarsest)
    rho: float = 1.0  # Gershgorin's bound of the spectral radius of D^-1 A
    omega: float = 0.0  # the Jacobi smoother's weight on this level: 4 / (3 rho)


def hierarchy(A, max_coarse: int = 300, max_levels: int = 10, theta: float = 0.0) -> list:
    """The levels of A (SciPy CSR, SPD), finest first."""
    import scipy.sparse as sp
    levels = [Level(sp.csr_matrix(A, dtype=np.float64))]
    while levels[-1].A.shape[0] > max_coarse and len(levels) < max_levels:
        lev = levels[-1]
        M = lev.A
        d = M.diagonal()
        agg = aggregates(M.indptr, M.indices, M.data, d, theta)
        count = int(agg.max()) + 1 if agg.size and agg.max() >= 0 else 0
        if count == 0 or count >= M.shape[0]:
            break  # nothing coarsens further
        T = tentative(agg, count)
        lev.rho = spectral_radius(M, d)
        lev.omega = 4.0 / (3.0 * lev.rho)
        Dinv = sp.diags(np.where(d != 0.0, 1.0 / np.where(d != 0.0, d, 1.0), 0.0))
        P = (T - lev.omega * (Dinv @ (M @ T))).tocsr()
        P.sort_indices()
        lev.P = P
        Ac = (P.T @ M @ P).tocsr()
        Ac.sort_indices()
        levels.append(Level(Ac))
    last = levels[-1]
    last.rho = spectral_radius(last.A, last.A.diagonal())
    last.omega = 4.0 / (3.0 * last.rho)
    return levels


def tentative(agg: np.ndarray, count: int):
    """T: row i has 1 / sqrt(size of its aggregate) in column agg[i] (none if agg[i] < 0)."""
    import scipy.sparse as sp
    rows = np.flatnonzero(agg >= 0)
    cols = agg[rows]
    size = np.bincount(cols, minlength=count).astype(np.float64)
    return sp.csr_matrix((1.0 / np.sqrt(size[cols]), (rows, cols)), shape=(len(agg), count))


def spectral_radius(M, d) -> float:
    """An upper bound of the largest eigenvalue of D^-1 M: Gershgorin's, the largest of
    sum_j |m_ij| / |m_ii| over the rows (for a Laplacian, about 2: Jacobi's weight 2/3). A
    bound, not an estimate: an estimate from below (power iterations converge slowly on a
    million rows) makes the smoother diverge on the highest frequencies and the V-cycle
    indefinite, which cg cannot use."""
    absrow = np.asarray(abs(M).sum(axis=1)).ravel()
    ad = np.abs(d)
    ratio = np.where(ad > 0.0, absrow / np.where(ad > 0.0, ad, 1.0), 0.0)
    return float(max(ratio.max(), 1.0)) if len(ratio) else 1.0


@njit(cache=True)
def aggregates(indptr, indices, data, diag, theta):
    """Each row's aggregate (-1: none), by standard aggregation's three passes over the rows
    in order: (1) a row whose strong neighbours are all free starts an aggregate with them;
    (2) a free row joins the aggregate of a strong neighbour aggregated in pass 1; (3) a still
    free row starts an aggregate with its free strong neighbours."""
    n = len(indptr) - 1
    agg = np.full(n, -1, dtype=np.int64)
    count = 0
    for i in range(n):  # pass 1
        has, free = False, True
        for k in range(indptr[i], indptr[i + 1]):
            j = indices[k]
            if j != i and _strong(data[k], diag[i], diag[j], theta):
                has = True
                if agg[j] >= 0:
                    free = False
                    break
        if has and free and agg[i] < 0:
            agg[i] = count
            for k in range(indptr[i], indptr[i + 1]):
                j = indices[k]
                if j != i and _strong(data[k], diag[i], diag[j], theta):
                    agg[j] = count
            count += 1
    first = agg.copy()
    for i in range(n):  # pass 2
        if agg[i] < 0:
            for k in range(indptr[i], indptr[i + 1]):
                j = indices[k]
                if j != i and first[j] >= 0 and _strong(data[k], diag[i], diag[j], theta):
                    agg[i] = first[j]
                    break
    for i in range(n):  # pass 3
        if agg[i] < 0:
            has = False
            for k in range(indptr[i], indptr[i + 1]):
                j = indices[k]
                if j != i and _strong(data[k], diag[i], diag[j], theta):
                    has = True
            if has:
                agg[i] = count
                for k in range(indptr[i], indptr[i + 1]):
                    j = indices[k]
                    if j != i and agg[j] < 0 and _strong(data[k], diag[i], diag[j], theta):
                        agg[j] = count
                count += 1
    return agg


@njit(cache=True)
def _strong(a, di, dj, theta):
    return a != 0.0 and abs(a) >= theta * np.sqrt(abs(di * dj))
