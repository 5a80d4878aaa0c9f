"""The Python interface: call C and C++ functions on NumPy arrays and differentiate them.

    import numpy as np, enzyme_py
    lib = enzyme_py.compile(source)                  # C/C++ text or a path
    lib.loss(w, x, n)                                # NumPy arrays for pointer parameters
    enzyme_py.grad(lib.loss, argnums=0)(w, x, n)     # reverse mode (__enzyme_autodiff)
    enzyme_py.value_and_grad(lib.loss)(w, x, n)
    enzyme_py.jvp(lib.loss, (w, x, n), (tw, None, None))   # forward mode (__enzyme_fwddiff)
    value, f_vjp = enzyme_py.vjp(lib.f, x, y, n); f_vjp(ct)

How it works. :func:`compile` builds the source with ``enzyme-cc -shared`` (EnzymePy's
own driver, run as ``python -c`` with this package on the path, so no PATH lookup) into
an on-disk cache, and reads every exported function's signature with libclang (the PyPI
``libclang`` package) from the source as EnzymePy's clang preprocesses it.  The first
gradient of a function generates a small C wrapper that calls ``__enzyme_autodiff`` (or
``__enzyme_fwddiff``) on it with the activity the call needs, and builds source plus
wrapper into a second cached library.  Each such library holds its own copy of the
code: global variables of the C code are not shared between ``lib.f`` and its
derivatives.

Parameters.  ``T *`` and ``T []`` parameters take C-contiguous NumPy arrays of T's
dtype (``double`` float64, ``float`` float32, ``int`` int32, ``long`` int64, ...);
``T [N]`` needs N elements and ``T (*)[M]`` / ``T [][M]`` a 2-D array with M columns.
``const T *`` parameters are inputs; a non-const pointer may be written in place by a
plain call (so a read-only array is refused).  Scalars are Python numbers.

What is differentiated.  The *result* of a function is its return value when that is
``double``/``float``; otherwise (``void`` or an integer status) its non-const
floating-point array parameters.  Derivatives are taken with respect to floating-point
parameters, arrays and scalars; integer parameters are constant.  Gradient functions
never modify their arguments (they work on copies of non-const arrays).

The cache lives in ``$ENZYME_PY_CACHE_DIR``, else ``$XDG_CACHE_HOME/enzyme_py``, else
``~/.cache/enzyme_py``; an entry is keyed by a hash of the source, the flags, the
language, the clang override variables and EnzymePy's version, and is written to a
temporary directory first and renamed into place, so concurrent builds are safe.

This module builds: the cache, the signatures, :func:`compile`, :class:`Library` and
the generated wrappers.  :class:`Function` (the calls and their argument checks) and
the differentiation (``grad``, ``value_and_grad``, ``jvp``, ``vjp``, and the sweeps
``reverse`` and ``forward`` that the PyTorch and JAX adapters use) are in
:mod:`.functions`, imported here.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from . import __version__
# the calls and the differentiation; torch.py and jax.py use reverse, forward, _check
# and _function from here
from .functions import (  # noqa: F401
    Function,
    _check,
    _ctype,
    _function,
    _ptype,
    forward,
    grad,
    jvp,
    reverse,
    value_and_grad,
    vjp,
)

__all__ = ["compile", "grad", "value_and_grad", "jvp", "vjp", "Library", "Function",
           "CompileError", "cache_dir"]

_GENERATOR = "1"   # bump when the generated wrapper code or the metadata layout changes


class CompileError(Exception):
    """Building with enzyme-cc failed (a C error, or code the AD pass cannot
    differentiate).  ``diagnostic`` holds enzyme-cc's messages."""

    def __init__(self, message: str, diagnostic: str = ""):
        super().__init__(message + ("\n" + diagnostic.rstrip() if diagnostic else ""))
        self.diagnostic = diagnostic


# ---------------------------------------------------------------------------------------
# the cache and the build


def cache_dir() -> str:
    """Where compiled libraries are kept (see the module docstring)."""
    d = os.environ.get("ENZYME_PY_CACHE_DIR")
    if d:
        return d
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "enzyme_py")


