"""Nonblocking MPI messages (``MPI_Isend``/``Irecv`` completed by ``MPI_Wait``/
``Waitall``) for :mod:`mpi`, reverse and forward mode.

Each MPI_Isend/MPI_Irecv of floating-point data in differentiated code gets a record,
kept in a list keyed by the address of its MPI_Request until the MPI_Wait/Waitall that
completes it takes it out.  Reverse mode: the reverse of the Wait starts the adjoint
message (an Irecv of the adjoint into a temporary for an Isend; an Isend of the
shadow for an Irecv) with the record's own request; the reverse of the Isend/Irecv
waits for it and adds the temporary into the shadow (Isend) or zeroes the shadow
(Irecv).  Forward mode: the tangents travel in messages of their own whose requests
the Wait completes.  A request completed otherwise (MPI_Test*, Waitany, Waitsome, or a
Wait outside differentiated code) leaves its adjoint unstarted: the reverse of the
Isend/Irecv then stops the program with a message instead of a wrong gradient.
"""

from __future__ import annotations

from ..ir import types as T
from ..ir.values import ConstantInt, ConstantNull
from .emit import Emitter, loop_latch
from .libc import copy_adjoint, memset0
from .mpi_calls import _FLOAT_TY, _abort_with, _bytes, _elem, _helper, _resolve
from .runtime import runtime_function

__all__ = ["aug_nonblocking", "rev_nonblocking", "fwd_nonblocking", "take_record",
           "take_all", "start_adjoint", "start_all", "fwd_complete"]

_R_KIND, _R_STARTED, _R_SHADOW, _R_COUNT, _R_PEER, _R_TAG = 0, 4, 8, 16, 20, 24
_R_DT, _R_COMM, _R_TMP, _R_ADJREQ, _R_NEXT, _R_KEY, _R_NBYTES = 32, 40, 48, 56, 64, 72, 80
_REC = 88
_LIST = "__enzyme_py_mpi_requests"


def _list_head(module):
    g = module.get_global(_LIST)
    if g is None:
        g = module.add_global(_LIST, T.ptr, ConstantNull(T.ptr), linkage="internal",
                              unique=False, align=8)
    return g


def take_record(module):
    """rec = the record registered under ``key`` (unlinked), or null."""
    name = "__enzyme_py_mpi_take_request"
    fn = module.get_function(name)
    if fn is not None:
        return fn
    fn = module.add_function(name, T.FunctionType(T.ptr, [T.ptr]), linkage="internal",
                             fn_attrs="nounwind")
    (key,) = fn.args
    e = Emitter(module)
    entry, loop, check, found, missing = (fn.append_basic_block(x) for x in
                                          ("entry", "loop", "check", "found", "missing"))
    head = _list_head(module)
    e.position_at_end(entry)
    e.br(loop)
    e.position_at_end(loop)
    link = e.phi(T.ptr)               # the address holding the pointer to the current node
    link.add_incoming(head, entry)
    cur = e.load(T.ptr, link, 8)
    e.cbranch(e.icmp("eq", cur, ConstantNull(T.ptr)), missing, check)
    e.position_at_end(check)
    k = e.load(T.ptr, e.gep_bytes(cur, _R_KEY), 8)
    nxt_link = e.gep_bytes(cur, _R_NEXT)
    link.add_incoming(nxt_link, check)
    e.cbranch(e.icmp("eq", k, key), found, loop)
    e.position_at_end(found)
    e.store(e.load(T.ptr, e.gep_bytes(cur, _R_NEXT), 8), link, 8)
    e.ret(cur)
    e.position_at_end(missing)
    e.ret(ConstantNull(T.ptr))
    return fn


def _register(module, e, rec, key):
    head = _list_head(module)
    e.store(key, e.gep_bytes(rec, _R_KEY), 8)
    e.store(e.load(T.ptr, head, 8), e.gep_bytes(rec, _R_NEXT), 8)
    e.store(rec, head, 8)


def take_all(module, c):
    """arr = malloc(n * 8) of the records of reqs[0..n) (stride: sizeof(MPI_Request))."""
    name = f"__enzyme_py_mpi_take_requests.{c.abi}"
    fn = module.get_function(name)
    if fn is not None:
        return fn
    take = take_record(module)
    fn = module.add_function(name, T.FunctionType(T.ptr, [T.ptr, T.i64]), linkage="internal",
                             fn_attrs="nounwind")
    reqs, n = fn.args
    e = Emitter(module)
    entry, loop, done = (fn.append_basic_block(x) for x in ("entry", "loop", "done"))
    e.position_at_end(entry)
    arr = e.call(runtime_function(module, "__enzyme_py_shadow_alloc"),
                    [e.binop("mul", n, ConstantInt(T.i64, 8))])
    e.cbranch(e.icmp("sgt", n, ConstantInt(T.i64, 0)), loop, done)
    e.position_at_end(loop)
    i = e.phi(T.i64)
    stride = 8 if c.abi == "ompi" else 4
    key = e.gep_bytes(reqs, e.binop("mul", i, ConstantInt(T.i64, stride)))
    e.store(e.call(take, [key]), _elem(e, T.ptr, arr, i), 8)
    loop_latch(e, i, n, entry, loop, loop, done, signed=True)
    e.ret(arr)
    return fn


