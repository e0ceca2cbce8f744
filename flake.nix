{
  description = "pointfail: measure how vision-language models fail at pointing (dev shell and slim scorer image)";

  # Pinned by commit: the last revision of the nixos-24.11 release branch (2025-06-30), so the dev shell
  # and the scorer image are as pinned as the Docker images. flake.lock records the same revision with
  # its content hash (narHash); `nix flake lock --update-input nixpkgs` after changing the commit here.
  inputs.nixpkgs.url = "github:NixOS/nixpkgs/50ab793786d9de88ee30ec4e4c24fb4236fc2674";

  outputs = { self, nixpkgs }:
    let
      systems = [ "x86_64-linux" "aarch64-linux" ];
      forAll = f: nixpkgs.lib.genAttrs systems (system: f (import nixpkgs { inherit system; }));

      # pointfail itself, built from this checkout with the scorer's dependencies only (no torch).
      pointfailFor = pkgs: pkgs.python311Packages.buildPythonPackage {
        pname = "pointfail";
        version = "0.1.0";
        pyproject = true;
        src = ./.;
        build-system = [ pkgs.python311Packages.setuptools pkgs.python311Packages.wheel ];
        dependencies = with pkgs.python311Packages; [ numpy pillow scipy pydantic tabulate ];
        doCheck = false;
        pythonImportsCheck = [ "pointfail" ];
      };
    in
    {
      packages = forAll (pkgs: rec {
        pointfail = pointfailFor pkgs;

        # The slim scorer image: score, aggregate and verify from committed records; no torch.
        scorer-image = pkgs.dockerTools.buildLayeredImage {
          name = "pointfail/scorer";
          tag = "nix";
          contents = [ (pkgs.python311.withPackages (ps: [ pointfail ])) ];
          config = {
            Entrypoint = [ "python3" "-m" "pointfail" ];
            Cmd = [ "--help" ];
            User = "65534:65534";
            WorkingDir = "/work";
          };
        };
        default = pointfail;
      });

      devShells = forAll (pkgs: {
        default = pkgs.mkShell {
          packages = [
            (pkgs.python311.withPackages (ps: with ps; [
              numpy pillow scipy pydantic tabulate hypothesis pytest docker tqdm
              matplotlib plotly ollama playwright
            ]))
            pkgs.gnumake pkgs.tesseract pkgs.debootstrap pkgs.chromium
          ];
          shellHook = ''
            export PYTHONPATH=$PWD/src:$PWD/runner''${PYTHONPATH:+:$PYTHONPATH}
            export HF_HUB_OFFLINE=1
          '';
        };
      });
    };
}
