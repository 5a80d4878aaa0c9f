"""What the MPI rules (:mod:`mpi`, :mod:`mpi_nonblocking`) build on: an MPI call site
as read from the IR, and the small functions the rules emit.

:class:`_Call` is one call: its signature (the call-effects table's entry, by the
name without its ``MPI_``/``PMPI_`` prefix), its ABI, its datatypes and reduction
operation identified at compile time (:func:`_resolve` follows casts and a local
stored once; Open MPI's handles are addresses of globals, ``@ompi_mpi_double``,
MPICH's integer constants, ``0x4c00080b``), and the handles, constants and MPI
declarations to emit for that ABI.  The emitted helpers are functions of their own,
so that the sweeps stay straight-line: elementwise loops for the MIN/MAX/PROD
reductions (:func:`_candidates`, :func:`_masked_add`, :func:`_mul_add`,
:func:`_excl_prod_all`), and :func:`_abort_with`, a stop with a message on stderr.
"""

from __future__ import annotations

from ..analysis.effects import MPI_SIGNATURES, mpi_base
from ..ir import types as T
from ..ir.instructions import Alloca, Cast, Load, Store
from ..ir.module import GlobalVariable
from ..ir.values import ConstantExpr, ConstantInt, ConstantNull
from .emit import Emitter, loop_latch
from .errors import NoDerivativeError

# -- handles ------------------------------------------------------------------------
_OMPI_DT = {"ompi_mpi_double": "double", "ompi_mpi_float": "float",
            "ompi_mpi_long_double": "long double", "ompi_mpi_c_double_complex": "complex",
            "ompi_mpi_c_float_complex": "complex", "ompi_mpi_c_complex": "complex",
            "ompi_mpi_double_int": "pair", "ompi_mpi_float_int": "pair"}
for _n in ("int", "unsigned", "long", "unsigned_long", "long_long_int", "long_long",
           "unsigned_long_long", "char", "signed_char", "unsigned_char", "byte", "short",
           "unsigned_short", "int8_t", "int16_t", "int32_t", "int64_t", "uint8_t",
           "uint16_t", "uint32_t", "uint64_t", "c_bool", "cxx_bool", "wchar", "2int",
           "aint", "offset", "count", "packed"):
    _OMPI_DT[f"ompi_mpi_{_n}"] = "int"
_MPICH_DT = {0x4c00080b: "double", 0x4c00040a: "float", 0x4c00100c: "long double",
             0x4c00081e: "complex", 0x4c001022: "complex", 0x4c000840: "complex",
             0x4c001041: "complex", 0x4c002042: "complex"}
for _h in (0x4c000101, 0x4c000118, 0x4c000102, 0x4c00010d, 0x4c00040e, 0x4c000203,
           0x4c000204, 0x4c000405, 0x4c000406, 0x4c000807, 0x4c000808, 0x4c000809,
           0x4c000819, 0x4c00010f, 0x4c000816, 0x4c000137, 0x4c000238, 0x4c000439,
           0x4c00083a, 0x4c00013b, 0x4c00023c, 0x4c00043d, 0x4c00083e, 0x4c00013f):
    _MPICH_DT[_h] = "int"     # MPICH's mpi.h: char ... uint64_t, C bool, packed, 2int
_OPS = ("max", "min", "sum", "prod")
_OMPI_OP = {f"ompi_mpi_op_{k}": k for k in _OPS}
_MPICH_OP = {0x58000001 + i: k for i, k in enumerate(_OPS)}
_MPICH_OP_CODE = {k: v for v, k in _MPICH_OP.items()}
_MPICH_INT = 0x4c000405
_FLOAT_TY = {"double": T.double, "float": T.float}


