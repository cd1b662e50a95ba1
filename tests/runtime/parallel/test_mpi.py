"""The same programs under ``mpiexec -n 2`` and ``-n 3`` (oversubscribed on a small machine is
fine): every rank must print the one-process answer, bit for bit; a rank that fails must end
them all. Each program runs in fresh processes (`programs.py`), sharing the compile cache, so
several ranks compile the same kernels at once."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
PROGRAMS = Path(__file__).with_name("programs.py")
MPIEXEC = shutil.which("mpiexec", path=str(Path(sys.executable).parent)) or \
    shutil.which("mpiexec")

pytestmark = [pytest.mark.mpi,
              pytest.mark.skipif(MPIEXEC is None, reason='no mpiexec: pip install "relsim[mpi]"')]


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env.pop("PMI_SIZE", None)
    return env


_ONE_RUNS: dict = {}


def run_once(command):
    """`run(command, 1)`, made once per test session (for commands that write no files)."""
    key = tuple(command)
    if key not in _ONE_RUNS:
        _ONE_RUNS[key] = run(command, 1)
    return _ONE_RUNS[key]


def run(command, ranks: int, timeout: float = 240):
    """The completed process of `command` on `ranks` ranks (1: no launcher at all)."""
    cmd = list(command) if ranks == 1 else [MPIEXEC, "-n", str(ranks), *command]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=_env(),
                          cwd=ROOT)


def digests(name: str, target: str, ranks: int, tmp: Path) -> list:
    outdir = tmp / f"{name}-{target}-{ranks}"
    outdir.mkdir()
    p = run([sys.executable, str(PROGRAMS), name, target, str(outdir)], ranks)
    assert p.returncode == 0, p.stderr[-3000:]
    out = [json.loads(f.read_text()) for f in sorted(outdir.glob("*.json"))]
    assert sorted(d["rank"] for d in out) == list(range(ranks)), p.stderr[-2000:]
    return out


_ONE_PROCESS: dict = {}  # (program, target) -> its one-process digests, computed once


def same_as_one_process(name: str, target: str, ranks: int, tmp: Path, once=True,
                        one_target=None) -> None:
    """Every rank of `name` on `target` and `ranks` ranks gives the one-process digests (of
    `one_target`, default the same target)."""
    one_target = one_target or target
    if not once or (name, one_target) not in _ONE_PROCESS:
        (_ONE_PROCESS[name, one_target],) = digests(name, one_target, 1, tmp)
    one = _ONE_PROCESS[name, one_target]
    for d in digests(name, target, ranks, tmp):
        got = {k: v for k, v in d.items() if k not in ("rank", "size")}
        want = {k: v for k, v in one.items() if k not in ("rank", "size")}
        assert got == want, f"rank {d['rank']} of {ranks} differs from one process"


@pytest.mark.parametrize("ranks", [2, 3])
def test_the_design_sketchs_script(ranks, tmp_path):
    same_as_one_process("design", "cpu", ranks, tmp_path)


def test_the_cuda_target_on_2_ranks_gives_the_cpus_bits(tmp_path):
    """In numba's CUDA simulator (tests/conftest.py sets NUMBA_ENABLE_CUDASIM=1, which the
    ranks inherit): the cuda launches hand their Global slots and row changes to the layer."""
    same_as_one_process("heat", "cuda", 2, tmp_path, one_target="cpu")


def test_tiered_start_up_on_2_ranks(tmp_path):
    """rs.precompile(..., background=True) tiers every rank (each with its background worker,
    locked per function in the shared cache), then switches to the parallel variants."""
    same_as_one_process("tiered", "cpu", 2, tmp_path, once=False)


def test_ranks_waiting_for_a_first_launchs_compilation_sleep(tmp_path):
    """While rank 0 compiles a first launch the others wait in `World.waiting_barrier`, asleep:
    MPICH's Barrier spins a core the whole time (measured: 1.5 s of CPU for a 1.5 s wait)."""
    out = digests("waiting", "cpu", 2, tmp_path)
    assert all(d["cpu"] < 0.3 for d in out), out


@pytest.mark.parametrize("ranks", [2, 3])
def test_captured_steps_give_one_processs_bits(ranks, tmp_path):
    """rs.capture's replays: compiled segments on every rank (back on the host for each ghost
    exchange and Global merge), and compiled on rank 0 only while the others replay launch by
    launch (their collectives must match, or the ranks wait for each other for ever)."""
    same_as_one_process("captured", "cpu", ranks, tmp_path)


