"""End-to-end tests of enzyme-cc / enzyme-c++ as a compiler driver.

Every build is compared with the same program built by the clang EnzymePy
uses: same output, same exit status.  No differentiation here (tests/ad/ does
that); these tests pin down the toolchain: compile, link, archives, shared
libraries, make, dependency files, response files, and bad input.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys

import pytest

from clangs import other_clangs

from enzyme_py.driver import bitcode, elf

DATA = os.path.join(os.path.dirname(__file__), "data")


def run(cmd, cwd, ok=True, env=None, **kw) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(c) for c in cmd], cwd=cwd, capture_output=True, text=True,
                          timeout=300, env=env, **kw)
    if ok and proc.returncode != 0:
        raise AssertionError(f"{cmd} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def copy_data(name: str, dest) -> str:
    src = os.path.join(DATA, name)
    if os.path.isdir(src):
        out = os.path.join(dest, name)
        shutil.copytree(src, out)
        return out
    shutil.copy(src, dest)
    return os.path.join(dest, name)


def output_of(exe, cwd, env=None) -> tuple[int, str]:
    proc = run([exe], cwd, ok=False, env=env)
    return proc.returncode, proc.stdout


def test_version(ecc):
    out = run([ecc, "--version"], ".").stdout
    from enzyme_py import __version__
    assert f"(EnzymePy) {__version__}" in out
    assert "clang" in out and "LLVM (llvmlite): 22." in out


def test_version_into_a_closed_pipe_is_quiet(ecc):
    # `enzyme-cc --version | grep -q clang`: the reader may be gone before we write;
    # that ends quietly with SIGPIPE's status, not with an internal error
    r, w = os.pipe()
    os.close(r)
    try:
        proc = subprocess.run([ecc, "--version"], stdout=w, stderr=subprocess.PIPE,
                              text=True, timeout=120)
    finally:
        os.close(w)
    assert proc.stderr == ""
    assert proc.returncode == 141


def test_help_mentions_own_options(ecc):
    out = run([ecc, "--help"], ".").stdout
    assert "-save-temps" in out and "ENZYME_CLANG" in out


@pytest.mark.parametrize("flag", ["-fenzyme-strong-zero=no", "-fenzyme-preopt=2",
                                  "-fenzyme-preopt=abc", "-fenzyme-bogus"])
def test_enzyme_option_values_are_checked(tmp_path, ecc, flag):
    """Every -fenzyme-* option is a switch: a value other than 0 or 1 was taken as 1
    (``-fenzyme-strong-zero=no`` switched strong zero on); now a usage error."""
    src = copy_data("single.c", tmp_path)
    proc = run([ecc, flag, src, "-o", tmp_path / "a", "-lm"], tmp_path, ok=False)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert re.search(r"the value must be 0 or 1|unknown option", proc.stderr), proc.stderr
    assert not (tmp_path / "a").exists()


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
@pytest.mark.parametrize("name,cxx", [("single.c", False), ("cxx.cpp", True)])
def test_single_file_matches_clang(tmp_path, ecc, ecxx, clang, opt, name, cxx):
    src = copy_data(name, tmp_path)
    run([ecxx if cxx else ecc, opt, src, "-o", "ours", "-lm"], tmp_path)
    run(clang.command(cxx) + [opt, src, "-o", "ref", "-lm"], tmp_path)
    ours = output_of(tmp_path / "ours", tmp_path)
    assert ours == output_of(tmp_path / "ref", tmp_path)
    assert ours[1].strip()


def test_multi_file_one_call_and_separate_compile(tmp_path, ecc, clang):
    d = copy_data("multi", tmp_path)
    run([ecc, "-O2", "main.c", "util.c", "-o", "one", "-lm"], d)
    run([ecc, "-O1", "-c", "util.c"], d)
    run([ecc, "-O1", "-c", "main.c", "-o", "main.o"], d)
    run([ecc, "main.o", "util.o", "-o", "two", "-lm"], d)
    run(clang.command(False) + ["main.c", "util.c", "-o", "ref", "-lm"], d)
    ref = output_of(os.path.join(d, "ref"), d)
    assert output_of(os.path.join(d, "one"), d) == ref
    assert output_of(os.path.join(d, "two"), d) == ref
    # -c wrote an ordinary native object that carries its bitcode in our section
    with open(os.path.join(d, "util.o"), "rb") as fh:
        data = fh.read()
    assert data[:4] == b"\x7fELF"
    assert elf.sections(data).get(bitcode.PRIVATE_SECTION)
    nm = shutil.which("nm")
    if nm:
        syms = run([nm, "util.o"], d).stdout
        assert " T dot2" in syms and " T rot" in syms


def _archivers():
    out = [pytest.param(["ar", "rcs"], id="gnu-ar")]
    llvm_ar = shutil.which("llvm-ar")
    out.append(pytest.param([llvm_ar, "rcs"] if llvm_ar else
                            [sys.executable, "-m", "ziglang", "ar", "rcs"], id="llvm-ar"))
    return out


@pytest.mark.parametrize("archiver", _archivers())
def test_static_library_members_pulled_on_demand(tmp_path, ecc, clang, archiver):
    d = copy_data("staticlib", tmp_path)
    run([ecc, "-O2", "-c", "poly.c", "unused.c"], d)
    run(archiver + ["libpoly.a", "poly.o", "unused.o"], d)
    run([ecc, "-O2", "-c", "main.c"], d)
    # unused.o defines main too: pulling it would break the link
    run([ecc, "main.o", "-L.", "-lpoly", "-o", "t1"], d)
    run([ecc, "main.c", "libpoly.a", "-o", "t2", "-v"], d)
    run(clang.command(False) + ["main.c", "poly.c", "-o", "ref"], d)
    ref = output_of(os.path.join(d, "ref"), d)
    assert ref[1].count("p(") == 5
    assert output_of(os.path.join(d, "t1"), d) == ref
    assert output_of(os.path.join(d, "t2"), d) == ref


def test_static_library_bitcode_reaches_the_merged_module(tmp_path, ecc):
    """The archive member's code goes through EnzymePy (it is in the merged IR),
    not only through the system linker."""
    d = copy_data("staticlib", tmp_path)
    run([ecc, "-c", "poly.c"], d)
    run(["ar", "rcs", "libpoly.a", "poly.o"], d)
    run([ecc, "main.c", "-L.", "-lpoly", "-o", "t", "-save-temps"], d)
    with open(os.path.join(d, "t.merged.ll")) as fh:
        text = fh.read()
    assert any(line.startswith("define") and "@poly3(" in line for line in text.splitlines())


def test_shared_library(tmp_path, ecc, clang):
    d = copy_data("shared", tmp_path)
    run([ecc, "-O2", "-shared", "-fPIC", "shape.c", "-o", "libshape.so", "-lm"], d)
    run([ecc, "-O2", "main.c", "-L.", "-lshape", "-Wl,-rpath," + d, "-o", "t"], d)
    run(clang.command(False) + ["main.c", "shape.c", "-o", "ref", "-lm"], d)
    assert output_of(os.path.join(d, "t"), d) == output_of(os.path.join(d, "ref"), d)


def test_function_to_differentiate_in_a_shared_library(tmp_path, ecc):
    """The body is in a shared library (built with enzyme-cc): the hint said "compile its
    definition with enzyme-cc too", which the user had done; it says what to link."""
    (tmp_path / "model.c").write_text("double model(double x) { return x * x; }\n")
    (tmp_path / "main.c").write_text(
        "double model(double);\ndouble __enzyme_autodiff(void *, ...);\n"
        "int main(void) { return (int)__enzyme_autodiff((void *)model, 3.0); }\n")
    run([ecc, "-O2", "-shared", "-fPIC", "model.c", "-o", "libmodel.so"], tmp_path)
    r = run([ecc, "-O2", "main.c", "-L.", "-lmodel", "-o", "app"], tmp_path, ok=False)
    assert r.returncode == 1 and "body of 'model' is not available" in r.stderr, r.stderr
    assert "a static library (the code of a shared library is not visible" in r.stderr
    assert not (tmp_path / "app").exists()


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_makefile_parallel_build(tmp_path, ecc, clang):
    d = copy_data("makeproj", tmp_path)
    run(["make", "-j2", f"CC={ecc}"], d)
    for stem in ("main", "stats", "fmt"):
        with open(os.path.join(d, stem + ".d")) as fh:
            deps = fh.read()
        assert deps.startswith(stem + ".o:") and "stats.h" in deps
    ref_dir = os.path.join(tmp_path, "ref")
    shutil.copytree(os.path.join(DATA, "makeproj"), ref_dir)
    run(["make", "-j2", "CC=" + " ".join(clang.command(False))], ref_dir)
    ours = output_of(os.path.join(d, "app"), d)
    assert ours == output_of(os.path.join(ref_dir, "app"), ref_dir)
    assert "stddev" in ours[1]
    # nothing to do the second time: the dependency files are right
    again = run(["make", "-j2", f"CC={ecc}"], d).stdout
    assert "Nothing to be done" in again or "is up to date" in again


