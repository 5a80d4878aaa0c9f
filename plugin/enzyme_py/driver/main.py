"""``enzyme-cc`` / ``enzyme-c++``: a C/C++ compiler driver that differentiates.

Compile steps go to clang (bitcode); the link step merges the bitcode of every
input — sources, ``enzyme-cc -c`` objects, and the members of static archives
that define still-undefined symbols — runs EnzymePy's pipeline on the merged
module, and links the resulting native object with the remaining native
inputs through the clang driver.  ``-S`` / ``-emit-llvm`` of sources that call the
entry points run the same pipeline on each unit alone and write its assembly or IR.
"""

from __future__ import annotations

import contextlib
import gc
import os
import secrets
import shlex
import shutil
import subprocess
import sys
import tempfile
import traceback

from .. import __version__, llvm
from ..errors import EnzymeError, FileError, InternalError, ToolError, UsageError
from ..paths import include_dir
from . import archive, bitcode
from .args import Args, Input, parse_args
from .clang import Clang, find_clang
from .openmp import OpenMP, find_openmp, is_openmp_flag, requested
from ..ad.errors import MissingDefinitionError
from .pipeline import PipelineConfig, build_object, build_output

# source languages whose -S / -emit-llvm output enzyme-cc makes itself (after the AD)
_TRANSLATED = ("c", "c++", "cpp-output", "c++-cpp-output")

USAGE = """\
usage: {prog} [options] file...

A C/C++ compiler driver (clang underneath) that builds programs through
EnzymePy and differentiates every call to Enzyme's entry points
(__enzyme_autodiff, __enzyme_fwddiff, __enzyme_augmentfwd, __enzyme_reverse,
__enzyme_augmentsize, __enzyme_batch; see enzyme.h and, for C++, <enzyme/utils>,
both on the include path).
Accepts the usual compiler flags (-c -o -O0..-O3 -Os -g -I -D -U -include
-std= -W* -f* -m* -MD -MMD -MF -MT -x -L -l -Wl, -shared -pthread @file).
-fopenmp links clang's own libomp when installed, else the intel-openmp
wheel (pip install intel-openmp); -v names the runtime in use.  Derivatives
go through parallel regions, worksharing loops, reductions, critical, atomic,
barrier, single/master and locks (reverse and forward mode); tasks, ordered,
copyprivate and teams are compile errors.
Differentiation happens when linking (objects from -c carry their bitcode).
-S, -S -emit-llvm and -c -emit-llvm of a file that calls the entry points
write that file differentiated on its own and optimised (assembly, IR text,
bitcode of llvmlite's LLVM), as Enzyme's clang plugin does; without such
calls they are clang's output.  -save-temps keeps a linked program's IR.

EnzymePy options:
  -v                   print each stage's command and timing
  -save-temps          keep the merged and transformed IR next to the output
                       (<output>.merged.ll, <output>.enzyme.ll)
  -fenzyme-NAME[=VAL]  options of the AD pass (see the README):
    -fenzyme-preopt=0  differentiate unoptimised IR (no pre-AD optimisation)
    -fenzyme-strong-zero
                       a zero adjoint times an infinite derivative is 0, not NaN
  --version            print EnzymePy's version, the clang in use and LLVM's
  --help               this text

Environment:
  ENZYME_CLANG, ENZYME_CLANGXX   the clang / clang++ to use
  ENZYME_DEBUG=1                 show Python tracebacks for internal errors
"""


