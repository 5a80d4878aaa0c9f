"""What calls do, in one table: activity, overwrite analysis and both AD generators
read it (they used to keep four lists of function names that drifted apart).

``call_effect(name)`` returns a :class:`CallEffect` or None (a function the table does
not know: a defined function is differentiated through its body, an unknown external
one is an error where it touches active data).  The kinds:

``math``      libm function or LLVM math intrinsic (no memory effect, except that
              ``frexp``/``modf`` store a second result, listed in ``writes``); its
              derivative, if any, is in ``ad/rules.py`` (an active math call without a
              rule is an error there).
``inactive``  C library function that neither carries a derivative nor writes memory
              the program's derivatives live in (``printf``, ``strlen``, ``rand``...).
``writes``    C library function that overwrites memory behind some arguments with
              data that carries no derivative (``fread``, ``strcpy``, ``snprintf``...):
              where that memory has a shadow, the shadow bytes it overwrote are zeroed
              (the reverse sweep drops their adjoints, forward mode their tangents).
              ``writes`` lists ``(argument index, size)``; sizes are described below.
              (Any kind may list ``writes``; the generators zero them the same way.)
``alloc``     allocation function; ``size`` says how many bytes, ``out`` the argument
              the new pointer is written through (``posix_memalign``), ``frees`` the
              argument a ``realloc`` releases.
``free``      deallocation function (frees argument 0).
``memcpy`` / ``memmove`` / ``memset``: the memory intrinsics and their libc names.
``nomem``     intrinsic without any effect on values or memory (``llvm.lifetime.*``,
              ``llvm.dbg.*``, ``llvm.assume``...): dropped from the reverse sweep.
``omp``       OpenMP runtime entry point (``__kmpc_*``, the lock API): integer results,
              no derivative of their own; ``ad/openmp.py`` says what the generators
              emit for each (a fork forks the derivative of the outlined function;
              critical sections, barriers and locks are mirrored in the reverse
              sweep; tasks and the like are errors there).  Overwrite analysis
              treats them as writing any memory (other threads run meanwhile).
``typehint``  ``__enzyme_double(p, bytes)`` and friends: tell type analysis what the
              memory behind ``p`` holds; no effect at run time (the calls are removed).
``mpi``       an MPI function (``MPI_*`` and ``PMPI_*``, every name: unknown ones too);
              ``MPI_SIGNATURES`` says which arguments are buffers, counts, datatypes...
              and ``ad/mpi.py`` has the derivatives.  Overwrite analysis reads what
              each writes from ``mpi_writes`` (a receive's buffer...; any memory for
              the calls without a rule and ``MPI_Wait``, which completes a receive).
              ``MPI_Comm_rank``/``size`` are ``writes`` (an int), ``MPI_Wtime``/``Wtick``
              ``inactive``.
``sort``      ``qsort`` (GNU ``qsort_r``), and libc++'s ``std::sort`` of floating-point
              values (the library instantiates ``std::__1::__sort<__less<T>&, T*>``
              for float, double and long double out of line:
              ``libcxx_sort_element``): moves whole elements
              of an array (by a comparator); where the array has a shadow the
              derivative code records the permutation and moves the shadow the same
              way (ad/sort.py).
``mirror``    a library function that only walks or relinks a pointer structure (the
              red-black tree of libstdc++'s ``std::map``/``std::set``: increment,
              decrement, insert-and-rebalance, rebalance-for-erase; its ``std::list``:
              hook, unhook, swap, transfer, reverse): where its pointer
              arguments have shadows it is called again on the shadows, so the shadow
              structure stays linked like the primal one, and a pointer result's shadow
              is the result of that call; no derivative flows through it.

Sizes (``writes`` and ``alloc``) are tuples: ``("arg", i)`` the value of argument i;
``("mul", i, j)`` the product of two arguments; ``("const", n)`` n bytes when the
pointer is not null; ``("ret_mul", i)`` the call's result times argument i
(``fread``: items actually read); ``("cstr", n_arg)`` the string left in the buffer,
``strlen + 1`` bytes after the call (0 when argument ``n_arg`` is 0, or when the call
returned null for ``fgets``: ``n_arg`` may be None); ``("unknown",)`` the size
depends on a format string (``scanf``): an error where the memory has a shadow.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["CallEffect", "call_effect", "text_only", "libcxx_sort_element", "libm_base",
           "TEXT_SPLITTERS", "PURE_MATH", "TYPE_HINTS", "ALLOC_NAMES", "FREE_NAMES",
           "mem_intrinsic", "known_names", "MPI_SIGNATURES", "mpi_base", "mpi_writes",
           "pure_inline_asm", "inline_asm_code"]


@dataclass(frozen=True)
class CallEffect:
    kind: str
    reason: str = ""
    writes: tuple = ()        # ((argument index, size), ...) for "writes"
    size: tuple | None = None  # "alloc": the block's size
    out: int | None = None     # "alloc": the new pointer is stored through this argument
    frees: int | None = None   # "alloc": realloc releases this argument
    align: int | None = None   # "alloc": the argument giving the block's alignment


# -- pure math: libm base names (``sin`` covers sinf, sinl, llvm.sin.*, __sin_finite) --
PURE_MATH = frozenset({
    "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh",
    "asinh", "acosh", "atanh", "exp", "exp2", "exp10", "expm1", "log", "log2", "log10",
    "log1p", "sqrt", "cbrt", "pow", "powi", "hypot", "fabs", "copysign", "fmax", "fmin",
    "fmod", "fma", "erf", "erfc", "tgamma", "lgamma", "floor", "ceil", "round", "trunc",
    "rint", "nearbyint", "roundeven", "remainder", "fdim", "logb", "j0", "j1", "y0", "y1",
    "jn", "yn",
    "ldexp", "scalbn", "sincospi", "frexp", "modf", "lgamma_r", "remquo", "nextafter",
    "nexttoward",
    # LLVM spellings
    "maxnum", "minnum", "maximum", "minimum", "maximumnum", "minimumnum", "fmuladd",
})
_MATH_ALIASES = {"maxnum": "fmax", "minnum": "fmin", "maximum": "fmax", "minimum": "fmin",
                 "fmuladd": "fma", "maximumnum": "fmax", "minimumnum": "fmin"}


# intrinsics returning {value, second result}: not libm functions of one result; those
# of STRUCT_MATH_INTRINSICS are pure math with rules for both results
# (``rules.STRUCT_MATH``), ``llvm.sincospi`` has none
_STRUCT_INTRINSICS = {"frexp", "modf", "sincos", "sincospi"}
STRUCT_MATH_INTRINSICS = frozenset({"frexp", "modf", "sincos"})


# x86 SIMD intrinsics that apply a function lane by lane: max/min (whose result is the
# second operand on a tie or a NaN: ``x86_max``'s rule follows the operand returned) and
# the approximate reciprocals (the rule's derivative is that of the approximation's
# value r: -r^2, -r^3 / 2)
X86_MATH = {
    f"llvm.x86.{isa}.{op}.{s}{w}": base
    for op, base in (("max", "x86_max"), ("min", "x86_min"))
    for isa, s, w in (("sse", "ps", ""), ("sse2", "pd", ""), ("avx", "ps", ".256"),
                      ("avx", "pd", ".256"), ("avx512", "ps", ".512"), ("avx512", "pd", ".512"))
}   # (AVX-512's take a rounding mode third: no derivative)
X86_MATH.update({f"llvm.x86.{isa}.{op}.ps{w}": "x86_" + op
                 for op in ("rcp", "rsqrt") for isa, w in (("sse", ""), ("avx", ".256"))})
# SSE4.1/AVX rounding of packed values by an immediate mode (Eigen's floor, ceil and
# rint with -msse4.1 and up): integers, derivative 0 like rint's
X86_MATH.update({f"llvm.x86.{isa}.round.{s}{w}": "rint"
                 for isa, w in (("sse41", ""), ("avx", ".256")) for s in ("ps", "pd")})


def libm_base(name: str):
    """The libm base name of a math function or LLVM math intrinsic (``sinf``,
    ``llvm.sin.v2f64``, ``__sin_finite`` -> ``sin``; ``llvm.maxnum.f64`` -> ``fmax``;
    ``llvm.x86.avx.max.ps.256`` -> ``x86_max``), else None."""
    base = name
    if base in X86_MATH:
        return X86_MATH[base]
    if base.startswith("llvm."):
        base = base[5:].split(".")[0]
        if base in _STRUCT_INTRINSICS:
            return None
    elif base.startswith("__") and base.endswith("_finite"):
        base = base[2:-7]
    if base in ("lgammaf_r", "lgammal_r"):      # (the suffix before ``_r``)
        return "lgamma_r"
    if base in PURE_MATH:
        return _MATH_ALIASES.get(base, base)
    if base.endswith(("f", "l")) and base[:-1] in PURE_MATH and not name.startswith("llvm."):
        b = base[:-1]
        return _MATH_ALIASES.get(b, b)
    return None


def _inactive(reason, *names):
    return {n: CallEffect("inactive", reason) for n in names}


def _writes(reason, names, *writes):
    return {n: CallEffect("writes", reason, writes=tuple(writes)) for n in names}


_TABLE: dict[str, CallEffect] = {}
_TABLE.update(_inactive(
    "output, or reads only: writes no memory of the program",
    "printf", "fprintf", "vprintf", "vfprintf", "puts", "putchar", "fputs", "fputc", "putc",
    "fflush", "fwrite", "fclose", "fseek", "fseeko", "ftell", "ftello", "rewind", "feof",
    "ferror", "clearerr", "perror", "fileno", "remove", "unlink"))
_TABLE.update(_inactive(
    "string/character inspection: integer results, no writes",
    "strlen", "strnlen", "strcmp", "strncmp", "strcasecmp", "strncasecmp", "memcmp", "bcmp",
    "atoi", "atol", "atoll", "toupper", "tolower", "isdigit", "isspace", "isalpha",
    "isalnum", "isupper", "islower", "isxdigit", "ispunct", "isprint"))
_TABLE.update(_inactive(
    "searches text: the result points into the characters (no derivative) or counts them",
    "strchr", "strrchr", "strstr", "strpbrk", "strspn", "strcspn"))
_TABLE.update(_inactive(
    "parses a number from text: the result carries no derivative", "atof"))
_TABLE.update(_inactive(
    "classification of a float: integer result",
    "isinf", "isnan", "isfinite", "__isinf", "__isnan", "__isinff", "__isnanf", "__isinfl",
    "__isnanl", "__finite", "__finitef", "__fpclassify", "__fpclassifyf", "__signbit",
    "__signbitf"))
_TABLE.update(_inactive(
    "rounds a float to an integer, or reads its exponent: integer result",
    *(f"{n}{s}" for n in ("lround", "llround", "lrint", "llrint", "ilogb")
      for s in ("", "f", "l"))))
_TABLE.update(_inactive(
    "process control / environment: no derivative, no program memory written",
    "abort", "exit", "_exit", "quick_exit", "__assert_fail", "__assert_rtn", "getenv",
    "rand", "srand", "random", "srandom", "drand48", "srand48", "clock", "sleep", "usleep",
    "getpid", "fopen", "fdopen", "tmpfile", "__cxa_atexit", "atexit",
    "omp_get_thread_num", "omp_get_num_threads", "omp_get_max_threads", "omp_get_wtime",
    "omp_in_parallel"))
_TABLE.update(_inactive(
    "C++ static-initialisation guard: touches only the guard variable",
    "__cxa_guard_acquire", "__cxa_guard_release", "__cxa_guard_abort"))
_TABLE.update(_inactive("libstdc++'s hash of bytes (std::hash of strings): integer result",
                        "_ZSt11_Hash_bytesPKvmm", "_ZSt15_Fnv_hash_bytesPKvmm"))
_TABLE.update(_inactive("libc++'s hash of bytes (std::hash of strings): integer result",
                        "_ZNSt3__113__hash_memoryEPKvm"))
# std::unordered_map's rehash policy {float max_load_factor; size_t next_resize}: integer
# results, and it updates next_resize (its 16 bytes carry no derivative)
_TABLE.update(_writes("libstdc++'s hash table growth policy (std::unordered_map)",
                      ["_ZNKSt8__detail20_Prime_rehash_policy14_M_need_rehashEmmm",
                       "_ZNKSt8__detail20_Prime_rehash_policy11_M_next_bktEm"],
                      (0, ("const", 16))))
_TABLE.update(_inactive("EnzymePy runtime: the digamma of a derivative rule",
                        "__enzyme_py_digamma"))
_TABLE.update(_inactive("EnzymePy runtime: reports out of memory and aborts",
                        "__enzyme_py_out_of_memory"))
_TABLE.update(_writes("reentrant random numbers: an integer result, the integer seed "
                      "updated through the pointer", ["rand_r"], (0, ("const", 4))))
_TABLE.update(_writes("reentrant random numbers: the 48-bit state updated through the "
                      "pointer", ["nrand48", "jrand48"], (0, ("const", 6))))
_TABLE.update(_writes("reads data from a file into the buffer", ["fread"], (0, ("ret_mul", 1))))
_TABLE.update(_writes("fills the buffer with zero bytes", ["bzero", "explicit_bzero"],
                      (0, ("arg", 1))))
_TABLE.update(_writes("copies a string into the buffer", ["strcpy", "stpcpy", "strcat"],
                      (0, ("cstr", None))))
_TABLE.update(_writes("copies at most n characters into the buffer", ["strncpy"],
                      (0, ("arg", 2))))
_TABLE.update(_writes("appends at most n characters to the string", ["strncat"],
                      (0, ("cstr", None))))
_TABLE.update(_writes("formats text into the buffer", ["sprintf", "vsprintf"],
                      (0, ("cstr", None))))
_TABLE.update(_writes("formats text into the buffer (at most n bytes)",
                      ["snprintf", "vsnprintf"], (0, ("cstr", 1))))
_TABLE.update(_writes("reads a line of text into the buffer", ["fgets"], (0, ("cstr", "ret"))))
# ("textptr", 8): the bytes are a pointer into the text, which has no derivative and is
# its own shadow (like a std::string's characters): the shadow slot gets the same pointer
_TABLE.update(_writes("parses a number; stores the end of the text through the second "
                      "argument", ["strtod", "strtof", "strtold", "strtol", "strtoll",
                                   "strtoul", "strtoull"], (1, ("textptr", 8))))
# strtok_r/strsep also write NUL bytes into the text they split: characters, which carry
# no derivative (their shadow bytes are not read as floats); the saved position is a
# pointer into the text, its own shadow.  Later calls write into the text through that
# hidden position: for what the calls may overwrite, they write anything
# (``overwrite.call_writes``: loads the reverse needs are cached across them)
TEXT_SPLITTERS = frozenset({"strtok", "strtok_r", "__strtok_r", "strsep"})
_TABLE.update(_writes("splits text in place; stores the position reached through the "
                      "third argument", ["strtok_r", "__strtok_r"], (2, ("textptr", 8))))
_TABLE.update(_writes("splits text in place; stores the position reached through the "
                      "first argument", ["strsep"], (0, ("textptr", 8))))
_TABLE.update(_inactive("splits text in place (NUL bytes into characters, its position "
                        "kept inside the C library)", "strtok"))
_TABLE.update(_writes("stores the time through its argument", ["time"], (0, ("const", 8))))
_TABLE.update(_writes("stores the time through its second argument", ["clock_gettime"],
                      (1, ("const", 16))))
_TABLE.update(_writes("stores the time through its first argument", ["gettimeofday"],
                      (0, ("const", 16))))
_TABLE.update(_writes("stores what the format says through its pointer arguments",
                      ["scanf"], *((k, ("unknown",)) for k in range(1, 17))))
_TABLE.update(_writes("stores what the format says through its pointer arguments",
                      ["sscanf", "fscanf"], *((k, ("unknown",)) for k in range(2, 18))))
# glibc's spellings of the scanf family and of strtol & co. under C99 and C2x/C23
# (``-std=c2x``, glibc 2.38): the same functions
for _n in ("scanf", "sscanf", "fscanf", "strtol", "strtoll", "strtoul", "strtoull"):
    for _p in ("__isoc99_", "__isoc23_"):
        if _n.startswith("strto") and _p == "__isoc99_":
            continue
        _TABLE[_p + _n] = _TABLE[_n]

# math functions that also store a result through a pointer (no derivative there)
# (remquo: the low bits of the quotient, through its third argument)
for _n, _k, _b in (("frexp", 1, 4), ("frexpf", 1, 4), ("frexpl", 1, 4), ("modf", 1, 8),
                   ("modff", 1, 4), ("modfl", 1, 16), ("lgamma_r", 1, 4),
                   ("lgammaf_r", 1, 4), ("lgammal_r", 1, 4), ("remquo", 2, 4),
                   ("remquof", 2, 4), ("remquol", 2, 4)):
    _TABLE[_n] = CallEffect("math", "math function; stores a second result through its "
                            "pointer argument", writes=((_k, ("const", _b)),))

ALLOC_NAMES = {
    "malloc": ("arg", 0), "valloc": ("arg", 0), "calloc": ("mul", 0, 1),
    "aligned_alloc": ("arg", 1), "memalign": ("arg", 1),
    "_Znwm": ("arg", 0), "_Znam": ("arg", 0), "_ZnwmRKSt9nothrow_t": ("arg", 0),
    "_ZnamRKSt9nothrow_t": ("arg", 0), "_ZnwmSt11align_val_t": ("arg", 0),
    "_ZnamSt11align_val_t": ("arg", 0), "_ZnwmSt11align_val_tRKSt9nothrow_t": ("arg", 0),
    "_ZnamSt11align_val_tRKSt9nothrow_t": ("arg", 0),
}
_ALIGN_ARG = {"aligned_alloc": 0, "memalign": 0, "_ZnwmSt11align_val_t": 1,
              "_ZnamSt11align_val_t": 1, "_ZnwmSt11align_val_tRKSt9nothrow_t": 1,
              "_ZnamSt11align_val_tRKSt9nothrow_t": 1}
for _n, _s in ALLOC_NAMES.items():
    _TABLE[_n] = CallEffect("alloc", "allocates a block", size=_s, align=_ALIGN_ARG.get(_n))
_TABLE["realloc"] = CallEffect("alloc", "moves a block into a new allocation",
                               size=("arg", 1), frees=0)
_TABLE["posix_memalign"] = CallEffect("alloc", "allocates a block and stores its address "
                                      "through the first argument", size=("arg", 2), out=0,
                                      align=1)
ALLOC_NAMES = frozenset(ALLOC_NAMES) | {"realloc", "posix_memalign"}
FREE_NAMES = frozenset({"free", "_ZdlPv", "_ZdaPv", "_ZdlPvm", "_ZdaPvm",
                        "_ZdlPvSt11align_val_t", "_ZdlPvmSt11align_val_t",
                        "_ZdaPvSt11align_val_t", "_ZdaPvmSt11align_val_t"})
for _n in FREE_NAMES:
    _TABLE[_n] = CallEffect("free", "releases a block")
for _n in ("memcpy", "memmove", "memset"):
    _TABLE[_n] = CallEffect(_n, "memory intrinsic")

# OpenMP runtime: the names ad/openmp.py has rules (or a refusal) for; any other
# __kmpc_* name gets the same kind (call_effect below) so that it is an error there
_OMP_EFFECT = CallEffect("omp", "OpenMP runtime entry point (rules in ad/openmp.py)")
for _n in ("__kmpc_fork_call", "__kmpc_for_static_init_4", "__kmpc_for_static_init_4u",
           "__kmpc_for_static_init_8", "__kmpc_for_static_init_8u", "__kmpc_for_static_fini",
           "__kmpc_barrier", "__kmpc_critical", "__kmpc_critical_with_hint",
           "__kmpc_end_critical", "__kmpc_reduce", "__kmpc_reduce_nowait",
           "__kmpc_end_reduce", "__kmpc_end_reduce_nowait", "__kmpc_single",
           "__kmpc_end_single", "__kmpc_master", "__kmpc_end_master", "__kmpc_masked",
           "__kmpc_end_masked", "__kmpc_global_thread_num", "__kmpc_push_num_threads",
           "__kmpc_flush", "omp_set_lock", "omp_unset_lock", "omp_set_nest_lock",
           "omp_unset_nest_lock"):
    _TABLE[_n] = _OMP_EFFECT
_TABLE.update(_inactive("OpenMP query or setting: no derivative, no program memory written",
                        "omp_get_num_procs", "omp_set_num_threads", "omp_get_level",
                        "omp_get_dynamic", "omp_set_dynamic", "omp_get_wtick",
                        "omp_get_thread_limit", "omp_get_active_level",
                        "omp_get_ancestor_thread_num", "omp_get_team_size",
                        "omp_init_lock", "omp_destroy_lock", "omp_init_nest_lock",
                        "omp_destroy_nest_lock"))

# libstdc++'s out-of-line red-black tree functions (std::map, std::set, std::multimap) and
# doubly-linked list functions (std::list)
MIRRORED = frozenset({
    "_ZSt18_Rb_tree_incrementPSt18_Rb_tree_node_base",
    "_ZSt18_Rb_tree_incrementPKSt18_Rb_tree_node_base",
    "_ZSt18_Rb_tree_decrementPSt18_Rb_tree_node_base",
    "_ZSt18_Rb_tree_decrementPKSt18_Rb_tree_node_base",
    "_ZSt29_Rb_tree_insert_and_rebalancebPSt18_Rb_tree_node_baseS0_RS_",
    "_ZSt28_Rb_tree_rebalance_for_erasePSt18_Rb_tree_node_baseRS_",
    # std::list: link a node before another, unlink it, swap two lists, splice a range
    # (list::sort and splice), reverse
    "_ZNSt8__detail15_List_node_base7_M_hookEPS0_",
    "_ZNSt8__detail15_List_node_base9_M_unhookEv",
    "_ZNSt8__detail15_List_node_base4swapERS0_S1_",
    "_ZNSt8__detail15_List_node_base11_M_transferEPS0_S1_",
    "_ZNSt8__detail15_List_node_base10_M_reverseEv",
})
for _n in MIRRORED:
    _TABLE[_n] = CallEffect("mirror", "walks or relinks the nodes of a red-black tree "
                                      "or a list (pointers only)")

# the calling thread's copy of a thread-local variable: of a shadow global (itself
# thread-local), the same call gives the thread's shadow
_TLS_ADDRESS = CallEffect("mirror", "the address of the calling thread's copy of a "
                                    "thread-local variable")

_TABLE["qsort"] = CallEffect("sort", "sorts an array in place: moves whole elements")
_TABLE["qsort_r"] = CallEffect("sort", "sorts an array in place (GNU qsort_r: the comparator "
                               "takes a third argument): moves whole elements")

# void std::__1::__sort<std::__1::__less<T[, T]>&, T*>(T*, T*, __less<T[, T]>&): libc++
# sorts its arithmetic types in the shared library (an extern template), so std::sort of
# doubles calls it instead of code we could differentiate
_LIBCXX_SORT = re.compile(r"_ZNSt3__16__sortIRNS_6__lessI([dfe])\1?EEP\1EEvT0_S\d+_T_")
_SORT_ELEMENTS = {"d": "double", "f": "float", "e": "x86_fp80"}


def libcxx_sort_element(name: str):
    """The element type (LLVM's name) of libc++'s out-of-line ``std::__sort`` of
    floating-point values, or None for any other function."""
    m = _LIBCXX_SORT.fullmatch(name)
    return _SORT_ELEMENTS[m.group(1)] if m else None

TYPE_HINTS = {"__enzyme_double": "double", "__enzyme_float": "float",
              "__enzyme_integer": "int", "__enzyme_pointer": "ptr"}
for _n in TYPE_HINTS:
    _TABLE[_n] = CallEffect("typehint", "a type hint for type analysis (removed)")

# intrinsics that neither compute values that carry derivatives nor touch memory
_NOMEM_PREFIXES = ("llvm.lifetime.", "llvm.assume", "llvm.dbg.", "llvm.prefetch",
                   "llvm.experimental.noalias.scope.decl", "llvm.invariant.",
                   "llvm.stacksave", "llvm.stackrestore", "llvm.donothing",
                   "llvm.sideeffect", "llvm.pseudoprobe", "llvm.var.annotation",
                   "llvm.is.fpclass", "llvm.objectsize", "llvm.trap", "llvm.debugtrap",
                   "llvm.ubsantrap", "llvm.expect", "llvm.allow.",
                   # float to integer (integer result)
                   "llvm.lround.", "llvm.llround.", "llvm.lrint.", "llvm.llrint.",
                   # ... and x86's (SSE/AVX conversions to int32/int64 lanes: Eigen's
                   # vectorised exp and ldexp round the exponent this way)
                   "llvm.x86.sse2.cvtpd2dq", "llvm.x86.sse2.cvttpd2dq",
                   "llvm.x86.sse2.cvtps2dq", "llvm.x86.sse2.cvttps2dq",
                   "llvm.x86.avx.cvt.pd2dq.256", "llvm.x86.avx.cvtt.pd2dq.256",
                   "llvm.x86.avx.cvt.ps2dq.256", "llvm.x86.avx.cvtt.ps2dq.256",
                   "llvm.x86.sse2.cvtsd2si", "llvm.x86.sse2.cvttsd2si",
                   "llvm.x86.sse.cvtss2si", "llvm.x86.sse.cvttss2si")


# -- MPI: the kind of each function (see ad/mpi.py) and where its arguments are.  Keys:
# buf/sbuf/rbuf buffers, count/scount/rcount, dt/sdt/rdt datatypes, op, root, peer
# (dest or source), tag, comm, status.
def _sig(kind, *names, **pos):
    return {n: (kind, pos) for n in names}


MPI_SIGNATURES: dict[str, tuple[str, dict]] = {}
MPI_SIGNATURES.update(_sig("send", "Send", "Ssend", "Bsend", "Rsend",
                           buf=0, count=1, dt=2, peer=3, tag=4, comm=5))
MPI_SIGNATURES.update(_sig("recv", "Recv", buf=0, count=1, dt=2, peer=3, tag=4, comm=5,
                           status=6))
MPI_SIGNATURES.update(_sig("sendrecv", "Sendrecv", sbuf=0, scount=1, sdt=2, dest=3, stag=4,
                           rbuf=5, rcount=6, rdt=7, src=8, rtag=9, comm=10, status=11))
MPI_SIGNATURES.update(_sig("sendrecv_replace", "Sendrecv_replace", buf=0, count=1, dt=2,
                           dest=3, stag=4, src=5, rtag=6, comm=7, status=8))
MPI_SIGNATURES.update(_sig("bcast", "Bcast", buf=0, count=1, dt=2, root=3, comm=4))
MPI_SIGNATURES.update(_sig("reduce", "Reduce", sbuf=0, rbuf=1, count=2, dt=3, op=4, root=5,
                           comm=6))
MPI_SIGNATURES.update(_sig("allreduce", "Allreduce", sbuf=0, rbuf=1, count=2, dt=3, op=4,
                           comm=5))
MPI_SIGNATURES.update(_sig("gather", "Gather", sbuf=0, scount=1, sdt=2, rbuf=3, rcount=4,
                           rdt=5, root=6, comm=7))
MPI_SIGNATURES.update(_sig("scatter", "Scatter", sbuf=0, scount=1, sdt=2, rbuf=3, rcount=4,
                           rdt=5, root=6, comm=7))
MPI_SIGNATURES.update(_sig("allgather", "Allgather", sbuf=0, scount=1, sdt=2, rbuf=3,
                           rcount=4, rdt=5, comm=6))
MPI_SIGNATURES.update(_sig("barrier", "Barrier", comm=0))
MPI_SIGNATURES.update(_sig("nonblocking", "Isend", "Issend", "Ibsend", "Irsend", "Irecv",
                           buf=0, count=1, dt=2, peer=3, tag=4, comm=5, req=6))
MPI_SIGNATURES.update(_sig("wait", "Wait", req=0, status=1))
MPI_SIGNATURES.update(_sig("waitall", "Waitall", n=0, reqs=1, status=2))
# completion calls whose derivative is not implemented: they may complete a request of
# a differentiated message without its adjoint (or tangent) message
MPI_SIGNATURES.update(_sig("completion", "Test", "Testall", "Testany", "Testsome", "Waitany",
                           "Waitsome"))
MPI_SIGNATURES.update(_sig(
    "inactive", "Init", "Init_thread", "Finalize", "Initialized", "Finalized", "Abort",
    "Request_free", "Get_count", "Get_processor_name", "Get_version",
    "Get_library_version", "Query_thread", "Is_thread_main", "Comm_dup", "Comm_split",
    "Comm_free", "Comm_compare", "Comm_group", "Group_free", "Group_incl", "Comm_create",
    "Type_size", "Type_commit", "Type_free", "Type_contiguous", "Type_vector",
    "Error_string", "Error_class", "Comm_set_errhandler", "Probe", "Iprobe",
    "Cart_create", "Cart_coords", "Cart_rank", "Cart_shift", "Cart_get", "Cartdim_get",
    "Dims_create", "Pcontrol", "Comm_split_type", "Comm_get_attr", "Comm_set_name",
    "Comm_get_name", "Type_get_extent", "Type_create_struct", "Type_create_resized",
    "Type_indexed", "Type_create_subarray", "Get_address", "Op_create", "Op_free",
    "Info_create", "Info_set", "Info_free", "Errhandler_free", "Group_size", "Group_rank"))
for _n, _s, _r in (("Alltoall", 2, 5), ("Gatherv", 2, 6), ("Scatterv", 3, 6),
                   ("Allgatherv", 2, 6), ("Alltoallv", 3, 7), ("Scan", 3, None),
                   ("Exscan", 3, None), ("Reduce_scatter_block", 3, None),
                   ("Reduce_scatter", 3, None),
                   ("Iallreduce", 3, None), ("Ibcast", 2, None), ("Ireduce", 3, None),
                   ("Ialltoall", 2, 5), ("Igather", 2, 5), ("Iscatter", 2, 5),
                   ("Iallgather", 2, 5), ("Put", 2, 6), ("Get", 2, 6), ("Accumulate", 2, 6),
                   ("Send_init", 2, None), ("Recv_init", 2, None)):
    MPI_SIGNATURES[_n] = ("unsupported", {"sdt": _s} if _r is None else {"sdt": _s, "rdt": _r})


def mpi_base(name: str):
    """(``Send``, ``MPI_``) for ``MPI_Send``, (``Send``, ``PMPI_``) for ``PMPI_Send``;
    (None, None) for other names."""
    for prefix in ("MPI_", "PMPI_"):
        if name.startswith(prefix) and len(name) > len(prefix):
            return name[len(prefix):], prefix
    return None, None


# the buffers each kind of MPI call writes (overwrite analysis); other kinds: any memory
_MPI_WRITES = {"send": (), "barrier": (), "recv": ("buf", "status"),
               "sendrecv": ("rbuf", "status"), "sendrecv_replace": ("buf", "status"),
               "bcast": ("buf",), "reduce": ("rbuf",),
               "allreduce": ("rbuf",), "gather": ("rbuf",), "scatter": ("rbuf",),
               "allgather": ("rbuf",)}


def mpi_writes(name: str, args):
    """The pointer arguments whose memory an MPI call may write, or 'all'."""
    base, _ = mpi_base(name)
    kind, pos = MPI_SIGNATURES.get(base, ("unsupported", {}))
    keys = _MPI_WRITES.get(kind)
    if keys is None:
        return "all"
    return [args[pos[k]] for k in keys if k in pos and pos[k] < len(args)
            and args[pos[k]].type.is_pointer]


_MPI = CallEffect("mpi", "MPI function (ad/mpi.py)")
_MPI_OWN = {
    "Comm_rank": CallEffect("writes", "MPI: stores the rank (an int)", writes=((1, ("const", 4)),)),
    "Comm_size": CallEffect("writes", "MPI: stores the number of ranks (an int)",
                            writes=((1, ("const", 4)),)),
    "Wtime": CallEffect("inactive", "MPI: the wall-clock time"),
    "Wtick": CallEffect("inactive", "MPI: the timer's resolution"),
}


def _mpi_effect(name):
    base, _ = mpi_base(name)
    if base is None:
        return None
    got = _MPI_OWN.get(base)
    if got is not None:
        return got
    return _MPI


def mem_intrinsic(name: str):
    """'memcpy' / 'memmove' / 'memset' for those functions and their intrinsics."""
    for k in ("memcpy", "memmove", "memset"):
        if name == k or name.startswith((f"llvm.{k}.", f"llvm.{k}.inline.")):
            return k
    return None


def call_effect(name: str):
    """The :class:`CallEffect` of a call to ``name``, or None when the table does not
    know it."""
    got = _TABLE.get(name)
    if got is not None:
        return got
    if name.startswith("_ZNSt3__16__sort") and libcxx_sort_element(name):
        return _TABLE["qsort"]
    if name.startswith("__kmpc_"):
        return _OMP_EFFECT
    if name.startswith(("MPI_", "PMPI_")):
        return _mpi_effect(name)
    if name.startswith("llvm."):
        if name.startswith("llvm.threadlocal.address"):
            return _TLS_ADDRESS
        mem = mem_intrinsic(name)
        if mem is not None:
            return _TABLE[mem]
        if name.startswith(_NOMEM_PREFIXES):
            return _NOMEM
        if name[5:].split(".")[0] in STRUCT_MATH_INTRINSICS:
            return _MATH
    if libm_base(name) is not None:
        return _MATH
    if name.startswith(_CXX_TEXT_PREFIXES):
        return _CXX_TEXT
    if name.startswith(_CXX_STREAM_PREFIXES):
        return _CXX_STREAM
    if name.startswith(("_ZNSt", "_ZNKSt")) and _CXX_OUTPUT_STREAM.match(name):
        return _CXX_STREAM_TEXT if "E3str" in name else _CXX_STREAM
    if name.startswith(("_ZNSt", "_ZNKSt")) and _CXX_EXCEPTION.match(name):
        return _CXX_EXCEPTION_EFFECT
    return None


# std::string and std::allocator<char> members that libstdc++ and libc++ (the ziglang
# clang's C++ library) instantiate out of line (extern templates): they touch only
# characters, sizes and the string's own pointers
_CXX_TEXT_PREFIXES = ("_ZNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEE",
                      "_ZNKSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEE",
                      "_ZNSaIcEC", "_ZNSaIcED",
                      "_ZNSt3__112basic_stringIcNS_11char_traitsIcEENS_9allocatorIcEEE",
                      "_ZNKSt3__112basic_stringIcNS_11char_traitsIcEENS_9allocatorIcEEE")
_CXX_TEXT = CallEffect("inactive", "std::string / std::allocator<char> member (libstdc++, "
                                   "libc++): characters only")


def text_only(call) -> bool:
    """Whether ``call`` only reads (``strlen``, ``strcmp``, ``printf``, ``vfprintf``) or
    writes text (``strcpy``, ``sprintf``: what it writes is a C string) -- std::string's
    members included: it touches no floats of the program."""
    eff = call_effect(call.callee_name or "")
    return eff is not None and (eff.kind == "inactive" or eff.kind == "writes" and all(
        size[0] == "cstr" for _, size in eff.writes))


def inline_asm_code(call) -> str | None:
    """The assembly text of ``call``'s inline-asm callee (``maxpd $1, $0``), or None
    where the callee is not inline assembly."""
    from ..ir.values import InlineAsm
    c = call.callee
    return c.code if isinstance(c, InlineAsm) else None


def pure_inline_asm(call) -> bool:
    """Whether ``call`` runs inline assembly that only computes its result from its
    operands (Eigen's SSE ``maxpd``): no ``sideeffect``, no ``~{memory}`` clobber, no
    operand in memory (``*m``), no pointer in or out.  Its result then carries a
    derivative only through what uses it: where that is only comparisons (a
    convergence test on ``maxCoeff()``) nothing needs its derivative."""
    if inline_asm_code(call) is None:
        return False
    asm = call.callee
    if "sideeffect" in asm.keywords or "~{memory}" in asm.constraints \
            or any("*" in c for c in asm.constraints):
        return False
    return not any(_has_pointer(a.type) for a in call.args) \
        and not _has_pointer(call.type)


def _has_pointer(ty) -> bool:
    if ty.is_pointer:
        return True
    if ty.is_vector or ty.is_array:
        return _has_pointer(ty.element)
    return ty.is_struct and any(_has_pointer(t) for t in ty.elements)


def returns_text(name: str) -> bool:
    """Whether ``name`` is a std::string member whose pointer result points at characters
    (``_M_create``'s fresh buffer, ``data()``): no derivative lives behind it -- or a
    string stream's ``str()``, which returns a std::string (``effects._CXX_STREAM_TEXT``).
    The generators copy the string objects such a call was given into their shadows
    (``emit.sync_text_objects``)."""
    return name.startswith(_CXX_TEXT_PREFIXES) or call_effect(name) is _CXX_STREAM_TEXT


# formatted output to C++ streams (libstdc++, libc++): ``std::cout << x`` reads x and
# writes only the stream's own state and buffers -- a diagnostic inside differentiated
# code, as Enzyme treats it (its list of known inactive functions)
_CXX_STREAM_PREFIXES = (
    "_ZNSolsE", "_ZNSo9_M_insertI", "_ZNSo5flushEv", "_ZNSo3putEc", "_ZNSo5writeEPKcl",
    "_ZSt16__ostream_insertI", "_ZStlsI", "_ZSt4endlI", "_ZSt5flushI", "_ZSt4endsI",
    "_ZNKSt5ctypeIcE13_M_widen_initEv", "_ZNKSt9basic_iosIcSt11char_traitsIcEE5widenEc",
    "_ZNSt9basic_iosIcSt11char_traitsIcEE5clearESt12_Ios_Iostate", "_ZSt16__throw_bad_castv",
    "_ZNSt3__113basic_ostreamIcNS_11char_traitsIcEEE",
    "_ZNSt3__124__put_character_sequenceI", "_ZNSt3__124__put_character_sequenceB",
    "_ZNSt3__1lsI", "_ZNSt3__1lsB",
    "_ZNSt3__14endlI", "_ZNSt3__14endlB", "_ZNSt3__15flushI", "_ZNSt3__15flushB",
    # the stream's locale, which std::endl's widen('\n') consults once inlined
    "_ZNKSt3__18ios_base6getlocEv", "_ZNSt3__16localeD", "_ZNKSt3__16locale9use_facet",
    "_ZNSt3__18ios_base5clearEj", "_ZNKSt3__15ctypeIcE")
_CXX_STREAM = CallEffect("inactive", "formatted output to a C++ stream (std::cout << x): "
                                     "reads its arguments, writes only the stream")
_CXX_STREAM_TEXT = CallEffect("inactive", "a string stream's str(): the characters written, "
                                          "as a std::string (or set from one)")
# the members of the output stream classes, narrow and wide, libstdc++ and libc++:
# std::wcout << x, a std::ofstream written and closed, a std::ostringstream and its
# str() -- their constructors, destructors, buffers and locales touch only the streams.
# (Not the input operators: `ss >> y` writes y -- a bidirectional stream's constructor
# and destructor are here, its `>>` is not.  str() writes the std::string it returns, or
# sets the stream's text from one: characters only; where that string has a shadow, the
# generators copy the string object into it after the call -- text is its own shadow --
# so that the shadow does not keep pointing at its own inline buffer while the
# characters move to the heap, for its destructor to free.)
_CXX_OUTPUT_STREAM = re.compile(
    r"_ZNK?St(?:7__cxx11|3__1)?\d+(?:basic_ostream|basic_ofstream|basic_ostringstream|"
    r"basic_stringstream|basic_fstream|basic_iostream|basic_filebuf|basic_stringbuf|"
    r"basic_streambuf|basic_ios)I[cw]"
    r"|_ZNK?St(?:3__1)?(?:8ios_base|6locale)"
    r"|_ZNKSt(?:3__1)?5ctypeI[cw]E|_ZNSt12__basic_fileI[cw]E")


# the standard exception classes' out-of-line members (libstdc++ and libc++):
# constructors, destructors and what() -- a derivative reaches them through the vtable of
# an exception object built on a throw path (std::get of a std::variant, vector::at)
_CXX_EXCEPTION = re.compile(
    r"_ZN(K?)St(3__1)?\d+(exception|bad_\w+|logic_error|runtime_error|length_error|"
    r"out_of_range|invalid_argument|domain_error|range_error|overflow_error|"
    r"underflow_error|system_error|nested_exception)(C[12]E|D[012]Ev|4whatEv)")
_CXX_EXCEPTION_EFFECT = CallEffect("inactive", "standard exception class member: touches "
                                               "only the exception object")

_NOMEM = CallEffect("nomem", "intrinsic without effect on values or memory")
_MATH = CallEffect("math", "pure math function")


def known_names():
    """Every name with an explicit table entry (for tests and documentation)."""
    return sorted(_TABLE)
