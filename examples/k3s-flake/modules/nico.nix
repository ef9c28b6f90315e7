# The NICO side of a node, not specific to any Kubernetes distribution:
# which cluster and machine this configuration is for, and how the secret
# files NICO sends (agent-token on every node; join-token, cluster-ca.crt and
# cluster-ca.key on control-plane nodes only) reach the host at run time.
#
# NIO writes NICO's files into the flake checkout on the deploying side (its
# contract says no more). A NixOS switch copies only the system closure to
# the host, so a file reaches the host either through the Nix store or by
# some other way. Pick one with nico.secrets.source:
#   "host"  (default) the flake never reads the files; they must already be
#           in nico.secrets.dir on the host (put there by sops-nix, agenix,
#           or your provisioning). Nothing secret enters any Nix store here.
#   "store" each file is copied into the Nix store on its own, goes to the
#           host with the system, and an activation script installs it in
#           nico.secrets.dir with mode 0600. Works with NIO alone, but every
#           local user of the host can read /nix/store.
{ config, lib, pkgs, ... }:
let
  cfg = config.nico;
  inherit (lib) mkIf mkOption types;

  members = import ../lib/members.nix cfg.cluster;
  isControlPlane = builtins.any (n: n.name == cfg.machine) members.controlPlane;
  # During a restore the bootstrap node also receives the backup's presigned URL (short-lived; see the README).
  restoring = isControlPlane && (cfg.cluster.restore or { role = null; }).role == "restore";
  secretFiles = [ "agent-token" ] ++ lib.optionals isControlPlane ([ "join-token" "cluster-ca.crt" "cluster-ca.key" ]
    ++ lib.optionals (cfg.cluster ? etcd) [ "etcd-ca.crt" "etcd-ca.key" ]
    ++ lib.optionals restoring [ "etcd-restore-url" ]);

  # One file alone into the store (not the whole checkout), by content.
  storeCopy = file:
    let src = cfg.secrets.checkout + "/${file}"; in
    if builtins.pathExists src
    then builtins.path { path = src; name = "nico-${file}"; }
    else throw "nico: secrets.source is \"store\" but ${file} is not in the flake checkout; NICO sends it through NIO's additionalFiles.";

  install = "${pkgs.coreutils}/bin/install";
  dir = lib.escapeShellArg cfg.secrets.dir;
in
{
  options.nico = {
    cluster = mkOption {
      type = types.attrs;
      description = "The cluster, as imported from the cluster.nix NICO writes.";
    };
    machine = mkOption {
      type = types.str;
      description = "The NIO Machine this configuration is for (its flake attribute name).";
    };
    secrets.source = mkOption {
      type = types.enum [ "host" "store" ];
      default = "host";
      description = "How NICO's secret files reach the host; see the comment at the top of this file.";
    };
    secrets.dir = mkOption {
      type = types.str;
      default = "/var/lib/nico";
      description = "Where the secret files are on the host at run time (a plain string: never copied to the store).";
    };
    secrets.checkout = mkOption {
      type = types.nullOr types.path;
      default = null;
      description = "The flake folder NIO wrote the files into; read only when secrets.source is \"store\".";
    };
  };

  config = lib.mkMerge [
    {
      systemd.tmpfiles.rules = [ "d ${cfg.secrets.dir} 0700 root root -" ];
    }
    (mkIf (cfg.secrets.source == "store") {
      assertions = [{
        assertion = cfg.secrets.checkout != null;
        message = "nico.secrets.source = \"store\" needs nico.secrets.checkout (the flake folder, ./. in flake.nix).";
      }];
      warnings = [
        "nico.secrets.source = \"store\": ${lib.concatStringsSep ", " secretFiles} are in this host's /nix/store, readable by every local user. See the README's Secrets section."
      ];
      system.activationScripts.nico-secrets = {
        deps = [ "specialfs" ];
        text = ''
          ${install} -d -m 0700 -o root -g root ${dir}
          ${lib.concatMapStringsSep "\n" (f:
            "${install} -m 0600 -o root -g root ${storeCopy f} ${dir}/${lib.escapeShellArg f}") secretFiles}
        '';
      };
    })
  ];
}