def _resolve(v, depth=0):
    """The compile-time identity of a handle or constant: a global's name, an integer,
    or None when it is not known.  Follows casts and a local variable stored once."""
    if depth > 8 or v is None:
        return None
    if isinstance(v, GlobalVariable):
        if v.is_constant and v.initializer is not None and not v.value_type.is_struct:
            return _resolve(v.initializer, depth + 1)
        return v.name
    if isinstance(v, ConstantNull):
        return 0
    if isinstance(v, ConstantInt):
        return v.value & 0xffffffff if v.type.width <= 32 else v.value & (2 ** 64 - 1)
    if isinstance(v, ConstantExpr) and v.opcode in ("bitcast", "inttoptr", "ptrtoint",
                                                    "addrspacecast"):
        return _resolve(v.operand(0), depth + 1)
    if isinstance(v, Cast) and v.opcode in ("bitcast", "inttoptr", "ptrtoint", "sext",
                                            "zext", "trunc"):
        return _resolve(v.operand(0), depth + 1)
    if isinstance(v, Load) and isinstance(v.operand(0), Alloca):
        stores = []
        for u in v.operand(0).uses:
            user = u.user
            if isinstance(user, Store) and u.index == 1:
                stores.append(user)
            elif isinstance(user, Load):
                continue
            elif not (getattr(user, "callee_name", None) or "").startswith(
                    ("llvm.lifetime.", "llvm.dbg.")):
                return None
        if len(stores) == 1:
            return _resolve(stores[0].operand(0), depth + 1)
    return None


class _Call:
    """One MPI call site: its signature, ABI and the identified handles."""

    def __init__(self, ctx, inst):
        self.inst, self.ctx = inst, ctx
        self.base, self.prefix = mpi_base(inst.callee_name or "")
        self.kind, self.pos = MPI_SIGNATURES.get(self.base, ("unsupported", {}))
        self.args = inst.args
        self.name = inst.callee_name

    def arg(self, key):
        k = self.pos.get(key)
        return None if k is None else self.args[k]

    def error(self, what, hint=None):
        raise NoDerivativeError(f"'{self.name}': {what}", location=self.ctx.err_loc(self.inst),
                                hint=hint)

    @property
    def abi(self):
        for key in ("dt", "sdt", "comm"):
            v = self.arg(key)
            if v is not None:
                return "ompi" if v.type.is_pointer else "mpich"
        # MPI_Wait & co. take only pointers: Open MPI's handles are globals of its own
        m = self.ctx.module
        return "ompi" if any(g.name.startswith("ompi_mpi_") for g in m.global_variables) \
            else "mpich"

    def dtype(self, key="dt"):
        """'double', 'float' or 'int' (no derivative) for the datatype argument."""
        got = _resolve(self.arg(key))
        kind = _OMPI_DT.get(got) if isinstance(got, str) else _MPICH_DT.get(got)
        if kind is None:
            self.error("cannot identify the MPI datatype at compile time",
                       hint="use a predefined datatype (MPI_DOUBLE, MPI_FLOAT, MPI_INT...) "
                            "directly in the call inside the differentiated code")
        if kind not in ("double", "float", "int"):
            self.error(f"datatype '{kind}' is not supported in differentiated code",
                       hint="communicate double or float data (MPI_DOUBLE, MPI_FLOAT)")
        return kind

    def op(self):
        got = _resolve(self.arg("op"))
        kind = _OMPI_OP.get(got) if isinstance(got, str) else _MPICH_OP.get(got)
        if kind is None:
            self.error("cannot identify the reduction operation at compile time, or it has "
                       "no derivative rule (MPI_SUM, MPI_MIN, MPI_MAX and MPI_PROD do)",
                       hint="use MPI_SUM/MPI_MIN/MPI_MAX/MPI_PROD directly in the call")
        return kind

    def is_in_place(self, key):
        got = _resolve(self.arg(key))
        return got == (1 if self.abi == "ompi" else 0xffffffffffffffff)

    # emitted handles and constants
    def op_handle(self, module, kind):
        if self.abi == "mpich":
            return ConstantInt(T.i32, _MPICH_OP_CODE[kind])
        return _global(module, f"ompi_mpi_op_{kind}")

    def int_type(self, module):
        if self.abi == "mpich":
            return ConstantInt(T.i32, _MPICH_INT)
        return _global(module, "ompi_mpi_int")

    def status_ignore(self, e):
        if self.abi == "mpich":
            return e.cast("inttoptr", ConstantInt(T.i64, 1), T.ptr)
        return ConstantNull(T.ptr)

    def in_place(self, e):
        return e.cast("inttoptr", ConstantInt(T.i64, 1 if self.abi == "ompi" else -1), T.ptr)

    def status_offsets(self):
        """Byte offsets of MPI_SOURCE and MPI_TAG in MPI_Status."""
        return (0, 4) if self.abi == "ompi" else (8, 12)

    def wildcards(self):
        return (0xffffffff if self.abi == "ompi" else 0xfffffffe, 0xffffffff)

    def fn(self, e, base):
        """The MPI function ``base`` (``Send``...) with this call's prefix (MPI_/PMPI_),
        declared with this ABI's handle types."""
        dt = self.arg("dt") if self.arg("dt") is not None else self.arg("sdt")
        h = dt.type if dt is not None else T.ptr
        c = self.arg("comm").type
        i, p = T.i32, T.ptr
        sig = {"Send": [p, i, h, i, i, c], "Recv": [p, i, h, i, i, c, p],
               "Sendrecv": [p, i, h, i, i, p, i, h, i, i, c, p],
               "Sendrecv_replace": [p, i, h, i, i, i, i, c, p],
               "Bcast": [p, i, h, i, c], "Reduce": [p, p, i, h, h, i, c],
               "Allreduce": [p, p, i, h, h, c], "Gather": [p, i, h, p, i, h, i, c],
               "Scatter": [p, i, h, p, i, h, i, c], "Allgather": [p, i, h, p, i, h, c],
               "Comm_rank": [c, p], "Comm_size": [c, p], "Barrier": [c]}[base]
        return e.declare(self.prefix + base, T.i32, sig)

    def fn_nb(self, e):
        """This Isend/Irecv (same prefix and name) declared with this ABI's types."""
        h, c = self.arg("dt").type, self.arg("comm").type
        return e.declare(self.name, T.i32, [T.ptr, T.i32, h, T.i32, T.i32, c, T.ptr])


