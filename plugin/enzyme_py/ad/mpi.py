"""Derivatives through MPI calls, reverse and forward mode (both generators call
:func:`aug_call` / :func:`rev_call` / :func:`fwd_call` for every call whose entry in the
call-effects table, ``analysis/effects.py``, has kind ``"mpi"``).

The rules follow Enzyme's published design (Moses et al., "Scalable automatic
differentiation of multiple parallel paradigms through compiler augmentation", SC'22):
every rank's result is an output, so the gradient on each rank is that of the sum over
ranks; the adjoint of a message is the message of the adjoint in the other direction.

=================  ===========================================  ==========================
call               reverse (at the call's place in the sweep)   forward (after the call)
=================  ===========================================  ==========================
Send/Ssend/Bsend/  receive the adjoint into a temporary, add it  send the tangent too
Rsend              to the buffer's shadow
Recv               send the shadow's adjoint back, zero it       receive the tangent too
Sendrecv           Sendrecv of the adjoints, directions swapped  Sendrecv of the tangents
Bcast              Reduce(SUM) of the adjoints to the root;      Bcast of the tangent
                   the root's adjoint is that sum, others 0
Reduce SUM         Bcast of the root's output adjoint, added     Reduce(SUM) of tangents
                   to every rank's input adjoint
Allreduce SUM      Allreduce(SUM) of the output adjoints, added  Allreduce(SUM) of tangents
                   to the input adjoint
Reduce/Allreduce   the summed output adjoint goes to the rank    the tangent of the rank
MIN, MAX           that attained the extreme (the lowest such    that attained it
                   rank on ties), per element
Reduce/Allreduce   adjoint times the product of the other ranks' product rule (exact
PROD               values (gathered: exact with zeros)          with zeros)
Gather / Scatter   Scatter / Gather of the adjoints             the same call on tangents
Allgather          Allreduce(SUM) of the adjoints, own block     Allgather of the tangents
Barrier            Barrier                                       nothing
Isend / Irecv      wait for the adjoint message started at the   the tangents' messages,
                   reverse of the Wait; add it to the shadow     completed by the Wait
                   (Isend) or zero the shadow (Irecv)
Wait / Waitall     start the adjoint messages (Irecv into a      complete the tangents'
                   temporary / Isend of the shadow)              messages
=================  ===========================================  ==========================

``MPI_IN_PLACE`` is handled for Reduce/Allreduce with SUM, also when the program
chooses it at run time (``me == root ? MPI_IN_PLACE : x``); elsewhere it is a compile
error when constant, else the derivative stops with a message at run time.  The
communication is emitted whether or not the buffers on this rank carry derivatives
(zeros are sent, received adjoints dropped): the peer's adjoint communication must
find its partner.  Receives with
``MPI_ANY_SOURCE``/``MPI_ANY_TAG`` (or a source/tag not known at compile time) read
the actual source and tag from the status (a local one when the program passed
``MPI_STATUS_IGNORE``) so the adjoint goes back to the sender.

Datatypes, reduction operations and the in-place/ignore constants are recognised from
the IR for both ABIs: Open MPI's handles are addresses of globals (``@ompi_mpi_double``,
``@ompi_mpi_op_sum``), MPICH's are integer constants (``0x4c00080b``, ``0x58000003``).
``MPI_DOUBLE``/``MPI_FLOAT`` data carries derivatives; integer datatypes do not (the
call only runs).  A datatype or operation that cannot be identified at compile time
(a derived datatype, a handle passed in a variable from elsewhere), MPI calls without
a rule (``Alltoall``, ``Scan``, the ``v`` variants...) on floating-point data, and
``MPI_Test*``/``Waitany``/``Waitsome`` (which may complete a differentiated request
without its adjoint message) are compile errors naming the call and its line.
(The nonblocking calls' records and helpers live in :mod:`mpi_nonblocking`; the
reading of a call site -- handles, datatypes, operations -- and the small helper
functions both emit, in :mod:`mpi_calls`.)

Nonblocking messages: each ``MPI_Isend``/``Irecv`` of floating-point data gets a record
(shadow buffer, count, datatype, peer, tag, communicator, the adjoint's request), kept
in a list keyed by the address of the program's ``MPI_Request`` until the
``MPI_Wait``/``Waitall`` that completes it takes it out (the list is not thread-safe:
one thread makes the MPI calls of differentiated code).  A request completed outside
differentiated code leaves its adjoint message unstarted: the reverse of its
Isend/Irecv stops the program with a message.  A nonblocking receive from
``MPI_ANY_SOURCE``/``MPI_ANY_TAG`` is refused (at compile time when the wildcard is a
constant, else at run time with a message).

Limitation (as in Enzyme): both sides of a message must be in differentiated code; a
send in code that is not differentiated whose receive is (or the reverse) has no
adjoint partner and deadlocks.
"""

