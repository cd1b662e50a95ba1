"""Targets come from a registry: `rs.register_backend`, and installed packages through the
`relsim.backends` entry-point group; `rs.Config`, `rs.configure` and RELSIM_TARGET accept them."""
import os
import subprocess
import sys
import textwrap
import warnings

import pytest

import relsim as rs
from relsim import target_registry as targets

# A backend written outside relsim, as a package author would: it compiles through `interp`
# and counts its launches (so a test can see that it, not another target, ran them).
DELEGATE = textwrap.dedent('''\
    """A relsim backend plugin that delegates to the interp target."""
    from relsim import target_registry as targets
    from relsim.runtime.backends.base import Backend, Launch

    launches = []


    class CountingLaunch(Launch):
        def __init__(self, inner):
            self.inner = inner
            self.analysed = inner.analysed

        def launch(self, relation, subset):
            launches.append(self.analysed.kernel_name)
            self.inner.launch(relation, subset)


    class Delegate(Backend):
        name = "delegate"

        def compile(self, analysed, config):
            return CountingLaunch(targets.get("interp").compile(analysed, config))
    ''')

KERNEL = textwrap.dedent('''\
    import numpy as np
    import relsim as rs

    V, E = rs.Relation("V", 5), rs.Relation("E", 4)
    E.new_key_field("head", V).load(np.arange(1, 5))
    E.new_key_field("tail", V).load(np.arange(0, 4))
    V.new_field("T", rs.f64).load([0.0, 1.0, 4.0, 9.0, 16.0])
    V.new_field("flux", rs.f64)
    total = rs.Global(rs.f64, 0.0)

    @rs.kernel
    def conduct(e):
        d = e.head.T - e.tail.T
        e.tail.flux += d
        e.head.flux -= d
        total += d

    E.foreach(conduct)
    print(rs.config.current().target, V.flux.numpy().tolist(), total.value)
    ''')


def _install(tmp_path, monkeypatch, dist, module_name, module_text, entry):
    """Install a distribution as pip leaves it: a module and a dist-info with entry points."""
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    (site / f"{module_name}.py").write_text(module_text)
    info = site / f"{dist}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[relsim.backends]\n{entry}\n")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setattr(targets, "_plugins_loaded", False)
    return site


@pytest.fixture
def clean_registry(monkeypatch):
    """Plugins registered by a test are gone afterwards; the default config is restored."""
    monkeypatch.setattr(targets, "_registry", dict(targets._registry))
    monkeypatch.setattr(targets, "_broken", {})
    old = rs.config.current()
    yield
    rs.config._current = old
    for name in ("delegate_backend", "broken_backend"):
        sys.modules.pop(name, None)


def test_builtin_targets_are_listed():
    assert {"interp", "cpu", "cpu-serial"} <= set(rs.targets())


def test_unknown_target_is_a_config_error_listing_the_targets():
    with pytest.raises(rs.ConfigError, match=r"unknown target 'gpu'.*cpu-serial.*interp"):
        rs.Config(target="gpu")
    with pytest.raises(rs.ConfigError, match="unknown target"):
        rs.configure(target="gpu")


def test_a_plugin_backend_is_listed_selected_and_runs_kernels(tmp_path, monkeypatch,
                                                              clean_registry):
    _install(tmp_path, monkeypatch, "relsim-delegate", "delegate_backend", DELEGATE,
             "delegate = delegate_backend:Delegate")
    assert "delegate" in rs.targets()
    (tmp_path / "k.py").write_text(KERNEL)
    plugin = sys.modules["delegate_backend"]
    # through rs.configure: the whole script runs on the plugin, with interp's answers
    rs.configure(target="delegate")
    monkeypatch.syspath_prepend(str(tmp_path))
    import k  # noqa: F401  (runs the script's launch at import)
    sys.modules.pop("k", None)
    assert plugin.launches == ["conduct"]


