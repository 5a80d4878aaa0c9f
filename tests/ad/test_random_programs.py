"""Randomised: hypothesis generates straight-line and looping C functions of three
doubles (and an array), enzyme-cc differentiates them, and the gradients are
compared with central finite differences computed by the same program."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings, strategies as st

from helpers import build_and_run, parse_values

PROGRAMS_TRIED = []

LEAVES = ["x0", "x1", "x2", "s", "1.5", "0.25", "a[i % 4]"]


@st.composite
def expr(draw, depth=3, in_loop=False):
    leaves = LEAVES if in_loop else [x for x in LEAVES if x not in ("a[i % 4]",)]
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        return draw(st.sampled_from(leaves))
    kind = draw(st.integers(0, 6))
    a = draw(expr(depth - 1, in_loop))
    if kind == 0:
        return f"({a} + {draw(expr(depth - 1, in_loop))})"
    if kind == 1:
        return f"({a} - {draw(expr(depth - 1, in_loop))})"
    if kind == 2:
        return f"({a} * {draw(expr(depth - 1, in_loop))})"
    if kind == 3:
        b = draw(expr(depth - 1, in_loop))
        return f"({a} / (1.0 + {b} * {b}))"
    if kind == 4:
        return f"{draw(st.sampled_from(['sin', 'cos', 'tanh', 'atan']))}({a})"
    if kind == 5:
        return f"sqrt(1.0 + {a} * {a})"
    return f"({a} > 0.3 ? {a} * 2.0 - 0.3 : {a})"


@st.composite
def program(draw, k):
    lines = [f"double f{k}(double x0, double x1, double x2) {{",
             "  double s = 0.5 * x0;", "  double a[4] = {x0, x1, x2, x0 * x1};"]
    for _ in range(draw(st.integers(1, 3))):
        if draw(st.booleans()):
            n = draw(st.integers(1, 5))
            lines.append(f"  for (int i = 0; i < {n}; i++) {{")
            lines.append(f"    s = 0.5 * s + 0.3 * tanh({draw(expr(2, True))});")
            if draw(st.booleans()):
                lines.append("    a[i % 4] = 0.9 * a[(i + 1) % 4] + 0.1 * s;")
            lines.append("  }")
        else:
            lines.append(f"  s = s + 0.2 * tanh({draw(expr(3))});")
    lines.append("  return s + 0.1 * a[3];")
    lines.append("}")
    return "\n".join(lines)


HEADER = """#include <math.h>
#include <stdio.h>
typedef struct { double d0, d1, d2; } G3;
G3 __enzyme_autodiff(void *, double, double, double);
static double fd(double (*f)(double, double, double), double *x, int k) {
  double s = x[k], h = 1e-6 * (fabs(s) > 1 ? fabs(s) : 1), p = s + h, m = s - h;
  x[k] = p; double fp = f(x[0], x[1], x[2]);
  x[k] = m; double fm = f(x[0], x[1], x[2]);
  x[k] = s; return (fp - fm) / (p - m);
}
"""


@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.integers(0, 10**6), min_size=1, max_size=1), st.data())
def test_random_programs_match_finite_differences(tmp_path_factory, seed, data):
    n = 6
    progs = [data.draw(program(k)) for k in range(n)]
    opt = data.draw(st.sampled_from(["-O0", "-O2"]))
    x = [data.draw(st.floats(-1.5, 1.5)) for _ in range(3)]
    main = ["int main(void) {", f"  double x[3] = {{{x[0]!r}, {x[1]!r}, {x[2]!r}}};"]
    for k in range(n):
        main.append(f"  {{ G3 g = __enzyme_autodiff((void*)f{k}, x[0], x[1], x[2]);")
        main.append(f'    printf("ad{k} %.17g %.17g %.17g\\n", g.d0, g.d1, g.d2);')
        main.append(f'    printf("fd{k} %.17g %.17g %.17g\\n", fd(f{k}, x, 0), fd(f{k}, x, 1), '
                    f'fd(f{k}, x, 2)); }}')
    main.append("  return 0; }")
    src = HEADER + "\n".join(progs) + "\n" + "\n".join(main)
    tmp = tmp_path_factory.mktemp("rand")
    out = build_and_run(tmp, src, opt)
    assert out.returncode == 0, out.stderr
    vals = parse_values(out.stdout)
    PROGRAMS_TRIED.append(n)
    for k in range(n):
        for got, want in zip(vals[f"ad{k}"], vals[f"fd{k}"]):
            assert abs(got - want) <= 1e-5 * max(abs(want), 1.0), (progs[k], got, want, opt)


def teardown_module(module):
    import sys
    print(f"\nrandom programs tried: {sum(PROGRAMS_TRIED)}", file=sys.stderr)


# ------------------------------------------------ the generated-program campaign's sample

def test_campaign_fixed_sample():
    """A fixed sample of the campaign (tests/ad/campaign.py): loops, branches, calls,
    malloc/free, overwrites, memcpy through helpers, overlapping memmove, realloc in a
    callee, double atomics, structs, unions, float mixes, allocation wrappers, function
    pointer tables and libm; -O0 and -O2; no wrong derivative, no crash, no traceback."""
    import campaign

    wrong = []
    results, counts, _ = campaign.campaign(0, 24, jobs=2, batch=12,
                                           log=lambda s: wrong.append(s))
    assert not wrong, "\n".join(wrong)
    assert counts["right"] >= 30, campaign.summary(results, counts)


def test_campaign_classifies_a_wrong_derivative():
    import campaign

    x, v = [0.1, 0.2, 0.3, 0.4], [1.0, -1.0, 0.5, 0.0]
    fd = [1.0, 2.0, 3.0, 4.0]
    vals = {"R7": fd, "T7": [1.0 - 2.0 + 1.5], "F7_0": fd, "F7_1": fd}
    assert campaign.classify(7, vals, x, v, False)[0] == "right"
    vals["R7"] = [1.0, 2.0, 3.0, 0.0]     # forward agrees with it: only differences see it
    assert campaign.classify(7, vals, x, v, False)[0] == "WRONG"
    vals["R7"], vals["T7"] = fd, [0.0]    # reverse right, forward wrong
    assert campaign.classify(7, vals, x, v, False)[0] == "WRONG"
    vals["T7"], vals["F7_1"] = [0.5], [1.0, 2.0, 3.0, 9.0]
    vals["R7"] = [1.0, 2.0, 3.0, 0.0]     # the two step sizes disagree: a kink nearby
    assert campaign.classify(7, vals, x, v, False)[0] == "nonsmooth"
    assert campaign.classify(7, {}, x, v, False)[0] == "crash"
    assert campaign.cause("t.c:3: in function 'f': error: no rule for 'foo' at 12\n") \
        == "error: no rule for '_' at N"