def test_dependency_file_flags(tmp_path, ecc):
    d = copy_data("multi", tmp_path)
    cmd = [ecc, "-c", "main.c", "-o", "obj/main.o",
           "-MD", "-MF", "deps/main.dep", "-MT", "mytarget"]
    os.makedirs(os.path.join(d, "obj"))
    os.makedirs(os.path.join(d, "deps"))
    run(cmd, d)
    with open(os.path.join(d, "deps", "main.dep")) as fh:
        assert fh.read().startswith("mytarget:")
    run([ecc, "-c", "util.c", "-o", "obj/util.o", "-MMD"], d)
    with open(os.path.join(d, "obj", "util.d")) as fh:
        text = fh.read()
    assert text.startswith("obj/util.o:") and "util.h" in text and "/usr/include" not in text


def test_response_file_and_paths_with_spaces(tmp_path, ecc, clang):
    d = os.path.join(tmp_path, "a dir")
    os.makedirs(d)
    shutil.copy(os.path.join(DATA, "multi", "main.c"), os.path.join(d, "main prog.c"))
    shutil.copy(os.path.join(DATA, "multi", "util.c"), os.path.join(d, "util.c"))
    os.makedirs(os.path.join(d, "inc dir"))
    shutil.copy(os.path.join(DATA, "multi", "util.h"), os.path.join(d, "inc dir", "util.h"))
    with open(os.path.join(d, "args.rsp"), "w") as fh:
        fh.write('-O2 "-Iinc dir"\n"main prog.c" util.c\n-o "my app" -lm\n')
    run([ecc, "@args.rsp"], d)
    out = output_of(os.path.join(d, "my app"), d)
    assert out[0] == 0 and "calls=20" in out[1]