from __future__ import annotations

from ..ir import types as T
from ..ir.instructions import Alloca
from ..ir.values import ConstantInt, ConstantNull
from .emit import Emitter
from .libc import copy_adjoint, memset0
from .mpi_calls import (
    _FLOAT_TY,
    _MPICH_DT,
    _OMPI_DT,
    _abort_with,
    _bytes,
    _Call,
    _candidates,
    _excl_prod_all,
    _i64,
    _masked_add,
    _mul_add,
    _resolve,
)
from .runtime import runtime_function

__all__ = ["aug_call", "rev_call", "fwd_call"]


# -- access to the two generators -------------------------------------------------------
class _Rev:
    """Primal values and shadows in the reverse sweep of a ReverseGen."""

    def __init__(self, gen, b):
        self.gen, self.b, self.e = gen, b, gen.e
        self.m = gen.ctx.module

    def P(self, v):
        return self.gen.primal(v, self.b)

    def S(self, v):
        if v is None or not v.type.is_pointer or v not in self.gen.act.shadowed:
            return None
        return self.gen.shadow(v, self.b)

    def alloc(self, n):
        return self.e.call(self.gen._rt("__enzyme_py_shadow_alloc"), [n])

    def free(self, p):
        self.e.call(self.gen._rt("__enzyme_py_shadow_free"), [p])

    def int_slot(self):
        a = Alloca(T.i32, align=4)
        self.gen.rentry.insert(0, a)
        return a


def _entry_alloca(fn, ty, align):
    a = Alloca(ty, align=align)
    fn.blocks[0].insert(0, a)
    return a


def _rank(c, e, slot, comm, what="Comm_rank"):
    e.call(c.fn(e, what), [comm, slot])
    return e.load(T.i32, slot, 4)


# -- augmented forward sweep --------------------------------------------------------------
def user_rule(gen, inst) -> bool:
    """Whether the program registered its own rule for this MPI function (a custom
    gradient or derivative, or marked it inactive): then that rule applies, not ours."""
    hooks = getattr(gen.ctx, "hooks", None)
    reg = hooks.reg if hooks is not None else getattr(gen.ctx, "registry", None)
    if reg is None:
        return False
    name = inst.callee_name or ""
    return name in reg.inactive_fns or name in reg.gradients or name in reg.derivatives


def aug_call(gen, inst, A):
    """The forward sweep of reverse mode: the call runs; what its reverse needs beyond the
    primal arguments is computed and kept here.  (Not called where ``user_rule``.)"""
    from . import mpi_nonblocking as nb
    c = _Call(gen.ctx, inst)
    info = gen.__dict__.setdefault("mpi_info", {})
    k = c.kind
    if k in ("inactive", "barrier"):
        return
    if k == "completion":
        _no_completion(c)
    if k == "unsupported":
        _check_unsupported(c, gen.act)
        return
    e = gen.e
    m = gen.ctx.module
    e.position_before(A.parent.instructions[A.parent.index_of(A) + 1])
    if k == "nonblocking":
        kind = c.dtype()
        if kind != "int":
            info[inst] = {"rec": nb.aug_nonblocking(c, gen, inst, A, e, kind)}
    elif k == "wait":
        info[inst] = {"rec": e.call(nb.take_record(m), [A.args[c.pos["req"]]])}
    elif k == "waitall":
        info[inst] = {"arr": e.call(nb.take_all(m, c), [A.args[c.pos["reqs"]],
                                                        _i64(e, A.args[c.pos["n"]])])}
    elif k in ("recv", "sendrecv", "sendrecv_replace"):
        dkey = "rdt" if k == "sendrecv" else "dt"
        if c.dtype(dkey) != "int":
            info[inst] = {"src": _source_tag(c, gen, A, e)}
    elif k in ("send", "bcast", "gather", "scatter", "allgather"):
        c.dtype("dt" if c.pos.get("dt") is not None else "sdt")
        if k in ("gather", "scatter", "allgather"):
            if c.dtype("rdt") != "int":
                _no_in_place(c, ("sbuf", "rbuf"))
                _runtime_no_in_place(c, e, m, A.args, ("sbuf", "rbuf"))
    elif k in ("reduce", "allreduce"):
        kind = c.dtype()
        if kind == "int":
            return
        op = c.op()
        if op in ("min", "max", "prod"):
            info[inst] = {"aux": _extreme_aux(c, gen, inst, A, e, op, kind)}


