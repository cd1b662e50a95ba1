"""Loops that carry state from one iteration to the next (``x = f(x)``: fixed-point and Newton
iterations, ``while`` loops, sub-steps inside a row), reversed by recomputation.

An iteration's values depend on the state at its start, which the replay cannot keep for every
iteration (a row has no storage that grows with the loop). So the replay runs the loop as the
forward row did, counting its iterations n, and the reverse sweep goes through k = n-1 .. 0:
it recomputes the state at the start of iteration k from the state before the loop (k
iterations again), replays iteration k, and sends the adjoint of the state at its end back
through it to the state at its start. That is n (n + 1) / 2 iterations for n, in the memory of
one. The iteration count and the branches are the forward's (a ``while`` loop's test passes no
derivative: the count is an integer).

Loops whose state is only accumulated into (``s += ...``) are the cheaper case of `loops.py`;
a grouping loop carrying state is refused (its iterations cannot be counted off again).
"""
from __future__ import annotations

from dataclasses import dataclass

from ...types import KeyType, KeyVecType, i64
from .. import ir
from .records import Def, adj_name, assigned, is_float, reads_through_keys


@dataclass
class StateLoop:  # a loop carrying state (`StateLoops.state_loop`), for the reverse sweep
    pairs: list  # (state local, its value before the loop, its value at an iteration's end)
    count: str  # the local counting the iterations the forward row ran
    index: tuple  # (loop variable, start, step) of a range loop, or None
    body: list  # the replay of one iteration
    records: list
    own: list  # the float locals an iteration assigns
    names: tuple  # (k, j): the reverse's iteration and recomputation locals
    loc: object


class StateLoops:
    """A mixin of `Adjoint` (with `Loops`): `s_While`, `state_loop` and its reverse,
    `state_loop_adjoint`."""

    def s_While(self, s, env, out):
        self.state_loop(s, env, out, None)

    def state_loop(self, s, env, out, bounds):
        """Replay loop `s` (a while loop, or a range loop with rewritten `bounds`) carrying the
        locals from before it that it assigns (see the module docstring)."""
        loc = s.loc
        carried = sorted({st.name for st in ir.walk_stmts(s.body)
                          if isinstance(st, (ir.Assign, ir.AssignIndex)) and
                          st.name in env.version})
        state = {}
        for name in carried:
            before = env.version[name]
            if name in env.accumulating:
                raise self.refuse(f"a loop carrying local {name!r} from one iteration to the "
                                  f"next inside a loop accumulating into it", loc)
            if isinstance(before, tuple) and before and isinstance(before[0], tuple):
                raise self.refuse(f"a loop carrying matrix local {name!r} from one iteration "
                                  f"to the next (not differentiated yet)", loc)
            parts = before if isinstance(before, tuple) else (before,)
            if any(isinstance(self.types[b], (KeyType, KeyVecType)) for b in parts):
                raise self.refuse(f"a loop carrying key local {name!r} from one iteration to "
                                  f"the next (a read through it would need a reduction through "
                                  f"a key the loop computes)", loc)
            fresh = tuple(self.fresh(f"{name}{i}" if isinstance(before, tuple) else name,
                                     self.types[b], loc) for i, b in enumerate(parts))
            for f, b in zip(fresh, parts):
                out.stmts.append(ir.Assign(loc, f, self.local(b, loc)))
                if is_float(self.types[f]):
                    out.records.append(Def(f, "copy", (("local", b),), loc))
            state[name] = (parts, fresh)
        count = self.fresh("n", i64, loc)
        out.stmts.append(ir.Assign(loc, count, ir.Const(loc, 0)))
        names = (self.fresh("k", i64, loc, declare=False), self.fresh("j", i64, loc,
                                                                      declare=False))
        inner = env.copy()
        for name, (_, fresh) in state.items():
            inner.version[name] = fresh if isinstance(env.version[name], tuple) else fresh[0]
        test = self.rewrite(s.test, inner) if bounds is None else None
        pre, blk = self.loop_body(s, inner, None if bounds is None else i64,
                                  {f for _, fresh in state.values() for f in fresh})
        if (bounds is None or not all(isinstance(b, ir.Const) for b in bounds)) and \
                reads_through_keys(blk.records):
            raise self.refuse("a loop of run-time length carrying state that reads float fields "
                              "through keys depending on the iteration (their adjoint would "
                              "be a reduction inside the loop)", loc)
        pairs = []
        for name, (parts, fresh) in state.items():
            end = inner.version[name]
            pairs += zip(fresh, parts, end if isinstance(end, tuple) else (end,))
        back = [ir.Assign(loc, c, self.local(e, loc)) for c, _, e in pairs if c != e]
        tick = ir.Assign(loc, count, ir.BinOp(loc, "+", ir.Local(loc, count), ir.Const(loc, 1)))
        body = tuple(blk.stmts + back + [tick])
        out.stmts.extend(pre.stmts)
        out.records.extend(pre.records)
        var = inner.version.get(s.var) if bounds is not None else None
        out.stmts.append(ir.While(loc, test, body) if bounds is None else
                         ir.ForRange(loc, var, *bounds, body))
        own = [n for n in dict.fromkeys(assigned(blk.stmts)) if is_float(self.types[n])]
        index = None if bounds is None else (var, bounds[0], bounds[2])
        out.records.append(StateLoop(pairs, count, index, blk.stmts, blk.records, own, names,
                                     loc))
        for name, (_, fresh) in state.items():
            env.version[name] = fresh if isinstance(env.version[name], tuple) else fresh[0]
        self.flush_keeps(out)

    def state_loop_adjoint(self, r) -> list:
        """The reverse of StateLoop `r`: for k = n-1 .. 0, the state at iteration k's start
        recomputed, iteration k replayed, the end state's adjoint sent back to its start."""
        loc = r.loc
        k, j = r.names

        def at(i):
            if r.index is None:
                return []
            var, start, step = r.index
            return [ir.Assign(loc, var, ir.BinOp(loc, "+", start,
                                                 ir.BinOp(loc, "*", ir.Local(loc, i), step)))]

        back = [ir.Assign(loc, c, self.local(e, loc)) for c, _, e in r.pairs if c != e]
        stmts = [ir.Assign(loc, c, self.local(b, loc)) for c, b, _ in r.pairs]
        stmts.append(ir.ForRange(loc, j, ir.Const(loc, 0), ir.Local(loc, k), ir.Const(loc, 1),
                                 tuple(at(j) + list(r.body) + back) or (ir.Pass(loc),)))
        stmts += at(k) + list(r.body)
        stmts += [ir.Assign(loc, adj_name(n), ir.Const(loc, 0.0)) for n in r.own]
        for c, _, e in r.pairs:
            if c != e and is_float(self.types[c]):
                stmts += [ir.Assign(loc, adj_name(e), ir.Local(loc, adj_name(c))),
                          ir.Assign(loc, adj_name(c), ir.Const(loc, 0.0))]
        stmts += self.reverse(r.records)
        last = ir.BinOp(loc, "-", ir.Local(loc, r.count), ir.Const(loc, 1))
        return [ir.ForRange(loc, k, last, ir.Const(loc, -1), ir.Const(loc, -1), tuple(stmts))]
