"""enzyme_py.compile / grad / value_and_grad / jvp / vjp on NumPy arrays: C code built
by enzyme-cc, derivatives checked against finite differences and analytic values."""

import os
import subprocess
import sys
import textwrap

import pytest

from conftest import need
from programs import CXX, KERNELS, MLP_C

np = need("numpy", "python")
need("clang.cindex", "python")
import enzyme_py  # noqa: E402


@pytest.fixture(scope="module")
def lib():
    return enzyme_py.compile(KERNELS)


def fd_grad(f, x, h=1e-6):
    """Central finite differences of a scalar function of the array x."""
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[i] += h
        xm[i] -= h
        g[i] = (f(xp) - f(xm)) / (2 * h)
    return g


def test_call_and_signatures(lib):
    assert set(lib.functions) >= {"sumsq", "lsq", "stencil", "dotf", "rowsum", "uses_helper"}
    assert "helper" not in lib.functions          # static: not exported
    x = np.array([1.0, 2.0, 3.0])
    assert lib.sumsq(x, 3) == 14.0
    assert lib.sumsq(x=x, n=2) == 5.0
    out = np.zeros(3)
    lib.stencil(x, out, 3, 0.5)                   # writes its output in place
    np.testing.assert_allclose(out, [0.5 * (0 - 2 + 2) + np.exp(-1), 0.5 * (1 - 4 + 3)
                                     + np.exp(-2), 0.5 * (2 - 6) + np.exp(-3)])
    assert lib.count_positive(np.array([1.0, -1.0, 2.0]), 3) == 2
    assert lib.dotf(np.ones(2, np.float32), np.full(2, 2, np.float32), 2) == 8.0


def test_grad_matches_finite_differences(lib):
    rng = np.random.default_rng(1)
    a, xs, ys = rng.normal(size=3), rng.normal(size=7), rng.normal(size=7)
    g = enzyme_py.grad(lib.lsq)(a, xs, ys, 7, 1.3)
    np.testing.assert_allclose(g, fd_grad(lambda a_: lib.lsq(a_, xs, ys, 7, 1.3), a),
                               rtol=1e-6, atol=1e-8)
    v, (ga, gxs, gs) = enzyme_py.value_and_grad(lib.lsq, argnums=(0, 1, 4))(a, xs, ys, 7, 1.3)
    assert v == pytest.approx(lib.lsq(a, xs, ys, 7, 1.3), rel=1e-14)
    np.testing.assert_allclose(ga, g, rtol=1e-14)
    np.testing.assert_allclose(gxs, fd_grad(lambda x_: lib.lsq(a, x_, ys, 7, 1.3), xs),
                               rtol=1e-6, atol=1e-8)
    h = 1e-6
    assert isinstance(gs, float)
    assert gs == pytest.approx((lib.lsq(a, xs, ys, 7, 1.3 + h) - lib.lsq(a, xs, ys, 7, 1.3 - h))
                               / (2 * h), rel=1e-6)


def test_grad_never_modifies_inputs_nonconst(lib):
    x = np.array([1.0, -2.0, 0.5])
    keep = x.copy()
    np.testing.assert_array_equal(enzyme_py.grad(lib.sumsq)(x, 3), 2 * keep)
    np.testing.assert_array_equal(x, keep)
    v = np.array([1.0, 2.0])
    value, f_vjp = enzyme_py.vjp(lib.scale_inplace, v, 2, 3.0)
    np.testing.assert_array_equal(v, [1.0, 2.0])       # the caller's array is untouched
    np.testing.assert_allclose(value, [3.0, 12.0])
    gv, gn, gk = f_vjp(np.array([1.0, 1.0]))
    np.testing.assert_allclose(gv, [6.0, 12.0])           # d(k v^2)/dv = 2 k v
    assert gn is None and gk == pytest.approx(5.0)        # sum v^2
    np.testing.assert_array_equal(v, [1.0, 2.0])


def test_float32_and_fixed_shapes(lib):
    a = np.array([1.0, 2.0, 3.0], np.float32)
    b = np.array([0.5, -1.0, 2.0], np.float32)
    ga, gb = enzyme_py.grad(lib.dotf, (0, 1))(a, b, 3)
    assert ga.dtype == np.float32
    np.testing.assert_allclose(ga, b * b, rtol=1e-6)
    np.testing.assert_allclose(gb, 2 * a * b, rtol=1e-6)
    m = np.arange(6.0).reshape(2, 3)
    w = np.array([1.0, 2.0, 3.0])
    gm, gw = enzyme_py.grad(lib.rowsum, (0, 2))(m, 2, w)
    np.testing.assert_allclose(gm, 2 * m * w)
    np.testing.assert_allclose(gw, (m * m).sum(axis=0))
    with pytest.raises(ValueError, match="'m' takes an array of shape \\(n, 3\\)"):
        lib.rowsum(np.zeros((3, 2)), 3, w)
    with pytest.raises(ValueError, match="'w' takes an array of shape \\(3,\\)"):
        lib.rowsum(m, 2, np.zeros(4))