def test_temporary_files_are_cleaned_up(tmp_path, ecc):
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    src = copy_data("single.c", tmp_path)
    env = dict(os.environ, TMPDIR=str(tmpdir))
    run([ecc, src, "-o", "t", "-lm"], tmp_path, env=env)
    run([ecc, "-c", src, "-o", "t.o"], tmp_path, env=env)
    assert list(tmpdir.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["single.c", "t", "t.o", "tmp"]


def test_verbose_and_save_temps(tmp_path, ecc):
    src = copy_data("single.c", tmp_path)
    proc = run([ecc, "-v", "-save-temps", src, "-o", "t", "-lm"], tmp_path)
    assert "llvmlite link" in proc.stderr and "-emit-llvm" in proc.stderr
    assert "source_filename" in (tmp_path / "t.merged.ll").read_text()
    assert "define" in (tmp_path / "t.enzyme.ll").read_text()


# -- bad input: one clear line, non-zero exit, no output file --------------------------


def _error_case(tmp_path, cmd, expect: str, rc_nonzero=True):
    proc = run(cmd, tmp_path, ok=False)
    assert proc.returncode != 0 if rc_nonzero else True
    assert expect in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "out").exists()
    return proc


def test_syntax_error_gives_clang_diagnostic(tmp_path, ecc):
    (tmp_path / "bad.c").write_text("int main(void) { return 0 }\n")
    proc = _error_case(tmp_path, [ecc, "bad.c", "-o", "out"], "bad.c:1:")
    assert "error:" in proc.stderr
    _error_case(tmp_path, [ecc, "-c", "bad.c", "-o", "out"], "bad.c:1:")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.c"]


def test_missing_input(tmp_path, ecc):
    proc = _error_case(tmp_path, [ecc, "nothere.c", "-o", "out"],
                       "enzyme-cc: error: no such file or directory: 'nothere.c'")
    assert len(proc.stderr.strip().splitlines()) == 1


