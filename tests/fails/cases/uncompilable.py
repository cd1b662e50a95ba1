"""Kernel sources Python itself refuses to compile, so no test module can define them.

Not imported: tests.fails.helpers.kernel_from_file builds each kernel from this text.
"""


def break_outside_loop(r):
    r.out = r.x
    if r.x > 1.0:
        break  # <- here


def continue_outside_loop(r):
    continue  # <- here