def _no_completion(c):
    c.error("no derivative rule: it may complete a request of a differentiated message "
            "without its adjoint or tangent message",
            hint="complete requests with MPI_Wait/MPI_Waitall in differentiated code")


def _no_in_place(c, keys):
    for key in keys:
        if c.is_in_place(key):
            c.error("MPI_IN_PLACE has no derivative rule for this call",
                    hint="use separate send and receive buffers")


def _check_unsupported(c, act):
    """An MPI call without a rule: an error when it touches floating-point data or data
    with shadows; runs as it is otherwise."""
    for key in ("dt", "sdt", "rdt"):
        if c.pos.get(key) is not None:
            got = _resolve(c.arg(key))
            kind = _OMPI_DT.get(got) if isinstance(got, str) else _MPICH_DT.get(got)
            if kind != "int":
                c.error("MPI call without a derivative rule on data that may carry "
                        "derivatives", hint="restructure the communication with "
                        "MPI_Send/Recv, Sendrecv, Bcast, Reduce, Allreduce, Gather, Scatter "
                        "or Allgather, or move it out of the differentiated code")
    if any(a.type.is_pointer and a in act.shadowed for a in c.args if not a.is_global):
        if c.pos.get("dt") is None and c.pos.get("sdt") is None:
            c.error("MPI call without a derivative rule on memory that carries derivatives",
                    hint="move it out of the differentiated code")


def _source_tag(c, gen, A, e):
    """(source, tag) of a receive as values after the call ``A`` (forward function):
    the arguments when they are constants other than the wildcards, else read from the
    status (a local one replaces MPI_STATUS_IGNORE)."""
    inst = c.inst
    pk, tk = ("peer", "tag") if c.kind == "recv" else ("src", "rtag")
    src, tag = _resolve(inst.args[c.pos[pk]]), _resolve(inst.args[c.pos[tk]])
    wild_s, wild_t = c.wildcards()
    if isinstance(src, int) and isinstance(tag, int) and src != wild_s and tag != wild_t:
        return None
    st_k = c.pos["status"]
    st = A.args[st_k]
    ign = _resolve(inst.args[st_k])
    if ign == (0 if c.abi == "ompi" else 1):
        fn = A.parent.parent
        st = _entry_alloca(fn, T.ArrayType(T.i8, 64), 8)
        A.set_operand(st_k, st)
    so, to = c.status_offsets()
    s = e.load(T.i32, e.gep_bytes(st, so), 4)
    t = e.load(T.i32, e.gep_bytes(st, to), 4)
    # a receive from MPI_PROC_NULL (the edge of a non-periodic halo) reports the
    # source MPI_PROC_NULL and the tag MPI_ANY_TAG, which no send accepts: the
    # adjoint's send to MPI_PROC_NULL (a no-op) goes with tag 0
    t = e.select(e.icmp("eq", t, ConstantInt(T.i32, wild_t)), ConstantInt(T.i32, 0), t)
    return s, t