def _global(module, name):
    g = module.get_global(name)
    if g is None:
        g = module.add_global(name, T.i8, linkage="external", unique=False)
    return g


def _i64(e, v):
    if v.type == T.i64:
        return v
    return e.cast("sext", v, T.i64)


def _bytes(e, count, kind):
    size = 8 if kind == "double" else 4
    return e.binop("mul", _i64(e, count), ConstantInt(T.i64, size))


# -- small emitted helpers (their own functions, so the sweeps stay straight-line) -------
def _helper(module, name, ty, params, body):
    fn = module.get_function(name)
    if fn is not None:
        return fn
    fn = module.add_function(name, T.FunctionType(T.void, params), linkage="internal",
                             fn_attrs="nounwind")
    e = Emitter(module)
    entry, loop, done = (fn.append_basic_block(x) for x in ("entry", "loop", "done"))
    e.position_at_end(entry)
    n = fn.args[-1]
    e.cbranch(e.icmp("sgt", n, ConstantInt(T.i64, 0)), loop, done)
    e.position_at_end(loop)
    i = e.phi(T.i64)
    body(e, fn.args, i, ty)
    loop_latch(e, i, n, entry, loop, loop, done, signed=True)
    e.ret()
    return fn


def _elem(e, ty, p, i):
    return e.gep(ty, p, [i])


def _candidates(module, ty):
    """cand[i] = x[i] == y[i] ? me : INT_MAX   (args: x, y, cand, me, n)"""
    def body(e, a, i, ty):
        x = e.load(ty, _elem(e, ty, a[0], i))
        y = e.load(ty, _elem(e, ty, a[1], i))
        c = e.select(e.fcmp("oeq", x, y), a[3], ConstantInt(T.i32, 2 ** 31 - 1))
        e.store(c, _elem(e, T.i32, a[2], i))
    return _helper(module, f"__enzyme_py_mpi_owner.{ty}", ty,
                   [T.ptr, T.ptr, T.ptr, T.i32, T.i64], body)