def test_jvp_and_vjp_agree(lib):
    """<J v, w> = <v, J^T w> on a function that writes an output array."""
    rng = np.random.default_rng(2)
    u, v, w = rng.normal(size=5), rng.normal(size=5), rng.normal(size=5)
    out = np.zeros(5)
    y, jv = enzyme_py.jvp(lib.stencil, (u, out, 5, 0.7), (v, None, None, 0.0))
    ref = np.zeros(5)
    lib.stencil(u, ref, 5, 0.7)
    np.testing.assert_allclose(y, ref)
    np.testing.assert_array_equal(out, 0)                 # inputs never modified
    val, f_vjp = enzyme_py.vjp(lib.stencil, u, out, 5, 0.7)
    np.testing.assert_allclose(val, ref)
    gu, gout, gn, gc = f_vjp(w)
    assert gn is None
    assert np.dot(jv, w) == pytest.approx(np.dot(v, gu), rel=1e-12)
    # finite differences of the directional derivative, and of the scalar c
    h = 1e-6
    yp, ym = np.zeros(5), np.zeros(5)
    lib.stencil(u + h * v, yp, 5, 0.7)
    lib.stencil(u - h * v, ym, 5, 0.7)
    np.testing.assert_allclose(jv, (yp - ym) / (2 * h), rtol=1e-6, atol=1e-8)
    _, jc = enzyme_py.jvp(lib.stencil, (u, out, 5, 0.7), (None, None, None, 1.0))
    assert np.dot(jc, w) == pytest.approx(gc, rel=1e-12)
    # scalar result: jvp is the gradient's dot product
    a, xs, ys = rng.normal(size=3), rng.normal(size=4), rng.normal(size=4)
    t = rng.normal(size=3)
    value, tangent = enzyme_py.jvp(lib.lsq, (a, xs, ys, 4, 1.0), (t, None, None, None, 0))
    assert value == pytest.approx(lib.lsq(a, xs, ys, 4, 1.0))
    assert tangent == pytest.approx(np.dot(enzyme_py.grad(lib.lsq)(a, xs, ys, 4, 1.0), t))
    value, f_vjp = enzyme_py.vjp(lib.lsq, a, xs, ys, 4, 1.0)
    np.testing.assert_allclose(f_vjp(3.0)[0], 3.0 * enzyme_py.grad(lib.lsq)(a, xs, ys, 4, 1.0))


def test_argument_errors(lib):
    x = np.ones(3)
    with pytest.raises(TypeError, match="'x' .*takes float64, not a float32 array"):
        lib.sumsq(x.astype(np.float32), 3)
    with pytest.raises(TypeError, match="'x' .*NumPy array of float64, not list"):
        lib.sumsq([1.0, 2.0], 2)
    with pytest.raises(ValueError, match="'x': the array is not C-contiguous"):
        lib.sumsq(np.ones(6)[::2], 3)
    with pytest.raises(TypeError, match="takes 2 arguments .* but 3 were given"):
        lib.sumsq(x, 3, 4)
    with pytest.raises(TypeError, match="missing argument\\(s\\): n"):
        lib.sumsq(x)
    with pytest.raises(TypeError, match="'n' \\(int\\) takes an integer, not float"):
        lib.sumsq(x, 3.0)
    with pytest.raises(ValueError, match="'n' \\(int\\) is out of range"):
        lib.sumsq(x, 2**40)
    ro = np.ones(3)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="'x' is not const.*read-only"):
        lib.sumsq(ro, 3)
    lib.lsq(ro, ro, ro, 3, 1.0)                         # const parameters take read-only
    with pytest.raises(TypeError, match="'n' of sumsq is int; only floating-point"):
        enzyme_py.grad(lib.sumsq, argnums=1)
    with pytest.raises(TypeError, match="stencil returns void; grad needs a double"):
        enzyme_py.grad(lib.stencil)
    with pytest.raises(TypeError, match="parameter 'p' has type 'const struct point \\*'"):
        lib.norm_point(np.zeros(2))
    with pytest.raises(AttributeError, match="no exported function 'nope'"):
        lib.nope  # noqa: B018
    with pytest.raises(TypeError, match="its tangent must be None or 0"):
        enzyme_py.jvp(lib.sumsq, (x, 3), (x, 1))


def test_mistyped_path_is_not_taken_for_source():
    """A one-line string naming a .c file that does not exist was compiled as C source
    ("unknown type name 'nosuch'")."""
    with pytest.raises(FileNotFoundError, match="no such file: 'nosuch.c'"):
        enzyme_py.compile("nosuch.c")
    with pytest.raises(FileNotFoundError, match="no such file"):
        enzyme_py.compile("models/nosuch.cpp")


