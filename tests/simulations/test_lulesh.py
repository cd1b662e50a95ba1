"""LULESH 2.0 port: bit-exact with the LLNL reference's serial (1-thread) answers.

Expected values are the reference's, printed with %.17e (data/lulesh_s10_trace.tsv is its
per-cycle trace at s=10); every comparison is bitwise. s=5 and s=10 run on `cpu`, s=2 on `interp`
against `cpu`; larger sizes are checked by `relsim bench lulesh`."""
from __future__ import annotations

import ctypes
import ctypes.util
import json
import pathlib
import sys

import numba
import numpy as np
import pytest

import relsim as rs
from relsim_simulations.lulesh import command
from relsim_simulations.lulesh.problem import Lulesh, QStopError, VolumeError
from relsim_simulations.lulesh.regions import GlibcRand, region_numbers, repetitions

DATA = pathlib.Path(__file__).parent / "data"
SERIAL = rs.Config(target="cpu")  # below the parallel threshold: serial loops
PARALLEL = rs.Config(target="cpu", parallel_threshold=1)

# the reference's end state, 1 thread (serial order), s=10 (%.17e)
S10 = dict(cycles=231, e0=2.72053116847034689e+04, time=1.00000000000000002e-02,
           dt=3.74456628753107312e-05,
           symmetry=(2.273737e-12, 1.659646e-11, 4.649603e-14),  # as printed (%e)
           sums={"e": 2.41746210522627283e+05, "p": 1.99835529710225819e+05,
                 "q": 7.19789109109516576e+04, "v": 1.00007327285680879e+03,
                 "ss": 9.39528236629980347e+03, "x+y+z": 2.37081943684690032e+03,
                 "xd+yd+zd": 1.80193487927359529e+04})


def _trace():
    rows = [line.split("\t") for line in (DATA / "lulesh_s10_trace.tsv").read_text().splitlines()
            if line and not line.startswith(("#", "cycle"))]
    return [(int(r[0]),) + tuple(float(x) for x in r[1:]) for r in rows]


def _run(s, config, **kw):
    L = Lulesh(s, config=config, **kw)
    trace = []
    L.run(on_cycle=lambda L: trace.append(
        (L.cycle, L.time, L.deltatime, L.origin_energy(), L.dtcourant, L.dthydro)))
    return L, trace


@pytest.fixture(scope="module")
def s10():
    return _run(10, SERIAL)


def test_s5_iterations_and_origin_energy_bits():
    L, _ = _run(5, SERIAL)
    assert L.cycle == 72
    assert L.origin_energy() == 7.85366510214584468e+03  # bitwise
    assert f"{L.origin_energy():e}" == "7.853665e+03"
    assert (L.time, L.deltatime) == (0.01, 1.19333789843823271e-04)
    assert max(L.symmetry()) < 1e-8
    # checksums printed by a print-only instrumented build of the reference (1 thread)
    assert L.checksums() == {"e": 2.90383634164630748e+04, "p": 2.28962075780293853e+04,
                             "q": 1.66420533063096518e+04, "v": 1.25130994864841583e+02,
                             "ss": 1.14272026955682713e+03, "x+y+z": 3.84623526927565479e+02,
                             "xd+yd+zd": 3.02505965051544081e+03}


def test_s10_every_cycle_of_the_reference_trace(s10):
    _, trace = s10
    want = _trace()
    assert len(want) == 231 and len(trace) == 231
    for got, ref in zip(trace, want):
        assert got == ref, f"cycle {ref[0]}: {got} != {ref}"


def test_s10_end_state_bits(s10):
    L, _ = s10
    assert L.cycle == S10["cycles"]
    assert (L.origin_energy(), L.time, L.deltatime) == (S10["e0"], S10["time"], S10["dt"])
    assert L.checksums() == S10["sums"]
    assert tuple(float(f"{x:e}") for x in L.symmetry()) == S10["symmetry"]
    assert max(L.symmetry()) < 1e-8


def test_s10_same_bits_on_1_and_2_threads(s10):
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("needs NUMBA_NUM_THREADS >= 2")
    ref, _ = s10
    try:
        for threads in (1, 2):
            numba.set_num_threads(threads)
            L = Lulesh(10, config=PARALLEL)
            L.run(60)
            R = Lulesh(10, config=SERIAL)
            R.run(60)
            for rel in ("nodes", "elems"):
                for name, f in getattr(L, rel).fields.items():
                    np.testing.assert_array_equal(f.numpy(), getattr(R, rel).field(name).numpy(),
                                                  err_msg=f"{threads} threads: {rel}.{name}")
    finally:
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)