def _extreme_aux(c, gen, inst, A, e, op, kind):
    """After a MIN/MAX/PROD reduction of floating-point data (forward function, right
    after ``A``): a buffer (n ints: the rank that attained each element's extreme; or n
    values: the product of the other ranks' inputs) that the derivative uses."""
    m = gen.ctx.module
    ty = _FLOAT_TY[kind]
    n = _i64(e, A.args[c.pos["count"]])
    comm = A.args[c.pos["comm"]]
    nbytes = _bytes(e, A.args[c.pos["count"]], kind)
    if c.is_in_place("sbuf"):
        c.error(f"MPI_IN_PLACE with MPI_{op.upper()} has no derivative rule",
                hint="use separate send and receive buffers")
    x = A.args[c.pos["sbuf"]]
    # (MPI_IN_PLACE chosen at run time: stop with a message)
    e.call(_refuse_in_place(m, f"with MPI_{op.upper()}"), [x, c.in_place(e)])
    fn = A.parent.parent
    me_slot = _entry_alloca(fn, T.i32, 4)
    me = _rank(c, e, me_slot, comm)
    alloc = runtime_function(m, "__enzyme_py_shadow_alloc")
    free = runtime_function(m, "__enzyme_py_shadow_free")
    if op == "prod":
        np_slot = _entry_alloca(fn, T.i32, 4)
        nr = _rank(c, e, np_slot, comm, "Comm_size")
        g = e.call(alloc, [e.binop("mul", nbytes, e.cast("sext", nr, T.i64))])
        e.call(c.fn(e, "Allgather"), [x, A.args[c.pos["count"]], A.args[c.pos["dt"]], g,
                                      A.args[c.pos["count"]], A.args[c.pos["dt"]], comm])
        f = e.call(alloc, [nbytes])
        e.call(_excl_prod_all(m, ty), [f, g, me, nr, n])
        e.call(free, [g])
        return f, me
    # y: the reduction's result on every rank (Reduce: only the root has it)
    if c.kind == "reduce":
        y = e.call(alloc, [nbytes])
        e.call(c.fn(e, "Allreduce"), [x, y, A.args[c.pos["count"]], A.args[c.pos["dt"]],
                                      A.args[c.pos["op"]], comm])
    else:
        y = A.args[c.pos["rbuf"]]
    cand = e.call(alloc, [e.binop("mul", n, ConstantInt(T.i64, 4))])
    e.call(_candidates(m, ty), [x, y, cand, me, n])
    e.call(c.fn(e, "Allreduce"), [c.in_place(e), cand, A.args[c.pos["count"]],
                                  c.int_type(m), c.op_handle(m, "min"), comm])
    if c.kind == "reduce":
        e.call(free, [y])
    return cand, me


def _refuse_in_place(module, what):
    """A function ``(p, MPI_IN_PLACE)`` that stops the program with a message when the
    buffer ``p`` is MPI_IN_PLACE (chosen at run time) where ``what`` has no rule for it."""
    tag = "".join(ch if ch.isalnum() else "_" for ch in what)
    name = f"__enzyme_py_mpi_refuse_in_place.{tag}"
    fn = module.get_function(name)
    if fn is not None:
        return fn
    fn = module.add_function(name, T.FunctionType(T.void, [T.ptr, T.ptr]), linkage="internal",
                             fn_attrs="nounwind")
    x, ip = fn.args
    e = Emitter(module)
    entry, bad, ok = (fn.append_basic_block(k) for k in ("entry", "bad", "ok"))
    e.position_at_end(entry)
    e.cbranch(e.icmp("eq", x, ip), bad, ok)
    e.position_at_end(bad)
    _abort_with(module, e, f"enzyme: MPI_IN_PLACE {what} has no derivative rule (use "
                "separate send and receive buffers)\n")
    e.position_at_end(ok)
    e.ret()
    return fn


def _runtime_no_in_place(c, e, m, args, keys):
    """Emit (after the call) the run-time check of ``_refuse_in_place`` for the buffers
    ``keys`` of a call without a rule for MPI_IN_PLACE (``args``: the call's operands in
    the function being built)."""
    for key in keys:
        v = c.arg(key)
        if v is not None and not (v.is_constant and not v.is_global):
            e.call(_refuse_in_place(m, f"in {c.name}"), [args[c.pos[key]], c.in_place(e)])