def test_compile_error_carries_diagnostic():
    with pytest.raises(enzyme_py.CompileError) as e:
        enzyme_py.compile("double f(double x) { return x + ; }\n")
    assert "expected expression" in e.value.diagnostic
    assert "expected expression" in str(e.value)


def test_ad_error_at_grad_time():
    """Code the AD pass cannot differentiate: the primal works, grad raises with the
    engine's diagnostic naming the construct."""
    lib = enzyme_py.compile(textwrap.dedent("""
        double g(const double *x) { return x[0] * x[0]; }
        double h(double x) { double y; __asm__("" : "=x"(y) : "0"(x)); return y * y; }
        """))
    assert lib.g(np.array([3.0])) == 9.0
    assert lib.h(3.0) == 9.0
    np.testing.assert_allclose(enzyme_py.grad(lib.g)(np.array([3.0])), [6.0])
    with pytest.raises(enzyme_py.CompileError) as e:
        enzyme_py.grad(lib.h)(2.0)
    assert "in function 'h': error:" in e.value.diagnostic


def test_undefined_symbol_is_a_compile_error():
    with pytest.raises(enzyme_py.CompileError, match="undefined symbol: opaque"):
        enzyme_py.compile("double opaque(double);\ndouble f(double x) { return opaque(x); }\n")


def test_cxx_namespaces_overloads_templates():
    lib = enzyme_py.compile(CXX, lang="c++")
    sq = np.array([0.0, 0.0, 2.0, 0.0, 2.0, 2.0, 0.0, 2.0])
    assert lib.area(sq, 4) == pytest.approx(4.0)
    assert lib["geo::area"] is lib["geo::area"]
    g = enzyme_py.grad(lib.area)(sq, 4)
    np.testing.assert_allclose(g, fd_grad(lambda v: lib.area(v, 4), sq), atol=1e-8)
    with pytest.raises(AttributeError, match="'energy' is overloaded"):
        lib.energy  # noqa: B018
    energy = lib["energy(const double *, int)"]
    x = np.array([0.5, -1.0, 2.0])
    np.testing.assert_allclose(enzyme_py.grad(energy)(x, 3), 3 * x * x - np.exp(-x), rtol=1e-12)
    assert lib["energy(const float *, int)"](np.ones(1, np.float32), 4) == 4.0
    z = np.array([1.0, 3.0, -2.0])
    np.testing.assert_allclose(enzyme_py.grad(lib.logsumexp)(z, 3),
                               np.exp(z) / np.exp(z).sum(), rtol=1e-12)


def test_source_path_and_mlp_gradient(tmp_path):
    lib = enzyme_py.compile(MLP_C)
    rng = np.random.default_rng(0)
    W1, b1 = rng.normal(0, 0.05, (32, 784)), rng.normal(0, 0.1, 32)
    W2, b2 = rng.normal(0, 0.2, (10, 32)), rng.normal(0, 0.1, 10)
    X, y = rng.normal(size=(4, 784)), np.array([1, 7, 3, 0], np.int32)

    def ref(W1, b1, W2, b2):
        h = np.maximum(X @ W1.T + b1, 0)
        z = h @ W2.T + b2
        m = z.max(axis=1, keepdims=True)
        return np.mean(m[:, 0] + np.log(np.exp(z - m).sum(axis=1)) - z[np.arange(4), y])

    assert lib.mlp_loss(W1, b1, W2, b2, X, y, 4) == pytest.approx(ref(W1, b1, W2, b2), rel=1e-13)
    gb2 = enzyme_py.grad(lib.mlp_loss, argnums=3)(W1, b1, W2, b2, X, y, 4)
    np.testing.assert_allclose(gb2, fd_grad(lambda b: ref(W1, b1, W2, b), b2), atol=1e-8)


def test_cache_reuse_and_concurrent_builds(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("ENZYME_PY_CACHE_DIR", str(cache))
    src = "double twice(double x) { return 2 * x; }\n"
    lib = enzyme_py.compile(src)
    assert lib.twice(2.0) == 4.0
    entries = sorted(os.listdir(cache))
    so = os.path.join(lib.path, "lib.so")
    mtime = os.stat(so).st_mtime_ns
    assert enzyme_py.compile(src).path == lib.path and os.stat(so).st_mtime_ns == mtime
    assert enzyme_py.compile(src, flags=["-O1"]).path != lib.path       # flags are in the key
    # two processes building the same new source at once: both succeed, one entry
    code = ("import sys, enzyme_py; l = enzyme_py.compile(sys.argv[1]); "
            "print(l.path, l.thrice(1.0))")
    new = "double thrice(double x) { return 3 * x; }\n"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    procs = [subprocess.Popen([sys.executable, "-c", code, new], env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    paths = {o.split()[0] for o, _ in outs}
    assert len(paths) == 1 and all(o.split()[1] == "3.0" for o, _ in outs)
    assert not [n for n in os.listdir(cache) if n.startswith(".build-")]
    assert len(os.listdir(cache)) == len(entries) + 2