def _key(parts: dict) -> str:
    parts = dict(parts, version=__version__, generator=_GENERATOR,
                 clang=os.environ.get("ENZYME_CLANG", ""),
                 clangxx=os.environ.get("ENZYME_CLANGXX", ""))
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:32]


def _driver(args: list[str], cxx: bool, cwd: str) -> subprocess.CompletedProcess:
    """Run EnzymePy's own enzyme-cc / enzyme-c++ (this package, whatever PATH says)."""
    pkg_parent = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ)
    env["PYTHONPATH"] = pkg_parent + (os.pathsep + env["PYTHONPATH"]
                                      if env.get("PYTHONPATH") else "")
    code = ("import sys; from enzyme_py.driver.main import main; "
            f"sys.exit(main(sys.argv[1:], cxx={cxx}))")
    return subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, env=env,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True)


def _cached_build(parts: dict, produce) -> str:
    """The cache directory for ``parts``; ``produce(tmpdir)`` fills a fresh one on a miss.
    A finished entry is renamed into place in one step; a loser of a race drops its copy."""
    root = cache_dir()
    final = os.path.join(root, _key(parts))
    if os.path.isfile(os.path.join(final, "meta.json")):
        return final
    os.makedirs(root, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".build-", dir=root)
    try:
        produce(tmp)
        try:
            os.rename(tmp, final)
        except OSError:
            if not os.path.isfile(os.path.join(final, "meta.json")):
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return final


def _source_name(lang: str) -> str:
    return "source.cpp" if lang == "c++" else "source.c"


def _build_library(d: str, source: str, wrapper: str | None, lang: str,
                   flags: tuple[str, ...], what: str) -> None:
    src = os.path.join(d, _source_name(lang))
    with open(src, "w") as fh:
        fh.write(source)
    inputs = ["-x", lang, src]
    if wrapper is not None:
        with open(os.path.join(d, "wrapper.c"), "w") as fh:
            fh.write(wrapper)
        inputs += ["-x", lang, os.path.join(d, "wrapper.c")]
    opt = [] if any(re.fullmatch(r"-O.*", f) for f in flags) else ["-O2"]
    args = [*opt, "-fPIC", "-shared", *flags, *inputs, "-x", "none", "-o",
            os.path.join(d, "lib.so"), "-lm"]
    r = _driver(args, lang == "c++", d)
    if r.returncode != 0:
        diag = (r.stderr + r.stdout).replace(d + os.sep, "")
        raise CompileError(f"enzyme-cc could not build {what}", diag)


# ---------------------------------------------------------------------------------------
# signatures (libclang)


@dataclass(frozen=True)
class Param:
    """One parameter of a C function, as the Python interface passes it."""

    name: str
    kind: str               # "array", "float", "int" or "unsupported"
    dtype: str              # NumPy dtype name of the scalar / the array element
    ctype: str              # C spelling for the generated prototype
    const: bool = False     # arrays: the elements are const
    shape: tuple = ()       # arrays: (None | N, M, ...) from T[N] / T (*)[M]; () = any
    why: str = ""           # unsupported: the C type

    @property
    def is_float(self) -> bool:
        return self.dtype in ("float32", "float64")


@dataclass(frozen=True)
class Signature:
    name: str               # as written (qualified for C++ namespaces)
    symbol: str             # the linker name
    params: tuple[Param, ...]
    ret: Param | None       # None for void

    def unsupported(self) -> str | None:
        for p in self.params:
            if p.kind == "unsupported":
                return f"parameter '{p.name}' has type '{p.why}'"
        if self.ret is not None and self.ret.kind not in ("float", "int"):
            return f"the return type is '{self.ret.why or self.ret.ctype}'"
        return None


_INT_CTYPES = {
    "CHAR_S": "char", "SCHAR": "signed char", "CHAR_U": "char", "UCHAR": "unsigned char",
    "SHORT": "short", "USHORT": "unsigned short", "INT": "int", "UINT": "unsigned int",
    "LONG": "long", "ULONG": "unsigned long", "LONGLONG": "long long",
    "ULONGLONG": "unsigned long long",
}
_UNSIGNED = {"CHAR_U", "UCHAR", "USHORT", "UINT", "ULONG", "ULONGLONG"}