@pytest.mark.parametrize("ranks", [2, 3])
def test_launch_exchanges_through_mpi4py_or_the_compiled_helper_give_one_processs_bits(
        ranks, tmp_path):
    """A launch's ghost exchange through mpi4py while the compiled helper is not in the
    disk cache, through one call of it once it is: the same messages, the same bits."""
    same_as_one_process("launch_exchanges", "cpu", ranks, tmp_path)


@pytest.mark.parametrize("ranks", [2, 3])
def test_whole_launches_between_distributed_ones_give_one_processs_bits(ranks, tmp_path):
    """Config(distributed=False) launches read fields distributed launches wrote."""
    same_as_one_process("whole", "cpu", ranks, tmp_path)


@pytest.mark.parametrize("ranks", [2, 3])
def test_tape_gradients_give_one_processs_bits(ranks, tmp_path):
    """rs.Tape's gradients (adjoint reductions through keys into other ranks' rows, Global
    adjoints, checkpoints) are one process's bits on 2 and 3 ranks."""
    same_as_one_process("tape", "cpu", ranks, tmp_path)


@pytest.mark.parametrize("ranks", [2, 3])
def test_fields_the_host_holds_are_gathered_in_one_order_on_every_rank(ranks, tmp_path):
    """A kernel writing ten fields whose arrays the host holds: after each launch every rank
    gathers them in the kernel's order (a set's order, which differs between processes, swapped
    their values on some ranks, silently, about one run in eight with two such fields)."""
    same_as_one_process("exposed", "cpu", ranks, tmp_path)


@pytest.mark.parametrize("ranks", [2, 3])
def test_forward_mode_and_least_squares_give_one_processs_bits(ranks, tmp_path):
    """rs.Tangents' directional derivatives and relsim.optimize.least_squares' iterates are one
    process's bits on 2 and 3 ranks."""
    same_as_one_process("tangents", "cpu", ranks, tmp_path)


@pytest.mark.parametrize("ranks", [2, 3])
def test_krylov_solvers_give_one_processs_iterates(ranks, tmp_path):
    """relsim.linalg's CG, Jacobi-preconditioned CG and BiCGSTAB: the same residual histories
    and solutions, bit for bit, on 1, 2 and 3 ranks."""
    same_as_one_process("krylov", "cpu", ranks, tmp_path)


@pytest.mark.parametrize("ranks", [2, 3])
def test_reads_at_computed_grid_offsets_give_one_processs_bits(ranks, tmp_path):
    same_as_one_process("advection", "cpu", ranks, tmp_path)


@pytest.mark.parametrize("ranks", [2, 3])
def test_coloured_smoothers_give_one_processs_bits(ranks, tmp_path):
    same_as_one_process("coloured", "cpu", ranks, tmp_path)


@pytest.mark.parametrize("target", ["cpu", "interp"])
def test_print_in_kernels_writes_one_processs_text(target, tmp_path):
    """Rank 0 writes every rank's lines in row order: stdout is one process's, line for line
    (not only as a set), on 2 and 3 ranks."""
    texts = {}
    for ranks in (1, 2, 3):
        outdir = tmp_path / f"printing-{ranks}"
        outdir.mkdir()
        p = run([sys.executable, str(PROGRAMS), "printing", target, str(outdir)], ranks)
        assert p.returncode == 0, p.stderr[-3000:]
        texts[ranks] = p.stdout
    assert texts[1].count("[update V row") > 20 and "[conduct E row" in texts[1]
    assert texts[2] == texts[1] and texts[3] == texts[1]


def test_minife_on_2_ranks_gives_one_processs_bits(tmp_path):
    same_as_one_process("minife", "cpu", 2, tmp_path)


def test_each_rank_loads_its_own_rows(tmp_path):
    same_as_one_process("local_load", "cpu", 3, tmp_path)


@pytest.mark.parametrize("ranks", [2, 3])
@pytest.mark.parametrize("target", ["cpu", "interp"])
def test_keys_through_locals_groupings_subsets_and_every_global_reduction(target, ranks,
                                                                          tmp_path):
    same_as_one_process("heat", target, ranks, tmp_path)


