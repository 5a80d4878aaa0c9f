"""Memory without a shadow (constant data reached through globals) must never
receive adjoints: at -O2, clang turns copy loops into memcpy, whose adjoint
once accumulated into the source's primal memory."""

import pytest

from helpers import build_and_run, parse_values

SOURCE = r"""
#include <stdio.h>
#include <stdlib.h>
int enzyme_dup, enzyme_const;
void __enzyme_autodiff(void *, ...);
static double *G;

__attribute__((noinline)) double f(double *x, int n) {
    double *state = malloc(n * sizeof(double));
    for (int i = 0; i < n; i++) state[i] = G[i];          /* memcpy at -O2 */
    double s = 0;
    for (int i = 0; i < n; i++) { state[i] *= x[i]; s += state[i] * state[i]; }
    free(state);
    return s;
}

int main(void) {
    enum { N = 6 };
    double x[N], dx[N] = {0};
    G = malloc(N * sizeof(double));
    for (int i = 0; i < N; i++) { G[i] = 0.5 + i; x[i] = 1.0 + 0.25 * i; }
    for (int rep = 0; rep < 2; rep++) {
        for (int i = 0; i < N; i++) dx[i] = 0;
        __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_const, N);
    }
    printf("G"); for (int i = 0; i < N; i++) printf(" %.17g", G[i]); printf("\n");
    printf("dx"); for (int i = 0; i < N; i++) printf(" %.17g", dx[i]); printf("\n");
    return 0;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_constant_source_of_memcpy_is_untouched(tmp_path, opt):
    out = build_and_run(tmp_path, SOURCE, opt)
    assert out.returncode == 0, out.stderr
    vals = parse_values(out.stdout)
    g = [0.5 + i for i in range(6)]
    x = [1.0 + 0.25 * i for i in range(6)]
    assert vals["G"] == g
    assert vals["dx"] == pytest.approx([2 * x[i] * g[i] ** 2 for i in range(6)], rel=1e-14)