def _scalar(t) -> tuple[str, str, str] | None:
    """(kind, dtype, C spelling) of a canonical scalar type, or None."""
    k = t.kind.name
    if k == "DOUBLE":
        return "float", "float64", "double"
    if k == "FLOAT":
        return "float", "float32", "float"
    if k == "BOOL":
        return "int", "bool", "EP_BOOL"
    if k in _INT_CTYPES:
        size = t.get_size()
        return "int", f"{'uint' if k in _UNSIGNED else 'int'}{8 * size}", _INT_CTYPES[k]
    if k == "ENUM":
        return _scalar(t.get_declaration().enum_type.get_canonical())
    return None


def _param(name: str, t) -> Param:
    spelled = t.spelling
    t = t.get_canonical()
    k = t.kind.name
    s = _scalar(t)
    if s is not None:
        return Param(name, s[0], s[1], s[2])
    dims: list = []
    if k == "POINTER":
        elem = t.get_pointee()
        dims.append(None)
    elif k in ("CONSTANTARRAY", "INCOMPLETEARRAY", "VARIABLEARRAY", "DEPENDENTSIZEDARRAY"):
        elem = t
    else:
        return Param(name, "unsupported", "", "", why=spelled)
    while elem.kind.name in ("CONSTANTARRAY", "INCOMPLETEARRAY", "VARIABLEARRAY"):
        dims.append(elem.element_count if elem.kind.name == "CONSTANTARRAY" else None)
        elem = elem.element_type.get_canonical()
    if k == "POINTER" and len(dims) == 1:
        dims = []   # plain T *: any shape
    s = _scalar(elem)
    if s is None:
        return Param(name, "unsupported", "", "", why=spelled)
    return Param(name, "array", s[1], s[2] + " *", const=elem.is_const_qualified(),
                 shape=tuple(dims))


_LINE_MARKER = re.compile(r'#\s*(?:line\s+)?(\d+)\s+"((?:[^"\\]|\\.)*)"')


def _read_signatures(pre: str, main: str, lang: str, flags: tuple[str, ...]) -> list[Signature]:
    """Exported function definitions of ``main`` in the preprocessed text ``pre``."""
    try:
        from clang import cindex
    except ImportError:
        raise ImportError("enzyme_py.compile reads C declarations with libclang: "
                          "pip install 'enzyme-py[python]' (or: pip install libclang)") from None
    # which original file each line of the preprocessed text comes from
    owner: list[str] = []
    current = main
    for line in pre.splitlines():
        m = _LINE_MARKER.match(line) if line.startswith("#") else None
        if m:
            current = m.group(2)
        owner.append(current)
    std = [f for f in flags if f.startswith("-std=")]
    index = cindex.Index.create()
    name = "source.ii" if lang == "c++" else "source.i"
    tu = index.parse(name, args=["-x", lang, *std], unsaved_files=[(name, pre)])
    errors = [d for d in tu.diagnostics if d.severity >= cindex.Diagnostic.Error]
    if errors:
        raise CompileError("libclang could not read the declarations",
                           "\n".join(str(d) for d in errors[:5]))
    out: list[Signature] = []

    def walk(cursor, prefix: str) -> None:
        for c in cursor.get_children():
            kind = c.kind.name
            if kind in ("NAMESPACE",):
                walk(c, prefix + c.spelling + "::")
            elif kind == "LINKAGE_SPEC" or (kind == "UNEXPOSED_DECL" and lang == "c++"):
                walk(c, prefix)
            elif kind == "FUNCTION_DECL" and c.is_definition() \
                    and c.linkage.name == "EXTERNAL":
                line = c.location.line
                if not (0 < line <= len(owner)) or os.path.basename(owner[line - 1]) \
                        != os.path.basename(main):
                    continue
                if c.type.is_function_variadic():
                    continue
                params = tuple(_param(a.spelling or f"arg{i}", a.type)
                               for i, a in enumerate(c.get_arguments()))
                rt = c.result_type.get_canonical()
                ret = None if rt.kind.name == "VOID" else _param("return value", rt)
                out.append(Signature(prefix + c.spelling, c.mangled_name, params, ret))

    walk(tu.cursor, "")
    return out