@pytest.mark.parametrize("ranks", [2, 3])
def test_float_sums_merged_from_every_ranks_lanes_or_else_exactly(ranks, tmp_path):
    """A cpu launch's float64 Global sums folded in lanes on each rank: the lanes of every
    rank rounded once, or, where they leave the value undecided (a tie, a cancellation),
    every rank's slots summed exactly: one process's bits either way."""
    if ("lane_sums", "cpu") not in _ONE_PROCESS:
        (_ONE_PROCESS["lane_sums", "cpu"],) = digests("lane_sums", "cpu", 1, tmp_path)
    single = _ONE_PROCESS["lane_sums", "cpu"]
    for d in digests("lane_sums", "cpu", ranks, tmp_path):
        paths = d.pop("paths")
        assert {k: v for k, v in d.items() if k not in ("rank", "size")} == \
            {k: v for k, v in single.items() if k not in ("rank", "size", "paths")}
        # s and t (a tie, then a cancellation, twice each) exactly, the other sums from lanes
        assert paths == {"exact": 2 * 2 * 2, "lanes": 3 * 2 * 3 + 2 - 8}, paths
    history = single["history"]
    assert history[2][:3] == ["tie", float(2 ** 53).hex(), float(2 ** 54).hex()]  # (to even)
    assert history[4][:3] == ["cancel", (0.0).hex(), (0.0).hex()]


def test_a_first_mpiexec_run_after_one_process_compiles_nothing(tmp_path):
    """Empty caches, one process, then `mpiexec -n 2` of the same program: the ranks load
    what the one process compiled (its background worker included) and compile nothing,
    the float64 Global sum included (ranks merge lanes, as one process folds them). (A
    program whose sums take the exact path passes too, but waits ~12 s for the background
    worker's exact fold: the pieces are tested apart, `test_lane_sums.py`'s rerun and
    `test_exact_sum.py`'s `exact_parts`.)"""
    name = "design"
    env = dict(_env(), RELSIM_TEST_COMPILED="1", NUMBA_CACHE_DIR=str(tmp_path / "numba"),
               RELSIM_CACHE_DIR=str(tmp_path / "relsim"))
    outs = {}
    for ranks in (1, 2):
        outdir = tmp_path / f"{name}-{ranks}"
        outdir.mkdir()
        cmd = [sys.executable, str(PROGRAMS), name, "cpu", str(outdir)]
        p = subprocess.run(cmd if ranks == 1 else [MPIEXEC, "-n", "2", *cmd],
                           capture_output=True, text=True, timeout=300, env=env, cwd=ROOT)
        assert p.returncode == 0, p.stderr[-3000:]
        outs[ranks] = [json.loads(f.read_text()) for f in sorted(outdir.glob("*.json"))]
    (one,) = outs[1]
    assert one.pop("compiled")  # (the cold run did compile)
    assert len(outs[2]) == 2
    for d in outs[2]:
        assert d.pop("compiled") == [], f"rank {d['rank']} compiled"
        assert {k: v for k, v in d.items() if k not in ("rank", "size", "paths")} == \
            {k: v for k, v in one.items() if k not in ("rank", "size", "paths")}


@pytest.mark.parametrize("ranks", [2, 3])
def test_tetheat_on_a_shuffled_mesh_and_its_output_files(ranks, tmp_path):
    same_as_one_process("tetheat", "cpu", ranks, tmp_path, once=False)  # (its files too)
    one, many = tmp_path / "tetheat-cpu-1" / "files", tmp_path / f"tetheat-cpu-{ranks}" / "files"
    names = sorted(p.name for p in one.iterdir())
    assert names == sorted(p.name for p in many.iterdir())
    assert "tetheat.pvd" in names and "tetheat.xdmf" in names and len(names) > 4
    for name in names:
        if name.endswith(".h5"):
            assert h5_arrays(many / name) == h5_arrays(one / name), name
        else:
            assert (many / name).read_bytes() == (one / name).read_bytes(), name


@pytest.mark.parametrize("name", ["fem", "cloth", "smoke", "sph"])
def test_gallery_simulations_on_2_ranks(name, tmp_path):
    same_as_one_process(name, "cpu", 2, tmp_path, once=False)
    one, two = tmp_path / f"{name}-cpu-1" / "files", tmp_path / f"{name}-cpu-2" / "files"
    names = sorted(p.name for p in one.iterdir())
    assert names == sorted(p.name for p in two.iterdir()) and f"{name}.pvd" in names
    for file in names:
        assert (two / file).read_bytes() == (one / file).read_bytes(), file


def test_the_md_gas_on_2_ranks(tmp_path):
    same_as_one_process("md", "cpu", 2, tmp_path, once=False)


def h5_arrays(path) -> dict:
    import h5py
    out = {}
    with h5py.File(path, "r") as f:
        f.visititems(lambda k, v: out.__setitem__(k, v[()].tobytes())
                     if isinstance(v, h5py.Dataset) else None)
    return out


