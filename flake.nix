{
  description = "EnzymePy: Enzyme-compatible automatic differentiation for C and C++, with the AD pass in Python on llvmlite";

  inputs.nixpkgs.url = "github:NixOS/nixpkgs/nixos-unstable";

  outputs = { self, nixpkgs }:
    let
      version = "0.1.0"; # as in pyproject.toml (tests/cmake/test_packaging.py checks it)

      systems = [ "x86_64-linux" "aarch64-linux" "x86_64-darwin" "aarch64-darwin" ];
      forAllSystems = f: nixpkgs.lib.genAttrs systems (system: f nixpkgs.legacyPackages.${system});

      # The program checks.smoke compiles with enzyme-cc: d/dx x^3 at x = 2.
      smokeTestC = ''
        #include <enzyme.h>
        #include <stdio.h>

        static double cube(double x) { return x * x * x; }

        int main(void) {
            printf("%.6f\n", __enzyme_autodiff((void *)cube, 2.0));
            return 0;
        }
      '';
      smokeTestExpected = "12.000000";

      perSystem = pkgs:
        let
          python = pkgs.python3;
          py = python.pkgs;
          # clang for the compile steps: its bitcode must be readable by
          # llvmlite's LLVM, so its major version must be at most 22.
          clang = pkgs.llvmPackages.clang;
          # llvmlite 0.50 (LLVM 22), as pyproject.toml requires.
          llvmlite = (py.llvmlite.override {
            llvm = (pkgs.llvmPackages_22 or pkgs.llvmPackages_latest).llvm;
          }).overridePythonAttrs (old: rec {
            version = "0.50.0";
            src = py.fetchPypi {
              pname = "llvmlite";
              inherit version;
              hash = "sha256-8qLNbsn/zBtxR96g16Se/r8XorQ04MKET+F1mZ1XHrQ=";
            };
          });

          enzyme-py = py.buildPythonPackage {
            pname = "enzyme-py";
            inherit version;
            pyproject = true;
            src = self;

            build-system = [ py.scikit-build-core ];
            nativeBuildInputs = [ pkgs.cmake ];
            dontUseCmakeConfigure = true; # scikit-build-core runs CMake itself

            dependencies = [ llvmlite ];
            # `ziglang` is the fallback clang for machines without one; here the
            # drivers are pinned to nixpkgs' clang instead.
            pythonRemoveDeps = [ "ziglang" ];
            makeWrapperArgs = [
              "--set-default" "ENZYME_CLANG" "${clang}/bin/clang"
              "--set-default" "ENZYME_CLANGXX" "${clang}/bin/clang++"
            ];

            # The wheel puts enzyme.h into $out/include and the CMake package
            # into $out/lib/cmake/EnzymePy, beside $out/bin/enzyme-cc.
            pythonImportsCheck = [ "enzyme_py" "enzyme_py.driver" ];
            doCheck = false; # the test suite runs in checks.tests

            meta = {
              description = "Enzyme-compatible automatic differentiation for C and C++";
              license = pkgs.lib.licenses.asl20;
              mainProgram = "enzyme-cc";
              platforms = pkgs.lib.platforms.unix;
            };
          };

          testInputs = [
            py.pytest py.hypothesis py.pip py.scikit-build-core
            pkgs.cmake pkgs.gnumake clang
          ];
        in
        {
          packages = {
            default = enzyme-py;
            inherit enzyme-py;
          };

          apps = {
            default = { type = "app"; program = "${enzyme-py}/bin/enzyme-cc"; };
            enzyme-cc = { type = "app"; program = "${enzyme-py}/bin/enzyme-cc"; };
            enzyme-cxx = { type = "app"; program = "${enzyme-py}/bin/enzyme-c++"; };
          };

          checks = {
            # The pytest suite against the built package.
            tests = enzyme-py.overridePythonAttrs (old: {
              doCheck = true;
              nativeCheckInputs = [ py.pytestCheckHook ] ++ testInputs;
              preCheck = ''
                export PATH=$out/bin:$PATH HOME=$TMPDIR
              '';
            });

            # What a user does first: compile a gradient and check it.
            smoke = pkgs.runCommand "enzyme-py-smoke-${version}"
              { nativeBuildInputs = [ enzyme-py ]; } ''
              cp ${pkgs.writeText "cube.c" smokeTestC} cube.c
              enzyme-cc -O2 cube.c -o cube
              result=$(./cube)
              if [ "$result" != "${smokeTestExpected}" ]; then
                echo "expected ${smokeTestExpected}, got $result" >&2
                exit 1
              fi
              echo "$result" > $out
            '';
          };

          devShells.default = pkgs.mkShell {
            packages = [
              (python.withPackages (ps: [
                llvmlite ps.pytest ps.hypothesis ps.pip ps.scikit-build-core ps.ruff
              ]))
              pkgs.cmake pkgs.gnumake pkgs.ninja clang pkgs.ruby
            ];
            ENZYME_CLANG = "${clang}/bin/clang";
            ENZYME_CLANGXX = "${clang}/bin/clang++";
          };
        };

      outputs = forAllSystems perSystem;
    in
    {
      packages = nixpkgs.lib.mapAttrs (_: o: o.packages) outputs;
      apps = nixpkgs.lib.mapAttrs (_: o: o.apps) outputs;
      checks = nixpkgs.lib.mapAttrs (_: o: o.checks) outputs;
      devShells = nixpkgs.lib.mapAttrs (_: o: o.devShells) outputs;
    };
}