# -- reverse sweep -----------------------------------------------------------------------
def rev_call(gen, inst, b):
    """The reverse of the call, in the reverse sweep."""
    from . import mpi_nonblocking as nb
    c = _Call(gen.ctx, inst)
    k = c.kind
    if k in ("inactive", "unsupported", "completion"):
        return
    r = _Rev(gen, b)
    e, m = r.e, r.m
    info = getattr(gen, "mpi_info", {}).get(inst, {})
    if k == "nonblocking":
        if "rec" in info:
            nb.rev_nonblocking(c, r, info)
        return
    if k == "wait":
        rec = gen._cached(("mpi_rec", inst), info["rec"], T.ptr, inst.parent, b)
        e.call(nb.start_adjoint(m, c), [rec])
        return
    if k == "waitall":
        arr = gen._cached(("mpi_arr", inst), info["arr"], T.ptr, inst.parent, b)
        e.call(nb.start_all(m, c), [arr, _i64(e, r.P(c.arg("n")))])
        return
    comm = r.P(c.arg("comm"))
    if k == "barrier":
        e.call(c.fn(e, "Barrier"), [comm])
        return
    if k in ("send", "recv", "bcast", "reduce", "allreduce"):
        kind = c.dtype()
        if kind == "int":
            return
        ty = _FLOAT_TY[kind]
        count, dt = r.P(c.arg("count")), r.P(c.arg("dt"))
        nbytes = _bytes(e, count, kind)
    if k == "send":
        tmp = r.alloc(nbytes)
        e.call(c.fn(e, "Recv"), [tmp, count, dt, r.P(c.arg("peer")), r.P(c.arg("tag")),
                                 comm, c.status_ignore(e)])
        _accumulate(e, m, ty, r.S(c.arg("buf")), tmp, nbytes)
        r.free(tmp)
    elif k == "recv":
        src, tag = _rev_source_tag(c, r, info, b, "peer", "tag")
        sb = r.S(c.arg("buf"))
        buf = sb if sb is not None else r.alloc(nbytes)
        e.call(c.fn(e, "Send"), [buf, count, dt, src, tag, comm])
        if sb is not None:
            memset0(e, sb, nbytes)
        else:
            r.free(buf)
    elif k == "sendrecv":
        _rev_sendrecv(c, r, info, b, comm)
    elif k == "sendrecv_replace":
        _rev_sendrecv_replace(c, r, info, b, comm)
    elif k == "bcast":
        root = r.P(c.arg("root"))
        sb = r.S(c.arg("buf"))
        src = sb if sb is not None else r.alloc(nbytes)
        tmp = r.alloc(nbytes)
        e.call(c.fn(e, "Reduce"), [src, tmp, count, dt, c.op_handle(m, "sum"), root, comm])
        if sb is not None:
            memset0(e, sb, nbytes)
            _accumulate(e, m, ty, sb, tmp, nbytes)
        else:
            r.free(src)
        r.free(tmp)
    elif k in ("reduce", "allreduce"):
        _rev_reduce(c, r, info, comm, count, dt, kind, ty, nbytes)
    elif k in ("gather", "scatter", "allgather"):
        _rev_gather(c, r, comm)


def _accumulate(e, m, ty, dst, tmp, nbytes):
    """dst += tmp (elementwise), tmp = 0; nothing when dst has no shadow."""
    if dst is not None:
        copy_adjoint(e, m, ty, tmp, dst, nbytes, overlap=False)


def _rev_source_tag(c, r, info, b, pk, tk):
    got = info.get("src")
    if got is None:
        return r.P(c.arg(pk)), r.P(c.arg(tk))
    s, t = got
    gen, inst = r.gen, c.inst
    return (gen._cached(("mpi_src", inst), s, T.i32, inst.parent, b),
            gen._cached(("mpi_tag", inst), t, T.i32, inst.parent, b))


def _rev_sendrecv_replace(c, r, info, b, comm):
    """The buffer's values went to dest and were replaced by src's: the buffer's adjoint
    goes back to src, and dest sends back the adjoint of what it received, which
    replaces it (the old values are gone, so nothing else is added to them)."""
    e = r.e
    kind = c.dtype()
    if kind == "int":
        return
    count, dt = r.P(c.arg("count")), r.P(c.arg("dt"))
    src, rtag = _rev_source_tag(c, r, info, b, "src", "rtag")
    nbytes = _bytes(e, count, kind)
    sb = r.S(c.arg("buf"))
    buf = sb if sb is not None else r.alloc(nbytes)
    e.call(c.fn(e, "Sendrecv_replace"), [buf, count, dt, src, rtag, r.P(c.arg("dest")),
                                         r.P(c.arg("stag")), comm, c.status_ignore(e)])
    if sb is None:
        r.free(buf)


def _rev_sendrecv(c, r, info, b, comm):
    e, m = r.e, r.m
    skind, rkind = c.dtype("sdt"), c.dtype("rdt")
    scount, sdt = r.P(c.arg("scount")), r.P(c.arg("sdt"))
    rcount, rdt = r.P(c.arg("rcount")), r.P(c.arg("rdt"))
    dest, stag = r.P(c.arg("dest")), r.P(c.arg("stag"))
    if rkind != "int":
        src, rtag = _rev_source_tag(c, r, info, b, "src", "rtag")
        rbytes = _bytes(e, rcount, rkind)
        sr = r.S(c.arg("rbuf"))
        rb = sr if sr is not None else r.alloc(rbytes)
    if skind != "int":
        sbytes = _bytes(e, scount, skind)
        tmp = r.alloc(sbytes)
    if skind != "int" and rkind != "int":
        e.call(c.fn(e, "Sendrecv"), [rb, rcount, rdt, src, rtag, tmp, scount, sdt, dest,
                                     stag, comm, c.status_ignore(e)])
    elif rkind != "int":
        e.call(c.fn(e, "Send"), [rb, rcount, rdt, src, rtag, comm])
    elif skind != "int":
        e.call(c.fn(e, "Recv"), [tmp, scount, sdt, dest, stag, comm, c.status_ignore(e)])
    if rkind != "int":
        if sr is not None:
            memset0(e, sr, rbytes)
        else:
            r.free(rb)
    if skind != "int":
        _accumulate(e, m, _FLOAT_TY[skind], r.S(c.arg("sbuf")), tmp, sbytes)
        r.free(tmp)


