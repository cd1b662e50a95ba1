"""`relsim bench NAME` for the gallery: the peers (Warp, Taichi, hand-written Numba) live in
bench/peers/ of a clone of the repository, next to this package's folder."""
from __future__ import annotations

import importlib.util
from pathlib import Path


def run_peer_bench(script: str, name: str, argv=None) -> int:
    """Run bench/peers/`script`'s main(argv)."""
    path = Path(__file__).resolve().parents[1] / "bench" / "peers" / script
    if not path.is_file():
        raise SystemExit(f"relsim bench {name}: the peers live in bench/peers/ of a clone of "
                         f"the repository (not found: {path}); run it from a clone installed "
                         f"with pip install -e .[bench]")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.main(argv)