def main(argv: list[str] | None = None, cxx: bool = False) -> int:
    prog = "enzyme-c++" if cxx else "enzyme-cc"
    argv = sys.argv[1:] if argv is None else argv
    try:
        rc = Driver(parse_args(argv, cxx), prog).run()
        sys.stdout.flush()  # a closed pipe shows here, inside the handlers below
        return rc
    except BrokenPipeError:
        # the reader of our stdout went away (`enzyme-cc --version | head -1`): quiet,
        # like a C program killed by SIGPIPE; stdout points at /dev/null so that the
        # interpreter's own flush at exit does not fail again
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
    except ToolError as e:
        if e.message:
            print(f"{prog}: error: {e.message}", file=sys.stderr)
        return e.returncode or 1
    except InternalError as e:
        return _internal_error(prog, e.message, e.location, e.hint)
    except EnzymeError as e:
        print(e.format(prog), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except OSError as e:
        if e.filename is None:
            return _internal_error(prog, f"{type(e).__name__}: {e}")
        # a file operation not wrapped where it happens: still the system's reason
        # and the file, not a traceback
        print(f"{prog}: error: {e.filename}: {e.strerror or e}", file=sys.stderr)
        return 1
    except Exception as e:  # a bug of ours: one line, traceback on request
        return _internal_error(prog, f"{type(e).__name__}: {e}")


def _internal_error(prog: str, message: str, location: str | None = None,
                    hint: str | None = None) -> int:
    """A bug of EnzymePy (not of the user's program): exit 70 (EX_SOFTWARE)."""
    if os.environ.get("ENZYME_DEBUG"):
        traceback.print_exc()
    where = f" ({location})" if location else ""
    print(f"{prog}: error: internal error{where}: {message}", file=sys.stderr)
    if hint:
        print(f"{prog}: note: {hint}", file=sys.stderr)
    print(f"{prog}: note: this is a bug in EnzymePy, not in your program; rerun with "
          "ENZYME_DEBUG=1 for a traceback, and please report it", file=sys.stderr)
    return 70


def main_cxx() -> int:
    return main(cxx=True)


def console_cc() -> None:
    sys.exit(_as_process(cxx=False))


def console_cxx() -> None:
    sys.exit(_as_process(cxx=True))


def _as_process(cxx: bool) -> int:
    """``main`` as the whole life of a process (the console scripts), run the way a
    compiler runs: without CPython's cycle collector, its memory handed back by exit.

    The AD pass builds IR objects that nearly all stay alive until it is done — every
    use links its value and its user, a cycle — so each full collection rescanned all
    of them for nothing: on the 1,024-rate chemistry function of ``python -m
    benchmarks.compile_time`` that was 0.9 of the AD stage's 2.25 s (``-v``'s
    "EnzymePy"), with the same peak memory without it (267 MB).  Objects not in a
    cycle are still freed as they die; ``gc.freeze`` keeps the interpreter's shutdown
    from scanning the rest just before exit (another 0.3 s there; clang skips freeing
    its IR at exit the same way).  ``main`` called in a long-lived
    process keeps the collector."""
    gc.disable()
    try:
        return main(cxx=cxx)
    finally:
        gc.freeze()


class Driver:
    def __init__(self, args: Args, prog: str):
        self.args = args
        self.prog = prog
        self._clang: Clang | None = None
        self._openmp: OpenMP | None = None
        self.tmp: str | None = None

    @property
    def clang(self) -> Clang:
        if self._clang is None:
            self._clang = find_clang()
        return self._clang

    @property
    def openmp(self) -> OpenMP | None:
        """The OpenMP runtime, when -fopenmp is given."""
        if self._openmp is None and requested(self.args.compile_flags + self.args.link_flags):
            self._openmp = find_openmp(self.clang)
            self.log(f"OpenMP runtime: {self._openmp.describe()}")
        return self._openmp

    def link_flags(self) -> list[str]:
        omp = self.openmp
        if omp is None:
            return list(self.args.link_flags)
        flags = [f for f in self.args.link_flags if not (omp.drop_link_flag and is_openmp_flag(f))]
        return flags + list(omp.link)

    # -- helpers ---------------------------------------------------------------

    def log(self, text: str) -> None:
        if self.args.verbose:
            print(f"{self.prog}: {text}", file=sys.stderr, flush=True)

    def call(self, cmd: list[str]) -> None:
        """Run a tool; its diagnostics go straight to our stderr."""
        self.log(shlex.join(cmd))
        try:
            rc = subprocess.call(cmd, stdin=subprocess.DEVNULL)
        except OSError as e:
            raise ToolError(f"cannot run {cmd[0]}: {e}", 1) from None
        if rc != 0:
            raise ToolError("", rc if rc > 0 else 1)

    def include_flags(self) -> list[str]:
        inc = include_dir()
        return ["-idirafter", inc] if inc else []

    def opt_flags(self) -> list[str]:
        return [self.args.opt] if self.args.opt else []

    # -- entry -------------------------------------------------------------------

    def run(self) -> int:
        a = self.args
        if a.help:
            print(USAGE.format(prog=self.prog), end="")
            return 0
        if a.version:
            print(f"{self.prog} (EnzymePy) {__version__}")
            print(f"clang: {self.clang.describe()}")
            print(f"LLVM (llvmlite): {llvm.llvm_version()}")
            return 0
        translate = self.translates()
        if not translate and (a.mode in ("passthrough", "asm") or a.emit_llvm or not a.inputs):
            if not a.inputs and not a.passthrough:
                raise UsageError("no input files")
            return self.passthrough()
        self.check_inputs()
        try:
            self.tmp = tempfile.mkdtemp(prefix="enzyme-cc-")
        except OSError as e:
            raise FileError.of("cannot create a temporary directory in",
                               tempfile.gettempdir(), e) from None
        try:
            if translate:
                return self.translate()
            if a.mode == "compile":
                self.compile_only()
            else:
                self.link()
        finally:
            if a.save_temps:
                self.log(f"temporary files kept in {self.tmp}")
            else:
                shutil.rmtree(self.tmp, ignore_errors=True)
        return 0

    def pipeline_config(self, out: str) -> PipelineConfig:
        """The link-time pipeline's settings for the output ``out``."""
        a = self.args
        backend: tuple[str, ...] = ()
        if self.clang.major == llvm.llvm_major() and a.enzyme.get("clang-backend") != "0":
            # this clang reads llvmlite's bitcode, and its release build of LLVM runs the
            # -O pipeline and code generation in about half llvmlite's time (pipeline.py)
            backend = tuple(self.clang.command(False) + self.clang.compat_flags(a.compile_flags))
        return PipelineConfig(
            level=a.opt_level[0] if a.opt else 2,
            size=a.opt_level[1],
            cpu="host" if any(f in ("-march=native", "-mcpu=native") for f in a.compile_flags)
            else "",
            enzyme=a.enzyme, verbose=a.verbose,
            save_prefix=out if a.save_temps and out != "-" else None,
            backend=backend)

    def translates(self) -> bool:
        """``-S`` (assembly), ``-S -emit-llvm`` (IR text) or ``-c -emit-llvm`` (bitcode)
        of C/C++ sources: when a unit calls Enzyme's entry points, each unit is
        differentiated on its own, as Enzyme's clang plugin does, and the output is that
        of the differentiated, optimised unit (IR of llvmlite's LLVM); otherwise clang
        writes it, as without enzyme-cc."""
        a = self.args
        if not a.inputs or not (a.mode == "asm" or (a.mode == "compile" and a.emit_llvm)):
            return False
        return all(i.lang in _TRANSLATED for i in a.inputs)

    def translate(self) -> int:
        a = self.args
        assert self.tmp is not None
        if a.output and a.output != "-" and len(a.inputs) > 1:
            raise UsageError("cannot specify -o when generating multiple output files")
        kind = ("ll" if a.mode == "asm" else "bc") if a.emit_llvm else "s"
        units = []
        for n, src in enumerate(a.inputs):
            out = a.output or os.path.splitext(os.path.basename(src.path))[0] + "." + kind
            bc = os.path.join(self.tmp, f"{n}.bc")
            self.compile_source(src, bc, bitcode_only=True, dep_target=out)
            units.append((src, out, _read(bc)))
        if not any(b"__enzyme_" in data for _, _, data in units):
            return self.passthrough()
        for src, out, data in units:
            try:
                result = build_output([(src.path, data)], self.pipeline_config(out), kind)
            except MissingDefinitionError as e:
                e.hint = ((e.hint + "; ") if e.hint else "") + (
                    "with -S or -emit-llvm each file is differentiated on its own: link the "
                    "program with enzyme-cc instead (-save-temps keeps the differentiated IR)")
                raise
            if out == "-":
                sys.stdout.buffer.write(result)
                sys.stdout.flush()
                continue
            with atomic_output(out) as tmp_out:
                try:
                    with open(tmp_out, "wb") as fh:
                        fh.write(result)
                except OSError as e:
                    raise FileError.of("cannot write output file", out, e) from None
        return 0

    def passthrough(self) -> int:
        """-E, -S, -fsyntax-only, -M, queries: clang does it all."""
        cmd = self.clang.command(self.args.cxx) + self.args.passthrough + self.include_flags()
        if requested(self.args.passthrough):
            cmd += find_openmp(self.clang).compile
        self.log(shlex.join(cmd))
        try:
            return subprocess.call(cmd)
        except OSError as e:
            raise ToolError(f"cannot run {cmd[0]}: {e}", 1) from None

    def check_inputs(self) -> None:
        for inp in self.args.inputs:
            if not os.path.exists(inp.path):
                raise UsageError(f"no such file or directory: '{inp.path}'")
            if os.path.isdir(inp.path):
                raise UsageError(f"'{inp.path}' is a directory, not an input file")
            head = _read(inp.path, 8)   # an unreadable input is our error, whatever the clang
            if inp.lang is not None:
                continue
            if archive.is_archive(head) or bitcode.is_object(head):
                continue
            base = os.path.basename(inp.path)
            if base.endswith((".o", ".obj", ".lo")):
                raise UsageError(f"{inp.path}: not an object file (unrecognized file format)")
            if base.endswith(".a"):
                raise UsageError(f"{inp.path}: not an archive (unrecognized file format)")
            if base.endswith((".so", ".dylib", ".tbd", ".lds", ".ld")) or ".so." in base:
                continue  # shared library or linker script: the linker judges
            raise UsageError(
                f"{inp.path}: unknown file type (not C/C++ source, object, archive or "
                "shared library)",
                hint="name C sources *.c and C++ sources *.cpp, or give the language "
                     "with -x c / -x c++")

    # -- compiling -----------------------------------------------------------------

    def compile_command(self, src: Input, out: str, bitcode_only: bool,
                        dep_target: str | None) -> list[str]:
        a = self.args
        cmd = self.clang.command(a.cxx) + self.clang.compat_flags(a.compile_flags) \
            + a.compile_flags + self.opt_flags()
        if self.openmp is not None:
            cmd += self.openmp.compile
        if a.verbose:
            cmd.append("-v")
        if a.dep_gen:
            cmd += a.dep_gen
            if "-MF" not in a.dep_flags:
                cmd += ["-MF", os.path.splitext(dep_target or out)[0] + ".d"]
            if "-MT" not in a.dep_flags and "-MQ" not in a.dep_flags:
                cmd += ["-MT", dep_target or out]
        cmd += a.dep_flags
        cmd += self.include_flags()
        if src.lang not in ("assembler", "assembler-with-cpp"):
            # ThinLTO's pre-link pipeline: optimized, but not yet vectorized or
            # unrolled, which is the IR the AD pass wants to see (full LTO's pre-link
            # pipeline already vectorizes and interleaves: the AD pass then caches
            # vector registers and the remainder loops and runtime alias checks too).
            # The final -O pipeline after AD vectorizes everything.
            if bitcode_only:
                cmd += ["-flto=thin", "-emit-llvm"]
            elif self.clang.fat_lto:
                cmd += ["-flto=thin", "-ffat-lto-objects"]
            else:
                cmd.append("-fembed-bitcode=all")  # clang < 17: no fat LTO objects
        # an LLVM IR file goes by its extension: zig's cc knows no language "ir"
        by_name = src.lang == "ir" and src.path.endswith((".ll", ".bc"))
        cmd += ["-c"] + ([] if by_name else ["-x", src.lang]) + [src.path, "-o", out]
        return cmd

    def compile_source(self, src: Input, out: str, bitcode_only: bool,
                       dep_target: str | None) -> None:
        """Compile ``src`` to ``out``.  A unit that registers a custom rule
        (``__enzyme_register_*``), ``__enzyme_function_like`` or an inactive function
        (``__enzyme_inactivefn``, ``annotate("enzyme_inactive")``) for a function it
        defines is compiled again in two steps when optimising: unoptimised bitcode,
        ``noinline`` on those functions, then the optimisation (``llvm.prelink``).
        Otherwise clang's inliner would copy such a function's body into its callers
        and the AD pass would differentiate the body instead of using the rule or
        leaving the call inactive.  So is a unit passing a struct by value to an
        ``__enzyme_*`` call, which goes by reference instead (see ``llvm.prelink``), at
        every level (-O0 included: the AD pass then sees the same calls at every level)."""
        from ..ad.registry import MARKERS, Registry
        from ..ir import parse_module

        self.call(self.compile_command(src, out, bitcode_only, dep_target))
        speed = self.args.opt_level[0]
        if src.lang in ("assembler", "assembler-with-cpp"):
            return
        data = _read(out)
        # (at -O0 clang inlines nothing: the rules' functions stay out of line anyway)
        rules = speed > 0 and any(m in data for m in MARKERS)
        by_value = b"__enzyme_" in data and llvm.enzyme_calls_by_value(
            bitcode.extract(data, out) or b"")
        if not (rules or by_value):
            return
        pre = out + ".pre.bc"
        try:
            self.call(self.compile_command(src, pre, True, dep_target or out)
                      + ["-Xclang", "-disable-llvm-passes"])
            bc = llvm.prelink(
                _read(pre), speed, (lambda text: Registry.read(parse_module(text)).out_of_line())
                if rules else None, by_reference=by_value)
            if bc is None:
                return
            if bitcode_only or self.clang.major != llvm.llvm_major():
                # (an older clang cannot read this LLVM's bitcode: the object is raw
                # bitcode, which enzyme-cc links like any other)
                with open(out, "wb") as f:
                    f.write(bc)
                return
            with open(pre, "wb") as f:
                f.write(bc)
            cmd = self.clang.command(self.args.cxx) + self.opt_flags() + [
                "-Wno-unused-command-line-argument", "-flto=thin"]
            cmd += ["-ffat-lto-objects"] if self.clang.fat_lto else ["-fembed-bitcode=all"]
            self.call(cmd + ["-c", pre, "-o", out])  # .bc: IR by its name, for every clang
        finally:
            if os.path.exists(pre):
                os.unlink(pre)

    def compile_only(self) -> None:
        a = self.args
        sources = a.sources
        if not sources:
            raise UsageError("-c given but no C or C++ source to compile")
        if a.output and len(sources) > 1:
            raise UsageError("cannot specify -o when generating multiple output files")
        for inp in a.inputs:
            if inp.lang is None:
                print(f"{self.prog}: warning: {inp.path}: linker input unused with -c",
                      file=sys.stderr)
        for src in sources:
            out = a.output or os.path.splitext(os.path.basename(src.path))[0] + ".o"
            with atomic_output(out) as tmp_out:
                self.compile_source(src, tmp_out, bitcode_only=False, dep_target=out)
                try:
                    bitcode.privatize(tmp_out)
                except OSError as e:
                    raise FileError.of("cannot write output file", out, e) from None

    # -- linking -----------------------------------------------------------------

    def link(self) -> None:
        a = self.args
        assert self.tmp is not None
        out = a.output or "a.out"
        modules: list[tuple[str, bytes]] = []
        final: list[str] = []           # the native link line, in order
        merged_slot: int | None = None
        archives: list[str] = []
        lib_dirs = [item[2:] for item in a.link_items if isinstance(item, str)
                    and item.startswith("-L")]
        for n, item in enumerate(a.link_items):
            if isinstance(item, str):
                final.append(item)
                if item.startswith("-l"):
                    found = _find_static_lib(item[2:], lib_dirs)
                    if found:
                        archives.append(found)
                continue
            if item.lang is not None:
                if item.lang in ("assembler", "assembler-with-cpp"):
                    obj = os.path.join(self.tmp, f"{n}.o")
                    self.call(self.compile_command(item, obj, bitcode_only=False, dep_target=None))
                    final.append(obj)
                    continue
                bc = os.path.join(self.tmp, f"{n}.bc")
                self.compile_source(item, bc, bitcode_only=True,
                                    dep_target=out if a.dep_gen else None)
                modules.append((item.path, _read(bc)))
                if merged_slot is None:
                    merged_slot = len(final)
                continue
            data = _read(item.path)
            if archive.is_archive(data[:8]):
                archives.append(item.path)
                final.append(item.path)
                continue
            if not bitcode.is_object(data[:8]):
                final.append(item.path)   # shared library or linker script
                continue
            bc_data = bitcode.extract(data, item.path)
            if bc_data is None:
                final.append(item.path)
            else:
                modules.append((item.path, bc_data))
                if merged_slot is None:
                    merged_slot = len(final)
        if modules:
            modules += self.pull_archive_members(modules, archives)
            obj = build_object(modules, self.pipeline_config(out))
            merged = os.path.join(self.tmp, "enzyme-merged.o")
            try:
                with open(merged, "wb") as fh:
                    fh.write(obj)
            except OSError as e:
                raise FileError.of("cannot write temporary file", merged, e) from None
            final.insert(merged_slot if merged_slot is not None else 0, merged)
        with atomic_output(out) as tmp_out:
            self.call(self.clang.command(a.cxx) + self.link_flags() + (["-v"] if a.verbose else [])
                      + final + ["-o", tmp_out])

    def pull_archive_members(self, modules: list[tuple[str, bytes]],
                             archives: list[str]) -> list[tuple[str, bytes]]:
        """Bitcode of the archive members that define still-undefined symbols,
        pulled as a linker would, to a fixpoint."""
        if not archives:
            return []
        defined: set[str] = set()
        undefined: set[str] = set()
        for what, data in modules:
            d, u = _symbols(data, what)
            defined |= d
            undefined |= u
        candidates: list[tuple[str, bytes, set[str], set[str]]] = []
        seen: set[str] = set()
        for path in archives:
            real = os.path.realpath(path)
            if real in seen:
                continue
            seen.add(real)
            for member in archive.read_archive(path):
                what = f"{path}({member.name})"
                bc_data = bitcode.extract(member.data, what) \
                    if bitcode.is_object(member.data[:8]) else None
                if bc_data is None:
                    continue
                d, u = _symbols(bc_data, what)
                candidates.append((what, bc_data, d, u))
        pulled: list[tuple[str, bytes]] = []
        changed = True
        while changed:
            changed = False
            for cand in list(candidates):
                what, data, d, u = cand
                if d & (undefined - defined):
                    self.log(f"pulling {what}")
                    pulled.append((what, data))
                    candidates.remove(cand)
                    defined |= d
                    undefined |= u
                    changed = True
        return pulled


@contextlib.contextmanager
def atomic_output(out: str):
    """Yield a private temporary name beside ``out``; it replaces ``out`` only
    when the block succeeds, so a failed build never leaves a half-written
    output behind."""
    d = os.path.dirname(os.path.abspath(out))
    try:
        fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(out) + ".", suffix=".tmp",
                                   dir=d)
    except OSError as e:
        raise FileError.of("cannot open output file", out, e) from None
    os.close(fd)
    try:
        yield tmp
        if os.path.getsize(tmp) == 0:
            raise ToolError(f"{out}: the tool wrote no output", 1)
        try:
            # mkstemp made the file private; give it the permissions a compiler's
            # output normally has (the linker already set the executable bits).
            os.chmod(tmp, os.stat(tmp).st_mode | (0o644 & ~_umask()))
            os.replace(tmp, out)
        except OSError as e:
            raise FileError.of("cannot open output file", out, e) from None
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)


