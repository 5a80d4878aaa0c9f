/* enzyme.h — the Enzyme C API as EnzymePy accepts it.
 *
 * Build with `enzyme-cc app.c -o app` (or `enzyme-c++`); every call to an
 * entry point below is replaced, at link time, by a call to a derivative
 * function that EnzymePy synthesizes from the function you pass.
 *
 * You may instead declare the entry points and markers yourself, as Enzyme's
 * documentation does: entry points are recognised by name prefix, so
 * `double __enzyme_autodiff_xy(void *, double, double);` works too.
 */
#ifndef ENZYME_PY_ENZYME_H
#define ENZYME_PY_ENZYME_H

#ifdef __cplusplus
extern "C" {
#endif

/* Activity markers: pass the marker's value right before the argument it
 * describes.  The AD pass reads them; a program that only includes this header
 * gets weak definitions, so there is nothing else to define. */
__attribute__((weak)) int enzyme_dup;        /* enzyme_dup, x, dx: x has shadow dx (+= into dx) */
__attribute__((weak)) int enzyme_dupnoneed;  /* as enzyme_dup; the primal result is not needed */
__attribute__((weak)) int enzyme_const;      /* enzyme_const, n: n is inactive */
__attribute__((weak)) int enzyme_out;        /* enzyme_out, x: active by-value float, derivative returned */

/* Reverse mode.  Example:
 *   double f(double x) { return x * x; }
 *   double df = __enzyme_autodiff((void *)f, 3.0);          // 6.0
 *   __enzyme_autodiff((void *)g, enzyme_dup, x, dx, enzyme_const, n);
 */
double __enzyme_autodiff(void *fn, ...);

/* Forward mode.  Example:
 *   double t = __enzyme_fwddiff((void *)f, enzyme_dup, 3.0, 1.0);  // 6.0
 */
double __enzyme_fwddiff(void *fn, ...);

#ifdef __cplusplus
}
#endif

#endif /* ENZYME_PY_ENZYME_H */