def test_unknown_language(tmp_path, ecc):
    (tmp_path / "x.c").write_text("int main(void){return 0;}\n")
    _error_case(tmp_path, [ecc, "-x", "cobol", "x.c", "-o", "out"],
                "enzyme-cc: error: language not recognized: 'cobol'")
    (tmp_path / "prog.f90").write_text("program p\nend program\n")
    _error_case(tmp_path, [ecc, "prog.f90", "-o", "out"], "prog.f90: unknown file type")


def test_corrupt_object(tmp_path, ecc):
    (tmp_path / "junk.o").write_bytes(b"this is not an object file\n")
    proc = _error_case(tmp_path, [ecc, "junk.o", "-o", "out"],
                       "enzyme-cc: error: junk.o: not an object file")
    assert len(proc.stderr.strip().splitlines()) == 1
    (tmp_path / "trunc.o").write_bytes(b"\x7fELF\x02\x01\x01" + b"\0" * 20)
    proc = _error_case(tmp_path, [ecc, "trunc.o", "-o", "out"], "trunc.o: corrupt object file")
    assert len(proc.stderr.strip().splitlines()) == 1


def test_multiple_outputs_with_dash_o(tmp_path, ecc):
    d = copy_data("multi", tmp_path)
    proc = run([ecc, "-c", "main.c", "util.c", "-o", "x.o"], d, ok=False)
    assert proc.returncode != 0
    assert "cannot specify -o when generating multiple output files" in proc.stderr


@pytest.mark.parametrize("clang_cmd", other_clangs())
def test_any_clang_up_to_llvmlite_major(tmp_path, ecc, clang, clang_cmd):
    """ENZYME_CLANG picks the clang; -c objects from it (fat LTO, or embedded
    bitcode before clang 17) link through EnzymePy."""
    d = copy_data("multi", tmp_path)
    env = dict(os.environ, ENZYME_CLANG=clang_cmd)
    env.pop("ENZYME_CLANGXX", None)
    assert "ENZYME_CLANG" in run([ecc, "--version"], d, env=env).stdout
    run([ecc, "-O2", "-c", "util.c"], d, env=env)
    run([ecc, "-O2", "main.c", "util.o", "-o", "t", "-lm"], d, env=env)
    run(clang.command(False) + ["main.c", "util.c", "-o", "ref", "-lm"], d)
    assert output_of(os.path.join(d, "t"), d) == output_of(os.path.join(d, "ref"), d)


@pytest.mark.parametrize("clang_cmd", other_clangs())
def test_custom_rule_units_and_ir_inputs_with_any_clang(tmp_path, ecc, clang_cmd):
    """A unit registering a custom rule is optimised in a second step from bitcode,
    and ``.ll``/``.bc`` inputs compile like sources, with every clang (ziglang's cc
    knows no ``-x ir``: the step failed with 'language not recognized')."""
    env = dict(os.environ, ENZYME_CLANG=clang_cmd)
    env.pop("ENZYME_CLANGXX", None)
    (tmp_path / "rule.c").write_text(
        "#include <stdio.h>\n"
        "double __enzyme_fwddiff(void *, ...);\n"
        "double sq(double x) { return x * x; }\n"
        "double sq_fwd(double x, double dx) { return 100 * dx; }\n"  # told apart from 2x
        "void *__enzyme_register_derivative_sq[2] = {(void *)sq, (void *)sq_fwd};\n"
        "double f(double x) { return sq(x) + x; }\n"
        "int main(void) { printf(\"%g\\n\", __enzyme_fwddiff((void *)f, 3.0, 1.0)); }\n")
    run([ecc, "-O2", "-c", "rule.c"], tmp_path, env=env)
    run([ecc, "-O2", "rule.o", "-o", "rule"], tmp_path, env=env)
    assert output_of(tmp_path / "rule", tmp_path) == (0, "101\n")
    (tmp_path / "util.c").write_text("double half(double x) { return x / 2; }\n")
    (tmp_path / "main.c").write_text("#include <stdio.h>\ndouble half(double);\n"
                                     "int main(void) { printf(\"%g\\n\", half(5)); }\n")
    for ext in (".ll", ".bc"):
        flag = "-S" if ext == ".ll" else "-c"
        run([ecc, "-O0", flag, "-emit-llvm", "util.c", "-o", "util" + ext], tmp_path, env=env)
        run([ecc, "-O2", "-c", "util" + ext, "-o", "util.o"], tmp_path, env=env)
        run([ecc, "-O2", "main.c", "util.o", "-o", "m"], tmp_path, env=env)
        assert output_of(tmp_path / "m", tmp_path) == (0, "2.5\n")