def _read(path: str, size: int = -1) -> bytes:
    try:
        with open(path, "rb") as fh:
            return fh.read(size)
    except OSError as e:
        raise FileError.of("cannot read input file", path, e) from None


def _umask(status: str = "/proc/self/status") -> int:
    """The process umask, read without setting it (``os.umask`` sets it: another
    thread creating a file meanwhile would get mode 0666/0777): Linux reports it in
    /proc/self/status; elsewhere, the mode a fresh file gets from the OS."""
    try:
        with open(status, encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    probe = os.path.join(tempfile.gettempdir(), f".enzyme-umask.{secrets.token_hex(8)}")
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o777)  # 0777 & ~umask
    except OSError:
        return 0o022   # the usual umask
    try:
        return 0o777 & ~os.fstat(fd).st_mode
    finally:
        os.close(fd)
        os.unlink(probe)


def _symbols(data: bytes, what: str) -> tuple[set[str], set[str]]:
    """(defined, undefined) external symbol names of a bitcode module."""
    return llvm.module_symbols(llvm.parse_bitcode(data, what))


def _find_static_lib(name: str, dirs: list[str]) -> str | None:
    """``-lname`` as the linker resolves it in the user's -L directories: a
    shared library wins over a static one in the same directory."""
    for d in dirs:
        if os.path.exists(os.path.join(d, f"lib{name}.so")):
            return None
        path = os.path.join(d, f"lib{name}.a")
        if os.path.exists(path):
            return path
    return None