def _sig_to_json(s: Signature) -> dict:
    def p(x: Param | None):
        return None if x is None else dict(x.__dict__, shape=list(x.shape))
    return {"name": s.name, "symbol": s.symbol, "params": [p(x) for x in s.params],
            "ret": p(s.ret)}


def _sig_from_json(d: dict) -> Signature:
    def p(x):
        return None if x is None else Param(**dict(x, shape=tuple(x["shape"])))
    return Signature(d["name"], d["symbol"], tuple(p(x) for x in d["params"]), p(d["ret"]))


# ---------------------------------------------------------------------------------------
# compile


_LANGS = {"c": "c", "c++": "c++", "cxx": "c++", "cpp": "c++"}
_CXX_SUFFIXES = (".cpp", ".cc", ".cxx", ".c++", ".C", ".hpp")
_C_SUFFIXES = (".c", ".h")


def compile(source: str | os.PathLike, *, lang: str | None = None,  # noqa: A001
            flags: Sequence[str] = ()) -> Library:
    """Build C (``lang="c"``, the default) or C++ (``lang="c++"``) code into a library
    whose functions take NumPy arrays.  ``source`` is the code itself or the path of a
    file (whose suffix picks the language when ``lang`` is not given); ``flags`` are
    extra enzyme-cc flags (``-O3``, ``-I...``, ``-DN=4``, ``-std=c++17``; ``-O2`` when
    no ``-O`` is given).  Raises :class:`CompileError` with enzyme-cc's diagnostic."""
    path = None
    if isinstance(source, os.PathLike) or (isinstance(source, str) and "\n" not in source
                                          and os.path.isfile(source)):
        path = os.fspath(source)
        with open(path) as fh:
            text = fh.read()
        if lang is None and path.endswith(_CXX_SUFFIXES):
            lang = "c++"
    elif isinstance(source, str) and "\n" not in source and ";" not in source \
            and "{" not in source and source.strip().endswith(_C_SUFFIXES + _CXX_SUFFIXES):
        # one line naming a C/C++ file that is not there: a mistyped path, not source
        raise FileNotFoundError(f"compile: no such file: {source!r} (a string of C/C++ "
                                "source must contain the code itself)")
    elif isinstance(source, str):
        text = source
    else:
        raise TypeError(f"compile: source must be a string or a path, not "
                        f"{type(source).__name__}")
    lang_key = "c" if lang is None else str(lang).lower()
    if lang_key not in _LANGS:
        raise ValueError(f"compile: lang must be 'c' or 'c++', not {lang!r}")
    lang = _LANGS[lang_key]
    if isinstance(flags, str):
        raise TypeError("compile: flags must be a sequence of strings, e.g. ('-O3',)")
    flags = tuple(str(f) for f in flags)
    if path is not None:  # #include "x.h" beside the file keeps working
        flags = flags + ("-I", os.path.dirname(os.path.abspath(path)))
    parts = {"kind": "primal", "source": text, "lang": lang, "flags": flags}

    def produce(d: str) -> None:
        _build_library(d, text, None, lang, flags, "the library")
        src = os.path.join(d, _source_name(lang))
        r = _driver(["-E", *flags, "-x", lang, src], lang == "c++", d)
        if r.returncode != 0:
            raise CompileError("enzyme-cc could not preprocess the source", r.stderr)
        sigs = _read_signatures(r.stdout, src, lang, flags)
        with open(os.path.join(d, "meta.json"), "w") as fh:
            json.dump({"signatures": [_sig_to_json(s) for s in sigs]}, fh)

    d = _cached_build(parts, produce)
    with open(os.path.join(d, "meta.json")) as fh:
        sigs = [_sig_from_json(s) for s in json.load(fh)["signatures"]]
    return Library(d, text, lang, flags, sigs)


