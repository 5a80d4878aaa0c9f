"""enzyme_py.jax.function: C code as a JAX primitive under jit, grad, vjp, jvp, vmap."""

import pytest

from conftest import need
from programs import KERNELS, MLP_C

np = need("numpy", "python")
need("clang.cindex", "python")
jax = need("jax", "jax")
import jax.numpy as jnp  # noqa: E402
from jax.test_util import check_grads  # noqa: E402

import enzyme_py  # noqa: E402
import enzyme_py.jax  # noqa: E402, F401


@pytest.fixture(scope="module", autouse=True)
def x64():
    prev = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    yield
    jax.config.update("jax_enable_x64", prev)


@pytest.fixture(scope="module")
def lib():
    return enzyme_py.compile(KERNELS)


def lsq_ref(a, xs, ys, scale):
    e = scale * (a[0] + a[1] * xs + a[2] * jnp.sin(xs)) - ys
    return 0.5 * jnp.sum(e * e)


def test_grad_jit_jvp_vmap(lib):
    f = enzyme_py.jax.function(lib.lsq)
    a = jnp.array([0.3, -0.2, 0.5])
    xs = jnp.linspace(-1.0, 1.0, 5)
    ys = jnp.cos(xs)
    assert f(a, xs, ys, 5, 1.1) == pytest.approx(float(lsq_ref(a, xs, ys, 1.1)), rel=1e-14)
    ga, gs = jax.jit(jax.grad(f, argnums=(0, 4)), static_argnums=3)(a, xs, ys, 5, 1.1)
    ra, rs = jax.grad(lsq_ref, argnums=(0, 3))(a, xs, ys, 1.1)
    np.testing.assert_allclose(ga, ra, rtol=1e-12)
    assert float(gs) == pytest.approx(float(rs), rel=1e-12)
    t = jnp.array([1.0, 0.5, -2.0])
    _, tan = jax.jvp(lambda a: f(a, xs, ys, 5, 1.1), (a,), (t,))
    assert float(tan) == pytest.approx(float(jnp.dot(ra, t)), rel=1e-12)
    batch = jnp.stack([a, 2 * a, -a])
    np.testing.assert_allclose(jax.vmap(jax.grad(lambda a: f(a, xs, ys, 5, 1.1)))(batch),
                               jax.vmap(jax.grad(lambda a: lsq_ref(a, xs, ys, 1.1)))(batch),
                               rtol=1e-12)
    check_grads(lambda a, s: f(a, xs, ys, 5, s), (a, 1.1), order=1, modes=("fwd", "rev"))


def test_void_function_vjp(lib):
    f = enzyme_py.jax.function(lib.stencil, out_shapes=lambda u, n, c: [(n,)])
    u = jnp.array([0.1, 0.4, -0.3, 0.8])
    y = jax.jit(f, static_argnums=1)(u, 4, 0.7)
    ref = np.zeros(4)
    lib.stencil(np.asarray(u).copy(), ref, 4, 0.7)
    np.testing.assert_allclose(y, ref)
    v, f_vjp = jax.vjp(lambda u, c: f(u, 4, c), u, 0.7)
    w = jnp.array([1.0, -1.0, 0.5, 2.0])
    gu, gc = f_vjp(w)
    _, jv = jax.jvp(lambda u: f(u, 4, 0.7), (u,), (jnp.ones(4),))
    assert float(jnp.dot(jv, w)) == pytest.approx(float(jnp.sum(gu)), rel=1e-12)
    check_grads(lambda u, c: f(u, 4, c), (u, 0.7), order=1, modes=("fwd", "rev"))


def test_errors(lib):
    f = enzyme_py.jax.function(lib.lsq)
    with pytest.raises(TypeError, match="parameter 'a' .*takes float64, not float32") as e:
        f(jnp.ones(3, jnp.float32), jnp.ones(2), jnp.ones(2), 2, 1.0)
    assert "enable 64-bit" not in str(e.value)     # it is enabled (the x64 fixture)
    with pytest.raises(TypeError, match="integer parameter 'n' must be a Python int"):
        jax.jit(f)(jnp.ones(3), jnp.ones(2), jnp.ones(2), 2, 1.0)


def test_mlp_gradient_matches_jax():
    lib = enzyme_py.compile(MLP_C)
    loss = enzyme_py.jax.function(lib.mlp_loss)
    k = jax.random.split(jax.random.PRNGKey(0), 6)
    W1 = jax.random.normal(k[0], (32, 784)) * 0.05
    b1 = jax.random.normal(k[1], (32,)) * 0.1
    W2 = jax.random.normal(k[2], (10, 32)) * 0.2
    b2 = jax.random.normal(k[3], (10,)) * 0.1
    X = jax.random.normal(k[4], (8, 784))
    y = jax.random.randint(k[5], (8,), 0, 10).astype(jnp.int32)

    def ref(W1, b1, W2, b2):
        z = jax.nn.relu(X @ W1.T + b1) @ W2.T + b2
        return jnp.mean(jax.nn.logsumexp(z, axis=1) - z[jnp.arange(8), y])

    ours = jax.grad(lambda *p: loss(*p, X, y, 8), argnums=(0, 1, 2, 3))(W1, b1, W2, b2)
    theirs = jax.grad(ref, argnums=(0, 1, 2, 3))(W1, b1, W2, b2)
    for o, t in zip(ours, theirs):
        assert float(jnp.max(jnp.abs(o - t))) < 1e-10
