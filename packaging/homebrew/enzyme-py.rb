# Homebrew formula for EnzymePy (homebrew-core style).
#
# Release placeholders: EnzymePy 0.1.0 is not published yet, so the source URL
# points at the tag it will have and its sha256 is zeros; the llvmlite resource
# is pinned to the llvmlite that pyproject.toml requires and its sha256 must be
# filled in the same way.  At release: `brew update-python-resources enzyme-py`
# and `brew fetch --build-from-source enzyme-py` give the real values.
class EnzymePy < Formula
  include Language::Python::Virtualenv

  desc "Enzyme-compatible automatic differentiation for C and C++, AD pass in Python"
  homepage "https://github.com/enzyme-py/enzyme-py"
  url "https://github.com/enzyme-py/enzyme-py/archive/refs/tags/v0.1.0.tar.gz"
  sha256 "0000000000000000000000000000000000000000000000000000000000000000" # PLACEHOLDER: no release yet
  license "Apache-2.0"

  depends_on "cmake" => :build # scikit-build-core, and the header/CMake package install
  depends_on "llvm" # clang for the compile steps; llvmlite builds against it
  depends_on "python@3.13"

  resource "llvmlite" do
    url "https://github.com/numba/llvmlite/archive/refs/tags/v0.50.0.tar.gz"
    sha256 "0000000000000000000000000000000000000000000000000000000000000000" # PLACEHOLDER: fill at release
  end

  def install
    llvm = Formula["llvm"]
    ENV["LLVM_CONFIG"] = llvm.opt_bin/"llvm-config"
    ENV.prepend_path "CMAKE_PREFIX_PATH", llvm.opt_prefix

    # The Python package (drivers, AD pass) in its own virtualenv.  The
    # `ziglang` dependency is a fallback clang for machines without one; here
    # Homebrew's clang is used instead, so it is not installed.
    venv = virtualenv_create(libexec, "python3.13")
    venv.pip_install resources
    venv.pip_install buildpath

    # The drivers, pinned to Homebrew's clang (Apple's clang numbers its
    # versions differently from LLVM, and its bitcode must be readable by the
    # LLVM that llvmlite carries).
    %w[enzyme-cc enzyme-c++].each do |driver|
      (bin/driver).write_env_script libexec/"bin"/driver,
                                    ENZYME_CLANG:   llvm.opt_bin/"clang",
                                    ENZYME_CLANGXX: llvm.opt_bin/"clang++"
    end

    # enzyme.h into include/ and the CMake package into lib/cmake/EnzymePy, so
    # find_package(EnzymePy) finds #{prefix} and resolves #{bin}/enzyme-cc.
    system "cmake", "-S", ".", "-B", "build", *std_cmake_args
    system "cmake", "--install", "build"
  end

  test do
    (testpath/"cube.c").write <<~C
      #include <enzyme.h>
      #include <stdio.h>

      static double cube(double x) { return x * x * x; }

      int main(void) {
          printf("%.6f\\n", __enzyme_autodiff((void *)cube, 2.0));
          return 0;
      }
    C
    system bin/"enzyme-cc", "-O2", "cube.c", "-o", "cube"
    assert_equal "12.000000", shell_output("./cube").strip

    assert_path_exists lib/"cmake/EnzymePy/EnzymePyConfig.cmake"
    assert_match version.to_s, shell_output("#{bin}/enzyme-cc --version")
  end
end
