"""The differential soak (`python -m relsim.testing.soak`): a small soak passes, a deliberately
wrong target is caught, and the generator is a deterministic function of its seed."""
import io

import numpy as np

import relsim as rs
from relsim.testing import random_control as rc
from relsim.testing import random_kernels as rk
from relsim.testing import soak


def test_generator_is_deterministic():
    a, b = rk.program(1234), rk.program(1234)
    assert a.source == b.source and a.schedule == b.schedule
    assert np.array_equal(a.vsub, b.vsub) and (a.nv, a.ne) == (b.nv, b.ne)
    da, db = rk.data(a, 3), rk.data(b, 3)
    for q in da.fields:
        assert da.fields[q].tobytes() == db.fields[q].tobytes()
    assert rk.program(1235).source != a.source
    assert soak.kernel_seeds(1, 5) == soak.kernel_seeds(1, 5)


def test_generated_programs_are_accepted_by_interp(tmp_path):
    interp = soak.launchers(["interp"])["interp"]
    for seed in range(12):
        prog = rk.program(seed, 4, 9)
        env = soak.Env(prog, tmp_path)
        try:
            obs = soak.execute(env, rk.data(prog, 0), interp)
        finally:
            env.close()
        bad = [o for o in obs if isinstance(o[1], BaseException)]
        assert not bad, f"seed {seed}: {bad[0][0]}: {bad[0][1]}\n{prog.source}"


def test_small_soak_has_no_mismatches():
    out = io.StringIO()
    res = soak.run(cases=12, kernels=3, seed=3, max_rows=120, out=out,
                   targets=["cpu", "cpu-serial", "cpu:split", "cpu:direct"])
    # the same programs as test_cli_reproduces_one_case; cpu:split / cpu:direct force the ways
    # of applying reductions through keys that `cpu` would not choose for such small data
    assert res.cases == 12 and res.kernels == 3
    assert res.ok, out.getvalue()
    assert "0 mismatch(es)" in res.summary()


def test_captured_runs_of_launches_have_no_mismatches():
    """`cpu+capture`: each run of consecutive launches recorded once and replayed (compiled
    segments among them) in the later cases, against interp."""
    out = io.StringIO()
    res = soak.run(cases=12, kernels=3, seed=3, max_rows=120, out=out,
                   targets=["cpu+capture", "cpu-serial+capture"])
    assert res.cases == 12 and res.ok, out.getvalue()
    assert "cpu+capture" in soak.default_targets()


def test_captured_loops_and_branches_on_globals_have_no_mismatches():
    """A program whose schedule holds `rs.while_loop`s and `rs.cond`s on Globals (with
    `rs.assign`s) around launches: captured (seed 11's: a cpu segment compiles a loop and a
    branch in), their sides and iteration counts taken differently from case to case, against
    interp launch by launch."""
    (seed,) = soak.kernel_seeds(11, 1)
    found = {step[0] for step in rc.walk(rk.program(seed, 20, 120).schedule)}
    assert {"loop", "branch", "assign"} <= found, found
    out = io.StringIO()
    res = soak.run(cases=6, kernels=1, seed=11, max_rows=120, out=out, targets=["cpu+capture"])
    assert res.cases == 6 and res.ok, out.getvalue()


def _bit_flipping_runner():
    """A 'target' that is interp, except that every launch flips the lowest bit of row 0 of
    each f64 field of the relation it ran over."""
    cfg = rs.Config(target="interp")

    def launch(kernel, space):
        space.foreach(kernel, cfg)
        rel = space.relation if isinstance(space, rs.Subset) else space
        for f in rel.fields.values():
            if not f.is_key and f.type == rs.f64:
                a = f.numpy(copy=True)
                a.view(np.uint64)[0] ^= np.uint64(1)
                f.load(a)

    return launch


def test_a_wrong_target_is_caught():
    out = io.StringIO()
    res = soak.run(cases=3, kernels=2, seed=5, targets=[],
                   runners={"broken": _bit_flipping_runner()}, max_report=1, out=out)
    assert res.mismatch_count >= 1 and not res.ok
    text = out.getvalue()
    assert "MISMATCH: target broken" in text and "--only-kernel" in text
    m = res.mismatches[0]
    assert m.target == "broken" and "interp" in m.detail


def test_cli_exits_1_on_a_mismatch(monkeypatch, capsys):
    real = soak.launchers
    broken = _bit_flipping_runner()
    monkeypatch.setattr(soak, "launchers", lambda targets, threads=None, runners=None: {
        t: real([t])[t] if t == "interp" else broken for t in targets})
    assert soak.main(["--cases", "2", "--kernels", "1", "--targets", "cpu-serial",
                      "--max-rows", "40"]) == 1
    out = capsys.readouterr().out
    assert "MISMATCH: target cpu-serial" in out and "2 mismatch(es)" in out


def test_comparison_is_bitwise():
    a = np.array([0.0, np.nan, 1.0])
    same = [("x", a)]
    assert soak.first_difference(same, [("x", a.copy())], "t") is None
    nan2 = a.copy()
    nan2.view(np.uint64)[1] |= np.uint64(1)  # another NaN payload: still equal
    assert soak.first_difference(same, [("x", nan2)], "t") is None
    negz = a.copy()
    negz[0] = -0.0
    assert "row 0" in soak.first_difference(same, [("x", negz)], "t")
    err = soak.first_difference(same, [("x", RuntimeError("boom"))], "t")
    assert err is not None and "boom" in err


def test_cli_reproduces_one_case(capsys):
    first = soak.kernel_seeds(3, 3)[0]  # compiled (and cached) by the small soak above
    rc = soak.main(["--only-kernel", str(first), "--only-data", "1", "--targets", "cpu-serial",
                    "--max-rows", "120"])
    assert rc == 0
    assert "1 cases, 1 kernels" in capsys.readouterr().out



def test_default_targets_skip_those_that_cannot_run_here(monkeypatch):
    from relsim.runtime.backends.cpu.backend import CpuBackend

    class NoDevice(CpuBackend):
        def unavailable(self):
            return "no device here"

    rs.register_backend("nodevice", NoDevice(serial=True))
    rs.register_backend("runs", CpuBackend(serial=True))
    try:
        names = soak.default_targets()
        assert "runs" in names and "nodevice" not in names and "interp" not in names
    finally:
        rs.target_registry.unregister_backend("nodevice")
        rs.target_registry.unregister_backend("runs")