class Library:
    """A compiled library: each exported C function is an attribute (``lib.loss``),
    and ``lib["ns::f"]`` reaches any by its full name."""

    def __init__(self, path: str, source: str, lang: str, flags: tuple[str, ...],
                 sigs: list[Signature]):
        self.path = path
        self._source = source
        self._lang = lang
        self._flags = flags
        self._dll = _load(os.path.join(path, "lib.so"))
        self._sigs: dict[str, Signature] = {}
        by_short: dict[str, list[Signature]] = {}
        emitted = []
        for s in sigs:
            try:
                getattr(self._dll, s.symbol)
            except AttributeError:
                continue    # not emitted (e.g. an inline function nobody calls)
            emitted.append(s)
        names = [s.name for s in emitted]
        for s in emitted:   # C++ overloads: "f(const double *, int)"
            self._sigs[s.name if names.count(s.name) == 1 else s.name + _spell(s)] = s
            by_short.setdefault(s.name.rsplit("::", 1)[-1], []).append(s)
        self._short = by_short
        self._functions: dict[str, Function] = {}
        self._derivatives: dict[tuple, Any] = {}

    @property
    def functions(self) -> list[str]:
        """The names of the functions the library exports."""
        return list(self._sigs)

    def __dir__(self):
        return list(super().__dir__()) + [n for n, v in self._short.items() if len(v) == 1]

    def __getitem__(self, name: str) -> Function:
        if name in self._functions:
            return self._functions[name]
        sig = self._sigs.get(name)
        if sig is None:
            cands = self._short.get(name, [])
            if len(cands) > 1:
                raise KeyError(f"'{name}' is overloaded or in several namespaces: "
                               f"{', '.join(s.name + _spell(s) for s in cands)}; "
                               "use lib['name(types)'] (see lib.functions)")
            if not cands:
                raise KeyError(f"no exported function '{name}' in the library (it has: "
                               f"{', '.join(self._sigs) or 'none'})")
            sig = cands[0]
        fn = self._functions[name] = Function(self, sig)
        return fn

    def __getattr__(self, name: str) -> Function:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self[name]
        except KeyError as e:
            raise AttributeError(e.args[0]) from None

    def __repr__(self) -> str:
        return f"<enzyme_py.Library {self._lang} {', '.join(self._sigs)}>"

    # -- derivative libraries -----------------------------------------------------------

    def _derivative(self, sig: Signature, mode: str, dup: frozenset, out: frozenset):
        """The ctypes function of the generated wrapper for ``sig`` in ``mode`` ("rev" or
        "fwd"): ``dup`` are the indices of array parameters with a shadow, ``out`` the
        float scalars that are active."""
        key = (sig.symbol, mode, dup, out)
        f = self._derivatives.get(key)
        if f is not None:
            return f
        wrapper, argtypes = _wrapper(sig, mode, dup, out)
        parts = {"kind": "derivative", "source": self._source, "lang": self._lang,
                 "flags": self._flags, "wrapper": wrapper}

        def produce(d: str) -> None:
            _build_library(d, self._source, wrapper, self._lang, self._flags,
                           f"the {'gradient' if mode == 'rev' else 'tangent'} of "
                           f"{sig.name}")
            with open(os.path.join(d, "meta.json"), "w") as fh:
                json.dump({"function": sig.name, "mode": mode}, fh)

        d = _cached_build(parts, produce)
        dll = _load(os.path.join(d, "lib.so"))
        f = getattr(dll, "__ep_" + mode)
        f.argtypes = argtypes
        f.restype = None
        f._enzyme_py_dll = dll   # keep the library loaded
        self._derivatives[key] = f
        return f


def _load(path: str) -> ctypes.CDLL:
    try:
        return ctypes.CDLL(path)
    except OSError as e:   # e.g. a function declared but defined nowhere
        raise CompileError("the built library does not load", str(e)) from None


def _spell(s: Signature) -> str:
    return "(" + ", ".join(_ptype(p) for p in s.params) + ")"


