"""Train the two-layer MLP of the Flux.jl + Enzyme example (784 -> 32 relu -> 10, logit
cross-entropy, batch 128) whose forward pass and loss are C code (mlp.c), from JAX with
a plain SGD loop under jax.jit.  Gradients come from EnzymePy's reverse mode through
enzyme_py.jax.function; before training they are checked against jax.grad of the same
model written in jax.numpy (float64, 1e-10).

    pip install 'enzyme-py[jax]'
    python examples/mlp_jax.py
"""

import pathlib

import jax
import jax.numpy as jnp

import enzyme_py
import enzyme_py.jax

jax.config.update("jax_enable_x64", True)
HERE = pathlib.Path(__file__).resolve().parent
BATCH, STEPS, LR = 128, 60, 0.1

lib = enzyme_py.compile(HERE / "mlp.c")
mlp_loss = enzyme_py.jax.function(lib.mlp_loss)

keys = jax.random.split(jax.random.PRNGKey(0), 4)
teacher = jax.random.normal(keys[0], (784, 10))
X_all = jax.random.normal(keys[1], (BATCH * 8, 784))
y_all = jnp.argmax(X_all @ teacher, axis=1).astype(jnp.int32)


def glorot(key, rows, cols):
    bound = (6 / (rows + cols)) ** 0.5
    return jax.random.uniform(key, (rows, cols), minval=-bound, maxval=bound)


params = (glorot(keys[2], 32, 784), jnp.zeros(32), glorot(keys[3], 10, 32), jnp.zeros(10))


def loss_c(params, X, y):
    return mlp_loss(*params, X, y, BATCH)


def loss_jax(params, X, y):
    W1, b1, W2, b2 = params
    z = jax.nn.relu(X @ W1.T + b1) @ W2.T + b2
    return jnp.mean(jax.nn.logsumexp(z, axis=1) - z[jnp.arange(z.shape[0]), y])


X, y = X_all[:BATCH], y_all[:BATCH]
ours = jax.grad(loss_c)(params, X, y)
theirs = jax.grad(loss_jax)(params, X, y)
err = max(float(jnp.max(jnp.abs(a - b))) for a, b in zip(ours, theirs))
print(f"max |EnzymePy grad - jax.grad| = {err:.3e}")
assert err < 1e-10, err


@jax.jit
def sgd_step(params, X, y):
    loss, g = jax.value_and_grad(loss_c)(params, X, y)
    return tuple(p - LR * gp for p, gp in zip(params, g)), loss


losses = []
for step in range(STEPS):
    k = step % 8
    params, loss = sgd_step(params, X_all[k * BATCH:(k + 1) * BATCH],
                            y_all[k * BATCH:(k + 1) * BATCH])
    losses.append(float(loss))
    if step % 10 == 0 or step == STEPS - 1:
        print(f"step {step:3d}  loss {float(loss):.4f}")
first, last = sum(losses[:8]) / 8, sum(losses[-8:]) / 8
print(f"mean loss over the first 8 steps {first:.4f}, over the last 8 {last:.4f}")
assert last < first
