"""The progress line of long `relsim run`s (simulations/_progress.py): on a terminal only,
after its delay, throttled, with the rate and the time left, erased at the end."""
import io

from relsim_simulations._progress import Progress


class Terminal(io.StringIO):
    def isatty(self):
        return True


class Clock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


def test_shown_after_the_delay_throttled_and_erased():
    out, clock = Terminal(), Clock()
    bar = Progress(1000, stream=out, delay=2.0, every=0.5, clock=clock)
    clock.t += 1.0
    bar.update(100)
    assert out.getvalue() == ""  # a short run prints nothing
    clock.t += 1.5  # 2.5 s in: 250 steps done
    bar.update(250)
    first = out.getvalue()
    assert first.startswith("\r") and "25% 250/1,000 steps" in first
    assert "100 steps/s" in first and "8 s left" in first, first  # 7.5 s at this rate
    clock.t += 0.1
    bar.update(260)
    assert out.getvalue() == first  # redrawn at most every 0.5 s
    clock.t += 0.5
    bar.update(400, "n = 64")
    assert out.getvalue().endswith("n = 64\x1b[K")
    bar.close()
    assert out.getvalue().endswith("\r\x1b[K")  # the results start on a clean line


def test_nothing_where_nobody_watches():
    out, clock = io.StringIO(), Clock()  # a pipe, a log file, a test's capture
    with Progress(10, stream=out, delay=0.0, clock=clock) as bar:
        for k in range(10):
            clock.t += 1.0
            bar.update(k + 1)
    assert out.getvalue() == ""


def test_simulated_time_and_long_runs():
    bar = Progress(0.01, "simulated time", stream=io.StringIO())
    line = bar.line(0.0025, 30.0, "cycle 120")
    assert line.startswith(" 25% 0.0025/0.01 simulated time")
    assert "1 min 30 s left" in line and line.endswith("cycle 120")
    assert "h" in Progress(100, stream=io.StringIO()).line(1, 100.0)  # 9900 s: hours
    assert "? left" in Progress(100, stream=io.StringIO()).line(0, 5.0)