@pytest.mark.parametrize("target", ["cpu", "interp"])
def test_few_rows_bounded_grids_and_scatters_through_offsets(target, tmp_path):
    same_as_one_process("small", target, 3, tmp_path)


@pytest.mark.parametrize("ranks", [2, 3])
def test_diffusion2d_on_a_periodic_grid(ranks, tmp_path):
    same_as_one_process("diffusion2d", "cpu", ranks, tmp_path)


@pytest.mark.parametrize("ranks", [2, 3])
def test_airfoil_prints_the_same_numbers(ranks):
    cmd = [sys.executable, "-m", "relsim.cli", "run", "airfoil", "--size", "24", "12",
           "--iterations", "12", "--every", "4"]
    one, many = run_once(cmd), run(cmd, ranks)
    assert one.returncode == 0 and many.returncode == 0, many.stderr[-3000:]

    def numbers(out):  # every line but those with timings, and the target's
        return [ln for ln in out.splitlines() if not re.search(r"\d s\b|\bs;|seconds", ln)
                and not ln.startswith("target ")]
    assert numbers(many.stdout) == numbers(one.stdout)  # (rank 0 alone prints)
    assert f"on each of {ranks} MPI ranks" in many.stdout
    assert f"relsim run airfoil: on {ranks} MPI ranks" in many.stderr
    assert any(ln.startswith("sha256(q)") for ln in numbers(one.stdout))
    assert len(numbers(one.stdout)) > 4


def test_a_failing_rank_ends_every_rank(tmp_path):
    p = run([sys.executable, str(PROGRAMS), "failing", "cpu", str(tmp_path)], 3, timeout=120)
    assert p.returncode != 0
    assert "rank 1 of 3" in p.stderr and "SchemaError" in p.stderr, p.stderr[-2000:]


def test_lulesh_s5_on_2_and_3_ranks_and_restarted_across_rank_counts(tmp_path):
    """One process; 2 ranks writing checkpoints every 30 cycles; 3 ranks restarting from the
    last one (cycle 60 of 72): the same end state, bit for bit (iterations, time, dt, e(0),
    the symmetry figures, checksums of every field)."""
    def lulesh(ranks, *extra):
        path = tmp_path / f"lulesh{ranks}.json"
        p = run([sys.executable, "-m", "relsim.cli", "run", "lulesh", "-s", "5", "-q",
                 "--json", str(path), *extra], ranks)
        assert p.returncode == 0, p.stderr[-3000:]
        return json.loads(path.read_text())
    one = lulesh(1)
    two = lulesh(2, "--checkpoint", str(tmp_path / "c.h5"), "--checkpoint-every", "30")
    three = lulesh(3, "--restart", str(tmp_path / "c.h5"))
    assert (one["ranks"], two["ranks"], three["ranks"]) == (1, 2, 3) and one["iterations"] > 60
    for key in ("iterations", "time", "dt", "e0", "symmetry", "sums"):
        assert two[key] == one[key] and three[key] == one[key], key


def test_a_checkpoint_written_on_2_ranks_restarts_on_3_and_on_1(tmp_path):
    (uninterrupted,) = digests("checkpoint_write", "cpu", 1, tmp_path)
    written = digests("checkpoint_write", "cpu", 2, tmp_path)  # overwrites state.h5
    restarted = digests("checkpoint_read", "cpu", 3, tmp_path)
    (one,) = digests("checkpoint_read", "cpu", 1, tmp_path)
    strip = lambda d: {k: v for k, v in d.items() if k not in ("rank", "size")}  # noqa: E731
    for d in [*written, *restarted, one]:
        assert strip(d) == strip(uninterrupted)


@pytest.mark.parametrize("ranks", [2, 3])
def test_particles_inserted_deleted_and_binned_give_the_same_bits(ranks):
    cmd = [sys.executable, "-m", "relsim.cli", "run", "particles2d", "--steps", "40",
           "--cells", "12", "--particles", "400"]
    one, many = run_once(cmd), run(cmd, ranks)
    assert one.returncode == 0 and many.returncode == 0, many.stderr[-3000:]
    keep = [ln.split(" (")[0] for ln in one.stdout.splitlines()]
    assert [ln.split(" (")[0] for ln in many.stdout.splitlines()] == keep
    assert any(ln.startswith("sha256(pos, vel)") for ln in keep) and "OK" in one.stdout