def start_adjoint(module, c):
    """The reverse of completing the request of ``rec`` (null: not a recorded one):
    start the adjoint message."""
    name = f"__enzyme_py_mpi_start_adjoint.{c.abi}"
    fn = module.get_function(name)
    if fn is not None:
        return fn
    fn = module.add_function(name, T.FunctionType(T.void, [T.ptr]), linkage="internal",
                             fn_attrs="nounwind")
    (rec,) = fn.args
    h = T.ptr if c.abi == "ompi" else T.i32
    e = Emitter(module)
    entry, go, send, recv, wild, done = (fn.append_basic_block(x) for x in
                                         ("entry", "go", "send", "recv", "wild", "done"))
    e.position_at_end(entry)
    e.cbranch(e.icmp("eq", rec, ConstantNull(T.ptr)), done, go)
    e.position_at_end(go)
    e.store(ConstantInt(T.i32, 1), e.gep_bytes(rec, _R_STARTED), 4)
    count = e.load(T.i32, e.gep_bytes(rec, _R_COUNT), 4)
    peer = e.load(T.i32, e.gep_bytes(rec, _R_PEER), 4)
    tag = e.load(T.i32, e.gep_bytes(rec, _R_TAG), 4)
    dt = e.load(h, e.gep_bytes(rec, _R_DT), 8)
    comm = e.load(h, e.gep_bytes(rec, _R_COMM), 8)
    nbytes = e.load(T.i64, e.gep_bytes(rec, _R_NBYTES), 8)
    adjreq = e.gep_bytes(rec, _R_ADJREQ)
    kind = e.load(T.i32, e.gep_bytes(rec, _R_KIND), 4)
    e.cbranch(e.icmp("eq", kind, ConstantInt(T.i32, 0)), send, recv)
    alloc = runtime_function(module, "__enzyme_py_shadow_alloc")
    # the reverse of an Isend: receive the adjoint into a temporary
    e.position_at_end(send)
    tmp = e.call(alloc, [nbytes])
    e.store(tmp, e.gep_bytes(rec, _R_TMP), 8)
    irecv = e.declare("MPI_Irecv", T.i32, [T.ptr, T.i32, h, T.i32, T.i32, h, T.ptr])
    e.call(irecv, [tmp, count, dt, peer, tag, comm, adjreq])
    e.br(done)
    # the reverse of an Irecv: send the shadow's adjoint (zeros without a shadow)
    e.position_at_end(recv)
    ws, wt = c.wildcards()
    is_wild = e.binop("or", e.icmp("eq", peer, ConstantInt(T.i32, ws - (1 << 32))),
                      e.icmp("eq", tag, ConstantInt(T.i32, wt - (1 << 32))))
    ok = fn.append_basic_block("ok")
    e.cbranch(is_wild, wild, ok)
    e.position_at_end(ok)
    sh = e.load(T.ptr, e.gep_bytes(rec, _R_SHADOW), 8)
    none = e.icmp("eq", sh, ConstantNull(T.ptr))
    tmp2 = e.call(alloc, [e.select(none, nbytes, ConstantInt(T.i64, 0))])
    e.store(tmp2, e.gep_bytes(rec, _R_TMP), 8)
    isend = e.declare("MPI_Isend", T.i32, [T.ptr, T.i32, h, T.i32, T.i32, h, T.ptr])
    e.call(isend, [e.select(none, tmp2, sh), count, dt, peer, tag, comm, adjreq])
    e.br(done)
    e.position_at_end(wild)
    _abort_with(module, e, "enzyme: the derivative of an MPI_Irecv from MPI_ANY_SOURCE or "
                "with MPI_ANY_TAG is not supported (the adjoint message needs its sender)\n")
    e.position_at_end(done)
    e.ret()
    return fn