def test_s2_interp_equals_cpu_bitwise():
    A, ta = _run(2, rs.Config(target="interp"))
    B, tb = _run(2, SERIAL)
    assert A.cycle == B.cycle == 5 and ta == tb
    assert f"{A.origin_energy():e}" == "2.746125e+03"
    for rel in ("nodes", "elems"):
        for name, f in getattr(A, rel).fields.items():
            np.testing.assert_array_equal(f.numpy(), getattr(B, rel).field(name).numpy(),
                                          err_msg=f"{rel}.{name}")


@pytest.mark.skipif("cuda" not in rs.targets(), reason="numba-cuda is not installed")
def test_s2_on_cuda_copies_only_the_globals_the_host_reads_and_sets():
    """A cycle reads 10 Global values on the host (volume_error and qstop_error at each of the
    four checks, dtcourant, dthydro) and sets 3 (dt, dtcourant, dthydro). Downloaded: the 7 of
    those reads that follow a reduction on the device (volume_error after each of its four
    reducing launches, qstop_error after its one, dtcourant, dthydro), each carrying the queued
    launches' error words; uploaded: dt, which kernels read (dtcourant and dthydro start
    their reductions from the host's value, passed by value). The same bits as the cpu (the
    simulator)."""
    from relsim.runtime.backends.cuda import memory
    cuda = Lulesh(s=2, config=rs.Config(target="cuda"))
    cuda.run(its=2)
    before = dict(memory.TRANSFERS)
    cuda.run(its=4)
    copies = {k: v - before.get(k, 0) for k, v in memory.TRANSFERS.items()
              if v != before.get(k, 0)}
    assert copies == {("down", "global"): 14, ("up", "global"): 2}  # two cycles
    cpu = Lulesh(s=2, config=SERIAL)
    cpu.run(its=4)
    assert cuda.origin_energy() == cpu.origin_energy()
    assert cuda.elems.e.numpy().tobytes() == cpu.elems.e.numpy().tobytes()


def test_regions_cost_and_balance_do_not_change_results():
    base, _ = _run(5, SERIAL)
    for kw in (dict(num_reg=1), dict(num_reg=20, balance=2, cost=3), dict(cost=0)):
        L, _ = _run(5, SERIAL, **kw)
        assert (L.cycle, L.origin_energy(), L.deltatime) == \
            (base.cycle, base.origin_energy(), base.deltatime), kw


def test_glibc_rand_and_the_reference_partition():
    g = GlibcRand(0)
    assert [g.rand() for _ in range(3)] == [1804289383, 846930886, 1681692777]
    name = ctypes.util.find_library("c")
    if sys.platform.startswith("linux") and name:
        libc = ctypes.CDLL(name)
        if hasattr(libc, "gnu_get_libc_version"):
            libc.srand(0)
            g = GlibcRand(0)
            assert [libc.rand() for _ in range(5000)] == [g.rand() for _ in range(5000)]
    # region sizes measured from the reference at s=30 and s=10 (region 11)
    assert np.bincount(region_numbers(27000, 11, 1))[1:].tolist() == \
        [123, 457, 493, 2733, 1004, 896, 3236, 2435, 1198, 5980, 8445]
    assert np.bincount(region_numbers(1000, 11, 1), minlength=12)[11] == 100
    assert [repetitions(r, 11, 1) for r in range(11)] == [1] * 5 + [2] * 5 + [20]
    assert repetitions(0, 1, 0) == 1 and repetitions(0, 1, 1) == 2


def test_volume_error_and_qstop_error():
    L = Lulesh(3, config=SERIAL)
    L.nodes.x.numpy()[0] = 5.0  # fold element 0 inside out
    with pytest.raises(VolumeError, match="VolumeError"):
        L.run()
    L = Lulesh(3, config=SERIAL)
    L.elems.q.fill(2e12)  # uniform: the free faces expand, no element inverts
    with pytest.raises(QStopError, match="QStopError"):
        L.run()
    assert L.cycle == 1