def _masked_add(module, ty):
    """d[i] += owner[i] == me ? s[i] : 0   (args: d, s, owner, me, n)"""
    def body(e, a, i, ty):
        pd = _elem(e, ty, a[0], i)
        s = e.load(ty, _elem(e, ty, a[1], i))
        o = e.load(T.i32, _elem(e, T.i32, a[2], i))
        from .emit import zero
        v = e.select(e.icmp("eq", o, a[3]), s, zero(ty))
        e.store(e.fadd(e.load(ty, pd), v), pd)
    return _helper(module, f"__enzyme_py_mpi_masked_add.{ty}", ty,
                   [T.ptr, T.ptr, T.ptr, T.i32, T.i64], body)


def _mul_add(module, ty):
    """d[i] += s[i] * f[i]   (args: d, s, f, n)"""
    def body(e, a, i, ty):
        pd = _elem(e, ty, a[0], i)
        s = e.load(ty, _elem(e, ty, a[1], i))
        f = e.load(ty, _elem(e, ty, a[2], i))
        e.store(e.fadd(e.load(ty, pd), e.fmul(s, f)), pd)
    return _helper(module, f"__enzyme_py_mpi_mul_add.{ty}", ty,
                   [T.ptr, T.ptr, T.ptr, T.i64], body)


def _prod_init(module, ty):
    """f[i] = 1   (args: f, g, me, nranks, n): the start of the exclusive product"""
    def body(e, a, i, ty):
        from ..ir.values import ConstantFP
        e.store(ConstantFP(ty, 1.0), _elem(e, ty, a[0], i))
    return _helper(module, f"__enzyme_py_mpi_prod_init.{ty}", ty,
                   [T.ptr, T.ptr, T.i32, T.i32, T.i64], body)


def _prod_step(module, ty):
    """f[i] *= q == me ? 1 : g[i]   (args: f, g, q, me, n) -- one rank's block"""
    def body(e, a, i, ty):
        from ..ir.values import ConstantFP
        pf = _elem(e, ty, a[0], i)
        g = e.load(ty, _elem(e, ty, a[1], i))
        v = e.select(e.icmp("eq", a[2], a[3]), ConstantFP(ty, 1.0), g)
        e.store(e.fmul(e.load(ty, pf), v), pf)
    return _helper(module, f"__enzyme_py_mpi_prod_step.{ty}", ty,
                   [T.ptr, T.ptr, T.i32, T.i32, T.i64], body)


def _excl_prod_all(module, ty):
    """f[i] = prod over q != me of g[q*n + i], a loop over the ranks calling _prod_step
    (args: f, g, me, nranks, n)."""
    name = f"__enzyme_py_mpi_excl_prod.{ty}"
    fn = module.get_function(name)
    if fn is not None:
        return fn
    init, step = _prod_init(module, ty), _prod_step(module, ty)
    fn = module.add_function(name, T.FunctionType(T.void, [T.ptr, T.ptr, T.i32, T.i32, T.i64]),
                             linkage="internal", fn_attrs="nounwind")
    f, g, me, nr, n = fn.args
    e = Emitter(module)
    entry, loop, done = (fn.append_basic_block(x) for x in ("entry", "loop", "done"))
    e.position_at_end(entry)
    e.call(init, [f, g, me, nr, n])
    e.cbranch(e.icmp("sgt", nr, ConstantInt(T.i32, 0)), loop, done)
    e.position_at_end(loop)
    q = e.phi(T.i32)
    off = e.binop("mul", e.cast("sext", q, T.i64), n)
    e.call(step, [f, _elem(e, ty, g, off), q, me, n])
    nxt = e.binop("add", q, ConstantInt(T.i32, 1))
    q.add_incoming(ConstantInt(T.i32, 0), entry)
    q.add_incoming(nxt, loop)
    e.cbranch(e.icmp("slt", nxt, nr), loop, done)
    e.position_at_end(done)
    e.ret()
    return fn


def _abort_with(module, e, text):
    from .runtime import _string
    fputs = e.declare("fputs", T.i32, [T.ptr, T.ptr])
    stderr = module.get_global("stderr")
    if stderr is None:
        stderr = module.add_global("stderr", T.ptr, linkage="external", unique=False)
    e.call(fputs, [_string(module, text), e.load(T.ptr, stderr, 8)])
    e.call(e.declare("abort", T.void, []), [], fn_attrs="noreturn nounwind")
    e.unreachable()