def start_all(module, c):
    name = f"__enzyme_py_mpi_start_adjoints.{c.abi}"
    fn = module.get_function(name)
    if fn is not None:
        return fn
    start = start_adjoint(module, c)
    fn = module.add_function(name, T.FunctionType(T.void, [T.ptr, T.i64]), linkage="internal",
                             fn_attrs="nounwind")
    arr, n = fn.args
    e = Emitter(module)
    entry, loop, done = (fn.append_basic_block(x) for x in ("entry", "loop", "done"))
    e.position_at_end(entry)
    e.cbranch(e.icmp("sgt", n, ConstantInt(T.i64, 0)), loop, done)
    e.position_at_end(loop)
    i = e.phi(T.i64)
    # the reverse of completing several requests: start the adjoints in reverse order
    j = e.binop("sub", e.binop("sub", n, ConstantInt(T.i64, 1)), i)
    e.call(start, [e.load(T.ptr, _elem(e, T.ptr, arr, j), 8)])
    loop_latch(e, i, n, entry, loop, loop, done, signed=True)
    e.call(runtime_function(module, "__enzyme_py_shadow_free"), [arr])
    e.ret()
    return fn


def _check_started(module):
    name = "__enzyme_py_mpi_check_started"
    fn = module.get_function(name)
    if fn is not None:
        return fn
    fn = module.add_function(name, T.FunctionType(T.void, [T.ptr]), linkage="internal",
                             fn_attrs="nounwind")
    (rec,) = fn.args
    e = Emitter(module)
    entry, bad, ok = (fn.append_basic_block(x) for x in ("entry", "bad", "ok"))
    e.position_at_end(entry)
    st = e.load(T.i32, e.gep_bytes(rec, _R_STARTED), 4)
    e.cbranch(e.icmp("eq", st, ConstantInt(T.i32, 0)), bad, ok)
    e.position_at_end(bad)
    _abort_with(module, e, "enzyme: an MPI_Isend/MPI_Irecv of differentiated data was not "
                "completed by MPI_Wait/MPI_Waitall in differentiated code (MPI_Test*, "
                "Waitany and Waitsome have no derivative rule)\n")
    e.position_at_end(ok)
    e.ret()
    return fn


def aug_nonblocking(c, gen, inst, A, e, kind):
    """Forward sweep of an Isend/Irecv of floating-point data: the record."""
    m = gen.ctx.module
    if c.base == "Irecv":
        ws, wt = c.wildcards()
        if _resolve(inst.args[c.pos["peer"]]) == ws or _resolve(inst.args[c.pos["tag"]]) == wt:
            c.error("the derivative of a nonblocking receive from MPI_ANY_SOURCE or with "
                    "MPI_ANY_TAG is not supported", hint="name the source and tag, or use "
                                                         "MPI_Recv")
    rec = e.call(runtime_function(m, "__enzyme_py_shadow_alloc"), [ConstantInt(T.i64, _REC)])
    buf = inst.args[c.pos["buf"]]
    sh = gen._sh_aug(buf, inst) if buf in gen.act.shadowed else ConstantNull(T.ptr)
    count = A.args[c.pos["count"]]
    e.store(ConstantInt(T.i32, 0 if c.base != "Irecv" else 1), e.gep_bytes(rec, _R_KIND), 4)
    e.store(sh, e.gep_bytes(rec, _R_SHADOW), 8)
    e.store(count, e.gep_bytes(rec, _R_COUNT), 4)
    e.store(A.args[c.pos["peer"]], e.gep_bytes(rec, _R_PEER), 4)
    e.store(A.args[c.pos["tag"]], e.gep_bytes(rec, _R_TAG), 4)
    e.store(A.args[c.pos["dt"]], e.gep_bytes(rec, _R_DT), 8)
    e.store(A.args[c.pos["comm"]], e.gep_bytes(rec, _R_COMM), 8)
    e.store(_bytes(e, count, kind), e.gep_bytes(rec, _R_NBYTES), 8)
    _register(m, e, rec, A.args[c.pos["req"]])
    return rec


def rev_nonblocking(c, r, info):
    """Reverse of an Isend/Irecv: wait for the adjoint message, then use it."""
    e, m, gen, inst = r.e, r.m, r.gen, c.inst
    kind = c.dtype()
    if kind == "int":
        return
    ty = _FLOAT_TY[kind]
    rec = gen._cached(("mpi_rec", inst), info["rec"], T.ptr, inst.parent, r.b)
    e.call(_check_started(m), [rec])
    wait = e.declare("MPI_Wait", T.i32, [T.ptr, T.ptr])
    e.call(wait, [e.gep_bytes(rec, _R_ADJREQ), c.status_ignore(e)])
    sh = e.load(T.ptr, e.gep_bytes(rec, _R_SHADOW), 8)
    tmp = e.load(T.ptr, e.gep_bytes(rec, _R_TMP), 8)
    nbytes = e.load(T.i64, e.gep_bytes(rec, _R_NBYTES), 8)
    n = e.select(e.icmp("eq", sh, ConstantNull(T.ptr)), ConstantInt(T.i64, 0), nbytes)
    if c.base == "Irecv":
        memset0(e, sh, n)
    else:
        copy_adjoint(e, m, ty, tmp, sh, n, overlap=False)
    r.free(tmp)
    r.free(rec)


