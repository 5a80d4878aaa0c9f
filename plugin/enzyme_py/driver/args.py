"""Command-line handling of ``enzyme-cc`` / ``enzyme-c++``.

The driver accepts the flags that real build systems pass to a C compiler and
sorts them into what the compile steps need, what the final link needs, and
EnzymePy's own options (``-fenzyme-*``, ``-v``, ``-save-temps``).  Response
files (``@file``) are expanded first, as clang does.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass, field

from ..errors import UsageError

# Flags that take their value as the next argument (``-I dir``) as well as
# joined (``-Idir``).  The first field says where the flag goes.
_SEPARATE = {
    "-o": "output",
    "-x": "lang",
    "-I": "compile", "-D": "compile", "-U": "compile", "-include": "compile",
    "-imacros": "compile", "-isystem": "compile", "-idirafter": "compile",
    "-iquote": "compile", "-isysroot": "both", "-iprefix": "compile",
    "-iwithprefix": "compile", "-iwithprefixbefore": "compile",
    "-MF": "dep", "-MT": "dep", "-MQ": "dep", "-MJ": "compile",
    "-Xclang": "compile", "-Xpreprocessor": "compile", "-Xassembler": "compile",
    "-L": "link", "-l": "link", "-Xlinker": "link", "-u": "link", "-T": "link",
    "-z": "link", "-e": "link",
    "-target": "both", "--target": "both", "-arch": "both", "--sysroot": "both",
    "--gcc-toolchain": "both", "-gcc-toolchain": "both",
}

# Flags that stand alone and concern only the link.
_LINK_ONLY = {
    "-shared", "-static", "-rdynamic", "-s", "-nostdlib", "-nodefaultlibs",
    "-nostartfiles", "-pie", "-no-pie", "-static-pie", "-static-libgcc",
    "-static-libstdc++", "-shared-libgcc", "-r", "-Bsymbolic",
}

_LINK_ONLY_PREFIXES = ("-fuse-ld=", "--ld-path=", "--rtlib=", "-rtlib=")

# Flags that stand alone and concern only compilation.
_COMPILE_ONLY = {"-MD", "-MMD", "-MP", "-M", "-MM", "-MG", "-P", "-C", "-CC",
                 "-ansi", "-nostdinc", "-nostdinc++", "-trigraphs", "-H", "-w"}
_COMPILE_ONLY_PREFIXES = ("-std=", "--std=", "-W", "-ferror-limit", "-fdiagnostics",
                          "-fmacro-", "-fcolor")

# Flags that matter to compilation and to the link (code generation, target,
# runtime libraries); -g is kept out of the link.
_BOTH_PREFIXES = ("-m", "-f", "-g", "-stdlib=", "--stdlib=", "--target=", "--sysroot=",
                  "-resource-dir", "-B", "-no-canonical")

# Languages accepted by ``-x`` and how clang spells them.
LANGS = {
    "c": "c", "c++": "c++", "cpp-output": "cpp-output", "c++-cpp-output": "c++-cpp-output",
    "assembler": "assembler", "assembler-with-cpp": "assembler-with-cpp",
    "ir": "ir", "c-header": "c-header", "c++-header": "c++-header",
}

SOURCE_EXT = {
    ".c": "c", ".i": "cpp-output",
    ".cc": "c++", ".cp": "c++", ".cpp": "c++", ".cxx": "c++", ".c++": "c++", ".C": "c++",
    ".CPP": "c++", ".ii": "c++-cpp-output",
    ".s": "assembler", ".S": "assembler-with-cpp", ".sx": "assembler-with-cpp",
    ".ll": "ir", ".bc": "ir",
}


@dataclass
class Input:
    """One input file, in command-line order."""

    path: str
    lang: str | None  # a source language, or None for objects/archives/libraries


@dataclass
class Args:
    """The parsed command line."""

    cxx: bool = False                      # invoked as enzyme-c++
    mode: str = "link"                     # link | compile (-c) | asm (-S) | passthrough
    output: str | None = None
    opt: str | None = None                 # "-O2" as given, None if absent
    # Items in command-line order, for the link: Input objects and flag strings.
    link_items: list = field(default_factory=list)
    compile_flags: list[str] = field(default_factory=list)
    link_flags: list[str] = field(default_factory=list)   # positional-free link flags
    dep_flags: list[str] = field(default_factory=list)    # -MF/-MT/-MQ with values
    dep_gen: list[str] = field(default_factory=list)      # -MD/-MMD
    verbose: bool = False
    save_temps: bool = False
    enzyme: dict[str, str] = field(default_factory=dict)  # -fenzyme-NAME[=VALUE]
    passthrough: list[str] = field(default_factory=list)  # original argv for clang
    version: bool = False
    help: bool = False
    emit_llvm: bool = False

    @property
    def inputs(self) -> list[Input]:
        return [i for i in self.link_items if isinstance(i, Input)]

    @property
    def sources(self) -> list[Input]:
        return [i for i in self.inputs if i.lang is not None]

    @property
    def opt_level(self) -> tuple[int, int]:
        """(speed level 0..3, size level 0..2) of ``-O``."""
        return parse_opt(self.opt)


def parse_opt(flag: str | None) -> tuple[int, int]:
    if flag is None:
        return 0, 0
    v = flag[2:]
    if v in ("", "1", "g"):
        return 1, 0
    if v == "s":
        return 2, 1
    if v == "z":
        return 2, 2
    if v == "fast":
        return 3, 0
    if v.isdigit():
        return min(int(v), 3), 0
    raise UsageError(f"invalid optimization level '{flag}'")


def expand_response_files(argv: list[str], depth: int = 0) -> list[str]:
    """Replace every ``@file`` argument by the arguments the file holds."""
    out: list[str] = []
    for a in argv:
        if a.startswith("@") and len(a) > 1:
            path = a[1:]
            if not os.path.isfile(path):
                out.append(a)  # clang passes a missing @file through as an input
                continue
            if depth > 20:
                raise UsageError(f"response files nested too deeply at '{a}'")
            try:
                with open(path, encoding="utf-8", errors="surrogateescape") as fh:
                    text = fh.read()
            except OSError as e:
                raise UsageError(f"cannot read response file '{path}': "
                                 f"{e.strerror or e}") from None
            try:
                words = shlex.split(text, comments=False, posix=True)
            except ValueError as e:
                raise UsageError(f"cannot read response file '{path}': {e}") from None
            out.extend(expand_response_files(words, depth + 1))
        else:
            out.append(a)
    return out


def parse_args(argv: list[str], cxx: bool) -> Args:
    """Sort ``argv`` (without the program name) into an :class:`Args`."""
    argv = expand_response_files(argv)
    args = Args(cxx=cxx, passthrough=list(argv))
    lang: str | None = None
    passthrough_modes = {"-E": "passthrough", "-fsyntax-only": "passthrough",
                         "-M": "passthrough", "-MM": "passthrough"}
    i = 0
    n = len(argv)

    def value(flag: str) -> str:
        nonlocal i
        if i + 1 >= n:
            raise UsageError(f"argument to '{flag}' is missing (expected 1 value)")
        i += 1
        return argv[i]

    while i < n:
        a = argv[i]
        if a in ("--version",):
            args.version = True
        elif a in ("--help", "-help"):
            args.help = True
        elif a == "-c":
            args.mode = "compile"
        elif a == "-S":
            args.mode = "asm" if args.mode != "passthrough" else args.mode
        elif a in passthrough_modes:
            args.mode = "passthrough"
            if a in ("-M", "-MM"):
                args.compile_flags.append(a)
        elif a == "-emit-llvm":
            args.emit_llvm = True
        elif a == "-v":
            args.verbose = True
        elif a in ("-save-temps", "--save-temps") or a.startswith("-save-temps="):
            args.save_temps = True
        elif a.startswith("-fenzyme-"):
            name, _, val = a[len("-fenzyme-"):].partition("=")
            args.enzyme[name] = val if val else "1"
        elif a.startswith("-fno-enzyme-"):
            args.enzyme[a[len("-fno-enzyme-"):]] = "0"
        elif a.startswith("-O"):
            parse_opt(a)
            args.opt = a
        elif a.startswith("-flto") or a in ("-ffat-lto-objects", "-fno-fat-lto-objects",
                                             "-fembed-bitcode") or a.startswith("-fembed-bitcode="):
            pass  # EnzymePy chooses the bitcode format itself
        elif a in ("-MD", "-MMD"):
            args.dep_gen.append(a)
        elif a == "-MP":
            args.dep_flags.append(a)
        elif (m := _match_separate(a)) is not None:
            flag, joined = m
            kind = _SEPARATE[flag]
            val = joined if joined is not None else value(flag)
            if kind == "output":
                args.output = val
            elif kind == "lang":
                if val == "none":
                    lang = None
                elif val not in LANGS:
                    raise UsageError(f"language not recognized: '{val}'",
                                     hint="enzyme-cc compiles C and C++ (-x c, -x c++), "
                                          "assembly and LLVM IR")
                else:
                    lang = val
            elif kind == "dep":
                args.dep_flags += [flag, val]
            elif kind == "link":
                if flag == "-l":
                    args.link_items.append("-l" + val)
                elif flag == "-L":
                    args.link_items.append("-L" + val)
                else:
                    args.link_flags += [flag, val] if joined is None else [a]
            elif kind == "both":
                pair = [a] if joined is not None else [flag, val]
                args.compile_flags += pair
                args.link_flags += pair
            else:
                args.compile_flags += [a] if joined is not None else [flag, val]
        elif a.startswith("-Wl,"):
            args.link_items.append(a)
        elif a in _LINK_ONLY or a.startswith(_LINK_ONLY_PREFIXES):
            args.link_flags.append(a)
        elif a in _COMPILE_ONLY or a.startswith(_COMPILE_ONLY_PREFIXES):
            args.compile_flags.append(a)
        elif a in ("-pthread", "-pthreads") or a.startswith(_BOTH_PREFIXES):
            args.compile_flags.append(a)
            if not a.startswith("-g"):
                args.link_flags.append(a)
        elif a == "-":
            raise UsageError("reading a source from standard input is not supported",
                             hint="write the source to a file and pass its name")
        elif a.startswith("-") and len(a) > 1:
            # Unknown to us: let clang judge it, at compile and at link.
            args.compile_flags.append(a)
            args.link_flags.append(a)
        else:
            args.link_items.append(Input(a, lang if lang is not None else _lang_of(a)))
        i += 1
    return args


# Flags whose value may also be joined (``-Idir``, ``-isystemdir``, ``--sysroot=x``).
_JOINABLE = sorted((f for f in _SEPARATE if f not in ("-u", "-z", "-T", "-e", "-arch",
                                                      "-target", "-Xclang", "-Xlinker",
                                                      "-Xpreprocessor", "-Xassembler")),
                   key=len, reverse=True)


def _match_separate(a: str) -> tuple[str, str | None] | None:
    """``-I`` → ("-I", None); ``-Idir`` → ("-I", "dir"); ``--sysroot=x`` → ("--sysroot", "x")."""
    if a in _SEPARATE:
        return a, None
    for f in _JOINABLE:
        if a.startswith(f):
            rest = a[len(f):]
            if f.startswith("--"):
                if not rest.startswith("="):
                    continue
                rest = rest[1:]
            return f, rest
    return None


def _lang_of(path: str) -> str | None:
    _, ext = os.path.splitext(path)
    return SOURCE_EXT.get(ext)
