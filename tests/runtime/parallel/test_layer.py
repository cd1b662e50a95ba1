"""The distributed layer's refusals and switches, on one process."""
from __future__ import annotations

import pytest

import relsim as rs
from relsim.runtime import parallel
from relsim.runtime.backends.base import Launch
from relsim.runtime.parallel.distributed import DistributedLaunch


class _World:
    rank, size, comm = 0, 2, None


class _NoHooks(Launch):
    analysed = source = path = None

    def launch(self, relation, subset):  # pragma: no cover - never launched
        raise AssertionError


def test_a_target_without_the_hooks_is_refused_by_name():
    with pytest.raises(rs.ConfigError, match="target 'mine' cannot run on several ranks"):
        DistributedLaunch(_NoHooks(), _World(), "mine")


def test_distributed_is_none_true_or_false():
    with pytest.raises(rs.ConfigError, match="distributed must be None, True or False"):
        rs.Config(distributed="yes")


def test_one_process_is_not_wrapped_and_ranks_say_so():
    launch = _NoHooks()
    assert parallel.wrap(launch, rs.Config()) is launch
    assert parallel.wrap(launch, rs.Config(distributed=False)) is launch
    assert tuple(rs.ranks()) == (0, 1) and rs.ranks().size == 1
    R = rs.Relation("R", 3)
    assert rs.partition(R, "blocks") is None and R.partition is None
    R.new_field("x", rs.f64).load([1.0, 2.0, 3.0], local=True)  # one process: every row
    assert R.x.numpy(local=True).tolist() == [1.0, 2.0, 3.0]


def test_a_launcher_without_mpi4py_is_a_clear_error(monkeypatch):
    from relsim.runtime.parallel import world
    monkeypatch.setenv("PMI_SIZE", "4")
    monkeypatch.setitem(__import__("sys").modules, "mpi4py", None)
    with pytest.raises(rs.ConfigError, match=r"4 ranks, but mpi4py cannot be imported"):
        world._connect()
