"""Out of memory inside a gradient: the runtime's tape and cache growth (realloc) and
the loop buffers (malloc) check their result, print which function's tape or cache
could not grow and by how much, and abort() — no null dereference.  Run under an
address-space limit (RLIMIT_AS, what ``ulimit -v`` sets)."""

from __future__ import annotations

import re
import signal
import subprocess
import sys

import pytest

from helpers import enzyme_cc

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="RLIMIT_AS semantics are Linux's")

OOM = r"""
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
int enzyme_const;
double __enzyme_autodiff(void *, ...);
/* a while loop (its exit depends on the data): its per-iteration cache grows */
double f(double x, double limit) {
    double y = x;
    while (y < limit) y += 0.5 + 0.25 * sin(y * x);
    return y;
}
/* a counted loop calling a function: every call pushes its frame on the tape */
__attribute__((noinline)) double step(double y) {
    double a = sin(y), b = cos(a * y), c = exp(-b * b), d = log(2.0 + a * c);
    double e = sqrt(1.0 + d * d), h = atan(e * b), k = tanh(h * a), m = sin(k + d);
    return 0.5 * y + 0.1 * (a * b + c * d + e * h + k * m);
}
double g(double x, long n) {
    for (long k = 0; k < n; k++) x = step(x);
    return x;
}
__attribute__((noinline)) double df(double lim) {
    return __enzyme_autodiff((void *)f, 0.5, enzyme_const, lim);
}
__attribute__((noinline)) double dg(long n) { return __enzyme_autodiff((void *)g, 0.5, n); }
int main(int argc, char **argv) {
    double d = argv[1][0] == 'f' ? df(atof(argv[2])) : dg(atol(argv[2]));
    printf("%c %.17g\n", argv[1][0], d);
    return 0;
}
"""

LIMIT = 400 << 20   # bytes of address space


def _limited():
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _central(fn, x, h=1e-6):
    return (fn(x + h) - fn(x - h)) / (2 * h)


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_out_of_memory_in_the_gradient_aborts_with_a_message(tmp_path, opt):
    src = tmp_path / "oom.c"
    src.write_text(OOM)
    exe = tmp_path / "oom"
    r = enzyme_cc([opt, str(src), "-o", str(exe), "-lm"], tmp_path)
    assert r.returncode == 0, r.stderr

    def run(*args, limited=True):
        return subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=120,
                              preexec_fn=_limited if limited else None)

    # small runs under the limit: the gradients are right
    import math

    def f(x, limit=40.0):
        y = x
        while y < limit:
            y += 0.5 + 0.25 * math.sin(y * x)
        return y

    def step(y):
        a = math.sin(y)
        b = math.cos(a * y)
        c = math.exp(-b * b)
        d = math.log(2.0 + a * c)
        e = math.sqrt(1.0 + d * d)
        h = math.atan(e * b)
        k = math.tanh(h * a)
        m = math.sin(k + d)
        return 0.5 * y + 0.1 * (a * b + c * d + e * h + k * m)

    def g(x, n=50):
        for _ in range(n):
            x = step(x)
        return x

    for arg, fn in (("40", f), ("50", g)):
        ok = run("f" if fn is f else "g", arg)
        assert ok.returncode == 0, ok.stderr
        got = float(ok.stdout.split()[1])
        assert got == pytest.approx(_central(fn, 0.5), rel=1e-6, abs=1e-9)

    cases = [
        # 2^30 iterations of the while loop: its cache (16 bytes a record) cannot grow
        ("f", "1e9", r"growing the cache of f"),
        # 10^7 calls of step, 88-byte frames: the tape cannot grow (g's own buffer
        # of 80 MB fits)
        ("g", "10000000", r"growing the tape of step"),
        # 10^9 iterations: g's per-iteration buffer (8 GB) is allocated on entry
        ("g", "1000000000", r"allocating the cache of g"),
    ]
    for which, arg, what in cases:
        out = run(which, arg)
        assert out.returncode == -signal.SIGABRT, (which, arg, out.returncode, out.stderr)
        m = re.fullmatch(rf"enzyme: out of memory {what}: (\d+) bytes\n", out.stderr)
        assert m, (which, arg, out.stderr)
        assert int(m.group(1)) > LIMIT // 4, out.stderr
        assert out.stdout == ""
