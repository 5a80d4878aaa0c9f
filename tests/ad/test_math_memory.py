"""libm calls in the private copies touch no memory (``memory(none)``, as Enzyme's
preprocessing marks them): loop bounds read from globals around ``exp``/``log`` are
loaded once, so those loops are counted (cached in sized buffers) instead of while
loops.  A function that reads ``errno`` keeps its calls as they are: the check of
``errno`` after ``exp`` must still see what ``exp`` set."""

from __future__ import annotations

import pytest

from test_loop_caches import _cache_log
from test_never_silent import OPTS, PRELUDE, run
from helpers import enzyme_cc

# a log-sum-exp per point over components whose counts live in globals (set from argc,
# so LLVM can neither fold them nor shrink them to a flag), as in a GMM written with
# file-scope sizes
GLOBAL_BOUNDS = r"""
static int K, D;
double f(const double *w, const double *x, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) {
        double t = 0;
        for (int k = 0; k < K; k++) {
            double q = 0;
            for (int d = 0; d < D; d++) q += exp(w[k * D + d]) * x[i * D + d];
            t += log(1 + q * q);
        }
        s += t;
    }
    return s;
}
int main(int argc, char **argv) {
    (void)argv;
    K = 2 + argc; D = 1 + argc;      /* 3 and 2 */
    enum { N = 4 };
    double w[6], dw[6] = {0}, x[N * 2];
    for (int j = 0; j < 6; j++) w[j] = 0.1 * j - 0.2;
    for (int j = 0; j < N * 2; j++) x[j] = 0.3 * (j % 5) - 0.5;
    __enzyme_autodiff((void *)f, enzyme_dup, w, dw, enzyme_const, x, enzyme_const, N);
    for (int j = 0; j < 6; j++) {
        double h = 1e-6, s = w[j];
        w[j] = s + h; double fp = f(w, x, N);
        w[j] = s - h; double fm = f(w, x, N);
        w[j] = s;
        check("dw", dw[j], (fp - fm) / (2 * h));
        double v[6] = {0};
        v[j] = 1;
        check("fwd", __enzyme_fwddiff_d((void *)f, enzyme_dup, w, v, enzyme_const, x,
                                        enzyme_const, N), dw[j]);
    }
    return fails;
}
"""

ERRNO = r"""
#include <errno.h>
static __attribute__((noinline)) int underflowed(void) { return errno == ERANGE; }
double g(const double *x) {
    errno = 0;
    double y = exp(x[0]) * x[1];
    if (underflowed())     /* exp underflowed: the fallback is x[1] */
        return x[1];
    return y;
}
int main(void) {
    double x[2] = {-1000, 2}, dx[2] = {0};
    __enzyme_autodiff((void *)g, enzyme_dup, x, dx);
    check("underflowed dx0", dx[0], 0);
    check("underflowed dx1", dx[1], 1);
    double y[2] = {0.5, 2}, dy[2] = {0};
    __enzyme_autodiff((void *)g, enzyme_dup, y, dy);
    check("dy0", dy[0], exp(0.5) * 2);
    check("dy1", dy[1], exp(0.5));
    return fails;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_loop_bounds_from_globals_around_libm_calls(tmp_path, opt):
    run(tmp_path, GLOBAL_BOUNDS, opt)


def test_loop_bounds_from_globals_make_counted_loops(tmp_path):
    src = tmp_path / "t.c"
    src.write_text(PRELUDE + GLOBAL_BOUNDS)
    r = enzyme_cc(["-O2", "-v", str(src), "-o", str(tmp_path / "t"), "-lm"], tmp_path)
    assert r.returncode == 0, r.stderr
    _, loops = _cache_log(r.stderr, "f")
    assert loops, r.stderr
    kinds = [kind for _, kind in loops.values()]
    assert not [k for k in kinds if k.startswith("while loop")], kinds


@pytest.mark.parametrize("opt", OPTS)
def test_errno_read_after_a_libm_call_is_kept(tmp_path, opt):
    run(tmp_path, ERRNO, opt)
