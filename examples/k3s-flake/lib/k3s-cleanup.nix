# The script #minimal runs to take k3s off a host that leaves its cluster:
# stop what k3s left running, undo its mounts and network devices, and
# delete its state and NICO's files. Pure text; modules/minimal.nix runs it as
# a oneshot unit. Idempotent: on a host without k3s it changes nothing.
{ dataDir ? "/var/lib/rancher/k3s"
, configDir ? "/etc/rancher/k3s"
, nicoDir ? "/var/lib/nico"
}:
let
  sh = import ./shell.nix;
  stateDirs = [ dataDir configDir nicoDir "/var/lib/kubelet" "/var/lib/cni" "/run/k3s" "/run/flannel" ];
  mountPrefixes = [ "/run/k3s" "/var/lib/kubelet" dataDir "/run/netns/cni-" ];
in
''
  set -u

  # k3s.service is not part of this configuration, so switching to it stops
  # the unit; stop it here too in case it was started some other way.
  systemctl stop k3s.service 2>/dev/null || true

  # Containers outlive k3s (its unit uses KillMode=process): kill everything
  # left in its cgroup and in the pods' cgroups (cgroup v2).
  for cg in /sys/fs/cgroup/system.slice/k3s.service /sys/fs/cgroup/kubepods.slice /sys/fs/cgroup/kubepods; do
    if [ -e "$cg/cgroup.kill" ]; then echo 1 > "$cg/cgroup.kill" || true; fi
  done
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    busy=0
    for cg in /sys/fs/cgroup/system.slice/k3s.service /sys/fs/cgroup/kubepods.slice /sys/fs/cgroup/kubepods; do
      if [ -s "$cg/cgroup.procs" ]; then busy=1; fi
    done
    [ "$busy" = 0 ] && break
    sleep 1
  done

  # Mounts made by the kubelet and containerd, deepest first.
  for prefix in ${sh.args mountPrefixes}; do
    awk -v p="$prefix" 'index($2, p) == 1 { print $2 }' /proc/self/mounts
  done | sort -r -u | while read -r m; do umount -l "$m" 2>/dev/null || true; done

  # Network devices made by flannel and the CNI bridge; rules made by
  # kube-proxy, flannel and the CNI plugins. A reboot clears what is left.
  for dev in cni0 flannel.1 flannel-v6.1 flannel-wg flannel-wg-v6 kube-ipvs0; do
    ip link delete "$dev" 2>/dev/null || true
  done
  for t in iptables ip6tables; do
    if command -v "$t-save" >/dev/null 2>&1; then
      "$t-save" | grep -v -E 'KUBE-|CNI-|FLANNEL|flannel' | "$t-restore" 2>/dev/null || true
    fi
  done

  # State: k3s's data and config, the kubelet's, and the files NICO sent.
  rm -rf -- ${sh.args stateDirs}
''
