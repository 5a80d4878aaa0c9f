"""Train the two-layer MLP of the Flux.jl + Enzyme example (784 -> 32 relu -> 10, logit
cross-entropy, batch 128) whose forward pass and loss are C code (mlp.c), from PyTorch
with torch.optim.Adam.  Gradients come from EnzymePy's reverse mode; before training
they are checked against PyTorch's own autograd of the same model (float64, 1e-10).

    pip install 'enzyme-py[torch]'   # CPU-only machines: install torch's CPU build first
    python examples/mlp_torch.py

The data are synthetic (no download): digits-sized inputs labelled by a random
teacher network, so the loss has something to learn.
"""

import pathlib

import torch

import enzyme_py
import enzyme_py.torch

HERE = pathlib.Path(__file__).resolve().parent
BATCH, STEPS = 128, 60

torch.manual_seed(0)
lib = enzyme_py.compile(HERE / "mlp.c")
mlp_loss = enzyme_py.torch.function(lib.mlp_loss)

# data: a random teacher labels Gaussian "images"
teacher = torch.randn(784, 10, dtype=torch.float64)
X_all = torch.randn(BATCH * 8, 784, dtype=torch.float64)
y_all = (X_all @ teacher).argmax(dim=1)

# the model: Flux's default (Glorot uniform) initialisation
def glorot(rows, cols):
    bound = (6 / (rows + cols)) ** 0.5
    return ((torch.rand(rows, cols, dtype=torch.float64) * 2 - 1) * bound).requires_grad_()

W1, b1 = glorot(32, 784), torch.zeros(32, dtype=torch.float64, requires_grad=True)
W2, b2 = glorot(10, 32), torch.zeros(10, dtype=torch.float64, requires_grad=True)
params = [W1, b1, W2, b2]


def loss_c(X, y):
    return mlp_loss(W1, b1, W2, b2, X, y.to(torch.int32), X.shape[0])


def loss_torch(X, y):
    return torch.nn.functional.cross_entropy(torch.relu(X @ W1.T + b1) @ W2.T + b2, y)


# gradient check against torch.autograd of the same model
X, y = X_all[:BATCH], y_all[:BATCH]
ours = torch.autograd.grad(loss_c(X, y), params)
theirs = torch.autograd.grad(loss_torch(X, y), params)
err = max((a - b).abs().max().item() for a, b in zip(ours, theirs))
print(f"max |EnzymePy grad - torch.autograd grad| = {err:.3e}")
assert err < 1e-10, err

opt = torch.optim.Adam(params, lr=1e-3)
losses = []
for step in range(STEPS):
    k = step % 8
    X, y = X_all[k * BATCH:(k + 1) * BATCH], y_all[k * BATCH:(k + 1) * BATCH]
    opt.zero_grad()
    loss = loss_c(X, y)
    loss.backward()
    opt.step()
    losses.append(loss.item())
    if step % 10 == 0 or step == STEPS - 1:
        print(f"step {step:3d}  loss {loss.item():.4f}")
first, last = sum(losses[:8]) / 8, sum(losses[-8:]) / 8
print(f"mean loss over the first 8 steps {first:.4f}, over the last 8 {last:.4f}")
assert last < first
