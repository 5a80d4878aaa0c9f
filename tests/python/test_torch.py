"""enzyme_py.torch.function: C code as a torch.autograd.Function (backward by reverse
mode, jvp by forward mode), checked with torch's gradcheck and against torch autograd."""

import pytest

from conftest import need
from programs import KERNELS, MLP_C

np = need("numpy", "python")
need("clang.cindex", "python")
torch = need("torch", "torch")
import enzyme_py  # noqa: E402
import enzyme_py.torch  # noqa: E402, F401

# torch's own internals (gradcheck's imports) call the deprecated torch.jit.script
pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")


@pytest.fixture(scope="module")
def lib():
    return enzyme_py.compile(KERNELS)


def test_scalar_loss_backward_and_gradcheck(lib):
    f = enzyme_py.torch.function(lib.lsq)
    a = torch.tensor([0.3, -0.2, 0.5], dtype=torch.float64, requires_grad=True)
    xs = torch.linspace(-1, 1, 6, dtype=torch.float64)
    ys = torch.cos(xs)
    s = torch.tensor(1.2, dtype=torch.float64, requires_grad=True)
    out = 3 * f(a, xs, ys, 6, s)                         # composes with torch ops
    out.backward()
    e = s * (a[0] + a[1] * xs + a[2] * torch.sin(xs)) - ys
    ref_a, ref_s = torch.autograd.grad(3 * 0.5 * (e * e).sum(), (a, s))
    torch.testing.assert_close(a.grad, ref_a, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(s.grad, ref_s, rtol=1e-12, atol=1e-12)
    assert torch.autograd.gradcheck(lambda a, s: f(a, xs, ys, 6, s), (a, s),
                                    check_forward_ad=True)


def test_void_function_with_out_shapes(lib):
    f = enzyme_py.torch.function(lib.stencil, out_shapes=lambda u, n, c: [(n,)])
    u = torch.tensor([0.1, 0.4, -0.3, 0.8], dtype=torch.float64, requires_grad=True)
    c = torch.tensor(0.7, dtype=torch.float64, requires_grad=True)
    y = f(u, 4, c)
    assert y.shape == (4,)
    assert torch.autograd.gradcheck(lambda u, c: f(u, 4, c), (u, c), check_forward_ad=True)
    with pytest.raises(TypeError, match="give their shapes with out_shapes"):
        enzyme_py.torch.function(lib.stencil)


def test_float32_and_dtype_errors(lib):
    f = enzyme_py.torch.function(lib.dotf)
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    b = torch.tensor([3.0, -1.0], requires_grad=True)
    r = f(a, b, 2)
    assert r.dtype == torch.float32
    r.backward()
    torch.testing.assert_close(a.grad, b.detach() ** 2)
    torch.testing.assert_close(b.grad, 2 * a.detach() * b.detach())
    with pytest.raises(TypeError, match="parameter 'a' .*takes float32, not a float64"):
        f(a.double(), b, 2)


def test_mlp_matches_torch_autograd():
    lib = enzyme_py.compile(MLP_C)
    loss = enzyme_py.torch.function(lib.mlp_loss)
    g = torch.Generator().manual_seed(0)
    W1 = (torch.randn(32, 784, generator=g, dtype=torch.float64) * 0.05).requires_grad_()
    b1 = (torch.randn(32, generator=g, dtype=torch.float64) * 0.1).requires_grad_()
    W2 = (torch.randn(10, 32, generator=g, dtype=torch.float64) * 0.2).requires_grad_()
    b2 = (torch.randn(10, generator=g, dtype=torch.float64) * 0.1).requires_grad_()
    X = torch.randn(16, 784, generator=g, dtype=torch.float64)
    y = torch.randint(0, 10, (16,), generator=g)
    params = (W1, b1, W2, b2)
    ours = torch.autograd.grad(loss(*params, X, y.to(torch.int32), 16), params)
    ref_loss = torch.nn.functional.cross_entropy(torch.relu(X @ W1.T + b1) @ W2.T + b2, y)
    ref = torch.autograd.grad(ref_loss, params)
    for o, r in zip(ours, ref):
        assert (o - r).abs().max().item() < 1e-10


def test_second_derivative_raises_instead_of_dropping_the_c_part(lib):
    """The gradient comes from C, outside torch's graph: a Hessian through it came out
    without the C function's part (diag 2 for 6w + 2: silently wrong).  Now the first
    derivative with create_graph=True is right and differentiating it again raises."""
    f = enzyme_py.torch.function(lib.lsq)
    a = torch.tensor([0.3, -0.2, 0.5], dtype=torch.float64, requires_grad=True)
    xs = torch.linspace(-1, 1, 6, dtype=torch.float64)
    ys = torch.cos(xs)
    s = torch.tensor(1.2, dtype=torch.float64)
    loss = f(a, xs, ys, 6, s) + (a ** 2).sum()
    g, = torch.autograd.grad(loss, a, create_graph=True)
    e = s * (a[0] + a[1] * xs + a[2] * torch.sin(xs)) - ys
    ref, = torch.autograd.grad(0.5 * (e * e).sum() + (a ** 2).sum(), a)
    torch.testing.assert_close(g.detach(), ref, rtol=1e-12, atol=1e-12)
    with pytest.raises(RuntimeError, match="first derivatives only"):
        torch.autograd.grad(g.sum(), a)
    with pytest.raises(RuntimeError, match="first derivatives only"):
        torch.autograd.functional.hessian(lambda a: f(a, xs, ys, 6, s), a.detach())
