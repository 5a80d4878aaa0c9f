"""qsort on memory that carries derivatives (ad/sort.py): an argsort by integer keys
(records of an int key and a double), sorting doubles by value (the comparator reads
active values: the derivative is still the permutation), and 12-byte float records;
and libc++'s out-of-line std::sort of doubles and floats; reverse and forward mode at -O0
and -O2, against central differences."""

from __future__ import annotations

import subprocess

import pytest
from helpers import build_and_run, parse_values

PROGRAM = r"""
#include <stdio.h>
#include <stdlib.h>
int enzyme_dup, enzyme_const;
double __enzyme_autodiff(void *, ...);
double __enzyme_fwddiff(void *, ...);

struct item { int key; double v; };
static int by_key(const void *a, const void *b) {
  return ((const struct item *)a)->key - ((const struct item *)b)->key;
}
static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}
struct f3 { float w; int key; float v; };
static int f3_key(const void *a, const void *b) {
  return ((const struct f3 *)b)->key - ((const struct f3 *)a)->key;   /* descending */
}

/* weights by rank after sorting by key, by value, and 12-byte records */
double f(const double *x, const int *keys, int n) {
  struct item it[16];
  for (int i = 0; i < n; i++) { it[i].key = keys[i]; it[i].v = x[i]; }
  qsort(it, n, sizeof it[0], by_key);
  double s = 0;
  for (int i = 0; i < n; i++) s += (i + 1) * it[i].v * it[i].v;
  double *y = malloc(n * sizeof(double));
  for (int i = 0; i < n; i++) y[i] = x[i] * (1.0 + 0.1 * i);
  qsort(y, n, sizeof(double), by_value);
  for (int i = 0; i < n; i++) s += (i + 0.5) * y[i];
  free(y);
  struct f3 r[16];
  for (int i = 0; i < n; i++) { r[i].w = (float)x[i]; r[i].key = keys[i]; r[i].v = 2.0f; }
  qsort(r, n, sizeof r[0], f3_key);
  for (int i = 0; i < n; i++) s += (double)(r[i].w * r[i].v) * i;
  return s;
}

int main(void) {
  enum { N = 7 };
  int keys[N] = {5, 1, 4, 0, 6, 2, 3};
  double x[N] = {0.9, -1.3, 0.4, 2.2, -0.7, 1.5, 0.1};
  printf("rev");
  double dx[N] = {0};
  __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_const, keys, enzyme_const, N);
  for (int k = 0; k < N; k++) printf(" %.17g", dx[k]);
  printf("\nfwd");
  for (int k = 0; k < N; k++) {
    double t[N] = {0};
    t[k] = 1;
    printf(" %.17g", __enzyme_fwddiff((void *)f, enzyme_dup, x, t, enzyme_const, keys,
                                      enzyme_const, N));
  }
  printf("\nfd");
  for (int k = 0; k < N; k++) {
    double s = x[k], h = 1e-3;   /* f is quadratic between reorderings */
    x[k] = s + h; double fp = f(x, keys, N);
    x[k] = s - h; double fm = f(x, keys, N);
    x[k] = s;
    printf(" %.17g", (fp - fm) / (2 * h));
  }
  printf("\n");
  return 0;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_qsort_moves_the_derivatives_with_the_elements(tmp_path, opt):
    out = build_and_run(tmp_path, PROGRAM, opt=opt)
    assert out.returncode == 0, out.stderr
    v = {line.split()[0]: [float(t) for t in line.split()[1:]]
         for line in out.stdout.splitlines()}
    for k, fd in enumerate(v["fd"]):
        # central differences are exact for f (piecewise quadratic), up to the rounding of
        # the float records
        assert v["rev"][k] == pytest.approx(fd, rel=1e-4, abs=1e-4)
        assert v["fwd"][k] == pytest.approx(v["rev"][k], rel=1e-12, abs=1e-12)


# libc++ compiles std::sort of float/double into the shared library (an extern template:
# `std::__1::__sort<std::__1::__less<T>&, T*>(T*, T*, __less<T>&)`), so a program built
# against libc++ (macOS, the ziglang clang) calls it instead of inlining the algorithm.
# LIBCXX stands in for the library: an object compiled by plain clang, outside the
# program enzyme-cc sees, under the names libc++ exports.  (With the ziglang clang,
# test_cxx_containers.py's std::sort calls the real one.)
LIBCXX = r"""
void sort_d(double *, double *, void *) __asm__("_ZNSt3__16__sortIRNS_6__lessIdEEPdEEvT0_S5_T_");
void sort_f(float *, float *, void *) __asm__("_ZNSt3__16__sortIRNS_6__lessIffEEPfEEvT0_S5_T_");
#define SORT(T, NAME)                                                    \
  void NAME(T *first, T *last, void *comp) {                             \
    (void)comp;                                                          \
    for (T *i = first + 1; i < last; i++)                                \
      for (T *j = i; j > first && j[0] < j[-1]; j--) {                   \
        T t = j[0]; j[0] = j[-1]; j[-1] = t;                             \
      }                                                                  \
  }