def _rev_reduce(c, r, info, comm, count, dt, kind, ty, nbytes):
    e, m = r.e, r.m
    gen, inst, b = r.gen, c.inst, r.b
    op = c.op()
    in_place = c.is_in_place("sbuf")
    dy = r.S(c.arg("rbuf"))
    dx = dy if in_place else r.S(c.arg("sbuf"))
    if not in_place and dx is not None:
        # MPI_IN_PLACE chosen at run time (`me == root ? MPI_IN_PLACE : x`): the input's
        # adjoint is the output's there (a null shadow: nothing to add)
        is_ip = e.icmp("eq", r.P(c.arg("sbuf")), c.in_place(e))
        dx = e.select(is_ip, dy if dy is not None else ConstantNull(T.ptr), dx)
        nbytes_dx = e.select(e.icmp("eq", dx, ConstantNull(T.ptr)), ConstantInt(T.i64, 0),
                             nbytes)
    else:
        nbytes_dx = nbytes
    tmp = r.alloc(nbytes)
    if c.kind == "allreduce":
        src = dy if dy is not None else r.alloc(nbytes)
        e.call(c.fn(e, "Allreduce"), [src, tmp, count, dt, c.op_handle(m, "sum"), comm])
        if dy is not None:
            memset0(e, dy, nbytes)
        else:
            r.free(src)
    else:
        root = r.P(c.arg("root"))
        me = _rank(c, e, r.int_slot(), comm)
        n_root = e.select(e.icmp("eq", me, root), nbytes, ConstantInt(T.i64, 0))
        if dy is not None:
            memcpy = e.declare("llvm.memcpy.p0.p0.i64", T.void, [T.ptr, T.ptr, T.i64, T.i1])
            e.call(memcpy, [tmp, dy, n_root, ConstantInt(T.i1, 0)])
            memset0(e, dy, n_root)
        e.call(c.fn(e, "Bcast"), [tmp, count, dt, root, comm])
    if op == "sum":
        _accumulate(e, m, ty, dx, tmp, nbytes_dx)
    elif dx is not None:
        aux, me_aug = info["aux"]
        aux_r = gen._cached(("mpi_aux", inst), aux, T.ptr, inst.parent, b)
        me_r = gen._cached(("mpi_me", inst), me_aug, T.i32, inst.parent, b)
        n = _i64(e, count)
        if op == "prod":
            e.call(_mul_add(m, ty), [dx, tmp, aux_r, n])
        else:
            e.call(_masked_add(m, ty), [dx, tmp, aux_r, me_r, n])
    if op != "sum":
        aux, _ = info["aux"]
        r.free(gen._cached(("mpi_aux", inst), aux, T.ptr, inst.parent, b))
    r.free(tmp)