def test_a_registered_backend_passes_the_differential_soak(clean_registry):
    from relsim.testing import soak
    delegate = _delegate_backend()
    rs.register_backend("delegate", delegate)
    assert "delegate" in rs.targets()
    result = soak.run(cases=6, kernels=2, seed=3, targets=["delegate"])
    assert result.mismatch_count == 0 and not result.errors and result.cases == 6
    assert delegate.count > 0


def _delegate_backend():
    from relsim.runtime.backends.base import Backend, Launch

    class Counting(Launch):
        def __init__(self, inner, owner):
            self.inner, self.owner, self.analysed = inner, owner, inner.analysed

        def launch(self, relation, subset):
            self.owner.count += 1
            self.inner.launch(relation, subset)

    class Delegate(Backend):
        name = "delegate"
        count = 0

        def compile(self, analysed, config):
            return Counting(targets.get("interp").compile(analysed, config), self)

    return Delegate()


def test_relsim_target_selects_a_plugin_in_a_fresh_process(tmp_path, monkeypatch):
    site = _install(tmp_path, monkeypatch, "relsim-delegate", "delegate_backend", DELEGATE,
                    "delegate = delegate_backend:Delegate")
    (tmp_path / "k.py").write_text(KERNEL)
    env = dict(os.environ, RELSIM_TARGET="delegate",
               PYTHONPATH=os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, str(tmp_path / "k.py")], env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[0] == "delegate"
    env["RELSIM_TARGET"] = "interp"
    ref = subprocess.run([sys.executable, str(tmp_path / "k.py")], env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.stdout.split()[1:] == ref.stdout.split()[1:]


def test_a_bad_relsim_target_fails_at_first_use_not_at_import(tmp_path):
    env = dict(os.environ, RELSIM_TARGET="bogus")
    code = "import relsim as rs\nprint('imported')\nrs.config.current()\n"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.stdout.strip() == "imported"
    assert "ConfigError: unknown target 'bogus'" in out.stderr


def test_a_broken_plugin_warns_and_is_refused_by_name(tmp_path, monkeypatch, clean_registry):
    _install(tmp_path, monkeypatch, "relsim-broken", "broken_backend",
             "raise ImportError('missing driver xyz')\n", "broken = broken_backend:Backend")
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        names = rs.targets()
    assert "broken" not in names and "cpu" in names
    assert any("missing driver xyz" in str(x.message) for x in w)
    with pytest.raises(rs.ConfigError, match="'broken' is installed but failed to load.*xyz"):
        rs.Config(target="broken")


def test_register_backend_checks_what_it_is_given(clean_registry):
    with pytest.raises(rs.ConfigError, match="no compile"):
        rs.register_backend("nothing", object())
    with pytest.raises(rs.ConfigError, match="already registered"):
        rs.register_backend("cpu", _delegate_backend())
    rs.register_backend("cpu2", _delegate_backend())
    assert rs.Config(target="cpu2").target == "cpu2"
    targets.unregister_backend("cpu2")
    assert "cpu2" not in rs.targets()


def test_threads_are_set_through_the_cpu_backend():
    import numba
    old = rs.config.current()
    try:
        rs.configure(target="cpu", threads=1)
        assert numba.get_num_threads() == 1 and rs.config.current().thread_count() == 1
        with pytest.raises(rs.ConfigError, match="exceeds the Numba thread pool"):
            rs.configure(threads=numba.config.NUMBA_NUM_THREADS + 1)
        assert rs.config.current().threads == 1  # a refused configuration changes nothing
        assert rs.Config(target="cpu-serial").thread_count() == 1
    finally:
        rs.config._current = old
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)


