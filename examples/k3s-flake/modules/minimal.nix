# #minimal: what NIO applies to a host when NICO removes it from a cluster.
# No k3s; a oneshot unit takes k3s's leftovers off the host (see
# lib/k3s-cleanup.nix). One configuration for every host, so it carries no
# per-host hardware: base.nix's assumptions must hold for every host.
{ pkgs, ... }:
{
  systemd.services.nico-k3s-cleanup = {
    description = "Remove k3s state left by a NICO cluster";
    wantedBy = [ "multi-user.target" ];
    path = [ pkgs.coreutils pkgs.gawk pkgs.gnugrep pkgs.iproute2 pkgs.iptables pkgs.systemd pkgs.util-linux ];
    serviceConfig = {
      Type = "oneshot";
      RemainAfterExit = true;
    };
    script = import ../lib/k3s-cleanup.nix { };
  };
}
