/* enzyme.h — the Enzyme C API as EnzymePy accepts it.
 *
 * Build with `enzyme-cc app.c -o app` (or `enzyme-c++`); every call to an
 * entry point below is replaced, at link time, by a call to a derivative
 * function that EnzymePy synthesizes from the function you pass.
 *
 * C++: <enzyme/utils> (or <enzyme/enzyme>) has Enzyme's C++ interface,
 * enzyme::autodiff<enzyme::Reverse>(f, enzyme::Active{x}, enzyme::Duplicated{p, dp}).
 *
 * You may instead declare the entry points and markers yourself, as Enzyme's
 * documentation does: entry points are recognised by name prefix, so
 * `double __enzyme_autodiff_xy(void *, double, double);` works too (use one
 * suffix per prototype, and exact prototypes for float arguments: `...`
 * promotes float to double).
 */
#ifndef ENZYME_PY_ENZYME_H
#define ENZYME_PY_ENZYME_H

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------
 * Argument markers: pass the marker's value right before the argument it
 * describes.  The AD pass reads them; a program that only includes this header
 * gets weak definitions, so there is nothing else to define.  Defaults without
 * a marker: pointers are duplicated (a shadow follows), integers are constant,
 * floats are enzyme_out in reverse mode and duplicated (a tangent follows) in
 * forward mode.  Any other enzyme_* name is an error.
 * ------------------------------------------------------------------------- */

/* x has shadow dx (reverse: derivatives are added into dx; forward: dx is the tangent).
 *   __enzyme_autodiff((void *)f, enzyme_dup, x, dx);  __enzyme_fwddiff((void *)g, enzyme_dup, 2.0, 1.0); */
__attribute__((weak)) int enzyme_dup;
/* as enzyme_dup; the primal output need not be computed.
 *   __enzyme_fwddiff((void *)h, enzyme_dup, x, v, enzyme_dupnoneed, y, dy); */
__attribute__((weak)) int enzyme_dupnoneed;
/* the argument is inactive.   __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_const, n); */
__attribute__((weak)) int enzyme_const;
/* active by-value float (reverse mode), its derivative is returned.
 *   double dx = __enzyme_autodiff((void *)sq, enzyme_out, 3.0); */
__attribute__((weak)) int enzyme_out;
/* vector mode: N shadows per duplicated argument; forward: N tangents returned; reverse:
 * each enzyme_out argument's N derivatives (struct { double da[N]; double db[N]; }), the
 * reverse sweep run once per lane (the function must not read memory it writes);
 * __enzyme_batch: N values per argument.
 *   D4 t = __enzyme_fwddiff_4((void *)f, enzyme_width, 4, enzyme_dup, x, v0, v1, v2, v3);
 *   D2 g = __enzyme_autodiff_2((void *)f, enzyme_width, 2, a, x, dx0, dx1);  // g.d[k]: df/da, lane k */
__attribute__((weak)) int enzyme_width;
/* vector mode, the N shadows as one pointer and a byte stride, the stride first (Enzyme's
 * order; shadow k = (char *)dxs + k * stride).
 *   __enzyme_fwddiff_4((void *)f, enzyme_width, 4, enzyme_dupv, (long)sizeof dirs[0], x, dirs); */
__attribute__((weak)) int enzyme_dupv;
/* as enzyme_dupv; the primal output need not be computed.
 *   __enzyme_fwddiff_v((void *)h, enzyme_width, 2, enzyme_dupv, 24L, x, v, enzyme_dupnoneedv, 24L, y, dy); */
__attribute__((weak)) int enzyme_dupnoneedv;
/* __enzyme_batch: one value for every lane.
 *   R4 r = __enzyme_batch_4((void *)f, enzyme_width, 4, x0, x1, x2, x3, enzyme_scalar, y); */
__attribute__((weak)) int enzyme_scalar;
/* __enzyme_batch: N values, one per lane (the default).
 *   R2 r = __enzyme_batch_2((void *)f, enzyme_width, 2, enzyme_vector, x0, x1); */