# ---------------------------------------------------------------------------------------
# the generated wrappers


_PRELUDE = """\
/* generated by enzyme_py.api: calls into EnzymePy's AD for one function */
#include <enzyme.h>
#ifdef __cplusplus
#define EP_BOOL bool
extern "C" {
#else
#define EP_BOOL _Bool
#endif
#define EP_STR2(x) #x
#define EP_STR(x) EP_STR2(x)
#define EP_SYM(name) __asm__(EP_STR(__USER_LABEL_PREFIX__) name)
"""


def _wrapper(sig: Signature, mode: str, dup: frozenset, out: frozenset):
    """C source of ``void __ep_<mode>(args with shadows..., double *ep_out)`` and its
    ctypes argument types.

    rev: ``__enzyme_autodiff`` with ``enzyme_dup`` arrays (shadows accumulate the
    gradient), ``enzyme_out`` active float scalars; ``ep_out`` gets the primal float
    result (if any) and then the active scalars' derivatives.
    fwd: ``__enzyme_fwddiff``; every float scalar in ``out`` and array in ``dup`` comes
    with its tangent; ``ep_out`` gets the primal result and its tangent."""
    params = sig.params
    ret = sig.ret
    float_ret = ret is not None and ret.kind == "float"
    proto = ", ".join(p.ctype for p in params) or "void"
    lines = [_PRELUDE,
             f"{ret.ctype if ret else 'void'} ep_target({proto}) EP_SYM({json.dumps(sig.symbol)});"]
    formals: list[str] = []
    argtypes: list = []
    call_types: list[str] = ["void *"]
    call_args: list[str] = ["(void *)ep_target"]
    if float_ret:
        call_types.append("int")
        call_args.append("enzyme_primal_return")
    elif mode == "fwd" and ret is not None:
        call_types.append("int")
        call_args.append("enzyme_noret")
    for i, p in enumerate(params):
        formals.append(f"{p.ctype} a{i}")
        argtypes.append(_ctype(p))
        if i in dup or (mode == "fwd" and i in out):
            formals.append(f"{p.ctype} d{i}")
            argtypes.append(_ctype(p))
            call_types += ["int", p.ctype, p.ctype]
            call_args += ["enzyme_dup", f"a{i}", f"d{i}"]
        elif i in out:
            call_types += ["int", p.ctype]
            call_args += ["enzyme_out", f"a{i}"]
        else:
            call_types += ["int", p.ctype]
            call_args += ["enzyme_const", f"a{i}"]
    formals.append("double *ep_out")
    argtypes.append(ctypes.c_void_p)
    members: list[str] = []
    stores: list[str] = []
    if mode == "rev":
        for i in sorted(out):
            members.append(f"{params[i].ctype} d{i};")
        if float_ret:
            members.append(f"{ret.ctype} primal;")
            stores.append("ep_out[0] = r.primal;")
        base = 1 if float_ret else 0
        stores += [f"ep_out[{base + k}] = r.d{i};" for k, i in enumerate(sorted(out))]
        entry = "__enzyme_autodiff"
    else:
        if float_ret:
            members = [f"{ret.ctype} primal;", f"{ret.ctype} tangent;"]
            stores = ["ep_out[0] = r.primal;", "ep_out[1] = r.tangent;"]
        entry = "__enzyme_fwddiff"
    if members:
        lines.append("typedef struct { " + " ".join(members) + " } ep_result;")
        rtype, assign = "ep_result", "ep_result r = "
    else:
        rtype, assign = "void", ""
    lines.append(f"{rtype} {entry}_ep({', '.join(call_types)});")
    lines.append(f"void __ep_{mode}({', '.join(formals)}) {{")
    if not stores:
        lines.append("  (void)ep_out;")
    lines.append(f"  {assign}{entry}_ep({', '.join(call_args)});")
    lines += ["  " + s for s in stores]
    lines.append("}")
    lines += ["#ifdef __cplusplus", "}", "#endif", ""]
    return "\n".join(lines), argtypes