SORT(double, sort_d)
SORT(float, sort_f)
"""

SORTED = r"""
#include <stdio.h>
#include <stdlib.h>
int enzyme_dup, enzyme_const;
double __enzyme_autodiff(void *, ...);
double __enzyme_fwddiff(void *, ...);
struct less { char empty; };
void sort_d(double *, double *, struct less *) __asm__("_ZNSt3__16__sortIRNS_6__lessIdEEPdEEvT0_S5_T_");
void sort_f(float *, float *, struct less *) __asm__("_ZNSt3__16__sortIRNS_6__lessIffEEPfEEvT0_S5_T_");

/* a trimmed, rank-weighted mean: sort, drop the extremes, weight by rank */
double f(const double *x, int n) {
  struct less cmp;
  double *y = malloc(n * sizeof *y);
  float *z = malloc(n * sizeof *z);
  for (int i = 0; i < n; i++) { y[i] = x[i] * x[i] - x[i]; z[i] = (float)(2 * x[i]); }
  sort_d(y, y + n, &cmp);
  sort_f(z + 1, z + n, &cmp);       /* part of an array */
  double s = 0;
  for (int i = 1; i < n - 1; i++) s += i * y[i] + z[i] * z[i] * 0.5;
  s += z[0];
  free(y); free(z);
  return s;
}

int main(void) {
  enum { N = 6 };
  double x[N] = {0.9, -1.3, 0.4, 2.2, -0.7, 1.6};
  printf("rev");
  double dx[N] = {0};
  __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_const, N);
  for (int k = 0; k < N; k++) printf(" %.17g", dx[k]);
  printf("\nfwd");
  for (int k = 0; k < N; k++) {
    double t[N] = {0};
    t[k] = 1;
    printf(" %.17g", __enzyme_fwddiff((void *)f, enzyme_dup, x, t, enzyme_const, N));
  }
  printf("\nfd");
  for (int k = 0; k < N; k++) {
    double s = x[k], h = 1e-3;      /* f is quadratic between reorderings */
    x[k] = s + h; double fp = f(x, N);
    x[k] = s - h; double fm = f(x, N);
    x[k] = s;
    printf(" %.17g", (fp - fm) / (2 * h));
  }
  printf("\n");
  return 0;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_libcxx_out_of_line_std_sort(tmp_path, opt):
    from enzyme_py.driver.clang import find_clang
    clang = find_clang()
    lib = tmp_path / "libcxx_sort.c"
    lib.write_text(LIBCXX)
    obj = tmp_path / "libcxx_sort.o"
    subprocess.run([*clang.command(False), *clang.compat_flags([]), "-O2", "-c", str(lib),
                    "-o", str(obj)], check=True, capture_output=True)
    out = build_and_run(tmp_path, SORTED, opt=opt, extra=[str(obj)])
    assert out.returncode == 0, out.stderr
    v = parse_values(out.stdout)
    for k, fd in enumerate(v["fd"]):
        # central differences are exact but for the rounding of the floats (~1e-4 here);
        # a wrong permutation is off by O(1)
        assert v["rev"][k] == pytest.approx(fd, rel=1e-3, abs=1e-3)
        assert v["fwd"][k] == pytest.approx(v["rev"][k], rel=1e-12, abs=1e-12)
