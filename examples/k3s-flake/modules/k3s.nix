# k3s on a node, from cluster.nix: the role and command line come from the
# pure lib/k3s-node.nix, the unit's scripts from lib/k3s-scripts.nix, the
# package (the Kubernetes version cluster.nix asks for) from lib/k3s-package.nix.
# Uses its own systemd unit (not nixpkgs' services.k3s) so that the command
# line is exactly the one lib/k3s-node.nix computes and the tests check.
{ config, lib, pkgs, ... }:
let
  cfg = config.nico;
  node = import ../lib/k3s-node.nix {
    cluster = cfg.cluster;
    machine = cfg.machine;
    paths = {
      tokenFile = "${cfg.secrets.dir}/join-token";
      agentTokenFile = "${cfg.secrets.dir}/agent-token";
      caCert = "${cfg.secrets.dir}/cluster-ca.crt";
      caKey = "${cfg.secrets.dir}/cluster-ca.key";
      etcdCaCert = "${cfg.secrets.dir}/etcd-ca.crt";
      etcdCaKey = "${cfg.secrets.dir}/etcd-ca.key";
    };
  };
  k3s = import ../lib/k3s-package.nix { cluster = cfg.cluster; inherit pkgs; };
  # The node's part in a restore of etcd, while cluster.nix asks for one (docs/cluster-nix.md#restore).
  restore = import ../lib/k3s-restore.nix {
    cluster = cfg.cluster;
    inherit node;
    k3s = "${k3s}/bin/k3s";
    urlFile = "${cfg.secrets.dir}/etcd-restore-url";
    curl = "${pkgs.curl}/bin/curl";
  };
  scripts = import ../lib/k3s-scripts.nix {
    inherit node;
    k3s = "${k3s}/bin/k3s";
    configuration = cfg.cluster.configuration or null;
  };
in
{
  networking.hostName = lib.mkIf (node.hostName != null) (lib.mkDefault node.hostName);
  networking.domain = lib.mkIf (node.domain != null) (lib.mkDefault node.domain);

  boot.kernelModules = [ "overlay" "br_netfilter" ];
  boot.kernel.sysctl = {
    "net.ipv4.ip_forward" = 1;
    "net.ipv6.conf.all.forwarding" = 1;
    "net.bridge.bridge-nf-call-iptables" = 1;
    "net.bridge.bridge-nf-call-ip6tables" = 1;
  };

  # API server and etcd on servers; kubelet everywhere; flannel's VXLAN.
  networking.firewall.allowedTCPPorts = (if node.controlPlane then [ node.apiPort 2379 2380 ] else [ ]) ++ [ 10250 ];
  networking.firewall.allowedUDPPorts = [ 8472 ];

  environment.systemPackages = [ k3s ];

  systemd.services.k3s = {
    # A restore's part changes the unit, so the switch restarts k3s, after the part below ran.
    restartTriggers = lib.optional (restore.id != null) "nico-restore-${restore.id}-${restore.part}";
    description = "k3s ${node.role} ${node.name} of NICO cluster ${cfg.cluster.namespace}/${cfg.cluster.name}";
    wantedBy = [ "multi-user.target" ];
    wants = [ "network-online.target" ];
    after = [ "network-online.target" "firewall.service" "systemd-tmpfiles-setup.service" ];
    path = [ pkgs.coreutils pkgs.diffutils pkgs.kmod ];
    serviceConfig = {
      # A server tells systemd when its API is up; an agent just runs.
      Type = if node.role == "server" then "notify" else "exec";
      ExecStartPre = "${pkgs.writeShellScript "k3s-prepare" scripts.prepare}";
      ExecStart = "${pkgs.writeShellScript "k3s-start" scripts.start}";
      KillMode = "process";
      Delegate = "yes";
      Restart = "always";
      RestartSec = "5s";
      # A server reports ready once its API is up, so a switch (and NIO's apply)
      # waits for it; a bound turns a node that cannot join into a failed apply.
      TimeoutStartSec = "10min";
      LimitNOFILE = 1048576;
      LimitNPROC = "infinity";
      LimitCORE = "infinity";
      TasksMax = "infinity";
    };
  };

  # A restore's part runs once, while k3s is stopped, before k3s starts again.
  systemd.services.nico-etcd-restore = lib.mkIf (restore.script != null) {
    description = "NICO restore ${restore.id}: ${restore.part} on ${node.name}";
    requiredBy = [ "k3s.service" ];
    before = [ "k3s.service" ];
    wants = [ "network-online.target" ];
    after = [ "network-online.target" ];
    path = [ pkgs.coreutils ];
    serviceConfig = {
      Type = "oneshot";
      RemainAfterExit = true;
      ExecStart = "${pkgs.writeShellScript "nico-etcd-restore" restore.script}";
    };
  };

  # The flake contract: once this configuration runs and k3s is up, the node names it on its own Node,
  # and NICO ends the node's rollout step only then. Runs again whenever the configuration changes.
  systemd.services.nico-report-configuration = lib.mkIf (scripts.report != null) {
    description = "Tell NICO that ${node.name} runs configuration ${cfg.cluster.configuration}";
    wantedBy = [ "multi-user.target" ];
    requires = [ "k3s.service" ];
    after = [ "k3s.service" ];
    restartTriggers = [ cfg.cluster.configuration ];
    serviceConfig = {
      Type = "oneshot";
      RemainAfterExit = true;
      ExecStart = "${pkgs.writeShellScript "nico-report-configuration" scripts.report}";
      # The API may need a moment after a restart: try again until it answers.
      Restart = "on-failure";
      RestartSec = "5s";
    };
  };
}