def _rev_gather(c, r, comm):
    e, m = r.e, r.m
    k = c.kind
    skind, rkind = c.dtype("sdt"), c.dtype("rdt")
    if skind == "int" and rkind == "int":
        return
    if skind != rkind:
        c.error("send and receive datatypes differ (one floating-point, one integer)")
    ty = _FLOAT_TY[skind]
    scount, sdt = r.P(c.arg("scount")), r.P(c.arg("sdt"))
    rcount, rdt = r.P(c.arg("rcount")), r.P(c.arg("rdt"))
    nr = _rank(c, e, r.int_slot(), comm, "Comm_size")
    me = _rank(c, e, r.int_slot(), comm)
    nr64 = e.cast("sext", nr, T.i64)
    sbytes = _bytes(e, scount, skind)
    rbytes = _bytes(e, rcount, rkind)
    all_r = e.binop("mul", rbytes, nr64)
    all_s = e.binop("mul", sbytes, nr64)
    dy, dx = r.S(c.arg("rbuf")), r.S(c.arg("sbuf"))
    zero64 = ConstantInt(T.i64, 0)
    if k == "gather":
        root = r.P(c.arg("root"))
        is_root = e.icmp("eq", me, root)
        src = dy if dy is not None else r.alloc(all_r)
        tmp = r.alloc(sbytes)
        e.call(c.fn(e, "Scatter"), [src, rcount, rdt, tmp, scount, sdt, root, comm])
        if dy is not None:
            memset0(e, dy, e.select(is_root, all_r, zero64))
        else:
            r.free(src)
        _accumulate(e, m, ty, dx, tmp, sbytes)
    elif k == "scatter":
        root = r.P(c.arg("root"))
        is_root = e.icmp("eq", me, root)
        src = dy if dy is not None else r.alloc(rbytes)
        tmp = r.alloc(all_s)
        e.call(c.fn(e, "Gather"), [src, rcount, rdt, tmp, scount, sdt, root, comm])
        if dy is not None:
            memset0(e, dy, rbytes)
        else:
            r.free(src)
        _accumulate(e, m, ty, dx, tmp, e.select(is_root, all_s, zero64))
    else:
        src = dy if dy is not None else r.alloc(all_r)
        tmp = r.alloc(all_r)
        e.call(c.fn(e, "Allreduce"), [src, tmp, e.binop("mul", rcount, nr), rdt,
                                      c.op_handle(m, "sum"), comm])
        if dy is not None:
            memset0(e, dy, all_r)
        else:
            r.free(src)
        own = e.gep_bytes(tmp, e.binop("mul", e.cast("sext", me, T.i64), rbytes))
        _accumulate(e, m, ty, dx, own, sbytes)
    r.free(tmp)