__attribute__((weak)) int enzyme_vector;
/* split mode: the tape lives in caller memory of N bytes (at least __enzyme_augmentsize), with enzyme_tape.
 *   __enzyme_augmentfwd((void *)f, enzyme_allocated, 256, enzyme_tape, buf, enzyme_dup, x, dx); */
__attribute__((weak)) int enzyme_allocated;
/* split mode: the tape to use.   __enzyme_reverse((void *)f, enzyme_dup, x, dx, 1.0, enzyme_tape, t); */
__attribute__((weak)) int enzyme_tape;
/* split mode: __enzyme_reverse leaves the tape as it found it (not freed, not used up),
 * so that the reverse pass can run on it again; a last __enzyme_reverse without
 * enzyme_nofree frees it.
 *   __enzyme_reverse((void *)f, enzyme_dup, x, dx, 1.0, enzyme_nofree, t); */
__attribute__((weak)) int enzyme_nofree;

/* Return markers (anywhere among the arguments). */
/* also return the primal result (reverse: after the derivatives; forward: before the tangent).
 *   struct { double y, t; } r = __enzyme_fwddiff_p((void *)f, enzyme_primal_return, enzyme_dup, x, 1.0); */
__attribute__((weak)) int enzyme_primal_return;
/* return nothing about the result.   __enzyme_fwddiff_v((void *)f, enzyme_noret, enzyme_dup, x, dx); */
__attribute__((weak)) int enzyme_noret;
/* the result is inactive (reverse: no seed; forward: the primal is returned).
 *   __enzyme_autodiff((void *)f, enzyme_const_return, enzyme_dup, x, dx); */
__attribute__((weak)) int enzyme_const_return;
/* the (float) result is active: the default.   __enzyme_autodiff((void *)f, enzyme_active_return, x); */
__attribute__((weak)) int enzyme_active_return;
/* the result is duplicated (forward: its tangent is returned): the default in forward mode.
 *   double t = __enzyme_fwddiff((void *)f, enzyme_dup_return, enzyme_dup, x, 1.0); */
__attribute__((weak)) int enzyme_dup_return;

/* ---------------------------------------------------------------------------
 * Entry points
 * ------------------------------------------------------------------------- */

/* Reverse mode: returns the derivatives of the enzyme_out arguments (one: that
 * value; several: a struct of them in argument order) and adds into dup shadows.
 *   double f(double x) { return x * x; }
 *   double df = __enzyme_autodiff((void *)f, 3.0);          // 6.0 */
double __enzyme_autodiff(void *fn, ...);

/* Forward mode: returns the tangent of fn's result.
 *   double t = __enzyme_fwddiff((void *)f, enzyme_dup, 3.0, 1.0);  // 6.0 */
double __enzyme_fwddiff(void *fn, ...);

/* Higher-order derivatives: a function that calls an entry point may itself be
 * differentiated (any nesting, any depth).
 *   void grad(const double *x, double *dx, int n) {
 *     __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_const, n); }
 *   // Hessian-vector product: hv = H(x) v (dx gets the gradient)
 *   __enzyme_fwddiff((void *)grad, enzyme_dup, x, v, enzyme_dup, dx, hv, enzyme_const, n); */

/* What the differentiated code may do besides plain C (both modes):
 * - call through function pointers and C++ virtual functions: the candidates are the
 *   functions the program defines whose address it takes, of the call's type; the
 *   derivative dispatches on the pointer at run time (one the program does not define:
 *   "enzyme: an indirect call ... reached a function that is not one of the N
 *   candidate(s)" on stderr, abort()); no candidate at all: a compile error;
 * - C++ exceptions enabled: calls that may throw are differentiated on their normal path;
 *   a throw inside a derivative at run time is not unwound ("enzyme: an exception was
 *   thrown inside the derivative of 'f'" on stderr, abort()), not even into a try/catch;
 * - std::vector, std::map, std::unordered_map (at -O1 and above) holding active values. */

