"""Loops in the adjoint pass (`generate.Adjoint`): a loop whose locals from before it are only
accumulated into is replayed as the same loop, and reversed by running it again, each
iteration recomputed, then its adjoints sent back; reads that do not depend on the iteration
are hoisted before it, so their adjoint reductions sit outside the loop."""
from __future__ import annotations

from ...errors import GradientError
from ...types import KeyType, i64
from .. import ir
from ..analysis.access import stmt_exprs
from . import transpose
from .records import (
    Block,
    Def,
    Keep,
    Loop,
    assigned,
    is_float,
    reads_through_keys,
    safe_key,
    without_reads_through,
)


class Loops:
    """A mixin of `Adjoint`: `s_ForRange`, `s_ForGroup` and `hoisted`."""

    def hoisted(self, key, out) -> Block:
        """Where a read through `key` (None: a Global) goes: before the outermost enclosing
        loop whose iterations it does not depend on, so its adjoint, a reduction, is made once,
        outside the loop (where relsim can always reduce); else `out`. Only reads that cannot
        fail move (the row's own key, key fields, constant entries of key vectors): a read
        a branch guards (``rs.at(R, i)``, ``c(i, 0)``) stays where it is."""
        if key is not None and not safe_key(key):
            return out
        names = {n.name for n in key.walk() if isinstance(n, ir.Local)} if key else set()
        for before, pre in self.loop_blocks:
            if names <= before:
                return pre
        return out

    def s_ForRange(self, s, env, out):
        bounds = tuple(self.rewrite(b, env) for b in (s.start, s.stop, s.step))
        if self.carries_state(s, env):  # x = f(x): reversed by recomputation
            return self.state_loop(s, env, out, bounds)
        dynamic = not all(isinstance(b, ir.Const) for b in (s.start, s.stop, s.step))
        self.loop(s, env, out, i64, lambda var, body: ir.ForRange(s.loc, var, *bounds, body),
                  dynamic)

    def s_ForGroup(self, s, env, out):
        group = self.rewrite(s.group.key, env)
        name = s.group.grouping.name
        self.loop(s, env, out, KeyType(s.group.grouping.source),
                  lambda var, body: ir.ForEach(s.loc, var, ir.Attr(s.loc, group, name), body),
                  True)

    def loop(self, s, env, out, var_type, header, dynamic):
        """A loop whose locals from before it are only accumulated into (``x = x + e``, ``x
        += e``, ``x -= e``, read nowhere else in it): each iteration's values then depend on
        the loop variable and on values from before the loop only, so the reverse sweep runs
        the loop again, recomputing an iteration's values, then sending their adjoints back;
        an accumulator's adjoint is the same in every iteration. Reads that do not depend on
        the iteration are made once, before the loop (`hoisted`)."""
        carried = self.accumulators(s, env)
        inner = env.copy()
        for name in carried:
            if name in env.accumulating:  # an enclosing loop's accumulator: the same local
                inner.version[name] = env.accumulating[name]
                continue
            before = env.version[name]
            accs = tuple(self.accumulator(f"{name}{i}", c, s.loc, out)
                         for i, c in enumerate(before)) if isinstance(before, tuple) else \
                self.accumulator(name, before, s.loc, out)
            inner.version[name] = inner.accumulating[name] = accs
        pre, blk = self.loop_body(s, inner, var_type)
        var = inner.version[s.var]
        if dynamic and isinstance(s, ir.ForGroup) and reads_through_keys(blk.records):
            # its rows' reads go to the transposed kernel (`transpose.py`), the rest stays
            t = transpose.plan(self, s, self.path, carried, env)
            blk.records = without_reads_through(blk.records, var)
            self.transposed.append(t)
            self.pending_keeps += [Keep(field, inner.accumulating[n], s.loc)
                                   for n, _, field in t.kept]
            self.pending_keeps += [Keep(field, names, s.loc, value=True)
                                   for _, _, field, names in t.values]
        if dynamic and reads_through_keys(blk.records):
            raise self.refuse("a loop over a grouping (or a range of run-time length) that "
                              "reads float fields through keys other than its rows': their "
                              "adjoint is a reduction through those keys inside the loop, "
                              "which relsim cannot run (loops over constant ranges are "
                              "differentiated, and grouping loops reading their own rows' "
                              "fields are transposed)", s.loc)
        out.stmts.extend(pre.stmts)
        out.records.extend(pre.records)
        accs = {c for a in inner.accumulating.values()
                for c in (a if isinstance(a, tuple) else (a,))}
        own = [n for n in dict.fromkeys(assigned(blk.stmts))
               if n not in accs and is_float(self.types[n])]
        out.stmts.append(header(var, tuple(blk.stmts) or (ir.Pass(s.loc),)))
        out.records.append(Loop(lambda body: header(var, body), blk.stmts, blk.records, own,
                                 s.loc))
        self.flush_keeps(out)
        for name in carried:
            env.version[name] = inner.accumulating[name]

    def loop_body(self, s, inner, var_type, state=frozenset()):
        """(hoisted reads, the replay of one iteration) of loop `s` in `inner`, its variable
        (of `var_type`; None: a while loop has none) a new local there. Reads that depend
        neither on the iteration nor on the `state` locals (`state_loops`) are hoisted."""
        pre = Block()
        self.loop_blocks.append((set(self.types) - state, pre))
        self.loops += 1
        if var_type is not None:
            inner.version[s.var] = self.fresh(s.var, var_type, s.loc, declare=False)
        blk = Block()
        self.path.append((s, None))
        try:
            self.block(s.body, inner, blk)
        finally:
            self.path.pop()
            self.loops -= 1
            self.loop_blocks.pop()
        return pre, blk

    def flush_keeps(self, out) -> None:
        """After the outermost loop (its accumulators' adjoints are final there): the
        transposed loops' `Keep` records."""
        if not self.loops:
            out.records.extend(self.pending_keeps)
            self.pending_keeps = []

    def carries_state(self, s, env) -> bool:
        """Whether range loop `s` assigns a local from before it other than by accumulating
        into it (or reads one it accumulates into): a loop carrying state (`state_loops`)."""
        try:
            self.accumulators(s, env)
        except GradientError:
            return True
        return False

    def accumulator(self, hint, before, loc, out) -> str:
        """A new local for an accumulator (a vector's: one per component), starting from the
        value `before` holds."""
        acc = self.fresh(hint, self.types[before], loc)
        out.stmts.append(ir.Assign(loc, acc, self.local(before, loc)))
        if is_float(self.types[acc]):
            out.records.append(Def(acc, "copy", (("local", before),), loc))
        return acc

    def accumulators(self, s, env) -> list:
        """The locals from before loop `s` it assigns: each only accumulated into."""
        for st in ir.walk_stmts(s.body):
            if isinstance(st, ir.AssignIndex) and st.name in env.version:
                raise self.refuse(f"a loop that assigns an entry of local {st.name!r} from "
                                  f"before the loop (accumulate the whole vector instead: "
                                  f"{st.name} = {st.name} + ...)", st.loc)
        carried = sorted({st.name for st in ir.walk_stmts(s.body)
                          if isinstance(st, ir.Assign) and st.name in env.version})
        allowed = set()
        for name in carried:
            v = env.version[name]
            if isinstance(v, tuple) and v and isinstance(v[0], tuple):
                raise self.refuse(f"a loop accumulating into matrix local {name!r} (not "
                                  f"differentiated yet)", s.loc)
        for st in ir.walk_stmts(s.body):
            if isinstance(st, ir.Assign) and st.name in carried:
                v = st.value
                if not (isinstance(v, ir.BinOp) and v.op in ("+", "-") and
                        isinstance(v.left, ir.Local) and v.left.name == st.name):
                    raise self.refuse(f"a loop that reassigns local {st.name!r} (from before "
                                      f"the loop) other than by accumulating into it (x += ...)",
                                      st.loc)
                allowed.add(id(v.left))
        for st in ir.walk_stmts(s.body):
            for e in stmt_exprs(st):
                for n in e.walk():
                    if isinstance(n, ir.Local) and n.name in carried and id(n) not in allowed:
                        raise self.refuse(f"a loop that reads local {n.name!r} while "
                                          f"accumulating into it", n.loc)
        return carried