# -- forward mode --------------------------------------------------------------------------
def fwd_call(gen, inst, A):
    """Forward mode: after the primal call (the emitter is positioned after ``A``), the
    same communication on each tangent lane."""
    from . import mpi_nonblocking as nb
    c = _Call(gen.ctx, inst)
    k = c.kind
    if k in ("inactive", "barrier"):
        return
    if k == "completion":
        _no_completion(c)
    if k == "nonblocking":
        kind = c.dtype()
        if kind != "int":
            nb.fwd_nonblocking(c, gen, inst, A, gen.e, kind)
        return
    if k in ("wait", "waitall"):
        m = gen.ctx.module
        stride = 8 if c.abi == "ompi" else 4
        if k == "wait":
            args = [A.args[c.pos["req"]], ConstantInt(T.i64, 1)]
        else:
            args = [A.args[c.pos["reqs"]], _i64(gen.e, A.args[c.pos["n"]])]
        gen.e.call(nb.fwd_complete(m, c, stride), args)
        return
    if k == "unsupported":
        _check_unsupported(c, gen.act)
        return
    e = gen.e
    m = gen.ctx.module
    W = gen.W
    alloc = runtime_function(m, "__enzyme_py_shadow_alloc")
    free = runtime_function(m, "__enzyme_py_shadow_free")
    temps = []

    def lanes(key, nbytes):
        """The shadow lanes of a buffer argument, or zeroed temporaries."""
        v = c.arg(key)
        if v is not None and v.type.is_pointer and v in gen.act.shadowed:
            return gen.S(v, inst)
        out = []
        for _ in range(W):
            t = e.call(alloc, [nbytes])
            temps.append(t)
            out.append(t)
        return out

    P = [A.args[i] for i in range(len(A.args))]

    def p(key):
        return P[c.pos[key]]

    if k in ("send", "recv", "bcast", "reduce", "allreduce"):
        kind = c.dtype()
        if kind == "int":
            return
        nbytes = _bytes(e, p("count"), kind)
    if k == "send":
        for s in lanes("buf", nbytes):
            e.call(c.fn(e, "Send"), [s, p("count"), p("dt"), p("peer"), p("tag"),
                                     p("comm")])
    elif k == "recv":
        st = _source_tag(c, gen, A, e)
        src, tag = st if st is not None else (p("peer"), p("tag"))
        for s in lanes("buf", nbytes):
            e.call(c.fn(e, "Recv"), [s, p("count"), p("dt"), src, tag, p("comm"),
                                     c.status_ignore(e)])
    elif k == "sendrecv":
        skind, rkind = c.dtype("sdt"), c.dtype("rdt")
        if rkind != "int":
            st = _source_tag(c, gen, A, e)
            src, tag = st if st is not None else (p("src"), p("rtag"))
            rl = lanes("rbuf", _bytes(e, p("rcount"), rkind))
        if skind != "int":
            sl = lanes("sbuf", _bytes(e, p("scount"), skind))
        for j in range(W):
            if skind != "int" and rkind != "int":
                e.call(c.fn(e, "Sendrecv"), [sl[j], p("scount"), p("sdt"), p("dest"),
                                             p("stag"), rl[j], p("rcount"), p("rdt"), src,
                                             tag, p("comm"), c.status_ignore(e)])
            elif skind != "int":
                e.call(c.fn(e, "Send"), [sl[j], p("scount"), p("sdt"), p("dest"),
                                         p("stag"), p("comm")])
            elif rkind != "int":
                e.call(c.fn(e, "Recv"), [rl[j], p("rcount"), p("rdt"), src, tag,
                                         p("comm"), c.status_ignore(e)])
    elif k == "sendrecv_replace":
        kind = c.dtype()
        if kind != "int":
            st = _source_tag(c, gen, A, e)
            src, tag = st if st is not None else (p("src"), p("rtag"))
            for s in lanes("buf", _bytes(e, p("count"), kind)):
                e.call(c.fn(e, "Sendrecv_replace"), [s, p("count"), p("dt"), p("dest"),
                                                     p("stag"), src, tag, p("comm"),
                                                     c.status_ignore(e)])
    elif k == "bcast":
        for s in lanes("buf", nbytes):
            e.call(c.fn(e, "Bcast"), [s, p("count"), p("dt"), p("root"), p("comm")])
    elif k in ("reduce", "allreduce"):
        _fwd_reduce(c, gen, inst, A, e, m, kind, nbytes, lanes, p, temps)
    elif k in ("gather", "scatter", "allgather"):
        skind, rkind = c.dtype("sdt"), c.dtype("rdt")
        if skind == "int" and rkind == "int":
            return
        _no_in_place(c, ("sbuf", "rbuf"))
        _runtime_no_in_place(c, e, m, A.args, ("sbuf", "rbuf"))
        if skind != rkind:
            c.error("send and receive datatypes differ (one floating-point, one integer)")
        fn_ = A.parent.parent
        nr = _rank(c, e, _entry_alloca(fn_, T.i32, 4), p("comm"), "Comm_size")
        nr64 = e.cast("sext", nr, T.i64)
        sb = _bytes(e, p("scount"), skind)
        rb = _bytes(e, p("rcount"), rkind)
        if k == "scatter":
            sb = e.binop("mul", sb, nr64)
        else:
            rb = e.binop("mul", rb, nr64)
        sl, rl = lanes("sbuf", sb), lanes("rbuf", rb)
        base = {"gather": "Gather", "scatter": "Scatter", "allgather": "Allgather"}[k]
        for j in range(W):
            args = [sl[j], p("scount"), p("sdt"), rl[j], p("rcount"), p("rdt")]
            args += [p("root"), p("comm")] if k != "allgather" else [p("comm")]
            e.call(c.fn(e, base), args)
    for t in temps:
        e.call(free, [t])


def _fwd_reduce(c, gen, inst, A, e, m, kind, nbytes, lanes, p, temps):
    op = c.op()
    ty = _FLOAT_TY[kind]
    W = gen.W
    in_place = c.is_in_place("sbuf")
    rl = lanes("rbuf", nbytes)
    sl = rl if in_place else lanes("sbuf", nbytes)
    root = [p("root")] if c.kind == "reduce" else []
    base = "Reduce" if c.kind == "reduce" else "Allreduce"
    sum_ = c.op_handle(m, "sum")
    alloc = runtime_function(m, "__enzyme_py_shadow_alloc")
    free = runtime_function(m, "__enzyme_py_shadow_free")
    if op == "sum":
        for j in range(W):
            src = c.in_place(e) if in_place else sl[j]
            e.call(c.fn(e, base), [src, rl[j], p("count"), p("dt"), sum_] + root
                   + [p("comm")])
        return
    aux, me = _extreme_aux(c, gen, inst, A, e, op, kind)
    n = _i64(e, p("count"))
    for j in range(W):
        t = e.call(alloc, [nbytes])
        if op == "prod":
            e.call(_mul_add(m, ty), [t, sl[j], aux, n])
        else:
            e.call(_masked_add(m, ty), [t, sl[j], aux, me, n])
        e.call(c.fn(e, base), [t, rl[j], p("count"), p("dt"), sum_] + root + [p("comm")])
        e.call(free, [t])
    e.call(free, [aux])