def _lto_plugins() -> dict[str, str]:
    """LLVM's binutils LTO plugins on this machine, by LLVM major ("14": path)."""
    found = {}
    for pattern in ("/usr/lib/bfd-plugins/LLVMgold-*.so", "/usr/lib/llvm-*/lib/LLVMgold.so"):
        for path in sorted(glob.glob(pattern)):
            m = re.search(r"(?:LLVMgold-|llvm-)(\d+)", path)
            if m:
                found.setdefault(m.group(1), os.path.realpath(path))
    return found


@pytest.mark.parametrize("clang_cmd", other_clangs())
def test_objects_link_with_plain_gnu_tools(tmp_path, ecc, clang_cmd, require_tool):
    """Objects from ``enzyme-cc -c`` are ordinary native objects to GNU ar, nm
    and ld (through gcc), with any clang, whatever LLVM LTO plugins binutils
    loads: the default plugin directory's, and each LLVMgold on this machine
    handed to the tools explicitly.  A plugin older than the clang that wrote
    bitcode in .llvmbc/.llvm.lto fails to read it and hides every symbol."""
    for tool in ("gcc", "ar", "nm"):
        require_tool(tool, "gcc binutils")
    d = copy_data("staticlib", tmp_path)
    env = dict(os.environ, ENZYME_CLANG=clang_cmd)
    env.pop("ENZYME_CLANGXX", None)
    run([ecc, "-O2", "-c", "poly.c"], d, env=env)
    with open(os.path.join(d, "poly.o"), "rb") as fh:
        sections = elf.sections(fh.read())
    assert bitcode.PRIVATE_SECTION in sections, sorted(sections)
    assert not set(bitcode.LLVM_SECTIONS) & set(sections), sorted(sections)
    for n, plugin in enumerate([None, *_lto_plugins().values()]):
        opt = ["--plugin", plugin] if plugin else []
        lib = f"libpoly{n}.a"
        run(["ar", "rcs", *opt, lib, "poly.o"], d)
        assert " T poly3" in run(["nm", *opt, "poly.o"], d).stdout, plugin
        assert " T poly3" in run(["nm", *opt, lib], d).stdout, plugin
        link = ["gcc", "-fuse-ld=bfd", "main.c", "-L.", f"-l{lib[3:-2]}", "-o", "plain"]
        if plugin:
            link.insert(1, f"-Wl,-plugin,{plugin}")
        run(link, d)
        out = output_of(os.path.join(d, "plain"), d)
        assert out[0] == 0 and out[1].count("p(") == 5, (plugin, out)


def test_old_clang_with_another_llvms_lto_plugin_is_covered():
    """The case that broke (issue 9): clang older than 17 writes .llvmbc, and an
    LLVMgold of another LLVM is installed.  Under CI both must be present, so
    test_objects_link_with_plain_gnu_tools covers it rather than skipping."""
    old = [m for m in range(14, 17) if shutil.which(f"clang-{m}")]
    plugins = _lto_plugins()
    if not old or not any(p != str(m) for m in old for p in plugins):
        msg = (f"no clang 14-16 (found {old}) with an LLVMgold of another LLVM "
               f"(found {sorted(plugins)}): apt-get install clang-15 llvm-14-linker-tools")
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)


@pytest.mark.parametrize("backend", ["-fenzyme-clang-backend", "-fno-enzyme-clang-backend"])
@pytest.mark.parametrize("clang_cmd", other_clangs())
def test_constructors_and_destructors_run_in_order(tmp_path, ecc, clang, clang_cmd, backend):
    """llvmlite emits .ctors sections, which lld (the ziglang clang's linker)
    ignores; the driver lowers them to .init_array/.fini_array (where clang's code
    generator does not do it: a clang of another LLVM major, or the option off)."""
    src = copy_data("structors.c", tmp_path)
    env = dict(os.environ, ENZYME_CLANG=clang_cmd)
    env.pop("ENZYME_CLANGXX", None)
    for opt in ("-O0", "-O2"):
        run([ecc, opt, backend, src, "-o", "t"], tmp_path, env=env)
        out = output_of(tmp_path / "t", tmp_path)
        assert out == (0, "ctor 101\nctor 200\nctor default\nmain\natexit\ndtor\n"), out
    run(clang.command(False) + [src, "-o", "ref"], tmp_path)
    assert output_of(tmp_path / "ref", tmp_path) == out


