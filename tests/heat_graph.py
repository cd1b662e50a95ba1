"""The heat-on-a-graph program many tests run: vertices V with a temperature T and a flux, edges
E with key fields head and tail into V. `conduct` (over E) reduces each edge's difference of T
into its two vertices' flux through the keys; `update` (over V) moves T by rate * flux, clears
flux and, given a Global `heat`, sums T into it. With a conductance per edge (E.k, `weighted`)
and the rate a Global dt, these are the kernels of README.md's first simulation.

Kernels must live in a file (relsim parses their source), so they are defined here, in
factories: each call makes new kernel objects (with their own compiled plans), capturing its
arguments. The subprocess scripts of tests/runtime/test_jit.py and test_determinism.py import
this module too (with the repository on PYTHONPATH): it imports nothing but NumPy and relsim.
"""
from __future__ import annotations

import numpy as np

import relsim as rs


def chain_topology(n=6):
    """A 1-D chain of relations only: vertices 0..n-1, edges (i, i+1) with head = i+1, tail = i
    (tests/conftest.py's chain_mesh)."""
    V, E = rs.Relation("V", n), rs.Relation("E", n - 1)
    E.new_key_field("head", V).load(np.arange(1, n))
    E.new_key_field("tail", V).load(np.arange(0, n - 1))
    return V, E


def chain(n=6, *, T=0.0, k=None, dtype=rs.f64):
    """`chain_topology(n)` with T (one value or one per vertex) and flux = 0 of `dtype`, and, if
    k is given (one value or one per edge), the f64 conductance E.k."""
    return _fields(*chain_topology(n), T, k, dtype)


def random_graph(nv, ne, seed=7, *, k=None):
    """nv vertices, ne edges whose ends are drawn at random (head, then tail, from one generator
    seeded `seed`), T standard normal (drawn next), flux = 0 and, with k=(lo, hi), conductances
    drawn uniform in [lo, hi)."""
    rng = np.random.default_rng(seed)
    V, E = rs.Relation("V", nv), rs.Relation("E", ne)
    E.new_key_field("head", V).load(rng.integers(0, nv, ne))
    E.new_key_field("tail", V).load(rng.integers(0, nv, ne))
    T = rng.standard_normal(nv)
    return _fields(V, E, T, None if k is None else rng.uniform(*k, ne), rs.f64)


def _fields(V, E, T, k, dtype):
    V.new_field("T", dtype, init=T)
    V.new_field("flux", dtype)
    if k is not None:
        E.new_field("k", rs.f64, init=k)
    return V, E


def kernels(rate=0.1, heat=None, *, weighted=False):
    """(conduct, update), new kernel objects: see conduct_kernel and update_kernel."""
    return conduct_kernel(weighted), update_kernel(rate, heat)


def conduct_kernel(weighted=False):
    """Over E: d = head.T - tail.T (times E.k if `weighted`), added to the tail's flux and taken
    from the head's."""
    if weighted:
        @rs.kernel
        def conduct(e):
            d = e.k * (e.head.T - e.tail.T)
            e.tail.flux += d
            e.head.flux -= d
    else:
        @rs.kernel
        def conduct(e):
            d = e.head.T - e.tail.T
            e.tail.flux += d
            e.head.flux -= d
    return conduct


def update_kernel(rate=0.1, heat=None):
    """Over V: T += rate * flux (`rate` a number, compiled in, or a Global, read at each launch),
    flux = 0, and, given a Global `heat`, heat += T."""
    if heat is None:
        @rs.kernel
        def update(v):
            v.T += rate * v.flux
            v.flux = 0.0
    else:
        @rs.kernel
        def update(v):
            v.T += rate * v.flux
            v.flux = 0.0
            heat += v.T
    return update


def step(V, E, conduct, update, config=None, heat=None, times=1):
    """`times` time steps: conduct over E, then update over V (with `config`, else the current
    one); a `heat` Global is set to 0 before each step, so it ends as that step's sum."""
    for _ in range(times):
        if heat is not None:
            heat.value = 0.0
        E.foreach(conduct, config)
        V.foreach(update, config)