def fwd_nonblocking(c, gen, inst, A, e, kind):
    """Forward mode, after an Isend/Irecv: the tangents' messages, with their requests
    in a record registered under the program's request."""
    m = gen.ctx.module
    W = gen.W
    rec = e.call(runtime_function(m, "__enzyme_py_shadow_alloc"),
                    [ConstantInt(T.i64, _REC + 16 * W)])
    e.store(ConstantInt(T.i32, W), e.gep_bytes(rec, _R_COUNT), 4)
    nbytes = _bytes(e, A.args[c.pos["count"]], kind)
    buf = inst.args[c.pos["buf"]]
    shadowed = buf in gen.act.shadowed
    ls = gen.S(buf, inst) if shadowed else None
    alloc = runtime_function(m, "__enzyme_py_shadow_alloc")
    for j in range(W):
        if ls is None:
            t = e.call(alloc, [nbytes])
            e.store(t, e.gep_bytes(rec, _REC + 8 * W + 8 * j), 8)
            b = t
        else:
            b = ls[j]
        args = list(A.args)
        args[c.pos["buf"]] = b
        # the lanes' requests form an MPI_Request array (for MPI_Waitall)
        args[c.pos["req"]] = e.gep_bytes(rec, _REC + (8 if c.abi == "ompi" else 4) * j)
        e.call(c.fn_nb(e), args)
    _register(m, e, rec, A.args[c.pos["req"]])


def fwd_complete(module, c, stride):
    """Forward mode, after MPI_Wait/Waitall(n, reqs): complete the tangents' messages of
    the recorded requests among reqs[0..n)."""
    name = f"__enzyme_py_mpi_complete_tangents.{c.abi}"
    fn = module.get_function(name)
    if fn is not None:
        return fn
    take = take_record(module)
    fn = module.add_function(name, T.FunctionType(T.void, [T.ptr, T.i64]), linkage="internal",
                             fn_attrs="nounwind")
    reqs, n = fn.args
    e = Emitter(module)
    entry, loop, have, nxt_b, done = (fn.append_basic_block(x) for x in
                                      ("entry", "loop", "have", "next", "done"))
    e.position_at_end(entry)
    e.cbranch(e.icmp("sgt", n, ConstantInt(T.i64, 0)), loop, done)
    e.position_at_end(loop)
    i = e.phi(T.i64)
    rec = e.call(take, [e.gep_bytes(reqs, e.binop("mul", i, ConstantInt(T.i64, stride)))])
    e.cbranch(e.icmp("eq", rec, ConstantNull(T.ptr)), nxt_b, have)
    e.position_at_end(have)
    w = e.load(T.i32, e.gep_bytes(rec, _R_COUNT), 4)
    waitall = e.declare("MPI_Waitall", T.i32, [T.i32, T.ptr, T.ptr])
    ign = ConstantNull(T.ptr) if c.abi == "ompi" else e.cast("inttoptr", ConstantInt(T.i64, 1),
                                                             T.ptr)
    e.call(waitall, [w, e.gep_bytes(rec, _REC), ign])
    # (a second pass over the lanes frees the temporaries: at most 8 lanes in practice)
    free = runtime_function(module, "__enzyme_py_shadow_free")
    w64 = e.cast("sext", w, T.i64)
    tmps = e.gep_bytes(rec, e.binop("add", ConstantInt(T.i64, _REC),
                                    e.binop("mul", w64, ConstantInt(T.i64, 8))))
    _free_n = _free_ptrs(module)
    e.call(_free_n, [tmps, w64])
    e.call(free, [rec])
    e.br(nxt_b)
    e.position_at_end(nxt_b)
    loop_latch(e, i, n, entry, nxt_b, loop, done, signed=True)
    e.ret()
    return fn


def _free_ptrs(module):
    """shadow_free(p[i]) for i < n   (args: p, n)"""
    def body(e, a, i, ty):
        e.call(runtime_function(module, "__enzyme_py_shadow_free"),
                  [e.load(T.ptr, _elem(e, T.ptr, a[0], i), 8)])
    return _helper(module, "__enzyme_py_mpi_free_ptrs", T.ptr, [T.ptr, T.i64], body)