BACKEND_C = r"""
#include <stdio.h>
extern double __enzyme_autodiff(void *, ...);
static double f(const double *x, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) s += x[i] * x[i] * (i + 1);
    return s;
}
int main(void) {
    double x[64], dx[64] = {0};
    for (int i = 0; i < 64; i++) x[i] = 0.25 * i - 3;
    __enzyme_autodiff((void *)f, x, dx, 64);
    double c = 0;
    for (int i = 0; i < 64; i++) c += dx[i] * (i % 7 + 1);
    printf("%.12f %.12f\n", dx[5], c);
    return 0;
}
"""


def _backend_expected() -> str:
    x = [0.25 * i - 3 for i in range(64)]
    dx = [2 * x[i] * (i + 1) for i in range(64)]
    return f"{dx[5]:.12f} {sum(d * (i % 7 + 1) for i, d in enumerate(dx)):.12f}\n"


def test_final_pipeline_by_a_clang_of_llvmlites_major(tmp_path, ecc, clang):
    """After the AD pass, a clang whose LLVM major is llvmlite's runs the -O pipeline
    and code generation (the -O level the user gave, -Os included); with
    -fno-enzyme-clang-backend, or a clang of another major, llvmlite does; the
    programs print the same derivatives."""
    from enzyme_py.llvm import llvm_major
    (tmp_path / "g.c").write_text(BACKEND_C)
    want = _backend_expected()
    by_clang = clang.major == llvm_major()
    for opt in ("-O2", "-Os", "-O0"):
        proc = run([ecc, "-v", opt, "g.c", "-o", "t"], tmp_path)
        assert output_of(tmp_path / "t", tmp_path) == (0, want)
        lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("enzyme-cc: link+print")]
        assert len(lines) == 1, proc.stderr
        if by_clang:
            assert f"clang {opt} and codegen" in lines[0], lines[0]
            final = [ln for ln in proc.stderr.splitlines() if "final.bc" in ln]
            assert len(final) == 1 and f" {opt} " in final[0] and "-c" in final[0].split()
        else:
            assert "llvmlite -O" in lines[0], lines[0]
        proc = run([ecc, "-v", opt, "-fno-enzyme-clang-backend", "g.c", "-o", "u"], tmp_path)
        assert "llvmlite -O" in proc.stderr and "final.bc" not in proc.stderr
        assert output_of(tmp_path / "u", tmp_path) == (0, want)
    if by_clang:   # -S: the assembly is clang's
        proc = run([ecc, "-v", "-O2", "-S", "g.c", "-o", "g.s"], tmp_path)
        final = [ln for ln in proc.stderr.splitlines() if "final.bc" in ln]
        assert len(final) == 1 and "-S" in final[0].split()
        assert "f" in (tmp_path / "g.s").read_text()


def test_failing_final_clang_falls_back_to_llvmlite(tmp_path, ecc, clang):
    """Where the clang cannot run the final pipeline on the module, llvmlite does it:
    the build succeeds and -v says why."""
    from enzyme_py.llvm import llvm_major
    if clang.major != llvm_major():
        pytest.skip(f"clang {clang.version} is not of llvmlite's LLVM major: it is not asked")
    (tmp_path / "g.c").write_text(BACKEND_C)
    wrapper = tmp_path / "cc.sh"
    real = " ".join(clang.command(False))
    wrapper.write_text("#!/bin/sh\n"
                       'case "$*" in *final.bc*) echo "error: no backend today" >&2; exit 1;; esac\n'
                       f'exec {real} "$@"\n')
    wrapper.chmod(0o755)
    env = dict(os.environ, ENZYME_CLANG=str(wrapper))
    env.pop("ENZYME_CLANGXX", None)
    proc = run([ecc, "-v", "-O2", "g.c", "-o", "t"], tmp_path, env=env)
    assert "failed (error: no backend today): llvmlite optimises instead" in proc.stderr
    assert "llvmlite -O2" in proc.stderr and "Traceback" not in proc.stderr
    assert output_of(tmp_path / "t", tmp_path) == (0, _backend_expected())
    proc = run([ecc, "-O2", "g.c", "-o", "t2"], tmp_path, env=env)
    assert "no backend today" not in proc.stderr   # said under -v only