# -- the command line -------------------------------------------------------------------------
def test_report_matches_the_reference_format(capsys, tmp_path):
    out = tmp_path / "end.json"
    assert command.main(["-s", "5", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "Running problem size 5^3 per domain until completion" in text
    assert "   Iteration count     =  72\n" in text
    assert "   Final Origin Energy =  7.853665e+03\n" in text
    for label in ("MaxAbsDiff   = ", "TotalAbsDiff = ", "MaxRelDiff   = "):
        line = next(x for x in text.splitlines() if label in x)
        assert float(line.split("=")[1]) < 1e-8
    assert "Elapsed time         = " in text and "FOM                  = " in text
    state = json.loads(out.read_text())
    assert state["iterations"] == 72 and state["e0"] == 7.85366510214584468e+03
    assert state["time"] == 0.01 and set(state["sums"]) == set(S10["sums"])


def test_progress_quiet_and_iteration_limit(capsys):
    assert command.main(["-s", "3", "-i", "3", "-p"]) == 0
    text = capsys.readouterr().out
    assert "cycle = 1, time = " in text and "cycle = 3, time = " in text
    assert "cycle = 4," not in text and "   Iteration count     =  3\n" in text
    assert command.main(["-s", "3", "-i", "2", "-q"]) == 0
    assert capsys.readouterr().out == ""
    assert command.main(["-s", "3", "-i", "0"]) == 0
    text = capsys.readouterr().out
    assert "Grind time (us/z/c)  =        inf" in text
    assert "FOM                  =          0 (z/s)" in text


@pytest.mark.parametrize("argv, status, message", [
    (["-x"], 255, "ERROR: Unknown command line argument: -x"),
    (["-s"], 255, "Missing integer argument to -s"),
    (["-s", "ten"], 255, "Parse Error on option -s integer value required"),
    (["-v"], 255, "--output DIR"),
    (["-h"], 0, "Usage: relsim run lulesh [opts]"),
    (["--threads", "0"], 255, "--threads needs a positive integer"),
])
def test_bad_options(capsys, argv, status, message):
    assert command.main(argv) == status
    assert message in capsys.readouterr().out


def test_errors_end_the_run_with_the_reference_status(capsys, monkeypatch):
    def boom(self, *a, **kw):
        raise QStopError("QStopError: the artificial viscosity q exceeded qstop in cycle 1")
    monkeypatch.setattr(Lulesh, "run", boom)
    assert command.main(["-s", "2"]) == 254
    assert "QStopError" in capsys.readouterr().err


def test_output_writes_vtu_and_xdmf_series(tmp_path, capsys):
    assert command.main(["-s", "2", "--output", str(tmp_path), "--every", "2", "-q"]) == 0
    names = {p.name for p in tmp_path.iterdir()}
    assert {"lulesh_nodes.pvd", "lulesh_elems.pvd", "lulesh_nodes.xdmf",
            "lulesh_elems.xdmf"} <= names
    # steps 0, 2, 4 and the last (5)
    assert len([n for n in names if n.startswith("lulesh_elems_") and n.endswith(".vtu")]) == 4
    import meshio
    m = meshio.read(tmp_path / "lulesh_elems_000003.vtu")
    assert m.cells[0].data.shape == (8, 8) and m.cell_data["e"][0].shape == (8,)


# -- relsim bench lulesh --ranks (no reference binary, no mpiexec needed) ---------------------

def test_bench_reference_size_is_s_over_cbrt_ranks():
    from relsim_simulations.lulesh.benchmark import reference_size
    assert [reference_size(20, n) for n in (1, 8)] == [20, 10]
    assert reference_size(30, 27) == 10 and reference_size(7, 1) == 7
    with pytest.raises(ValueError, match="cube number of ranks .* not 2"):
        reference_size(20, 2)
    with pytest.raises(ValueError, match=r"-s 5 on 8 ranks.*5 / 2"):
        reference_size(5, 8)


@pytest.mark.parametrize("argv, message", [
    (["--ranks", "1,2", "--reference-mpi", sys.executable], "cube number of ranks"),
    (["-s", "5", "--reference-mpi", sys.executable], "5 / 2, which must be an integer"),
    (["--ranks", "1,x"], "comma-separated integers"),
    (["--ranks", "0,8"], "distinct positive integers"),
    (["--ranks", "1,1"], "distinct positive integers"),
    (["--ranks", "1,8", "--reference-mpi", "/nonexistent/lulesh2.0"], "not an executable"),
])
def test_bench_ranks_options_are_refused_before_anything_runs(capsys, argv, message):
    from relsim_simulations.lulesh import benchmark as bench
    with pytest.raises(SystemExit) as exc:
        bench.main(argv)
    assert exc.value.code == 2 and message in capsys.readouterr().err


def test_bench_ranks_without_mpiexec_is_skipped(capsys, monkeypatch):
    from relsim_simulations.lulesh import benchmark as bench
    monkeypatch.setattr(bench, "find_mpiexec", lambda: None)
    monkeypatch.setattr(bench, "run_relsim", lambda *a, **k: pytest.fail("ran without mpiexec"))
    assert bench.main(["-s", "4", "--ranks", "1,8"]) == 0
    assert "skipped, no mpiexec" in capsys.readouterr().out


def test_bench_ranks_checks():
    from relsim_simulations.lulesh.benchmark import verify_ranks
    end = dict(iterations=231, time=S10["time"], dt=S10["dt"], e0=S10["e0"], sums=S10["sums"],
               symmetry={"MaxAbsDiff": 2e-12, "TotalAbsDiff": 1e-11, "MaxRelDiff": 4e-14})
    runs = [dict(end, ranks=1), dict(end, ranks=8)]
    ref = dict(iterations=231, e0_printed="2.720531e+04", size=5, tasks=8, elapsed_s=2.0,
               fom=10 ** 3 * 231 / 2000.0, symmetry=[1e-12, 1e-11, 1e-14], ranks=8,
               e0_full=None)
    serial = (231, "2.720531e+04")
    assert verify_ranks(10, runs, [ref], serial) == ([], [])
    # relsim: one checksum off in the last bit on 8 ranks is a problem
    sums = dict(S10["sums"], e=np.nextafter(S10["sums"]["e"], 0.0))
    bad, _ = verify_ranks(10, [runs[0], dict(end, ranks=8, sums=sums)], [ref], serial)
    assert len(bad) == 1 and "8 rank(s) differs from 1 in sums" in bad[0]
    # the reference MPI's printed e(0) in other last digits: reported, not a failure
    bad, notes = verify_ranks(10, runs, [dict(ref, e0_printed="2.720532e+04")], serial)
    assert bad == [] and "difference +1.000000e-02" in notes[0]
    # its iteration count, task count or a FOM that is not global zones * cycles / elapsed
    for change, says in ((dict(iterations=230), "230 cycles"), (dict(tasks=1), "1 task(s)"),
                         (dict(fom=231.0), "prints FOM 231.0")):
        bad, _ = verify_ranks(10, runs, [dict(ref, **change)], serial)
        assert any(says in b for b in bad), (change, bad)
    # in full precision (a print-only build): other last digits are a note, in ulp
    other = dict(ref, e0_full=2.72053116847034435e+04)
    bad, notes = verify_ranks(10, runs, [other, other], serial, S10["e0"])
    assert bad == [] and len(notes) == 1  # once, not per repeat
    assert "difference -2.547e-11" in notes[0] and "ulp" in notes[0]
    same = dict(ref, e0_full=S10["e0"])
    assert verify_ranks(10, runs, [same], serial, S10["e0"])[1][0].endswith("bit-identical")


REPORT = """Run completed:
   Problem size        =  5
   MPI tasks           =  8
   Iteration count     =  231
   Final Origin Energy =  2.720531e+04
   Testing Plane 0 of Energy Array on rank 0:
        MaxAbsDiff   = 8.185452e-12
        TotalAbsDiff = 1.512035e-11
        MaxRelDiff   = 2.520539e-15

Elapsed time         =        9.2 (s)
Grind time (us/z/c)  =  319.08112 (per dom)  ( 9.2134674 overall)
FOM                  =  25.071994 (z/s)

e0 2.72053116847034435e+04
"""


def test_bench_reads_the_reference_report(tmp_path):
    from relsim_simulations.lulesh.benchmark import run_reference, verify_ranks
    fake = tmp_path / "lulesh2.0"  # prints the report of `mpiexec -n 8 lulesh2.0 -s 5`
    (tmp_path / "report.txt").write_text(REPORT)
    fake.write_text(f"#!/bin/sh\ncat {tmp_path / 'report.txt'}\n")
    fake.chmod(0o755)
    x = run_reference(str(fake), 5, 1)
    assert (x["iterations"], x["e0_printed"], x["size"], x["tasks"]) == (231, "2.720531e+04", 5, 8)
    assert x["elapsed_s"] == 9.2134674 and x["fom"] == 25.071994  # the 8-digit elapsed time
    assert x["e0_full"] == 2.72053116847034435e+04 and not x["openmp"]
    end = dict(iterations=231, time=S10["time"], dt=S10["dt"], e0=S10["e0"], sums=S10["sums"],
               symmetry={"MaxAbsDiff": 2e-12, "TotalAbsDiff": 1e-11, "MaxRelDiff": 4e-14}, ranks=1)
    bad, notes = verify_ranks(10, [end], [dict(x, ranks=8)], (231, "2.720531e+04"), S10["e0"])
    assert bad == [] and "ulp" in notes[0]


def test_warm_up_snapshots_keep_one_row_of_a_field_whose_rows_hold_the_same_bits():
    from relsim_simulations.lulesh.problem import _snapshot
    R = rs.Relation("rows", 5)
    zero, signed, vec = (R.new_field("zero", rs.f64), R.new_field("signed", rs.f64),
                         R.new_field("vec", rs.vec(3, rs.f64), init=(1.0, 2.0, 3.0)))
    signed.load([0.0, 0.0, -0.0, 0.0, 0.0])  # equal values, not the same bits
    snaps = {f.name: _snapshot(f) for f in (zero, signed, vec)}
    assert snaps["zero"].strides == (0,) and snaps["vec"].strides[0] == 0
    assert snaps["signed"].strides == (8,)
    for f in (zero, signed, vec):
        before = f.numpy(copy=True)
        f.fill(7.0)
        f.load(snaps[f.name])
        assert f.numpy().tobytes() == before.tobytes()