/* Split mode, forward half: runs fn, returns the tape (declare it to return
 * struct { void *tape; double result; } to get the result as well).
 *   void *tape = __enzyme_augmentfwd((void *)f, enzyme_dup, x, dx); */
void *__enzyme_augmentfwd(void *fn, ...);

/* Split mode, reverse half: fn's arguments, the differential of a float result,
 * then the tape (freed unless enzyme_nofree / enzyme_allocated).
 *   __enzyme_reverse((void *)f, enzyme_dup, x, dx, 1.0, tape); */
void __enzyme_reverse(void *fn, ...);

/* Split mode: bytes to allocate for enzyme_allocated (tapes of fixed size only).
 *   long n = __enzyme_augmentsize((void *)f, enzyme_dup, x, dx); */
long __enzyme_augmentsize(void *fn, ...);

/* Batched primal: fn once per lane, the N results returned (declare the entry point to
 * return struct { double r[N]; }); each argument is N values or enzyme_scalar, v.
 *   typedef struct { double r[4]; } R4;  R4 __enzyme_batch_4(void *, ...);
 *   R4 y = __enzyme_batch_4((void *)f, enzyme_width, 4, x0, x1, x2, x3, enzyme_scalar, c); */

/* Type hints: what the memory behind p holds, for memcpy/memmove/memset of memory whose
 * type EnzymePy cannot see (an untyped buffer copied in a helper); a copy of such
 * memory that carries derivatives is a compile error until it has a hint.  The calls
 * are removed at compile time.
 *   __enzyme_double(buf, n * sizeof(double));  memcpy(buf, src, n * sizeof(double)); */
void __enzyme_double(void *p, unsigned long bytes);
void __enzyme_float(void *p, unsigned long bytes);
void __enzyme_integer(void *p, unsigned long bytes);
void __enzyme_pointer(void *p, unsigned long bytes);

/* ---------------------------------------------------------------------------
 * Registration globals (define them in a file built with enzyme-cc).  A rule is
 * for the array's first element; the global's suffix only makes its name unique
 * (void *__enzyme_register_gradient_fast[3] = {(void *)Q_rsqrt, ...} is Q_rsqrt's).
 * ------------------------------------------------------------------------- */

/* Custom reverse rule: aug(args, each pointer followed by its shadow) returns
 * {void *tape, result} (just the tape when f returns void); rev(args, shadows,
 * d result if a float, tape) returns a struct of the float arguments' derivatives.
 *   void *__enzyme_register_gradient_f[3] = {(void *)f, (void *)f_aug, (void *)f_rev};
 * Custom forward rule: fwd(each float/pointer argument followed by its tangent) returns the tangent.
 *   void *__enzyme_register_derivative_f[2] = {(void *)f, (void *)f_fwd};
 * Split-forward rule (checked; used by __enzyme_fwdsplit, which EnzymePy does not support).
 *   void *__enzyme_register_splitderivative_f[3] = {(void *)f, (void *)f_aug, (void *)f_fwd};
 * When optimising, enzyme-cc keeps f out of line (noinline) in the file that registers
 * its rule, so the inliner cannot bypass the rule; a rule registered in another file
 * than f's definition needs __attribute__((noinline)) on f.
 * Give f the derivative of a libm function:
 *   void *__enzyme_function_like[2] = {(void *)mylog1p, (void *)"log1p"};
 * Inactive functions (calls carry no derivative) and globals (stores of active values are allowed and dropped):
 *   void *__enzyme_inactivefn[] = {(void *)logger};
 *   void *__enzyme_inactive_global[] = {(void *)&counter};
 *   __attribute__((annotate("enzyme_inactive"))) double logger(double);   (functions and globals)
 * Other writable globals (without pointers inside) into which differentiated code stores
 * floating-point values (a scratch array, an arena) get a shadow global, zeroed before
 * each derivative call: what they held before the call has derivative zero. */

#ifdef __cplusplus
}
#endif

#endif /* ENZYME_PY_ENZYME_H */