def test_options_a_backend_owns_are_validated_by_it_and_key_only_its_launches(tmp_path):
    """`scatter`, `parallel_threshold`, `threads`, `segments` and `startup` are the cpu's
    (`CpuBackend.options`): its `check_options` refuses bad values whatever the target, and
    only cpu launches are keyed by them; an interp (or cuda) launch is reused when they
    change."""
    cpu = rs.Config(target="cpu").backend
    assert set(cpu.options) == {"scatter", "parallel_threshold", "threads", "segments",
                                "startup"}
    for bad, match in ((dict(scatter="fast"), "scatter must be one of auto, direct"),
                       (dict(segments="later"), "segments must be one of background, now, off"),
                       (dict(startup="soon"), "startup must be one of tiered, wait"),
                       (dict(parallel_threshold=-1), "parallel_threshold must be an int >= 0"),
                       (dict(threads=0), "threads must be a positive int")):
        with pytest.raises(rs.ConfigError, match=match):
            rs.Config(target="interp", **bad)
    (tmp_path / "k.py").write_text(KERNEL.split("E.foreach")[0])
    sys.path.insert(0, str(tmp_path))
    try:
        import k
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("k", None)
    from relsim.runtime import execute
    others = [t for t in ("interp", "cuda") if t in rs.targets()]
    for t in others:
        a = execute.executable(k.conduct, k.E, rs.Config(target=t, cache_dir=str(tmp_path)))
        b = execute.executable(k.conduct, k.E, rs.Config(target=t, cache_dir=str(tmp_path),
                                                         scatter="slots", parallel_threshold=7))
        assert a is b, t
    a = execute.executable(k.conduct, k.E, rs.Config(target="cpu", cache_dir=str(tmp_path)))
    b = execute.executable(k.conduct, k.E, rs.Config(target="cpu", cache_dir=str(tmp_path),
                                                     scatter="slots"))
    assert a is not b  # the cpu's own option: another launch


def test_building_a_config_imports_nothing_and_loads_no_plugin(tmp_path, monkeypatch):
    """A Config checks its target against the registered targets and the installed plugins'
    names (entry points), without importing a plugin or any module."""
    _install(tmp_path, monkeypatch, "relsim-delegate", "delegate_backend", DELEGATE,
             "delegate = delegate_backend:Delegate")
    code = textwrap.dedent("""\
        import sys
        import relsim as rs
        from relsim import target_registry
        before = set(sys.modules)
        for t in ("cpu", "interp", "delegate"):
            rs.Config(target=t, scatter="split", debug=True)
        try:
            rs.Config(target="nosuch")
        except rs.ConfigError as e:
            print(e)
        print(sorted(set(sys.modules) - before), target_registry._plugins_loaded)
        rs.Config(target="delegate").backend  # first use: the plugin loads now
        print("delegate_backend" in sys.modules)
        """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(tmp_path / "site"), os.environ.get("PYTHONPATH", "")]))
    (tmp_path / "configs.py").write_text(code)  # (a script: the plugin is found as by users)
    out = subprocess.run([sys.executable, str(tmp_path / "configs.py")], env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("unknown target 'nosuch'; choose one of ") and \
        "delegate" in lines[0], lines
    assert lines[1:] == ["[] False", "True"]


def test_a_launch_must_be_a_launch_and_a_duck_typed_backend_still_works(tmp_path, clean_registry):
    """A backend need not subclass Backend (the registry asks only for compile), but what it
    compiles must be a base.Launch: that gives every optional hook its default."""
    from relsim.runtime.backends.base import Launch

    class Wrapped(Launch):
        def __init__(self, inner):
            self.inner, self.analysed = inner, inner.analysed

        def launch(self, relation, subset):
            self.inner.launch(relation, subset)

    class Duck:
        def compile(self, analysed, config):
            return Wrapped(targets.get("interp").compile(analysed, config))

    class Bad:
        def compile(self, analysed, config):
            return object()

    rs.register_backend("duck", Duck())
    rs.register_backend("bad", Bad())
    (tmp_path / "k.py").write_text(KERNEL.split("E.foreach")[0])
    sys.path.insert(0, str(tmp_path))
    try:
        import k
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("k", None)
    k.E.foreach(k.conduct, rs.Config(target="duck"))
    assert k.V.flux.numpy().tolist() == [1.0, 2.0, 2.0, 2.0, -7.0]  # d = 1 3 5 7
    assert "generated" not in rs.explain(k.conduct, k.E, rs.Config(target="duck"))
    with pytest.raises(rs.ConfigError, match="target 'bad': compile\\(\\) returned a object, "
                                             "not a Launch; subclass"):
        k.E.foreach(k.conduct, rs.Config(target="bad"))
